//! Exhaustive mode for tiny worlds: enumerate every choice sequence depth-first. The choices are
//! the order of same-instant and near-tie events, each Stripe request's latency from
//! `stripe.latency_choices`, and each Stripe request's fault: "no fault" or any of
//! `stripe.faults.lock_timeout`, `error_500_after_commit` and `response_lost_after_commit` whose
//! probability is above 0 (one decision per request; none when every one of them is 0, so a world
//! without those faults has as many schedules as before they were enumerated). The other draws
//! (latency spikes, `pending`/`failed` refunds, the agent's and humans' draws) still come from
//! the scenario's seed.
//!
//! A fault's probability only decides whether it is a choice: a schedule may give every request
//! the fault, however unlikely. With `lock_timeout` above 0 that starves a ticket (every try
//! answered 429, nothing executed), so `no_lost_refund` fails under any policy.

use std::cell::RefCell;
use std::rc::Rc;

use super::{check_on_invariants, Violation};
use crate::scenario::Scenario;
use crate::sim::{Script, Sim, SimTime, TieBreak};

/// Shares a [`Script`] with the engine so its recorded decisions can be read after the run.
struct Shared(Rc<RefCell<Script>>);

impl TieBreak for Shared {
    fn choose(&mut self, n: usize) -> usize {
        self.0.borrow_mut().choose(n)
    }
    fn drives_draws(&self) -> bool {
        true
    }
}

/// What an exhaustive search found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exhaustive {
    /// Distinct schedules (choice sequences) run.
    pub schedules: u64,
    /// Whether every schedule was visited (false when `max_schedules` stopped the search).
    pub complete: bool,
    /// The first violation in depth-first order, with the choice sequence that produced it.
    pub first_violation: Option<(Violation, Vec<usize>)>,
}

/// Enumerates every schedule of `sc` depth-first, up to `max_schedules`, stopping at the first
/// violation. Near-ties use the scenario's `tie_break.epsilon` (0 when absent). Meant for worlds
/// of at most 3 tickets with a small `stripe.latency_choices` set; each enabled fault multiplies
/// the schedules (the tiny world's 20 under the full fix become 80 with its lost responses, 180
/// with 500s as well). Checks the safety property ([`super::SAFETY`]).
pub fn exhaustive(sc: &Scenario, max_schedules: u64) -> Exhaustive {
    exhaustive_of(super::SAFETY, sc, max_schedules)
}

/// [`exhaustive`] checking the invariants `names` on every schedule (e.g. [`super::CLAIM`]).
pub fn exhaustive_of(names: &[&str], sc: &Scenario, max_schedules: u64) -> Exhaustive {
    let eps = SimTime::from_duration(sc.tie_break.as_ref().map(|t| t.epsilon).unwrap_or_default());
    let mut prefix = Some(Vec::new());
    let mut schedules = 0;
    while let Some(p) = prefix {
        if schedules >= max_schedules {
            return Exhaustive {
                schedules,
                complete: false,
                first_violation: None,
            };
        }
        let script = Rc::new(RefCell::new(Script::new(p)));
        let engine = Sim::exploring(Box::new(Shared(script.clone())), eps);
        let result = check_on_invariants(names, engine, sc);
        schedules += 1;
        let taken = script.borrow().taken.clone();
        if let Err(v) = result {
            let choices = taken.iter().map(|&(c, _)| c).collect();
            return Exhaustive {
                schedules,
                complete: false,
                first_violation: Some((v, choices)),
            };
        }
        prefix = Script::next_prefix(&taken);
    }
    Exhaustive {
        schedules,
        complete: true,
        first_violation: None,
    }
}
