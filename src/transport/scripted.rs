//! A deterministic [`Transport`] driven by a script: per-relay queues of answers and
//! per-relay fallbacks. It records every (relay, event id) it was asked to publish.
//! For tests and simulations; it opens no connection.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};

use crate::core::{EventEnvelope, Outcome};

use super::{PublishReport, Transport};

/// A transport that answers from a script.
///
/// Each relay answers from its queue first ([`ScriptedTransport::push`]), then with its
/// fallback ([`ScriptedTransport::always`]), then with the global default
/// (`unreachable` unless changed). A relay that "never answers" is scripted as
/// [`Outcome::Timeout`], which is what a real transport reports.
#[derive(Debug)]
pub struct ScriptedTransport {
    queues: RefCell<BTreeMap<String, VecDeque<PublishReport>>>,
    fallback: RefCell<BTreeMap<String, PublishReport>>,
    default: RefCell<PublishReport>,
    sent: RefCell<Vec<(String, String)>>,
    /// Read-back answers by `(relay, event id)` ([`ScriptedTransport::holding`]).
    holdings: RefCell<BTreeMap<(String, String), bool>>,
    /// The event (JSON text) each relay sends back when asked for its newest version
    /// of a slot ([`ScriptedTransport::storing`]).
    newer: RefCell<Vec<(String, String)>>,
    /// Every `(relay, event id)` a read-back asked about.
    asked: RefCell<Vec<(String, String)>>,
}

impl Default for ScriptedTransport {
    fn default() -> Self {
        ScriptedTransport {
            queues: RefCell::default(),
            fallback: RefCell::default(),
            default: RefCell::new(PublishReport::new(Outcome::Unreachable, "no script")),
            sent: RefCell::default(),
            holdings: RefCell::default(),
            newer: RefCell::default(),
            asked: RefCell::default(),
        }
    }
}

impl ScriptedTransport {
    /// A transport where every relay is unreachable until scripted.
    pub fn new() -> ScriptedTransport {
        ScriptedTransport::default()
    }

    /// Queues the next answer of `relay`.
    pub fn push(&self, relay: &str, outcome: Outcome, message: &str) -> &Self {
        self.queues
            .borrow_mut()
            .entry(relay.to_string())
            .or_default()
            .push_back(PublishReport::new(outcome, message));
        self
    }

    /// Queues several answers of `relay`, in order, with empty messages.
    pub fn script(&self, relay: &str, outcomes: impl IntoIterator<Item = Outcome>) -> &Self {
        for o in outcomes {
            self.push(relay, o, "");
        }
        self
    }

    /// Sets the answer `relay` gives once its queue is empty.
    pub fn always(&self, relay: &str, outcome: Outcome, message: &str) -> &Self {
        self.fallback
            .borrow_mut()
            .insert(relay.to_string(), PublishReport::new(outcome, message));
        self
    }

    /// Sets the answer of relays with neither a queue nor a fallback.
    pub fn default_answer(&self, outcome: Outcome, message: &str) -> &Self {
        *self.default.borrow_mut() = PublishReport::new(outcome, message);
        self
    }

    /// Every `(relay, event id)` published so far, in call order.
    pub fn sent(&self) -> Vec<(String, String)> {
        self.sent.borrow().clone()
    }

    /// How many times `event_id` was published to `relay`.
    pub fn count(&self, relay: &str, event_id: &str) -> usize {
        self.sent
            .borrow()
            .iter()
            .filter(|(r, e)| r == relay && e == event_id)
            .count()
    }

    /// Scripts the read-back ([`Transport::holds`]) of `event_id` on `relay`: it holds
    /// the event or not. Unscripted, a read-back cannot tell (`None`).
    pub fn holding(&self, relay: &str, event_id: &str, holds: bool) -> &Self {
        self.holdings
            .borrow_mut()
            .insert((relay.to_string(), event_id.to_string()), holds);
        self
    }

    /// Scripts what `relay` sends back when asked for its newest version of a slot
    /// ([`Transport::newer`]): the event `json`, checked as the relay transport checks
    /// it. Unscripted, a relay holds no version.
    pub fn storing(&self, relay: &str, json: &str) -> &Self {
        self.newer
            .borrow_mut()
            .push((relay.to_string(), json.to_string()));
        self
    }

    /// Every `(relay, event id)` a read-back asked about, in call order.
    pub fn asked(&self) -> Vec<(String, String)> {
        self.asked.borrow().clone()
    }

    /// Forgets the publish log (not the script).
    pub fn clear_sent(&self) {
        self.sent.borrow_mut().clear();
    }
}

impl Transport for ScriptedTransport {
    async fn newer(&self, relay: &str, event: &EventEnvelope) -> Option<(String, u64)> {
        let newer = self.newer.borrow();
        let (_, stored) = newer.iter().find(|(r, _)| r == relay)?;
        crate::nostr::newer_version(event, stored)
    }

    async fn holds(&self, relay: &str, event_id: &str) -> Option<bool> {
        let key = (relay.to_string(), event_id.to_string());
        let answer = self.holdings.borrow().get(&key).copied();
        self.asked.borrow_mut().push(key);
        answer
    }

    async fn publish(&self, relay: &str, event: &EventEnvelope) -> PublishReport {
        self.sent
            .borrow_mut()
            .push((relay.to_string(), event.id.clone()));
        if let Some(r) = self
            .queues
            .borrow_mut()
            .get_mut(relay)
            .and_then(VecDeque::pop_front)
        {
            return r;
        }
        if let Some(r) = self.fallback.borrow().get(relay) {
            return r.clone();
        }
        self.default.borrow().clone()
    }
}
