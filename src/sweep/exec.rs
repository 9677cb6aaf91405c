//! `refundsim sweep`: load every grid point, run (point, seed) pairs in parallel on common
//! random numbers, and gather the figures.

use std::path::PathBuf;

use rayon::prelude::*;

use super::axis::Axis;
use super::error::SweepError;
use super::inputs::Inputs;
use super::require::{Require, DEFAULT_REQUIRE};
use super::shard::Shard;
use super::table::{figures, metric_names, points, PointRow, RunRow, TOOL_CALL_P99};
use super::vet::{choose, lint_points, Skipped};
use crate::progress::Progress;
use crate::run::{run_watched, Invocation};
use crate::scenario::{self, Scenario};
use crate::seeds::SeedRange;

/// Seeds a sweep runs when `--seeds` is not given: `1..20`.
pub(crate) const DEFAULT_SEEDS: SeedRange = SeedRange { first: 1, last: 20 };

/// Most grid points one sweep may hold (the product of the axes' lengths).
pub(crate) const MAX_POINTS: usize = 10_000;

/// Most runs one sweep may make (grid points × seeds, shards included): every run's figures
/// are kept for `runs.csv` (about 450 bytes a run, and about as much again for the file's text
/// while it is written), so this keeps a sweep under about 1 GB besides the runs in flight.
pub(crate) const MAX_RUNS: u64 = 1_000_000;

/// What to sweep (the arguments of `refundsim sweep`, unparsed where they are text).
#[derive(Clone, Debug, Default)]
pub struct SweepOptions {
    /// Scenario file.
    pub scenario: PathBuf,
    /// RFC 7396 merge patches applied over it, in order.
    pub policies: Vec<PathBuf>,
    /// `PATH=VALUE` overrides applied after the policies (before the varied fields).
    pub sets: Vec<String>,
    /// `--vary` arguments (see [`Axis::parse`]); the first varies slowest.
    pub vary: Vec<String>,
    /// Seeds; [`DEFAULT_SEEDS`] when `None`.
    pub seeds: Option<SeedRange>,
    /// Run only this shard's part (see [`Shard`]).
    pub shard: Option<Shard>,
    /// `--require` arguments (see [`Require::parse`]); [`DEFAULT_REQUIRE`] when empty.
    pub require: Vec<String>,
    /// `--minimize` paths, each one of the varied paths.
    pub minimize: Vec<String>,
    /// The run budget every point is admitted against and every run is watched under.
    pub budget: scenario::RunBudget,
}

/// A finished sweep, or one shard of it.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// What it ran.
    pub inputs: Inputs,
    /// The shard it ran, `None` for a whole (or merged) sweep.
    pub shard: Option<Shard>,
    /// The runs made, in run order.
    pub runs: Vec<RunRow>,
    /// One per grid point, for a whole sweep; empty for a shard.
    pub points: Vec<PointRow>,
    /// With `--minimize`: the recommended point's index (safe on the seeds, lint clean, and a
    /// short explore found nothing; see [`super::vet`]), `None` when there is none.
    pub best: Option<usize>,
    /// With `--minimize`: the safe points passed over on the way to [`Sweep::best`], best
    /// first, each with what rejected it (lint or explore).
    pub skipped: Vec<Skipped>,
}

impl Sweep {
    /// Whether `--minimize` was asked and nothing could be recommended: no safe point, or none
    /// that lint and a short explore accept (exit 1).
    pub fn no_recommendation(&self) -> bool {
        self.shard.is_none() && !self.inputs.minimize.is_empty() && self.best.is_none()
    }
}

struct Loaded {
    inputs: Inputs,
    scenarios: Vec<Scenario>,
}

/// Loads every grid point (any bad input is an error before anything runs), runs this shard's
/// (point, seed) pairs in parallel, and summarises. Every point runs on the same seeds, and a
/// seed gives every point the same arrivals and draws (each component draws from its own
/// stream keyed by entity, DESIGN §4), so differences between points are the varied fields'
/// and not noise. The result does not depend on the number of threads.
pub fn sweep_with_progress(
    opts: &SweepOptions,
    progress: &dyn Progress,
) -> Result<Sweep, SweepError> {
    let Loaded { inputs, scenarios } = load(opts)?;
    // The (point, seed) of each run comes from its index in run order, so no list of every
    // run is held besides the figures kept.
    let total = inputs.run_count();
    let owned = |i: &usize| opts.shard.is_none_or(|s| s.owns(*i));
    progress.start((0..total).filter(owned).count() as u64);
    let names = &inputs.metrics;
    let watch = scenario::RunWatch::new(opts.budget);
    let runs: Vec<Result<RunRow, scenario::OverBudget>> = (0..total)
        .into_par_iter()
        .filter(owned)
        .map(|i| {
            let (point, seed) = inputs.run_at(i);
            let how = Invocation {
                scenario_path: inputs.scenario_path.clone(),
                policies: inputs.policies.clone(),
                sets: inputs.point_sets(point),
            };
            // Each run's order is its index, so the stop reported is the same at any thread
            // count.
            let report = run_watched(&scenarios[point], seed, &how, &watch, i as u64);
            progress.run_done();
            report.map(|report| RunRow {
                point,
                seed,
                values: figures(&report.report.metrics, names),
            })
        })
        .collect();
    watch.verdict()?;
    let runs = runs.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok(finish(inputs, opts.shard, runs))
}

/// [`sweep_with_progress`] without progress.
pub fn sweep(opts: &SweepOptions) -> Result<Sweep, SweepError> {
    sweep_with_progress(opts, &())
}

/// Summarises `runs` (in run order): a shard keeps its runs only; a whole sweep gets its
/// points, their safety, each point's lint errors and the `--minimize` choice (the best safe
/// point that lint and a short explore accept, [`super::vet`]). It reads nothing but `inputs`
/// and `runs`, so `merge` gives the same answer.
pub(super) fn finish(inputs: Inputs, shard: Option<Shard>, runs: Vec<RunRow>) -> Sweep {
    if shard.is_some() {
        return Sweep {
            inputs,
            shard,
            runs,
            points: Vec::new(),
            best: None,
            skipped: Vec::new(),
        };
    }
    let mut pts = points(&runs, |p| inputs.values(p), &inputs.metrics);
    for p in &mut pts {
        p.safe = inputs.require.iter().all(|r| r.holds(p, &inputs.metrics));
    }
    lint_points(&inputs, &mut pts);
    let (best, skipped) = if inputs.minimize.is_empty() {
        (None, Vec::new())
    } else {
        let candidates = minimize(&inputs, &pts);
        choose(&inputs, &mut pts, &candidates)
    };
    Sweep {
        inputs,
        shard,
        runs,
        points: pts,
        best,
        skipped,
    }
}

/// The safe points, best first: the smallest value of the first `--minimize` path, ties broken
/// by the next ones, then by the mean over seeds of the service response p99, then by grid
/// order.
fn minimize(inputs: &Inputs, pts: &[PointRow]) -> Vec<usize> {
    let axes: Vec<usize> = inputs
        .minimize
        .iter()
        .filter_map(|m| inputs.vary.iter().position(|a| &a.path == m))
        .collect();
    let p99 = inputs.metrics.iter().position(|n| n == TOOL_CALL_P99);
    let key = |p: &PointRow| {
        let idx = inputs.indices(p.point);
        let mut k: Vec<f64> = axes
            .iter()
            .map(|&a| sort_value(&inputs.vary[a].values[idx[a]], idx[a]))
            .collect();
        k.push(p99.map_or(0.0, |i| p.stats[i].mean));
        k
    };
    let mut safe: Vec<(Vec<f64>, usize)> = pts
        .iter()
        .filter(|p| p.safe)
        .map(|p| (key(p), p.point))
        .collect();
    // Stable, so equal keys keep grid order.
    safe.sort_by(|(a, _), (b, _)| {
        a.iter()
            .zip(b.iter())
            .map(|(x, y)| x.total_cmp(y))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    safe.into_iter().map(|(_, p)| p).collect()
}

/// A varied value as a number to compare: itself, a duration in seconds, `true`/`false` as
/// 1/0, or else its position on the axis.
pub(crate) fn sort_value(v: &str, position: usize) -> f64 {
    if let Ok(x) = v.parse::<f64>() {
        return x;
    }
    if let Ok(d) = humantime::parse_duration(v) {
        return d.as_secs_f64();
    }
    match v {
        "true" => 1.0,
        "false" => 0.0,
        _ => position as f64,
    }
}

/// Reads the sweep's inputs and loads the scenario of every grid point, checking each flag
/// before anything runs: errors name the flag and value at fault.
fn load(opts: &SweepOptions) -> Result<Loaded, SweepError> {
    let base = scenario::load_within(&opts.scenario, &opts.policies, &opts.sets, &opts.budget)?;
    let vary = parse_axes(opts)?;
    let seeds = opts.seeds.unwrap_or(DEFAULT_SEEDS);
    check_runs(opts, &vary, seeds)?;
    check_values(opts, &vary)?;
    check_grid(opts, &vary)?;
    let metrics = metric_names();
    let require = requirements(opts, &metrics)?;
    check_minimize(opts, &vary)?;
    let inputs = Inputs {
        refundsim: env!("CARGO_PKG_VERSION").to_string(),
        scenario_path: opts.scenario.display().to_string(),
        policies: opts
            .policies
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        sets: opts.sets.clone(),
        vary,
        seed_first: seeds.first,
        seed_last: seeds.last,
        require,
        minimize: opts.minimize.clone(),
        metrics,
        base_scenario: serde_json::to_value(scenario::compiled(&base)).unwrap_or_default(),
    };
    let scenarios = (0..inputs.point_count())
        .map(|p| {
            let sets = inputs.point_sets(p);
            scenario::load_within(&opts.scenario, &opts.policies, &sets, &opts.budget).map_err(
                |e| {
                    SweepError::arg(
                        "--vary",
                        &inputs.point_sets(p)[opts.sets.len()..].join(" "),
                        format!("this combination is invalid: {}", as_vary(e, &inputs.vary)),
                    )
                },
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Loaded { inputs, scenarios })
}

/// The grid's axes, one per `--vary`, in order; a path varied twice is an error.
fn parse_axes(opts: &SweepOptions) -> Result<Vec<Axis>, SweepError> {
    let mut vary: Vec<Axis> = Vec::new();
    for arg in &opts.vary {
        let axis = Axis::parse(arg)?;
        if vary.iter().any(|a| a.path == axis.path) {
            return Err(SweepError::arg(
                "--vary",
                arg,
                format!("{} is varied twice; expected each path once", axis.path),
            ));
        }
        vary.push(axis);
    }
    Ok(vary)
}

/// Loads each varied value alone over the base scenario, so an error names the `--vary` and
/// the value at fault (before any combination of values is tried).
fn check_values(opts: &SweepOptions, vary: &[Axis]) -> Result<(), SweepError> {
    for (arg, axis) in opts.vary.iter().zip(vary) {
        for i in 0..axis.values.len() {
            let mut sets = opts.sets.clone();
            sets.push(axis.set(i));
            scenario::load_within(&opts.scenario, &opts.policies, &sets, &opts.budget).map_err(
                |e| {
                    SweepError::arg(
                        "--vary",
                        arg,
                        format!("value {}: {}", axis.values[i], as_vary(e, vary)),
                    )
                },
            )?;
        }
    }
    Ok(())
}

/// Refuses a grid with no axis, or of more than [`MAX_POINTS`] points (the product of the
/// axes' lengths).
fn check_grid(opts: &SweepOptions, vary: &[Axis]) -> Result<(), SweepError> {
    if vary.is_empty() {
        return Err(SweepError::arg(
            "--vary",
            "",
            "expected at least one --vary PATH=V1,V2,…",
        ));
    }
    let count = vary
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
        .filter(|&n| n <= MAX_POINTS);
    if count.is_none() {
        return Err(SweepError::arg(
            "--vary",
            &opts.vary.join(" "),
            format!("expected at most {MAX_POINTS} grid points (the product of the axes' lengths)"),
        ));
    }
    Ok(())
}

/// The safe region's requirements: each `--require` read against the sweep's `metrics`, or
/// [`DEFAULT_REQUIRE`] without any.
fn requirements(opts: &SweepOptions, metrics: &[String]) -> Result<Vec<Require>, SweepError> {
    let require_args: Vec<String> = if opts.require.is_empty() {
        vec![DEFAULT_REQUIRE.to_string()]
    } else {
        opts.require.clone()
    };
    require_args
        .iter()
        .map(|r| Require::parse(r, metrics))
        .collect()
}

/// Refuses a `--minimize` path that is not varied, naming the varied ones.
fn check_minimize(opts: &SweepOptions, vary: &[Axis]) -> Result<(), SweepError> {
    for m in &opts.minimize {
        if !vary.iter().any(|a| &a.path == m) {
            return Err(SweepError::arg(
                "--minimize",
                m,
                format!(
                    "not a varied path; expected one of {}",
                    vary.iter()
                        .map(|a| a.path.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Refuses a sweep of more than [`MAX_RUNS`] runs (grid points × seeds), naming `--vary` and
/// `--seeds` and the product, before any grid point is loaded.
fn check_runs(opts: &SweepOptions, vary: &[Axis], seeds: SeedRange) -> Result<(), SweepError> {
    let points = vary
        .iter()
        .fold(1u64, |n, a| n.saturating_mul(a.values.len() as u64));
    let seed_count = (seeds.last - seeds.first).saturating_add(1);
    let runs = points.saturating_mul(seed_count);
    if runs <= MAX_RUNS {
        return Ok(());
    }
    let lengths: Vec<String> = vary.iter().map(|a| a.values.len().to_string()).collect();
    Err(SweepError::arg(
        "--seeds",
        &format!("{}..{}", seeds.first, seeds.last),
        format!(
            "{} points (--vary {}: {} values) × {} seeds = {} runs; expected at most {} runs per \
             sweep (points × seeds, shards included): fewer --vary values or --seeds",
            group(points),
            opts.vary.join(" --vary "),
            lengths.join(" × "),
            group(seed_count),
            group(runs),
            group(MAX_RUNS),
        ),
    ))
}

/// `1,000,000`.
fn group(n: u64) -> String {
    crate::scenario::budget::thousands(n as f64)
}

/// A grid point's load error with the `--set`s that `--vary` made spelled as `--vary`: the
/// user typed `--vary PATH=V1,V2`, not `--set PATH=V1`.
fn as_vary(e: scenario::ScenarioError, vary: &[Axis]) -> String {
    let varied = |set: &str| {
        set.split_once('=')
            .is_some_and(|(path, _)| vary.iter().any(|ax| ax.path == path))
    };
    match e {
        scenario::ScenarioError::Invalid {
            at,
            path,
            message,
            applied,
        } => scenario::ScenarioError::Invalid {
            at,
            path,
            message,
            applied: applied
                .into_iter()
                .map(|a| match a.strip_prefix("--set ") {
                    Some(set) if varied(set) => format!("--vary {set}"),
                    _ => a,
                })
                .collect(),
        }
        .to_string(),
        scenario::ScenarioError::Set { arg, message } if varied(&arg) => {
            format!("--vary {arg}: {message}")
        }
        other => other.to_string(),
    }
}
