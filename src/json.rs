//! A small JSON text writer: the handful of value shapes the crate emits (objects,
//! arrays, strings, unsigned integers, booleans, null, and any
//! `serde_json::Value`), written straight into a
//! `String`. It replaces `serde_json::to_string` over derived `Serialize` impls, whose
//! monomorphized serializers cost tens of KB of wasm. Strings are escaped exactly as
//! `serde_json` escapes them, so the text is byte-identical to what it produced.
//!
//! It only writes; it never parses or validates.

use std::fmt::Write as _;

use serde_json::Value;

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
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) fn bool(&mut self, value: bool) -> &mut Self {
        self.sep();
        self.out.push_str(if value { "true" } else { "false" });
        self
    }

    /// Writes a `serde_json::Value` exactly as `serde_json::to_string` does (object
    /// keys in the map's order, numbers through `Number`'s `Display`).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) fn value(&mut self, value: &Value) -> &mut Self {
        match value {
            Value::Null => self.null(),
            Value::Bool(b) => self.bool(*b),
            Value::Number(n) => {
                self.sep();
                let _ = write!(self.out, "{n}");
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
            Value::Object(map) => {
                self.begin_object();
                for (k, v) in map {
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
        out.push_str(&s[start..i]);
        out.push('\\');
        out.push(char::from(short));
        if short == b'u' {
            out.push_str("00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_escape_like_serde_json() {
        let mut all = String::new();
        for c in 0u8..0x80 {
            all.push(char::from(c));
        }
        all.push_str("é€😀\u{2028}");
        let mut w = JsonWriter::new();
        w.str(&all);
        assert_eq!(w.finish(), serde_json::to_string(&all).unwrap());
    }

    #[test]
    fn values_write_like_serde_json() {
        let v = serde_json::json!({
            "z": [1, -2, 1.5, 1e300, 12345.0, 0.1, u64::MAX, i64::MIN, null, true, false],
            "a": { "nested": ["x\n", {}], "e": [] },
            "m": "\u{1}é",
        });
        let mut w = JsonWriter::new();
        w.value(&v);
        assert_eq!(w.finish(), serde_json::to_string(&v).unwrap());
    }

    #[test]
    fn nesting_and_separators() {
        let mut w = JsonWriter::new();
        w.begin_object().key("a").u64(1).key("b").begin_array();
        w.str("x").null().bool(true).begin_object().end_object();
        w.end_array().key("c").begin_object().key("d").opt_u64(None);
        w.end_object().end_object();
        assert_eq!(
            w.finish(),
            r#"{"a":1,"b":["x",null,true,{}],"c":{"d":null}}"#
        );
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod props {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::JsonWriter;

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((any::<String>(), inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_value_writes_like_serde_json(v in value()) {
            let mut w = JsonWriter::new();
            w.value(&v);
            prop_assert_eq!(w.finish(), serde_json::to_string(&v).unwrap());
        }
    }
}
