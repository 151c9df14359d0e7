//! The pure outbox state machine: records, stages, leases, attempts, evidence,
//! policies and the retry schedule. It performs no I/O, reads no clock and draws no
//! randomness: callers pass `now_ms` and random inputs as arguments.

pub mod envelope;
pub mod outcome;

pub use envelope::EventEnvelope;
pub use outcome::{Outcome, RejectReason};
