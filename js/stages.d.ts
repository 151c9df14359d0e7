import type { OutboxRecord } from "./nostr_outbox.js";

type OutboxStage = OutboxRecord["stage"];

/** Every stage, in the order the inspector's counts show them. */
export const STAGES: readonly OutboxStage[];
/** The stages a record never leaves: nothing more is sent. */
export const TERMINAL: ReadonlySet<OutboxStage>;
