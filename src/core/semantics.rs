//! Nostr semantics in the queue: which queued records an enqueue makes pointless.
//!
//! - **Replaceable** events (kinds 0, 3, 10000–19999) have one slot per
//!   `(pubkey, kind)`, **addressable** events (30000–39999) one per
//!   `(pubkey, kind, d tag)` (NIP-01). Of two versions the newer has the higher
//!   `created_at`, on a tie the lower id, as relays decide. Enqueueing a version
//!   supersedes every older version of its slot that may still be sent
//!   ([`Stage::may_send`]): they end in stage `superseded`, reason `superseded`, naming
//!   the newer event. A version older than one the outbox already holds (queued,
//!   exhausted, satisfied or superseded, until it is purged) is written already
//!   superseded and never sent.
//! - A **deletion** (kind 5, NIP-09) withdraws the records of its author that it
//!   references and that may still be sent: `e` tags by event id, `a` tags for every
//!   version of the address with `created_at` ≤ the deletion's (reason `deleted`).
//!   Deletions are never deleted by deletions (NIP-09). The deletion itself is sent.
//! - A **request to vanish** (kind 62, NIP-62) withdraws its author's records that may
//!   still be sent, with `created_at` ≤ the request's, whose every target it names in a
//!   `relay` tag ([`ALL_RELAYS`]: every relay; a tag names a target written as targets
//!   are normalized, e.g. by `normalizeRelayUrl`) (reason `vanished`). A record with a
//!   target it does not name stays: those relays still get the event, and the named
//!   ones refuse it once they have honoured the request. Requests to vanish are never
//!   withdrawn by one. The stores read every record that may still be sent for it
//!   ([`Lookups::live`]): a request to vanish is rare, and that read is as long as the
//!   queue.
//! - **Ephemeral** events (20000–29999) get a deadline of [`EPHEMERAL_DEADLINE_MS`]
//!   when the plan names none; [`super::machine::decide_enqueue`] refuses an event whose
//!   NIP-40 expiration has passed.
//!
//! Stores gather the records a plan needs ([`lookups`]: its slot, the events and
//! addresses it deletes) inside their transaction and hand them to
//! [`decide_enqueues`], which decides a whole batch in order and answers what to write.
//! A record enqueued after a deletion that names it is not withdrawn by it (the rules
//! act on what is queued when the newer version or the deletion arrives).

use super::envelope::{EventEnvelope, EventMeta};
use super::error::CoreError;
use super::machine::{decide_enqueue, supersede, EnqueueDecision, Enqueued};
use super::plan::Plan;
use super::policy::TargetState;
use super::record::{Record, Stage, StopReason};

/// The deadline an ephemeral event gets when its plan names none: 10 s after enqueue.
/// An ephemeral event means something only now; it is not retried after this.
pub const EPHEMERAL_DEADLINE_MS: u64 = 10_000;

/// The NIP-09 deletion kind.
pub const DELETION_KIND: u16 = 5;

/// The NIP-62 request to vanish kind.
pub const VANISH_KIND: u16 = 62;

/// The `relay` tag value of a request to vanish from every relay (NIP-62).
pub const ALL_RELAYS: &str = "ALL_RELAYS";

/// How relays treat a kind (NIP-01).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindClass {
    /// Stored; every event stands alone.
    Regular,
    /// Kinds 0, 3 and 10000–19999: one event per `(pubkey, kind)`.
    Replaceable,
    /// Kinds 20000–29999: not stored by relays.
    Ephemeral,
    /// Kinds 30000–39999: one event per `(pubkey, kind, d tag)`.
    Addressable,
}

/// The class of `kind`.
pub fn kind_class(kind: u16) -> KindClass {
    match kind {
        0 | 3 | 10_000..=19_999 => KindClass::Replaceable,
        20_000..=29_999 => KindClass::Ephemeral,
        30_000..=39_999 => KindClass::Addressable,
        _ => KindClass::Regular,
    }
}

/// True for an event of an ephemeral kind.
pub fn is_ephemeral(event: &EventEnvelope) -> bool {
    event
        .meta
        .as_ref()
        .is_some_and(|m| kind_class(m.kind) == KindClass::Ephemeral)
}

impl EventMeta {
    /// The slot a replaceable or addressable event occupies, as its NIP-01 address
    /// `kind:pubkey:d` (`d` empty for replaceable kinds); `None` for other kinds.
    pub fn slot(&self) -> Option<String> {
        match kind_class(self.kind) {
            KindClass::Replaceable => Some(format!("{}:{}:", self.kind, self.pubkey)),
            KindClass::Addressable => Some(format!("{}:{}:{}", self.kind, self.pubkey, self.d)),
            _ => None,
        }
    }

    /// True for a kind-5 deletion.
    pub fn is_deletion(&self) -> bool {
        self.kind == DELETION_KIND
    }

    /// True for a kind-62 request to vanish.
    pub fn is_vanish(&self) -> bool {
        self.kind == VANISH_KIND
    }
}

/// The slot of a record's event ([`EventMeta::slot`]).
pub fn slot_of(record: &Record) -> Option<String> {
    record.event.meta.as_ref().and_then(EventMeta::slot)
}

/// True when version `a` (`created_at`, event id) replaces version `b`: a higher
/// `created_at`, or the same and a lower id (NIP-01).
pub fn is_newer(a: (u64, &str), b: (u64, &str)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
}

fn version(record: &Record) -> Option<(u64, &str)> {
    record
        .event
        .meta
        .as_ref()
        .map(|m| (m.created_at, record.event_name()))
}

/// A NIP-01 address `kind:pubkey:d` as the slot it names, when its kind is replaceable
/// or addressable and its pubkey 64 lowercase hex: `kind:pubkey:` for a replaceable
/// kind (whose `d` is ignored; the trailing `:` may be left out), `kind:pubkey:d` for
/// an addressable one.
pub fn normalize_address(address: &str) -> Option<String> {
    let mut parts = address.splitn(3, ':');
    let kind_text = parts.next()?;
    if kind_text.is_empty() || !kind_text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let kind: u16 = kind_text.parse().ok()?;
    let pubkey = parts.next()?;
    if pubkey.len() != 64
        || !pubkey
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    let d = parts.next();
    match kind_class(kind) {
        KindClass::Replaceable => Some(format!("{kind}:{pubkey}:")),
        KindClass::Addressable => Some(format!("{kind}:{pubkey}:{}", d?)),
        _ => None,
    }
}

/// What a store must read before deciding a plan, inside the same transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lookups {
    /// Slots (addresses): for each, every record of the slot that may still be sent
    /// ([`Stage::may_send`]) and the newest record of the slot in any other stage
    /// (a store may hand back more; the rules filter).
    pub slots: Vec<String>,
    /// Event ids: every record of each (any stage; the rules filter).
    pub event_ids: Vec<String>,
    /// Every record that may still be sent (a request to vanish; the rules filter).
    pub live: bool,
}

impl Lookups {
    /// True when the plan needs no other record.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty() && self.event_ids.is_empty() && !self.live
    }

    /// Sorts both lists and drops repeats.
    pub fn normalize(&mut self) {
        super::order::sort_dedup(&mut self.slots);
        super::order::sort_dedup(&mut self.event_ids);
    }

    /// True when `record` answers these lookups (its event id or its slot is named, or
    /// every record that may still be sent is wanted and it may).
    pub fn matches(&self, record: &Record) -> bool {
        (self.live && record.stage.may_send())
            || self.event_ids.contains(&record.event.id)
            || slot_of(record).is_some_and(|s| self.slots.contains(&s))
    }
}

/// True when `plan` has rules that read other records ([`lookups`] is not empty): a
/// replaceable or addressable event, a deletion or a request to vanish. Allocates
/// nothing.
pub fn needs_lookups(plan: &Plan) -> bool {
    plan.event.meta.as_ref().is_some_and(|m| {
        m.is_deletion()
            || m.is_vanish()
            || matches!(
                kind_class(m.kind),
                KindClass::Replaceable | KindClass::Addressable
            )
    })
}

/// The records [`decide_enqueues`] needs for `plan`: its own slot, and for a deletion
/// the ids and addresses of its author that it names.
pub fn lookups(plan: &Plan) -> Lookups {
    let mut out = Lookups::default();
    let Some(meta) = plan.event.meta.as_ref() else {
        return out;
    };
    if let Some(slot) = meta.slot() {
        out.slots.push(slot);
    }
    out.live = meta.is_vanish();
    if meta.is_deletion() {
        out.event_ids = meta.deletes_ids.clone();
        out.slots.extend(
            meta.deletes_addresses
                .iter()
                .filter_map(|a| normalize_address(a))
                .filter(|a| a.split(':').nth(1) == Some(meta.pubkey.as_str())),
        );
    }
    out.normalize();
    out
}

/// Why `deletion` withdraws `record`, if it does: same author, not itself a deletion,
/// named by id, or by address with a `created_at` no later than the deletion's.
fn deletes(deletion: &EventMeta, record: &Record) -> bool {
    let Some(meta) = record.event.meta.as_ref() else {
        return false;
    };
    if meta.pubkey != deletion.pubkey || meta.is_deletion() {
        return false;
    }
    deletion.deletes_ids.contains(&record.event.id)
        || (meta.created_at <= deletion.created_at
            && meta.slot().is_some_and(|s| {
                deletion
                    .deletes_addresses
                    .iter()
                    .any(|a| normalize_address(a).as_deref() == Some(s.as_str()))
            }))
}

/// Why the request to vanish `vanish` withdraws `record`, if it does: same author, not
/// itself a request to vanish, `created_at` no later than the request's, and every one
/// of its targets named (or [`ALL_RELAYS`]).
fn vanishes(vanish: &EventMeta, record: &Record) -> bool {
    let Some(meta) = record.event.meta.as_ref() else {
        return false;
    };
    let named = |t: &String| vanish.vanish_relays.contains(t);
    meta.pubkey == vanish.pubkey
        && !meta.is_vanish()
        && meta.created_at <= vanish.created_at
        && (vanish.vanish_relays.iter().any(|r| r == ALL_RELAYS)
            || record.targets.iter().all(named))
}

/// One plan decided against its stored record and the related records: the decision
/// and the records it withdraws.
fn decide_one(
    existing: Option<&Record>,
    plan: Plan,
    related: &[Record],
    now_ms: u64,
) -> Result<(EnqueueDecision, Vec<Record>), CoreError> {
    let decision = decide_enqueue(existing, plan, now_ms)?;
    let EnqueueDecision::Create(record) = decision else {
        return Ok((decision, Vec::new()));
    };
    // An imported `cancelled` or `superseded` record is history: the rules neither act
    // on it nor for it (`super::import`). A new record is `pending`.
    let history = matches!(record.stage, Stage::Cancelled | Stage::Superseded);
    let Some(meta) = record.event.meta.clone().filter(|_| !history) else {
        return Ok((EnqueueDecision::Create(record), Vec::new()));
    };
    let mine = (meta.created_at, record.event_name());
    let slot = meta.slot();
    let same_slot = |r: &&Record| slot.is_some() && slot_of(r) == slot;
    // A newer version already held (not cancelled): this one is born superseded.
    let newest = related
        .iter()
        .filter(same_slot)
        .filter(|r| r.stage != Stage::Cancelled)
        .filter_map(|r| version(r).filter(|v| is_newer(*v, mine)))
        .fold(None, |best: Option<(u64, &str)>, v| match best {
            Some(b) if !is_newer(v, b) => Some(b),
            _ => Some(v),
        });
    if let Some((_, by)) = newest {
        if !record.stage.may_send() {
            // An imported delivered (`satisfied`) older version stays as it is.
            return Ok((EnqueueDecision::Create(record), Vec::new()));
        }
        let mut born = supersede(&record, by, StopReason::Superseded, now_ms)?;
        // Born terminal: one revision, as any new record.
        born.revision = record.revision;
        return Ok((EnqueueDecision::Superseded(born), Vec::new()));
    }
    let mut withdrawn = Vec::new();
    for r in related {
        if !r.stage.may_send() || withdrawn.iter().any(|w: &Record| w.id == r.id) {
            continue;
        }
        let reason = if same_slot(&r) && version(r).is_some_and(|v| is_newer(mine, v)) {
            StopReason::Superseded
        } else if meta.is_deletion() && deletes(&meta, r) {
            StopReason::Deleted
        } else if meta.is_vanish() && vanishes(&meta, r) {
            StopReason::Vanished
        } else {
            continue;
        };
        withdrawn.push(supersede(r, record.event_name(), reason, now_ms)?);
    }
    Ok((EnqueueDecision::Create(record), withdrawn))
}

/// What a batch of enqueues writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchDecision {
    /// One answer per plan, in order (each with the records it withdrew).
    pub answers: Vec<Enqueued>,
    /// Every record to write (new ones and withdrawn ones), each once, in its final
    /// state, in the order first written.
    pub writes: Vec<Record>,
}

/// Decides a batch of enqueues in order, all or nothing. `stored[i]` is what the store
/// read for `plans[i]` before the batch: the record under its id, and the records
/// answering [`lookups`]`(&plans[i])`. Earlier plans of the batch count for later ones
/// (a repeated id replays or conflicts; a newer version or a deletion later in the
/// batch withdraws an earlier one). Any invalid plan or conflict fails the batch.
///
/// Plans are grouped by id and by slot with two sorts of their indices (no map), so a
/// batch of regular events costs what it did before these rules: `O(n log n)`.
pub fn decide_enqueues(
    plans: Vec<Plan>,
    stored: Vec<(Option<Record>, Vec<Record>)>,
    now_ms: u64,
) -> Result<BatchDecision, CoreError> {
    if plans.len() != stored.len() {
        return Err(CoreError::arg("stored", "one entry per plan is required"));
    }
    let ids: Vec<String> = plans.iter().map(|p| p.id.clone()).collect();
    let slots: Vec<Option<String>> = plans
        .iter()
        .map(|p| p.event.meta.as_ref().and_then(EventMeta::slot))
        .collect();
    let event_ids: Vec<String> = plans.iter().map(|p| p.event.id.clone()).collect();
    let by_id = sorted_positions(&ids.iter().map(String::as_str).collect::<Vec<_>>());
    let slotted: Vec<usize> = (0..plans.len()).filter(|&i| slots[i].is_some()).collect();
    let slot_keys: Vec<&str> = slotted
        .iter()
        .map(|&i| slots[i].as_deref().unwrap_or(""))
        .collect();
    let by_slot: Vec<usize> = sorted_positions(&slot_keys)
        .into_iter()
        .map(|k| slotted[k])
        .collect();
    let mut overlay = Overlay {
        ids: &ids,
        by_id: &by_id,
        at: vec![None; ids.len()],
        others: Vec::new(),
        writes: Vec::new(),
    };
    let mut answers = Vec::with_capacity(ids.len());
    for (i, (plan, (existing, related))) in plans.into_iter().zip(stored).enumerate() {
        let existing = overlay.get(&plan.id).cloned().or(existing);
        let wanted = lookups(&plan);
        let mut context: Vec<Record> = related
            .into_iter()
            .map(|r| overlay.get(&r.id).cloned().unwrap_or(r))
            .collect();
        if !wanted.is_empty() {
            // Records written earlier in the batch that this plan needs. Of a slot (its
            // own, or an address a deletion names), the versions that may still be sent
            // and the newest other one: the rules read nothing else, and a batch of many
            // versions of one slot must not copy each earlier version for every later one.
            let push = |context: &mut Vec<Record>, r: &Record| {
                if !context.iter().any(|c| c.id == r.id) {
                    context.push(r.clone());
                }
            };
            for slot in &wanted.slots {
                let k = by_slot.partition_point(|&j| slots[j].as_deref() < Some(slot.as_str()));
                let mut newest: Option<&Record> = None;
                for &j in by_slot[k..]
                    .iter()
                    .take_while(|&&j| slots[j].as_deref() == Some(slot.as_str()))
                    .filter(|&&j| j < i)
                {
                    let Some(r) = overlay.get(&ids[j]) else {
                        continue;
                    };
                    if r.stage.may_send() {
                        push(&mut context, r);
                    } else if r.stage != Stage::Cancelled
                        && newest.is_none_or(|n| {
                            matches!((version(r), version(n)), (Some(a), Some(b)) if is_newer(a, b))
                        })
                    {
                        newest = Some(r);
                    }
                }
                if let Some(r) = newest {
                    push(&mut context, r);
                }
            }
            if !wanted.event_ids.is_empty() || wanted.live {
                for j in (0..i).filter(|&j| wanted.live || wanted.event_ids.contains(&event_ids[j]))
                {
                    if let Some(r) = overlay
                        .get(&ids[j])
                        .filter(|r| !wanted.live || r.stage.may_send())
                    {
                        push(&mut context, r);
                    }
                }
            }
        }
        let (decision, withdrawn) = decide_one(existing.as_ref(), plan, &context, now_ms)?;
        if decision.writes() {
            overlay.put(decision.record());
        }
        for w in &withdrawn {
            overlay.put(w);
        }
        let mut answer = decision.into_enqueued();
        answer.withdrawn = withdrawn;
        answers.push(answer);
    }
    Ok(BatchDecision {
        answers,
        writes: overlay.writes,
    })
}

/// The positions of `keys` in ascending order of key (equal keys by position), through
/// the crate's one sort ([`super::order::sorted_by`]).
pub fn sorted_positions(keys: &[&str]) -> Vec<usize> {
    super::order::sorted_by(keys.len(), &|a, b| keys[a].cmp(keys[b]))
}

/// The records a batch has written so far, found by id: through the plans' id groups
/// (`by_id`, the plan indices sorted by id), or among the few others (withdrawn stored
/// records no plan names).
struct Overlay<'a> {
    ids: &'a [String],
    by_id: &'a [usize],
    /// The write holding each id group's record, by the group's first position in
    /// `by_id`.
    at: Vec<Option<usize>>,
    others: Vec<usize>,
    writes: Vec<Record>,
}

impl Overlay<'_> {
    fn group(&self, id: &str) -> Option<usize> {
        let k = self.by_id.partition_point(|&i| self.ids[i].as_str() < id);
        (k < self.by_id.len() && self.ids[self.by_id[k]] == id).then_some(k)
    }

    fn position(&self, id: &str) -> Option<usize> {
        match self.group(id) {
            Some(g) => self.at[g],
            None => self
                .others
                .iter()
                .copied()
                .find(|&w| self.writes[w].id == id),
        }
    }

    fn get(&self, id: &str) -> Option<&Record> {
        self.position(id).map(|w| &self.writes[w])
    }

    fn put(&mut self, record: &Record) {
        match self.position(&record.id) {
            Some(w) => self.writes[w] = record.clone(),
            None => {
                self.writes.push(record.clone());
                let w = self.writes.len() - 1;
                match self.group(&record.id) {
                    Some(g) => self.at[g] = Some(w),
                    None => self.others.push(w),
                }
            }
        }
    }
}

/// Refuses to re-arm an exhausted record when a newer version of its slot is held:
/// `related` are the records the store found for the record's slot. The rules keep at
/// most one version of a slot that may be sent, the newest; this keeps `retry` from
/// breaking that.
pub fn check_retry(record: &Record, related: &[Record]) -> Result<(), CoreError> {
    let (Some(slot), Some(mine)) = (slot_of(record), version(record)) else {
        return Ok(());
    };
    let newer = related.iter().find(|r| {
        r.id != record.id
            && r.stage != Stage::Cancelled
            && slot_of(r).as_deref() == Some(slot.as_str())
            && version(r).is_some_and(|v| is_newer(v, mine))
    });
    match newer {
        Some(r) => Err(CoreError::NotRetryable {
            id: record.id.clone(),
            reason: format!("a newer version ({}) of its event is enqueued", r.event.id),
        }),
        None => Ok(()),
    }
}

/// The relays that accepted any of the `records` (their latest answer `accepted` or
/// `duplicate`), sorted and de-duplicated: where a NIP-09 deletion of those events
/// should go.
pub fn accepted_relays<'r>(records: impl IntoIterator<Item = &'r Record>) -> Vec<String> {
    let mut out: Vec<String> = records
        .into_iter()
        .flat_map(|r| {
            r.targets
                .iter()
                .filter(|t| r.target_state(t) == TargetState::Accepted)
                .cloned()
                .collect::<Vec<_>>()
        })
        .collect();
    super::order::sort_dedup(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{Policy, StageCounts};

    const PK: &str = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";

    fn envelope(n: u32, kind: u16, created_at: u64, d: &str) -> EventEnvelope {
        EventEnvelope {
            id: format!("{n:064x}"),
            raw: "{}".into(),
            expiration: None,
            meta: Some(EventMeta {
                pubkey: PK.into(),
                kind,
                created_at,
                d: d.into(),
                deletes_ids: Vec::new(),
                deletes_addresses: Vec::new(),
                protected: false,
                vanish_relays: Vec::new(),
            }),
        }
    }

    fn record(n: u32, kind: u16, created_at: u64, d: &str) -> Record {
        let plan = Plan::new(
            envelope(n, kind, created_at, d),
            vec!["r".into()],
            Policy::All,
        );
        match decide_enqueue(None, plan, 0).expect("valid") {
            EnqueueDecision::Create(r) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn kinds_are_classed_as_nip01_says() {
        for (kind, class) in [
            (0, KindClass::Replaceable),
            (1, KindClass::Regular),
            (3, KindClass::Replaceable),
            (5, KindClass::Regular),
            (9_999, KindClass::Regular),
            (10_000, KindClass::Replaceable),
            (19_999, KindClass::Replaceable),
            (20_000, KindClass::Ephemeral),
            (29_999, KindClass::Ephemeral),
            (30_000, KindClass::Addressable),
            (39_999, KindClass::Addressable),
            (40_000, KindClass::Regular),
        ] {
            assert_eq!(kind_class(kind), class, "kind {kind}");
        }
    }

    #[test]
    fn slots_and_addresses() {
        assert_eq!(
            envelope(1, 0, 1, "ignored").meta.and_then(|m| m.slot()),
            Some(format!("0:{PK}:"))
        );
        assert_eq!(
            envelope(1, 30_023, 1, "x:y").meta.and_then(|m| m.slot()),
            Some(format!("30023:{PK}:x:y"))
        );
        assert_eq!(envelope(1, 1, 1, "").meta.and_then(|m| m.slot()), None);
        assert_eq!(
            normalize_address(&format!("0:{PK}")),
            Some(format!("0:{PK}:"))
        );
        assert_eq!(
            normalize_address(&format!("3:{PK}:x")),
            Some(format!("3:{PK}:"))
        );
        assert_eq!(
            normalize_address(&format!("30023:{PK}:x:y")),
            Some(format!("30023:{PK}:x:y"))
        );
        assert_eq!(
            normalize_address(&format!("30023:{PK}:")),
            Some(format!("30023:{PK}:"))
        );
        for bad in [
            format!("30023:{PK}"),
            format!("1:{PK}:"),
            format!("+0:{PK}:"),
            "0:abc:".to_string(),
            format!("0:{}:", PK.to_uppercase()),
            String::new(),
            "70000:x:y".to_string(),
        ] {
            assert_eq!(normalize_address(&bad), None, "{bad}");
        }
    }

    #[test]
    fn newer_is_higher_created_at_then_lower_id() {
        assert!(is_newer((2, "b"), (1, "a")));
        assert!(is_newer((1, "a"), (1, "b")));
        assert!(!is_newer((1, "b"), (1, "a")));
        assert!(!is_newer((1, "a"), (1, "a")));
    }

    #[test]
    fn retry_is_refused_while_a_newer_version_is_held() {
        let old = record(1, 0, 10, "");
        let newer = record(2, 0, 20, "");
        let other = record(3, 10_002, 30, "");
        assert!(check_retry(&old, std::slice::from_ref(&other)).is_ok());
        assert_eq!(
            check_retry(&old, &[newer.clone(), other]).map_err(|e| e.code()),
            Err("not_retryable")
        );
        assert!(check_retry(&newer, &[old]).is_ok());
        let mut cancelled = newer;
        cancelled.stage = Stage::Cancelled;
        assert!(check_retry(&record(4, 0, 10, ""), &[cancelled]).is_ok());
    }

    #[test]
    fn supersede_only_what_may_still_be_sent() {
        let r = record(1, 0, 10, "");
        let s = supersede(&r, "x", StopReason::Superseded, 5).expect("pending");
        assert_eq!((s.stage, s.revision), (Stage::Superseded, 2));
        assert_eq!(
            supersede(&s, "y", StopReason::Deleted, 6).map_err(|e| e.code()),
            Err("already_terminal")
        );
        assert_eq!(
            supersede(&r, "x", StopReason::Cancelled, 5).map_err(|e| e.code()),
            Err("invalid_argument")
        );
        let mut counts = StageCounts::default();
        counts.add(s.stage);
        assert_eq!((counts.superseded, counts.total()), (1, 1));
    }

    #[test]
    fn batches_need_one_stored_entry_per_plan() {
        let plan = Plan::new(envelope(1, 1, 1, ""), vec!["r".into()], Policy::All);
        assert_eq!(
            decide_enqueues(vec![plan], Vec::new(), 0).map_err(|e| e.code()),
            Err("invalid_argument")
        );
    }

    #[test]
    fn accepted_relays_come_from_the_latest_evidence() {
        use crate::core::{Evidence, Outcome};
        let mut r = record(1, 1, 1, "");
        r.targets = vec!["a".into(), "b".into(), "c".into()];
        for (t, o) in [
            ("a", Outcome::Accepted),
            ("b", Outcome::Timeout),
            ("c", Outcome::Duplicate),
        ] {
            r.evidence.push(Evidence {
                target: t.into(),
                attempt: 1,
                outcome: o,
                message: String::new(),
                at_ms: 1,
                tries: 1,
                first_at_ms: None,
            });
        }
        assert_eq!(accepted_relays([&r, &r]), vec!["a", "c"]);
    }
}
