// The record stages as the .wasm names them (core::Stage; the TypeScript union `Stage`),
// for the JavaScript entries that sort records by stage (groups.js, publish.js,
// inspector.js). One list here, checked against the Rust enum by tests/core/api_lists.rs.

/** Every stage, in the order of `Stage::ALL` (the inspector's counts show them so). */
export const STAGES = Object.freeze(["draft", "pending", "leased", "retryable", "delivering", "satisfied", "exhausted", "cancelled", "superseded"]);
/** The stages a record never leaves (`Stage::is_terminal`): nothing more is sent. */
export const TERMINAL = new Set(["satisfied", "exhausted", "cancelled", "superseded"]);
