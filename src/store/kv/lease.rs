//! Lease rows: a claim writes **one row per claimed batch** instead of rewriting the
//! row and moving the index keys of every record it leases.
//!
//! A claim changes a record in a few fields only (`core::claim`: the lease, the stage
//! `leased`, the due time, the revision, `updatedMs`, and `takeovers` for a takeover),
//! and its claim-order and stage keys. So the claim's commit leaves each record's row
//! and keys as they are and puts one row `Q/<n>` (`n` counting up) holding, per
//! record, those fields and the version of the row it applies to; it also rewrites the
//! lock `Q/` (value: the last `n`), which every run that writes a stored record checks,
//! so two claims, or a claim and any other write of a record, never both commit over
//! the same versions.
//!
//! Every reader applies the lease rows ([`Leases`]): a record whose row still has the
//! version its entry names reads as leased ([`Leases::apply`]), and index ranges of the
//! claim order (`P/`) and of the stages (`T/`) read as if the claim had moved its keys
//! ([`Overlay`]). The first write of the record after the claim (its completion, a
//! release, a takeover, …) writes the whole record and drops its entry from the lease
//! row (the row is deleted with its last entry). An entry whose row was rewritten
//! without it (by a build before lease rows) no longer applies, and is dropped by the
//! next run that writes.
//!
//! The row is text, not JSON: a header line `<lease id>\t<owner>\t<acquired>\t<expires>`
//! and a line per record, its fields separated by tabs (free text as the key layout
//! escapes it: no tab or newline inside). A row that does not parse is ignored (its
//! records read as stored, so a claim may take them again: sent again, never lost).

use super::keys::{self, untext, LEASES};
use super::KvEntry;
use crate::core::{Lease, Record, Stage};
use crate::store::codec::{self, RowIndex};

/// The lease a claim grants: the same for every record of its row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub id: String,
    pub owner: String,
    pub acquired_ms: u64,
    pub expires_ms: u64,
}

/// One record's part of a lease row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub id: String,
    /// The version of the record's row this entry applies to.
    pub version: String,
    pub created_ms: u64,
    /// Its stage, due time and claim rank as its row's keys file it (before the claim).
    pub pre_stage: String,
    pub pre_due: u64,
    pub pre_rank: u8,
    /// Its claim rank as the leased record's keys would file it.
    pub rank: u8,
    pub revision: u64,
    pub updated_ms: u64,
    pub takeovers: u32,
    pub attempt: u32,
    pub relays: Option<Vec<String>>,
}

/// A lease row as read.
#[derive(Debug, Clone)]
pub struct LeaseRow {
    pub key: String,
    pub version: String,
    pub head: Head,
    pub entries: Vec<Entry>,
    /// The length of its value (what rewriting it costs a commit).
    pub len: usize,
}

/// Every lease row of the store, as one run read them, and the lock's version.
#[derive(Debug, Default)]
pub struct Leases {
    /// The version of the lock `Q/`, `None` when absent.
    pub lock: Option<String>,
    /// The last row number given (the lock's value).
    pub last: u64,
    pub rows: Vec<LeaseRow>,
    /// By record id, sorted: (row, entry). (A `Vec` searched by bisection: a
    /// `BTreeMap` instantiation costs kilobytes of .wasm code.)
    by_id: Vec<(String, (usize, usize))>,
}

fn num(s: &str) -> Option<u64> {
    s.parse().ok()
}

fn parse_head(line: &str) -> Option<Head> {
    let mut f = line.split('\t');
    let head = Head {
        id: untext(f.next()?)?,
        owner: untext(f.next()?)?,
        acquired_ms: num(f.next()?)?,
        expires_ms: num(f.next()?)?,
    };
    f.next().is_none().then_some(head)
}

fn parse_entry(line: &str) -> Option<Entry> {
    let mut f = line.split('\t');
    let (id, version) = (untext(f.next()?)?, untext(f.next()?)?);
    let created_ms = num(f.next()?)?;
    let pre_stage = Stage::from_name(f.next()?)?.as_str().to_string();
    // The numbers, parsed in one loop (one copy of the parser in the .wasm), then the
    // relays: exactly the fields `encode_entry` writes.
    let mut n = [0u64; 7];
    for slot in &mut n {
        *slot = num(f.next()?)?;
    }
    let small = |i: usize| u32::try_from(n[i]).ok();
    let relays = match f.next()? {
        "-" => None,
        "" => Some(Vec::new()),
        list => Some(list.split(' ').map(str::to_string).collect()),
    };
    if f.next().is_some() {
        return None;
    }
    Some(Entry {
        id,
        version,
        created_ms,
        pre_stage,
        pre_due: n[0],
        pre_rank: u8::try_from(n[1]).ok()?,
        rank: u8::try_from(n[2]).ok()?,
        revision: n[3],
        updated_ms: n[4],
        takeovers: small(5)?,
        attempt: small(6)?,
        relays,
    })
}

/// The value of a lease row.
pub fn encode<'e>(head: &Head, entries: impl IntoIterator<Item = &'e Entry>) -> String {
    let mut out = format!(
        "{}\t{}\t{}\t{}",
        keys::text(&head.id),
        keys::text(&head.owner),
        head.acquired_ms,
        head.expires_ms
    );
    for e in entries {
        out.push('\n');
        out.push_str(&encode_entry(e));
    }
    out
}

/// One entry's line (without its newline).
pub fn encode_entry(e: &Entry) -> String {
    let mut relays = String::new();
    match &e.relays {
        None => relays.push('-'),
        Some(list) => {
            for (i, r) in list.iter().enumerate() {
                if i > 0 {
                    relays.push(' ');
                }
                relays.push_str(r);
            }
        }
    }
    format!(
        "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
        keys::text(&e.id),
        keys::text(&e.version),
        e.created_ms,
        e.pre_stage,
        e.pre_due,
        e.pre_rank,
        e.rank,
        e.revision,
        e.updated_ms,
        e.takeovers,
        e.attempt,
        relays
    )
}

/// The key of lease row `n`.
pub fn row_key(n: u64) -> String {
    format!("{LEASES}{n:020}")
}

impl Leases {
    /// The lease rows from the entries of the range `[Q/, Q0)` (the lock first).
    /// Rows that do not parse, and entries of a record named by an earlier row, are
    /// left out.
    pub fn read(entries: Vec<KvEntry>) -> Leases {
        let mut out = Leases::default();
        for entry in entries {
            if entry.key == LEASES {
                out.lock = Some(entry.version);
                out.last = num(&entry.value).unwrap_or(0);
                continue;
            }
            let mut lines = entry.value.split('\n');
            let Some(head) = lines.next().and_then(parse_head) else {
                continue;
            };
            let row = out.rows.len();
            let mut kept = Vec::new();
            for e in lines.filter_map(parse_entry) {
                if let Err(i) = out.search(&e.id) {
                    out.by_id.insert(i, (e.id.clone(), (row, kept.len())));
                    kept.push(e);
                }
            }
            out.rows.push(LeaseRow {
                len: entry.value.len(),
                key: entry.key,
                version: entry.version,
                head,
                entries: kept,
            });
        }
        out
    }

    /// True when `other` read the same lease rows at the same versions.
    pub fn same_as(&self, other: &Leases) -> bool {
        self.lock == other.lock
            && self.rows.len() == other.rows.len()
            && self
                .rows
                .iter()
                .zip(&other.rows)
                .all(|(a, b)| a.key == b.key && a.version == b.version)
    }

    /// Where the entry of record `id` is: (row, entry).
    pub fn find(&self, id: &str) -> Option<(usize, usize)> {
        self.search(id).ok().map(|i| self.by_id[i].1)
    }

    fn search(&self, id: &str) -> Result<usize, usize> {
        self.by_id.binary_search_by(|(k, _)| k.as_str().cmp(id))
    }

    /// Applies to `record` (the row of its id as stored, at `version`) its entry, if it
    /// has one and the entry names that version: where the entry is, and whether it
    /// applied (else it is stale).
    pub fn apply_to(&self, version: &str, record: &mut Record) -> Option<((usize, usize), bool)> {
        let at = self.find(&record.id)?;
        let row = &self.rows[at.0];
        let entry = &row.entries[at.1];
        let applies = entry.version == version;
        if applies {
            apply(&row.head, entry, record);
        }
        Some((at, applies))
    }

    /// The index keys the lease rows move: the keys each leased record's row has in
    /// the claim order and stage index, and the keys it has as leased.
    pub fn overlay(&self) -> Overlay {
        let mut overlay = Overlay::default();
        for row in &self.rows {
            for e in &row.entries {
                overlay
                    .gone
                    .push(keys::stage_key(&e.pre_stage, e.created_ms, &e.id));
                overlay
                    .gone
                    .push(keys::due_key(e.pre_rank, e.pre_due, e.created_ms, &e.id));
                if let Some(key) =
                    keys::one_digit_due_key(e.pre_rank, e.pre_due, e.created_ms, &e.id)
                {
                    overlay.gone.push(key);
                }
                overlay
                    .added
                    .push(keys::stage_key(Stage::Leased.as_str(), e.created_ms, &e.id));
                overlay.added.push(keys::due_key(
                    e.rank,
                    row.head.expires_ms,
                    e.created_ms,
                    &e.id,
                ));
            }
        }
        // (The crate's one sort of strings: no sort instantiated for this.)
        crate::core::order::sort_dedup(&mut overlay.gone);
        crate::core::order::sort_dedup(&mut overlay.added);
        overlay
    }
}

/// Sets in `record` the fields a claim of `head` and `entry` changes.
pub fn apply(head: &Head, entry: &Entry, record: &mut Record) {
    record.revision = entry.revision;
    record.updated_ms = entry.updated_ms;
    record.takeovers = entry.takeovers;
    record.stage = Stage::Leased;
    record.due_ms = Some(head.expires_ms);
    record.lease = Some(Lease {
        id: head.id.clone(),
        owner: head.owner.clone(),
        acquired_ms: head.acquired_ms,
        expires_ms: head.expires_ms,
        attempt: entry.attempt,
        relays: entry.relays.clone(),
    });
}

/// The lease and entry that turn `before` (whose row is `index` at `version`) into
/// `next`, the record a claim or takeover leased: `None` when a lease row cannot say
/// it (the claim then writes the record's row, as any other change does): when `next`
/// has no lease or its row no due time. `next` must differ from `before` in the fields
/// [`apply`] sets only (checked in test builds).
pub fn lease_of(
    before: &Record,
    index: &RowIndex,
    version: &str,
    next: &Record,
) -> Option<(Head, Entry)> {
    let lease = next.lease.as_ref()?;
    let head = Head {
        id: lease.id.clone(),
        owner: lease.owner.clone(),
        acquired_ms: lease.acquired_ms,
        expires_ms: lease.expires_ms,
    };
    let entry = Entry {
        id: next.id.clone(),
        version: version.to_string(),
        created_ms: index.created_ms,
        pre_stage: index.stage.clone(),
        pre_due: index.due_ms?,
        pre_rank: keys::filed_rank(index.rank),
        // As `codec::index_of` ranks the leased record.
        rank: keys::filed_rank(Some(keys::claim_rank(next))),
        revision: next.revision,
        updated_ms: next.updated_ms,
        takeovers: next.takeovers,
        attempt: lease.attempt,
        relays: lease.relays.clone(),
    };
    // A claim changes nothing else (`core::lease_to`): checked in every test build,
    // where a change of the claim that a lease row cannot say panics (the suites run
    // every claim through here); the release build trusts it (the comparison of two
    // records costs 1 KB of gzipped .wasm).
    if cfg!(debug_assertions) {
        let mut probe = before.clone();
        apply(&head, &entry, &mut probe);
        assert!(
            probe == *next,
            "a claim changed a field a lease row does not hold"
        );
        // The keys the overlay gives the leased record are those it would be written with.
        let written = keys::index_keys(&codec::index_of(next));
        let due = keys::due_key(entry.rank, head.expires_ms, entry.created_ms, &entry.id);
        let stage = keys::stage_key(Stage::Leased.as_str(), entry.created_ms, &entry.id);
        assert!(written.contains(&due) && written.contains(&stage));
    }
    // The stage and claim-order keys the row has are made of the entry's `pre_` fields
    // as `keys::index_keys` makes them, and those of the leased record of the others;
    // the row's other keys stay until the record is next written (with every key it
    // then has, the old ones deleted).
    Some((head, entry))
}

/// The index keys lease rows move ([`Leases::overlay`]), each list sorted.
#[derive(Debug, Default)]
pub struct Overlay {
    /// Keys stored that read as absent.
    pub gone: Vec<String>,
    /// Keys not stored that read as present.
    pub added: Vec<String>,
}

/// An index entry the overlay reads as present (index entries have no value).
fn virtual_entry(key: &str) -> KvEntry {
    KvEntry {
        key: key.to_string(),
        value: String::new(),
        version: String::new(),
    }
}

/// True when `key` is in the range `[start, end)`.
fn within(key: &str, start: &str, end: &str) -> bool {
    key >= start && key < end
}

impl Overlay {
    /// How many of the stored keys that read as absent are in `[start, end)`.
    pub fn gone_in(&self, start: &str, end: &str) -> usize {
        self.gone.iter().filter(|k| within(k, start, end)).count()
    }

    /// The stored keys of `[start, end)` that answered `page` (asked with `limit`
    /// plus [`Overlay::gone_in`]) as the overlay reads them: the gone keys left out,
    /// the added keys in, up to the last key read (or the range's end when the page
    /// was its last), in key order, at most `limit`.
    pub fn merge(
        &self,
        mut page: Vec<KvEntry>,
        asked: usize,
        start: &str,
        end: &str,
        limit: usize,
    ) -> Vec<KvEntry> {
        if self.gone.is_empty() && self.added.is_empty() {
            page.truncate(limit);
            return page;
        }
        let complete = page.len() < asked;
        let upto = match (complete, page.last()) {
            (false, Some(last)) => keys::after(&last.key),
            _ => end.to_string(),
        };
        page.retain(|e| self.gone.binary_search(&e.key).is_err());
        // Both lists are in key order: merged, without a sort.
        let mut added = self
            .added
            .iter()
            .filter(|k| within(k, start, &upto))
            .peekable();
        let mut out = Vec::with_capacity(page.len());
        for entry in page {
            while let Some(key) = added.next_if(|k| **k <= entry.key) {
                if **key != entry.key {
                    out.push(virtual_entry(key));
                }
            }
            out.push(entry);
        }
        out.extend(added.map(|k| virtual_entry(k)));
        out.truncate(limit);
        out
    }

    /// A count of the stored keys of `[start, end)` as the overlay reads it.
    pub fn count(&self, stored: usize, start: &str, end: &str) -> usize {
        let added = self.added.iter().filter(|k| within(k, start, end)).count();
        (stored + added).saturating_sub(self.gone_in(start, end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, relays: Option<Vec<String>>) -> Entry {
        Entry {
            id: id.into(),
            version: "v 1\t%".into(),
            created_ms: 1_000,
            pre_stage: "retryable".into(),
            pre_due: 5_000,
            pre_rank: 4,
            rank: 4,
            revision: 7,
            updated_ms: 6_000,
            takeovers: 2,
            attempt: 3,
            relays,
        }
    }

    fn row(value: String) -> KvEntry {
        KvEntry {
            key: row_key(1),
            value,
            version: "9".into(),
        }
    }

    #[test]
    fn a_row_reads_back_as_written() {
        let head = Head {
            id: "lease\tid %".into(),
            owner: "owner é/1".into(),
            acquired_ms: 10,
            expires_ms: u64::MAX,
        };
        let entries = [
            entry("a", None),
            entry("b", Some(Vec::new())),
            entry(
                "c",
                Some(vec!["wss://a.example".into(), "wss://b.example/x".into()]),
            ),
        ];
        let lock = KvEntry {
            key: LEASES.into(),
            value: "41".into(),
            version: "3".into(),
        };
        let leases = Leases::read(vec![lock, row(encode(&head, &entries))]);
        assert_eq!((leases.lock.as_deref(), leases.last), (Some("3"), 41));
        assert_eq!(leases.rows.len(), 1);
        assert_eq!(leases.rows[0].head, head);
        assert_eq!(leases.rows[0].entries, entries);
        assert_eq!(leases.find("b"), Some((0, 1)));
        assert_eq!(leases.find("d"), None);
    }

    #[test]
    fn lines_that_do_not_parse_are_left_out() {
        let head = Head {
            id: "l".into(),
            owner: "o".into(),
            acquired_ms: 1,
            expires_ms: 2,
        };
        let good = encode_entry(&entry("a", None));
        for bad in [
            "a\t1",
            "a\t1\t1000\tnostage\t5\t4\t4\t7\t6\t2\t3\t-",
            "a\t1\t1000\tpending\t5\t400\t4\t7\t6\t2\t3\t-",
            "a\t1\t-1\tpending\t5\t4\t4\t7\t6\t2\t3\t-",
            "%zz\t1\t1000\tpending\t5\t4\t4\t7\t6\t2\t3\t-",
            "a\t1\t1000\tpending\t5\t4\t4\t7\t6\t2\t3\t-\textra",
        ] {
            let value = format!("{}\n{bad}\n{good}", encode(&head, []));
            let leases = Leases::read(vec![row(value)]);
            assert_eq!(leases.rows[0].entries.len(), 1, "{bad:?}");
        }
        for bad_head in ["", "l\to\t1", "l\to\tx\t2", "l\to\t1\t2\t3"] {
            let leases = Leases::read(vec![row(format!("{bad_head}\n{good}"))]);
            assert!(leases.rows.is_empty(), "{bad_head:?}");
        }
        // A record named twice: the first row's entry stands.
        let twice = Leases::read(vec![
            row(encode(&head, [&entry("a", None)])),
            row(encode(&head, [&entry("a", None), &entry("b", None)])),
        ]);
        assert_eq!(twice.find("a"), Some((0, 0)));
        assert_eq!(twice.find("b"), Some((1, 0)));
    }

    #[test]
    fn the_overlay_merges_in_key_order() {
        let overlay = Overlay {
            gone: vec!["T/pending/2".into()],
            added: vec![
                "T/leased/1".into(),
                "T/leased/3".into(),
                "T/leased/5".into(),
            ],
        };
        let entry = |k: &str| virtual_entry(k);
        let keys = |v: Vec<KvEntry>| v.into_iter().map(|e| e.key).collect::<Vec<_>>();
        let page = vec![entry("T/leased/2"), entry("T/leased/4")];
        // A complete page: every added key of the range merged in.
        let all = overlay.merge(page.clone(), 10, "T/leased/", "T/leased0", 10);
        assert_eq!(
            keys(all),
            [
                "T/leased/1",
                "T/leased/2",
                "T/leased/3",
                "T/leased/4",
                "T/leased/5"
            ]
        );
        // A full page: added keys past its last key wait for the next page.
        let part = overlay.merge(page.clone(), 2, "T/leased/", "T/leased0", 10);
        assert_eq!(
            keys(part),
            ["T/leased/1", "T/leased/2", "T/leased/3", "T/leased/4"]
        );
        let limited = overlay.merge(page, 10, "T/leased/", "T/leased0", 2);
        assert_eq!(keys(limited), ["T/leased/1", "T/leased/2"]);
        let pending = overlay.merge(
            vec![entry("T/pending/1"), entry("T/pending/2")],
            10,
            "T/pending/",
            "T/pending0",
            10,
        );
        assert_eq!(keys(pending), ["T/pending/1"]);
        assert_eq!(overlay.count(2, "T/pending/", "T/pending0"), 1);
        assert_eq!(overlay.count(2, "T/leased/", "T/leased0"), 5);
    }
}

/// Hostile lease rows (property tests; native only).
#[cfg(all(test, not(target_arch = "wasm32")))]
mod props {
    use super::*;
    use proptest::prelude::*;

    fn row(value: String) -> KvEntry {
        KvEntry {
            key: row_key(1),
            value,
            version: "9".into(),
        }
    }

    proptest! {
        // Hostile rows (any text, any lines of tab-separated fields) never panic, and
        // every entry read back encodes to a line that reads back the same.
        #[test]
        fn hostile_rows_read_without_panicking(
            value in "[a-z0-9%\\t\\n -]{0,200}",
            lines in prop::collection::vec(
                prop::collection::vec("[a-z0-9%-]{0,6}|pending|leased|[0-9]{1,20}", 0..14),
                0..4,
            ),
        ) {
            let mut text = value.clone();
            for fields in &lines {
                text.push('\n');
                text.push_str(&fields.join("\t"));
            }
            for v in [value, text] {
                let leases = Leases::read(vec![row(v)]);
                for r in &leases.rows {
                    let again = Leases::read(vec![row(encode(&r.head, &r.entries))]);
                    prop_assert_eq!(&again.rows[0].entries, &r.entries);
                    prop_assert_eq!(&again.rows[0].head, &r.head);
                }
                let _ = leases.overlay();
            }
        }
    }
}
