import { chromium } from "playwright-core";
import { createServer } from "node:http";
const server = createServer((q, r) => { r.setHeader("content-type", "text/html"); r.end("<!doctype html><title>x</title>"); });
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: ["--headless=new"] });
const page = await browser.newPage();
await page.goto(`http://127.0.0.1:${server.address().port}/`);
const out = await page.evaluate(async () => {
  const db = await new Promise((res, rej) => { const r = indexedDB.open("x" + Math.random(), 1); r.onupgradeneeded = () => { const s = r.result.createObjectStore("records", { keyPath: "id" }); s.createIndex("due", ["dueMs", "createdMs", "id"]); s.createIndex("created", ["createdMs", "id"]); s.createIndex("stage", ["stage", "createdMs", "id"]); s.createIndex("event", "eventId"); }; r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
  const spin = (ms) => { const t = performance.now(); while (performance.now() - t < ms) {} };
  const doc = "x".repeat(900);
  let n = 0;
  const row = () => ({ id: "r" + (n++) + "-" + Math.random(), v: 1, stage: "pending", dueMs: 1, createdMs: n, eventId: "e" + n, doc });
  const done = (tx) => new Promise((res, rej) => { tx.oncomplete = res; tx.onerror = () => rej(tx.error); tx.onabort = () => rej(tx.error); });
  const reqDone = (rq) => new Promise((res, rej) => { rq.onsuccess = () => res(rq.result); rq.onerror = () => rej(rq.error); });
  const SPIN = 0.5;
  const variants = {
    raw: async () => { const tx = db.transaction("records", "readwrite", { durability: "strict" }); tx.objectStore("records").put(row()); await done(tx); },
    spinThenPut: async () => { spin(SPIN); const tx = db.transaction("records", "readwrite", { durability: "strict" }); tx.objectStore("records").put(row()); await done(tx); },
    addSpinAwaitCommit: async () => { const tx = db.transaction("records", "readwrite", { durability: "strict" }); const rq = tx.objectStore("records").add(row()); spin(SPIN); await reqDone(rq); tx.commit(); await done(tx); },
    addSpinCommitNow: async () => { const tx = db.transaction("records", "readwrite", { durability: "strict" }); const rq = tx.objectStore("records").add(row()); spin(SPIN); tx.commit(); await done(tx); },
    addAwaitSpinCommit: async () => { const tx = db.transaction("records", "readwrite", { durability: "strict" }); const rq = tx.objectStore("records").add(row()); await reqDone(rq); spin(SPIN); tx.commit(); await done(tx); },
    addYieldSpinAwaitCommit: async () => { const tx = db.transaction("records", "readwrite", { durability: "strict" }); const rq = tx.objectStore("records").add(row()); await new Promise((r) => setTimeout(r, 0)); spin(SPIN); await reqDone(rq); tx.commit(); await done(tx); },
  };
  const times = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  const keys = Object.keys(variants);
  for (let i = 0; i < 300; i++) for (let j = 0; j < keys.length; j++) { const k = keys[(i + j) % keys.length]; const t = performance.now(); await variants[k](); times[k].push(performance.now() - t); }
  const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };
  const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, `median ${med(v).toFixed(2)} mean ${mean(v).toFixed(3)}`]));
});
console.log(out);
await browser.close(); server.close();
