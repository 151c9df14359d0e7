//! Shared by the flusher tests over the memory store: their configuration, a lease-id
//! counter, a future that takes some executor turns, a paced transport that counts
//! publishes in flight, and a whole flush with the usual arguments.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use nostr_outbox::core::{EventEnvelope, Outcome, RetryConfig};
use nostr_outbox::flush::{flush_until_idle, FlushConfig, FlushSummary};
use nostr_outbox::store::{Store, StoreError};
use nostr_outbox::transport::{PublishReport, Transport};

/// Owner `tab-1`, a 10 s lease, 1 s doubling to 8 s without jitter.
pub fn config(batch_size: u32, concurrency: u32) -> FlushConfig {
    FlushConfig {
        owner: "tab-1".into(),
        batch_size,
        lease_ms: 10_000,
        concurrency,
        low_concurrency: nostr_outbox::flush::LOW_WINDOW,
        retry: RetryConfig {
            base_delay_ms: 1_000,
            max_delay_ms: 8_000,
            jitter_permille: 0,
            rate_limit_min_ms: 30_000,
        },
        group_wait_ms: nostr_outbox::flush::GROUP_WAIT_MS,
        lanes: Vec::new(),
        relays: Vec::new(),
        lapsed_only: false,
        newer_kinds: nostr_outbox::flush::NEWER_CHECK_KINDS.to_vec(),
    }
}

/// 1, 2, 3, …: the randomness of a flush under test (lease ids, jitter).
pub fn counter() -> impl FnMut() -> u32 {
    let mut n = 0u32;
    move || {
        n = n.wrapping_add(1);
        n
    }
}

/// Pending `n` times (waking itself each time), then ready: `n` turns of the executor.
pub struct Yield(pub u32);

impl Future for Yield {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            Poll::Ready(())
        } else {
            self.0 -= 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Accepts every event after `turns` turns (`slow_turns` for `slow_id`); counts
/// publishes in flight, in all and to each relay.
pub struct Paced {
    pub turns: u32,
    slow_id: String,
    slow_turns: u32,
    inflight: Cell<u32>,
    /// The most publishes in flight at once, in all.
    pub peak: Cell<u32>,
    per_relay: RefCell<Vec<(String, u32)>>,
    /// The most publishes in flight at once to one relay.
    pub peak_per_relay: Cell<u32>,
}

impl Paced {
    fn relay(&self, relay: &str, delta: i32) {
        let mut loads = self.per_relay.borrow_mut();
        let i = match loads.iter().position(|(r, _)| r == relay) {
            Some(i) => i,
            None => {
                loads.push((relay.to_string(), 0));
                loads.len() - 1
            }
        };
        loads[i].1 = loads[i].1.saturating_add_signed(delta);
        self.peak_per_relay
            .set(self.peak_per_relay.get().max(loads[i].1));
    }

    pub fn new(slow_id: &str, slow_turns: u32) -> Paced {
        Paced {
            turns: 1,
            slow_id: slow_id.to_string(),
            slow_turns,
            inflight: Cell::new(0),
            peak: Cell::new(0),
            per_relay: RefCell::new(Vec::new()),
            peak_per_relay: Cell::new(0),
        }
    }
}

impl Transport for Paced {
    async fn publish(&self, relay: &str, event: &EventEnvelope) -> PublishReport {
        self.inflight.set(self.inflight.get() + 1);
        self.peak.set(self.peak.get().max(self.inflight.get()));
        self.relay(relay, 1);
        let turns = if event.id == self.slow_id {
            self.slow_turns
        } else {
            self.turns
        };
        Yield(turns).await;
        self.relay(relay, -1);
        self.inflight.set(self.inflight.get() - 1);
        PublishReport::new(Outcome::Accepted, "")
    }
}

/// A whole flush at time 0, without an observer, at most 100 claims.
pub async fn flush_all(
    store: &impl Store,
    transport: &impl Transport,
    config: &FlushConfig,
) -> Result<FlushSummary, StoreError> {
    flush_until_idle(
        store,
        transport,
        config,
        &|| 0,
        &mut counter(),
        &mut |_| {},
        100,
    )
    .await
}
