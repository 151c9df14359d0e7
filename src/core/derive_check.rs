//! Test support: holds a hand-written `Deserialize` to the derive it replaced (kept in
//! the test module beside it), over the same generated documents. Shared by the
//! readers of `Outcome` and `Policy`.

use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde::Deserialize;

/// A value inside a document, where serde_json places errors of buffered content.
#[derive(Debug, Deserialize)]
struct Doc<T> {
    #[allow(dead_code)]
    v: T,
    #[allow(dead_code)]
    z: u8,
}

/// Both readers agree on `text`, alone and inside a document: the same value (`H`,
/// the hand-written reader's type; `D`, the derive's, turned into `H`) or the same
/// message (line and column included).
pub(crate) fn same_as_derived<H, D>(text: &str)
where
    H: DeserializeOwned + PartialEq + Debug,
    D: DeserializeOwned + Into<H>,
{
    let hand = serde_json::from_str::<H>(text).map_err(|e| e.to_string());
    let derived = serde_json::from_str::<D>(text)
        .map(Into::into)
        .map_err(|e| e.to_string());
    assert_eq!(hand, derived, "{text}");
    let doc = format!("{{\"v\":{text},\"z\":1}}");
    let hand = serde_json::from_str::<Doc<H>>(&doc).map(|d| d.v);
    let derived = serde_json::from_str::<Doc<D>>(&doc).map(|d| d.v.into());
    assert_eq!(
        hand.map_err(|e| e.to_string()),
        derived.map_err(|e| e.to_string()),
        "{doc}"
    );
}

/// Documents built of `values`: every map of one to three `"key": value` entries (any
/// of `keys`, repeats included), every array of one to three values, each value alone,
/// and `{}` and `[]`.
pub(crate) fn documents(keys: &[&str], values: &[&str]) -> Vec<String> {
    let entries: Vec<String> = keys
        .iter()
        .flat_map(|k| values.iter().map(move |v| format!("\"{k}\":{v}")))
        .collect();
    let mut docs = vec!["{}".to_string(), "[]".to_string()];
    for a in &entries {
        docs.push(format!("{{{a}}}"));
        for b in &entries {
            docs.push(format!("{{{a},{b}}}"));
            for c in &entries {
                docs.push(format!("{{{a},{b},{c}}}"));
            }
        }
    }
    for a in values {
        docs.push(a.to_string());
        docs.push(format!("[{a}]"));
        for b in values {
            docs.push(format!("[{a},{b}]"));
            for c in values {
                docs.push(format!("[{a},{b},{c}]"));
            }
        }
    }
    docs
}
