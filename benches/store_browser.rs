//! Benchmark (a program, not a test: `make bench` runs it; `make test` does not):
//! the IndexedDB store against raw IndexedDB calls from plain JavaScript, measured
//! side by side in the same headless browser run. Prints medians and ratios.
#![cfg(target_arch = "wasm32")]

use nostr_outbox::core::{ClaimRequest, EventEnvelope, EventMeta, Plan, Policy};
use nostr_outbox::store::codec;
use nostr_outbox::store::idb::{Durability, IdbOptions, IdbStore};
use nostr_outbox::store::Store;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen(inline_js = r#"
export function now() { return performance.now(); }
export function rawDb(name) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name, 1);
    req.onupgradeneeded = () => req.result.createObjectStore("records");
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}
// Raw baseline: every row (`[id, text]`) put under its id in one transaction, as a
// hand-written app would.
export function rawPutAll(db, rows, durability) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction("records", "readwrite", { durability });
    const store = tx.objectStore("records");
    for (const [id, row] of rows) store.put(row, id);
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error);
  });
}
export function rawClear(db) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction("records", "readwrite");
    tx.objectStore("records").clear();
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error);
  });
}
export function log(s) { console.log(s); }
"#)]
extern "C" {
    fn now() -> f64;
    #[wasm_bindgen(js_name = rawDb)]
    fn raw_db(name: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = rawPutAll)]
    fn raw_put_all(db: &JsValue, rows: &js_sys::Array, durability: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = rawClear)]
    fn raw_clear(db: &JsValue) -> js_sys::Promise;
    fn log(s: &str);
}

const RELAYS: [&str; 3] = ["wss://a.example", "wss://b.example", "wss://c.example"];

/// `BENCH_ARGS=--quick make bench` builds this with `NOSTR_OUTBOX_BENCH_QUICK` set: a
/// tenth of the counts (claim scaling at 1k / 3k / 10k), for a quick look only.
const QUICK: bool = option_env!("NOSTR_OUTBOX_BENCH_QUICK").is_some();

/// A realistic signed-event-sized envelope (~450 bytes of JSON).
fn envelope(seed: &str, n: u32) -> EventEnvelope {
    let id = format!(
        "{:0>64}",
        format!("{seed}{n:x}")
            .chars()
            .filter(|c| c.is_ascii_hexdigit())
            .collect::<String>()
    );
    let id = id[id.len() - 64..].to_string();
    let raw = format!(
        r#"{{"id":"{id}","pubkey":"{pk}","created_at":1700000000,"kind":1,"tags":[["t","bench"],["p","{pk}"]],"content":"benchmark note number {n} with a little text to look like a real post","sig":"{sig}"}}"#,
        pk = "ab".repeat(32),
        sig = "cd".repeat(64),
    );
    EventEnvelope {
        id,
        raw,
        expiration: None,
        meta: Some(EventMeta {
            pubkey: "ab".repeat(32),
            kind: 1,
            created_at: 1_700_000_000,
            d: String::new(),
            deletes_ids: Vec::new(),
            deletes_addresses: Vec::new(),
            protected: false,
            vanish_relays: Vec::new(),
        }),
    }
}

fn plans(seed: &str, count: u32) -> Vec<Plan> {
    (0..count)
        .map(|n| {
            Plan::new(
                envelope(seed, n),
                RELAYS.iter().map(|s| s.to_string()).collect(),
                Policy::All,
            )
        })
        .collect()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs[xs.len() / 2]
}

fn list(xs: &[f64]) -> String {
    let v: Vec<String> = xs.iter().map(|x| format!("{x:.1}")).collect();
    format!("[{}]", v.join(", "))
}

fn name(prefix: &str) -> String {
    format!("bench-{prefix}-{}", js_sys::Math::random())
}

async fn store(prefix: &str, durability: Durability) -> IdbStore {
    let mut options = IdbOptions::new(name(prefix));
    options.durability = durability;
    IdbStore::open(options).await.expect("open")
}

/// The same rows the store would write, for the raw baseline.
fn rows_for(plans: &[Plan]) -> js_sys::Array {
    plans
        .iter()
        .map(|p| {
            let record = match nostr_outbox::core::decide_enqueue(None, p.clone(), 1) {
                Ok(d) => d.record().clone(),
                Err(e) => panic!("{e}"),
            };
            let row = codec::write_row(&record).expect("encode");
            JsValue::from(js_sys::Array::of2(&record.id.as_str().into(), &row.into()))
        })
        .collect::<js_sys::Array>()
}

#[wasm_bindgen_test]
async fn bench_enqueue_many_vs_raw_puts() {
    const N: u32 = if QUICK { 1_000 } else { 10_000 };
    const RUNS: usize = 3;
    // Strict only: the figure the issue asks for (relaxed measured within noise of it,
    // and cost ~20 s a run). Change this list to compare.
    for durability in [Durability::Strict] {
        let label = if durability == Durability::Strict {
            "strict"
        } else {
            "relaxed"
        };
        let mut ours = Vec::new();
        let mut raw = Vec::new();
        for run in 0..RUNS {
            let batch = plans(&format!("{label}{run}"), N);
            let rows = rows_for(&batch);
            let db = JsFuture::from(raw_db(&name("raw"))).await.expect("raw db");
            let s = store("many", durability).await;
            let mut batch = Some(batch);
            // Alternate which side goes first, so a drift in the machine's load hits both.
            for side in [run % 2, 1 - run % 2] {
                let t = now();
                if side == 0 {
                    JsFuture::from(raw_put_all(&db, &rows, label))
                        .await
                        .expect("raw puts");
                    raw.push(now() - t);
                } else {
                    s.enqueue_many(batch.take().expect("once"), 1)
                        .await
                        .expect("enqueue_many");
                    ours.push(now() - t);
                }
            }
        }
        let runs = format!("runs outbox {} / raw {}", list(&ours), list(&raw));
        let (o, r) = (median(ours), median(raw));
        log(&format!(
            "BENCH enqueue_many {N} ({label}): outbox {o:.0} ms ({:.0}/s), raw puts {r:.0} ms ({:.0}/s), throughput ratio {:.2} (goal >= 0.7); {runs}",
            N as f64 / o * 1000.0,
            N as f64 / r * 1000.0,
            r / o
        ));
    }
}

#[wasm_bindgen_test]
async fn bench_single_enqueue_vs_raw_put() {
    const N: u32 = if QUICK { 50 } else { 200 };
    // Strict only: the figure the issue asks for (relaxed measured within noise of it,
    // and cost ~20 s a run). Change this list to compare.
    for durability in [Durability::Strict] {
        let label = if durability == Durability::Strict {
            "strict"
        } else {
            "relaxed"
        };
        let batch = plans(&format!("single{label}"), N);
        let rows = rows_for(&batch);
        let db = JsFuture::from(raw_db(&name("raw1"))).await.expect("raw db");
        let s = store("single", durability).await;
        let (mut ours, mut raw) = (Vec::new(), Vec::new());
        for (i, (plan, row)) in batch.into_iter().zip(rows.iter()).enumerate() {
            let one: js_sys::Array = std::iter::once(row).collect();
            // Alternate which side goes first.
            let mut plan = Some(plan);
            for side in [i % 2, 1 - i % 2] {
                let t = now();
                if side == 0 {
                    JsFuture::from(raw_put_all(&db, &one, label))
                        .await
                        .expect("raw put");
                    raw.push(now() - t);
                } else {
                    s.enqueue(plan.take().expect("once"), 1)
                        .await
                        .expect("enqueue");
                    ours.push(now() - t);
                }
            }
        }
        let (o, r) = (median(ours), median(raw));
        log(&format!(
            "BENCH single enqueue ({label}): outbox median {o:.2} ms, raw put median {r:.2} ms, ratio raw/outbox {:.2} (goal >= 0.8)",
            r / o
        ));
    }
}

#[wasm_bindgen_test]
async fn bench_claim_scaling() {
    // Three stores filled first, then claim(64) on each in turn, round by round (the
    // order rotates), so the 1k baseline and the 100k figure see the same machine load.
    const SIZES: [u32; 3] = if QUICK {
        [1_000, 3_000, 10_000]
    } else {
        [1_000, 10_000, 100_000]
    };
    const ROUNDS: u32 = 15; // 15 x 64 = 960 claimed: the 1k store never runs dry
    let mut stores = Vec::new();
    for total in SIZES {
        let s = store("claim", Durability::Relaxed).await;
        let mut n = 0;
        while n < total {
            let chunk = 10_000.min(total - n);
            let batch: Vec<Plan> = (n..n + chunk)
                .map(|i| {
                    Plan::new(
                        envelope(&format!("claim{total}"), i),
                        vec![RELAYS[0].to_string()],
                        Policy::All,
                    )
                })
                .collect();
            s.enqueue_many(batch, 1).await.expect("fill");
            n += chunk;
        }
        stores.push(s);
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); SIZES.len()];
    for round in 0..ROUNDS {
        for k in 0..SIZES.len() {
            let i = (round as usize + k) % SIZES.len();
            let request = ClaimRequest {
                owner: "bench".into(),
                lease_id: format!("lease-{round}"),
                limit: 64,
                lease_ms: 3_600_000,
                ..Default::default()
            };
            let t = now();
            let got = stores[i].claim(&request, 10).await.expect("claim");
            times[i].push(now() - t);
            assert_eq!(got.len(), 64);
        }
    }
    let mut results = Vec::new();
    for (total, t) in SIZES.iter().zip(times) {
        let runs = list(&t);
        let m = median(t);
        log(&format!(
            "BENCH claim(64) with {total} stored: median {m:.2} ms; runs {runs}"
        ));
        results.push(m);
    }
    let k = |n: u32| format!("{}k", n / 1_000);
    log(&format!(
        "BENCH claim(64) ratio {}/{}: {:.2} (goal <= 2 at 100k/1k), {}/{}: {:.2}",
        k(SIZES[2]),
        k(SIZES[0]),
        results[2] / results[0],
        k(SIZES[1]),
        k(SIZES[0]),
        results[1] / results[0]
    ));
}
