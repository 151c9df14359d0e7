// A Svelte 5 app: Queue.svelte (compiled by svelte/compiler from npm) mounted with `mount`;
// svelte/store's `get` and `derived` over nostr-outbox/svelte's store, for the test to call.
import { mount, unmount } from "svelte";
import { get, derived } from "svelte/store";
import { outboxStore } from "nostr-outbox/svelte";
import Queue from "./Queue.svelte";
import { openOutbox } from "./outbox.js";

const { outbox, changeListeners } = await openOutbox("subscribe-svelte");
const log = [];
const component = mount(Queue, { target: document.body.appendChild(document.createElement("div")), props: { queue: outboxStore(outbox, { limit: 50 }), log } });

window.app = {
  outbox,
  changeListeners,
  svelte: { get, derived },
  outboxStore,
  /** How many distinct snapshots the component's $effect saw. */
  seen: () => new Set(log).size,
  unmount: () => unmount(component),
};
