//! The output directory: `summary.csv`, `points.csv`, `runs.csv`, `sweep.json` and the plots of a whole sweep;
//! `runs.csv` and `sweep.json` of a shard. Each file is written whole or not at all, and only
//! once every input has been checked and every run made.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::SweepError;
use super::exec::Sweep;
use super::inputs::Inputs;
use super::plot::plots;
use super::shard::Shard;
use super::summary::summary_csv;
use super::table::Explored;
use super::table::{points_csv, runs_csv, Stat};
use super::vet::{Skipped, EXPLORE_CASES, EXPLORE_SEED, MAX_EXPLORED};

/// `sweep.json`'s `format`.
pub(crate) const FORMAT: &str = "refundsim-sweep/1";

/// `sweep.json`: the inputs, the shard, and for a whole sweep the points and the choice.
#[derive(Serialize)]
struct SweepFile<'a> {
    format: &'static str,
    inputs: &'a Inputs,
    shard: Option<Shard>,
    runs: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    results: Option<Results<'a>>,
}

#[derive(Serialize)]
struct Results<'a> {
    safe_points: usize,
    /// With `--minimize`: the chosen point, `null` when none is safe or none passes lint and
    /// a short explore.
    recommendation: Option<&'a PointJson>,
    /// With `--minimize`: how candidates were explored, and the safe points passed over.
    #[serde(skip_serializing_if = "Option::is_none")]
    vetting: Option<Vetting<'a>>,
    points: &'a [PointJson],
}

/// The explore budget of the recommendation and the candidates it skipped.
#[derive(Serialize)]
struct Vetting<'a> {
    explore_cases: u32,
    explore_seed: u64,
    max_explored: usize,
    skipped: &'a [Skipped],
}

#[derive(Serialize)]
struct PointJson {
    point: usize,
    values: Vec<String>,
    seeds: usize,
    p_duplicate: f64,
    safe: bool,
    /// The rule ids of lint's error findings (empty: clean).
    lint: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    explore: Option<Explored>,
    stats: std::collections::BTreeMap<String, Stat>,
}

/// What `merge` reads back from a shard's `sweep.json`.
#[derive(Deserialize)]
pub(super) struct ShardHeader {
    pub format: String,
    pub inputs: Inputs,
    pub shard: Option<Shard>,
    pub runs: usize,
}

/// `sweep.json`'s text.
pub(crate) fn sweep_json(s: &Sweep) -> String {
    let points: Vec<PointJson> = s
        .points
        .iter()
        .map(|p| PointJson {
            point: p.point,
            values: p.values.clone(),
            seeds: p.seeds,
            p_duplicate: p.p_duplicate,
            safe: p.safe,
            lint: p.lint.clone(),
            explore: p.explore.clone(),
            stats: s
                .inputs
                .metrics
                .iter()
                .cloned()
                .zip(p.stats.iter().copied())
                .collect(),
        })
        .collect();
    let results = s.shard.is_none().then(|| Results {
        safe_points: s.points.iter().filter(|p| p.safe).count(),
        recommendation: s.best.and_then(|b| points.iter().find(|p| p.point == b)),
        vetting: (!s.inputs.minimize.is_empty()).then_some(Vetting {
            explore_cases: EXPLORE_CASES,
            explore_seed: EXPLORE_SEED,
            max_explored: MAX_EXPLORED,
            skipped: &s.skipped,
        }),
        points: &points,
    });
    let file = SweepFile {
        format: FORMAT,
        inputs: &s.inputs,
        shard: s.shard,
        runs: s.runs.len(),
        results,
    };
    // Plain data of strings, numbers and maps with string keys: serialising cannot fail.
    let mut text = serde_json::to_string_pretty(&file).unwrap_or_default();
    text.push('\n');
    text
}

/// Writes the sweep's files into `dir` (created if missing) and returns their paths. Every
/// file's text is made before the first is written.
pub fn write_dir(dir: &Path, s: &Sweep) -> Result<Vec<PathBuf>, SweepError> {
    let paths = s.inputs.paths();
    let values_of = |p| s.inputs.values(p);
    let mut files: Vec<(String, String)> = Vec::new();
    if s.shard.is_none() {
        files.push(("summary.csv".into(), summary_csv(s)));
        files.push((
            "points.csv".into(),
            points_csv(&paths, &s.inputs.metrics, &s.points),
        ));
    }
    files.push((
        "runs.csv".into(),
        runs_csv(&paths, &s.inputs.metrics, &s.runs, values_of),
    ));
    files.push(("sweep.json".into(), sweep_json(s)));
    if s.shard.is_none() {
        let svgs = plots(s).map_err(|message| SweepError::Output {
            path: dir.display().to_string(),
            message,
        })?;
        files.extend(svgs);
    }
    let out_err = |path: &Path, message: String| SweepError::Output {
        path: path.display().to_string(),
        message,
    };
    if dir.exists() && !dir.is_dir() {
        return Err(out_err(
            dir,
            "is not a directory; expected a directory path".into(),
        ));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| out_err(dir, format!("cannot create the directory: {e}")))?;
    // An earlier sweep's outputs that this one does not write (a 2-field sweep's heatmaps under
    // a 1-field re-run, a whole sweep's points.csv and summary.csv under a shard) would be read as this sweep's:
    // in a directory an earlier sweep wrote (it has sweep.json), they are removed first.
    if dir.join("sweep.json").is_file() {
        let keep: Vec<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
        let entries = std::fs::read_dir(dir)
            .map_err(|e| out_err(dir, format!("cannot read the directory: {e}")))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let ours = name == "points.csv" || name == "summary.csv" || name.ends_with(".svg");
            if ours && !keep.contains(&name.as_str()) {
                std::fs::remove_file(entry.path()).map_err(|e| {
                    out_err(&entry.path(), format!("cannot remove a stale file: {e}"))
                })?;
            }
        }
    }
    let mut written = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        crate::output::write_atomically(&path, &text).map_err(|m| out_err(&path, m))?;
        written.push(path);
    }
    Ok(written)
}
