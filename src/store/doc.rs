//! The reader of a record document: a stored row (format 2, and the document inside a
//! format-1 row) and a line of an export.
//!
//! The document is parsed as a `serde_json::Value`, the one JSON reader the `.wasm`
//! already has for relay frames, and its fields are taken from it here, by hand.
//! [`Record`]'s derived `Deserialize` instantiated serde_json's typed readers a second
//! time (a visitor per struct, one `Option<T>` reader per optional field's type, the
//! messages of each): with this reader instead, the browser build is 14 621 B smaller
//! gzipped and the edge build 19 861 B (docs/BENCHMARKS.md, size section), and a flush
//! of 5 000 measured 1.02× as fast (0.93–0.99× in smaller A/Bs).
//!
//! It reads what [`Record`]'s `Serialize` writes, and what the derive read: unknown
//! fields are ignored, an optional field may be absent or `null`, a field with a
//! default may be absent, a unit enum is its name (or `{"<name>": null}`), an outcome
//! is `{"kind", "reason"}` or `[kind, reason]`, a policy `{"kind", …}` or `[kind, …]`.
//! It differs from the derive only in forms no writer of the outbox produced: another
//! struct written as an array of its fields is refused (the derive read it), and a
//! repeated key is read as its last value (the derive refused it). `tests` hold it to
//! the derive (kept on [`Record`] as the reference): over random records written and
//! read back, and over each field of a document removed, set to `null` or to a value
//! of another type, it reads what the derive reads, to the same record, and refuses
//! what the derive refuses.
//!
//! Messages name the field and what was wanted (`` `lease.expiresMs`: expected an
//! unsigned integer ``); they are shown only for a corrupt row or a refused import line.

use serde_json::{Map, Value};

use crate::core::{
    EventEnvelope, EventMeta, Evidence, Lease, Outcome, Policy, Priority, Record, RejectReason,
    Satisfaction, Stage, StopReason, DEFAULT_LANE,
};

/// A record from the text of its document.
pub fn read_record(text: &str) -> Result<Record, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    record(&Obj::of(&doc, "")?)
}

/// One JSON object of the document, with where it is (`""`, `"event."`, …) for the
/// messages. Its fields are read in place and copied out: taking them out of the
/// `Value` instead (by `BTreeMap::remove`, or into slots by name) measured no faster
/// in a flush and cost 4 030 B or 2 129 B more gzipped `.wasm` (docs/BENCHMARKS.md).
struct Obj<'a> {
    map: &'a Map<String, Value>,
    at: &'static str,
}

impl<'a> Obj<'a> {
    fn of(v: &'a Value, at: &'static str) -> Result<Obj<'a>, String> {
        match v {
            Value::Object(map) => Ok(Obj { map, at }),
            _ => Err(match at.trim_end_matches('.') {
                "" => "expected an object".to_string(),
                at => format!("`{at}`: expected an object"),
            }),
        }
    }

    /// Field `k`, `None` when absent or `null`.
    fn get(&self, k: &str) -> Option<&'a Value> {
        self.map.get(k).filter(|v| !v.is_null())
    }

    fn want(&self, k: &str, what: &str) -> String {
        format!("`{}{k}`: expected {what}", self.at)
    }

    /// `v`, field `k`, read by `read`.
    fn read<T>(
        &self,
        k: &str,
        v: Option<&'a Value>,
        read: fn(&'a Value) -> Option<T>,
        what: &str,
    ) -> Result<Option<T>, String> {
        match v {
            None => Ok(None),
            Some(v) => read(v).map(Some).ok_or_else(|| self.want(k, what)),
        }
    }

    /// Optional field `k` read by `read`.
    fn opt<T>(
        &self,
        k: &str,
        read: fn(&'a Value) -> Option<T>,
        what: &str,
    ) -> Result<Option<T>, String> {
        self.read(k, self.get(k), read, what)
    }

    /// Field `k`, which must be there and not `null`.
    fn req<T>(&self, k: &str, read: fn(&'a Value) -> Option<T>, what: &str) -> Result<T, String> {
        self.opt(k, read, what)?
            .ok_or_else(|| format!("missing field `{}{k}`", self.at))
    }

    /// Field `k` with a default: absent gives `None`; `null` is refused, as the
    /// derive refused it.
    fn dflt<T>(
        &self,
        k: &str,
        read: fn(&'a Value) -> Option<T>,
        what: &str,
    ) -> Result<Option<T>, String> {
        self.read(k, self.map.get(k), read, what)
    }

    fn string(&self, k: &str) -> Result<String, String> {
        self.req(k, string, STRING)
    }
    fn opt_string(&self, k: &str) -> Result<Option<String>, String> {
        self.opt(k, string, STRING)
    }
    fn u64(&self, k: &str) -> Result<u64, String> {
        self.req(k, Value::as_u64, UNSIGNED)
    }
    fn opt_u64(&self, k: &str) -> Result<Option<u64>, String> {
        self.opt(k, Value::as_u64, UNSIGNED)
    }
    fn u32(&self, k: &str) -> Result<u32, String> {
        self.req(k, u32_of, U32)
    }
    fn strings(&self, k: &str) -> Result<Vec<String>, String> {
        self.req(k, strings, STRINGS)
    }
    fn opt_strings(&self, k: &str) -> Result<Option<Vec<String>>, String> {
        self.opt(k, strings, STRINGS)
    }
    /// A list of strings with a default of none.
    fn some_strings(&self, k: &str) -> Result<Vec<String>, String> {
        Ok(self.dflt(k, strings, STRINGS)?.unwrap_or_default())
    }
    /// A flag with a default of `false`.
    fn flag(&self, k: &str) -> Result<bool, String> {
        Ok(self.dflt(k, Value::as_bool, "a boolean")?.unwrap_or(false))
    }

    /// A unit enum's field: its name among `names` (or `{"<name>": null}`), as an
    /// index; `None` when absent or `null`.
    fn variant(&self, k: &str, names: &[&str]) -> Result<Option<usize>, String> {
        self.get(k)
            .map(|v| unit_variant(v, names).ok_or_else(|| self.want(k, &one_of(names))))
            .transpose()
    }

    fn obj(&self, k: &'static str, at: &'static str) -> Result<Option<Obj<'a>>, String> {
        self.get(k).map(|v| Obj::of(v, at)).transpose()
    }

    fn list(&self, k: &str) -> Result<&'a [Value], String> {
        self.req(k, |v| v.as_array().map(Vec::as_slice), "an array")
    }
}

const STRING: &str = "a string";
const STRINGS: &str = "an array of strings";
const UNSIGNED: &str = "an unsigned integer";
const U32: &str = "an unsigned 32-bit integer";

fn string(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

fn u32_of(v: &Value) -> Option<u32> {
    v.as_u64().and_then(|n| u32::try_from(n).ok())
}

fn strings(v: &Value) -> Option<Vec<String>> {
    v.as_array()?.iter().map(string).collect()
}

fn one_of(names: &[&str]) -> String {
    format!("one of `{}`", names.join("`, `"))
}

/// A unit variant as serde's derive reads one from JSON: its name, or a map of its name
/// to `null`.
fn unit_variant(v: &Value, names: &[&str]) -> Option<usize> {
    let name = match v {
        Value::String(s) => s,
        Value::Object(map) if map.len() == 1 => {
            let (name, unit) = map.iter().next()?;
            if !unit.is_null() {
                return None;
            }
            name
        }
        _ => return None,
    };
    names.iter().position(|n| n == name)
}

/// Names of `all` by `name`, in order (the unit enums' `ALL` with their `as_str`).
fn names<T: Copy, const N: usize>(all: [T; N], name: fn(T) -> &'static str) -> [&'static str; N] {
    all.map(name)
}

fn record(o: &Obj<'_>) -> Result<Record, String> {
    let stages = names(Stage::ALL, Stage::as_str);
    let reasons = names(StopReason::ALL, StopReason::as_str);
    let priorities = names(Priority::ALL, Priority::as_str);
    let required = |k: &str, v: Option<usize>| v.ok_or_else(|| format!("missing field `{k}`"));
    Ok(Record {
        id: o.string("id")?,
        event: envelope(&o.obj("event", "event.")?.ok_or("missing field `event`")?)?,
        targets: o.strings("targets")?,
        policy: policy(o.get("policy").ok_or("missing field `policy`")?)?,
        max_attempts: o.u32("maxAttempts")?,
        deadline_ms: o.opt_u64("deadlineMs")?,
        plan_digest: o.string("planDigest")?,
        revision: o.u64("revision")?,
        stage: Stage::ALL[required("stage", o.variant("stage", &stages)?)?],
        lease: o.obj("lease", "lease.")?.map(|l| lease(&l)).transpose()?,
        attempts: o.u32("attempts")?,
        attempt_limit: o.u32("attemptLimit")?,
        rearmed_after_attempt: o.u32("rearmedAfterAttempt")?,
        last_attempt_ms: o.opt_u64("lastAttemptMs")?,
        evidence: o
            .list("evidence")?
            .iter()
            .map(|v| self::evidence(&Obj::of(v, "evidence.")?))
            .collect::<Result<_, String>>()?,
        satisfaction: Satisfaction::ALL[required(
            "satisfaction",
            o.variant(
                "satisfaction",
                &names(Satisfaction::ALL, Satisfaction::as_str),
            )?,
        )?],
        retry_not_before_ms: o.opt_u64("retryNotBeforeMs")?,
        due_ms: o.opt_u64("dueMs")?,
        created_ms: o.u64("createdMs")?,
        updated_ms: o.u64("updatedMs")?,
        reason: o.variant("reason", &reasons)?.map(|i| StopReason::ALL[i]),
        superseded_by: o.opt_string("supersededBy")?,
        last_error: o.opt_string("lastError")?,
        takeovers: o.dflt("takeovers", u32_of, U32)?.unwrap_or(0),
        lane: o
            .dflt("lane", string, STRING)?
            .unwrap_or_else(|| DEFAULT_LANE.to_string()),
        priority: match o.map.get("priority") {
            None => Priority::Normal,
            Some(v) => {
                Priority::ALL[unit_variant(v, &priorities)
                    .ok_or_else(|| o.want("priority", &one_of(&priorities)))?]
            }
        },
        stop_when_satisfied: o.flag("stopWhenSatisfied")?,
        group_size: o.opt("groupSize", u32_of, U32)?,
        route: o.some_strings("route")?,
        routed: o.opt_strings("routed")?,
    })
}

fn envelope(o: &Obj<'_>) -> Result<EventEnvelope, String> {
    let meta = match o.obj("meta", "event.meta.")? {
        None => None,
        Some(m) => Some(EventMeta {
            pubkey: m.string("pubkey")?,
            kind: m.req(
                "kind",
                |v| v.as_u64().and_then(|n| u16::try_from(n).ok()),
                "an unsigned 16-bit integer",
            )?,
            created_at: m.u64("createdAt")?,
            d: m.dflt("d", string, STRING)?.unwrap_or_default(),
            deletes_ids: m.some_strings("deletesIds")?,
            deletes_addresses: m.some_strings("deletesAddresses")?,
            protected: m.flag("protected")?,
            vanish_relays: Vec::new(),
        }),
    };
    Ok(EventEnvelope {
        id: o.string("id")?,
        raw: o.string("raw")?,
        expiration: o.opt_u64("expiration")?,
        meta,
    })
}

fn lease(o: &Obj<'_>) -> Result<Lease, String> {
    Ok(Lease {
        id: o.string("id")?,
        owner: o.string("owner")?,
        acquired_ms: o.u64("acquiredMs")?,
        expires_ms: o.u64("expiresMs")?,
        attempt: o.u32("attempt")?,
        relays: o.opt_strings("relays")?,
    })
}

fn evidence(o: &Obj<'_>) -> Result<Evidence, String> {
    Ok(Evidence {
        target: o.string("target")?,
        attempt: o.u32("attempt")?,
        outcome: outcome(o.map.get("outcome")).ok_or_else(|| o.want("outcome", "an outcome"))?,
        message: o.string("message")?,
        at_ms: o.u64("atMs")?,
        tries: o.dflt("tries", u32_of, U32)?.unwrap_or(1),
        first_at_ms: o.opt_u64("firstAtMs")?,
    })
}

/// An outcome, as its adjacently tagged derive read one: `{"kind": …, "reason": …}`
/// (the reason a [`RejectReason`] for `rejected`, absent or `null` for the others) or
/// `[kind, reason]`.
fn outcome(v: Option<&Value>) -> Option<Outcome> {
    let kinds = names(Outcome::KINDS, Outcome::as_str);
    let (kind, reason) = match v? {
        Value::Object(map) => (unit_variant(map.get("kind")?, &kinds)?, map.get("reason")),
        Value::Array(pair) if pair.len() == 2 => {
            let kind = kinds.iter().position(|k| Some(*k) == pair[0].as_str())?;
            // In the array form a unit variant's reason is `null`, never absent.
            (kind, Some(&pair[1]))
        }
        _ => return None,
    };
    match Outcome::KINDS[kind] {
        Outcome::Rejected(_) => {
            let reasons = names(RejectReason::ALL, RejectReason::as_str);
            Some(Outcome::Rejected(
                RejectReason::ALL[unit_variant(reason?, &reasons)?],
            ))
        }
        unit => reason.is_none_or(Value::is_null).then_some(unit),
    }
}

/// A policy, as its internally tagged derive read one: `{"kind": "all" | "any"}`,
/// `{"kind": "atLeast", "k": n}`, `{"kind": "required", "relays": [...]}`, or the same
/// as an array (`["atLeast", n]`).
fn policy(v: &Value) -> Result<Policy, String> {
    const KINDS: [&str; 4] = ["all", "any", "atLeast", "required"];
    let bad = || format!("`policy`: expected {}", one_of(&KINDS));
    // The tag is a name (the derive's `variant identifier`, never `{"all": null}`),
    // and a struct variant's one field.
    let (kind, field) = match v {
        Value::Object(map) => {
            let kind = map.get("kind").ok_or("missing field `policy.kind`")?;
            let field = if *kind == "atLeast" { "k" } else { "relays" };
            (kind, map.get(field))
        }
        Value::Array(items) if !items.is_empty() && items.len() <= 2 => (&items[0], items.get(1)),
        _ => return Err(bad()),
    };
    let kind = kind
        .as_str()
        .and_then(|k| KINDS.iter().position(|n| *n == k))
        .ok_or_else(bad)?;
    let unit = matches!(v, Value::Array(items) if items.len() == 1);
    match (kind, field) {
        (0 | 1, _) if v.is_object() || unit => {
            Ok(if kind == 0 { Policy::All } else { Policy::Any })
        }
        (2, Some(k)) => u32_of(k)
            .map(|k| Policy::AtLeast { k })
            .ok_or_else(|| format!("`policy.k`: expected {U32}")),
        (3, Some(relays)) => strings(relays)
            .map(|relays| Policy::Required { relays })
            .ok_or_else(|| format!("`policy.relays`: expected {STRINGS}")),
        (2 | 3, None) => Err(format!(
            "missing field `policy.{}`",
            ["k", "relays"][kind - 2]
        )),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record with a lease and one answer of each kind, as its document.
    fn doc() -> String {
        let mut r = crate::store::codec::tests::record();
        r.lease = Some(Lease {
            id: "l".into(),
            owner: "o".into(),
            acquired_ms: 1,
            expires_ms: 2,
            attempt: 1,
            relays: None,
        });
        r.evidence = vec![Evidence {
            target: "wss://r.example".into(),
            attempt: 1,
            outcome: Outcome::Rejected(RejectReason::Pow),
            message: "pow: 20".into(),
            at_ms: 3,
            tries: 1,
            first_at_ms: None,
        }];
        serde_json::to_string(&r).expect("json")
    }

    /// `doc` with `from` replaced by each of `to`: read as the derive reads it.
    fn same_as_derive(from: &str, to: &[&str]) {
        let doc = doc();
        assert!(doc.contains(from), "{from} in {doc}");
        for to in to {
            let text = doc.replacen(from, to, 1);
            let derived = serde_json::from_str::<Record>(&text).map_err(|e| e.to_string());
            match (read_record(&text), derived) {
                (Ok(hand), Ok(derived)) => assert_eq!(hand, derived, "{to}"),
                (Err(_), Err(_)) => {}
                (hand, derived) => panic!("{to}: read {hand:?}, the derive {derived:?}"),
            }
        }
    }

    #[test]
    fn outcomes_read_in_every_form_the_derive_read() {
        same_as_derive(
            r#""outcome":{"kind":"rejected","reason":"pow"}"#,
            &[
                r#""outcome":{"reason":"pow","kind":"rejected"}"#,
                r#""outcome":{"kind":{"rejected":null},"reason":{"pow":null}}"#,
                r#""outcome":{"kind":"rejected"}"#,
                r#""outcome":{"kind":"rejected","reason":null}"#,
                r#""outcome":{"kind":"rejected","reason":"slow"}"#,
                r#""outcome":{"kind":"accepted"}"#,
                r#""outcome":{"kind":"accepted","reason":null,"x":1}"#,
                r#""outcome":{"kind":"accepted","reason":"pow"}"#,
                r#""outcome":{"kind":"Accepted"}"#,
                r#""outcome":{"reason":null}"#,
                r#""outcome":["rejected","pow"]"#,
                r#""outcome":["timeout",null]"#,
                r#""outcome":["timeout"]"#,
                r#""outcome":["timeout",null,null]"#,
                r#""outcome":[{"timeout":null},null]"#,
                r#""outcome":"timeout""#,
                r#""outcome":null"#,
            ],
        );
    }

    #[test]
    fn policies_read_in_every_form_the_derive_read() {
        same_as_derive(
            r#""policy":{"kind":"all"}"#,
            &[
                r#""policy":{"kind":"any","k":"x"}"#,
                r#""policy":{"kind":{"any":null}}"#,
                r#""policy":{"kind":"atLeast","k":1}"#,
                r#""policy":{"kind":"atLeast","k":null}"#,
                r#""policy":{"kind":"atLeast"}"#,
                r#""policy":{"k":1,"kind":"atLeast"}"#,
                r#""policy":{"kind":"required","relays":["wss://r.example"]}"#,
                r#""policy":{"kind":"required","relays":[1]}"#,
                r#""policy":{"kind":"required","k":1}"#,
                r#""policy":["all"]"#,
                r#""policy":["all",1]"#,
                r#""policy":["atLeast",1]"#,
                r#""policy":["atLeast"]"#,
                r#""policy":["required",["wss://r.example"]]"#,
                r#""policy":["required",["wss://r.example"],1]"#,
                r#""policy":[]"#,
                r#""policy":"all""#,
                r#""policy":null"#,
            ],
        );
    }

    #[test]
    fn unit_enums_and_defaults_read_as_the_derive_read() {
        same_as_derive(
            r#""stage":"pending""#,
            &[
                r#""stage":{"leased":null}"#,
                r#""stage":{"leased":1}"#,
                r#""stage":{"leased":null,"pending":null}"#,
                r#""stage":"Leased""#,
                r#""stage":null"#,
                r#""stage":"leased","priority":"high""#,
                r#""stage":"leased","priority":{"low":null}"#,
                r#""stage":"leased","priority":null"#,
                r#""stage":"leased","lane":null"#,
                r#""stage":"leased","lane":"dm""#,
                r#""stage":"leased","takeovers":null"#,
                r#""stage":"leased","route":null"#,
                r#""stage":"leased","routed":null"#,
                r#""stage":"leased","stopWhenSatisfied":1"#,
            ],
        );
        same_as_derive(
            r#""reason":null"#,
            &[
                r#""reason":"maxAttempts""#,
                r#""reason":{"rejected":null}"#,
                r#""reason":"max_attempts""#,
                r#""reason":1"#,
            ],
        );
        same_as_derive(
            r#""atMs":3"#,
            &[
                r#""atMs":3,"tries":2,"firstAtMs":1"#,
                r#""atMs":3,"tries":null"#,
                r#""atMs":3,"tries":"x""#,
                r#""atMs":3,"firstAtMs":null"#,
                r#""atMs":-3"#,
            ],
        );
        same_as_derive(
            r#""attempt":1}"#,
            &[
                r#""attempt":1,"relays":["wss://r.example"]}"#,
                r#""attempt":1,"relays":null}"#,
                r#""attempt":4294967296}"#,
            ],
        );
        let meta = r#""pubkey":"p","kind":30023,"createdAt":5"#;
        same_as_derive(
            r#""expiration":null"#,
            &[
                &format!(r#""expiration":7,"meta":{{{meta}}}"#),
                &format!(r#""meta":{{{meta},"d":"x","deletesIds":["e"],"protected":true}}"#),
                &format!(r#""meta":{{{meta},"d":null}}"#),
                &format!(r#""meta":{{{meta},"deletesAddresses":null}}"#),
                &format!(r#""meta":{{{meta},"protected":null}}"#),
                r#""meta":{"pubkey":"p","kind":65536,"createdAt":5}"#,
                r#""meta":{"pubkey":"p","createdAt":5}"#,
                r#""meta":null"#,
                r#""meta":[]"#,
            ],
        );
    }

    #[test]
    fn hostile_documents_are_refused_without_a_panic() {
        let doc = doc();
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let cases = [
            doc.replacen(r#""targets":["#, &format!(r#""targets":[{deep},"#), 1),
            doc.replacen(r#""revision":1"#, r#""revision":1e400"#, 1),
            doc.replacen(r#""revision":1"#, r#""revision":18446744073709551616"#, 1),
            doc[..doc.len() / 2].to_string(),
            "\u{0}".to_string(),
            String::new(),
        ];
        for text in cases {
            let err = read_record(&text).expect_err("refused");
            assert!(!err.is_empty());
            assert!(
                serde_json::from_str::<Record>(&text).is_err(),
                "the derive too"
            );
        }
    }
}
