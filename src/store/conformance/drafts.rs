//! Drafts: unsigned templates are claimed only by a claim for drafts (a context that
//! signs), never by a publishing claim, nor counted or waited for by one; the signer's
//! answer is recorded under the lease ([`Store::record_signing`]): signed, the record is
//! an ordinary pending one; unavailable, it waits as a draft; refused, it ends.

use super::*;
use crate::core::{Signed, Signing, StopReason};

/// A draft's envelope: no id, by `pubkey`, of `kind`, filed at `created_at` (seconds).
pub fn draft_event(pubkey: &str, kind: u16, created_at: u64) -> EventEnvelope {
    EventEnvelope {
        id: String::new(),
        raw: format!(r#"{{"pubkey":"{pubkey}","kind":{kind},"created_at":0}}"#),
        ..nostr_event(0, pubkey, kind, created_at, "", &[])
    }
}

fn draft_plan(id: &str) -> Plan {
    Plan::new(
        draft_event(ALICE, 1, 1),
        RELAYS.iter().map(|r| r.to_string()).collect(),
        Policy::All,
    )
    .with_id(id)
}

fn drafts_claim(lease: &str) -> ClaimRequest {
    ClaimRequest {
        prepare: 1,
        ..fixture_claim("signer-tab", lease, 64, 60_000)
    }
}

fn signed(id: &str, lease: &str, revision: u64, signing: Signing) -> Signed {
    Signed {
        id: id.into(),
        lease_id: lease.into(),
        revision,
        signing,
        routes: None,
        jitter: 0,
    }
}

/// Drafts wait for a claim for drafts; a publishing claim, `count_due` and
/// `next_due(0)` ignore them; the signer's answers are recorded under the lease (a
/// stale one changes nothing); signed, a draft is claimed for publishing at once;
/// unavailable, it waits for its backoff; refused, it ends and `retry` makes it a draft
/// again; `cancel` undoes one.
pub async fn drafts_are_claimed_only_to_be_signed<S: Store>(s: &S) {
    const C: &str = "drafts_are_claimed_only_to_be_signed";
    let plans = vec![
        draft_plan("d1"),
        draft_plan("d2").with_priority(Priority::High),
        draft_plan("d3").with_not_before_ms(Some(5_000)),
        draft_plan("d4"),
        fixture_plan(1, &RELAYS, Policy::All).with_id("s1"),
    ];
    let created = ok(C, "enqueue", s.enqueue_many(plans, 1_000).await);
    check_eq!(C, created[0].record.stage, Stage::Draft, "a draft's stage");
    check_eq!(
        C,
        ok(C, "count_due", s.count_due(2_000).await),
        1,
        "only s1 counts"
    );
    check_eq!(C, ok(C, "next_due", s.next_due(0).await), Some(1_000), "s1");
    check_eq!(C, ok(C, "status", s.status().await).draft, 4, "four drafts");

    // A publishing claim takes the signed record only.
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l1", 64, 60_000), 2_000).await,
    );
    check_eq!(C, ids_of(&claimed), ["s1"], "never a draft");
    check_eq!(
        C,
        ok(C, "next_due", s.next_due(0).await),
        Some(62_000),
        "s1's lease"
    );
    check_eq!(
        C,
        ok(C, "next_due", s.next_due(1).await),
        Some(1_000),
        "the drafts"
    );

    // A claim for drafts: high first, the scheduled one not before its time.
    let claimed = ok(C, "claim", s.claim(&drafts_claim("l2"), 2_000).await);
    check_eq!(
        C,
        ids_of(&claimed),
        ["d2", "d1", "d4"],
        "drafts due, high first"
    );
    let rev = |id: &str| {
        claimed
            .iter()
            .find(|r| r.id == id)
            .map_or(0, |r| r.revision)
    };

    // Signed: the event replaces the template; published like any record.
    let event = nostr_event(7, ALICE, 1, 2, "", &[]);
    let d1 = ok(
        C,
        "signed",
        s.record_signing(
            &signed("d1", "l2", rev("d1"), Signing::Signed(event.clone())),
            &fixture_retry(),
            2_100,
        )
        .await,
    );
    check_eq!(
        C,
        (d1.stage, d1.due_ms),
        (Stage::Pending, Some(2_100)),
        "d1 pending"
    );
    check_eq!(C, &d1.event, &event, "the signed event");
    check_eq!(C, d1.attempts, 0, "no attempt counted");
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l3", 64, 60_000), 2_200).await,
    );
    check_eq!(C, ids_of(&claimed), ["d1"], "d1 is published now");

    // A stale lease or revision changes nothing; a record that is not a draft is refused.
    let before = must_get(C, s, "d2").await;
    err_code(
        C,
        "stale lease",
        s.record_signing(
            &signed("d2", "nope", rev("d2"), Signing::Signed(event.clone())),
            &fixture_retry(),
            2_300,
        )
        .await,
        "lease_expired",
    );
    check_eq!(
        C,
        must_get(C, s, "d2").await,
        before,
        "a stale answer changes nothing"
    );

    // Unavailable: back to draft after the backoff (1 s at the first failure).
    let unavailable = Signing::Unavailable {
        outcome: Outcome::Timeout,
        message: "no answer".into(),
    };
    let d2 = ok(
        C,
        "unavailable",
        s.record_signing(
            &signed("d2", "l2", rev("d2"), unavailable),
            &fixture_retry(),
            2_400,
        )
        .await,
    );
    check_eq!(
        C,
        (d2.stage, d2.due_ms, d2.attempts),
        (Stage::Draft, Some(3_400), 0),
        "d2 waits"
    );

    // Refused: ends; `retry` makes it a draft again.
    let refused = Signing::Failed {
        reason: StopReason::SignerRefused,
        message: "User rejected".into(),
    };
    let d4 = ok(
        C,
        "refused",
        s.record_signing(
            &signed("d4", "l2", rev("d4"), refused),
            &fixture_retry(),
            2_500,
        )
        .await,
    );
    check_eq!(
        C,
        (d4.stage, d4.reason),
        (Stage::Exhausted, Some(StopReason::SignerRefused)),
        "d4 ends"
    );
    check_eq!(
        C,
        ok(C, "retry", s.retry("d4", 2_600).await).stage,
        Stage::Draft,
        "retried"
    );

    // Cancelled before it is signed: never claimed again.
    ok(C, "cancel", s.cancel("d3", 2_700).await);
    let claimed = ok(C, "claim", s.claim(&drafts_claim("l4"), 10_000).await);
    check_eq!(C, ids_of(&claimed), ["d2", "d4"], "high first; d3 undone");
}
