//! JSON for the crate, without a general-purpose JSON library in the .wasm: a small
//! [`Value`] type, a strict RFC 8259 parser ([`parse`]) and a text writer.
//!
//! The crate only ever needs integers (timestamps, kinds, counts), so a [`Number`]
//! keeps its validated text and converts to `u64`/`i64` only when it is an integer in
//! range; there is no float parsing or formatting code. Objects keep their members in
//! document order, repeats included, so the event parser can refuse a field given twice
//! ([`Value::get`] reads the last one, as a map would).
//!
//! The parser accepts exactly the JSON texts `serde_json::from_str` accepts (the tests
//! check this against it), with one documented difference: numbers are never
//! converted, so a number too large for an `f64` (`1e400`) is valid JSON here while
//! `serde_json` refuses it. It performs no I/O and never panics on any input.

use core::fmt;

mod parse;
mod write;

pub use parse::{parse, Error, MAX_DEPTH};
pub(crate) use write::JsonWriter;

#[cfg(test)]
mod tests;

/// A JSON number, kept as its validated text (e.g. `42`, `-7`, `1.5e3`).
///
/// Equality is textual: `1.0` and `1` are different numbers here. Only integers
/// convert: see [`Number::as_u64`] and [`Number::as_i64`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Number(String);

impl Number {
    /// The number's JSON text, exactly as parsed or written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The value when the text is a non-negative integer (no fraction, no exponent,
    /// no minus sign) that fits in a `u64`.
    pub fn as_u64(&self) -> Option<u64> {
        digits_value(self.0.as_bytes())
    }

    /// The value when the text is an integer (no fraction, no exponent) that fits in
    /// an `i64`. `-0` is not an integer here, as in `serde_json` (which reads it as a
    /// float).
    pub fn as_i64(&self) -> Option<i64> {
        match self.0.as_bytes() {
            [b'-', rest @ ..] => {
                let magnitude = digits_value(rest)?;
                if magnitude == 0 {
                    return None;
                }
                0i64.checked_sub_unsigned(magnitude)
            }
            digits => i64::try_from(digits_value(digits)?).ok(),
        }
    }

    /// A number from its JSON text, when the text is one valid JSON number.
    pub fn from_text(text: &str) -> Option<Number> {
        parse::number_len(text.as_bytes(), 0)
            .filter(|&len| len == text.len())
            .map(|_| Number(text.to_owned()))
    }
}

/// ASCII digits only, without leading zeros, fitting in a u64.
fn digits_value(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || (digits[0] == b'0' && digits.len() > 1) {
        return None;
    }
    let mut n: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(n)
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<u64> for Number {
    fn from(n: u64) -> Number {
        Number(n.to_string())
    }
}

impl From<i64> for Number {
    fn from(n: i64) -> Number {
        Number(n.to_string())
    }
}

/// A JSON value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Value {
    /// `null`.
    #[default]
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, kept as text.
    Number(Number),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object: its members in document order, repeated keys included.
    Object(Vec<(String, Value)>),
}

impl Value {
    /// The member `key` of an object: the last one when the key repeats (as a map that
    /// keeps the last insert would). `None` for a missing key or a non-object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|m| &m.1),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The number as a `u64`, if this is a non-negative integer in range
    /// ([`Number::as_u64`]).
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    /// The number as an `i64`, if this is an integer in range ([`Number::as_i64`]).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    /// The elements, if this is an array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The members, if this is an object.
    pub fn as_object(&self) -> Option<&[(String, Value)]> {
        match self {
            Value::Object(members) => Some(members),
            _ => None,
        }
    }

    /// True for `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Takes the value out, leaving `null`.
    pub fn take(&mut self) -> Value {
        core::mem::take(self)
    }

    /// The JSON type with an article, for messages: `null`, `a boolean`, `a number`,
    /// `a string`, `an array`, `an object`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }

    /// An object from `(key, value)` pairs, in their order.
    pub fn object<K: Into<String>>(pairs: impl IntoIterator<Item = (K, Value)>) -> Value {
        Value::Object(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

/// Compact JSON text (no whitespace), strings escaped as `serde_json` escapes them.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut w = JsonWriter::new();
        w.value(self);
        f.write_str(&w.finish())
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<u64> for Value {
    fn from(n: u64) -> Value {
        Value::Number(Number::from(n))
    }
}

impl From<u32> for Value {
    fn from(n: u32) -> Value {
        Value::from(u64::from(n))
    }
}

impl From<u16> for Value {
    fn from(n: u16) -> Value {
        Value::from(u64::from(n))
    }
}

impl From<usize> for Value {
    fn from(n: usize) -> Value {
        Value::from(n as u64)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Number(Number::from(n))
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}

impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(items: Vec<T>) -> Value {
        Value::Array(items.into_iter().map(Into::into).collect())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}
