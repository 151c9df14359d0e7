// The nostr-outbox demo server: serves the repository (the page in www/, the package in
// pkg/) on 127.0.0.1 and runs two local nostr-rs-relay instances that the page can
// switch off and on, to show queueing while a relay is down and flushing when it is back.
//
//   node www/server.mjs [--port 8080] [--relay-port 7447] [--relay2-port 7448]
//
// Endpoints besides static files:
//   GET  /api/relays               → [{ name, url, running }]
//   POST /api/relays/<name>/stop   → stops that relay (SIGKILL, like a crash)
//   POST /api/relays/<name>/start  → starts it again (same port, same database)
//   GET  /www/nostr-outbox.js      → re-exports the built package's entry (import map target)
import { createServer } from "node:http";
import { readFile, mkdtemp, writeFile, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir, homedir } from "node:os";
import { join, extname, resolve, dirname } from "node:path";
import { spawn } from "node:child_process";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const arg = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const PORT = arg("--port", 8080);
const RELAY_PORTS = [arg("--relay-port", 7447), arg("--relay2-port", 7448)];

const MIME = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".wasm": "application/wasm",
  ".json": "application/json",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json",
};

function relayBinary() {
  for (const c of [process.env.NOSTR_RS_RELAY, join(homedir(), ".cargo/bin/nostr-rs-relay")]) {
    if (c && existsSync(c)) return c;
  }
  return "nostr-rs-relay";
}

function portOpen(port) {
  return new Promise((done) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => { s.destroy(); done(true); });
    s.once("error", () => done(false));
  });
}

class Relay {
  constructor(name, port) {
    this.name = name;
    this.port = port;
    this.url = `ws://127.0.0.1:${port}`;
    this.child = null;
  }
  async init() {
    this.dir = await mkdtemp(join(tmpdir(), `outbox-demo-${this.name}-`));
    this.config = join(this.dir, "config.toml");
    await writeFile(this.config, [
      "[info]", `relay_url = "${this.url}/"`, `name = "demo relay ${this.name}"`,
      "[database]", `data_directory = "${this.dir}"`,
      "[network]", 'address = "127.0.0.1"', `port = ${this.port}`,
      "[limits]", "messages_per_sec = 100000", "",
    ].join("\n"));
  }
  async start() {
    if (this.child) return;
    this.child = spawn(relayBinary(), ["--config", this.config, "--db", this.dir], {
      stdio: "ignore",
      env: { ...process.env, RUST_LOG: "warn" },
    });
    this.child.once("exit", () => { this.child = null; });
    for (let i = 0; i < 150 && !(await portOpen(this.port)); i++) {
      if (!this.child) throw new Error(`relay ${this.name} exited at start (is port ${this.port} free?)`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  async stop() {
    if (!this.child) return;
    const c = this.child;
    const gone = new Promise((ok) => c.once("exit", ok));
    c.kill("SIGKILL");
    await gone;
  }
  json() {
    return { name: this.name, url: this.url, running: this.child !== null };
  }
}

const relays = [new Relay("A", RELAY_PORTS[0]), new Relay("B", RELAY_PORTS[1])];

async function packageEntry() {
  const pkg = JSON.parse(await readFile(join(ROOT, "pkg/package.json"), "utf8"));
  const dot = pkg.exports && pkg.exports["."];
  const entry = (dot && (dot.browser || dot.import || dot.default)) || pkg.module || pkg.main;
  return "/pkg/" + String(entry).replace(/^\.\//, "");
}

const server = createServer(async (req, res) => {
  const url = new URL(req.url, "http://localhost");
  const send = (status, body, type = "application/json") => {
    res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
    res.end(typeof body === "string" ? body : JSON.stringify(body));
  };
  try {
    if (url.pathname === "/api/relays") return send(200, relays.map((r) => r.json()));
    const m = url.pathname.match(/^\/api\/relays\/([A-Za-z0-9]+)\/(start|stop)$/);
    if (m && req.method === "POST") {
      const relay = relays.find((r) => r.name === m[1]);
      if (!relay) return send(404, { error: "no such relay" });
      await relay[m[2]]();
      return send(200, relay.json());
    }
    if (url.pathname === "/www/nostr-outbox.js") {
      const entry = await packageEntry();
      return send(200, `export * from "${entry}";\nexport { default } from "${entry}";\n`, MIME[".js"]);
    }
    if (url.pathname === "/" ) {
      res.writeHead(302, { location: "/www/" });
      return res.end();
    }
    const file = resolve(ROOT, "." + decodeURIComponent(url.pathname));
    if (!file.startsWith(ROOT)) return send(403, { error: "outside the repository" });
    const path = url.pathname.endsWith("/") ? join(file, "index.html") : file;
    const body = await readFile(path);
    res.writeHead(200, {
      "content-type": MIME[extname(path)] || "application/octet-stream",
      "cache-control": "no-store",
      "service-worker-allowed": "/",
    });
    res.end(body);
  } catch (err) {
    send(err.code === "ENOENT" ? 404 : 500, { error: String(err.message || err) });
  }
});

async function main() {
  if (!existsSync(join(ROOT, "pkg/package.json"))) {
    console.error("demo: pkg/ is missing; run `make build` (or `make demo`) first");
    process.exit(1);
  }
  for (const r of relays) {
    await r.init();
    await r.start();
  }
  await new Promise((ok) => server.listen(PORT, "127.0.0.1", ok));
  const { port } = server.address();
  console.log(`demo: relays ${relays.map((r) => r.url).join(", ")}`);
  console.log(`demo: open http://127.0.0.1:${port}/www/  (Ctrl-C to stop)`);
}

async function shutdown() {
  server.close();
  for (const r of relays) {
    await r.stop().catch(() => {});
    await rm(r.dir, { recursive: true, force: true }).catch(() => {});
  }
  process.exit(0);
}
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);
main().catch(async (err) => {
  console.error(`demo: ${err.message}`);
  await shutdown();
});
