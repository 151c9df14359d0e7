//! The queue's Nostr rules through the JavaScript API, as an application sees them:
//! enqueue dispositions, the `superseded` event, records and `status()` saying so,
//! `retry` refused, NIP-09 deletions, `acceptedRelays`, ephemeral deadlines and
//! NIP-40 expired events refused with nothing stored; on memory and IndexedDB.
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
#[path = "ws_support/mod.rs"]
mod ws_support;
use js_support::{call, js, rust};
use ws_support::sign;

wasm_bindgen_test_configure!(run_in_browser);

const A: &str = "wss://a.example";
const B: &str = "wss://b.example";

#[wasm_bindgen(inline_js = r#"
export function counter(outbox, type) {
  const c = { n: 0, details: [] };
  outbox.addEventListener(type, (e) => { c.n += 1; c.details.push(e.detail); });
  return c;
}
export function transport(answers) {
  return {
    publish(relay) {
      const a = answers[relay];
      if (!a) return Promise.reject(new Error("connection refused"));
      return Promise.resolve(a);
    },
  };
}
"#)]
extern "C" {
    fn counter(outbox: &JsValue, kind: &str) -> JsValue;
    fn transport(answers: &JsValue) -> JsValue;
}

#[wasm_bindgen(inline_js = r#"
// A NIP-07-shaped signer whose getPublicKey() answers `pubkey` (never, without one).
export function keyedSigner(pubkey) {
  return {
    signEvent: () => Promise.reject(new Error("not in this test")),
    getPublicKey: () => (pubkey == null ? new Promise(() => {}) : Promise.resolve(pubkey)),
  };
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = keyedSigner)]
    fn keyed_signer(pubkey: Option<String>) -> JsValue;
}

fn now_s() -> u64 {
    (js_sys::Date::now() / 1000.0) as u64
}

/// A signed event as the JS object an app passes.
fn event(kind: u16, tags: Vec<Vec<&str>>, content: &str, created_at: u64) -> Value {
    let tags = tags
        .into_iter()
        .map(|t| t.into_iter().map(String::from).collect())
        .collect();
    serde_json::from_str(sign(3, kind, tags, content, created_at).raw()).expect("event json")
}

async fn open(options: Value, transport: Option<JsValue>) -> JsValue {
    let o = js(options);
    if let Some(t) = transport {
        Reflect::set(&o, &"transport".into(), &t).expect("set");
    }
    JsFuture::from(Outbox::open(o)).await.expect("open")
}

async fn ok(obj: &JsValue, method: &str, args: &[JsValue]) -> Value {
    match call(obj, method, args).await {
        Ok(v) => rust(&v),
        Err(e) => panic!("{method} failed: {:?}", rust(&e)),
    }
}

async fn fails(obj: &JsValue, method: &str, args: &[JsValue], code: &str) -> Value {
    match call(obj, method, args).await {
        Ok(v) => panic!("{method} should fail with {code}, got {:?}", rust(&v)),
        Err(e) => {
            assert!(
                e.is_instance_of::<OutboxError>(),
                "not an OutboxError: {e:?}"
            );
            let err: &OutboxError = e.unchecked_ref();
            assert_eq!(err.code(), code);
            rust(&Reflect::get(&e, &"details".into()).expect("details"))
        }
    }
}

fn count(c: &JsValue) -> u64 {
    Reflect::get(c, &"n".into())
        .expect("n")
        .as_f64()
        .expect("n") as u64
}

fn details(c: &JsValue) -> Value {
    rust(&Reflect::get(c, &"details".into()).expect("details"))
}

/// `status().total` is still `before`: a refusal stored nothing.
async fn nothing_stored(o: &JsValue, before: &Value) {
    assert_eq!(
        &ok(o, "status", &[]).await["total"],
        before,
        "nothing stored"
    );
}

/// Each event's record is in its stage.
async fn stages_are(o: &JsValue, expected: &[(&Value, &str)]) {
    for (e, stage) in expected {
        let got = ok(o, "get", &[js(e["id"].clone())]).await;
        assert_eq!(got["stage"], json!(stage), "{}", e["content"]);
    }
}

fn relays(list: &[&str]) -> JsValue {
    js(json!(list))
}

fn storages() -> [Value; 2] {
    [
        json!({ "storage": "memory" }),
        json!({ "name": format!("rules-{}", js_sys::Math::random()), "autoFlush": false }),
    ]
}

#[wasm_bindgen_test]
async fn newer_versions_supersede_older_ones() {
    for options in storages() {
        let o = open(options, None).await;
        let superseded = counter(&o, "superseded");
        let t = now_s();
        let v1 = event(0, vec![], r#"{"name":"one"}"#, t - 20);
        let v2 = event(0, vec![], r#"{"name":"two"}"#, t - 10);
        let v0 = event(0, vec![], r#"{"name":"zero"}"#, t - 30);
        let r1 = ok(&o, "enqueue", &[js(v1.clone()), relays(&[A, B])]).await;
        assert_eq!(r1["disposition"], json!("created"));
        let r2 = ok(&o, "enqueue", &[js(v2.clone()), relays(&[A, B])]).await;
        assert_eq!(r2["disposition"], json!("created"));
        assert_eq!(count(&superseded), 1, "one superseded event, for v1");
        let seen = &details(&superseded)[0];
        assert_eq!(seen["id"], v1["id"]);
        assert_eq!(seen["stage"], json!("superseded"));
        assert_eq!(seen["reason"], json!("superseded"));
        assert_eq!(seen["supersededBy"], v2["id"]);
        assert_eq!(ok(&o, "get", &[js(v1["id"].clone())]).await, *seen);
        assert_eq!(r2["record"]["supersededBy"], Value::Null);
        // An older version enqueued late: stored, superseded, never sent.
        let r0 = ok(&o, "enqueue", &[js(v0.clone()), relays(&[A])]).await;
        assert_eq!(r0["disposition"], json!("superseded"));
        assert_eq!(r0["record"]["stage"], json!("superseded"));
        assert_eq!(r0["record"]["supersededBy"], v2["id"]);
        assert_eq!(count(&superseded), 2);
        let status = ok(&o, "status", &[]).await;
        assert_eq!(status["superseded"], json!(2));
        assert_eq!(status["pending"], json!(1));
        assert_eq!(status["total"], json!(3));
        let d = fails(&o, "retry", &[js(v1["id"].clone())], "not_retryable").await;
        assert_eq!(d["id"], v1["id"]);
        fails(&o, "cancel", &[js(v1["id"].clone())], "already_terminal").await;
        ok(&o, "close", &[]).await;
    }
}

#[wasm_bindgen_test]
async fn deletions_withdraw_queued_notes_and_name_where_to_send() {
    for options in storages() {
        // A accepts, B is down: the first note reaches A only.
        let t = transport(&js(json!({ A: { "ok": true, "message": "" } })));
        let o = open(options, Some(t)).await;
        let now = now_s();
        let sent = event(1, vec![], "sent to A", now - 5);
        let queued = event(1, vec![], "still queued", now - 4);
        let delivering = event(1, vec![], "sent to A, still going to B", now - 3);
        ok(
            &o,
            "enqueue",
            &[
                js(sent.clone()),
                relays(&[A, B]),
                js(json!({ "policy": "any", "stopWhenSatisfied": true })),
            ],
        )
        .await;
        ok(
            &o,
            "enqueue",
            &[
                js(delivering.clone()),
                relays(&[A, B]),
                js(json!({ "policy": "any" })),
            ],
        )
        .await;
        ok(&o, "flush", &[]).await;
        ok(&o, "enqueue", &[js(queued.clone()), relays(&[A, B])]).await;
        let sent_id = sent["id"].as_str().expect("id");
        let queued_id = queued["id"].as_str().expect("id");
        let accepted = ok(&o, "acceptedRelays", &[js(json!([sent_id, queued_id]))]).await;
        assert_eq!(accepted, json!([A]), "where the deletion should go");
        let superseded = counter(&o, "superseded");
        let delivering_id = delivering["id"].as_str().expect("id");
        let going = ok(&o, "get", &[js(json!(delivering_id))]).await;
        assert_eq!(going["stage"], json!("delivering"));
        let deletion = event(
            5,
            vec![
                vec!["e", sent_id],
                vec!["e", queued_id],
                vec!["e", delivering_id],
            ],
            "",
            now,
        );
        let r = ok(&o, "enqueue", &[js(deletion.clone()), relays(&[A])]).await;
        assert_eq!(r["disposition"], json!("created"));
        assert_eq!(
            count(&superseded),
            2,
            "the queued note and the one still delivering are withdrawn"
        );
        let stopped = ok(&o, "get", &[js(json!(delivering_id))]).await;
        assert_eq!(
            (&stopped["stage"], &stopped["satisfaction"]),
            (&json!("superseded"), &json!("satisfied")),
            "a note still delivering to B stops there; A keeps its acceptance"
        );
        let gone = ok(&o, "get", &[js(json!(queued_id))]).await;
        assert_eq!(gone["stage"], json!("superseded"));
        assert_eq!(gone["reason"], json!("deleted"));
        assert_eq!(gone["supersededBy"], deletion["id"]);
        let kept = ok(&o, "get", &[js(json!(sent_id))]).await;
        assert_eq!(kept["stage"], json!("satisfied"), "a delivered note stays");
        // Bad references are refused with a typed error.
        for bad in [
            json!("nope"),
            json!([1]),
            json!(["xyz"]),
            json!(["1:abc:d"]),
        ] {
            let d = fails(&o, "acceptedRelays", &[js(bad)], "invalid_argument").await;
            assert_eq!(d["argument"], json!("refs"));
        }
        ok(&o, "close", &[]).await;
    }
}

#[wasm_bindgen_test]
async fn a_request_to_vanish_withdraws_the_authors_queue_on_the_relays_it_names() {
    for options in storages() {
        // Every relay is down: everything stays queued until the request arrives.
        let o = open(options, Some(transport(&js(json!({}))))).await;
        let now = now_s();
        let to_a = event(1, vec![], "to A only", now - 5);
        let to_both = event(1, vec![], "to A and B", now - 4);
        let later = event(1, vec![], "written after the request", now + 1);
        ok(&o, "enqueue", &[js(to_a.clone()), relays(&[A])]).await;
        ok(&o, "enqueue", &[js(to_both.clone()), relays(&[A, B])]).await;
        let superseded = counter(&o, "superseded");
        // From A: the note going to A alone is withdrawn, the one also going to B stays.
        let from_a = event(62, vec![vec!["relay", A]], "", now - 2);
        ok(&o, "enqueue", &[js(from_a.clone()), relays(&[A])]).await;
        assert_eq!(count(&superseded), 1);
        let gone = ok(&o, "get", &[js(to_a["id"].clone())]).await;
        assert_eq!(
            (&gone["stage"], &gone["reason"], &gone["supersededBy"]),
            (&json!("superseded"), &json!("vanished"), &from_a["id"])
        );
        assert_eq!(
            ok(&o, "get", &[js(to_both["id"].clone())]).await["stage"],
            json!("pending")
        );
        // From every relay: the rest of the author's older queue, not a later event, not
        // the first request.
        ok(
            &o,
            "enqueue",
            &[
                js(later.clone()),
                relays(&[A, B]),
                js(json!({ "notBefore": 0 })),
            ],
        )
        .await;
        let everywhere = event(62, vec![vec!["relay", "ALL_RELAYS"]], "", now);
        ok(&o, "enqueue", &[js(everywhere.clone()), relays(&[A, B])]).await;
        assert_eq!(count(&superseded), 2);
        let gone = ok(&o, "get", &[js(to_both["id"].clone())]).await;
        assert_eq!(
            (&gone["reason"], &gone["supersededBy"]),
            (&json!("vanished"), &everywhere["id"])
        );
        for kept in [&later, &from_a, &everywhere] {
            let r = ok(&o, "get", &[js(kept["id"].clone())]).await;
            assert_eq!(r["stage"], json!("pending"), "{r}");
        }
        ok(&o, "close", &[]).await;
    }
}

#[wasm_bindgen_test]
async fn ephemeral_deadline_and_expired_events() {
    for options in storages() {
        let o = open(options, None).await;
        let now = now_s();
        let ephemeral = event(20_001, vec![], "typing", now);
        let r = ok(&o, "enqueue", &[js(ephemeral), relays(&[A])]).await;
        let record = &r["record"];
        assert_eq!(
            record["deadline"].as_f64().expect("deadline")
                - record["createdAt"].as_f64().expect("t"),
            10_000.0
        );
        let before = ok(&o, "status", &[]).await["total"].clone();
        let past = (now - 60).to_string();
        let expired = event(
            1,
            vec![vec!["expiration", past.as_str()]],
            "too late",
            now - 120,
        );
        let d = fails(
            &o,
            "enqueue",
            &[js(expired.clone()), relays(&[A])],
            "event_expired",
        )
        .await;
        assert_eq!(d["id"], expired["id"]);
        fails(
            &o,
            "enqueueMany",
            &[js(json!([
                { "event": event(1, vec![], "fine", now), "relays": [A] },
                { "event": expired, "relays": [A] },
            ]))],
            "event_expired",
        )
        .await;
        nothing_stored(&o, &before).await;
        ok(&o, "close", &[]).await;
    }
}

/// An event dated ahead waits for its `created_at` (less 5 s): relays refuse events from
/// the future. The app's own `notBefore` (0: at once) or a `reschedule` sends it earlier;
/// a `created_at` past the record's deadline is refused with nothing stored.
#[wasm_bindgen_test]
async fn events_from_the_future_wait_for_their_created_at() {
    for options in storages() {
        let answers = js(json!({ A: { "ok": true, "message": "" } }));
        let o = open(options, Some(transport(&answers))).await;
        let now = now_s();
        let ahead = event(1, vec![], "from the future", now + 60);
        let asked = event(1, vec![], "from the future, at once", now + 60);
        let moved = event(1, vec![], "from the future, rescheduled", now + 120);
        let r = ok(&o, "enqueue", &[js(ahead.clone()), relays(&[A])]).await;
        assert_eq!(r["record"]["stage"], json!("pending"));
        assert_eq!(
            r["record"]["nextAttemptAt"],
            json!((now + 60) * 1000 - 5000),
            "held until its created_at less the tolerance"
        );
        let r = ok(
            &o,
            "enqueue",
            &[
                js(asked.clone()),
                relays(&[A]),
                js(json!({ "notBefore": 0 })),
            ],
        )
        .await;
        assert_eq!(r["record"]["stage"], json!("pending"));
        ok(&o, "enqueue", &[js(moved.clone()), relays(&[A])]).await;
        ok(&o, "reschedule", &[js(moved["id"].clone()), js(json!(0))]).await;
        let f = ok(&o, "flush", &[]).await;
        assert_eq!(f["delivered"], json!(2), "{f}");
        stages_are(
            &o,
            &[
                (&ahead, "pending"),
                (&asked, "satisfied"),
                (&moved, "satisfied"),
            ],
        )
        .await;
        // A created_at past the deadline: it could never go. Refused, nothing stored.
        let before = ok(&o, "status", &[]).await["total"].clone();
        let late = event(1, vec![], "after its deadline", now + 600);
        let deadline = json!({ "deadline": (now + 60) * 1000 });
        let d = fails(
            &o,
            "enqueue",
            &[js(late.clone()), relays(&[A]), js(deadline.clone())],
            "invalid_argument",
        )
        .await;
        assert_eq!(d["field"], json!("event"));
        let d = fails(
            &o,
            "enqueueMany",
            &[js(json!([
                { "event": event(1, vec![], "fine", now), "relays": [A] },
                { "event": late, "relays": [A], "deadline": (now + 60) * 1000 },
            ]))],
            "invalid_argument",
        )
        .await;
        assert_eq!(d["index"], json!(1));
        nothing_stored(&o, &before).await;
        ok(&o, "close", &[]).await;
    }
}

/// `holdMs`: an undo window for every enqueue. A record without a time of its own waits
/// it out (or its `created_at`, whichever is later); `cancel` inside it is an undo;
/// `notBefore: 0` overrides it; a bad value is refused at open.
#[wasm_bindgen_test]
async fn hold_ms_is_an_undo_window_for_every_enqueue() {
    for mut options in storages() {
        options["holdMs"] = json!(60_000);
        let answers = js(json!({ A: { "ok": true, "message": "" } }));
        let o = open(options.clone(), Some(transport(&answers))).await;
        let now = now_s();
        let before = js_sys::Date::now() as u64;
        let held = event(1, vec![], "held for the undo window", now);
        let undone = event(1, vec![], "undone inside the window", now);
        let asked = event(1, vec![], "sent at once", now);
        let later = event(1, vec![], "dated after the window", now + 120);
        let r = ok(&o, "enqueue", &[js(held.clone()), relays(&[A])]).await;
        let at = r["record"]["nextAttemptAt"].as_u64().expect("a time");
        let after = js_sys::Date::now() as u64;
        assert!(
            (before + 60_000..=after + 60_000).contains(&at),
            "{at} not 60 s after {before}..{after}"
        );
        ok(&o, "enqueue", &[js(undone.clone()), relays(&[A])]).await;
        ok(
            &o,
            "enqueue",
            &[
                js(asked.clone()),
                relays(&[A]),
                js(json!({ "notBefore": 0 })),
            ],
        )
        .await;
        let r = ok(&o, "enqueue", &[js(later.clone()), relays(&[A])]).await;
        assert_eq!(
            r["record"]["nextAttemptAt"],
            json!((now + 120) * 1000 - 5000),
            "its created_at is later than the window"
        );
        let c = ok(&o, "cancel", &[js(undone["id"].clone())]).await;
        assert_eq!(c["stage"], json!("cancelled"), "the undo");
        let f = ok(&o, "flush", &[]).await;
        assert_eq!(f["delivered"], json!(1), "only the one sent at once: {f}");
        stages_are(
            &o,
            &[
                (&held, "pending"),
                (&undone, "cancelled"),
                (&asked, "satisfied"),
                (&later, "pending"),
            ],
        )
        .await;
        ok(&o, "close", &[]).await;
        // Out of range or not a number: refused at open.
        for bad in [json!(-1), json!(86_400_001), json!("5s")] {
            options["holdMs"] = bad.clone();
            let e = JsFuture::from(Outbox::open(js(options.clone())))
                .await
                .expect_err("refused");
            let err: &OutboxError = e.unchecked_ref();
            assert_eq!(err.code(), "invalid_options", "holdMs {bad}");
        }
    }
}

#[wasm_bindgen_test]
async fn protected_events_of_another_author_than_the_signer_are_refused() {
    let protected = |content: &str| event(1, vec![vec!["-"]], content, now_s());
    let mine = protected("mine");
    let author = mine["pubkey"].as_str().expect("pubkey").to_string();
    let other = "b".repeat(64);
    let with_signer = |pubkey: Option<String>| async move {
        let o = js(json!({ "storage": "memory", "autoFlush": false }));
        Reflect::set(&o, &"signer".into(), &keyed_signer(pubkey)).expect("set");
        JsFuture::from(Outbox::open(o)).await.expect("open")
    };
    // The signer is another key: refused, alone or in a batch (with the item's index),
    // and nothing stored.
    let o = with_signer(Some(other.clone())).await;
    let before = ok(&o, "status", &[]).await["total"].clone();
    let d = fails(
        &o,
        "enqueue",
        &[js(mine.clone()), relays(&[A])],
        "invalid_argument",
    )
    .await;
    assert_eq!(d["argument"], json!("event"), "{d:?}");
    let items = json!([
        { "event": event(1, vec![], "plain", now_s()), "relays": [A] },
        { "event": protected("second"), "relays": [A] },
    ]);
    let d = fails(&o, "enqueueMany", &[js(items)], "invalid_argument").await;
    assert_eq!(d["index"], json!(1), "{d:?}");
    nothing_stored(&o, &before).await;
    // An event that is not protected is not the signer's business.
    ok(
        &o,
        "enqueue",
        &[js(event(1, vec![], "plain", now_s())), relays(&[A])],
    )
    .await;
    // The signer is its author: taken.
    let o = with_signer(Some(author)).await;
    let r = ok(&o, "enqueue", &[js(mine.clone()), relays(&[A])]).await;
    assert_eq!(r["disposition"], json!("created"), "{r:?}");
    // A signer that cannot tell now (offline: no answer within 2 s) lets it in: the
    // transport still sends it only where its author authenticates.
    let o = with_signer(None).await;
    let r = ok(&o, "enqueue", &[js(mine), relays(&[A])]).await;
    assert_eq!(r["disposition"], json!("created"), "{r:?}");
}
