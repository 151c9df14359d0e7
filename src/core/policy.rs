//! Satisfaction policies (`all`, `any`, `atLeast(k)`, `required`) and their
//! evaluation over the settled state of each target. Pure and total: it reads the
//! per-target state and decides satisfied / pending / exhausted, nothing else.

use serde::{Deserialize, Serialize};

use super::error::CoreError;

/// When a record counts as delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Policy {
    /// Every target must accept.
    All,
    /// One target accepting is enough.
    Any,
    /// At least `k` targets must accept (`1 <= k <= targets`).
    #[serde(rename_all = "camelCase")]
    AtLeast {
        /// How many acceptances are needed.
        k: u32,
    },
    /// Every relay in `relays` (a non-empty subset of the targets) must accept; the other
    /// targets are attempted best effort and do not affect satisfaction.
    #[serde(rename_all = "camelCase")]
    Required {
        /// The relays that must accept.
        relays: Vec<String>,
    },
}

/// What the evidence says about a record as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Satisfaction {
    /// The policy is met.
    Satisfied,
    /// Not met yet, but enough targets are still open for it to be met.
    Pending,
    /// Terminal rejections make the policy impossible to meet.
    Exhausted,
}

impl Satisfaction {
    /// Every verdict, in declaration order.
    pub const ALL: [Satisfaction; 3] = [
        Satisfaction::Satisfied,
        Satisfaction::Pending,
        Satisfaction::Exhausted,
    ];

    /// The stable string used in JSON and JavaScript.
    pub fn as_str(self) -> &'static str {
        match self {
            Satisfaction::Satisfied => "satisfied",
            Satisfaction::Pending => "pending",
            Satisfaction::Exhausted => "exhausted",
        }
    }
}

/// The settled state of one target, derived from its latest evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetState {
    /// Not attempted yet, or its latest outcome is retryable.
    Open,
    /// Its latest outcome is `accepted` or `duplicate`. Never sent the event again.
    Accepted,
    /// Its latest outcome is a terminal rejection. Not retried (until an explicit `retry`).
    Rejected,
}

impl Policy {
    /// Checks the policy against a normalized (sorted, de-duplicated) target set and
    /// returns it normalized (`required` relays sorted and de-duplicated).
    pub fn normalized(&self, targets: &[String]) -> Result<Policy, CoreError> {
        let invalid = |reason: String| CoreError::InvalidPolicy { reason };
        match self {
            Policy::All | Policy::Any => Ok(self.clone()),
            Policy::AtLeast { k } => {
                if *k == 0 || *k as usize > targets.len() {
                    return Err(invalid(format!(
                        "atLeast needs 1 <= k <= {} (the number of targets), got {k}",
                        targets.len()
                    )));
                }
                Ok(self.clone())
            }
            Policy::Required { relays } => {
                if relays.is_empty() {
                    return Err(invalid("required needs at least one relay".into()));
                }
                let mut sorted = relays.clone();
                super::order::sort_dedup(&mut sorted);
                if let Some(missing) = sorted.iter().find(|r| targets.binary_search(r).is_err()) {
                    return Err(invalid(format!(
                        "required relay `{missing}` is not one of the targets"
                    )));
                }
                Ok(Policy::Required { relays: sorted })
            }
        }
    }

    /// Evaluates the policy over `(target, state)` pairs covering every target once.
    pub fn evaluate<'a>(
        &self,
        states: impl IntoIterator<Item = (&'a str, TargetState)>,
    ) -> Satisfaction {
        let (mut accepted, mut open, mut total) = (0usize, 0usize, 0usize);
        let mut required_open = false;
        let mut required_rejected = false;
        let mut required_all_accepted = true;
        for (target, state) in states {
            total += 1;
            match state {
                TargetState::Accepted => accepted += 1,
                TargetState::Open => open += 1,
                TargetState::Rejected => {}
            }
            if let Policy::Required { relays } = self {
                if relays.iter().any(|r| r == target) {
                    match state {
                        TargetState::Accepted => {}
                        TargetState::Open => {
                            required_open = true;
                            required_all_accepted = false;
                        }
                        TargetState::Rejected => {
                            required_rejected = true;
                            required_all_accepted = false;
                        }
                    }
                }
            }
        }
        let need = match self {
            Policy::All => total,
            Policy::Any => 1,
            Policy::AtLeast { k } => *k as usize,
            Policy::Required { .. } => {
                return if required_rejected {
                    Satisfaction::Exhausted
                } else if required_all_accepted && !required_open {
                    Satisfaction::Satisfied
                } else {
                    Satisfaction::Pending
                };
            }
        };
        if accepted >= need {
            Satisfaction::Satisfied
        } else if accepted + open < need {
            Satisfaction::Exhausted
        } else {
            Satisfaction::Pending
        }
    }

    /// The stable name used in JSON and JavaScript.
    pub fn kind(&self) -> &'static str {
        match self {
            Policy::All => "all",
            Policy::Any => "any",
            Policy::AtLeast { .. } => "atLeast",
            Policy::Required { .. } => "required",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TargetState::*;

    fn eval(p: &Policy, states: &[(&'static str, TargetState)]) -> Satisfaction {
        p.evaluate(states.iter().copied())
    }

    #[test]
    fn all_any_at_least() {
        let s = [("a", Accepted), ("b", Open), ("c", Rejected)];
        assert_eq!(eval(&Policy::All, &s), Satisfaction::Exhausted);
        assert_eq!(eval(&Policy::Any, &s), Satisfaction::Satisfied);
        assert_eq!(eval(&Policy::AtLeast { k: 2 }, &s), Satisfaction::Pending);
        assert_eq!(eval(&Policy::AtLeast { k: 3 }, &s), Satisfaction::Exhausted);
        let none = [("a", Open), ("b", Open)];
        assert_eq!(eval(&Policy::All, &none), Satisfaction::Pending);
        assert_eq!(eval(&Policy::Any, &none), Satisfaction::Pending);
        let rejected = [("a", Rejected), ("b", Rejected)];
        assert_eq!(eval(&Policy::Any, &rejected), Satisfaction::Exhausted);
        let ok = [("a", Accepted), ("b", Accepted)];
        assert_eq!(eval(&Policy::All, &ok), Satisfaction::Satisfied);
    }

    #[test]
    fn required_ignores_best_effort_targets() {
        let p = Policy::Required {
            relays: vec!["a".into()],
        };
        assert_eq!(
            eval(&p, &[("a", Accepted), ("b", Rejected)]),
            Satisfaction::Satisfied
        );
        assert_eq!(
            eval(&p, &[("a", Open), ("b", Accepted)]),
            Satisfaction::Pending
        );
        assert_eq!(
            eval(&p, &[("a", Rejected), ("b", Accepted)]),
            Satisfaction::Exhausted
        );
    }

    #[test]
    fn normalization_checks_policy_against_targets() {
        let t = vec!["a".to_string(), "b".to_string()];
        assert!(Policy::AtLeast { k: 0 }.normalized(&t).is_err());
        assert!(Policy::AtLeast { k: 3 }.normalized(&t).is_err());
        assert!(Policy::AtLeast { k: 2 }.normalized(&t).is_ok());
        assert!(Policy::Required { relays: vec![] }.normalized(&t).is_err());
        assert_eq!(
            Policy::Required {
                relays: vec!["x".into()]
            }
            .normalized(&t)
            .unwrap_err()
            .code(),
            "invalid_policy"
        );
        assert_eq!(
            Policy::Required {
                relays: vec!["b".into(), "a".into(), "b".into()]
            }
            .normalized(&t)
            .unwrap(),
            Policy::Required {
                relays: vec!["a".into(), "b".into()]
            }
        );
    }
}
