//! Runtime feature detection and its fallbacks, in every browser of the browser tier:
//! without Web Locks (old Safari, some embedded webviews) two outboxes of one database
//! both flush, and the expiring leases alone keep every record to one publisher;
//! without a cryptographic random source (`crypto.getRandomValues`) `open` refuses
//! with `no_random_source` (never a `Math.random` stand-in).
#![cfg(target_arch = "wasm32")]

use nostr_outbox::js::{Outbox, OutboxError};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

#[path = "js_support/mod.rs"]
mod js_support;
use js_support::{call, js, rust};

wasm_bindgen_test_configure!(run_in_browser);

const VECTORS: &str = include_str!("data/event_vectors.json");

#[wasm_bindgen(inline_js = r#"
export function hideWebLocks() {
  const had = "locks" in navigator;
  Object.defineProperty(navigator, "locks", { value: undefined, configurable: true });
  return had;
}
export function restoreWebLocks() { delete navigator.locks; return navigator.locks !== undefined; }
// Hides `globalThis.crypto` (an own property of the global object, or inherited) and
// `Crypto.prototype.getRandomValues`; returns a function that puts both back as they were.
// Hiding the method as well is for WebKit: JavaScriptCore's baseline JIT keeps reading
// the old `crypto` accessor in wasm-bindgen's hot `globalThis.crypto.getRandomValues(…)`
// glue after it is redefined (seen in WebKitGTK 2.50; gone with JSC_useBaselineJIT=false),
// so hiding `crypto` alone leaves the source reachable there.
export function hideCrypto() {
  let owner = globalThis;
  while (owner && !Object.getOwnPropertyDescriptor(owner, "crypto")) owner = Object.getPrototypeOf(owner);
  const original = owner ? Object.getOwnPropertyDescriptor(owner, "crypto") : undefined;
  const proto = globalThis.Crypto?.prototype;
  const method = proto ? Object.getOwnPropertyDescriptor(proto, "getRandomValues") : undefined;
  Object.defineProperty(globalThis, "crypto", { value: undefined, configurable: true, writable: true });
  if (method) Object.defineProperty(proto, "getRandomValues", { value: undefined, configurable: true, writable: true });
  return () => {
    if (method) Object.defineProperty(proto, "getRandomValues", method);
    if (owner === globalThis && original) Object.defineProperty(globalThis, "crypto", original);
    else delete globalThis.crypto;
    return typeof globalThis.crypto?.getRandomValues === "function";
  };
}
// A transport that answers OK after a short pause and logs every publish.
export function slowOkTransport(log) {
  return {
    publish(relay, event) {
      log.push(JSON.parse(event).id + " " + relay);
      return new Promise((r) => setTimeout(() => r({ ok: true, message: "" }), 5));
    },
  };
}
export async function raceFlushes(a, b, rounds) {
  const stats = [];
  for (let i = 0; i < rounds; i++) stats.push(...(await Promise.all([a.flush(), b.flush()])));
  return stats;
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = hideWebLocks)]
    fn hide_web_locks() -> bool;
    #[wasm_bindgen(js_name = restoreWebLocks)]
    fn restore_web_locks() -> bool;
    #[wasm_bindgen(js_name = hideCrypto)]
    fn hide_crypto() -> js_sys::Function;
    #[wasm_bindgen(js_name = slowOkTransport)]
    fn slow_ok_transport(log: &js_sys::Array) -> JsValue;
    #[wasm_bindgen(js_name = raceFlushes)]
    fn race_flushes(a: &JsValue, b: &JsValue, rounds: u32) -> js_sys::Promise;
}

fn valid_events(n: usize) -> Vec<Value> {
    let doc: Value = serde_json::from_str(VECTORS).expect("vectors");
    doc["vectors"]
        .as_array()
        .expect("array")
        .iter()
        .filter(|v| v["valid_sig"] == json!(true))
        .map(|v| v["json"].as_str().expect("json").to_string())
        .filter(|j| !j.contains("expiration"))
        .take(n)
        .map(|j| serde_json::from_str(&j).expect("event"))
        .collect()
}

async fn open(name: &str, log: &js_sys::Array) -> JsValue {
    // Claims of 8, so that the two outboxes' claims interleave over the 40 records (the
    // default batch of 64 would lease all of them in one claim).
    let options = js(json!({ "name": name, "broadcast": false, "batchSize": 8 }));
    js_sys::Reflect::set(&options, &"transport".into(), &slow_ok_transport(log)).expect("set");
    JsFuture::from(Outbox::open(options)).await.expect("open")
}

#[wasm_bindgen_test]
async fn without_web_locks_leases_alone_keep_each_record_to_one_publisher() {
    let had_locks = hide_web_locks();
    let name = format!("fallback-nolocks-{}", js_sys::Math::random());
    let log = js_sys::Array::new();
    let a = open(&name, &log).await;
    let b = open(&name, &log).await;
    let events = valid_events(40);
    for ev in &events {
        call(
            &a,
            "enqueue",
            &[js(ev.clone()), js(json!(["wss://one.example"]))],
        )
        .await
        .expect("resolved");
    }
    let stats = JsFuture::from(race_flushes(&a, &b, 3))
        .await
        .expect("flushes");
    let stats: Vec<Value> = serde_json::from_str(&String::from(
        js_sys::JSON::stringify(&stats).expect("stringify"),
    ))
    .expect("stats");
    let restored = restore_web_locks();

    // Nobody was skipped as "locked": there is no lock to take.
    assert!(
        stats.iter().all(|s| s["skipped"] != json!("locked")),
        "{stats:?}"
    );
    // Both contexts flushed concurrently and both got records (stats alternate a, b).
    let claimed_by = |parity: usize| -> u64 {
        stats
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 2 == parity)
            .map(|(_, s)| s["claimed"].as_u64().unwrap_or(0))
            .sum()
    };
    assert!(claimed_by(0) > 0 && claimed_by(1) > 0, "{stats:?}");
    // Every record was published exactly once, by whichever outbox leased it.
    let mut sent: Vec<String> = log.iter().filter_map(|v| v.as_string()).collect();
    sent.sort();
    let before = sent.len();
    sent.dedup();
    assert_eq!(before, sent.len(), "a record was published twice: {sent:?}");
    assert_eq!(sent.len(), events.len());
    let status = call(&a, "status", &[]).await.expect("resolved");
    let satisfied = js_sys::Reflect::get(&status, &"satisfied".into())
        .expect("satisfied")
        .as_f64();
    assert_eq!(satisfied, Some(events.len() as f64));
    assert_eq!(
        restored, had_locks,
        "navigator.locks is back for the other tests"
    );
    call(&a, "close", &[]).await.expect("resolved");
    call(&b, "close", &[]).await.expect("resolved");
}

#[wasm_bindgen_test]
async fn without_a_random_source_open_refuses_with_a_typed_error() {
    let restore = hide_crypto();
    let refused = JsFuture::from(Outbox::open(js(json!({ "storage": "memory" })))).await;
    let restored = restore.call0(&JsValue::UNDEFINED).expect("restore");
    assert_eq!(
        restored,
        JsValue::TRUE,
        "crypto is back for the other tests"
    );
    let e = match refused {
        Ok(_) => panic!("open without crypto.getRandomValues must fail"),
        Err(e) => e,
    };
    assert!(e.is_instance_of::<OutboxError>(), "{e:?}");
    let e: OutboxError = e.unchecked_into();
    assert_eq!(e.code(), "no_random_source");
    let message = String::from(e.message());
    assert!(message.contains("crypto.getRandomValues"), "{message}");
    // With the source back, the same options open.
    let o = JsFuture::from(Outbox::open(js(json!({ "storage": "memory" }))))
        .await
        .expect("open");
    call(&o, "close", &[]).await.expect("resolved");
}

/// Ten records enqueued through an outbox on `name`, then leased for ten minutes to an
/// owner that is gone (another connection claims them as a tab that then died would).
async fn leased_to_a_dead_tab(name: &str, log: &js_sys::Array) -> JsValue {
    use nostr_outbox::core::ClaimRequest;
    use nostr_outbox::store::idb::{IdbOptions, IdbStore};
    use nostr_outbox::store::Store;
    let outbox = open(name, log).await;
    for ev in valid_events(10) {
        call(
            &outbox,
            "enqueue",
            &[js(ev), js(json!(["wss://one.example"]))],
        )
        .await
        .expect("resolved");
    }
    let dead = IdbStore::open(IdbOptions::new(name)).await.expect("open");
    let request = ClaimRequest {
        owner: "outbox-deadbeef".into(),
        lease_id: "dead-lease".into(),
        limit: 256,
        lease_ms: 600_000,
        ..Default::default()
    };
    let leased = dead
        .claim(&request, js_sys::Date::now() as u64)
        .await
        .expect("claim");
    assert_eq!(leased.len(), 10, "the dead tab leased every record");
    dead.close();
    outbox
}

#[wasm_bindgen_test]
async fn the_lock_holder_takes_over_a_dead_tabs_leases_and_without_locks_nobody_does() {
    // With Web Locks: the flush holds the lock, so the dead tab's live leases are
    // orphans, taken over and delivered in this run.
    let log = js_sys::Array::new();
    let name = format!("takeover-{}", js_sys::Math::random());
    let outbox = leased_to_a_dead_tab(&name, &log).await;
    let stats = rust(&call(&outbox, "flush", &[]).await.expect("flush"));
    assert_eq!(stats["ran"], json!(true), "{stats}");
    assert_eq!(stats["takenOver"], json!(10), "{stats}");
    assert_eq!(stats["delivered"], json!(10), "{stats}");
    assert_eq!(log.length(), 10, "each published once");
    let records = rust(
        &call(&outbox, "list", &[js(json!({ "limit": 100 }))])
            .await
            .expect("list"),
    );
    for r in records.as_array().expect("records") {
        assert_eq!(r["stage"], json!("satisfied"), "{r}");
        assert_eq!(r["takeovers"], json!(1), "{r}");
        assert_eq!(r["attempts"], json!(1), "{r}");
    }
    call(&outbox, "close", &[]).await.expect("resolved");

    // Without Web Locks a flusher cannot tell a dead tab from a live one: nothing is
    // taken over, the leases only expire.
    let had_locks = hide_web_locks();
    let log = js_sys::Array::new();
    let name = format!("takeover-nolocks-{}", js_sys::Math::random());
    let outbox = leased_to_a_dead_tab(&name, &log).await;
    let stats = rust(&call(&outbox, "flush", &[]).await.expect("flush"));
    let status = rust(&call(&outbox, "status", &[]).await.expect("status"));
    let restored = restore_web_locks();
    assert_eq!(
        restored, had_locks,
        "navigator.locks is back for the other tests"
    );
    assert_eq!(stats["ran"], json!(true), "{stats}");
    assert_eq!(
        (&stats["takenOver"], &stats["claimed"]),
        (&json!(0), &json!(0)),
        "{stats}"
    );
    assert_eq!(status["leased"], json!(10), "{status}");
    assert_eq!(log.length(), 0, "nothing published");
    call(&outbox, "close", &[]).await.expect("resolved");
}
