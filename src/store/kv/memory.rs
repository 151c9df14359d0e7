//! [`MemoryKv`]: the key-value contract over a `BTreeMap`, for native tests.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use super::{KvBackend, KvCommit, KvCommitted, KvEntry, KvLimits, KvMutation, KvRange, KvValue};
use crate::store::StoreError;

/// An in-memory [`KvBackend`]: keys in a `BTreeMap`, each with its value and the
/// number of the commit that last wrote it as its version. Not durable; for tests.
/// It refuses (with [`StoreError::Backend`]) a commit over its [`KvLimits`], as a
/// runtime would.
#[derive(Debug)]
pub struct MemoryKv {
    map: RefCell<BTreeMap<String, (String, u64)>>,
    clock: Cell<u64>,
    limits: KvLimits,
    commits: Cell<u64>,
}

impl Default for MemoryKv {
    fn default() -> MemoryKv {
        MemoryKv::with_limits(KvLimits::UNLIMITED)
    }
}

impl MemoryKv {
    /// An empty backend without limits.
    pub fn new() -> MemoryKv {
        MemoryKv::default()
    }

    /// An empty backend that refuses commits over `limits`.
    pub fn with_limits(limits: KvLimits) -> MemoryKv {
        MemoryKv {
            map: RefCell::new(BTreeMap::new()),
            clock: Cell::new(0),
            limits,
            commits: Cell::new(0),
        }
    }

    /// Every key and value, in key order.
    pub fn dump(&self) -> Vec<(String, String)> {
        self.entries()
            .into_iter()
            .map(|e| (e.key, e.value))
            .collect()
    }

    /// Every key, in key order, with its value and version.
    pub fn entries(&self) -> Vec<KvEntry> {
        self.map
            .borrow()
            .iter()
            .map(|(k, (v, n))| KvEntry {
                key: k.clone(),
                value: v.clone(),
                version: n.to_string(),
            })
            .collect()
    }

    /// How many keys it holds.
    pub fn len(&self) -> usize {
        self.map.borrow().len()
    }

    /// True when it holds no key.
    pub fn is_empty(&self) -> bool {
        self.map.borrow().is_empty()
    }

    /// How many commits were applied.
    pub fn applied_commits(&self) -> u64 {
        self.commits.get()
    }

    /// Writes `key` outside any commit (as other software would), with a new version.
    pub fn put_raw(&self, key: &str, value: &str) {
        let v = self.clock.get() + 1;
        self.clock.set(v);
        self.map
            .borrow_mut()
            .insert(key.to_string(), (value.to_string(), v));
    }
}

impl KvBackend for MemoryKv {
    fn limits(&self) -> KvLimits {
        self.limits
    }

    fn holds_index_keys(&self) -> bool {
        false
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<KvValue>>, StoreError> {
        let map = self.map.borrow();
        Ok(keys
            .iter()
            .map(|k| {
                map.get(k).map(|(value, v)| KvValue {
                    value: value.clone(),
                    version: v.to_string(),
                })
            })
            .collect())
    }

    async fn list(&self, range: &KvRange) -> Result<Vec<KvEntry>, StoreError> {
        if range.start >= range.end {
            return Ok(Vec::new());
        }
        let map = self.map.borrow();
        let entries = map.range(range.start.clone()..range.end.clone());
        let entry = |(key, (value, v)): (&String, &(String, u64))| KvEntry {
            key: key.clone(),
            value: value.clone(),
            version: v.to_string(),
        };
        let limit = range.limit as usize;
        Ok(if range.reverse {
            entries.rev().take(limit).map(entry).collect()
        } else {
            entries.take(limit).map(entry).collect()
        })
    }

    async fn count(&self, start: &str, end: &str) -> Result<usize, StoreError> {
        if start >= end {
            return Ok(0);
        }
        Ok(self
            .map
            .borrow()
            .range(start.to_string()..end.to_string())
            .count())
    }

    async fn commit(&self, commit: KvCommit) -> Result<KvCommitted, StoreError> {
        if let Some(why) = self.limits.refuse(&commit) {
            return Err(StoreError::Backend(format!("commit too large: {why}")));
        }
        let mut map = self.map.borrow_mut();
        let holds = commit.checks.iter().all(|c| {
            let current = map.get(&c.key).map(|(_, v)| v.to_string());
            current == c.version
        });
        if !holds {
            return Ok(KvCommitted::Conflict);
        }
        let v = self.clock.get() + 1;
        self.clock.set(v);
        for m in commit.mutations {
            match m {
                KvMutation::Put { key, value } => {
                    map.insert(key, (value, v));
                }
                KvMutation::Delete { key } => {
                    map.remove(&key);
                }
            }
        }
        self.commits.set(self.commits.get() + 1);
        Ok(KvCommitted::Applied)
    }
}
