//! Delivery after the policy's verdict, through the JavaScript API in a real browser:
//! policy `"all"` over a relay that accepts, one that refuses for good and one that is
//! down. The app is told the verdict once (`exhausted`); the relay that was down gets
//! the event when it is back (stage `delivering` meanwhile, counted by `status()`), the
//! refusing relay never again; `settled` reports the end of delivery. With
//! `stopWhenSatisfied` (per record or per outbox) delivery stops at the verdict; a bad
//! value of the option is a typed error and stores nothing.
#![cfg(target_arch = "wasm32")]

use js_sys::Reflect;
use nostr_outbox::js::{Outbox, OutboxError};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

#[path = "js_support/mod.rs"]
mod js_support;
use js_support::{call, counter, js, rust, sleep, transport, valid_events};

wasm_bindgen_test_configure!(run_in_browser);

const A: &str = "wss://a.example";
const B: &str = "wss://b.example";
const C: &str = "wss://c.example";

fn event_obj(i: usize) -> Value {
    valid_events().swap_remove(i)
}

async fn open_with(options: Value, transport: &JsValue) -> JsValue {
    let o = js(options);
    Reflect::set(&o, &"transport".into(), transport).expect("set");
    JsFuture::from(Outbox::open(o)).await.expect("open")
}

async fn ok(obj: &JsValue, method: &str, args: &[JsValue]) -> Value {
    match call(obj, method, args).await {
        Ok(v) => rust(&v),
        Err(e) => panic!("{method} failed: {:?}", rust(&e)),
    }
}

fn get(v: &JsValue, key: &str) -> Value {
    rust(&Reflect::get(v, &key.into()).expect("get"))
}

/// The stages of the records a [`counter`] saw, in order.
fn stages(c: &JsValue) -> Value {
    let details = get(c, "details");
    let list = details
        .as_array()
        .map(|d| d.iter().map(|r| r["stage"].clone()).collect());
    Value::Array(list.unwrap_or_default())
}

/// How many times `relay` was sent the event `id`.
fn sent(t: &JsValue, relay: &str, id: &Value) -> usize {
    get(t, "log")
        .as_array()
        .expect("log")
        .iter()
        .filter(|e| e[0] == json!(relay) && &e[1] == id)
        .count()
}

/// Flushes until the record `id` leaves `stage` (its retry time is a few ms away);
/// at most 50 flushes.
async fn flush_past(o: &JsValue, id: &Value, stage: &str) -> Value {
    for _ in 0..50 {
        ok(o, "flush", &[]).await;
        let r = ok(o, "get", &[js(id.clone())]).await;
        if r["stage"] != json!(stage) {
            return r;
        }
        JsFuture::from(sleep(20)).await.expect("sleep");
    }
    panic!("{id} stayed {stage}");
}

#[wasm_bindgen_test]
async fn a_relay_that_was_down_gets_the_event_after_another_refused_it() {
    let answers = js(json!({
        A: { "ok": true, "message": "" },
        B: { "ok": false, "message": "blocked: not on the list" },
    }));
    let t = transport(&answers);
    let o = open_with(
        json!({ "storage": "memory", "baseDelayMs": 10, "maxDelayMs": 20 }),
        &t,
    )
    .await;
    let exhausted = counter(&o, "exhausted");
    let settled = counter(&o, "settled");
    let delivered = counter(&o, "delivered");
    let id = ok(&o, "enqueue", &[js(event_obj(0)), js(json!([A, B, C]))]).await["id"].clone();
    let stats = ok(&o, "flush", &[]).await;
    assert_eq!(
        (&stats["exhausted"], &stats["retrying"], &stats["settled"]),
        (&json!(1), &json!(0), &json!(0))
    );
    let r = ok(&o, "get", &[js(id.clone())]).await;
    assert_eq!(r["stage"], json!("delivering"), "{r}");
    assert_eq!(r["satisfaction"], json!("exhausted"));
    assert_eq!(r["reason"], Value::Null);
    assert_eq!(r["stopWhenSatisfied"], json!(false));
    assert!(r["nextAttemptAt"].as_u64().is_some());
    let states: Vec<&Value> = r["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .map(|t| &t["state"])
        .collect();
    assert_eq!(
        states,
        [&json!("accepted"), &json!("rejected"), &json!("open")]
    );
    let status = ok(&o, "status", &[]).await;
    assert_eq!(
        (&status["delivering"], &status["total"]),
        (&json!(1), &json!(1))
    );
    assert_eq!(stages(&exhausted), json!(["delivering"]));
    // c is back.
    Reflect::set(
        &answers,
        &C.into(),
        &js(json!({ "ok": true, "message": "" })),
    )
    .expect("set");
    let r = flush_past(&o, &id, "delivering").await;
    assert_eq!(
        (&r["stage"], &r["reason"], &r["satisfaction"]),
        (&json!("exhausted"), &json!("rejected"), &json!("exhausted"))
    );
    assert_eq!(r["targets"][2]["state"], json!("accepted"));
    assert_eq!(
        (sent(&t, A, &id), sent(&t, B, &id), sent(&t, C, &id)),
        (1, 1, 2),
        "accepted and refused relays are sent the event once, c until it accepts"
    );
    // The verdict was told once; the end of delivery once.
    assert_eq!(get(&exhausted, "n"), json!(1));
    assert_eq!(stages(&settled), json!(["exhausted"]));
    assert_eq!(get(&delivered, "n"), json!(0));
    let status = ok(&o, "status", &[]).await;
    assert_eq!(
        (&status["delivering"], &status["exhausted"]),
        (&json!(0), &json!(1))
    );
    ok(&o, "close", &[]).await;
}

#[wasm_bindgen_test]
async fn satisfied_records_keep_delivering_unless_asked_to_stop() {
    let answers = js(json!({ A: { "ok": true, "message": "" } }));
    let t = transport(&answers);
    let o = open_with(
        json!({ "storage": "memory", "baseDelayMs": 10, "maxDelayMs": 20 }),
        &t,
    )
    .await;
    let delivered = counter(&o, "delivered");
    let going_on = ok(
        &o,
        "enqueue",
        &[
            js(event_obj(0)),
            js(json!([A, C])),
            js(json!({ "policy": "any" })),
        ],
    )
    .await["id"]
        .clone();
    let stopping = ok(
        &o,
        "enqueue",
        &[
            js(event_obj(1)),
            js(json!([A, C])),
            js(json!({ "policy": "any", "stopWhenSatisfied": true })),
        ],
    )
    .await["id"]
        .clone();
    ok(&o, "flush", &[]).await;
    let r = ok(&o, "get", &[js(going_on.clone())]).await;
    assert_eq!(
        (&r["stage"], &r["satisfaction"]),
        (&json!("delivering"), &json!("satisfied"))
    );
    let r = ok(&o, "get", &[js(stopping.clone())]).await;
    assert_eq!(
        (&r["stage"], &r["satisfaction"], &r["stopWhenSatisfied"]),
        (&json!("satisfied"), &json!("satisfied"), &json!(true))
    );
    let mut stages: Vec<Value> = stages(&delivered).as_array().cloned().unwrap_or_default();
    stages.sort_by_key(|s| s.to_string());
    assert_eq!(stages, [json!("delivering"), json!("satisfied")]);
    Reflect::set(
        &answers,
        &C.into(),
        &js(json!({ "ok": true, "message": "" })),
    )
    .expect("set");
    let r = flush_past(&o, &going_on, "delivering").await;
    assert_eq!(r["stage"], json!("satisfied"));
    assert_eq!(r["targets"][1]["state"], json!("accepted"));
    assert_eq!(sent(&t, C, &stopping), 1, "stopped at the verdict");
    assert_eq!(get(&delivered, "n"), json!(2), "delivered once per record");
    ok(&o, "close", &[]).await;

    // The outbox's default: every record stops at its verdict.
    let answers = js(json!({ A: { "ok": true, "message": "" } }));
    let t = transport(&answers);
    let o = open_with(
        json!({ "storage": "memory", "stopWhenSatisfied": true }),
        &t,
    )
    .await;
    let id = ok(
        &o,
        "enqueue",
        &[
            js(event_obj(0)),
            js(json!([A, C])),
            js(json!({ "policy": "any" })),
        ],
    )
    .await["id"]
        .clone();
    ok(&o, "flush", &[]).await;
    let r = ok(&o, "get", &[js(id)]).await;
    assert_eq!(r["stage"], json!("satisfied"));
    ok(&o, "close", &[]).await;
}

#[wasm_bindgen_test]
async fn a_bad_stop_when_satisfied_is_a_typed_error_and_stores_nothing() {
    let t = transport(&js(json!({})));
    let o = open_with(json!({ "storage": "memory" }), &t).await;
    for (method, args) in [
        (
            "enqueue",
            vec![
                js(event_obj(0)),
                js(json!([A])),
                js(json!({ "stopWhenSatisfied": "yes" })),
            ],
        ),
        (
            "enqueueMany",
            vec![js(
                json!([{ "event": event_obj(0), "relays": [A], "stopWhenSatisfied": 1 }]),
            )],
        ),
    ] {
        match call(&o, method, &args).await {
            Ok(v) => panic!("{method} should fail, got {:?}", rust(&v)),
            Err(e) => {
                assert!(e.is_instance_of::<OutboxError>(), "{e:?}");
                let err: &OutboxError = e.unchecked_ref();
                assert_eq!(err.code(), "invalid_options", "{method}");
            }
        }
    }
    assert_eq!(ok(&o, "status", &[]).await["total"], json!(0));
    ok(&o, "close", &[]).await;
    match JsFuture::from(Outbox::open(js(
        json!({ "storage": "memory", "stopWhenSatisfied": "no" }),
    )))
    .await
    {
        Ok(_) => panic!("open should refuse a non-boolean stopWhenSatisfied"),
        Err(e) => {
            let err: &OutboxError = e.unchecked_ref();
            assert_eq!(err.code(), "invalid_options");
        }
    }
}
