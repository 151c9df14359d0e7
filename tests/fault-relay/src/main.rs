//! `fault-relay`: a Nostr relay that misbehaves on request, for nostr-outbox's browser
//! transport tests. It is built on rust-nostr's `nostr-relay-builder`: two embedded
//! `LocalRelay`s (one open, one requiring NIP-42 auth for writes) store events and answer
//! `REQ`s; in front of them a small WebSocket proxy picks a behaviour from the URL path of
//! each connection and injects the fault.
//!
//! Paths (one process serves them all, so one port is enough):
//!
//! | path | behaviour |
//! |---|---|
//! | `/` or `/accept` | a normal relay (the open `LocalRelay`) |
//! | `/auth` | NIP-42: `AUTH` challenge + `auth-required:` until the client authenticates |
//! | `/auth-eager` | the same relay, but its `AUTH` challenge comes when the client connects (as relays that take NIP-70 protected events do), not with the first refusal |
//! | `/reply/<prefix>` | every `EVENT` answered `["OK",id,false,"<prefix>: fault relay"]` (`true` for `duplicate`) |
//! | `/silent` | `EVENT`s are read and never answered |
//! | `/swallow` | `EVENT`s are stored (by the open relay, shared with `/`), their `OK`s never sent: a relay that kept the event and whose answer was lost; `REQ`s are answered |
//! | `/no-eose` | the open relay, as `/`, but its `EOSE`s are never sent: a `REQ` gets the stored events and no end |
//! | `/limit/<n>` | at most `<n>` `EVENT`s (1..=1000) per rolling second per connection reach the relay; the others are answered `["OK",id,false,"rate-limited: …"]`; `STATS` gives `limited` (refused) and `arrivals` (when each `EVENT` came, ms since the relay started) per path |
//! | `/forge` | each `REQ` is first answered with what a hostile relay may send for it: non-JSON, wrong shapes, an `EVENT` claiming to be the newest version of the author's kind that it asks for (far in the future) with a made-up id and signature, the same with a valid signature by another key, a 2 MiB frame; then the real relay answers it (its events, `EOSE`). `EVENT`s are taken as by `/` |
//! | `/close` | the first `EVENT` gets a WebSocket close frame (1011) instead of an `OK` |
//! | `/drop` | the first `EVENT` drops the TCP connection without a close frame |
//! | `/hostile` | before each `OK`: non-JSON, wrong shapes, `OK` for unknown ids, a malformed `OK` for the real id, a `NOTICE` flood, a 2 MiB frame, a binary frame, `AUTH`, `EVENT`/`EOSE`/`CLOSED`/`COUNT`; then the real relay answers |
//! | `/stall` | the TCP connection is accepted, the WebSocket handshake never answered |
//! | `/slow/<ms>` | every client message is forwarded after `<ms>` ms (at most 60 000) |
//! | `...?anything` | the query is ignored for the behaviour but keys the counters of `STATS` |
//! | `/info/<document>` | WebSocket: the open relay, as `/`. HTTP (no `Upgrade`): a NIP-11 information document (with `Access-Control-Allow-Origin: *`), `<document>` being `k=v,k=v` (each `v` a JSON value, else a string: `{"name":"fault-relay","limitation":{k:v,…}}`), `missing` (404), `huge` (4 MiB, stating `max_message_length` 1; `huge-unsized`: the same without `content-length`), `deep` (30 000 nested arrays), `types` (every limit of a wrong type), `html` (an HTML page), `array` (a JSON array) or `slow` (never answered); `STATS` gives `info` (documents served, per path) |
//! | `/control` | admin: `["SWITCH","down"\|"up"]`, `["STATS"]` (events, connections and open sessions per path; `/limit`'s `arrivals` and `limited`; `/info`'s `info`), `["RESET"]` answered with `["CONTROL",<json>]` |
//!
//! With `--switch`, a second listener serves the same paths on its own port and can be
//! stopped (connections refused, live ones closed) and restarted on the same port through
//! `/control`: "the relay is down, then comes back".
//!
//! Usage: `fault-relay [--switch] [--ready-file FILE] [--parent-pid PID [--also-kill PID]...]`
//! — binds 127.0.0.1 on free ports and writes `OUTBOX_TEST_FAULT_URL=...` (and
//! `OUTBOX_TEST_SWITCH_URL=...`) lines to FILE (or stdout) once listening. With
//! `--parent-pid` it exits by itself soon after that process is gone, first sending
//! SIGTERM to every `--also-kill` process (the script's other relays), so even a test
//! script killed with SIGKILL leaves nothing behind. `fault-relay free-port` prints a free port and exits. It
//! keeps no state on disk (events live in memory).

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use nostr_relay_builder::builder::{RateLimit, RelayBuilderNip42, RelayBuilderNip42Mode};
use nostr_relay_builder::{LocalRelay, RelayBuilder};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// How many `NOTICE`s `/hostile` sends before each answer.
const NOTICE_FLOOD: usize = 200;
/// The size of the oversized frame `/hostile` sends.
const HUGE_FRAME: usize = 2 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq)]
enum Mode {
    Accept,
    Auth,
    AuthEager,
    Reply(String),
    Silent,
    Swallow,
    NoEose,
    Limit(usize),
    Forge,
    Close,
    Drop,
    Hostile,
    Slow(u64),
    Control,
    NotFound(String),
}

impl Mode {
    fn from_path(path: &str) -> Mode {
        let path = path.split('?').next().unwrap_or("");
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        match parts.as_slice() {
            [] | ["accept"] => Mode::Accept,
            ["auth"] => Mode::Auth,
            ["auth-eager"] => Mode::AuthEager,
            ["reply", prefix] => Mode::Reply((*prefix).to_string()),
            ["silent"] => Mode::Silent,
            ["swallow"] => Mode::Swallow,
            ["no-eose"] => Mode::NoEose,
            ["forge"] => Mode::Forge,
            ["limit", n] => match n.parse::<usize>() {
                Ok(n) if (1..=1000).contains(&n) => Mode::Limit(n),
                _ => Mode::NotFound(path.to_string()),
            },
            ["close"] => Mode::Close,
            ["drop"] => Mode::Drop,
            ["hostile"] => Mode::Hostile,
            ["slow", ms] => match ms.parse::<u64>() {
                Ok(ms) if ms <= 60_000 => Mode::Slow(ms),
                _ => Mode::NotFound(path.to_string()),
            },
            ["control"] => Mode::Control,
            ["info", _] => Mode::Accept,
            _ => Mode::NotFound(path.to_string()),
        }
    }
}

/// Shared state: the embedded relays, counters, the switchable listener.
struct State {
    open: LocalRelay,
    auth: LocalRelay,
    /// EVENT frames received, per path.
    events: Mutex<BTreeMap<String, u64>>,
    /// When each EVENT frame came (ms since `started`), per path.
    arrivals: Mutex<BTreeMap<String, Vec<u64>>>,
    /// EVENT frames `/limit/<n>` refused, per path.
    limited: Mutex<BTreeMap<String, u64>>,
    /// NIP-11 documents served (`/info/<document>` over HTTP), per path.
    info: Mutex<BTreeMap<String, u64>>,
    started: std::time::Instant,
    /// Connections accepted, per path.
    connections: Mutex<BTreeMap<String, u64>>,
    /// WebSocket sessions open now, per path.
    open_now: Mutex<BTreeMap<String, u64>>,
    switch: Option<Switch>,
}

/// The second listener that `/control` can stop and restart on the same port.
struct Switch {
    port: u16,
    /// `true` while it should be up; live connections watch it and close when it falls.
    up: watch::Sender<bool>,
}

fn bump(map: &Mutex<BTreeMap<String, u64>>, key: &str) {
    if let Ok(mut m) = map.lock() {
        *m.entry(key.to_string()).or_default() += 1;
    }
}

fn local_relay(nip42: bool) -> LocalRelay {
    let mut builder = RelayBuilder::default().rate_limit(RateLimit {
        max_reqs: 10_000,
        notes_per_minute: 1_000_000,
    });
    if nip42 {
        builder = builder.nip42(RelayBuilderNip42 {
            mode: RelayBuilderNip42Mode::Write,
        });
    }
    LocalRelay::new(builder)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("free-port") {
        match std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).and_then(|l| l.local_addr()) {
            Ok(addr) => println!("{}", addr.port()),
            Err(e) => {
                eprintln!("fault-relay: no free port: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    let mut ready_file: Option<String> = None;
    let mut with_switch = false;
    let mut parent_pid: Option<u32> = None;
    let mut also_kill: Vec<u32> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--switch" => with_switch = true,
            "--ready-file" => ready_file = it.next().cloned(),
            "--parent-pid" => parent_pid = it.next().and_then(|p| p.parse::<u32>().ok()),
            "--also-kill" => {
                if let Some(pid) = it.next().and_then(|p| p.parse::<u32>().ok()) {
                    also_kill.push(pid);
                }
            }
            other => {
                eprintln!("fault-relay: unknown argument `{other}`");
                std::process::exit(2);
            }
        }
    }

    let main_listener = match TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("fault-relay: cannot bind: {e}");
            std::process::exit(1);
        }
    };
    let main_port = main_listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let switch = if with_switch {
        let l = match TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("fault-relay: cannot bind the switch port: {e}");
                std::process::exit(1);
            }
        };
        let port = l.local_addr().map(|a| a.port()).unwrap_or(0);
        let (up, _) = watch::channel(true);
        Some((l, Switch { port, up }))
    } else {
        None
    };
    let (switch_listener, switch) = match switch {
        Some((l, s)) => (Some(l), Some(s)),
        None => (None, None),
    };
    let state = Arc::new(State {
        open: local_relay(false),
        auth: local_relay(true),
        events: Mutex::default(),
        arrivals: Mutex::default(),
        limited: Mutex::default(),
        info: Mutex::default(),
        started: std::time::Instant::now(),
        connections: Mutex::default(),
        open_now: Mutex::default(),
        switch,
    });

    let mut ready = format!("OUTBOX_TEST_FAULT_URL=ws://127.0.0.1:{main_port}\n");
    if let Some(s) = &state.switch {
        ready.push_str(&format!(
            "OUTBOX_TEST_SWITCH_URL=ws://127.0.0.1:{}\n",
            s.port
        ));
    }
    match &ready_file {
        Some(path) => {
            // Write then rename, so a reader never sees half a file.
            let tmp = format!("{path}.tmp");
            if let Err(e) = std::fs::write(&tmp, &ready).and_then(|_| std::fs::rename(&tmp, path)) {
                eprintln!("fault-relay: cannot write {path}: {e}");
                std::process::exit(1);
            }
        }
        None => print!("{ready}"),
    }

    if let Some(pid) = parent_pid {
        tokio::spawn(async move {
            let proc_dir = format!("/proc/{pid}");
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                if !std::path::Path::new(&proc_dir).exists() {
                    eprintln!("fault-relay: parent {pid} is gone; exiting");
                    for other in &also_kill {
                        let _ = std::process::Command::new("kill")
                            .arg(other.to_string())
                            .status();
                    }
                    std::process::exit(0);
                }
            }
        });
    }
    if let Some(l) = switch_listener {
        tokio::spawn(run_switch(state.clone(), l));
    }
    serve(state, main_listener, None).await;
}

/// Accepts connections until `down` (when given) turns false.
async fn serve(state: Arc<State>, listener: TcpListener, down: Option<watch::Receiver<bool>>) {
    let mut down = down;
    loop {
        let accepted = match &mut down {
            Some(rx) => tokio::select! {
                a = listener.accept() => a,
                _ = wait_for(rx, false) => return,
            },
            None => listener.accept().await,
        };
        match accepted {
            Ok((stream, addr)) => {
                let st = state.clone();
                let watch = down.clone();
                tokio::spawn(async move {
                    handle(st, stream, addr, watch).await;
                });
            }
            Err(e) => eprintln!("fault-relay: accept failed: {e}"),
        }
    }
}

async fn wait_for(rx: &mut watch::Receiver<bool>, value: bool) {
    loop {
        if *rx.borrow_and_update() == value {
            return;
        }
        if rx.changed().await.is_err() {
            // The sender is gone: never resolves.
            std::future::pending::<()>().await;
        }
    }
}

/// Runs the switchable listener: serve while up, unbind while down, rebind when up again.
async fn run_switch(state: Arc<State>, first: TcpListener) {
    let Some(switch) = &state.switch else { return };
    let port = switch.port;
    let mut rx = switch.up.subscribe();
    let mut listener = Some(first);
    loop {
        wait_for(&mut rx, true).await;
        let l = match listener.take() {
            Some(l) => l,
            None => {
                let mut bound = None;
                for _ in 0..100 {
                    match TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await {
                        Ok(l) => {
                            bound = Some(l);
                            break;
                        }
                        Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                    }
                }
                match bound {
                    Some(l) => l,
                    None => {
                        eprintln!("fault-relay: cannot rebind port {port}");
                        return;
                    }
                }
            }
        };
        serve(state.clone(), l, Some(rx.clone())).await;
        // `serve` returned: the switch went down and the listener was dropped.
    }
}

/// What a connection's HTTP request head says, peeked (not consumed, so the WebSocket
/// handshake still reads it) within 2 s: its path, and whether it asks for a WebSocket.
struct Head {
    path: String,
    upgrade: bool,
}

async fn peek_head(stream: &TcpStream) -> Option<Head> {
    let mut buf = [0u8; 8192];
    for _ in 0..200 {
        let n = stream.peek(&mut buf).await.ok()?;
        let head = &buf[..n];
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            let text = String::from_utf8_lossy(&head[..end]);
            let path = text.lines().next()?.split(' ').nth(1)?.to_string();
            let upgrade = text.lines().any(|l| {
                let l = l.to_ascii_lowercase();
                l.starts_with("upgrade:") && l.contains("websocket")
            });
            return Some(Head { path, upgrade });
        }
        if n == buf.len() || n == 0 {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    None
}

/// Holds a connection unanswered for a minute, or until the switchable listener goes down.
async fn hold(down: Option<watch::Receiver<bool>>) {
    let mut down = down;
    let minute = tokio::time::sleep(Duration::from_secs(60));
    match &mut down {
        Some(rx) => tokio::select! { _ = minute => {}, _ = wait_for(rx, false) => {} },
        None => minute.await,
    }
}

/// The document `/info/<document>` names (see the table above): `(status, content type,
/// body)`, or `None` for `slow`.
fn info_document(path: &str) -> Option<(u16, &'static str, Vec<u8>)> {
    let spec = path
        .split('?')
        .next()
        .unwrap_or("")
        .trim_start_matches("/info/");
    let json = "application/nostr+json";
    let doc = |v: Value| Some((200, json, v.to_string().into_bytes()));
    match spec {
        "missing" => Some((404, "text/plain", b"not found".to_vec())),
        "slow" => None,
        "html" => Some((
            200,
            "text/html",
            b"<html><body>a relay</body></html>".to_vec(),
        )),
        "array" => doc(json!([1, 2, 3])),
        "types" => doc(json!({"name": "fault-relay", "limitation": {
            "max_message_length": "10", "max_event_tags": -1, "max_content_length": 1.5,
            "min_pow_difficulty": [30], "auth_required": "yes",
            "created_at_lower_limit": {"a": 1}, "created_at_upper_limit": 1e300,
            "restricted_writes": 1, "payment_required": null}})),
        "huge" | "huge-unsized" => {
            let mut body = br#"{"limitation":{"max_message_length":1},"pad":""#.to_vec();
            body.resize(body.len() + 4 * 1024 * 1024, b'x');
            body.extend_from_slice(br#""}"#);
            Some((200, json, body))
        }
        "deep" => {
            let mut body = br#"{"name":"deep","x":"#.to_vec();
            body.extend(std::iter::repeat_n(b'[', 30_000));
            body.extend(std::iter::repeat_n(b']', 30_000));
            body.push(b'}');
            Some((200, json, body))
        }
        spec => {
            let mut limitation = serde_json::Map::new();
            for pair in spec.split(',').filter(|p| !p.is_empty()) {
                let (k, v) = pair.split_once('=').unwrap_or((pair, "true"));
                let value = serde_json::from_str(v).unwrap_or_else(|_| Value::from(v));
                limitation.insert(k.to_string(), value);
            }
            doc(json!({"name": "fault-relay", "limitation": limitation}))
        }
    }
}

/// Answers one HTTP request for a NIP-11 document and closes the connection.
async fn serve_info(
    state: &State,
    mut stream: TcpStream,
    path: &str,
    down: Option<watch::Receiver<bool>>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let key = path.to_string();
    // Consume the request head (already peeked whole).
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let Some((status, content_type, body)) = info_document(&key) else {
        // `slow`: never answered (until the listener goes down or a minute passes).
        hold(down).await;
        return;
    };
    bump(&state.info, &key);
    let reason = if status == 200 { "OK" } else { "Not Found" };
    // `huge-unsized`: no `content-length`, the body ends with the connection.
    let length = if key.contains("unsized") {
        String::new()
    } else {
        format!("content-length: {}\r\n", body.len())
    };
    let header = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\n{length}access-control-allow-origin: *\r\naccess-control-allow-headers: *\r\nconnection: close\r\n\r\n"
    );
    if stream.write_all(header.as_bytes()).await.is_ok() {
        let _ = stream.write_all(&body).await;
    }
    let _ = stream.shutdown().await;
}

/// Counts a live WebSocket session on its path while it lives.
struct OpenGuard<'a> {
    state: &'a State,
    key: String,
}

impl<'a> OpenGuard<'a> {
    fn new(state: &'a State, key: &str) -> OpenGuard<'a> {
        bump(&state.open_now, key);
        OpenGuard {
            state,
            key: key.to_string(),
        }
    }
}

impl Drop for OpenGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut m) = self.state.open_now.lock() {
            if let Some(n) = m.get_mut(&self.key) {
                *n = n.saturating_sub(1);
            }
        }
    }
}

async fn handle(
    state: Arc<State>,
    stream: TcpStream,
    addr: SocketAddr,
    down: Option<watch::Receiver<bool>>,
) {
    let head = peek_head(&stream).await;
    // `/stall`: accept the TCP connection but never answer the WebSocket handshake.
    if head.as_ref().is_some_and(|h| h.path.starts_with("/stall")) {
        bump(&state.connections, "/stall");
        hold(down).await;
        return;
    }
    // `/info/<document>` without `Upgrade: websocket`: a NIP-11 information document.
    if let Some(h) = head.filter(|h| !h.upgrade && h.path.starts_with("/info/")) {
        serve_info(&state, stream, &h.path, down).await;
        return;
    }
    let mut path = String::from("/");
    // The error type is tungstenite's, not ours to shrink.
    #[allow(clippy::result_large_err)]
    let callback = |req: &Request, resp: Response| {
        path = req.uri().to_string();
        Ok(resp)
    };
    let ws = match tokio_tungstenite::accept_hdr_async(stream, callback).await {
        Ok(ws) => ws,
        Err(_) => return,
    };
    let mode = Mode::from_path(&path);
    // Counters are kept per path *and query*, so tests can tag their connections
    // (`/accept?t=name`) and read only their own numbers.
    let key = path.clone();
    bump(&state.connections, &key);
    let _open = OpenGuard::new(&state, &key);
    let session = async {
        match mode {
            Mode::Control => control(&state, ws).await,
            Mode::NotFound(p) => {
                let mut ws = ws;
                let _ = ws
                    .send(Message::text(
                        json!(["NOTICE", format!("fault-relay: unknown path {p}")]).to_string(),
                    ))
                    .await;
                let _ = ws.close(None).await;
            }
            mode => proxy(&state, ws, addr, mode, &key).await,
        }
    };
    match down {
        Some(mut rx) => {
            tokio::select! {
                _ = session => {}
                _ = wait_for(&mut rx, false) => {}
            }
        }
        None => session.await,
    }
}

async fn control<S: AsyncRead + AsyncWrite + Unpin>(state: &State, mut ws: WebSocketStream<S>) {
    while let Some(Ok(msg)) = ws.next().await {
        let Message::Text(text) = msg else { continue };
        let parsed: Value = serde_json::from_str(text.as_str()).unwrap_or(Value::Null);
        let cmd = parsed.get(0).and_then(Value::as_str).unwrap_or("");
        let answer = match cmd {
            "SWITCH" => {
                let up = parsed.get(1).and_then(Value::as_str) == Some("up");
                match &state.switch {
                    Some(s) => {
                        s.up.send_replace(up);
                        if up {
                            // Wait until the port accepts again, so the caller can rely on it.
                            for _ in 0..100 {
                                if TcpStream::connect((Ipv4Addr::LOCALHOST, s.port))
                                    .await
                                    .is_ok()
                                {
                                    break;
                                }
                                tokio::time::sleep(Duration::from_millis(10)).await;
                            }
                        } else {
                            for _ in 0..100 {
                                if TcpStream::connect((Ipv4Addr::LOCALHOST, s.port))
                                    .await
                                    .is_err()
                                {
                                    break;
                                }
                                tokio::time::sleep(Duration::from_millis(10)).await;
                            }
                        }
                        json!({"switch": if up { "up" } else { "down" }})
                    }
                    None => json!({"error": "started without --switch"}),
                }
            }
            "STATS" => {
                let events = state.events.lock().map(|m| m.clone()).unwrap_or_default();
                let connections = state
                    .connections
                    .lock()
                    .map(|m| m.clone())
                    .unwrap_or_default();
                let open = state.open_now.lock().map(|m| m.clone()).unwrap_or_default();
                let arrivals = state.arrivals.lock().map(|m| m.clone()).unwrap_or_default();
                let limited = state.limited.lock().map(|m| m.clone()).unwrap_or_default();
                let info = state.info.lock().map(|m| m.clone()).unwrap_or_default();
                json!({"events": events, "connections": connections, "open": open,
                       "arrivals": arrivals, "limited": limited, "info": info})
            }
            "RESET" => {
                if let Ok(mut m) = state.events.lock() {
                    m.clear();
                }
                if let Ok(mut m) = state.connections.lock() {
                    m.clear();
                }
                if let Ok(mut m) = state.arrivals.lock() {
                    m.clear();
                }
                if let Ok(mut m) = state.limited.lock() {
                    m.clear();
                }
                if let Ok(mut m) = state.info.lock() {
                    m.clear();
                }
                json!({"reset": true})
            }
            other => json!({"error": format!("unknown command `{other}`")}),
        };
        if ws
            .send(Message::text(json!(["CONTROL", answer]).to_string()))
            .await
            .is_err()
        {
            return;
        }
    }
}

/// The event id of a client `["EVENT", {...}]` frame.
fn event_id(text: &str) -> Option<String> {
    let v: Value = serde_json::from_str(text).ok()?;
    if v.get(0)?.as_str()? != "EVENT" {
        return None;
    }
    Some(v.get(1)?.get("id")?.as_str()?.to_string())
}

async fn proxy<S: AsyncRead + AsyncWrite + Unpin>(
    state: &State,
    mut client: WebSocketStream<S>,
    addr: SocketAddr,
    mode: Mode,
    key: &str,
) {
    // The backend: a LocalRelay session over an in-memory duplex pipe.
    let relay = if mode == Mode::Auth || mode == Mode::AuthEager {
        state.auth.clone()
    } else {
        state.open.clone()
    };
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let _ = relay.take_connection(theirs, addr).await;
    });
    let mut backend = WebSocketStream::from_raw_socket(ours, Role::Client, None).await;
    let mut hostile_round: u64 = 0;
    // `/auth-eager`: the embedded relay challenges only a write, so a protected event by a
    // throwaway key is written for the client as it connects; the relay's AUTH challenge
    // goes to the client, the refusal of the probe does not.
    let mut probe: Option<String> = None;
    // `/swallow`: the ids whose `OK` is dropped.
    let mut swallowed: Vec<String> = Vec::new();
    // `/limit/<n>`: when the EVENTs let through in the last second came.
    let mut passed: std::collections::VecDeque<std::time::Instant> = Default::default();
    if mode == Mode::AuthEager {
        use nostr_relay_builder::prelude::{EventBuilder, Keys, Tag};
        let Ok(event) = EventBuilder::text_note("probe")
            .tag(Tag::protected())
            .sign_with_keys(&Keys::generate())
        else {
            return;
        };
        probe = Some(event.id.to_hex());
        let frame = json!(["EVENT", event]).to_string();
        if backend.send(Message::text(frame)).await.is_err() {
            return;
        }
    }

    loop {
        tokio::select! {
            msg = client.next() => {
                let Some(Ok(msg)) = msg else { break };
                let text = match msg {
                    Message::Text(t) => t.as_str().to_string(),
                    Message::Close(_) => break,
                    _ => continue,
                };
                if mode == Mode::Forge && send_forgeries(&mut client, &text).await.is_err() {
                    break;
                }
                let id = event_id(&text);
                if id.is_some() {
                    bump(&state.events, key);
                    if let Ok(mut m) = state.arrivals.lock() {
                        let ms = state.started.elapsed().as_millis() as u64;
                        m.entry(key.to_string()).or_default().push(ms);
                    }
                }
                match (&mode, id) {
                    (Mode::Reply(prefix), Some(id)) => {
                        let ok = prefix == "duplicate";
                        let answer = json!(["OK", id, ok, format!("{prefix}: fault relay says so")]);
                        if client.send(Message::text(answer.to_string())).await.is_err() {
                            break;
                        }
                        continue;
                    }
                    (Mode::Silent, Some(_)) => continue,
                    (Mode::Limit(n), Some(id)) => {
                        let now = std::time::Instant::now();
                        while passed
                            .front()
                            .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(1))
                        {
                            passed.pop_front();
                        }
                        if passed.len() >= *n {
                            bump(&state.limited, key);
                            let why = format!("rate-limited: fault relay takes {n} per second");
                            let answer = json!(["OK", id, false, why]);
                            if client.send(Message::text(answer.to_string())).await.is_err() {
                                break;
                            }
                            continue;
                        }
                        passed.push_back(now);
                    }
                    (Mode::Swallow, Some(id)) => swallowed.push(id),
                    (Mode::Close, Some(_)) => {
                        let _ = client
                            .close(Some(CloseFrame {
                                code: CloseCode::Error,
                                reason: "fault relay closes mid-publish".into(),
                            }))
                            .await;
                        break;
                    }
                    (Mode::Drop, Some(_)) => return,
                    (Mode::Hostile, Some(id)) => {
                        hostile_round += 1;
                        if send_hostile(&mut client, &id, hostile_round).await.is_err() {
                            break;
                        }
                    }
                    (Mode::Slow(ms), _) => tokio::time::sleep(Duration::from_millis(*ms)).await,
                    _ => {}
                }
                if backend.send(Message::text(text)).await.is_err() {
                    break;
                }
            }
            msg = backend.next() => {
                let Some(Ok(msg)) = msg else { break };
                if let Message::Text(t) = &msg {
                    let ok_for = serde_json::from_str::<Value>(t.as_str())
                        .ok()
                        .filter(|v| v[0] == "OK")
                        .and_then(|v| v[1].as_str().map(str::to_string));
                    let dropped = ok_for.is_some_and(|id| {
                        probe.as_deref() == Some(id.as_str()) || swallowed.contains(&id)
                    }) || (mode == Mode::NoEose && t.as_str().starts_with("[\"EOSE\""));
                    if dropped {
                        continue;
                    }
                    if client.send(msg).await.is_err() {
                        break;
                    }
                }
            }
        }
    }
    let _ = backend.close(None).await;
}

/// `/forge`: what a hostile relay may send for a `REQ` (`text`) before the real answer:
/// made-up "newest versions" of what it asks for. Nothing for other frames.
async fn send_forgeries<S: AsyncRead + AsyncWrite + Unpin>(
    client: &mut WebSocketStream<S>,
    text: &str,
) -> Result<(), tokio_tungstenite::tungstenite::Error> {
    use nostr_relay_builder::prelude::{EventBuilder, Keys, Kind, Timestamp};
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return Ok(());
    };
    if v[0] != "REQ" {
        return Ok(());
    }
    let sub = v[1].clone();
    let author = v[2]["authors"][0].as_str().unwrap_or_default().to_string();
    let kind = v[2]["kinds"][0].as_u64().unwrap_or(3);
    let future = Timestamp::now().as_secs() + 1_000_000;
    let made_up = json!({
        "id": "f".repeat(64), "pubkey": author, "created_at": future, "kind": kind,
        "tags": [], "content": "forged", "sig": "e".repeat(128),
    });
    let mut frames = vec![
        "not json".to_string(),
        json!(["EVENT"]).to_string(),
        json!(["EVENT", sub, "not an event"]).to_string(),
        json!(["EVENT", sub, made_up]).to_string(),
        json!(["EVENT", "another-sub", made_up]).to_string(),
    ];
    if let Ok(other) = EventBuilder::new(Kind::from(kind as u16), "another key's")
        .custom_created_at(Timestamp::from(future))
        .sign_with_keys(&Keys::generate())
    {
        frames.push(json!(["EVENT", sub, other]).to_string());
    }
    for f in frames {
        client.send(Message::text(f)).await?;
    }
    let mut huge = String::with_capacity(HUGE_FRAME + 16);
    huge.push_str("[\"NOTICE\",\"");
    huge.extend(std::iter::repeat_n('x', HUGE_FRAME));
    huge.push_str("\"]");
    client.send(Message::text(huge)).await
}

/// Everything a hostile relay may send, before the real answer to `id`.
async fn send_hostile<S: AsyncRead + AsyncWrite + Unpin>(
    client: &mut WebSocketStream<S>,
    id: &str,
    round: u64,
) -> Result<(), tokio_tungstenite::tungstenite::Error> {
    let unknown_id = format!("{:064x}", 0xdead_beef_u64.wrapping_mul(round + 7));
    let frames = vec![
        "this is not json".to_string(),
        "{\"an\":\"object\"}".to_string(),
        "[]".to_string(),
        "[42]".to_string(),
        json!(["OK", "zz", true, ""]).to_string(),
        json!(["OK", id, "not a boolean", ""]).to_string(),
        json!(["OK", id.to_uppercase(), true, "upper-case id"]).to_string(),
        json!(["OK", unknown_id, true, ""]).to_string(),
        json!(["OK", unknown_id, false, "blocked: not yours"]).to_string(),
        json!(["AUTH", format!("challenge-{round}")]).to_string(),
        json!(["EVENT", "nosub", {"id": "x"}]).to_string(),
        json!(["EOSE", "nosub"]).to_string(),
        json!(["CLOSED", "nosub", "error: nope"]).to_string(),
        json!(["COUNT", "nosub", {"count": 1}]).to_string(),
    ];
    for f in frames {
        client.send(Message::text(f)).await?;
    }
    for n in 0..NOTICE_FLOOD {
        client
            .send(Message::text(
                json!(["NOTICE", format!("flood {n}")]).to_string(),
            ))
            .await?;
    }
    let mut huge = String::with_capacity(HUGE_FRAME + 16);
    huge.push_str("[\"NOTICE\",\"");
    huge.extend(std::iter::repeat_n('x', HUGE_FRAME));
    huge.push_str("\"]");
    client.send(Message::text(huge)).await?;
    client
        .send(Message::binary(vec![0u8, 159, 146, 150, 255]))
        .await?;
    Ok(())
}
