//! The in-memory store: the one [`KvStore`] over [`MemoryKv`], for tests, edge runtimes
//! and pages without IndexedDB. Not durable across reloads. It holds no rule of its
//! own: every operation is [`KvStore`]'s, as on IndexedDB and the storage adapters.

use super::codec;
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
            .filter_map(|(key, value)| {
                let (record, _) = codec::read_row(&keys::id_of(&key)?, &value).ok()?;
                Some(record)
            })
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
