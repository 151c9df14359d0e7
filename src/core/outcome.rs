//! What one relay answered to one publish of one event: the typed outcome that
//! evidence records. Shared by the Nostr layer (which classifies relay `OK` messages)
//! and the state machine (which decides retries from it).
//!
//! [`Outcome`]'s `Deserialize` (and [`Policy`](super::Policy)'s) is written by hand
//! rather than derived: the derived adjacently (and internally) tagged enums buffer
//! their content in serde's private `Content` type; written by hand, with
//! `serde_json::Value` holding what must wait for the tag, they were 5 226 B smaller in
//! the browser build's gzipped wasm. The `.wasm` no longer reads records through serde's
//! `Deserialize` at all (`store::doc` reads them from a `serde_json::Value`, about 15 KB
//! smaller again); these readers remain the reference [`Record`](super::Record)'s derive
//! is tested against there, and accept exactly the JSON the derives accepted, with the
//! same error messages (line and column included): `tests` compare the two over every
//! document of up to three entries built from the relevant keys and values.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

/// Why a relay refused an event with `OK false` and a terminal prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum RejectReason {
    /// `blocked:` — the relay will not take events from this author or of this kind.
    Blocked,
    /// `invalid:` — the relay judged the event malformed.
    Invalid,
    /// `restricted:` — the relay only accepts writes from allowed users.
    Restricted,
    /// `pow:` — the event lacks the proof of work the relay requires.
    Pow,
    /// `mute:` — the relay silently drops this event.
    Mute,
    /// `OK false` with no known prefix.
    Other,
    /// Not sent: the relay holds a newer version of this replaceable or addressable
    /// event, found by the outbox's check before sending ([`super::StopReason::RemoteNewer`]).
    /// Never made from a relay's words.
    Newer,
    /// Not sent: the relay's NIP-11 information document states a limit the signed
    /// event can never meet (message too long, too many tags, content too long, too
    /// little proof of work, `created_at` too old); the evidence message says which.
    /// Never made from a relay's words.
    Limit,
}

impl RejectReason {
    /// Every reason, in declaration order.
    pub const ALL: [RejectReason; 8] = [
        RejectReason::Blocked,
        RejectReason::Invalid,
        RejectReason::Restricted,
        RejectReason::Pow,
        RejectReason::Mute,
        RejectReason::Other,
        RejectReason::Newer,
        RejectReason::Limit,
    ];

    /// The stable string used in JSON and JavaScript.
    pub fn as_str(self) -> &'static str {
        match self {
            RejectReason::Blocked => "blocked",
            RejectReason::Invalid => "invalid",
            RejectReason::Restricted => "restricted",
            RejectReason::Pow => "pow",
            RejectReason::Mute => "mute",
            RejectReason::Other => "other",
            RejectReason::Newer => "newer",
            RejectReason::Limit => "limit",
        }
    }
}

/// The typed result of publishing one event to one relay once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind", content = "reason")]
pub enum Outcome {
    /// `OK true`: the relay stored the event.
    Accepted,
    /// `OK true` with `duplicate:`: the relay already had it. Counts as accepted.
    Duplicate,
    /// `OK false` with a terminal prefix: retrying will not help.
    Rejected(RejectReason),
    /// `OK false` with `rate-limited:`: retry later, slower.
    RateLimited,
    /// `OK false` with `auth-required:`: retry once authenticated (NIP-42).
    AuthRequired,
    /// `OK false` with `error:`: a relay-side failure; retry later.
    Error,
    /// No `OK` arrived within the publish timeout.
    Timeout,
    /// The relay could not be reached, or the connection closed before its `OK`.
    Unreachable,
    /// The target was not attempted in this attempt (e.g. the attempt was cut short).
    NotAttempted,
}

impl Outcome {
    /// True when the relay has the event (`Accepted` or `Duplicate`).
    pub fn is_accepted(self) -> bool {
        matches!(self, Outcome::Accepted | Outcome::Duplicate)
    }

    /// True when the relay refused the event for good.
    pub fn is_terminal_rejection(self) -> bool {
        matches!(self, Outcome::Rejected(_))
    }

    /// True when the target is settled: accepted, or rejected for good. A settled
    /// target is never sent the event again by the same record.
    pub fn is_settled(self) -> bool {
        self.is_accepted() || self.is_terminal_rejection()
    }

    /// True when a later attempt may succeed.
    pub fn is_retryable(self) -> bool {
        !self.is_settled()
    }

    /// The stable string used in JSON and JavaScript (`"rejected"` for every reason).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Duplicate => "duplicate",
            Outcome::Rejected(_) => "rejected",
            Outcome::RateLimited => "rateLimited",
            Outcome::AuthRequired => "authRequired",
            Outcome::Error => "error",
            Outcome::Timeout => "timeout",
            Outcome::Unreachable => "unreachable",
            Outcome::NotAttempted => "notAttempted",
        }
    }
}

/// The `kind` of each variant, in declaration order.
const VARIANTS: &[&str] = &[
    "accepted",
    "duplicate",
    "rejected",
    "rateLimited",
    "authRequired",
    "error",
    "timeout",
    "unreachable",
    "notAttempted",
];

/// The index of [`Outcome::Rejected`] in [`VARIANTS`], the one variant with a `reason`.
const REJECTED: usize = 2;

/// One key of a tagged enum's map: its index in the names given, or their count for
/// any other key.
pub(super) struct Key(pub(super) &'static [&'static str]);

impl<'de> DeserializeSeed<'de> for Key {
    type Value = usize;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl Visitor<'_> for Key {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("field identifier")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<usize, E> {
        self.visit_bytes(key.as_bytes())
    }
    fn visit_bytes<E: de::Error>(self, key: &[u8]) -> Result<usize, E> {
        let names = self.0;
        Ok(names
            .iter()
            .position(|n| n.as_bytes() == key)
            .unwrap_or(names.len()))
    }
}

/// A variant name among the names given, as its index: what serde's derived
/// `variant identifier` accepts, with its error for an unknown name.
pub(super) struct Variant(pub(super) &'static [&'static str]);

impl<'de> DeserializeSeed<'de> for Variant {
    type Value = usize;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl Visitor<'_> for Variant {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("variant identifier")
    }
    fn visit_str<E: de::Error>(self, name: &str) -> Result<usize, E> {
        let names = self.0;
        names
            .iter()
            .position(|n| *n == name)
            .ok_or_else(|| E::unknown_variant(name, names))
    }
    fn visit_bytes<E: de::Error>(self, name: &[u8]) -> Result<usize, E> {
        self.visit_str(&String::from_utf8_lossy(name))
    }
}

/// A variant of a unit-only enum as its index, read as serde's derive reads one: a
/// name (`"blocked"`), or in JSON also a map of the name to `null` (`{"blocked": null}`).
/// One reader for every such enum instead of one derive each: with [`RejectReason`] and
/// [`Satisfaction`](super::Satisfaction), 490 B less gzipped wasm in the browser build
/// and 405 B in the edge build, when the `.wasm` still read records through serde.
pub(super) struct UnitVariant {
    /// What the derive's visitor expected (`enum RejectReason`).
    pub(super) expecting: &'static str,
    /// The enum's name.
    pub(super) name: &'static str,
    /// Its variants' names, in declaration order.
    pub(super) variants: &'static [&'static str],
}

impl<'de> DeserializeSeed<'de> for UnitVariant {
    type Value = usize;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_enum(self.name, self.variants, self)
    }
}

impl<'de> Visitor<'de> for UnitVariant {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<usize, A::Error> {
        let (index, access) = data.variant_seed(Variant(self.variants))?;
        de::VariantAccess::unit_variant(access)?;
        Ok(index)
    }
}

/// The `kind` of an outcome in its map form: read as an enum, as the derive read it
/// (`"kind": "accepted"`, and also `"kind": {"accepted": null}`).
const KIND: UnitVariant = UnitVariant {
    expecting: "variant of enum Outcome",
    name: "Outcome",
    variants: VARIANTS,
};

impl<'de> Deserialize<'de> for RejectReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RejectReason, D::Error> {
        let index = UnitVariant {
            expecting: "enum RejectReason",
            name: "RejectReason",
            variants: &[
                "blocked",
                "invalid",
                "restricted",
                "pow",
                "mute",
                "other",
                "newer",
                "limit",
            ],
        }
        .deserialize(d)?;
        Ok(RejectReason::ALL[index])
    }
}

/// The `reason` of the variant at this index: a [`RejectReason`] for `rejected`,
/// `null` for the others.
struct Reason(usize);

impl<'de> DeserializeSeed<'de> for Reason {
    type Value = Outcome;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Outcome, D::Error> {
        if self.0 == REJECTED {
            RejectReason::deserialize(d).map(Outcome::Rejected)
        } else {
            d.deserialize_any(self)
        }
    }
}

impl Visitor<'_> for Reason {
    type Value = Outcome;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The Rust name: the `kind` with a capital letter.
        let kind = VARIANTS[self.0];
        write!(
            f,
            "unit variant Outcome::{}{}",
            kind[..1].to_ascii_uppercase(),
            &kind[1..]
        )
    }
    fn visit_unit<E: de::Error>(self) -> Result<Outcome, E> {
        Ok(unit(self.0))
    }
    fn visit_none<E: de::Error>(self) -> Result<Outcome, E> {
        Ok(unit(self.0))
    }
}

/// The variant without a reason at this index (never [`REJECTED`]).
fn unit(index: usize) -> Outcome {
    match index {
        0 => Outcome::Accepted,
        1 => Outcome::Duplicate,
        3 => Outcome::RateLimited,
        4 => Outcome::AuthRequired,
        5 => Outcome::Error,
        6 => Outcome::Timeout,
        7 => Outcome::Unreachable,
        _ => Outcome::NotAttempted,
    }
}

/// Reads `{"kind": …, "reason": …}` (in either order, other keys ignored) or
/// `[kind, reason]`: serde's adjacently tagged form, step for step.
struct OutcomeVisitor;

/// The next `kind` (0) or `reason` (1) key, skipping others; `None` at the end.
fn next_key<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<usize>, A::Error> {
    while let Some(key) = map.next_key_seed(Key(&["kind", "reason"]))? {
        if key < 2 {
            return Ok(Some(key));
        }
        map.next_value::<IgnoredAny>()?;
    }
    Ok(None)
}

/// `outcome` when no `kind` or `reason` key follows.
fn end<'de, A: MapAccess<'de>>(map: &mut A, outcome: Outcome) -> Result<Outcome, A::Error> {
    match next_key(map)? {
        Some(0) => Err(de::Error::duplicate_field("kind")),
        Some(_) => Err(de::Error::duplicate_field("reason")),
        None => Ok(outcome),
    }
}

impl<'de> Visitor<'de> for OutcomeVisitor {
    type Value = Outcome;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("adjacently tagged enum Outcome")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Outcome, A::Error> {
        match next_key(&mut map)? {
            Some(0) => {
                let kind = map.next_value_seed(KIND)?;
                match next_key(&mut map)? {
                    Some(0) => Err(de::Error::duplicate_field("kind")),
                    Some(_) => {
                        let outcome = map.next_value_seed(Reason(kind))?;
                        end(&mut map, outcome)
                    }
                    None if kind == REJECTED => Err(de::Error::missing_field("reason")),
                    None => Ok(unit(kind)),
                }
            }
            Some(_) => {
                let reason = map.next_value::<serde_json::Value>()?;
                match next_key(&mut map)? {
                    Some(0) => {
                        let kind = map.next_value_seed(KIND)?;
                        let outcome = Reason(kind)
                            .deserialize(reason)
                            .map_err(de::Error::custom)?;
                        end(&mut map, outcome)
                    }
                    Some(_) => Err(de::Error::duplicate_field("reason")),
                    None => Err(de::Error::missing_field("kind")),
                }
            }
            None => Err(de::Error::missing_field("kind")),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Outcome, A::Error> {
        let Some(kind) = seq.next_element_seed(Variant(VARIANTS))? else {
            return Err(de::Error::invalid_length(0, &self));
        };
        match seq.next_element_seed(Reason(kind))? {
            Some(outcome) => Ok(outcome),
            None => Err(de::Error::invalid_length(1, &self)),
        }
    }
}

impl<'de> Deserialize<'de> for Outcome {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Outcome, D::Error> {
        d.deserialize_struct("Outcome", &["kind", "reason"], OutcomeVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settled_and_retryable_partition_outcomes() {
        let all = [
            Outcome::Accepted,
            Outcome::Duplicate,
            Outcome::Rejected(RejectReason::Blocked),
            Outcome::RateLimited,
            Outcome::AuthRequired,
            Outcome::Error,
            Outcome::Timeout,
            Outcome::Unreachable,
            Outcome::NotAttempted,
        ];
        for o in all {
            assert_ne!(o.is_settled(), o.is_retryable(), "{o:?}");
        }
        assert!(Outcome::Duplicate.is_accepted());
        assert!(!Outcome::RateLimited.is_settled());
    }

    /// The derive the hand-written `Deserialize` replaced, kept to compare against
    /// (named `Outcome` too: the name is in its messages).
    mod derived {
        #[derive(Debug, serde::Deserialize)]
        #[serde(rename_all = "camelCase", tag = "kind", content = "reason")]
        pub enum Outcome {
            Accepted,
            Duplicate,
            Rejected(RejectReason),
            RateLimited,
            AuthRequired,
            Error,
            Timeout,
            Unreachable,
            NotAttempted,
        }

        #[derive(Debug, Clone, Copy, serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub enum RejectReason {
            Blocked,
            Invalid,
            Restricted,
            Pow,
            Mute,
            Other,
            Newer,
            Limit,
        }

        impl RejectReason {
            pub fn index(self) -> usize {
                self as usize
            }
        }
    }
    use derived::Outcome as Derived;

    impl From<Derived> for Outcome {
        fn from(d: Derived) -> Outcome {
            match d {
                Derived::Accepted => Outcome::Accepted,
                Derived::Duplicate => Outcome::Duplicate,
                Derived::Rejected(r) => Outcome::Rejected(RejectReason::ALL[r.index()]),
                Derived::RateLimited => Outcome::RateLimited,
                Derived::AuthRequired => Outcome::AuthRequired,
                Derived::Error => Outcome::Error,
                Derived::Timeout => Outcome::Timeout,
                Derived::Unreachable => Outcome::Unreachable,
                Derived::NotAttempted => Outcome::NotAttempted,
            }
        }
    }

    fn same(text: &str) {
        crate::core::derive_check::same_as_derived::<Outcome, Derived>(text);
    }

    #[test]
    fn reads_exactly_what_the_derive_read() {
        let values = [
            r#""accepted""#,
            r#""rejected""#,
            r#""rateLimited""#,
            r#""notAttempted""#,
            r#""blocked""#,
            r#""other""#,
            r#""most""#,
            r#""Blocked""#,
            "null",
            "1",
            "{}",
            "[]",
            r#"{"accepted":null}"#,
            r#"{"rejected":null}"#,
            r#"{"pow":null}"#,
            r#"{"mute":1}"#,
        ];
        let keys = ["kind", "reason", "x"];
        let mut docs = crate::core::derive_check::documents(&keys, &values);
        docs.extend(
            [
                r#"{"kind":"accepted","#,
                r#"{"reason":"pow","kind":"rejected""#,
                r#"{"kind":"re\u006aected","re\u0061son":"mute"}"#,
            ]
            .map(String::from),
        );
        for doc in &docs {
            same(doc);
        }
        for o in RejectReason::ALL.map(Outcome::Rejected).into_iter().chain([
            Outcome::Accepted,
            Outcome::NotAttempted,
            Outcome::RateLimited,
        ]) {
            let text = serde_json::to_string(&o).expect("json");
            assert_eq!(serde_json::from_str::<Outcome>(&text).expect("reads"), o);
        }
    }
}
