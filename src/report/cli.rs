//! `refundsim run` as one library call: load the scenario, run it, find the asked ticket's story,
//! write the trace, and render the report. The binary only parses arguments, prints the text and
//! maps the outcome to an exit code.

use std::io::{stdout, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::otlp::{OtlpCapture, OtlpOptions, OtlpStream};
use super::perfetto::PerfettoStream;
use super::stripe_list::StripeListStream;
use super::summary_with_oracle;
use super::Sinks;
use crate::analysis::queueing::pool_oracle;
use crate::error::CliError;
use crate::history::{Keep, TraceStream};
use crate::output::{same_file, WholeFile};
use crate::run::{engine_for, run_recorded_watched, Invocation, RunOutput};
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
    /// Write the run as Chrome Trace Event JSON here, for Perfetto (whole or not at all).
    pub perfetto: Option<PathBuf>,
    /// Write the run as OpenTelemetry traces in OTLP/JSON here (whole or not at all).
    pub otlp: Option<PathBuf>,
    /// The opt-in attributes `otlp` captures [default: the tool calls' arguments].
    pub otlp_capture: OtlpCapture,
    /// Write Stripe's list of the run's refunds here, as the body of `GET /v1/refunds` (whole
    /// or not at all).
    pub stripe_list: Option<PathBuf>,
    /// Add this ticket's story to the report: its id (`48213`), or the text id a recording
    /// gave it (`T-100000`, found in `replay.ticket_labels`).
    pub ticket: Option<String>,
    /// Print only the ticket's story (its lines, no summary): what `--story-only` asks. Needs
    /// `ticket`; ignored with `json` (whose `story` field has the same lines). The outcome's
    /// `expectations_met` is computed as without it, so the exit code does not change.
    pub story_only: bool,
    /// The run budget the scenario is admitted against and the run is watched under.
    pub budget: scenario::RunBudget,
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
    cli_run_by(opts, engine_for)
}

/// [`cli_run`], telling `observer` the virtual time reached and the scenario's horizon every
/// [`crate::run::PROGRESS_EVERY_EVENTS`] engine events, for a progress bar. The outcome is
/// exactly [`cli_run`]'s.
pub fn cli_run_with_progress(
    opts: &CliOptions,
    mut observer: impl FnMut(Duration, Duration) + 'static,
) -> Result<CliOutcome, CliError> {
    cli_run_by(opts, move |sc: &Scenario| {
        let horizon = sc.horizon;
        let engine = engine_for(sc);
        engine.on_progress(crate::run::PROGRESS_EVERY_EVENTS, move |t| {
            observer(Duration::from_nanos(t.as_nanos()), horizon)
        });
        engine
    })
}

/// [`cli_run`] with the engine `engine` builds for the scenario.
fn cli_run_by(
    opts: &CliOptions,
    engine: impl FnOnce(&Scenario) -> crate::sim::Sim,
) -> Result<CliOutcome, CliError> {
    let sc = scenario::load_within(&opts.scenario, &opts.policies, &opts.sets, &opts.budget)?;
    let origin = sc
        .clock_origin
        .as_deref()
        .and_then(|s| humantime::parse_rfc3339(s).ok());
    let how = Invocation::new(&opts.scenario, &opts.policies, &opts.sets);
    let seed = opts.seed.unwrap_or(sc.seed);
    // One run: the trace streams to its file as events happen, and only the asked ticket's
    // events are kept (for its story); metrics are computed online.
    let ticket = opts
        .ticket
        .as_deref()
        .map(|t| ticket_id(t, &sc))
        .transpose()?;
    let keep = ticket.map_or(Keep::Nothing, Keep::Ticket);
    // The output files are opened before the run (a bad path fails at once) and renamed into
    // place only once everything succeeded.
    let mut files = Vec::new();
    let sinks = open_sinks(opts, &sc, seed, origin, &mut files)?;
    // A run stopped over the budget drops its sinks, which removes the files they wrote.
    let watch = scenario::RunWatch::new(opts.budget);
    let (out, sinks) =
        run_recorded_watched(engine(&sc), &sc, seed, &how, keep, sinks, None, (&watch, 0))?;
    finish_sinks(opts, sinks)?;
    // An unknown `--ticket` is an input error: no output file is left behind for it.
    let story_lines = ticket_story(ticket, &sc, &out, origin)?;
    for (flag, path, file) in files {
        file.commit()
            .map_err(|e| CliError::Input(format!("{flag} {}: {e}", path.display())))?;
    }
    let stdout = if opts.json {
        render_json(&sc, &out, story_lines.as_deref())?
    } else if let Some(lines) = story_lines.as_deref().filter(|_| opts.story_only) {
        // `--story-only`: the lines alone, in the scenario's words already (`ticket_story`).
        lines.iter().map(|l| format!("{l}\n")).collect()
    } else {
        render_text(opts, &sc, &out, origin, story_lines.as_deref())
    };
    // An exact replay (an imported scenario as written) that differs from its recording fails
    // like `refundsim replay` does.
    let exact = opts.policies.is_empty() && opts.sets.is_empty();
    let replay_ok = !exact || out.report.recording.as_ref().is_none_or(|c| c.matches);
    Ok(CliOutcome {
        stdout,
        expectations_met: out.report.expectations_met && replay_ok,
    })
}

/// The files a run of `sc` on `seed` streams to, as the flags ask: each opened (and checked)
/// before the run, in the order of [`outputs`], its file kept in `files` to commit.
/// `origin` is the scenario's clock origin (the trace's wall-clock times).
///
/// # Errors
/// [`CliError::Input`] naming the flag and file: `-` where a file is needed, a file given
/// twice or that is an input, one that cannot be created.
fn open_sinks(
    opts: &CliOptions,
    sc: &Scenario,
    seed: u64,
    origin: Option<SystemTime>,
    files: &mut Vec<(&'static str, PathBuf, WholeFile)>,
) -> Result<Sinks, CliError> {
    let trace = match &opts.trace {
        None => None,
        Some(path) if path.as_os_str() == "-" => {
            // `--trace -`: the trace on stdout, before the report.
            let sink: Box<dyn Write> = Box::new(BufWriter::with_capacity(1 << 16, stdout()));
            Some(TraceStream::new(sink, origin))
        }
        Some(path) => {
            let handle = open_output(opts, "--trace", path, files)?;
            Some(TraceStream::new(handle, origin))
        }
    };
    let mut file_output = |flag: &'static str, path: &Path| {
        check_file_output(opts, flag, path)?;
        open_output(opts, flag, path, files)
    };
    let perfetto = match &opts.perfetto {
        None => None,
        Some(path) => {
            let handle = file_output("--perfetto", path)?;
            Some(PerfettoStream::new(handle, &sc.name, seed).with_effect(sc.effect()))
        }
    };
    let otlp = match &opts.otlp {
        None => None,
        Some(path) => {
            let handle = file_output("--otlp", path)?;
            let options = OtlpOptions::capturing(opts.otlp_capture);
            let stream = OtlpStream::new(handle, sc, seed, &options).map_err(|e| {
                CliError::Input(format!(
                    "--otlp {}: cannot create a temporary file: {e}",
                    path.display()
                ))
            })?;
            Some(stream)
        }
    };
    let stripe_list = match &opts.stripe_list {
        None => None,
        Some(path) => Some(StripeListStream::new(
            file_output("--stripe-list", path)?,
            sc,
        )),
    };
    Ok(Sinks {
        trace,
        perfetto,
        otlp,
        stripe_list,
    })
}

/// Finishes every stream the run wrote (flushing what each holds).
///
/// # Errors
/// [`CliError::Input`] naming the flag and file that could not be written (`--trace -`:
/// stdout).
fn finish_sinks(opts: &CliOptions, sinks: Sinks) -> Result<(), CliError> {
    if let Some(stream) = sinks.trace {
        stream
            .finish()
            .map_err(|e| match &opts.trace {
                Some(p) if p.as_os_str() != "-" => {
                    format!("--trace {}: cannot write: {e}", p.display())
                }
                _ => format!("--trace -: cannot write to stdout: {e}"),
            })
            .map_err(CliError::Input)?;
    }
    let cannot_write = |flag: &str, path: &Option<PathBuf>, e: std::io::Error| {
        let path = path.as_deref().unwrap_or(Path::new("-"));
        CliError::Input(format!("{flag} {}: cannot write: {e}", path.display()))
    };
    if let Some(stream) = sinks.perfetto {
        stream
            .finish()
            .map_err(|e| cannot_write("--perfetto", &opts.perfetto, e))?;
    }
    if let Some(stream) = sinks.otlp {
        stream
            .finish()
            .map_err(|e| cannot_write("--otlp", &opts.otlp, e))?;
    }
    if let Some(stream) = sinks.stripe_list {
        stream
            .finish()
            .map_err(|e| cannot_write("--stripe-list", &opts.stripe_list, e))?;
    }
    Ok(())
}

/// `--ticket TEXT`: a ticket id (a number), or a recording's text id (`replay.ticket_labels`).
///
/// # Errors
/// [`CliError::Input`] naming what was expected, and the text ids the scenario knows.
fn ticket_id(text: &str, sc: &Scenario) -> Result<u64, CliError> {
    if let Ok(n) = text.trim().parse::<u64>() {
        return Ok(n);
    }
    let labels = sc.replay.as_ref().map(|r| &r.ticket_labels);
    if let Some((&n, _)) = labels.and_then(|l| l.iter().find(|(_, label)| label.as_str() == text)) {
        return Ok(n);
    }
    let hint = match labels.and_then(|l| l.iter().next()) {
        Some((n, label)) => format!(
            ", or a text id the recording gave (replay.ticket_labels: {label} is ticket {n})"
        ),
        None => String::new(),
    };
    Err(CliError::Input(format!(
        "--ticket {text}: expected a ticket id (a number){hint}"
    )))
}

/// `--ticket`: the ticket's story, or an error when the run never opened it.
fn ticket_story(
    ticket: Option<u64>,
    sc: &Scenario,
    out: &RunOutput,
    origin: Option<SystemTime>,
) -> Result<Option<Vec<String>>, CliError> {
    let Some(t) = ticket else {
        return Ok(None);
    };
    let shown = sc
        .replay
        .as_ref()
        .map_or_else(|| t.to_string(), |r| r.ticket_text(t));
    let lines = crate::analysis::story::for_scenario(
        sc,
        crate::analysis::story::story_as(&out.history, t, &shown, origin),
    );
    if lines.is_empty() {
        let n = out.report.metrics.tickets;
        let range = if !sc.arrivals.tickets.is_empty() {
            let ids = sc.arrivals.tickets.iter().map(|t| t.id);
            let (lo, hi) = (ids.clone().min().unwrap_or(0), ids.max().unwrap_or(0));
            format!(
                "its {} recorded tickets have ids from {lo} to {hi}",
                sc.arrivals.tickets.len()
            )
        } else if n == 0 {
            "it opened no ticket".to_string()
        } else {
            let first = sc.arrivals.first_ticket_id;
            format!(
                "it opened {n} tickets, ids {first} to {}",
                first.saturating_add(n - 1)
            )
        };
        return Err(CliError::Input(format!(
            "--ticket {t}: no such ticket in this run ({range}; duplicated ones are listed in the summary)"
        )));
    }
    Ok(Some(lines))
}

/// The output files a run may write, in the order their flags are checked.
fn outputs(opts: &CliOptions) -> [(&'static str, Option<&PathBuf>); 4] {
    [
        ("--trace", opts.trace.as_ref()),
        ("--perfetto", opts.perfetto.as_ref()),
        ("--otlp", opts.otlp.as_ref()),
        ("--stripe-list", opts.stripe_list.as_ref()),
    ]
}

/// `--perfetto`, `--otlp` or `--stripe-list` FILE: refused as `-` (stdout carries the
/// report), and when an output listed before it in [`outputs`] is the same file.
fn check_file_output(opts: &CliOptions, flag: &'static str, path: &Path) -> Result<(), CliError> {
    if path.as_os_str() == "-" {
        return Err(CliError::Input(format!(
            "{flag} -: expected a file path (stdout carries the report)"
        )));
    }
    let earlier = outputs(opts).into_iter().take_while(|(f, _)| *f != flag);
    for (other, p) in earlier {
        if let Some(p) = p.filter(|p| *p == path || same_file(p, path)) {
            return Err(CliError::Input(format!(
                "{flag} {}: is also the {other} file {}; choose another file",
                path.display(),
                p.display()
            )));
        }
    }
    Ok(())
}

/// An output file of `flag` (`--trace`, `--perfetto`, …), written whole or not at all: refused
/// when it is an input; its buffered handle is returned, the file kept in `files` to commit.
fn open_output(
    opts: &CliOptions,
    flag: &'static str,
    path: &Path,
    files: &mut Vec<(&'static str, PathBuf, WholeFile)>,
) -> Result<Box<dyn Write>, CliError> {
    let mut inputs = std::iter::once(&opts.scenario).chain(opts.policies.iter());
    if let Some(input) = inputs.find(|i| same_file(path, i)) {
        return Err(CliError::Input(format!(
            "{flag} {}: is the input {}; choose another file",
            path.display(),
            input.display()
        )));
    }
    let (file, handle) = WholeFile::create(path)
        .map_err(|e| CliError::Input(format!("{flag} {}: {e}", path.display())))?;
    files.push((flag, path.to_path_buf(), file));
    Ok(Box::new(BufWriter::with_capacity(1 << 16, handle)))
}

/// `--json`: the report, with the pool's queueing oracle as a `queueing` field (see
/// [`pool_oracle`]) and the ticket's story as a `story` field.
fn render_json(
    sc: &Scenario,
    out: &RunOutput,
    story_lines: Option<&[String]>,
) -> Result<String, CliError> {
    let v = report_value(sc, out, story_lines)?;
    let text = serde_json::to_string_pretty(&v).map_err(|e| CliError::Input(e.to_string()))?;
    Ok(text + "\n")
}

/// The object `refundsim run --json` prints: the run's report with the pool's queueing oracle
/// as a `queueing` field (see [`pool_oracle`]) and, when given, a ticket's story as a `story`
/// field. Also what `refundsim report` tabulates.
pub(crate) fn report_value(
    sc: &Scenario,
    out: &RunOutput,
    story_lines: Option<&[String]>,
) -> Result<serde_json::Value, CliError> {
    let json_error = |e: serde_json::Error| CliError::Input(e.to_string());
    let mut v = serde_json::to_value(&out.report).map_err(json_error)?;
    add_neutral_names(&mut v);
    if let Some(obj) = v.as_object_mut() {
        let oracle = serde_json::to_value(pool_oracle(sc)).map_err(json_error)?;
        obj.insert("queueing".into(), oracle);
        if let Some(lines) = story_lines {
            obj.insert("story".into(), serde_json::json!(lines));
        }
    }
    Ok(v)
}

/// Adds the effect-neutral name of each refund metric beside it (`duplicate_effect_tickets`
/// with the value of `duplicate_refund_tickets`, [`METRIC_ALIASES`]) and an `alias` to each
/// invariant that names refunds (`at_most_one_effect_per_ticket`), so a consumer can read
/// either; the refund names stay.
///
/// [`METRIC_ALIASES`]: crate::scenario::effect::METRIC_ALIASES
pub(crate) fn add_neutral_names(v: &mut serde_json::Value) {
    use crate::scenario::effect::{neutral_name, METRIC_ALIASES};
    let Some(obj) = v.as_object_mut() else {
        return;
    };
    for (refund, neutral) in METRIC_ALIASES {
        if let Some(x) = obj.get(refund).cloned() {
            obj.insert(neutral.to_string(), x);
        }
    }
    if let Some(list) = obj.get_mut("invariants").and_then(|l| l.as_array_mut()) {
        for inv in list {
            let alias = inv
                .get("name")
                .and_then(|n| n.as_str())
                .and_then(neutral_name);
            if let (Some(alias), Some(o)) = (alias, inv.as_object_mut()) {
                o.insert("alias".into(), alias.into());
            }
        }
    }
}

/// The text summary, followed by the ticket's story.
fn render_text(
    opts: &CliOptions,
    sc: &Scenario,
    out: &RunOutput,
    origin: Option<SystemTime>,
    story_lines: Option<&[String]>,
) -> String {
    let mut text = summary_text(sc, out, origin);
    if let Some(c) = &out.report.recording {
        text += "\n";
        if opts.policies.is_empty() && opts.sets.is_empty() {
            text += &crate::replay::render_exact(c, origin);
        } else {
            text += "recorded vs counterfactual (this policy on the recorded traffic):\n";
            text += &crate::replay::render_counterfactual(c);
        }
    }
    // The story lines are in the scenario's words already (`ticket_story`).
    let mut text = sc.effect().say(&text);
    if let Some(lines) = story_lines {
        let t = opts
            .ticket
            .as_deref()
            .and_then(|t| ticket_id(t, sc).ok())
            .unwrap_or(0);
        let shown = sc
            .replay
            .as_ref()
            .map_or_else(|| t.to_string(), |r| r.ticket_text(t));
        text += &format!("\nticket {shown}:\n");
        for l in lines {
            text += l;
            text += "\n";
        }
    }
    text
}

/// The text summary `refundsim run` prints for `out`, a run of `sc`: with the reconciliation
/// job's schedule and the pool's queueing oracle. `origin` is the scenario's clock origin.
pub(crate) fn summary_text(sc: &Scenario, out: &RunOutput, origin: Option<SystemTime>) -> String {
    let recon = sc
        .reconciliation
        .enabled
        .then_some((sc.reconciliation.interval, sc.horizon));
    let oracle = pool_oracle(sc);
    summary_with_oracle(&out.report, origin, recon, &oracle)
}
