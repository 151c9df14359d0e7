//! Relay ↔ client messages (NIP-01, NIP-42): parsing what a relay sends, classifying
//! `OK` answers into the core's [`Outcome`], and building what the client sends.
//!
//! Parsing never fails and never panics: a frame over the size limit is
//! [`RelayMessage::TooLarge`], broken JSON or a wrong shape is
//! [`RelayMessage::Malformed`], and a well-formed message of a type the outbox does not
//! use is [`RelayMessage::Unknown`]. Builders embed the event's raw text verbatim: the
//! outbox never re-serializes an event it resends.

use super::event::is_lower_hex;
use super::event::write_json_str;
use crate::core::{Outcome, RejectReason};
use serde_json::Value;

/// A sensible default frame limit for [`RelayMessage::parse`]: 1 MiB.
pub const DEFAULT_MAX_MESSAGE_LEN: usize = 1024 * 1024;

/// A message received from a relay.
#[derive(Debug, Clone, PartialEq)]
pub enum RelayMessage {
    /// `["OK", <event id>, <accepted>, <message>]` (a missing message reads as `""`).
    Ok {
        /// The event id the answer is about (64 lowercase hex).
        event_id: String,
        /// The relay's boolean.
        accepted: bool,
        /// The human/machine message, possibly with a NIP-01 prefix.
        message: String,
    },
    /// `["NOTICE", <message>]`.
    Notice {
        /// The message.
        message: String,
    },
    /// `["CLOSED", <subscription id>, <message>]` (a missing message reads as `""`).
    Closed {
        /// The subscription the relay closed.
        subscription_id: String,
        /// Why, possibly with a NIP-01 prefix such as `auth-required:`.
        message: String,
    },
    /// `["AUTH", <challenge>]` (NIP-42).
    Auth {
        /// The challenge to sign in a kind-22242 event.
        challenge: String,
    },
    /// `["EOSE", <subscription id>]`.
    Eose {
        /// The subscription whose stored events are all sent.
        subscription_id: String,
    },
    /// `["EVENT", <subscription id>, <event object>]`. The event is not checked here:
    /// use [`crate::nostr::Event::from_value`] and verify it.
    Event {
        /// The subscription the event answers.
        subscription_id: String,
        /// The event object as received.
        event: Value,
    },
    /// A well-formed message of another type (e.g. `COUNT`): not an error.
    Unknown {
        /// The message type (first array element), at most 64 characters.
        message_type: String,
    },
    /// Not JSON, not an array, or a known type with the wrong shape.
    Malformed {
        /// What is wrong.
        reason: String,
    },
    /// The frame is longer than the limit given to [`RelayMessage::parse`]; it was not
    /// parsed.
    TooLarge {
        /// The frame length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
}

fn malformed(reason: impl Into<String>) -> RelayMessage {
    RelayMessage::Malformed {
        reason: reason.into(),
    }
}

/// The element at `i` as an owned string, or a description of what is wrong.
fn string_at(items: &mut [Value], i: usize, what: &str, ty: &str) -> Result<String, String> {
    match items.get_mut(i) {
        Some(Value::String(s)) => Ok(core::mem::take(s)),
        Some(_) => Err(format!("{ty}: {what} must be a string")),
        None => Err(format!("{ty}: {what} is missing")),
    }
}

/// Like [`string_at`], but a missing element reads as `""`.
fn optional_string_at(
    items: &mut [Value],
    i: usize,
    what: &str,
    ty: &str,
) -> Result<String, String> {
    if items.len() <= i {
        Ok(String::new())
    } else {
        string_at(items, i, what, ty)
    }
}

impl RelayMessage {
    /// Parses one text frame from a relay. Frames longer than `max_len` bytes are not
    /// parsed ([`RelayMessage::TooLarge`]). Never panics.
    pub fn parse(text: &str, max_len: usize) -> RelayMessage {
        if text.len() > max_len {
            return RelayMessage::TooLarge {
                len: text.len(),
                max: max_len,
            };
        }
        let mut items = match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(items)) => items,
            Ok(_) => return malformed("not a JSON array"),
            Err(e) => return malformed(format!("not JSON: {e}")),
        };
        let ty = match items.first_mut() {
            Some(Value::String(s)) => core::mem::take(s),
            Some(_) => return malformed("message type is not a string"),
            None => return malformed("empty array"),
        };
        match Self::parse_known(&ty, &mut items) {
            Ok(Some(msg)) => msg,
            Ok(None) => RelayMessage::Unknown {
                message_type: ty.chars().take(64).collect(),
            },
            Err(reason) => malformed(reason),
        }
    }

    fn parse_known(ty: &str, items: &mut [Value]) -> Result<Option<RelayMessage>, String> {
        Ok(Some(match ty {
            "OK" => {
                let event_id = string_at(items, 1, "event id", ty)?;
                if !is_lower_hex(&event_id, 64) {
                    return Err("OK: event id must be 64 lowercase hex characters".into());
                }
                let accepted = match items.get(2) {
                    Some(Value::Bool(b)) => *b,
                    Some(_) => return Err("OK: accepted flag must be a boolean".into()),
                    None => return Err("OK: accepted flag is missing".into()),
                };
                let message = optional_string_at(items, 3, "message", ty)?;
                RelayMessage::Ok {
                    event_id,
                    accepted,
                    message,
                }
            }
            "NOTICE" => RelayMessage::Notice {
                message: string_at(items, 1, "message", ty)?,
            },
            "CLOSED" => RelayMessage::Closed {
                subscription_id: string_at(items, 1, "subscription id", ty)?,
                message: optional_string_at(items, 2, "message", ty)?,
            },
            "AUTH" => RelayMessage::Auth {
                challenge: string_at(items, 1, "challenge", ty)?,
            },
            "EOSE" => RelayMessage::Eose {
                subscription_id: string_at(items, 1, "subscription id", ty)?,
            },
            "EVENT" => {
                let subscription_id = string_at(items, 1, "subscription id", ty)?;
                let event = match items.get_mut(2) {
                    Some(v @ Value::Object(_)) => v.take(),
                    Some(_) => return Err("EVENT: event must be an object".into()),
                    None => return Err("EVENT: event is missing".into()),
                };
                RelayMessage::Event {
                    subscription_id,
                    event,
                }
            }
            _ => return Ok(None),
        }))
    }
}

/// The machine-readable prefix of an `OK`/`CLOSED` message: the text before the first
/// `:`, after leading whitespace, when it is a single word.
fn prefix(message: &str) -> Option<&str> {
    let (p, _) = message.trim_start().split_once(':')?;
    if !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        Some(p)
    } else {
        None
    }
}

/// Classifies a relay's `OK` answer into the core's outcome (NIP-01 prefixes, matched
/// case-insensitively after leading whitespace):
///
/// | accepted | prefix | outcome |
/// |---|---|---|
/// | true | `duplicate:` | `Duplicate` |
/// | true | anything else | `Accepted` |
/// | false | `duplicate:` | `Duplicate` (the relay says it has the event) |
/// | false | `blocked:` / `invalid:` / `restricted:` / `pow:` / `mute:` | `Rejected(..)` |
/// | false | `rate-limited:` | `RateLimited` |
/// | false | `auth-required:` | `AuthRequired` |
/// | false | `error:` | `Error` |
/// | false | anything else | `Rejected(Other)` |
pub fn classify_ok(accepted: bool, message: &str) -> Outcome {
    let p = prefix(message);
    let is = |name: &str| p.is_some_and(|p| p.eq_ignore_ascii_case(name));
    if is("duplicate") {
        return Outcome::Duplicate;
    }
    if accepted {
        return Outcome::Accepted;
    }
    if is("blocked") {
        Outcome::Rejected(RejectReason::Blocked)
    } else if is("invalid") {
        Outcome::Rejected(RejectReason::Invalid)
    } else if is("restricted") {
        Outcome::Rejected(RejectReason::Restricted)
    } else if is("pow") {
        Outcome::Rejected(RejectReason::Pow)
    } else if is("mute") {
        Outcome::Rejected(RejectReason::Mute)
    } else if is("rate-limited") {
        Outcome::RateLimited
    } else if is("auth-required") {
        Outcome::AuthRequired
    } else if is("error") {
        Outcome::Error
    } else {
        Outcome::Rejected(RejectReason::Other)
    }
}

/// True when a `CLOSED` (or `OK false`) message carries the `auth-required:` prefix.
pub fn is_auth_required(message: &str) -> bool {
    prefix(message).is_some_and(|p| p.eq_ignore_ascii_case("auth-required"))
}

/// `["EVENT",<raw>]`, with the event's JSON text embedded verbatim.
pub fn event_message(raw: &str) -> String {
    let mut s = String::with_capacity(raw.len() + 10);
    s.push_str("[\"EVENT\",");
    s.push_str(raw);
    s.push(']');
    s
}

/// `["AUTH",<raw>]`: the answer to a NIP-42 challenge, with the signed kind-22242
/// event's JSON text embedded verbatim.
pub fn auth_message(signed_auth_event_raw: &str) -> String {
    let mut s = String::with_capacity(signed_auth_event_raw.len() + 9);
    s.push_str("[\"AUTH\",");
    s.push_str(signed_auth_event_raw);
    s.push(']');
    s
}

/// `["REQ",<sub>,{"authors":[…],"kinds":[…],"#d":[…],"limit":1}]`: asks a relay for its
/// newest version of the replaceable or addressable event `meta` describes (`#d` for an
/// addressable kind only).
pub fn req_newest(subscription_id: &str, meta: &crate::core::EventMeta) -> String {
    let mut buf = Vec::with_capacity(160 + meta.d.len());
    buf.extend_from_slice(b"[\"REQ\",");
    write_json_str(&mut buf, subscription_id);
    buf.extend_from_slice(b",{\"authors\":[");
    write_json_str(&mut buf, &meta.pubkey);
    buf.extend_from_slice(format!("],\"kinds\":[{}]", meta.kind).as_bytes());
    if crate::core::semantics::kind_class(meta.kind)
        == crate::core::semantics::KindClass::Addressable
    {
        buf.extend_from_slice(b",\"#d\":[");
        write_json_str(&mut buf, &meta.d);
        buf.push(b']');
    }
    buf.extend_from_slice(b",\"limit\":1}]");
    String::from_utf8(buf).unwrap_or_default()
}

/// `["REQ",<sub>,{"ids":[...]}]`: asks a relay whether it holds these events.
pub fn req_by_ids<S: AsRef<str>>(subscription_id: &str, ids: &[S]) -> String {
    let mut buf = Vec::with_capacity(32 + subscription_id.len() + ids.len() * 67);
    buf.extend_from_slice(b"[\"REQ\",");
    write_json_str(&mut buf, subscription_id);
    buf.extend_from_slice(b",{\"ids\":[");
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        write_json_str(&mut buf, id.as_ref());
    }
    buf.extend_from_slice(b"]}]");
    String::from_utf8(buf).unwrap_or_default()
}

/// `["CLOSE",<sub>]`: ends a subscription.
pub fn close_message(subscription_id: &str) -> String {
    let mut buf = Vec::with_capacity(12 + subscription_id.len());
    buf.extend_from_slice(b"[\"CLOSE\",");
    write_json_str(&mut buf, subscription_id);
    buf.push(b']');
    String::from_utf8(buf).unwrap_or_default()
}
