//! The text summary of one run.

use std::fmt::Write;
use std::time::SystemTime;

use crate::analysis::queueing::{oracle_rows, simulated_rows, PoolOracle};
use crate::history::clock_time;
use crate::invariants::{Metrics, Percentiles};
use crate::run::RunReport;
use crate::sim::SimTime;

/// How many duplicated ticket ids the summary lists.
pub(crate) const LISTED_DUPLICATES: usize = 10;

pub(crate) use crate::scenario::dollars;

fn pct(p: &Percentiles) -> String {
    format!(
        "p50 {:.0} ms · p99 {:.0} ms · max {:.0} ms",
        p.p50_ms, p.p99_ms, p.max_ms
    )
}

fn bound(min: Option<f64>, max: Option<f64>) -> String {
    match (min, max) {
        (Some(lo), Some(hi)) => format!("{lo} ≤ x ≤ {hi}"),
        (Some(lo), None) => format!("≥ {lo}"),
        (None, Some(hi)) => format!("≤ {hi}"),
        (None, None) => "unbounded".into(),
    }
}

/// The summary's lines: a key padded to 42 columns, then its value.
struct Rows(String);

impl Rows {
    fn row(&mut self, k: &str, v: String) {
        let _ = writeln!(self.0, "  {k:<42} {v}");
    }
}

/// Renders `r` as the aligned text summary printed by `refundsim run`. `origin` is the scenario's
/// clock origin (for alert times); `recon` is the reconciliation job's (interval, horizon) when it is
/// enabled (the summary says how often it ran, or that it never ran).
pub fn summary(
    r: &RunReport,
    origin: Option<SystemTime>,
    recon: Option<(std::time::Duration, std::time::Duration)>,
) -> String {
    summary_with_oracle(r, origin, recon, &[])
}

/// [`summary`] with the queueing oracle's rows (see [`crate::analysis::queueing::pool_oracle`])
/// after the simulated pool metrics, as `refundsim run` prints it.
pub(crate) fn summary_with_oracle(
    r: &RunReport,
    origin: Option<SystemTime>,
    recon: Option<(std::time::Duration, std::time::Duration)>,
    oracle: &[PoolOracle],
) -> String {
    let m = &r.metrics;
    let mut rows = Rows(String::new());
    rows.row(
        "scenario",
        format!("{} (seed {})", without_controls(&r.scenario), r.seed),
    );
    counts(&mut rows, m);
    stripe_and_latency(&mut rows, m);
    pool_queueing(&mut rows, m, oracle);
    rows.row("reconciliation", reconciliation(m, origin, recon));
    verdicts(&mut rows, r);
    where_to_look(&mut rows, r);
    rows.0
}

/// Tickets, calls, retries and what became of the money.
fn counts(rows: &mut Rows, m: &Metrics) {
    rows.row("tickets", m.tickets.to_string());
    if m.duplicate_deliveries > 0 {
        rows.row(
            "duplicate deliveries",
            format!(
                "{} (deduped by event id {})",
                m.duplicate_deliveries, m.deliveries_deduped
            ),
        );
    }
    rows.row("tool calls", m.tool_calls.to_string());
    rows.row("executor timeouts", m.executor_timeouts.to_string());
    rows.row("retries", m.retries.to_string());
    if m.breaker_rejections > 0 {
        rows.row(
            "refused by an open breaker",
            m.breaker_rejections.to_string(),
        );
    }
    rows.row(
        "escalations",
        format!("{} (manual refunds {})", m.escalations, m.manual_refunds),
    );
    rows.row("refunds created", m.refunds_created.to_string());
    if m.refunds_failed_after_200 > 0 {
        rows.row(
            "refunds failed after a 200",
            m.refunds_failed_after_200.to_string(),
        );
    }
    rows.row("duplicate-refund tickets", duplicates(m));
    rows.row("extra refunds", m.extra_refunds.to_string());
    rows.row("over-refund", dollars(m.over_refund_cents));
    rows.row("lost refunds", m.lost_refunds.to_string());
    rows.row("false failures", m.false_failures.to_string());
}

/// Duplicated tickets, by arrival phase when there are any.
fn duplicates(m: &Metrics) -> String {
    let phases: Vec<String> = m
        .duplicates_by_phase
        .iter()
        .map(|(p, n)| format!("{p} {n}"))
        .collect();
    if phases.is_empty() {
        m.duplicate_refund_tickets.to_string()
    } else {
        format!(
            "{} (by phase: {})",
            m.duplicate_refund_tickets,
            phases.join(", ")
        )
    }
}

/// Stripe's answers, latency percentiles and the pool's deepest queue.
fn stripe_and_latency(rows: &mut Rows, m: &Metrics) {
    rows.row(
        "stripe",
        format!(
            "replays {} · 409 {} · 400 {} · 429 {} · 5xx {} · no response {}",
            m.stripe_replays,
            m.stripe_409,
            m.stripe_400,
            m.stripe_429,
            m.stripe_500,
            m.stripe_no_response
        ),
    );
    rows.row("service response time", pct(&m.latency.tool_call));
    rows.row("pool wait", pct(&m.latency.pool_wait));
    rows.row("stripe latency", pct(&m.latency.stripe));
    rows.row("max pool queue depth", m.max_pool_queue_depth.to_string());
}

/// The pool's simulated mean wait, P(wait > t) and utilisation, then the oracle's inputs and
/// estimates.
fn pool_queueing(rows: &mut Rows, m: &Metrics, oracle: &[PoolOracle]) {
    let t = SimTime::from_nanos((m.pool_wait_threshold_ms * 1e6).round() as u64).as_duration();
    let simulated = simulated_rows(
        m.pool_wait_mean_ms,
        m.pool_wait_over_threshold_fraction,
        m.pool_utilisation,
        t,
    );
    for (k, v) in simulated
        .into_iter()
        .chain(oracle.iter().flat_map(oracle_rows))
    {
        rows.row(&k, v);
    }
}

/// Whether reconciliation ran (it runs at every multiple of its interval up to the horizon; an
/// interval longer than the horizon means it never ran) and, if it alerted, when first and how
/// late at worst (whole seconds). `recon` is (interval, horizon) when enabled.
fn reconciliation(
    m: &Metrics,
    origin: Option<SystemTime>,
    recon: Option<(std::time::Duration, std::time::Duration)>,
) -> String {
    let runs = recon.map(|(interval, horizon)| {
        horizon
            .as_nanos()
            .checked_div(interval.as_nanos())
            .unwrap_or(0)
    });
    match (runs, m.first_alert_ns) {
        (None, _) => "off (no alert possible)".into(),
        (Some(0), _) => {
            let (interval, horizon) = recon.unwrap_or_default();
            format!(
                "on, but never ran: its interval {} is longer than the horizon {} (no alert possible)",
                humantime::format_duration(interval),
                humantime::format_duration(horizon)
            )
        }
        (Some(n), None) => format!("on, ran {n} time{}, no alert", if n == 1 { "" } else { "s" }),
        (Some(_), Some(at)) => format!(
            "first alert at {} ({} tickets flagged in all; longest time from duplicate to alert {})",
            clock_time(origin, SimTime::from_nanos(at)),
            m.reconciliation_alerts,
            humantime::format_duration(
                SimTime::from_nanos(
                    m.max_time_to_alert_ns.unwrap_or(0) / 1_000_000_000 * 1_000_000_000
                )
                .as_duration()
            )
        ),
    }
}

/// Each invariant, then each `expect` bound, with its verdict.
fn verdicts(rows: &mut Rows, r: &RunReport) {
    for inv in &r.metrics.invariants {
        let v = if inv.holds {
            "holds".to_string()
        } else {
            format!(
                "VIOLATED ({}{})",
                inv.violations,
                inv.first_ticket
                    .map(|t| format!("; first ticket {t}"))
                    .unwrap_or_default()
            )
        };
        rows.row(&format!("invariant {}", inv.name), v);
    }
    for c in &r.causes {
        rows.row(
            &format!("why {}", c.invariant),
            without_controls(&c.text).into_owned(),
        );
    }
    for e in &r.expectations {
        rows.row(
            &format!("expect {}", e.metric),
            format!(
                "{} {} ({}){}",
                e.value,
                match e.verdict {
                    "failed" => "FAILED",
                    v => v,
                },
                bound(e.min, e.max),
                if e.over_seeds.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; over seeds {}: checked only by `refundsim check`",
                        e.over_seeds.join(", ")
                    )
                }
            ),
        );
    }
}

/// The first duplicated and incident-shaped tickets, the replay command, and how to print one
/// ticket's story.
fn where_to_look(rows: &mut Rows, r: &RunReport) {
    let m = &r.metrics;
    if !m.duplicated_ticket_ids.is_empty() {
        rows.row(
            "first duplicated tickets",
            first_ids(&m.duplicated_ticket_ids),
        );
    }
    if !r.incident_shaped_tickets.is_empty() {
        rows.row(
            "incident-shaped tickets",
            first_ids(&r.incident_shaped_tickets),
        );
    }
    rows.row("replay", r.replay.clone());
    if let Some(t) = r
        .incident_shaped_tickets
        .first()
        .or(m.duplicated_ticket_ids.first())
    {
        rows.row("one ticket's story", format!("{} --ticket {t}", r.replay));
    }
}

/// The first [`LISTED_DUPLICATES`] ids, space-separated.
fn first_ids(ids: &[u64]) -> String {
    let ids: Vec<String> = ids
        .iter()
        .take(LISTED_DUPLICATES)
        .map(u64::to_string)
        .collect();
    ids.join(" ")
}

/// `text` with control characters escaped (`\u{1b}`, `\n`), so a scenario's name cannot move
/// the terminal's cursor, colour it or break the summary's lines.
pub(crate) fn without_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_group_thousands() {
        assert_eq!(dollars(586_712), "$5,867.12");
        assert_eq!(dollars(5), "$0.05");
        assert_eq!(dollars(123_456_789), "$1,234,567.89");
    }

    #[test]
    fn reconciliation_says_whether_it_ran() {
        use std::time::Duration;
        let m = Metrics::default();
        let h = |s| Duration::from_secs(s);
        assert_eq!(reconciliation(&m, None, None), "off (no alert possible)");
        assert_eq!(
            reconciliation(&m, None, Some((h(5 * 3600), h(7200)))),
            "on, but never ran: its interval 5h is longer than the horizon 2h (no alert possible)"
        );
        assert_eq!(
            reconciliation(&m, None, Some((h(3600), h(7200)))),
            "on, ran 2 times, no alert"
        );
        assert_eq!(
            reconciliation(&m, None, Some((h(3600), h(3600)))),
            "on, ran 1 time, no alert"
        );
    }

    #[test]
    fn control_characters_in_a_name_are_escaped() {
        assert_eq!(without_controls("a\u{1b}[31mb\nc"), "a\\u{1b}[31mb\\nc");
        assert!(matches!(
            without_controls("carrier-outage"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
