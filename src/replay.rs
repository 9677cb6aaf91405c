//! Comparing a run with the recording its scenario replays (`replay` section): ticket by
//! ticket, refunds and tool calls, and for each recorded instant (tool call, result, model
//! decision, service response) the replayed one.
//!
//! [`ReplayObserver`] watches the event stream for the recorded tickets only (memory grows with
//! the recording, not the run); [`compare`] lines it up with the recording. An exact replay
//! (no policy, no `--set`) matches when every ticket has its recorded number of refunds and tool
//! calls and results, and every instant is within [`TOLERANCE_NS`] (plus a redacted time's own
//! tolerance) of the recorded one; a counterfactual reads the same rows as "recorded vs what the
//! policy would have done".

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::SystemTime;

use serde::Serialize;

use crate::history::clock_time;
use crate::history::{Event, EventKind, Outcome};
use crate::scenario::{RecordedCall, RecordedTicket, Replay};
use crate::sim::SimTime;
use crate::text::plural;

/// How far a replayed instant may be from the recorded one, ns (1 ms: logs print milliseconds).
pub(crate) const TOLERANCE_NS: u64 = 1_000_000;

/// What a run did on one model attempt of a recorded ticket.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Attempt {
    call: Option<SimTime>,
    result: Option<(SimTime, &'static str)>,
    timed_out: bool,
    decision: Option<SimTime>,
    response: Option<SimTime>,
}

/// What a run did on one recorded ticket.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Seen {
    attempts: BTreeMap<u32, Attempt>,
    refunds: u32,
}

/// Watches a run's events for the tickets a recording holds.
#[derive(Debug, Default)]
pub struct ReplayObserver {
    tickets: BTreeMap<u64, Seen>,
    findings: Vec<RecordingFinding>,
}

/// A recorded provider answer that Stripe's rules would have given otherwise: in an exact
/// replay the run follows the recording, and this is reported as a finding about the
/// recording (a provider that does not keep Stripe's idempotency rules, or a recording that
/// misreads an idempotent replay). From
/// [`EventKind::RecordingDisagrees`](crate::history::EventKind::RecordingDisagrees).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RecordingFinding {
    /// The ticket.
    pub ticket: u64,
    /// The ticket's id as recorded, when it was not a number (`"T-100001"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ticket_label: Option<String>,
    /// The request, `TICKET/ATTEMPT/TRY`.
    pub request: String,
    /// What the recording says happened.
    pub recorded: String,
    /// What Stripe's rules would have answered.
    pub provider_rules: String,
}

impl ReplayObserver {
    /// An observer of `replay`'s tickets.
    pub fn new(replay: &Replay) -> Self {
        ReplayObserver {
            findings: Vec::new(),
            tickets: replay
                .tickets
                .keys()
                .map(|&t| (t, Seen::default()))
                .collect(),
        }
    }

    /// One event of the run.
    pub fn record(&mut self, e: &Event) {
        let Some(seen) = e.ticket.and_then(|t| self.tickets.get_mut(&t)) else {
            return;
        };
        if let EventKind::RecordingDisagrees {
            request,
            recorded,
            rules,
        } = &e.kind
        {
            self.findings.push(RecordingFinding {
                ticket: e.ticket.unwrap_or_default(),
                ticket_label: None,
                request: request.clone(),
                recorded: recorded.clone(),
                provider_rules: rules.clone(),
            });
            return;
        }
        if let EventKind::RefundCreated { moves_money, .. } = &e.kind {
            seen.refunds += u32::from(*moves_money);
            return;
        }
        let Some(a) = e.attempt else { return };
        let at = e.t_ns;
        let attempt = seen.attempts.entry(a).or_default();
        match &e.kind {
            EventKind::ToolCall { .. } => {
                attempt.call.get_or_insert(at);
            }
            EventKind::ExecutorTimeout { .. } => attempt.timed_out = true,
            EventKind::ToolResult { outcome, .. } => {
                // A timed-out call that ends ok (a status probe found its refund) is ok, as
                // the tool result the model read says.
                let kind = match (outcome, attempt.timed_out) {
                    (Outcome::Ok, _) => "ok",
                    (_, true) => "timeout",
                    (Outcome::Fail | Outcome::Info, _) => "fail",
                };
                attempt.result.get_or_insert((at, kind));
            }
            EventKind::ModelDecision { .. } => {
                attempt.decision.get_or_insert(at);
            }
            EventKind::ServiceResponse { .. } => {
                attempt.response.get_or_insert(at);
            }
            _ => {}
        }
    }
}

/// One compared fact of one model attempt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Row {
    /// Model attempt (0 = the first tool call).
    pub attempt: u32,
    /// `tool_call`, `tool_result`, `result`, `model_decision` or `service_response`.
    pub what: &'static str,
    /// The recorded instant, ns of virtual time; `null` when not recorded or not an instant.
    pub recorded_ns: Option<u64>,
    /// The replayed instant, ns; `null` when it did not happen or is not an instant.
    pub replayed_ns: Option<u64>,
    /// For `result`: the recorded and replayed kinds (`ok`, `fail`, `timeout`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_value: Option<String>,
    /// See `recorded_value`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed_value: Option<String>,
    /// The tolerance it was held to, ns: [`TOLERANCE_NS`] plus the recording's own.
    pub tolerance_ns: u64,
    /// Whether it matches.
    pub ok: bool,
}

/// One recorded ticket, recorded vs replayed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TicketComparison {
    /// Ticket id.
    pub ticket: u64,
    /// The ticket id as recorded, when it was not a number (`"T-100001"`; see
    /// `replay.ticket_labels`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ticket_label: Option<String>,
    /// Refunds the recording says the ticket got.
    pub recorded_refunds: u32,
    /// Where the recorded count comes from: `refund export` (the provider's export or list),
    /// `provider requests` (2xx answers to refund creates in the provider's spans) or `tool
    /// results` (distinct refund ids the agent was given).
    pub recorded_refunds_from: String,
    /// Refunds (that moved money) the run created for it.
    pub replayed_refunds: u32,
    /// Tool calls recorded.
    pub recorded_tool_calls: u32,
    /// Tool calls the run made.
    pub replayed_tool_calls: u32,
    /// Each recorded fact against the run.
    pub rows: Vec<Row>,
}

impl TicketComparison {
    /// The ticket as recorded: its label, else its number.
    pub fn shown(&self) -> String {
        self.ticket_label
            .clone()
            .unwrap_or_else(|| self.ticket.to_string())
    }

    /// Whether refunds, tool calls and every row match.
    pub fn matches(&self) -> bool {
        self.recorded_refunds == self.replayed_refunds
            && self.recorded_tool_calls == self.replayed_tool_calls
            && self.rows.iter().all(|r| r.ok)
    }
}

/// A run against its recording.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// The files the recording came from.
    pub sources: Vec<String>,
    /// Tickets whose refund count differs from the recording.
    pub tickets_with_other_refunds: u64,
    /// Rows (recorded facts) that differ.
    pub rows_differing: u64,
    /// Whether everything matches: the replay is exact.
    pub matches: bool,
    /// Recorded refunds over all tickets.
    pub recorded_refunds: u64,
    /// Refunds the run created for the recorded tickets.
    pub replayed_refunds: u64,
    /// Per ticket, ascending.
    pub tickets: Vec<TicketComparison>,
    /// Recorded facts the scenario replaced rather than replayed (a policy's key mode over the
    /// recorded keys, a pool counterfactual's scaled waits), one sentence each; empty in an
    /// exact replay. See [`replaced_facts`].
    pub replaced: Vec<String>,
    /// Recorded provider answers Stripe's rules would have given otherwise, in the order the
    /// run met them; the exact replay followed the recording. Empty in a counterfactual
    /// (Stripe's rules decide there).
    pub recording_findings: Vec<RecordingFinding>,
}

fn row(
    attempt: u32,
    what: &'static str,
    recorded: Option<u64>,
    replayed: Option<SimTime>,
    tolerance: u64,
) -> Option<Row> {
    let recorded = recorded?;
    let replayed = replayed.map(SimTime::as_nanos);
    let ok = replayed.is_some_and(|r| r.abs_diff(recorded) <= tolerance);
    Some(Row {
        attempt,
        what,
        recorded_ns: Some(recorded),
        replayed_ns: replayed,
        recorded_value: None,
        replayed_value: None,
        tolerance_ns: tolerance,
        ok,
    })
}

fn ns(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Lines the run (`seen`, from a [`ReplayObserver`] of that run) up with `replay`.
pub fn compare(replay: &Replay, seen: ReplayObserver) -> Comparison {
    let tickets: Vec<TicketComparison> = replay
        .tickets
        .iter()
        .map(|(&id, rec)| {
            let got = seen.tickets.get(&id).cloned().unwrap_or_default();
            ticket_comparison(replay, id, rec, &got)
        })
        .collect();
    Comparison {
        sources: replay.sources.clone(),
        tickets_with_other_refunds: tickets
            .iter()
            .filter(|t| t.recorded_refunds != t.replayed_refunds)
            .count() as u64,
        rows_differing: tickets
            .iter()
            .flat_map(|t| &t.rows)
            .filter(|r| !r.ok)
            .count() as u64,
        matches: tickets.iter().all(TicketComparison::matches),
        recorded_refunds: tickets.iter().map(|t| u64::from(t.recorded_refunds)).sum(),
        replayed_refunds: tickets.iter().map(|t| u64::from(t.replayed_refunds)).sum(),
        tickets,
        replaced: Vec::new(),
        recording_findings: seen
            .findings
            .into_iter()
            .map(|f| labelled(f, &replay.ticket_labels))
            .collect(),
    }
}

/// Recorded ticket `id` (`rec`) against what the run did on it (`got`): refunds, tool calls,
/// and a row per recorded fact of each attempt.
fn ticket_comparison(
    replay: &Replay,
    id: u64,
    rec: &RecordedTicket,
    got: &Seen,
) -> TicketComparison {
    let mut rows = Vec::new();
    for (i, call) in rec.calls.iter().enumerate() {
        let a = u32::try_from(i).unwrap_or(u32::MAX);
        let r = got.attempts.get(&a).cloned().unwrap_or_default();
        rows.extend(attempt_rows(a, call, &r));
    }
    let replayed_tool_calls = got.attempts.values().filter(|a| a.call.is_some()).count();
    TicketComparison {
        ticket: id,
        ticket_label: replay.ticket_labels.get(&id).cloned(),
        recorded_refunds: rec.refunds,
        recorded_refunds_from: rec.refunds_from.clone(),
        replayed_refunds: got.refunds,
        recorded_tool_calls: u32::try_from(rec.calls.len()).unwrap_or(u32::MAX),
        replayed_tool_calls: u32::try_from(replayed_tool_calls).unwrap_or(u32::MAX),
        rows,
    }
}

/// The rows of model attempt `a`: each instant the recording has (tool call, tool result,
/// model decision, service response; the last within the recording's redaction tolerance
/// too) and the result's kind, against what the run did (`r`).
fn attempt_rows(a: u32, call: &RecordedCall, r: &Attempt) -> Vec<Row> {
    let mut rows = Vec::new();
    rows.extend(row(a, "tool_call", Some(ns(call.at)), r.call, TOLERANCE_NS));
    rows.extend(row(
        a,
        "tool_result",
        call.result_at.map(ns),
        r.result.map(|x| x.0),
        TOLERANCE_NS,
    ));
    if let Some(kind) = &call.result {
        let replayed = r.result.map(|x| x.1.to_string());
        rows.push(Row {
            attempt: a,
            what: "result",
            recorded_ns: None,
            replayed_ns: None,
            ok: replayed.as_deref() == Some(kind.as_str()),
            recorded_value: Some(kind.clone()),
            replayed_value: replayed,
            tolerance_ns: 0,
        });
    }
    rows.extend(row(
        a,
        "model_decision",
        call.decision_at.map(ns),
        r.decision,
        TOLERANCE_NS,
    ));
    rows.extend(row(
        a,
        "service_response",
        call.response_at.map(ns),
        r.response,
        TOLERANCE_NS + ns(call.response_tolerance),
    ));
    rows
}

/// Finding `f` with its ticket's text id from `labels` (a recording's `replay.ticket_labels`),
/// in its request too (`T-7/0/1`), when the ticket has one.
fn labelled(mut f: RecordingFinding, labels: &BTreeMap<u64, String>) -> RecordingFinding {
    if let Some(label) = labels.get(&f.ticket) {
        if let Some((_, rest)) = f.request.split_once('/') {
            f.request = format!("{label}/{rest}");
        }
        f.ticket_label = Some(label.clone());
    }
    f
}

/// The recorded facts `sc` does not replay as recorded, because its settings differ from the
/// recording's: the `Idempotency-Key` of recorded requests when `refunds_service.
/// idempotency_key` is not the mode the recording was imported with (`replay.key_mode`), and
/// the recorded waits for a connection when `refunds_service.pool_size` is not the recorded
/// one (scaled; see [`crate::scenario::Replay::wait_scale`]).
pub(crate) fn replaced_facts(sc: &crate::scenario::Scenario) -> Vec<String> {
    let Some(r) = &sc.replay else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mode = sc.refunds_service.idempotency_key;
    if let Some(recorded) = r.key_mode.filter(|m| *m != mode) {
        let sent = r
            .requests
            .values()
            .filter(|q| matches!(q.idempotency_key, Some(Some(_))))
            .count();
        let absent = r
            .requests
            .values()
            .filter(|q| matches!(q.idempotency_key, Some(None)))
            .count();
        let unsaid = r.requests.len() - sent - absent;
        out.push(format!(
            "Idempotency-Key: the policy's refunds_service.idempotency_key = {} replaces the \
             recording's (imported under {}; of {}, {sent} recorded a key, {absent} recorded \
             none, {unsaid} did not say)",
            key_mode_name(mode),
            key_mode_name(recorded),
            plural(r.requests.len(), "recorded request", "recorded requests")
        ));
    }
    let pool = sc.refunds_service.pool_size;
    if pool != r.pool_size {
        let overhead = sc.refunds_service.overhead;
        if let (Some(cal), Ok(factor)) =
            (r.pool_calibration(overhead), r.wait_scale(pool, overhead))
        {
            out.push(format!(
                "the pool: the recorded waits for a connection (mean {:.3} s at the recorded pool \
                 of {}, an offered load of {:.2} Erlangs) are scaled by {} for a pool of \
                 {pool} (Erlang C's ratio of mean waits, the recorded traffic kept)",
                cal.mean_wait_s,
                r.pool_size,
                cal.offered_load,
                if factor != 0.0 && factor < 1e-3 {
                    format!("{factor:.1e}")
                } else {
                    format!("{factor:.4}")
                }
            ));
        }
    }
    out
}

fn key_mode_name(m: crate::scenario::KeyMode) -> &'static str {
    match m {
        crate::scenario::KeyMode::None => "none",
        crate::scenario::KeyMode::PerAttempt => "per_attempt",
        crate::scenario::KeyMode::PerTicket => "per_ticket",
    }
}

fn when(ns: Option<u64>, origin: Option<SystemTime>) -> String {
    ns.map_or_else(
        || "—".to_string(),
        |t| clock_time(origin, SimTime::from_nanos(t)),
    )
}

/// The exact replay's text: per ticket, refunds and tool calls, then every recorded instant
/// with the replayed one and the difference; a verdict line last.
pub fn render_exact(c: &Comparison, origin: Option<SystemTime>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "replay of {}", c.sources.join(", "));
    for t in &c.tickets {
        let _ = writeln!(
            out,
            "ticket {}: refunds recorded {} ({}), replayed {}; tool calls recorded {}, replayed {}",
            t.shown(),
            t.recorded_refunds,
            t.recorded_refunds_from,
            t.replayed_refunds,
            t.recorded_tool_calls,
            t.replayed_tool_calls
        );
        for r in &t.rows {
            let _ = writeln!(out, "{}", exact_row(r, origin));
        }
    }
    if !c.recording_findings.is_empty() {
        let _ = writeln!(
            out,
            "findings about the recording: Stripe's rules would have answered {} otherwise; \
             the replay follows the recording (requests as TICKET/ATTEMPT/TRY: model attempt \
             and SDK try from 0)",
            plural(c.recording_findings.len(), "request", "requests")
        );
        for f in &c.recording_findings {
            let _ = writeln!(
                out,
                "  request {}: recorded {}; Stripe's rules: {}",
                f.request, f.recorded, f.provider_rules
            );
        }
    }
    let _ = writeln!(
        out,
        "{}: {} of {} with other refunds, {} (tolerance {} ms)",
        if c.matches {
            "replay matches the recording"
        } else {
            "REPLAY DIFFERS from the recording"
        },
        c.tickets_with_other_refunds,
        plural(c.tickets.len(), "ticket", "tickets"),
        if c.rows_differing == 1 {
            "1 recorded fact differs".to_string()
        } else {
            format!("{} recorded facts differ", c.rows_differing)
        },
        TOLERANCE_NS / 1_000_000
    );
    out
}

/// One recorded fact of the exact replay's text: its attempt and name, the recorded and the
/// replayed value (an instant as a clock time from `origin`, with their difference in ms and
/// any redaction tolerance), and whether they agree.
fn exact_row(r: &Row, origin: Option<SystemTime>) -> String {
    let verdict = if r.ok { "ok" } else { "DIFFERS" };
    if let Some(v) = &r.recorded_value {
        let got = r.replayed_value.as_deref().unwrap_or("—");
        return format!(
            "  attempt {} {:<16} {:>12}  {:>12}  {:>12}  {verdict}",
            r.attempt, r.what, v, got, ""
        );
    }
    let diff = match (r.recorded_ns, r.replayed_ns) {
        (Some(a), Some(b)) => format!("{:+.3} ms", (b as f64 - a as f64) / 1e6),
        _ => "—".to_string(),
    };
    let tol = if r.tolerance_ns > TOLERANCE_NS {
        format!(" (±{:.1} ms: redacted digits)", r.tolerance_ns as f64 / 1e6)
    } else {
        String::new()
    };
    format!(
        "  attempt {} {:<16} {:>12}  {:>12}  {:>12}  {verdict}{tol}",
        r.attempt,
        r.what,
        when(r.recorded_ns, origin),
        when(r.replayed_ns, origin),
        diff
    )
}

/// The counterfactual's text: the recorded facts the policy replaced, then per ticket,
/// recorded vs counterfactual refunds and tool calls.
pub fn render_counterfactual(c: &Comparison) -> String {
    let mut out = String::new();
    if !c.replaced.is_empty() {
        let _ = writeln!(out, "recorded facts this policy replaced:");
        for r in &c.replaced {
            let _ = writeln!(out, "  - {r}");
        }
    }
    let _ = writeln!(
        out,
        "{:>10}  {:>17}  {:>23}  {:>19}  {:>25}",
        "ticket",
        "recorded refunds",
        "counterfactual refunds",
        "recorded tool calls",
        "counterfactual tool calls"
    );
    for t in &c.tickets {
        let _ = writeln!(
            out,
            "{:>10}  {:>17}  {:>23}  {:>19}  {:>25}",
            t.shown(),
            t.recorded_refunds,
            t.replayed_refunds,
            t.recorded_tool_calls,
            t.replayed_tool_calls
        );
    }
    let dup = |f: &dyn Fn(&TicketComparison) -> u32| c.tickets.iter().filter(|t| f(t) > 1).count();
    let _ = writeln!(
        out,
        "refunds: recorded {}, counterfactual {}; tickets refunded more than once: recorded {}, counterfactual {}",
        c.recorded_refunds,
        c.replayed_refunds,
        dup(&|t| t.recorded_refunds),
        dup(&|t| t.replayed_refunds)
    );
    out
}
