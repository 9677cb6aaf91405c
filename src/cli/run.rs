//! `refundsim run`: one scenario, its summary, and the files it streams to.

use std::path::PathBuf;
use std::process::ExitCode;

use refundsim::report;

use super::progress::{virtual_time_bar, virtual_time_progress};
use super::{emit, exit};

#[derive(clap::Args)]
pub(crate) struct RunArgs {
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
    /// Print the report as JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Write the JSONL history to FILE (written whole or not at all).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Write the run as Chrome Trace Event JSON to FILE, for ui.perfetto.dev or
    /// chrome://tracing (written whole or not at all; see docs/perfetto.md).
    #[arg(long, value_name = "FILE")]
    perfetto: Option<PathBuf>,
    /// Write the run as OpenTelemetry traces (OTLP/JSON, semantic conventions only) to FILE,
    /// for Jaeger, Tempo, Langfuse or `refundsim import` (whole or not at all; see
    /// docs/otlp-export.md).
    #[arg(long, value_name = "FILE")]
    otlp: Option<PathBuf>,
    /// What --otlp records of the opt-in attributes: a comma-separated list of `arguments`
    /// (the tool calls' arguments: without them no span names its ticket), `results` (the
    /// tool results) and `headers` (the Stripe requests' Idempotency-Key), or `none`.
    #[arg(
        long,
        value_name = "LIST",
        default_value = "arguments",
        requires = "otlp"
    )]
    otlp_capture: report::otlp::OtlpCapture,
    /// Write Stripe's list of the run's refunds to FILE, as the body of `GET /v1/refunds`
    /// (whole or not at all; see docs/otlp-export.md).
    #[arg(long, value_name = "FILE")]
    stripe_list: Option<PathBuf>,
    /// Print this ticket's story in the incident log's style: its id, or the text id a
    /// recording gave it (`T-100000`; see `replay.ticket_labels`).
    #[arg(long, value_name = "ID")]
    ticket: Option<String>,
    /// With --ticket: print only the ticket's story, without the summary, ready to paste into
    /// a postmortem. The exit code is still `run`'s: 1 when an `expect` bound failed (said on
    /// stderr, since the summary that shows it is not printed), so a script's `$?` keeps its
    /// meaning.
    #[arg(long, requires = "ticket", conflicts_with = "json")]
    story_only: bool,
}

pub(crate) fn run(a: RunArgs, budget: refundsim::scenario::RunBudget) -> anyhow::Result<ExitCode> {
    let bar = virtual_time_bar();
    let observer = virtual_time_progress(&bar);
    let outcome = report::cli::cli_run_with_progress(
        &report::cli::CliOptions {
            scenario: a.scenario,
            seed: a.seed,
            policies: a.policies,
            sets: a.sets,
            json: a.json,
            trace: a.trace,
            perfetto: a.perfetto,
            otlp: a.otlp,
            otlp_capture: a.otlp_capture,
            stripe_list: a.stripe_list,
            ticket: a.ticket,
            story_only: a.story_only,
            budget,
        },
        observer,
    );
    bar.finish_and_clear();
    let outcome = outcome?;
    emit(&outcome.stdout)?;
    if a.story_only && !outcome.expectations_met {
        eprintln!(
            "note: an expect bound or the replay check failed (exit 1); run without \
             --story-only for the summary"
        );
    }
    Ok(exit(outcome.expectations_met))
}
