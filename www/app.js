// The nostr-outbox demo page. It uses the package exactly as an app would:
//   import init, { Outbox, registerBackgroundSync } from "nostr-outbox"
//   import "nostr-outbox/inspector"   (<nostr-outbox-inspector>: the queue's table)
import init, { Outbox, OutboxError, registerBackgroundSync, version } from "nostr-outbox";
import "nostr-outbox/inspector";
import { generateSecretKey, getPublicKey, finalizeEvent } from "nostr-tools/pure";

const $ = (sel) => document.querySelector(sel);
const NAME = "nostr-outbox-demo";

function log(text) {
  const li = document.createElement("li");
  li.textContent = `${new Date().toLocaleTimeString()}  ${text}`;
  $("#log").prepend(li);
}

// --- identity: NIP-07 when present, else a throwaway key kept for this tab ------------
function identity() {
  if (window.nostr && typeof window.nostr.signEvent === "function") {
    return { kind: "nip07", sign: (t) => window.nostr.signEvent(t), signer: window.nostr };
  }
  let hex = sessionStorage.getItem("demo-secret");
  if (!hex) {
    hex = Array.from(generateSecretKey(), (b) => b.toString(16).padStart(2, "0")).join("");
    sessionStorage.setItem("demo-secret", hex);
  }
  const sk = Uint8Array.from(hex.match(/../g), (h) => parseInt(h, 16));
  const sign = async (template) => finalizeEvent(template, sk);
  return { kind: "throwaway", pubkey: getPublicKey(sk), sign, signer: { signEvent: sign } };
}

// --- relays (served by www/server.mjs) -------------------------------------------------
let relays = [];
async function refreshRelays() {
  relays = await (await fetch("/api/relays")).json();
  const list = $("#relays");
  list.replaceChildren(...relays.map((r) => {
    const li = document.createElement("li");
    li.innerHTML = `<span class="dot ${r.running ? "on" : ""}"></span><code></code><span class="state"></span>`;
    li.querySelector("code").textContent = r.url;
    li.querySelector(".state").textContent = r.running ? "running" : "stopped";
    const b = document.createElement("button");
    b.type = "button";
    b.id = `relay-${r.name}`;
    b.textContent = r.running ? `Stop relay ${r.name}` : `Start relay ${r.name}`;
    b.onclick = () => toggleRelay(r);
    li.append(b);
    return li;
  }));
  const targets = $("#targets");
  if (!targets.children.length) {
    targets.replaceChildren(...relays.map((r) => {
      const l = document.createElement("label");
      l.innerHTML = `<input type="checkbox" checked> ${r.name}`;
      l.querySelector("input").value = r.url;
      return l;
    }));
  }
}

async function toggleRelay(r) {
  const action = r.running ? "stop" : "start";
  await fetch(`/api/relays/${r.name}/${action}`, { method: "POST" });
  log(`relay ${r.name} ${action === "stop" ? "stopped" : "started"}`);
  await refreshRelays();
  // Coming back online is what the `online` event tells a real app; here we say it.
  if (action === "start") outbox.flush().then(showStats, showError);
}

// --- the outbox ------------------------------------------------------------------------
let outbox;
const shortId = (id) => `${id.slice(0, 8)}…`;

function showStats(stats) {
  if (stats && stats.ran) log(`flush: ${stats.delivered} delivered, ${stats.retrying} retrying, ${stats.exhausted} exhausted`);
  else if (stats && stats.skipped) log(`flush skipped (${stats.skipped})`);
}

function showError(err) {
  const text = err instanceof OutboxError ? `${err.code}: ${err.message}` : String(err);
  $("#compose-error").textContent = text;
  log(`error ${text}`);
}

async function main() {
  await init();
  $("#version").textContent = `v${version()}`;
  const me = identity();
  $("#who").textContent = me.kind === "nip07"
    ? "Signing with your NIP-07 extension (window.nostr)."
    : `Throwaway key for this tab: ${me.pubkey}`;

  outbox = await Outbox.open({
    name: NAME,
    signer: me.signer,
    // Short delays so the demo shows retries within seconds.
    baseDelayMs: 2000,
    maxDelayMs: 10000,
    publishTimeoutMs: 4000,
    connectTimeoutMs: 2000,
    requestPersistence: true,
  });
  // The inspector reads the outbox on every `change` (this tab's, other tabs' and the
  // service worker's) and ticks the retry countdowns itself.
  $("#inspector").outbox = outbox;
  for (const type of ["enqueued", "attempt", "delivered", "retrying", "exhausted", "settled"]) {
    outbox.addEventListener(type, (e) => log(`${type} ${shortId(e.detail.id)} → ${e.detail.stage}`));
  }
  outbox.addEventListener("error", (e) => showError(e.detail));
  $("#auto").onchange = (e) => (e.target.checked ? outbox.startAutoFlush() : outbox.stopAutoFlush());
  outbox.startAutoFlush();

  // The service worker flushes on Background Sync (Chromium), even with the tab closed.
  if ("serviceWorker" in navigator) {
    try {
      await navigator.serviceWorker.register("/www/sw.js", { type: "module", scope: "/www/" });
      const reg = await navigator.serviceWorker.ready;
      const ok = await registerBackgroundSync(reg, "nostr-outbox-demo");
      $("#sw").textContent = ok ? "service worker: Background Sync registered" : "service worker: no Background Sync here (flushes on online/visibility/timer)";
    } catch (err) {
      $("#sw").textContent = `service worker unavailable: ${err.message}`;
    }
  }

  $("#compose").onsubmit = async (e) => {
    e.preventDefault();
    $("#compose-error").textContent = "";
    const targets = [...$("#targets").querySelectorAll("input:checked")].map((i) => i.value);
    const p = $("#policy").value;
    const policy = p === "atLeast2" ? { atLeast: 2 } : p;
    try {
      const event = await me.sign({
        kind: 1,
        created_at: Math.floor(Date.now() / 1000),
        tags: [["client", "nostr-outbox-demo"]],
        content: $("#content").value,
      });
      const { id, disposition } = await outbox.enqueue(event, targets, { policy });
      log(`enqueue ${shortId(id)}: ${disposition}`);
      $("#content").value = "";
      const reg = await navigator.serviceWorker?.getRegistration("/www/");
      if (reg) registerBackgroundSync(reg, "nostr-outbox-demo").catch(() => {});
    } catch (err) {
      showError(err);
    }
  };
  $("#flush").onclick = () => outbox.flush().then(showStats, showError);

  await refreshRelays();
  await $("#inspector").refresh();
  document.body.dataset.ready = "true";
}

main().catch((err) => {
  document.body.dataset.ready = "error";
  showError(err);
});
