import type { Outbox, OutboxRecord } from "./nostr_outbox.js";

type OutboxStage = OutboxRecord["stage"];
import type { OutboxSnapshot, OutboxSource } from "./store.js";

/** The stages the stage filter offers, in the order the counts show them. */
export const STAGES: readonly OutboxStage[];

/** What the inspector calls on an outbox: the store's reads, `retry`, `cancel`, `export` and `import`. */
export type InspectableOutbox = OutboxSource & Pick<Outbox, "retry" | "cancel" | "export" | "import" | "name">;

/** The `outbox-export` event's detail: the file the Export button made. */
export interface OutboxExportDetail {
  blob: Blob;
  filename: string;
}

/**
 * `<nostr-outbox-inspector>`: a live table of an outbox's records, their evidence on demand,
 * Retry and Cancel where the stage allows them, filters by stage and lane, the counts per
 * stage, and Export / Import of the queue as a file. Importing `nostr-outbox/inspector` defines it. Parts and custom properties: docs/API.md.
 */
export class OutboxInspector extends HTMLElement {
  /** The outbox shown, or `null` (the default). Setting it reads the outbox at once when connected. */
  outbox: InspectableOutbox | null;
  /** The stage filter, `""` for every stage; reflects the `stage` attribute. */
  stage: OutboxStage | "";
  /** The lane filter, `""` for every lane (it also scopes the counts); reflects the `lane` attribute. */
  lane: string;
  /** Records per page (`list`'s `limit`, creation order); 100 by default; reflects `limit`. */
  limit: number;
  /** Lanes the lane filter offers besides those seen in records. */
  lanes: string[];
  /** The snapshot shown last (`null` without an outbox or while disconnected). */
  readonly snapshot: OutboxSnapshot | null;
  /** Reads the outbox again now (after `purge`, which fires no event). */
  refresh(): Promise<void>;
}

declare global {
  interface HTMLElementTagNameMap {
    "nostr-outbox-inspector": OutboxInspector;
  }
  interface HTMLElementEventMap {
    /** The Export button made a file; cancel it to keep the browser from downloading it. */
    "outbox-export": CustomEvent<OutboxExportDetail>;
  }
}
