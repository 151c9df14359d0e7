// A recording, fault-injecting WebSocket proxy in front of a real relay (nostr-rs-relay),
// on a fixed port of 127.0.0.1 that can be stopped (connections refused, live ones cut)
// and started again, like a relay that crashes and comes back.
//
// Every `EVENT` frame a client sends is logged with its exact text, and answered by a
// fault drawn at random from the current weights:
//   forward      sent on to the relay (after `setDelay` ms, if set); the relay's `OK` is
//                passed back (and logged when it was really written to the client)
//   rateLimited  `["OK",id,false,"rate-limited: …"]`      (retryable)
//   error        `["OK",id,false,"error: …"]`             (retryable)
//   blocked      `["OK",id,false,"blocked: …"]`           (terminal for that relay)
//   silent       never answered                          (the client times out)
//   close        a close frame (1011) instead of an answer ("closing mid-publish")
//   forwardClose sent on to the relay, then the connection is closed before its `OK`
//                (the relay has the event; the client never hears it)
//   drop         the TCP connection is cut without a close frame
// `hostile` adds junk around every answer: non-JSON text, huge frames, `OK`s for unknown
// ids, `OK`s for the real id with wrong types, `NOTICE` floods, binary frames and an
// `AUTH` challenge before every message; `withholdOk` never passes the real `OK` on.
import { createServer } from "node:http";
import WebSocket, { WebSocketServer } from "ws";

export const FAULTS = ["forward", "rateLimited", "error", "blocked", "silent", "close", "forwardClose", "drop"];

const PREFIX = { rateLimited: "rate-limited", error: "error", blocked: "blocked" };

/** The frames a hostile relay sends for the event `id` (round `n`). */
export function hostileFrames(id, n, { hugeBytes = 0, noticeFlood = 0 } = {}) {
  const unknown = (n * 2654435761 + 12345).toString(16).padStart(64, "0").slice(-64);
  const frames = [
    "this is not json",
    "{\"an\":\"object\"}",
    "[]",
    "[42]",
    "[\"OK\"]",
    "[\"OK\",",
    JSON.stringify(["OK", unknown, true, ""]),
    JSON.stringify(["OK", unknown, false, "blocked: not yours"]),
    JSON.stringify(["OK", id, "true", "a string, not a boolean"]),
    JSON.stringify(["OK", id, 1, "a number, not a boolean"]),
    JSON.stringify(["OK", id, null, "null"]),
    JSON.stringify(["OK", id.toUpperCase(), true, "upper-case id"]),
    JSON.stringify(["OK", id.slice(0, 63), true, "short id"]),
    JSON.stringify(["OK", { id }, true, "id in an object"]),
    JSON.stringify(["OK", [id], true, "id in an array"]),
    JSON.stringify(["EVENT", "nosub", { id: "x" }]),
    JSON.stringify(["EOSE", "nosub"]),
    JSON.stringify(["CLOSED", "nosub", "error: nope"]),
    JSON.stringify(["COUNT", "nosub", { count: 1 }]),
    JSON.stringify(["AUTH", `challenge-${n}`]),
    JSON.stringify(["AUTH", { not: "a string" }]),
  ];
  for (let i = 0; i < noticeFlood; i++) frames.push(JSON.stringify(["NOTICE", `flood ${n}.${i}`]));
  if (hugeBytes > 0) frames.push(`["NOTICE","${"x".repeat(hugeBytes)}"]`);
  return frames;
}

function pick(weights, random) {
  const entries = Object.entries(weights).filter(([, w]) => w > 0);
  const total = entries.reduce((s, [, w]) => s + w, 0);
  if (total <= 0) return "forward";
  let r = random() * total;
  for (const [k, w] of entries) {
    if ((r -= w) < 0) return k;
  }
  return entries[entries.length - 1][0];
}

/**
 * Starts a proxy for `backend` (ws:// URL of the real relay) on `port` (0 = free).
 * `random()` draws faults; `onOk(entry)` is called right after an `OK` was written to a
 * client; `onEvent(entry)` right after an `EVENT` frame arrived.
 */
export async function faultProxy({ name, backend, port = 0, random = Math.random, onOk = () => {}, onEvent = () => {} }) {
  const log = { events: [], oks: [], closes: [] };
  let weights = { forward: 1 };
  let hostile = null;
  let delayMs = 0;
  let connSeq = 0;
  let hostileRound = 0;
  const sockets = new Set();
  const clients = new Set();
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });
  let server = null;

  function attach(client) {
    const conn = ++connSeq;
    clients.add(client);
    const pendingFromClient = [];
    const awaiting = new Map(); // id -> event log entry forwarded, no OK passed back yet
    const up = new WebSocket(backend, { maxPayload: 64 * 1024 * 1024 });
    let upOpen = false;
    const closeClient = (code, why) => {
      if (client.readyState === WebSocket.OPEN || client.readyState === WebSocket.CONNECTING) {
        log.closes.push({ relay: name, conn, t: Date.now(), why });
        try { client.close(code, why); } catch {}
      }
    };
    const sendHostile = (id) => {
      if (!hostile) return;
      hostileRound += 1;
      for (const f of hostileFrames(id, hostileRound, hostile)) {
        if (client.readyState !== WebSocket.OPEN) return;
        client.send(f);
      }
      if (hostile.binary && client.readyState === WebSocket.OPEN) client.send(Buffer.from([0, 159, 146, 150, 255]));
    };
    const authEvery = () => {
      if (hostile?.authEveryMessage && client.readyState === WebSocket.OPEN) {
        client.send(JSON.stringify(["AUTH", `every-${++hostileRound}`]));
      }
    };
    up.on("open", () => {
      upOpen = true;
      for (const m of pendingFromClient.splice(0)) up.send(m);
    });
    up.on("error", () => {});
    up.on("close", () => closeClient(1011, "relay connection lost"));
    up.on("message", (data, isBinary) => {
      if (isBinary) return;
      const text = String(data);
      let msg = null;
      try { msg = JSON.parse(text); } catch {}
      if (Array.isArray(msg) && msg[0] === "OK" && typeof msg[1] === "string") {
        const entry = awaiting.get(msg[1]);
        awaiting.delete(msg[1]);
        if (hostile?.withholdOk) return;
        if (client.readyState !== WebSocket.OPEN) return;
        authEvery();
        const sentAt = Date.now();
        client.send(text, (err) => {
          if (err) return;
          const ok = {
            relay: name, conn, id: msg[1], accepted: msg[2] === true, message: String(msg[3] ?? ""),
            t: sentAt, eventAt: entry?.t ?? null, fault: "forward", writtenAt: Date.now(),
          };
          log.oks.push(ok);
          onOk(ok);
        });
        return;
      }
      if (client.readyState === WebSocket.OPEN) {
        authEvery();
        client.send(text);
      }
    });
    client.on("error", () => {});
    client.on("close", () => {
      log.closes.push({ relay: name, conn, t: Date.now(), why: "closed" });
      clients.delete(client);
      try { up.terminate(); } catch {}
    });
    client.on("message", (data, isBinary) => {
      if (isBinary) return;
      const text = String(data);
      let msg = null;
      try { msg = JSON.parse(text); } catch {}
      const forward = () => (upOpen ? up.send(text) : pendingFromClient.push(text));
      if (!(Array.isArray(msg) && msg[0] === "EVENT" && msg[1] && typeof msg[1].id === "string")) {
        forward();
        return;
      }
      const id = msg[1].id;
      const fault = pick(weights, random);
      const entry = { relay: name, conn, id, raw: text, t: Date.now(), fault };
      log.events.push(entry);
      onEvent(entry);
      sendHostile(id);
      switch (fault) {
        case "forward":
          awaiting.set(id, entry);
          if (delayMs > 0) setTimeout(() => { if (client.readyState === WebSocket.OPEN) forward(); }, delayMs);
          else forward();
          break;
        case "rateLimited":
        case "error":
        case "blocked": {
          if (client.readyState !== WebSocket.OPEN) break;
          authEvery();
          const sentAt = Date.now();
          const message = `${PREFIX[fault]}: torture proxy ${name} says so`;
          client.send(JSON.stringify(["OK", id, false, message]), (err) => {
            if (err) return;
            const ok = { relay: name, conn, id, accepted: false, message, t: sentAt, eventAt: entry.t, fault };
            log.oks.push(ok);
            onOk(ok);
          });
          break;
        }
        case "silent":
          break;
        case "close":
          closeClient(1011, "torture proxy closes mid-publish");
          break;
        case "forwardClose":
          forward();
          closeClient(1011, "torture proxy closes after forwarding");
          break;
        case "drop":
          log.closes.push({ relay: name, conn, t: Date.now(), why: "drop" });
          try { client.terminate(); } catch {}
          break;
      }
    });
  }

  const handle = {
    name,
    port,
    url: null,
    log,
    running: () => server !== null,
    setFaults(w) { weights = { ...w }; },
    faults: () => ({ ...weights }),
    setHostile(h) { hostile = h ? { ...h } : null; },
    /** Forwards each EVENT only after `ms` (a slow relay). */
    setDelay(ms) { delayMs = ms; },
    /** Client connections open now. */
    clientCount: () => clients.size,
    async start() {
      if (server) return;
      const s = createServer((req, res) => { res.writeHead(426); res.end(); });
      s.on("connection", (sock) => {
        sockets.add(sock);
        sock.on("close", () => sockets.delete(sock));
      });
      s.on("upgrade", (req, sock, head) => {
        wss.handleUpgrade(req, sock, head, (client) => attach(client));
      });
      for (let i = 0; ; i++) {
        try {
          await new Promise((ok, fail) => {
            s.once("error", fail);
            s.listen(port, "127.0.0.1", () => { s.off("error", fail); ok(); });
          });
          break;
        } catch (err) {
          if (i >= 100 || err.code !== "EADDRINUSE") throw err;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      port = s.address().port;
      handle.port = port;
      handle.url = `ws://127.0.0.1:${port}`;
      server = s;
    },
    /** Refuses new connections and cuts the live ones (TCP reset, like a crash). */
    async stop() {
      if (!server) return;
      const s = server;
      server = null;
      const closed = new Promise((ok) => s.close(() => ok()));
      log.closes.push({ relay: name, conn: 0, t: Date.now(), why: "stop" });
      for (const c of clients) {
        try { c.terminate(); } catch {}
      }
      for (const sock of sockets) sock.destroy();
      await closed;
    },
  };
  await handle.start();
  return handle;
}
