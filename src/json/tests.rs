//! The parser and writer against `serde_json`, the oracle: the same texts accepted and
//! refused, the same structure read, the same text written.

use super::{parse, JsonWriter, Number, Value, MAX_DEPTH};

/// Our value as a `serde_json::Value` (numbers read by serde_json from our text, a
/// repeated key keeps the last value as serde_json's map does).
pub(super) fn to_serde(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Number(n) => serde_json::from_str(n.as_str()).expect("serde_json reads it"),
        Value::String(s) => serde_json::Value::String(s.clone()),
        Value::Array(items) => serde_json::Value::Array(items.iter().map(to_serde).collect()),
        Value::Object(members) => serde_json::Value::Object(
            members
                .iter()
                .map(|(k, v)| (k.clone(), to_serde(v)))
                .collect(),
        ),
    }
}

/// A `serde_json::Value` built as ours (integers through our `From`, other numbers
/// as the text serde_json writes for them).
pub(super) fn from_serde(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Value::from(u),
            (None, Some(i)) => Value::from(i),
            _ => Value::Number(Number(n.to_string())),
        },
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(items) => Value::Array(items.iter().map(from_serde).collect()),
        serde_json::Value::Object(map) => {
            Value::object(map.iter().map(|(k, v)| (k.as_str(), from_serde(v))))
        }
    }
}

/// Both parsers refuse `text` (ours with a message and an offset inside the text).
fn both_refuse(text: &str) {
    let ours = parse(text);
    let theirs = serde_json::from_str::<serde_json::Value>(text);
    assert!(
        theirs.is_err(),
        "serde_json accepts {:.60?}: {theirs:?}",
        text
    );
    let e = ours.expect_err(&format!("{:.60?}", text));
    assert!(e.offset() <= text.len(), "{text:.60?}: {e}");
    assert!(!e.message().is_empty());
}

/// Both parsers accept `text` and read the same value.
fn both_accept(text: &str) -> Value {
    let ours = parse(text).unwrap_or_else(|e| panic!("{text:.60?}: {e}"));
    let theirs: serde_json::Value = serde_json::from_str(text).expect(text);
    assert_eq!(to_serde(&ours), theirs, "{text:.60?}");
    ours
}

#[test]
fn invalid_texts_are_refused_by_both() {
    let deep_array = "[".repeat(200) + &"]".repeat(200);
    let deep_object = "{\"a\":".repeat(200) + "1" + &"}".repeat(200);
    let cases: Vec<&str> = vec![
        // empty and whitespace only
        "",
        " \n\t\r",
        // truncated
        "[",
        "[1",
        "[1,",
        "{",
        "{\"a\"",
        "{\"a\":",
        "{\"a\":1",
        "\"abc",
        "\"abc\\",
        "\"\\u12",
        "tru",
        "nul",
        "fals",
        // trailing commas and missing separators
        "[1,]",
        "{\"a\":1,}",
        "[,1]",
        "[1 2]",
        "{\"a\" 1}",
        "{\"a\":1 \"b\":2}",
        "{,}",
        // keys must be strings
        "{a:1}",
        "{1:1}",
        "{null:1}",
        // bad escapes
        "\"\\x\"",
        "\"\\U0041\"",
        "\"\\u00g0\"",
        "\"\\'\"",
        "\"\\\u{e9}\"",
        // lone surrogates
        "\"\\ud800\"",
        "\"\\udbff\"",
        "\"\\udc00\"",
        "\"\\udfff\\ud800\"",
        "\"\\ud800\\u0041\"",
        "\"\\ud800\\ud800\"",
        "\"\\ud800\\n\"",
        "\"\\ud800x\"",
        // raw control characters in strings
        "\"\u{0}\"",
        "\"\u{1f}\"",
        "\"a\nb\"",
        "\"\t\"",
        "{\"\u{1}\":1}",
        // numbers
        "01",
        "00",
        "-01",
        "-",
        "--1",
        "+1",
        "1.",
        ".5",
        "1.e5",
        "1e",
        "1e+",
        "1E-",
        "0x10",
        "1_000",
        "NaN",
        "Infinity",
        "-Infinity",
        "[1.]",
        "[-]",
        // nesting too deep
        &deep_array,
        &deep_object,
        // trailing garbage
        "{} x",
        "1 2",
        "[] []",
        "nullx",
        "true false",
        "\"a\"\"b\"",
        "{}\u{0}",
        // a byte order mark is not whitespace
        "\u{feff}{}",
        "{}\u{feff}",
        // other whitespace is not JSON whitespace
        "\u{a0}1",
        "\u{b}1",
        "\u{c}1",
        // comments and single quotes
        "[1 /* c */]",
        "// c\n1",
        "'a'",
    ];
    for text in cases {
        both_refuse(text);
    }
}

#[test]
fn valid_texts_read_alike() {
    let cases = [
        "null",
        "true",
        "false",
        "0",
        "-0",
        "-1",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "1.5e3",
        "1.5E+3",
        "2e-3",
        "0.0",
        "-0.0e0",
        "123456789012345678901234567890",
        "\"\"",
        "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
        "\"\\u0000\\u001f\\u00e9\\u20AC\"",
        "\"\\ud83d\\ude00 \\uD83D\\uDE00\"",
        "\"\u{7f}é€😀\u{2028}\"",
        " \t\n\r[ 1 , \"a\" , { \"b\" : [ ] } , null ] \n",
        "[]",
        "{}",
        "[[[]]]",
        "{\"a\":{\"b\":{\"c\":[1,2,{\"d\":null}]}}}",
        "[\"COUNT\",\"sub\",{\"count\":1.5e3}]",
        "[\"EVENT\",\"s\",{\"score\":-0.25,\"ratio\":1E-7}]",
        "{\"z\":1,\"a\":2,\"m\":3}",
        "{\"a\":1,\"a\":2}",
        "{\"\":0}",
    ];
    for text in cases {
        both_accept(text);
    }
}

#[test]
fn numbers_beyond_f64_are_valid_here_and_refused_by_serde_json() {
    // The one known difference (see the module docs): serde_json converts every
    // number and refuses one that overflows an f64; ours keeps the text.
    for text in ["1e400", "-1e400", "[1E999]", &"9".repeat(400)] {
        let e = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
        assert!(e.to_string().contains("number out of range"), "{e}");
        let v = parse(text).unwrap();
        assert_eq!(v.to_string(), text);
        assert_eq!(v.as_u64(), None);
    }
}

#[test]
fn nesting_limit_is_serde_json_limit() {
    for depth in 1..=MAX_DEPTH + 3 {
        let open = |i: usize| if i % 2 == 0 { "[" } else { "{\"k\":" };
        let close = |i: usize| if i % 2 == 0 { "]" } else { "}" };
        let arrays = "[".repeat(depth) + "0" + &"]".repeat(depth);
        let objects = "{\"k\":".repeat(depth) + "0" + &"}".repeat(depth);
        let mixed: String = (0..depth).map(open).collect::<String>()
            + "0"
            + &(0..depth).rev().map(close).collect::<String>();
        for text in [arrays, objects, mixed] {
            if depth <= MAX_DEPTH {
                both_accept(&text);
            } else {
                both_refuse(&text);
                assert_eq!(parse(&text).unwrap_err().message(), "nesting too deep");
            }
        }
    }
    // The limit is on depth, not on the number of containers.
    both_accept(&format!("[{}[]]", "[[]],".repeat(1000)));
}

#[test]
fn errors_say_what_and_where() {
    for (text, message, offset) in [
        ("", "unexpected end of input", 0),
        ("[1,]", "expected a JSON value", 3),
        ("{} x", "trailing characters", 3),
        ("\"\\ud800\"", "lone surrogate in \\u escape", 7),
        ("\"a\nb\"", "control character in string", 2),
        ("\"\\x\"", "invalid escape", 2),
        ("01", "trailing characters", 1),
        ("1.", "invalid number", 0),
        ("{1:1}", "expected a string key", 1),
        ("{\"a\" 1}", "expected `:`", 5),
        ("[1 2]", "expected `,` or `]`", 3),
        ("{\"a\":1 2}", "expected `,` or `}`", 7),
        ("[tru]", "invalid literal", 1),
        ("\"ab", "unterminated string", 3),
        ("[1", "unexpected end of input", 2),
    ] {
        let e = parse(text).unwrap_err();
        assert_eq!((e.message(), e.offset()), (message, offset), "{text:?}");
        assert_eq!(e.to_string(), format!("{message} at byte {offset}"));
    }
}

#[test]
fn repeated_keys_are_kept_in_order_and_get_reads_the_last() {
    let v = parse(r#"{"a":1,"b":2,"a":3}"#).unwrap();
    let members = v.as_object().unwrap();
    let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["a", "b", "a"]);
    assert_eq!(v.get("a").and_then(Value::as_u64), Some(3));
    assert_eq!(v.get("c"), None);
    assert_eq!(Value::Null.get("a"), None);
    // Written back as read.
    assert_eq!(v.to_string(), r#"{"a":1,"b":2,"a":3}"#);
}

#[test]
fn numbers_convert_like_serde_json() {
    for text in [
        "0",
        "-0",
        "1",
        "-1",
        "4294967296",
        "9007199254740991",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "18446744073709551615",
        "18446744073709551616",
        "1.0",
        "1e3",
        "1E0",
        "-1.5",
        "0.5",
        "100000000000000000000000",
    ] {
        let ours = parse(text).unwrap();
        let theirs: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(ours.as_u64(), theirs.as_u64(), "{text}");
        assert_eq!(ours.as_i64(), theirs.as_i64(), "{text}");
        let Value::Number(n) = &ours else {
            panic!("{text} is a number")
        };
        assert_eq!(n.to_string(), text);
        assert_eq!(Number::from_text(text).as_ref(), Some(n));
    }
    for bad in ["", "-", "01", "1.", " 1", "1 ", "+1", "1e", "a"] {
        assert_eq!(Number::from_text(bad), None, "{bad:?}");
    }
    assert_eq!(Value::from(u64::MAX).to_string(), "18446744073709551615");
    assert_eq!(Value::from(i64::MIN).to_string(), "-9223372036854775808");
    assert_eq!(Value::from(-5i64).as_i64(), Some(-5));
    assert_eq!(Value::from(7u16).as_u64(), Some(7));
    assert_eq!(Value::from(true).as_u64(), None);
}

#[test]
fn accessors_and_conversions() {
    let mut v = Value::object([
        ("s", Value::from("x")),
        ("b", Value::from(true)),
        ("a", Value::from(vec!["p", "q"])),
        ("n", Value::from(None::<u64>)),
        ("u", Value::from(Some(3usize))),
    ]);
    assert_eq!(v.get("s").and_then(Value::as_str), Some("x"));
    assert_eq!(v.get("b").and_then(Value::as_bool), Some(true));
    assert_eq!(
        v.get("a").and_then(Value::as_array).map(<[_]>::len),
        Some(2)
    );
    assert!(v.get("n").is_some_and(Value::is_null));
    assert_eq!(v.get("u").and_then(Value::as_u64), Some(3));
    assert_eq!(v.type_name(), "an object");
    assert_eq!(
        v.to_string(),
        r#"{"s":"x","b":true,"a":["p","q"],"n":null,"u":3}"#
    );
    let taken = v.take();
    assert!(v.is_null());
    assert_eq!(taken.as_object().map(<[_]>::len), Some(5));
    for (value, name) in [
        (Value::Null, "null"),
        (Value::from(false), "a boolean"),
        (Value::from(1u32), "a number"),
        (Value::from(""), "a string"),
        (Value::Array(vec![]), "an array"),
    ] {
        assert_eq!(value.type_name(), name);
    }
}

#[test]
fn strings_escape_like_serde_json() {
    let mut all = String::new();
    for c in 0u8..0x80 {
        all.push(char::from(c));
    }
    all.push_str("é€😀\u{2028}");
    let mut w = JsonWriter::new();
    w.str(&all);
    let text = w.finish();
    assert_eq!(text, serde_json::to_string(&all).unwrap());
    assert_eq!(parse(&text).unwrap(), Value::String(all));
}

#[test]
fn values_write_like_serde_json() {
    let v = serde_json::json!({
        "z": [1, -2, 12345, u64::MAX, i64::MIN, null, true, false],
        "a": { "nested": ["x\n", {}], "e": [] },
        "m": "\u{1}é",
    });
    let mut w = JsonWriter::new();
    w.value(&from_serde(&v));
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

#[cfg(not(target_arch = "wasm32"))]
mod props {
    use proptest::prelude::*;

    use super::{from_serde, to_serde};
    use crate::json::{parse, JsonWriter};

    fn value(floats: bool) -> impl Strategy<Value = serde_json::Value> {
        use serde_json::Value;
        let number = if floats {
            prop_oneof![
                any::<u64>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                any::<f64>().prop_map(Value::from),
            ]
            .boxed()
        } else {
            prop_oneof![
                any::<u64>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
            ]
            .boxed()
        };
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            number,
            any::<String>().prop_map(Value::from),
            "[a-z\\\\\"\u{0}-\u{1f}]{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((any::<String>(), inner), 0..5)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// Pieces of JSON and near-JSON, glued at random: mostly invalid texts close to
    /// valid ones.
    fn jsonish() -> impl Strategy<Value = String> {
        const TOKENS: &[&str] = &[
            "{", "}", "[", "]", ",", ":", " ", "\n", "\"", "\"a\"", "\"k\":", "\\", "\\u",
            "\\ud83d", "\\ude00", "\\n", "\\x", "0", "1", "-", ".", "e", "E", "+", "5", "01",
            "1.5e3", "null", "true", "false", "nul", "\u{0}", "\u{1f}", "é", "😀", "\u{feff}",
            "\t", "/", "x",
        ];
        prop::collection::vec(prop::sample::select(TOKENS), 0..24).prop_map(|v| v.concat())
    }

    /// Ours and serde_json agree on `text`: both refuse it, or both read the same
    /// value. The one known difference: serde_json refuses a number that overflows
    /// an f64 (`number out of range`); ours keeps its text.
    fn agree(text: &str) -> Result<(), TestCaseError> {
        let ours = parse(text);
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(theirs) => {
                let ours = ours.map_err(|e| {
                    TestCaseError::fail(format!("{text:?}: serde_json accepts, ours: {e}"))
                })?;
                prop_assert_eq!(to_serde(&ours), theirs, "{:?}", text);
            }
            Err(e) if e.to_string().contains("number out of range") => {}
            Err(e) => prop_assert!(ours.is_err(), "{:?}: ours accepts, serde_json: {}", text, e),
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn serde_json_text_reads_back_the_same(v in value(true)) {
            let text = serde_json::to_string(&v).unwrap();
            let ours = parse(&text).unwrap();
            // The same structure as serde_json reads from the text (not always `v`:
            // serde_json's float parsing does not round-trip every f64 it writes).
            let theirs: serde_json::Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(to_serde(&ours), theirs);
            // Written back, it is the same text (numbers keep their text).
            let mut w = JsonWriter::new();
            w.value(&ours);
            prop_assert_eq!(w.finish(), text.clone());
            // Pretty-printed text (whitespace everywhere) reads the same.
            let pretty = serde_json::to_string_pretty(&v).unwrap();
            prop_assert_eq!(parse(&pretty).unwrap(), ours);
        }

        #[test]
        fn integer_values_write_like_serde_json(v in value(false)) {
            let mut w = JsonWriter::new();
            w.value(&from_serde(&v));
            prop_assert_eq!(w.finish(), serde_json::to_string(&v).unwrap());
        }

        #[test]
        fn jsonish_texts_are_judged_alike(text in jsonish()) {
            agree(&text)?;
        }

        #[test]
        fn arbitrary_texts_are_judged_alike(text in any::<String>()) {
            agree(&text)?;
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
            agree(&String::from_utf8_lossy(&bytes))?;
        }
    }
}
