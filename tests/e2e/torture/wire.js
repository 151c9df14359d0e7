// What one browser context sent and heard on its relay sockets, for the torture checker's
// explanations: every `EVENT` sent, every `OK` received and every close, with this
// context's name, its own socket number and the time. Installed before the outbox opens
// (the outbox constructs the global `WebSocket` when it connects); `report(entry)` is the
// context's way out (a tab's console, the worker's clients).
export function recordWire(ctx, report) {
  const Native = globalThis.WebSocket;
  let seq = 0;
  const parse = (data, head) => {
    if (typeof data !== "string" || !data.startsWith(head)) return null;
    try { return JSON.parse(data); } catch { return null; }
  };
  globalThis.WebSocket = class extends Native {
    constructor(url, protocols) {
      super(url, protocols);
      this.wire = { ctx, ws: ++seq, url: String(url) };
      this.addEventListener("message", (e) => {
        const m = parse(e.data, '["OK"');
        if (m) report({ ...this.wire, t: Date.now(), what: "ok", id: m[1], accepted: m[2] === true });
      });
      this.addEventListener("close", (e) => report({ ...this.wire, t: Date.now(), what: "close", code: e.code }));
    }
    send(data) {
      const m = parse(data, '["EVENT"');
      if (m) report({ ...this.wire, t: Date.now(), what: "event", id: m[1]?.id });
      return super.send(data);
    }
  };
}
