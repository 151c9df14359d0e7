import type { Outbox, Resolver } from "./nostr_outbox.js";

/** Where the resolver keeps lists: a `Map`, any `{ get, set }`, a Durable Object's `storage` (get/put), or a Deno KV. */
export type RelayListCache =
  | { get(key: string): unknown; set(key: string, value: unknown): unknown }
  | { get(key: string): unknown; put(key: string, value: unknown): unknown };

export interface RelayListResolverOptions {
  /** Index relays to read kind 10002 / 10050 lists from (e.g. `wss://purplepag.es`). */
  indexRelays: string[];
  /** How long a list, or its absence, is trusted (ms); default 3 600 000. */
  ttlMs?: number;
  /** How long an index relay may take to answer (to its `EOSE`), ms; default 5000. */
  timeoutMs?: number;
  /** Relays taken per pubkey, in the list's order; default 8. */
  maxPerPubkey?: number;
  /** Where lists are kept; default IndexedDB where the runtime has it, else memory. */
  cache?: RelayListCache;
  /** NIP-65: enqueue the author's kind 10002 to relays a route sends to for the first time, through this outbox. */
  announce?: Outbox;
  /** The WebSocket class (default `globalThis.WebSocket`). */
  WebSocket?: typeof WebSocket;
}

/** A resolver that reads relay lists from index relays, with a durable cache. */
export interface RelayListResolver extends Resolver {
  /** A list the app saw elsewhere (kind 10002 or 10050): kept when its signature checks and it is newer. */
  observe(event: { id: string; pubkey: string; kind: number; created_at: number; tags: string[][]; content: string; sig: string }): Promise<boolean>;
  /** NIP-65: the outbox that sends the author's kind 10002 along (set it once the outbox is open; it is then followed too); `undefined`: off. */
  announce?: Outbox;
  /** Observes the kind 10002 and 10050 lists enqueued through `outbox` (in any of its contexts), so a list you publish is used at once. */
  follow(outbox: Outbox): void;
  /** The kept (or fetched) lists of `kind` of `pubkeys`: pubkey → the list event, or null (none). */
  lists(kind: 10002 | 10050, pubkeys: string[]): Promise<Map<string, object | null>>;
}

/** The built-in resolver: NIP-65 and NIP-17 relay lists read from `indexRelays`, verified, cached with a TTL. */
export function relayListResolver(options: RelayListResolverOptions): RelayListResolver;
