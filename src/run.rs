//! One run of one scenario under one seed, end to end: simulate, evaluate, check `expect`.

use serde::Serialize;

use std::cell::RefCell;
use std::rc::Rc;

use crate::analysis::story::{story_as, IncidentShapes};
use crate::history::{Event, History, Keep, Observer};
use crate::invariants::{expectations, EvalRules, Evaluator, ExpectationResult, Metrics};
use crate::model::{simulate_observed, simulate_watched, Watched};
use crate::scenario::{OverBudget, RunWatch, Scenario};
use crate::sim::{Seeded, Sim, SimTime, Streams};

/// How to replay a run from the command line: the scenario path and any policy and `--set`
/// arguments it was loaded with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Invocation {
    /// Scenario file as given.
    pub scenario_path: String,
    /// Policy files, in order.
    pub policies: Vec<String>,
    /// `PATH=VALUE` overrides, in order.
    pub sets: Vec<String>,
}

impl Invocation {
    /// The invocation of `scenario` with `policies` and `sets` (`PATH=VALUE`), paths as given.
    pub fn new<'a>(
        scenario: &std::path::Path,
        policies: impl IntoIterator<Item = &'a std::path::PathBuf>,
        sets: &[String],
    ) -> Invocation {
        Invocation {
            scenario_path: scenario.display().to_string(),
            policies: policies
                .into_iter()
                .map(|p| p.display().to_string())
                .collect(),
            sets: sets.to_vec(),
        }
    }

    /// `refundsim run SCENARIO --seed N [--policy P]… [--set S]…`, shell-quoted where needed.
    pub fn command(&self, seed: u64) -> String {
        let mut parts = vec![
            "refundsim".to_string(),
            "run".into(),
            quote(&self.scenario_path),
        ];
        parts.push(format!("--seed {seed}"));
        for p in &self.policies {
            parts.push(format!("--policy {}", quote(p)));
        }
        for s in &self.sets {
            parts.push(format!("--set {}", quote(s)));
        }
        parts.join(" ")
    }
}

/// `s` quoted for a POSIX shell when it needs it (replay commands are pasted into terminals).
pub fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The JSON report's format version: 2 since layers (version 1 had no `schema_version` field).
pub(crate) const REPORT_SCHEMA_VERSION: u32 = 2;

/// The report of one run (`refundsim run --json`). Metric names are flattened to the top level.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// Version of the report's format: [`REPORT_SCHEMA_VERSION`]. A field's meaning never
    /// changes within a version; new fields may appear.
    pub schema_version: u32,
    /// Scenario name.
    pub scenario: String,
    /// Root seed.
    pub seed: u64,
    /// Every metric.
    #[serde(flatten)]
    pub metrics: Metrics,
    /// The scenario's `expect` bounds and their verdicts.
    pub expectations: Vec<ExpectationResult>,
    /// Whether every expectation holds.
    pub expectations_met: bool,
    /// Why each violated invariant broke, one sentence each, from the run's counts (see
    /// [`crate::cause`]). Empty when every invariant holds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<crate::cause::Cause>,
    /// Tickets whose story has the incident's shape (see [`crate::analysis::story::incident_shaped`]),
    /// ascending, at most [`crate::invariants::MAX_LISTED_IDS`].
    pub incident_shaped_tickets: Vec<u64>,
    /// Engine events processed.
    pub sim_events: u64,
    /// Virtual time when the run drained, ns.
    pub sim_end_ns: u64,
    /// The command that replays this run.
    pub replay: String,
    /// For a scenario with a `replay` section (an imported recording): the run against the
    /// recording, ticket by ticket. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recording: Option<crate::replay::Comparison>,
}

/// A finished run: the report and the events it was asked to keep.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// The figures.
    pub report: RunReport,
    /// The events kept: none for [`run`], every one for [`run_keeping`] with [`Keep::All`],
    /// one ticket's with [`Keep::Ticket`].
    pub history: History,
}

/// Runs `scenario` with `seed` and checks its `expect` bounds. A pure function of its inputs.
/// Metrics and invariants are computed online and no event is kept, so memory is flat in the
/// horizon; use [`run_keeping`] for the events, [`story_of`] for one ticket's story.
///
/// ```
/// let sc = refundsim::scenario::load_str(
///     r#"{"name":"tiny","horizon":"10m","arrivals":{"schedule":[{"duration":"10m","rate_per_s":0.05}]}}"#,
///     "inline",
/// ).unwrap();
/// let out = refundsim::run::run(&sc, 7, &Default::default());
/// assert_eq!(out.report.duplicate_refund_tickets(), 0);
/// assert!(out.report.expectations_met);
/// ```
///
/// With a `tie_break` section the engine runs in exploration mode under that seeded tie-break.
pub fn run(scenario: &Scenario, seed: u64, how: &Invocation) -> RunOutput {
    run_keeping(scenario, seed, how, Keep::Nothing)
}

/// [`run`], keeping the events `keep` selects in [`RunOutput::history`].
pub fn run_keeping(scenario: &Scenario, seed: u64, how: &Invocation, keep: Keep) -> RunOutput {
    run_recorded(engine_for(scenario), scenario, seed, how, keep, ()).0
}

/// One ticket's story (see [`crate::analysis::story::story`]) from re-running `scenario` under `seed`
/// keeping only that ticket's events: runs are deterministic, so this is the story of the run
/// that was reported. Empty when the run never opened the ticket.
pub fn story_of(
    scenario: &Scenario,
    seed: u64,
    ticket: u64,
    origin: Option<std::time::SystemTime>,
) -> Vec<String> {
    let out = run_keeping(scenario, seed, &Invocation::default(), Keep::Ticket(ticket));
    let shown = scenario
        .replay
        .as_ref()
        .map_or_else(|| ticket.to_string(), |r| r.ticket_text(ticket));
    story_as(&out.history, ticket, &shown, origin)
}

/// Engine events between two calls of a [`run_with_progress`] observer: often enough for a
/// progress bar, rare enough to cost nothing measurable.
pub(crate) const PROGRESS_EVERY_EVENTS: u64 = 16_384;

/// [`run`], telling `observer` the virtual time reached every [`PROGRESS_EVERY_EVENTS`] engine
/// events (for a progress bar over `0..horizon`; the clock may pass the horizon while in-flight
/// work drains). The observer only reads the clock: the output is exactly [`run`]'s.
pub fn run_with_progress(
    scenario: &Scenario,
    seed: u64,
    how: &Invocation,
    observer: impl FnMut(std::time::Duration) + 'static,
) -> RunOutput {
    run_recorded(
        engine_with_progress(scenario, observer),
        scenario,
        seed,
        how,
        Keep::Nothing,
        (),
    )
    .0
}

/// [`run_with_progress`] watched by `watch` as a lone run (order 0).
///
/// # Errors
/// [`OverBudget`]: the run went past the watch's budget while running.
pub fn run_with_progress_watched(
    scenario: &Scenario,
    seed: u64,
    how: &Invocation,
    watch: &RunWatch,
    observer: impl FnMut(std::time::Duration) + 'static,
) -> Result<RunOutput, OverBudget> {
    let engine = engine_with_progress(scenario, observer);
    run_recorded_watched(
        engine,
        scenario,
        seed,
        how,
        Keep::Nothing,
        (),
        None,
        (watch, 0),
    )
    .map(|(out, ())| out)
}

/// The engine `scenario` asks for, telling `observer` the virtual time reached every
/// [`PROGRESS_EVERY_EVENTS`] engine events.
fn engine_with_progress(
    scenario: &Scenario,
    mut observer: impl FnMut(std::time::Duration) + 'static,
) -> Sim {
    let engine = engine_for(scenario);
    engine.on_progress(PROGRESS_EVERY_EVENTS, move |t: SimTime| {
        observer(std::time::Duration::from_nanos(t.as_nanos()))
    });
    engine
}

/// The engine a scenario asks for: plain, or exploring under its `tie_break` section.
pub(crate) fn engine_for(scenario: &Scenario) -> Sim {
    match &scenario.tie_break {
        None => Sim::new(),
        Some(tb) => Sim::exploring(
            Box::new(Seeded(Streams::new(tb.seed).stream("tie_break", &[]))),
            SimTime::from_duration(tb.epsilon),
        ),
    }
}

/// [`run`] on a given engine, e.g. one in exploration mode ([`Sim::exploring`]), keeping every
/// event.
pub(crate) fn run_on(engine: Sim, scenario: &Scenario, seed: u64, how: &Invocation) -> RunOutput {
    run_recorded(engine, scenario, seed, how, Keep::All, ()).0
}

/// An output a run streams its events to as they happen (a trace file, an export): it reads
/// every event and every ticket's closing, in the run's order, and never changes the run.
/// `()` is no output; `report::Sinks` are the files `refundsim run` writes.
pub(crate) trait Sink {
    /// One event, as it happens.
    fn event(&mut self, e: &Event);
    /// Ticket `id` closed: no later event names it.
    fn ticket_closed(&mut self, _id: u64) {}
    /// The memory the output holds, bytes, counted by the run budget while running.
    fn held_bytes(&self) -> u64 {
        0
    }
}

/// No output.
impl Sink for () {
    fn event(&mut self, _e: &Event) {}
}

/// The run's one observer: the online metrics and invariants, the incident-shape scan, the
/// streamed outputs, the kept events and the caller's own consumer, if any.
#[derive(Default)]
struct Recorder<S> {
    eval: Evaluator,
    shapes: IncidentShapes,
    keep: Keep,
    kept: History,
    sinks: S,
    recording: Option<crate::replay::ReplayObserver>,
    extra: Option<Rc<RefCell<dyn Observer>>>,
}

impl<S: Sink> Observer for Recorder<S> {
    fn event(&mut self, e: Event) {
        self.eval.record(&e);
        self.shapes.record(&e);
        self.sinks.event(&e);
        if let Some(r) = &mut self.recording {
            r.record(&e);
        }
        let keep = self.keep.wants(&e);
        match &self.extra {
            // The event is cloned only when both want it.
            Some(x) => {
                if keep {
                    self.kept.events.push(e.clone());
                }
                x.borrow_mut().event(e);
            }
            None if keep => self.kept.events.push(e),
            None => {}
        }
    }
    /// The outputs' own (see [`Sink::held_bytes`]), the kept events (about 256 bytes each)
    /// and the caller's consumer.
    fn held_bytes(&self) -> u64 {
        let sinks = self.sinks.held_bytes();
        let kept = self.kept.events.len() as u64 * 256;
        let extra = self.extra.as_ref().map_or(0, |x| x.borrow().held_bytes());
        sinks + kept + extra
    }
    fn ticket_closed(&mut self, id: u64) {
        self.eval.ticket_closed(id);
        self.shapes.ticket_closed(id);
        self.sinks.ticket_closed(id);
        if let Some(x) = &self.extra {
            x.borrow_mut().ticket_closed(id);
        }
    }
}

/// The general form: runs on `engine`, keeps what `keep` selects, and streams every event to
/// `sinks` as it happens. Returns the output and the sinks (for `report::Sinks`, check each
/// stream's `finish` for I/O errors).
pub(crate) fn run_recorded<S: Sink + Default + 'static>(
    engine: Sim,
    scenario: &Scenario,
    seed: u64,
    how: &Invocation,
    keep: Keep,
    sinks: S,
) -> (RunOutput, S) {
    run_recorded_with(engine, scenario, seed, how, keep, sinks, None)
}

/// [`run_recorded`], also handing every event and every ticket's closing to `extra`, in the
/// order the run's own consumers see them (after the metrics): a report's own online
/// consumers, such as the HTML report's timelines and duplicated tickets' stories. `extra`
/// only reads the stream: the output is exactly [`run_recorded`]'s. The caller keeps a clone
/// of the `Rc` to read its consumer after the run.
pub(crate) fn run_recorded_with<S: Sink + Default + 'static>(
    engine: Sim,
    scenario: &Scenario,
    seed: u64,
    how: &Invocation,
    keep: Keep,
    sinks: S,
    extra: Option<Rc<RefCell<dyn Observer>>>,
) -> (RunOutput, S) {
    let rec = recorder(scenario, keep, sinks, extra);
    let (gauges, stats) = simulate_observed(engine, scenario, seed, rec.clone());
    finish(&rec, &gauges, &stats, scenario, seed, how)
}

/// [`run_recorded_with`] watched by `watch` as the run at `order` in its command's order (0
/// for a lone run): a run that goes past the watch's budget while running is stopped.
///
/// # Errors
/// [`OverBudget`]: the run was stopped (its sinks are dropped, so the files they were
/// writing are removed).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_recorded_watched<S: Sink + Default + 'static>(
    engine: Sim,
    scenario: &Scenario,
    seed: u64,
    how: &Invocation,
    keep: Keep,
    sinks: S,
    extra: Option<Rc<RefCell<dyn Observer>>>,
    (watch, order): (&RunWatch, u64),
) -> Result<(RunOutput, S), OverBudget> {
    let rec = recorder(scenario, keep, sinks, extra);
    let label = how.command(seed);
    let watched = Watched {
        watch,
        order,
        label: &label,
    };
    let (gauges, stats) = simulate_watched(engine, scenario, seed, rec.clone(), watched)?;
    Ok(finish(&rec, &gauges, &stats, scenario, seed, how))
}

/// [`run`] watched by `watch` as the run at `order` in its command's order (its index among
/// the command's runs; 0 for a lone run): what `check`, `diff` and `sweep` run, in parallel,
/// under the CLI's budget.
///
/// # Errors
/// [`OverBudget`]: the run went past the budget while running, or a run earlier in the
/// order did (see [`RunWatch::verdict`] for the one to report).
pub fn run_watched(
    scenario: &Scenario,
    seed: u64,
    how: &Invocation,
    watch: &RunWatch,
    order: u64,
) -> Result<RunOutput, OverBudget> {
    run_recorded_watched(
        engine_for(scenario),
        scenario,
        seed,
        how,
        Keep::Nothing,
        (),
        None,
        (watch, order),
    )
    .map(|(out, ())| out)
}

/// The run's one observer, before the run.
fn recorder<S: Sink + Default + 'static>(
    scenario: &Scenario,
    keep: Keep,
    sinks: S,
    extra: Option<Rc<RefCell<dyn Observer>>>,
) -> Rc<RefCell<Recorder<S>>> {
    Rc::new(RefCell::new(Recorder {
        eval: Evaluator::new(EvalRules::of(scenario)),
        shapes: IncidentShapes::default(),
        keep,
        kept: History::default(),
        sinks,
        recording: scenario
            .replay
            .as_ref()
            .map(crate::replay::ReplayObserver::new),
        extra,
    }))
}

/// The output of a finished run from its observer and the engine's figures.
fn finish<S: Sink + Default + 'static>(
    rec: &Rc<RefCell<Recorder<S>>>,
    gauges: &crate::model::ModelGauges,
    stats: &crate::sim::RunStats,
    scenario: &Scenario,
    seed: u64,
    how: &Invocation,
) -> (RunOutput, S) {
    let rec = std::mem::take(&mut *rec.borrow_mut());
    let metrics = rec.eval.finish(gauges);
    let expectations = expectations(&metrics, &scenario.expect);
    let report = RunReport {
        schema_version: REPORT_SCHEMA_VERSION,
        scenario: scenario.name.clone(),
        seed,
        expectations_met: expectations.iter().all(|e| e.ok),
        expectations,
        incident_shaped_tickets: rec.shapes.finish(),
        causes: crate::cause::causes(scenario, &metrics),
        metrics,
        sim_events: stats.events,
        sim_end_ns: stats.end.as_nanos(),
        replay: how.command(seed),
        recording: scenario
            .replay
            .as_ref()
            .zip(rec.recording)
            .map(|(r, seen)| crate::replay::Comparison {
                replaced: crate::replay::replaced_facts(scenario),
                ..crate::replay::compare(r, seen)
            }),
    };
    let out = RunOutput {
        report,
        history: rec.kept,
    };
    (out, rec.sinks)
}

impl RunReport {
    /// Tickets with more than one refund.
    pub fn duplicate_refund_tickets(&self) -> u64 {
        self.metrics.duplicate_refund_tickets
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    #[test]
    fn progress_observer_sees_the_clock_advance_and_changes_nothing() {
        let dir = crate::repo_root();
        let sc = crate::scenario::load(&dir.join("scenarios/carrier-outage.json"), &[], &[])
            .expect("incident loads");
        let how = Invocation::default();
        let plain = run(&sc, sc.seed, &how);
        let seen = Rc::new(RefCell::new(Vec::new()));
        let log = Rc::clone(&seen);
        let watched = run_with_progress(&sc, sc.seed, &how, move |t| log.borrow_mut().push(t));
        assert!(watched.history.events.is_empty());
        assert_eq!(
            serde_json::to_value(&watched.report).unwrap(),
            serde_json::to_value(&plain.report).unwrap()
        );
        let seen = seen.borrow();
        assert!(seen.len() > 1, "told {} times", seen.len());
        assert!(
            seen.windows(2).all(|w| w[0] <= w[1]),
            "time never goes back"
        );
        assert!(*seen.last().unwrap() <= std::time::Duration::from_nanos(plain.report.sim_end_ns));
    }
}
