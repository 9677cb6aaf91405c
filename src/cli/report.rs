//! `refundsim report`: one run as a self-contained HTML file.

use std::path::PathBuf;
use std::process::ExitCode;

use refundsim::report;

use super::progress::{virtual_time_bar, virtual_time_progress};
use super::{display, emit, exit};

#[derive(clap::Args)]
pub(crate) struct ReportArgs {
    /// Scenario file (JSON).
    scenario: PathBuf,
    /// Root seed [default: the scenario's `seed`].
    #[arg(long)]
    seed: Option<u64>,
    /// RFC 7396 JSON merge patch applied over the scenario; repeatable, applied in order.
    #[arg(long = "policy", value_name = "FILE")]
    policies: Vec<PathBuf>,
    /// Override one field, e.g. `--set executor.timeout=15s`; repeatable, applied after policies.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Embed the table and plots of this `sweep` (or `merge`) output directory.
    #[arg(long, value_name = "DIR")]
    sweep: Option<PathBuf>,
    /// The HTML file to write (whole or not at all; its directory must exist).
    #[arg(long, value_name = "FILE.html")]
    out: PathBuf,
}

pub(crate) fn run(
    a: ReportArgs,
    budget: refundsim::scenario::RunBudget,
) -> anyhow::Result<ExitCode> {
    let bar = virtual_time_bar();
    let opts = report::html::HtmlOptions {
        scenario: a.scenario,
        seed: a.seed,
        policies: a.policies,
        sets: a.sets,
        sweep: a.sweep,
        budget,
    };
    let made = report::html::write_html_report(&opts, &a.out, virtual_time_progress(&bar));
    bar.finish_and_clear();
    let made = made?;
    let r = &made.report;
    emit(made.effect.say(&format!(
        "wrote {}: {} (seed {}), {} duplicate-refund tickets, {} stories shown\n",
        display(&a.out),
        r.scenario,
        r.seed,
        r.duplicate_refund_tickets(),
        made.stories.len()
    )))?;
    Ok(exit(r.expectations_met))
}
