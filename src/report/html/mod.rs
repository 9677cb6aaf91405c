//! `refundsim report`: one run of a scenario as one self-contained HTML file — the summary
//! `run` prints (the same numbers as `run --json`), timelines over virtual time, the stories of
//! the first duplicated tickets, and optionally a sweep's table and plots.
//!
//! ```
//! use refundsim::report::html::{html_report, HtmlOptions};
//! let r = html_report(&HtmlOptions {
//!     scenario: "scenarios/carrier-outage.json".into(),
//!     ..Default::default()
//! })
//! .unwrap();
//! assert_eq!(r.report.duplicate_refund_tickets(), 43);
//! assert!(r.html.contains(r#"id="duplicate-tickets" data-value="43""#));
//! assert_eq!(r.series.duplicates(), 43);
//! assert_eq!(r.stories.len(), 10);
//! ```
//!
//! - **One run, online.** The run's own consumers give the metrics; two more consume the same
//!   event stream as it happens ([`crate::run::run_recorded_watched`]): a [`Timeline`] (bucketed
//!   series, at most [`MAX_BUCKETS`] buckets) and [`DuplicateStories`] (the events of the
//!   [`SHOWN_STORIES`] duplicated tickets with the smallest ids). No other event is kept.
//! - **Self-contained.** Inline CSS, inline SVG charts (plotters), the sweep's plots as `data:`
//!   images, one small inline script; a Content-Security-Policy lets the page load nothing.
//! - **Escaped.** Every text from an input goes through `html-escape`.
//! - **Deterministic.** The same inputs give the same bytes: nothing reads the clock.

mod charts;
mod escape;
mod page;
mod refunds;
mod stories;
mod sweep_section;
mod timeline;

use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

pub use charts::{charts, Chart, ChartContext};
pub use stories::DuplicateStories;
pub use timeline::{BucketSummary, Series, Timeline};

use super::cli::{report_value, summary_text};
use crate::analysis::story::story;
use crate::error::CliError;
use crate::history::{Event, History, Keep, Observer};
use crate::output::{refuse_overwriting_inputs, WholeFile};
use crate::run::{engine_for, run_recorded_watched, Invocation, RunOutput, RunReport};
use crate::scenario::{self, OverBudget, RunBudget, RunWatch, Scenario};
use crate::sim::{Sim, SimTime};

/// Most duplicated tickets whose stories the page shows (the smallest ids); the others are
/// counted and listed by id.
pub(crate) const SHOWN_STORIES: usize = 10;

/// The arguments of `refundsim report`, besides `--out`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HtmlOptions {
    /// Scenario file (JSON).
    pub scenario: PathBuf,
    /// Root seed [default: the scenario's `seed`].
    pub seed: Option<u64>,
    /// Merge patches applied over the scenario, in order.
    pub policies: Vec<PathBuf>,
    /// `PATH=VALUE` overrides, applied after the policies.
    pub sets: Vec<String>,
    /// A `sweep` (or `merge`) output directory whose table and plots the page embeds.
    pub sweep: Option<PathBuf>,
    /// The run budget the scenario is admitted against and the run is watched under.
    pub budget: scenario::RunBudget,
}

/// A report made: the page and what it was made from.
#[derive(Clone, Debug)]
pub struct HtmlReport {
    /// The HTML document.
    pub html: String,
    /// The run's report (what `run --json` prints, less the queueing oracle).
    pub report: RunReport,
    /// The timelines' buckets.
    pub series: Series,
    /// The tickets whose stories the page shows, ascending.
    pub stories: Vec<u64>,
    /// The effect of the scenario's tool, whose words the page uses.
    pub effect: crate::scenario::Effect,
}

/// Makes the report of `opts`' run. Errors (exit 2) name the file or flag at fault: the
/// scenario, a policy, a `--set`, the `--sweep` directory.
pub fn html_report(opts: &HtmlOptions) -> Result<HtmlReport, CliError> {
    html_report_by(opts, engine_for)
}

/// [`html_report`], telling `observer` the virtual time reached and the horizon now and then
/// (for a progress bar, as [`super::cli::cli_run_with_progress`]). The report is exactly
/// [`html_report`]'s.
pub(crate) fn html_report_with_progress(
    opts: &HtmlOptions,
    mut observer: impl FnMut(Duration, Duration) + 'static,
) -> Result<HtmlReport, CliError> {
    html_report_by(opts, move |sc: &Scenario| {
        let horizon = sc.horizon;
        let engine = engine_for(sc);
        engine.on_progress(crate::run::PROGRESS_EVERY_EVENTS, move |t| {
            observer(Duration::from_nanos(t.as_nanos()), horizon)
        });
        engine
    })
}

/// [`html_report_with_progress`] written to `out` whole or not at all (a temporary file in
/// the same directory, renamed into place; nothing is left behind on an error). `out` may not
/// be an input; its directory must exist.
pub fn write_html_report(
    opts: &HtmlOptions,
    out: &Path,
    observer: impl FnMut(Duration, Duration) + 'static,
) -> Result<HtmlReport, CliError> {
    let fail = |e: String| CliError::Input(format!("--out {}: {e}", out.display()));
    let inputs: Vec<&PathBuf> = std::iter::once(&opts.scenario)
        .chain(&opts.policies)
        .chain(&opts.sweep)
        .collect();
    refuse_overwriting_inputs("--out", out, &inputs).map_err(CliError::Input)?;
    // Opened first, so a bad path fails before the run.
    let (file, handle) = WholeFile::create(out).map_err(fail)?;
    let report = html_report_with_progress(opts, observer)?;
    let mut w = std::io::BufWriter::new(handle);
    w.write_all(report.html.as_bytes())
        .and_then(|()| w.flush())
        .map_err(|e| fail(format!("cannot write: {e}")))?;
    drop(w);
    file.commit().map_err(fail)?;
    Ok(report)
}

/// The report's own consumers of the event stream.
struct Consumers {
    timeline: Timeline,
    stories: DuplicateStories,
}

impl Observer for Consumers {
    fn event(&mut self, e: Event) {
        self.timeline.record(&e);
        self.stories.record(e);
    }
    fn ticket_closed(&mut self, id: u64) {
        self.timeline.close(id);
        self.stories.close(id);
    }
}

/// Runs `sc` on `seed` with the report's own consumers ([`Consumers`]) fed the event stream
/// as it happens; the run's output and what they gathered.
///
/// # Errors
/// [`OverBudget`]: the run went past `budget` while running.
fn run_observed(
    engine: Sim,
    sc: &Scenario,
    seed: u64,
    how: &Invocation,
    budget: RunBudget,
) -> Result<(RunOutput, Consumers), OverBudget> {
    let consumers = Rc::new(RefCell::new(Consumers {
        timeline: Timeline::new(sc.horizon),
        stories: DuplicateStories::new(SHOWN_STORIES),
    }));
    let shared: Rc<RefCell<dyn Observer>> = consumers.clone();
    let watch = RunWatch::new(budget);
    let (out, ()) = run_recorded_watched(
        engine,
        sc,
        seed,
        how,
        Keep::Nothing,
        (),
        Some(shared),
        (&watch, 0),
    )?;
    let gathered = std::mem::replace(
        &mut *consumers.borrow_mut(),
        Consumers {
            timeline: Timeline::new(Duration::ZERO),
            stories: DuplicateStories::new(0),
        },
    );
    Ok((out, gathered))
}

/// [`html_report`]'s page, the run by the engine `engine` builds for the scenario.
fn html_report_by(
    opts: &HtmlOptions,
    engine: impl FnOnce(&Scenario) -> Sim,
) -> Result<HtmlReport, CliError> {
    let sc = scenario::load_within(&opts.scenario, &opts.policies, &opts.sets, &opts.budget)?;
    let sweep = match &opts.sweep {
        None => None,
        Some(dir) => {
            Some(crate::sweep::read_dir(dir).map_err(|e| CliError::Input(format!("--sweep {e}")))?)
        }
    };
    let origin = sc
        .clock_origin
        .as_deref()
        .and_then(|s| humantime::parse_rfc3339(s).ok());
    let how = Invocation::new(&opts.scenario, &opts.policies, &opts.sets);
    let seed = opts.seed.unwrap_or(sc.seed);
    let (out, Consumers { timeline, stories }) =
        run_observed(engine(&sc), &sc, seed, &how, opts.budget)?;
    let series = timeline.finish();
    // The report's list is the authority on which tickets are duplicates.
    let listed = &out.report.metrics.duplicated_ticket_ids;
    let stories: Vec<(u64, Vec<String>)> = stories
        .finish()
        .into_iter()
        .filter(|(t, _)| listed.binary_search(t).is_ok())
        .map(|(t, events)| {
            let lines = story(&History { events }, t, origin);
            (t, crate::analysis::story::for_scenario(&sc, lines))
        })
        .collect();
    let effect = sc.effect();
    let mut json = report_value(&sc, &out, None)?;
    if !effect.is_refund() {
        // The page speaks of the tool's effect: its metric table lists the neutral names only.
        if let Some(obj) = json.as_object_mut() {
            for (refund, _) in crate::scenario::effect::METRIC_ALIASES {
                obj.remove(refund);
            }
        }
    }
    let text = summary_text(&sc, &out, origin);
    let cx = ChartContext {
        origin,
        horizon: SimTime::from_duration(sc.horizon),
        executor_timeout: SimTime::from_duration(sc.executor.timeout),
    };
    let charts = charts(&series, &cx).map_err(CliError::Input)?;
    let compiled = serde_json::to_string_pretty(&scenario::compiled(&sc))
        .map_err(|e| CliError::Input(e.to_string()))?;
    let sweep_dir = opts.sweep.as_ref().map(|d| d.display().to_string());
    let html = page::Page {
        sc: &sc,
        how: &how,
        report: &out.report,
        json: &json,
        text_summary: &text,
        origin,
        series: &series,
        charts: &charts,
        stories: &stories,
        sweep: sweep_dir.as_deref().zip(sweep.as_ref()),
        compiled: &compiled,
    }
    .render();
    // Every word of the page in the effect's (a refund's page is unchanged).
    let html = effect.say(&html);
    Ok(HtmlReport {
        html,
        report: out.report,
        series,
        stories: stories.iter().map(|(t, _)| *t).collect(),
        effect,
    })
}
