// The queue's Nostr rules end to end, against a real nostr-rs-relay (which applies
// NIP-01 replacement and NIP-09 deletion itself): an offline session with two profile
// edits, three contact-list edits, a note and its deletion, all signed with nostr-tools;
// then the relay comes back and the outbox flushes. The relay ends with the newest
// profile and contact list, and a logging proxy in front of it shows it never received
// the deleted note or any older version: only the newest versions and the deletion went
// out.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { WebSocketServer } from "ws";
import WebSocket from "ws";
import { generateSecretKey, getPublicKey, finalizeEvent } from "nostr-tools/pure";
import { startServer, launch, relay, freePort, IMPORT_PACKAGE } from "./harness.mjs";

let server, browser, nrr, proxy;
before(async () => {
  server = await startServer();
  browser = await launch();
  nrr = await relay();
});
after(async () => {
  await proxy?.close();
  await browser?.close();
  await nrr?.destroy();
  await server?.close();
});

/** A WebSocket proxy on `port` to `upstream` that logs the ids of the EVENTs clients send. */
function loggingProxy(port, upstream) {
  const published = [];
  const wss = new WebSocketServer({ host: "127.0.0.1", port });
  wss.on("connection", (client) => {
    const up = new WebSocket(upstream);
    const pending = [];
    up.on("open", () => { for (const m of pending.splice(0)) up.send(m); });
    up.on("message", (m) => client.readyState === WebSocket.OPEN && client.send(String(m)));
    up.on("close", () => client.close());
    up.on("error", () => client.close());
    client.on("message", (m) => {
      const text = String(m);
      try {
        const msg = JSON.parse(text);
        if (msg[0] === "EVENT") published.push(msg[1].id);
      } catch { /* not JSON: forwarded as it is */ }
      if (up.readyState === WebSocket.OPEN) up.send(text); else pending.push(text);
    });
    client.on("close", () => up.close());
  });
  return {
    published,
    ready: new Promise((ok) => wss.once("listening", ok)),
    close: () => new Promise((ok) => { for (const c of wss.clients) c.terminate(); wss.close(() => ok()); }),
  };
}

/** Every event of `filter` on `url`, until EOSE. */
async function req(url, filter) {
  const ws = new WebSocket(url);
  const events = [];
  await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error("REQ timed out")), 10_000);
    ws.onopen = () => ws.send(JSON.stringify(["REQ", "q", filter]));
    ws.onmessage = (m) => {
      const msg = JSON.parse(String(m.data));
      if (msg[0] === "EVENT") events.push(msg[2]);
      if (msg[0] === "EOSE") { clearTimeout(timer); ok(); }
    };
    ws.onerror = () => { clearTimeout(timer); fail(new Error(`cannot reach ${url}`)); };
  });
  ws.close();
  return events;
}

test("an offline session's edits go out as their newest versions, and a deleted note never leaves", async () => {
  const sk = generateSecretKey();
  const pubkey = getPublicKey(sk);
  const now = Math.floor(Date.now() / 1000);
  const sign = (kind, at, content, tags = []) => finalizeEvent({ kind, created_at: now - at, tags, content }, sk);
  const friend = (n) => ["p", getPublicKey(generateSecretKey()), "", `friend ${n}`];
  const profile1 = sign(0, 60, JSON.stringify({ name: "first" }));
  const profile2 = sign(0, 50, JSON.stringify({ name: "second" }));
  const contacts1 = sign(3, 40, "", [friend(1)]);
  const contacts2 = sign(3, 30, "", [friend(1), friend(2)]);
  const contacts3 = sign(3, 20, "", [friend(1), friend(2), friend(3)]);
  const note = sign(1, 10, "posted by mistake");
  const deletion = sign(5, 5, "", [["e", note.id], ["k", "1"]]);
  const session = [profile1, contacts1, profile2, contacts2, note, contacts3, deletion];

  // The outbox talks to the proxy's port, where nothing listens yet: offline.
  const port = await freePort();
  const relayUrl = `ws://127.0.0.1:${port}`;
  const page = await browser.context.newPage();
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  const offline = await page.evaluate(async ([session, relayUrl, IMPORT_PACKAGE]) => {
    const { Outbox } = await eval(IMPORT_PACKAGE);
    const outbox = await Outbox.open({
      name: `rules-${Math.random()}`, autoFlush: false, connectTimeoutMs: 1000, baseDelayMs: 200, maxDelayMs: 500,
    });
    window.outbox = outbox;
    const superseded = [];
    outbox.addEventListener("superseded", (e) => superseded.push([e.detail.id, e.detail.reason, e.detail.supersededBy]));
    const dispositions = [];
    for (const event of session) {
      dispositions.push((await outbox.enqueue(event, [relayUrl])).disposition);
      await outbox.flush(); // offline: every try is `unreachable`
    }
    return { dispositions, superseded, status: await outbox.status() };
  }, [session, relayUrl, IMPORT_PACKAGE]);
  assert.deepEqual(offline.dispositions, Array(7).fill("created"));
  assert.deepEqual(offline.superseded, [
    [profile1.id, "superseded", profile2.id],
    [contacts1.id, "superseded", contacts2.id],
    [contacts2.id, "superseded", contacts3.id],
    [note.id, "deleted", deletion.id],
  ]);
  assert.equal(offline.status.superseded, 4);
  assert.equal(offline.status.total, 7, "nothing lost, nothing dropped");

  // Back online: the relay and the proxy in front of it come up; flush until done.
  await nrr.start();
  proxy = loggingProxy(port, nrr.url);
  await proxy.ready;
  const online = await page.evaluate(async () => {
    const outbox = window.outbox;
    const t0 = performance.now();
    while ((await outbox.status()).satisfied < 3 && performance.now() - t0 < 60_000) {
      await outbox.flush();
      await new Promise((r) => setTimeout(r, 250));
    }
    const records = await outbox.list({ limit: 100 });
    return { status: await outbox.status(), records };
  });
  assert.equal(online.status.satisfied, 3, JSON.stringify(online.status));
  assert.equal(online.status.superseded, 4);
  const byId = Object.fromEntries(online.records.map((r) => [r.id, r]));
  for (const old of [profile1, contacts1, contacts2, note]) {
    const r = byId[old.id];
    assert.equal(r.stage, "superseded");
    assert.ok(r.evidence.every((e) => e.outcome === "unreachable"), "never answered by a relay");
  }

  // Only the newest versions and the deletion ever reached the relay.
  assert.deepEqual(
    [...new Set(proxy.published)].sort(),
    [profile2.id, contacts3.id, deletion.id].sort(),
    "what the relay received",
  );
  const onRelay = await req(nrr.url, { authors: [pubkey] });
  const ids = onRelay.map((e) => e.id).sort();
  assert.deepEqual(ids, [profile2.id, contacts3.id, deletion.id].sort(), "newest profile and contact list, and the deletion");
  const byKind = Object.fromEntries(onRelay.map((e) => [e.kind, e]));
  assert.equal(byKind[0].sig, profile2.sig, "the profile as signed");
  assert.equal(byKind[3].tags.length, 3, "the contact list with three follows");
  await page.close();
});
