//! The in-memory store: the one [`KvStore`] over [`MemoryKv`], for tests, edge runtimes
//! and pages without IndexedDB. Not durable across reloads. It holds no rule of its
//! own: every operation is [`KvStore`]'s, as on IndexedDB and the storage adapters.

use super::codec::{self, StoredRow};
use super::kv::{keys, KvStore, MemoryKv};
use crate::core::Record;

/// The in-memory store.
pub type MemoryStore = KvStore<MemoryKv>;

impl KvStore<MemoryKv> {
    /// An empty in-memory store.
    pub fn in_memory() -> MemoryStore {
        KvStore::new(MemoryKv::new())
    }

    /// Every record that decodes, in id order (for tests and inspection).
    pub fn snapshot(&self) -> Vec<Record> {
        let mut records: Vec<Record> = self
            .backend()
            .dump()
            .into_iter()
            .filter(|(key, _)| key.starts_with(keys::ROWS))
            .filter_map(|(_, value)| serde_json::from_str::<StoredRow>(&value).ok())
            .filter_map(|row| codec::decode(&row).ok())
            .collect();
        records.sort_by(|a, b| a.id.cmp(&b.id));
        records
    }

    /// How many records it holds.
    pub fn len(&self) -> usize {
        self.backend()
            .dump()
            .iter()
            .filter(|(key, _)| key.starts_with(keys::ROWS))
            .count()
    }

    /// True when it holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
