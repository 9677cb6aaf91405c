//! The progress bars on stderr: over virtual time for `run` and `report`, over runs for
//! `check`, `diff` and `sweep`, over cases for `explore`.

use std::time::Duration;

use refundsim::gate;

/// The progress bars made so far ([`tracked`]), for [`clear_progress_bars`].
static PROGRESS_BARS: std::sync::Mutex<Vec<indicatif::WeakProgressBar>> =
    std::sync::Mutex::new(Vec::new());

/// `bar`, listed so that an early exit (a run stopped over the budget, Ctrl-C) clears it before
/// its message ([`refundsim::output::clear_progress`]).
pub(crate) fn tracked(bar: indicatif::ProgressBar) -> indicatif::ProgressBar {
    PROGRESS_BARS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(bar.downgrade());
    bar
}

/// Clears every progress bar still alive from stderr (nothing when stderr is not a terminal:
/// the bars are hidden there).
pub(crate) fn clear_progress_bars() {
    let bars = PROGRESS_BARS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for bar in bars.iter().filter_map(indicatif::WeakProgressBar::upgrade) {
        bar.finish_and_clear();
    }
}

/// The `explore` progress bar on stderr, drawn from the first case on.
pub(crate) fn progress_bar(cases: u32) -> indicatif::ProgressBar {
    let bar = tracked(indicatif::ProgressBar::new(u64::from(cases)));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} explore {pos} runs (cases and shrinking) {elapsed}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    bar
}

/// The `run` progress bar on stderr over virtual time `0..horizon`, moved now and then by the
/// engine (see `run::run_with_progress`); a short run never draws it.
pub(crate) fn virtual_time_bar() -> indicatif::ProgressBar {
    virtual_time_bar_of("run")
}

/// [`virtual_time_bar`] for `command` (`replay`'s run of the imported scenario).
pub(crate) fn virtual_time_bar_of(command: &'static str) -> indicatif::ProgressBar {
    let bar = tracked(indicatif::ProgressBar::new(1));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {prefix} [{bar:30}] {msg} of virtual time, {elapsed}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_prefix(command);
    // Until the engine's first report says how far of which horizon.
    bar.set_message("0s");
    bar
}

/// Moves `bar` from a run's progress reports (virtual time reached, horizon).
pub(crate) fn virtual_time_progress(
    bar: &indicatif::ProgressBar,
) -> impl FnMut(Duration, Duration) + 'static {
    let bar = bar.clone();
    move |now: Duration, horizon: Duration| {
        bar.set_length(millis(horizon));
        bar.set_position(millis(now.min(horizon)));
        bar.set_message(format!(
            "{} of {}",
            humantime::format_duration(Duration::from_secs(now.as_secs())),
            humantime::format_duration(horizon)
        ));
    }
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The `check`/`diff` progress bar on stderr over every run (scenario × policy × seed), ticked
/// by the worker threads as runs finish.
pub(crate) struct RunsBar(pub indicatif::ProgressBar);

impl RunsBar {
    pub fn new(command: &'static str) -> Self {
        // Hidden until `start` knows the number of runs (an empty bar of 0 runs drew full).
        let bar = tracked(indicatif::ProgressBar::with_draw_target(
            Some(0),
            indicatif::ProgressDrawTarget::hidden(),
        ));
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {prefix} [{bar:30}] {pos}/{len} runs, {elapsed}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.set_prefix(command);
        RunsBar(bar)
    }
}

impl gate::Progress for RunsBar {
    fn start(&self, runs: u64) {
        self.0.set_length(runs);
        self.0
            .set_draw_target(indicatif::ProgressDrawTarget::stderr());
    }
    fn run_done(&self) {
        self.0.inc(1);
    }
}

/// The `import`/`replay` progress bar on stderr, in `check`'s style: the bytes of each file as
/// it is read, the steps without a count (parsing a document read whole, checking the
/// scenario) as a spinner, then the tickets built. Hidden where stderr is not a terminal.
pub(crate) struct ImportBar(pub indicatif::ProgressBar);

impl ImportBar {
    /// A bar for `command` (`import` or `replay`).
    pub fn new(command: &'static str) -> Self {
        let bar = tracked(indicatif::ProgressBar::new(0));
        bar.set_prefix(command);
        if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            // The spinner turns while a step (a 140 MB document's parse) reports nothing.
            bar.enable_steady_tick(Duration::from_millis(120));
        }
        ImportBar(bar)
    }

    fn style(&self, template: &str) {
        self.0.set_style(
            indicatif::ProgressStyle::with_template(template)
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
    }
}

impl refundsim::import::ImportProgress for ImportBar {
    fn reading(&self, file: &str, len: u64) {
        self.style("{spinner} {prefix} [{bar:30}] reading {msg}: {bytes}/{total_bytes}, {elapsed}");
        self.0.set_length(len);
        self.0.set_position(0);
        self.0.set_message(file.to_string());
    }
    fn read(&self, bytes: u64) {
        self.0.set_position(bytes);
    }
    fn step(&self, what: &str) {
        self.style("{spinner} {prefix} {msg}, {elapsed}");
        self.0.set_message(what.to_string());
    }
    fn building(&self, tickets: u64) {
        self.style("{spinner} {prefix} [{bar:30}] building {pos}/{len} tickets, {elapsed}");
        self.0.set_length(tickets);
        self.0.set_position(0);
    }
    fn ticket_built(&self) {
        self.0.inc(1);
    }
}
