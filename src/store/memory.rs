//! The in-memory store: the one [`KvStore`] over [`MemoryKv`], for tests, edge runtimes
//! and pages without IndexedDB. Not durable across reloads. It holds no rule of its
//! own: every operation is [`KvStore`]'s, as on IndexedDB and the storage adapters.

use super::codec;
use super::kv::lease::Leases;
use super::kv::{keys, KvStore, MemoryKv, LEASES};
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
        let entries = self.backend().entries();
        let leases = Leases::read(
            entries
                .iter()
                .filter(|e| e.key.starts_with(LEASES))
                .cloned()
                .collect(),
        );
        let mut records: Vec<Record> = entries
            .into_iter()
            .filter(|e| e.key.starts_with(keys::ROWS))
            .filter_map(|e| {
                let id = keys::id_of(&e.key)?;
                let (mut record, _) = codec::read_row(&id, &e.value).ok()?;
                // As the store reads it: leased by its lease row's entry, if any.
                leases.apply_to(&e.version, &mut record);
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
