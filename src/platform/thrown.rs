//! What a thrown JavaScript value says: its `name` and `message` when it is an object
//! that has them (an `Error`, a `DOMException` from another realm included), else its
//! string form, else its JSON. Every layer that reports a JavaScript failure (the
//! WebSocket transport, the signer, the storage adapter, IndexedDB, an app's transport)
//! reads it here.

use js_sys::Reflect;
use wasm_bindgen::prelude::*;

/// The longest message kept of a thrown value, in characters.
const MAX_CHARS: usize = 500;

/// A thrown JavaScript value's `name` (empty when it has none) and `message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Thrown {
    /// `TypeError`, `QuotaExceededError`, …; empty for a thrown string or plain value.
    pub name: String,
    /// The message, or the value's string or JSON form (at most 500 characters).
    pub message: String,
}

/// Reads `e` (see the module documentation).
pub(crate) fn thrown(e: &JsValue) -> Thrown {
    let text = |key: &str| {
        Reflect::get(e, &JsValue::from_str(key))
            .ok()
            .and_then(|v| v.as_string())
    };
    let (name, message) = if let Some(s) = e.as_string() {
        (None, Some(s))
    } else if e.is_object() {
        (text("name"), text("message"))
    } else {
        (None, None)
    };
    let message = message.unwrap_or_else(|| {
        // `JSON.stringify(undefined)` is `undefined`, not a string: never converted
        // as one (that panicked, for a signer rejecting with `undefined`).
        js_sys::JSON::stringify(e)
            .ok()
            .and_then(|s| JsValue::from(s).as_string())
            .unwrap_or_else(|| "unknown JavaScript value".to_owned())
    });
    Thrown {
        name: name.unwrap_or_default(),
        message: message.chars().take(MAX_CHARS).collect(),
    }
}

/// `name: message`, or the message alone when there is no name.
pub(crate) fn describe(e: &JsValue) -> String {
    thrown(e).into_text()
}

impl Thrown {
    /// `name: message`, or the message alone when there is no name (no formatting
    /// machinery: it runs on failure paths only).
    pub(crate) fn into_text(self) -> String {
        if self.name.is_empty() {
            self.message
        } else {
            let mut s = self.name;
            s.push_str(": ");
            s.push_str(&self.message);
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

    wasm_bindgen_test_configure!(run_in_browser);

    fn eval(code: &str) -> JsValue {
        js_sys::eval(code).expect("eval")
    }

    #[wasm_bindgen_test]
    fn every_kind_of_thrown_value_is_described() {
        let cases = [
            ("new TypeError('bad')", "TypeError", "bad", "TypeError: bad"),
            (
                "new DOMException('full', 'QuotaExceededError')",
                "QuotaExceededError",
                "full",
                "QuotaExceededError: full",
            ),
            ("'just text'", "", "just text", "just text"),
            ("({ message: 'no name' })", "", "no name", "no name"),
            (
                "({ code: 4001 })",
                "",
                r#"{"code":4001}"#,
                r#"{"code":4001}"#,
            ),
            ("42", "", "42", "42"),
            (
                "undefined",
                "",
                "unknown JavaScript value",
                "unknown JavaScript value",
            ),
        ];
        for (code, name, message, text) in cases {
            let t = thrown(&eval(code));
            assert_eq!(
                (t.name.as_str(), t.message.as_str()),
                (name, message),
                "{code}"
            );
            assert_eq!(describe(&eval(code)), text, "{code}");
        }
        // Long messages are cut at 500 characters; a cycle cannot be stringified.
        assert_eq!(thrown(&eval("'x'.repeat(2000)")).message.len(), 500);
        let cycle = eval("(() => { const o = {}; o.o = o; return o; })()");
        assert_eq!(thrown(&cycle).message, "unknown JavaScript value");
    }
}
