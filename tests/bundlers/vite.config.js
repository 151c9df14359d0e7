// Vite: no nostr-outbox specific config (it follows `new URL(…, import.meta.url)` and emits
// the .wasm as an asset). The test passes `root` and `build.outDir`.
export default {
  build: { target: "es2022" },
};
