//! Reading JavaScript arguments and options objects into Rust values. Every options
//! object (and every `enqueueMany` item) is a struct of [`Field`]s, each read with one
//! property read and one type check ([`FromJs`]); [`read`] refuses unknown keys, and
//! [`Reader`] turns each field into its value or a typed [`ApiError`] naming the option,
//! the type given and the type expected.
//!
//! Not through serde: a derived `Deserialize` per options struct (six of them) compiled
//! a visitor each, about 12 KB of the .wasm (2 KB a struct); a field read here is a call
//! of one shared function per type. Ranges and every domain rule stay with [`crate::core`] and
//! [`crate::nostr`]; this module only checks shapes.
//!
//! The fast path costs one property read per known key and one `Object.keys` count;
//! only a failure looks at the JavaScript value again, to say precisely what is wrong.
//! Values that are not data (the event, relay arrays, a signer, a transport) are kept
//! as JavaScript values ([`Raw`]) and read where they are used.

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::error::{ApiError, Details};
use crate::core::semantics;
use crate::core::{ErrorCode, Lookups, Policy};
use crate::nostr::template::Template;
use crate::nostr::{Event, RelayUrl};

/// The largest integer a JavaScript number holds exactly (2^53 − 1).
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// A short name of a JavaScript value's type, for messages.
pub(crate) fn type_name(v: &JsValue) -> &'static str {
    if v.is_undefined() {
        "undefined"
    } else if v.is_null() {
        "null"
    } else if v.as_bool().is_some() {
        "a boolean"
    } else if v.as_f64().is_some() {
        "a number"
    } else if v.is_string() {
        "a string"
    } else if v.is_bigint() {
        "a bigint"
    } else if v.is_function() {
        "a function"
    } else if Array::is_array(v) {
        "an array"
    } else if v.is_object() {
        "an object"
    } else {
        "a symbol"
    }
}

/// One key of an options object as read. A value of the wrong type is not an error yet
/// (that would lose which key it was): it is kept as [`Field::Bad`], and [`Reader`]
/// says what is wrong with it.
#[derive(Debug, Default)]
pub(crate) enum Field<T> {
    /// The key is not there.
    #[default]
    Absent,
    /// The key holds a value of the expected type.
    Given(T),
    /// The key holds something else (or `undefined`, which reads as absent).
    Bad,
}

impl<T> Field<T> {
    /// True when the key is there.
    pub(crate) fn is_given(&self) -> bool {
        !matches!(self, Field::Absent)
    }
}

impl<T: FromJs> Field<T> {
    /// Reads `key` of `obj` (own or inherited): absent when `undefined`. A getter or
    /// Proxy trap that throws rethrows, for [`read`]'s catch to report.
    pub(crate) fn read(obj: &JsValue, key: &str) -> Field<T> {
        match value_of(obj, key) {
            None => Field::Absent,
            Some(v) => T::from_js(v).map_or(Field::Bad, Field::Given),
        }
    }
}

/// `obj[key]`, `None` when `undefined`: [`Field::read`]'s one copy of the lookup (not
/// one per field type).
fn value_of(obj: &JsValue, key: &str) -> Option<JsValue> {
    let v =
        Reflect::get(obj, &JsValue::from_str(key)).unwrap_or_else(|e| wasm_bindgen::throw_val(e));
    (!v.is_undefined()).then_some(v)
}

/// A type an options field holds, read from a JavaScript value (`None`: another type).
pub(crate) trait FromJs: Sized {
    /// The value, if `v` is of this type.
    fn from_js(v: JsValue) -> Option<Self>;
}

impl FromJs for String {
    fn from_js(v: JsValue) -> Option<String> {
        v.as_string()
    }
}

impl FromJs for bool {
    fn from_js(v: JsValue) -> Option<bool> {
        v.as_bool()
    }
}

impl FromJs for Raw {
    fn from_js(v: JsValue) -> Option<Raw> {
        Some(Raw(v))
    }
}

impl FromJs for Uint {
    fn from_js(v: JsValue) -> Option<Uint> {
        let n = v.as_f64()?;
        ((0.0..=MAX_SAFE).contains(&n) && n.fract() == 0.0).then_some(Uint(n as u64))
    }
}

impl FromJs for PolicyInput {
    /// `"all"`, `"any"`, or an object whose one own key is `atLeast` (a whole number)
    /// or `required` (kept as given): read by hand, not by a serde visitor of its own.
    fn from_js(v: JsValue) -> Option<PolicyInput> {
        if let Some(name) = v.as_string() {
            return match name.as_str() {
                "all" => Some(PolicyInput::All),
                "any" => Some(PolicyInput::Any),
                _ => None,
            };
        }
        if !v.is_object() || Array::is_array(&v) || v.is_function() {
            return None;
        }
        let keys = Object::keys(v.unchecked_ref::<Object>());
        let key = keys.get(0).as_string().filter(|_| keys.length() == 1)?;
        let value = js_sys::Reflect::get(&v, &JsValue::from_str(&key)).ok()?;
        match key.as_str() {
            "atLeast" => Uint::from_js(value).map(PolicyInput::AtLeast),
            "required" => Some(PolicyInput::Required(Raw(value))),
            _ => None,
        }
    }
}

/// A JavaScript value kept as it is.
#[derive(Debug)]
pub(crate) struct Raw(pub(crate) JsValue);

/// A non-negative safe integer given as a JavaScript number (not a `BigInt`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Uint(pub(crate) u64);

/// A policy as given: `"all"`, `"any"`, `{ atLeast: n }` or `{ required: [urls] }`.
#[derive(Debug)]
pub(crate) enum PolicyInput {
    All,
    Any,
    AtLeast(Uint),
    Required(Raw),
}

/// An options struct of [`Field`]s.
pub(crate) trait Shape: Default {
    /// How many keys it has.
    const KEYS: usize;
    /// Reads every key of the struct from `obj` (an object).
    fn from_object(obj: &JsValue) -> Self;
    /// How many of its keys were there.
    fn given(&self) -> usize;
}

/// Declares an options struct: every field a [`Field`] read from its key (the
/// camelCase name after `=`), absent keys [`Field::Absent`].
macro_rules! shape {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $field:ident: $ty:ty = $key:literal,)* }) => {
        $(#[$m])*
        #[derive(Debug, Default)]
        pub(crate) struct $name {
            $($(#[$fm])* pub(crate) $field: $crate::js::input::Field<$ty>,)*
        }
        impl $crate::js::input::Shape for $name {
            const KEYS: usize = 0 $(+ { let _ = stringify!($field); 1 })*;
            fn from_object(obj: &wasm_bindgen::JsValue) -> $name {
                $name {
                    $($field: $crate::js::input::Field::read(obj, $key),)*
                }
            }
            fn given(&self) -> usize {
                0 $(+ usize::from(self.$field.is_given()))*
            }
        }
    };
}
pub(crate) use shape;

shape! {
    /// The options of one plan: `enqueue` options (and the same keys of an
    /// `enqueueMany` item).
    PlanOptions {
        policy: PolicyInput = "policy",
        id: String = "id",
        deadline: Uint = "deadline",
        max_attempts: Uint = "maxAttempts",
        lane: String = "lane",
        priority: String = "priority",
        stop_when_satisfied: bool = "stopWhenSatisfied",
        not_before: Uint = "notBefore",
        sign: bool = "sign",
        pow: Uint = "pow",
        route: Raw = "route",
    }
}

shape! {
    /// `enqueueGroup` options.
    GroupOptions {
        group: String = "group",
    }
}

/// The keys of `enqueue` options.
pub(crate) const ENQUEUE_KEYS: [&str; 11] = [
    "policy",
    "id",
    "deadline",
    "maxAttempts",
    "lane",
    "priority",
    "stopWhenSatisfied",
    "notBefore",
    "sign",
    "pow",
    "route",
];

/// One `enqueueMany` item: the event, the relays and the keys of [`PlanOptions`] (read
/// by its reader, not by a copy of it).
#[derive(Debug, Default)]
pub(crate) struct ItemInput {
    event: Field<Raw>,
    relays: Field<Raw>,
    plan: PlanOptions,
}

impl Shape for ItemInput {
    const KEYS: usize = 2 + PlanOptions::KEYS;
    fn from_object(obj: &JsValue) -> ItemInput {
        ItemInput {
            event: Field::read(obj, "event"),
            relays: Field::read(obj, "relays"),
            plan: PlanOptions::from_object(obj),
        }
    }
    fn given(&self) -> usize {
        usize::from(self.event.is_given()) + usize::from(self.relays.is_given()) + self.plan.given()
    }
}

/// The keys of an `enqueueMany` item.
pub(crate) const ITEM_KEYS: [&str; 13] = [
    "event",
    "relays",
    "policy",
    "id",
    "deadline",
    "maxAttempts",
    "lane",
    "priority",
    "stopWhenSatisfied",
    "notBefore",
    "sign",
    "pow",
    "route",
];

impl ItemInput {
    /// The event, the relays and the plan options.
    pub(crate) fn split(self) -> (Field<Raw>, Field<Raw>, PlanOptions) {
        (self.event, self.relays, self.plan)
    }
}

shape! {
    /// `list` options.
    ListOptions {
        stage: String = "stage",
        limit: Uint = "limit",
        after: String = "after",
        lane: String = "lane",
    }
}

/// The keys of `list` options.
pub(crate) const LIST_KEYS: [&str; 4] = ["stage", "limit", "after", "lane"];

shape! {
    /// `status` options (`lane`) and `flush` options (`lanes`, `relays`): one struct,
    /// read with each method's own keys (`read` then checks every key), so the .wasm has
    /// one reader for both.
    FilterOptions {
        lane: String = "lane",
        lanes: Raw = "lanes",
        relays: Raw = "relays",
    }
}

/// The keys of `status` options.
pub(crate) const STATUS_KEYS: [&str; 1] = ["lane"];

/// The keys of `flush` options.
pub(crate) const FLUSH_KEYS: [&str; 2] = ["lanes", "relays"];

/// Reads `lanes`: an array of lane names (each checked).
pub(crate) fn parse_lanes(v: &JsValue) -> Result<Vec<String>, ApiError> {
    let lanes = string_array(v).ok_or_else(|| {
        ApiError::argument(
            "lanes",
            format!("must be an array of lane names, got {}", type_name(v)),
        )
    })?;
    crate::core::lane::validate_lanes("lanes", &lanes)?;
    Ok(lanes)
}

shape! {
    /// `purge` options.
    PurgeOptions {
        before: Uint = "before",
    }
}

/// The keys of `purge` options.
pub(crate) const PURGE_KEYS: [&str; 1] = ["before"];

/// Where the fields of one options object come from, to name them in errors.
pub(crate) struct Reader {
    obj: Option<Object>,
    /// What it is, for messages (e.g. `Outbox.open options`).
    what: &'static str,
}

/// The error for an unknown key.
pub(crate) fn unknown_key(key: &str, what: &str, known: &[&str]) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidOptions,
        format!(
            "invalid options: unknown option `{key}` in {what} (known: {})",
            known.join(", ")
        ),
    )
    .with_details(Details::option(key))
}

/// Reads `value` as the options struct `T` accepting only the `known` keys
/// (`undefined`/`null` read as empty).
pub(crate) fn read<T: Shape>(
    value: &JsValue,
    what: &'static str,
    known: &[&str],
) -> Result<(T, Reader), ApiError> {
    let mut shape = T::default();
    // Only the field reads are per shape; the rest is one copy (`read_object`).
    let reader = read_object(value, what, (known, T::KEYS), &mut || {
        shape = T::from_object(value);
        Ok(shape.given())
    })?;
    Ok((shape, reader))
}

/// [`read`] without the shape: checks that `value` is an options object, runs
/// `parse` (the shape's serde read: how many of its `keys.1` keys were there, or the
/// message) and checks for unknown keys. Not run for `undefined`/`null`.
fn read_object(
    value: &JsValue,
    what: &'static str,
    (known, keys_of_shape): (&[&str], usize),
    parse: &mut dyn FnMut() -> Result<usize, String>,
) -> Result<Reader, ApiError> {
    if value.is_undefined() || value.is_null() {
        return Ok(Reader { obj: None, what });
    }
    if !value.is_object() || Array::is_array(value) || value.is_function() {
        return Err(ApiError::new(
            ErrorCode::InvalidOptions,
            format!(
                "invalid options: {what} must be an object, got {}",
                type_name(value)
            ),
        ));
    }
    let obj: Object = value.clone().unchecked_into();
    // serde reads every known key, own or inherited. A plain object (`{...}`, or with a
    // null prototype) inherits none, so as many own keys as keys read means no unknown
    // one; otherwise (a count that differs, a class instance) each key is looked at.
    // A getter or Proxy trap that throws makes the object unreadable: a typed error,
    // not an exception through the wasm frames.
    let mut outcome = None;
    let thrown = super::sys::catching(&mut || {
        let given = parse();
        let keys = Object::keys(&obj);
        let proto = Object::get_prototype_of(value);
        let plain = proto.is_null() || Object::get_prototype_of(&proto).is_null();
        outcome = Some((given, keys, plain));
    });
    let (given, keys, plain) = match outcome {
        Some(outcome) if thrown.is_undefined() => outcome,
        _ => {
            let cause = Reflect::get(&thrown, &JsValue::from_str("thrown")).unwrap_or(thrown);
            let why = cause
                .dyn_ref::<js_sys::Error>()
                .map(|e| String::from(e.message()))
                .or_else(|| cause.as_string())
                .unwrap_or_else(|| type_name(&cause).to_string());
            return Err(ApiError::new(
                ErrorCode::InvalidOptions,
                format!("invalid options: {what} cannot be read: {why}"),
            )
            .with_cause(cause));
        }
    };
    let given = given.map_err(|e| {
        ApiError::new(
            ErrorCode::InvalidOptions,
            format!("invalid options: {what}: {e}"),
        )
    })?;
    // A shape shared by methods that take some of its keys each (`known` is fewer than
    // its keys) has every key checked: a key another method takes is unknown here.
    if !plain || known.len() != keys_of_shape || keys.length() as usize != given {
        for key in keys.iter() {
            let key = key.as_string().unwrap_or_default();
            if !known.contains(&key.as_str()) {
                return Err(unknown_key(&key, what, known));
            }
        }
    }
    Ok(Reader {
        obj: Some(obj),
        what,
    })
}

impl Reader {
    /// The raw value of `key` (`undefined` when absent), to describe what was given.
    fn raw(&self, key: &str) -> JsValue {
        match &self.obj {
            Some(obj) => Reflect::get(obj, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED),
            None => JsValue::UNDEFINED,
        }
    }

    fn bad(&self, key: &str, expected: &str, got: &JsValue) -> ApiError {
        ApiError::options(
            key,
            format!(
                "in {} must be {expected}, got {}",
                self.what,
                type_name(got)
            ),
        )
    }

    /// The value of `key`, `None` when absent (or `undefined`), or the error naming
    /// the key, what was `expected` and what was given.
    fn take<T>(&self, key: &str, field: Field<T>, expected: &str) -> Result<Option<T>, ApiError> {
        match field {
            Field::Absent => Ok(None),
            Field::Given(v) => Ok(Some(v)),
            Field::Bad => {
                let got = self.raw(key);
                if got.is_undefined() {
                    Ok(None)
                } else {
                    Err(self.bad(key, expected, &got))
                }
            }
        }
    }

    /// An optional string.
    pub(crate) fn string(
        &self,
        key: &str,
        field: Field<String>,
    ) -> Result<Option<String>, ApiError> {
        self.take(key, field, "a string")
    }

    /// An optional boolean.
    pub(crate) fn boolean(&self, key: &str, field: Field<bool>) -> Result<Option<bool>, ApiError> {
        self.take(key, field, "a boolean")
    }

    /// An optional non-negative integer (a JavaScript safe integer).
    pub(crate) fn uint(&self, key: &str, field: Field<Uint>) -> Result<Option<u64>, ApiError> {
        Ok(self
            .take(key, field, "a non-negative integer")?
            .map(|n| n.0))
    }

    /// An optional non-negative integer saturated to `u32`.
    pub(crate) fn uint32(&self, key: &str, field: Field<Uint>) -> Result<Option<u32>, ApiError> {
        Ok(self
            .uint(key, field)?
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX)))
    }

    /// An optional string from a fixed set.
    pub(crate) fn choice<'c>(
        &self,
        key: &str,
        field: Field<String>,
        choices: &[&'c str],
    ) -> Result<Option<&'c str>, ApiError> {
        let Some(s) = self.string(key, field)? else {
            return Ok(None);
        };
        choices
            .iter()
            .find(|c| **c == s)
            .copied()
            .map(Some)
            .ok_or_else(|| {
                ApiError::options(
                    key,
                    format!(
                        "in {} must be one of {}, got \"{s}\"",
                        self.what,
                        choices.join(", ")
                    ),
                )
            })
    }

    /// An optional JavaScript value (`undefined` reads as absent).
    pub(crate) fn value(&self, field: Field<Raw>) -> Option<JsValue> {
        match field {
            Field::Given(Raw(v)) if !v.is_undefined() => Some(v),
            _ => None,
        }
    }

    /// An optional satisfaction policy. Relay URLs in `required` are normalized like
    /// targets.
    pub(crate) fn policy(
        &self,
        key: &str,
        field: Field<PolicyInput>,
    ) -> Result<Option<Policy>, ApiError> {
        let input = match field {
            Field::Absent => return Ok(None),
            Field::Given(input) => input,
            Field::Bad => {
                let got = self.raw(key);
                return if got.is_undefined() {
                    Ok(None)
                } else {
                    Err(policy_error(describe_bad_policy(&got)))
                };
            }
        };
        Ok(Some(match input {
            PolicyInput::All => Policy::All,
            PolicyInput::Any => Policy::Any,
            PolicyInput::AtLeast(k) => Policy::AtLeast {
                k: u32::try_from(k.0).unwrap_or(u32::MAX),
            },
            PolicyInput::Required(Raw(relays)) => {
                let relays = string_array(&relays).ok_or_else(|| policy_error(REQUIRED_SHAPE))?;
                let mut out = Vec::with_capacity(relays.len());
                for (index, url) in relays.iter().enumerate() {
                    let url = RelayUrl::parse(url).map_err(|e| {
                        ApiError::from(e).with_details(Details {
                            index: Some(index),
                            ..Details::option("policy.required")
                        })
                    })?;
                    out.push(url.as_str().to_string());
                }
                Policy::Required { relays: out }
            }
        }))
    }
}

const REQUIRED_SHAPE: &str = "`required` must be an array of relay URL strings";

fn policy_error(message: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidPolicy,
        format!(
            "invalid policy: {message} (expected \"all\", \"any\", {{ atLeast: n }} or {{ required: [urls] }})"
        ),
    )
}

/// What is wrong with a policy serde did not take (only on that error path).
fn describe_bad_policy(v: &JsValue) -> String {
    if let Some(s) = v.as_string() {
        return format!("unknown policy \"{s}\"");
    }
    if !v.is_object() || Array::is_array(v) || v.is_function() {
        return format!("got {}", type_name(v));
    }
    let keys = Object::keys(v.unchecked_ref::<Object>());
    if keys.length() != 1 {
        return "an object policy must have exactly one key".into();
    }
    match keys.get(0).as_string().unwrap_or_default().as_str() {
        "atLeast" => "`atLeast` must be a positive integer".into(),
        "required" => REQUIRED_SHAPE.into(),
        other => format!("unknown policy key `{other}`"),
    }
}

/// An array whose elements are all strings.
pub(crate) fn string_array(v: &JsValue) -> Option<Vec<String>> {
    if !Array::is_array(v) {
        return None;
    }
    let arr: &Array = v.unchecked_ref();
    arr.iter().map(|x| x.as_string()).collect()
}

/// Event kinds: an array of at most 64 integers 0..=65535 (`newerKinds`).
pub(crate) fn kinds(v: &JsValue) -> Option<Vec<u16>> {
    if !Array::is_array(v) {
        return None;
    }
    let arr: &Array = v.unchecked_ref();
    let mut kinds = Vec::new();
    for k in arr.iter() {
        let k = k.as_f64()?;
        if kinds.len() == 64 || k.fract() != 0.0 || !(0.0..=65_535.0).contains(&k) {
            return None;
        }
        kinds.push(k as u16);
    }
    Some(kinds)
}

/// Reads relay URLs: an array of strings, each parsed and normalized, repeats dropped
/// (first-seen order kept; the core sorts them).
pub(crate) fn parse_relays(v: &JsValue) -> Result<Vec<String>, ApiError> {
    if !Array::is_array(v) {
        return Err(ApiError::argument(
            "relays",
            format!(
                "must be an array of relay URL strings, got {}",
                type_name(v)
            ),
        ));
    }
    let arr: &Array = v.unchecked_ref();
    let mut urls = Vec::with_capacity(arr.length() as usize);
    for (index, item) in arr.iter().enumerate() {
        let Some(s) = item.as_string() else {
            return Err(ApiError::new(
                ErrorCode::InvalidRelayUrl,
                format!(
                    "target relay #{index}: must be a string, got {}",
                    type_name(&item)
                ),
            )
            .with_details(Details::index(index)));
        };
        urls.push(s);
    }
    let normalized = crate::nostr::normalize_targets(&urls)?;
    Ok(normalized
        .into_iter()
        .map(|u| u.as_str().to_string())
        .collect())
}

/// A draft's template (`enqueue` with `sign: true`): an object or its JSON text, read
/// with the event's field checks (`nostr::template::Template::parse`).
pub(crate) fn parse_template(v: &JsValue, pow: Option<u8>) -> Result<Template, ApiError> {
    Ok(Template::parse(&event_text(v)?, pow)?)
}

/// Reads a signed event (an object with the NIP-01 fields, or its JSON text) and
/// checks its id; the caller checks its signature ([`Event::signature`]).
/// Either way the event is kept in its compact NIP-01 form (the seven fields; other
/// properties are dropped), so one signed event is one plan whichever way it is given
/// (same id, same sig). An object crosses as the JSON text of its seven fields
/// (`eventFieldsJson` in `glue.js`: one crossing), parsed strictly like given text.
pub(crate) fn parse_event(v: &JsValue) -> Result<Event, ApiError> {
    let event = Event::parse_json_compact(&event_text(v)?)?;
    event.verify_id()?;
    Ok(event)
}

/// The JSON text of an event (or a template) given as an object or as its text.
fn event_text(v: &JsValue) -> Result<String, ApiError> {
    let text = if let Some(text) = v.as_string() {
        text
    } else if v.is_object() && !Array::is_array(v) && !v.is_function() {
        super::sys::event_fields_json(v).map_err(|e| {
            ApiError::new(
                ErrorCode::InvalidEvent,
                "invalid event: its fields cannot be serialized as JSON",
            )
            .with_details(Details::reason("not_json"))
            .with_cause(e)
        })?
    } else {
        return Err(ApiError::new(
            ErrorCode::InvalidEvent,
            format!(
                "invalid event: expected a signed event object or its JSON text, got {}",
                type_name(v)
            ),
        )
        .with_details(Details::reason("not_object")));
    };
    Ok(text)
}

/// The most references one `acceptedRelays` call reads.
pub(crate) const MAX_EVENT_REFS: usize = 1_000;

/// Reads `acceptedRelays`' references: an array of event ids (64 lowercase hex) and
/// NIP-01 addresses (`kind:pubkey:d` of a replaceable or addressable kind), at most
/// [`MAX_EVENT_REFS`].
pub(crate) fn parse_event_refs(v: &JsValue) -> Result<Lookups, ApiError> {
    let bad = |index: usize, why: String| {
        ApiError::argument("refs", format!("reference #{index}: {why}"))
            .add_details(Details::index(index))
    };
    if !Array::is_array(v) {
        return Err(ApiError::argument(
            "refs",
            format!(
                "must be an array of event ids and addresses, got {}",
                type_name(v)
            ),
        ));
    }
    let arr: &Array = v.unchecked_ref();
    if arr.length() as usize > MAX_EVENT_REFS {
        return Err(ApiError::argument(
            "refs",
            format!("at most {MAX_EVENT_REFS} references"),
        ));
    }
    let mut out = Lookups::default();
    for (index, item) in arr.iter().enumerate() {
        let Some(s) = item.as_string() else {
            return Err(bad(
                index,
                format!("must be a string, got {}", type_name(&item)),
            ));
        };
        if crate::nostr::event::is_lower_hex(&s, 64) {
            out.event_ids.push(s);
            continue;
        }
        let Some(slot) = semantics::normalize_address(&s) else {
            return Err(bad(
                index,
                "must be an event id (64 lowercase hex) or an address `kind:pubkey:d` of a \
                 replaceable or addressable kind"
                    .into(),
            ));
        };
        out.slots.push(slot);
    }
    out.normalize();
    Ok(out)
}
