//! Shared by the browser tests that drive the public JavaScript API from Rust: JSON
//! values to JavaScript and back, and a method call as JavaScript makes it.
#![allow(dead_code)]

use js_sys::{Array, Function, Reflect};
use serde_json::Value;
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
