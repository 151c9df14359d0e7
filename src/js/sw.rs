//! Service worker helpers: `registerBackgroundSync(registration, tag?)` for pages, and
//! `handleSync(event?, options?)` for the worker's `sync`, `periodicsync` and `message`
//! handlers. `handleSync` opens the outbox once per database name (kept open for
//! later events), flushes it, and, for a one-off `sync` event that retried nothing,
//! waits inside the event for records due within [`SYNC_WAIT_MS`] (an undo window, a
//! post scheduled seconds ahead: the page that enqueued it may be closed by then) and
//! flushes them at their time; records still waiting after that make it reject with
//! `sync_incomplete`, so the browser schedules another sync (unless it is the
//! browser's last chance). The policy is `flush::wake`'s ([`wake::sync_wait`],
//! [`wake::sync_again`]), natively tested; this module performs it.

use std::cell::RefCell;

use js_sys::{Promise, Reflect};
use wasm_bindgen::prelude::*;

use super::error::{self, ApiError};
use super::outbox::{promise, OpenConfig, Outbox};
use super::{sys, view};
use crate::core::ErrorCode;
use crate::flush::wake::{self, SyncRun};
use crate::platform::Sleep;

pub use crate::flush::wake::SYNC_WAIT_MS;

/// The default Background Sync tag.
pub const DEFAULT_SYNC_TAG: &str = "nostr-outbox";

thread_local! {
    /// The outboxes opened here, by name (a few at most: a `Vec`, not one more
    /// `BTreeMap` instantiation in the .wasm).
    static OPEN: RefCell<Vec<(String, Outbox)>> = const { RefCell::new(Vec::new()) };
}

/// Registers a one-off Background Sync with `tag` (default `"nostr-outbox"`).
/// Resolves with whether it registered (false where Background Sync is missing).
#[wasm_bindgen(js_name = registerBackgroundSync, skip_typescript)]
pub fn register_background_sync(registration: JsValue, tag: Option<String>) -> Promise {
    sys::register_sync(&registration, tag.as_deref().unwrap_or(DEFAULT_SYNC_TAG))
}

fn string_prop(v: &JsValue, key: &str) -> Option<String> {
    if !v.is_object() {
        return None;
    }
    Reflect::get(v, &JsValue::from_str(key)).ok()?.as_string()
}

fn bool_prop(v: &JsValue, key: &str) -> Option<bool> {
    if !v.is_object() {
        return None;
    }
    Reflect::get(v, &JsValue::from_str(key)).ok()?.as_bool()
}

async fn cached(config: OpenConfig) -> Result<Outbox, ApiError> {
    let name = config.name().to_string();
    let existing = OPEN.with(|m| {
        m.borrow()
            .iter()
            .find(|(n, o)| *n == name && !o.is_closed())
            .map(|(_, o)| o.share())
    });
    if let Some(outbox) = existing {
        return Ok(outbox);
    }
    let outbox = Outbox::open_with(config).await?;
    OPEN.with(|m| {
        let mut open = m.borrow_mut();
        match open.iter_mut().find(|(n, _)| *n == name) {
            Some((_, slot)) => *slot = outbox.share(),
            None => open.push((name, outbox.share())),
        }
    });
    Ok(outbox)
}

/// Opens the outbox (once per name) and flushes it, for `sync`, `periodicsync` and
/// `message` handlers of a service worker.
#[wasm_bindgen(js_name = handleSync, skip_typescript)]
pub fn handle_sync(event: JsValue, options: JsValue) -> Promise {
    promise(async move {
        let (config, tag) = OpenConfig::parse_sync(&options)?;
        let tag = tag.unwrap_or_else(|| DEFAULT_SYNC_TAG.to_string());
        if let Some(event_tag) = string_prop(&event, "tag") {
            if event_tag != tag {
                let skipped = view::FlushView {
                    skipped: Some("tag"),
                    ..view::FlushView::default()
                };
                return Ok(skipped.to_js());
            }
        }
        let outbox = cached(config).await?;
        // A one-off sync event (it has `lastChance`) fires when the browser sees the
        // network back: circuits opened while offline must not hold the flush back.
        let one_off = bool_prop(&event, "lastChance");
        let started = sys::now_ms()?;
        let mut stats = outbox.flush_now(one_off.is_some()).await?;
        // Records due soon (scheduled, not failing: a failed attempt's retry is the
        // browser's next sync) are flushed at their time inside this event: a sync is
        // the only wake-up a service worker gets with no page open.
        let ended = |stats: &view::FlushView| SyncRun {
            ran: stats.ran,
            retrying: stats.retrying,
            next_due_ms: stats.next_due_at,
        };
        while let Some(due) = wake::sync_wait(one_off.is_some(), ended(&stats), started) {
            let now = sys::now_ms()?;
            if due > now {
                Sleep::new(u32::try_from(due - now).unwrap_or(u32::MAX)).await;
                if sys::now_ms()? < due {
                    break; // no timer in this worker: no busy wait
                }
            }
            stats = outbox.flush_now(false).await?;
        }
        // The browser retries a one-off sync whose promise rejects: ask for that
        // while records wait (a retry, or a time further ahead than this event lasts).
        if wake::sync_again(one_off, ended(&stats)) {
            return Err(ApiError::new(
                ErrorCode::SyncIncomplete,
                format!(
                    "records still wait ({} for a retry); rejecting so the browser syncs again",
                    stats.retrying
                ),
            )
            .with_details(error::Details {
                stats: Some(stats),
                ..error::Details::default()
            }));
        }
        Ok(stats.to_js())
    })
}
