// `import wasmUrl from "nostr-outbox/nostr_outbox_bg.wasm"` with a bundler that turns a
// .wasm import into its URL (esbuild `--loader:.wasm=file`, Vite `?url`): the URL string,
// to pass to `init({ module_or_path: wasmUrl })`.
declare const wasmUrl: string;
export default wasmUrl;
