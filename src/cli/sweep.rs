//! `refundsim sweep` and `refundsim merge`: a grid of field values × seeds, and the shards of
//! one combined.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use refundsim::gate;
use refundsim::sweep;

use super::progress::RunsBar;
use super::{display, emit, exit};

#[derive(clap::Args)]
pub(crate) struct SweepArgs {
    /// Scenario file (JSON).
    scenario: PathBuf,
    /// RFC 7396 JSON merge patch applied over the scenario; repeatable, applied in order.
    #[arg(long = "policy", value_name = "FILE")]
    policies: Vec<PathBuf>,
    /// Override one field for every grid point, e.g. `--set humans.check_probability=0`;
    /// repeatable, after policies.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// An axis of the grid: a field and its values, `executor.timeout=8s,10s,15s`,
    /// `refunds_service.pool_size=2..12`, `2..12:2`, `5s..30s:5s`; repeatable (the grid is the
    /// product, the first --vary slowest).
    #[arg(long, required = true, value_name = "PATH=VALUES")]
    vary: Vec<String>,
    /// Seeds `A..B` (inclusive), the same for every point.
    #[arg(
        long,
        value_name = "A..B",
        default_value = "1..20",
        allow_hyphen_values = true
    )]
    seeds: String,
    /// Run only shard K of N (1 ≤ K ≤ N) of the (point, seed) runs; combine with `merge`.
    #[arg(long, value_name = "K/N")]
    shard: Option<String>,
    /// The safe region: points where METRIC<=V holds (a bare metric is its max over seeds;
    /// also `METRIC.mean`, `.p50`, `.p90`, `.max`, and `p_duplicate`); repeatable
    /// [default: duplicate_refund_tickets<=0].
    #[arg(long, value_name = "METRIC<=V")]
    require: Vec<String>,
    /// Print the safe point with the smallest value of this varied PATH; repeatable (ties
    /// broken by the next, then by service response p99).
    #[arg(long, value_name = "PATH")]
    minimize: Vec<String>,
    /// Output directory (created if missing; its files are replaced whole).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

#[derive(clap::Args)]
pub(crate) struct MergeArgs {
    /// The output directories of `sweep --shard 1/N` … `N/N`, in any order.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// Output directory of the whole sweep.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

pub(crate) fn run(
    a: SweepArgs,
    budget: refundsim::scenario::RunBudget,
) -> anyhow::Result<ExitCode> {
    if let Some((i, m)) = a
        .minimize
        .iter()
        .enumerate()
        .find(|(i, m)| a.minimize[..*i].contains(m))
    {
        let _ = i;
        return Err(refundsim::error::CliError::Input(format!(
            "--minimize {m}: given twice; expected each field once, in order of priority"
        ))
        .into());
    }
    let opts = sweep::SweepOptions {
        scenario: a.scenario,
        policies: a.policies,
        sets: a.sets,
        vary: a.vary,
        seeds: Some(gate::SeedRange::parse("--seeds", &a.seeds)?),
        shard: a.shard.as_deref().map(sweep::Shard::parse).transpose()?,
        require: a.require,
        minimize: a.minimize,
        budget,
    };
    let bar = RunsBar::new("sweep");
    let s = sweep::sweep_with_progress(&opts, &bar);
    bar.0.finish_and_clear();
    finish_sweep(&s?, &a.out)
}

/// `merge`: the shards' directories combined into the whole sweep's.
pub(crate) fn merge(args: MergeArgs) -> anyhow::Result<ExitCode> {
    // Writing the merged sweep over one of its shards would destroy that shard.
    if let Ok(out) = args.out.canonicalize() {
        if let Some(d) = args
            .dirs
            .iter()
            .find(|d| d.canonicalize().is_ok_and(|d| d == out))
        {
            return Err(refundsim::error::CliError::Input(format!(
                "--out {}: is one of the shard directories being merged ({}); expected a \
                     new directory",
                args.out.display(),
                d.display()
            ))
            .into());
        }
    }
    let s = sweep::merge(&args.dirs)?;
    finish_sweep(&s, &args.out)
}

/// Writes a sweep's files, prints its summary and the files written; exit 1 when `--minimize`
/// has nothing to recommend (no safe point, or none that lint and a short explore accept).
fn finish_sweep(s: &sweep::Sweep, out: &Path) -> anyhow::Result<ExitCode> {
    let written = sweep::write_dir(out, s)?;
    let mut text = sweep::sweep_text(s);
    let names: Vec<String> = written.iter().map(|p| display(p)).collect();
    text.push_str(&format!("wrote {}\n", names.join(", ")));
    emit(&text)?;
    Ok(exit(!s.no_recommendation()))
}
