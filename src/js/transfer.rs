//! The export format, line by line: conversion and checks at the boundary, nothing
//! decided here (an import is an enqueue of each record's plan, [`crate::core::import`]).
//!
//! NDJSON: a first line `{"format":"nostr-outbox/records","version":1}`, then one record
//! per line, as the stores keep its document (`core::Record`'s JSON: the signed event's
//! exact text, targets, policy, stage, every answer of every relay). `js/transfer.js`
//! streams the lines (`outbox.export()`) and reads them back (`outbox.import()`).

use js_sys::Array;

use super::error::{ApiError, Details};
use crate::core::semantics::sorted_positions;
use crate::core::{import, CoreError, ErrorCode, Plan, Record};
use crate::nostr::template::Template;
use crate::nostr::{Event, RelayUrl, SignatureCheck};

/// The format's name, on the first line.
pub(crate) const FORMAT: &str = "nostr-outbox/records";
/// The version of the format this build writes and reads.
pub(crate) const VERSION: u32 = 1;

/// The first line of an export.
pub(crate) fn header() -> String {
    format!("{{\"format\":\"{FORMAT}\",\"version\":{VERSION}}}")
}

/// The line of `record`.
pub(crate) fn line(record: &Record) -> Result<String, ApiError> {
    serde_json::to_string(record).map_err(|e| ApiError::new(ErrorCode::Storage, e.to_string()))
}

/// A refused line: `invalid_import` with its number (1-based) in `details.line`.
fn refused(line: usize, message: impl std::fmt::Display) -> ApiError {
    refused_of(line, &message)
}

/// [`refused`]'s one copy (not one per message type).
fn refused_of(line: usize, message: &dyn std::fmt::Display) -> ApiError {
    ApiError::new(ErrorCode::InvalidImport, format!("line {line}: {message}")).with_details(
        Details {
            line: Some(line),
            ..Details::default()
        },
    )
}

/// The plans of an export's `lines` (the first line the header; blank lines skipped),
/// each with its line number, in order. Every line is checked before any is used: the
/// header names this format in a version this build reads; each record parses, its
/// event's text is a NIP-01 event whose id and signature verify and whose envelope is
/// the record's, its targets are relay URLs in normalized form, and the record holds
/// together ([`import::plan_for`]). The first line that fails is the error, as if each
/// were checked whole in turn.
pub(crate) fn plans(lines: &Array, now_ms: u64) -> Result<Vec<(usize, Plan)>, ApiError> {
    let text = |i: u32| -> Result<String, ApiError> {
        lines
            .get(i)
            .as_string()
            .ok_or_else(|| refused(i as usize + 1, "not a string"))
    };
    // The header is compared as text (this build writes exactly one): no reader of
    // its own in the .wasm.
    let header = header();
    if lines.length() == 0 || text(0)?.trim_end() != header {
        return Err(refused(
            1,
            format!(
                "not the header of an export this build reads: the first line must be `{header}`"
            ),
        ));
    }
    let mut out: Vec<(usize, Plan)> = Vec::new();
    // The signatures are checked as `enqueueMany` checks them, in BIP-340 batches; a
    // line's other fault is reported after any bad signature on an earlier line.
    let mut signatures = Vec::new();
    let bad_signature = |signatures: &[Option<SignatureCheck>], out: &[(usize, Plan)]| {
        SignatureCheck::first_bad_of(signatures)
            .map(|(i, e)| refused(out[i].0, format!("its event: {e}")))
    };
    for i in 1..lines.length() {
        let n = i as usize + 1;
        // The line's plan and signature, or `None` for a blank line.
        let read = || -> Result<Option<(Plan, Option<SignatureCheck>)>, ApiError> {
            let line = text(i)?;
            if line.trim().is_empty() {
                return Ok(None);
            }
            let record = crate::store::doc::read_record(&line)
                .map_err(|e| refused(n, format!("not a record: {e}")))?;
            // A draft's text is its template (no signature yet), read back as it was
            // filed; a signed event's, the event with its id.
            let filed = record.event.meta.as_ref().map_or(0, |m| m.created_at);
            let (envelope, signature) = if record.is_draft() {
                Template::from_stored(&record.event.raw).map(|t| (t.to_envelope(filed), None))
            } else {
                Event::parse_json(&record.event.raw)
                    .and_then(|event| event.verify_id().map(|()| event))
                    .map(|e| (e.to_envelope(), Some(e.signature())))
            }
            .map_err(|e| refused(n, format!("its event: {e}")))?;
            if envelope != record.event {
                return Err(refused(n, "its event does not match the event's text"));
            }
            for target in &record.targets {
                let url = RelayUrl::parse(target).map_err(|e| refused(n, e))?;
                if url.as_str() != target {
                    return Err(refused(
                        n,
                        format!("target `{target}` is not in normalized form"),
                    ));
                }
            }
            let plan = import::plan_for(record, now_ms).map_err(|e| refused(n, e))?;
            Ok(Some((plan, signature)))
        };
        match read() {
            Ok(Some((plan, signature))) => {
                out.push((n, plan));
                signatures.push(signature);
            }
            Ok(None) => {}
            Err(e) => return Err(bad_signature(&signatures, &out).unwrap_or(e)),
        }
    }
    if let Some(e) = bad_signature(&signatures, &out) {
        return Err(e);
    }
    // One id twice with two plans: the conflict is found here, before anything is
    // written (the batches would find it only when they reach the second).
    let digest = |p: &Plan| p.imported.as_ref().map(|r| r.plan_digest.clone());
    let ids: Vec<&str> = out.iter().map(|(_, p)| p.id.as_str()).collect();
    for pair in sorted_positions(&ids).windows(2) {
        let ((_, a), (line, b)) = (&out[pair[0]], &out[pair[1]]);
        if a.id == b.id && digest(a) != digest(b) {
            return Err(conflict(&b.id, *line));
        }
    }
    Ok(out)
}

/// `plan_conflict` for the record `id` on `line`.
pub(crate) fn conflict(id: &str, line: usize) -> ApiError {
    ApiError::from(CoreError::PlanConflict { id: id.to_string() }).add_details(Details {
        line: Some(line),
        ..Details::default()
    })
}
