// The page of the service-worker app: registers the module worker (built by Vite as
// /sw.js), enqueues while its relay is down, and asks for a Background Sync.
import init, { Outbox, registerBackgroundSync } from "nostr-outbox";

window.swApp = {
  async enqueue(event, relay) {
    await init();
    const reg = await navigator.serviceWorker.register("/sw.js", { type: "module", scope: "/" });
    await navigator.serviceWorker.ready;
    const outbox = await Outbox.open({ name: "bundled-sw", autoFlush: false });
    const { disposition } = await outbox.enqueue(event, [relay]);
    const registered = await registerBackgroundSync(reg);
    const status = await outbox.status();
    await outbox.close();
    return { disposition, registered, status };
  },
};
