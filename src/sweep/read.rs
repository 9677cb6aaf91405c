//! A whole sweep's output directory read back (`refundsim report --sweep DIR`): the points and
//! the recommendation of its `sweep.json`, and its SVG plots ([`super::plot_names`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::error::SweepError;
use super::files::FORMAT;
use super::inputs::Inputs;
use super::plot::plot_names;
use super::shard::Shard;
use super::table::Explored;
use super::vet::Skipped;

/// The largest plot file read back, bytes (a sweep's plots are tens of kilobytes).
pub(crate) const MAX_PLOT_BYTES: u64 = 16 << 20;

/// A whole sweep as its directory holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepRead {
    /// What the sweep ran: scenario, policies, `--set`, axes, seeds, requirements.
    pub inputs: Inputs,
    /// One per grid point, in grid order (the first axis slowest).
    pub points: Vec<SweepPoint>,
    /// Points where every requirement holds.
    pub safe_points: usize,
    /// With `--minimize`: the chosen point's index in `points`; `None` without `--minimize`,
    /// when no point is safe, or when none passes lint and a short explore.
    pub recommendation: Option<usize>,
    /// With `--minimize`: the safe points passed over, best first, and why (empty in a sweep
    /// written before lint and explore vetted the recommendation).
    pub skipped: Vec<Skipped>,
    /// The plots as (file name, SVG text), in [`super::plots`]' order.
    pub plots: Vec<(String, String)>,
}

/// One grid point of a [`SweepRead`].
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPoint {
    /// The varied fields' values, in axis order, as `--set` text.
    pub values: Vec<String>,
    /// Seeds run.
    pub seeds: usize,
    /// Fraction of seeds with a duplicate-refund ticket.
    pub p_duplicate: f64,
    /// Whether every requirement holds.
    pub safe: bool,
    /// The rule ids of lint's error findings at the point (empty: clean, or not recorded).
    pub lint: Vec<String>,
    /// What a short explore found, for the candidates explored.
    pub explore: Option<Explored>,
    /// Each metric's mean over seeds, by its `points.csv` name (NaN where `sweep.json` has
    /// `null`).
    pub means: BTreeMap<String, f64>,
}

#[derive(Deserialize)]
struct FileIn {
    format: String,
    inputs: Inputs,
    shard: Option<Shard>,
    results: Option<ResultsIn>,
}

#[derive(Deserialize)]
struct ResultsIn {
    safe_points: usize,
    recommendation: Option<PointIn>,
    #[serde(default)]
    vetting: Option<VettingIn>,
    points: Vec<PointIn>,
}

#[derive(Deserialize)]
struct VettingIn {
    skipped: Vec<Skipped>,
}

#[derive(Deserialize)]
struct PointIn {
    point: usize,
    values: Vec<String>,
    seeds: usize,
    p_duplicate: Option<f64>,
    safe: bool,
    #[serde(default)]
    lint: Vec<String>,
    #[serde(default)]
    explore: Option<Explored>,
    stats: BTreeMap<String, BTreeMap<String, Option<f64>>>,
}

fn read_err(dir: impl std::fmt::Display, message: impl Into<String>) -> SweepError {
    SweepError::Read {
        dir: dir.to_string(),
        message: message.into(),
    }
}

/// Reads the directory a whole (not sharded, or merged) `sweep` wrote. Errors name the
/// directory or file and what was expected: a missing or malformed `sweep.json`, a shard's,
/// a missing plot, a plot that is not SVG text.
pub fn read_dir(dir: &Path) -> Result<SweepRead, SweepError> {
    let expected = "expected the output directory of refundsim sweep (or merge)";
    if !dir.is_dir() {
        let what = if dir.exists() {
            "is not a directory"
        } else {
            "does not exist"
        };
        return Err(read_err(dir.display(), format!("{what}; {expected}")));
    }
    let json = dir.join("sweep.json");
    let file = read_sweep_json(&json, expected)?;
    let results = match (file.shard, file.results) {
        (Some(shard), _) => {
            return Err(read_err(
                dir.display(),
                format!(
                    "is shard {shard} of a sweep; expected a whole sweep (combine the shards \
                     with refundsim merge)"
                ),
            ))
        }
        (None, None) => {
            return Err(read_err(
                json.display(),
                "has no results; expected a whole sweep's",
            ))
        }
        (None, Some(r)) => r,
    };
    let inputs = file.inputs;
    check_points(&json, &inputs, &results.points)?;
    let recommendation = results
        .recommendation
        .map(|r| r.point)
        .filter(|&p| p < results.points.len());
    let skipped = results.vetting.map(|v| v.skipped).unwrap_or_default();
    let points = results.points.into_iter().map(point).collect();
    let plots = plot_names(&inputs)
        .into_iter()
        .map(|name| read_plot(dir, name))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(SweepRead {
        inputs,
        points,
        safe_points: results.safe_points,
        recommendation,
        skipped,
        plots,
    })
}

/// `sweep.json` of a sweep's output directory, read and checked for its format.
fn read_sweep_json(json: &Path, expected: &str) -> Result<FileIn, SweepError> {
    let text = crate::input::read_input(json, "a sweep.json")
        .map_err(|e| read_err(json.display(), format!("{}; {expected}", e.reason())))
        .and_then(|b| {
            String::from_utf8(b)
                .map_err(|_| read_err(json.display(), format!("is not UTF-8 text; {expected}")))
        })?;
    let file: FileIn = serde_json::from_str(&text)
        .map_err(|e| read_err(json.display(), format!("{e}; {expected}")))?;
    if file.format != FORMAT {
        return Err(read_err(
            json.display(),
            format!("has format {:?}; expected {FORMAT:?}", file.format),
        ));
    }
    Ok(file)
}

/// One point per grid point, in order, each with one value per axis.
fn check_points(json: &Path, inputs: &Inputs, points: &[PointIn]) -> Result<(), SweepError> {
    if points.len() != inputs.point_count() {
        return Err(read_err(
            json.display(),
            format!(
                "has {} points; expected {} (the grid of its inputs)",
                points.len(),
                inputs.point_count()
            ),
        ));
    }
    for (i, p) in points.iter().enumerate() {
        if p.point != i || p.values.len() != inputs.vary.len() {
            return Err(read_err(
                json.display(),
                format!(
                    "results.points[{i}] is point {} with {} values; expected point {i} with \
                     one value per varied field ({})",
                    p.point,
                    p.values.len(),
                    inputs.vary.len()
                ),
            ));
        }
    }
    Ok(())
}

fn point(p: PointIn) -> SweepPoint {
    SweepPoint {
        values: p.values,
        seeds: p.seeds,
        p_duplicate: p.p_duplicate.unwrap_or(f64::NAN),
        safe: p.safe,
        lint: p.lint,
        explore: p.explore,
        means: p
            .stats
            .into_iter()
            .map(|(k, s)| (k, s.get("mean").copied().flatten().unwrap_or(f64::NAN)))
            .collect(),
    }
}

/// One plot file: a plain name inside `dir`, at most [`MAX_PLOT_BYTES`], SVG text.
fn read_plot(dir: &Path, name: String) -> Result<(String, String), SweepError> {
    if name.contains(['/', '\\']) || name.starts_with('.') {
        return Err(read_err(
            dir.join("sweep.json").display(),
            format!("names a plot {name:?} outside the directory; expected a varied field path"),
        ));
    }
    let path = dir.join(&name);
    let len = std::fs::metadata(&path)
        .map_err(|e| {
            read_err(
                path.display(),
                format!("cannot read ({e}); expected the plot sweep wrote"),
            )
        })?
        .len();
    if len > MAX_PLOT_BYTES {
        return Err(read_err(
            path.display(),
            format!("is {len} bytes; expected a plot of at most {MAX_PLOT_BYTES}"),
        ));
    }
    // Bounded again while reading: the file may have grown since (or be a pipe).
    let svg = crate::input::read_capped(&path, MAX_PLOT_BYTES, "a plot")
        .map_err(|e| {
            read_err(
                path.display(),
                format!("{}; expected the SVG text sweep wrote", e.reason()),
            )
        })
        .and_then(|b| {
            String::from_utf8(b).map_err(|_| {
                read_err(
                    path.display(),
                    "is not UTF-8 text; expected the SVG text sweep wrote",
                )
            })
        })?;
    let head = svg.trim_start();
    if !(head.starts_with("<svg") || head.starts_with("<?xml")) {
        return Err(read_err(
            path.display(),
            "does not start with <svg; expected the SVG plot sweep wrote",
        ));
    }
    Ok((name, svg))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeds::SeedRange;
    use crate::sweep::{sweep, write_dir, SweepOptions};

    fn small_sweep(dir: &Path) -> crate::sweep::Sweep {
        let root = crate::repo_root();
        let s = sweep(&SweepOptions {
            scenario: root.join("scenarios/recipes/pool-acquire-retry.json"),
            vary: vec![
                "executor.timeout=1s,30s".into(),
                "refunds_service.pool_size=2,3".into(),
            ],
            seeds: Some(SeedRange { first: 1, last: 2 }),
            minimize: vec!["executor.timeout".into()],
            ..Default::default()
        })
        .unwrap();
        write_dir(dir, &s).unwrap();
        s
    }

    #[test]
    fn reads_back_what_sweep_wrote() {
        let tmp = tempfile::tempdir().unwrap();
        let s = small_sweep(tmp.path());
        let r = read_dir(tmp.path()).unwrap();
        assert_eq!(r.inputs, s.inputs);
        let written: Vec<String> = crate::sweep::plots(&s)
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let names: Vec<&str> = r.plots.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, written);
        assert_eq!(
            names,
            [
                "p_duplicate.svg",
                "duplicates.svg",
                "latency-executor.timeout.svg",
                "latency-refunds_service.pool_size.svg"
            ]
        );
        assert_eq!(r.points.len(), 4);
        for (p, q) in r.points.iter().zip(&s.points) {
            assert_eq!(p.values, q.values);
            assert_eq!(p.safe, q.safe);
            assert_eq!(p.p_duplicate, q.p_duplicate);
            let d = s
                .inputs
                .metrics
                .iter()
                .position(|m| m == "duplicate_refund_tickets");
            assert_eq!(
                p.means["duplicate_refund_tickets"],
                q.stats[d.unwrap()].mean
            );
        }
        assert_eq!(r.safe_points, s.points.iter().filter(|p| p.safe).count());
        assert_eq!(r.recommendation, s.best);
        // What lint and explore said is read back: every point of the recipe lints with
        // errors, so both safe points were passed over.
        assert_eq!(r.skipped, s.skipped);
        assert_eq!(r.skipped.len(), 2);
        for (p, q) in r.points.iter().zip(&s.points) {
            assert_eq!((&p.lint, &p.explore), (&q.lint, &q.explore));
            assert!(p.lint.contains(&"idempotency-key-missing".to_string()));
        }
    }

    #[test]
    fn refuses_what_is_not_a_whole_sweep() {
        let tmp = tempfile::tempdir().unwrap();
        let err = |d: &Path| read_dir(d).unwrap_err().to_string();
        assert!(err(&tmp.path().join("none")).contains("does not exist"));
        assert!(err(tmp.path()).contains("sweep.json: cannot read"));
        small_sweep(tmp.path());
        std::fs::remove_file(tmp.path().join("duplicates.svg")).unwrap();
        let e = err(tmp.path());
        assert!(e.contains("duplicates.svg: cannot read"), "{e}");
        std::fs::write(tmp.path().join("duplicates.svg"), "<script>x</script>").unwrap();
        let e = err(tmp.path());
        assert!(e.contains("does not start with <svg"), "{e}");
        let json = tmp.path().join("sweep.json");
        let text = std::fs::read_to_string(&json).unwrap();
        std::fs::write(&json, text.replace("refundsim-sweep/1", "other/1")).unwrap();
        assert!(err(tmp.path()).contains("has format \"other/1\""));
        std::fs::write(&json, "{").unwrap();
        assert!(err(tmp.path()).contains("sweep.json: EOF"));
    }
}
