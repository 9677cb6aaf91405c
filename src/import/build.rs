//! Recording + base scenario → the replay scenario: `arrivals.tickets`, `clock_origin`, the
//! executor timeout the recording states, and the `replay` section (see
//! [`crate::scenario::replay`]); everything the recording lacks comes from the base.
//!
//! The rules, in the order applied (each is stated in `docs/import.md`):
//! - Only calls of the refund tool count; a ticket's calls in time order are its model attempts
//!   0, 1, ….
//! - Virtual time 0 (`clock_origin`) is the earliest recorded tool call or provider request,
//!   less one second, on a whole second.
//! - A ticket opens `agent.call_overhead` before its first tool call, with a think time of 0;
//!   a retry's think time is what puts its call at the recorded instant after the previous
//!   result — the executor's timeout for a timed-out call, the recorded result otherwise.
//! - A provider request's time to reach the provider is from the service receiving the call
//!   (its SERVER span, else the tool call) to the request; its latency, status and
//!   `Idempotency-Key` are as recorded. A recording without provider requests (a tool log)
//!   gives only the service's response time: the provider's latency is taken as the smaller of
//!   that time and the median of the base's provider latency (its `stripe.latency_choices`
//!   when set, as the run draws them, else `stripe.latency`), the rest as the time to reach it.
//! - An error or a lost answer created a refund only when the refund export lists, for that
//!   ticket, a refund no 2xx answer returned, created between one second before the request
//!   and one second after its answer; in order of their answers, each such request takes the
//!   refund created nearest its answer.
//! - A ticket's recorded refunds: the export's refunds for it that moved money (`succeeded`,
//!   `pending`, `requires_action`) when an export was imported, else the distinct refund ids in
//!   successful results and service responses.
//! - The charge is not recorded: it is taken to hold every recorded refund and one more
//!   (amount × (refunds + 1)), so a counterfactual's extra retry can still over-refund.

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use super::fields::plural;
use super::recording::{ProviderRequestRec, Recording, TicketRef, ToolCallRec, UnixNs, Warning};
use super::{ImportError, ImportOptions, Source};
use crate::scenario::KeyMode;
use crate::scenario::MAX_CENTS;
use crate::scenario::{
    LatencyDist, OutsideRefund, RecordedCall, RecordedRequest, RecordedTicket, Replay, RequestKey,
    Scenario, TicketSpec,
};

/// A distribution fitted to recorded durations, and how it compares with them.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    /// What was fitted (`provider latency`, `time to reach the provider`).
    pub what: String,
    /// The scenario field it was written to.
    pub field: String,
    /// How many recorded samples.
    pub samples: usize,
    /// The distribution written.
    pub dist: LatencyDist,
    /// (percentile, recorded ms (nearest rank), fitted ms) rows for p50, p90, p99; empty when
    /// fewer than two samples were recorded.
    pub rows: Vec<(u32, f64, f64)>,
    /// What was done when there were too few samples to fit.
    pub note: Option<String>,
}

/// A fact the replay needs that the recording does not hold, and what the base scenario
/// supplies instead: what an agent-side trace (LangSmith, Langfuse, the OpenAI Agents SDK)
/// cannot say about the provider, or a log about the model's decisions.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Drawn {
    /// The fact: `provider requests`, `the service's answers`, `Idempotency-Key`,
    /// `executor timeout`, `model decisions`.
    pub fact: String,
    /// What the replay uses instead, from the base scenario.
    pub from_base: String,
}

/// What `import` tells the user besides the scenario.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportReport {
    /// Tickets, tool calls and provider requests imported.
    pub tickets: usize,
    /// Tool calls imported.
    pub tool_calls: usize,
    /// Provider requests imported (recorded, or derived from a log's response times).
    pub provider_requests: usize,
    /// Refunds in the export.
    pub exported_refunds: usize,
    /// Fits of the distributions used for requests that were never recorded.
    pub fits: Vec<Fit>,
    /// The facts drawn from the base scenario instead of recorded, in a fixed order (executor
    /// timeout, model decisions, provider requests, the service's answers, Idempotency-Key);
    /// empty when the recording holds them all.
    pub drawn_from_base: Vec<Drawn>,
    /// Warnings from the readers and the builder.
    pub warnings: Vec<Warning>,
}

fn since(origin: UnixNs, at: UnixNs) -> Duration {
    Duration::from_nanos(u64::try_from(at.saturating_sub(origin)).unwrap_or(0))
}

fn moves_money(status: &str) -> bool {
    matches!(status, "succeeded" | "pending" | "requires_action")
}

/// z-scores of the standard normal at 0.9 and 0.99.
const Z90: f64 = 1.281_551_565_5;
const Z99: f64 = 2.326_347_874;

fn nearest_rank(sorted: &[Duration], q: f64) -> Duration {
    let n = sorted.len();
    let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
    sorted[rank - 1]
}

/// A lognormal by the recorded median and 99th percentile (nearest rank), with p50/p90/p99 rows;
/// a constant with one sample; `fallback` with none.
fn fit(what: &str, field: &str, samples: &[Duration], fallback: LatencyDist) -> Fit {
    // A distribution's values are > 0: a recorded 0 (a request sent the instant the call was
    // made) counts as 1 µs.
    let mut sorted: Vec<Duration> = samples
        .iter()
        .map(|d| (*d).max(Duration::from_micros(1)))
        .collect();
    sorted.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    match sorted.len() {
        0 => Fit {
            what: what.into(),
            field: field.into(),
            samples: 0,
            dist: fallback.clone(),
            rows: Vec::new(),
            note: Some(format!(
                "none recorded: {} is kept",
                serde_json::to_string(&fallback).unwrap_or_default()
            )),
        },
        1 => Fit {
            what: what.into(),
            field: field.into(),
            samples: 1,
            dist: LatencyDist::constant(sorted[0]),
            rows: Vec::new(),
            note: Some(format!(
                "one recorded ({:.1} ms): a constant",
                ms(sorted[0])
            )),
        },
        n => {
            let p50 = nearest_rank(&sorted, 0.5);
            let p99 = nearest_rank(&sorted, 0.99).max(p50);
            let (l50, l99) = (ms(p50).max(1e-6).ln(), ms(p99).max(1e-6).ln());
            let sigma = (l99 - l50) / Z99;
            let fitted = |z: f64| (l50 + sigma * z).exp();
            Fit {
                what: what.into(),
                field: field.into(),
                samples: n,
                dist: LatencyDist::new(p50, p99),
                rows: vec![
                    (50, ms(p50), fitted(0.0)),
                    (90, ms(nearest_rank(&sorted, 0.9)), fitted(Z90)),
                    (99, ms(p99), fitted(Z99)),
                ],
                note: (n < 20)
                    .then(|| format!("only {n} recorded: the tail of the fit is a guess")),
            }
        }
    }
}

/// The error for a ticket whose amount is recorded nowhere: `first`, its first tool call, at
/// its own file, line and field path, with the arguments it had and the flag to use.
fn no_amount(label: &TicketRef, first: &ToolCallRec, opts: &ImportOptions) -> ImportError {
    let seen = first
        .amount_missing
        .as_deref()
        .map_or_else(String::new, |s| format!("{s}; "));
    ImportError {
        at: first.source.clone(),
        message: format!(
            "ticket {label}: no amount recorded: {seen}expected an amount argument {} (from the \
             tool definition and the common names), or a refund of the ticket in a refund \
             export: name it with --amount-field NAME, or give the tool's definition with \
             --tool-definition FILE",
            opts.arguments.amount_list()
        ),
    }
}

/// The warning for a ticket whose tool calls ask for different amounts (a model that changed
/// the amount on its retry, or two tickets' calls recorded under one id), at the first call
/// that differs from the first amount; `None` when they agree. The replay refunds the first
/// call's amount on every attempt.
fn different_amounts(label: &TicketRef, calls: &[&ToolCallRec]) -> Option<Warning> {
    let mut amounts: Vec<(u64, usize)> = Vec::new();
    for (attempt, c) in calls.iter().enumerate() {
        if let Some(a) = c
            .amount_cents
            .filter(|a| !amounts.iter().any(|(x, _)| x == a))
        {
            amounts.push((a, attempt));
        }
    }
    if amounts.len() < 2 {
        return None;
    }
    let (first, _) = amounts[0];
    let (_, at) = amounts[1];
    let listed: Vec<String> = amounts
        .iter()
        .map(|(a, n)| format!("{a} cents (attempt {n})"))
        .collect();
    Some(Warning {
        source: calls[at].source.clone(),
        message: format!(
            "ticket {label}: its tool calls ask for different amounts, {}; the replay refunds \
             the first, {first} cents, on every attempt",
            match listed.split_last() {
                Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
                None => String::new(),
            }
        ),
    })
}

/// A tool call's recorded instants in order: its result, decision and service response come
/// after the call, the decision after the result.
fn check_order(c: &ToolCallRec) -> Result<(), ImportError> {
    let bad = |what: &str, at: i64, after: &str, than: i64| {
        ImportError {
        at: c.source.clone(),
        message: format!(
            "ticket {}: the {what} is {:.3} s before the {after}: expected recorded instants in order",
            c.ticket,
            (than - at) as f64 / 1e9
        ),
    }
    };
    if let Some(r) = c.result.as_ref().filter(|r| r.at.at < c.at.at) {
        return Err(bad("tool result", r.at.at, "tool call", c.at.at));
    }
    if let Some(s) = c.service_response.as_ref().filter(|s| s.at.at < c.at.at) {
        return Err(bad("service response", s.at.at, "tool call", c.at.at));
    }
    if let (Some(d), Some(r)) = (c.decision_at, &c.result) {
        if d.at < r.at.at {
            return Err(bad("model decision", d.at, "tool result", r.at.at));
        }
    }
    Ok(())
}

/// The refunds the provider's side records for one ticket's requests: each 2xx answer to a
/// refund create is a created refund (the semantic conventions record no response body, so no
/// refund id is needed), except one that repeats an earlier 2xx's refund id or, without ids,
/// its `Idempotency-Key` (Stripe replays the saved answer of a reused key: no new refund).
/// `None` when no request of the ticket is recorded.
fn provider_refunds<'a>(
    requests: impl Iterator<Item = &'a ProviderRequestRec>,
    assumed: KeyMode,
) -> Option<usize> {
    let mut any = false;
    let created = creating_requests(requests.inspect(|_| any = true), assumed);
    any.then_some(created.len())
}

fn is_2xx(status: Option<u16>) -> bool {
    status.is_some_and(|s| (200..300).contains(&s))
}

/// The `Idempotency-Key` a request carried: the recorded one (or none, recorded absent), else,
/// where the recording does not say, the one the replay sends under `assumed` (the base's
/// `refunds_service.idempotency_key`): one per ticket, or one per model attempt.
fn effective_key(r: &ProviderRequestRec, assumed: KeyMode) -> Option<String> {
    match &r.idempotency_key {
        Some(k) => k.clone(),
        None => match assumed {
            KeyMode::None => None,
            KeyMode::PerTicket => Some("(the ticket's key)".to_string()),
            KeyMode::PerAttempt => r.attempt.map(|a| format!("(attempt {a}'s key)")),
        },
    }
}

/// Which of one ticket's requests (in any order; the answer is in the same order) are 2xx
/// answers that return an earlier 2xx's refund: the same refund id, or without ids the same
/// `Idempotency-Key` (Stripe replays the saved answer of a reused key). Earlier means sent
/// earlier (ties in source order). A failed request whose `made` flag is set (the export shows
/// it made a refund) holds its key as a 2xx does. Such a request made no refund: it is imported with
/// `commits: false`, and [`provider_refunds`] does not count it.
fn repeats(requests: &[&ProviderRequestRec], made: &[bool], assumed: KeyMode) -> Vec<bool> {
    let mut order: Vec<usize> = (0..requests.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (requests[a], requests[b]);
        (a.sent.at, &a.source).cmp(&(b.sent.at, &b.source))
    });
    let mut seen = std::collections::BTreeSet::new();
    let mut out = vec![false; requests.len()];
    for k in order {
        let r = requests[k];
        if !is_2xx(r.status) {
            // A failed request that made a refund (the export says so) holds its key.
            if made.get(k).copied().unwrap_or(false) {
                if let Some(key) = effective_key(r, assumed) {
                    seen.insert(format!("key {key}"));
                }
            }
            continue;
        }
        out[k] = match (&r.refund_id, effective_key(r, assumed)) {
            (Some(id), _) => !seen.insert(format!("id {id}")),
            (None, Some(key)) => !seen.insert(format!("key {key}")),
            (None, None) => false,
        };
    }
    out
}

/// The requests of [`provider_refunds`] that created a refund: each 2xx answer to a refund
/// create that does not repeat an earlier 2xx's refund id or, without ids, its
/// `Idempotency-Key`; in order of sending.
fn creating_requests<'a>(
    requests: impl Iterator<Item = &'a ProviderRequestRec>,
    assumed: KeyMode,
) -> Vec<&'a ProviderRequestRec> {
    let mut seen = std::collections::BTreeSet::new();
    let mut sorted: Vec<&ProviderRequestRec> = requests.collect();
    sorted.sort_by(|a, b| (a.sent.at, &a.source).cmp(&(b.sent.at, &b.source)));
    sorted.retain(|r| {
        if !r.status.is_some_and(|s| (200..300).contains(&s)) {
            return false;
        }
        match (&r.refund_id, effective_key(r, assumed)) {
            (Some(id), _) => seen.insert(format!("id {id}")),
            (None, Some(key)) => seen.insert(format!("key {key}")),
            (None, None) => true,
        }
    });
    sorted
}

/// The refunds in `unclaimed` (the export's refunds of one ticket that no answer returned by
/// id and no failed request or unanswered call took) that `created`, the requests that made a
/// refund, did not make either: each such request whose refund id the export does not name
/// takes the refund created nearest its answer, within one second of the request; what is
/// left was made outside the agent's service (a human's dashboard refund).
fn outside_refunds<'a>(
    mut unclaimed: Vec<&'a super::ExportedRefund>,
    created: &[&ProviderRequestRec],
    export: &[&super::ExportedRefund],
) -> Vec<&'a super::ExportedRefund> {
    let mut answers: Vec<(i64, i64)> = created
        .iter()
        .filter(|q| {
            q.refund_id
                .as_deref()
                .is_none_or(|id| !export.iter().any(|r| r.id == id))
        })
        .map(|q| {
            let answer = q.sent.at + i64::try_from(q.latency_ns.unwrap_or(0)).unwrap_or(0);
            (answer, q.sent.at)
        })
        .collect();
    answers.sort_unstable();
    for (answer, sent) in answers {
        take_nearest(&mut unclaimed, sent, answer, false);
    }
    unclaimed
}

/// Takes from `pool` the refund created nearest `answer` among those created between one
/// second before `sent` and one second after `answer` (widened by each creation time's own
/// rounding when `rounding`), and returns it: the refund a request answered at `answer` made.
fn take_nearest<'a>(
    pool: &mut Vec<&'a super::ExportedRefund>,
    sent: i64,
    answer: i64,
    rounding: bool,
) -> Option<&'a super::ExportedRefund> {
    let k = pool
        .iter()
        .enumerate()
        .filter(|(_, x)| {
            let widen = if rounding {
                i64::try_from(x.created.tolerance_ns).unwrap_or(0)
            } else {
                0
            };
            let slack = 1_000_000_000 + widen;
            x.created.at >= sent - slack && x.created.at <= answer + slack
        })
        .min_by_key(|(_, x)| (x.created.at - answer).abs())
        .map(|(k, _)| k)?;
    Some(pool.remove(k))
}

/// Numeric ticket ids for the recorded ticket texts (see [`TicketIds::of`]).
#[derive(Debug, Default)]
struct TicketIds {
    ids: BTreeMap<TicketRef, u64>,
}

impl TicketIds {
    /// An id for every ticket text: a canonical integer (`48213`) is its own id; any other text
    /// (`T-100001`), in text order, gets the number its trailing digits spell when that number
    /// is free, else the next number above every id taken. Deterministic: the same texts give
    /// the same ids whatever the order they were read in.
    fn of<'a>(tickets: impl Iterator<Item = &'a TicketRef>) -> Self {
        let all: std::collections::BTreeSet<&TicketRef> = tickets.collect();
        let mut ids = BTreeMap::new();
        let mut taken = std::collections::BTreeSet::new();
        for t in &all {
            if let Some(n) = t.number() {
                ids.insert((*t).clone(), n);
                taken.insert(n);
            }
        }
        let labels: Vec<&TicketRef> = all
            .iter()
            .copied()
            .filter(|t| t.number().is_none())
            .collect();
        let mut wanted: Vec<(&TicketRef, Option<u64>)> = Vec::new();
        for t in &labels {
            let digits: String = {
                let rev: String = t
                    .as_str()
                    .chars()
                    .rev()
                    .take_while(char::is_ascii_digit)
                    .collect();
                rev.chars().rev().collect()
            };
            let n = digits.parse::<u64>().ok().filter(|n| *n < 1 << 53);
            let free = n.filter(|n| !taken.contains(n));
            if let Some(n) = free {
                taken.insert(n);
            }
            wanted.push((t, free));
        }
        for (t, n) in wanted {
            let n = n.unwrap_or_else(|| {
                let next = taken.last().map_or(1, |m| m + 1);
                taken.insert(next);
                next
            });
            ids.insert(t.clone(), n);
        }
        TicketIds { ids }
    }

    fn get(&self, t: &TicketRef) -> Option<u64> {
        self.ids.get(t).copied()
    }

    /// The texts that are not their own id, by id: the replay's `ticket_labels`.
    fn labels(&self) -> BTreeMap<u64, String> {
        self.ids
            .iter()
            .filter(|(t, _)| t.number().is_none())
            .map(|(t, &n)| (n, t.as_str().to_string()))
            .collect()
    }
}

/// The RFC 3339 form of `origin` (whole seconds).
fn rfc3339(origin: UnixNs) -> String {
    let t = UNIX_EPOCH + Duration::from_secs(u64::try_from(origin / 1_000_000_000).unwrap_or(0));
    humantime::format_rfc3339_seconds(t).to_string()
}

/// The instant `clock_origin` names, ns since the Unix epoch (`None` when absent or invalid).
pub fn origin_of(s: &Scenario) -> Option<UnixNs> {
    let t = humantime::parse_rfc3339_weak(s.clock_origin.as_deref()?).ok()?;
    let d = t.duration_since(UNIX_EPOCH).ok()?;
    i64::try_from(d.as_nanos()).ok()
}

/// The date (`YYYY-MM-DD`) of `base`'s `clock_origin`, for a log's times of day.
pub fn origin_date(base: &Scenario) -> Option<String> {
    let origin = origin_of(base)?;
    Some(rfc3339(origin)[..10].to_string())
}

/// Builds the replay scenario of `rec` over `base`: see the module docs for the rules.
/// `sources` are the input files as given.
///
/// # Errors
/// Nothing to replay (no tool call of `opts.tool`), or a ticket without any amount recorded.
pub fn build(
    rec: &Recording,
    base: &Scenario,
    sources: &[String],
    opts: &ImportOptions,
) -> Result<(Scenario, ImportReport), ImportError> {
    build_with_progress(rec, base, sources, opts, &())
}

/// [`build()`], telling `progress` the number of tickets, then each ticket as it is built.
/// Progress sees no record: the scenario is exactly [`build()`]'s.
///
/// # Errors
/// As [`build()`].
pub fn build_with_progress(
    rec: &Recording,
    base: &Scenario,
    sources: &[String],
    opts: &ImportOptions,
    progress: &dyn super::ImportProgress,
) -> Result<(Scenario, ImportReport), ImportError> {
    let mut warnings = rec.warnings.clone();
    // Per-ticket warnings, one per ticket at most: capped as they come (memory stays flat in
    // a recording of a million tickets), then merged into `warnings`.
    let mut per_ticket = Recording::default();
    let first_source = || Source {
        file: sources.first().cloned().unwrap_or_default(),
        line: 0,
    };
    let ticket_ids = TicketIds::of(
        rec.tool_calls
            .iter()
            .filter(|c| c.tool == opts.tool)
            .map(|c| &c.ticket),
    );
    let mut by_ticket: BTreeMap<u64, Vec<&ToolCallRec>> = BTreeMap::new();
    let mut other_tools = 0usize;
    // A record seen twice (a file given twice, a log and the JSON lines of the same calls): the
    // first kept, the others counted in a warning.
    let mut seen_calls = std::collections::BTreeSet::new();
    let mut seen_ids = std::collections::BTreeSet::new();
    let mut repeated: Vec<&Source> = Vec::new();
    for c in &rec.tool_calls {
        let same_instant = !seen_calls.insert((&c.ticket, c.tool.as_str(), c.at.at));
        let same_id = c
            .call_id
            .as_deref()
            .is_some_and(|id| !seen_ids.insert((&c.ticket, id)));
        if same_instant || same_id {
            repeated.push(&c.source);
            continue;
        }
        if c.amount_cents.is_some_and(|a| a == 0 || a > MAX_CENTS) {
            return Err(ImportError {
                at: c.source.clone(),
                message: format!(
                    "ticket {}: amount {} cents: expected 1 to {MAX_CENTS}",
                    c.ticket,
                    c.amount_cents.unwrap_or(0)
                ),
            });
        }
        check_order(c)?;
        if let Some(id) = ticket_ids.get(&c.ticket).filter(|_| c.tool == opts.tool) {
            by_ticket.entry(id).or_default().push(c);
        } else {
            other_tools += 1;
        }
    }
    if let Some(first) = repeated.first() {
        warnings.push(Warning {
            source: (*first).clone(),
            message: format!(
                "{} repeated (same ticket and instant, or same call id) ignored: the first of each kept",
                plural(repeated.len(), "tool call", "tool calls")
            ),
        });
    }
    if other_tools > 0 {
        warnings.push(Warning {
            source: first_source(),
            message: format!(
                "{} of tools other than `{}` ignored",
                plural(other_tools, "tool call", "tool calls"),
                opts.tool
            ),
        });
    }
    if by_ticket.is_empty() {
        return Err(ImportError {
            at: first_source(),
            message: format!(
                "no `{}` tool call in the input: nothing to replay (is the tool named otherwise? see --tool)",
                opts.tool
            ),
        });
    }
    for calls in by_ticket.values_mut() {
        calls.sort_by(|a, b| (a.at.at, &a.source).cmp(&(b.at.at, &b.source)));
    }
    let mut requests_of: BTreeMap<(u64, u32), Vec<&ProviderRequestRec>> = BTreeMap::new();
    let mut seen_requests = std::collections::BTreeSet::new();
    let mut repeated_requests: Vec<&Source> = Vec::new();
    for r in &rec.provider_requests {
        if !seen_requests.insert((&r.ticket, r.attempt, r.try_no, r.sent.at)) {
            repeated_requests.push(&r.source);
            continue;
        }
        if let Some(recv) = r.service_received.filter(|x| x.at > r.sent.at) {
            return Err(ImportError {
                at: r.source.clone(),
                message: format!(
                    "provider request for ticket {}: sent {:.3} s before the service received the call (service_received): expected sent ≥ service_received",
                    r.ticket,
                    (recv.at - r.sent.at) as f64 / 1e9
                ),
            });
        }
        let Some((id, calls)) = ticket_ids
            .get(&r.ticket)
            .and_then(|id| Some((id, by_ticket.get(&id)?)))
        else {
            warnings.push(Warning {
                source: r.source.clone(),
                message: format!(
                    "provider request for ticket {} without a tool call: ignored",
                    r.ticket
                ),
            });
            continue;
        };
        let attempt = r.attempt.unwrap_or_else(|| {
            let before = calls.iter().filter(|c| c.at.at <= r.sent.at).count();
            u32::try_from(before.saturating_sub(1)).unwrap_or(0)
        });
        let Some(call) = calls.get(attempt as usize) else {
            return Err(ImportError {
                at: r.source.clone(),
                message: format!(
                    "provider request for ticket {} attempt {attempt}: the ticket has {} (attempts 0 to {}): expected the attempt of one of them",
                    r.ticket,
                    plural(calls.len(), "tool call", "tool calls"),
                    calls.len().saturating_sub(1)
                ),
            });
        };
        if r.sent.at < call.at.at {
            return Err(ImportError {
                at: r.source.clone(),
                message: format!(
                    "provider request for ticket {} attempt {attempt}: sent {:.3} s before its tool call: expected sent ≥ the call's time",
                    r.ticket,
                    (call.at.at - r.sent.at) as f64 / 1e9
                ),
            });
        }
        requests_of.entry((id, attempt)).or_default().push(r);
    }
    for rs in requests_of.values_mut() {
        rs.sort_by(|a, b| (a.try_no, a.sent.at, &a.source).cmp(&(b.try_no, b.sent.at, &b.source)));
    }
    let starts = by_ticket
        .values()
        .flat_map(|cs| cs.iter().map(|c| (c.at.at, &c.source)))
        .chain(
            requests_of
                .values()
                .flatten()
                .map(|r| (r.sent.at, &r.source)),
        );
    let first_record = starts.min();
    let earliest = first_record.map_or(0, |(at, _)| at);
    let origin = (earliest - 1_000_000_000).div_euclid(1_000_000_000) * 1_000_000_000;

    let mut out = base.clone();
    if let Some(t) = rec.executor_timeout_ns {
        out.executor.timeout = Duration::from_nanos(t);
    }
    let timeout = out.executor.timeout;
    let overhead = out.agent.call_overhead;
    let (provider_p50, p50_source) = base_provider_median(&out);

    let mut exported: BTreeMap<u64, Vec<&super::ExportedRefund>> = BTreeMap::new();
    let mut seen_refunds = std::collections::BTreeSet::new();
    let mut repeated_refunds: Vec<&Source> = Vec::new();
    for r in &rec.refunds {
        if !seen_refunds.insert(r.id.as_str()) {
            repeated_refunds.push(&r.source);
            continue;
        }
        if let Some(id) = ticket_ids
            .get(&r.ticket)
            .filter(|id| by_ticket.contains_key(id))
        {
            exported.entry(id).or_default().push(r);
        } else {
            warnings.push(Warning {
                source: r.source.clone(),
                message: format!(
                    "refund {} is for ticket {}, which has no tool call: ignored",
                    r.id, r.ticket
                ),
            });
        }
    }
    for (list, one, many, what) in [
        (
            &repeated_requests,
            "provider request",
            "provider requests",
            "repeated",
        ),
        (&repeated_refunds, "refund", "refunds", "repeated (same id)"),
    ] {
        if let Some(first) = list.first() {
            warnings.push(Warning {
                source: (*first).clone(),
                message: format!(
                    "{} {what} ignored: the first of each kept",
                    plural(list.len(), one, many)
                ),
            });
        }
    }
    let have_export = !rec.refunds.is_empty();
    // Whether the recording holds the service's provider requests (its CLIENT spans, JSON
    // lines' provider_request): then a call answered without one made none.
    let service_requests_recorded = !requests_of.is_empty();
    // Whether the recording holds what humans did: the list has every refund, and the
    // service's requests tell the agent's from the others.
    let humans_recorded = have_export && service_requests_recorded;
    let mut escalated = 0usize;

    let mut specs = Vec::new();
    let mut tickets = BTreeMap::new();
    let mut requests = BTreeMap::new();
    let mut latencies = Vec::new();
    let mut reaches = Vec::new();
    let mut last = earliest;
    let mut last_source = first_record.map(|(_, src)| src);
    // What the recording lacked, for `drawn_from_base`.
    let mut undecided_retries = 0usize;
    let mut split_answers = 0usize;
    let (mut unanswered, mut unanswered_refunds) = (0usize, 0usize);
    progress.building(by_ticket.len() as u64);
    for (&id, calls) in &by_ticket {
        progress.ticket_built();
        let label = &calls[0].ticket;
        let export: &[&super::ExportedRefund] = exported.get(&id).map_or(&[], Vec::as_slice);
        let ok_ids: Vec<&str> = calls
            .iter()
            .flat_map(|c| {
                c.result
                    .iter()
                    .filter(|r| r.ok)
                    .filter_map(|r| r.refund_id.as_deref())
                    .chain(
                        c.service_response
                            .iter()
                            .filter(|r| r.ok)
                            .filter_map(|r| r.refund_id.as_deref()),
                    )
            })
            .collect();
        let provider_side = provider_refunds(
            requests_of
                .range((id, 0)..=(id, u32::MAX))
                .flat_map(|(_, rs)| rs.iter().copied()),
            base.refunds_service.idempotency_key,
        );
        let (refunds, refunds_from) = if have_export {
            let n = export.iter().filter(|r| moves_money(&r.status)).count();
            (n, "refund export")
        } else {
            let mut distinct: Vec<&str> = ok_ids.clone();
            distinct.sort_unstable();
            distinct.dedup();
            let anonymous = calls
                .iter()
                .filter(|c| {
                    c.result
                        .as_ref()
                        .is_some_and(|r| r.ok && r.refund_id.is_none())
                        && c.service_response.is_none()
                })
                .count();
            let from_results = distinct.len() + anonymous;
            match provider_side {
                Some(n) if n >= from_results => (n, "provider requests"),
                _ => (from_results, "tool results"),
            }
        };
        let refunds = u32::try_from(refunds).unwrap_or(u32::MAX);
        let amount = calls
            .iter()
            .find_map(|c| c.amount_cents)
            .or_else(|| export.first().map(|r| r.amount_cents))
            .ok_or_else(|| no_amount(label, calls[0], opts))?;
        if let Some(w) = different_amounts(label, calls) {
            per_ticket.warn(w);
        }
        let exported_sum: u64 = export.iter().map(|r| r.amount_cents).sum();
        specs.push(TicketSpec {
            id,
            opened_at: since(origin, calls[0].at.at).saturating_sub(overhead),
            amount_cents: amount,
            charge_amount_cents: amount
                .saturating_mul(u64::from(refunds) + 1)
                .max(exported_sum)
                .min(MAX_CENTS)
                .max(amount),
        });
        // Refunds in the export that no 2xx answer returned: what a 5xx or a lost answer may
        // have created.
        let mut unclaimed: Vec<&super::ExportedRefund> = export
            .iter()
            .copied()
            .filter(|r| moves_money(&r.status) && !ok_ids.contains(&r.id.as_str()))
            .filter(|r| {
                !requests_of
                    .range((id, 0)..=(id, u32::MAX))
                    .flat_map(|(_, rs)| rs.iter())
                    .any(|q| q.refund_id.as_deref() == Some(r.id.as_str()))
            })
            .collect();
        // Which 5xx or unanswered requests made the export's unclaimed refunds: in order of
        // their answers, each takes the unclaimed refund created nearest its answer within one
        // second of it (a commit happens just before the answer), so two failed requests
        // whose windows overlap each get their own refund.
        let mut committed: std::collections::BTreeSet<(u32, usize)> = Default::default();
        let mut claimed_by_failures: std::collections::BTreeSet<&str> = Default::default();
        {
            let mut failed: Vec<(i64, u32, usize, i64)> = requests_of
                .range((id, 0)..=(id, u32::MAX))
                .flat_map(|(&(_, a), rs)| rs.iter().enumerate().map(move |(n, r)| (a, n, r)))
                // A 4xx (409 in progress, 400, 429) created nothing: Stripe's rules.
                .filter(|(_, _, r)| r.status.is_none_or(|s| s >= 500))
                .map(|(a, n, r)| {
                    let answer = r.sent.at + i64::try_from(r.latency_ns.unwrap_or(0)).unwrap_or(0);
                    (answer, a, n, r.sent.at)
                })
                .collect();
            failed.sort_unstable();
            for (answer, a, n, sent) in failed {
                if let Some(r) = take_nearest(&mut unclaimed, sent, answer, false) {
                    claimed_by_failures.insert(r.id.as_str());
                    committed.insert((a, n));
                }
            }
        }
        // 2xx answers that returned an earlier request's refund: no refund of their own (the
        // same refund id, or the same key as an earlier 2xx or as a failed request the export
        // shows made a refund).
        let mut repeated: std::collections::BTreeSet<(u32, usize)> = {
            let all: Vec<((u32, usize), &ProviderRequestRec)> = requests_of
                .range((id, 0)..=(id, u32::MAX))
                .flat_map(|(&(_, a), rs)| rs.iter().enumerate().map(move |(n, r)| ((a, n), *r)))
                .collect();
            let reqs: Vec<&ProviderRequestRec> = all.iter().map(|(_, r)| *r).collect();
            let made: Vec<bool> = all.iter().map(|(at, _)| committed.contains(at)).collect();
            all.iter()
                .zip(repeats(&reqs, &made, base.refunds_service.idempotency_key))
                .filter(|(_, again)| *again)
                .map(|((at, _), _)| *at)
                .collect()
        };
        if have_export {
            // A 2xx that repeats an earlier request's recorded key (not its refund id) made a
            // refund of its own when the provider's list has one for it: a provider that did
            // not keep the key, which the exact replay then reports. Its refund is one not
            // returned to a request by id, not made by a failed request, not taken by an
            // earlier 2xx, and created within a second of it beyond its own rounding.
            let by_id: std::collections::BTreeSet<&str> = requests_of
                .range((id, 0)..=(id, u32::MAX))
                .flat_map(|(_, rs)| rs.iter())
                .filter_map(|r| r.refund_id.as_deref())
                .collect();
            let mut pool: Vec<&super::ExportedRefund> = export
                .iter()
                .copied()
                .filter(|r| {
                    moves_money(&r.status)
                        && !by_id.contains(r.id.as_str())
                        && !claimed_by_failures.contains(r.id.as_str())
                })
                .collect();
            let mut answers: Vec<(i64, i64, u32, usize, bool)> = requests_of
                .range((id, 0)..=(id, u32::MAX))
                .flat_map(|(&(_, a), rs)| rs.iter().enumerate().map(move |(n, r)| (a, n, r)))
                .filter(|(_, _, r)| is_2xx(r.status) && r.refund_id.is_none())
                .map(|(a, n, r)| {
                    let answer = r.sent.at + i64::try_from(r.latency_ns.unwrap_or(0)).unwrap_or(0);
                    let keyed_repeat =
                        repeated.contains(&(a, n)) && matches!(r.idempotency_key, Some(Some(_)));
                    (answer, r.sent.at, a, n, keyed_repeat)
                })
                .collect();
            answers.sort_unstable();
            for (answer, sent, a, n, keyed_repeat) in answers {
                if repeated.contains(&(a, n)) && !keyed_repeat {
                    continue;
                }
                // Taken even by a 2xx that made its refund, so a later one cannot take it.
                if take_nearest(&mut pool, sent, answer, true).is_some() && keyed_repeat {
                    repeated.remove(&(a, n));
                }
            }
        }
        let mut recorded_calls = Vec::new();
        let mut previous_end: Option<UnixNs> = None;
        for (i, c) in calls.iter().enumerate() {
            let attempt = u32::try_from(i).unwrap_or(u32::MAX);
            let call_at = c.at.at;
            // The recorded decision after the previous result, when it lies between that
            // result and this call: the think time ends at it, and the rest is the call's own
            // way to the executor (`call_after`), so both instants replay as recorded.
            let decided = i
                .checked_sub(1)
                .and_then(|p| calls[p].decision_at)
                .filter(|d| previous_end.is_some_and(|end| d.at >= end) && d.at <= call_at);
            let call_after = decided.map(|d| since(d.at, call_at));
            undecided_retries += usize::from(previous_end.is_some() && decided.is_none());
            let think = match (previous_end, decided) {
                (None, _) => Duration::ZERO,
                (Some(end), Some(d)) => since(end, d.at),
                (Some(end), None) => {
                    let start = call_at - i64::try_from(overhead.as_nanos()).unwrap_or(0);
                    if start < end {
                        warnings.push(Warning {
                            source: c.source.clone(),
                            message: format!(
                                "ticket {label}: tool call {attempt} comes {:.1} ms after the previous result, less than agent.call_overhead; replayed with a think time of 0",
                                (call_at - end) as f64 / 1e6
                            ),
                        });
                    }
                    since(end, start)
                }
            };
            // A timed-out call's result is the executor's timeout (a log prints it a
            // millisecond late), unless the recorded result is later than that: the executor
            // probed the status first.
            previous_end = c.result.as_ref().map(|r| {
                let timeout_at = call_at + i64::try_from(timeout.as_nanos()).unwrap_or(i64::MAX);
                if r.timed_out && r.at.at <= timeout_at + 1_000_000 {
                    timeout_at
                } else {
                    r.at.at
                }
            });
            let response = c
                .service_response
                .as_ref()
                .map(|r| (r.at, r.ok))
                .or_else(|| {
                    c.result
                        .as_ref()
                        .filter(|r| !r.timed_out)
                        .map(|r| (r.at, r.ok))
                });
            for t in [
                Some(c.at),
                c.result.as_ref().map(|r| r.at),
                c.decision_at,
                response.map(|r| r.0),
            ]
            .into_iter()
            .flatten()
            {
                if t.at > last {
                    last = t.at;
                    last_source = Some(&c.source);
                }
            }
            let end = previous_end;
            recorded_calls.push(RecordedCall {
                think,
                think_after: match (c.decision_at, end) {
                    (Some(d), Some(end)) if i + 1 == calls.len() => Some(since(end, d.at)),
                    _ => None,
                },
                at: since(origin, call_at),
                result_at: c.result.as_ref().map(|r| since(origin, r.at.at)),
                result: c.result.as_ref().map(|r| {
                    if r.timed_out {
                        "timeout".to_string()
                    } else if r.ok {
                        "ok".to_string()
                    } else {
                        "fail".to_string()
                    }
                }),
                decision_at: c.decision_at.map(|d| since(origin, d.at)),
                response_at: response.map(|r| since(origin, r.0.at)),
                response_tolerance: response
                    .map_or(Duration::ZERO, |r| Duration::from_nanos(r.0.tolerance_ns)),
                respond_after: Duration::ZERO,
                return_after: match (&c.result, &c.service_response) {
                    (Some(r), Some(s)) if !r.timed_out => since(s.at.at, r.at.at),
                    _ => Duration::ZERO,
                },
                call_after,
                source: c.source.to_string(),
            });
            let recorded = requests_of.get(&(id, attempt));
            match recorded {
                Some(rs) => {
                    for (n, r) in rs.iter().enumerate() {
                        let try_no = r
                            .try_no
                            .unwrap_or_else(|| u32::try_from(n).unwrap_or(u32::MAX));
                        // The model's service receives the call when it is made.
                        let reach = since(call_at, r.sent.at);
                        let latency = Duration::from_nanos(r.latency_ns.unwrap_or(0));
                        let ok = r.status.is_some_and(|s| (200..300).contains(&s));
                        let commits = (ok && !repeated.contains(&(attempt, n)))
                            || committed.contains(&(attempt, n));
                        // Only answered requests measure the provider's latency.
                        if r.latency_ns.is_some() && r.status.is_some() {
                            latencies.push(latency);
                        }
                        if try_no == 0 {
                            reaches.push(reach);
                        }
                        if r.sent.at > last {
                            last = r.sent.at;
                            last_source = Some(&r.source);
                        }
                        if let (Some(l), Some(resp)) = (r.latency_ns, response) {
                            let answered = r.sent.at + i64::try_from(l).unwrap_or(i64::MAX);
                            if let Some(call) = recorded_calls.last_mut() {
                                call.respond_after = since(answered, resp.0.at);
                            }
                        }
                        requests.insert(
                            RequestKey::service(id, attempt, try_no),
                            RecordedRequest {
                                reach_provider: reach,
                                latency,
                                status: r.status,
                                commits,
                                idempotency_key: r.idempotency_key.clone(),
                            },
                        );
                    }
                }
                None if response.is_none() && c.result.as_ref().is_some_and(|r| r.timed_out) => {
                    // Timed out, and the service's answer was never recorded: it came after the
                    // executor gave up (one provider median later, a guess); it created a
                    // refund only if the export lists one nothing else returned.
                    let refund = unclaimed
                        .iter()
                        .position(|x| x.created.at >= call_at)
                        .map(|k| unclaimed.remove(k));
                    let latency = provider_p50;
                    let reach = timeout + Duration::from_millis(1);
                    unanswered += 1;
                    unanswered_refunds += usize::from(refund.is_some());
                    warnings.push(Warning {
                        source: c.source.clone(),
                        message: format!(
                            "ticket {label}: tool call {attempt} timed out and the service's answer is not recorded: replayed as {} {} ms after the timeout",
                            if refund.is_some() {
                                "a refund (the export lists one)"
                            } else {
                                "no answer (no refund)"
                            },
                            1 + latency.as_millis()
                        ),
                    });
                    requests.insert(
                        RequestKey::service(id, attempt, 0),
                        RecordedRequest {
                            reach_provider: reach,
                            latency,
                            status: refund.map(|_| 200),
                            commits: refund.is_some(),
                            idempotency_key: None,
                        },
                    );
                }
                None if service_requests_recorded && c.service_response.is_some() => {
                    // The service's spans hold its provider requests, and this call's answer
                    // has none below it: the service answered from its own state (a pending
                    // row's 409, its ledger). The answer's recorded instant is replayed as
                    // such (`response_at`); no provider request is invented for it.
                }
                None => {
                    // A log: only the service's response time is known.
                    if let Some((at, ok)) = response {
                        let total = since(call_at, at.at);
                        let latency = total.min(provider_p50);
                        let reach = total - latency;
                        split_answers += 1;
                        reaches.push(reach);
                        requests.insert(
                            RequestKey::service(id, attempt, 0),
                            RecordedRequest {
                                reach_provider: reach,
                                latency,
                                status: Some(if ok { 200 } else { 500 }),
                                commits: ok,
                                idempotency_key: None,
                            },
                        );
                    }
                }
            }
        }
        // The refunds left once every request and answer took its own: made outside the
        // agent (a human's), known only when both the list and the service's requests are.
        let outside: Vec<OutsideRefund> = if humans_recorded {
            // The 2xx answers that made a refund (not Stripe's replays: see `repeated`).
            let created: Vec<&ProviderRequestRec> = requests_of
                .range((id, 0)..=(id, u32::MAX))
                .flat_map(|(&(_, a), rs)| rs.iter().enumerate().map(move |(n, r)| (a, n, *r)))
                .filter(|(a, n, r)| is_2xx(r.status) && !repeated.contains(&(*a, *n)))
                .map(|(_, _, r)| r)
                .collect();
            outside_refunds(unclaimed, &created, export)
                .into_iter()
                .map(|r| OutsideRefund::new(&r.id, since(origin, r.created.at), r.amount_cents))
                .collect()
        } else {
            Vec::new()
        };
        for r in export
            .iter()
            .filter(|r| outside.iter().any(|o| o.id == r.id))
        {
            if r.created.at > last {
                last = r.created.at;
                last_source = Some(&r.source);
            }
        }
        let ticket = RecordedTicket {
            calls: recorded_calls,
            refunds,
            refunds_from: refunds_from.to_string(),
            outside_refunds: outside,
        };
        if !ticket.outside_refunds.is_empty() && !ticket.gave_up() {
            per_ticket.warn(Warning {
                source: calls[0].source.clone(),
                message: format!(
                    "ticket {label}: the provider's list shows {} that no request of the \
                     service made, but the recording shows no escalation (its last tool result \
                     is not a failure): counted as recorded, replayed only if a run escalates \
                     the ticket",
                    plural(ticket.outside_refunds.len(), "refund", "refunds")
                ),
            });
        }
        escalated += usize::from(ticket.gave_up());
        tickets.insert(id, ticket);
    }
    let latency_fit = fit(
        "provider latency",
        "stripe.latency",
        &latencies,
        out.stripe.latency.clone(),
    );
    let reach_fit = fit(
        "time to reach the provider",
        "replay.reach_provider",
        &reaches,
        LatencyDist::constant(Duration::from_millis(1)),
    );
    out.stripe.latency = latency_fit.dist.clone();
    out.arrivals.tickets = specs;
    out.arrivals.schedule.clear();
    out.clock_origin = Some(rfc3339(origin));
    let span = since(origin, last) + Duration::from_secs(60);
    out.horizon = Duration::from_secs(span.as_secs() + 1);
    if out.horizon > crate::scenario::MAX_HORIZON {
        // Checked here, where the records are known, rather than as the imported scenario's
        // `horizon`, which names no input.
        let first = first_record
            .map(|(_, src)| src.to_string())
            .unwrap_or_default();
        return Err(ImportError {
            at: last_source.cloned().unwrap_or_else(first_source),
            message: format!(
                "this record is {} after the first one ({first}, {}): a replay spans at most 30 \
                 days; expected the records of one incident (check the times, or import a \
                 shorter window)",
                humantime::format_duration(Duration::from_secs(since(earliest, last).as_secs())),
                rfc3339(earliest)
            ),
        });
    }
    out.name = format!("{}-replay", base.name);
    out.description = format!(
        "Replay of {} (imported by refundsim import over the base scenario '{}').",
        sources.join(", "),
        base.name
    );
    out.comment = None;
    out.expect = BTreeMap::new();
    let drawn_from_base = drawn(&Lacked {
        timeout_stated: rec.executor_timeout_ns.is_some(),
        undecided_retries,
        split_answers,
        recorded_requests: requests_of.values().map(Vec::len).sum(),
        calls: tickets.values().map(|t| t.calls.len()).sum(),
        unanswered,
        unanswered_refunds,
        have_export,
        keys_said: requests_of
            .values()
            .flatten()
            .filter(|r| r.idempotency_key.is_some())
            .count(),
        base: &out,
        base_p50: provider_p50,
        p50_source,
        humans_recorded,
        escalated,
    });
    let report = ImportReport {
        tickets: tickets.len(),
        tool_calls: tickets.values().map(|t| t.calls.len()).sum(),
        provider_requests: requests.len(),
        exported_refunds: rec.refunds.len(),
        fits: vec![latency_fit, reach_fit.clone()],
        drawn_from_base,
        warnings: {
            let mut suppressed = rec.suppressed.clone();
            for (kind, (n, source)) in per_ticket.suppressed {
                let e = suppressed.entry(kind).or_insert((0, source.clone()));
                e.0 += n;
                e.1 = e.1.clone().min(source);
            }
            warnings.extend(per_ticket.warnings);
            super::recording::compact_warnings(warnings, &suppressed)
        },
    };
    out.replay = Some(Replay {
        sources: sources.to_vec(),
        ticket_labels: ticket_ids.labels(),
        key_mode: Some(out.refunds_service.idempotency_key),
        pool_size: out.refunds_service.pool_size,
        reach_provider: reach_fit.dist,
        requests,
        tickets,
        outside_refunds_recorded: humans_recorded,
    });
    Ok((out, report))
}

/// What a recording lacked, counted while building its replay.
struct Lacked<'a> {
    /// Whether the recording states the executor's timeout.
    timeout_stated: bool,
    /// Retries whose model decision is not recorded.
    undecided_retries: usize,
    /// Answered calls without a recorded provider request, split into a time to reach the
    /// provider and a time at it.
    split_answers: usize,
    /// Provider requests recorded.
    recorded_requests: usize,
    /// Tool calls.
    calls: usize,
    /// Timed-out calls without a recorded answer from the service, and how many of them the
    /// provider's list gave a refund.
    unanswered: usize,
    unanswered_refunds: usize,
    /// Whether the provider's list (or export) of refunds was imported.
    have_export: bool,
    /// Recorded provider requests that say whether they carried an `Idempotency-Key`.
    keys_said: usize,
    /// The replay scenario (the base's sections, the executor timeout as imported).
    base: &'a Scenario,
    /// The median of the base's provider latency (before any fit), and the field it is of.
    base_p50: Duration,
    p50_source: &'static str,
    /// Whether the recording holds what humans did (the provider's list and the service's
    /// requests), and how many recorded tickets it shows escalated.
    humans_recorded: bool,
    escalated: usize,
}

/// The median of the base scenario's provider latency and the field it comes from: of
/// `stripe.latency_choices` when set (each request takes one of them, not a `stripe.latency`
/// draw; the lower median of an even count), else of `stripe.latency`.
fn base_provider_median(s: &Scenario) -> (Duration, &'static str) {
    let choices = &s.stripe.latency_choices;
    if choices.is_empty() {
        (s.stripe.latency.median(), "stripe.latency")
    } else {
        let mut c = choices.clone();
        c.sort();
        (c[(c.len() - 1) / 2], "stripe.latency_choices")
    }
}

/// The facts of the replay drawn from the base scenario instead of recorded (see
/// [`ImportReport::drawn_from_base`]).
fn drawn(l: &Lacked<'_>) -> Vec<Drawn> {
    let d = |fact: &str, from_base: String| Drawn {
        fact: fact.to_string(),
        from_base,
    };
    let dur = |t: Duration| humantime::format_duration(t).to_string();
    let base = l.base;
    let p50 = dur(l.base_p50);
    let source = l.p50_source;
    let dist = if base.stripe.latency_choices.is_empty() {
        format!(
            "{}stripe.latency {}",
            if l.recorded_requests == 0 {
                "the base's "
            } else {
                "the fitted "
            },
            serde_json::to_string(&base.stripe.latency).unwrap_or_default()
        )
    } else {
        let choices: Vec<String> = base
            .stripe
            .latency_choices
            .iter()
            .map(|&t| dur(t))
            .collect();
        format!(
            "the base's stripe.latency_choices {}",
            serde_json::to_string(&choices).unwrap_or_default()
        )
    };
    let mut out = Vec::new();
    if !l.timeout_stated {
        out.push(d(
            "executor timeout",
            format!(
                "the recording does not state it: the base's executor.timeout ({}) ends each \
                 timed-out call",
                dur(base.executor.timeout)
            ),
        ));
    }
    if l.undecided_retries > 0 {
        out.push(d(
            "model decisions",
            format!(
                "not recorded before {}: the base's agent.call_overhead ({}) is the time from \
                 the model's decision to its call",
                plural(l.undecided_retries, "retry", "retries"),
                dur(base.agent.call_overhead)
            ),
        ));
    }
    if l.split_answers > 0 {
        let which = if l.recorded_requests == 0 {
            "none recorded".to_string()
        } else {
            format!(
                "{} of {} without a recorded request",
                plural(l.split_answers, "call", "calls"),
                l.calls
            )
        };
        out.push(d(
            "provider requests",
            format!(
                "{which}: each answered call's time at the provider is the smaller of its \
                 answer time and the median of the base's {source} ({p50}), the rest its \
                 time to reach the provider; a request the recording does not hold (a \
                 counterfactual's retry) draws from {dist}"
            ),
        ));
    } else if l.recorded_requests == 0 && l.unanswered > 0 {
        out.push(d(
            "provider requests",
            format!("none recorded: every request draws from {dist}"),
        ));
    }
    if l.unanswered > 0 {
        let refunds = if l.have_export {
            format!(
                "{} of them a refund (the provider's list shows one that no other answer returned), \
                 the others none",
                l.unanswered_refunds
            )
        } else {
            "none a refund: without the provider's list of refunds (stripe-list, refunds-csv) \
             the recording cannot show that one was made"
                .to_string()
        };
        out.push(d(
            "the service's answers",
            format!(
                "{} without a recorded answer from the service: each replayed as an answer \
                 1 ms and the median of the base's {source} ({p50}) after the executor \
                 gave up, {refunds}",
                plural(l.unanswered, "timed-out call", "timed-out calls")
            ),
        ));
    }
    if !l.humans_recorded && l.escalated > 0 && base.humans.enabled {
        let why = if l.have_export {
            "the service's provider requests are not recorded, so the provider's list cannot \
             tell a human's refund from the agent's"
        } else {
            "without the provider's list of refunds (stripe-list, refunds-csv) the recording \
             holds no human's refund"
        };
        out.push(d(
            "humans",
            format!(
                "{} escalated: {why}; the humans who take them are simulated from the base's \
                 humans section (pickup delay {}, check probability {})",
                plural(l.escalated, "recorded ticket", "recorded tickets"),
                serde_json::to_string(&base.humans.pickup_delay).unwrap_or_default(),
                base.humans.check_probability
            ),
        ));
    }
    if l.keys_said == 0 && (l.recorded_requests > 0 || l.split_answers > 0 || l.unanswered > 0) {
        let mode = serde_json::to_value(base.refunds_service.idempotency_key)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        out.push(d(
            "Idempotency-Key",
            format!(
                "not recorded for any request: the base's refunds_service.idempotency_key \
                 ({mode}) decides what each carries"
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{Instant, Source};

    fn req(
        sent: i64,
        status: Option<u16>,
        id: Option<&str>,
        key: Option<Option<&str>>,
    ) -> ProviderRequestRec {
        ProviderRequestRec {
            ticket: TicketRef::from(1),
            attempt: None,
            try_no: None,
            service_received: None,
            sent: Instant::exact(sent),
            latency_ns: Some(1),
            status,
            idempotency_key: key.map(|k| k.map(str::to_string)),
            refund_id: id.map(str::to_string),
            source: Source::default(),
        }
    }

    /// A failed request the export shows made a refund holds its key: a later 2xx with that
    /// key is Stripe's replay of it. A failed request that made nothing does not.
    #[test]
    fn a_failed_request_that_made_a_refund_holds_its_key() {
        let lost = req(1, None, None, Some(Some("k")));
        let ok = req(2, Some(200), None, Some(Some("k")));
        assert_eq!(
            repeats(&[&lost, &ok], &[true, false], KeyMode::None),
            [false, true]
        );
        assert_eq!(
            repeats(&[&ok, &lost], &[false, true], KeyMode::None),
            [true, false]
        );
        assert_eq!(
            repeats(&[&lost, &ok], &[false, false], KeyMode::None),
            [false, false]
        );
        let other = req(2, Some(200), None, Some(Some("j")));
        assert_eq!(
            repeats(&[&lost, &other], &[true, false], KeyMode::None),
            [false, false]
        );
    }

    /// Each 2xx is a refund, except one that repeats an earlier 2xx's refund id or, without
    /// ids, its key (Stripe's replay of a saved answer); errors are none.
    #[test]
    fn the_providers_side_counts_creates_not_replays() {
        let n = |rs: &[ProviderRequestRec]| provider_refunds(rs.iter(), KeyMode::None);
        assert_eq!(n(&[]), None);
        assert_eq!(n(&[req(1, Some(500), None, None)]), Some(0));
        assert_eq!(
            n(&[req(1, Some(200), None, None), req(2, Some(200), None, None)]),
            Some(2)
        );
        assert_eq!(
            n(&[
                req(1, Some(200), Some("re_1"), None),
                req(2, Some(200), Some("re_1"), None)
            ]),
            Some(1)
        );
        assert_eq!(
            n(&[
                req(1, Some(200), Some("re_1"), None),
                req(2, Some(200), Some("re_2"), None)
            ]),
            Some(2)
        );
        assert_eq!(
            n(&[
                req(1, Some(200), None, Some(Some("k"))),
                req(2, Some(201), None, Some(Some("k")))
            ]),
            Some(1)
        );
        assert_eq!(
            n(&[
                req(1, Some(200), None, Some(Some("a"))),
                req(2, Some(200), None, Some(Some("b")))
            ]),
            Some(2)
        );
    }
}
