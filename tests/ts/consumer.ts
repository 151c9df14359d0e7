// An example consumer of the nostr-outbox package, type-checked with `tsc --noEmit`
// (tests/ts/tsconfig.json). It uses every exported API once; the `@ts-expect-error`
// lines prove that wrong usages are rejected by the declarations.
import init, {
  Outbox,
  OutboxError,
  PublishError,
  normalizeRelayUrl,
  relayInformation,
  setRelayInformationStore,
  handleSync,
  registerBackgroundSync,
  version,
  type EnqueueItem,
  type EnqueueResult,
  type EnqueueGroupResult,
  type OutboxGroup,
  type GroupRef,
  type FlushOptions,
  type FlushResult,
  type ImportResult,
  type OutboxProgress,
  type OutboxErrorCode,
  type OutboxEventMap,
  type OutboxOptions,
  type OutboxRecord,
  type OutboxStatus,
  type Policy,
  type Priority,
  type PublishOptions,
  type SignedEvent,
  type DraftTemplate,
  type Resolver,
  type RouteIntent,
  type Stage,
  type StopReason,
  type Satisfaction,
  type RelayInformation,
  type StorageEstimateResult,
  type TargetStatus,
} from "nostr-outbox";

declare const signed: SignedEvent;
declare const nip07: { signEvent(t: { kind: number; created_at: number; tags: string[][]; content: string }): Promise<SignedEvent> };

function describe(r: OutboxRecord): string {
  const stage: Stage = r.stage;
  const targets: TargetStatus[] = r.targets;
  const accepted = targets.filter((t) => t.latest?.outcome === "accepted").length;
  const rejected = r.evidence.filter((e) => e.outcome === "rejected").map((e) => e.rejectReason);
  const next: number | null = r.nextAttemptAt;
  const why = r.reason ?? "-";
  const lease = r.lease ? `attempt ${r.lease.attempt} until ${r.lease.expiresAt}` : "idle";
  const takeovers: number = r.takeovers;
  if (takeovers > 0) console.log(`${r.id}: taken over from a dead flusher ${takeovers} time(s)`);
  return `${r.id} ${stage} ${accepted}/${targets.length} ${rejected.join(",")} ${next} ${why} ${lease} ${r.event.kind} ${r.createdAt}`;
}

export async function main(): Promise<void> {
  await init();
  const v: string = version();

  const options: OutboxOptions = {
    name: "app-outbox",
    storage: "indexeddb",
    durability: "strict",
    policy: { atLeast: 2 },
    maxAttempts: 8,
    baseDelayMs: 2_000,
    maxDelayMs: 600_000,
    publishTimeoutMs: 8_000,
    connectTimeoutMs: 4_000,
    batchSize: 16,
    concurrency: 8,
    lowConcurrency: 2,
    leaseMs: 120_000,
    signer: nip07,
    signTimeoutMs: 30_000,
    requestPersistence: true,
    autoFlush: false,
    broadcast: true,
  };
  const outbox: Outbox = await Outbox.open(options);
  const memory = await Outbox.open({ storage: "memory", transport: { publish: async (_relay, _event) => ({ ok: true }) } });
  await Outbox.open();

  const relays = ["wss://relay.damus.io", "wss://nos.lol"] as const;
  const created: EnqueueResult = await outbox.enqueue(signed, relays);
  if (created.disposition === "replay") console.log("already queued", created.id);
  await outbox.enqueue(JSON.stringify(signed), [...relays], {
    policy: { required: ["wss://nos.lol"] },
    id: "note-1",
    deadline: Date.now() + 86_400_000,
    maxAttempts: 3,
  });
  const policies: Policy[] = ["all", "any", { atLeast: 1 }, { required: ["wss://nos.lol"] }];
  const items: EnqueueItem[] = policies.map((policy, i) => ({ event: signed, relays, policy, id: `item-${i}` }));
  const many: EnqueueResult[] = await outbox.enqueueMany(items);

  const one: OutboxRecord | null = await outbox.get(many[0]?.id ?? "none");
  if (one) console.log(describe(one));
  const page: OutboxRecord[] = await outbox.list({ stage: "retryable", limit: 50, after: "item-0" });
  await outbox.list();
  const status: OutboxStatus = await outbox.status();
  console.log(status.pending + status.retryable + status.superseded, page.length);
  // Nostr rules: a late older version, a withdrawn record, where a deletion should go.
  if (created.disposition === "superseded") console.log("a newer version is queued", created.record.supersededBy);
  const superseded: OutboxRecord[] = await outbox.list({ stage: "superseded" });
  const why: StopReason | null = superseded[0]?.reason ?? null;
  if (why === "superseded" || why === "deleted") console.log(superseded[0]?.supersededBy);
  const where: string[] = await outbox.acceptedRelays([signed.id, `30023:${signed.pubkey}:my-article`]);
  console.log(where.length);
  // Export and import: a file to keep or move, read back from a Blob, a stream or text.
  const file: Blob = await new Response(outbox.export()).blob();
  const imported: ImportResult = await outbox.import(file);
  const progress = (e: CustomEvent<OutboxProgress>) => {
    const op: "enqueueMany" | "import" | "flush" = e.detail.operation;
    console.log(op, e.detail.done / e.detail.total);
  };
  outbox.addEventListener("progress", progress);
  await outbox.import(new Response(file).body ?? "");
  console.log(imported.created + imported.replayed + imported.superseded === imported.total);
  // A scheduled post, moved, then undone.
  const scheduled = await outbox.enqueue(signed, ["wss://relay.example"], { notBefore: Date.now() + 60_000 });
  const moved: OutboxRecord = await outbox.reschedule(scheduled.id, Date.now() + 5_000);
  console.log(moved.nextAttemptAt);
  await outbox.cancel("item-1");
  await outbox.retry("item-2");
  const purged: number = await outbox.purge({ before: Date.now() - 7 * 86_400_000 });
  await outbox.purge();

  // Lanes and priority.
  const urgent: Priority = "high";
  const dm = await outbox.enqueue(signed, relays, { lane: "dm", priority: urgent });
  const lane: string = dm.record.lane;
  const priority: Priority = dm.record.priority;
  const scoped: string[] | undefined = dm.record.lease?.relays;
  await outbox.enqueueMany([{ event: signed, relays, lane: "backfill", priority: "low" }]);
  const filter: FlushOptions = { lanes: ["dm"], relays: ["wss://nos.lol"] };
  await outbox.flush(filter);
  const byLane: OutboxStatus = await outbox.status({ lane: "backfill" });
  await outbox.list({ lane: "dm", stage: "pending" });
  console.log(lane, priority, scoped, byLane.total);
  // @ts-expect-error no such priority
  await outbox.enqueue(signed, relays, { priority: "urgent" });
  // @ts-expect-error lanes is a list
  await outbox.flush({ lanes: "dm" });

  // Drafts: an unsigned note, signed by the outbox's signer when due.
  const template: DraftTemplate = { kind: 1, pubkey: signed.pubkey, tags: [], content: "gm" };
  const drafted = await outbox.enqueue(template, relays, { sign: true, pow: 16 });
  const isDraft: boolean = drafted.record.draft;
  const draftStage: Stage = "draft";
  const refused: StopReason = "signerRefused";
  const signedCount: number = (await outbox.flush()).signed + (await outbox.status()).draft;
  outbox.addEventListener("signed", (e) => console.log(e.detail.event.content));
  console.log(isDraft, draftStage, refused, signedCount);
  await outbox.enqueueMany([{ event: template, relays, sign: true }]);
  // @ts-expect-error a template is not a signed event: `sign: true` is required
  await outbox.enqueue(template, relays);

  // Groups: the gift wraps of one message, one status.
  const sent: EnqueueGroupResult = await outbox.enqueueGroup([{ event: signed, relays }, { event: signed, relays, policy: "any" }], { group: "dm-1" });
  const place: GroupRef | null = sent.results[0]?.record.group ?? null;
  const found: OutboxGroup | null = await outbox.group(sent.id);
  if (found && found.state === "partial") console.log(`delivered to ${found.delivered} of ${found.size}`, found.members[0]?.id, place?.index);
  const after: OutboxGroup = await outbox.retryGroup("dm-1");
  console.log((await outbox.cancelGroup("dm-1")).open, after.failed, after.missing);
  outbox.addEventListener("group", (e) => console.log(e.detail.id, e.detail.delivered, e.detail.state));
  // @ts-expect-error a member's id is derived from the group's
  await outbox.enqueueGroup([{ event: signed, relays, id: "mine" }]);

  // Routing intents: relays decided when due, by the resolver.
  const resolver: Resolver = async ({ intent, pubkeys, event }) =>
    intent === "dm" ? [] : pubkeys.map((p) => ({ relay: "wss://r.example", reason: `${event.kind} ${p}` }));
  const routed = await Outbox.open({ resolver });
  const intents: RouteIntent[] = ["outbox", "inbox"];
  const r = await routed.enqueue(signed, [], { route: intents });
  const chosen: string[] | null = r.record.routed;
  const notReady: StopReason = "recipientNotReady";
  console.log(r.record.route, chosen, notReady);
  await routed.enqueueGroup([{ event: signed, relays: [], route: ["dm"] }]);
  // @ts-expect-error an intent is one of outbox, inbox, dm
  await routed.enqueue(signed, [], { route: ["everywhere"] });

  const stats: FlushResult = await outbox.flush();
  if (!stats.ran && stats.skipped === "locked") console.log("another tab is flushing");
  const takenOver: number = stats.takenOver;
  if (takenOver > 0) console.log(`${takenOver} record(s) left leased by a crashed flusher sent now`);
  console.log(stats.delivered, stats.retrying, stats.exhausted, stats.nextDueAt, purged, v);

  const onDelivered = (e: OutboxEventMap["delivered"]) => console.log("delivered", describe(e.detail));
  outbox.addEventListener("delivered", onDelivered);
  outbox.addEventListener("retrying", (e) => console.log(e.detail.nextAttemptAt));
  outbox.addEventListener("exhausted", (e) => console.log(e.detail.reason, e.detail.lastError));
  outbox.addEventListener("attempt", { handleEvent: (e) => console.log(e.detail.lease?.attempt) });
  outbox.addEventListener("enqueued", (e) => console.log(e.detail.id), { once: true });
  outbox.addEventListener("change", (e) => console.log(e.detail.stage));
  // Delivery after the verdict: the stage `delivering`, the verdict, the end of delivery.
  outbox.addEventListener("settled", (e) => {
    const verdict: Satisfaction = e.detail.satisfaction;
    const stillOpen: number = e.detail.targets.filter((t) => t.state === "open").length;
    console.log(verdict, stillOpen, e.detail.stopWhenSatisfied);
  });
  const goingOn: OutboxRecord[] = await outbox.list({ stage: "delivering" });
  const delivering: number = (await outbox.status()).delivering;
  await outbox.enqueue(signed, relays, { policy: "any", stopWhenSatisfied: true });
  const settled: number = stats.settled;
  console.log(goingOn.length, delivering, settled);
  // @ts-expect-error a boolean
  await outbox.enqueue(signed, relays, { stopWhenSatisfied: "yes" });
  outbox.addEventListener("superseded", (e) => console.log(e.detail.reason, e.detail.supersededBy));
  outbox.addEventListener("error", (e) => console.log(e.detail.code));
  outbox.removeEventListener("delivered", onDelivered);
  outbox.dispatchEvent(new Event("custom"));

  outbox.startAutoFlush();
  const auto: boolean = outbox.autoFlush;
  outbox.stopAutoFlush();
  const persisted: boolean | null = outbox.persisted;
  const estimate: StorageEstimateResult | null = await outbox.storageEstimate();
  console.log(auto, persisted, estimate?.quota, outbox.name, outbox.storage, outbox.closed);

  try {
    await outbox.enqueue(signed, ["http://not-a-relay"]);
  } catch (err) {
    if (err instanceof OutboxError) {
      const code: OutboxErrorCode = err.code;
      const detail = err.details?.index ?? err.details?.field;
      console.log(code, err.message, detail, err instanceof Error);
      if (code === "plan_conflict" || code === "event_expired") console.log(err.details?.id);
    }
  }
  try {
    await Outbox.open({ storage: "memory" });
  } catch (err) {
    // A runtime without crypto.getRandomValues cannot open an outbox.
    if (err instanceof OutboxError && err.code === "no_random_source") console.log(err.message);
  }

  await memory.close();
  await outbox.close();
  outbox.free();

  // Service worker side (structurally typed, no webworker lib needed).
  const registration = await navigator.serviceWorker.ready;
  const registered: boolean = await registerBackgroundSync(registration);
  await registerBackgroundSync({ sync: { register: async (_tag: string) => {} } }, "custom-tag");
  const synced: FlushResult = await handleSync({ tag: "nostr-outbox", lastChance: false }, { name: "app-outbox", tag: "nostr-outbox" });
  await handleSync();
  console.log(registered, synced.ran);
}

export async function wrongUsages(outbox: Outbox): Promise<void> {
  // @ts-expect-error relays must be strings
  await outbox.enqueue(signed, [1, 2]);
  // @ts-expect-error an event is an object or its JSON text
  await outbox.enqueue(42, ["wss://a.example"]);
  // @ts-expect-error unknown policy
  await outbox.enqueue(signed, ["wss://a.example"], { policy: "most" });
  // @ts-expect-error atLeast takes a number
  await outbox.enqueue(signed, ["wss://a.example"], { policy: { atLeast: "2" } });
  // @ts-expect-error unknown option
  await outbox.enqueue(signed, ["wss://a.example"], { polcy: "all" });
  // @ts-expect-error storage is "indexeddb" or "memory"
  await Outbox.open({ storage: "disk" });
  // @ts-expect-error durability is "strict" or "relaxed"
  await Outbox.open({ durability: "fast" });
  // @ts-expect-error no such stage
  await outbox.list({ stage: "done" });
  // @ts-expect-error get takes an id string
  await outbox.get(5);
  // @ts-expect-error no such event
  outbox.addEventListener("delivred", () => {});
  // @ts-expect-error the detail of `delivered` is a record, not an error
  outbox.addEventListener("delivered", (e) => e.detail.code);
  // @ts-expect-error Outbox has no public constructor
  new Outbox();
  const r = await outbox.get("x");
  // @ts-expect-error get may resolve to null
  console.log(r.stage);
  // @ts-expect-error stage is a union of literals
  const s: "done" = (await outbox.list())[0]!.stage;
  console.log(s);
  // @ts-expect-error error codes are a closed union
  const c: OutboxErrorCode = "oops";
  console.log(c);

  // outbox.publish: nostr-tools' SimplePool.publish contract (one promise per relay).
  const publishOptions: PublishOptions = { maxWait: 3000, policy: "all" };
  const answers: Promise<string>[] = outbox.publish(["wss://a.example", "wss://b.example"], signed, publishOptions);
  const firstOk: string = await Promise.any(answers);
  console.log(firstOk, normalizeRelayUrl("WSS://A.example:443/"));
  // NIP-11: what the outbox knows of a relay (its sends are checked against `limits`).
  const info: RelayInformation = await relayInformation(normalizeRelayUrl("wss://a.example"), { maxAgeMs: 60_000 });
  const maxLength: number | undefined = info.limits.max_message_length;
  const fate: "ok" | "missing" | "invalid" | "failed" = info.status;
  console.log(maxLength, fate, info.notes.join("; "), info.document?.["name"]);
  const kept = new Map<string, string>();
  setRelayInformationStore({ get: (url) => kept.get(url), set: async (url, text) => void kept.set(url, text) });
  setRelayInformationStore(null);
  // @ts-expect-error a store needs set
  setRelayInformationStore({ get: () => undefined });
  // @ts-expect-error limits are numbers or booleans, by name
  const wrong: string = info.limits.max_event_tags;
  console.log(wrong);
  for (const settled of await Promise.allSettled(answers)) {
    if (settled.status === "rejected" && settled.reason instanceof PublishError) {
      const queued: boolean = settled.reason.queued;
      const id: string | null = settled.reason.id;
      const detail: string | null = settled.reason.detail;
      const stage: Stage | null = settled.reason.stage;
      const reason: StopReason | null = settled.reason.reason;
      console.log(queued, id, settled.reason.relay, settled.reason.outcome, settled.reason.message, detail, stage, reason);
    }
  }
  // @ts-expect-error relays come first, as in nostr-tools
  outbox.publish(signed, ["wss://a.example"]);
  // @ts-expect-error maxWait is a number of ms
  outbox.publish(["wss://a.example"], signed, { maxWait: "3s" });
  // @ts-expect-error publish returns an array of promises, not one promise
  const one: Promise<string> = outbox.publish(["wss://a.example"], signed);
  console.log(one);
}
