//! Runtime feature detection and its fallbacks, in every browser of the browser tier:
//! without Web Locks (old Safari, some embedded webviews) two outboxes of one database
//! both flush, and the expiring leases alone keep every record to one publisher;
//! without a cryptographic random source (`crypto.getRandomValues`) `open` refuses
//! with `no_random_source` (never a `Math.random` stand-in). Nor is there a stand-in
//! once open: a random source that fails later fails the flush with `no_random_source`
//! (at its start, or after the run finished what it had claimed, claiming no more); a
//! clock that cannot be read (`Date.now()`) or a missing `setTimeout` is `unsupported`
//! at `open`, and later of the call that needs it.
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

#[wasm_bindgen(inline_js = r#"
export function hideWebLocks() {
  const had = "locks" in navigator;
  Object.defineProperty(navigator, "locks", { value: undefined, configurable: true });
  return had;
}
export function restoreWebLocks() { delete navigator.locks; return navigator.locks !== undefined; }
// Web Locks that refuse every request, as for a document that is not fully active.
export function refuseWebLocks() {
  const had = "locks" in navigator;
  const refusing = {
    request: () => Promise.reject(new DOMException("the document is not fully active", "InvalidStateError")),
    query: async () => ({ held: [], pending: [] }),
  };
  Object.defineProperty(navigator, "locks", { value: refusing, configurable: true });
  return had;
}
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
// Publishes at once (no timer) and logs every publish.
export function okTransport(log) {
  return {
    publish(relay, event) {
      log.push(JSON.parse(event).id + " " + relay);
      return Promise.resolve({ ok: true, message: "" });
    },
  };
}
// The same, but its first publish hides the random source (`restoreCrypto()` puts it
// back), as a page replacing `globalThis.crypto` during a flush would.
export function cryptoLosingTransport(log) {
  return {
    publish(relay, event) {
      if (log.length === 0) globalThis.__restoreCrypto = hideCrypto();
      log.push(JSON.parse(event).id + " " + relay);
      return Promise.resolve({ ok: true, message: "" });
    },
  };
}
export function restoreCrypto() {
  const restore = globalThis.__restoreCrypto;
  delete globalThis.__restoreCrypto;
  return restore ? restore() : false;
}
// Hides `globalThis.setTimeout` (as a runtime without timers would); returns a
// function that puts it back.
export function hideSetTimeout() {
  const original = Object.getOwnPropertyDescriptor(globalThis, "setTimeout");
  Object.defineProperty(globalThis, "setTimeout", { value: undefined, configurable: true, writable: true });
  return () => {
    if (original) Object.defineProperty(globalThis, "setTimeout", original);
    else delete globalThis.setTimeout;
    return typeof globalThis.setTimeout === "function";
  };
}
// Breaks `Date.now` (it returns NaN, or throws); returns a function that puts it back.
export function breakClock(throws) {
  const original = Date.now;
  Date.now = throws ? () => { throw new Error("no clock here"); } : () => NaN;
  return () => {
    Date.now = original;
    return Number.isFinite(Date.now());
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
    #[wasm_bindgen(js_name = refuseWebLocks)]
    fn refuse_web_locks() -> bool;
    #[wasm_bindgen(js_name = hideCrypto)]
    fn hide_crypto() -> js_sys::Function;
    #[wasm_bindgen(js_name = slowOkTransport)]
    fn slow_ok_transport(log: &js_sys::Array) -> JsValue;
    #[wasm_bindgen(js_name = okTransport)]
    fn ok_transport(log: &js_sys::Array) -> JsValue;
    #[wasm_bindgen(js_name = cryptoLosingTransport)]
    fn crypto_losing_transport(log: &js_sys::Array) -> JsValue;
    #[wasm_bindgen(js_name = restoreCrypto)]
    fn restore_crypto() -> bool;
    #[wasm_bindgen(js_name = hideSetTimeout)]
    fn hide_set_timeout() -> js_sys::Function;
    #[wasm_bindgen(js_name = breakClock)]
    fn break_clock(throws: bool) -> js_sys::Function;
    #[wasm_bindgen(js_name = raceFlushes)]
    fn race_flushes(a: &JsValue, b: &JsValue, rounds: u32) -> js_sys::Promise;
}

fn valid_events(n: usize) -> Vec<Value> {
    let mut all = js_support::valid_events();
    all.truncate(n);
    all
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
    enqueue_all(&a, &events).await;
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
    enqueue_all(&outbox, &valid_events(10)).await;
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

/// Web Locks that refuse the request (a document that is not fully active) are not
/// "no Web Locks": another context may hold the lock, and its holder takes every other
/// owner's leases over as orphans. So the run is skipped (`locked`), nothing is claimed
/// or sent, and the records wait, as stored, for a run that holds the lock.
#[wasm_bindgen_test]
async fn a_refused_lock_request_skips_the_run_instead_of_flushing_beside_the_holder() {
    let name = format!("fallback-refused-{}", js_sys::Math::random());
    let log = js_sys::Array::new();
    let a = open(&name, &log).await;
    let events = valid_events(3);
    enqueue_all(&a, &events).await;
    let had_locks = refuse_web_locks();
    let refused = rust(&call(&a, "flush", &[]).await.expect("resolved"));
    let status = rust(&call(&a, "status", &[]).await.expect("resolved"));
    let restored = restore_web_locks();
    assert_eq!(refused["ran"], json!(false), "{refused}");
    assert_eq!(refused["skipped"], json!("locked"), "{refused}");
    assert_eq!(refused["claimed"], json!(0), "{refused}");
    assert_eq!(log.length(), 0, "nothing was sent without the lock");
    assert_eq!(status["pending"], json!(3), "{status}");
    assert_eq!(status["leased"], json!(0), "{status}");
    assert_eq!(
        restored, had_locks,
        "navigator.locks is back for the other tests"
    );
    // With the lock back, the next run delivers them.
    let ran = rust(&call(&a, "flush", &[]).await.expect("resolved"));
    assert_eq!(ran["ran"], json!(true), "{ran}");
    assert_eq!(log.length(), 3);
    let status = rust(&call(&a, "status", &[]).await.expect("resolved"));
    assert_eq!(status["satisfied"], json!(3), "{status}");
    call(&a, "close", &[]).await.expect("resolved");
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

/// A memory outbox over `transport`, claiming `batch` records at a time.
async fn open_memory(transport: JsValue, batch: u32) -> JsValue {
    let options = js(json!({ "storage": "memory", "batchSize": batch }));
    js_sys::Reflect::set(&options, &"transport".into(), &transport).expect("set");
    JsFuture::from(Outbox::open(options)).await.expect("open")
}

/// `result` is an `OutboxError` with `code`; its message.
fn refused(result: Result<JsValue, JsValue>, code: &str) -> String {
    let e = match result {
        Ok(v) => panic!("expected `{code}`, got {v:?}"),
        Err(e) => e,
    };
    assert!(e.is_instance_of::<OutboxError>(), "{e:?}");
    let e: OutboxError = e.unchecked_into();
    assert_eq!(e.code(), code, "{:?}", String::from(e.message()));
    String::from(e.message())
}

async fn enqueue_all(outbox: &JsValue, events: &[Value]) {
    for ev in events {
        call(
            outbox,
            "enqueue",
            &[js(ev.clone()), js(json!(["wss://one.example"]))],
        )
        .await
        .expect("resolved");
    }
}

#[wasm_bindgen_test]
async fn a_random_source_lost_after_open_fails_the_flush_that_needs_it() {
    let log = js_sys::Array::new();
    let outbox = open_memory(ok_transport(&log), 8).await;
    enqueue_all(&outbox, &valid_events(3)).await;
    let restore = hide_crypto();
    let flushed = call(&outbox, "flush", &[]).await;
    let restored = restore.call0(&JsValue::UNDEFINED).expect("restore");
    assert_eq!(
        restored,
        JsValue::TRUE,
        "crypto is back for the other tests"
    );
    let message = refused(flushed, "no_random_source");
    assert!(message.contains("crypto.getRandomValues"), "{message}");
    // Nothing was claimed or sent: the run failed before its first claim.
    let status = rust(&call(&outbox, "status", &[]).await.expect("status"));
    assert_eq!(
        (&status["pending"], &status["leased"]),
        (&json!(3), &json!(0)),
        "{status}"
    );
    assert_eq!(log.length(), 0, "nothing published");
    // With the source back, the next flush delivers them.
    let stats = rust(&call(&outbox, "flush", &[]).await.expect("flush"));
    assert_eq!(stats["delivered"], json!(3), "{stats}");
    call(&outbox, "close", &[]).await.expect("resolved");
}

#[wasm_bindgen_test]
async fn a_random_source_lost_during_a_flush_stops_its_claims_and_fails_it() {
    // The run starts with 64 random words; it takes 1 for its retry jitter, a claim (of
    // one record here) 4 for its lease id, so the words run out after at most 16 claims
    // of the 72 records. The first publish takes the source away.
    let log = js_sys::Array::new();
    let outbox = open_memory(crypto_losing_transport(&log), 1).await;
    let events = valid_events(72);
    assert_eq!(events.len(), 72, "enough vectors");
    enqueue_all(&outbox, &events).await;
    let flushed = call(&outbox, "flush", &[]).await;
    assert!(restore_crypto(), "crypto is back for the other tests");
    refused(flushed, "no_random_source");
    // What the run claimed was published once and recorded; then it claimed no more.
    let sent = log.length();
    let status = rust(&call(&outbox, "status", &[]).await.expect("status"));
    assert!(sent > 0 && sent <= 16, "{sent} published");
    assert_eq!(status["satisfied"], json!(sent), "{status}");
    assert_eq!(status["leased"], json!(0), "{status}");
    // (Some vectors are versions of one replaceable event: `superseded`.)
    assert_eq!(
        status["pending"].as_u64().map(|n| n + u64::from(sent)),
        status["total"]
            .as_u64()
            .zip(status["superseded"].as_u64())
            .map(|(t, s)| t - s),
        "{status}"
    );
    assert!(status["pending"].as_u64() > Some(40), "{status}");
    // With the source back, the next flush delivers the rest, each record once.
    let stats = rust(&call(&outbox, "flush", &[]).await.expect("flush"));
    let status = rust(&call(&outbox, "status", &[]).await.expect("status"));
    assert_eq!(
        status["satisfied"].as_u64(),
        stats["delivered"].as_u64().map(|n| n + u64::from(sent)),
        "{stats} {status}"
    );
    assert_eq!(status["pending"], json!(0), "{status}");
    let mut published: Vec<String> = log.iter().filter_map(|v| v.as_string()).collect();
    let all = published.len();
    published.sort();
    published.dedup();
    assert_eq!(published.len(), all, "a record was published twice");
    assert_eq!(json!(all), status["satisfied"], "{status}");
    call(&outbox, "close", &[]).await.expect("resolved");
}

#[wasm_bindgen_test]
async fn without_set_timeout_open_and_flush_fail_with_unsupported() {
    let log = js_sys::Array::new();
    let restore = hide_set_timeout();
    let opened = JsFuture::from(Outbox::open(js(json!({ "storage": "memory" })))).await;
    assert_eq!(
        restore.call0(&JsValue::UNDEFINED).expect("restore"),
        JsValue::TRUE
    );
    let message = refused(opened, "unsupported");
    assert!(message.contains("setTimeout"), "{message}");

    // Gone after open: the flush fails before it claims anything (it used to run with
    // every wait ending at once).
    let outbox = open_memory(ok_transport(&log), 8).await;
    enqueue_all(&outbox, &valid_events(2)).await;
    let restore = hide_set_timeout();
    let flushed = call(&outbox, "flush", &[]).await;
    assert_eq!(
        restore.call0(&JsValue::UNDEFINED).expect("restore"),
        JsValue::TRUE
    );
    let message = refused(flushed, "unsupported");
    assert!(message.contains("setTimeout"), "{message}");
    let status = rust(&call(&outbox, "status", &[]).await.expect("status"));
    assert_eq!(status["pending"], json!(2), "{status}");
    assert_eq!(log.length(), 0, "nothing published");
    let stats = rust(&call(&outbox, "flush", &[]).await.expect("flush"));
    assert_eq!(stats["delivered"], json!(2), "{stats}");
    call(&outbox, "close", &[]).await.expect("resolved");
}

#[wasm_bindgen_test]
async fn a_clock_that_cannot_be_read_is_unsupported_never_zero() {
    for throws in [false, true] {
        let restore = break_clock(throws);
        let opened = JsFuture::from(Outbox::open(js(json!({ "storage": "memory" })))).await;
        assert_eq!(
            restore.call0(&JsValue::UNDEFINED).expect("restore"),
            JsValue::TRUE
        );
        let message = refused(opened, "unsupported");
        assert!(message.contains("Date.now()"), "{message}");

        // Broken after open: every call that reads the clock fails, and writes nothing.
        let log = js_sys::Array::new();
        let outbox = open_memory(ok_transport(&log), 8).await;
        enqueue_all(&outbox, &valid_events(1)).await;
        let restore = break_clock(throws);
        let enqueued = call(
            &outbox,
            "enqueue",
            &[
                js(valid_events(2)[1].clone()),
                js(json!(["wss://one.example"])),
            ],
        )
        .await;
        let flushed = call(&outbox, "flush", &[]).await;
        let purged = call(&outbox, "purge", &[JsValue::UNDEFINED]).await;
        assert_eq!(
            restore.call0(&JsValue::UNDEFINED).expect("restore"),
            JsValue::TRUE
        );
        refused(enqueued, "unsupported");
        refused(flushed, "unsupported");
        refused(purged, "unsupported");
        let status = rust(&call(&outbox, "status", &[]).await.expect("status"));
        assert_eq!(
            (&status["pending"], &status["total"]),
            (&json!(1), &json!(1)),
            "{status}"
        );
        assert_eq!(log.length(), 0, "nothing published");
        call(&outbox, "close", &[]).await.expect("resolved");
    }
}
