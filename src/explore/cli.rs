//! `refundsim explore` as one library call: load the scenario, check the flags against it,
//! search (or enumerate every schedule), write the minimal scenario, and return what to print.
//! The binary only parses arguments, draws the progress bar and maps the outcome to an exit code.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::exhaustive::{exhaustive, Exhaustive};
use super::search::{self, ExploreOptions};
use super::Violation;
pub use crate::error::CliError;
use crate::output::refuse_overwriting_inputs;
use crate::scenario::{self, Scenario};

/// The arguments of `refundsim explore`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CliOptions {
    /// Scenario file (JSON).
    pub scenario: PathBuf,
    /// Merge patches applied over the scenario, in order.
    pub policies: Vec<PathBuf>,
    /// `PATH=VALUE` overrides, applied after the policies.
    pub sets: Vec<String>,
    /// Cases to try.
    pub cases: u32,
    /// Search seed.
    pub seed: u64,
    /// Near-tie window for the tie-break.
    pub epsilon: Duration,
    /// Enumerate every schedule of a tiny scenario instead of searching.
    pub exhaustive: bool,
    /// With `exhaustive`: stop after this many schedules.
    pub max_schedules: u64,
    /// Where to write the minimal scenario [default: the scenario's name + `-minimal.json`].
    pub out: Option<PathBuf>,
    /// The run budget the scenario is admitted against and each case's run is watched under
    /// (the search; `exhaustive`'s schedules of a tiny world are not watched).
    pub budget: scenario::RunBudget,
}

/// What `explore` found, ready to print (its [`fmt::Display`] is the command's stdout).
#[derive(Clone, Debug)]
pub enum CliOutcome {
    /// `--exhaustive`: every schedule (or the first `max_schedules`) was checked.
    Exhaustive(Exhaustive),
    /// No violation in `cases` cases of the search seeded with `seed`.
    NotFound {
        /// Cases tried.
        cases: u32,
        /// The search seed.
        seed: u64,
    },
    /// The search was aborted before its cases were tried: inconclusive (exit 2).
    Aborted {
        /// Cases tried.
        tried: u32,
        /// Cases asked for.
        cases: u32,
        /// Why it stopped.
        reason: String,
        /// The search seed.
        seed: u64,
    },
    /// A violation, shrunk; the minimal scenario was written to `out`.
    Found {
        /// What the minimal scenario violates.
        violation: Violation,
        /// Where the minimal scenario was written.
        out: PathBuf,
    },
}

impl CliOutcome {
    /// Whether a safety violation was found (exit code 1).
    pub fn found_violation(&self) -> bool {
        match self {
            CliOutcome::Exhaustive(r) => r.first_violation.is_some(),
            CliOutcome::NotFound { .. } | CliOutcome::Aborted { .. } => false,
            CliOutcome::Found { .. } => true,
        }
    }
}

impl fmt::Display for CliOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliOutcome::Exhaustive(r) => fmt_exhaustive(f, r),
            CliOutcome::NotFound { cases, seed } => {
                writeln!(f, "no violation in {cases} cases (seed {seed})")
            }
            CliOutcome::Aborted {
                tried,
                cases,
                reason,
                seed,
            } => writeln!(
                f,
                "inconclusive: the search stopped after {tried} of {cases} cases (seed {seed}): \
                 {reason}; no violation among the cases tried, which proves nothing"
            ),
            CliOutcome::Found { violation, out } => {
                writeln!(
                    f,
                    "violation: {violation} with {} ticket(s)",
                    violation.tickets
                )?;
                for l in &violation.story {
                    writeln!(f, "{l}")?;
                }
                writeln!(f, "minimal scenario: {}", out.display())?;
                writeln!(
                    f,
                    "replay: refundsim run {}",
                    crate::run::quote(&out.display().to_string())
                )
            }
        }
    }
}

fn fmt_exhaustive(f: &mut fmt::Formatter<'_>, r: &Exhaustive) -> fmt::Result {
    let all = if r.complete { " (all)" } else { "" };
    writeln!(f, "schedules checked: {}{all}", r.schedules)?;
    match &r.first_violation {
        None => {
            let stopped = if r.complete {
                ""
            } else {
                " (stopped at --max-schedules)"
            };
            if r.complete {
                writeln!(f, "no violation{stopped}")
            } else {
                writeln!(
                    f,
                    "inconclusive: no violation in the first {} schedules{stopped}, but not \
                     every schedule was visited",
                    r.schedules
                )
            }
        }
        Some((v, choices)) => {
            writeln!(f, "violation: {v}\nchoices: {choices:?}")?;
            for l in &v.story {
                writeln!(f, "{l}")?;
            }
            Ok(())
        }
    }
}

/// Runs `refundsim explore`: `on_case` is called after every run (cases and shrinking) of the
/// search, not in exhaustive mode. A found minimal scenario is written before this returns.
/// Also returns the scenario's effect, whose words the outcome is printed in.
pub fn cli_run(
    opts: &CliOptions,
    on_case: impl Fn(),
) -> Result<(CliOutcome, scenario::Effect), CliError> {
    let sc = scenario::load_within(&opts.scenario, &opts.policies, &opts.sets, &opts.budget)?;
    let effect = sc.effect();
    search_or_enumerate(opts, sc, on_case).map(|o| (o, effect))
}

fn search_or_enumerate(
    opts: &CliOptions,
    sc: Scenario,
    on_case: impl Fn(),
) -> Result<CliOutcome, CliError> {
    if opts.exhaustive {
        return run_exhaustive(opts, sc).map(CliOutcome::Exhaustive);
    }
    let out = opts
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}-minimal.json", file_stem_of(&sc.name))));
    check_out(opts, &out)?;
    let search_opts = ExploreOptions {
        cases: opts.cases,
        seed: opts.seed,
        epsilon: opts.epsilon,
    };
    let watch = scenario::RunWatch::new(opts.budget);
    match search::explore_watched(&sc, &search_opts, on_case, &watch)? {
        search::Outcome::NotFound { cases } => Ok(CliOutcome::NotFound {
            cases,
            seed: opts.seed,
        }),
        search::Outcome::Aborted {
            tried,
            cases,
            reason,
        } => Ok(CliOutcome::Aborted {
            tried,
            cases,
            reason,
            seed: opts.seed,
        }),
        search::Outcome::Found { minimal, violation } => {
            let text = serde_json::to_string_pretty(&*minimal)
                .map_err(|e| CliError::Input(e.to_string()))?
                + "\n";
            crate::output::write_atomically(&out, &text)
                .map_err(|e| CliError::Input(format!("--out {}: {e}", out.display())))?;
            Ok(CliOutcome::Found { violation, out })
        }
    }
}

/// `--exhaustive` on a tiny world (1 to 3 recorded tickets), under a tie-break that `--epsilon`
/// widens.
fn run_exhaustive(opts: &CliOptions, mut sc: Scenario) -> Result<Exhaustive, CliError> {
    if sc.arrivals.tickets.is_empty() || sc.arrivals.tickets.len() > 3 {
        return Err(CliError::Input(format!(
            "{}: --exhaustive needs a tiny world: 1 to 3 recorded tickets in arrivals.tickets (this one has {})",
            opts.scenario.display(),
            sc.arrivals.tickets.len()
        )));
    }
    if sc.tie_break.is_none() || opts.epsilon > Duration::ZERO {
        sc.tie_break = Some(scenario::TieBreakConfig::new(0, opts.epsilon));
    }
    Ok(exhaustive(&sc, opts.max_schedules))
}

/// Refuses an `--out` that is an input, is a directory, or lies in a missing directory.
fn check_out(opts: &CliOptions, out: &Path) -> Result<(), CliError> {
    let inputs: Vec<&PathBuf> = std::iter::once(&opts.scenario)
        .chain(opts.policies.iter())
        .collect();
    refuse_overwriting_inputs("--out", out, &inputs).map_err(CliError::Input)?;
    match out.parent() {
        Some(d) if !d.as_os_str().is_empty() && !d.is_dir() => Err(CliError::Input(format!(
            "--out {}: directory {} does not exist",
            out.display(),
            d.display()
        ))),
        _ if out.is_dir() => Err(CliError::Input(format!(
            "--out {}: is a directory; expected a file path",
            out.display()
        ))),
        _ => Ok(()),
    }
}

/// A file-name stem from a scenario name: letters, digits, `-` and `_` only (never a path).
fn file_stem_of(name: &str) -> String {
    let stem: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let stem = stem.trim_start_matches(['-', '_']).to_string();
    if stem.is_empty() {
        "explore".into()
    } else {
        stem
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_aborted_search_is_inconclusive_not_a_pass() {
        let o = CliOutcome::Aborted {
            tried: 7,
            cases: 256,
            reason: "Too many global rejects".into(),
            seed: 3,
        };
        assert!(!o.found_violation());
        assert_eq!(
            o.to_string(),
            "inconclusive: the search stopped after 7 of 256 cases (seed 3): Too many global \
             rejects; no violation among the cases tried, which proves nothing\n"
        );
    }
}
