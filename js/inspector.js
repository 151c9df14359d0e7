// nostr-outbox/inspector: <nostr-outbox-inspector>, a custom element that shows an outbox's
// records live (stage, each relay's latest outcome, attempts, next try), a record's evidence
// on demand, Retry and Cancel where the stage allows them, Send now for a record waiting
// for its time (a scheduled post, an event dated ahead, a retry's backoff: `reschedule(id,
// now)`) (a refusal is shown, never swallowed), filters by stage and lane, the counts per stage, and Export / Import of the
// queue as a file (`outbox.export()` / `outbox.import()`). No framework: it reads
// the outbox through nostr-outbox/store (`status`, `list`, `change` events, so other tabs'
// and workers' changes show too) and calls `retry`/`cancel`/`reschedule` on it.
//
//   import "nostr-outbox/inspector";            // defines <nostr-outbox-inspector>
//   document.querySelector("nostr-outbox-inspector").outbox = outbox;
//
// Real <table>, <button> and <select> elements with labels, counts in a polite live region,
// errors in an alert, visible focus; rows are updated in place so focus stays where it is.
// Themed with CSS custom properties (--outbox-inspector-*) and ::part() names, listed in
// docs/API.md. Importing it defines the element (once); in a runtime without the DOM it
// defines nothing.
import { createOutboxStore } from "./store.js";
import { STAGES, TERMINAL } from "./stages.js";

export { STAGES };
/** Stages `cancel` accepts (every stage that is not terminal). */
const CANCELLABLE = new Set(STAGES.filter((s) => !TERMINAL.has(s)));
/** Stages whose record may wait for a time (`reschedule` moves it). */
const WAITING = new Set(["draft", "pending", "retryable", "delivering"]);
/** True when `r` waits for a time more than a second away: Send now is offered. */
const waitsAt = (r, now) => WAITING.has(r.stage) && !r.lease && r.nextAttemptAt != null && r.nextAttemptAt > now + 1000;
const COLUMNS = ["Event", "Stage", "Relays", "Attempts", "Next try", "Actions"];

const CSS = `
:host { display: block; font: var(--outbox-inspector-font, inherit); color: var(--outbox-inspector-color, #202124);
  background: var(--outbox-inspector-background, transparent); }
:host([hidden]) { display: none; }
* { box-sizing: border-box; }
[part~="toolbar"] { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; margin: 0 0 .5rem; }
label { display: inline-flex; gap: .35rem; align-items: center; }
select, button { font: inherit; color: inherit; }
button { padding: .2rem .6rem; border-radius: var(--outbox-inspector-radius, 4px); cursor: pointer;
  border: 1px solid var(--outbox-inspector-border-color, #80868b); background: var(--outbox-inspector-button-background, #f8f9fa); }
button[aria-disabled="true"] { cursor: progress; opacity: .7; }
select:focus-visible, button:focus-visible { outline: 2px solid var(--outbox-inspector-focus-color, #1a73e8); outline-offset: 2px; }
[part~="counts"] { list-style: none; display: flex; flex-wrap: wrap; gap: .25rem 1rem; padding: 0; margin: 0 0 .5rem; }
[part~="count"][data-count="0"] { color: var(--outbox-inspector-muted-color, #5f6368); }
[part~="error"]:empty { display: none; }
[part~="error"] { color: var(--outbox-inspector-bad-color, #c5221f); margin: 0 0 .5rem; }
table { width: 100%; border-collapse: collapse; }
caption { text-align: left; font-weight: 600; padding: 0 0 .25rem; }
th, td { text-align: left; vertical-align: top; padding: .3rem .4rem; border-bottom: 1px solid var(--outbox-inspector-border-color, #dadce0); }
thead th { background: var(--outbox-inspector-header-background, transparent); }
th[scope="row"] { font-weight: normal; }
code { font-family: var(--outbox-inspector-mono-font, ui-monospace, monospace); font-size: .9em; }
ul.relays, ol { margin: 0; padding: 0; list-style: none; }
[data-stage="satisfied"] > [part~="stage"], [data-state="accepted"] { color: var(--outbox-inspector-ok-color, #137333); }
[data-stage="pending"] > [part~="stage"], [data-stage="leased"] > [part~="stage"], [data-stage="retryable"] > [part~="stage"],
[data-stage="delivering"] > [part~="stage"], [data-state="open"] { color: var(--outbox-inspector-warn-color, #a05600); }
[data-stage="exhausted"] > [part~="stage"], [data-stage="cancelled"] > [part~="stage"], [data-state="rejected"] { color: var(--outbox-inspector-bad-color, #c5221f); }
[part~="stage"] { font-weight: 600; }
[part~="actions"] { white-space: nowrap; }
[part~="actions"] button + button { margin-left: .3rem; }
[part~="evidence"] dl { display: grid; grid-template-columns: max-content 1fr; gap: .1rem .8rem; margin: 0 0 .4rem; }
[part~="evidence"] dd { margin: 0; }
[part~="evidence"] table { font-size: .9em; }
[part~="pager"] { margin: .5rem 0 0; }
[part~="empty"] { color: var(--outbox-inspector-muted-color, #5f6368); }
`;

const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? "" : String(v));
  node.append(...children);
  return node;
};
const short = (id) => `${String(id).slice(0, 8)}…`;
const time = (ms) => new Date(ms).toLocaleString();

/** "due", "in 12 s", "in 4 min", "in 2 h" (and the absolute time as a title). */
function untilText(at, now) {
  const s = Math.round((at - now) / 1000);
  if (s <= 0) return "due";
  if (s < 120) return `in ${s} s`;
  if (s < 7200) return `in ${Math.round(s / 60)} min`;
  return `in ${Math.round(s / 3600)} h`;
}

function outcomeText(latest) {
  if (!latest) return "not tried yet";
  const why = latest.rejectReason ? ` (${latest.rejectReason})` : "";
  return `${latest.outcome}${why}${latest.message ? `: ${latest.message}` : ""}`;
}

function errorText(error) {
  if (error && typeof error === "object" && "code" in error) return `${error.code}: ${error.message}`;
  return String(error && error.message ? error.message : error);
}

const Base = globalThis.HTMLElement ?? class {};

export class OutboxInspector extends Base {
  static get observedAttributes() {
    return ["stage", "lane", "limit"];
  }

  #outbox = null;
  #store = null;
  #unsubscribe = null;
  #lanes = [];
  #seenLanes = new Set(["default"]);
  #rows = new Map(); // id → { tr, evidenceRow, record, open }
  #timer = null;
  #ui = null;
  #snapshot = null;
  #readError = false;
  #after = null; // the page's cursor: the last id of the page before, or null for the first

  constructor() {
    super();
    const root = this.attachShadow({ mode: "open" });
    const style = el("style");
    style.textContent = CSS;
    const stageSelect = el("select", { part: "filter stage-filter" }, el("option", { value: "" }, "all stages"), ...STAGES.map((s) => el("option", { value: s }, s)));
    const laneSelect = el("select", { part: "filter lane-filter" }, el("option", { value: "" }, "all lanes"));
    // Export (a file of every record, `outbox.export()`) and import (`outbox.import(file)`).
    const exportButton = el("button", { type: "button", part: "button export-button" }, "Export");
    const importInput = el("input", { type: "file", part: "import-input", accept: ".ndjson,.jsonl,application/x-ndjson,text/plain" });
    const toolbar = el(
      "div",
      { part: "toolbar" },
      el("label", { part: "label" }, "Stage", stageSelect),
      el("label", { part: "label" }, "Lane", laneSelect),
      exportButton,
      el("label", { part: "label" }, "Import", importInput),
    );
    const transferStatus = el("p", { part: "transfer-status", role: "status" });
    const counts = el("ul", { part: "counts", "aria-label": "Records per stage" });
    const countsRegion = el("div", { role: "status", "aria-live": "polite" }, counts);
    const error = el("p", { part: "error", role: "alert" });
    const tbody = el("tbody");
    const caption = el("caption", { part: "caption" }, "Outbox records");
    const table = el("table", { part: "table" }, caption, el("thead", { part: "head" }, el("tr", {}, ...COLUMNS.map((c) => el("th", { scope: "col" }, c)))), tbody);
    const empty = el("p", { part: "empty" }, "No outbox.");
    // Pages of `limit` records in creation order (`list`'s `after` cursor).
    const firstPage = el("button", { type: "button", part: "button page-button first-page", hidden: true }, "First page");
    const nextPage = el("button", { type: "button", part: "button page-button next-page", hidden: true }, "Next page");
    const pager = el("div", { part: "pager" }, firstPage, " ", nextPage);
    root.append(style, el("div", { part: "root" }, toolbar, transferStatus, countsRegion, error, table, empty, pager));
    exportButton.addEventListener("click", () => this.#export(exportButton));
    importInput.addEventListener("change", () => this.#import(importInput));
    firstPage.addEventListener("click", () => this.#page(null, nextPage));
    nextPage.addEventListener("click", () => {
      const records = this.#snapshot?.records ?? [];
      if (records.length) this.#page(records[records.length - 1].id, records.length >= this.limit ? nextPage : firstPage);
    });
    stageSelect.addEventListener("change", () => (this.stage = stageSelect.value));
    laneSelect.addEventListener("change", () => (this.lane = laneSelect.value));
    this.#ui = { stageSelect, laneSelect, counts, error, tbody, table, empty, firstPage, nextPage, transferStatus };
  }

  /** The Outbox shown (or `null`). Setting it reads the new outbox at once when connected. */
  get outbox() {
    return this.#outbox;
  }
  set outbox(value) {
    if (value === this.#outbox) return;
    if (value != null && (typeof value.list !== "function" || typeof value.addEventListener !== "function")) {
      throw new TypeError("nostr-outbox-inspector: outbox must be an Outbox");
    }
    this.#outbox = value ?? null;
    this.#after = null;
    this.#clearRows();
    this.#ui.error.textContent = "";
    this.#resubscribe();
  }

  /** The stage filter ("" or null: every stage). Reflects the `stage` attribute. */
  get stage() {
    return this.getAttribute("stage") ?? "";
  }
  set stage(value) {
    if (value) this.setAttribute("stage", value);
    else this.removeAttribute("stage");
  }

  /** The lane filter ("" or null: every lane; also scopes the counts). Reflects the `lane` attribute. */
  get lane() {
    return this.getAttribute("lane") ?? "";
  }
  set lane(value) {
    if (value) this.setAttribute("lane", value);
    else this.removeAttribute("lane");
  }

  /** Records per page (`list`'s `limit`, creation order), 100 by default; the pager moves with `after`. */
  get limit() {
    const n = Number(this.getAttribute("limit"));
    return Number.isInteger(n) && n > 0 ? n : 100;
  }
  set limit(value) {
    if (value == null) this.removeAttribute("limit");
    else this.setAttribute("limit", String(value));
  }

  /** Lanes offered by the lane filter besides those seen in records (read once per set). */
  get lanes() {
    return [...this.#lanes];
  }
  set lanes(value) {
    this.#lanes = Array.isArray(value) ? value.map(String) : [];
    this.#renderLanes();
  }

  /** The store's snapshot shown last (`{ status, records, loading, error }`), or `null`. */
  get snapshot() {
    return this.#snapshot;
  }

  attributeChangedCallback(name, oldValue, newValue) {
    if (oldValue === newValue) return;
    if (name === "stage") this.#ui.stageSelect.value = newValue ?? "";
    if (name === "lane") this.#renderLanes();
    this.#after = null;
    this.#clearRows();
    this.#resubscribe();
  }

  connectedCallback() {
    // Properties set before the element was defined (an own property on the instance).
    for (const p of ["lanes", "limit", "lane", "stage", "outbox"]) {
      if (Object.prototype.hasOwnProperty.call(this, p)) {
        const value = this[p];
        delete this[p];
        this[p] = value;
      }
    }
    this.#resubscribe();
    if (this.#timer === null) this.#timer = setInterval(() => this.#tick(), 1000);
  }

  disconnectedCallback() {
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#store = null;
    clearInterval(this.#timer);
    this.#timer = null;
  }

  /** Reads the outbox again now (after `purge`, which fires no event). */
  refresh() {
    return this.#store ? this.#store.refresh() : Promise.resolve();
  }

  #resubscribe() {
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#store = null;
    this.#snapshot = null;
    if (!this.#outbox || !this.isConnected) {
      this.#render(null);
      return;
    }
    const query = { limit: this.limit };
    if (this.stage) query.stage = this.stage;
    if (this.lane) query.lane = this.lane;
    if (this.#after) query.after = this.#after;
    const store = createOutboxStore(this.#outbox, query);
    this.#store = store;
    this.#unsubscribe = store.subscribe((s) => {
      if (this.#store === store) this.#render(s);
    });
    this.#render(store.getSnapshot());
  }

  /** Shows the page after `after` (null: the first); focus goes to `focus` once the buttons are placed. */
  #page(after, focus) {
    this.#after = after;
    this.#clearRows();
    this.#resubscribe();
    this.#store?.refresh().then(() => {
      const target = focus.hidden ? (this.#ui.firstPage.hidden ? this.#ui.stageSelect : this.#ui.firstPage) : focus;
      target.focus();
    });
  }

  #clearRows() {
    this.#rows.clear();
    this.#ui.tbody.replaceChildren();
  }

  #renderLanes() {
    const select = this.#ui.laneSelect;
    const lanes = [...new Set([...this.#lanes, ...this.#seenLanes, ...(this.lane ? [this.lane] : [])])].sort();
    const have = [...select.options].slice(1).map((o) => o.value);
    if (have.join("\n") !== lanes.join("\n")) {
      select.replaceChildren(el("option", { value: "" }, "all lanes"), ...lanes.map((l) => el("option", { value: l }, l)));
    }
    select.value = this.lane;
  }

  #render(snapshot) {
    this.#snapshot = snapshot;
    const ui = this.#ui;
    ui.stageSelect.value = this.stage;
    if (!snapshot) {
      ui.counts.replaceChildren();
      ui.table.removeAttribute("aria-busy");
      ui.empty.textContent = this.#outbox ? "Not shown: the element is not in a document." : "No outbox.";
      ui.empty.hidden = false;
      ui.firstPage.hidden = ui.nextPage.hidden = true;
      return;
    }
    if (snapshot.loading) {
      ui.table.setAttribute("aria-busy", "true");
      ui.empty.textContent = "Loading…";
      ui.empty.hidden = this.#rows.size > 0;
      return;
    }
    ui.table.removeAttribute("aria-busy");
    if (snapshot.error) this.#showError(`Reading the outbox failed: ${errorText(snapshot.error)}`, true);
    else if (this.#readError) this.#showError("");
    this.#renderCounts(snapshot.status);
    for (const r of snapshot.records) this.#seenLanes.add(r.lane);
    this.#renderLanes();
    this.#renderRows(snapshot.records);
    ui.empty.textContent = this.#after ? "No more records." : this.stage || this.lane ? "No records match the filters." : "No records.";
    ui.empty.hidden = snapshot.records.length > 0;
    ui.firstPage.hidden = this.#after === null;
    ui.nextPage.hidden = snapshot.records.length < this.limit;
  }

  #renderCounts(status) {
    if (!status) return;
    const items = [...STAGES, ...(status.corrupt ? ["corrupt"] : []), "total"];
    const list = this.#ui.counts;
    if (list.children.length !== items.length || [...list.children].some((li, i) => li.dataset.stage !== items[i])) {
      list.replaceChildren(...items.map((k) => el("li", { part: "count", "data-stage": k }, el("span", { part: "count-label" }, k), " ", el("span", { part: "count-value" }))));
    }
    for (const li of list.children) {
      const n = String(status[li.dataset.stage] ?? 0);
      if (li.dataset.count !== n) {
        li.dataset.count = n;
        li.lastChild.textContent = n;
      }
    }
  }

  #renderRows(records) {
    const tbody = this.#ui.tbody;
    const ids = new Set(records.map((r) => r.id));
    for (const [id, row] of this.#rows) {
      if (ids.has(id)) continue;
      row.tr.remove();
      row.evidenceRow.remove();
      this.#rows.delete(id);
    }
    let at = tbody.firstChild;
    for (const record of records) {
      let row = this.#rows.get(record.id);
      if (!row) {
        row = this.#newRow(record);
        this.#rows.set(record.id, row);
      } else if (row.record !== record) {
        row.record = record;
        this.#fillRow(row);
      }
      // Move nodes only when out of place: a moved node loses focus.
      if (at !== row.tr) tbody.insertBefore(row.tr, at);
      if (row.tr.nextSibling !== row.evidenceRow) tbody.insertBefore(row.evidenceRow, row.tr.nextSibling);
      at = row.evidenceRow.nextSibling;
    }
  }

  #newRow(record) {
    const evidenceId = `evidence-${record.id}`;
    const toggle = el("button", { type: "button", part: "button evidence-button", "aria-expanded": "false", "aria-controls": evidenceId });
    const retry = el("button", { type: "button", part: "button retry-button" }, "Retry");
    const cancel = el("button", { type: "button", part: "button cancel-button" }, "Cancel");
    const sendNow = el("button", { type: "button", part: "button send-now-button" }, "Send now");
    const cells = {
      event: el("th", { scope: "row", part: "cell event" }),
      stage: el("td", { part: "cell stage" }),
      relays: el("td", { part: "cell relays" }),
      attempts: el("td", { part: "cell attempts" }),
      next: el("td", { part: "cell next" }),
      actions: el("td", { part: "cell actions" }, toggle),
    };
    const tr = el("tr", { part: "row", "data-id": record.id }, ...Object.values(cells));
    const evidenceCell = el("td", { colspan: COLUMNS.length, part: "evidence" });
    const evidenceRow = el("tr", { id: evidenceId, part: "evidence-row", hidden: true }, evidenceCell);
    const row = { tr, evidenceRow, evidenceCell, cells, toggle, retry, cancel, sendNow, record, open: false };
    toggle.addEventListener("click", () => {
      row.open = !row.open;
      this.#fillEvidence(row);
    });
    retry.addEventListener("click", () => this.#act(row, "Retry", retry, (id) => this.#outbox.retry(id)));
    cancel.addEventListener("click", () => this.#act(row, "Cancel", cancel, (id) => this.#outbox.cancel(id)));
    sendNow.addEventListener("click", () => this.#act(row, "Send now", sendNow, (id) => this.#outbox.reschedule(id, Date.now())));
    this.#fillRow(row);
    return row;
  }

  #fillRow(row) {
    const r = row.record;
    const { cells } = row;
    row.tr.dataset.stage = r.stage;
    row.tr.dataset.lane = r.lane;
    const content = typeof r.event?.content === "string" ? r.event.content : "";
    cells.event.replaceChildren(
      el("code", { title: r.id }, short(r.id)),
      ` kind ${r.event?.kind}`,
      r.lane !== "default" ? ` · lane ${r.lane}` : "",
      r.group ? ` · ${r.group.index + 1} of ${r.group.size} in group ${r.group.id}` : "",
      r.route?.length ? ` · route ${r.route.join(", ")}${r.routed ? "" : " (to resolve)"}` : "",
      content ? el("div", { part: "content" }, content.length > 80 ? `${content.slice(0, 80)}…` : content) : "",
    );
    cells.stage.textContent = r.reason && r.reason !== r.stage ? `${r.stage} (${r.reason})` : r.stage;
    cells.relays.replaceChildren(
      el("ul", { class: "relays" }, ...r.targets.map((t) => el("li", { part: "relay", "data-relay": t.relay, "data-state": t.state }, el("code", {}, t.relay), " ", outcomeText(t.latest)))),
    );
    cells.attempts.textContent = `${r.attempts} of ${r.attemptLimit ?? r.maxAttempts}`;
    this.#fillNext(row, Date.now());
    const label = `${short(r.id)} kind ${r.event?.kind}`;
    row.toggle.textContent = `Evidence (${r.evidence.length})`;
    row.toggle.setAttribute("aria-label", `Evidence (${r.evidence.length}) of ${label}`);
    row.retry.setAttribute("aria-label", `Retry ${label}`);
    row.cancel.setAttribute("aria-label", `Cancel ${label}`);
    row.sendNow.setAttribute("aria-label", `Send ${label} now`);
    this.#placeAction(row, row.retry, r.stage === "exhausted");
    this.#placeAction(row, row.cancel, CANCELLABLE.has(r.stage));
    this.#placeAction(row, row.sendNow, waitsAt(r, Date.now()), row.cancel);
    if (row.open) this.#fillEvidence(row);
  }

  /**
   * Shows or removes an action button (before `before` when that is shown); a focused button
   * that goes hands focus to the row's Evidence button.
   */
  #placeAction(row, button, wanted, before = null) {
    if (wanted) {
      const next = before && before.parentNode === row.cells.actions ? before : null;
      if (button.parentNode !== row.cells.actions) row.cells.actions.insertBefore(button, next);
    } else if (button.parentNode) {
      const focused = this.shadowRoot.activeElement === button;
      button.remove();
      if (focused) row.toggle.focus();
    }
  }

  #fillNext(row, now) {
    const at = row.record.nextAttemptAt;
    if (at == null || row.record.lease) {
      row.cells.next.textContent = row.record.lease ? "in flight" : "—";
      return;
    }
    const text = untilText(at, now);
    const t = row.cells.next.firstChild;
    if (t && t.nodeName === "TIME" && t.dateTime === new Date(at).toISOString()) {
      if (t.textContent !== text) t.textContent = text;
    } else {
      row.cells.next.replaceChildren(el("time", { datetime: new Date(at).toISOString(), title: time(at) }, text));
    }
  }

  #tick() {
    const now = Date.now();
    for (const row of this.#rows.values()) {
      if (row.record.nextAttemptAt == null) continue;
      this.#fillNext(row, now);
      this.#placeAction(row, row.sendNow, waitsAt(row.record, now), row.cancel);
    }
  }

  #fillEvidence(row) {
    row.toggle.setAttribute("aria-expanded", String(row.open));
    row.evidenceRow.hidden = !row.open;
    if (!row.open) {
      row.evidenceCell.replaceChildren();
      return;
    }
    const r = row.record;
    const facts = [
      ["id", el("code", {}, r.id)],
      ["lane", `${r.lane} (priority ${r.priority})`],
      ["policy", typeof r.policy === "string" ? r.policy : JSON.stringify(r.policy)],
      ["satisfaction", r.satisfaction],
      ["reason", r.reason ?? "—"],
      ["last error", r.lastError ?? "—"],
      ["created", time(r.createdAt)],
      ["updated", time(r.updatedAt)],
      ["revision", String(r.revision)],
    ];
    const dl = el("dl", {}, ...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
    const evidence = r.evidence.length
      ? el(
          "table",
          { part: "evidence-table" },
          el("caption", {}, `Every answer for ${short(r.id)}, oldest first`),
          el("thead", {}, el("tr", {}, ...["Attempt", "Relay", "Outcome", "Message", "At"].map((c) => el("th", { scope: "col" }, c)))),
          el(
            "tbody",
            {},
            ...r.evidence.map((e) =>
              el(
                "tr",
                { "data-outcome": e.outcome },
                el("td", {}, String(e.attempt) + (e.tries > 1 ? ` (${e.tries} tries)` : "")),
                el("td", {}, el("code", {}, e.relay)),
                el("td", {}, e.rejectReason ? `${e.outcome} (${e.rejectReason})` : e.outcome),
                el("td", {}, e.message || "—"),
                el("td", {}, time(e.at)),
              ),
            ),
          ),
        )
      : el("p", {}, "No answer yet.");
    row.evidenceCell.replaceChildren(dl, evidence);
  }

  async #act(row, label, button, run) {
    const id = row.record.id;
    // aria-disabled, not disabled: a disabled button would drop the keyboard focus.
    if (button.getAttribute("aria-disabled") === "true") return;
    button.setAttribute("aria-disabled", "true");
    try {
      await run(id);
      this.#showError("");
      await this.#store?.refresh();
    } catch (error) {
      this.#showError(`${label} of ${short(id)} failed: ${errorText(error)}`);
    } finally {
      button.removeAttribute("aria-disabled");
    }
  }

  /**
   * Export: the records as an NDJSON file. Fires `outbox-export` (cancelable, `detail`:
   * `{ blob, filename }`); unless it is cancelled (an app that stores the file elsewhere),
   * the browser downloads it.
   */
  async #export(button) {
    if (!this.#outbox || button.getAttribute("aria-disabled") === "true") return;
    button.setAttribute("aria-disabled", "true");
    try {
      const blob = await new Response(this.#outbox.export()).blob();
      const day = new Date().toISOString().slice(0, 10);
      const filename = `${this.#outbox.name ?? "nostr-outbox"}-${day}.ndjson`;
      const detail = { blob, filename };
      const lines = (await blob.text()).split("\n").length - 2;
      this.#ui.transferStatus.textContent = `Exported ${lines} record${lines === 1 ? "" : "s"}.`;
      if (this.dispatchEvent(new CustomEvent("outbox-export", { detail, cancelable: true }))) {
        const a = el("a", { href: URL.createObjectURL(blob), download: filename });
        a.click();
        setTimeout(() => URL.revokeObjectURL(a.href), 60_000);
      }
      this.#showError("");
    } catch (error) {
      this.#showError(`Export failed: ${errorText(error)}`);
    } finally {
      button.removeAttribute("aria-disabled");
    }
  }

  /** Import: the file chosen, into the outbox shown; what it did is announced. */
  async #import(input) {
    const file = input.files?.[0];
    if (!this.#outbox || !file) return;
    this.#ui.transferStatus.textContent = `Importing ${file.name}…`;
    try {
      const r = await this.#outbox.import(file);
      this.#ui.transferStatus.textContent =
        `Imported ${r.total} record${r.total === 1 ? "" : "s"}: ${r.created} new, ${r.replayed} already here, ${r.superseded} superseded.`;
      this.#showError("");
      await this.#store?.refresh();
    } catch (error) {
      this.#ui.transferStatus.textContent = "";
      this.#showError(`Import of ${file.name} failed: ${errorText(error)}`);
    } finally {
      input.value = "";
    }
  }

  #showError(text, read = false) {
    this.#readError = read;
    if (this.#ui.error.textContent !== text) this.#ui.error.textContent = text;
  }
}

if (globalThis.customElements && !customElements.get("nostr-outbox-inspector")) {
  customElements.define("nostr-outbox-inspector", OutboxInspector);
}
