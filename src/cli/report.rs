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

/// `1 story`, `2 stories`.
fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub(crate) fn run(
    a: ReportArgs,
    budget: refundsim::scenario::RunBudget,
) -> anyhow::Result<ExitCode> {
    if a.out.as_os_str() == "-" {
        // `-` is stdout for `run --trace`; a report is a file to attach, written whole or not at
        // all, so say so rather than write a file named `-`.
        return Err(refundsim::error::CliError::Input(
            "--out -: report writes a self-contained HTML file, not to stdout; give a path, e.g. \
             --out report.html"
                .into(),
        )
        .into());
    }
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
        "wrote {}: {} (seed {}), {}, {} shown\n",
        display(&a.out),
        r.scenario,
        r.seed,
        plural(
            r.duplicate_refund_tickets(),
            "duplicate-refund ticket",
            "duplicate-refund tickets"
        ),
        plural(made.stories.len() as u64, "story", "stories")
    )))?;
    Ok(exit(r.expectations_met))
}
