// A React 19 app (react-dom/client's createRoot, StrictMode, development build: React warns
// when getSnapshot is not cached) that shows the outbox with `useOutbox`.
import { StrictMode, createElement as h, useState } from "react";
import { createRoot } from "react-dom/client";
import { useOutbox } from "nostr-outbox/react";
import { openOutbox, countsText } from "./outbox.js";

const { outbox, changeListeners } = await openOutbox("subscribe-react");
const log = { renders: 0, snapshots: [] };
let bump;

function Queue() {
  // A new query object each render: the same query (one store, no reload).
  const snap = useOutbox(outbox, { limit: 50 });
  log.renders++;
  if (log.snapshots[log.snapshots.length - 1] !== snap) log.snapshots.push(snap);
  return h(
    "section",
    null,
    h("p", { id: "counts" }, countsText(snap)),
    h("ul", null, snap.records.map((r) => h("li", { key: r.id, "data-stage": r.stage }, `${r.event.content}: ${r.stage}`))),
  );
}

function App() {
  const [tick, setTick] = useState(0);
  bump = () => setTick((t) => t + 1);
  return h("main", { "data-tick": tick }, h(Queue));
}

const root = createRoot(document.body.appendChild(document.createElement("div")));
root.render(h(StrictMode, null, h(App)));

window.app = {
  outbox,
  changeListeners,
  /** How many snapshots the component rendered with, and how many renders. */
  seen: () => ({ snapshots: log.snapshots.length, renders: log.renders, loadingAgain: log.snapshots.slice(1).some((s) => s.loading) }),
  rerender: () => bump(),
  unmount: () => root.unmount(),
};
