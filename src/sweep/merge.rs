//! `refundsim merge DIR… --out DIR`: the shards of one sweep back into the whole sweep, with
//! the same `points.csv`, `runs.csv` and `sweep.json` (byte for byte) as running it unsharded.

use std::path::{Path, PathBuf};

use super::error::SweepError;
use super::exec::{finish, Sweep};
use super::files::{ShardHeader, FORMAT};
use super::inputs::Inputs;
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
    check_one_split(&headers)?;
    check_each_shard_once(&headers)?;
    let inputs = headers[0].inputs.clone();
    let mut runs: Vec<(usize, RunRow)> = Vec::new();
    for h in &headers {
        let shard_runs = read_runs(&h.dir, &inputs, h.shard)?;
        if shard_runs.len() != h.runs {
            return Err(SweepError::merge(
                h.dir.display(),
                format!(
                    "runs.csv has {} runs but sweep.json says {}; expected the files of one \
                     sweep --shard run",
                    shard_runs.len(),
                    h.runs
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

/// Refuses shards of different sweeps (inputs that differ from the first directory's) or of
/// different splits (another N).
fn check_one_split(headers: &[Header]) -> Result<(), SweepError> {
    let first = &headers[0];
    let n = first.shard.n;
    for h in headers {
        if h.inputs != first.inputs {
            return Err(SweepError::merge(
                h.dir.display(),
                format!(
                    "a different sweep from {}: its {} differs; expected shards of one sweep \
                     (same scenario and policies, --set, --vary, --seeds, --require, --minimize \
                     and refundsim version)",
                    first.dir.display(),
                    differing_field(&h.inputs, &first.inputs)
                ),
            ));
        }
        if h.shard.n != n {
            return Err(SweepError::merge(
                h.dir.display(),
                format!(
                    "shard {} of a split into {}, but {} is shard {} of {n}; expected one \
                     split",
                    h.shard,
                    h.shard.n,
                    first.dir.display(),
                    first.shard
                ),
            ));
        }
    }
    Ok(())
}

/// Refuses a shard given twice, then shards missing from 1..N (all listed).
fn check_each_shard_once(headers: &[Header]) -> Result<(), SweepError> {
    let n = headers[0].shard.n;
    for k in 1..=n {
        let with: Vec<&PathBuf> = headers
            .iter()
            .filter(|h| h.shard.k == k)
            .map(|h| &h.dir)
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
        .filter(|k| !headers.iter().any(|h| h.shard.k == *k))
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
    Ok(())
}

/// What a shard directory's sweep.json says.
struct Header {
    /// The directory.
    dir: PathBuf,
    /// The sweep's inputs.
    inputs: Inputs,
    /// Which shard it is.
    shard: Shard,
    /// The number of runs it wrote.
    runs: usize,
}

/// Reads and checks `dir`'s sweep.json: a shard's header of this format.
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
    Ok(Header {
        dir: dir.to_path_buf(),
        inputs: h.inputs,
        shard,
        runs: h.runs,
    })
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
    let mut out: Vec<(usize, RunRow)> = Vec::new();
    for (line, rec) in r.records().enumerate() {
        let rec = rec.map_err(|e| err(e.to_string()))?;
        let at = |m: &str| err(format!("row {}: {m}", line + 2));
        out.push(parse_run(&rec, inputs, shard).map_err(|m| at(&m))?);
    }
    let owned = (0..inputs.run_count()).filter(|&i| shard.owns(i)).count();
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

/// One row of a shard's runs.csv (point, the varied values, seed, the metrics) with its index
/// in run order. The error says what is wrong with the row: a number that is none, a run
/// outside the sweep or not the shard's, values that are not the point's.
fn parse_run(
    rec: &csv::StringRecord,
    inputs: &Inputs,
    shard: Shard,
) -> Result<(usize, RunRow), String> {
    let axes = inputs.vary.len();
    let point: usize = rec[0].parse().map_err(|_| "point is not a number")?;
    let seed: u64 = rec[axes + 1].parse().map_err(|_| "seed is not a number")?;
    if point >= inputs.point_count() || seed < inputs.seed_first || seed > inputs.seed_last {
        return Err("point or seed outside the sweep".into());
    }
    if (1..=axes).any(|i| rec[i] != inputs.values(point)[i - 1]) {
        return Err("varied values do not match the point".into());
    }
    let index = inputs.run_index(point, seed);
    if !shard.owns(index) {
        return Err(format!(
            "run (point {point}, seed {seed}) is not shard {shard}'s"
        ));
    }
    let values = rec
        .iter()
        .skip(axes + 2)
        .map(|v| v.parse::<f64>())
        .collect::<Result<Vec<f64>, _>>()
        .map_err(|_| "a metric is not a number")?;
    Ok((
        index,
        RunRow {
            point,
            seed,
            values,
        },
    ))
}
