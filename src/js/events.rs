//! The outbox's events: an internal `EventTarget` on which `CustomEvent`s are
//! dispatched (`enqueued`, `attempt`, `delivered`, `retrying`, `exhausted`, `change`,
//! `error`), and a `BroadcastChannel` (`nostr-outbox:<name>`) that relays record
//! events to the outboxes of the same database in other tabs and workers, so a page
//! sees `delivered` even when another context ran the flusher. The channel is left
//! (and its listener removed) on close or drop.
//!
//! Channel messages are `{ type, detail, change? }`. The events queued until the next
//! task (a flusher's group of records, one `enqueueMany`) go out together in that task,
//! in order, as one message `{ batch: [message, ...] }`: one post instead of one per
//! event, and none on the path of an awaited call (an `enqueue` resolves before its
//! event is cloned and posted). A single event is posted alone, so an outbox of an
//! earlier version in another tab still understands it. The channel's plumbing is in
//! `glue.js` (`openChannel`, `postToChannel`).

use std::cell::RefCell;

use wasm_bindgen::prelude::*;
use web_sys::EventTarget;

use super::sys;

/// Where an outbox's events go.
pub(crate) struct Events {
    target: EventTarget,
    /// The joined channel (`glue.js`), if any.
    channel: RefCell<Option<JsValue>>,
}

impl Events {
    /// A fresh event target; with `broadcast`, joined to the database's channel.
    pub(crate) fn new(channel_name: &str, broadcast: bool) -> Result<Events, JsValue> {
        let target = EventTarget::new()?;
        let channel = if broadcast {
            sys::open_channel(channel_name, &target)
        } else {
            None
        };
        Ok(Events {
            target,
            channel: RefCell::new(channel),
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

    /// Queues `{ type, detail, change? }` for the channel, if joined.
    fn post(&self, kind: &str, detail: &JsValue, change: bool) {
        if let Some(channel) = self.channel.borrow().as_ref() {
            sys::post_to_channel(channel, kind, detail, change);
        }
    }

    /// Dispatches `kind` here only.
    pub(crate) fn emit_local(&self, kind: &str, detail: &JsValue) {
        let _ = sys::fire(&self.target, kind, detail);
    }

    /// Posts what is queued, then leaves the channel.
    pub(crate) fn close(&self) {
        if let Some(channel) = self.channel.borrow_mut().take() {
            sys::close_channel(&channel);
        }
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        self.close();
    }
}
