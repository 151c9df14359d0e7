// The adapters' declarations, used as an app would (tsc --noEmit, tests/ts/tsconfig.json).
// nostr-tools, applesauce and welshman are typed structurally (no import of theirs); the
// NDK adapter uses NDK's own types (from tests/e2e/node_modules).
import init, { type Outbox, type SignedEvent } from "nostr-outbox";
import wasmUrl from "nostr-outbox/nostr_outbox_bg.wasm";
import { outboxPool } from "nostr-outbox/nostr-tools";
import { outboxPublishMethod, outboxRelayPool, type OutboxPublishMethodError, type PublishResponse } from "nostr-outbox/applesauce";
import { outboxPublish as ndkPublish, installOutbox, type NDKEventLike, type NDKRelaySetLike } from "nostr-outbox/ndk";
import { outboxPublish as welshmanPublish, type PublishResult } from "nostr-outbox/welshman";
import { createOutboxStore, type OutboxSnapshot, type OutboxStore } from "nostr-outbox/store";
import { useOutbox, useOutboxStore } from "nostr-outbox/react";
import { outboxStore, type OutboxReadable } from "nostr-outbox/svelte";
import { OutboxInspector, STAGES } from "nostr-outbox/inspector";
import { relayListResolver, type RelayListResolver } from "nostr-outbox/relay-lists";
import { ndkResolver, applesauceResolver, welshmanResolver } from "nostr-outbox/routers";
import { groupOf } from "nostr-outbox/groups";

declare const outbox: Outbox;
declare const signed: SignedEvent;
// Shaped like NDK's classes (structural: NDK's own types are not needed).
interface NDKRelay { url: string; connectivity: object }
declare const ndkEvent: NDKEventLike & { publishStatus?: string };
declare const relaySet: NDKRelaySetLike<NDKRelay>;
declare const pool: { publish(relays: string[], event: SignedEvent): Promise<string>[]; subscribe(relays: string[], filter: object, params: object): { close(): void } };

export async function adapters(): Promise<void> {
  // esbuild's recipe: the .wasm's URL (--loader:.wasm=file) given to init.
  const url: string = wasmUrl;
  await init({ module_or_path: url });

  // Resolvers of routing intents: the built-in one and the libraries' routers.
  const lists: RelayListResolver = relayListResolver({ indexRelays: ["wss://purplepag.es"], ttlMs: 60_000, cache: new Map() });
  lists.announce = outbox;
  lists.follow(outbox);
  await lists.observe(signed);
  const found: Map<string, object | null> = await lists.lists(10050, [signed.pubkey]);
  const fromStore = applesauceResolver({ eventStore: { getReplaceable: () => undefined } }, { maxPerPubkey: 2 });
  console.log(found.size, (await fromStore({ intent: "dm", pubkeys: [signed.pubkey], event: signed })).length, typeof ndkResolver, typeof welshmanResolver);
  // @ts-expect-error index relays are required
  relayListResolver({});

  // A group summed up from records the app already holds.
  const held = await outbox.list({ limit: 2 });
  const summed = groupOf("dm-1", [held[0] ?? null, null]);
  console.log(summed?.state, summed?.missing);
  // @ts-expect-error records, not ids
  groupOf("dm-1", ["dm-1:0"]);

  // nostr-tools: a pool whose publish goes through the outbox, the rest stays the pool's.
  const p = outboxPool(outbox, pool);
  const oks: Promise<string>[] = p.publish(["wss://a.example"], signed, { maxWait: 2000 });
  p.subscribe(["wss://a.example"], {}, {}).close();
  console.log(await Promise.any(oks), outboxPool(outbox).publish(["wss://a.example"], signed));
  // @ts-expect-error the bare publisher has no subscribe
  outboxPool(outbox).subscribe;

  // applesauce
  const method = outboxPublishMethod(outbox, { relays: (e) => (e.kind === 1 ? ["wss://a.example"] : []), maxWait: 2000 });
  const responses: PublishResponse[] = await method(signed);
  const fromPool: PublishResponse[] = await outboxRelayPool(outbox).publish(["wss://a.example"], signed, { timeout: 1000 });
  console.log(responses[0]?.ok, fromPool[0]?.from);
  // No relay accepted: the method (so `actions.run`) rejects with the relays' errors.
  const failed = (await method(signed).catch((e: unknown) => e)) as OutboxPublishMethodError;
  const stillQueued: boolean = failed.queued;
  const recordId: string | null = failed.id;
  console.log(stillQueued, recordId, failed.errors.length, failed.responses[0]?.message);
  // @ts-expect-error relays are strings
  outboxPublishMethod(outbox, { relays: [1] });

  // NDK
  const published: Set<NDKRelay> = await ndkPublish(outbox)(ndkEvent, relaySet, 2000, 2);
  const undo: () => void = installOutbox(outbox);
  undo();
  console.log(published.size);
  // @ts-expect-error requiredRelayCount is a number
  await ndkPublish(outbox)(ndkEvent, undefined, 2000, "2");

  // welshman
  const results: Record<string, PublishResult> = await welshmanPublish(outbox)({
    event: signed,
    relays: ["wss://a.example"],
    timeout: 2000,
    onFailure: (r) => console.log(r.status === "failure", r.detail),
  });
  console.log(results["wss://a.example"]?.status);
  // @ts-expect-error no such status
  const s: PublishResult["status"] = "done";
  console.log(s);
}

// The UI entries: React's useSyncExternalStore contract, Svelte's store contract.
declare function useSyncExternalStore<T>(subscribe: (onChange: () => void) => () => void, getSnapshot: () => T, getServerSnapshot?: () => T): T;
interface SvelteReadable<T> { subscribe(run: (value: T) => void, invalidate?: () => void): () => void }
export async function uiStores(): Promise<void> {
  const store: OutboxStore = createOutboxStore(outbox, { stage: "pending", limit: 20, lane: "dm" });
  const snap: OutboxSnapshot = useSyncExternalStore(store.subscribe, store.getSnapshot, store.getServerSnapshot);
  const pending: number | undefined = snap.status?.pending;
  const ids: string[] = snap.records.map((r) => r.id);
  const unsubscribe: () => void = store.subscribe((s) => console.log(s.loading, s.error));
  unsubscribe();
  await store.refresh();
  // @ts-expect-error snapshots are read-only
  snap.records.push(snap.records[0]!);
  // @ts-expect-error no such stage
  createOutboxStore(outbox, { stage: "sent" });

  const fromHook: OutboxSnapshot = useOutbox(outbox, { lane: "dm" });
  console.log(pending, ids, fromHook.loading, useOutbox(outbox).records.length, useOutboxStore(store).status?.total);
  // @ts-expect-error the hook takes an outbox, not a relay list
  useOutbox(["wss://a.example"]);

  const readable: OutboxReadable = outboxStore(outbox, { stage: "exhausted" });
  const svelte: SvelteReadable<OutboxSnapshot> = readable; // assignable to Svelte's Readable
  const stop: () => void = svelte.subscribe((value) => console.log(value.records.length));
  stop();
  // @ts-expect-error the store is read-only (no set)
  readable.set(snap);

  // <nostr-outbox-inspector>: typed through the tag name and the class.
  const inspector = document.createElement("nostr-outbox-inspector");
  const asClass: OutboxInspector = inspector;
  asClass.outbox = outbox;
  inspector.stage = "exhausted";
  inspector.lane = "dm";
  inspector.lanes = ["default", "dm"];
  inspector.limit = 50;
  console.log(STAGES.length, inspector.snapshot?.status?.total, inspector.refresh());
  inspector.addEventListener("outbox-export", (e) => {
    e.preventDefault();
    console.log(e.detail.filename, e.detail.blob.size);
  });
  // @ts-expect-error no such stage
  inspector.stage = "sent";
  // @ts-expect-error the outbox property takes an outbox
  inspector.outbox = ["wss://a.example"];
  // @ts-expect-error the snapshot is read-only
  inspector.snapshot = null;
}
