// Drafts end to end, in Chromium against a real nostr-rs-relay: a note composed offline
// while the remote signer is down is stored at once (stage `draft`); the page is reloaded;
// the signer (here in Node, reached over the page's bridge as a bunker is over relays)
// fails, then comes back, and the note is signed once and delivered once. A draft undone
// within its hold window across a reload is never signed nor sent. NIP-13 work for a draft
// is mined in a Worker of its own by the shipped package.
// Run: cd tests/e2e && node --test drafts.test.mjs   (needs pkg/ from `make build`)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { generateSecretKey, getPublicKey, finalizeEvent, verifyEvent } from "nostr-tools/pure";
import { startServer, launch, relay, queryRelay, IMPORT_PACKAGE } from "./harness.mjs";

let server, browser, nrr;
before(async () => {
  server = await startServer();
  browser = await launch();
  nrr = await relay();
  await nrr.start();
});
after(async () => {
  await browser?.close();
  await nrr?.destroy();
  await server?.close();
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A signer in Node: `up` signs with `sk`; `hang` never answers (a prompt left open);
 * else it fails as an unreachable bunker does.
 */
function remoteSigner(sk) {
  const s = { up: false, hang: false, asked: 0, signed: [] };
  s.sign = async (template) => {
    s.asked += 1;
    if (s.hang) return new Promise(() => {});
    if (!s.up) throw new Error("bunker is not connected");
    const event = finalizeEvent({ kind: template.kind, created_at: template.created_at, tags: template.tags, content: template.content }, sk);
    s.signed.push(event.id);
    return event;
  };
  return s;
}

/** Loads the package in `page` and opens `window.outbox` on `name`, signing through the bridge. */
async function open(page, name, options = {}) {
  await page.evaluate(async ([IMPORT_PACKAGE, name, options]) => {
    window.m = await eval(IMPORT_PACKAGE);
    window.outbox = await window.m.Outbox.open({
      name,
      autoFlush: true,
      baseDelayMs: 200,
      maxDelayMs: 400,
      signer: { signEvent: (t) => window.remoteSign(t) },
      ...options,
    });
  }, [IMPORT_PACKAGE, name, options]);
}

test("a note composed offline with the signer down is signed once and delivered once after a reload, when the signer is back", async () => {
  const name = `drafts-${Math.random()}`;
  const sk = generateSecretKey();
  const signer = remoteSigner(sk);
  const page = await browser.context.newPage();
  await page.exposeFunction("remoteSign", signer.sign);
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  await open(page, name);

  // Offline: the draft is stored at once; nothing is asked or sent.
  await browser.context.setOffline(true);
  const draft = { kind: 1, pubkey: getPublicKey(sk), tags: [["t", "e2e"]], content: `composed offline ${name}` };
  const stored = await page.evaluate(async ([draft, url]) => {
    const r = await outbox.enqueue(draft, [url], { sign: true });
    return { id: r.id, stage: r.record.stage, isDraft: r.record.draft };
  }, [draft, nrr.url]);
  assert.equal(stored.stage, "draft");
  assert.equal(stored.isDraft, true);
  assert.equal(signer.asked, 0, "an offline flush asks no signer");

  // Online again: the page's flush asks the signer, which does not answer (a prompt
  // left open); the page is reloaded meanwhile, its lease on the draft left behind.
  signer.hang = true;
  await browser.context.setOffline(false);
  await page.evaluate(() => { outbox.flush(); });
  for (let i = 0; i < 100 && signer.asked === 0; i++) await sleep(50);
  assert.equal(signer.asked, 1, "asked before the reload");
  signer.hang = false;

  // Reload: the new page holds the Web Lock and takes the draft over at once; the signer
  // is down: asked, the draft waits.
  await page.reload();
  await open(page, name);
  const waiting = await page.evaluate(async (id) => {
    const until = Date.now() + 10_000;
    for (;;) {
      const r = await outbox.get(id);
      if (r.evidence.length > 0 || Date.now() > until) return r;
      await new Promise((res) => setTimeout(res, 50));
    }
  }, stored.id);
  assert.equal(waiting.stage, "draft", JSON.stringify(waiting));
  assert.equal(waiting.takeovers, 1, "taken over from the page that was reloaded");
  assert.equal(waiting.evidence[0].relay, "signer");
  assert.equal(waiting.evidence[0].outcome, "unreachable");
  assert.equal(waiting.attempts, 0);

  // The signer is back: signed once, published once.
  signer.up = true;
  const done = await page.evaluate(async (id) => {
    const signed = [];
    outbox.addEventListener("signed", (e) => signed.push(e.detail.id));
    const until = Date.now() + 15_000;
    for (;;) {
      const r = await outbox.get(id);
      if (r.stage === "satisfied" || Date.now() > until) return { r, signed };
      await new Promise((res) => setTimeout(res, 100));
    }
  }, stored.id);
  assert.equal(done.r.stage, "satisfied", JSON.stringify(done.r));
  assert.equal(signer.signed.length, 1, "signed once");
  assert.equal(signer.asked, 3, "asked three times: the hang, the failure, the answer");
  assert.equal(done.r.event.id, signer.signed[0]);
  assert.ok(verifyEvent(done.r.event), "the stored event verifies (nostr-tools)");
  assert.equal(done.r.event.content, draft.content);
  const onRelay = await queryRelay(nrr.url, [done.r.event.id]);
  assert.equal(onRelay.length, 1, "delivered");
  assert.equal(onRelay[0].sig, done.r.event.sig, "the bytes the signer signed");
  assert.equal(done.r.evidence.filter((e) => e.relay === nrr.url).length, 1, "one publish");
  // Nothing more is asked.
  await sleep(800);
  assert.equal(signer.signed.length, 1);
  await page.evaluate(() => outbox.close());
  await page.close();
});

test("a draft undone within its hold window, across a reload, is never signed nor sent", async () => {
  const name = `drafts-undo-${Math.random()}`;
  const sk = generateSecretKey();
  const signer = remoteSigner(sk);
  signer.up = true;
  const page = await browser.context.newPage();
  await page.exposeFunction("remoteSign", signer.sign);
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  await open(page, name, { holdMs: 3000 });
  const draft = { kind: 1, pubkey: getPublicKey(sk), tags: [], content: `undone ${name}` };
  const kept = { ...draft, content: `kept ${name}` };
  const t0 = Date.now();
  const ids = await page.evaluate(async ([draft, kept, url]) => {
    const a = await outbox.enqueue(draft, [url], { sign: true });
    const b = await outbox.enqueue(kept, [url], { sign: true });
    return [a.id, b.id];
  }, [draft, kept, nrr.url]);
  await page.reload();
  await open(page, name, { holdMs: 3000 });
  const stage = await page.evaluate(async (id) => (await outbox.cancel(id)).stage, ids[0]);
  assert.equal(stage, "cancelled");
  assert.ok(Date.now() < t0 + 3000, "undone within the window");
  const kept2 = await page.evaluate(async (id) => {
    const until = Date.now() + 15_000;
    for (;;) {
      const r = await outbox.get(id);
      if (r.stage === "satisfied" || Date.now() > until) return r;
      await new Promise((res) => setTimeout(res, 100));
    }
  }, ids[1]);
  assert.equal(kept2.stage, "satisfied");
  assert.ok(kept2.evidence.find((e) => e.relay === "signer").at >= t0 + 3000, "signed after the window");
  assert.equal(signer.asked, 1, "only the kept draft was signed");
  const undone = await page.evaluate(async (id) => outbox.get(id), ids[0]);
  assert.equal(undone.stage, "cancelled");
  assert.equal(undone.draft, true, "never signed");
  await page.evaluate(() => outbox.close());
  await page.close();
});

test("proof of work for a draft is mined in a Worker by the shipped package, and the note delivered", async () => {
  const name = `drafts-pow-${Math.random()}`;
  const sk = generateSecretKey();
  const signer = remoteSigner(sk);
  signer.up = true;
  const page = await browser.context.newPage();
  await page.exposeFunction("remoteSign", signer.sign);
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  // Counts the workers the page makes and what they answer.
  await page.evaluate(() => {
    const Real = window.Worker;
    window.workers = { made: 0, answers: [] };
    window.Worker = class extends Real {
      constructor(...args) {
        super(...args);
        window.workers.made += 1;
        this.addEventListener("message", (e) => window.workers.answers.push(e.data));
      }
    };
  });
  await open(page, name);
  const draft = { kind: 1, pubkey: getPublicKey(sk), tags: [], content: `mined ${name}` };
  const done = await page.evaluate(async ([draft, url]) => {
    const { id } = await outbox.enqueue(draft, [url], { sign: true, pow: 16 });
    const until = Date.now() + 30_000;
    for (;;) {
      const r = await outbox.get(id);
      if (r.stage === "satisfied" || Date.now() > until) return { record: r, workers: window.workers };
      await new Promise((res) => setTimeout(res, 100));
    }
  }, [draft, nrr.url]);
  assert.equal(done.record.stage, "satisfied", JSON.stringify(done.record));
  const event = done.record.event;
  assert.ok(verifyEvent(event));
  const nonce = event.tags.find((t) => t[0] === "nonce");
  assert.equal(nonce[2], "16");
  assert.ok(/^0000/.test(event.id), `16 leading zero bits: ${event.id}`);
  assert.equal(done.workers.made, 1, "one worker mined it");
  assert.deepEqual(done.workers.answers, [Number(nonce[1])], "the worker's nonce was signed");
  const [onRelay] = await queryRelay(nrr.url, [event.id]);
  assert.equal(onRelay.id, event.id);
  await page.evaluate(() => outbox.close());
  await page.close();
});
