//! Property search over interleavings: strategies for small adversarial worlds, the safety
//! property every case is checked against, an exhaustive depth-first mode for tiny worlds, and
//! the `refundsim explore` driver with shrinking to a minimal scenario.

pub(crate) mod cli;
pub mod exhaustive;
pub mod policy;
pub mod search;
pub mod strategy;

use std::fmt;

use crate::invariants::INVARIANTS;
use crate::run::{run, run_on, RunOutput};
use crate::scenario::Scenario;
use crate::sim::Sim;

pub use cli::{cli_run, CliError, CliOptions, CliOutcome};
pub use strategy::Case;

/// The invariants the headline claim covers ([`policy::keys_and_probe`]): [`SAFETY`], plus
/// that the probe tells the truth (`truthful_probes`), that an unknown outcome is never shown
/// to the model as a failure (`unknown_not_shown_as_failure`), and that a compliant model never
/// retries after "do not retry" (`no_retry_after_do_not_retry`). A broken probe or a broken
/// key fails one of them even when no money moves twice.
pub const CLAIM: &[&str] = &[
    "at_most_one_refund_per_ticket",
    "no_over_refund",
    "no_lost_refund",
    "conservation",
    "truthful_probes",
    "unknown_not_shown_as_failure",
    "no_retry_after_do_not_retry",
];

/// The invariants the safety property covers: DESIGN §3 minus truthfulness (which the fix
/// improves but a fault can still break without harm to money).
pub const SAFETY: &[&str] = crate::scenario::SAFETY_INVARIANTS;

/// A broken safety invariant in one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Invariant name (see [`crate::invariants::INVARIANTS`]).
    pub invariant: String,
    /// First offending ticket, if the invariant is per ticket.
    pub ticket: Option<u64>,
    /// That ticket's story (incident-log style).
    pub story: Vec<String>,
    /// Tickets in the world.
    pub tickets: usize,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} violated", self.invariant)?;
        if let Some(t) = self.ticket {
            write!(f, " (ticket {t})")?;
        }
        Ok(())
    }
}

/// The first broken safety invariant of a finished run, in [`INVARIANTS`] order.
pub fn first_violation(sc: &Scenario, out: &RunOutput) -> Option<Violation> {
    first_violation_of(SAFETY, sc, out)
}

/// [`first_violation`] among the invariants `names` (e.g. [`CLAIM`]).
pub(crate) fn first_violation_of(
    names: &[&str],
    sc: &Scenario,
    out: &RunOutput,
) -> Option<Violation> {
    let origin = sc
        .clock_origin
        .as_deref()
        .and_then(|s| humantime::parse_rfc3339(s).ok());
    INVARIANTS
        .iter()
        .filter(|name| names.contains(name))
        .filter_map(|name| {
            out.report
                .metrics
                .invariants
                .iter()
                .find(|i| &i.name == name)
        })
        .find(|i| !i.holds)
        .map(|i| Violation {
            invariant: i.name.clone(),
            ticket: i.first_ticket,
            story: i
                .first_ticket
                .map(|t| {
                    // A run that kept its events (one on a scripted engine) tells the story
                    // itself; otherwise the same seed is re-run keeping that ticket's events.
                    if out.history.events.is_empty() {
                        crate::run::story_of(sc, sc.seed, t, origin)
                    } else {
                        crate::analysis::story::story(&out.history, t, origin)
                    }
                })
                .unwrap_or_default(),
            tickets: out.report.metrics.tickets as usize,
        })
}

/// Runs a case (under its own tie-break) and checks the safety property.
pub fn check_case(case: &Case) -> Result<(), Violation> {
    check_scenario(&case.scenario)
}

/// Runs `sc` with its own seed and tie-break and checks the safety property.
pub fn check_scenario(sc: &Scenario) -> Result<(), Violation> {
    check_scenario_of(SAFETY, sc)
}

/// Runs the case and checks the headline claim's invariants ([`CLAIM`]).
pub fn check_case_claim(case: &Case) -> Result<(), Violation> {
    check_scenario_of(CLAIM, &case.scenario)
}

/// Runs `sc` with its own seed and tie-break and checks the invariants `names`.
fn check_scenario_of(names: &[&str], sc: &Scenario) -> Result<(), Violation> {
    let out = run(sc, sc.seed, &Default::default());
    first_violation_of(names, sc, &out).map_or(Ok(()), Err)
}

/// Runs `sc` on a given engine and checks the claim's invariants ([`CLAIM`]).
pub fn check_on_claim(engine: Sim, sc: &Scenario) -> Result<(), Violation> {
    check_on_invariants(CLAIM, engine, sc)
}

/// Runs `sc` on a given engine and checks the invariants `names`.
pub(crate) fn check_on_invariants(
    names: &[&str],
    engine: Sim,
    sc: &Scenario,
) -> Result<(), Violation> {
    let out = run_on(engine, sc, sc.seed, &Default::default());
    first_violation_of(names, sc, &out).map_or(Ok(()), Err)
}

/// Runs `sc` on a given engine and checks the safety property.
pub fn check_on(engine: Sim, sc: &Scenario) -> Result<(), Violation> {
    check_on_invariants(SAFETY, engine, sc)
}
