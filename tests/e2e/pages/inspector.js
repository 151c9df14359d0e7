// The page of tests/e2e/inspector.test.mjs, the same in Chromium, Firefox and WebKit: the
// built package's <nostr-outbox-inspector> (pkg/inspector.js) on an IndexedDB outbox, and
// window functions the test calls (through playwright's evaluate or WebDriver's execute)
// to act as a user would (clicks, a <select>'s change) and to read what the element shows.
import init, { Outbox } from "/pkg/index.js";
import "/pkg/inspector.js";

let outbox = null;
const changeListeners = new Set();
const inspector = () => document.querySelector("nostr-outbox-inspector");
const shadow = () => inspector().shadowRoot;
const row = (id) => shadow().querySelector(`tr[part~="row"][data-id="${id}"]`);
const text = (node) => (node ? node.textContent.replace(/\s+/g, " ").trim() : null);

window.openOutbox = async (name) => {
  outbox = await Outbox.open({ name, autoFlush: false, baseDelayMs: 200, maxDelayMs: 1000, connectTimeoutMs: 1000, publishTimeoutMs: 3000, circuitFailures: 0 });
  // Count the `change` listeners, to see the element let go of the outbox when removed.
  const add = outbox.addEventListener.bind(outbox);
  const remove = outbox.removeEventListener.bind(outbox);
  outbox.addEventListener = (type, fn, o) => (type === "change" && changeListeners.add(fn), add(type, fn, o));
  outbox.removeEventListener = (type, fn, o) => (type === "change" && changeListeners.delete(fn), remove(type, fn, o));
  inspector().outbox = outbox;
  await inspector().refresh();
  return { defined: customElements.get("nostr-outbox-inspector") === inspector().constructor, listeners: changeListeners.size };
};

window.enqueue = async (event, relays, options) => (await outbox.enqueue(event, relays, options)).id;
window.flush = async () => {
  const r = await outbox.flush();
  return { delivered: r.delivered, retrying: r.retrying, exhausted: r.exhausted };
};
window.storedStage = async (id) => (await outbox.get(id))?.stage ?? null;
window.storedNext = async (id) => (await outbox.get(id))?.nextAttemptAt ?? null;

/** What the element shows: its rows, counts, error and empty text. */
window.view = () => {
  const root = shadow();
  return {
    rows: [...root.querySelectorAll('tr[part~="row"]')].map((tr) => ({
      id: tr.dataset.id,
      stage: tr.dataset.stage,
      lane: tr.dataset.lane,
      stageText: text(tr.querySelector('[part~="stage"]')),
      relays: [...tr.querySelectorAll('[part~="relay"]')].map((li) => ({ relay: li.dataset.relay, state: li.dataset.state, text: text(li) })),
      attempts: text(tr.querySelector('[part~="attempts"]')),
      next: text(tr.querySelector('[part~="next"]')),
      buttons: [...tr.querySelectorAll("button")].map((b) => text(b)),
    })),
    counts: Object.fromEntries([...root.querySelectorAll('[part~="count"]')].map((li) => [li.dataset.stage, Number(li.dataset.count)])),
    countsLive: root.querySelector('[part~="counts"]').parentElement.getAttribute("aria-live"),
    error: text(root.querySelector('[part~="error"]')) || null,
    empty: root.querySelector('[part~="empty"]').hidden ? null : text(root.querySelector('[part~="empty"]')),
    lanes: [...root.querySelector('[part~="lane-filter"]').options].map((o) => o.value),
  };
};

/** Clicks a row's button (its part: retry-button, cancel-button, evidence-button). */
window.click = (id, part) => {
  const b = row(id)?.querySelector(`button[part~="${part}"]`);
  if (!b) return false;
  b.click();
  return true;
};

/** Chooses an option of a filter as a user does: the value, then a `change` event. */
window.choose = (filter, value) => {
  const select = shadow().querySelector(`select[part~="${filter}"]`);
  select.value = value;
  select.dispatchEvent(new Event("change", { bubbles: true }));
  return { attribute: inspector().getAttribute(filter === "stage-filter" ? "stage" : "lane") };
};

/** Sets the element's `limit`; presses a pager button (first-page, next-page) when named. */
window.paging = async (limit, part) => {
  if (limit !== null) inspector().limit = limit;
  if (part) {
    const b = shadow().querySelector(`button[part~="${part}"]`);
    if (b.hidden) return false;
    b.click();
  }
  return true;
};
window.pager = () => Object.fromEntries(["first-page", "next-page"].map((p) => [p, !shadow().querySelector(`button[part~="${p}"]`).hidden]));

/** A row's evidence as shown (after its Evidence button was clicked). */
window.evidence = (id) => {
  const tr = row(id);
  const toggle = tr.querySelector('button[part~="evidence-button"]');
  const panel = shadow().getElementById(toggle.getAttribute("aria-controls"));
  return {
    expanded: toggle.getAttribute("aria-expanded"),
    hidden: panel.hidden,
    follows: tr.nextElementSibling === panel,
    answers: [...panel.querySelectorAll("tbody tr")].map((r) => ({ outcome: r.dataset.outcome, cells: [...r.cells].map(text) })),
  };
};

/** axe-core on the element (its shadow tree included); the violations, shortened. */
window.axeCheck = async () => {
  const result = await axe.run(inspector(), { resultTypes: ["violations"] });
  return {
    version: axe.version,
    passes: result.passes.length,
    violations: result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(" ") + " " + n.failureSummary) })),
  };
};

/** Removes the element; how many `change` listeners are left on the outbox. */
window.removeInspector = async () => {
  const before = changeListeners.size;
  const el = inspector();
  el.remove();
  await new Promise((ok) => setTimeout(ok, 50));
  const after = changeListeners.size;
  document.querySelector("main").append(el);
  await el.refresh();
  return { before, after, again: changeListeners.size };
};

window.closeOutbox = () => outbox.close();

const until = async (ok) => {
  for (let i = 0; i < 400 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
};
/** Choose `file` in the element's Import input, as a user would. */
const choose = (input, file) => {
  const dt = new DataTransfer();
  dt.items.add(file);
  input.files = dt.files;
  input.dispatchEvent(new Event("change", { bubbles: true }));
};

/**
 * Export with the button (the `outbox-export` event, cancelled: no download), then the
 * file chosen in the Import input of the element showing a new outbox `name`; then a bad
 * file there. The element shows the first outbox again after.
 */
window.transfer = async (name) => {
  const root = shadow();
  const exported = await new Promise((resolve) => {
    inspector().addEventListener(
      "outbox-export",
      (e) => {
        e.preventDefault();
        e.detail.blob.text().then((text) => resolve({ text, filename: e.detail.filename }));
      },
      { once: true },
    );
    root.querySelector('button[part~="export-button"]').click();
  });
  const status = root.querySelector('[part~="transfer-status"]');
  const exportStatus = text(status);
  const original = outbox;
  const target = await Outbox.open({ name, autoFlush: false });
  inspector().outbox = target;
  const input = root.querySelector('input[part~="import-input"]');
  choose(input, new File([exported.text], exported.filename, { type: "application/x-ndjson" }));
  await until(() => /^Imported/.test(status.textContent));
  const imported = text(status);
  await inspector().refresh();
  const shown = root.querySelectorAll('tr[part~="row"]').length;
  const stored = (await target.list({ limit: 100 })).map((r) => r.id);
  choose(input, new File(["not an export\n"], "bad.ndjson"));
  const error = root.querySelector('[part~="error"]');
  await until(() => error.textContent !== "");
  const refused = text(error);
  inspector().outbox = original;
  await inspector().refresh();
  await target.close();
  return { header: exported.text.split("\n")[0], filename: exported.filename, exportStatus, imported, shown, stored, refused };
};

await init();
document.body.dataset.ready = "true";
