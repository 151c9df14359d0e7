// esbuild, as the README's recipe: the .wasm as a file (`--loader:.wasm=file`) and its URL
// given to init() (main-esbuild.js). The CLI equivalent:
//   esbuild main-esbuild.js --bundle --format=esm --loader:.wasm=file --outdir=dist
// (index.html: <script type="module" src="./main-esbuild.js">)
export default {
  entryPoints: [new URL("./main-esbuild.js", import.meta.url).pathname],
  bundle: true,
  format: "esm",
  target: "es2022",
  loader: { ".wasm": "file" },
  logLevel: "error",
};
