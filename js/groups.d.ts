import type { Outbox, OutboxGroup } from "./nostr_outbox.js";

/** `outbox.cancelGroup(id)` as a function: cancels every member not terminal. */
export function cancelGroup(outbox: Outbox, id: string): Promise<OutboxGroup>;

/** `outbox.retryGroup(id)` as a function: re-arms every `exhausted` member. */
export function retryGroup(outbox: Outbox, id: string): Promise<OutboxGroup>;
