//! NIP-01 events: strict parsing from JSON text or a JSON value, the canonical
//! serialization and id, BIP-340 signature verification, and the NIP-40 expiration.
//!
//! An [`Event`] keeps the JSON text it was given ([`Event::raw`]); that text, never a
//! re-serialization, is what the outbox resends. Its fields are read-only so the text and
//! the checked fields cannot drift apart. This module performs no I/O and never panics on
//! any input.

use std::fmt;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::batch;
use super::error::EventError;
use super::schnorr::{self, Failure};
use crate::core::semantics::VANISH_KIND;
use crate::core::{EventEnvelope, EventMeta};

/// The largest `created_at` accepted: 2^53 − 1, the largest integer JavaScript numbers
/// hold exactly. Larger values would serialize differently in JavaScript clients and
/// relays, so their ids could not agree.
pub const MAX_CREATED_AT: u64 = 9_007_199_254_740_991;

/// A parsed, shape-checked NIP-01 event together with its original JSON text.
///
/// Construction ([`Event::parse_json`], [`Event::from_value`], [`Event::from_parts`])
/// checks the shape only; call [`Event::verify`] to check the id and the signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    id: String,
    pubkey: String,
    created_at: u64,
    kind: u16,
    tags: Vec<Vec<String>>,
    content: String,
    sig: String,
    raw: String,
}

impl Event {
    /// Parses an event from its JSON text, strictly (see `docs/NOSTR.md`): the seven
    /// NIP-01 fields are required, typed and formatted exactly; a field given twice is
    /// refused; unknown extra fields are tolerated (they are not part of the id, and
    /// they stay in [`Event::raw`]). The text is kept verbatim as [`Event::raw`].
    ///
    /// The JSON is read by `serde_json`: text that is not one JSON value (trailing
    /// data, a lone UTF-16 surrogate escape, a number out of `f64` range such as
    /// `1e400`, nesting deeper than its limit of 128) is [`EventError::NotJson`].
    pub fn parse_json(text: &str) -> Result<Event, EventError> {
        Event::read(text, RawSource::Given(text))
    }

    /// Parses an event from JSON text with the checks of [`Event::parse_json`], but
    /// keeps it in its compact NIP-01 form: [`Event::raw`] is a compact serialization
    /// of the seven NIP-01 fields and unknown fields are dropped (the JavaScript
    /// layer's path, so one signed event is one plan whichever way it is given).
    pub fn parse_json_compact(text: &str) -> Result<Event, EventError> {
        Event::read(text, RawSource::Canonical)
    }

    /// Builds an event from a parsed JSON value (e.g. the event of a relay's `EVENT`
    /// message), with the checks of [`Event::parse_json`] but for the refusal of a
    /// field given twice (a [`Value`] keeps one copy). [`Event::raw`] is a compact
    /// serialization of the seven NIP-01 fields.
    pub fn from_value(value: Value) -> Result<Event, EventError> {
        match value {
            Value::Object(members) => {
                let mut fields = Fields::default();
                for (key, value) in members {
                    if let Some((_, slot)) = fields.slot(Key::of(&key)) {
                        *slot = Some(value);
                    }
                }
                fields.into_event(RawSource::Canonical)
            }
            other => Err(EventError::NotObject {
                found: type_name(&other),
            }),
        }
    }

    fn read(text: &str, raw: RawSource<'_>) -> Result<Event, EventError> {
        Event::fields(text)?.into_event(raw)
    }

    fn fields(text: &str) -> Result<Fields, EventError> {
        let not_json = |e: serde_json::Error| EventError::NotJson {
            detail: e.to_string(),
        };
        let mut de = serde_json::Deserializer::from_str(text);
        let top = Top::deserialize(&mut de).map_err(not_json)?;
        de.end().map_err(not_json)?;
        match top {
            Top::Object(fields) => Ok(*fields),
            Top::Other(found) => Err(EventError::NotObject { found }),
        }
    }

    /// Reads an unsigned event template from JSON text, with the checks of
    /// [`Event::parse_json`] but for `id` and `sig`, which must be absent (they are
    /// zeros in the answer, [`Event::unsigned_json`] leaves them out) and `created_at`,
    /// which may be absent (0 in the answer). The drafts' reader
    /// ([`super::template::Template`]).
    pub(crate) fn parse_unsigned(text: &str) -> Result<Event, EventError> {
        let mut fields = Event::fields(text)?;
        for (field, given, len) in [("id", &mut fields.id, 64), ("sig", &mut fields.sig, 128)] {
            if given.is_some() {
                return Err(EventError::BadValue {
                    field,
                    reason: "is given: a draft is unsigned (enqueue a signed event without `sign`)"
                        .into(),
                });
            }
            *given = Some(Value::String("0".repeat(len)));
        }
        fields.created_at.get_or_insert(Value::from(0u8));
        fields.into_event(RawSource::Canonical)
    }

    /// Builds an event from its fields, with the same format checks as
    /// [`Event::parse_json`]. [`Event::raw`] is a compact serialization of the fields.
    pub fn from_parts(
        id: String,
        pubkey: String,
        created_at: u64,
        kind: u16,
        tags: Vec<Vec<String>>,
        content: String,
        sig: String,
    ) -> Result<Event, EventError> {
        check_hex("id", &id, 64)?;
        check_hex("pubkey", &pubkey, 64)?;
        check_hex("sig", &sig, 128)?;
        check_created_at_range(created_at)?;
        let mut event = Event {
            id,
            pubkey,
            created_at,
            kind,
            tags,
            content,
            sig,
            raw: String::new(),
        };
        event.raw = event.compact_json();
        Ok(event)
    }

    /// The tags, to change, for a draft's NIP-13 nonce ([`super::template::Template`]):
    /// [`Event::raw`] and the id are left as they were (only the computed id changes)
    /// until [`Event::set_created_at`] writes the raw text again.
    pub(crate) fn tags_mut(&mut self) -> &mut Vec<Vec<String>> {
        &mut self.tags
    }

    /// This event signed with `sig` (128 lowercase hex): its id computed, its raw text the
    /// compact form. For a signer that answers with the signature alone (drafts); the
    /// caller verifies it.
    pub(crate) fn with_signature(&self, sig: &str) -> Result<Event, EventError> {
        check_hex("sig", sig, 128)?;
        let mut event = self.clone();
        event.id = self.compute_id();
        event.sig = sig.to_string();
        event.raw = event.compact_json();
        Ok(event)
    }

    /// Sets `created_at` and makes [`Event::raw`] the compact form again (drafts: the
    /// time a template is signed with; `id` and `sig` stay as they are).
    pub(crate) fn set_created_at(&mut self, created_at: u64) {
        self.created_at = created_at;
        self.raw = self.compact_json();
    }

    /// The event id as given: 64 lowercase hex characters.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The author's x-only public key: 64 lowercase hex characters.
    pub fn pubkey(&self) -> &str {
        &self.pubkey
    }

    /// Creation time in unix seconds (at most [`MAX_CREATED_AT`]).
    pub fn created_at(&self) -> u64 {
        self.created_at
    }

    /// The event kind (0..=65535).
    pub fn kind(&self) -> u16 {
        self.kind
    }

    /// The tags: arrays of strings.
    pub fn tags(&self) -> &[Vec<String>] {
        &self.tags
    }

    /// The content.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// The BIP-340 signature as given: 128 lowercase hex characters.
    pub fn sig(&self) -> &str {
        &self.sig
    }

    /// The JSON text exactly as given to [`Event::parse_json`] (or the compact
    /// serialization made by [`Event::from_value`] / [`Event::from_parts`]). This is
    /// what is sent in `["EVENT", <raw>]`, on every attempt.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The NIP-01 serialization `[0,pubkey,created_at,kind,tags,content]` whose sha256
    /// is the id: no whitespace, and strings escaped exactly as JavaScript's
    /// `JSON.stringify` does.
    pub fn canonical_json(&self) -> String {
        let bytes = self.canonical_bytes();
        // Only valid UTF-8 is ever written; the fallback cannot happen.
        String::from_utf8(bytes).unwrap_or_default()
    }

    /// The id computed from the event's fields: sha256 of [`Event::canonical_json`],
    /// as 64 lowercase hex characters.
    pub fn compute_id(&self) -> String {
        hex::encode(self.compute_id_bytes())
    }

    /// Checks that the given id is the computed one.
    pub fn verify_id(&self) -> Result<(), EventError> {
        let computed = self.compute_id_bytes();
        match lower_hex::<32>(&self.id) {
            Some(given) if given == computed => Ok(()),
            _ => Err(EventError::IdMismatch {
                computed: hex::encode(computed),
            }),
        }
    }

    /// Checks the BIP-340 Schnorr signature of the given id by the pubkey. It does not
    /// check that the id matches the fields: use [`Event::verify`] for both.
    pub fn verify_signature(&self) -> Result<(), EventError> {
        check_signature(&self.id, &self.pubkey, &self.sig)
    }

    /// What checking this event's signature takes (its id, pubkey and sig), to check
    /// later without keeping the whole event.
    pub fn signature(&self) -> SignatureCheck {
        SignatureCheck {
            id: self.id.clone(),
            pubkey: self.pubkey.clone(),
            sig: self.sig.clone(),
        }
    }

    /// Checks the id, then the signature. Enqueue refuses events that fail this.
    pub fn verify(&self) -> Result<(), EventError> {
        self.verify_id()?;
        self.verify_signature()
    }

    /// The NIP-40 expiration in unix seconds: the second element of the first tag named
    /// `expiration`, when it is a plain decimal integer (ASCII digits only, fits in
    /// u64). A missing or malformed expiration tag gives `None` (the event never
    /// expires).
    pub fn expiration(&self) -> Option<u64> {
        let tag = self
            .tags
            .iter()
            .find(|t| t.first().map(String::as_str) == Some("expiration"))?;
        parse_decimal(tag.get(1)?)
    }

    /// True when the event has a NIP-40 expiration at or before `now_secs`.
    pub fn is_expired(&self, now_secs: u64) -> bool {
        self.expiration().is_some_and(|exp| exp <= now_secs)
    }

    /// The first value of the first tag named `name` (e.g. `relay`, `challenge`).
    pub fn tag_value(&self, name: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|t| t.first().map(String::as_str) == Some(name))
            .and_then(|t| t.get(1))
            .map(String::as_str)
    }

    /// The envelope the outbox core stores: id, raw text, expiration and the header
    /// fields its Nostr rules read ([`EventMeta`]): kind, author, `created_at`, the
    /// first `d` tag of an addressable kind, and a deletion's (kind 5) `e` tag ids (64
    /// lowercase hex) and `a` tag addresses, in tag order, each once.
    pub fn to_envelope(&self) -> EventEnvelope {
        EventEnvelope {
            id: self.id.clone(),
            raw: self.raw.clone(),
            expiration: self.expiration(),
            meta: Some(self.meta()),
        }
    }

    fn meta(&self) -> EventMeta {
        let addressable = (30_000..40_000).contains(&self.kind);
        let values = |name: &str| -> Vec<String> {
            let mut out: Vec<String> = Vec::new();
            for t in &self.tags {
                if let [n, v, ..] = t.as_slice() {
                    if n == name && !out.contains(v) {
                        out.push(v.clone());
                    }
                }
            }
            out
        };
        let deletion = self.kind == 5;
        EventMeta {
            pubkey: self.pubkey.clone(),
            kind: self.kind,
            created_at: self.created_at,
            d: if addressable {
                self.tag_value("d").unwrap_or("").to_string()
            } else {
                String::new()
            },
            deletes_ids: if deletion {
                values("e")
                    .into_iter()
                    .filter(|v| is_lower_hex(v, 64))
                    .collect()
            } else {
                Vec::new()
            },
            deletes_addresses: if deletion { values("a") } else { Vec::new() },
            protected: self.tags.iter().any(|t| t.len() == 1 && t[0] == "-"),
            vanish_relays: if self.kind == VANISH_KIND {
                values("relay")
            } else {
                Vec::new()
            },
        }
    }

    pub(crate) fn compute_id_bytes(&self) -> [u8; 32] {
        Sha256::digest(self.canonical_bytes()).into()
    }

    fn canonical_bytes(&self) -> Vec<u8> {
        let tags_len: usize = self
            .tags
            .iter()
            .map(|t| 3 + t.iter().map(|s| s.len() + 3).sum::<usize>())
            .sum();
        let mut buf = Vec::with_capacity(100 + tags_len + self.content.len() + 16);
        buf.extend_from_slice(b"[0,\"");
        buf.extend_from_slice(self.pubkey.as_bytes());
        buf.extend_from_slice(b"\",");
        write_u64(&mut buf, self.created_at);
        buf.push(b',');
        write_u64(&mut buf, u64::from(self.kind));
        buf.push(b',');
        write_tags(&mut buf, &self.tags);
        buf.push(b',');
        write_json_str(&mut buf, &self.content);
        buf.push(b']');
        buf
    }

    /// `{"id":..,"pubkey":..,"created_at":..,"kind":..,"tags":..,"content":..,"sig":..}`
    fn compact_json(&self) -> String {
        self.json(true)
    }

    /// `{"pubkey":..,"created_at":..,"kind":..,"tags":..,"content":..}`: the event
    /// unsigned, as a signer is handed it (NIP-07 `signEvent`).
    pub(crate) fn unsigned_json(&self) -> String {
        self.json(false)
    }

    fn json(&self, signed: bool) -> String {
        let mut buf = Vec::with_capacity(self.content.len() + 256);
        if signed {
            buf.extend_from_slice(b"{\"id\":\"");
            buf.extend_from_slice(self.id.as_bytes());
            buf.extend_from_slice(b"\",");
        } else {
            buf.push(b'{');
        }
        buf.extend_from_slice(b"\"pubkey\":\"");
        buf.extend_from_slice(self.pubkey.as_bytes());
        buf.extend_from_slice(b"\",\"created_at\":");
        write_u64(&mut buf, self.created_at);
        buf.extend_from_slice(b",\"kind\":");
        write_u64(&mut buf, u64::from(self.kind));
        buf.extend_from_slice(b",\"tags\":");
        write_tags(&mut buf, &self.tags);
        buf.extend_from_slice(b",\"content\":");
        write_json_str(&mut buf, &self.content);
        if signed {
            buf.extend_from_slice(b",\"sig\":\"");
            buf.extend_from_slice(self.sig.as_bytes());
            buf.push(b'"');
        }
        buf.push(b'}');
        String::from_utf8(buf).unwrap_or_default()
    }
}

/// An event's id, pubkey and sig: what checking its BIP-340 signature takes, apart
/// from the rest of the event (a batch keeps these, about 300 bytes each, while its
/// events are stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureCheck {
    id: String,
    pubkey: String,
    sig: String,
}

impl SignatureCheck {
    /// Checks the BIP-340 Schnorr signature of the id by the pubkey
    /// ([`Event::verify_signature`]).
    pub fn verify(&self) -> Result<(), EventError> {
        check_signature(&self.id, &self.pubkey, &self.sig)
    }

    /// [`SignatureCheck::first_bad`] of the items that have a signature to check (a
    /// draft has none), with the index among all of `checks`.
    pub fn first_bad_of(checks: &[Option<SignatureCheck>]) -> Option<(usize, EventError)> {
        let items: Vec<(usize, &SignatureCheck)> = checks
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Some((i, c.as_ref()?)))
            .collect();
        first_bad_among(&items)
    }

    /// Checks `checks` and answers the first (in order) that fails, with its index:
    /// what checking each alone, in order, would answer.
    ///
    /// Runs of [`BATCH_MIN`] or more are checked [`BATCH_SIZE`] at a time with
    /// BIP-340 batch verification (one equation per run, several times faster than one
    /// check per signature; see `batch.rs`). A run that fails is checked one by one to
    /// find which signature and why.
    pub fn first_bad(checks: &[SignatureCheck]) -> Option<(usize, EventError)> {
        let items: Vec<(usize, &SignatureCheck)> = checks.iter().enumerate().collect();
        first_bad_among(&items)
    }
}

/// [`SignatureCheck::first_bad`] of `(index, check)` items, answering the item's index:
/// one implementation for the signed items of a batch with drafts and without.
fn first_bad_among(items: &[(usize, &SignatureCheck)]) -> Option<(usize, EventError)> {
    for run in items.chunks(BATCH_SIZE) {
        let passed = run.len() >= BATCH_MIN
            && batch::all_verify(
                run.iter()
                    .map(|(_, c)| (c.id.as_str(), c.pubkey.as_str(), c.sig.as_str())),
            );
        if !passed {
            let bad = run.iter().find_map(|(i, c)| {
                check_signature(&c.id, &c.pubkey, &c.sig)
                    .err()
                    .map(|err| (*i, err))
            });
            if bad.is_some() {
                return bad;
            }
        }
    }
    None
}

/// The fewest signatures [`SignatureCheck::first_bad`] checks as one batch: below it,
/// one by one is as fast.
pub const BATCH_MIN: usize = 4;

/// The most signatures [`SignatureCheck::first_bad`] checks as one batch (the
/// memory a batch holds, and the work a bad signature makes it redo one by one).
pub const BATCH_SIZE: usize = 1024;

/// The BIP-340 Schnorr check of `sig` over the id by the pubkey (all hex); the keys it
/// has seen are kept lifted, and the most used get a table that makes their checks
/// about twice as fast (`schnorr.rs`).
fn check_signature(id: &str, pubkey: &str, sig: &str) -> Result<(), EventError> {
    let bad = |reason| EventError::BadSignature { reason };
    let id = lower_hex::<32>(id).ok_or(bad("cannot be checked: `id` is not hex"))?;
    let pubkey = lower_hex::<32>(pubkey).ok_or(bad("cannot be checked: `pubkey` is not hex"))?;
    let sig = lower_hex::<64>(sig).ok_or(bad("is not 128 lowercase hex characters"))?;
    schnorr::verify(&id, &pubkey, &sig).map_err(|failure| {
        bad(match failure {
            Failure::NotAPoint => "cannot be checked: `pubkey` is not a point on secp256k1",
            Failure::BadEncoding => "is not a valid BIP-340 signature encoding",
            Failure::DoesNotVerify => "does not verify for this id and pubkey",
        })
    })
}

/// Parses `text` as an event and checks its id and signature: a one-call entry for the
/// JavaScript layer and benchmarks. `false` on any problem.
pub fn verify_event_json(text: &str) -> bool {
    Event::parse_json(text).is_ok_and(|e| e.verify().is_ok())
}

/// The id and `created_at` of `theirs` (an event's JSON text, as a relay sent it) when
/// it is a newer version of the replaceable or addressable event `ours`: a valid
/// event (id and signature checked: a relay cannot make one up) in the same slot (author,
/// kind and, for an addressable kind, `d` tag) that replaces it by NIP-01's order (a
/// later `created_at`, or the same and a lower id). `None` otherwise, and for `ours` of
/// other kinds.
pub fn newer_version(ours: &EventEnvelope, theirs: &str) -> Option<(String, u64)> {
    let mine = ours.meta.as_ref()?;
    let slot = mine.slot()?;
    let event = Event::parse_json(theirs).ok()?;
    event.verify().ok()?;
    let theirs = event.to_envelope().meta?;
    (theirs.slot()? == slot
        && crate::core::semantics::is_newer(
            (theirs.created_at, event.id()),
            (mine.created_at, &ours.id),
        ))
    .then(|| (event.id().to_string(), theirs.created_at))
}

// ---------------------------------------------------------------------------
// Canonical serialization helpers
// ---------------------------------------------------------------------------

fn write_u64(buf: &mut Vec<u8>, mut n: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&tmp[i..]);
}

fn write_tags(buf: &mut Vec<u8>, tags: &[Vec<String>]) {
    buf.push(b'[');
    for (i, tag) in tags.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        buf.push(b'[');
        for (j, s) in tag.iter().enumerate() {
            if j > 0 {
                buf.push(b',');
            }
            write_json_str(buf, s);
        }
        buf.push(b']');
    }
    buf.push(b']');
}

/// Writes `s` as a JSON string exactly as `JSON.stringify` does (NIP-01): `\"`, `\\`,
/// `\b`, `\t`, `\n`, `\f`, `\r` as two-character escapes, other characters below
/// U+0020 as `\u00xx` (lowercase hex), everything else as raw UTF-8.
pub(crate) fn write_json_str(buf: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    buf.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => b"",
            _ => continue,
        };
        buf.extend_from_slice(&bytes[start..i]);
        if short.is_empty() {
            buf.extend_from_slice(b"\\u00");
            buf.push(HEX[(b >> 4) as usize]);
            buf.push(HEX[(b & 0x0f) as usize]);
        } else {
            buf.extend_from_slice(short);
        }
        start = i + 1;
    }
    buf.extend_from_slice(&bytes[start..]);
    buf.push(b'"');
}

/// True when `s` is exactly `len` lowercase hex characters: NIP-01's form of ids,
/// keys and signatures (the `hex` crate also reads uppercase, which is refused here).
pub(crate) fn is_lower_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Exactly `N` bytes from `2 * N` lowercase hex characters.
pub(super) fn lower_hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    (is_lower_hex(s, 2 * N) && hex::decode_to_slice(s, &mut out).is_ok()).then_some(out)
}

/// Plain decimal digits only (no sign, no spaces), fitting in u64.
fn parse_decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

// ---------------------------------------------------------------------------
// Strict field extraction
// ---------------------------------------------------------------------------

enum RawSource<'a> {
    /// Keep this text verbatim.
    Given(&'a str),
    /// Serialize the checked fields compactly.
    Canonical,
}

/// The seven NIP-01 fields as JSON values, before type checks.
#[derive(Default)]
struct Fields {
    id: Option<Value>,
    pubkey: Option<Value>,
    created_at: Option<Value>,
    kind: Option<Value>,
    tags: Option<Value>,
    content: Option<Value>,
    sig: Option<Value>,
    duplicate: Option<&'static str>,
}

impl Fields {
    fn slot(&mut self, key: Key) -> Option<(&'static str, &mut Option<Value>)> {
        Some(match key {
            Key::Id => ("id", &mut self.id),
            Key::Pubkey => ("pubkey", &mut self.pubkey),
            Key::CreatedAt => ("created_at", &mut self.created_at),
            Key::Kind => ("kind", &mut self.kind),
            Key::Tags => ("tags", &mut self.tags),
            Key::Content => ("content", &mut self.content),
            Key::Sig => ("sig", &mut self.sig),
            Key::Other => return None,
        })
    }

    fn into_event(self, raw: RawSource<'_>) -> Result<Event, EventError> {
        if let Some(field) = self.duplicate {
            return Err(EventError::Duplicate { field });
        }
        // Every field is read and the first error (in this order) is answered at the
        // end: one exit instead of one per field, each dropping the fields read so far.
        let mut first = None;
        let id = keep(&mut first, take_hex("id", self.id, 64));
        let pubkey = keep(&mut first, take_hex("pubkey", self.pubkey, 64));
        let created_at = keep(&mut first, take_created_at(self.created_at));
        let kind = keep(&mut first, take_kind(self.kind));
        let tags = keep(&mut first, take_tags(self.tags));
        let content = keep(&mut first, take_string("content", self.content));
        let sig = keep(&mut first, take_hex("sig", self.sig, 128));
        if let Some(error) = first {
            return Err(error);
        }
        let mut event = Event {
            id,
            pubkey,
            created_at,
            kind,
            tags,
            content,
            sig,
            raw: String::new(),
        };
        event.raw = match raw {
            RawSource::Given(text) => text.to_owned(),
            RawSource::Canonical => event.compact_json(),
        };
        Ok(event)
    }
}

/// The value of `result`, or a placeholder after noting its error in `first` (unless
/// an error was noted before).
fn keep<T: Default>(first: &mut Option<EventError>, result: Result<T, EventError>) -> T {
    result.unwrap_or_else(|e| {
        first.get_or_insert(e);
        T::default()
    })
}

fn take_string(field: &'static str, v: Option<Value>) -> Result<String, EventError> {
    match v {
        None => Err(EventError::Missing { field }),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(EventError::WrongType {
            field,
            at: String::new(),
            expected: "a string",
            found: type_name(&other),
        }),
    }
}

fn check_hex(field: &'static str, s: &str, len: usize) -> Result<(), EventError> {
    if is_lower_hex(s, len) {
        Ok(())
    } else {
        let why = if s.len() != len {
            format!("has {} characters", s.chars().count())
        } else {
            "has a character that is not 0-9 or a-f".to_owned()
        };
        Err(EventError::BadValue {
            field,
            reason: format!("must be {len} lowercase hex characters ({why})"),
        })
    }
}

fn take_hex(field: &'static str, v: Option<Value>, len: usize) -> Result<String, EventError> {
    let s = take_string(field, v)?;
    check_hex(field, &s, len)?;
    Ok(s)
}

fn check_created_at_range(n: u64) -> Result<(), EventError> {
    if n <= MAX_CREATED_AT {
        Ok(())
    } else {
        Err(EventError::BadValue {
            field: "created_at",
            reason: format!("must be at most 2^53-1 (got {n})"),
        })
    }
}

fn take_created_at(v: Option<Value>) -> Result<u64, EventError> {
    const FIELD: &str = "created_at";
    match v {
        None => Err(EventError::Missing { field: FIELD }),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(u) => {
                check_created_at_range(u)?;
                Ok(u)
            }
            None => Err(EventError::BadValue {
                field: FIELD,
                reason: format!("must be a non-negative integer (got {n})"),
            }),
        },
        Some(other) => Err(EventError::WrongType {
            field: FIELD,
            at: String::new(),
            expected: "an integer",
            found: type_name(&other),
        }),
    }
}

fn take_kind(v: Option<Value>) -> Result<u16, EventError> {
    const FIELD: &str = "kind";
    match v {
        None => Err(EventError::Missing { field: FIELD }),
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|u| u16::try_from(u).ok())
            .ok_or_else(|| EventError::BadValue {
                field: FIELD,
                reason: format!("must be an integer in 0..=65535 (got {n})"),
            }),
        Some(other) => Err(EventError::WrongType {
            field: FIELD,
            at: String::new(),
            expected: "an integer",
            found: type_name(&other),
        }),
    }
}

fn take_tags(v: Option<Value>) -> Result<Vec<Vec<String>>, EventError> {
    const FIELD: &str = "tags";
    let wrong = |at: String, expected, found| EventError::WrongType {
        field: FIELD,
        at,
        expected,
        found,
    };
    let outer = match v {
        None => return Err(EventError::Missing { field: FIELD }),
        Some(Value::Array(a)) => a,
        Some(other) => return Err(wrong(String::new(), "an array", type_name(&other))),
    };
    let mut tags = Vec::with_capacity(outer.len());
    for (i, tag) in outer.into_iter().enumerate() {
        let inner = match tag {
            Value::Array(a) => a,
            other => return Err(wrong(format!("[{i}]"), "an array", type_name(&other))),
        };
        let mut strings = Vec::with_capacity(inner.len());
        for (j, item) in inner.into_iter().enumerate() {
            match item {
                Value::String(s) => strings.push(s),
                other => {
                    return Err(wrong(format!("[{i}][{j}]"), "a string", type_name(&other)));
                }
            }
        }
        tags.push(strings);
    }
    Ok(tags)
}

/// The top-level JSON value of an event text: its NIP-01 fields when it is an object,
/// else the name of its type. Read in one pass by `serde_json`, so a field given twice
/// is seen (a map would keep one copy).
enum Top {
    Object(Box<Fields>),
    Other(&'static str),
}

impl<'de> Deserialize<'de> for Top {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Top, D::Error> {
        d.deserialize_any(TopVisitor)
    }
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Top;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    /// The NIP-01 fields among the members, in document order: the first known field
    /// that repeats is remembered as the duplicate.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
        let mut fields = Fields::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match fields.slot(key) {
                Some((name, slot)) => {
                    let value: Value = map.next_value()?;
                    if slot.is_some() {
                        fields.duplicate.get_or_insert(name);
                    } else {
                        *slot = Some(value);
                    }
                }
                // Read as a value (not skipped) so that it meets the same limits as
                // the rest: nesting, numbers in `f64` range.
                None => {
                    map.next_value::<Value>()?;
                }
            }
        }
        Ok(Top::Object(Box::new(fields)))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Top, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Top::Other("an array"))
    }

    fn visit_unit<E>(self) -> Result<Top, E> {
        Ok(Top::Other("null"))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Top, E> {
        Ok(Top::Other("a boolean"))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Top, E> {
        Ok(Top::Other("a number"))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Top, E> {
        Ok(Top::Other("a number"))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Top, E> {
        Ok(Top::Other("a number"))
    }

    fn visit_str<E>(self, _: &str) -> Result<Top, E> {
        Ok(Top::Other("a string"))
    }
}

/// Reads a member name straight into a [`Key`], without keeping the name.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, name: &str) -> Result<Key, E> {
        Ok(Key::of(name))
    }
}

/// The JSON type of `v`, for messages.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A member name: one of the seven NIP-01 fields, or another.
enum Key {
    Id,
    Pubkey,
    CreatedAt,
    Kind,
    Tags,
    Content,
    Sig,
    Other,
}

impl Key {
    fn of(name: &str) -> Key {
        match name {
            "id" => Key::Id,
            "pubkey" => Key::Pubkey,
            "created_at" => Key::CreatedAt,
            "kind" => Key::Kind,
            "tags" => Key::Tags,
            "content" => Key::Content,
            "sig" => Key::Sig,
            _ => Key::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &str) -> String {
        let mut b = Vec::new();
        write_json_str(&mut b, s);
        String::from_utf8(b).unwrap()
    }

    #[test]
    fn the_first_bad_field_in_order_is_reported() {
        // Every field bad, then fixed one by one: the error names the first bad one.
        let good = [
            ("id", format!("\"{}\"", "a".repeat(64))),
            ("pubkey", format!("\"{}\"", "b".repeat(64))),
            ("created_at", "1".to_string()),
            ("kind", "1".to_string()),
            ("tags", "[]".to_string()),
            ("content", "\"\"".to_string()),
            ("sig", format!("\"{}\"", "c".repeat(128))),
        ];
        let bad = ["\"x\"", "1", "-1", "70000", "[1]", "2", "\"C\""];
        for fixed in 0..good.len() {
            let members: Vec<String> = good
                .iter()
                .zip(bad)
                .enumerate()
                .map(|(i, ((k, g), b))| format!("\"{k}\":{}", if i < fixed { g } else { b }))
                .collect();
            let text = format!("{{{}}}", members.join(","));
            let err = Event::parse_json(&text).unwrap_err();
            assert_eq!(err.field(), Some(good[fixed].0), "{text}: {err}");
        }
    }

    #[test]
    fn escaping_matches_json_stringify() {
        assert_eq!(esc("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(esc("\n\r\t\u{8}\u{c}"), r#""\n\r\t\b\f""#);
        assert_eq!(esc("\u{0}\u{1}\u{1f}"), r#""\u0000\u0001\u001f""#);
        assert_eq!(esc("\u{7f}\u{2028}é😀/"), "\"\u{7f}\u{2028}é😀/\"");
        assert_eq!(esc(""), "\"\"");
    }

    #[test]
    fn integers() {
        for n in [0u64, 1, 9, 10, 65535, 1_700_000_000, u64::MAX] {
            let mut b = Vec::new();
            write_u64(&mut b, n);
            assert_eq!(String::from_utf8(b).unwrap(), n.to_string());
        }
    }

    #[test]
    fn decimal_expiration() {
        assert_eq!(parse_decimal("1700000000"), Some(1_700_000_000));
        assert_eq!(parse_decimal("+1"), None);
        assert_eq!(parse_decimal(" 1"), None);
        assert_eq!(parse_decimal(""), None);
        assert_eq!(parse_decimal("99999999999999999999999"), None);
    }
}
