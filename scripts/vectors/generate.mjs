// Generates tests/data/event_vectors.json: signed Nostr events made and checked by
// another implementation (npm nostr-tools + @noble/curves), so the Rust parser, id
// computation and BIP-340 verification can be cross-checked on every one.
//
// Usage: cd scripts/vectors && npm ci && node generate.mjs
//
// Deterministic: secret keys, timestamps, contents and the BIP-340 auxiliary randomness
// are all derived from a fixed seed, so regenerating gives the same file.
//
// Each vector: { json, valid_id, valid_sig, computed_id, note }
//   json         the event's JSON text, exactly as an app would hand it to the outbox
//   valid_id     nostr-tools: getEventHash(event) === event.id
//   valid_sig    nostr-tools: verifyEvent(event) (id matches AND signature verifies)
//   computed_id  nostr-tools: getEventHash(event)
//   note         what the vector exercises

import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'
import { getEventHash, getPublicKey, verifyEvent } from 'nostr-tools/pure'
import { schnorr } from '@noble/curves/secp256k1.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'

const SEED = 'nostr-outbox/event-vectors/v1'
const enc = new TextEncoder()
const h = (label) => sha256(enc.encode(`${SEED}/${label}`))

// A small deterministic PRNG (xorshift32) for choosing kinds, tags and contents.
let state = 0x9e3779b9
function rnd() {
  state ^= state << 13
  state >>>= 0
  state ^= state >>> 17
  state ^= state << 5
  state >>>= 0
  return state
}
const pick = (arr) => arr[rnd() % arr.length]

const secretKeys = Array.from({ length: 8 }, (_, i) => h(`sk/${i}`))

const hostile = [
  'hello world',
  '',
  'quote " inside',
  'backslash \\ inside, and \\" escaped-looking',
  'literal escape text: \\n \\t \\u0000 \\u2028',
  'newline\nand\rcarriage\r\nreturn',
  'tab\there, backspace\b, formfeed\f',
  'NUL \u0000 byte',
  Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)).join(''),
  'DEL \u007f and C1 \u0080\u0085\u009f',
  'line separators \u2028 and \u2029 (raw in JSON.stringify)',
  'BOM \ufeff and zero-width \u200b\u200c\u200d',
  'emoji 🤙🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ⚡',
  'astral 𝄞 𠜎 \u{10FFFF}',
  'RTL: שלום עולם — مرحبا بالعالم \u202eoverride\u202c',
  'combining: e\u0301 a\u0308 ñ vs n\u0303',
  'CJK: 日本語のテキスト、中文，한국어',
  '</script><script>alert(1)</script>',
  '{"kind":1,"content":"json inside"}',
  '["EVENT",{"id":"nested"}]',
  '   leading and trailing spaces   ',
  'mixed \u0001\u001f"\\/\u2028é😀\n',
  'slash / and escaped-slash \\/ text',
  'nostr:npub1sg6plzptd64u62a878hep2kev88swjh3tw00gjsfl8f237lmu63q0uf63m',
]

function longContent(n) {
  let s = ''
  const parts = ['lorem ipsum ', 'ünïcödé ', '😀', '"q"', '\\', '\n', '\u0003', 'שלום ']
  while (s.length < n) s += pick(parts)
  return s
}

const kinds = [0, 1, 3, 4, 5, 6, 7, 16, 1063, 1111, 9734, 10002, 20000, 22242, 30023, 31990, 40000, 65535]

const tagPool = [
  () => ['e', bytesToHex(h(`e/${rnd()}`))],
  () => ['p', bytesToHex(h(`p/${rnd()}`)), 'wss://relay.example.com'],
  () => ['t', pick(['nostr', 'Outbox', 'ümlaut', '🤙'])],
  () => ['expiration', String(1700000000 + (rnd() % 100000000))],
  () => ['client', pick(hostile)],
  () => [],
  () => [''],
  () => ['d', ''],
  () => ['a', `30023:${bytesToHex(h(`a/${rnd()}`))}:slug "quoted" \\ back`],
  () => ['r', 'wss://relay.damus.io/', 'write'],
  () => ['x', '\u0000\u001f\u2028', '\n\t', 'é', '𝄞'],
]

const createdAts = [0, 1, 1700000000, 1712345678, 4102444800, 9007199254740991]

function sign(template, label) {
  const sk = pick(secretKeys)
  const event = { ...template, pubkey: getPublicKey(sk) }
  event.id = getEventHash(event)
  event.sig = bytesToHex(schnorr.sign(hexToBytes(event.id), sk, h(`aux/${label}`)))
  return { id: event.id, pubkey: event.pubkey, created_at: event.created_at, kind: event.kind, tags: event.tags, content: event.content, sig: event.sig }
}

// Re-encodes a JSON text with every non-ASCII character as \uXXXX escapes (surrogate
// pairs for astral characters): the same JSON value, different text.
function asciiEscape(text) {
  return text.replace(/[\u0080-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))
}

function vector(event, json, note) {
  // Check with nostr-tools on a fresh parse of the exact JSON text.
  const parsed = JSON.parse(json)
  const computed = getEventHash(parsed)
  const validId = computed === parsed.id
  const validSig = verifyEvent(JSON.parse(json))
  return { json, valid_id: validId, valid_sig: validSig, computed_id: computed, note }
}

const vectors = []
const valid = []

// 1. Valid events: every hostile content at least once, then random mixes.
for (let i = 0; i < 120; i++) {
  const content = i < hostile.length ? hostile[i] : i % 10 === 0 ? longContent(i === 110 ? 70000 : 1000 + (rnd() % 6000)) : pick(hostile) + ' #' + i
  const ntags = rnd() % 5
  const tags = Array.from({ length: ntags }, () => pick(tagPool)())
  const template = { kind: i < kinds.length ? kinds[i] : pick(kinds), created_at: pick(createdAts), tags, content }
  const ev = sign(template, `valid/${i}`)
  valid.push(ev)
  vectors.push(vector(ev, JSON.stringify(ev), `valid #${i}: kind ${ev.kind}, ${ntags} tags, content ${content.length} chars`))
}

// 2. The same valid events written differently: the id is over the values, not the text.
for (let i = 0; i < 10; i++) {
  const ev = valid[i * 3]
  vectors.push(vector(ev, JSON.stringify(ev, null, 2), `valid #${i * 3} pretty-printed`))
  const reversed = {}
  for (const k of Object.keys(ev).reverse()) reversed[k] = ev[k]
  vectors.push(vector(ev, JSON.stringify(reversed), `valid #${i * 3} keys in reverse order`))
  vectors.push(vector(ev, asciiEscape(JSON.stringify(ev)), `valid #${i * 3} non-ASCII as \\u escapes`))
}
{
  const ev = valid[1]
  vectors.push(vector(ev, JSON.stringify({ ...ev, extra: 'ignored', relays: ['wss://x'] }), 'valid #1 with unknown extra fields'))
}

// 3. Corrupted copies.
const flipHex = (s, at) => s.slice(0, at) + (s[at] === '0' ? '1' : '0') + s.slice(at + 1)
for (let i = 0; i < 40; i++) {
  const ev = valid[i]
  const at = rnd() % 64
  vectors.push(vector(ev, JSON.stringify({ ...ev, id: flipHex(ev.id, at) }), `valid #${i} with id hex digit ${at} flipped`))
  const sat = rnd() % 128
  vectors.push(vector(ev, JSON.stringify({ ...ev, sig: flipHex(ev.sig, sat) }), `valid #${i} with sig hex digit ${sat} flipped`))
  vectors.push(vector(ev, JSON.stringify({ ...ev, content: ev.content + '.' }), `valid #${i} with content changed`))
}
for (let i = 0; i < 10; i++) {
  const ev = valid[40 + i]
  // Another author's pubkey with a correct id for it, but the original signature.
  const other = getPublicKey(secretKeys.find((sk) => getPublicKey(sk) !== ev.pubkey))
  const forged = { ...ev, pubkey: other }
  forged.id = getEventHash(forged)
  vectors.push(vector(forged, JSON.stringify(forged), `valid #${40 + i} re-attributed to another pubkey (id recomputed, sig not)`))
  // Tags changed (id no longer matches).
  vectors.push(vector(ev, JSON.stringify({ ...ev, tags: [...ev.tags, ['t', 'added']] }), `valid #${40 + i} with a tag added`))
  // created_at changed (staying within 2^53 - 1, which the Rust parser requires).
  const delta = ev.created_at < Number.MAX_SAFE_INTEGER ? 1 : -1
  vectors.push(vector(ev, JSON.stringify({ ...ev, created_at: ev.created_at + delta }), `valid #${40 + i} with created_at ${delta > 0 ? '+' : '-'} 1`))
}
{
  const ev = valid[60]
  vectors.push(vector(ev, JSON.stringify({ ...ev, sig: '0'.repeat(128) }), 'valid #60 with an all-zero sig'))
  vectors.push(vector(ev, JSON.stringify({ ...ev, sig: 'f'.repeat(128) }), 'valid #60 with an all-f sig (r, s out of range)'))
  const swapped = ev.sig.slice(64) + ev.sig.slice(0, 64)
  vectors.push(vector(ev, JSON.stringify({ ...ev, sig: swapped }), 'valid #60 with sig halves swapped'))
  // A pubkey that is not the x coordinate of any curve point, id recomputed.
  let bad = 5n
  const P = 2n ** 256n - 2n ** 32n - 977n
  const isX = (x) => {
    const y2 = (x ** 3n + 7n) % P
    // Euler's criterion
    let r = 1n, b = y2, e = (P - 1n) / 2n
    while (e > 0n) { if (e & 1n) r = (r * b) % P; b = (b * b) % P; e >>= 1n }
    return r === 1n || y2 === 0n
  }
  while (isX(bad)) bad++
  const offCurve = { ...ev, pubkey: bad.toString(16).padStart(64, '0') }
  offCurve.id = getEventHash(offCurve)
  vectors.push(vector(offCurve, JSON.stringify(offCurve), 'valid #60 with an off-curve pubkey (id recomputed)'))
}

const nValid = vectors.filter((v) => v.valid_sig).length
const out = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'tests', 'data', 'event_vectors.json')
writeFileSync(out, JSON.stringify({
  generator: 'scripts/vectors/generate.mjs',
  nostr_tools: JSON.parse((await import('node:fs')).readFileSync(new URL('./node_modules/nostr-tools/package.json', import.meta.url))).version,
  seed: SEED,
  vectors,
}, null, 1) + '\n')
console.log(`wrote ${vectors.length} vectors (${nValid} valid) to ${out}`)
