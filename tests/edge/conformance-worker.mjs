// A module Worker for conformance-workerd.mjs: a Durable Object whose fetch runs the store
// conformance suite (the wasm module of tests/edge/conformance_wasm.rs, imported as a
// CompiledWasm module) on js/durable-object.js over its own storage, one prefix per case.
import init, * as mod from "../../target/conformance-wasm/conformance_wasm.js";
import wasm from "../../target/conformance-wasm/conformance_wasm_bg.wasm";
import { runConformance } from "./conformance.mjs";
import { durableObjectStorage } from "../../js/durable-object.js";

export class ConformanceObject {
  constructor(ctx) {
    this.ctx = ctx;
  }

  async fetch(request) {
    await init({ module_or_path: wasm });
    const label = new URL(request.url).searchParams.get("label") ?? "workerd";
    const lines = [];
    const result = await runConformance(mod, (i) => durableObjectStorage(this.ctx.storage, { prefix: `case-${i}/` }), (l) => lines.push(l), label);
    return new Response(JSON.stringify({ ...result, lines }), { headers: { "content-type": "application/json" } });
  }
}

// Miniflare keys a namespace by class: one class per backend.
export class SqlConformanceObject extends ConformanceObject {}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const binding = url.searchParams.get("object") === "sql" ? env.SQL_OBJECT : env.KV_OBJECT;
    return binding.get(binding.idFromName("conformance")).fetch(request);
  },
};
