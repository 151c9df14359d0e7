//! The reference model of the store for differential tests: every operation written
//! directly over records in memory (a sorted `Vec` behind a `RefCell`), each transition a
//! call into `nostr_outbox::core`, with none of the shipped store's keys, rows, commits
//! or retries. `tests/store/kv.rs` runs random sequences of operations on it and on the
//! shipped `KvStore` and requires the same answers. (It was the shipped memory store
//! until the one store replaced it.)

use std::cell::RefCell;

use nostr_outbox::core::semantics::{self, Lookups};
use nostr_outbox::core::{
    self, Change, ClaimRequest, Completion, CoreError, Enqueued, Heartbeat, ListQuery, Plan,
    Record, RetryConfig, Signed, StageCounts,
};

use nostr_outbox::store::{Store, StoreError};

/// Records by id: boxed, in a `Vec` sorted by id (binary search). It behaves as the
/// `BTreeMap<String, Record>` it replaced (id order) without one more B-tree
/// instantiation in the .wasm; boxes keep inserts to moving pointers.
#[derive(Debug, Default)]
#[allow(clippy::vec_box)] // deliberate: inserts move pointers, not records
struct Records(Vec<Box<Record>>);

impl Records {
    fn find(&self, id: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|r| r.id.as_str().cmp(id))
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn get(&self, id: &str) -> Option<&Record> {
        self.find(id).ok().map(|i| &*self.0[i])
    }

    /// Inserts `record`, replacing the one with its id.
    fn insert(&mut self, record: Record) {
        match self.find(&record.id) {
            Ok(i) => *self.0[i] = record,
            Err(i) => self.0.insert(i, Box::new(record)),
        }
    }

    /// In id order.
    fn values(&self) -> impl Iterator<Item = &Record> {
        self.0.iter().map(|r| &**r)
    }

    fn retain(&mut self, keep: impl Fn(&Record) -> bool) {
        self.0.retain(|r| keep(r));
    }

    /// Every record answering `lookups` (a scan: the rules need it only for
    /// replaceable, addressable and deletion events).
    fn related(&self, lookups: &Lookups) -> Vec<Record> {
        if lookups.is_empty() {
            return Vec::new();
        }
        self.values()
            .filter(|r| lookups.matches(r))
            .cloned()
            .collect()
    }
}

/// A non-durable store keeping records in memory, keyed by item id.
#[derive(Debug, Default)]
pub struct ReferenceStore {
    records: RefCell<Records>,
    /// Owners' heartbeats.
    beats: RefCell<Vec<(String, Heartbeat)>>,
}

impl ReferenceStore {
    /// An empty store.
    pub fn new() -> ReferenceStore {
        ReferenceStore::default()
    }

    fn update(
        &self,
        id: &str,
        f: impl FnOnce(&Record) -> Result<Record, CoreError>,
    ) -> Result<Record, StoreError> {
        let mut map = self.records.borrow_mut();
        let current = map
            .get(id)
            .ok_or_else(|| CoreError::NotFound { id: id.to_string() })?;
        let next = f(current)?;
        map.insert(next.clone());
        Ok(next)
    }
}

impl Store for ReferenceStore {
    async fn enqueue_many(
        &self,
        plans: Vec<Plan>,
        now_ms: u64,
    ) -> Result<Vec<Enqueued>, StoreError> {
        let mut map = self.records.borrow_mut();
        let stored = plans
            .iter()
            .map(|p| (map.get(&p.id).cloned(), map.related(&semantics::lookups(p))))
            .collect();
        let decided = core::decide_enqueues(plans, stored, now_ms)?;
        for record in decided.writes {
            map.insert(record);
        }
        Ok(decided.answers)
    }

    async fn related(&self, lookups: &Lookups) -> Result<Vec<Record>, StoreError> {
        Ok(self.records.borrow().related(lookups))
    }

    async fn get(&self, id: &str) -> Result<Option<Record>, StoreError> {
        Ok(self.records.borrow().get(id).cloned())
    }

    async fn claim(&self, request: &ClaimRequest, now_ms: u64) -> Result<Vec<Record>, StoreError> {
        request.validate()?;
        let mut map = self.records.borrow_mut();
        let mut due: Vec<&Record> = map
            .values()
            .filter(|r| r.due_ms.is_some_and(|d| d <= now_ms))
            .collect();
        core::order::sort_records(&mut due, core::claim_order);
        let mut out = Vec::new();
        for record in due {
            if out.len() >= request.limit as usize {
                break;
            }
            if !record.is_ready(now_ms) || !request.admits(record) {
                continue;
            }
            out.push(core::claim(record, request, now_ms)?.into_record());
        }
        // Write only once every claim succeeded: all or nothing.
        for r in &out {
            map.insert(r.clone());
        }
        Ok(out)
    }

    async fn take_over(
        &self,
        request: &ClaimRequest,
        now_ms: u64,
    ) -> Result<Vec<Record>, StoreError> {
        request.validate()?;
        let mut map = self.records.borrow_mut();
        let beats = self.beats.borrow();
        let gone = |owner: &str| beats.iter().any(|(o, b)| o == owner && b.lapsed(now_ms));
        let out = core::orphans(map.values(), request, now_ms, &gone)
            .into_iter()
            .map(|r| core::take_over(r, request, now_ms).map(core::Claimed::into_record))
            .collect::<Result<Vec<Record>, CoreError>>()?;
        // Written only once every takeover succeeded: all or nothing.
        for r in &out {
            map.insert(r.clone());
        }
        Ok(out)
    }

    async fn beat(
        &self,
        owner: &str,
        beat: Option<Heartbeat>,
        now_ms: u64,
    ) -> Result<u32, StoreError> {
        let mut beats = self.beats.borrow_mut();
        beats.retain(|(o, b)| o != owner && (beat.is_some() || !b.stale(now_ms)));
        beats.extend(beat.map(|b| (owner.to_string(), b)));
        Ok(if beat.is_none() {
            beats.len() as u32
        } else {
            0
        })
    }

    async fn complete_attempt(
        &self,
        completion: &Completion,
        retry: &RetryConfig,
        now_ms: u64,
    ) -> Result<Record, StoreError> {
        self.update(&completion.id, |r| {
            core::complete_attempt(r, completion, now_ms, retry)
        })
    }

    async fn release(
        &self,
        id: &str,
        lease_id: &str,
        revision: u64,
        now_ms: u64,
    ) -> Result<Record, StoreError> {
        self.update(id, |r| core::release(r, lease_id, revision, now_ms))
    }

    async fn record_signing(
        &self,
        signed: &Signed,
        retry: &RetryConfig,
        now_ms: u64,
    ) -> Result<Record, StoreError> {
        self.update(&signed.id, |r| {
            core::record_signing(r, signed, now_ms, retry)
        })
    }

    async fn change(&self, id: &str, change: Change, now_ms: u64) -> Result<Record, StoreError> {
        // Written out per kind of change, as the model of each (not through
        // `Change::apply`, which the KV store uses).
        match change {
            Change::Retry => {
                {
                    let map = self.records.borrow();
                    if let Some(record) = map.get(id) {
                        let wanted = Lookups {
                            slots: semantics::slot_of(record).into_iter().collect(),
                            event_ids: Vec::new(),
                            live: false,
                        };
                        semantics::check_retry(record, &map.related(&wanted))?;
                    }
                }
                self.update(id, |r| core::retry(r, now_ms))
            }
            Change::Cancel => self.update(id, |r| core::cancel(r, now_ms)),
            Change::Reschedule { at_ms } => self.update(id, |r| core::reschedule(r, at_ms, now_ms)),
        }
    }

    async fn relay_back(&self, relay: &str, now_ms: u64) -> Result<Vec<Record>, StoreError> {
        let mut map = self.records.borrow_mut();
        let woken: Vec<Record> = map
            .values()
            .filter_map(|r| core::relay_back(r, relay, now_ms))
            .collect();
        for record in &woken {
            map.insert(record.clone());
        }
        Ok(woken)
    }

    async fn purge(&self, before_ms: u64) -> Result<u32, StoreError> {
        let mut map = self.records.borrow_mut();
        let before = map.len();
        map.retain(|r| !core::is_purgeable(r, before_ms));
        Ok(u32::try_from(before - map.len()).unwrap_or(u32::MAX))
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Record>, StoreError> {
        query.validate()?;
        let map = self.records.borrow();
        let cursor = match &query.after {
            None => None,
            Some(id) => {
                let r = map
                    .get(id)
                    .ok_or_else(|| CoreError::NotFound { id: id.clone() })?;
                Some((r.created_ms, r.id.clone()))
            }
        };
        let mut rows: Vec<&Record> = map
            .values()
            .filter(|r| query.stage.is_none_or(|s| r.stage == s))
            .filter(|r| query.lane.as_ref().is_none_or(|l| r.lane == *l))
            .filter(|r| {
                cursor
                    .as_ref()
                    .is_none_or(|(c, id)| r.list_key() > (*c, id.as_str()))
            })
            .collect();
        core::order::sort_records(&mut rows, core::list_order);
        Ok(rows
            .into_iter()
            .take(query.limit as usize)
            .cloned()
            .collect())
    }

    async fn status(&self) -> Result<StageCounts, StoreError> {
        let mut counts = StageCounts::default();
        for r in self.records.borrow().values() {
            counts.add(r.stage);
        }
        Ok(counts)
    }

    async fn count_due(&self, now_ms: u64) -> Result<u32, StoreError> {
        let records = self.records.borrow();
        let due = records
            .values()
            .filter(|r| r.needs() == 0 && r.due_ms.is_some_and(|d| d <= now_ms));
        Ok(due.count() as u32)
    }

    async fn next_due(&self, prepare: u8) -> Result<Option<u64>, StoreError> {
        Ok(self
            .records
            .borrow()
            .values()
            .filter(|r| r.needs() == 0 || (prepare != 0 && r.needs() & !prepare == 0))
            .filter_map(|r| r.due_ms)
            .min())
    }
}
