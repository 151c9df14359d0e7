//! The TypeScript declarations of the package: every option, record, event and error
//! type, and the `Outbox` class and service worker helpers (their generated
//! declarations are skipped so that no `any` reaches users). Kept next to the Rust
//! that produces the values; `tests/ts/consumer.ts` checks them with `tsc --noEmit`.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
declare global {
  // The few platform types these declarations name. Where lib.dom (or
  // lib.webworker, @types/node) declares them, these empty interfaces merge into
  // theirs; where nothing does (an edge or worker project with `lib: ["ES2023"]`),
  // they stand in, so the declarations check without the DOM.
  interface Event {}
  interface CustomEvent<T = any> { readonly detail: T }
  interface EventListenerOptions {}
  interface AddEventListenerOptions {}
  interface ServiceWorkerRegistration {}
  interface Request {}
  interface Response {}
  interface URL {}
  interface AbortSignal {}
  namespace WebAssembly {
    interface Module {}
    interface Memory {}
    interface Table {}
  }
}

/**
 * A service worker's Background Sync event (`self.addEventListener("sync", …)`),
 * which TypeScript's libraries do not declare: what `handleSync` reads, and
 * `waitUntil`.
 */
export interface SyncEvent {
  readonly tag: string;
  readonly lastChance: boolean;
  waitUntil(promise: Promise<unknown>): void;
}

/** A key's value and version, as a storage adapter answers them. */
export interface StorageEntry {
  value: string;
  /** Opaque; changes on every write of the key. */
  version: string;
}

/**
 * The storage adapter contract (`Outbox.open({ storage: adapter })`, edge build): a
 * small async key-value store with an atomic, compare-and-set commit. Keys are ASCII
 * strings compared as strings; values are strings. The package ships adapters for
 * Durable Objects (`nostr-outbox/durable-object`), Deno KV (`nostr-outbox/deno-kv`),
 * SQLite (`nostr-outbox/sqlite`: bun:sqlite, node:sqlite) and memory
 * (`nostr-outbox/memory-storage`). See docs/API.md, "Storage adapters".
 */
export interface StorageAdapter {
  /** What one commit may hold; an omitted field means no limit. */
  readonly limits?: {
    maxMutations?: number;
    maxChecks?: number;
    maxValueBytes?: number;
    maxCommitBytes?: number;
    maxKeyBytes?: number;
  };
  /** For each key (same order): its value and version, or null when absent. */
  getMany(keys: string[]): Promise<Array<StorageEntry | null>>;
  /** The keys k with start <= k < end in key order (descending with `reverse`: the `limit` keys nearest `end`); at most `limit`. */
  list(range: { start: string; end: string; limit: number; reverse: boolean }): Promise<Array<{ key: string } & StorageEntry>>;
  /**
   * Atomically: if every check holds (the key still has `version`, or is still absent
   * when `version` is null), applies every put and delete and resolves true; else
   * writes nothing and resolves false. Rejects only when the backend fails (having
   * written nothing).
   */
  commit(commit: {
    checks: Array<{ key: string; version: string | null }>;
    puts: Array<{ key: string; value: string }>;
    deletes: string[];
  }): Promise<boolean>;
}
/**
 * Where a record is in its life. `satisfied`, `exhausted`, `cancelled` and `superseded`
 * are terminal; `superseded`: a newer version of its replaceable or addressable event,
 * or a NIP-09 deletion of it, was enqueued, so it is not sent (see `supersededBy`).
 * `delivering`: the policy's verdict is in (`satisfaction` is `"satisfied"`, or
 * `"exhausted"` when it can no longer be met) and delivery goes on to the targets still
 * open until they settle or the deadline or attempt budget ends it (not with
 * `stopWhenSatisfied`). Delivery over, a satisfied record ends `satisfied` and one that
 * can no longer be satisfied `exhausted` (reason `rejected`).
 * `draft`: an unsigned template (`enqueue(template, relays, { sign: true })`) waiting
 * for the outbox's `signer`, or a `route` waiting for its `resolver`; once signed and
 * checked, and resolved, it is `pending`.
 */
export type Stage =
  | "draft"
  | "pending"
  | "leased"
  | "retryable"
  | "delivering"
  | "satisfied"
  | "exhausted"
  | "cancelled"
  | "superseded";

/** The policy's verdict over a record's evidence. */
export type Satisfaction = "pending" | "satisfied" | "exhausted";

/**
 * When a record counts as delivered: every target (`"all"`), one (`"any"`), at least
 * `n`, or every relay in `required` (the other targets are tried best effort).
 */
export type Policy =
  | "all"
  | "any"
  | { readonly atLeast: number }
  | { readonly required: readonly string[] };

/** What one relay answered to one publish. `accepted`/`duplicate` settle the target. */
export type Outcome =
  | "accepted"
  | "duplicate"
  | "rejected"
  | "rateLimited"
  | "authRequired"
  | "error"
  | "timeout"
  | "unreachable"
  | "notAttempted";

/** The `OK false` prefix behind a terminal rejection. */
export type RejectReason =
  | "blocked"
  | "invalid"
  | "restricted"
  | "pow"
  | "mute"
  | "other"
  /** Not sent: the relay holds a newer version of this replaceable event (`newerKinds`). */
  | "newer"
  /** Not sent: the relay's NIP-11 document states a limit the event can never meet (`relayInfoTtlMs`). */
  | "limit";

/** Why a record stopped without being satisfied. */
export type StopReason =
  | "rejected"
  | "maxAttempts"
  | "expired"
  | "cancelled"
  | "superseded"
  | "deleted"
  | "signerRefused"
  | "signatureInvalid"
  | "powUnfinished"
  | "vanished"
  /** A target relay holds a newer version (published elsewhere); `supersededBy` is its id. */
  | "remoteNewer"
  /** NIP-17: the recipient of its `dm` route has no kind 10050 list (never sent elsewhere instead). */
  | "recipientNotReady"
  /** Its route resolved to no relay, and it has no relay of its own. */
  | "noRelays";

/** A target's state from its latest evidence. */
export type TargetState = "open" | "accepted" | "rejected";

/** A signed NIP-01 event. */
export interface SignedEvent {
  id: string;
  pubkey: string;
  created_at: number;
  kind: number;
  tags: string[][];
  content: string;
  sig: string;
}

/** An unsigned event, as handed to a signer (NIP-42 AUTH, drafts; drafts add `pubkey`). */
export interface EventTemplate {
  kind: number;
  created_at: number;
  tags: string[][];
  content: string;
  pubkey?: string;
}

/**
 * A draft: an unsigned event to be signed by the outbox's `signer` when it is due
 * (`enqueue(draft, relays, { sign: true })`). `pubkey` is the author it must be signed
 * by; without `created_at` (or with `0`) it gets the signing time. No `id`, no `sig`.
 */
export interface DraftTemplate {
  kind: number;
  pubkey: string;
  tags: string[][];
  content: string;
  created_at?: number;
}

/**
 * Signs NIP-42 AUTH events and drafts: a NIP-07 `window.nostr`, nostr-tools'
 * `BunkerSigner`, an NDK or applesauce signer, or any object of this shape. A rejection
 * whose message says no (rejected, denied, refused, declined, not allowed, unauthorized,
 * forbidden, permission) ends a draft `signerRefused`; any other rejection, or no answer
 * within `signTimeoutMs`, asks again later.
 */
export interface NostrSigner {
  signEvent(template: EventTemplate): Promise<SignedEvent> | SignedEvent;
  /**
   * The signer's key (NIP-07): asked when a NIP-70 protected event is enqueued, which is
   * refused (`invalid_argument`) when its author is another key.
   */
  getPublicKey?(): Promise<string> | string;
}

/**
 * A signer that answers with the signature alone, as NDK's signers do (`sign(event)`):
 * it signs drafts (the event is the draft with that signature, checked like any answer);
 * NIP-42 AUTH needs a `signEvent` signer.
 */
export interface SignatureSigner {
  sign(event: EventTemplate & { pubkey: string }): Promise<string>;
  /** NDK's: the signer's user, whose `pubkey` is asked about NIP-70 protected events. */
  user?(): Promise<{ pubkey: string }>;
}

/** The relay's `["OK", id, ok, message]` answer, as reported by a custom transport. */
export interface RelayAnswer {
  ok: boolean;
  message?: string;
}

/**
 * A custom transport (tests, edge runtimes with their own sockets): publishes the
 * event's JSON text to one relay and reports its `OK`. A throw or rejection counts as
 * `unreachable`; it must settle (report a timeout as a rejection).
 */
export interface OutboxTransport {
  publish(relay: string, event: string): Promise<RelayAnswer> | RelayAnswer;
}

/** Options of `Outbox.open`. Every field is optional. */
export interface OutboxOptions {
  /** IndexedDB database name (one outbox per name per origin). Default `"nostr-outbox"`. */
  name?: string;
  /**
   * `"indexeddb"` (the browser build's default, durable), `"memory"` (gone with the
   * context), or a storage adapter (the edge build: Durable Objects, Deno KV, SQLite).
   */
  storage?: "indexeddb" | "memory" | StorageAdapter;
  /** IndexedDB write durability. Default `"strict"`. */
  durability?: "strict" | "relaxed";
  /** Default policy of `enqueue`. Default `"all"`. */
  policy?: Policy;
  /** Default attempt budget per record (1..=1000). Default 10. */
  maxAttempts?: number;
  /**
   * Default of `enqueue`'s `stopWhenSatisfied`: stop delivering at the policy's verdict.
   * Default `false` (every target that has not settled keeps getting the event).
   */
  stopWhenSatisfied?: boolean;
  /**
   * An undo window for every enqueue, in ms (0..=86 400 000, default 0): a record without a
   * `notBefore` of its own waits this long before it is sent, so `cancel(id)` within it is an
   * undo (nothing was sent), across reloads, tabs and workers. `notBefore` (`0`: at once)
   * overrides it per record.
   */
  holdMs?: number;
  /** Delay after the first failed attempt, doubled each attempt. Default 1000 ms. */
  baseDelayMs?: number;
  /** Largest retry delay. Default 300000 ms. */
  maxDelayMs?: number;
  /** How long a relay may take to answer `OK` (1..=600000). Default 10000 ms. */
  publishTimeoutMs?: number;
  /** How long opening a relay connection may take (1..=600000). Default 5000 ms. */
  connectTimeoutMs?: number;
  /**
   * Consecutive failed connections (or connections lost with publishes in flight) after
   * which a relay's circuit opens: publishes to it report `unreachable` at once for
   * `circuitOpenMs` (0..=1000; 0 = never). Default 3. With auto-flush, the `online`
   * event closes every circuit.
   */
  circuitFailures?: number;
  /**
   * The longest an open circuit holds publishes back (1..=3600000). Default 30000 ms. It
   * opens for a sixteenth of this first, twice as long after each further failed
   * connection, so a relay that restarts is tried again within seconds.
   */
  circuitOpenMs?: number;
  /**
   * NIP-11: how long a relay's information document is kept (0..=604800000 ms; 0 = never
   * fetched, no checks). Default 3600000 (one hour). Before each send the event is checked
   * against the limits the document states: one it can never meet is not sent (rejected,
   * reason `limit`); one ahead of the relay's `created_at` window waits (`error`, retried);
   * no document, a failed fetch or an invalid document means no checks.
   */
  relayInfoTtlMs?: number;
  /**
   * Records claimed per flush round (1..=256); attempts are also recorded in groups of
   * about this many. Default 64. Records of priority `low` are claimed at most
   * 4 × `lowConcurrency` (16 by default) at a time.
   */
  batchSize?: number;
  /**
   * Publishes in flight to each relay at once (1..=256). Default 256.
   */
  concurrency?: number;
  /**
   * Of those, how many may be of `low` records (1..=256). Default 4: a more urgent
   * record queues behind at most 4 of a backlog's publishes on the relay's connection.
   * Higher moves a `low` backlog faster and makes a note behind it wait longer.
   */
  lowConcurrency?: number;
  /**
   * How long a claimed record stays exclusive to this flusher. Its publishes start in
   * the first half (or it is handed back), so keep it at least twice the longest
   * publish. Default `max(120000, 3 × (connectTimeoutMs + 30000 + 2 × publishTimeoutMs))`.
   */
  leaseMs?: number;
  /**
   * Kinds checked before each send to each relay: when the relay holds a newer version
   * of the (replaceable or addressable) event, published from another device, it is not
   * sent and the record ends `superseded` with reason `remoteNewer`. Default
   * `[0, 3, 10002]` (profile, contact list, relay list); `[]` turns the check off.
   */
  newerKinds?: number[];
  /**
   * Signs NIP-42 AUTH challenges and drafts (e.g. `window.nostr`, a `BunkerSigner`).
   * Without one, drafts wait for a context that has one (a tab, while a service worker
   * or an edge runtime only publishes).
   */
  signer?: NostrSigner | SignatureSigner | ((template: EventTemplate) => Promise<SignedEvent>);
  /**
   * How long the signer may take for one draft (1..=600000 ms, default 60000: a person
   * may have to approve it). No answer by then: asked again after a backoff.
   */
  signTimeoutMs?: number;
  /**
   * Resolves routing intents (`route` on `enqueue`) into relays when a record is due:
   * your own function, `relayListResolver(...)` (reads kinds 10002/10050 from index
   * relays, cached), or a library's router (`ndkResolver`, `applesauceResolver`,
   * `welshmanResolver`). Without one, records with a route wait for a context that has
   * one.
   */
  resolver?: Resolver;
  /** Call `navigator.storage.persist()` at open; the answer is `outbox.persisted`. */
  requestPersistence?: boolean;
  /** Start auto-flush at once (same as calling `startAutoFlush()`). Default false. */
  autoFlush?: boolean;
  /** Relay record events to outboxes of the same database in other tabs/workers. Default true. */
  broadcast?: boolean;
  /** Publish through this transport instead of WebSockets. */
  transport?: OutboxTransport;
}

/** Options of `enqueue`. */
export interface EnqueueOptions {
  /** Overrides the outbox's default policy. */
  policy?: Policy;
  /** Item id (1..=128 of `[A-Za-z0-9._:-]`). Default: the event id. */
  id?: string;
  /** Give up (reason `expired`) after this time, unix ms. */
  deadline?: number;
  /** Attempt budget of this record (1..=1000). */
  maxAttempts?: number;
  /**
   * The lane (1..=64 bytes of ASCII letters, digits and `. _ : / -`), default
   * `"default"`. `flush({ lanes })`, `list({ lane })` and `status({ lane })` select by it.
   */
  lane?: string;
  /** Claim priority, default `"normal"`: due `"high"` records are published first. */
  priority?: Priority;
  /**
   * Stop delivering once the policy's verdict is in (satisfied, or no longer
   * satisfiable): the targets still open are not tried again. Default: the outbox's
   * `stopWhenSatisfied` (`false`): delivery goes on to every target that has not
   * accepted or refused for good, until the deadline or the attempt budget (stage
   * `delivering`).
   */
  stopWhenSatisfied?: boolean;
  /**
   * When to send it first, unix ms (a scheduled post): stored now, not sent before.
   * `cancel(id)` before then is an undo (nothing was sent); `reschedule(id, at)` moves
   * it. Not part of the plan: the same plan at another time is a replay. Without it, an
   * event dated ahead waits for its `created_at` less 5 s (relays refuse events from the
   * future); `0` sends it at once.
   */
  notBefore?: number;
  /**
   * The item is a draft (`DraftTemplate`), not a signed event: stored at once (stage
   * `draft`), signed by the `signer` when due, checked (id, signature, author, fields)
   * and stored signed before any relay sees it. Default id: `draft-` and 32 random hex
   * digits.
   */
  sign?: boolean;
  /**
   * NIP-13 proof of work for a draft (1..=32 leading zero bits of the id): a `nonce` tag
   * is mined before signing, for at most 30 s (then `powUnfinished`).
   */
  pow?: number;
  /**
   * Where to send it, decided when it is due (by the outbox's `resolver`), besides the
   * `relays` given (which may then be `[]`): `"outbox"` the author's NIP-65 write
   * relays, `"inbox"` the NIP-65 read relays of the pubkeys it tags, `"dm"` the NIP-17
   * DM relays (kind 10050) of each pubkey it tags. A `dm` recipient without DM relays
   * ends the record `exhausted` / `recipientNotReady`: it is never sent elsewhere.
   * The relays chosen, and why, are in its `evidence` (relay `"resolver"`) and
   * `routed`. Part of the plan.
   */
  route?: RouteIntent[];
}

/** A routing intent (`route`). */
export type RouteIntent = "outbox" | "inbox" | "dm";

/** What the resolver is asked: one intent of one record. */
export interface RouteRequest {
  intent: RouteIntent;
  /**
   * `outbox`: the author; `inbox`: the pubkeys the event tags (`p`, at most 64); `dm`:
   * one of those (one call per recipient).
   */
  pubkeys: string[];
  /** The event (or the draft's template). */
  event: { pubkey: string; kind: number; tags: string[][]; content: string; created_at?: number; id?: string };
}

/** One relay chosen for a route, and why. */
export interface Route {
  relay: string;
  reason?: string;
}

/**
 * Resolves one routing intent: the relays, each with a reason (a bare URL string is
 * taken too). `[]` for a `dm` means the recipient has no DM relays (`recipientNotReady`);
 * throw or reject when you cannot tell now (asked again after a backoff, like a relay
 * that is down); no answer within 15 s counts as such. URLs are normalized; invalid ones are left out.
 */
export type Resolver = (request: RouteRequest) => Promise<Array<Route | string>>;

/**
 * Claim order among due records: `"high"` first, then `"normal"`, then `"low"`; within
 * one priority, the earliest due, then the oldest. A backlog of any size at a lower
 * priority delays a higher one by at most the batch already being published.
 */
export type Priority = "high" | "normal" | "low";

/** Options of `flush`. Without them, everything due is flushed. */
export interface FlushOptions {
  /** Only records in these lanes. */
  lanes?: readonly string[];
  /**
   * Only records that still wait for one of these relays, published to those relays
   * only (their other targets are left as they are and are sent by a later flush).
   */
  relays?: readonly string[];
}

/** Options of `status`. */
export interface StatusOptions {
  /** Count only the records of this lane (`corrupt` is then 0). */
  lane?: string;
}

/** One item of `enqueueMany`. */
export interface EnqueueItem extends EnqueueOptions {
  /** A signed event, or with `sign: true` a `DraftTemplate`. */
  event: SignedEvent | DraftTemplate | string;
  relays: readonly string[];
}

/**
 * The answer of `enqueue`: a new record (`created`), the identical plan already stored
 * (`replay`), or a new record already superseded by a newer version of its replaceable
 * or addressable event that the outbox holds (`superseded`: stored, never sent).
 */
export interface EnqueueResult {
  id: string;
  disposition: "created" | "replay" | "superseded";
  record: OutboxRecord;
}

/** What one relay answered in one attempt. */
export interface Evidence {
  relay: string;
  attempt: number;
  outcome: Outcome;
  /** Present when `outcome` is `"rejected"`. */
  rejectReason?: RejectReason;
  /** The relay's `OK` message, or a description of the transport failure. */
  message: string;
  /** When it was recorded, unix ms (for repeated tries, the last one). */
  at: number;
  /**
   * How many tries this entry stands for: 1, or more when an attempt reached no relay
   * at all (offline, relays down) and was tried again under the same attempt number.
   * Such tries do not use up `maxAttempts`.
   */
  tries: number;
  /** When the first of several tries was recorded, unix ms (only when `tries > 1`). */
  firstAt?: number;
}

/** One target relay of a record and its latest answer. */
export interface TargetStatus {
  relay: string;
  state: TargetState;
  /** True when the policy needs this relay (`"all"`, or listed in `required`). */
  required: boolean;
  latest: Evidence | null;
}

/** A record as the outbox reports it. */
export interface OutboxRecord {
  id: string;
  stage: Stage;
  /** The lane it was enqueued in (`"default"` when none was given). */
  lane: string;
  /** Its claim priority. */
  priority: Priority;
  /** The signed event exactly as enqueued (signed, for a draft); a draft's template while `draft` is true. */
  event: SignedEvent | DraftTemplate;
  policy: Policy;
  /**
   * The policy's verdict over the evidence: `"pending"`, `"satisfied"`, or `"exhausted"`
   * (it can no longer be met). It is what `delivered` / `exhausted` report; the stage
   * says whether delivery goes on (`delivering`).
   */
  satisfaction: Satisfaction;
  /** Delivery stops at the verdict (`enqueue`'s `stopWhenSatisfied`). */
  stopWhenSatisfied: boolean;
  /** Normalized target relays (sorted) with their latest evidence. */
  targets: TargetStatus[];
  /** Every answer of every relay in every attempt, oldest first. */
  evidence: Evidence[];
  /**
   * Attempts counted so far: attempts that reached at least one relay. A try that reached
   * none (offline, every relay down) is retried under the same number and not counted.
   */
  attempts: number;
  /** The attempt budget asked for. */
  maxAttempts: number;
  /** The highest attempt number allowed (`retry` raises it). */
  attemptLimit: number;
  /** When the next attempt may run (pending/retryable/delivering), unix ms; else null. */
  nextAttemptAt: number | null;
  /** The attempt in flight (stage `leased`). */
  /**
   * The lease of a record in stage `leased`; `relays` when the attempt goes to some
   * relays only (a flush filtered by relay).
   */
  lease: { attempt: number; expiresAt: number; relays?: string[] } | null;
  /** The earlier of the `deadline` option and the event's NIP-40 expiration, unix ms. */
  deadline: number | null;
  /** Why it stopped (exhausted, cancelled or superseded). */
  reason: StopReason | null;
  /** Stage `superseded`: the id of the newer version (reason `superseded`) or of the deletion (`deleted`). */
  supersededBy: string | null;
  /** A summary of the last attempt's failures. */
  lastError: string | null;
  createdAt: number;
  updatedAt: number;
  lastAttemptAt: number | null;
  /** Grows by one on every change. */
  revision: number;
  /**
   * How many times a flusher took this record's lease over from a flusher that was gone
   * (a closed tab, a killed browser, a terminated worker) instead of waiting for the
   * lease to expire. The attempt is the dead flusher's, made again (relays that had
   * accepted it answer `duplicate:`).
   */
  takeovers: number;
  /** Not signed yet: `event` is the template (stage `draft`, or `leased` while it is signed). */
  draft: boolean;
  /** Its place in a group (`enqueueGroup`): member `index` of `size`, item id `<id>:<index>`; else null. */
  group: GroupRef | null;
  /** Its routing intents (`enqueue`'s `route`); `[]` when none. */
  route: RouteIntent[];
  /**
   * Once its route is resolved: the relays that added to `targets` (why each: the
   * `evidence` of relay `"resolver"`); `null` before (stage `draft` while it waits).
   */
  routed: string[] | null;
}

/** A record's place in its group. */
export interface GroupRef {
  id: string;
  index: number;
  size: number;
}

/**
 * A group (`enqueueGroup`) and its members as stored: `delivered` members have their
 * policy met; `failed` ones can no longer meet it or ended without (exhausted, cancelled,
 * superseded); `open` ones have no verdict yet; `missing` ones were purged. `state`:
 * `"sending"` while any is open, then `"delivered"` (all delivered), `"failed"` (all
 * failed) or `"partial"` (some of each, or some purged).
 */
export interface OutboxGroup {
  id: string;
  size: number;
  state: "sending" | "delivered" | "partial" | "failed";
  delivered: number;
  failed: number;
  open: number;
  missing: number;
  /** By index; null for a purged member. */
  members: (OutboxRecord | null)[];
}

/** Options of `enqueueGroup`. */
export interface EnqueueGroupOptions {
  /**
   * The group id (an item id of at most 128 characters with the member ids, `<group>:<index>`);
   * default `group-` and 32 random hex digits. Give your own to make the enqueue idempotent:
   * the same group again is a replay.
   */
  group?: string;
}

/** The answer of `enqueueGroup`. */
export interface EnqueueGroupResult {
  /** The group id. */
  id: string;
  /** One per member, in order; the members' ids are `<id>:<index>`. */
  results: EnqueueResult[];
  /** The group as enqueued (the `group` event's detail). */
  group: OutboxGroup;
}

/** How many records are in each stage. */
export interface OutboxStatus {
  /** Drafts waiting for the signer. */
  draft: number;
  pending: number;
  leased: number;
  retryable: number;
  /** Verdict in, delivery to the targets still open going on. */
  delivering: number;
  satisfied: number;
  exhausted: number;
  cancelled: number;
  superseded: number;
  /**
   * Stored rows that cannot be decoded (written by other software or a newer version,
   * or damaged), counted apart from the stages. They are never deleted or changed;
   * `corruptRecords()` names them. Always 0 with `storage: "memory"`.
   */
  corrupt: number;
  /** Every stored row: the stages plus `corrupt`. */
  total: number;
}

/** A stored row that cannot be decoded into a record. */
export interface CorruptRecord {
  /** The row's key (the item id it claims). */
  id: string;
  /** The stage its index field files it under, if any. */
  stage: Stage | null;
  /** Why it cannot be decoded. */
  reason: string;
}

/** Options of `list`. */
export interface ListOptions {
  stage?: Stage;
  /** 1..=1000, default 100. */
  limit?: number;
  /** The id of the last record of the previous page. */
  after?: string;
  /** Only records of this lane. */
  lane?: string;
}

/** Options of `purge`. */
export interface PurgeOptions {
  /** Delete terminal records last changed before this time (unix ms). Default: now. */
  before?: number;
}

/** What a flush did. */
export interface FlushResult {
  /** True when this context ran the flusher. */
  ran: boolean;
  /**
   * Why it did not run: `"locked"` (another tab or worker is flushing this database),
   * `"offline"` (`navigator.onLine` is false), `"tag"` (`handleSync` got another tag).
   */
  skipped: "locked" | "offline" | "tag" | null;
  claimed: number;
  attempts: number;
  publishes: number;
  /** Records that became satisfied in this run (some may still be delivering). */
  delivered: number;
  /** Records scheduled for another attempt, their verdict not in yet. */
  retrying: number;
  /** Records that became exhausted in this run (some may still be delivering). */
  exhausted: number;
  /** Records whose delivery ended after an earlier run reported their verdict. */
  settled: number;
  /** Results that arrived after their lease was lost; they changed nothing. */
  lostClaims: number;
  /**
   * Claimed records handed back without an attempt: half their lease passed before a
   * relay had room for them, or (drafts) their lease no longer covered a signer's time.
   * They are due again at once.
   */
  released: number;
  /**
   * Waiting records made due at once because a relay they could not reach answered
   * again (then flushed in the same run).
   */
  woken: number;
  /**
   * Records whose live lease this run took over from a flusher that was gone (a closed
   * tab, a killed browser, a terminated worker), and attempted in this run rather than
   * after the dead lease expired. Only a run holding the database's Web Lock takes
   * over; also counted in `claimed`.
   */
  takenOver: number;
  /** Drafts signed and stored signed (and then published in the same run). */
  signed: number;
  /**
   * Publishes not made because the relay, asked for the event by id after an answer
   * that left it unclear (a timeout, or a connection closed after the event was
   * written), sent it back: recorded as `duplicate` with a message beginning
   * `read back:` (read-back). Also counted in `publishes`.
   */
  readBack: number;
  /** Claim rounds run (with the Web Lock held, the first is a takeover round). */
  ticks: number;
  /**
   * When to flush again, unix ms: the next record's due time, or up to 1 s after it so
   * that records retried together are flushed by one run (one alarm), not one each.
   */
  nextDueAt: number | null;
  /**
   * How long relays' answers waited, from their arrival to the commit that recorded
   * them (group commit: at most about 50 ms or one commit), in ms: median, 99th
   * percentile (exact to 1 ms below 100 ms, 10 ms below 1 s) and longest; null when
   * nothing was recorded.
   */
  okToCommit: { count: number; medianMs: number; p99Ms: number; maxMs: number } | null;
}

/** Storage usage and persistence of this origin. */
export interface StorageEstimateResult {
  usage: number | null;
  quota: number | null;
  persisted: boolean | null;
}

/** Every `OutboxError.code`. */
export type OutboxErrorCode =
  | "invalid_event"
  | "invalid_relay_url"
  | "invalid_options"
  | "invalid_argument"
  | "invalid_item_id"
  | "invalid_targets"
  | "invalid_policy"
  | "invalid_config"
  | "invalid_import"
  | "plan_conflict"
  | "not_found"
  | "not_retryable"
  | "already_terminal"
  | "in_flight"
  | "event_expired"
  | "lease_expired"
  | "revision_conflict"
  | "not_ready"
  | "quota_exceeded"
  | "storage_blocked"
  | "storage_version_too_new"
  | "storage_unavailable"
  | "corrupt_record"
  | "storage"
  | "closed"
  | "sync_incomplete"
  | "no_random_source"
  | "init_failed"
  | "unsupported";

/** Structured facts about an `OutboxError` (which fields are set depends on `code`). */
export interface OutboxErrorDetails {
  /** The option at fault (`invalid_options`, `invalid_relay_url` in `policy.required`). */
  option?: string;
  /** The argument at fault (`invalid_argument`). */
  argument?: string;
  /** The field at fault (`invalid_event`, `invalid_argument`, `invalid_config`). */
  field?: string;
  /** The finer reason of `invalid_event`: `not_json`, `not_object`, `missing_field`, `duplicate_field`, `wrong_type`, `bad_value`, `id_mismatch`, `bad_signature`. */
  reason?: string;
  /** Position of the relay (`invalid_relay_url`) or of the `enqueueMany` item. */
  index?: number;
  /** The item id concerned (`event_expired`: the event id). */
  id?: string;
  stage?: Stage;
  found?: number;
  supported?: number;
  /** `sync_incomplete`: what the flush did. */
  stats?: FlushResult;
  /** The line of an import at fault, 1-based (`invalid_import`, `plan_conflict`). */
  line?: number;
}

/** Every failure of the API: a real `Error` with a stable `code`. */
export class OutboxError extends Error {
  private constructor();
  readonly name: "OutboxError";
  readonly code: OutboxErrorCode;
  readonly details?: OutboxErrorDetails;
}

/** The events of an `Outbox`, each a `CustomEvent`: most with the record as `detail`. */
export interface OutboxEventMap {
  /** A new record was stored. */
  enqueued: CustomEvent<OutboxRecord>;
  /** A draft was signed, checked and stored signed: stage `pending`, `event` the signed event. */
  signed: CustomEvent<OutboxRecord>;
  /** An attempt starts (stage `leased`; the open targets are being published to). */
  attempt: CustomEvent<OutboxRecord>;
  /**
   * The policy is met (`satisfaction` `"satisfied"`), once per record. The stage is
   * `satisfied`, or `delivering` while targets still open keep getting the event.
   */
  delivered: CustomEvent<OutboxRecord>;
  /** The attempt failed in part; another follows at `nextAttemptAt`. */
  retrying: CustomEvent<OutboxRecord>;
  /**
   * The policy can no longer be met (`satisfaction` `"exhausted"`, stage `exhausted`, or
   * `delivering` while targets still open keep getting the event), or the budget or
   * deadline ended the record first (stage `exhausted`, see `reason`). Once per verdict.
   */
  exhausted: CustomEvent<OutboxRecord>;
  /**
   * Delivery ended for a record whose verdict was reported earlier (`delivered` or
   * `exhausted`): its stage is now `satisfied` or `exhausted`; `targets` say which
   * relays got it.
   */
  settled: CustomEvent<OutboxRecord>;
  /**
   * A record will not be sent (stage `superseded`): a newer version or a deletion was
   * enqueued (`reason`, `supersededBy`), or it was enqueued older than a version held.
   */
  superseded: CustomEvent<OutboxRecord>;
  /** Any change of a record, including `cancel` and `retry`. */
  change: CustomEvent<OutboxRecord>;
  /**
   * A group's member changed (any `change` of it but an attempt starting, here or relayed
   * from another context): the group as read a task later, one event for the changes of
   * that task. Fired once a listener for `group` is added.
   */
  group: CustomEvent<OutboxGroup>;
  /** An automatic flush failed (the error also retries later). */
  error: CustomEvent<OutboxError>;
  /**
   * Long work moved on, in this context only: while IndexedDB takes the writes of an
   * `enqueueMany` (about every hundredth), then once they are stored (`done` of all); after
   * each transaction of an `import`; after each attempt that ended during a `flush()` call
   * (`total`: the records due when it started), and once at its end (`done` of `done`).
   */
  progress: CustomEvent<OutboxProgress>;
}

/** How far long work is (`progress` events): `done` of `total`. */
export interface OutboxProgress {
  operation: "enqueueMany" | "import" | "flush";
  done: number;
  total: number;
}

/** What `import` did: records read, and how many were stored new, were already here (same plan), or arrived superseded by a newer version held here. */
export interface ImportResult {
  total: number;
  created: number;
  replayed: number;
  superseded: number;
}

/**
 * The type of the global class `K`'s instances where this program's libraries declare it
 * (the DOM's, a worker's, Node's, Deno's), else `Else`: the types read with or without the
 * DOM library (an edge project may have only ES2023's).
 */
type GlobalInstance<K extends string, Else> = typeof globalThis extends { [P in K]: { prototype: infer T } } ? T : Else;

/** The stream `export()` returns: a WHATWG `ReadableStream` of UTF-8 bytes. */
export type ExportStream = GlobalInstance<"ReadableStream", AsyncIterable<Uint8Array>>;

/** What `import` reads: the text of an export, its bytes, a `Blob`, a `Response`, or a stream or iterable of text or bytes. */
export type ImportSource =
  | string
  | Uint8Array
  | ArrayBuffer
  | GlobalInstance<"Blob", never>
  | GlobalInstance<"Response", never>
  | GlobalInstance<"ReadableStream", never>
  | AsyncIterable<Uint8Array | string>
  | Iterable<Uint8Array | string>;

/** A listener of one outbox event type. */
export type OutboxListener<K extends keyof OutboxEventMap> =
  | ((event: OutboxEventMap[K]) => void)
  | { handleEvent(event: OutboxEventMap[K]): void };

/** A durable outbox of signed Nostr events. */
export class Outbox {
  private constructor();
  /** Releases the Wasm memory of this handle (after `close()`; optional, a FinalizationRegistry also frees it). */
  free(): void;
  /** Opens (creating or upgrading) the outbox database. */
  static open(options?: OutboxOptions): Promise<Outbox>;
  /** Checks and stores one signed event for `relays`; durable when it resolves. */
  enqueue(event: SignedEvent | string, relays: readonly string[], options?: EnqueueOptions & { sign?: false }): Promise<EnqueueResult>;
  /** Stores a draft for `relays`, to be signed by the `signer` when due; durable when it resolves. */
  enqueue(draft: DraftTemplate | string, relays: readonly string[], options: EnqueueOptions & { sign: true }): Promise<EnqueueResult>;
  /** Stores many items in one transaction: all or nothing. */
  enqueueMany(items: readonly EnqueueItem[]): Promise<EnqueueResult[]>;
  /**
   * Stores several items as one group (e.g. the gift wraps of one message to several
   * recipients, and the copy to self): all or nothing, one record per member with its own
   * relays and evidence, ids `<group>:<index>`. Items take no `id`.
   */
  enqueueGroup(items: readonly Omit<EnqueueItem, "id">[], options?: EnqueueGroupOptions): Promise<EnqueueGroupResult>;
  /** The group and its members, or null when no member of it is stored. */
  group(id: string): Promise<OutboxGroup | null>;
  /** Cancels every member of the group that is not terminal; `not_found` for no such group. */
  cancelGroup(id: string): Promise<OutboxGroup>;
  /** Re-arms every exhausted member of the group; `not_found` for no such group. */
  retryGroup(id: string): Promise<OutboxGroup>;
  /** The record with this id, or null. */
  get(id: string): Promise<OutboxRecord | null>;
  /** A page of records in creation order. */
  list(options?: ListOptions): Promise<OutboxRecord[]>;
  /**
   * Counts per stage, and undecodable rows apart. The first call on an IndexedDB outbox
   * reads every row once (to find undecodable ones); later calls count by index.
   */
  status(options?: StatusOptions): Promise<OutboxStatus>;
  /**
   * Stored rows that cannot be decoded, sorted by id (reads every row). `list()` and
   * `flush()` skip them; `get(id)` rejects with `corrupt_record`.
   */
  corruptRecords(): Promise<CorruptRecord[]>;
  /** Re-arms an exhausted record. */
  retry(id: string): Promise<OutboxRecord>;
  /** Cancels a record that is not terminal. */
  cancel(id: string): Promise<OutboxRecord>;
  /**
   * Moves the next attempt of a record that waits (pending, retryable, delivering) to
   * `at` (unix ms; now when earlier). `in_flight` while it is being sent,
   * `already_terminal` once it ended, `invalid_argument` at or past its deadline.
   */
  reschedule(id: string, at: number): Promise<OutboxRecord>;
  /**
   * The relays that accepted any of the events named (event ids, or `kind:pubkey:d`
   * addresses for every stored version), from stored evidence, sorted: where a NIP-09
   * deletion of them should go. At most 1000 references.
   */
  acceptedRelays(refs: readonly string[]): Promise<string[]>;
  /**
   * The records with their events and evidence as NDJSON (UTF-8): a header line
   * `{"format":"nostr-outbox/records","version":1}`, then one record per line in creation
   * order, read page by page. Undecodable rows are left out (see `corruptRecords()`).
   */
  export(): ExportStream;
  /**
   * Takes an export back, idempotently: a record already here with the same plan is a
   * replay; another plan under its id is `plan_conflict`; a bad line is `invalid_import`
   * (`details.line`). Every line and every conflict is checked before anything is
   * written. The queue's Nostr rules apply as to an enqueue. Fires `progress`.
   */
  import(source: ImportSource): Promise<ImportResult>;
  /** Deletes terminal records; resolves with how many. */
  purge(options?: PurgeOptions): Promise<number>;
  /**
   * Publishes everything due now, until nothing is due; with `lanes` and `relays`,
   * only those lanes' records that wait for those relays, to those relays only.
   */
  flush(options?: FlushOptions): Promise<FlushResult>;
  /**
   * Flush on start, `online`, visibility, enqueue and at each retry time; while records
   * wait, probe unreachable relays (1 s, then 1.5 times as long each time, up to 30 s) and flush as soon as
   * one answers.
   */
  startAutoFlush(): void;
  stopAutoFlush(): void;
  readonly autoFlush: boolean;
  readonly name: string;
  readonly storage: "indexeddb" | "memory" | "adapter";
  readonly closed: boolean;
  /** The answer of `navigator.storage.persist()` at open, or null. */
  readonly persisted: boolean | null;
  storageEstimate(): Promise<StorageEstimateResult | null>;
  /** Stops auto-flush, waits for a flush in progress and closes the database. */
  close(): Promise<void>;
  addEventListener<K extends keyof OutboxEventMap>(type: K, listener: OutboxListener<K> | null, options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends keyof OutboxEventMap>(type: K, listener: OutboxListener<K> | null, options?: boolean | EventListenerOptions): void;
  dispatchEvent(event: Event): boolean;
}

/** The part of a sync / periodicsync / message event that `handleSync` reads. */
export interface SyncLikeEvent {
  readonly tag?: string;
  readonly lastChance?: boolean;
}

/** Options of `handleSync`: those of `Outbox.open`, plus the sync tag. */
export interface HandleSyncOptions extends OutboxOptions {
  /** Only sync events with this tag are handled. Default `"nostr-outbox"`. */
  tag?: string;
}

/** Registers a Background Sync (Chromium); resolves with whether it registered. */
export function registerBackgroundSync(
  registration: { readonly sync?: { register(tag: string): Promise<void> } } | ServiceWorkerRegistration,
  tag?: string,
): Promise<boolean>;

/**
 * For a service worker: `self.addEventListener("sync", e => e.waitUntil(handleSync(e)))`.
 * Opens the outbox (once per name) and flushes it.
 */
export function handleSync(event?: SyncLikeEvent | Event | null, options?: HandleSyncOptions): Promise<FlushResult>;
"#;
