import type { Outbox, ExportStream, ImportResult, ImportSource } from "./nostr_outbox.js";

/** `outbox.export()` as a function: the records as a stream of UTF-8 NDJSON bytes. */
export function exportRecords(outbox: Outbox): ExportStream;

/** `outbox.import(source)` as a function. */
export function importRecords(outbox: Outbox, source: ImportSource): Promise<ImportResult>;
