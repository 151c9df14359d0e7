// Browser benchmark: event verification throughput in headless Chromium, our Rust→wasm
// (benches/verify_wasm.rs) next to nostr-tools' verifyEvent, in the same page, on
// the same valid events (tests/data/event_vectors.json, 8 authors). Prints events/s and
// the ratio. Then the same count of events signed in the page by a new key each (no key
// is checked twice: the wasm lifts each key and has no table for it) and by one key
// (the wasm checks with that key's table, as an outbox checks its user's events), one
// call per event on both sides.
//
// Usage (from the repository root):
//   cargo build --release --example bench_verify_wasm --target wasm32-unknown-unknown
//   wasm-bindgen --target web --out-dir target/bench-wasm \
//       target/wasm32-unknown-unknown/release/examples/bench_verify_wasm.wasm
//   cd scripts/vectors && npm ci && node bench-browser.mjs ../../target/bench-wasm [rounds]
//
// Environment: CHROMIUM (default /usr/bin/chromium).

import { createServer } from 'node:http'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname, extname, resolve, normalize } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const wasmDir = resolve(process.argv[2] ?? join(here, '..', '..', 'target', 'bench-wasm'))
const rounds = Number(process.argv[3] ?? 7)
const vectorsPath = join(here, '..', '..', 'tests', 'data', 'event_vectors.json')
if (!existsSync(join(wasmDir, 'bench_verify_wasm.js'))) {
  console.error(`no bench_verify_wasm.js in ${wasmDir}: build it first (see the header of this script)`)
  process.exit(2)
}

const page = `<!doctype html><meta charset="utf-8"><title>verify bench</title>
<script type="importmap">{"imports":{
  "nostr-tools/pure": "/node_modules/nostr-tools/lib/esm/pure.js",
  "@noble/curves/": "/node_modules/@noble/curves/",
  "@noble/hashes/": "/node_modules/@noble/hashes/"
}}</script>
<script type="module">
import init, { loadEvents, verifyLoaded, verifyLoadedBatch, verifyEventJson } from '/wasm/bench_verify_wasm.js'
import { verifyEvent, finalizeEvent, generateSecretKey } from 'nostr-tools/pure'
const report = (r) => fetch('/result', { method: 'POST', body: JSON.stringify(r) })
try {
  await init()
  const doc = await (await fetch('/vectors.json')).json()
  const events = doc.vectors.filter((v) => v.valid_sig).map((v) => v.json)
  const rounds = ${rounds}
  const n = events.length * rounds
  // The measurements are interleaved round by round, so a shared machine's load
  // changes hit all of them alike; three untimed passes let both JITs tier up.
  const clock = () => performance.now()
  if (loadEvents(JSON.stringify(events)) !== events.length) throw new Error('loadEvents failed')
  const sign = (key, i) => JSON.stringify(finalizeEvent({ kind: 1, created_at: 1700000000 + i, tags: [], content: 'note ' + i }, key))
  const newKeys = events.map((_, i) => sign(generateSecretKey(), i))
  const author = generateSecretKey()
  const oneAuthor = events.map((_, i) => sign(author, i))
  // One call per event; nostr-tools gets a fresh object per call (verifyEvent caches
  // its verdict on the object), so both sides start from JSON text.
  const perCall = (list) => { let c = 0; for (const e of list) c += verifyEventJson(e) ? 1 : 0; return c }
  const perCallNt = (list) => { let k = 0; for (const e of list) k += verifyEvent(JSON.parse(e)) ? 1 : 0; return k }
  const wasmMs = [], callMs = [], ntMs = [], batchMs = [], newMs = [], newNtMs = [], oneMs = [], oneNtMs = []
  for (let r = -3; r < rounds; r++) {
    // The order of the sides rotates from round to round.
    const sides = [
      () => verifyLoaded(1),
      () => perCall(events),
      () => perCallNt(events),
      // What enqueueMany does: parse and id-check each, then one batch signature check.
      () => verifyLoadedBatch(),
      () => perCall(newKeys),
      () => perCallNt(newKeys),
      () => perCall(oneAuthor),
      () => perCallNt(oneAuthor),
    ]
    const ms = sides.map(() => 0)
    for (let j = 0; j < sides.length; j++) {
      const i = (((r + sides.length) % sides.length) + j) % sides.length
      const t = clock()
      const ok = sides[i]()
      ms[i] = clock() - t
      if (ok !== events.length) throw new Error('side ' + i + ' verified ' + ok + ' of ' + events.length)
    }
    if (r < 0) continue
    wasmMs.push(ms[0]); callMs.push(ms[1]); ntMs.push(ms[2]); batchMs.push(ms[3])
    newMs.push(ms[4]); newNtMs.push(ms[5]); oneMs.push(ms[6]); oneNtMs.push(ms[7])
  }
  report({ userAgent: navigator.userAgent, events: events.length, rounds, wasmMs, callMs, ntMs, batchMs, newMs, newNtMs, oneMs, oneNtMs })
} catch (e) {
  report({ error: String(e && e.stack || e) })
}
</script>`

const types = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json', '.html': 'text/html' }
function serveFile(res, root, rel) {
  const file = normalize(join(root, rel))
  if (!file.startsWith(root) || !existsSync(file)) { res.writeHead(404); res.end(); return }
  res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' })
  res.end(readFileSync(file))
}

let chrome
const userDataDir = mkdtempSync(join(tmpdir(), 'nostr-bench-'))
const finish = (code) => {
  server.close()
  const done = () => {
    try { rmSync(userDataDir, { recursive: true, force: true, maxRetries: 5 }) } catch { /* a temp dir */ }
    process.exit(code)
  }
  if (chrome && chrome.exitCode === null && chrome.signalCode === null) {
    chrome.removeAllListeners('exit')
    chrome.on('exit', done)
    chrome.kill('SIGTERM')
    setTimeout(done, 5000)
  } else {
    done()
  }
}
const server = createServer((req, res) => {
  const url = new URL(req.url, 'http://x')
  if (url.pathname === '/') { res.writeHead(200, { 'content-type': 'text/html' }); res.end(page); return }
  if (url.pathname === '/vectors.json') return serveFile(res, dirname(vectorsPath), 'event_vectors.json')
  if (url.pathname.startsWith('/wasm/')) return serveFile(res, wasmDir, url.pathname.slice(6))
  if (url.pathname.startsWith('/node_modules/')) return serveFile(res, join(here, 'node_modules'), url.pathname.slice(14))
  if (url.pathname === '/result' && req.method === 'POST') {
    let body = ''
    req.on('data', (c) => { body += c })
    req.on('end', () => {
      res.end('ok')
      const r = JSON.parse(body)
      if (r.error) { console.error('benchmark failed in the page:', r.error); return finish(1) }
      const median = (xs) => { const a = [...xs].sort((x, y) => x - y); return a.length % 2 ? a[(a.length - 1) / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2 }
      const rate = (ms) => (r.events / (ms / 1000)).toFixed(0)
      const runs = (xs) => `[${xs.map(rate).join(', ')}]`
      console.log(`${r.userAgent}`)
      console.log(`${r.events} valid events per round x ${r.rounds} rounds, the sides interleaved; events/s: median, then every round`)
      console.log(`rust/wasm, loop inside wasm       ${rate(median(r.wasmMs)).padStart(8)} events/s   runs ${runs(r.wasmMs)}`)
      console.log(`rust/wasm, one JS call per event  ${rate(median(r.callMs)).padStart(8)} events/s   runs ${runs(r.callMs)}`)
      console.log(`rust/wasm, batch (as enqueueMany)  ${rate(median(r.batchMs)).padStart(8)} events/s   runs ${runs(r.batchMs)}`)
      console.log(`nostr-tools verifyEvent           ${rate(median(r.ntMs)).padStart(8)} events/s   runs ${runs(r.ntMs)}`)
      console.log(`signed in the page, ${r.events} events per side, one call per event:`)
      console.log(`rust/wasm, a new key each         ${rate(median(r.newMs)).padStart(8)} events/s   runs ${runs(r.newMs)}`)
      console.log(`nostr-tools, a new key each       ${rate(median(r.newNtMs)).padStart(8)} events/s   runs ${runs(r.newNtMs)}`)
      console.log(`rust/wasm, one author             ${rate(median(r.oneMs)).padStart(8)} events/s   runs ${runs(r.oneMs)}`)
      console.log(`nostr-tools, one author           ${rate(median(r.oneNtMs)).padStart(8)} events/s   runs ${runs(r.oneNtMs)}`)
      const ratios = r.ntMs.map((t, i) => t / r.callMs[i])
      console.log(`BENCH verify: wasm (one call per event) / nostr-tools throughput ${(median(r.ntMs) / median(r.callMs)).toFixed(2)}x (medians); per round [${ratios.map((x) => x.toFixed(2)).join(', ')}]`)
      const batchRatios = r.ntMs.map((t, i) => t / r.batchMs[i])
      console.log(`BENCH verify batch: wasm (parse + id each, BIP-340 batch signature check, as enqueueMany) / nostr-tools throughput ${(median(r.ntMs) / median(r.batchMs)).toFixed(2)}x (medians); per round [${batchRatios.map((x) => x.toFixed(2)).join(', ')}]`)
      const pair = (nt, ours) => `${(median(nt) / median(ours)).toFixed(2)}x (medians); per round [${nt.map((t, i) => (t / ours[i]).toFixed(2)).join(', ')}]`
      console.log(`BENCH verify new keys: wasm / nostr-tools throughput, a new key per event ${pair(r.newNtMs, r.newMs)}`)
      console.log(`BENCH verify one author: wasm / nostr-tools throughput, one key for every event ${pair(r.oneNtMs, r.oneMs)}`)
      finish(0)
    })
    return
  }
  res.writeHead(404); res.end()
})

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address()
  chrome = spawn(process.env.CHROMIUM ?? '/usr/bin/chromium', [
    '--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-dev-shm-usage', `--user-data-dir=${userDataDir}`, `http://127.0.0.1:${port}/`,
  ], { stdio: 'ignore' })
  chrome.on('exit', (code) => { if (server.listening) { console.error(`chromium exited early (${code})`); finish(1) } })
})
setTimeout(() => { console.error('timed out'); finish(1) }, 15 * 60 * 1000)
