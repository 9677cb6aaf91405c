//! The run budget: an estimate, from the scenario alone, of the engine events, CPU time and
//! memory of one run, and the limits a run must fit unless the user raises them
//! (`--max-events`, `--max-memory-mb`).
//!
//! It replaces a fixed ticket cap: a long horizon is fine (memory is flat in the horizon, see
//! `docs/performance.md`), so what is refused is only work or memory far beyond what was asked
//! for by mistake, and the message says how much and how to go past it.

use std::sync::atomic::{AtomicU64, Ordering};

use super::config::{OnTimeout, Scenario};
use super::error::ValidationError;
use super::latency::LatencyDist;
use super::rules::{fail, Check};
pub use crate::text::{about, thousands};
use crate::text::{about_tenths, group_thousands, up_to, SATURATE};

/// Default budget: 300 million engine events per run (admits a 30-day horizon at 1 ticket/s
/// with the incident's background load, about 10^8 events).
pub const DEFAULT_MAX_EVENTS: u64 = 300_000_000;

/// Default memory budget: 2,048 MB (2 GiB) of estimated peak memory per run. The incident
/// estimates about 28 MB (it peaks at 21 MB) and the 30-day run at 1 ticket/s about 24 MB (8 MB).
pub const DEFAULT_MAX_MEMORY_MB: u64 = 2048;

/// Engine events per ticket used by the estimate, with a margin: the incident runs about 15 per
/// ticket, with its timeouts, retries and zombie calls.
pub(crate) const EVENTS_PER_TICKET: f64 = 20.0;
/// Engine events per background request: its arrival and the end of its hold (it runs as
/// engine callbacks, not as a task; a hand-off from the pool's line happens inside another
/// event). The incident measures 2.07.
pub(crate) const EVENTS_PER_BACKGROUND_REQUEST: f64 = 2.0;
/// Engine events per CPU second assumed by the time estimate: what the incident runs at on one
/// core of the 2-core machine `docs/performance.md` was measured on.
pub(crate) const EVENTS_PER_CPU_SECOND: f64 = 3.2e6;
/// Memory per open ticket besides its requests (its facts, ledger row, charge, the agent's and
/// executor's tasks), bytes. Measured: a ticket waiting for a human about 3 KB; fitted on runs
/// where every ticket and every request stays open (Stripe answering in an hour), about 5.7 KB.
pub(crate) const BYTES_PER_OPEN_TICKET: f64 = 6144.0;
/// Memory per request in flight (its futures down the stack, timers, place in the pool's line,
/// Stripe's execution), bytes: fitted at about 1.3–2.2 KB on runs where every try stays in
/// flight for an hour (2 and 6 tries per ticket, 12 through three retrying layers). A ticket of
/// the incident (2 tries) with both in flight thus counts 11 KB; the most measured is about
/// 8 KB, for a ticket whose two tries wait in the pool's line.
pub(crate) const BYTES_PER_REQUEST_IN_FLIGHT: f64 = 2560.0;
/// What touching a large working set adds to the CPU estimate: one CPU second per this many MB
/// of estimated peak memory (page faults and cache misses; fitted on runs of 0.4–1.3 GB that
/// ran 3–10 s for 2.8–6.7 million events, where events alone said 1–2 s).
pub(crate) const MB_PER_CPU_SECOND: f64 = 160.0;
/// The fixed part of a run's memory, bytes.
const BASE_BYTES: f64 = 12.0 * 1024.0 * 1024.0;

/// The run budget: how much one run may do (engine events) and hold (estimated, and while
/// running counted, memory). A value, never a process-wide setting: the CLI makes one from
/// `--max-events` and `--max-memory-mb` and hands it to the loads ([`crate::scenario::load_within`]
/// admits a scenario against it) and to the runs it guards while they run ([`RunWatch`]). The
/// library's [`crate::scenario::load`] admits against [`RunBudget::default`], and its
/// [`crate::run::run`] is never stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunBudget {
    /// Engine events per run (`--max-events`; default [`DEFAULT_MAX_EVENTS`]).
    pub max_events: u64,
    /// Peak memory per run, MB (`--max-memory-mb`; default [`DEFAULT_MAX_MEMORY_MB`]).
    pub max_memory_mb: u64,
}

impl Default for RunBudget {
    fn default() -> Self {
        RunBudget {
            max_events: DEFAULT_MAX_EVENTS,
            max_memory_mb: DEFAULT_MAX_MEMORY_MB,
        }
    }
}

impl RunBudget {
    /// No limit: what the commands that simulate nothing (`lint`, `show`) load with.
    pub const UNLIMITED: RunBudget = RunBudget {
        max_events: u64::MAX,
        max_memory_mb: u64::MAX,
    };

    /// Refuses a scenario whose estimate exceeds this budget: see [`check_budget`].
    ///
    /// # Errors
    /// A [`ValidationError`] naming the field that drives the estimate most.
    pub fn admit(&self, s: &Scenario) -> Result<(), ValidationError> {
        check_budget(s, self)
    }

    /// The budget flags that give this budget, as typed (empty for the default), so that a
    /// command to run one run alone stops at the same place.
    fn flags(&self) -> String {
        let mut flags = String::new();
        if self.max_memory_mb != DEFAULT_MAX_MEMORY_MB {
            flags.push_str(&format!(" --max-memory-mb {}", self.max_memory_mb));
        }
        if self.max_events != DEFAULT_MAX_EVENTS {
            flags.push_str(&format!(" --max-events {}", self.max_events));
        }
        flags
    }
}

/// Events between two checks of the budget while running (a check costs a few hundred
/// instructions; at this spacing memory can grow by a few MB between checks).
pub(crate) const CHECK_EVERY_EVENTS: u64 = 16_384;

/// A run stopped over the run budget while it ran. Its text, one line, names the scenario, the
/// seed, the simulated time, what was held (tasks, timers, the model's state) or how many
/// events ran, the estimate made before the run, the flag to go past, and the command that
/// reproduces the run. The CLI prints it after `error: ` and exits 2 (bad input: the scenario
/// asks for more than the budget), having written nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct OverBudget {
    message: String,
}

/// The runs of one command watched against a [`RunBudget`] while they run: the estimate cannot
/// see everything a scenario keeps in flight (a long think time, a late duplicate delivery, a
/// pool line under a long acquire timeout), so a run that goes past the budget's events or
/// counted memory is stopped. Of several runs stopped (a parallel `check`, `diff` or `sweep`),
/// [`RunWatch::verdict`] reports the first in the command's order, the same one at any thread
/// count; runs placed after it are abandoned, since their results will not be used.
///
/// Shared by reference across the command's threads; one per command.
#[derive(Debug)]
pub struct RunWatch {
    budget: RunBudget,
    /// The first stop in the command's order so far: (order, what stopped).
    first_stop: std::sync::Mutex<Option<(u64, OverBudget)>>,
    /// Runs placed after this one in the command's order are abandoned.
    abandon_after: std::sync::Arc<AtomicU64>,
}

impl RunWatch {
    /// A watch over runs under `budget`, none stopped yet.
    pub fn new(budget: RunBudget) -> RunWatch {
        RunWatch {
            budget,
            first_stop: std::sync::Mutex::new(None),
            abandon_after: std::sync::Arc::new(AtomicU64::new(u64::MAX)),
        }
    }

    /// The budget watched.
    pub fn budget(&self) -> RunBudget {
        self.budget
    }

    /// The engine's limits for the run at `order` in the command's order; `held` counts the
    /// model's own bytes.
    pub(crate) fn limits(&self, order: u64, held: Box<dyn Fn() -> u64>) -> crate::sim::Limits {
        let after = std::sync::Arc::clone(&self.abandon_after);
        crate::sim::Limits {
            max_events: self.budget.max_events,
            max_bytes: self.budget.max_memory_mb.saturating_mul(1024 * 1024),
            check_every: CHECK_EVERY_EVENTS,
            held,
            abandon: Box::new(move || order > after.load(Ordering::Relaxed)),
        }
    }

    /// Records that the run at `order` (of scenario `s` under `seed`, reproduced alone by
    /// `label`, a `refundsim run …` command or empty) was stopped as `e` says, and returns
    /// what stopped it. An abandoned run returns the first stop so far: a run earlier in the
    /// order stopped, and this one's results are not used.
    pub(crate) fn stopped(
        &self,
        s: &Scenario,
        seed: u64,
        order: u64,
        label: &str,
        e: &crate::sim::Exceeded,
    ) -> OverBudget {
        let mut first = self
            .first_stop
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if e.abandoned {
            if let Some((_, stop)) = first.as_ref() {
                return stop.clone();
            }
        }
        let stop = OverBudget {
            message: self.message(s, seed, label, e),
        };
        if first.as_ref().is_none_or(|(o, _)| order < *o) {
            *first = Some((order, stop.clone()));
            self.abandon_after.fetch_min(order, Ordering::Relaxed);
        }
        stop
    }

    /// Whether every run so far fitted the budget.
    ///
    /// # Errors
    /// [`OverBudget`]: the first run in the command's order that was stopped.
    pub fn verdict(&self) -> Result<(), OverBudget> {
        let first = self
            .first_stop
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match first.as_ref() {
            Some((_, stop)) => Err(stop.clone()),
            None => Ok(()),
        }
    }

    fn message(&self, s: &Scenario, seed: u64, label: &str, e: &crate::sim::Exceeded) -> String {
        let est = estimate(s);
        let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
        let what = if e.events_limit {
            format!(
                "it ran {} engine events, past the budget of {} (the estimate before the run \
                 was {}); raise it with --max-events N if you mean it",
                group_thousands(e.events),
                group_thousands(self.budget.max_events),
                about(est.events),
            )
        } else {
            format!(
                "it held {} in {} tasks in flight ({}), {} timers and the model's state ({}), \
                 past the budget of {} MB (the estimate before the run was {}: something the \
                 estimate does not count stays in flight, such as long think times, delays, \
                 hold times or acquire timeouts); raise it with --max-memory-mb MB if you mean \
                 it",
                megabytes(mb(e.bytes)),
                group_thousands(e.tasks as u64),
                megabytes(mb(e.task_bytes)),
                group_thousands(e.timers as u64),
                megabytes(mb(e.model_bytes)),
                group_thousands(self.budget.max_memory_mb),
                megabytes(est.peak_mb),
            )
        };
        let again = if label.is_empty() {
            String::new()
        } else {
            format!(" (run alone: {label}{})", self.budget.flags())
        };
        format!(
            "scenario {:?}, seed {seed}: stopped over the run budget at {} (simulated): \
             {what}{again}",
            crate::scenario::error::shorten(&s.name),
            crate::sim::clock_time(None, e.at),
        )
    }
}

/// What one run of a scenario is expected to cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// Tickets opened before the horizon (Σ rate × phase time, or the recorded tickets).
    pub tickets: f64,
    /// Background requests before the horizon.
    pub background_requests: f64,
    /// Requests each ticket can make at most, relative to the incident's two (a call and one
    /// retry): the product of every retrying layer's tries and of duplicate deliveries (≥ 0.5).
    pub tries_factor: f64,
    /// The share of tries expected to time out (see [`timed_out_fraction`]).
    pub timeout_fraction: f64,
    /// Status probes expected per ticket: per try, [`Estimate::timeout_fraction`] of tries time
    /// out and each probes `probe_max_wait / probe_interval` times (0 unless `on_timeout`
    /// probes).
    pub probes_per_ticket: f64,
    /// Engine events.
    pub events: f64,
    /// CPU seconds: events at [`EVENTS_PER_CPU_SECOND`], plus peak memory at
    /// [`MB_PER_CPU_SECOND`].
    pub cpu_seconds: f64,
    /// Tickets expected open at once: every ticket of a phase whose arrivals the pool cannot
    /// serve (its line grows for the whole phase), plus the highest other arrival rate × how
    /// long a ticket stays open (per model attempt, the executor's timeout or Stripe's tail
    /// latency if longer, plus the probing; plus a human's pickup delay, times the timed-out
    /// share, when humans take escalations); at most every ticket.
    pub open_tickets: f64,
    /// Requests in flight per open ticket: every try for a pool's growing line (a try that
    /// timed out still waits its turn), otherwise one plus the others' share of timed-out tries
    /// (a try that timed out stays in flight beside its successor until Stripe answers).
    pub requests_per_open_ticket: f64,
    /// Peak memory, MB: a fixed part plus, per open ticket, [`BYTES_PER_OPEN_TICKET`] and
    /// [`BYTES_PER_REQUEST_IN_FLIGHT`] per request in flight. An estimate that errs high, not a
    /// bound.
    pub peak_mb: f64,
    /// What drives the event estimate, largest first: (fields, what they contribute).
    pub drivers: Vec<(String, String)>,
    /// What drives the memory estimate, largest first: (fields, what they contribute).
    pub memory_drivers: Vec<(String, String)>,
}

/// The least share of tries assumed to time out when estimating status probes: the incident's
/// burst times out about 3 % of its tool calls (waiting for the pool, which the scenario alone
/// does not tell); 10 % leaves a margin without refusing a long run of a probing policy.
pub(crate) const MIN_TIMEOUT_FRACTION: f64 = 0.1;
/// Engine events per status probe (its request, answer and the wait before the next).
pub(crate) const EVENTS_PER_PROBE: f64 = 3.0;

/// The share of draws of `d` longer than `t` seconds: all or none for a constant, the fitted
/// lognormal's tail, the exponential's `exp(−t/mean)`, the share of samples, `otherwise`'s for
/// a script.
fn share_longer(d: &LatencyDist, t: f64) -> f64 {
    if t <= 0.0 {
        return 1.0;
    }
    match d {
        LatencyDist::Constant { value } => f64::from(u8::from(value.as_secs_f64() > t)),
        LatencyDist::Lognormal { p50, p99 } => {
            let mu = libm::log(p50.as_secs_f64());
            let sigma = (libm::log(p99.as_secs_f64()) - mu) / 2.3263;
            if sigma.is_finite() && sigma > 0.0 {
                0.5 * libm::erfc((libm::log(t) - mu) / (sigma * std::f64::consts::SQRT_2))
            } else {
                f64::from(u8::from(p50.as_secs_f64() > t))
            }
        }
        LatencyDist::Exponential { mean } => {
            let m = mean.as_secs_f64();
            if m > 0.0 {
                libm::exp(-t / m)
            } else {
                0.0
            }
        }
        LatencyDist::Empirical { samples } => share_of(samples, t),
        LatencyDist::Script(s) => share_longer(&s.otherwise, t),
    }
}

fn share_of(samples: &[std::time::Duration], t: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    samples.iter().filter(|d| d.as_secs_f64() > t).count() as f64 / samples.len() as f64
}

/// The share of tries expected to time out: at least [`MIN_TIMEOUT_FRACTION`], more when
/// Stripe's latency alone passes the executor's timeout — the share of `stripe.latency` (or of
/// `stripe.latency_choices`) longer than `executor.timeout`, with `faults.latency_spike` of
/// requests slowed by `latency_spike_factor`. A constant latency above the timeout times out
/// every try.
pub(crate) fn timed_out_fraction(s: &Scenario) -> f64 {
    let t = s.executor.timeout.as_secs_f64();
    let longer = |t: f64| {
        if s.stripe.latency_choices.is_empty() {
            share_longer(&s.stripe.latency, t)
        } else {
            share_of(&s.stripe.latency_choices, t)
        }
    };
    let f = &s.stripe.faults;
    let spike = f.latency_spike.clamp(0.0, 1.0);
    let factor = f.latency_spike_factor.max(1.0);
    let p = (1.0 - spike) * longer(t) + spike * longer(t / factor);
    if p.is_finite() {
        p.clamp(MIN_TIMEOUT_FRACTION, 1.0)
    } else {
        MIN_TIMEOUT_FRACTION
    }
}

/// Stripe's tail latency, seconds: the 99th percentile of `stripe.latency` (or the longest of
/// `latency_choices`), times `latency_spike_factor` when spikes are on.
fn stripe_tail(s: &Scenario) -> f64 {
    let p99 = if s.stripe.latency_choices.is_empty() {
        s.stripe.latency.p99().as_secs_f64()
    } else {
        s.stripe
            .latency_choices
            .iter()
            .map(|d| d.as_secs_f64())
            .fold(0.0, f64::max)
    };
    if s.stripe.faults.latency_spike > 0.0 {
        p99 * s.stripe.faults.latency_spike_factor.max(1.0)
    } else {
        p99
    }
}

/// Stripe's median latency, seconds (the median of `latency_choices` when given).
fn stripe_median(s: &Scenario) -> f64 {
    if s.stripe.latency_choices.is_empty() {
        s.stripe.latency.median().as_secs_f64()
    } else {
        let mut c: Vec<f64> = s
            .stripe
            .latency_choices
            .iter()
            .map(|d| d.as_secs_f64())
            .collect();
        c.sort_by(f64::total_cmp);
        c[(c.len() - 1) / 2]
    }
}

/// The Stripe requests one ticket can make ([`Stack::fan_out`](super::stack::Stack::fan_out): every
/// retrying layer's tries multiply), with a duplicate delivery's second agent run counted at its
/// probability; and the fields responsible (a model rule only past one retry: the incident's
/// constants already count its two attempts).
fn tries(s: &Scenario) -> (f64, Vec<String>) {
    let stack = super::stack::Stack::of(s);
    let mut fields: Vec<String> = stack
        .tries()
        .iter()
        .filter(|l| {
            l.tries
                > if l.field == "agent.retry.max_retries" {
                    2
                } else {
                    1
                }
        })
        .map(|l| l.field.clone())
        .collect();
    let mut factor = stack.fan_out();
    if s.deliveries.duplicate_probability > 0.0 {
        factor *= 1.0 + s.deliveries.duplicate_probability;
        fields.push("deliveries.duplicate_probability".to_string());
    }
    (factor, fields)
}

/// Tickets, the highest rate, and the tickets of phases the pool cannot serve (see
/// [`Estimate::open_tickets`]) with the highest such rate.
struct Arrivals {
    tickets: f64,
    peak_rate: f64,
    backlog: f64,
    backlog_rate: f64,
}

fn arrivals(s: &Scenario) -> Arrivals {
    let horizon = s.horizon.as_secs_f64();
    let a = &s.arrivals;
    if !a.tickets.is_empty() {
        let n = a.tickets.len() as f64;
        return Arrivals {
            tickets: n,
            peak_rate: n / horizon.max(1.0),
            backlog: 0.0,
            backlog_rate: 0.0,
        };
    }
    // A pool whose connections are all busy at a phase's rate (one request per ticket at
    // Stripe's median latency, beside the background load) lines its requests up for the whole
    // phase; an acquire timeout bounds the line instead.
    let bg_busy = s.background_load.rate_per_s * s.background_load.hold.median().as_secs_f64();
    let pool = f64::from(s.refunds_service.pool_size);
    let per_request = stripe_median(s);
    let unbounded_line = s.refunds_service.acquire_timeout.is_none();
    let mut out = Arrivals {
        tickets: 0.0,
        peak_rate: 0.0,
        backlog: 0.0,
        backlog_rate: 0.0,
    };
    let mut start = 0.0f64;
    for p in &a.schedule {
        let end = start + p.duration.as_secs_f64();
        let within = (end.min(horizon) - start.min(horizon)).max(0.0);
        let n = p.rate_per_s * within;
        out.tickets += n;
        if within > 0.0 {
            if unbounded_line && p.rate_per_s * per_request + bg_busy >= pool {
                out.backlog += n;
                out.backlog_rate = out.backlog_rate.max(p.rate_per_s);
            } else {
                out.peak_rate = out.peak_rate.max(p.rate_per_s);
            }
        }
        start = end;
    }
    out
}

/// The most recorded tickets opened within any window of `window` seconds.
fn recorded_peak(tickets: &[super::config::TicketSpec], window: f64) -> f64 {
    let mut t: Vec<f64> = tickets.iter().map(|k| k.opened_at.as_secs_f64()).collect();
    t.sort_by(f64::total_cmp);
    let (mut best, mut lo) = (0usize, 0usize);
    for hi in 0..t.len() {
        while t[hi] - t[lo] > window {
            lo += 1;
        }
        best = best.max(hi - lo + 1);
    }
    best as f64
}

/// Estimates one run of `s`: its work ([`work`]) and its peak memory ([`memory`]).
pub fn estimate(s: &Scenario) -> Estimate {
    let horizon = s.horizon.as_secs_f64();
    let arr = arrivals(s);
    let background_requests = s.background_load.rate_per_s * horizon;
    let work = work(s, &arr, background_requests);
    let mem = memory(s, &arr, &work);
    let keep = |d: Vec<(f64, String, String)>| -> Vec<(String, String)> {
        d.into_iter()
            .filter(|d| d.0 > 0.0)
            .map(|(_, f, w)| (f, w))
            .collect()
    };
    Estimate {
        tickets: arr.tickets,
        background_requests,
        tries_factor: work.tries_factor,
        timeout_fraction: work.timeout_fraction,
        probes_per_ticket: work.probes_per_ticket,
        events: work.events,
        cpu_seconds: work.events / EVENTS_PER_CPU_SECOND + mem.peak_mb / MB_PER_CPU_SECOND,
        open_tickets: mem.open,
        requests_per_open_ticket: mem.requests_per_open_ticket,
        peak_mb: mem.peak_mb,
        drivers: keep(work.drivers),
        memory_drivers: keep(mem.drivers),
    }
}

/// A run's work: the Stripe requests per ticket and the fields that multiply them, the share of
/// tries that time out and the status probes they cause, the engine events, and what drives
/// them (events, the fields, the words), largest first.
struct Work {
    tries_per_ticket: f64,
    tries_fields: Vec<String>,
    tries_factor: f64,
    probing: bool,
    timeout_fraction: f64,
    probes_per_ticket: f64,
    events: f64,
    drivers: Vec<(f64, String, String)>,
}

/// See [`Work`].
fn work(s: &Scenario, arr: &Arrivals, background_requests: f64) -> Work {
    let tickets = arr.tickets;
    let (tries_per_ticket, tries_fields) = tries(s);
    // The incident's constant already counts its two model attempts.
    let tries_factor = (tries_per_ticket / 2.0).max(0.5);
    let probing = s.executor.on_timeout == OnTimeout::ProbeStatus;
    let probes_per_try = probes_per_try(s);
    let timeout_fraction = timed_out_fraction(s);
    let probes_per_ticket = tries_per_ticket * timeout_fraction * probes_per_try;
    let ticket_events = tickets * EVENTS_PER_TICKET * tries_factor;
    let probe_events = tickets * probes_per_ticket * EVENTS_PER_PROBE;
    let background_events = background_requests * EVENTS_PER_BACKGROUND_REQUEST;
    let events = ticket_events + probe_events + background_events;
    let mut drivers = arrival_drivers(
        s,
        tickets,
        tries_factor,
        background_events,
        background_requests,
    );
    if tries_factor > 1.0 {
        drivers.push((
            tickets * EVENTS_PER_TICKET * (tries_factor - 1.0),
            tries_fields.join(", "),
            format!(
                "{} requests per ticket (retries multiply across layers)",
                up_to(tries_per_ticket)
            ),
        ));
    }
    if probe_events > 0.0 {
        drivers.push((
            probe_events,
            "executor.probe_interval, executor.probe_max_wait".to_string(),
            format!(
                "{} status probes per timed-out try ({} probes in all if {:.0} % of tries time \
                 out, from stripe.latency against executor.timeout)",
                up_to(probes_per_try),
                thousands(tickets * probes_per_ticket),
                timeout_fraction * 100.0
            ),
        ));
    }
    drivers.sort_by(|x, y| y.0.total_cmp(&x.0));

    Work {
        tries_per_ticket,
        tries_fields,
        tries_factor,
        probing,
        timeout_fraction,
        probes_per_ticket,
        events,
        drivers,
    }
}

/// The most probes one timed-out try makes: `probe_max_wait / probe_interval`, at least one;
/// 0 unless `executor.on_timeout` is `probe_status`.
fn probes_per_try(s: &Scenario) -> f64 {
    if s.executor.on_timeout != OnTimeout::ProbeStatus {
        return 0.0;
    }
    let interval = s.executor.probe_interval.as_secs_f64().max(1e-9);
    (s.executor.probe_max_wait.as_secs_f64() / interval)
        .ceil()
        .max(1.0)
}

/// The event drivers every run has: the tickets' first tries and the background requests.
fn arrival_drivers(
    s: &Scenario,
    tickets: f64,
    tries_factor: f64,
    background_events: f64,
    background_requests: f64,
) -> Vec<(f64, String, String)> {
    let a = &s.arrivals;
    vec![
        (
            tickets * EVENTS_PER_TICKET * tries_factor.min(1.0),
            if a.tickets.is_empty() {
                "arrivals.schedule, horizon".to_string()
            } else {
                "arrivals.tickets".to_string()
            },
            tickets_about(tickets),
        ),
        (
            background_events,
            "background_load.rate_per_s, horizon".to_string(),
            format!("{} background requests", about(background_requests)),
        ),
    ]
}

/// A run's peak memory: the tickets open at once (a backlog the pool cannot serve, and the
/// steady tickets open for their tries, probes and a human's pickup), the requests in flight
/// per open ticket, the peak in MB, and what drives it (bytes, the fields, the words), largest
/// first.
struct Memory {
    open: f64,
    requests_per_open_ticket: f64,
    peak_mb: f64,
    drivers: Vec<(f64, String, String)>,
}

/// A memory driver's fields: `base`, and the retry fields when more than the incident's two
/// requests per ticket are in flight (they drive the excess).
fn with_retry_fields(base: &str, requests: f64, tries_fields: &[String]) -> String {
    if requests > 2.0 && !tries_fields.is_empty() {
        format!("{base}, {}", tries_fields.join(", "))
    } else {
        base.to_string()
    }
}

/// `, with N requests in flight each (…)` when more than two are (`all`: the most, "up to";
/// else about the expected number), or nothing.
fn in_flight(requests: f64, all: bool) -> String {
    if requests > 2.0 {
        format!(
            ", with {} requests in flight each (retries multiply across layers)",
            if all {
                up_to(requests)
            } else if (requests - requests.round()).abs() < 0.05 {
                about(requests)
            } else {
                about_tenths(requests)
            }
        )
    } else {
        String::new()
    }
}

/// How long a ticket stays open, seconds: every model attempt's wait (the executor's timeout or
/// Stripe's tail, and its probes), and a human's pickup for the share of tries that time out.
fn open_for(s: &Scenario, probing: bool, timeout_fraction: f64) -> f64 {
    let attempts = f64::from(s.agent.retry.max_retries) + 1.0;
    let mut per_attempt = s.executor.timeout.as_secs_f64().max(stripe_tail(s));
    if probing {
        per_attempt += s.executor.probe_max_wait.as_secs_f64();
    }
    let mut open_for = per_attempt * attempts;
    // Only tickets whose tries fail wait for a human: about the share of tries that time out.
    if s.humans.enabled {
        open_for += s.humans.pickup_delay.median().as_secs_f64() * timeout_fraction;
    }
    open_for
}

/// See [`Memory`].
fn memory(s: &Scenario, arr: &Arrivals, work: &Work) -> Memory {
    let tickets = arr.tickets;
    let a = &s.arrivals;
    let (tries_per_ticket, tries_fields) = (work.tries_per_ticket, &work.tries_fields);
    let (probing, timeout_fraction) = (work.probing, work.timeout_fraction);
    // Memory: the tickets open at once.
    let open_for = open_for(s, probing, timeout_fraction);
    // Recorded tickets: the most opened within any `open_for` (all of them when they open at
    // once), not their average rate over the horizon.
    let (steady, steady_rate) = if a.tickets.is_empty() {
        (arr.peak_rate * open_for, arr.peak_rate)
    } else {
        let n = recorded_peak(&a.tickets, open_for);
        (n, n / open_for.max(1e-9))
    };
    let open = (arr.backlog + steady).min(tickets);
    let backlog_requests = tries_per_ticket.max(1.0);
    let steady_requests = 1.0 + (tries_per_ticket - 1.0).max(0.0) * timeout_fraction;
    let per_ticket = |requests: f64| BYTES_PER_OPEN_TICKET + requests * BYTES_PER_REQUEST_IN_FLIGHT;
    let backlog_bytes = arr.backlog.min(open) * per_ticket(backlog_requests);
    let steady_bytes = (open - arr.backlog).max(0.0) * per_ticket(steady_requests);
    let peak_mb = (BASE_BYTES + backlog_bytes + steady_bytes) / (1024.0 * 1024.0);
    let mut memory_drivers = Vec::new();
    if arr.backlog > 0.0 {
        memory_drivers.push(backlog_driver(
            s,
            arr,
            backlog_bytes,
            backlog_requests,
            tries_fields,
        ));
    }
    if steady > 0.0 {
        let ticket = Steady {
            open: steady.min(tickets),
            rate: steady_rate,
            open_for,
            probing,
        };
        memory_drivers.push(steady_driver(
            s,
            &ticket,
            steady_bytes,
            steady_requests,
            tries_fields,
        ));
    }
    memory_drivers.sort_by(|x, y| y.0.total_cmp(&x.0));
    Memory {
        open,
        requests_per_open_ticket: if arr.backlog > 0.0 {
            backlog_requests
        } else {
            steady_requests
        },
        peak_mb,
        drivers: memory_drivers,
    }
}

/// The tickets that steadily stay open, for [`steady_driver`]: how many at once, their rate
/// (per second), how long each stays open (seconds), and whether the executor probes.
struct Steady {
    open: f64,
    rate: f64,
    open_for: f64,
    probing: bool,
}

/// The memory driver of a backlog: tickets arriving faster than the pool serves them at
/// Stripe's median latency, all of which may be open at once.
fn backlog_driver(
    s: &Scenario,
    arr: &Arrivals,
    bytes: f64,
    requests: f64,
    tries_fields: &[String],
) -> (f64, String, String) {
    (
        bytes,
        with_retry_fields(
            "arrivals.schedule, refunds_service.pool_size, stripe.latency",
            requests,
            tries_fields,
        ),
        format!(
            "{} that may all be open at once (at {} a pool of {} \
             cannot keep up at Stripe's median latency of {}, so its line grows){}",
            tickets_about(arr.backlog),
            tickets_per_s(arr.backlog_rate),
            match s.refunds_service.pool_size {
                1 => "1 connection".to_string(),
                n => format!("{} connections", thousands(f64::from(n))),
            },
            secs(stripe_median(s)),
            in_flight(requests, true),
        ),
    )
}

/// The memory driver of the tickets open at once in steady arrival: each open for about
/// [`open_for`] seconds.
fn steady_driver(
    s: &Scenario,
    t: &Steady,
    bytes: f64,
    requests: f64,
    tries_fields: &[String],
) -> (f64, String, String) {
    let arrivals_field = if s.arrivals.tickets.is_empty() {
        "arrivals.schedule"
    } else {
        "arrivals.tickets"
    };
    let mut fields = vec![arrivals_field, "executor.timeout", "stripe.latency"];
    if t.probing {
        fields.push("executor.probe_max_wait");
    }
    if s.humans.enabled {
        fields.push("humans.pickup_delay");
    }
    (
        bytes,
        with_retry_fields(&fields.join(", "), requests, tries_fields),
        format!(
            "{} open at once ({}, each open for about {}{})",
            tickets_about(t.open),
            tickets_per_s(t.rate),
            secs(t.open_for),
            in_flight(requests, false),
        ),
    )
}

/// What a scenario over the budget makes and needs, for [`check_budget`]'s message: the
/// drivers listed, the engine events (marked over the limit when they are) and the peak memory.
fn over_what(
    e: &Estimate,
    listed: &[String],
    budget: &RunBudget,
    events_over: bool,
    memory_over: bool,
) -> String {
    let (limit, mem_limit) = (budget.max_events, budget.max_memory_mb);
    let events = if events_over {
        over(e.events, limit)
    } else {
        about(e.events)
    };
    let memory = if memory_over {
        format!("{} MB", over(e.peak_mb, mem_limit))
    } else {
        megabytes(e.peak_mb)
    };
    if events_over {
        format!(
            "{} make {events} engine events ({} of CPU) and need peak memory of {memory} (an \
             estimate)",
            listed.join(", "),
            cpu(e.cpu_seconds),
        )
    } else {
        format!(
            "{} need peak memory of {memory} (an estimate, at about {} KB per open ticket and \
             {:.1} KB per request in flight; {events} engine events, {} of CPU)",
            listed.join(", "),
            thousands(BYTES_PER_OPEN_TICKET / 1024.0),
            BYTES_PER_REQUEST_IN_FLIGHT / 1024.0,
            cpu(e.cpu_seconds),
        )
    }
}

/// Refuses a scenario whose estimate exceeds the budget — its engine events (`--max-events`)
/// or its peak memory (`--max-memory-mb`) — naming the fields that drive it (largest first:
/// the arrivals, background load, retries that multiply across layers, status probes; for
/// memory, the arrivals against the pool and how long a ticket stays open), the estimate and
/// the way past it.
pub(crate) fn check_budget(s: &Scenario, budget: &RunBudget) -> Check {
    let limit = budget.max_events;
    let mem_limit = budget.max_memory_mb;
    let e = estimate(s);
    // Written so that a NaN estimate (an absurd rate times zero) counts as over, not under.
    let events_over = e.events.is_nan() || e.events > limit as f64;
    let memory_over = e.peak_mb.is_nan() || e.peak_mb > mem_limit as f64;
    let drivers = if events_over {
        &e.drivers
    } else if memory_over {
        &e.memory_drivers
    } else {
        return Ok(());
    };
    let Some((first, _)) = drivers.first() else {
        return Ok(());
    };
    let path = first.split(", ").next().unwrap_or("horizon").to_string();
    let listed: Vec<String> = drivers
        .iter()
        .map(|(fields, what)| format!("{what} ({fields})"))
        .collect();
    // Only a budget below its largest value can be raised.
    let raise_events = events_over && limit < u64::MAX;
    let raise_memory = memory_over && mem_limit < u64::MAX;
    let raise = match (raise_events, raise_memory) {
        (true, true) => "Raise it with --max-events N and --max-memory-mb MB if you mean it, or",
        (true, false) => "Raise it with --max-events N if you mean it, or",
        (false, true) => "Raise it with --max-memory-mb MB if you mean it, or",
        (false, false) => "No budget admits it:",
    };
    let what = over_what(&e, &listed, budget, events_over, memory_over);
    fail(
        &path,
        format!(
            "over the run budget: {what}; the budget is {} engine event{} and {} MB of memory. \
             {raise} {}",
            group_thousands(limit),
            if limit == 1 { "" } else { "s" },
            group_thousands(mem_limit),
            advice(events_over, &drivers[0].0),
        ),
    )
}

/// Which way to move the largest driver's `fields` (comma-separated): an interval or a pool
/// size makes less work when raised, a rate, horizon, count or wait when lowered. Memory over
/// budget says "change": a pool that cannot keep up is fixed by a larger one, not a smaller.
fn advice(events_over: bool, fields: &str) -> String {
    if !events_over {
        return format!("change {fields}");
    }
    let (raise, lower): (Vec<&str>, Vec<&str>) = fields
        .split(", ")
        .partition(|f| f.ends_with("interval") || f.ends_with("pool_size"));
    match (raise.is_empty(), lower.is_empty()) {
        (true, _) => format!("lower {}", lower.join(", ")),
        (false, true) => format!("raise {}", raise.join(", ")),
        (false, false) => format!("raise {} or lower {}", raise.join(", "), lower.join(", ")),
    }
}

/// An estimate `x` known to be over the budget `limit`, as [`about`] prints it unless that
/// would read as within the budget: `just over 28` when `x` rounds to `limit` or below, and
/// `more than 18,446,744,073,709,551,615` (the budget itself) when `x` saturates past a
/// budget of 10^12 or more.
fn over(x: f64, limit: u64) -> String {
    if x.is_nan() || x >= SATURATE {
        if limit as f64 >= SATURATE {
            format!("more than {}", group_thousands(limit))
        } else {
            "more than 10^12".to_string()
        }
    } else if x.round() <= limit as f64 {
        format!("just over {}", group_thousands(limit))
    } else {
        about(x)
    }
}

/// `about 56,262 MB`, `more than 10^12 MB`.
fn megabytes(mb: f64) -> String {
    format!("{} MB", about(mb))
}

/// `about 3,600 tickets`, `about 1 ticket`, `under 1 ticket`.
fn tickets_about(n: f64) -> String {
    let a = about(n);
    if a == "about 1" || a == "under 1" {
        format!("{a} ticket")
    } else {
        format!("{a} tickets")
    }
}

/// A rate of tickets with its unit: `0.05 tickets/s`, `1 ticket/s`, `240,000 tickets/s`.
fn tickets_per_s(r: f64) -> String {
    match rate(r).as_str() {
        "1" => "1 ticket/s".to_string(),
        n => format!("{n} tickets/s"),
    }
}

/// A rate: `0.05`, `6`, `240,000`.
fn rate(r: f64) -> String {
    if r.is_finite() && r < 10.0 {
        let t = format!("{r:.2}");
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        thousands(r)
    }
}

/// A duration estimate: `350 ms`, `16 s`, `12 min`, `3.5 h`, `1,234 h`.
fn secs(s: f64) -> String {
    if s.is_finite() && s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else {
        cpu(s).trim_start_matches("about ").to_string()
    }
}

/// `under 1 s`, `about 42 s`, `about 12 min`, `about 3.5 h`, `about 1,234 h`, `more than
/// 10^12 h` — an estimate, so one unit and no false precision.
fn cpu(s: f64) -> String {
    let h = s / 3600.0;
    if s.is_nan() || h >= SATURATE {
        "more than 10^12 h".to_string()
    } else if s < 1.0 {
        "under 1 s".to_string()
    } else if s < 120.0 {
        format!("about {s:.0} s")
    } else if s < 7200.0 {
        format!("about {:.0} min", s / 60.0)
    } else if h < 100.0 {
        format!("about {h:.1} h")
    } else {
        format!("about {} h", thousands(h))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The advice points the right way: a shorter probe interval is more work, a longer wait is.
    #[test]
    fn advice_says_which_way_to_move_each_field() {
        assert_eq!(
            advice(true, "executor.probe_interval, executor.probe_max_wait"),
            "raise executor.probe_interval or lower executor.probe_max_wait"
        );
        assert_eq!(
            advice(true, "arrivals.schedule, horizon"),
            "lower arrivals.schedule, horizon"
        );
        assert_eq!(
            advice(true, "reconciliation.interval"),
            "raise reconciliation.interval"
        );
        assert_eq!(
            advice(false, "refunds_service.pool_size"),
            "change refunds_service.pool_size"
        );
    }

    fn scenario(extra: &str) -> Scenario {
        let text = format!(
            r#"{{"name":"t","horizon":"1h","arrivals":{{"schedule":[{{"duration":"1h","rate_per_s":1}}]}}{extra}}}"#
        );
        crate::scenario::load_text(&text, "t.json", &[], &[], &Default::default()).expect("valid")
    }

    #[test]
    fn an_estimate_over_the_budget_never_reads_as_within_it() {
        assert_eq!(over(28.3, 28), "just over 28");
        assert_eq!(over(28.5, 28), "about 29");
        assert_eq!(over(90_000.2, 90_000), "just over 90,000");
        assert_eq!(over(1234.0, 100), "about 1,234");
        assert_eq!(over(1e300, 1000), "more than 10^12");
        assert_eq!(over(f64::NAN, 1000), "more than 10^12");
        assert_eq!(
            over(f64::INFINITY, u64::MAX),
            "more than 18,446,744,073,709,551,615"
        );
        assert_eq!(over(1e13, 1_000_000_000_000), "more than 1,000,000,000,000");
    }

    #[test]
    fn estimates_read_as_numbers_never_as_300_digits_inf_or_nan() {
        assert_eq!(thousands(3_515_625_024.0), "3,515,625,024");
        assert_eq!(thousands(1e300), "more than 10^12");
        assert_eq!(thousands(f64::INFINITY), "more than 10^12");
        assert_eq!(thousands(f64::NAN), "more than 10^12");
        assert_eq!(about(0.001), "under 1");
        assert_eq!(about(3111.2), "about 3,111");
        assert_eq!(about(f64::INFINITY), "more than 10^12");
        assert_eq!(up_to(15_000.0), "up to 15,000");
        assert_eq!(about_tenths(100.0), "about 100.0");
        assert_eq!(about_tenths(216_000_000.0), "about 216,000,000");
        assert_eq!(cpu(0.2), "under 1 s");
        assert_eq!(cpu(9.0), "about 9 s");
        assert_eq!(cpu(1e300), "more than 10^12 h");
        assert_eq!(cpu(3600.0 * 5000.0), "about 5,000 h");
        assert_eq!(megabytes(56_262.4), "about 56,262 MB");
        assert_eq!(rate(0.05), "0.05");
        assert_eq!(rate(240_000.0), "240,000");
    }

    #[test]
    fn the_timed_out_fraction_follows_stripe_latency_against_the_timeout() {
        // The default latency (p50 350 ms, p99 1.5 s) against 8 s: the floor.
        let base = scenario("");
        assert_eq!(timed_out_fraction(&base), MIN_TIMEOUT_FRACTION);
        // A constant latency above the timeout: every try.
        let all = scenario(
            r#","executor":{"timeout":"1s"},"stripe":{"latency":{"kind":"constant","value":"10m"}}"#,
        );
        assert_eq!(timed_out_fraction(&all), 1.0);
        // A lognormal whose median is the timeout: half.
        let half = scenario(
            r#","executor":{"timeout":"2s"},"stripe":{"latency":{"p50":"2s","p99":"8s"}}"#,
        );
        assert!((timed_out_fraction(&half) - 0.5).abs() < 1e-9);
        // An exponential with mean = timeout: e^-1.
        let exp = scenario(
            r#","executor":{"timeout":"2s"},"stripe":{"latency":{"kind":"exponential","mean":"2s"}}"#,
        );
        assert!((timed_out_fraction(&exp) - (-1.0f64).exp()).abs() < 1e-9);
    }

    #[test]
    fn memory_counts_every_ticket_of_a_phase_the_pool_cannot_serve() {
        // 1/s for an hour at Stripe's 1 h latency on one connection: all 3,600 tickets may be
        // open at once, each with its two tries waiting in line (6 + 2 × 2.5 KB).
        let stuck = scenario(
            r#","stripe":{"latency":{"kind":"constant","value":"1h"}},"refunds_service":{"pool_size":1}"#,
        );
        let e = estimate(&stuck);
        assert_eq!(e.open_tickets, 3600.0);
        assert_eq!(e.requests_per_open_ticket, 2.0);
        assert!(
            (e.peak_mb - (12.0 + 3600.0 * 11.0 / 1024.0)).abs() < 1e-9,
            "{e:?}"
        );
        // The same rate on a pool that keeps up: tickets open for the timeout × 2 attempts.
        let e = estimate(&scenario(r#","humans":{"enabled":false}"#));
        assert_eq!(e.open_tickets, 16.0);
        // The 30-day run at 1 ticket/s (docs/performance.md) stays far inside both budgets.
        let text = r#"{"name":"month","horizon":"30d","arrivals":{"schedule":[{"duration":"30d","rate_per_s":1}]},"background_load":{"rate_per_s":2.5}}"#;
        let month = crate::scenario::load_text(text, "month.json", &[], &[], &Default::default())
            .expect("admitted");
        let e = estimate(&month);
        assert!(
            e.peak_mb < 100.0 && e.events < DEFAULT_MAX_EVENTS as f64,
            "{e:?}"
        );
    }

    /// Retries multiply the requests each open ticket keeps in flight: with Stripe slower than
    /// the timeout every try stays in flight (6 tries of 2.5 KB beside the ticket's 6 KB), with
    /// a fast Stripe only the share expected to time out. The CPU estimate counts the memory.
    #[test]
    fn memory_counts_the_requests_each_open_ticket_keeps_in_flight() {
        let slow = r#","humans":{"enabled":false},"refunds_service":{"pool_size":100000},"agent":{"retry":{"max_retries":5}},"stripe":{"latency":{"kind":"constant","value":"1h"}}"#;
        let e = estimate(&scenario(slow));
        assert_eq!(e.open_tickets, 3600.0);
        assert_eq!(e.requests_per_open_ticket, 6.0);
        assert!(
            (e.peak_mb - (12.0 + 3600.0 * 21.0 / 1024.0)).abs() < 1e-9,
            "{e:?}"
        );
        assert!(
            (e.cpu_seconds - (e.events / EVENTS_PER_CPU_SECOND + e.peak_mb / MB_PER_CPU_SECOND))
                .abs()
                < 1e-9
        );
        assert!(
            e.memory_drivers[0].0.contains("agent.retry.max_retries"),
            "{e:?}"
        );
        assert!(
            e.memory_drivers[0]
                .1
                .contains("about 6 requests in flight each"),
            "{e:?}"
        );
        let fast = estimate(&scenario(
            r#","humans":{"enabled":false},"agent":{"retry":{"max_retries":5}}"#,
        ));
        assert!(
            (fast.requests_per_open_ticket - 1.5).abs() < 1e-9,
            "{fast:?}"
        );
        // Without retries a ticket has one request, whatever Stripe's latency.
        let single = r#","humans":{"enabled":false},"refunds_service":{"pool_size":100000},"agent":{"retry":{"max_retries":0}},"stripe":{"latency":{"kind":"constant","value":"1h"}}"#;
        assert_eq!(estimate(&scenario(single)).requests_per_open_ticket, 1.0);
    }
}
