//! The run budget: an estimate, from the scenario alone, of the engine events, CPU time and
//! memory of one run, and the limit a run must fit unless the user raises it (`--max-events`).
//!
//! It replaces a fixed ticket cap: a long horizon is fine (memory is flat in the horizon, see
//! `docs/performance.md`), so what is refused is only work far beyond what was asked for by
//! mistake, and the message says how much and how to go past it.

use std::sync::atomic::{AtomicU64, Ordering};

use super::config::Scenario;
use super::rules::{fail, Check};

/// Default budget: 300 million engine events per run (admits a 30-day horizon at 1 ticket/s
/// with the incident's background load, about 10^8 events).
pub const DEFAULT_MAX_EVENTS: u64 = 300_000_000;

/// Engine events per ticket used by the estimate, with a margin: the incident runs about 15 per
/// ticket, with its timeouts, retries and zombie calls.
pub const EVENTS_PER_TICKET: f64 = 20.0;
/// Engine events per background request: its arrival and the end of its hold (it runs as
/// engine callbacks, not as a task; a hand-off from the pool's line happens inside another
/// event). The incident measures 2.07.
pub const EVENTS_PER_BACKGROUND_REQUEST: f64 = 2.0;
/// Engine events per CPU second assumed by the time estimate: what the incident runs at on one
/// core of the 2-core machine `docs/performance.md` was measured on.
pub const EVENTS_PER_CPU_SECOND: f64 = 3.2e6;
/// Memory per open ticket (its facts, ledger row, charge, tasks), bytes; and the fixed part.
const BYTES_PER_OPEN_TICKET: f64 = 4096.0;
const BASE_BYTES: f64 = 12.0 * 1024.0 * 1024.0;

static MAX_EVENTS: AtomicU64 = AtomicU64::new(DEFAULT_MAX_EVENTS);

/// Sets the budget later loads check against (the CLI's `--max-events`; process-wide, it
/// admits or refuses a run and never changes one).
pub fn set_max_events(n: u64) {
    MAX_EVENTS.store(n, Ordering::Relaxed);
}

/// The budget loads check against now.
pub fn max_events() -> u64 {
    MAX_EVENTS.load(Ordering::Relaxed)
}

/// What one run of a scenario is expected to cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Tickets opened before the horizon (Σ rate × phase time, or the recorded tickets).
    pub tickets: f64,
    /// Background requests before the horizon.
    pub background_requests: f64,
    /// Engine events.
    pub events: f64,
    /// CPU seconds at [`EVENTS_PER_CPU_SECOND`].
    pub cpu_seconds: f64,
    /// Peak memory, MB: a fixed part plus the tickets open at once at the highest arrival rate
    /// (each open for the executor's timeout per model attempt, plus a human's pickup delay
    /// when humans take escalations).
    pub peak_mb: f64,
}

/// Estimates one run of `s`.
pub fn estimate(s: &Scenario) -> Estimate {
    let horizon = s.horizon.as_secs_f64();
    let a = &s.arrivals;
    let (tickets, peak_rate) = if a.tickets.is_empty() {
        let (mut start, mut n, mut peak) = (0.0f64, 0.0f64, 0.0f64);
        for p in &a.schedule {
            let end = start + p.duration.as_secs_f64();
            let within = (end.min(horizon) - start.min(horizon)).max(0.0);
            n += p.rate_per_s * within;
            if within > 0.0 {
                peak = peak.max(p.rate_per_s);
            }
            start = end;
        }
        (n, peak)
    } else {
        (
            a.tickets.len() as f64,
            a.tickets.len() as f64 / horizon.max(1.0),
        )
    };
    let background_requests = s.background_load.rate_per_s * horizon;
    let events = tickets * EVENTS_PER_TICKET + background_requests * EVENTS_PER_BACKGROUND_REQUEST;
    let attempts = f64::from(s.agent.retry.max_retries) + 1.0;
    let mut open_for = s.executor.timeout.as_secs_f64() * attempts;
    if s.humans.enabled {
        open_for += s.humans.pickup_delay.median().as_secs_f64();
    }
    let open = (peak_rate * open_for).min(tickets);
    Estimate {
        tickets,
        background_requests,
        events,
        cpu_seconds: events / EVENTS_PER_CPU_SECOND,
        peak_mb: (BASE_BYTES + open * BYTES_PER_OPEN_TICKET) / (1024.0 * 1024.0),
    }
}

/// Refuses a scenario whose estimate exceeds the budget, naming the field that drives it
/// (`arrivals.schedule` or `background_load.rate_per_s`), the estimate and the way past it.
pub fn check_budget(s: &Scenario) -> Check {
    let limit = max_events();
    let e = estimate(s);
    if e.events <= limit as f64 {
        return Ok(());
    }
    let tickets_drive =
        e.tickets * EVENTS_PER_TICKET >= e.background_requests * EVENTS_PER_BACKGROUND_REQUEST;
    let path = if tickets_drive {
        if a_recorded(s) {
            "arrivals.tickets"
        } else {
            "arrivals.schedule"
        }
    } else {
        "background_load.rate_per_s"
    };
    fail(
        path,
        format!(
            "over the run budget: about {} tickets and {} background requests make about \
             {} engine events (about {} of CPU, peak memory at most about {:.0} MB); the budget is \
             {} engine event{}. Raise it with --max-events N if you mean it, or lower the rates \
             or the horizon",
            thousands(e.tickets),
            thousands(e.background_requests),
            thousands(e.events),
            human_secs(e.cpu_seconds),
            e.peak_mb,
            thousands(limit as f64),
            if limit == 1 { "" } else { "s" },
        ),
    )
}

fn a_recorded(s: &Scenario) -> bool {
    !s.arrivals.tickets.is_empty()
}

/// `1,234,567`: an estimate rounded to an integer, with thousands separators (saturating at
/// `u64::MAX`; a non-finite estimate reads as that).
fn thousands(x: f64) -> String {
    let n = if x.is_finite() && x > 0.0 {
        x.round() as u64
    } else if x > 0.0 {
        u64::MAX
    } else {
        0
    };
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `42 s`, `12 min`, `3.5 h` — an estimate, so one unit and no false precision.
fn human_secs(s: f64) -> String {
    if s < 1.0 {
        "under 1 s".to_string()
    } else if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}
