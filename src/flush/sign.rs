//! Preparing records: the step of a flush, before publishing, in a context that has the
//! app's signer or resolver ([`sign_drafts`]). It claims the due records it can
//! prepare ([`crate::core::ClaimRequest::prepare`]: drafts to sign, routes to resolve)
//! under a lease that covers the helpers' time; for each in turn it resolves the route
//! ([`Signer::resolve`], which bounds its own time; the relays it
//! names are normalized here, an invalid one is left out), then asks the signer (a
//! person may have to approve each), checks what comes back against the template
//! (`nostr::template::Template::check`) and records both
//! ([`Store::record_signing`]): a prepared record is `pending`, published by the same
//! flush. Signed once: two contexts cannot hold one draft's
//! lease; a crash between the signer's answer and its commit leaves the draft to be
//! signed again, and only the stored event is ever published.
//!
//! The signer's failures are typed evidence: no answer within
//! [`SignConfig::timeout_ms`] (`timeout`) or a failure (`unreachable`: a bunker that
//! is not connected, a closed prompt) bring the draft back with a backoff and count
//! no attempt; the drafts after it in the claim are not asked in this run and wait as
//! long (they are tried together). A refusal ([`is_refusal`]) and an answer that is
//! not the draft signed are terminal. The resolver's failures likewise (it is not asked
//! again in this run once it failed); a `dm` recipient it finds without DM relays is
//! terminal (`recipientNotReady`), and the signer is not asked then.

use futures_util::future::{select, Either, LocalBoxFuture};

use super::{lease_id, report_end, FlushConfig, FlushEvent, TickStats};
use crate::core::{
    ClaimRequest, Outcome, Record, Route, Signed, Signing, Stage, StopReason, NEEDS_RESOLVER,
};
use crate::nostr::template::Template;
use crate::nostr::RelayUrl;
use crate::store::{Store, StoreError};
use crate::transport::Signer;

/// The default [`SignConfig::timeout_ms`]: a person may have to approve the signature.
pub const SIGN_TIMEOUT_MS: u64 = 60_000;
/// The lease of a draft being signed: it covers the signer's time and the mining, with
/// room to commit (and is never shorter than a publish's).
pub fn lease_ms(config: &FlushConfig, sign: SignConfig) -> u64 {
    config
        .lease_ms
        .max(one_draft_ms(sign).saturating_mul(2))
        .min(crate::core::machine::MAX_LEASE_MS)
}

/// The longest one record's preparation may take: the resolver's three intents, the
/// mining and the signer.
fn one_draft_ms(sign: SignConfig) -> u64 {
    sign.timeout_ms
        .saturating_add(sign.pow_ms)
        .saturating_add(RESOLVE_MS.saturating_mul(3))
}

/// The default [`SignConfig::pow_ms`].
pub const POW_MS: u64 = 30_000;
/// How many NIP-13 nonces are tried between two yields to the event loop.
pub const POW_SLICE: u64 = 2_048;

/// How drafts are signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignConfig {
    /// How long the signer may take for one draft (1..=600 000 ms).
    pub timeout_ms: u64,
    /// How long mining a NIP-13 nonce may take for one draft (1..=600 000 ms); a
    /// draft whose work is not found in that time ends exhausted (`powUnfinished`).
    pub pow_ms: u64,
}

/// How long the app's resolver may take for one intent of one record (`glue.js`'s
/// `resolveRoute` bounds it): the prepare lease covers three intents.
pub const RESOLVE_MS: u64 = 15_000;

impl Default for SignConfig {
    fn default() -> SignConfig {
        SignConfig {
            timeout_ms: SIGN_TIMEOUT_MS,
            pow_ms: POW_MS,
        }
    }
}

/// True when a signer's error message says it refused (the person or the bunker said
/// no): it names a rejection, a denial, a refusal or a missing permission. Anything
/// else (a bunker that is not connected, a closed prompt, a network error) is taken as
/// unavailable and asked again later.
pub fn is_refusal(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    // A byte window rather than `str::contains`, whose searcher costs the `.wasm` more
    // than this whole function.
    [
        "reject",
        "denied",
        "deny",
        "refus",
        "declin",
        "not allowed",
        "unauthori",
        "forbidden",
        "permission",
    ]
    .iter()
    .any(|w| m.as_bytes().windows(w.len()).any(|x| x == w.as_bytes()))
}

/// Prepares the records due now that `signer` can ([`Signer::can`]: drafts to sign,
/// routes to resolve): one claim of up to [`FlushConfig::batch_size`] (more wait
/// for the next flush, due at once), after taking over the records leased by flushers
/// that are gone when `take_over` (the caller holds the Web Lock, as
/// [`super::RunBounds::take_over`]); asked in claim order until the signer (or the
/// resolver) is unavailable; nothing when `keep_going` says stop. A record is asked
/// only while the claim's lease still covers its whole preparation
/// ([`SignConfig::timeout_ms`], [`SignConfig::pow_ms`], the resolver's time): once a
/// slow signer (a person approving each on a remote bunker) has used that up, the
/// records not asked yet are handed back at once ([`Store::release`], reported
/// `Released`, due now), so no record is asked after its lease may have lapsed (and
/// signed twice, once by another context that claimed it meanwhile). `sleep(ms)` times the signer out and lets
/// NIP-13 mining yield. Reports `Signed`, `Retrying` and `Exhausted` to `observer`;
/// answers the counts: `claimed`, `signed`, `retrying` (the signer unavailable),
/// `exhausted` (refused, a bad answer, past the deadline), `lost_claims`. The next
/// draft's due time is the flush's ([`super::RunBounds::prepare`]).
#[allow(clippy::too_many_arguments)]
pub async fn sign_drafts<S: Store>(
    store: &S,
    signer: &dyn Signer,
    config: &FlushConfig,
    sign: SignConfig,
    take_over: bool,
    clock: &dyn Fn() -> u64,
    random: &mut dyn FnMut() -> u32,
    sleep: &dyn Fn(u64) -> LocalBoxFuture<'static, ()>,
    keep_going: &dyn Fn() -> bool,
    observer: &mut dyn FnMut(FlushEvent<'_>),
) -> Result<TickStats, StoreError> {
    let mut stats = TickStats::default();
    if !keep_going() {
        return Ok(stats);
    }
    let jitter = random();
    let request = ClaimRequest {
        owner: config.owner.clone(),
        lease_id: lease_id(random),
        limit: config.batch_size,
        lease_ms: lease_ms(config, sign),
        lanes: config.lanes.clone(),
        relays: config.relays.clone(),
        prepare: signer.can(),
        lapsed_only: config.lapsed_only,
    };
    // The first failure of the signer, and of the resolver, in this run.
    let mut unavailable: Option<(Outcome, String)> = None;
    let mut unresolved: Option<(Outcome, String)> = None;
    // Holding the Web Lock, the drafts leased by a flusher that is gone (a tab closed
    // while its signer was asked) are taken over at once, not after their lease.
    let mut claimed = if take_over {
        store.take_over(&request, clock()).await?
    } else {
        Vec::new()
    };
    claimed.extend(store.claim(&request, clock()).await?);
    // Every record claimed above is leased until at least then.
    let lease_end = clock().saturating_add(request.lease_ms);
    let mut asked_any = false;
    for record in claimed {
        stats.claimed += 1;
        if record.stage != Stage::Leased {
            report_end(&record, &mut stats, observer);
            continue;
        }
        // Not asked after a failure: it waits as long as the one that failed.
        let again = |failed: &(Outcome, String)| Signing::Unavailable {
            outcome: failed.0,
            message: failed.1.clone(),
        };
        let routed = record.needs() & NEEDS_RESOLVER != 0;
        // A helper would be asked for this record: only while its lease covers that.
        let asks = (routed && unresolved.is_none()) || (record.is_draft() && unavailable.is_none());
        if asks && asked_any && clock().saturating_add(one_draft_ms(sign)) > lease_end {
            match store
                .release(&record.id, &request.lease_id, record.revision, clock())
                .await
            {
                Ok(next) => {
                    stats.released += 1;
                    observer(FlushEvent::Released { record: &next });
                }
                Err(e) if e.is_item_error() => {
                    stats.lost_claims += 1;
                    observer(FlushEvent::LostClaim { id: &record.id });
                }
                Err(e) => return Err(e),
            }
            continue;
        }
        asked_any |= asks;
        let mut routes = None;
        let mut signing = Signing::NotNeeded;
        if routed {
            match &unresolved {
                Some(failed) => signing = again(failed),
                None => match resolve(&record, signer).await {
                    Ok(r) => routes = Some(r),
                    Err(s) => signing = s,
                },
            }
            remember(&mut unresolved, &signing);
        }
        if record.is_draft() && matches!(signing, Signing::NotNeeded) {
            signing = match &unavailable {
                Some(failed) => again(failed),
                None => ask(&record, signer, sign, clock, sleep).await,
            };
            remember(&mut unavailable, &signing);
        }
        let signed = Signed {
            id: record.id.clone(),
            lease_id: request.lease_id.clone(),
            revision: record.revision,
            signing,
            routes,
            jitter,
        };
        match store.record_signing(&signed, &config.retry, clock()).await {
            // A draft signed tells `signed`; a route resolved, only that it changed.
            Ok(next) if next.stage == Stage::Pending && record.is_draft() => {
                stats.signed += 1;
                observer(FlushEvent::Signed { record: &next });
            }
            Ok(next) if next.stage == Stage::Pending => {
                observer(FlushEvent::Released { record: &next });
            }
            Ok(next) if next.stage == Stage::Draft => {
                stats.retrying += 1;
                observer(FlushEvent::Retrying { record: &next });
            }
            Ok(next) => report_end(&next, &mut stats, observer),
            Err(e) if e.is_item_error() => {
                stats.lost_claims += 1;
                observer(FlushEvent::LostClaim { id: &record.id });
            }
            Err(e) => return Err(e),
        }
    }
    Ok(stats)
}

/// Keeps a helper's first failure in this run (`signing` unavailable): the records
/// after it are not asked and wait as long.
fn remember(failed: &mut Option<(Outcome, String)>, signing: &Signing) {
    if let Signing::Unavailable { outcome, message } = signing {
        failed.get_or_insert_with(|| (*outcome, message.clone()));
    }
}

/// Resolves `record`'s route, its intents in one call (an error of the resolver, a timeout
/// included, is `unreachable`): the relays chosen (normalized; an invalid URL is left out), each with its intent and reason; or
/// why not, as the record's [`Signing`] (unavailable: asked again later; a `dm`
/// recipient without DM relays: `recipientNotReady`).
async fn resolve(record: &Record, signer: &dyn Signer) -> Result<Vec<Route>, Signing> {
    let text = signer
        .resolve(&record.route, &record.event.raw)
        .await
        .map_err(|message| Signing::Unavailable {
            outcome: Outcome::Unreachable,
            message,
        })?;
    let mut lines = text.split('\n');
    let not_ready = lines.next().unwrap_or_default();
    if !not_ready.is_empty() {
        return Err(Signing::Failed {
            reason: StopReason::RecipientNotReady,
            message: not_ready.to_owned(),
        });
    }
    // At most as many as a record has targets: a resolver's answer cannot bloat it.
    let mut routes = Vec::new();
    for line in lines.take(crate::core::plan::MAX_TARGETS) {
        let (relay, why) = line.split_once('\t').unwrap_or((line, ""));
        if let Ok(url) = RelayUrl::parse(relay) {
            routes.push(Route {
                relay: url.as_str().to_owned(),
                reason: why.to_owned(),
            });
        }
    }
    Ok(routes)
}

/// Asks the signer to sign the draft `record` (mining its proof of work first), within
/// the timeout, and checks the answer.
async fn ask(
    record: &Record,
    signer: &dyn Signer,
    sign: SignConfig,
    clock: &dyn Fn() -> u64,
    sleep: &dyn Fn(u64) -> LocalBoxFuture<'static, ()>,
) -> Signing {
    let failed = |reason, message: String| Signing::Failed { reason, message };
    let mut template = match Template::from_stored(&record.event.raw) {
        Ok(t) => t,
        Err(e) => return failed(StopReason::SignatureInvalid, e.to_string()),
    };
    let filed = record.event.meta.as_ref().map_or(0, |m| m.created_at);
    template.date(template.signing_time(clock() / 1_000, filed));
    if template.pow().is_some() {
        let unfinished = || {
            failed(
                StopReason::PowUnfinished,
                "no nonce found in the time allowed (powMs)".into(),
            )
        };
        let started = clock();
        // Where the signer's runtime can (a worker), else here in slices that yield. A
        // nonce from elsewhere is checked like any (`mine(n, 1)`).
        match signer.mine(template.to_sign(), sign.pow_ms).await {
            Ok(Some(n)) if template.mine(n, 1).is_ok() => {}
            Ok(None) => return unfinished(),
            _ => {
                let mut next = 0;
                while let Err(n) = template.mine(next, POW_SLICE) {
                    next = n;
                    if clock().saturating_sub(started) >= sign.pow_ms {
                        return unfinished();
                    }
                    sleep(0).await;
                }
            }
        }
    }
    let asked = signer.sign(template.to_sign());
    match select(asked, sleep(sign.timeout_ms)).await {
        Either::Left((Ok(answer), _)) => match template.check(&answer) {
            Ok(event) => Signing::Signed(event.to_envelope()),
            Err(why) => failed(StopReason::SignatureInvalid, why),
        },
        Either::Left((Err(message), _)) if is_refusal(&message) => {
            failed(StopReason::SignerRefused, message)
        }
        Either::Left((Err(message), _)) => Signing::Unavailable {
            outcome: Outcome::Unreachable,
            message,
        },
        Either::Right(_) => Signing::Unavailable {
            outcome: Outcome::Timeout,
            message: "the signer did not answer in time (signTimeoutMs)".into(),
        },
    }
}
