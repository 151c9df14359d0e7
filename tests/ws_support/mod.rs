//! Shared by the transport tests (window, worker and service worker): relay URLs (set at compile time
//! by `scripts/with-relays.sh`), test events signed with a test key, a REQ-by-id helper
//! on a raw WebSocket, and a Rust NIP-42 signer. Worker-safe: nothing here touches
//! `window`.
#![allow(dead_code)]

use k256::schnorr::SigningKey;
use nostr_outbox::core::EventEnvelope;
use nostr_outbox::nostr::{req_by_ids, Event};
use nostr_outbox::transport::websocket::{WsTransport, WsTransportConfig};
use nostr_outbox::transport::Signer;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

const RELAY: Option<&str> = option_env!("OUTBOX_TEST_RELAY_URL");
const FAULT: Option<&str> = option_env!("OUTBOX_TEST_FAULT_URL");
const SWITCH: Option<&str> = option_env!("OUTBOX_TEST_SWITCH_URL");
const CLOSED: Option<&str> = option_env!("OUTBOX_TEST_CLOSED_URL");

fn need(value: Option<&'static str>, name: &str) -> &'static str {
    match value {
        Some(v) if !v.is_empty() => v,
        _ => panic!(
            "{name} was not set when this test was compiled: run it through \
             scripts/with-relays.sh (it starts the relays and exports their URLs)"
        ),
    }
}

/// nostr-rs-relay.
pub fn relay() -> String {
    need(RELAY, "OUTBOX_TEST_RELAY_URL").to_owned()
}

thread_local! {
    /// This run of the test binary, drawn once.
    static RUN: String = format!("{:08x}", (js_sys::Math::random() * 4_294_967_296.0) as u64);
}

/// `path` with this run's tag in its query. The fault relay keys its counters (`STATS`)
/// by path and query, and a test binary can run more than once against the same relays
/// (scripts/wasm-test-runner.sh runs a WebKit binary again after an engine fault): a
/// count must not include an earlier run's events.
pub fn this_run(path: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    RUN.with(|run| format!("{path}{sep}run={run}"))
}

/// A fault-relay behaviour, e.g. `fault("/silent?t=x")` (tagged with [`this_run`]).
pub fn fault(path: &str) -> String {
    format!("{}{}", need(FAULT, "OUTBOX_TEST_FAULT_URL"), this_run(path))
}

/// The fault relay's switchable listener (its `/control` stops and starts it), tagged
/// with [`this_run`].
pub fn switch(path: &str) -> String {
    format!(
        "{}{}",
        need(SWITCH, "OUTBOX_TEST_SWITCH_URL"),
        this_run(path)
    )
}

/// A port where nothing listens.
pub fn closed() -> String {
    need(CLOSED, "OUTBOX_TEST_CLOSED_URL").to_owned()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Signs an event with the test key `seed`.
pub fn sign(seed: u8, kind: u16, tags: Vec<Vec<String>>, content: &str, created_at: u64) -> Event {
    let sk = SigningKey::from_bytes(&[seed; 32]).expect("test key");
    let pubkey = hex(&sk.verifying_key().to_bytes());
    let unsigned = Event::from_parts(
        "0".repeat(64),
        pubkey.clone(),
        created_at,
        kind,
        tags.clone(),
        content.to_owned(),
        "0".repeat(128),
    )
    .expect("unsigned event");
    let id = unsigned.compute_id();
    let id_bytes: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&id[2 * i..2 * i + 2], 16).expect("hex"))
        .collect();
    let sig = sk.sign_raw(&id_bytes, &[7; 32]).expect("sign");
    let event = Event::from_parts(
        id,
        pubkey,
        created_at,
        kind,
        tags,
        content.to_owned(),
        hex(&sig.to_bytes()),
    )
    .expect("signed event");
    event.verify().expect("valid test event");
    event
}

/// A fresh kind-1 note.
pub fn note(label: &str) -> EventEnvelope {
    let content = format!("outbox transport test: {label} {}", js_sys::Math::random());
    let now = (js_sys::Date::now() / 1000.0) as u64;
    sign(1, 1, vec![], &content, now).to_envelope()
}

/// A transport with short timeouts.
pub fn transport(edit: impl FnOnce(&mut WsTransportConfig)) -> WsTransport {
    let mut cfg = WsTransportConfig {
        connect_timeout_ms: 3_000,
        publish_timeout_ms: 5_000,
        auth_timeout_ms: 5_000,
        ..WsTransportConfig::default()
    };
    edit(&mut cfg);
    WsTransport::new(cfg).expect("valid config")
}

#[wasm_bindgen(inline_js = r#"
export function workerReq(url, frame, timeoutMs) {
  return new Promise((resolve) => {
    const events = [];
    let done = false;
    let ws;
    const finish = (error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      try { ws.close(); } catch (e) {}
      resolve(JSON.stringify({ events, error }));
    };
    const timer = setTimeout(() => finish("timed out"), timeoutMs);
    try { ws = new WebSocket(url); } catch (e) { finish(String(e)); return; }
    ws.onopen = () => ws.send(frame);
    ws.onmessage = (ev) => {
      let m;
      try { m = JSON.parse(ev.data); } catch (e) { return; }
      if (Array.isArray(m) && m[0] === "EVENT") events.push(m[2]);
      else if (Array.isArray(m) && (m[0] === "EOSE" || m[0] === "CLOSED")) finish(null);
    };
    ws.onclose = () => finish("closed");
  });
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = workerReq)]
    fn worker_req(url: &str, frame: &str, timeout_ms: u32) -> js_sys::Promise;
}

/// The events `url` returns for a REQ by id.
pub async fn fetch_by_id(url: &str, id: &str) -> Vec<Value> {
    let text = JsFuture::from(worker_req(url, &req_by_ids("q", &[id]), 5_000))
        .await
        .expect("REQ")
        .as_string()
        .expect("string");
    let out: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(out["error"], Value::Null, "REQ to {url}: {out}");
    out["events"].as_array().cloned().unwrap_or_default()
}

/// A NIP-42 signer in Rust (a worker has no `window.nostr`).
pub struct TestSigner;

impl Signer for TestSigner {
    fn sign(
        &self,
        template: String,
    ) -> futures_util::future::LocalBoxFuture<'static, Result<String, String>> {
        Box::pin(async move {
            let template: Value = serde_json::from_str(&template).map_err(|e| e.to_string())?;
            let tags: Vec<Vec<String>> =
                serde_json::from_value(template["tags"].clone()).map_err(|e| e.to_string())?;
            let created_at = template["created_at"].as_u64().unwrap_or(0);
            let ev = sign(5, 22242, tags, "", created_at);
            Ok(ev.raw().to_string())
        })
    }
}
