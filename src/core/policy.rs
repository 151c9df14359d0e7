//! Satisfaction policies (`all`, `any`, `atLeast(k)`, `required`) and their
//! evaluation over the settled state of each target. Pure and total: it reads the
//! per-target state and decides satisfied / pending / exhausted, nothing else.
//!
//! [`Policy`]'s `Deserialize` is written by hand, like [`Outcome`](super::Outcome)'s
//! (whose module comment has the measured saving): the derived internally tagged enum
//! buffered every document through serde's private `Content` type.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::CoreError;
use super::outcome::{Key, UnitVariant, Variant};

/// When a record counts as delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Policy {
    /// Every target must accept.
    All,
    /// One target accepting is enough.
    Any,
    /// At least `k` targets must accept (`1 <= k <= targets`).
    #[serde(rename_all = "camelCase")]
    AtLeast {
        /// How many acceptances are needed.
        k: u32,
    },
    /// Every relay in `relays` (a non-empty subset of the targets) must accept; the other
    /// targets are attempted best effort and do not affect satisfaction.
    #[serde(rename_all = "camelCase")]
    Required {
        /// The relays that must accept.
        relays: Vec<String>,
    },
}

/// What the evidence says about a record as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Satisfaction {
    /// The policy is met.
    Satisfied,
    /// Not met yet, but enough targets are still open for it to be met.
    Pending,
    /// Terminal rejections make the policy impossible to meet.
    Exhausted,
}

/// The settled state of one target, derived from its latest evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetState {
    /// Not attempted yet, or its latest outcome is retryable.
    Open,
    /// Its latest outcome is `accepted` or `duplicate`. Never sent the event again.
    Accepted,
    /// Its latest outcome is a terminal rejection. Not retried (until an explicit `retry`).
    Rejected,
}

impl Policy {
    /// Checks the policy against a normalized (sorted, de-duplicated) target set and
    /// returns it normalized (`required` relays sorted and de-duplicated).
    pub fn normalized(&self, targets: &[String]) -> Result<Policy, CoreError> {
        let invalid = |reason: String| CoreError::InvalidPolicy { reason };
        match self {
            Policy::All | Policy::Any => Ok(self.clone()),
            Policy::AtLeast { k } => {
                if *k == 0 || *k as usize > targets.len() {
                    return Err(invalid(format!(
                        "atLeast needs 1 <= k <= {} (the number of targets), got {k}",
                        targets.len()
                    )));
                }
                Ok(self.clone())
            }
            Policy::Required { relays } => {
                if relays.is_empty() {
                    return Err(invalid("required needs at least one relay".into()));
                }
                let mut sorted = relays.clone();
                super::order::sort_dedup(&mut sorted);
                if let Some(missing) = sorted.iter().find(|r| targets.binary_search(r).is_err()) {
                    return Err(invalid(format!(
                        "required relay `{missing}` is not one of the targets"
                    )));
                }
                Ok(Policy::Required { relays: sorted })
            }
        }
    }

    /// Evaluates the policy over `(target, state)` pairs covering every target once.
    pub fn evaluate<'a>(
        &self,
        states: impl IntoIterator<Item = (&'a str, TargetState)>,
    ) -> Satisfaction {
        let (mut accepted, mut open, mut total) = (0usize, 0usize, 0usize);
        let mut required_open = false;
        let mut required_rejected = false;
        let mut required_all_accepted = true;
        for (target, state) in states {
            total += 1;
            match state {
                TargetState::Accepted => accepted += 1,
                TargetState::Open => open += 1,
                TargetState::Rejected => {}
            }
            if let Policy::Required { relays } = self {
                if relays.iter().any(|r| r == target) {
                    match state {
                        TargetState::Accepted => {}
                        TargetState::Open => {
                            required_open = true;
                            required_all_accepted = false;
                        }
                        TargetState::Rejected => {
                            required_rejected = true;
                            required_all_accepted = false;
                        }
                    }
                }
            }
        }
        let need = match self {
            Policy::All => total,
            Policy::Any => 1,
            Policy::AtLeast { k } => *k as usize,
            Policy::Required { .. } => {
                return if required_rejected {
                    Satisfaction::Exhausted
                } else if required_all_accepted && !required_open {
                    Satisfaction::Satisfied
                } else {
                    Satisfaction::Pending
                };
            }
        };
        if accepted >= need {
            Satisfaction::Satisfied
        } else if accepted + open < need {
            Satisfaction::Exhausted
        } else {
            Satisfaction::Pending
        }
    }

    /// The stable name used in JSON and JavaScript.
    pub fn kind(&self) -> &'static str {
        match self {
            Policy::All => "all",
            Policy::Any => "any",
            Policy::AtLeast { .. } => "atLeast",
            Policy::Required { .. } => "required",
        }
    }
}

impl<'de> Deserialize<'de> for Satisfaction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Satisfaction, D::Error> {
        let index = UnitVariant {
            expecting: "enum Satisfaction",
            name: "Satisfaction",
            variants: &["satisfied", "pending", "exhausted"],
        }
        .deserialize(d)?;
        Ok([
            Satisfaction::Satisfied,
            Satisfaction::Pending,
            Satisfaction::Exhausted,
        ][index])
    }
}

/// The `kind` of each variant, in declaration order.
const VARIANTS: &[&str] = &["all", "any", "atLeast", "required"];

/// The one field of `atLeast` (index 2) and of `required` (index 3).
const FIELDS: [&str; 2] = ["k", "relays"];

/// Reads serde's internally tagged form as the derive did: a map with a `kind` key
/// anywhere among the fields (other keys ignored), or `[kind, fields…]`. The fields
/// are kept as JSON values until the `kind` is known ([`Parts`]), then read as the
/// variant's once the deserializer is done (where the derive read its buffered content,
/// so that serde_json gives errors the same position).
struct PolicyVisitor;

/// A policy as read, before its fields are.
struct Parts {
    /// The index of its `kind` in [`VARIANTS`].
    kind: usize,
    /// The first value of its variant's field, if any.
    value: Option<Value>,
    /// Map form: whether the field came again.
    more: bool,
    /// Sequence form: how many elements followed the `kind`.
    seq_len: Option<usize>,
}

impl Parts {
    /// The policy: the derive's errors, in its order (a missing field, the value's, then
    /// a duplicate field or extra elements).
    fn policy<E: de::Error>(self) -> Result<Policy, E> {
        let Parts {
            kind,
            value,
            more,
            seq_len,
        } = self;
        let policy = match kind {
            0 => Policy::All,
            1 => Policy::Any,
            _ => {
                let name = FIELDS[kind - 2];
                let Some(value) = value else {
                    return Err(match seq_len {
                        Some(_) if kind == 2 => {
                            E::invalid_length(0, &"struct variant Policy::AtLeast with 1 element")
                        }
                        Some(_) => {
                            E::invalid_length(0, &"struct variant Policy::Required with 1 element")
                        }
                        None => E::missing_field(name),
                    });
                };
                let policy = if kind == 2 {
                    Policy::AtLeast {
                        k: u32::deserialize(value).map_err(E::custom)?,
                    }
                } else {
                    Policy::Required {
                        relays: Vec::deserialize(value).map_err(E::custom)?,
                    }
                };
                if more && seq_len.is_none() {
                    return Err(E::duplicate_field(name));
                }
                policy
            }
        };
        // A unit variant takes no more elements, a struct variant exactly one.
        let want = usize::from(kind >= 2);
        match seq_len {
            Some(len) if len > want => Err(E::invalid_length(
                len,
                &if want == 1 {
                    "1 element in sequence"
                } else {
                    "0 elements in sequence"
                },
            )),
            _ => Ok(policy),
        }
    }
}

impl<'de> Visitor<'de> for PolicyVisitor {
    type Value = Parts;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("internally tagged enum Policy")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Parts, A::Error> {
        let mut kind = None;
        // The first value of `k` and of `relays`, and whether either came again.
        let mut values: [Option<Value>; 2] = [None, None];
        let mut more = [false; 2];
        while let Some(key) = map.next_key_seed(Key(&["kind", "k", "relays"]))? {
            match key {
                0 if kind.is_some() => return Err(de::Error::duplicate_field("kind")),
                0 => kind = Some(map.next_value_seed(Variant(VARIANTS))?),
                1 | 2 => {
                    let value = map.next_value::<Value>()?;
                    let i = key - 1;
                    more[i] |= values[i].is_some();
                    values[i].get_or_insert(value);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let kind = kind.ok_or_else(|| de::Error::missing_field("kind"))?;
        let field = kind.saturating_sub(2).min(1);
        Ok(Parts {
            kind,
            value: values[field].take(),
            more: more[field],
            seq_len: None,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Parts, A::Error> {
        let kind = seq
            .next_element_seed(Variant(VARIANTS))?
            .ok_or_else(|| de::Error::missing_field("kind"))?;
        let (mut value, mut len) = (None, 0);
        while let Some(element) = seq.next_element::<Value>()? {
            value.get_or_insert(element);
            len += 1;
        }
        Ok(Parts {
            kind,
            value,
            more: false,
            seq_len: Some(len),
        })
    }
}

impl<'de> Deserialize<'de> for Policy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Policy, D::Error> {
        d.deserialize_any(PolicyVisitor)?.policy()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TargetState::*;

    fn eval(p: &Policy, states: &[(&'static str, TargetState)]) -> Satisfaction {
        p.evaluate(states.iter().copied())
    }

    #[test]
    fn all_any_at_least() {
        let s = [("a", Accepted), ("b", Open), ("c", Rejected)];
        assert_eq!(eval(&Policy::All, &s), Satisfaction::Exhausted);
        assert_eq!(eval(&Policy::Any, &s), Satisfaction::Satisfied);
        assert_eq!(eval(&Policy::AtLeast { k: 2 }, &s), Satisfaction::Pending);
        assert_eq!(eval(&Policy::AtLeast { k: 3 }, &s), Satisfaction::Exhausted);
        let none = [("a", Open), ("b", Open)];
        assert_eq!(eval(&Policy::All, &none), Satisfaction::Pending);
        assert_eq!(eval(&Policy::Any, &none), Satisfaction::Pending);
        let rejected = [("a", Rejected), ("b", Rejected)];
        assert_eq!(eval(&Policy::Any, &rejected), Satisfaction::Exhausted);
        let ok = [("a", Accepted), ("b", Accepted)];
        assert_eq!(eval(&Policy::All, &ok), Satisfaction::Satisfied);
    }

    #[test]
    fn required_ignores_best_effort_targets() {
        let p = Policy::Required {
            relays: vec!["a".into()],
        };
        assert_eq!(
            eval(&p, &[("a", Accepted), ("b", Rejected)]),
            Satisfaction::Satisfied
        );
        assert_eq!(
            eval(&p, &[("a", Open), ("b", Accepted)]),
            Satisfaction::Pending
        );
        assert_eq!(
            eval(&p, &[("a", Rejected), ("b", Accepted)]),
            Satisfaction::Exhausted
        );
    }

    #[test]
    fn normalization_checks_policy_against_targets() {
        let t = vec!["a".to_string(), "b".to_string()];
        assert!(Policy::AtLeast { k: 0 }.normalized(&t).is_err());
        assert!(Policy::AtLeast { k: 3 }.normalized(&t).is_err());
        assert!(Policy::AtLeast { k: 2 }.normalized(&t).is_ok());
        assert!(Policy::Required { relays: vec![] }.normalized(&t).is_err());
        assert_eq!(
            Policy::Required {
                relays: vec!["x".into()]
            }
            .normalized(&t)
            .unwrap_err()
            .code(),
            "invalid_policy"
        );
        assert_eq!(
            Policy::Required {
                relays: vec!["b".into(), "a".into(), "b".into()]
            }
            .normalized(&t)
            .unwrap(),
            Policy::Required {
                relays: vec!["a".into(), "b".into()]
            }
        );
    }

    /// The derive the hand-written `Deserialize` replaced, kept to compare against
    /// (named `Policy` too: the name is in its messages).
    mod derived {
        #[derive(Debug, serde::Deserialize)]
        #[serde(rename_all = "camelCase", tag = "kind")]
        pub enum Policy {
            All,
            Any,
            #[serde(rename_all = "camelCase")]
            AtLeast {
                k: u32,
            },
            #[serde(rename_all = "camelCase")]
            Required {
                relays: Vec<String>,
            },
        }
    }

    #[test]
    fn satisfaction_reads_what_the_derive_read() {
        mod derived {
            #[derive(Debug, serde::Deserialize)]
            #[serde(rename_all = "lowercase")]
            pub enum Satisfaction {
                Satisfied,
                Pending,
                Exhausted,
            }
        }
        let texts = [
            r#""satisfied""#,
            r#""pending""#,
            r#""exhausted""#,
            r#""Pending""#,
            r#""done""#,
            r#"{"pending":null}"#,
            r#"{"pending":1}"#,
            r#"{"done":null}"#,
            r#"{"pending":null,"x":1}"#,
            "{}",
            "[]",
            "null",
            "0",
            r#"{"pending""#,
        ];
        for text in texts {
            let hand = serde_json::from_str::<Satisfaction>(text).map_err(|e| e.to_string());
            let derived = serde_json::from_str::<derived::Satisfaction>(text)
                .map(|d| format!("{d:?}"))
                .map_err(|e| e.to_string());
            assert_eq!(hand.map(|s| format!("{s:?}")), derived, "{text}");
        }
    }
    use derived::Policy as Derived;

    impl From<Derived> for Policy {
        fn from(d: Derived) -> Policy {
            match d {
                Derived::All => Policy::All,
                Derived::Any => Policy::Any,
                Derived::AtLeast { k } => Policy::AtLeast { k },
                Derived::Required { relays } => Policy::Required { relays },
            }
        }
    }

    fn same(text: &str) {
        crate::core::derive_check::same_as_derived::<Policy, Derived>(text);
    }

    #[test]
    fn reads_exactly_what_the_derive_read() {
        let values = [
            r#""all""#,
            r#""any""#,
            r#""atLeast""#,
            r#""required""#,
            r#""most""#,
            "2",
            "0",
            "-1",
            "4294967296",
            "1.5",
            "null",
            "true",
            r#"["wss://a","wss://b"]"#,
            "[1]",
            "[]",
            "{}",
            r#"{"all":null}"#,
        ];
        let keys = ["kind", "k", "relays", "x"];
        let mut docs = crate::core::derive_check::documents(&keys, &values);
        docs.extend(
            [
                r#"{"kind":"all","#,
                r#"{"k":1,"kind":"atLeast""#,
                r#"{"kind":"atLeast","k":1}"#,
                r#"{"kind":"a\u0074Least","\u006b":3}"#,
                r#"{"kind":"required","relays":["wss://b","wss://a"],"kind2":1}"#,
                r#"{"kind":"required","relays":["wss://b",1]}"#,
                r#"{"kind":"required","relays":[],"relays":5}"#,
            ]
            .map(String::from),
        );
        for doc in &docs {
            same(doc);
        }
    }
}
