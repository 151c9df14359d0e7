// Vite, webpack 5: they follow `new URL("nostr_outbox_bg.wasm", import.meta.url)`.
import init from "nostr-outbox";
import { start } from "./app.js";

start(init());
