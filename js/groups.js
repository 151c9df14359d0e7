// Groups, the part that needs nothing of the .wasm but what it exports (`get`, `cancel`,
// `retry`, `enqueueGroup`'s members, the `change` events):
// - `outbox.group(id)`: the group and its members as stored, summed up ("delivered to 3
//   of 4"), read with one `get` per member (member `i` of group `g` is the record `g:i`,
//   and each member holds its place `{ id, index, size }`), so every store has it;
// - `enqueueGroup`'s answer gets the group as enqueued (`group`);
// - `outbox.cancelGroup(id)` and `outbox.retryGroup(id)` pick the members each applies to
//   and cancel or re-arm them (each atomic, each firing `change`);
// - the `group` event: once a `group` listener is added to an outbox, each `change` of a
//   group's member (here, or relayed from another tab or worker) makes the outbox read
//   the group shortly after and fire `group` with it; the members that one call or one
//   flush round changed make one event.
// Imported by the package entry (index.js), which adds these to Outbox.prototype. Kept
// out of the .wasm, where the group's status measured 2 002 B (edge 2 008 B) gzipped.
import { Outbox } from "./nostr_outbox.js";
import { OutboxError } from "./index.js";
import { TERMINAL } from "./stages.js";

const MAX_GROUP_SIZE = 256; // core::group::MAX_GROUP_SIZE
// What a member that changed meanwhile answers (it ended, its deadline passed, it was
// purged): it is left as it is.
const MOVED_ON = new Set(["already_terminal", "not_retryable", "not_found", "corrupt_record"]);

// True when the record `r` (or null) is member `i` of group `id` by its place.
const isMember = (r, id, i) => r?.group?.id === id && r.group.index === i;

/**
 * Group `id` summed up from what is stored under its member ids (`null` where nothing
 * is; a record there that is not that member counts as missing): its counts, its state
 * and its members; `null` when no member is stored.
 */
export function groupOf(id, stored) {
  const size = stored.length;
  const members = stored.map((r, i) => (isMember(r, id, i) && r.group.size === size ? r : null));
  if (members.every((m) => m === null)) return null;
  let delivered = 0, failed = 0, open = 0, missing = 0;
  for (const m of members) {
    if (m === null) missing++;
    else if (m.satisfaction === "satisfied") delivered++;
    else if (TERMINAL.has(m.stage) || m.satisfaction === "exhausted") failed++;
    else open++;
  }
  const state =
    open > 0 ? "sending" : delivered === size ? "delivered" : failed === size ? "failed" : "partial";
  return { id, size, state, delivered, failed, open, missing, members };
}

/**
 * Group `id` and its members, or `null` when no member of it is stored. Its size is read
 * from the first member found; a group that does not exist costs `MAX_GROUP_SIZE` reads.
 */
async function readGroup(outbox, id) {
  if (typeof id !== "string") await outbox.get(id); // the typed error of an id that is no string
  // An item id (core::plan::validate_item_id): `get` answers any other id with null.
  if (!/^[A-Za-z0-9._:-]{1,128}$/.test(id)) {
    throw new OutboxError("invalid_item_id", `group id \`${id}\`: 1 to 128 characters of A-Z a-z 0-9 . _ : -`);
  }
  const stored = [];
  let size;
  while (size === undefined && stored.length < MAX_GROUP_SIZE) {
    const i = stored.length;
    const r = await outbox.get(`${id}:${i}`);
    stored.push(r);
    if (isMember(r, id, i)) size = r.group.size;
  }
  if (size === undefined) return null;
  const rest = [];
  for (let i = stored.length; i < size; i++) rest.push(outbox.get(`${id}:${i}`));
  return groupOf(id, stored.concat(await Promise.all(rest)));
}

// Group `id`, or `not_found` when no member of it is stored.
async function found(outbox, id) {
  const group = await outbox.group(id);
  if (group === null) throw new OutboxError("not_found", `no member of group \`${id}\` is stored`);
  return group;
}

async function eachMember(outbox, id, applies, op) {
  const group = await found(outbox, id);
  const picked = group.members.filter((m) => m !== null && applies(m));
  const done = await Promise.allSettled(picked.map((m) => op.call(outbox, m.id)));
  const failed = done.find((d) => d.status === "rejected" && !MOVED_ON.has(d.reason?.code));
  if (failed) throw failed.reason;
  return picked.length === 0 ? group : found(outbox, id);
}

/** Cancels every member of group `id` that is not terminal; resolves with the group after. */
export function cancelGroup(outbox, id) {
  return eachMember(outbox, id, (m) => !TERMINAL.has(m.stage), Outbox.prototype.cancel);
}

/** Re-arms every `exhausted` member of group `id`; resolves with the group after. */
export function retryGroup(outbox, id) {
  return eachMember(outbox, id, (m) => m.stage === "exhausted", Outbox.prototype.retry);
}

Outbox.prototype.group = function (id) {
  return readGroup(this, id);
};

const enqueueGroup = Outbox.prototype.enqueueGroup;
Outbox.prototype.enqueueGroup = async function (items, options) {
  const out = await enqueueGroup.call(this, items, options);
  out.group = groupOf(out.id, out.results.map((r) => r.record));
  return out;
};

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
