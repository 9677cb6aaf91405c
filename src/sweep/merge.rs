//! `refundsim merge DIR… --out DIR`: the shards of one sweep back into the whole sweep, with
//! the same `points.csv`, `runs.csv` and `sweep.json` (byte for byte) as running it unsharded.

use std::path::{Path, PathBuf};

use super::error::SweepError;
use super::exec::{finish, Inputs, Sweep};
use super::files::{ShardHeader, FORMAT};
use super::shard::Shard;
use super::table::{runs_header, RunRow};

/// Reads every shard directory (`sweep.json` and `runs.csv` as `sweep --shard` wrote them),
/// checks they are the shards 1..N of one sweep, each once, with each shard's runs and no
/// other, and summarises the whole. Errors name the directory and what was expected.
pub fn merge(dirs: &[PathBuf]) -> Result<Sweep, SweepError> {
    if dirs.is_empty() {
        return Err(SweepError::merge(
            "DIR…",
            "no directory given; expected the output directories of sweep --shard 1/N … N/N",
        ));
    }
    let headers = dirs
        .iter()
        .map(|d| read_header(d))
        .collect::<Result<Vec<_>, _>>()?;
    let first = &headers[0];
    let n = first.1.n;
    for (dir, shard, inputs) in headers.iter().map(|(h, s, _)| (&h.0, s, &h.1)) {
        if inputs != &first.0 .1 {
            return Err(SweepError::merge(
                dir.display(),
                format!(
                    "a different sweep from {}: its {} differs; expected shards of one sweep \
                     (same scenario and policies, --set, --vary, --seeds, --require, --minimize \
                     and refundsim version)",
                    first.0 .0.display(),
                    differing_field(inputs, &first.0 .1)
                ),
            ));
        }
        if shard.n != n {
            return Err(SweepError::merge(
                dir.display(),
                format!(
                    "shard {shard} of a split into {}, but {} is shard {} of {n}; expected one \
                     split",
                    shard.n,
                    first.0 .0.display(),
                    first.1
                ),
            ));
        }
    }
    for k in 1..=n {
        let with: Vec<&PathBuf> = headers
            .iter()
            .filter(|(_, s, _)| s.k == k)
            .map(|(h, _, _)| &h.0)
            .collect();
        if with.len() > 1 {
            let names: Vec<String> = with.iter().map(|d| d.display().to_string()).collect();
            return Err(SweepError::merge(
                "DIR…",
                format!(
                    "shard {k}/{n} given twice ({}); expected each shard once",
                    names.join(", ")
                ),
            ));
        }
    }
    let missing: Vec<String> = (1..=n)
        .filter(|k| !headers.iter().any(|(_, s, _)| s.k == *k))
        .map(|k| format!("{k}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(SweepError::merge(
            "DIR…",
            format!(
                "missing shard{} {}; expected all {n} shards of the sweep",
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", ")
            ),
        ));
    }
    let inputs = first.0 .1.clone();
    let mut runs: Vec<(usize, RunRow)> = Vec::new();
    for ((dir, _), shard, count) in &headers {
        let shard_runs = read_runs(dir, &inputs, *shard)?;
        if shard_runs.len() != *count {
            return Err(SweepError::merge(
                dir.display(),
                format!(
                    "runs.csv has {} runs but sweep.json says {count}; expected the files of one \
                     sweep --shard run",
                    shard_runs.len()
                ),
            ));
        }
        runs.extend(shard_runs);
    }
    runs.sort_by_key(|(i, _)| *i);
    Ok(finish(
        inputs,
        None,
        runs.into_iter().map(|(_, r)| r).collect(),
    ))
}

/// (directory, its inputs), its shard, and the number of runs its sweep.json says it wrote.
type Header = ((PathBuf, Inputs), Shard, usize);

fn read_header(dir: &Path) -> Result<Header, SweepError> {
    let path = dir.join("sweep.json");
    let text = crate::input::read_input(&path, "a sweep.json")
        .map_err(|e| match e {
            crate::input::InputError::Read { source, .. } => SweepError::merge(
                dir.display(),
                format!(
                    "cannot read sweep.json ({source}); expected a directory written by sweep \
                     --shard K/N"
                ),
            ),
            other => SweepError::merge(dir.display(), format!("sweep.json: {}", other.reason())),
        })
        .and_then(|b| {
            String::from_utf8(b).map_err(|_| {
                SweepError::merge(
                    dir.display(),
                    "sweep.json is not UTF-8 text; expected the sweep.json that sweep --shard K/N \
                     wrote",
                )
            })
        })?;
    let h: ShardHeader = serde_json::from_str(&text).map_err(|e| {
        SweepError::merge(
            dir.display(),
            format!("sweep.json: {e}; expected the sweep.json that sweep --shard K/N wrote"),
        )
    })?;
    if h.format != FORMAT {
        return Err(SweepError::merge(
            dir.display(),
            format!("sweep.json has format {:?}; expected {FORMAT:?}", h.format),
        ));
    }
    let Some(shard) = h.shard else {
        return Err(SweepError::merge(
            dir.display(),
            "a whole sweep, not a shard; expected directories written by sweep --shard K/N",
        ));
    };
    Ok(((dir.to_path_buf(), h.inputs), shard, h.runs))
}

/// The name of the first field in which two sweeps' inputs differ.
fn differing_field(a: &Inputs, b: &Inputs) -> String {
    let (a, b) = (serde_json::to_value(a), serde_json::to_value(b));
    if let (Ok(serde_json::Value::Object(a)), Ok(serde_json::Value::Object(b))) = (a, b) {
        if let Some((k, _)) = a.iter().find(|(k, v)| b.get(*k) != Some(v)) {
            return k.clone();
        }
    }
    "inputs".into()
}

/// A shard's runs with their index in run order; every one must be the shard's, each once.
fn read_runs(
    dir: &Path,
    inputs: &Inputs,
    shard: Shard,
) -> Result<Vec<(usize, RunRow)>, SweepError> {
    let err = |m: String| SweepError::merge(dir.display(), format!("runs.csv: {m}"));
    let mut r = csv::Reader::from_path(dir.join("runs.csv"))
        .map_err(|e| err(format!("cannot read ({e})")))?;
    let expected = runs_header(&inputs.paths(), &inputs.metrics);
    let header: Vec<String> = r
        .headers()
        .map_err(|e| err(e.to_string()))?
        .iter()
        .map(String::from)
        .collect();
    if header != expected {
        return Err(err(
            "its columns are not the sweep's; expected the runs.csv sweep wrote".into(),
        ));
    }
    let seeds = inputs.seed_last - inputs.seed_first + 1;
    let points = inputs.point_count();
    let axes = inputs.vary.len();
    let mut out: Vec<(usize, RunRow)> = Vec::new();
    for (line, rec) in r.records().enumerate() {
        let rec = rec.map_err(|e| err(e.to_string()))?;
        let at = |m: &str| err(format!("row {}: {m}", line + 2));
        let point: usize = rec[0].parse().map_err(|_| at("point is not a number"))?;
        let seed: u64 = rec[axes + 1]
            .parse()
            .map_err(|_| at("seed is not a number"))?;
        if point >= points || seed < inputs.seed_first || seed > inputs.seed_last {
            return Err(at("point or seed outside the sweep"));
        }
        if (1..=axes).any(|i| rec[i] != inputs.values(point)[i - 1]) {
            return Err(at("varied values do not match the point"));
        }
        let index = point * seeds as usize + (seed - inputs.seed_first) as usize;
        if !shard.owns(index) {
            return Err(at(&format!(
                "run (point {point}, seed {seed}) is not shard {shard}'s"
            )));
        }
        let values = rec
            .iter()
            .skip(axes + 2)
            .map(|v| v.parse::<f64>())
            .collect::<Result<Vec<f64>, _>>()
            .map_err(|_| at("a metric is not a number"))?;
        out.push((
            index,
            RunRow {
                point,
                seed,
                values,
            },
        ));
    }
    let owned = (0..points * seeds as usize)
        .filter(|&i| shard.owns(i))
        .count();
    let mut indices: Vec<usize> = out.iter().map(|(i, _)| *i).collect();
    indices.sort_unstable();
    indices.dedup();
    if indices.len() != out.len() || out.len() != owned {
        return Err(err(format!(
            "{} runs ({} distinct); expected the {owned} runs of shard {shard}, each once",
            out.len(),
            indices.len()
        )));
    }
    Ok(out)
}
