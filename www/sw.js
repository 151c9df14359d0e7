// The demo's module service worker: flushes the outbox on Background Sync (Chromium),
// on periodic sync, and when a page posts "flush". Import maps do not apply to workers,
// so it imports the package through the server's absolute re-export path.
import init, { handleSync } from "/www/nostr-outbox.js";

const ready = init();
const options = { name: "nostr-outbox-demo", tag: "nostr-outbox-demo", baseDelayMs: 2000, maxDelayMs: 10000 };
const flush = (event) => ready.then(() => handleSync(event, options));

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));
self.addEventListener("sync", (event) => event.waitUntil(flush(event)));
self.addEventListener("periodicsync", (event) => event.waitUntil(flush(event)));
self.addEventListener("message", (event) => {
  if (event.data === "flush") event.waitUntil(flush(event));
});
