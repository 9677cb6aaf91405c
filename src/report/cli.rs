//! `refundsim run` as one library call: load the scenario, run it, find the asked ticket's story,
//! write the trace, and render the report. The binary only parses arguments, prints the text and
//! maps the outcome to an exit code.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use super::{story, summary};
use crate::error::CliError;
use crate::history::write_trace;
use crate::output::{same_file, write_whole};
use crate::run::{run, run_with_progress, Invocation, RunOutput};
use crate::scenario::{self, Scenario};

/// The arguments of `refundsim run`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CliOptions {
    /// Scenario file (JSON).
    pub scenario: PathBuf,
    /// Root seed [default: the scenario's `seed`].
    pub seed: Option<u64>,
    /// Merge patches applied over the scenario, in order.
    pub policies: Vec<PathBuf>,
    /// `PATH=VALUE` overrides, applied after the policies.
    pub sets: Vec<String>,
    /// Render the report as JSON instead of text.
    pub json: bool,
    /// Write the JSONL history here (whole or not at all).
    pub trace: Option<PathBuf>,
    /// Add this ticket's story to the report.
    pub ticket: Option<u64>,
}

/// What `refundsim run` prints, and whether every `expect` bound held (exit 0, else 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CliOutcome {
    /// The report (text or JSON) exactly as printed on stdout.
    pub stdout: String,
    /// Whether every `expect` bound held.
    pub expectations_met: bool,
}

/// Runs `refundsim run`: the trace, if asked for, is written before this returns.
pub fn cli_run(opts: &CliOptions) -> Result<CliOutcome, CliError> {
    cli_run_by(opts, run)
}

/// [`cli_run`], telling `observer` the virtual time reached and the scenario's horizon now and
/// then during the simulation (see [`run_with_progress`]), for a progress bar. The outcome is
/// exactly [`cli_run`]'s.
pub fn cli_run_with_progress(
    opts: &CliOptions,
    mut observer: impl FnMut(Duration, Duration) + 'static,
) -> Result<CliOutcome, CliError> {
    cli_run_by(opts, |sc, seed, how| {
        let horizon = sc.horizon;
        run_with_progress(sc, seed, how, move |now| observer(now, horizon))
    })
}

fn cli_run_by(
    opts: &CliOptions,
    run: impl FnOnce(&Scenario, u64, &Invocation) -> RunOutput,
) -> Result<CliOutcome, CliError> {
    let sc = scenario::load(&opts.scenario, &opts.policies, &opts.sets)?;
    let origin = sc
        .clock_origin
        .as_deref()
        .and_then(|s| humantime::parse_rfc3339(s).ok());
    let how = Invocation {
        scenario_path: opts.scenario.display().to_string(),
        policies: opts
            .policies
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        sets: opts.sets.clone(),
    };
    let out = run(&sc, opts.seed.unwrap_or(sc.seed), &how);
    let story_lines = ticket_story(opts, &out, origin)?;
    if let Some(path) = &opts.trace {
        write_trace_file(opts, path, &out, origin)?;
    }
    let stdout = if opts.json {
        render_json(&out, story_lines.as_deref())?
    } else {
        render_text(opts, &sc, &out, origin, story_lines.as_deref())
    };
    Ok(CliOutcome {
        stdout,
        expectations_met: out.report.expectations_met,
    })
}

/// `--ticket`: the ticket's story, or an error when the run never opened it.
fn ticket_story(
    opts: &CliOptions,
    out: &RunOutput,
    origin: Option<SystemTime>,
) -> Result<Option<Vec<String>>, CliError> {
    let Some(t) = opts.ticket else {
        return Ok(None);
    };
    let lines = story(&out.history, t, origin);
    if lines.is_empty() {
        return Err(CliError::Input(format!(
            "--ticket {t}: no such ticket in this run (it opened {} tickets; duplicated ones are listed in the summary)",
            out.report.metrics.tickets
        )));
    }
    Ok(Some(lines))
}

/// `--trace`: the JSONL history, refused when the path is an input.
fn write_trace_file(
    opts: &CliOptions,
    path: &std::path::Path,
    out: &RunOutput,
    origin: Option<SystemTime>,
) -> Result<(), CliError> {
    let mut inputs = std::iter::once(&opts.scenario).chain(opts.policies.iter());
    if let Some(input) = inputs.find(|i| same_file(path, i)) {
        return Err(CliError::Input(format!(
            "--trace {}: is the input {}; choose another file",
            path.display(),
            input.display()
        )));
    }
    write_whole(path, |w| write_trace(w, &out.history.events, origin))
        .map_err(|e| CliError::Input(format!("--trace {}: {e}", path.display())))
}

/// `--json`: the report, with the ticket's story as a `story` field.
fn render_json(out: &RunOutput, story_lines: Option<&[String]>) -> Result<String, CliError> {
    let json_error = |e: serde_json::Error| CliError::Input(e.to_string());
    let mut v = serde_json::to_value(&out.report).map_err(json_error)?;
    if let (Some(lines), Some(obj)) = (story_lines, v.as_object_mut()) {
        obj.insert("story".into(), serde_json::json!(lines));
    }
    Ok(serde_json::to_string_pretty(&v).map_err(json_error)? + "\n")
}

/// The text summary, followed by the ticket's story.
fn render_text(
    opts: &CliOptions,
    sc: &Scenario,
    out: &RunOutput,
    origin: Option<SystemTime>,
    story_lines: Option<&[String]>,
) -> String {
    let mut text = summary(&out.report, origin, sc.reconciliation.enabled);
    if let Some(lines) = story_lines {
        text += &format!("\nticket {}:\n", opts.ticket.unwrap_or(0));
        for l in lines {
            text += l;
            text += "\n";
        }
    }
    text
}
