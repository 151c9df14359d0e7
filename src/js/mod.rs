//! The wasm-bindgen API: the only layer that knows about JavaScript.

use wasm_bindgen::prelude::*;

/// The library version, for JavaScript.
#[wasm_bindgen]
pub fn version() -> String {
    crate::VERSION.to_string()
}
