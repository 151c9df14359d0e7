//! The JavaScript API in a real browser, called the way an application calls it: through
//! the generated class (`Outbox.open`, then methods looked up on the JS object) with
//! plain JavaScript values. Covers open (memory and IndexedDB), enqueue (created,
//! replay, conflict), refusals of bad events, relays and options with `OutboxError`
//! codes and nothing stored, `enqueueMany` all-or-nothing, get/list/status/cancel/
//! retry/purge, events, flushing through a custom transport, the Web Lock election,
//! auto-flush, close, cross-context events and the service worker helpers.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Function, Reflect};
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

#[wasm_bindgen(inline_js = r#"
export function holdLock(name) {
  let release;
  let done;
  const held = new Promise((resolve) => {
    done = navigator.locks.request(name, () => new Promise((r) => { release = r; resolve(); }));
  });
  return held.then(() => async () => {
    release();
    await done;
    while ((await navigator.locks.query()).held.some((l) => l.name === name)) {
      await new Promise((r) => setTimeout(r, 10));
    }
  });
}
// Calls `outbox.flush()` while another context holds the Web Lock `name`: resolves to the
// flush's result, or to "queued" once navigator.locks shows a request waiting for `name`
// (the flush waiting for the lock instead of skipping the run).
export function flushUnlessQueued(outbox, name) {
  let settled = false;
  const done = outbox.flush().finally(() => { settled = true; });
  const queued = (async () => {
    while (!settled) {
      const { pending = [] } = await navigator.locks.query();
      if (pending.some((l) => l.name === name)) return "queued";
      await new Promise((r) => setTimeout(r, 10));
    }
    return done;
  })();
  return Promise.race([done, queued]);
}
// Starts a timer of `ms`, then calls `outbox.flush()`: resolves to the flush's result if it
// settles first, to "timer" if the timer fires first (a wait of `ms` the flush starts,
// e.g. a connect timeout of `ms`, cannot end before a timer of `ms` started before it).
export function flushBeforeTimer(outbox, ms) {
  let timer;
  const fired = new Promise((r) => { timer = setTimeout(() => r("timer"), ms); });
  return Promise.race([outbox.flush(), fired]).finally(() => clearTimeout(timer));
}
export async function waitFor(c, n, ms) {
  const end = Date.now() + ms;
  while (c.n < n && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  return c.n;
}
export function outboxClassOf(o) { return o.constructor; }
export function channelSpy(name) {
  const c = { n: 0, details: [] };
  const ch = new BroadcastChannel(name);
  ch.onmessage = (e) => { c.n += 1; c.details.push(e.data); };
  c.close = () => ch.close();
  return c;
}
export function postToChannel(name, message) {
  const ch = new BroadcastChannel(name);
  ch.postMessage(message);
  ch.close();
}
// Records, in order, every BroadcastChannel post and every `note(log, what)` until
// `log.restore()`.
export function postLog() {
  const log = [];
  const original = BroadcastChannel.prototype.postMessage;
  BroadcastChannel.prototype.postMessage = function (m) {
    log.push("posted");
    return original.call(this, m);
  };
  log.restore = () => { BroadcastChannel.prototype.postMessage = original; };
  return log;
}
export function note(log, what) { log.push(what); }
"#)]
extern "C" {
    #[wasm_bindgen(js_name = holdLock)]
    fn hold_lock(name: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = flushUnlessQueued)]
    fn flush_unless_queued(outbox: &JsValue, name: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = flushBeforeTimer)]
    fn flush_before_timer(outbox: &JsValue, ms: u32) -> js_sys::Promise;
    #[wasm_bindgen(js_name = waitFor)]
    fn wait_for(c: &JsValue, n: u32, ms: u32) -> js_sys::Promise;
    #[wasm_bindgen(js_name = channelSpy)]
    fn channel_spy(name: &str) -> JsValue;
    #[wasm_bindgen(js_name = postToChannel)]
    fn post_to_channel(name: &str, message: &JsValue);
    #[wasm_bindgen(js_name = postLog)]
    fn post_log() -> js_sys::Array;
    fn note(log: &js_sys::Array, what: &str);
}

// ---------------------------------------------------------------- helpers

fn event_obj(i: usize) -> Value {
    valid_events().swap_remove(i)
}

fn name(prefix: &str) -> String {
    format!("js-api-{prefix}-{}", js_sys::Math::random())
}

async fn open(options: Value) -> Result<JsValue, JsValue> {
    JsFuture::from(Outbox::open(js(options))).await
}

async fn open_memory() -> JsValue {
    open(json!({ "storage": "memory" }))
        .await
        .expect("open memory")
}

async fn open_with(options: Value, extra: &[(&str, JsValue)]) -> JsValue {
    let o = js(options);
    for (k, v) in extra {
        Reflect::set(&o, &JsValue::from_str(k), v).expect("set");
    }
    JsFuture::from(Outbox::open(o)).await.expect("open")
}

async fn ok(obj: &JsValue, method: &str, args: &[JsValue]) -> Value {
    match call(obj, method, args).await {
        Ok(v) => rust(&v),
        Err(e) => panic!("{method} failed: {:?}", rust(&e)),
    }
}

/// Asserts `e` is an `OutboxError` (and an `Error`) with `code`; returns its details.
fn assert_code(e: &JsValue, code: &str) -> Value {
    assert!(e.is_instance_of::<js_sys::Error>(), "not an Error: {e:?}");
    assert!(
        e.is_instance_of::<OutboxError>(),
        "not an OutboxError: {e:?}"
    );
    let err: &OutboxError = e.unchecked_ref();
    let message: String = err.message().into();
    assert_eq!(err.code(), code, "message: {message}");
    assert!(!message.is_empty());
    assert_eq!(String::from(err.name()), "OutboxError");
    rust(&Reflect::get(e, &JsValue::from_str("details")).expect("details"))
}

async fn fails(obj: &JsValue, method: &str, args: &[JsValue], code: &str) -> Value {
    match call(obj, method, args).await {
        Ok(v) => panic!("{method} should fail with {code}, got {:?}", rust(&v)),
        Err(e) => assert_code(&e, code),
    }
}

async fn total(outbox: &JsValue) -> u64 {
    ok(outbox, "status", &[]).await["total"]
        .as_u64()
        .expect("total")
}

fn relays(list: &[&str]) -> JsValue {
    js(json!(list))
}

async fn pause(ms: u32) {
    JsFuture::from(sleep(ms)).await.expect("sleep");
}

fn count(c: &JsValue) -> u64 {
    Reflect::get(c, &JsValue::from_str("n"))
        .expect("n")
        .as_f64()
        .expect("number") as u64
}

// ---------------------------------------------------------------- open

#[wasm_bindgen_test]
async fn opens_memory_and_indexeddb() {
    let m = open_memory().await;
    assert_eq!(
        rust(&Reflect::get(&m, &"storage".into()).unwrap()),
        json!("memory")
    );
    assert_eq!(
        rust(&Reflect::get(&m, &"name".into()).unwrap()),
        json!("nostr-outbox")
    );
    let n = name("open");
    let i = open(json!({ "name": n, "durability": "relaxed" }))
        .await
        .expect("open idb");
    assert_eq!(
        rust(&Reflect::get(&i, &"storage".into()).unwrap()),
        json!("indexeddb")
    );
    assert_eq!(rust(&Reflect::get(&i, &"name".into()).unwrap()), json!(n));
    assert_eq!(
        rust(&Reflect::get(&i, &"persisted".into()).unwrap()),
        Value::Null
    );
    for o in [&m, &i] {
        let s = ok(o, "status", &[]).await;
        assert_eq!(
            s,
            json!({"draft":0,"pending":0,"leased":0,"retryable":0,"delivering":0,"satisfied":0,"exhausted":0,"cancelled":0,"superseded":0,"corrupt":0,"total":0})
        );
        assert_eq!(ok(o, "corruptRecords", &[]).await, json!([]));
        ok(o, "close", &[]).await;
        assert_eq!(
            rust(&Reflect::get(o, &"closed".into()).unwrap()),
            json!(true)
        );
    }
    // Data survives close + reopen.
    let i = open(json!({ "name": n })).await.expect("reopen");
    ok(&i, "enqueue", &[js(event_obj(0)), relays(&[A])]).await;
    ok(&i, "close", &[]).await;
    let i = open(json!({ "name": n })).await.expect("reopen");
    assert_eq!(total(&i).await, 1);
    ok(&i, "close", &[]).await;
}

#[wasm_bindgen_test]
async fn open_refuses_bad_options() {
    let cases = [
        (json!({ "storage": "disk" }), "invalid_options"),
        // `tag` is a key of `handleSync`'s options (which share open's shape), not open's.
        (
            json!({ "storage": "memory", "tag": "x" }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "nmae": "x" }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "baseDelayMs": "5" }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "baseDelayMs": -1 }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "baseDelayMs": 1.5 }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "baseDelayMs": 0 }),
            "invalid_config",
        ),
        (
            json!({ "storage": "memory", "baseDelayMs": 10, "maxDelayMs": 5 }),
            "invalid_config",
        ),
        (
            json!({ "storage": "memory", "batchSize": 0 }),
            "invalid_config",
        ),
        (
            json!({ "storage": "memory", "concurrency": 999 }),
            "invalid_config",
        ),
        (
            json!({ "storage": "memory", "lowConcurrency": 0 }),
            "invalid_config",
        ),
        (
            json!({ "storage": "memory", "lowConcurrency": 257 }),
            "invalid_config",
        ),
        (
            json!({ "storage": "memory", "lowConcurrency": "4" }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "publishTimeoutMs": 0 }),
            "invalid_config",
        ),
        (
            json!({ "storage": "memory", "circuitOpenMs": 0 }),
            "invalid_config",
        ),
        (
            json!({ "storage": "memory", "circuitFailures": 1001 }),
            "invalid_config",
        ),
        (
            json!({ "storage": "memory", "circuitFailures": "3" }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "relayInfoTtlMs": 604_800_001 }),
            "invalid_config",
        ),
        (
            json!({ "storage": "memory", "relayInfoTtlMs": -1 }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "relayInfoTtlMs": "3600000" }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "durability": "lazy" }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "policy": "most" }),
            "invalid_policy",
        ),
        (
            json!({ "storage": "memory", "policy": { "atLeast": 1, "x": 2 } }),
            "invalid_policy",
        ),
        (
            json!({ "storage": "memory", "signer": 5 }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "signer": {} }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "transport": {} }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "newerKinds": 3 }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "newerKinds": [1.5] }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "newerKinds": [65_536] }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "newerKinds": [-1] }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "newerKinds": ["3"] }),
            "invalid_options",
        ),
        (
            json!({ "storage": "memory", "newerKinds": (0..65).collect::<Vec<u32>>() }),
            "invalid_options",
        ),
        (json!({ "name": "" }), "invalid_options"),
        (json!([1]), "invalid_options"),
        (json!("memory"), "invalid_options"),
    ];
    for (options, code) in cases {
        match open(options.clone()).await {
            Ok(_) => panic!("open({options}) should fail"),
            Err(e) => {
                assert_code(&e, code);
            }
        }
    }
    // The circuit options in range are taken.
    let o = open(json!({ "storage": "memory", "circuitFailures": 0, "circuitOpenMs": 1 }))
        .await
        .expect("circuit options in range");
    ok(&o, "close", &[]).await;
    // Kinds to check for newer versions: any 0..=65535, at most 64; none turns it off.
    for kinds in [
        json!([]),
        json!([0, 3, 30_000, 65_535]),
        json!((0..64).collect::<Vec<u32>>()),
    ] {
        let o = open(json!({ "storage": "memory", "newerKinds": kinds }))
            .await
            .expect("newerKinds in range");
        ok(&o, "close", &[]).await;
    }
    let details = match open(json!({ "storage": "memory", "maxAttemps": 3 })).await {
        Err(e) => assert_code(&e, "invalid_options"),
        Ok(_) => panic!("typo accepted"),
    };
    assert_eq!(details["option"], json!("maxAttemps"));
}

/// The messages of refused options name the option (and the item), the type given and
/// the type expected, as they did before options were read through serde.
#[wasm_bindgen_test]
async fn refusals_name_the_option_the_type_given_and_the_item() {
    let message = |e: &JsValue| String::from(e.unchecked_ref::<OutboxError>().message());
    let open_err = |options: JsValue| async move {
        match JsFuture::from(Outbox::open(options)).await {
            Ok(_) => panic!("open should fail"),
            Err(e) => e,
        }
    };
    let e = open_err(js(json!({ "storage": "memory", "baseDelayMs": "5" }))).await;
    assert_eq!(
        assert_code(&e, "invalid_options"),
        json!({ "option": "baseDelayMs" })
    );
    assert_eq!(
        message(&e),
        "invalid options: `baseDelayMs` in Outbox.open options must be a non-negative integer, got a string"
    );
    let e = open_err(js(json!({ "storage": "disk" }))).await;
    assert_eq!(
        message(&e),
        "invalid options: `storage` in Outbox.open options must be one of indexeddb, memory or a storage adapter object, got `disk`"
    );
    let e = open_err(js(json!({ "storage": "memory", "autoFlush": null }))).await;
    assert_eq!(
        message(&e),
        "invalid options: `autoFlush` in Outbox.open options must be a boolean, got null"
    );
    for key in ["nmae", "tag"] {
        let e = open_err(js(json!({ "storage": "memory", key: "x" }))).await;
        assert_eq!(assert_code(&e, "invalid_options"), json!({ "option": key }));
        let m = message(&e);
        assert!(
            m.starts_with(&format!(
                "invalid options: unknown option `{key}` in Outbox.open options (known: name, storage,"
            )),
            "{m}"
        );
    }
    // A typo next to a known key inherited from a prototype is still named.
    let inherited =
        js_sys::eval(r#"Object.assign(Object.create({ storage: "memory" }), { nmae: "x" })"#)
            .unwrap();
    let e = open_err(inherited).await;
    assert_eq!(
        assert_code(&e, "invalid_options"),
        json!({ "option": "nmae" })
    );
    let e = open_err(js(
        json!({ "storage": "memory", "policy": { "atLeast": 1, "x": 2 } }),
    ))
    .await;
    assert_code(&e, "invalid_policy");
    assert!(
        message(&e).starts_with("invalid policy: an object policy must have exactly one key"),
        "{}",
        message(&e)
    );
    let e = open_err(js(json!([1]))).await;
    assert_eq!(
        message(&e),
        "invalid options: Outbox.open options must be an object, got an array"
    );
    // A getter (or Proxy trap) that throws: a typed error naming what could not be read,
    // with the thrown error as its cause.
    let throwing = js_sys::eval(
        r#"({ storage: "memory", get name() { throw new Error("no name today"); } })"#,
    )
    .unwrap();
    let e = open_err(throwing).await;
    assert_code(&e, "invalid_options");
    assert_eq!(
        message(&e),
        "invalid options: Outbox.open options cannot be read: no name today"
    );
    let cause = Reflect::get(&e, &"cause".into()).unwrap();
    assert!(cause.is_instance_of::<js_sys::Error>(), "{cause:?}");
    let trap =
        js_sys::eval(r#"new Proxy({}, { get() { throw new TypeError("trapped"); } })"#).unwrap();
    let e = open_err(trap).await;
    assert_code(&e, "invalid_options");
    // `undefined` reads as absent.
    let o = js(json!({ "storage": "memory" }));
    Reflect::set(&o, &"name".into(), &JsValue::UNDEFINED).unwrap();
    Reflect::set(&o, &"policy".into(), &JsValue::UNDEFINED).unwrap();
    let o = JsFuture::from(Outbox::open(o))
        .await
        .expect("undefined options open");

    let ev = || js(event_obj(0));
    let e = call(
        &o,
        "enqueue",
        &[ev(), relays(&[A]), js(json!({ "id": null }))],
    )
    .await
    .unwrap_err();
    assert_eq!(
        message(&e),
        "invalid options: `id` in enqueue options must be a string, got null"
    );
    let big = js(json!({}));
    Reflect::set(
        &big,
        &"maxAttempts".into(),
        &js_sys::BigInt::from(3u32).into(),
    )
    .unwrap();
    let e = call(&o, "enqueue", &[ev(), relays(&[A]), big])
        .await
        .unwrap_err();
    assert_eq!(
        message(&e),
        "invalid options: `maxAttempts` in enqueue options must be a non-negative integer, got a bigint"
    );
    for (policy, text) in [
        (json!("most"), "invalid policy: unknown policy \"most\""),
        (json!(5), "invalid policy: got a number"),
        (
            json!({ "required": A }),
            "invalid policy: `required` must be an array of relay URL strings",
        ),
        (
            json!({ "atLeast": -1 }),
            "invalid policy: `atLeast` must be a positive integer",
        ),
        (
            json!({ "most": 1 }),
            "invalid policy: unknown policy key `most`",
        ),
        (
            json!({ "all": null }),
            "invalid policy: unknown policy key `all`",
        ),
    ] {
        let e = call(
            &o,
            "enqueue",
            &[ev(), relays(&[A]), js(json!({ "policy": policy }))],
        )
        .await
        .unwrap_err();
        assert_code(&e, "invalid_policy");
        assert!(message(&e).starts_with(text), "{}", message(&e));
    }
    let e = call(
        &o,
        "enqueue",
        &[
            ev(),
            relays(&[A]),
            js(json!({ "policy": { "required": [A, "nope"] } })),
        ],
    )
    .await
    .unwrap_err();
    assert_eq!(
        assert_code(&e, "invalid_relay_url"),
        json!({ "option": "policy.required", "index": 1 })
    );
    let items = json!([
        { "event": event_obj(0), "relays": [A] },
        { "event": event_obj(1), "relays": [A], "deadline": "x" },
    ]);
    let e = call(&o, "enqueueMany", &[js(items)]).await.unwrap_err();
    assert_eq!(
        assert_code(&e, "invalid_options"),
        json!({ "option": "deadline", "index": 1 })
    );
    assert_eq!(
        message(&e),
        "invalid options: `deadline` in enqueueMany item must be a non-negative integer, got a string"
    );
    let items =
        json!([{ "event": event_obj(0), "relays": [A] }, { "event": event_obj(1), "relay": [A] }]);
    let e = call(&o, "enqueueMany", &[js(items)]).await.unwrap_err();
    assert_eq!(
        assert_code(&e, "invalid_options"),
        json!({ "option": "relay", "index": 1 })
    );
    let item = js_sys::eval(r#"new Proxy({}, { get() { throw new Error("trapped"); } })"#).unwrap();
    let items: Array = [js(json!({ "event": event_obj(0), "relays": [A] })), item]
        .iter()
        .collect();
    let e = call(&o, "enqueueMany", &[items.into()]).await.unwrap_err();
    assert_eq!(assert_code(&e, "invalid_options"), json!({ "index": 1 }));
    let e = call(&o, "list", &[js(json!({ "limit": 1.5 }))])
        .await
        .unwrap_err();
    assert_eq!(
        message(&e),
        "invalid options: `limit` in list options must be a non-negative integer, got a number"
    );
    assert_eq!(total(&o).await, 0, "nothing stored");
    ok(&o, "close", &[]).await;
    let e = JsFuture::from(nostr_outbox::js::sw::handle_sync(
        JsValue::UNDEFINED,
        js(json!({ "storage": "memory", "tag": 5 })),
    ))
    .await
    .unwrap_err();
    assert_eq!(
        message(&e),
        "invalid options: `tag` in handleSync options must be a string, got a number"
    );
}

// ---------------------------------------------------------------- enqueue

async fn enqueue_created_replay_conflict(o: &JsValue) {
    let c_enq = counter(o, "enqueued");
    let c_change = counter(o, "change");
    let ev = event_obj(0);
    let r = ok(
        o,
        "enqueue",
        &[js(ev.clone()), relays(&[B, "WSS://A.example/", A])],
    )
    .await;
    assert_eq!(r["disposition"], json!("created"));
    assert_eq!(r["id"], ev["id"]);
    let rec = &r["record"];
    assert_eq!(rec["stage"], json!("pending"));
    assert_eq!(rec["event"], ev);
    assert_eq!(rec["policy"], json!("all"));
    assert_eq!(rec["attempts"], json!(0));
    assert_eq!(rec["maxAttempts"], json!(10));
    assert_eq!(rec["revision"], json!(1));
    assert_eq!(rec["evidence"], json!([]));
    assert_eq!(rec["reason"], Value::Null);
    assert!(rec["nextAttemptAt"].as_u64().is_some());
    assert_eq!(rec["createdAt"], rec["updatedAt"]);
    let targets: Vec<&str> = rec["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["relay"].as_str().unwrap())
        .collect();
    assert_eq!(targets, vec![A, B], "normalized, deduped, sorted");
    assert_eq!(
        rec["targets"][0],
        json!({ "relay": A, "state": "open", "required": true, "latest": null })
    );
    // Same plan (relays in another order, JSON text instead of object) → replay.
    let text = JsValue::from_str(&ev.to_string());
    let again = ok(o, "enqueue", &[text, relays(&[A, B])]).await;
    assert_eq!(again["disposition"], json!("replay"));
    assert_eq!(again["record"], r["record"]);
    // Same id, other plan → conflict, nothing changed.
    let d = fails(
        o,
        "enqueue",
        &[js(ev.clone()), relays(&[A])],
        "plan_conflict",
    )
    .await;
    assert_eq!(d["id"], ev["id"]);
    let d = fails(
        o,
        "enqueue",
        &[
            js(ev.clone()),
            relays(&[A, B]),
            js(json!({ "policy": "any" })),
        ],
        "plan_conflict",
    )
    .await;
    assert_eq!(d["id"], ev["id"]);
    assert_eq!(total(o).await, 1);
    assert_eq!(count(&c_enq), 1, "enqueued fires once, not on replay");
    assert_eq!(count(&c_change), 1);
    // Options: custom id, policy, deadline, maxAttempts.
    let r = ok(
        o,
        "enqueue",
        &[
            js(ev.clone()),
            relays(&[A, B]),
            js(json!({ "id": "note:1", "policy": { "required": ["wss://B.example"] }, "deadline": 4_000_000_000_000u64, "maxAttempts": 3 })),
        ],
    )
    .await;
    assert_eq!(r["id"], json!("note:1"));
    assert_eq!(r["record"]["policy"], json!({ "required": [B] }));
    assert_eq!(r["record"]["targets"][0]["required"], json!(false));
    assert_eq!(r["record"]["targets"][1]["required"], json!(true));
    assert_eq!(r["record"]["deadline"], json!(4_000_000_000_000u64));
    assert_eq!(r["record"]["maxAttempts"], json!(3));
    let r = ok(
        o,
        "enqueue",
        &[
            js(event_obj(1)),
            relays(&[A, B]),
            js(json!({ "policy": { "atLeast": 2 } })),
        ],
    )
    .await;
    assert_eq!(r["record"]["policy"], json!({ "atLeast": 2 }));
    assert_eq!(total(o).await, 3);
    assert_eq!(count(&c_enq), 3);
}

#[wasm_bindgen_test]
async fn enqueue_created_replay_conflict_memory() {
    let o = open_memory().await;
    enqueue_created_replay_conflict(&o).await;
}

#[wasm_bindgen_test]
async fn enqueue_created_replay_conflict_indexeddb() {
    let o = open(json!({ "name": name("enqueue") }))
        .await
        .expect("open");
    enqueue_created_replay_conflict(&o).await;
    ok(&o, "close", &[]).await;
}

/// Every way an event can be wrong, each refused with `invalid_event` before any write.
async fn refuses_bad_events(o: &JsValue) {
    let good = event_obj(1);
    let with = |field: &str, value: Value| {
        let mut e = good.clone();
        e[field] = value;
        e
    };
    let without = |field: &str| {
        let mut e = good.clone();
        e.as_object_mut().unwrap().remove(field);
        e
    };
    let mut flipped_id = good["id"].as_str().unwrap().to_string();
    let c = if flipped_id.starts_with('0') {
        "1"
    } else {
        "0"
    };
    flipped_id.replace_range(0..1, c);
    let mut flipped_sig = good["sig"].as_str().unwrap().to_string();
    let c = if flipped_sig.ends_with('0') { "1" } else { "0" };
    flipped_sig.replace_range(127..128, c);
    let other_pubkey = event_obj(0)["pubkey"].clone();
    let cases: Vec<(JsValue, &str)> = vec![
        (js(with("id", json!(flipped_id))), "id_mismatch"),
        (js(with("id", json!("xyz"))), "bad_value"),
        (js(with("sig", json!(flipped_sig))), "bad_signature"),
        (js(with("sig", json!(7))), "wrong_type"),
        (js(with("pubkey", other_pubkey)), "id_mismatch"),
        (js(with("pubkey", json!(null))), "wrong_type"),
        (js(with("created_at", json!("1700000000"))), "wrong_type"),
        (js(with("created_at", json!(-1))), "bad_value"),
        (js(with("created_at", json!(1.5))), "bad_value"),
        (js(with("kind", json!(70000))), "bad_value"),
        (js(with("kind", json!("1"))), "wrong_type"),
        (js(with("tags", json!("e"))), "wrong_type"),
        (js(with("tags", json!([[1]]))), "wrong_type"),
        (js(with("content", json!(5))), "wrong_type"),
        (js(with("content", json!("changed"))), "id_mismatch"),
        (js(without("sig")), "missing_field"),
        (js(without("id")), "missing_field"),
        (JsValue::from_str("{not json"), "not_json"),
        (JsValue::from_str("[1,2]"), "not_object"),
        (JsValue::from_f64(5.0), "not_object"),
        (JsValue::NULL, "not_object"),
        (JsValue::UNDEFINED, "not_object"),
    ];
    for (i, (event, reason)) in cases.into_iter().enumerate() {
        let d = fails(o, "enqueue", &[event, relays(&[A])], "invalid_event").await;
        assert_eq!(d["reason"], json!(reason), "case {i}: {d}");
    }
    // A BigInt field cannot be serialized: still a typed error.
    let big = js(good.clone());
    Reflect::set(
        &big,
        &"created_at".into(),
        &js_sys::BigInt::from(5u32).into(),
    )
    .unwrap();
    fails(o, "enqueue", &[big, relays(&[A])], "invalid_event").await;
    // Extra properties of event objects (e.g. library classes) are ignored.
    let extra = js(good.clone());
    Reflect::set(&extra, &"seenOn".into(), &js(json!(["x"]))).unwrap();
    let r = ok(o, "enqueue", &[extra, relays(&[A])]).await;
    assert_eq!(r["record"]["event"], good);
    ok(
        o,
        "cancel",
        &[JsValue::from_str(good["id"].as_str().unwrap())],
    )
    .await;
}

#[wasm_bindgen_test]
async fn bad_events_store_nothing() {
    let o = open_memory().await;
    refuses_bad_events(&o).await;
    assert_eq!(total(&o).await, 1, "only the final good event");
    let i = open(json!({ "name": name("badev") })).await.expect("open");
    refuses_bad_events(&i).await;
    assert_eq!(total(&i).await, 1);
    ok(&i, "close", &[]).await;
}

#[wasm_bindgen_test]
async fn bad_relays_and_options_store_nothing() {
    let o = open_memory().await;
    let ev = || js(event_obj(2));
    let d = fails(
        &o,
        "enqueue",
        &[ev(), relays(&[A, "http://b.example"])],
        "invalid_relay_url",
    )
    .await;
    assert_eq!(d["index"], json!(1));
    fails(&o, "enqueue", &[ev(), relays(&[""])], "invalid_relay_url").await;
    fails(
        &o,
        "enqueue",
        &[ev(), relays(&["wss://user@x.example"])],
        "invalid_relay_url",
    )
    .await;
    fails(
        &o,
        "enqueue",
        &[ev(), js(json!([A, 5]))],
        "invalid_relay_url",
    )
    .await;
    fails(
        &o,
        "enqueue",
        &[ev(), JsValue::from_str(A)],
        "invalid_argument",
    )
    .await;
    fails(&o, "enqueue", &[ev()], "invalid_argument").await;
    fails(&o, "enqueue", &[ev(), relays(&[])], "invalid_targets").await;
    let bad_options = [
        (json!({ "polcy": "all" }), "invalid_options"),
        (json!({ "policy": "most" }), "invalid_policy"),
        (json!({ "policy": { "atLeast": 3 } }), "invalid_policy"),
        (json!({ "policy": { "atLeast": 0 } }), "invalid_policy"),
        (
            json!({ "policy": { "required": ["wss://c.example"] } }),
            "invalid_policy",
        ),
        (
            json!({ "policy": { "required": ["nope"] } }),
            "invalid_relay_url",
        ),
        (
            json!({ "policy": { "required": "wss://a.example" } }),
            "invalid_policy",
        ),
        (json!({ "id": "" }), "invalid_item_id"),
        (json!({ "id": "a b" }), "invalid_item_id"),
        (json!({ "id": 5 }), "invalid_options"),
        (json!({ "maxAttempts": 0 }), "invalid_argument"),
        (json!({ "maxAttempts": 1001 }), "invalid_argument"),
        (json!({ "maxAttempts": "3" }), "invalid_options"),
        (json!({ "deadline": -5 }), "invalid_options"),
        (json!({ "deadline": "tomorrow" }), "invalid_options"),
        (json!(7), "invalid_options"),
    ];
    for (options, code) in bad_options {
        fails(&o, "enqueue", &[ev(), relays(&[A, B]), js(options)], code).await;
    }
    assert_eq!(total(&o).await, 0, "nothing stored");
    // Other methods refuse bad arguments too.
    fails(&o, "get", &[JsValue::from_f64(5.0)], "invalid_argument").await;
    fails(&o, "cancel", &[JsValue::NULL], "invalid_argument").await;
    fails(&o, "retry", &[], "invalid_argument").await;
    fails(
        &o,
        "list",
        &[js(json!({ "stage": "done" }))],
        "invalid_options",
    )
    .await;
    fails(&o, "list", &[js(json!({ "limit": 0 }))], "invalid_argument").await;
    fails(
        &o,
        "list",
        &[js(json!({ "after": "missing" }))],
        "not_found",
    )
    .await;
    fails(
        &o,
        "purge",
        &[js(json!({ "before": "now" }))],
        "invalid_options",
    )
    .await;
    fails(
        &o,
        "enqueueMany",
        &[JsValue::from_str("x")],
        "invalid_argument",
    )
    .await;
}

#[wasm_bindgen_test]
async fn enqueue_many_is_all_or_nothing() {
    for storage in ["memory", "indexeddb"] {
        let o = open(json!({ "storage": storage, "name": name("many") }))
            .await
            .expect("open");
        let item = |i: usize, rel: &[&str]| json!({ "event": event_obj(i), "relays": rel });
        // A bad item anywhere: nothing stored, the error names the item.
        let bad = js(json!([item(0, &[A]), { "event": event_obj(1), "relays": ["ftp://x"] }]));
        let d = fails(&o, "enqueueMany", &[bad], "invalid_relay_url").await;
        assert_eq!(d["index"], json!(1), "{storage}");
        let bad = js(json!([item(0, &[A]), { "event": event_obj(1) }]));
        fails(&o, "enqueueMany", &[bad], "invalid_argument").await;
        let bad = js(json!([item(0, &[A]), 5]));
        fails(&o, "enqueueMany", &[bad], "invalid_options").await;
        assert_eq!(total(&o).await, 0, "{storage}");
        // A good batch: all created, in order; repeated: all replayed.
        let c = counter(&o, "enqueued");
        let good = json!([item(0, &[A]), item(1, &[A, B]), { "event": event_obj(2).to_string(), "relays": [B], "policy": "any", "id": "third" }]);
        let r = ok(&o, "enqueueMany", &[js(good.clone())]).await;
        let dispositions: Vec<&str> = r
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["disposition"].as_str().unwrap())
            .collect();
        assert_eq!(dispositions, ["created", "created", "created"], "{storage}");
        assert_eq!(r[2]["id"], json!("third"));
        assert_eq!(count(&c), 3);
        let r = ok(&o, "enqueueMany", &[js(good)]).await;
        assert!(r
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["disposition"] == json!("replay")));
        assert_eq!(count(&c), 3);
        // A conflict with a stored record: the new item is not stored either.
        let conflict = js(json!([item(3, &[A]), item(0, &[B])]));
        fails(&o, "enqueueMany", &[conflict], "plan_conflict").await;
        assert_eq!(total(&o).await, 3, "{storage}");
        let id3 = event_obj(3)["id"].as_str().unwrap().to_string();
        assert_eq!(ok(&o, "get", &[JsValue::from_str(&id3)]).await, Value::Null);
        // A conflict inside the batch.
        let inner = js(json!([item(3, &[A]), item(3, &[B])]));
        fails(&o, "enqueueMany", &[inner], "plan_conflict").await;
        assert_eq!(total(&o).await, 3);
        assert_eq!(ok(&o, "enqueueMany", &[js(json!([]))]).await, json!([]));
        // A bad signature: nothing stored (IndexedDB has already been handed the rows
        // when the signatures are checked; the transaction is aborted), the error names
        // the item, and it comes first: before a later item's error or a conflict.
        let forged = |i: usize| {
            let mut e = event_obj(i);
            let mut sig = e["sig"].as_str().unwrap().to_string();
            let c = if sig.ends_with('0') { "1" } else { "0" };
            sig.replace_range(127..128, c);
            e["sig"] = json!(sig);
            json!({ "event": e, "relays": [A] })
        };
        let mut many: Vec<Value> = (10..70).map(|i| item(i, &[A, B])).collect();
        many.push(forged(70));
        let cases = [
            (json!([item(4, &[A]), forged(5)]), 1),
            (json!([item(4, &[A]), item(0, &[A]), forged(5)]), 2),
            (json!(many), 60),
            (
                json!([item(4, &[A]), forged(5), { "event": event_obj(6), "relays": ["ftp://x"] }]),
                1,
            ),
            (json!([forged(4), item(0, &[B])]), 0),
            (json!([forged(4), item(5, &[A]), item(5, &[B])]), 0),
        ];
        for (k, (batch, index)) in cases.into_iter().enumerate() {
            let d = fails(&o, "enqueueMany", &[js(batch)], "invalid_event").await;
            assert_eq!(
                d["reason"],
                json!("bad_signature"),
                "{storage} case {k}: {d}"
            );
            assert_eq!(d["index"], json!(index), "{storage} case {k}: {d}");
            assert_eq!(total(&o).await, 3, "{storage} case {k}");
        }
        assert_eq!(count(&c), 3);
        for i in [4, 10, 69] {
            let id = event_obj(i)["id"].as_str().unwrap().to_string();
            assert_eq!(ok(&o, "get", &[JsValue::from_str(&id)]).await, Value::Null);
        }
        // The same single event is refused too, and the outbox still takes good ones.
        let single = forged(7);
        let d = fails(
            &o,
            "enqueue",
            &[js(single["event"].clone()), relays(&[A])],
            "invalid_event",
        )
        .await;
        assert_eq!(d["reason"], json!("bad_signature"), "{storage}: {d}");
        assert_eq!(d.get("index"), None, "{storage}: {d}");
        let r = ok(&o, "enqueueMany", &[js(json!([item(4, &[A])]))]).await;
        assert_eq!(r[0]["disposition"], json!("created"), "{storage}");
        assert_eq!(total(&o).await, 4, "{storage}");
        ok(&o, "close", &[]).await;
    }
}

// ---------------------------------------------------------------- queries and changes

#[wasm_bindgen_test]
async fn get_list_status_cancel_retry_purge() {
    let o = open(json!({ "name": name("ops") })).await.expect("open");
    let ids: Vec<String> = (0..5)
        .map(|i| event_obj(i)["id"].as_str().unwrap().to_string())
        .collect();
    for i in 0..5 {
        ok(&o, "enqueue", &[js(event_obj(i)), relays(&[A])]).await;
    }
    let got = ok(&o, "get", &[JsValue::from_str(&ids[2])]).await;
    assert_eq!(got["id"], json!(ids[2]));
    assert_eq!(
        ok(&o, "get", &[JsValue::from_str("nope")]).await,
        Value::Null
    );
    // list: creation order, paging, stage filter.
    let all = ok(&o, "list", &[]).await;
    assert_eq!(all.as_array().unwrap().len(), 5);
    let page1 = ok(&o, "list", &[js(json!({ "limit": 2 }))]).await;
    assert_eq!(page1.as_array().unwrap().len(), 2);
    let after = page1[1]["id"].clone();
    let page2 = ok(&o, "list", &[js(json!({ "limit": 10, "after": after }))]).await;
    assert_eq!(page2.as_array().unwrap().len(), 3);
    let mut seen: Vec<Value> = page1
        .as_array()
        .unwrap()
        .iter()
        .chain(page2.as_array().unwrap())
        .map(|r| r["id"].clone())
        .collect();
    seen.dedup();
    assert_eq!(seen.len(), 5);
    // cancel → change event, stage cancelled, reason cancelled; again → already_terminal.
    let changes = counter(&o, "change");
    let c = ok(&o, "cancel", &[JsValue::from_str(&ids[0])]).await;
    assert_eq!(c["stage"], json!("cancelled"));
    assert_eq!(c["reason"], json!("cancelled"));
    assert_eq!(c["nextAttemptAt"], Value::Null);
    assert_eq!(count(&changes), 1);
    fails(
        &o,
        "cancel",
        &[JsValue::from_str(&ids[0])],
        "already_terminal",
    )
    .await;
    fails(&o, "cancel", &[JsValue::from_str("nope")], "not_found").await;
    fails(&o, "retry", &[JsValue::from_str(&ids[0])], "not_retryable").await;
    fails(&o, "retry", &[JsValue::from_str(&ids[1])], "not_retryable").await;
    fails(&o, "retry", &[JsValue::from_str("nope")], "not_found").await;
    let s = ok(&o, "status", &[]).await;
    assert_eq!(s["pending"], json!(4));
    assert_eq!(s["cancelled"], json!(1));
    assert_eq!(s["total"], json!(5));
    let cancelled = ok(&o, "list", &[js(json!({ "stage": "cancelled" }))]).await;
    assert_eq!(cancelled.as_array().unwrap().len(), 1);
    // purge: only terminal records changed before `before`.
    assert_eq!(
        ok(&o, "purge", &[js(json!({ "before": 1 }))]).await,
        json!(0)
    );
    pause(5).await;
    assert_eq!(ok(&o, "purge", &[]).await, json!(1));
    assert_eq!(total(&o).await, 4);
    assert_eq!(
        ok(&o, "get", &[JsValue::from_str(&ids[0])]).await,
        Value::Null
    );
    ok(&o, "close", &[]).await;
}

// ---------------------------------------------------------------- flushing

#[wasm_bindgen_test]
async fn flush_reports_and_fires_events() {
    let t = transport(&js(json!({
        A: { "ok": true, "message": "" },
        B: { "ok": false, "message": "blocked: not on the list" },
        "wss://c.example": { "ok": false, "message": "rate-limited: slow down" },
    })));
    let o = open_with(
        json!({ "storage": "memory", "baseDelayMs": 50 }),
        &[("transport", t)],
    )
    .await;
    let c: Vec<(&str, JsValue)> = ["attempt", "delivered", "retrying", "exhausted", "change"]
        .into_iter()
        .map(|k| (k, counter(&o, k)))
        .collect();
    let delivered = ok(&o, "enqueue", &[js(event_obj(0)), relays(&[A])]).await["id"].clone();
    let rejected = ok(&o, "enqueue", &[js(event_obj(1)), relays(&[A, B])]).await["id"].clone();
    let waiting = ok(
        &o,
        "enqueue",
        &[
            js(event_obj(2)),
            relays(&[A, "wss://c.example", "wss://d.example"]),
            js(json!({ "policy": { "atLeast": 2 } })),
        ],
    )
    .await["id"]
        .clone();
    let stats = ok(&o, "flush", &[]).await;
    assert_eq!(stats["ran"], json!(true));
    assert_eq!(stats["skipped"], Value::Null);
    assert_eq!(stats["claimed"], json!(3));
    assert_eq!(stats["attempts"], json!(3));
    assert_eq!(stats["publishes"], json!(6));
    assert_eq!(stats["delivered"], json!(1));
    assert_eq!(stats["exhausted"], json!(1));
    assert_eq!(stats["retrying"], json!(1));
    assert!(stats["nextDueAt"].as_u64().is_some());
    let n = |k: &str| count(&c.iter().find(|(n, _)| *n == k).unwrap().1);
    assert_eq!(
        (n("attempt"), n("delivered"), n("retrying"), n("exhausted")),
        (3, 1, 1, 1)
    );
    assert_eq!(n("change"), 3 + 6, "3 enqueues, then 6 flush events");
    // The records carry typed evidence.
    let r = ok(&o, "get", &[js(delivered)]).await;
    assert_eq!(r["stage"], json!("satisfied"));
    assert_eq!(r["targets"][0]["state"], json!("accepted"));
    assert_eq!(r["targets"][0]["latest"]["outcome"], json!("accepted"));
    let r = ok(&o, "get", &[js(rejected.clone())]).await;
    assert_eq!(r["stage"], json!("exhausted"));
    assert_eq!(r["reason"], json!("rejected"));
    let latest_b = &r["targets"][1]["latest"];
    assert_eq!(latest_b["outcome"], json!("rejected"));
    assert_eq!(latest_b["rejectReason"], json!("blocked"));
    assert_eq!(latest_b["message"], json!("blocked: not on the list"));
    assert_eq!(latest_b["attempt"], json!(1));
    let r = ok(&o, "get", &[js(waiting)]).await;
    assert_eq!(r["stage"], json!("retryable"));
    assert_eq!(r["attempts"], json!(1));
    assert!(r["nextAttemptAt"].as_u64().unwrap() > r["lastAttemptAt"].as_u64().unwrap());
    let outcomes: Vec<&str> = r["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["accepted", "rateLimited", "unreachable"]);
    assert_eq!(r["evidence"][2]["message"], json!("connection refused"));
    assert!(r["lastError"].as_str().unwrap().contains("wss://d.example"));
    // retry re-arms the exhausted record: change event, due now.
    let before = n("change");
    let again = ok(&o, "retry", &[js(rejected)]).await;
    assert_eq!(again["stage"], json!("retryable"));
    assert_eq!(again["reason"], Value::Null);
    assert_eq!(again["attemptLimit"], json!(11));
    assert_eq!(n("change"), before + 1);
    ok(&o, "close", &[]).await;
}

/// Another outbox of the same database (another tab or worker) sees every record
/// event of this one once, each followed by its `change`, through the channel.
#[wasm_bindgen_test]
async fn record_events_reach_other_contexts_of_the_database() {
    let t = transport(&js(json!({ A: { "ok": true, "message": "" } })));
    let n = name("relay");
    let here = open_with(
        json!({ "name": n, "durability": "relaxed" }),
        &[("transport", t)],
    )
    .await;
    let there = open(json!({ "name": n }))
        .await
        .expect("open the other context");
    let kinds = ["enqueued", "attempt", "delivered", "change"];
    let seen: Vec<(&str, JsValue)> = kinds.iter().map(|k| (*k, counter(&there, k))).collect();
    let local_changes = counter(&here, "change");
    for i in 0..3 {
        ok(&here, "enqueue", &[js(event_obj(i)), relays(&[A])]).await;
    }
    let stats = ok(&here, "flush", &[]).await;
    assert_eq!(stats["delivered"], json!(3));
    let n_of = |k: &str| count(&seen.iter().find(|(n, _)| *n == k).unwrap().1);
    // Channel messages arrive as tasks: wait (bounded) for the last one.
    for _ in 0..100 {
        if n_of("change") >= 9 {
            break;
        }
        pause(20).await;
    }
    pause(50).await;
    assert_eq!(
        (n_of("enqueued"), n_of("attempt"), n_of("delivered")),
        (3, 3, 3),
        "every record event once"
    );
    assert_eq!(n_of("change"), 9, "one change per record event, no more");
    assert_eq!(count(&local_changes), 9, "and the same here");
    ok(&here, "close", &[]).await;
    ok(&there, "close", &[]).await;
}

#[wasm_bindgen_test]
async fn unreachable_relays_schedule_a_retry() {
    // The default WebSocket transport, against a closed port on 127.0.0.1: the
    // connection fails fast, the target is `unreachable`, the record waits for a retry.
    // Fast: on the refusal, not at the connect timeout (the flush settles before a timer
    // of `connectTimeoutMs` started before it).
    let connect_timeout_ms = 30_000;
    let o = open(json!({
        "storage": "memory",
        "baseDelayMs": 60000,
        "connectTimeoutMs": connect_timeout_ms
    }))
    .await
    .expect("open");
    let retrying = counter(&o, "retrying");
    let attempts = counter(&o, "attempt");
    let relay = "ws://127.0.0.1:59999";
    ok(&o, "enqueue", &[js(event_obj(0)), relays(&[relay])]).await;
    let start = js_sys::Date::now();
    let s = JsFuture::from(flush_before_timer(&o, connect_timeout_ms))
        .await
        .expect("flush");
    assert_ne!(
        s.as_string().as_deref(),
        Some("timer"),
        "fails fast: the flush waited for the connect timeout"
    );
    let s = rust(&s);
    assert_eq!(s["retrying"], json!(1));
    assert_eq!(count(&retrying), 1);
    assert_eq!(count(&attempts), 1);
    let details = rust(&Reflect::get(&retrying, &"details".into()).unwrap());
    let r = &details[0];
    assert_eq!(r["stage"], json!("retryable"));
    assert_eq!(r["targets"][0]["latest"]["outcome"], json!("unreachable"));
    assert!(r["nextAttemptAt"].as_f64().unwrap() > start + 30_000.0);
    // Not due again yet: a second flush claims nothing.
    let s = ok(&o, "flush", &[]).await;
    assert_eq!(
        (s["ran"].clone(), s["claimed"].clone()),
        (json!(true), json!(0))
    );
    assert_eq!(ok(&o, "status", &[]).await["retryable"], json!(1));
    ok(&o, "close", &[]).await;
}

#[wasm_bindgen_test]
async fn flush_is_skipped_while_another_context_holds_the_lock() {
    let n = name("lock");
    let o = open(json!({ "name": n })).await.expect("open");
    ok(
        &o,
        "enqueue",
        &[js(event_obj(0)), relays(&["ws://127.0.0.1:59999"])],
    )
    .await;
    let lock = format!("nostr-outbox:{n}");
    let release: Function = JsFuture::from(hold_lock(&lock)).await.expect("lock").into();
    // Returns at once: it never queues for the lock (which is released only after).
    let s = JsFuture::from(flush_unless_queued(&o, &lock))
        .await
        .expect("flush");
    if s.as_string().as_deref() == Some("queued") {
        let _ = release.call0(&JsValue::UNDEFINED);
        panic!("the flush waited for the lock instead of skipping the run");
    }
    let s = rust(&s);
    assert_eq!(s["ran"], json!(false));
    assert_eq!(s["skipped"], json!("locked"));
    assert_eq!(s["claimed"], json!(0));
    assert_eq!(ok(&o, "status", &[]).await["pending"], json!(1));
    let released = release.call0(&JsValue::UNDEFINED).unwrap();
    JsFuture::from(js_sys::Promise::from(released))
        .await
        .expect("release");
    let s = ok(&o, "flush", &[]).await;
    assert_eq!(s["ran"], json!(true));
    assert_eq!(s["claimed"], json!(1));
    ok(&o, "close", &[]).await;
}

#[wasm_bindgen_test]
async fn concurrent_flushes_share_runs() {
    let t = transport(&js(json!({ A: { "ok": true } })));
    let o = open_with(json!({ "storage": "memory" }), &[("transport", t.clone())]).await;
    ok(&o, "enqueue", &[js(event_obj(0)), relays(&[A])]).await;
    let p1 = call(&o, "flush", &[]);
    let p2 = call(&o, "flush", &[]);
    let (a, b) = futures_util::future::join(p1, p2).await;
    let (a, b) = (rust(&a.unwrap()), rust(&b.unwrap()));
    assert_eq!(
        a["delivered"].as_u64().unwrap() + b["delivered"].as_u64().unwrap(),
        1
    );
    let log = rust(&Reflect::get(&t, &"log".into()).unwrap());
    assert_eq!(log.as_array().unwrap().len(), 1, "published once");
    ok(&o, "close", &[]).await;
}

#[wasm_bindgen_test]
async fn auto_flush_delivers_after_enqueue_and_stops() {
    let t = transport(&js(json!({ A: { "ok": true } })));
    let o = open_with(json!({ "storage": "memory" }), &[("transport", t)]).await;
    let delivered = counter(&o, "delivered");
    call(&o, "startAutoFlush", &[]).await.expect("start");
    assert_eq!(
        rust(&Reflect::get(&o, &"autoFlush".into()).unwrap()),
        json!(true)
    );
    ok(&o, "enqueue", &[js(event_obj(0)), relays(&[A])]).await;
    let n = JsFuture::from(wait_for(&delivered, 1, 3000)).await.unwrap();
    assert_eq!(n.as_f64(), Some(1.0));
    call(&o, "stopAutoFlush", &[]).await.expect("stop");
    assert_eq!(
        rust(&Reflect::get(&o, &"autoFlush".into()).unwrap()),
        json!(false)
    );
    ok(&o, "enqueue", &[js(event_obj(1)), relays(&[A])]).await;
    pause(100).await;
    assert_eq!(count(&delivered), 1, "no flush after stop");
    assert_eq!(ok(&o, "status", &[]).await["pending"], json!(1));
    ok(&o, "close", &[]).await;
}

#[wasm_bindgen_test]
async fn auto_flush_retries_at_the_due_time() {
    // The first answer is an error, the next ones accept: the timer must come back.
    let answers = js(json!({ A: { "ok": false, "message": "error: try later" } }));
    let t = transport(&answers);
    let o = open_with(
        json!({ "storage": "memory", "baseDelayMs": 100, "maxDelayMs": 100, "autoFlush": true }),
        &[("transport", t)],
    )
    .await;
    let retrying = counter(&o, "retrying");
    let delivered = counter(&o, "delivered");
    ok(&o, "enqueue", &[js(event_obj(0)), relays(&[A])]).await;
    JsFuture::from(wait_for(&retrying, 1, 3000)).await.unwrap();
    Reflect::set(&answers, &A.into(), &js(json!({ "ok": true }))).unwrap();
    let n = JsFuture::from(wait_for(&delivered, 1, 3000)).await.unwrap();
    assert_eq!(n.as_f64(), Some(1.0), "delivered by the retry timer");
    ok(&o, "close", &[]).await;
}

// ---------------------------------------------------------------- lifecycle, events, workers

#[wasm_bindgen_test]
async fn closed_outbox_refuses_everything() {
    let o = open_memory().await;
    ok(&o, "close", &[]).await;
    ok(&o, "close", &[]).await;
    fails(&o, "enqueue", &[js(event_obj(0)), relays(&[A])], "closed").await;
    fails(&o, "status", &[], "closed").await;
    fails(&o, "flush", &[], "closed").await;
    fails(&o, "get", &[JsValue::from_str("x")], "closed").await;
    match call(&o, "startAutoFlush", &[]).await {
        Err(e) => {
            assert_code(&e, "closed");
        }
        Ok(_) => panic!("startAutoFlush after close"),
    }
}

#[wasm_bindgen_test]
async fn event_target_shape() {
    let o = open_memory().await;
    let c = counter(&o, "custom");
    let ev = js_sys::eval("new CustomEvent('custom')").unwrap();
    assert_eq!(
        call(&o, "dispatchEvent", &[ev]).await.unwrap(),
        JsValue::TRUE
    );
    assert_eq!(count(&c), 1);
    // removeEventListener removes a listener added with addEventListener.
    let hits = std::rc::Rc::new(std::cell::Cell::new(0));
    let h = hits.clone();
    let f = Closure::<dyn FnMut(JsValue)>::new(move |_| h.set(h.get() + 1));
    let fv: JsValue = f.as_ref().clone();
    call(&o, "addEventListener", &["enqueued".into(), fv.clone()])
        .await
        .unwrap();
    ok(&o, "enqueue", &[js(event_obj(0)), relays(&[A])]).await;
    call(&o, "removeEventListener", &["enqueued".into(), fv])
        .await
        .unwrap();
    ok(&o, "enqueue", &[js(event_obj(1)), relays(&[A])]).await;
    assert_eq!(hits.get(), 1);
    ok(&o, "close", &[]).await;
}

#[wasm_bindgen_test]
async fn events_reach_other_outboxes_of_the_same_database() {
    let n = name("bc");
    let a = open(json!({ "name": n })).await.expect("a");
    let b = open(json!({ "name": n })).await.expect("b");
    let seen = counter(&b, "enqueued");
    ok(&a, "enqueue", &[js(event_obj(0)), relays(&[A])]).await;
    let got = JsFuture::from(wait_for(&seen, 1, 2000)).await.unwrap();
    assert_eq!(got.as_f64(), Some(1.0));
    let details = rust(&Reflect::get(&seen, &"details".into()).unwrap());
    assert_eq!(details[0]["id"], event_obj(0)["id"]);
    assert_eq!(total(&b).await, 1, "same database");

    // The events of one call reach the other outbox in order, in one channel message.
    let spy = channel_spy(&format!("nostr-outbox:{n}"));
    let changes = counter(&b, "change");
    let items: Vec<Value> = (1..4)
        .map(|i| json!({ "event": event_obj(i), "relays": [A] }))
        .collect();
    ok(&a, "enqueueMany", &[js(json!(items))]).await;
    let got = JsFuture::from(wait_for(&seen, 4, 2000)).await.unwrap();
    assert_eq!(got.as_f64(), Some(4.0));
    let details = rust(&Reflect::get(&seen, &"details".into()).unwrap());
    let ids: Vec<&Value> = (1..4).map(|i| &details[i]["id"]).collect();
    let want: Vec<Value> = (1..4).map(|i| event_obj(i)["id"].clone()).collect();
    assert_eq!(ids, want.iter().collect::<Vec<_>>(), "in order");
    JsFuture::from(wait_for(&changes, 3, 2000)).await.unwrap();
    assert_eq!(
        rust(&Reflect::get(&changes, &"n".into()).unwrap()),
        json!(3)
    );
    let posted = rust(&Reflect::get(&spy, &"details".into()).unwrap());
    assert_eq!(
        posted.as_array().map(Vec::len),
        Some(1),
        "one message: {posted}"
    );
    let batch = posted[0]["batch"].as_array().cloned().unwrap_or_default();
    let kinds: Vec<&Value> = batch.iter().map(|m| &m["type"]).collect();
    assert_eq!(kinds, [&json!("enqueued"); 3], "{posted}");

    // A single message, as an outbox of an earlier version posts it, still counts.
    let delivered = counter(&b, "delivered");
    post_to_channel(
        &format!("nostr-outbox:{n}"),
        &js(json!({ "type": "delivered", "detail": { "id": "x" }, "change": true })),
    );
    JsFuture::from(wait_for(&delivered, 1, 2000)).await.unwrap();
    JsFuture::from(wait_for(&changes, 4, 2000)).await.unwrap();
    assert_eq!(
        rust(&Reflect::get(&delivered, &"n".into()).unwrap()),
        json!(1)
    );
    assert_eq!(
        rust(&Reflect::get(&changes, &"n".into()).unwrap()),
        json!(4)
    );
    let close = Reflect::get(&spy, &"close".into()).unwrap();
    js_sys::Function::from(close).call0(&spy).unwrap();
    ok(&a, "close", &[]).await;
    ok(&b, "close", &[]).await;
}

/// An awaited `enqueue` resolves before its event is cloned and posted to the other
/// contexts: the post is a task of its own, off the caller's path (it used to be a
/// microtask queued before the promise resolved, which the caller waited for).
#[wasm_bindgen_test]
async fn enqueue_resolves_before_its_channel_post() {
    let n = name("post-order");
    let a = open(json!({ "name": n })).await.expect("a");
    let log = post_log();
    ok(&a, "enqueue", &[js(event_obj(0)), relays(&[A])]).await;
    note(&log, "resolved");
    JsFuture::from(sleep(50)).await.unwrap();
    let restore = Reflect::get(&log, &"restore".into()).unwrap();
    js_sys::Function::from(restore).call0(&log).unwrap();
    let order: Vec<String> = log.iter().filter_map(|v| v.as_string()).collect();
    assert_eq!(
        order,
        ["resolved", "posted"],
        "one post, after the enqueue resolved"
    );
    ok(&a, "close", &[]).await;
}

#[wasm_bindgen_test]
async fn service_worker_helpers() {
    use nostr_outbox::js::sw::{handle_sync, register_background_sync};
    let no_sync = JsFuture::from(register_background_sync(js(json!({})), None))
        .await
        .unwrap();
    assert_eq!(no_sync, JsValue::FALSE);
    let fake: JsValue = js_sys::eval(
        "({ sync: { tags: [], register(t) { this.tags.push(t); return Promise.resolve(); } } })",
    )
    .unwrap();
    let yes = JsFuture::from(register_background_sync(fake.clone(), None))
        .await
        .unwrap();
    assert_eq!(yes, JsValue::TRUE);
    let tags = Reflect::get(
        &Reflect::get(&fake, &"sync".into()).unwrap(),
        &"tags".into(),
    )
    .unwrap();
    assert_eq!(rust(&tags), json!(["nostr-outbox"]));
    let failing: JsValue =
        js_sys::eval("({ sync: { register() { return Promise.reject(new Error('denied')); } } })")
            .unwrap();
    assert_eq!(
        JsFuture::from(register_background_sync(failing, Some("x".into())))
            .await
            .unwrap(),
        JsValue::FALSE
    );

    // handleSync: another tag is ignored; the right one flushes.
    let n = name("sw");
    let t = transport(&js(json!({ A: { "ok": true } })));
    let options = js(json!({ "name": n }));
    Reflect::set(&options, &"transport".into(), &t).unwrap();
    let s = JsFuture::from(handle_sync(
        js(json!({ "tag": "other", "lastChance": false })),
        options.clone(),
    ))
    .await
    .unwrap();
    assert_eq!(rust(&s)["skipped"], json!("tag"));
    let o = open(json!({ "name": n })).await.expect("open");
    ok(&o, "enqueue", &[js(event_obj(0)), relays(&[A])]).await;
    let s = rust(
        &JsFuture::from(handle_sync(
            js(json!({ "tag": "nostr-outbox", "lastChance": false })),
            options.clone(),
        ))
        .await
        .unwrap(),
    );
    assert_eq!(s["ran"], json!(true));
    assert_eq!(s["delivered"], json!(1));
    // From a message handler (no tag).
    let s = rust(
        &JsFuture::from(handle_sync(JsValue::UNDEFINED, options.clone()))
            .await
            .unwrap(),
    );
    assert_eq!(s["ran"], json!(true));
    // A one-off sync that leaves records waiting rejects so the browser retries.
    ok(&o, "enqueue", &[js(event_obj(1)), relays(&[B])]).await;
    let err = JsFuture::from(handle_sync(
        js(json!({ "tag": "nostr-outbox", "lastChance": false })),
        options.clone(),
    ))
    .await
    .unwrap_err();
    let d = assert_code(&err, "sync_incomplete");
    assert_eq!(d["stats"]["retrying"], json!(1));
    // Bad options are typed errors too.
    let err = JsFuture::from(handle_sync(JsValue::UNDEFINED, js(json!({ "tga": "x" }))))
        .await
        .unwrap_err();
    assert_code(&err, "invalid_options");
    ok(&o, "close", &[]).await;
}

#[wasm_bindgen_test]
async fn strange_arguments_never_panic() {
    let o = open_memory().await;
    let strange: Vec<JsValue> = vec![
        JsValue::UNDEFINED,
        JsValue::NULL,
        JsValue::TRUE,
        JsValue::from_f64(f64::NAN),
        JsValue::from_f64(1e300),
        JsValue::from_str(""),
        js_sys::Symbol::for_("s").into(),
        js_sys::BigInt::from(1u32).into(),
        js_sys::Function::new_no_args("return 1").into(),
        Array::new().into(),
        js_sys::Object::new().into(),
        js_sys::eval("(() => { const a = {}; a.self = a; a.tags = [a]; return a; })()").unwrap(),
    ];
    for v in &strange {
        for method in [
            "enqueue",
            "enqueueMany",
            "get",
            "list",
            "retry",
            "cancel",
            "purge",
        ] {
            let r = call(&o, method, &[v.clone(), v.clone(), v.clone()]).await;
            if let Err(e) = r {
                assert!(
                    e.is_instance_of::<OutboxError>(),
                    "{method}({v:?}) threw {e:?}"
                );
            }
        }
    }
    // Still usable.
    ok(&o, "enqueue", &[js(event_obj(0)), relays(&[A])]).await;
    ok(&o, "close", &[]).await;
}

// ---------------------------------------------------------------- lanes and priority

async fn lanes_and_priorities(o: &JsValue, log: &JsValue) {
    // Stored and shown on the record; defaults when not given.
    let plain = ok(o, "enqueue", &[js(event_obj(0)), relays(&[A, B])]).await;
    assert_eq!(plain["record"]["lane"], json!("default"));
    assert_eq!(plain["record"]["priority"], json!("normal"));
    let low = ok(
        o,
        "enqueue",
        &[
            js(event_obj(1)),
            relays(&[A]),
            js(json!({ "lane": "bulk", "priority": "low" })),
        ],
    )
    .await;
    assert_eq!(
        (&low["record"]["lane"], &low["record"]["priority"]),
        (&json!("bulk"), &json!("low"))
    );
    let many = ok(
        o,
        "enqueueMany",
        &[js(json!([
            { "event": event_obj(2), "relays": [A], "lane": "dm", "priority": "high" },
            { "event": event_obj(3), "relays": [B] },
        ]))],
    )
    .await;
    assert_eq!(many[0]["record"]["priority"], json!("high"));
    assert_eq!(many[1]["record"]["lane"], json!("default"));
    // Bad lanes and priorities: typed errors naming the option, nothing stored.
    let before = total(o).await;
    let e = fails(
        o,
        "enqueue",
        &[
            js(event_obj(4)),
            relays(&[A]),
            js(json!({ "priority": "urgent" })),
        ],
        "invalid_options",
    )
    .await;
    assert_eq!(e["option"], json!("priority"), "{e}");
    fails(
        o,
        "enqueue",
        &[
            js(event_obj(4)),
            relays(&[A]),
            js(json!({ "lane": "no spaces" })),
        ],
        "invalid_argument",
    )
    .await;
    fails(
        o,
        "enqueueMany",
        &[js(
            json!([{ "event": event_obj(4), "relays": [A], "lane": 7 }]),
        )],
        "invalid_options",
    )
    .await;
    fails(
        o,
        "flush",
        &[js(json!({ "lanes": "dm" }))],
        "invalid_argument",
    )
    .await;
    fails(
        o,
        "flush",
        &[js(json!({ "relays": ["not a url"] }))],
        "invalid_relay_url",
    )
    .await;
    fails(
        o,
        "flush",
        &[js(json!({ "lane": ["dm"] }))],
        "invalid_options",
    )
    .await;
    fails(
        o,
        "status",
        &[js(json!({ "lane": "" }))],
        "invalid_argument",
    )
    .await;
    assert_eq!(total(o).await, before);
    // By lane.
    let bulk = ok(o, "status", &[js(json!({ "lane": "bulk" }))]).await;
    assert_eq!(
        (bulk["pending"].clone(), bulk["total"].clone()),
        (json!(1), json!(1))
    );
    let listed = ok(o, "list", &[js(json!({ "lane": "default" }))]).await;
    assert_eq!(listed.as_array().expect("array").len(), 2);
    // A flush for relay B only: the records waiting for B, published to B only.
    let stats = ok(o, "flush", &[js(json!({ "relays": [B] }))]).await;
    assert_eq!(
        (stats["claimed"].clone(), stats["publishes"].clone()),
        (json!(2), json!(2))
    );
    let sent: Vec<Value> = rust(log).as_array().expect("log").clone();
    assert!(sent.iter().all(|s| s[0] == json!(B)), "{sent:?}");
    let first = ok(
        o,
        "get",
        &[plain["id"].clone().to_string().trim_matches('"').into()],
    )
    .await;
    assert_eq!(
        first["stage"],
        json!("retryable"),
        "A is still to be sent: {first}"
    );
    // A flush of the dm lane, then everything: high before normal before low.
    ok(o, "flush", &[js(json!({ "lanes": ["dm"] }))]).await;
    let sent: Vec<Value> = rust(log).as_array().expect("log").clone();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[2][1], many[0]["id"]);
    ok(o, "flush", &[]).await;
    let sent: Vec<Value> = rust(log).as_array().expect("log").clone();
    let ids: Vec<&Value> = sent[3..].iter().map(|s| &s[1]).collect();
    assert_eq!(
        ids,
        [&plain["id"], &low["id"]],
        "normal before low: {sent:?}"
    );
    let status = ok(o, "status", &[]).await;
    assert_eq!(status["satisfied"], json!(4), "{status}");
}

#[wasm_bindgen_test]
async fn lanes_and_priorities_memory_and_indexeddb() {
    for storage in [
        json!({ "storage": "memory" }),
        json!({ "name": name("lanes") }),
    ] {
        let t = transport(&js(json!({
            A: { "ok": true, "message": "" },
            B: { "ok": true, "message": "" },
        })));
        let log = Reflect::get(&t, &JsValue::from_str("log")).expect("log");
        let o = open_with(storage, &[("transport", t)]).await;
        lanes_and_priorities(&o, &log).await;
        ok(&o, "close", &[]).await;
    }
}
