//! The store over a JavaScript storage adapter (`Outbox.open({ storage: adapter })`,
//! the edge build) in a real JavaScript engine: the whole store conformance suite
//! through the wasm bridge (`js::kv::JsKv`) over the package's own memory adapter
//! (`js/memory-storage.js`), plain and under Deno KV's commit limits; then what the
//! bridge checks itself: adapters that answer wrongly or throw give typed errors and
//! write nothing.
#![cfg(all(target_arch = "wasm32", feature = "adapter"))]

use nostr_outbox::core::{ListQuery, Policy};
use nostr_outbox::js::kv::JsKv;

type AdapterStore = KvStore<JsKv>;
use nostr_outbox::store::conformance::{self, fixture_plan};
use nostr_outbox::store::kv::KvStore;
use nostr_outbox::store::{Store, StoreError};
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen(module = "/js/memory-storage.js")]
extern "C" {
    #[wasm_bindgen(js_name = memoryStorage)]
    fn memory_storage(options: &JsValue) -> JsValue;
}

#[wasm_bindgen(inline_js = "
export function denoLimits() {
  return { limits: { maxMutations: 1000, maxChecks: 100, maxValueBytes: 65536, maxCommitBytes: 716800, maxKeyBytes: 64920 } };
}
// A memory adapter whose answers are bent by `how`.
export function broken(inner, how) {
  return {
    getMany: async (keys) => {
      const got = await inner.getMany(keys);
      if (how === 'short') return got.slice(1);
      if (how === 'no-version') return got.map((e) => (e ? { value: e.value } : null));
      return got;
    },
    list: async (range) => {
      const got = await inner.list(range);
      if (how === 'unsorted') return got.slice().reverse();
      if (how === 'outside') return [{ key: '~', value: '', version: '1' }, ...got];
      return got;
    },
    commit: async (c) => {
      if (how === 'throws') throw new Error('disk on fire');
      if (how === 'quota') { const e = new Error('full'); e.name = 'QuotaExceededError'; throw e; }
      if (how === 'answer') { await inner.commit(c); return 'yes'; }
      return inner.commit(c);
    },
  };
}
")]
extern "C" {
    #[wasm_bindgen(js_name = denoLimits)]
    fn deno_limits() -> JsValue;
    fn broken(inner: &JsValue, how: &str) -> JsValue;
}

fn store_over(adapter: JsValue) -> AdapterStore {
    match JsKv::new(adapter) {
        Ok(kv) => KvStore::new(kv),
        Err(e) => panic!("the adapter was refused: {e:?}"),
    }
}

fn memory() -> AdapterStore {
    store_over(memory_storage(&JsValue::UNDEFINED))
}

#[wasm_bindgen_test]
async fn conformance_over_the_memory_adapter() {
    conformance::run_all(|| async { memory() }).await;
}

#[wasm_bindgen_test]
async fn conformance_under_deno_kv_limits() {
    conformance::run_all(|| async { store_over(memory_storage(&deno_limits())) }).await;
}

#[wasm_bindgen_test]
fn an_object_without_the_methods_is_refused() {
    let err = JsKv::new(js_sys::Object::new().into()).expect_err("no methods");
    let js: JsValue = err.into_js();
    let code = js_sys::Reflect::get(&js, &"code".into()).unwrap_or_default();
    assert_eq!(code.as_string().as_deref(), Some("invalid_options"));
}

/// Each broken answer is a typed storage error, and a fresh store over the same
/// data sees nothing written by the failed call.
#[wasm_bindgen_test]
async fn broken_adapters_give_typed_errors_and_write_nothing() {
    for (how, want) in [
        ("short", "storage"),
        ("no-version", "storage"),
        ("throws", "storage"),
        ("quota", "quota_exceeded"),
        ("answer", "storage"),
    ] {
        let inner = memory_storage(&JsValue::UNDEFINED);
        let plan = fixture_plan(1, &["wss://a.example"], Policy::All);
        // A new id is enqueued without a read (its absence is checked by the commit):
        // for a broken `getMany` to be met, the row is there first, and the same plan
        // enqueued again reads it (after its first commit conflicts). An entry without
        // a version can only be answered for a key that exists anyway.
        let seeded = how == "no-version" || how == "short";
        if seeded {
            let seed = store_over(inner.clone());
            seed.enqueue(plan.clone(), 1_000).await.expect("seed");
        }
        let s = store_over(broken(&inner, how));
        let got = s.enqueue(plan, 1_000).await;
        let err = match got {
            Err(e) => e,
            // `answer` applies the commit, then answers wrongly: the error is still
            // reported (the caller cannot know), and only that one write is there.
            Ok(e) => panic!("{how}: enqueue succeeded: {:?}", e.outcome),
        };
        assert_eq!(err.code(), want, "{how}: {err}");
        let healthy = store_over(inner);
        let stored = match healthy
            .list(&ListQuery {
                limit: 100,
                ..ListQuery::default()
            })
            .await
        {
            Ok(s) => s,
            Err(e) => panic!("{how}: read back: {e}"),
        };
        let want_stored = usize::from(how == "answer" || seeded);
        assert_eq!(stored.len(), want_stored, "{how}: what the store holds");
    }
    for how in ["unsorted", "outside"] {
        let inner = memory_storage(&JsValue::UNDEFINED);
        let seed = store_over(inner.clone());
        for i in 0..3 {
            let plan = fixture_plan(i, &["wss://a.example"], Policy::All);
            seed.enqueue(plan, 1_000).await.expect("seed");
        }
        let s = store_over(broken(&inner, how));
        let got = s
            .list(&ListQuery {
                limit: 100,
                ..ListQuery::default()
            })
            .await
            .expect_err(how);
        assert!(
            matches!(got, StoreError::Backend(ref m) if m.contains("list")),
            "{how}: {got}"
        );
    }
}
