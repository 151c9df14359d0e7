// A module service worker as a Vite app would write it: nostr-outbox imported statically,
// its handlers registered during evaluation; Background Sync flushes the outbox the pages
// of this origin enqueue into (same database name), with no page open.
import init, { handleSync } from "nostr-outbox";

const ready = init();
const options = { name: "bundled-sw" };
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));
self.addEventListener("sync", (e) => e.waitUntil(ready.then(() => handleSync(e, options))));
