// webpack 5: no loader needed for the .wasm (`new URL(…, import.meta.url)` makes it an
// asset). `performance.assetFilter` silences the 244 KiB hint for it (the .wasm is loaded
// once, in parallel with the app, and cached).
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import HtmlLike from "./webpack-html.js";

const here = dirname(fileURLToPath(import.meta.url));
export default {
  mode: "production",
  entry: join(here, "main.js"),
  output: { path: join(here, "dist"), filename: "main.js", clean: true },
  performance: { assetFilter: (file) => !file.endsWith(".wasm") },
  plugins: [new HtmlLike()],
};
