//! The store conformance suite as a wasm module for the edge tier: `tests/edge/` loads
//! it in Deno, Bun and workerd and runs every case on the store over a real storage
//! adapter there (Deno KV, bun:sqlite, a Durable Object's storage), one fresh adapter
//! per case. Built with `cargo build --example conformance_wasm --target
//! wasm32-unknown-unknown --all-features` and `wasm-bindgen --target web`
//! (tests/edge/run.sh). A failed case panics: its message is printed (console.error)
//! and kept for `lastPanic()`, and the trap ends the run (a failed runner). Natively it
//! is an empty program.

#[cfg(target_arch = "wasm32")]
mod wasm {
    use std::cell::RefCell;

    use nostr_outbox::js::kv::JsKv;
    use nostr_outbox::store::conformance::{run_case, CASES};
    use nostr_outbox::store::kv::KvStore;
    use wasm_bindgen::prelude::*;

    thread_local! {
        static PANIC: RefCell<String> = const { RefCell::new(String::new()) };
    }

    /// The name of every case, in order.
    #[wasm_bindgen]
    pub fn cases() -> Vec<String> {
        std::panic::set_hook(Box::new(|info| {
            let message = info.to_string();
            // A trap in a future is thrown from the executor's task, not through the
            // case's promise: the message is printed before the runtime reports it.
            web_sys::console::error_1(&JsValue::from_str(&format!("panicked: {message}")));
            PANIC.with(|p| *p.borrow_mut() = message);
        }));
        CASES.iter().map(|c| c.to_string()).collect()
    }

    /// The message of the last panic (a failed case), or empty.
    #[wasm_bindgen(js_name = lastPanic)]
    pub fn last_panic() -> String {
        PANIC.with(|p| p.borrow().clone())
    }

    /// Runs case `name` on the store over `adapter` (a fresh one: the case expects an
    /// empty store). Rejects when the adapter is refused or the case is unknown; a
    /// failed case traps.
    #[wasm_bindgen(js_name = runCase)]
    pub async fn run_case_js(name: String, adapter: JsValue) -> Result<(), JsValue> {
        let kv = JsKv::new(adapter).map_err(|e| e.into_js())?;
        let store = KvStore::new(kv);
        if run_case(&name, &store).await {
            Ok(())
        } else {
            Err(JsValue::from_str(&format!("no conformance case `{name}`")))
        }
    }
}

fn main() {}
