//! The key layout of [`super::KvStore`]: ordered ASCII string keys.
//!
//! ```text
//! r/<hex id>                                           the row (`codec::write_row`)
//! p/<rank>/<dueMs>/<createdMs>/<hex id>                claim order, non-terminal only
//! l/<createdMs>/<hex id>                               list order
//! t/<stage>/<createdMs>/<hex id>                       list order within a stage
//! e/<hex eventId>/<hex id>                             by event id
//! s/<hex slot>/<part>/<inverted createdAt>/<hex eventId>/<hex id>
//!                                                      by NIP-01 slot, newest first
//! k/<hex slot>                                         the slot's lock (empty value)
//! ```
//! Numbers are 20 decimal digits, zero-padded (every `u64`), so their string order is
//! their numeric order. Free text (item ids, event ids, slots) is lowercase hex of its
//! UTF-8 bytes: two hex digits per byte keep its byte order (`str`'s order), and `/`
//! sorts before every hex digit, so a shorter text sorts before the texts it is a
//! prefix of, as in `str`'s order, and one text's keys never mix with another's.
//! `<part>` is the row's `slotPart` (`1` may still be sent, `0` satisfied or
//! superseded, `2` cancelled); `<inverted createdAt>` is `u64::MAX − created_at`, so the
//! newest version comes first and, at equal `created_at`, the lower event id (NIP-01).
//! `<rank>` is the priority's one-digit rank (0 high, 1 normal, 2 low), plus
//! [`DRAFT_RANKS`] for a draft (3, 4, 5): a claim reads one range per rank, high first,
//! of signed records or of drafts ([`crate::core::ClaimRequest::drafts`]), so a context
//! that cannot sign never reads a draft, nor wakes up for one.
//! Index keys are derived from the row on every write and written in the same commit.
//!
//! Layout 1 (before priorities) filed the claim order under
//! `d/<dueMs>/<createdMs>/<hex id>`; its rows have no `rank`. [`index_keys`] gives such a
//! row its layout-1 key, so rewriting the row moves it to `p/`;
//! [`super::KvStore::migrate`] rewrites every row that still has a `d/` key.

use crate::core::{Priority, Record, Stage};
use crate::store::codec::RowIndex;

/// The prefix of row keys.
pub const ROWS: &str = "r/";
/// The prefix of the claim-order index.
pub const DUE: &str = "p/";
/// The prefix of layout 1's claim-order index (rows written before priorities).
pub const LEGACY_DUE: &str = "d/";
/// The prefix of the list-order index.
pub const CREATED: &str = "l/";
/// The prefix of the stage index.
pub const STAGE: &str = "t/";
/// The prefix of the event-id index.
pub const EVENT: &str = "e/";
/// The prefix of the slot index.
pub const SLOT: &str = "s/";
/// The prefix of slot locks.
pub const LOCK: &str = "k/";
/// The prefix of owners' heartbeats ([`crate::core::heartbeat`]).
pub const OWNER: &str = "o/";

fn num(n: u64) -> String {
    format!("{n:020}")
}

fn hex(text: &str) -> String {
    hex::encode(text.as_bytes())
}

/// The key of `owner`'s heartbeat.
pub fn owner_key(owner: &str) -> String {
    format!("{OWNER}{}", hex(owner))
}

/// The key of the row of item `id`.
pub fn row_key(id: &str) -> String {
    format!("{ROWS}{}", hex(id))
}

/// The claim-order key `(rank, due_ms, created_ms, id)`.
pub fn due_key(rank: u8, due_ms: u64, created_ms: u64, id: &str) -> String {
    format!(
        "{}{}/{}/{}",
        rank_prefix(rank),
        num(due_ms),
        num(created_ms),
        hex(id)
    )
}

/// What a draft's claim rank adds to its priority's ([`claim_rank`]).
pub const DRAFT_RANKS: u8 = 3;

/// The `<rank>` of `record`'s claim-order key: its priority's rank, plus
/// [`DRAFT_RANKS`] for a draft.
pub fn claim_rank(record: &Record) -> u8 {
    record.priority.rank() + if record.is_draft() { DRAFT_RANKS } else { 0 }
}

/// The claim ranks a claim reads, in order: of drafts, or of signed records.
pub fn claim_ranks(drafts: bool) -> impl Iterator<Item = u8> {
    let base = if drafts { DRAFT_RANKS } else { 0 };
    Priority::ALL.into_iter().map(move |p| p.rank() + base)
}

/// The prefix of the claim-order keys of priority rank `rank`.
pub fn rank_prefix(rank: u8) -> String {
    format!("{DUE}{rank}/")
}

/// The end (exclusive) of the claim-order keys of `rank` due at `now_ms`: the range a
/// claim reads from `rank_prefix(rank)`.
pub fn due_end(rank: u8, now_ms: u64) -> String {
    let prefix = rank_prefix(rank);
    match now_ms.checked_add(1) {
        Some(next) => format!("{prefix}{}", num(next)),
        None => prefix_end(&prefix),
    }
}

/// Layout 1's claim-order key `(due_ms, created_ms, id)`.
pub fn legacy_due_key(due_ms: u64, created_ms: u64, id: &str) -> String {
    format!(
        "{LEGACY_DUE}{}/{}/{}",
        num(due_ms),
        num(created_ms),
        hex(id)
    )
}

/// The list-order key `(created_ms, id)`.
pub fn created_key(created_ms: u64, id: &str) -> String {
    format!("{CREATED}{}/{}", num(created_ms), hex(id))
}

/// The prefix of every stage-index key of `stage`.
pub fn stage_prefix(stage: Stage) -> String {
    format!("{STAGE}{}/", stage.as_str())
}

/// The stage-index key `(stage, created_ms, id)`.
pub fn stage_key(stage: &str, created_ms: u64, id: &str) -> String {
    format!("{STAGE}{stage}/{}/{}", num(created_ms), hex(id))
}

/// The prefix of the event-index keys of `event_id`.
pub fn event_prefix(event_id: &str) -> String {
    format!("{EVENT}{}/", hex(event_id))
}

/// The event-index key `(event_id, id)`.
pub fn event_key(event_id: &str, id: &str) -> String {
    format!("{}{}", event_prefix(event_id), hex(id))
}

/// The prefix of the slot-index keys of `slot` in partition `part` (1 may still be
/// sent, 0 satisfied or superseded, 2 cancelled).
pub fn slot_prefix(slot: &str, part: u8) -> String {
    format!("{SLOT}{}/{part}/", hex(slot))
}

/// The slot-index key: newest `created_at` first, then the lower event id.
pub fn slot_key(slot: &str, part: u8, created_at: u64, event_id: &str, id: &str) -> String {
    format!(
        "{}{}/{}/{}",
        slot_prefix(slot, part),
        num(u64::MAX - created_at),
        hex(event_id),
        hex(id)
    )
}

/// The key of the lock of `slot`: every enqueue that reads a slot rewrites it, so two
/// enqueues of versions of one slot cannot both commit.
pub fn lock_key(slot: &str) -> String {
    format!("{LOCK}{}", hex(slot))
}

/// The first key past every key starting with `prefix` (which ends in `/`).
pub fn prefix_end(prefix: &str) -> String {
    let mut end = prefix.strip_suffix('/').unwrap_or(prefix).to_string();
    end.push('0');
    end
}

/// The first key after `key` among this layout's keys: nothing sorts between `key` and
/// `key + "!"` (`!` comes before `/` and every hex digit).
pub fn after(key: &str) -> String {
    format!("{key}!")
}

/// The item id at the end of an index or row key, when its hex decodes.
pub fn id_of(key: &str) -> Option<String> {
    let hex_id = key.rsplit('/').next()?;
    String::from_utf8(hex::decode(hex_id).ok()?).ok()
}

/// The `dueMs` of a claim-order key.
pub fn due_of(key: &str) -> Option<u64> {
    key.strip_prefix(DUE)?.get(2..22)?.parse().ok()
}

/// Every index key of a row with the index fields `row` (the row key aside).
pub fn index_keys(row: &RowIndex) -> Vec<String> {
    let created = row.created_ms;
    let mut keys = vec![
        created_key(created, &row.id),
        stage_key(&row.stage, created, &row.id),
        event_key(&row.event_id, &row.id),
    ];
    if let Some(due) = row.due_ms {
        keys.push(match row.rank {
            Some(rank) => due_key(rank.min(9), due, created, &row.id),
            None => legacy_due_key(due, created, &row.id),
        });
    }
    if let Some((slot, part, created_at)) = &row.slot {
        keys.push(slot_key(
            slot,
            (*part).min(9),
            *created_at,
            &row.event_id,
            &row.id,
        ));
    }
    keys
}

/// The most index keys one row has.
pub const MAX_INDEX_KEYS: usize = 5;
