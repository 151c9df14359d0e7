import type { Outbox, OutboxGroup, OutboxRecord } from "./nostr_outbox.js";

/** `outbox.cancelGroup(id)` as a function: cancels every member not terminal. */
export function cancelGroup(outbox: Outbox, id: string): Promise<OutboxGroup>;

/** `outbox.retryGroup(id)` as a function: re-arms every `exhausted` member. */
export function retryGroup(outbox: Outbox, id: string): Promise<OutboxGroup>;

/**
 * Group `id` summed up from what is stored under its member ids, in order (`stored[i]`
 * the record `<id>:<i>`, or null): `members[i]` is that record when its `group` is
 * `{ id, index: i, size: stored.length }`, else null (missing). `delivered` counts
 * satisfied members, `failed` terminal or exhausted ones, `open` the rest. Null when no
 * member is there. What `outbox.group(id)` answers, for records the app already holds.
 */
export function groupOf(id: string, stored: ReadonlyArray<OutboxRecord | null>): OutboxGroup | null;
