//! Shared by the browser tests that drive the public JavaScript API from Rust: JSON
//! values to JavaScript and back, and a method call as JavaScript makes it.
#![allow(dead_code)]

use js_sys::{Array, Function, Reflect};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// A JSON value as the JavaScript value `JSON.parse` makes of it.
pub fn js(v: Value) -> JsValue {
    js_sys::JSON::parse(&v.to_string()).expect("json")
}

/// A JavaScript value as JSON (`undefined` is `null`).
pub fn rust(v: &JsValue) -> Value {
    if v.is_undefined() {
        return Value::Null;
    }
    let s: String = js_sys::JSON::stringify(v).expect("stringify").into();
    serde_json::from_str(&s).expect("json")
}

/// Calls `obj[method](...args)` like JavaScript; awaits the result when it is a promise.
pub async fn call(obj: &JsValue, method: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let f: Function = Reflect::get(obj, &JsValue::from_str(method))
        .expect("get")
        .dyn_into()
        .unwrap_or_else(|_| panic!("{method} is not a function"));
    let args: Array = args.iter().collect();
    let out = f.apply(obj, &args)?;
    match out.dyn_into::<js_sys::Promise>() {
        Ok(p) => JsFuture::from(p).await,
        Err(v) => Ok(v),
    }
}

/// The valid signed events of `tests/data/event_vectors.json` without an expiration and
/// not dated ahead (those wait for their `created_at`; the vectors are dated 1970, 2023,
/// 2024, 2100 and 2^53 - 1 s: the cutoff is a constant, tests break the clock), as JSON
/// values, in file order: 72 events.
pub fn valid_events() -> Vec<Value> {
    const NOT_AHEAD_S: u64 = 1_750_000_000;
    let doc: Value =
        serde_json::from_str(include_str!("../data/event_vectors.json")).expect("vectors");
    doc["vectors"]
        .as_array()
        .expect("array")
        .iter()
        .filter(|v| v["valid_sig"] == json!(true))
        .map(|v| v["json"].as_str().expect("json"))
        .filter(|j| !j.contains("expiration"))
        .map(|j| serde_json::from_str::<Value>(j).expect("event"))
        .filter(|e| e["created_at"].as_u64().is_some_and(|t| t <= NOT_AHEAD_S))
        .collect()
}

#[wasm_bindgen(inline_js = r#"
export function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }
export function counter(outbox, type) {
  const c = { n: 0, details: [] };
  outbox.addEventListener(type, (e) => { c.n += 1; c.details.push(e.detail); });
  return c;
}
export function transport(answers) {
  // answers: relay -> { ok, message } | "throw", read at each publish (a test may change
  // them); missing relays throw (refused connection). `log` lists [relay, id] per publish.
  const log = [];
  return {
    log,
    publish(relay, event) {
      log.push([relay, JSON.parse(event).id]);
      const a = answers[relay];
      if (!a || a === "throw") return Promise.reject(new Error("connection refused"));
      return Promise.resolve(a);
    },
  };
}
"#)]
extern "C" {
    /// A promise that resolves after `ms`.
    pub fn sleep(ms: u32) -> js_sys::Promise;
    /// `{ n, details }`: how many `kind` events `outbox` fired, and their details.
    pub fn counter(outbox: &JsValue, kind: &str) -> JsValue;
    /// A custom transport answering from `answers` (see the JavaScript above).
    pub fn transport(answers: &JsValue) -> JsValue;
}
