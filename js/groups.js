// Groups, the part that needs nothing of the .wasm but what it exports (`group(id)`: a
// group and its members as stored; `cancel`, `retry`; the `change` events):
// - `outbox.cancelGroup(id)` and `outbox.retryGroup(id)` pick the members each applies to
//   and cancel or re-arm them (each atomic, each firing `change`);
// - the `group` event: once a `group` listener is added to an outbox, each `change` of a
//   group's member (here, or relayed from another tab or worker) makes the outbox read
//   the group shortly after and fire `group` with it; the members that one call or one
//   flush round changed make one event.
// Imported by the package entry (index.js), which adds these to Outbox.prototype.
import { Outbox } from "./nostr_outbox.js";

const TERMINAL = new Set(["satisfied", "exhausted", "cancelled", "superseded"]);
// What a member that changed meanwhile answers (it ended, its deadline passed, it was
// purged): it is left as it is.
const MOVED_ON = new Set(["already_terminal", "not_retryable", "not_found", "corrupt_record"]);

async function eachMember(outbox, id, applies, op) {
  const group = await outbox.group(id, true); // `not_found` when no member is stored
  const picked = group.members.filter((m) => m !== null && applies(m));
  const done = await Promise.allSettled(picked.map((m) => op.call(outbox, m.id)));
  const failed = done.find((d) => d.status === "rejected" && !MOVED_ON.has(d.reason?.code));
  if (failed) throw failed.reason;
  return picked.length === 0 ? group : outbox.group(id, true);
}

/** Cancels every member of group `id` that is not terminal; resolves with the group after. */
export function cancelGroup(outbox, id) {
  return eachMember(outbox, id, (m) => !TERMINAL.has(m.stage), Outbox.prototype.cancel);
}

/** Re-arms every `exhausted` member of group `id`; resolves with the group after. */
export function retryGroup(outbox, id) {
  return eachMember(outbox, id, (m) => m.stage === "exhausted", Outbox.prototype.retry);
}

Outbox.prototype.cancelGroup = function (id) {
  return cancelGroup(this, id);
};

Outbox.prototype.retryGroup = function (id) {
  return retryGroup(this, id);
};

const watched = new WeakSet();
const addEventListener = Outbox.prototype.addEventListener;

// Fires `group` on `outbox` for each group whose member changed: the group as read a task
// after the change, once for all the changes of that task.
function watchGroups(outbox) {
  const due = new Set();
  addEventListener.call(outbox, "change", (e) => {
    const id = e.detail?.group?.id;
    // An attempt starting (`leased`) changes no count.
    if (id === undefined || e.detail.stage === "leased" || due.has(id)) return;
    due.add(id);
    setTimeout(async () => {
      due.delete(id);
      const group = await outbox.group(id).catch(() => null); // closed meanwhile: none
      if (group) outbox.dispatchEvent(new CustomEvent("group", { detail: group }));
    }, 0);
  });
}

Outbox.prototype.addEventListener = function (type, listener, options) {
  if (type === "group" && !watched.has(this)) {
    watched.add(this);
    watchGroups(this);
  }
  return addEventListener.call(this, type, listener, options);
};
