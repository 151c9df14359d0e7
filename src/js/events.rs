//! The outbox's events: an internal `EventTarget` on which `CustomEvent`s are
//! dispatched (`enqueued`, `attempt`, `delivered`, `retrying`, `exhausted`, `change`,
//! `error`), and a `BroadcastChannel` (`nostr-outbox:<name>`) that relays record
//! events to the outboxes of the same database in other tabs and workers, so a page
//! sees `delivered` even when another context ran the flusher. The channel's listener
//! is owned here and removed, and the channel closed, on drop.

use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::EventTarget;

use super::sys;

/// Event names relayed across contexts.
const RELAYED: [&str; 6] = [
    "enqueued",
    "attempt",
    "delivered",
    "retrying",
    "exhausted",
    "change",
];

struct Channel {
    channel: EventTarget,
    closure: Closure<dyn FnMut(web_sys::Event)>,
}

impl Drop for Channel {
    fn drop(&mut self) {
        let _ = self
            .channel
            .remove_event_listener_with_callback("message", self.closure.as_ref().unchecked_ref());
        call0(&self.channel, "close");
    }
}

fn call0(target: &JsValue, method: &str) {
    if let Ok(f) = Reflect::get(target, &JsValue::from_str(method)) {
        if let Some(f) = f.dyn_ref::<js_sys::Function>() {
            let _ = f.call0(target);
        }
    }
}

/// Where an outbox's events go.
pub(crate) struct Events {
    target: EventTarget,
    channel: std::cell::RefCell<Option<Channel>>,
}

impl Events {
    /// A fresh event target; with `broadcast`, joined to the database's channel.
    pub(crate) fn new(channel_name: &str, broadcast: bool) -> Result<Events, JsValue> {
        let target = EventTarget::new()?;
        let channel = if broadcast {
            sys::open_channel(channel_name).map(|channel| {
                let local = target.clone();
                let closure =
                    Closure::<dyn FnMut(web_sys::Event)>::new(move |ev: web_sys::Event| {
                        let data = Reflect::get(&ev, &JsValue::from_str("data"))
                            .unwrap_or(JsValue::UNDEFINED);
                        let kind = Reflect::get(&data, &JsValue::from_str("type"))
                            .ok()
                            .and_then(|v| v.as_string());
                        let detail = Reflect::get(&data, &JsValue::from_str("detail"))
                            .unwrap_or(JsValue::NULL);
                        if let Some(kind) = kind.filter(|k| RELAYED.contains(&k.as_str())) {
                            let _ = sys::fire(&local, &kind, &detail);
                            // A record event posted by `emit_record` stands for two.
                            let change = Reflect::get(&data, &JsValue::from_str("change"))
                                .is_ok_and(|v| v.is_truthy());
                            if change && kind != "change" {
                                let _ = sys::fire(&local, "change", &detail);
                            }
                        }
                    });
                let _ = channel
                    .add_event_listener_with_callback("message", closure.as_ref().unchecked_ref());
                // Node.js: an open channel must not keep the process alive.
                call0(&channel, "unref");
                Channel { channel, closure }
            })
        } else {
            None
        };
        Ok(Events {
            target,
            channel: std::cell::RefCell::new(channel),
        })
    }

    /// The internal target (`addEventListener` etc. delegate to it).
    pub(crate) fn target(&self) -> &EventTarget {
        &self.target
    }

    /// Dispatches `kind` with `detail` here and relays it to the other contexts.
    pub(crate) fn emit(&self, kind: &str, detail: &JsValue) {
        let _ = sys::fire(&self.target, kind, detail);
        self.post(kind, detail, false);
    }

    /// A record event: dispatches `kind`, then `change`, with the same `detail`, here
    /// and (in one channel message, one structured clone of the record) in the other
    /// contexts.
    pub(crate) fn emit_record(&self, kind: &str, detail: &JsValue) {
        let _ = sys::fire(&self.target, kind, detail);
        let _ = sys::fire(&self.target, "change", detail);
        self.post(kind, detail, true);
    }

    /// Posts `{ type, detail, change? }` to the channel, if joined.
    fn post(&self, kind: &str, detail: &JsValue, change: bool) {
        if let Some(ch) = self.channel.borrow().as_ref() {
            if let Ok(post) = Reflect::get(&ch.channel, &JsValue::from_str("postMessage")) {
                if let Some(post) = post.dyn_ref::<js_sys::Function>() {
                    let msg = Object::new();
                    let _ =
                        Reflect::set(&msg, &JsValue::from_str("type"), &JsValue::from_str(kind));
                    let _ = Reflect::set(&msg, &JsValue::from_str("detail"), detail);
                    if change {
                        let _ = Reflect::set(&msg, &JsValue::from_str("change"), &JsValue::TRUE);
                    }
                    let _ = post.call1(&ch.channel, &msg);
                }
            }
        }
    }

    /// Dispatches `kind` here only.
    pub(crate) fn emit_local(&self, kind: &str, detail: &JsValue) {
        let _ = sys::fire(&self.target, kind, detail);
    }

    /// Leaves the channel.
    pub(crate) fn close(&self) {
        self.channel.borrow_mut().take();
    }
}
