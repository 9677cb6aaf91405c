//! What `lint` and a short `explore` say of a sweep's points (issue 27, item 3): a point safe on
//! the sweep's seeds may still be one that `lint` rejects (the incident without a key is safe
//! on 20 seeds at pool 4) or that a search of interleavings breaks in a fraction of a second.
//!
//! - **Lint, every point.** Each grid point's scenario (the sweep's base with the point's
//!   values, [`point_scenario`]) is linted; its error findings' rule ids go to
//!   [`PointRow::lint`]. Static and cheap.
//! - **Explore, the candidates only.** With `--minimize`, the safe points are taken in the
//!   minimize order; a point with a lint error is skipped, and the first lint-clean one is
//!   explored ([`crate::explore::search::explore_unshrunk`]: [`EXPLORE_CASES`] cases, search
//!   seed [`EXPLORE_SEED`], no shrinking). A violation, or a search that stopped early, skips
//!   it too and the next is explored, at most [`MAX_EXPLORED`] in all; the first one explore
//!   finds clean is the recommendation. Every skipped candidate is kept with why
//!   ([`Skipped`]).
//!
//! Both read only the sweep's [`Inputs`], so `merge` gives the unsharded sweep's answer byte
//! for byte; a shard does neither.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::inputs::Inputs;
use super::table::Explored;
use super::table::PointRow;
use crate::explore::search::{explore_unshrunk, ExploreOptions, Outcome};
use crate::lint::{scenario_rules, Severity};
use crate::scenario::{self, Scenario};

/// Cases of the search each explored candidate gets (`refundsim explore`'s default).
pub(crate) const EXPLORE_CASES: u32 = 256;

/// The search seed of every explored candidate.
pub(crate) const EXPLORE_SEED: u64 = 1;

/// Most candidates one sweep explores before it gives up recommending.
pub(crate) const MAX_EXPLORED: usize = 3;

/// A safe point the recommendation passed over, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// Grid point index.
    pub point: usize,
    /// `lint` (error findings) or `explore` (a violation, or an inconclusive search).
    pub by: String,
    /// What was found: the rule ids, or the search's outcome.
    pub why: String,
}

/// The scenario of grid point `p`: the sweep's base scenario (policies and `--set` applied, as
/// `sweep.json` records it) with the point's varied values set. From the inputs alone, so a
/// merge rebuilds the same scenario as the sweep.
///
/// # Errors
/// The load error as text (it loaded when the sweep ran, so only a doctored `sweep.json`).
pub(crate) fn point_scenario(inputs: &Inputs, p: usize) -> Result<Scenario, String> {
    let base = inputs.base_scenario.to_string();
    let varied = inputs.point_sets(p).split_off(inputs.sets.len());
    // Every point was admitted against the sweep's budget when it ran; `merge` has none.
    let unlimited = scenario::RunBudget::UNLIMITED;
    scenario::load_text(&base, &inputs.scenario_path, &[], &varied, &unlimited)
        .map_err(|e| e.to_string())
}

/// The rule ids of `s`'s error findings, in rule order, each once.
pub(crate) fn lint_errors(s: &Scenario) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for f in scenario_rules(s) {
        if f.severity == Severity::Error && !ids.iter().any(|i| i == f.id) {
            ids.push(f.id.to_string());
        }
    }
    ids
}

/// Lints every point (in parallel; the result is in grid order whatever the threads).
pub(super) fn lint_points(inputs: &Inputs, pts: &mut [PointRow]) {
    let lints: Vec<Vec<String>> = pts
        .par_iter()
        .map(|p| match point_scenario(inputs, p.point) {
            Ok(s) => lint_errors(&s),
            Err(e) => vec![format!("unloadable: {e}")],
        })
        .collect();
    for (p, l) in pts.iter_mut().zip(lints) {
        p.lint = l;
    }
}

/// One short search of point `p`'s scenario.
fn explore_point(inputs: &Inputs, p: usize) -> Explored {
    let opts = ExploreOptions {
        cases: EXPLORE_CASES,
        seed: EXPLORE_SEED,
        ..ExploreOptions::default()
    };
    let s = match point_scenario(inputs, p) {
        Ok(s) => s,
        Err(reason) => {
            return Explored::Inconclusive {
                tried: 0,
                cases: opts.cases,
                seed: opts.seed,
                reason,
            }
        }
    };
    match explore_unshrunk(&s, &opts) {
        Outcome::NotFound { cases } => Explored::Clean {
            cases,
            seed: opts.seed,
        },
        Outcome::Found { violation, .. } => Explored::Violation {
            invariant: violation.invariant,
            ticket: violation.ticket,
            cases: opts.cases,
            seed: opts.seed,
        },
        Outcome::Aborted {
            tried,
            cases,
            reason,
        } => Explored::Inconclusive {
            tried,
            cases,
            seed: opts.seed,
            reason,
        },
    }
}

/// Walks `candidates` (safe points, best first): skips those with a lint error, explores the
/// others one by one, at most [`MAX_EXPLORED`], and returns the first one explore finds clean,
/// with every candidate skipped before it. Explore outcomes are written to the points.
pub(super) fn choose(
    inputs: &Inputs,
    pts: &mut [PointRow],
    candidates: &[usize],
) -> (Option<usize>, Vec<Skipped>) {
    let mut skipped = Vec::new();
    let mut explored = 0;
    for &c in candidates {
        if explored == MAX_EXPLORED {
            break;
        }
        let Some(i) = pts.iter().position(|p| p.point == c) else {
            continue;
        };
        if !pts[i].lint.is_empty() {
            skipped.push(Skipped {
                point: c,
                by: "lint".into(),
                why: pts[i].lint.join(", "),
            });
            continue;
        }
        explored += 1;
        let e = explore_point(inputs, c);
        pts[i].explore = Some(e.clone());
        if matches!(e, Explored::Clean { .. }) {
            return (Some(c), skipped);
        }
        skipped.push(Skipped {
            point: c,
            by: "explore".into(),
            why: e.describe(),
        });
    }
    (None, skipped)
}
