// esbuild does not follow `new URL(…, import.meta.url)`: import the .wasm's URL
// (`--loader:.wasm=file`) and give it to init.
import init from "nostr-outbox";
import wasmUrl from "nostr-outbox/nostr_outbox_bg.wasm";
import { start } from "./app.js";

start(init({ module_or_path: wasmUrl }));
