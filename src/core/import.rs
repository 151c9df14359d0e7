//! Records brought in from another outbox (an export of another browser, device or
//! runtime): checked, and turned into the plan they were enqueued with, carrying the
//! record itself ([`Plan::imported`]). An import is then an enqueue of that plan, so the
//! rules of an enqueue are the rules of an import, decided by
//! [`super::semantics::decide_enqueues`] in the same transaction as the write:
//! - a record whose id is already stored with the same plan is a replay (nothing is
//!   written, whatever either side's stage); a different plan under the id is a
//!   [`CoreError::PlanConflict`];
//! - a record that may still be sent, of a replaceable or addressable event of which a
//!   newer version is held here, arrives `superseded`; a newer version, or a NIP-09
//!   deletion, that may still be sent or was delivered withdraws the older versions
//!   (and the deleted events) here that may still be sent, as its enqueue would;
//! - a `cancelled` or `superseded` record is history: stored as it is, it neither
//!   withdraws nor is withdrawn, and a delivered (`satisfied`) one is never withdrawn;
//! - a leased record arrives unleased (its lease belonged to a flusher of the other
//!   outbox), claimable at once, with its attempt count unchanged: the attempt that
//!   lease was for was never recorded, so it is made again under the same number, as
//!   after a crash.
//!
//! Pure: the caller verified the event (id and signature) and the relay URLs.

use super::error::CoreError;
use super::plan::Plan;
use super::record::{Record, Stage};
use super::semantics::is_ephemeral;

fn bad(reason: impl Into<String>) -> CoreError {
    CoreError::arg("record", reason)
}

/// The plan `record` was enqueued with, carrying `record` as its import
/// ([`Plan::imported`]). Fails with [`CoreError::InvalidArgument`] (field `record`)
/// when the record does not hold together: its plan does not validate or has another
/// digest, its stage disagrees with its lease, due time or reason, its evidence names a
/// relay that is not a target or an attempt not made, its satisfaction is not its
/// policy's verdict over its evidence.
pub fn plan_for(record: Record, now_ms: u64) -> Result<Plan, CoreError> {
    // Its own targets: those its route's resolution added are not its plan's.
    let routed = record.routed.as_deref().unwrap_or_default();
    let own: Vec<String> = record
        .targets
        .iter()
        .filter(|t| !routed.contains(t))
        .cloned()
        .collect();
    if (record.routed.is_some() && record.route.is_empty())
        || own.len() + routed.len() != record.targets.len()
    {
        return Err(bad("its routed relays are not targets of its route"));
    }
    let mut plan = Plan {
        id: record.id.clone(),
        event: record.event.clone(),
        targets: own.clone(),
        policy: record.policy.clone(),
        max_attempts: record.max_attempts,
        deadline_ms: record.deadline_ms,
        lane: record.lane.clone(),
        priority: record.priority,
        stop_when_satisfied: record.stop_when_satisfied,
        group_size: record.group_size,
        route: record.route.clone(),
        // The schedule is the record's due time, which the import keeps.
        not_before_ms: None,
        imported: None,
    }
    .normalize()?;
    if plan.targets != own || plan.policy != record.policy {
        return Err(bad("its targets or policy are not in canonical form"));
    }
    if plan.digest() != record.plan_digest {
        // An ephemeral event's deadline was set at its enqueue, not by its plan.
        plan.deadline_ms = None;
        if !is_ephemeral(&record.event) || plan.digest() != record.plan_digest {
            return Err(bad("its plan digest is not the digest of its plan"));
        }
    }
    check(&record)?;
    plan.imported = Some(Box::new(arrive(record, now_ms)));
    Ok(plan)
}

/// The consistency of a record's state (see [`plan_for`]): what the machine keeps true
/// of every record it writes (`tests/core/props.rs` checks both sides: every record the
/// machine reaches passes, and a record that passes keeps every invariant).
fn check(r: &Record) -> Result<(), CoreError> {
    use super::{Outcome, Satisfaction, StopReason};
    if r.revision == 0 || r.attempts > r.attempt_limit || r.rearmed_after_attempt > r.attempts {
        return Err(bad("its revision or attempt counts are out of range"));
    }
    let stage_holds = match r.stage {
        Stage::Leased => r.lease.as_ref().is_some_and(|l| {
            l.attempt == r.attempts.saturating_add(1) && r.due_ms == Some(l.expires_ms)
        }),
        Stage::Draft | Stage::Pending | Stage::Retryable | Stage::Delivering => {
            r.lease.is_none()
                && r.due_ms.is_some()
                && r.stage == super::machine::waiting_stage(r)
                && (r.stage != Stage::Delivering
                    || (!r.stop_when_satisfied && r.has_open_targets()))
        }
        _ => r.lease.is_none() && r.due_ms.is_none(),
    } && match r.stage {
        Stage::Satisfied => r.reason.is_none() && r.satisfaction == Satisfaction::Satisfied,
        Stage::Exhausted => {
            r.reason.is_some()
                && (r.reason == Some(StopReason::Rejected))
                    == (r.satisfaction == Satisfaction::Exhausted)
        }
        Stage::Cancelled => r.reason == Some(StopReason::Cancelled),
        Stage::Superseded => r.reason.is_some_and(StopReason::supersedes),
        _ => r.reason.is_none(),
    } && (r.stage == Stage::Superseded) == r.superseded_by.is_some();
    if !stage_holds {
        return Err(bad(format!(
            "its stage `{}` does not match its lease, due time, verdict or stop reason",
            r.stage
        )));
    }
    // Evidence: known targets, attempts in order and counted as the machine counts them
    // (the last attempt uncounted only when none of its tries reached a relay), repeated
    // tries only of unreached ones, a target accepted once never tried again.
    let unreached = |o: Outcome| matches!(o, Outcome::Unreachable | Outcome::NotAttempted);
    let mut last = 0u32;
    for (i, e) in r.evidence.iter().enumerate() {
        // The signer's answers to a draft: no attempt, repeats of one outcome in one
        // entry (`machine::record_signing`).
        if super::record::is_helper(&e.target) {
            if e.attempt != 0 || e.tries == 0 || (e.tries > 1) != e.first_at_ms.is_some() {
                return Err(bad(format!(
                    "its evidence #{i} is not one the outbox writes"
                )));
            }
            continue;
        }
        let before = &r.evidence[..i];
        let same = |p: &&super::Evidence| p.target == e.target;
        if !r.targets.contains(&e.target)
            || (e.attempt != last && e.attempt != last.saturating_add(1))
            || e.tries == 0
            || (e.tries > 1) != e.first_at_ms.is_some()
            || (e.tries > 1 && !unreached(e.outcome))
            || before.iter().filter(same).any(|p| {
                p.outcome.is_accepted()
                    || (p.outcome.is_settled() && r.rearmed_after_attempt < p.attempt)
                    || (p.attempt == e.attempt && !unreached(p.outcome))
            })
        {
            return Err(bad(format!(
                "its evidence #{i} is not one the outbox writes"
            )));
        }
        last = e.attempt;
    }
    let last_unreached = r
        .evidence
        .iter()
        .filter(|e| e.attempt == last)
        .all(|e| unreached(e.outcome));
    if !(r.attempts == last || (last > 0 && r.attempts + 1 == last && last_unreached)) {
        return Err(bad("its attempt count does not match its evidence"));
    }
    if r.satisfaction != r.evaluate() {
        return Err(bad(
            "its satisfaction is not its policy's verdict over its evidence",
        ));
    }
    Ok(())
}

/// `record` as it is stored here: unleased when leased (see the module's docs).
fn arrive(mut record: Record, now_ms: u64) -> Record {
    if record.lease.take().is_some() {
        record.stage = super::machine::waiting_stage(&record);
        record.due_ms = Some(now_ms);
        record.revision = record.revision.saturating_add(1);
        record.updated_ms = record.updated_ms.max(now_ms);
    }
    record
}
