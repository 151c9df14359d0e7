//! The browser WebSocket transport against real relays on 127.0.0.1: nostr-rs-relay and
//! the fault-injecting relay in `tests/fault-relay` (see its docs for the paths).
//!
//! Run through `scripts/with-relays.sh`, which starts the relays and sets their URLs at
//! compile time:
//! `scripts/with-relays.sh wasm-pack test --headless --chrome -- --test transport_ws`.
//! Without those variables the file still compiles (for clippy), but every test that
//! needs a relay fails with a message saying so.
#![cfg(target_arch = "wasm32")]

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures_util::future::{join, join_all};
use nostr_outbox::core::{
    EventEnvelope, Outcome, Plan, Policy, RejectReason, Stage, StopReason, UNANSWERED,
};
use nostr_outbox::flush::{flush_until_idle, tick, FlushConfig, FlushEvent};
use nostr_outbox::nostr::{req_by_ids, RelayUrl};
use nostr_outbox::store::idb::{IdbOptions, IdbStore};
use nostr_outbox::store::{MemoryStore, Store};
use nostr_outbox::transport::websocket::{ConnectionState, WsTransport, WsTransportConfig};
use nostr_outbox::transport::{PublishReport, Transport};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[path = "js_support/mod.rs"]
mod js_support;
use js_support::{call, js, rust};

#[path = "ws_support/mod.rs"]
mod ws_support;
use ws_support::{closed, fault, note, relay, sign, switch, this_run, transport, TestSigner};

// --- relays ------------------------------------------------------------------------

fn norm(url: &str) -> String {
    RelayUrl::parse(url).expect("relay URL").as_str().to_owned()
}

// --- raw WebSocket helpers (the test's own, independent of the transport) -------------

#[wasm_bindgen(inline_js = r#"
export function rawExchange(url, frame, timeoutMs) {
  return new Promise((resolve) => {
    const out = { events: [], answers: [], error: null };
    let done = false;
    let ws;
    const finish = (error) => {
      if (done) return;
      done = true;
      if (error) out.error = error;
      clearTimeout(timer);
      try { ws.close(); } catch (e) {}
      resolve(JSON.stringify(out));
    };
    const timer = setTimeout(() => finish("timed out"), timeoutMs);
    try { ws = new WebSocket(url); } catch (e) { finish(String(e)); return; }
    ws.onopen = () => ws.send(frame);
    ws.onmessage = (ev) => {
      let m;
      try { m = JSON.parse(ev.data); } catch (e) { return; }
      if (!Array.isArray(m)) return;
      if (m[0] === "EVENT") out.events.push(m[2]);
      else if (m[0] === "CONTROL") { out.answers.push(m[1]); finish(null); }
      else if (m[0] === "EOSE" || m[0] === "CLOSED") finish(null);
    };
    ws.onclose = () => finish("closed");
  });
}
export function sleepMs(ms) { return new Promise((r) => setTimeout(r, ms)); }
"#)]
extern "C" {
    #[wasm_bindgen(js_name = rawExchange)]
    fn raw_exchange(url: &str, frame: &str, timeout_ms: u32) -> js_sys::Promise;
    #[wasm_bindgen(js_name = sleepMs)]
    fn sleep_ms(ms: u32) -> js_sys::Promise;
}

async fn exchange(url: &str, frame: &str) -> Value {
    let text = JsFuture::from(raw_exchange(url, frame, 5_000))
        .await
        .expect("raw exchange")
        .as_string()
        .expect("string");
    serde_json::from_str(&text).expect("json")
}

/// The events `url` returns for a REQ by id.
async fn fetch_by_id(url: &str, id: &str) -> Vec<Value> {
    let out = exchange(url, &req_by_ids("q", &[id])).await;
    assert_eq!(out["error"], Value::Null, "REQ to {url}: {out}");
    out["events"].as_array().cloned().unwrap_or_default()
}

/// Sends a command to the fault relay's control channel.
async fn control(cmd: Value) -> Value {
    let out = exchange(&fault("/control"), &cmd.to_string()).await;
    assert_eq!(out["error"], Value::Null, "control {cmd}: {out}");
    out["answers"][0].clone()
}

/// How many EVENT frames the fault relay received on `path` (path and query).
async fn fault_events(path: &str) -> u64 {
    let stats = control(json!(["STATS"])).await;
    stats["events"][this_run(path)].as_u64().unwrap_or(0)
}

async fn sleep(ms: u32) {
    JsFuture::from(sleep_ms(ms)).await.expect("sleep");
}

/// A JavaScript signer function backed by the test key `seed`; `mode` can make it
/// misbehave. The closure must outlive the transport's use of it.
fn js_signer(seed: u8, mode: &'static str) -> Closure<dyn FnMut(JsValue) -> JsValue> {
    Closure::new(move |template: JsValue| -> JsValue {
        let text: String = js_sys::JSON::stringify(&template)
            .expect("template is JSON")
            .into();
        let t: Value = serde_json::from_str(&text).expect("template");
        let tags: Vec<Vec<String>> = serde_json::from_value(t["tags"].clone()).expect("tags");
        let tags = if mode == "wrong-challenge" {
            tags.into_iter()
                .map(|t| {
                    if t[0] == "challenge" {
                        vec!["challenge".into(), "not-the-challenge".into()]
                    } else {
                        t
                    }
                })
                .collect()
        } else {
            tags
        };
        let event = sign(
            seed,
            t["kind"].as_u64().expect("kind") as u16,
            tags,
            t["content"].as_str().expect("content"),
            t["created_at"].as_u64().expect("created_at"),
        );
        let signed = js_sys::JSON::parse(event.raw()).expect("parse");
        match mode {
            "reject" => js_sys::Promise::reject(&js_sys::Error::new("user said no")).into(),
            "async" | "wrong-challenge" => js_sys::Promise::resolve(&signed).into(),
            _ => signed,
        }
    })
}

fn signer_fn(c: &Closure<dyn FnMut(JsValue) -> JsValue>) -> js_sys::Function {
    c.as_ref().unchecked_ref::<js_sys::Function>().clone()
}

// --- publishing to nostr-rs-relay ------------------------------------------------------

#[wasm_bindgen_test]
async fn accepted_by_nostr_rs_relay_and_stored_byte_for_byte() {
    let t = transport(|_| {});
    let ev = note("accepted");
    let r = t.publish(&relay(), &ev).await;
    assert_eq!(r.outcome, Outcome::Accepted, "{r:?}");

    let stored = fetch_by_id(&relay(), &ev.id).await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    let sent: Value = serde_json::from_str(&ev.raw).unwrap();
    assert_eq!(stored[0]["id"], sent["id"]);
    assert_eq!(stored[0]["sig"], sent["sig"]);
    assert_eq!(stored[0], sent, "the relay holds the same event");

    let d = t.diagnostics();
    let rd = d.relay(&relay()).expect("relay diagnostics");
    assert_eq!(rd.connections_opened, 1);
    assert_eq!(rd.events_sent, 1);
    assert_eq!(rd.oks, 1);
    assert_eq!(d.open_connections, 1);
}

#[wasm_bindgen(inline_js = "
// Makes the next WebSocket.prototype.send throw (as workerd's does for a socket opened
// while handling another request), once.
export function failNextSend() {
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function () {
    WebSocket.prototype.send = send;
    throw new Error('Cannot perform I/O on behalf of a different request');
  };
}
")]
extern "C" {
    #[wasm_bindgen(js_name = failNextSend)]
    fn fail_next_send();
}

/// A `send` that throws closes that connection: the publish reports `unreachable` at
/// once (no wait for a timeout) and the next one opens a new socket instead of reusing
/// the broken one.
#[wasm_bindgen_test]
async fn a_send_that_throws_closes_the_connection() {
    let t = transport(|_| {});
    let first = note("send-throws-1");
    assert_eq!(t.publish(&relay(), &first).await.outcome, Outcome::Accepted);
    fail_next_send();
    let ev = note("send-throws-2");
    let r = t.publish(&relay(), &ev).await;
    assert_eq!(r.outcome, Outcome::Unreachable, "{r:?}");
    assert!(r.message.contains("send failed"), "{r:?}");
    let again = t.publish(&relay(), &ev).await;
    assert_eq!(again.outcome, Outcome::Accepted, "{again:?}");
    let d = t.diagnostics();
    let rd = d.relay(&relay()).expect("relay diagnostics");
    assert_eq!(
        rd.connections_opened, 2,
        "a new socket after the throw: {rd:?}"
    );
}

#[wasm_bindgen_test]
async fn second_publish_is_duplicate() {
    let t = transport(|_| {});
    let ev = note("duplicate");
    assert_eq!(t.publish(&relay(), &ev).await.outcome, Outcome::Accepted);
    let again = t.publish(&relay(), &ev).await;
    assert_eq!(again.outcome, Outcome::Duplicate, "{again:?}");
    // The fault relay's `duplicate:` answer maps the same way.
    let r = t.publish(&fault("/reply/duplicate"), &ev).await;
    assert_eq!(r.outcome, Outcome::Duplicate, "{r:?}");
}

#[wasm_bindgen_test]
async fn fifty_events_in_flight_share_one_connection() {
    let t = transport(|_| {});
    let events: Vec<EventEnvelope> = (0..50).map(|i| note(&format!("burst {i}"))).collect();
    let url = relay();
    let start = js_sys::Date::now();
    let reports = join_all(events.iter().map(|e| t.publish(&url, e))).await;
    let elapsed = js_sys::Date::now() - start;
    for (e, r) in events.iter().zip(&reports) {
        assert_eq!(r.outcome, Outcome::Accepted, "{}: {r:?}", e.id);
    }
    let rd = t.diagnostics().relay(&url).cloned().expect("diagnostics");
    assert_eq!(rd.connections_opened, 1, "one connection for all: {rd:?}");
    assert_eq!(rd.events_sent, 50);
    assert_eq!(rd.oks, 50);
    assert_eq!(rd.in_flight, 0);
    console_log!("transport_ws: 50 concurrent publishes to nostr-rs-relay took {elapsed} ms");
    // Spot-check storage.
    assert_eq!(fetch_by_id(&url, &events[37].id).await.len(), 1);
}

// --- every answer maps to its outcome --------------------------------------------------

#[wasm_bindgen_test]
async fn each_ok_prefix_maps_to_its_outcome() {
    let t = transport(|c| c.rate_limit_backoff_ms = 0);
    let cases = [
        ("blocked", Outcome::Rejected(RejectReason::Blocked)),
        ("invalid", Outcome::Rejected(RejectReason::Invalid)),
        ("restricted", Outcome::Rejected(RejectReason::Restricted)),
        ("pow", Outcome::Rejected(RejectReason::Pow)),
        ("mute", Outcome::Rejected(RejectReason::Mute)),
        ("rate-limited", Outcome::RateLimited),
        ("error", Outcome::Error),
        ("auth-required", Outcome::AuthRequired),
        ("whatever", Outcome::Rejected(RejectReason::Other)),
        ("duplicate", Outcome::Duplicate),
    ];
    let ev = note("prefixes");
    for (prefix, expected) in cases {
        let r = t.publish(&fault(&format!("/reply/{prefix}")), &ev).await;
        assert_eq!(r.outcome, expected, "{prefix}: {r:?}");
        assert!(r.message.starts_with(prefix), "{prefix}: {r:?}");
    }
}

#[wasm_bindgen_test]
async fn silent_relay_times_out_and_keeps_the_connection() {
    let t = transport(|c| c.publish_timeout_ms = 300);
    let url = fault("/silent?t=timeout");
    let r = t.publish(&url, &note("silent")).await;
    assert_eq!(r.outcome, Outcome::Timeout, "{r:?}");
    let rd = t.diagnostics().relay(&url).cloned().unwrap();
    assert_eq!(rd.timeouts, 1);
    assert_eq!(rd.in_flight, 0, "the timed-out wait is forgotten");
    assert_eq!(rd.connection, ConnectionState::Open);
    assert_eq!(
        rd.consecutive_failures, 0,
        "a timeout is not a connection failure"
    );
}

#[wasm_bindgen_test]
async fn read_back_asks_by_id_and_tells_only_what_the_relay_said() {
    let t = transport(|c| {
        c.publish_timeout_ms = 500;
        c.connect_timeout_ms = 500;
    });
    // `/swallow` stores the event and never sends its `OK`.
    let url = fault("/swallow?t=holds");
    let e = note("swallowed");
    let r = t.publish(&url, &e).await;
    assert_eq!(r.outcome, Outcome::Timeout, "{r:?}");
    assert_eq!(t.holds(&url, &e.id).await, Some(true), "stored, sent back");
    let never = note("never sent");
    assert_eq!(
        t.holds(&url, &never.id).await,
        Some(false),
        "EOSE without it"
    );
    // A relay that cannot be reached, or never finishes its handshake: cannot tell.
    assert_eq!(t.holds(&closed(), &e.id).await, None);
    assert_eq!(t.holds(&fault("/stall?t=holds"), &e.id).await, None);
    // The same stored events (`/swallow`, `/slow` and `/no-eose` share the open relay):
    // an answer that comes late but within the bound tells; the event sent back tells
    // without its `EOSE`; no `EOSE` and no event, or an answer after the bound, does not.
    assert_eq!(
        t.holds(&fault("/slow/200?t=holds"), &e.id).await,
        Some(true)
    );
    assert_eq!(t.holds(&fault("/no-eose?t=holds"), &e.id).await, Some(true));
    assert_eq!(t.holds(&fault("/no-eose?t=holds"), &never.id).await, None);
    assert_eq!(t.holds(&fault("/slow/1500?t=holds"), &e.id).await, None);
    // The subscriptions ended (`CLOSE` sent): nothing is left waiting, nothing counted
    // as unrelated, and the connection still publishes.
    let rd = t.diagnostics().relay(&url).cloned().unwrap();
    assert_eq!((rd.in_flight, rd.unrelated_frames), (0, 0), "{rd:?}");
    let r = t.publish(&url, &never).await;
    assert_eq!(r.outcome, Outcome::Timeout, "{r:?}");
    assert_eq!(fault_events("/swallow?t=holds").await, 2);
}

#[wasm_bindgen_test]
async fn nip11_limits_a_relay_states_are_checked_before_sending() {
    // In every browser of the tiers: this browser's `fetch` (cross-origin, the fault
    // relay's `Access-Control-Allow-Origin: *`) and its Cache API (or memory).
    let t = transport(|c| {
        c.connect_timeout_ms = 2_000;
        c.publish_timeout_ms = 3_000;
    });
    let path = "/info/max_message_length=600?t=nip11";
    let big = note(&"x".repeat(800));
    let r = t.publish(&fault(path), &big).await;
    assert_eq!(r.outcome, Outcome::Rejected(RejectReason::Limit), "{r:?}");
    assert!(
        r.message.starts_with(
            "limit: not sent: the relay's NIP-11 document states max_message_length 600;"
        ),
        "{r:?}"
    );
    let r = t.publish(&fault(path), &note("fits")).await;
    assert_eq!(r.outcome, Outcome::Accepted, "{r:?}");
    assert_eq!(
        fault_events(path).await,
        1,
        "only the one within the limit was sent"
    );
    // Hostile documents: no checks, the event is sent.
    for doc in ["huge-unsized", "types", "deep", "missing"] {
        let url = fault(&format!("/info/{doc}?t=nip11"));
        let r = t.publish(&url, &note(&"y".repeat(800))).await;
        assert_eq!(r.outcome, Outcome::Accepted, "{doc}: {r:?}");
    }
    // `relay_info_ttl_ms: 0`: nothing fetched, nothing checked.
    let off = transport(|c| c.relay_info_ttl_ms = 0);
    let r = off
        .publish(&fault("/info/max_message_length=600?t=nip11-off"), &big)
        .await;
    assert_eq!(r.outcome, Outcome::Accepted, "{r:?}");
    let stats = control(json!(["STATS"])).await;
    assert_eq!(
        stats["info"][this_run("/info/max_message_length=600?t=nip11-off")],
        Value::Null,
        "never fetched: {stats}"
    );
}

#[wasm_bindgen_test]
async fn a_newer_version_on_a_real_relay_is_found_and_checked() {
    let t = transport(|c| {
        c.publish_timeout_ms = 2_000;
        c.connect_timeout_ms = 1_000;
    });
    let url = relay();
    let now = (js_sys::Date::now() / 1_000.0) as u64;
    let old = sign(77, 3, vec![], "follows: one", now - 100).to_envelope();
    let new = sign(77, 3, vec![], "follows: one, two", now - 50);
    assert_eq!(t.newer(&url, &old).await, None, "nothing stored yet");
    let r = t.publish(&url, &new.to_envelope()).await;
    assert_eq!(r.outcome, Outcome::Accepted, "{r:?}");
    assert_eq!(
        t.newer(&url, &old).await,
        Some((new.id().to_string(), now - 50)),
        "the relay's newest version, sent back and checked"
    );
    assert_eq!(
        t.newer(&url, &new.to_envelope()).await,
        None,
        "not newer than itself"
    );
    let newest = sign(77, 3, vec![], "follows: one, two, three", now).to_envelope();
    assert_eq!(
        t.newer(&url, &newest).await,
        None,
        "older than the queued one"
    );
    // Another author's list, and an addressable event of another `d` tag: other slots.
    let theirs = sign(78, 3, vec![], "follows: x", now - 100).to_envelope();
    assert_eq!(t.newer(&url, &theirs).await, None);
    let d = |v: &str| vec![vec!["d".to_string(), v.to_string()]];
    let set = sign(77, 30_000, d("friends"), "v2", now - 10);
    let r = t.publish(&url, &set.to_envelope()).await;
    assert_eq!(r.outcome, Outcome::Accepted, "{r:?}");
    let other_set = sign(77, 30_000, d("family"), "v1", now - 20).to_envelope();
    assert_eq!(t.newer(&url, &other_set).await, None);
    let same_set = sign(77, 30_000, d("friends"), "v1", now - 20).to_envelope();
    assert_eq!(
        t.newer(&url, &same_set).await.map(|(id, _)| id),
        Some(set.id().to_string())
    );
    // A relay that cannot be reached, or never finishes its handshake: cannot tell.
    assert_eq!(t.newer(&closed(), &old).await, None);
    assert_eq!(t.newer(&fault("/stall?t=newer"), &old).await, None);
    // A relay that sends the newer version but no `EOSE` (within the bound): cannot
    // tell, the event is sent; a slow `EOSE` within it: found.
    let list = sign(80, 3, vec![], "follows: a", now - 10).to_envelope();
    let r = t.publish(&fault("/?t=newer"), &list).await;
    assert_eq!(r.outcome, Outcome::Accepted, "{r:?}");
    let stale = sign(80, 3, vec![], "follows: none", now - 30).to_envelope();
    assert_eq!(t.newer(&fault("/no-eose?t=newer"), &stale).await, None);
    assert_eq!(
        t.newer(&fault("/slow/300?t=newer"), &stale)
            .await
            .map(|(id, _)| id),
        Some(list.id.clone())
    );
    // A hostile relay's made-up newest versions (a forged signature, another key's
    // event, junk, a 2 MiB frame before its real answer) stop nothing, and the event
    // is then taken as ever.
    let forge = fault("/forge?t=newer");
    let mine = sign(79, 3, vec![], "follows: me", now - 10).to_envelope();
    assert_eq!(t.newer(&forge, &mine).await, None);
    let r = t.publish(&forge, &mine).await;
    assert_eq!(r.outcome, Outcome::Accepted, "{r:?}");
    // Its real answer still counts: an older version of the same list is stopped.
    let older = sign(79, 3, vec![], "follows: nobody", now - 20).to_envelope();
    assert_eq!(
        t.newer(&forge, &older).await.map(|(id, _)| id),
        Some(mine.id.clone())
    );
}

#[wasm_bindgen_test]
async fn close_mid_publish_is_unreachable_never_success() {
    let t = transport(|c| c.circuit_failures = 0);
    for path in ["/close?t=mid", "/drop?t=mid"] {
        let url = fault(path);
        let events: Vec<EventEnvelope> = (0..5).map(|i| note(&format!("{path} {i}"))).collect();
        let reports = join_all(events.iter().map(|e| t.publish(&url, e))).await;
        for r in &reports {
            assert_eq!(r.outcome, Outcome::Unreachable, "{path}: {r:?}");
            assert!(r.message.contains("closed"), "{path}: {r:?}");
            // What read-back looks for: the `EVENT` was written, no answer came.
            assert!(r.message.ends_with(UNANSWERED), "{path}: {r:?}");
        }
        let rd = t.diagnostics().relay(&url).cloned().unwrap();
        assert_eq!(rd.in_flight, 0);
        assert_eq!(rd.connection, ConnectionState::Closed);
        assert_eq!(rd.consecutive_failures, 1, "one failed connection: {rd:?}");
    }
}

#[wasm_bindgen_test]
async fn refused_connection_is_unreachable() {
    let t = transport(|_| {});
    let r = t.publish(&closed(), &note("refused")).await;
    assert_eq!(r.outcome, Outcome::Unreachable, "{r:?}");
    let rd = t.diagnostics().relay(&closed()).cloned().unwrap();
    assert_eq!(rd.consecutive_failures, 1);
    assert_eq!(rd.events_sent, 0);
}

#[wasm_bindgen_test]
async fn hostile_frames_are_ignored_and_counted() {
    let t = transport(|c| c.max_frame_bytes = 64 * 1024);
    let url = fault("/hostile?t=hostile");
    // One after another, then several at once on the same connection.
    for i in 0..2 {
        let r = t.publish(&url, &note(&format!("hostile {i}"))).await;
        assert_eq!(r.outcome, Outcome::Accepted, "{r:?}");
    }
    let events: Vec<EventEnvelope> = (0..5).map(|i| note(&format!("hostile c{i}"))).collect();
    for r in join_all(events.iter().map(|e| t.publish(&url, e))).await {
        assert_eq!(r.outcome, Outcome::Accepted, "{r:?}");
    }
    let d = t.diagnostics();
    let rd = d.relay(&url).cloned().unwrap();
    let rounds = 7;
    assert_eq!(rd.connections_opened, 1, "{rd:?}");
    assert_eq!(rd.oks, rounds, "{rd:?}");
    // Per round: 7 malformed (non-JSON, object, [], [42], bad id, bad flag, upper-case id),
    // 2 OKs for an unknown id + EVENT + EOSE + CLOSED + COUNT = 6 unrelated, 1 oversized,
    // 1 binary, 200 NOTICEs, 1 AUTH.
    assert_eq!(rd.malformed_frames, 7 * rounds, "{rd:?}");
    assert_eq!(rd.unrelated_frames, 6 * rounds, "{rd:?}");
    assert_eq!(rd.oversized_frames, rounds, "{rd:?}");
    assert_eq!(rd.binary_frames, rounds, "{rd:?}");
    assert_eq!(rd.notices, 200 * rounds, "{rd:?}");
    assert_eq!(rd.auth_challenges, rounds, "{rd:?}");
    assert_eq!(d.ignored_frames, (7 + 6 + 1 + 1) * rounds);
    assert_eq!(rd.connection, ConnectionState::Open);
}

// --- NIP-42 ------------------------------------------------------------------------------

#[wasm_bindgen_test]
async fn auth_required_with_signer_authenticates_and_resends_the_same_event() {
    let t = transport(|_| {});
    let signer = js_signer(9, "async");
    t.set_js_signer(Some(signer_fn(&signer)));
    let url = fault("/auth?t=signed");
    let ev = note("auth");
    let r = t.publish(&url, &ev).await;
    assert_eq!(r.outcome, Outcome::Accepted, "{r:?}");
    let rd = t.diagnostics().relay(&url).cloned().unwrap();
    assert!(rd.authenticated, "{rd:?}");
    assert_eq!(rd.auth_sent, 1);
    assert_eq!(rd.events_sent, 2, "first send + one resend");
    // The relay stored exactly the event we enqueued.
    let stored = fetch_by_id(&url, &ev.id).await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(stored[0], serde_json::from_str::<Value>(&ev.raw).unwrap());
    // Later publishes on the authenticated connection go straight through.
    let r2 = t.publish(&url, &note("auth 2")).await;
    assert_eq!(r2.outcome, Outcome::Accepted, "{r2:?}");
    assert_eq!(t.diagnostics().relay(&url).unwrap().auth_sent, 1);
}

#[wasm_bindgen_test]
async fn concurrent_auth_required_publishes_share_one_authentication() {
    let t = transport(|_| {});
    let signer = js_signer(9, "sync");
    t.set_js_signer(Some(signer_fn(&signer)));
    let url = fault("/auth?t=concurrent");
    let events: Vec<EventEnvelope> = (0..10).map(|i| note(&format!("auth c{i}"))).collect();
    for r in join_all(events.iter().map(|e| t.publish(&url, e))).await {
        assert_eq!(r.outcome, Outcome::Accepted, "{r:?}");
    }
    let rd = t.diagnostics().relay(&url).cloned().unwrap();
    assert_eq!(rd.auth_sent, 1, "{rd:?}");
    assert_eq!(rd.connections_opened, 1);
}

#[wasm_bindgen_test]
async fn auth_required_without_signer_stays_auth_required() {
    let t = transport(|_| {});
    let url = fault("/auth?t=nosigner");
    let ev = note("no signer");
    let r = t.publish(&url, &ev).await;
    assert_eq!(r.outcome, Outcome::AuthRequired, "{r:?}");
    assert!(r.message.contains("no signer"), "{r:?}");
    assert!(fetch_by_id(&url, &ev.id).await.is_empty());
    // With a signer, the same event goes through on the same connection.
    let signer = js_signer(9, "sync");
    t.set_js_signer(Some(signer_fn(&signer)));
    let r = t.publish(&url, &ev).await;
    assert_eq!(r.outcome, Outcome::Accepted, "{r:?}");
}

#[wasm_bindgen_test]
async fn failing_signers_leave_auth_required() {
    for mode in ["reject", "wrong-challenge"] {
        let t = transport(|_| {});
        let signer = js_signer(9, mode);
        t.set_js_signer(Some(signer_fn(&signer)));
        let url = fault(&format!("/auth?t={mode}"));
        let r = t.publish(&url, &note(mode)).await;
        assert_eq!(r.outcome, Outcome::AuthRequired, "{mode}: {r:?}");
        assert!(r.message.contains("authentication failed"), "{mode}: {r:?}");
        let rd = t.diagnostics().relay(&url).cloned().unwrap();
        assert!(!rd.authenticated);
        assert_eq!(rd.auth_sent, 0, "nothing unverified is sent: {mode}");
    }
}

#[wasm_bindgen_test]
async fn misbehaving_js_signers_leave_auth_required() {
    let cases = [
        ("throw", "throw new Error('no key')", "signer threw"),
        ("number", "return 42", "invalid event"),
        ("unsigned", "return t", "invalid event"),
        ("null", "return Promise.resolve(null)", "invalid event"),
        // Rejections without a value (an extension's bare `reject()`): described, not a
        // panic of the .wasm (JSON.stringify(undefined) is not a string).
        (
            "reject-undefined",
            "return Promise.reject()",
            "signer failed: unknown JavaScript value",
        ),
        (
            "throw-undefined",
            "throw undefined",
            "signer threw: unknown JavaScript value",
        ),
        // A signer that resolves with nothing: refused, not a panic either.
        (
            "resolve-undefined",
            "return Promise.resolve()",
            "signer returned a value that is not an event: undefined",
        ),
    ];
    for (tag, body, expect) in cases {
        let t = transport(|_| {});
        t.set_js_signer(Some(js_sys::Function::new_with_args("t", body)));
        let url = fault(&format!("/auth?t=js-{tag}"));
        let r = t.publish(&url, &note(tag)).await;
        assert_eq!(r.outcome, Outcome::AuthRequired, "{tag}: {r:?}");
        assert!(r.message.contains(expect), "{tag}: {r:?}");
        assert_eq!(t.diagnostics().relay(&url).unwrap().auth_sent, 0, "{tag}");
    }
}

#[wasm_bindgen_test]
async fn rust_signer_authenticates() {
    let t = transport(|_| {});
    t.set_signer(Some(Rc::new(TestSigner)));
    let r = t
        .publish(&fault("/auth?t=rust"), &note("rust signer"))
        .await;
    assert_eq!(r.outcome, Outcome::Accepted, "{r:?}");
}

// --- NIP-70 ------------------------------------------------------------------------------

/// A protected note (NIP-70: a `["-"]` tag) by key `seed`.
fn protected(seed: u8, label: &str) -> EventEnvelope {
    let content = format!("protected: {label} {}", js_sys::Math::random());
    let now = (js_sys::Date::now() / 1000.0) as u64;
    sign(seed, 1, vec![vec!["-".into()]], &content, now).to_envelope()
}

#[wasm_bindgen_test]
async fn protected_events_go_only_where_their_author_authenticated() {
    // A relay that asks for AUTH when the client connects: AUTH first, then one send.
    let t = transport(|_| {});
    let signer = js_signer(9, "async");
    t.set_js_signer(Some(signer_fn(&signer)));
    let url = fault("/auth-eager?t=protected");
    let ev = protected(9, "by its author");
    let r = t.publish(&url, &ev).await;
    assert_eq!(r.outcome, Outcome::Accepted, "{r:?}");
    let rd = t.diagnostics().relay(&url).cloned().unwrap();
    assert_eq!(
        (rd.auth_sent, rd.events_sent),
        (1, 1),
        "AUTH, then one send: {rd:?}"
    );
    assert_eq!(fetch_by_id(&url, &ev.id).await.len(), 1);
    // Another author's protected event, on the connection authenticated as key 9: kept.
    let other = protected(1, "another author");
    let r = t.publish(&url, &other).await;
    assert_eq!(
        r.outcome,
        Outcome::Rejected(RejectReason::Restricted),
        "{r:?}"
    );
    assert!(r.message.contains("not its author"), "{r:?}");
    assert_eq!(t.diagnostics().relay(&url).unwrap().events_sent, 1);
    assert!(fetch_by_id(&url, &other.id).await.is_empty());
}

#[wasm_bindgen_test]
async fn protected_events_are_never_sent_unauthenticated() {
    // A relay that never asks for AUTH (one that ignores NIP-70 would store the event):
    // after the wait for a challenge, nothing is sent; retried later as AuthRequired.
    let t = transport(|c| c.auth_timeout_ms = 500);
    let signer = js_signer(9, "async");
    t.set_js_signer(Some(signer_fn(&signer)));
    let url = fault("/accept?t=protected-open");
    let ev = protected(9, "no challenge");
    let r = t.publish(&url, &ev).await;
    assert_eq!(r.outcome, Outcome::AuthRequired, "{r:?}");
    assert!(
        r.message.starts_with("protected event (NIP-70) not sent"),
        "{r:?}"
    );
    assert_eq!(t.diagnostics().relay(&url).unwrap().events_sent, 0);
    assert!(fetch_by_id(&url, &ev.id).await.is_empty());
    // No signer to authenticate with: not sent either.
    let t = transport(|_| {});
    let url = fault("/auth-eager?t=protected-nosigner");
    let r = t.publish(&url, &protected(9, "no signer")).await;
    assert_eq!(r.outcome, Outcome::AuthRequired, "{r:?}");
    assert!(r.message.contains("no signer configured"), "{r:?}");
    assert_eq!(t.diagnostics().relay(&url).unwrap().events_sent, 0);
}

// --- per-relay state ---------------------------------------------------------------------

#[wasm_bindgen_test]
async fn a_rate_limiting_relay_gets_its_events_spaced_out() {
    // No pause after `rate-limited:` here, so every publish is sent and paced.
    let t = transport(|c| {
        c.rate_limit_backoff_ms = 0;
        c.publish_timeout_ms = 2_000;
    });
    let url = fault("/reply/rate-limited?t=pace");
    let pace = |t: &WsTransport| t.diagnostics().relay(&url).cloned().unwrap();
    for i in 0..3 {
        let r = t.publish(&url, &note(&format!("paced {i}"))).await;
        assert_eq!(r.outcome, Outcome::RateLimited, "{r:?}");
    }
    assert_eq!(
        pace(&t).pace_ms,
        100,
        "raised once for refusals within a second"
    );
    // Three at once: they go one after the other, at least 100 ms apart.
    let started = js_sys::Date::now();
    let events: Vec<EventEnvelope> = (0..3).map(|i| note(&format!("at once {i}"))).collect();
    let reports = join_all(events.iter().map(|e| t.publish(&url, e))).await;
    assert!(reports.iter().all(|r| r.outcome == Outcome::RateLimited));
    assert!(
        js_sys::Date::now() - started >= 200.0,
        "the third waited two turns"
    );
    let rd = pace(&t);
    assert!(rd.paced >= 2, "the later two waited for their turn: {rd:?}");
    assert_eq!(rd.events_sent, 6, "{rd:?}");
    // A refusal a second after the raise doubles it.
    sleep(1_000).await;
    t.publish(&url, &note("a second later")).await;
    assert_eq!(pace(&t).pace_ms, 200, "{:?}", pace(&t));
    // A turn further away than the publish timeout (2 s: ten turns of 200 ms) is not
    // waited for: not sent.
    let events: Vec<EventEnvelope> = (0..14).map(|i| note(&format!("too many {i}"))).collect();
    let reports = join_all(events.iter().map(|e| t.publish(&url, e))).await;
    let unsent: Vec<&PublishReport> = reports
        .iter()
        .filter(|r| r.message.contains("not sent"))
        .collect();
    assert!(unsent.len() >= 2, "{reports:?}");
    assert!(unsent.iter().all(|r| r.outcome == Outcome::RateLimited));
    assert_eq!(
        pace(&t).events_sent,
        7 + 14 - unsent.len() as u64,
        "the unsent ones never reached the relay"
    );
}

#[wasm_bindgen_test]
async fn rate_limited_relay_pauses_alone() {
    let t = transport(|c| c.rate_limit_backoff_ms = 60_000);
    let limited = fault("/reply/rate-limited?t=pause");
    let first = t.publish(&limited, &note("limited 1")).await;
    assert_eq!(first.outcome, Outcome::RateLimited, "{first:?}");

    // Both relays at once: the paused one answers without sending, the other accepts.
    let order = RefCell::new(Vec::new());
    let (a, b) = join(
        async {
            let r = t.publish(&limited, &note("limited 2")).await;
            order.borrow_mut().push("limited");
            r
        },
        async {
            let r = t.publish(&relay(), &note("healthy")).await;
            order.borrow_mut().push("healthy");
            r
        },
    )
    .await;
    assert_eq!(a.outcome, Outcome::RateLimited, "{a:?}");
    assert!(a.message.contains("not sent"), "{a:?}");
    assert_eq!(b.outcome, Outcome::Accepted, "{b:?}");
    assert_eq!(
        *order.borrow(),
        ["limited", "healthy"],
        "the pause answers at once"
    );

    let d = t.diagnostics();
    let rl = d.relay(&limited).cloned().unwrap();
    assert_eq!(rl.events_sent, 1);
    assert_eq!(rl.short_circuited, 1);
    assert!(rl.rate_limited_until_ms.is_some());
    assert!(d.relay(&relay()).unwrap().rate_limited_until_ms.is_none());
    assert_eq!(
        fault_events("/reply/rate-limited?t=pause").await,
        1,
        "the relay saw one event"
    );
}

#[wasm_bindgen_test]
async fn circuit_opens_after_repeated_unreachable_and_short_circuits() {
    let t = transport(|c| {
        c.circuit_failures = 2;
        c.circuit_open_ms = 60_000;
    });
    let dead = closed();
    let mut failed_between = (0, 0);
    for _ in 0..2 {
        let before = js_sys::Date::now() as u64;
        let r = t.publish(&dead, &note("dead")).await;
        failed_between = (before, js_sys::Date::now() as u64);
        assert_eq!(r.outcome, Outcome::Unreachable, "{r:?}");
        assert!(!r.message.contains("circuit"), "{r:?}");
    }
    let r = t.publish(&dead, &note("dead 3")).await;
    assert_eq!(r.outcome, Outcome::Unreachable);
    assert!(r.message.contains("circuit open"), "{r:?}");
    let rd = t.diagnostics().relay(&dead).cloned().unwrap();
    assert_eq!(
        rd.connections_opened, 2,
        "the third publish opened nothing: {rd:?}"
    );
    assert_eq!(rd.short_circuited, 1);
    // It opens for a sixteenth of `circuit_open_ms` at first (3.75 s here), from the
    // second failure.
    let opened_at = rd.circuit_open_until_ms.expect("open") - 3_750;
    assert!(
        (failed_between.0..=failed_between.1).contains(&opened_at),
        "opened at {opened_at}, failed within {failed_between:?}"
    );
    // Another relay is not affected.
    assert_eq!(
        t.publish(&relay(), &note("alive")).await.outcome,
        Outcome::Accepted
    );
    // The network came back (`online`): the circuit closes, the next publish tries.
    t.network_restored();
    let rd = t.diagnostics().relay(&dead).cloned().unwrap();
    assert!(rd.circuit_open_until_ms.is_none(), "{rd:?}");
    assert_eq!(rd.consecutive_failures, 0, "{rd:?}");
    let r = t.publish(&dead, &note("dead 4")).await;
    assert_eq!(r.outcome, Outcome::Unreachable);
    assert!(!r.message.contains("circuit"), "{r:?}");
    let rd = t.diagnostics().relay(&dead).cloned().unwrap();
    assert_eq!(rd.connections_opened, 3, "tried again: {rd:?}");
}

/// While a relay stays down the circuit opens for longer each time: a sixteenth of
/// `circuit_open_ms`, doubling with every failed connection after it opened, up to
/// `circuit_open_ms`.
#[wasm_bindgen_test]
async fn the_circuit_opens_longer_while_the_relay_stays_down() {
    let t = transport(|c| {
        c.circuit_failures = 1;
        c.circuit_open_ms = 1_600;
    });
    // Another loopback address: Firefox delays new WebSocket connections to a host
    // after failed ones and lets only one per host connect at a time, so six failures
    // to 127.0.0.1 here would make later tests' connections to 127.0.0.1 time out.
    let dead = closed().replace("127.0.0.1", "127.0.0.2");
    for (k, open_ms) in [100u64, 200, 400, 800, 1_600, 1_600]
        .into_iter()
        .enumerate()
    {
        let before = js_sys::Date::now() as u64;
        let r = t.publish(&dead, &note(&format!("down {k}"))).await;
        let after = js_sys::Date::now() as u64;
        assert_eq!(r.outcome, Outcome::Unreachable, "{r:?}");
        assert!(
            !r.message.contains("circuit"),
            "a real try each time: {r:?}"
        );
        let rd = t.diagnostics().relay(&dead).cloned().unwrap();
        let until = rd.circuit_open_until_ms.expect("open");
        // It opened when this connection failed, for `open_ms`.
        assert!(
            (before..=after).contains(&(until - open_ms)),
            "try {k}: open until {until}, failed within {before}..={after}, expected {open_ms} ms"
        );
        // Wait the circuit out, so the next publish tries a connection.
        sleep((until.saturating_sub(js_sys::Date::now() as u64) + 20) as u32).await;
    }
}

/// A Background Sync `sync` event means the browser saw the network come back:
/// `handleSync` closes the circuits opened while offline before it flushes, so the
/// record goes out at once. A flush from a `message` (no sync event) does not.
#[wasm_bindgen_test]
async fn a_sync_event_closes_open_circuits_before_flushing() {
    use nostr_outbox::js::sw::handle_sync;
    let url = norm(&switch("/accept?t=sync-circuit"));
    let name = format!("ws-sync-circuit-{}", js_sys::Math::random());
    let options = json!({
        "name": name,
        "circuitFailures": 1,
        "circuitOpenMs": 600_000,
        "baseDelayMs": 1,
        "maxDelayMs": 2,
    });
    assert_eq!(control(json!(["SWITCH", "down"])).await["switch"], "down");
    let page = JsFuture::from(nostr_outbox::js::Outbox::open(js(options.clone())))
        .await
        .expect("open");
    let ev = note("sync closes circuits");
    let relays = js(json!([url]));
    call(&page, "enqueue", &[JsValue::from_str(&ev.raw), relays])
        .await
        .expect("enqueue");
    let flush = |event: JsValue| {
        let options = js(options.clone());
        async move {
            rust(
                &JsFuture::from(handle_sync(event, options))
                    .await
                    .expect("flush"),
            )
        }
    };
    // Down: unreachable, and the circuit opens after this one failure.
    let s = flush(JsValue::UNDEFINED).await;
    assert_eq!(
        (s["ran"].clone(), s["retrying"].clone()),
        (json!(true), json!(1)),
        "{s}"
    );
    assert_eq!(control(json!(["SWITCH", "up"])).await["switch"], "up");
    sleep(30).await;
    // Up, but a flush from a message still finds the circuit open.
    let s = flush(JsValue::UNDEFINED).await;
    assert_eq!(
        (s["delivered"].clone(), s["retrying"].clone()),
        (json!(0), json!(1)),
        "{s}"
    );
    let rec = rust(
        &call(&page, "get", &[JsValue::from_str(&ev.id)])
            .await
            .unwrap(),
    );
    let last = rec["evidence"]
        .as_array()
        .and_then(|e| e.last())
        .cloned()
        .unwrap_or_default();
    assert!(
        last["message"].as_str().unwrap_or("").contains("circuit"),
        "{rec}"
    );
    sleep(30).await;
    // The sync event: circuits closed, published at once.
    let sync = js(json!({ "tag": "nostr-outbox", "lastChance": true }));
    let s = flush(sync).await;
    assert_eq!(s["delivered"], json!(1), "{s}");
    assert_eq!(fetch_by_id(&url, &ev.id).await.len(), 1);
    call(&page, "close", &[]).await.expect("close");
}

/// A probe connects without publishing: while the relay is down it fails and the relay
/// stays unreachable; once it is up the probe opens, and the relay is reported
/// recovered once and is no longer unreachable.
#[wasm_bindgen_test]
async fn a_probe_reports_a_relay_that_is_back() {
    let t = transport(|_| {});
    let url = norm(&switch("/accept?t=probe-transport"));
    assert_eq!(control(json!(["SWITCH", "down"])).await["switch"], "down");
    assert!(t.unreachable().is_empty(), "nothing failed yet");
    assert!(!t.probe(&url).await, "the relay is down");
    assert_eq!(t.unreachable(), vec![url.clone()]);
    assert!(t.take_recovered().is_empty());
    assert_eq!(control(json!(["SWITCH", "up"])).await["switch"], "up");
    assert!(t.probe(&url).await, "the relay is back");
    assert!(t.unreachable().is_empty());
    assert_eq!(t.take_recovered(), vec![url.clone()]);
    assert!(t.take_recovered().is_empty(), "reported once");
    // The probe's connection serves the next publish.
    assert_eq!(
        t.publish(&url, &note("after a probe")).await.outcome,
        Outcome::Accepted
    );
    assert_eq!(t.diagnostics().relay(&url).unwrap().connections_opened, 2);
}

/// An auto-flushing outbox opened with `options` (plus a fresh name) while the switch
/// relay at `path` is down, with one note enqueued for it: the outbox, the relay's URL
/// and the note.
async fn auto_outbox_with_a_note_for_a_down_relay(
    path: &str,
    options: Value,
) -> (JsValue, String, EventEnvelope) {
    let url = norm(&switch(path));
    assert_eq!(control(json!(["SWITCH", "down"])).await["switch"], "down");
    let mut options = options;
    options["name"] = json!(format!("ws-probe-{}", js_sys::Math::random()));
    options["autoFlush"] = json!(true);
    let page = JsFuture::from(nostr_outbox::js::Outbox::open(js(options)))
        .await
        .expect("open");
    let ev = note(path);
    call(
        &page,
        "enqueue",
        &[JsValue::from_str(&ev.raw), js(json!([url]))],
    )
    .await
    .expect("enqueue");
    (page, url, ev)
}

/// The outbox's record of `id` (`get`).
async fn record(page: &JsValue, id: &str) -> Value {
    rust(
        &call(page, "get", &[JsValue::from_str(id)])
            .await
            .expect("get"),
    )
}

/// The record of `id` once its stage is `stage`, polled every `step_ms` at most `polls`
/// times; the last one read otherwise.
async fn record_once(page: &JsValue, id: &str, stage: &str, polls: u32, step_ms: u32) -> Value {
    let mut rec = Value::Null;
    for _ in 0..polls {
        rec = record(page, id).await;
        if rec["stage"] == json!(stage) {
            break;
        }
        sleep(step_ms).await;
    }
    rec
}

/// Brings the switch relay back up and checks the record of `id` is delivered within
/// 15 s.
async fn relay_back_and_delivered(page: &JsValue, id: &str) {
    assert_eq!(control(json!(["SWITCH", "up"])).await["switch"], "up");
    let rec = record_once(page, id, "satisfied", 150, 100).await;
    assert_eq!(
        rec["stage"],
        json!("satisfied"),
        "not delivered 15 s after the relay came back: {rec}"
    );
}

/// An auto-flushing outbox whose records wait 10 minutes after failing to reach their
/// relay still delivers within seconds of the relay coming back: it probes the relay
/// (1 s after the failed run, then 1.5, 2.25 … s) and the record is woken when it answers.
#[wasm_bindgen_test]
async fn auto_flush_probes_a_down_relay_and_delivers_when_it_is_back() {
    let options = json!({ "baseDelayMs": 600_000, "maxDelayMs": 600_000 });
    let (page, url, ev) =
        auto_outbox_with_a_note_for_a_down_relay("/accept?t=probe-auto", options).await;
    // The first attempt fails: the record waits (its next attempt 8 minutes away or
    // more, with jitter).
    let rec = record_once(&page, &ev.id, "retryable", 100, 50).await;
    assert_eq!(rec["stage"], json!("retryable"), "{rec}");
    let wait_ms = rec["nextAttemptAt"].as_f64().unwrap_or(0.0) - js_sys::Date::now();
    assert!(wait_ms > 400_000.0, "{rec}");
    relay_back_and_delivered(&page, &ev.id).await;
    assert_eq!(fetch_by_id(&url, &ev.id).await.len(), 1);
    call(&page, "close", &[]).await.expect("close");
}

/// Runs that come one after the other (a record retrying every 300 ms into an open
/// circuit, which never connects) do not put the probe off: the relay is still probed
/// and the record delivered soon after the relay is back.
#[wasm_bindgen_test]
async fn frequent_runs_do_not_put_the_probe_off() {
    let options = json!({
        "baseDelayMs": 300,
        "maxDelayMs": 300,
        "circuitFailures": 1,
        "circuitOpenMs": 600_000,
    });
    let (page, _, ev) =
        auto_outbox_with_a_note_for_a_down_relay("/accept?t=probe-busy", options).await;
    // Several retries into the open circuit.
    sleep(1_500).await;
    let rec = record(&page, &ev.id).await;
    let tries = rec["evidence"][0]["tries"].as_u64().unwrap_or(0);
    assert!(tries >= 3, "{rec}");
    relay_back_and_delivered(&page, &ev.id).await;
    call(&page, "close", &[]).await.expect("close");
}

#[wasm_bindgen_test]
async fn idle_connection_closes_and_reopens_lazily() {
    let t = transport(|c| c.idle_close_ms = 100);
    let url = fault("/accept?t=idle");
    assert_eq!(
        t.publish(&url, &note("idle 1")).await.outcome,
        Outcome::Accepted
    );
    // Wait well past the idle period (not a timing assertion: only "eventually").
    let mut closed = false;
    for _ in 0..50 {
        sleep(100).await;
        if t.diagnostics().open_connections == 0 {
            closed = true;
            break;
        }
    }
    assert!(closed, "{:?}", t.diagnostics());
    eventually_open("/accept?t=idle", 0).await;
    assert_eq!(
        t.publish(&url, &note("idle 2")).await.outcome,
        Outcome::Accepted
    );
    let rd = t.diagnostics().relay(&url).cloned().unwrap();
    assert_eq!(rd.connections_opened, 2);
    assert_eq!(rd.consecutive_failures, 0, "an idle close is not a failure");
}

/// How many sessions the fault relay has open on `path` (path and query).
async fn fault_open(path: &str) -> u64 {
    let stats = control(json!(["STATS"])).await;
    stats["open"][this_run(path)].as_u64().unwrap_or(0)
}

/// Polls until the fault relay has `n` sessions open on `path` (the relay sees a close a
/// moment after the browser sends it).
async fn eventually_open(path: &str, n: u64) {
    let mut last = u64::MAX;
    for _ in 0..50 {
        last = fault_open(path).await;
        if last == n {
            return;
        }
        sleep(100).await;
    }
    panic!("{path}: {last} sessions open on the relay, expected {n}");
}

#[wasm_bindgen_test]
async fn close_all_and_drop_release_connections() {
    let t = transport(|_| {});
    let url = fault("/accept?t=closeall");
    assert_eq!(t.publish(&url, &note("c")).await.outcome, Outcome::Accepted);
    assert_eq!(t.diagnostics().open_connections, 1);
    eventually_open("/accept?t=closeall", 1).await;
    t.close_all();
    assert_eq!(t.diagnostics().open_connections, 0);
    eventually_open("/accept?t=closeall", 0).await;

    // Dropping the transport closes its connections too.
    assert_eq!(
        t.publish(&url, &note("c2")).await.outcome,
        Outcome::Accepted
    );
    eventually_open("/accept?t=closeall", 1).await;
    drop(t);
    eventually_open("/accept?t=closeall", 0).await;
}

#[wasm_bindgen_test]
async fn close_all_with_publishes_in_flight_reports_unreachable() {
    let t = transport(|_| {});
    let url = fault("/slow/3000?t=inflight");
    let events: Vec<EventEnvelope> = (0..3).map(|i| note(&format!("inflight {i}"))).collect();
    let (reports, ()) = join(join_all(events.iter().map(|e| t.publish(&url, e))), async {
        // Close once all three are in flight.
        for _ in 0..50 {
            if t.diagnostics()
                .relay(&url)
                .is_some_and(|r| r.in_flight == 3)
            {
                break;
            }
            sleep(20).await;
        }
        t.close_all();
    })
    .await;
    for r in reports {
        assert_eq!(r.outcome, Outcome::Unreachable, "{r:?}");
    }
}

#[wasm_bindgen_test]
async fn stalled_handshake_hits_the_connect_timeout() {
    let t = transport(|c| c.connect_timeout_ms = 300);
    let url = fault("/stall?t=connect");
    let events: Vec<EventEnvelope> = (0..3).map(|i| note(&format!("stall {i}"))).collect();
    for r in join_all(events.iter().map(|e| t.publish(&url, e))).await {
        assert_eq!(r.outcome, Outcome::Unreachable, "{r:?}");
        assert!(r.message.contains("connect timeout"), "{r:?}");
    }
    let rd = t.diagnostics().relay(&url).cloned().unwrap();
    assert_eq!(
        rd.connections_opened, 1,
        "the three publishes shared one attempt"
    );
    assert_eq!(rd.consecutive_failures, 1, "counted once: {rd:?}");
    assert_eq!(rd.events_sent, 0);
}

#[wasm_bindgen_test]
fn config_is_validated() {
    let bad = [
        WsTransportConfig {
            publish_timeout_ms: 0,
            ..WsTransportConfig::default()
        },
        WsTransportConfig {
            max_frame_bytes: 10,
            ..WsTransportConfig::default()
        },
        WsTransportConfig {
            circuit_open_ms: 0,
            ..WsTransportConfig::default()
        },
    ];
    let fields: Vec<&str> = bad
        .iter()
        .map(|c| WsTransport::new(c.clone()).unwrap_err().field)
        .collect();
    assert_eq!(
        fields,
        ["publishTimeoutMs", "maxFrameBytes", "circuitOpenMs"]
    );
    assert_eq!(WsTransportConfig::default().publish_timeout_ms, 10_000);
    let e = WsTransport::new(bad[0].clone()).unwrap_err();
    assert_eq!(e.code(), "invalid_config");
    // JSON names are camelCase and every field defaults.
    let c: WsTransportConfig = serde_json::from_value(json!({"publishTimeoutMs": 500})).unwrap();
    assert_eq!(c.publish_timeout_ms, 500);
    assert_eq!(
        c.connect_timeout_ms,
        WsTransportConfig::default().connect_timeout_ms
    );
}

// --- end to end: flusher + store + transport + real relays ----------------------------------

fn flush_config() -> FlushConfig {
    let mut c = FlushConfig::new("transport-test");
    c.concurrency = 8;
    c
}

fn random_u32() -> impl FnMut() -> u32 {
    || (js_sys::Math::random() * f64::from(u32::MAX)) as u32
}

async fn run_tick<S: Store>(store: &S, t: &WsTransport, now: &Cell<u64>) -> Vec<String> {
    let seen = RefCell::new(Vec::new());
    let clock = || now.get();
    let mut observer = |e: FlushEvent<'_>| {
        seen.borrow_mut().push(match e {
            FlushEvent::AttemptStarted { .. } => "attempt".to_string(),
            FlushEvent::Delivered { .. } => "delivered".to_string(),
            FlushEvent::Retrying { .. } => "retrying".to_string(),
            FlushEvent::Exhausted { .. } => "exhausted".to_string(),
            FlushEvent::Settled { .. } => "settled".to_string(),
            FlushEvent::LostClaim { .. } => "lost".to_string(),
            FlushEvent::Released { .. } => "released".to_string(),
            FlushEvent::Woken { .. } => "woken".to_string(),
            FlushEvent::Signed { .. } => "signed".to_string(),
            FlushEvent::Superseded { .. } => "superseded".to_string(),
        })
    };
    tick(
        store,
        t,
        &flush_config(),
        &clock,
        &mut random_u32(),
        &mut observer,
    )
    .await
    .expect("tick");
    seen.into_inner()
}

async fn relay_down_then_back<S: Store>(store: &S, tag: &str) {
    let url = norm(&switch(&format!("/accept?t={tag}")));
    let t = transport(|_| {});
    let now = Cell::new(js_sys::Date::now() as u64);

    assert_eq!(control(json!(["SWITCH", "down"])).await["switch"], "down");
    let ev = note(&format!("down-then-up {tag}"));
    store
        .enqueue(
            Plan::new(ev.clone(), vec![url.clone()], Policy::All),
            now.get(),
        )
        .await
        .expect("enqueue");
    let seen = run_tick(store, &t, &now).await;
    assert_eq!(seen, ["attempt", "retrying"]);
    let rec = store.get(&ev.id).await.unwrap().unwrap();
    assert_eq!(rec.stage, Stage::Retryable);
    assert_eq!(rec.evidence[0].outcome, Outcome::Unreachable);

    assert_eq!(control(json!(["SWITCH", "up"])).await["switch"], "up");
    // A newer note reaches the relay first, before the first one's backoff ends: the
    // relay answered again, so the first note is woken (due now).
    let first = rec.due_ms.expect("due");
    now.set(now.get() + 1);
    assert!(first > now.get(), "still backing off");
    let ev2 = note(&format!("first after up {tag}"));
    store
        .enqueue(
            Plan::new(ev2.clone(), vec![url.clone()], Policy::All),
            now.get(),
        )
        .await
        .expect("enqueue");
    let mut seen = run_tick(store, &t, &now).await;
    // The wake-up and the recording of the new note run side by side.
    seen.sort();
    assert_eq!(seen, ["attempt", "delivered", "woken"]);
    let rec = store.get(&ev.id).await.unwrap().unwrap();
    assert_eq!(rec.due_ms, Some(now.get()), "woken when the relay answered");
    assert!(t.take_recovered().is_empty(), "the run took the recovery");
    let seen = run_tick(store, &t, &now).await;
    assert_eq!(seen, ["attempt", "delivered"]);
    let rec = store.get(&ev.id).await.unwrap().unwrap();
    assert_eq!(rec.stage, Stage::Satisfied);
    assert_eq!(rec.evidence.len(), 2);
    assert_eq!(rec.evidence[1].outcome, Outcome::Accepted);
    assert_eq!(fetch_by_id(&url, &ev.id).await.len(), 1);
}

#[wasm_bindgen_test]
async fn flush_of_many_records_shares_one_connection_per_relay() {
    let store = MemoryStore::in_memory();
    let t = transport(|_| {});
    let now = Cell::new(js_sys::Date::now() as u64);
    let targets = vec![norm(&relay()), norm(&fault("/accept?t=many"))];
    let n = 200;
    let plans: Vec<Plan> = (0..n)
        .map(|i| Plan::new(note(&format!("many {i}")), targets.clone(), Policy::All))
        .collect();
    store.enqueue_many(plans, now.get()).await.expect("enqueue");
    let mut config = FlushConfig::new("transport-test-many");
    config.batch_size = 256;
    config.concurrency = 64;
    let clock = || now.get();
    let start = js_sys::Date::now();
    let summary = flush_until_idle(
        &store,
        &t,
        &config,
        &clock,
        &mut random_u32(),
        &mut |_| {},
        10,
    )
    .await
    .expect("flush");
    let elapsed = js_sys::Date::now() - start;
    assert_eq!(summary.stats.satisfied, n, "{summary:?}");
    assert_eq!(summary.stats.publishes, 2 * n);
    assert_eq!(store.status().await.unwrap().satisfied, n);
    let d = t.diagnostics();
    for url in &targets {
        let rd = d.relay(url).unwrap();
        assert_eq!(rd.connections_opened, 1, "{rd:?}");
        assert_eq!(rd.oks, u64::from(n));
    }
    console_log!(
        "transport_ws: flush of {n} records to 2 relays (nostr-rs-relay + fault relay) took {elapsed} ms"
    );
}

#[wasm_bindgen_test]
async fn flush_delivers_once_the_relay_is_back_memory_store() {
    relay_down_then_back(&MemoryStore::in_memory(), "memory").await;
}

#[wasm_bindgen_test]
async fn flush_delivers_once_the_relay_is_back_indexeddb_store() {
    let name = format!("transport-e2e-{}", js_sys::Math::random());
    let store = IdbStore::open(IdbOptions::new(name))
        .await
        .expect("open IndexedDB");
    relay_down_then_back(&store, "idb").await;
}

#[wasm_bindgen_test]
async fn policy_all_with_a_blocking_relay_is_exhausted_with_evidence() {
    let store = MemoryStore::in_memory();
    let t = transport(|_| {});
    let now = Cell::new(js_sys::Date::now() as u64);
    let good = [relay(), fault("/accept?t=all")];
    let blocking = fault("/reply/blocked?t=all");
    let targets: Vec<String> = good.iter().chain([&blocking]).map(|u| norm(u)).collect();
    let ev = note("policy all");
    store
        .enqueue(Plan::new(ev.clone(), targets, Policy::All), now.get())
        .await
        .expect("enqueue");
    let seen = run_tick(&store, &t, &now).await;
    assert_eq!(seen, ["attempt", "exhausted"]);
    let rec = store.get(&ev.id).await.unwrap().unwrap();
    assert_eq!(rec.stage, Stage::Exhausted);
    assert_eq!(rec.reason, Some(StopReason::Rejected));
    let outcome_of = |u: &str| -> Vec<Outcome> {
        rec.evidence
            .iter()
            .filter(|e| e.target == norm(u))
            .map(|e| e.outcome)
            .collect()
    };
    assert_eq!(
        outcome_of(&blocking),
        [Outcome::Rejected(RejectReason::Blocked)]
    );
    for u in &good {
        assert_eq!(outcome_of(u), [Outcome::Accepted], "{u}");
    }
    // Nothing is claimable any more, and each relay saw the event once.
    now.set(now.get() + 3_600_000);
    assert_eq!(run_tick(&store, &t, &now).await, Vec::<String>::new());
    assert_eq!(fault_events("/accept?t=all").await, 1);
    assert_eq!(fault_events("/reply/blocked?t=all").await, 1);
    assert_eq!(fetch_by_id(&relay(), &ev.id).await.len(), 1);
}

#[wasm_bindgen_test]
async fn at_least_two_is_satisfied_while_one_relay_is_down() {
    let store = MemoryStore::in_memory();
    let t = transport(|_| {});
    let now = Cell::new(js_sys::Date::now() as u64);
    let targets: Vec<String> = [relay(), fault("/accept?t=atleast"), closed()]
        .iter()
        .map(|u| norm(u))
        .collect();
    let ev = note("at least two");
    store
        .enqueue(
            Plan::new(ev.clone(), targets, Policy::AtLeast { k: 2 }),
            now.get(),
        )
        .await
        .expect("enqueue");
    let seen = run_tick(&store, &t, &now).await;
    let rec = store.get(&ev.id).await.unwrap().unwrap();
    assert_eq!(seen, ["attempt", "delivered"], "{:?}", rec.evidence);
    // Satisfied, and the relay that is down is still to be delivered to.
    assert_eq!(rec.stage, Stage::Delivering);
    assert_eq!(
        rec.satisfaction,
        nostr_outbox::core::Satisfaction::Satisfied
    );
    let down: Vec<Outcome> = rec
        .evidence
        .iter()
        .filter(|e| e.target == norm(&closed()))
        .map(|e| e.outcome)
        .collect();
    assert_eq!(down, [Outcome::Unreachable]);
}
