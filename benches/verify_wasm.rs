//! The wasm half of the browser benchmark: exports event verification to JavaScript so
//! `scripts/vectors/bench-browser.mjs` can time it in headless Chromium next to
//! nostr-tools' `verifyEvent` on the same events, in the same page. Built with
//! `cargo build --release --example bench_verify_wasm --target wasm32-unknown-unknown`
//! and `wasm-bindgen --target web`. Natively it is an empty program.

#[cfg(target_arch = "wasm32")]
mod wasm {
    use std::cell::RefCell;

    use nostr_outbox::nostr::{verify_event_json, Event, SignatureCheck};
    use wasm_bindgen::prelude::*;

    thread_local! {
        static EVENTS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    }

    /// Parses, checks the id and verifies the signature of one event (JSON text).
    #[wasm_bindgen(js_name = verifyEventJson)]
    pub fn verify_event_json_js(text: &str) -> bool {
        verify_event_json(text)
    }

    /// Keeps a JSON array of event texts inside wasm; returns how many.
    #[wasm_bindgen(js_name = loadEvents)]
    pub fn load_events(json_array_of_strings: &str) -> usize {
        let events: Vec<String> = serde_json::from_str(json_array_of_strings).unwrap_or_default();
        let n = events.len();
        EVENTS.with(|e| *e.borrow_mut() = events);
        n
    }

    /// Verifies every loaded event `rounds` times without crossing into JavaScript;
    /// returns how many verifications succeeded.
    #[wasm_bindgen(js_name = verifyLoaded)]
    pub fn verify_loaded(rounds: u32) -> u32 {
        EVENTS.with(|e| {
            let events = e.borrow();
            let mut ok = 0;
            for _ in 0..rounds {
                for text in events.iter() {
                    ok += u32::from(verify_event_json(text));
                }
            }
            ok
        })
    }

    /// Parses and id-checks every loaded event, then checks their signatures as
    /// `enqueueMany` does (`SignatureCheck::first_bad`: BIP-340 batch verification);
    /// returns how many events passed (all, or none when one failed).
    #[wasm_bindgen(js_name = verifyLoadedBatch)]
    pub fn verify_loaded_batch() -> u32 {
        EVENTS.with(|e| {
            let events = e.borrow();
            let mut checks = Vec::with_capacity(events.len());
            for text in events.iter() {
                match Event::parse_json(text) {
                    Ok(event) if event.verify_id().is_ok() => checks.push(event.signature()),
                    _ => return 0,
                }
            }
            match SignatureCheck::first_bad(&checks) {
                None => checks.len() as u32,
                Some(_) => 0,
            }
        })
    }
}

fn main() {}
