//! The key layout of [`super::KvStore`] (layout 3): ordered string keys.
//!
//! ```text
//! R/<id>                                               the row (`codec::write_row`)
//! P/<rank>/<dueMs>/<createdMs>/<id>                    claim order, non-terminal only
//! L/<createdMs>/<id>                                   list order
//! T/<stage>/<createdMs>/<id>                           list order within a stage
//! E/<eventId>/<id>                                     by event id
//! S/<slot>/<part>/<inverted createdAt>/<eventId>/<id>  by NIP-01 slot, newest first
//! K/<slot>                                             the slot's lock (empty value)
//! o/<hex owner>                                        an owner's heartbeat
//! ```
//! Numbers are 20 decimal digits, zero-padded (every `u64`), so their string order is
//! their numeric order. Free text (item ids, event ids, slots) is written as
//! it is, except that an ASCII byte outside `[A-Za-z0-9._:-]` (`/`, `%`, space, …)
//! becomes `%XX`: item ids (1..=128 of `[A-Za-z0-9._:-]`) and event ids (64 lowercase
//! hex digits) are never escaped, so their keys keep `str` order; a slot's `d` tag is
//! escaped where it must be, and its non-ASCII characters are kept (only the slot's
//! prefix is ever ranged over, so the order among slots, which UTF-8 and UTF-16 may
//! see differently, is never used). Free text never holds `/`, so one text's keys
//! never mix with another's, and a key is never followed by a key between it and
//! itself plus `!`.
//!
//! Why not hex, as layout 2 did: hex doubles every id, and a Deno KV atomic operation
//! counts its keys' bytes (80 KiB). With an item id of 64 characters (the default: the
//! event id) a new note's keys are 489 bytes here against 873 in layout 2,
//! so a batch of 100 fits Deno KV's 100 checks (layout 2: about 74), and an
//! addressable event's `d` tag may be about 1 800 bytes (layout 2: about 800).
//!
//! `<part>` is the row's `slotPart` (`1` may still be sent, `0` satisfied or
//! superseded, `2` cancelled); `<inverted createdAt>` is `u64::MAX − created_at`, so the
//! newest version comes first and, at equal `created_at`, the lower event id (NIP-01).
//! `<rank>` is the priority's rank (0 high, 1 normal, 2 low), plus [`DRAFT_RANKS`] for a
//! draft (3, 4, 5), twice that for a route to resolve (6, 7, 8) and three times for both
//! (9, 10, 11): a claim reads one range per rank, high first, of records ready to
//! publish or of those it can prepare ([`crate::core::ClaimRequest::prepare`]), so a
//! context that cannot sign never reads a draft, nor wakes up for one.
//! Index keys are derived from the row on every write and written in the same commit.
//!
//! Layouts 1 and 2 wrote lowercase prefixes (`r/`, `p/`, `d/`, `l/`, `t/`, `e/`, `s/`,
//! `k/`: free text hex-encoded; layout 1 filed the claim order under `d/`). When a
//! database opens, their rows move to this layout and their other keys are deleted
//! ([`OLD_RANGES`]): by [`super::KvStore::migrate`] on the storage adapters, by
//! `store::idb::legacy` in IndexedDB.

use crate::core::{ClaimRequest, Priority, Record, Stage};
use crate::store::codec::RowIndex;

/// The prefix of row keys.
pub const ROWS: &str = "R/";
/// The prefix of the claim-order index.
pub const DUE: &str = "P/";
/// The prefix of the list-order index.
pub const CREATED: &str = "L/";
/// The prefix of the stage index.
pub const STAGE: &str = "T/";
/// The prefix of the event-id index.
pub const EVENT: &str = "E/";
/// The prefix of the slot index.
pub const SLOT: &str = "S/";
/// The prefix of slot locks.
pub const LOCK: &str = "K/";
/// The prefix of lease rows (one per claim: see docs/STORE.md); the key `Q/` itself is
/// their lock.
pub const LEASES: &str = "Q/";
/// The prefix of owners' heartbeats ([`crate::core::heartbeat`]).
pub const OWNER: &str = "o/";

/// The prefix of layouts 1 and 2's rows (the item id in hex).
pub const OLD_ROWS: &str = "r/";
/// The key ranges of layouts 1 and 2 (every key of theirs but heartbeats, `o/`, which
/// are unchanged): `[d/, o/)` and `[p/, u/)`.
pub const OLD_RANGES: [(&str, &str); 2] = [("d/", "o/"), ("p/", "u/")];

fn num(n: u64) -> String {
    format!("{n:020}")
}

/// Free text as this layout writes it (see the module documentation).
pub(crate) fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() && !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')) {
            let hex = hex::encode_upper([c as u8]);
            out.push('%');
            out.push_str(&hex);
        } else {
            out.push(c);
        }
    }
    out
}

/// The text [`text`] wrote, if `s` is such a text.
pub(crate) fn untext(s: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(s.len());
    let mut rest = s.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b == b'%' {
            let digits = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(digits, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(b);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

/// The key of `owner`'s heartbeat.
pub fn owner_key(owner: &str) -> String {
    format!("{OWNER}{}", hex::encode(owner.as_bytes()))
}

/// The key of the row of item `id`.
pub fn row_key(id: &str) -> String {
    format!("{ROWS}{}", text(id))
}

/// The claim-order key `(rank, due_ms, created_ms, id)`.
pub fn due_key(rank: u8, due_ms: u64, created_ms: u64, id: &str) -> String {
    format!(
        "{}{}/{}/{}",
        rank_prefix(rank),
        num(due_ms),
        num(created_ms),
        text(id)
    )
}

/// What each of a record's needs adds to its priority's claim rank ([`claim_rank`]).
pub const DRAFT_RANKS: u8 = 3;

/// The `<rank>` of `record`'s claim-order key: its priority's rank, plus
/// [`DRAFT_RANKS`] times its needs ([`Record::needs`]: 1 a draft, 2 a route to
/// resolve, 3 both), so a context reads only the records it can take.
pub fn claim_rank(record: &Record) -> u8 {
    record.priority.rank() + DRAFT_RANKS * record.needs()
}

/// The claim ranks a claim reads, in order (by needs, then high priority first): of
/// records ready to publish (`prepare` 0), or of those whose needs are all in
/// `prepare` ([`crate::core::ClaimRequest::prepare`]).
pub fn claim_ranks(prepare: u8) -> impl Iterator<Item = u8> {
    (0..4 * DRAFT_RANKS).filter(move |rank| ClaimRequest::takes(prepare, rank / DRAFT_RANKS))
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

/// The list-order key `(created_ms, id)`.
pub fn created_key(created_ms: u64, id: &str) -> String {
    format!("{CREATED}{}/{}", num(created_ms), text(id))
}

/// The prefix of every stage-index key of `stage`.
pub fn stage_prefix(stage: Stage) -> String {
    format!("{STAGE}{}/", stage.as_str())
}

/// The stage-index key `(stage, created_ms, id)`.
pub fn stage_key(stage: &str, created_ms: u64, id: &str) -> String {
    format!("{STAGE}{stage}/{}/{}", num(created_ms), text(id))
}

/// The prefix of the event-index keys of `event_id`.
pub fn event_prefix(event_id: &str) -> String {
    format!("{EVENT}{}/", text(event_id))
}

/// The event-index key `(event_id, id)`.
pub fn event_key(event_id: &str, id: &str) -> String {
    format!("{}{}", event_prefix(event_id), text(id))
}

/// The prefix of the slot-index keys of `slot` in partition `part` (1 may still be
/// sent, 0 satisfied or superseded, 2 cancelled).
pub fn slot_prefix(slot: &str, part: u8) -> String {
    format!("{SLOT}{}/{part}/", text(slot))
}

/// The slot-index key: newest `created_at` first, then the lower event id.
pub fn slot_key(slot: &str, part: u8, created_at: u64, event_id: &str, id: &str) -> String {
    format!(
        "{}{}/{}/{}",
        slot_prefix(slot, part),
        num(u64::MAX - created_at),
        text(event_id),
        text(id)
    )
}

/// The key of the lock of `slot`: every enqueue that reads a slot rewrites it, so two
/// enqueues of versions of one slot cannot both commit.
pub fn lock_key(slot: &str) -> String {
    format!("{LOCK}{}", text(slot))
}

/// The first key past every key starting with `prefix` (which ends in `/`).
pub fn prefix_end(prefix: &str) -> String {
    let mut end = prefix.strip_suffix('/').unwrap_or(prefix).to_string();
    end.push('0');
    end
}

/// The first key after `key` among this layout's keys: nothing sorts between `key` and
/// `key + "!"` (`!` comes before every character a key continues with).
pub fn after(key: &str) -> String {
    format!("{key}!")
}

/// The item id at the end of an index or row key.
pub fn id_of(key: &str) -> Option<String> {
    untext(key.rsplit('/').next()?)
}

/// The row key of item `id` in layouts 1 and 2 (what [`old_row_id`] reads): for tests
/// of the move.
pub fn old_row_key(id: &str) -> String {
    format!("{OLD_ROWS}{}", hex::encode(id.as_bytes()))
}

/// The item id of a row key of layouts 1 and 2 ([`OLD_ROWS`]): its hex decoded, or
/// the key's text as it is when that is not hex of UTF-8 (such a row is moved, and
/// reported as corrupt, under that id). `None` for any other key.
pub fn old_row_id(key: &str) -> Option<String> {
    let hex_id = key.strip_prefix(OLD_ROWS)?;
    let decoded = hex::decode(hex_id).ok().map(String::from_utf8);
    Some(match decoded {
        Some(Ok(id)) => id,
        _ => hex_id.to_string(),
    })
}

/// The `dueMs` of a claim-order key.
pub fn due_of(key: &str) -> Option<u64> {
    let (_rank, rest) = key.strip_prefix(DUE)?.split_once('/')?;
    rest.get(..20)?.parse().ok()
}

/// The highest claim rank ([`claim_ranks`] reads `0..=MAX_RANK`).
pub const MAX_RANK: u8 = 4 * DRAFT_RANKS - 1;

/// The rank a row's claim-order key is filed under: its `rank`, at most [`MAX_RANK`]
/// (a rank no claim reads would never be claimed); a format-1 row written before
/// priorities has no rank: it was normal.
pub fn filed_rank(rank: Option<u8>) -> u8 {
    rank.unwrap_or(Priority::Normal.rank()).min(MAX_RANK)
}

/// Where earlier builds filed a claim-order key of rank 10 or 11 (a draft with a
/// route, normal or low): under rank 9, beside the high ones (one digit). Such a key is
/// still claimed (a claim reads rank 9, and takes what the row says is ready) and is
/// deleted by the record's next write, with its other old keys
/// ([`stored_index_keys`]); lease rows hide it as they hide the key the row has now.
pub fn one_digit_due_key(rank: u8, due_ms: u64, created_ms: u64, id: &str) -> Option<String> {
    (rank > 9).then(|| due_key(9, due_ms, created_ms, id))
}

/// The index keys a stored row may have: those it has now ([`index_keys`]) and the
/// claim-order key an older build filed it under ([`one_digit_due_key`]).
pub fn stored_index_keys(row: &RowIndex) -> Vec<String> {
    let mut keys = index_keys(row);
    if let Some(key) = row
        .due_ms
        .and_then(|due| one_digit_due_key(filed_rank(row.rank), due, row.created_ms, &row.id))
    {
        keys.push(key);
    }
    keys
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
        keys.push(due_key(filed_rank(row.rank), due, created, &row.id));
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
