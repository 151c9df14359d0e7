//! Drafts: the unsigned event template an app enqueues to be signed later by its
//! signer ([`Template`]), the check of what the signer answers ([`Template::check`])
//! and NIP-13 proof of work ([`Template::mine`]).
//!
//! The template is read with [`Event`]'s own field checks (the same types, hex and
//! ranges), so a draft that passes is an event once an id and a signature are added.

use serde_json::{json, Map, Value};

use super::error::EventError;
use super::event::Event;
use crate::core::EventEnvelope;

/// The most NIP-13 difficulty a draft may ask for (leading zero bits of the id).
pub const MAX_POW: u8 = 32;

/// An unsigned event: the NIP-01 fields but `id` and `sig`, with the `pubkey` it must
/// be signed by, an optional `created_at` (the signing time when absent) and an
/// optional NIP-13 difficulty to mine before signing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pubkey: String,
    created_at: Option<u64>,
    kind: u16,
    tags: Vec<Vec<String>>,
    content: String,
    pow: Option<u8>,
}

fn bad(field: &'static str, reason: impl Into<String>) -> EventError {
    EventError::BadValue {
        field,
        reason: reason.into(),
    }
}

impl Template {
    /// Reads a template from a JSON object: `pubkey` (64 lowercase hex), `kind`, `tags`
    /// and `content` required, `created_at` optional, each with [`Event`]'s checks;
    /// `id` and `sig` are refused (a signed event is enqueued as one); other fields are
    /// ignored. `pow` (0..=[`MAX_POW`], 0 for none) is the difficulty to mine.
    pub fn from_value(value: Value, pow: Option<u8>) -> Result<Template, EventError> {
        let Value::Object(mut fields) = value else {
            return Err(EventError::NotObject {
                found: match value {
                    Value::Array(_) => "array",
                    Value::Null => "null",
                    Value::String(_) => "string",
                    Value::Number(_) => "number",
                    _ => "boolean",
                },
            });
        };
        for field in ["id", "sig"] {
            if fields.contains_key(field) {
                return Err(bad(
                    if field == "id" { "id" } else { "sig" },
                    "is given: a draft is unsigned (enqueue a signed event without `sign`)",
                ));
            }
        }
        let created_at = fields.get("created_at").cloned();
        if matches!(created_at, Some(Value::Null)) {
            fields.remove("created_at");
        }
        // Read with the event's checks, an id and a signature of zeros standing in.
        let mut probe = Map::new();
        probe.insert("id".into(), Value::String("0".repeat(64)));
        probe.insert("sig".into(), Value::String("0".repeat(128)));
        probe.insert(
            "created_at".into(),
            fields.remove("created_at").unwrap_or(json!(0)),
        );
        for field in ["pubkey", "kind", "tags", "content"] {
            if let Some(v) = fields.remove(field) {
                probe.insert(field.into(), v);
            }
        }
        let event = Event::from_value(Value::Object(probe))?;
        if pow.is_some_and(|p| p > MAX_POW) {
            return Err(bad("pow", format!("must be 0..={MAX_POW}")));
        }
        Ok(Template {
            pubkey: event.pubkey().to_string(),
            created_at: created_at
                .filter(|v| !v.is_null())
                .map(|_| event.created_at()),
            kind: event.kind(),
            tags: event.tags().to_vec(),
            content: event.content().to_string(),
            pow: pow.filter(|p| *p > 0),
        })
    }

    /// Reads a template as stored ([`Template::to_stored`]).
    pub fn from_stored(text: &str) -> Result<Template, EventError> {
        let mut value: Value = serde_json::from_str(text).map_err(|e| EventError::NotJson {
            detail: e.to_string(),
        })?;
        let pow = value
            .as_object_mut()
            .and_then(|o| o.remove("pow"))
            .and_then(|p| p.as_u64())
            .map(|p| p.min(u64::from(MAX_POW)) as u8);
        Template::from_value(value, pow)
    }

    /// The template's JSON as the record keeps it (in place of the event).
    pub fn to_stored(&self) -> String {
        let mut value = self.unsigned(self.created_at);
        if let (Some(pow), Value::Object(o)) = (self.pow, &mut value) {
            o.insert("pow".into(), json!(pow));
        }
        value.to_string()
    }

    /// The author it must be signed by.
    pub fn pubkey(&self) -> &str {
        &self.pubkey
    }

    /// The `created_at` it asks for, if any.
    pub fn created_at(&self) -> Option<u64> {
        self.created_at
    }

    /// The NIP-13 difficulty it asks for, if any.
    pub fn pow(&self) -> Option<u8> {
        self.pow
    }

    /// The envelope a draft record keeps: no id (a draft), the template as its text,
    /// the NIP-40 expiration and the header fields the queue's rules read, with
    /// `created_at` the template's or `now_secs` (the signing time comes later; it is
    /// never earlier, [`Template::signing_time`]).
    pub fn to_envelope(&self, now_secs: u64) -> Result<EventEnvelope, EventError> {
        let mut envelope = self
            .event(self.created_at.unwrap_or(now_secs))?
            .to_envelope();
        envelope.id = String::new();
        envelope.raw = self.to_stored();
        Ok(envelope)
    }

    /// The `created_at` to sign with at `now_secs`: the template's, else the later of
    /// `now_secs` and the one the draft was filed under (`filed_secs`), so a version's
    /// time never goes back.
    pub fn signing_time(&self, now_secs: u64, filed_secs: u64) -> u64 {
        self.created_at.unwrap_or(now_secs.max(filed_secs))
    }

    fn event(&self, created_at: u64) -> Result<Event, EventError> {
        Event::from_parts(
            "0".repeat(64),
            self.pubkey.clone(),
            created_at,
            self.kind,
            self.tags.clone(),
            self.content.clone(),
            "0".repeat(128),
        )
    }

    fn unsigned(&self, created_at: Option<u64>) -> Value {
        let mut o = Map::new();
        o.insert("kind".into(), json!(self.kind));
        o.insert("pubkey".into(), json!(self.pubkey));
        if let Some(at) = created_at {
            o.insert("created_at".into(), json!(at));
        }
        o.insert("tags".into(), json!(self.tags));
        o.insert("content".into(), json!(self.content));
        Value::Object(o)
    }

    /// What the signer is handed: `kind`, `pubkey`, `created_at`, `tags`, `content`
    /// (the NIP-07 `signEvent` argument; signers ignore or check `pubkey`).
    pub fn to_sign(&self, created_at: u64) -> Value {
        self.unsigned(Some(created_at))
    }

    /// Mines a NIP-13 nonce for `created_at`: adds (or replaces) the `nonce` tag
    /// `["nonce", "<n>", "<difficulty>"]` so the id has at least [`Template::pow`]
    /// leading zero bits, trying at most `budget` nonces from `start`. `Ok(next)` when
    /// found (the tags now hold it), `Err(next)` to go on from `next` (the caller
    /// yields between slices and bounds the time). No difficulty: `Ok` at once.
    pub fn mine(&mut self, created_at: u64, start: u64, budget: u64) -> Result<u64, u64> {
        let Some(target) = self.pow else {
            return Ok(start);
        };
        self.tags
            .retain(|t| t.first().map(String::as_str) != Some("nonce"));
        let end = start.saturating_add(budget);
        let Ok(mut event) = self.event(created_at) else {
            return Err(end);
        };
        for nonce in start..end {
            let mut tags = self.tags.clone();
            tags.push(vec!["nonce".into(), nonce.to_string(), target.to_string()]);
            event.set_tags(tags);
            if leading_zero_bits(&event.compute_id_bytes()) >= u32::from(target) {
                self.tags = event.tags().to_vec();
                // Mined: the nonce tag is part of the template now; no more to do.
                self.pow = None;
                return Ok(nonce + 1);
            }
        }
        Err(end)
    }

    /// Checks the signer's answer against this template signed at `created_at`: a
    /// well-formed event whose id and signature verify, by [`Template::pubkey`], with
    /// this kind, these tags, this content and this `created_at`. The event, or why
    /// not.
    pub fn check(&self, created_at: u64, answer: Value) -> Result<Event, String> {
        let event = Event::from_value(answer).map_err(|e| e.to_string())?;
        event.verify().map_err(|e| e.to_string())?;
        let mismatch =
            |field: &str| Err(format!("the signed event's `{field}` is not the draft's"));
        if event.pubkey() != self.pubkey {
            return mismatch("pubkey");
        }
        if event.kind() != self.kind {
            return mismatch("kind");
        }
        if event.created_at() != created_at {
            return mismatch("created_at");
        }
        if event.tags() != self.tags.as_slice() {
            return mismatch("tags");
        }
        if event.content() != self.content {
            return mismatch("content");
        }
        if self
            .pow
            .is_some_and(|p| leading_zero_bits(&hex32(event.id())) < u32::from(p))
        {
            return mismatch("id (proof of work)");
        }
        Ok(event)
    }
}

fn hex32(id: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    if let Ok(bytes) = hex::decode(id) {
        if bytes.len() == 32 {
            out.copy_from_slice(&bytes);
        }
    }
    out
}

/// NIP-13's difficulty of an id: its leading zero bits.
pub fn leading_zero_bits(id: &[u8; 32]) -> u32 {
    let mut bits = 0;
    for b in id {
        if *b == 0 {
            bits += 8;
        } else {
            return bits + b.leading_zeros();
        }
    }
    bits
}
