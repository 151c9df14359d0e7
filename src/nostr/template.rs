//! Drafts: the unsigned event template an app enqueues to be signed later by its
//! signer ([`Template`]), the check of what the signer answers ([`Template::check`])
//! and NIP-13 proof of work ([`Template::mine`]).
//!
//! A template is an [`Event`] read with the event's own field checks (the same types,
//! hex and ranges) whose `id` and `sig` are zeros: it is stored as that event's compact
//! JSON, `created_at` 0 standing for "the signing time". A difficulty to mine is kept
//! as NIP-13 keeps it, in a `["nonce", "0", "<difficulty>"]` tag. So the template
//! reuses the event's reader and writer instead of a JSON object model of its own.

use super::error::EventError;
use super::event::Event;
use crate::core::EventEnvelope;

/// The most NIP-13 difficulty a draft may ask for (leading zero bits of the id).
pub const MAX_POW: u8 = 32;

// The messages that name it say 32: a literal, not `format!` (a cold path).
const _: () = assert!(MAX_POW == 32);

/// An unsigned event: the NIP-01 fields but `id` and `sig`, with the `pubkey` it must
/// be signed by, a `created_at` (0: the signing time) and, in a `nonce` tag, the
/// NIP-13 difficulty to mine before signing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    event: Event,
}

fn is_nonce(tag: &[String]) -> bool {
    tag.first().is_some_and(|n| n == "nonce")
}

impl Template {
    /// Reads a template from its JSON text: `pubkey` (64 lowercase hex), `kind`, `tags`
    /// and `content` required, `created_at` optional, each with [`Event`]'s checks;
    /// `id` and `sig` are refused (a signed event is enqueued as one); other fields are
    /// ignored. `pow` (1..=[`MAX_POW`]) is a difficulty to mine: it replaces a `nonce`
    /// tag of the template.
    pub fn parse(text: &str, pow: Option<u8>) -> Result<Template, EventError> {
        let mut event = Event::parse_unsigned(text)?;
        if let Some(difficulty) = pow.filter(|p| *p > 0) {
            if difficulty > MAX_POW {
                return Err(EventError::BadValue {
                    field: "tags",
                    reason: "asks for a proof of work over 32 (`MAX_POW`)".into(),
                });
            }
            let tags = event.tags_mut();
            tags.retain(|t| !is_nonce(t));
            tags.push(vec!["nonce".into(), "0".into(), difficulty.to_string()]);
            event.set_created_at(event.created_at());
        }
        Ok(Template { event })
    }

    /// Reads a template as stored ([`Template::to_stored`]).
    pub fn from_stored(text: &str) -> Result<Template, EventError> {
        Ok(Template {
            event: Event::parse_json(text)?,
        })
    }

    /// The template's JSON as the record keeps it (in place of the event).
    pub fn to_stored(&self) -> &str {
        self.event.raw()
    }

    /// The author it must be signed by.
    pub fn pubkey(&self) -> &str {
        self.event.pubkey()
    }

    /// The `created_at` it asks for; `None`: the signing time.
    pub fn created_at(&self) -> Option<u64> {
        Some(self.event.created_at()).filter(|at| *at > 0)
    }

    /// The NIP-13 difficulty its `nonce` tag asks for, if any.
    pub fn pow(&self) -> Option<u8> {
        let tag = self.event.tags().iter().find(|t| is_nonce(t))?;
        // Decimal digits by hand: `str::parse::<u8>` brought its own parser.
        let mut n = 0u32;
        for b in tag.get(2)?.bytes() {
            if !b.is_ascii_digit() || n > u32::from(MAX_POW) {
                return None;
            }
            n = n * 10 + u32::from(b - b'0');
        }
        u8::try_from(n).ok().filter(|p| *p > 0 && *p <= MAX_POW)
    }

    /// The envelope a draft record keeps: no id (a draft), the template as its text,
    /// the NIP-40 expiration and the header fields the queue's rules read, with
    /// `created_at` the template's or `now_secs` (the signing time comes later, and is
    /// never earlier: [`Template::signing_time`]).
    pub fn to_envelope(&self, now_secs: u64) -> EventEnvelope {
        let mut dated = self.event.clone();
        dated.set_created_at(self.created_at().unwrap_or(now_secs));
        let mut envelope = dated.to_envelope();
        envelope.id = String::new();
        envelope.raw = self.to_stored().to_string();
        envelope
    }

    /// The `created_at` to sign with at `now_secs`: the template's, else the later of
    /// `now_secs` and the one the draft was filed under (`filed_secs`), so a version's
    /// time never goes back.
    pub fn signing_time(&self, now_secs: u64, filed_secs: u64) -> u64 {
        self.created_at().unwrap_or(now_secs.max(filed_secs))
    }

    /// Fixes `created_at`: what is mined and signed from now on.
    pub fn date(&mut self, created_at: u64) {
        self.event.set_created_at(created_at);
    }

    /// What the signer is handed: `pubkey`, `created_at`, `kind`, `tags`, `content`
    /// (the NIP-07 `signEvent` argument; signers ignore or check `pubkey`).
    pub fn to_sign(&self) -> String {
        self.event.unsigned_json()
    }

    /// Mines the NIP-13 nonce of its `nonce` tag for the current `created_at` so the
    /// id has at least [`Template::pow`] leading zero bits, trying at most `budget`
    /// nonces from `start`. `Ok(nonce)` when found (the tag now holds it; 0 when no
    /// difficulty is asked), `Err(next)` to go on from `next` (the caller yields between
    /// slices and bounds the time). `mine(n, 1)` checks a nonce found elsewhere.
    pub fn mine(&mut self, start: u64, budget: u64) -> Result<u64, u64> {
        let Some(target) = self.pow() else {
            return Ok(0);
        };
        let Some(at) = self.event.tags().iter().position(|t| is_nonce(t)) else {
            return Ok(0);
        };
        let (end, target_text) = (start.saturating_add(budget), target.to_string());
        for nonce in start..end {
            // Only the nonce tag changes from one try to the next.
            self.event.tags_mut()[at] =
                vec!["nonce".into(), nonce.to_string(), target_text.clone()];
            if leading_zero_bits(&self.event.compute_id_bytes()) >= u32::from(target) {
                self.event.set_created_at(self.event.created_at());
                return Ok(nonce);
            }
        }
        Err(end)
    }

    /// Checks the signer's answer (JSON text: the signed event, or its signature alone)
    /// against this template as dated and mined: a well-formed event whose id and signature verify, by
    /// [`Template::pubkey`], with its kind, tags, content and `created_at`, and the
    /// proof of work asked for. The event, or why not.
    pub fn check(&self, answer: &str) -> Result<Event, String> {
        // A signer that answers with the signature alone (NDK's `sign(event)`): the event
        // is the template with it, and must verify like any answer.
        // (JSON text of a string: the 128 hex digits in quotes, nothing to unescape.)
        let sig = answer.strip_prefix('"').and_then(|a| a.strip_suffix('"'));
        let event = match sig.filter(|sig| sig.len() == 128) {
            Some(sig) => self.event.with_signature(sig),
            None => Event::parse_json_compact(answer),
        }
        .map_err(|e| e.to_string())?;
        event.verify().map_err(|e| e.to_string())?;
        // The id is the hash of every field signed: one comparison checks them all
        // (and the proof of work, mined into the template).
        let want = self.event.compute_id();
        if event.id() != want {
            return Err(format!(
                "the signed event is not the draft (its id is {}, the draft's {want}): \
                 another author, time, kind, tags or content",
                event.id()
            ));
        }
        Ok(event)
    }
}

/// NIP-13's difficulty of an id: its leading zero bits.
pub fn leading_zero_bits(id: &[u8; 32]) -> u32 {
    let mut bits = 0;
    for b in id {
        if *b != 0 {
            return bits + b.leading_zeros();
        }
        bits += 8;
    }
    bits
}
