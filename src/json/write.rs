//! The JSON text writer: the handful of value shapes the crate emits (objects,
//! arrays, strings, unsigned integers, booleans, null, and any [`Value`]), written
//! straight into a `String`. It replaces `serde_json::to_string` over derived
//! `Serialize` impls, whose monomorphized serializers cost tens of KB of wasm. Strings
//! are escaped exactly as `serde_json` escapes them, so the text is byte-identical to
//! what it produced (numbers: for integers; other numbers keep the text they were
//! parsed from).
//!
//! It only writes; it never parses or validates.

use std::fmt::Write as _;

use super::Value;

/// JSON text under construction.
#[derive(Default)]
pub(crate) struct JsonWriter {
    out: String,
    /// True right after `{`, `[` or a key: the next item needs no comma.
    first: bool,
}

impl JsonWriter {
    /// An empty writer.
    pub(crate) fn new() -> Self {
        JsonWriter::default()
    }

    /// The text written so far.
    pub(crate) fn finish(self) -> String {
        self.out
    }

    fn sep(&mut self) {
        if !self.first && !self.out.is_empty() {
            self.out.push(',');
        }
        self.first = false;
    }

    /// Opens an object (as a value).
    pub(crate) fn begin_object(&mut self) -> &mut Self {
        self.sep();
        self.out.push('{');
        self.first = true;
        self
    }

    /// Closes the current object.
    pub(crate) fn end_object(&mut self) -> &mut Self {
        self.out.push('}');
        self.first = false;
        self
    }

    /// Opens an array (as a value).
    pub(crate) fn begin_array(&mut self) -> &mut Self {
        self.sep();
        self.out.push('[');
        self.first = true;
        self
    }

    /// Closes the current array.
    pub(crate) fn end_array(&mut self) -> &mut Self {
        self.out.push(']');
        self.first = false;
        self
    }

    /// Writes an object key; the next call writes its value.
    pub(crate) fn key(&mut self, key: &str) -> &mut Self {
        self.sep();
        escape_into(&mut self.out, key);
        self.out.push(':');
        self.first = true;
        self
    }

    /// Writes a string value.
    pub(crate) fn str(&mut self, value: &str) -> &mut Self {
        self.sep();
        escape_into(&mut self.out, value);
        self
    }

    /// Writes an unsigned integer value.
    pub(crate) fn u64(&mut self, value: u64) -> &mut Self {
        self.sep();
        let _ = write!(self.out, "{value}");
        self
    }

    /// Writes a boolean value.
    pub(crate) fn bool(&mut self, value: bool) -> &mut Self {
        self.sep();
        self.out.push_str(if value { "true" } else { "false" });
        self
    }

    /// Writes a [`Value`] compactly: members in their order (repeats included),
    /// numbers as their text. For integer-only values this is exactly what
    /// `serde_json::to_string` writes for the same JSON.
    pub(crate) fn value(&mut self, value: &Value) -> &mut Self {
        match value {
            Value::Null => self.null(),
            Value::Bool(b) => self.bool(*b),
            Value::Number(n) => {
                self.sep();
                self.out.push_str(n.as_str());
                self
            }
            Value::String(s) => self.str(s),
            Value::Array(items) => {
                self.begin_array();
                for item in items {
                    self.value(item);
                }
                self.end_array()
            }
            Value::Object(members) => {
                self.begin_object();
                for (k, v) in members {
                    self.key(k).value(v);
                }
                self.end_object()
            }
        }
    }

    /// Writes `null`.
    pub(crate) fn null(&mut self) -> &mut Self {
        self.sep();
        self.out.push_str("null");
        self
    }

    /// Writes an optional unsigned integer (`null` when absent).
    pub(crate) fn opt_u64(&mut self, value: Option<u64>) -> &mut Self {
        match value {
            Some(v) => self.u64(v),
            None => self.null(),
        }
    }

    /// Writes an optional string (`null` when absent).
    pub(crate) fn opt_str(&mut self, value: Option<&str>) -> &mut Self {
        match value {
            Some(v) => self.str(v),
            None => self.null(),
        }
    }

    /// Writes an array of strings.
    pub(crate) fn strs(&mut self, values: &[String]) -> &mut Self {
        self.begin_array();
        for v in values {
            self.str(v);
        }
        self.end_array()
    }
}

/// Appends `s` as a JSON string literal, escaped as `serde_json` does: `"` and `\`,
/// the short escapes `\b \f \n \r \t`, other control characters as `\u00XX`.
fn escape_into(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            0x0c => b'f',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            0..=0x1f => b'u',
            _ => continue,
        };
        // `get`: the positions are next to ASCII bytes (no panicking path in the .wasm).
        out.push_str(s.get(start..i).unwrap_or_default());
        out.push('\\');
        out.push(char::from(short));
        if short == b'u' {
            out.push_str("00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        }
        start = i + 1;
    }
    out.push_str(s.get(start..).unwrap_or_default());
    out.push('"');
}
