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
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// Tickets opened before the horizon (Σ rate × phase time, or the recorded tickets).
    pub tickets: f64,
    /// Background requests before the horizon.
    pub background_requests: f64,
    /// Requests each ticket can make at most, relative to the incident's two (a call and one
    /// retry): the product of every retrying layer's tries and of duplicate deliveries (≥ 0.5).
    pub tries_factor: f64,
    /// Status probes expected per ticket: per try, [`TIMEOUT_FRACTION`] of tries time out and
    /// each probes `probe_max_wait / probe_interval` times (0 unless `on_timeout` probes).
    pub probes_per_ticket: f64,
    /// Engine events.
    pub events: f64,
    /// CPU seconds at [`EVENTS_PER_CPU_SECOND`].
    pub cpu_seconds: f64,
    /// Peak memory, MB: a fixed part plus the tickets open at once at the highest arrival rate
    /// (each open for the executor's timeout per model attempt, plus a human's pickup delay
    /// when humans take escalations).
    pub peak_mb: f64,
    /// What drives the estimate, largest first: (fields, what they contribute).
    pub drivers: Vec<(String, String)>,
}

/// The share of tries assumed to time out when estimating status probes: the incident's burst
/// times out about 3 % of its tool calls; 10 % leaves a margin without refusing a long run of a
/// probing policy.
pub const TIMEOUT_FRACTION: f64 = 0.1;
/// Engine events per status probe (its request, answer and the wait before the next).
pub const EVENTS_PER_PROBE: f64 = 3.0;

/// The tries one model attempt can make: the executor's retry, every added layer's retries and
/// the SDK's network retries multiply; with the fields responsible.
fn tries(s: &Scenario) -> (f64, Vec<String>) {
    let mut factor = 1.0f64;
    let mut fields = Vec::new();
    let model = f64::from(s.agent.retry.max_retries) + 1.0;
    factor *= model;
    if s.agent.retry.max_retries > 1 {
        fields.push("agent.retry.max_retries".to_string());
    }
    if let Some(r) = &s.executor.retry {
        factor *= f64::from(r.max_retries) + 1.0;
        if r.max_retries > 0 {
            fields.push("executor.retry.max_retries".to_string());
        }
    }
    for (name, layer) in &s.layers {
        let in_stack = s.stack.as_ref().is_none_or(|st| st.contains(name));
        if in_stack && layer.retries() > 0 {
            factor *= f64::from(layer.retries()) + 1.0;
            fields.push(format!("layers.{name}.max_retries"));
        }
    }
    let sdk = &s.refunds_service.stripe_client;
    if sdk.max_network_retries > 0 {
        factor *= f64::from(sdk.max_network_retries) + 1.0;
        fields.push("refunds_service.stripe_client.max_network_retries".to_string());
    }
    if s.deliveries.duplicate_probability > 0.0 {
        factor *= 1.0 + s.deliveries.duplicate_probability;
        fields.push("deliveries.duplicate_probability".to_string());
    }
    (factor, fields)
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
    let (tries_per_ticket, tries_fields) = tries(s);
    // The incident's constant already counts its two model attempts.
    let tries_factor = (tries_per_ticket / 2.0).max(0.5);
    let probes_per_try = if s.executor.on_timeout == super::config::OnTimeout::ProbeStatus {
        let interval = s.executor.probe_interval.as_secs_f64().max(1e-9);
        (s.executor.probe_max_wait.as_secs_f64() / interval)
            .ceil()
            .max(1.0)
    } else {
        0.0
    };
    let probes_per_ticket = tries_per_ticket * TIMEOUT_FRACTION * probes_per_try;
    let ticket_events = tickets * EVENTS_PER_TICKET * tries_factor;
    let probe_events = tickets * probes_per_ticket * EVENTS_PER_PROBE;
    let background_events = background_requests * EVENTS_PER_BACKGROUND_REQUEST;
    let events = ticket_events + probe_events + background_events;
    let mut drivers = vec![
        (
            tickets * EVENTS_PER_TICKET * tries_factor.min(1.0),
            if a.tickets.is_empty() {
                "arrivals.schedule, horizon".to_string()
            } else {
                "arrivals.tickets".to_string()
            },
            format!("about {} tickets", thousands(tickets)),
        ),
        (
            background_events,
            "background_load.rate_per_s, horizon".to_string(),
            format!(
                "about {} background requests",
                thousands(background_requests)
            ),
        ),
    ];
    if tries_factor > 1.0 {
        drivers.push((
            tickets * EVENTS_PER_TICKET * (tries_factor - 1.0),
            tries_fields.join(", "),
            format!(
                "up to {} requests per ticket (retries multiply across layers)",
                thousands(tries_per_ticket)
            ),
        ));
    }
    if probe_events > 0.0 {
        drivers.push((
            probe_events,
            "executor.probe_interval, executor.probe_max_wait".to_string(),
            format!(
                "up to {} status probes per timed-out try ({} probes in all if {:.0} % of tries time out)",
                thousands(probes_per_try),
                thousands(tickets * probes_per_ticket),
                TIMEOUT_FRACTION * 100.0
            ),
        ));
    }
    drivers.sort_by(|x, y| y.0.total_cmp(&x.0));
    let attempts = f64::from(s.agent.retry.max_retries) + 1.0;
    let mut open_for = s.executor.timeout.as_secs_f64() * attempts;
    if s.humans.enabled {
        open_for += s.humans.pickup_delay.median().as_secs_f64();
    }
    let open = (peak_rate * open_for).min(tickets);
    Estimate {
        tickets,
        background_requests,
        tries_factor,
        probes_per_ticket,
        events,
        cpu_seconds: events / EVENTS_PER_CPU_SECOND,
        peak_mb: (BASE_BYTES + open * BYTES_PER_OPEN_TICKET) / (1024.0 * 1024.0),
        drivers: drivers
            .into_iter()
            .filter(|d| d.0 > 0.0)
            .map(|(_, f, w)| (f, w))
            .collect(),
    }
}

/// Refuses a scenario whose estimate exceeds the budget, naming the fields that drive it
/// (largest first: the arrivals, background load, retries that multiply across layers, status
/// probes), the estimate and the way past it.
pub fn check_budget(s: &Scenario) -> Check {
    let limit = max_events();
    let e = estimate(s);
    if e.events <= limit as f64 {
        return Ok(());
    }
    let Some((first, _)) = e.drivers.first() else {
        return Ok(());
    };
    let path = first.split(", ").next().unwrap_or("horizon").to_string();
    let drivers: Vec<String> = e
        .drivers
        .iter()
        .map(|(fields, what)| format!("{what} ({fields})"))
        .collect();
    fail(
        &path,
        format!(
            "over the run budget: {} make about {} engine events (about {} of CPU, peak memory \
             at most about {:.0} MB); the budget is {} engine event{}. Raise it with \
             --max-events N if you mean it, or lower {}",
            drivers.join(", "),
            thousands(e.events),
            human_secs(e.cpu_seconds),
            e.peak_mb,
            thousands(limit as f64),
            if limit == 1 { "" } else { "s" },
            e.drivers[0].0,
        ),
    )
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
