//! Publishing events to relays: the `Transport` trait and, on wasm32, the browser
//! WebSocket relay transport.
