// nostr-outbox/routers: resolvers for routing intents over NDK, applesauce and welshman.
// Structural types only: nothing here imports a library.

// The contract (`RouteIntent`, `RouteRequest`, `Route`, `Resolver`) is the outbox's own: each
// resolver here answers `outbox` with the NIP-65 (kind 10002) write relays of `pubkeys`,
// `inbox` with their read relays, `dm` with their NIP-17 (kind 10050) `relay`s and `[]` for a
// pubkey without one (never its NIP-65 relays: the outbox marks it `recipientNotReady`);
// `[]` when the lists were looked for and not found; it rejects when the library could not
// look (no relay answered, the loader failed), and the outbox retries later. Each relay once
// per call; at most `maxPerPubkey` per pubkey.
import type { Resolver, Route, RouteIntent, RouteRequest } from "./nostr_outbox.js";
export type { Resolver, Route, RouteIntent, RouteRequest };

/** Options every resolver takes. */
export interface ResolverOptions {
  /** At most this many relays per pubkey (a positive integer). Default 8. */
  maxPerPubkey?: number;
}

// ---------------------------------------------------------------------------------------
// NDK

/** The parts of an `NDKRelay` the resolver uses. */
export interface NDKRelayLike {
  readonly url: string;
}
/** The parts of an `NDKPool` the resolver uses. */
export interface NDKPoolLike {
  readonly relays: Map<string, NDKRelayLike>;
}
/** The parts of an `NDK` instance the resolver uses (an `NDK` is assignable to it). */
export interface NDKLike {
  pool?: NDKPoolLike;
  outboxPool?: NDKPoolLike;
  subscribe(filters: object, opts?: object, ...rest: never[]): { stop(): void; eosesSeen?: Set<unknown> };
}

export interface NDKResolverOptions extends ResolverOptions {
  /**
   * How long to wait for the relays' EOSE. At this point the resolver resolves with what it
   * has if at least one relay answered (or every list was found), and rejects otherwise.
   * Default 4000 ms.
   */
  timeout?: number;
  /** The relays to ask for lists: an `NDKRelaySet` (passed to `ndk.subscribe` as `relaySet`). */
  relaySet?: object;
  /** The relays to ask for lists, as URLs (passed to `ndk.subscribe` as `relayUrls`). */
  relayUrls?: string[];
  /** The pool whose relays are asked when neither `relaySet` nor `relayUrls` is given. Default `ndk.outboxPool ?? ndk.pool`. */
  pool?: NDKPoolLike;
  /** NDK's `cacheUsage` for the list subscription (e.g. "ONLY_RELAY"). Default NDK's. */
  cacheUsage?: string;
}

/**
 * A resolver over `@nostr-dev-kit/ndk` v3: each call fetches the lists with `ndk.subscribe`
 * (kind 10002 wrapped as NDK's `NDKRelayList`, its `writeRelayUrls` / `readRelayUrls`; kind
 * 10050's `relay` tags), from every relay of `ndk.outboxPool ?? ndk.pool` unless told
 * otherwise. Rejects when no relay answered within `timeout`.
 */
export function ndkResolver(ndk: NDKLike, options?: NDKResolverOptions): Resolver;

// ---------------------------------------------------------------------------------------
// applesauce

/** A Nostr event as applesauce stores it. */
export interface ListEvent {
  kind: number;
  pubkey: string;
  created_at: number;
  tags: string[][];
  content: string;
}

/** The parts of an applesauce `EventStore` (or `AsyncEventStore`) the resolver uses. */
export interface EventStoreLike {
  getReplaceable(kind: number, pubkey: string, identifier?: string): ListEvent | undefined | Promise<ListEvent | undefined>;
}

export interface ApplesauceResolverOptions extends ResolverOptions {
  /**
   * applesauce's own helpers, used instead of this module's copies of their semantics:
   * `getInboxes` / `getOutboxes` from "applesauce-core/helpers", `getRelaysFromList` from
   * "applesauce-common/helpers".
   */
  helpers?: {
    getInboxes?: (event: ListEvent) => string[];
    getOutboxes?: (event: ListEvent) => string[];
    getRelaysFromList?: (event: ListEvent) => string[];
  };
}

/**
 * Loads the newest event of `kind` by `pubkey` into the store (or resolves with it). Reject
 * when it could not look (no relay answered); resolve (with nothing) when it looked and found
 * nothing.
 */
export type ListLoader = (pubkey: string, kind: number) => Promise<unknown>;

/**
 * A resolver over an applesauce-core v6 `EventStore`: outbox/inbox as applesauce's
 * `getOutboxes` / `getInboxes` of the stored kind 10002, dm as `getRelaysFromList` of the
 * stored kind 10050. A list missing from the store: `loader` is awaited first if given
 * (its rejection rejects), else that pubkey has no relays.
 */
export function applesauceResolver(
  sources: { eventStore: EventStoreLike; loader?: ListLoader },
  options?: ApplesauceResolverOptions,
): Resolver;

// ---------------------------------------------------------------------------------------
// welshman

/** The parts of a welshman `RouterScenario` the resolver uses. */
export interface WelshmanScenarioLike {
  policy(policy: (count: number, limit: number) => number): WelshmanScenarioLike;
  limit(limit: number): WelshmanScenarioLike;
  allowLocal?(allow: boolean): WelshmanScenarioLike;
  allowInsecure?(allow: boolean): WelshmanScenarioLike;
  allowOnion?(allow: boolean): WelshmanScenarioLike;
  getUrls(): string[];
}
/** The parts of a welshman `Router` the resolver uses. */
export interface WelshmanRouterLike {
  FromPubkey(pubkey: string): WelshmanScenarioLike;
  ForPubkey(pubkey: string): WelshmanScenarioLike;
  FromRelays(relays: string[]): WelshmanScenarioLike;
}
/** The parts of welshman's `Repository` (@welshman/net) the resolver uses. */
export interface WelshmanRepositoryLike {
  query(filters: Array<{ kinds?: number[]; authors?: string[] }>): ListEvent[];
}

export interface WelshmanResolverOptions extends ResolverOptions {
  /** Passed to each scenario's `allowLocal` (welshman's default: false, drops `.local` / `localhost` relays). */
  allowLocal?: boolean;
  /** Passed to each scenario's `allowInsecure` (welshman's default: false, drops `ws://` relays). */
  allowInsecure?: boolean;
  /** Passed to each scenario's `allowOnion` (welshman's default: false, drops `.onion` relays). */
  allowOnion?: boolean;
}

/**
 * A resolver over `@welshman/router` 0.8: outbox is `router.FromPubkey(pubkey)`, inbox
 * `router.ForPubkey(pubkey)`, each `.policy(no fallbacks).limit(maxPerPubkey).getUrls()`
 * (welshman's URL policy, relay quality and random weighting apply). Dm reads the kind 10050
 * from `repository` and filters it through `router.FromRelays(...)` (the bare router answers
 * `MessagesForPubkey` from kind 10002). `router` is a `Router`, the `Router` class (then
 * `Router.get()` per call, which reads `routerContext`), or a function returning one; it must
 * read its lists from `repository` (the default `routerContext` reads `Repository.get()`, as
 * @welshman/app does). The router cannot tell "not loaded" from "none": give `loader` so that
 * missing lists are loaded into `repository` first; its rejection rejects the resolver. With
 * @welshman/app: `(pk, kind) => kind === 10050 ? loadMessagingRelayList(pk) : loadRelayList(pk)`;
 * those never reject (welshman's `load` resolves `[]` when no relay answers), so to get "cannot
 * tell", build the loader on @welshman/net's `request` and throw when no `onEose` came.
 */
export function welshmanResolver(
  sources: {
    router: WelshmanRouterLike | { get(): WelshmanRouterLike } | (() => WelshmanRouterLike);
    repository: WelshmanRepositoryLike;
    loader?: ListLoader;
  },
  options?: WelshmanResolverOptions,
): Resolver;
