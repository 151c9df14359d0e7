// The WebKit e2e page's module service worker: WebKit has no Background Sync, so a page
// asks it to flush by a message ({ flush: name }); it runs handleSync and answers on the
// message's port with the flush result, or { error } with the error's code.
import init, { handleSync } from "/pkg/nostr_outbox.js";

const ready = init();
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));
self.addEventListener("message", (event) => {
  const name = event.data && event.data.flush;
  if (!name) return;
  const port = event.ports[0];
  event.waitUntil(
    ready
      .then(() => handleSync(event, { name }))
      .then(
        (result) => port.postMessage({ result: JSON.parse(JSON.stringify(result ?? null)) }),
        (e) => port.postMessage({ error: e && e.code ? e.code : String(e) }),
      ),
  );
});
