//! The gate's bounded exploration (issue 27): a case that claims safety must also survive a
//! fixed-seed `explore` of its world within the scenario's `exploration` bounds, and a policy
//! that asserts a hole (`exploration.finds`) must still have it. Seeds alone pass policies
//! that no interleaving search accepts (`{"executor":{"timeout":"15s"}}` without a key passes
//! 200 seeds; `explore` breaks it in 0.1 s).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::explore::search::{explore, ExploreOptions, Outcome};
use crate::run::{quote, Invocation};
use crate::scenario::{Bound, Scenario, SAFETY_METRICS};

/// Seed of the gate's exploration: fixed, so the gate's verdict is a function of its inputs.
pub(crate) const EXPLORE_SEED: u64 = 1;

/// What the gate's exploration of one case found.
#[derive(Clone, Debug, Serialize)]
pub struct ExploreCheck {
    /// Cases tried (the search stops at the first violation and shrinks it).
    pub cases: u32,
    /// The search seed ([`EXPLORE_SEED`]).
    pub seed: u64,
    /// The invariant the case asserts exploration breaks (`exploration.finds`), or `None`: the
    /// case claims safety and nothing may be found.
    pub expects: Option<String>,
    /// The violation found, shrunk to a minimal scenario.
    pub found: Option<Found>,
    /// Why the search stopped early (inconclusive; fails the case).
    pub aborted: Option<String>,
    /// The verdict: nothing found when claiming safety; the asserted invariant found otherwise.
    pub ok: bool,
    /// `refundsim explore …` that reproduces the search and writes the minimal scenario.
    pub replay: String,
}

/// A violation found by the gate's exploration.
#[derive(Clone, Debug, Serialize)]
pub struct Found {
    /// The broken invariant.
    pub invariant: String,
    /// The first offending ticket.
    pub ticket: Option<u64>,
    /// Tickets in the minimal scenario.
    pub tickets: usize,
    /// That ticket's story.
    pub story: Vec<String>,
    /// The minimal scenario itself (what `explore` would write).
    pub minimal: Box<Scenario>,
}

impl ExploreCheck {
    /// One line: `explore (256 cases, seed 1): at_most_one_refund_per_ticket violated (ticket
    /// 4) in a minimal world of 4 tickets`, or what was expected and not found.
    pub fn headline(&self) -> String {
        let head = format!("explore ({} cases, seed {})", self.cases, self.seed);
        match (&self.found, &self.aborted, &self.expects) {
            (_, Some(reason), _) => format!("{head}: inconclusive, the search stopped: {reason}"),
            (Some(f), _, None) => format!(
                "{head}: {} violated{} in a minimal world of {} ticket{}",
                f.invariant,
                f.ticket
                    .map(|t| format!(" (ticket {t})"))
                    .unwrap_or_default(),
                f.tickets,
                if f.tickets == 1 { "" } else { "s" }
            ),
            (Some(f), _, Some(want)) if &f.invariant == want => {
                format!("{head}: finds {want}, as the policy asserts")
            }
            (Some(f), _, Some(want)) => format!(
                "{head}: expected to find {want} (exploration.finds), found {} instead",
                f.invariant
            ),
            (None, None, None) => format!("{head}: no violation"),
            (None, None, Some(want)) => format!(
                "{head}: expected to find {want} (exploration.finds) and found nothing: the \
                 hole the policy asserts is closed; drop exploration.finds"
            ),
        }
    }
}

/// Whether `expect` claims safety: every safety metric bounded at most 0 on every seed.
pub(crate) fn claims_safety(expect: &BTreeMap<String, Bound>) -> bool {
    SAFETY_METRICS.iter().all(|m| {
        expect.get(*m).is_some_and(|b| {
            b.max.is_some_and(|x| x <= 0.0) && b.violating_seeds_max.unwrap_or(0.0) == 0.0
        })
    })
}

/// Whether the gate explores `sc` (with its `expect` as loaded): when it asserts a hole, or
/// when it claims safety. A case whose `expect` asserts a violation (the incident, a finding,
/// a partial fix) is checked over its seeds only.
pub fn explores(sc: &Scenario) -> bool {
    sc.exploration.finds.is_some() || claims_safety(&sc.expect)
}

/// Explores `sc` with `cases` cases and the fixed seed, and judges the result.
pub(crate) fn explore_check(sc: &Scenario, how: &Invocation, cases: u32) -> ExploreCheck {
    let opts = ExploreOptions {
        cases,
        seed: EXPLORE_SEED,
        ..ExploreOptions::default()
    };
    let expects = sc.exploration.finds.clone();
    let (found, aborted) = match explore(sc, &opts, || {}) {
        Outcome::NotFound { .. } => (None, None),
        Outcome::Aborted { reason, .. } => (None, Some(reason)),
        Outcome::Found { minimal, violation } => (
            Some(Found {
                invariant: violation.invariant,
                ticket: violation.ticket,
                tickets: violation.tickets,
                story: violation.story,
                minimal,
            }),
            None,
        ),
    };
    let ok = aborted.is_none()
        && match (&found, &expects) {
            (None, None) => true,
            (Some(f), Some(want)) => &f.invariant == want,
            _ => false,
        };
    ExploreCheck {
        cases,
        seed: EXPLORE_SEED,
        expects,
        found,
        aborted,
        ok,
        replay: explore_command(how, cases),
    }
}

/// `refundsim explore SCENARIO [--policy P]… [--set S]… --cases N --seed 1`.
fn explore_command(how: &Invocation, cases: u32) -> String {
    let mut parts = vec![
        "refundsim".to_string(),
        "explore".into(),
        quote(&how.scenario_path),
    ];
    for p in &how.policies {
        parts.push(format!("--policy {}", quote(p)));
    }
    for s in &how.sets {
        parts.push(format!("--set {}", quote(s)));
    }
    parts.push(format!("--cases {cases} --seed {EXPLORE_SEED}"));
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::default_expect;

    #[test]
    fn only_an_expect_that_bounds_every_safety_metric_at_zero_claims_safety() {
        let mut e = default_expect();
        assert!(claims_safety(&e));
        e.insert("false_failures".into(), Bound::at_most(0.0));
        assert!(claims_safety(&e));
        // key-only: duplicates allowed on average (the humans' manual refunds).
        let mut partial = e.clone();
        partial.insert(
            "duplicate_refund_tickets".into(),
            Bound {
                mean_max: Some(5.0),
                ..Bound::default()
            },
        );
        assert!(!claims_safety(&partial));
        let mut dropped = e.clone();
        dropped.remove("over_refund_cents");
        assert!(!claims_safety(&dropped));
        let mut tolerated = e.clone();
        tolerated
            .get_mut("lost_refunds")
            .unwrap()
            .violating_seeds_max = Some(0.1);
        assert!(!claims_safety(&tolerated));
        let mut loose = e;
        loose.insert("lost_refunds".into(), Bound::at_most(1.0));
        assert!(!claims_safety(&loose));
    }
}
