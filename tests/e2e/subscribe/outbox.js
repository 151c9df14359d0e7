// The outbox each UI app opens: IndexedDB, a transport that accepts every event (no relay:
// these tests are about what the UI sees), and a count of the `change` listeners, so a test
// can see that an unmounted component let go of the outbox.
import init, { Outbox } from "nostr-outbox";

export async function openOutbox(name) {
  await init({ module_or_path: "/pkg/nostr_outbox_bg.wasm" });
  const outbox = await Outbox.open({ name, transport: { publish: async () => ({ ok: true, message: "" }) } });
  const listeners = new Set();
  const add = outbox.addEventListener.bind(outbox);
  const remove = outbox.removeEventListener.bind(outbox);
  outbox.addEventListener = (type, fn, options) => (type === "change" && listeners.add(fn), add(type, fn, options));
  outbox.removeEventListener = (type, fn, options) => (type === "change" && listeners.delete(fn), remove(type, fn, options));
  return { outbox, changeListeners: () => listeners.size };
}

/** What the page shows of a snapshot (the same text in both apps). */
export function countsText(s) {
  if (s.loading) return "loading";
  return `pending ${s.status.pending} satisfied ${s.status.satisfied} total ${s.status.total}`;
}
