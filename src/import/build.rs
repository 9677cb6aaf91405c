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

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, UNIX_EPOCH};

use super::fields::plural;
use super::recording::{
    ExportedRefund, Instant, ProviderRequestRec, Recording, TicketRef, ToolCallRec, UnixNs, Warning,
};
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
    let requests: Vec<&ProviderRequestRec> = requests.collect();
    if requests.is_empty() {
        return None;
    }
    let again = repeats(&requests, &[], assumed);
    let created = requests
        .iter()
        .zip(again)
        .filter(|(r, again)| is_2xx(r.status) && !again)
        .count();
    Some(created)
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
    let mut seen = BTreeSet::new();
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

/// The refunds in `unclaimed` (the export's refunds of one ticket that no answer returned by
/// id and no failed request or unanswered call took) that `created`, the requests that made a
/// refund, did not make either: each such request whose refund id the export does not name
/// takes the refund created nearest its answer, within one second of the request; what is
/// left was made outside the agent's service (a human's dashboard refund).
fn outside_refunds<'a>(
    mut unclaimed: Vec<&'a ExportedRefund>,
    created: &[&ProviderRequestRec],
    export: &[&ExportedRefund],
) -> Vec<&'a ExportedRefund> {
    let mut answers: Vec<(i64, i64)> = created
        .iter()
        .filter(|q| {
            q.refund_id
                .as_deref()
                .is_none_or(|id| !export.iter().any(|r| r.id == id))
        })
        .map(|q| (answered_at(q), q.sent.at))
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
    pool: &mut Vec<&'a ExportedRefund>,
    sent: i64,
    answer: i64,
    rounding: bool,
) -> Option<&'a ExportedRefund> {
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
        let all: BTreeSet<&TicketRef> = tickets.collect();
        let mut ids = BTreeMap::new();
        let mut taken = BTreeSet::new();
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
pub(crate) fn origin_of(s: &Scenario) -> Option<UnixNs> {
    let t = humantime::parse_rfc3339_weak(s.clock_origin.as_deref()?).ok()?;
    let d = t.duration_since(UNIX_EPOCH).ok()?;
    i64::try_from(d.as_nanos()).ok()
}

/// The date (`YYYY-MM-DD`) of `base`'s `clock_origin`, for a log's times of day.
pub(crate) fn origin_date(base: &Scenario) -> Option<String> {
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
pub(crate) fn build_with_progress(
    rec: &Recording,
    base: &Scenario,
    sources: &[String],
    opts: &ImportOptions,
    progress: &dyn super::ImportProgress,
) -> Result<(Scenario, ImportReport), ImportError> {
    let (builder, span, warnings) = Builder::new(rec, base, sources, opts)?;
    let mut replayed = Replayed::new(span, warnings);
    progress.building(builder.grouped.calls.len() as u64);
    for (&id, calls) in &builder.grouped.calls {
        progress.ticket_built();
        replayed.add_ticket(&builder, id, calls)?;
    }
    builder.finish(replayed)
}

/// One provider request of a ticket: its model attempt, and its index among that attempt's
/// requests (in try order).
type RequestAt = (u32, usize);

/// Each ticket's tool calls by ticket id.
type CallsByTicket<'a> = BTreeMap<u64, Vec<&'a ToolCallRec>>;

/// Each (ticket id, model attempt)'s provider requests.
type RequestsByAttempt<'a> = BTreeMap<(u64, u32), Vec<&'a ProviderRequestRec>>;

/// The records of a recording that its replay uses, by ticket id, checked, without repeats.
struct Grouped<'a> {
    /// The numeric ids of the recorded ticket texts.
    ticket_ids: TicketIds,
    /// Each ticket's calls of the refund tool in time order: its model attempts 0, 1, ….
    calls: CallsByTicket<'a>,
    /// Each (ticket, model attempt)'s provider requests, in try order.
    requests: RequestsByAttempt<'a>,
    /// Each ticket's refunds in the refund export.
    exported: BTreeMap<u64, Vec<&'a ExportedRefund>>,
}

impl<'a> Grouped<'a> {
    /// Groups `rec`'s calls of `opts.tool`, its provider requests and its exported refunds by
    /// ticket, adding to `warnings` what is ignored: repeats, calls of other tools, requests and
    /// refunds of a ticket without a call. `first_source` stands for the input where no record
    /// does.
    ///
    /// # Errors
    /// As [`calls_by_ticket`] and [`requests_by_attempt`].
    fn of(
        rec: &'a Recording,
        opts: &ImportOptions,
        first_source: &Source,
        warnings: &mut Vec<Warning>,
    ) -> Result<Self, ImportError> {
        let ticket_ids = TicketIds::of(
            rec.tool_calls
                .iter()
                .filter(|c| c.tool == opts.tool)
                .map(|c| &c.ticket),
        );
        let calls = calls_by_ticket(rec, opts, &ticket_ids, first_source, warnings)?;
        let (requests, repeated_requests) =
            requests_by_attempt(rec, &ticket_ids, &calls, warnings)?;
        let (exported, repeated_refunds) = refunds_by_ticket(rec, &ticket_ids, &calls, warnings);
        warnings.extend(repeated_warning(
            &repeated_requests,
            ("provider request", "provider requests"),
            "repeated",
        ));
        warnings.extend(repeated_warning(
            &repeated_refunds,
            ("refund", "refunds"),
            "repeated (same id)",
        ));
        Ok(Grouped {
            ticket_ids,
            calls,
            requests,
            exported,
        })
    }

    /// Ticket `id`'s provider requests, each with its [`RequestAt`], in attempt then try order.
    fn ticket_requests(&self, id: u64) -> Vec<(RequestAt, &'a ProviderRequestRec)> {
        self.requests
            .range((id, 0)..=(id, u32::MAX))
            .flat_map(|(&(_, a), rs)| rs.iter().enumerate().map(move |(n, r)| ((a, n), *r)))
            .collect()
    }
}

/// Each ticket's calls of `opts.tool` by ticket id, in time order (ties in source order). A call
/// seen before (the same ticket, tool and instant, or the same ticket and call id: a file given
/// twice, a log and the JSON lines of the same calls) is dropped, the first kept; the repeats
/// and the calls of other tools are counted in a warning each.
///
/// # Errors
/// A call's amount out of range ([`check_amount`]) or its instants out of order
/// ([`check_order`]), at the first such call; no call of `opts.tool` at all.
fn calls_by_ticket<'a>(
    rec: &'a Recording,
    opts: &ImportOptions,
    ticket_ids: &TicketIds,
    first_source: &Source,
    warnings: &mut Vec<Warning>,
) -> Result<CallsByTicket<'a>, ImportError> {
    let mut by_ticket: CallsByTicket<'a> = BTreeMap::new();
    let mut other_tools = 0usize;
    let mut seen_calls = BTreeSet::new();
    let mut seen_ids = BTreeSet::new();
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
        check_amount(c)?;
        check_order(c)?;
        if let Some(id) = ticket_ids.get(&c.ticket).filter(|_| c.tool == opts.tool) {
            by_ticket.entry(id).or_default().push(c);
        } else {
            other_tools += 1;
        }
    }
    warnings.extend(repeated_warning(
        &repeated,
        ("tool call", "tool calls"),
        "repeated (same ticket and instant, or same call id)",
    ));
    if other_tools > 0 {
        warnings.push(Warning {
            source: first_source.clone(),
            message: format!(
                "{} of tools other than `{}` ignored",
                plural(other_tools, "tool call", "tool calls"),
                opts.tool
            ),
        });
    }
    if by_ticket.is_empty() {
        return Err(ImportError {
            at: first_source.clone(),
            message: format!(
                "no `{}` tool call in the input: nothing to replay (is the tool named otherwise? see --tool)",
                opts.tool
            ),
        });
    }
    for calls in by_ticket.values_mut() {
        calls.sort_by(|a, b| (a.at.at, &a.source).cmp(&(b.at.at, &b.source)));
    }
    Ok(by_ticket)
}

/// The warning for records ignored as repeats of earlier ones (`repeated`, their sources), at
/// the first of them: "N (`one` or `many`) `what` ignored: the first of each kept". `None`
/// when there are none.
fn repeated_warning(
    repeated: &[&Source],
    (one, many): (&str, &str),
    what: &str,
) -> Option<Warning> {
    let first = repeated.first()?;
    Some(Warning {
        source: (*first).clone(),
        message: format!(
            "{} {what} ignored: the first of each kept",
            plural(repeated.len(), one, many)
        ),
    })
}

/// A tool call's amount, when recorded, is 1 to [`MAX_CENTS`] cents.
fn check_amount(c: &ToolCallRec) -> Result<(), ImportError> {
    match c.amount_cents {
        Some(a) if a == 0 || a > MAX_CENTS => Err(ImportError {
            at: c.source.clone(),
            message: format!(
                "ticket {}: amount {a} cents: expected 1 to {MAX_CENTS}",
                c.ticket
            ),
        }),
        _ => Ok(()),
    }
}

/// Each (ticket id, model attempt)'s provider requests, in try order (then sending, then
/// source), and the sources of the repeats dropped (a request with the ticket, attempt, try and
/// sending of an earlier one). A request of a ticket without a tool call is ignored with a
/// warning.
///
/// # Errors
/// A request sent before the service received the call ([`check_received`]), or serving no
/// call of its ticket ([`attempt_of`]), at the first such request.
fn requests_by_attempt<'a>(
    rec: &'a Recording,
    ticket_ids: &TicketIds,
    calls: &CallsByTicket<'_>,
    warnings: &mut Vec<Warning>,
) -> Result<(RequestsByAttempt<'a>, Vec<&'a Source>), ImportError> {
    let mut requests_of: RequestsByAttempt<'a> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let mut repeated: Vec<&Source> = Vec::new();
    for r in &rec.provider_requests {
        if !seen.insert((&r.ticket, r.attempt, r.try_no, r.sent.at)) {
            repeated.push(&r.source);
            continue;
        }
        check_received(r)?;
        let Some((id, ticket_calls)) = ticket_ids
            .get(&r.ticket)
            .and_then(|id| Some((id, calls.get(&id)?)))
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
        let attempt = attempt_of(r, ticket_calls)?;
        requests_of.entry((id, attempt)).or_default().push(r);
    }
    for rs in requests_of.values_mut() {
        rs.sort_by(|a, b| (a.try_no, a.sent.at, &a.source).cmp(&(b.try_no, b.sent.at, &b.source)));
    }
    Ok((requests_of, repeated))
}

/// A provider request is sent no earlier than the service received the call, when recorded.
fn check_received(r: &ProviderRequestRec) -> Result<(), ImportError> {
    match r.service_received.filter(|x| x.at > r.sent.at) {
        Some(recv) => Err(ImportError {
            at: r.source.clone(),
            message: format!(
                "provider request for ticket {}: sent {:.3} s before the service received the call (service_received): expected sent ≥ service_received",
                r.ticket,
                (recv.at - r.sent.at) as f64 / 1e9
            ),
        }),
        None => Ok(()),
    }
}

/// The model attempt provider request `r` serves among its ticket's `calls` (in time order):
/// the recorded one, else that of the latest call made by the time it was sent.
///
/// # Errors
/// The ticket has no call of that attempt, or `r` was sent before that call.
fn attempt_of(r: &ProviderRequestRec, calls: &[&ToolCallRec]) -> Result<u32, ImportError> {
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
    Ok(attempt)
}

/// Each ticket's refunds in the export by ticket id, and the sources of the repeats dropped (a
/// refund id seen before). A refund of a ticket without a tool call is ignored with a warning.
fn refunds_by_ticket<'a>(
    rec: &'a Recording,
    ticket_ids: &TicketIds,
    calls: &CallsByTicket<'_>,
    warnings: &mut Vec<Warning>,
) -> (BTreeMap<u64, Vec<&'a ExportedRefund>>, Vec<&'a Source>) {
    let mut exported: BTreeMap<u64, Vec<&ExportedRefund>> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let mut repeated: Vec<&Source> = Vec::new();
    for r in &rec.refunds {
        if !seen.insert(r.id.as_str()) {
            repeated.push(&r.source);
            continue;
        }
        if let Some(id) = ticket_ids
            .get(&r.ticket)
            .filter(|id| calls.contains_key(id))
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
    (exported, repeated)
}

/// The instants a replay spans: from its first record to the latest instant recorded.
struct Span<'a> {
    /// The earliest recorded tool call or provider request (ns since the epoch), and where.
    first: Option<(UnixNs, &'a Source)>,
    /// The latest recorded instant seen so far (the first record's until a later one), and
    /// where.
    last: UnixNs,
    last_source: Option<&'a Source>,
}

impl<'a> Span<'a> {
    /// Starts at the earliest tool call or provider request of `grouped` (ties in source
    /// order).
    fn of(grouped: &Grouped<'a>) -> Self {
        let calls = grouped.calls.values().flatten().copied();
        let requests = grouped.requests.values().flatten().copied();
        let first = calls
            .map(|c| (c.at.at, &c.source))
            .chain(requests.map(|r| (r.sent.at, &r.source)))
            .min();
        Span {
            first,
            last: first.map_or(0, |(at, _)| at),
            last_source: first.map(|(_, src)| src),
        }
    }

    /// The earliest record's instant, ns since the epoch (0 without records).
    fn earliest(&self) -> UnixNs {
        self.first.map_or(0, |(at, _)| at)
    }

    /// Virtual time 0, `clock_origin`: one second before the earliest record, on a whole
    /// second; ns since the epoch.
    fn origin(&self) -> UnixNs {
        (self.earliest() - 1_000_000_000).div_euclid(1_000_000_000) * 1_000_000_000
    }

    /// Notes instant `at`, recorded at `source`: the latest so far when later than all before.
    fn see(&mut self, at: UnixNs, source: &'a Source) {
        if at > self.last {
            self.last = at;
            self.last_source = Some(source);
        }
    }

    /// The replay's horizon: a minute after the latest instant, from `origin`, rounded up to a
    /// whole second.
    ///
    /// # Errors
    /// The horizon is over [`crate::scenario::MAX_HORIZON`] (30 days): at the latest record (or
    /// `first_source` without one), naming the first. Checked here, where the records are
    /// known, rather than as the imported scenario's `horizon`, which names no input.
    fn horizon(&self, origin: UnixNs, first_source: &Source) -> Result<Duration, ImportError> {
        let span = since(origin, self.last) + Duration::from_secs(60);
        let horizon = Duration::from_secs(span.as_secs() + 1);
        if horizon <= crate::scenario::MAX_HORIZON {
            return Ok(horizon);
        }
        let earliest = self.earliest();
        let first = self
            .first
            .map(|(_, src)| src.to_string())
            .unwrap_or_default();
        Err(ImportError {
            at: self
                .last_source
                .cloned()
                .unwrap_or_else(|| first_source.clone()),
            message: format!(
                "this record is {} after the first one ({first}, {}): a replay spans at most 30 \
                 days; expected the records of one incident (check the times, or import a \
                 shorter window)",
                humantime::format_duration(Duration::from_secs(
                    since(earliest, self.last).as_secs()
                )),
                rfc3339(earliest)
            ),
        })
    }
}

/// What every ticket's replay reads: the inputs, their records grouped by ticket, and the
/// settings of the replay scenario.
struct Builder<'a> {
    rec: &'a Recording,
    base: &'a Scenario,
    sources: &'a [String],
    opts: &'a ImportOptions,
    /// Where a message about the whole input points: the first file, line 0.
    first_source: Source,
    grouped: Grouped<'a>,
    /// Virtual time 0 ([`Span::origin`]), ns since the epoch.
    origin: UnixNs,
    /// The executor's timeout: the recording's, else the base's.
    timeout: Duration,
    /// The base's `agent.call_overhead`.
    overhead: Duration,
    /// The median of the base's provider latency and the field it is of
    /// ([`base_provider_median`]).
    provider_p50: Duration,
    p50_source: &'static str,
    /// Whether a refund export (or the provider's list) was imported.
    have_export: bool,
    /// Whether the recording holds the service's provider requests (its CLIENT spans, JSON
    /// lines' provider_request): then a call answered without one made none.
    service_requests_recorded: bool,
    /// Whether the recording holds what humans did: the list has every refund, and the
    /// service's requests tell the agent's from the others.
    humans_recorded: bool,
}

impl<'a> Builder<'a> {
    /// The builder of `rec`'s replay over `base`, the span of its records, and the warnings so
    /// far (the readers', then those of grouping the records).
    ///
    /// # Errors
    /// As [`Grouped::of`].
    fn new(
        rec: &'a Recording,
        base: &'a Scenario,
        sources: &'a [String],
        opts: &'a ImportOptions,
    ) -> Result<(Self, Span<'a>, Vec<Warning>), ImportError> {
        let mut warnings = rec.warnings.clone();
        let first_source = Source {
            file: sources.first().cloned().unwrap_or_default(),
            line: 0,
        };
        let grouped = Grouped::of(rec, opts, &first_source, &mut warnings)?;
        let span = Span::of(&grouped);
        let (provider_p50, p50_source) = base_provider_median(base);
        let have_export = !rec.refunds.is_empty();
        let service_requests_recorded = !grouped.requests.is_empty();
        let builder = Builder {
            rec,
            base,
            sources,
            opts,
            first_source,
            origin: span.origin(),
            timeout: rec
                .executor_timeout_ns
                .map_or(base.executor.timeout, Duration::from_nanos),
            overhead: base.agent.call_overhead,
            provider_p50,
            p50_source,
            have_export,
            service_requests_recorded,
            humans_recorded: have_export && service_requests_recorded,
            grouped,
        };
        Ok((builder, span, warnings))
    }

    /// Ticket `id`'s recorded refunds and what they were counted from. With a refund export,
    /// its refunds of the ticket (`export`) that moved money. Else the tool results: the
    /// distinct refund ids returned (`ok_ids`), plus each successful result with neither a
    /// refund id nor a service response; or the provider's side ([`provider_refunds`]) when
    /// it counts at least as many.
    fn recorded_refunds(
        &self,
        id: u64,
        calls: &[&ToolCallRec],
        export: &[&ExportedRefund],
        ok_ids: &[&str],
    ) -> (u32, &'static str) {
        let (refunds, from) = if self.have_export {
            let n = export.iter().filter(|r| moves_money(&r.status)).count();
            (n, "refund export")
        } else {
            let mut distinct: Vec<&str> = ok_ids.to_vec();
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
            let requests = self.grouped.ticket_requests(id);
            let key_mode = self.base.refunds_service.idempotency_key;
            match provider_refunds(requests.iter().map(|(_, r)| *r), key_mode) {
                Some(n) if n >= from_results => (n, "provider requests"),
                _ => (from_results, "tool results"),
            }
        };
        (u32::try_from(refunds).unwrap_or(u32::MAX), from)
    }

    /// The refunds of ticket `id` made outside the agent (a human's): those of
    /// `claims.unclaimed` left once every request that made a refund took its own
    /// ([`outside_refunds`]). Known only when both the provider's list and the service's
    /// requests are recorded; else none.
    fn refunds_made_outside(
        &self,
        id: u64,
        claims: Claims<'a>,
        export: &[&ExportedRefund],
    ) -> Vec<OutsideRefund> {
        if !self.humans_recorded {
            return Vec::new();
        }
        // The 2xx answers that made a refund (not Stripe's replays: see `repeated`).
        let created: Vec<&ProviderRequestRec> = self
            .grouped
            .ticket_requests(id)
            .into_iter()
            .filter(|(at, r)| is_2xx(r.status) && !claims.repeated.contains(at))
            .map(|(_, r)| r)
            .collect();
        outside_refunds(claims.unclaimed, &created, export)
            .into_iter()
            .map(|r| OutsideRefund::new(&r.id, since(self.origin, r.created.at), r.amount_cents))
            .collect()
    }

    /// The replay scenario and the import's report, once every ticket is `replayed`.
    ///
    /// # Errors
    /// The records span more than a replay can ([`Span::horizon`]).
    fn finish(&self, replayed: Replayed<'a>) -> Result<(Scenario, ImportReport), ImportError> {
        let mut out = self.base.clone();
        out.executor.timeout = self.timeout;
        let latency_fit = fit(
            "provider latency",
            "stripe.latency",
            &replayed.latencies,
            out.stripe.latency.clone(),
        );
        let reach_fit = fit(
            "time to reach the provider",
            "replay.reach_provider",
            &replayed.reaches,
            LatencyDist::constant(Duration::from_millis(1)),
        );
        out.stripe.latency = latency_fit.dist.clone();
        let drawn_from_base = drawn(&replayed.lacked(self, &out));
        out.horizon = replayed.span.horizon(self.origin, &self.first_source)?;
        out.clock_origin = Some(rfc3339(self.origin));
        out.name = format!("{}-replay", self.base.name);
        out.description = format!(
            "Replay of {} (imported by refundsim import over the base scenario '{}').",
            self.sources.join(", "),
            self.base.name
        );
        out.comment = None;
        out.expect = BTreeMap::new();
        out.arrivals.schedule.clear();
        let (specs, replay, warnings) = replayed.into_parts(self, &out, reach_fit.dist.clone());
        let report = ImportReport {
            tickets: replay.tickets.len(),
            tool_calls: replay.tickets.values().map(|t| t.calls.len()).sum(),
            provider_requests: replay.requests.len(),
            exported_refunds: self.rec.refunds.len(),
            fits: vec![latency_fit, reach_fit],
            drawn_from_base,
            warnings,
        };
        out.arrivals.tickets = specs;
        out.replay = Some(replay);
        Ok((out, report))
    }
}

/// How one ticket's refunds in the export and its recorded provider requests claim each
/// other.
struct Claims<'a> {
    /// The export's refunds that moved money and that no answer returned: what a 5xx or a lost
    /// answer may have made, until a request takes one.
    unclaimed: Vec<&'a ExportedRefund>,
    /// The failed or unanswered requests that made one of them.
    committed: BTreeSet<RequestAt>,
    /// The 2xx answers that returned an earlier request's refund: no refund of their own.
    repeated: BTreeSet<RequestAt>,
}

impl<'a> Claims<'a> {
    /// The claims of ticket `id`, whose refunds in the export are `export` and whose
    /// successful tool results and service responses returned the refund ids `ok_ids`.
    fn of(b: &Builder<'a>, id: u64, export: &[&'a ExportedRefund], ok_ids: &[&str]) -> Self {
        let requests = b.grouped.ticket_requests(id);
        let mut unclaimed = unclaimed_refunds(export, ok_ids, &requests);
        let (committed, claimed_by_failures) = claim_by_failures(&mut unclaimed, &requests);
        let mut repeated = repeated_answers(
            &requests,
            &committed,
            b.base.refunds_service.idempotency_key,
        );
        if b.have_export {
            unmark_repeats_of_ignored_keys(&mut repeated, export, &claimed_by_failures, &requests);
        }
        Claims {
            unclaimed,
            committed,
            repeated,
        }
    }
}

/// The refund ids a ticket's successful tool results and service responses returned, call by
/// call (a call's result before its response).
fn ok_refund_ids<'a>(calls: &[&'a ToolCallRec]) -> Vec<&'a str> {
    calls
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
        .collect()
}

/// The charge a ticket's refunds of `amount` cents are made against, which no recording
/// holds: room for its `refunds` recorded and one more (so a counterfactual's extra retry can
/// still over-refund), at least the sum of its refunds in `export`, at most [`MAX_CENTS`], and
/// never less than one refund.
fn charge_cents(amount: u64, refunds: u32, export: &[&ExportedRefund]) -> u64 {
    let exported_sum: u64 = export.iter().map(|r| r.amount_cents).sum();
    amount
        .saturating_mul(u64::from(refunds) + 1)
        .max(exported_sum)
        .min(MAX_CENTS)
        .max(amount)
}

/// When provider request `r`'s answer came: its sending plus its latency (0 when not
/// recorded), ns since the epoch.
fn answered_at(r: &ProviderRequestRec) -> UnixNs {
    r.sent.at + i64::try_from(r.latency_ns.unwrap_or(0)).unwrap_or(0)
}

/// The refunds in `export` that no 2xx answer returned: those that moved money, whose id is
/// in no successful result or response (`ok_ids`) and no request's answer (`requests`). What
/// a 5xx or a lost answer may have created.
fn unclaimed_refunds<'a>(
    export: &[&'a ExportedRefund],
    ok_ids: &[&str],
    requests: &[(RequestAt, &ProviderRequestRec)],
) -> Vec<&'a ExportedRefund> {
    export
        .iter()
        .copied()
        .filter(|r| moves_money(&r.status) && !ok_ids.contains(&r.id.as_str()))
        .filter(|r| {
            !requests
                .iter()
                .any(|(_, q)| q.refund_id.as_deref() == Some(r.id.as_str()))
        })
        .collect()
}

/// Which 5xx or unanswered `requests` made refunds of `unclaimed`: in order of their answers,
/// each takes the unclaimed refund created nearest its answer within one second of it (a
/// commit happens just before the answer), so two failed requests whose windows overlap each
/// get their own refund. A 4xx (409 in progress, 400, 429) created nothing: Stripe's rules.
/// Returns the requests that made a refund, and the ids of the refunds they took.
fn claim_by_failures<'a>(
    unclaimed: &mut Vec<&'a ExportedRefund>,
    requests: &[(RequestAt, &ProviderRequestRec)],
) -> (BTreeSet<RequestAt>, BTreeSet<&'a str>) {
    let mut failed: Vec<(UnixNs, RequestAt, UnixNs)> = requests
        .iter()
        .filter(|(_, r)| r.status.is_none_or(|s| s >= 500))
        .map(|&(at, r)| (answered_at(r), at, r.sent.at))
        .collect();
    failed.sort_unstable();
    let mut committed = BTreeSet::new();
    let mut claimed = BTreeSet::new();
    for (answer, at, sent) in failed {
        if let Some(r) = take_nearest(unclaimed, sent, answer, false) {
            claimed.insert(r.id.as_str());
            committed.insert(at);
        }
    }
    (committed, claimed)
}

/// The 2xx answers among `requests` that returned an earlier request's refund ([`repeats`]):
/// the same refund id, or the same key as an earlier 2xx or as a failed request that made a
/// refund (`committed`). They made no refund of their own.
fn repeated_answers(
    requests: &[(RequestAt, &ProviderRequestRec)],
    committed: &BTreeSet<RequestAt>,
    assumed: KeyMode,
) -> BTreeSet<RequestAt> {
    let reqs: Vec<&ProviderRequestRec> = requests.iter().map(|(_, r)| *r).collect();
    let made: Vec<bool> = requests
        .iter()
        .map(|(at, _)| committed.contains(at))
        .collect();
    requests
        .iter()
        .zip(repeats(&reqs, &made, assumed))
        .filter(|(_, again)| *again)
        .map(|((at, _), _)| *at)
        .collect()
}

/// Takes out of `repeated` each 2xx answer that repeats an earlier request's recorded key (not
/// its refund id) yet made a refund of its own: the provider's list has one for it, so the
/// provider did not keep the key (which the exact replay then reports). In order of the
/// answers without a refund id, each takes a refund of `export` that moved money, was
/// returned to no request by id, was made by no failed request (`claimed_by_failures`) and
/// taken by no earlier answer, created within a second of it beyond its own rounding. A 2xx
/// that made its refund takes one too, so that a later one cannot.
fn unmark_repeats_of_ignored_keys(
    repeated: &mut BTreeSet<RequestAt>,
    export: &[&ExportedRefund],
    claimed_by_failures: &BTreeSet<&str>,
    requests: &[(RequestAt, &ProviderRequestRec)],
) {
    let by_id: BTreeSet<&str> = requests
        .iter()
        .filter_map(|(_, r)| r.refund_id.as_deref())
        .collect();
    let mut pool: Vec<&ExportedRefund> = export
        .iter()
        .copied()
        .filter(|r| {
            moves_money(&r.status)
                && !by_id.contains(r.id.as_str())
                && !claimed_by_failures.contains(r.id.as_str())
        })
        .collect();
    let mut answers: Vec<(UnixNs, UnixNs, RequestAt, bool)> = requests
        .iter()
        .filter(|(_, r)| is_2xx(r.status) && r.refund_id.is_none())
        .map(|&(at, r)| {
            let keyed_repeat = repeated.contains(&at) && matches!(r.idempotency_key, Some(Some(_)));
            (answered_at(r), r.sent.at, at, keyed_repeat)
        })
        .collect();
    answers.sort_unstable();
    for (answer, sent, at, keyed_repeat) in answers {
        if repeated.contains(&at) && !keyed_repeat {
            continue;
        }
        if take_nearest(&mut pool, sent, answer, true).is_some() && keyed_repeat {
            repeated.remove(&at);
        }
    }
}

/// One tool call of a ticket as the replay makes it: a model attempt.
struct Attempt<'a> {
    /// The ticket's id, and its text as recorded.
    ticket: u64,
    label: &'a TicketRef,
    /// The attempt: the call's index among the ticket's calls.
    n: u32,
    call: &'a ToolCallRec,
    /// The model's decision recorded after the previous call's result (none for the first
    /// call).
    previous_decision: Option<Instant>,
    /// Whether it is the ticket's last call.
    last: bool,
    /// The service's answer to it ([`service_answer`]).
    answer: Option<(Instant, bool)>,
}

/// The replay as it is built ticket by ticket: the scenario's parts, the samples its fits
/// take, the warnings, and counts of what the recording lacked.
struct Replayed<'a> {
    span: Span<'a>,
    /// Each ticket's arrival.
    specs: Vec<TicketSpec>,
    /// Each ticket's recorded calls and refunds.
    tickets: BTreeMap<u64, RecordedTicket>,
    /// Each provider request's recorded (or derived) answer.
    requests: BTreeMap<RequestKey, RecordedRequest>,
    /// The provider's latency of each answered request.
    latencies: Vec<Duration>,
    /// Each first try's time to reach the provider.
    reaches: Vec<Duration>,
    /// The import's warnings.
    warnings: Vec<Warning>,
    /// Per-ticket warnings, one per ticket at most: capped as they come (memory stays flat in
    /// a recording of a million tickets), then merged into `warnings`.
    per_ticket: Recording,
    /// Retries whose model decision is not recorded.
    undecided_retries: usize,
    /// Answered calls without a recorded provider request, split into a time to reach the
    /// provider and a time at it.
    split_answers: usize,
    /// Timed-out calls without a recorded answer from the service, and how many of them the
    /// provider's list gave a refund.
    unanswered: usize,
    unanswered_refunds: usize,
    /// Tickets whose recording ends in an escalation.
    escalated: usize,
}

impl<'a> Replayed<'a> {
    /// Nothing replayed yet over `span`, with the `warnings` so far.
    fn new(span: Span<'a>, warnings: Vec<Warning>) -> Self {
        Replayed {
            span,
            specs: Vec::new(),
            tickets: BTreeMap::new(),
            requests: BTreeMap::new(),
            latencies: Vec::new(),
            reaches: Vec::new(),
            warnings,
            per_ticket: Recording::default(),
            undecided_retries: 0,
            split_answers: 0,
            unanswered: 0,
            unanswered_refunds: 0,
            escalated: 0,
        }
    }

    /// Adds ticket `id`, whose tool calls are `calls` in time order: its arrival, its recorded
    /// calls and refunds, and the provider requests of its calls.
    ///
    /// # Errors
    /// The ticket's amount is recorded nowhere ([`no_amount`]).
    fn add_ticket(
        &mut self,
        b: &Builder<'a>,
        id: u64,
        calls: &[&'a ToolCallRec],
    ) -> Result<(), ImportError> {
        let label = &calls[0].ticket;
        let export: &[&ExportedRefund] = b.grouped.exported.get(&id).map_or(&[], Vec::as_slice);
        let ok_ids = ok_refund_ids(calls);
        let (refunds, refunds_from) = b.recorded_refunds(id, calls, export, &ok_ids);
        let amount = calls
            .iter()
            .find_map(|c| c.amount_cents)
            .or_else(|| export.first().map(|r| r.amount_cents))
            .ok_or_else(|| no_amount(label, calls[0], b.opts))?;
        if let Some(w) = different_amounts(label, calls) {
            self.per_ticket.warn(w);
        }
        self.specs.push(TicketSpec {
            id,
            opened_at: since(b.origin, calls[0].at.at).saturating_sub(b.overhead),
            amount_cents: amount,
            charge_amount_cents: charge_cents(amount, refunds, export),
        });
        let mut claims = Claims::of(b, id, export, &ok_ids);
        let recorded_calls = self.add_calls(b, id, calls, &mut claims);
        let outside = b.refunds_made_outside(id, claims, export);
        for r in export
            .iter()
            .filter(|r| outside.iter().any(|o| o.id == r.id))
        {
            self.span.see(r.created.at, &r.source);
        }
        let ticket = RecordedTicket {
            calls: recorded_calls,
            refunds,
            refunds_from: refunds_from.to_string(),
            outside_refunds: outside,
        };
        if let Some(w) = unescalated_outside_refunds(label, calls[0], &ticket) {
            self.per_ticket.warn(w);
        }
        self.escalated += usize::from(ticket.gave_up());
        self.tickets.insert(id, ticket);
        Ok(())
    }

    /// Adds the provider requests of ticket `id`'s `calls` and returns the calls as the replay
    /// records them, in order ([`Replayed::add_call`]).
    fn add_calls(
        &mut self,
        b: &Builder<'a>,
        id: u64,
        calls: &[&'a ToolCallRec],
        claims: &mut Claims<'a>,
    ) -> Vec<RecordedCall> {
        let mut recorded_calls = Vec::new();
        let mut previous_end: Option<UnixNs> = None;
        for (i, c) in calls.iter().enumerate() {
            let attempt = Attempt {
                ticket: id,
                label: &calls[0].ticket,
                n: u32::try_from(i).unwrap_or(u32::MAX),
                call: c,
                previous_decision: i.checked_sub(1).and_then(|p| calls[p].decision_at),
                last: i + 1 == calls.len(),
                answer: service_answer(c),
            };
            recorded_calls.push(self.add_call(b, &attempt, &mut previous_end, claims));
        }
        recorded_calls
    }

    /// Replays attempt `a`: its think time after the previous call's result (`previous_end`,
    /// then set to this call's), its recorded instants, and the provider requests that serve
    /// it ([`Replayed::add_requests`]).
    fn add_call(
        &mut self,
        b: &Builder<'a>,
        a: &Attempt<'a>,
        previous_end: &mut Option<UnixNs>,
        claims: &mut Claims<'a>,
    ) -> RecordedCall {
        let c = a.call;
        let call_at = c.at.at;
        // The recorded decision after the previous result, when it lies between that
        // result and this call: the think time ends at it, and the rest is the call's own
        // way to the executor (`call_after`), so both instants replay as recorded.
        let decided = a
            .previous_decision
            .filter(|d| previous_end.is_some_and(|end| d.at >= end) && d.at <= call_at);
        let think = self.think_time(b, a, *previous_end, decided);
        *previous_end = result_end(c, b.timeout);
        for t in [
            Some(c.at),
            c.result.as_ref().map(|r| r.at),
            c.decision_at,
            a.answer.map(|r| r.0),
        ]
        .into_iter()
        .flatten()
        {
            self.span.see(t.at, &c.source);
        }
        let call_after = decided.map(|d| since(d.at, call_at));
        let mut call = recorded_call(b.origin, a, think, call_after, *previous_end);
        self.add_requests(b, a, claims, &mut call);
        call
    }

    /// The model's think time before attempt `a`: 0 for a ticket's first call; else from the
    /// previous result (`previous_end`) to the recorded decision `decided`, or without one to
    /// `agent.call_overhead` before the call (with a warning when the call comes sooner than
    /// that after the result: then 0). Counts a retry without a recorded decision.
    fn think_time(
        &mut self,
        b: &Builder<'a>,
        a: &Attempt<'a>,
        previous_end: Option<UnixNs>,
        decided: Option<Instant>,
    ) -> Duration {
        let call_at = a.call.at.at;
        self.undecided_retries += usize::from(previous_end.is_some() && decided.is_none());
        match (previous_end, decided) {
            (None, _) => Duration::ZERO,
            (Some(end), Some(d)) => since(end, d.at),
            (Some(end), None) => {
                let start = call_at - i64::try_from(b.overhead.as_nanos()).unwrap_or(0);
                if start < end {
                    self.warnings.push(Warning {
                        source: a.call.source.clone(),
                        message: format!(
                            "ticket {}: tool call {} comes {:.1} ms after the previous result, less than agent.call_overhead; replayed with a think time of 0",
                            a.label,
                            a.n,
                            (call_at - end) as f64 / 1e6
                        ),
                    });
                }
                since(end, start)
            }
        }
    }

    /// Adds the provider requests that serve attempt `a`, and sets `call`'s `respond_after`:
    /// - the recorded requests ([`Replayed::add_recorded_requests`]);
    /// - for a timed-out call whose answer is not recorded, a guessed one
    ///   ([`Replayed::add_unanswered`]);
    /// - for a call answered without a recorded request: none when the service's requests are
    ///   recorded (it answered from its own state), else one split from the answer's time
    ///   ([`Replayed::add_split_answer`]).
    fn add_requests(
        &mut self,
        b: &Builder<'a>,
        a: &Attempt<'a>,
        claims: &mut Claims<'a>,
        call: &mut RecordedCall,
    ) {
        let c = a.call;
        match b.grouped.requests.get(&(a.ticket, a.n)) {
            Some(rs) => self.add_recorded_requests(a, rs, claims, call),
            None if a.answer.is_none() && c.result.as_ref().is_some_and(|r| r.timed_out) => {
                self.add_unanswered(b, a, &mut claims.unclaimed);
            }
            None if b.service_requests_recorded && c.service_response.is_some() => {
                // The service's spans hold its provider requests, and this call's answer
                // has none below it: the service answered from its own state (a pending
                // row's 409, its ledger). The answer's recorded instant is replayed as
                // such (`response_at`); no provider request is invented for it.
            }
            None => {
                // A log: only the service's response time is known.
                if let Some((at, ok)) = a.answer {
                    self.add_split_answer(b, a, at, ok);
                }
            }
        }
    }

    /// Adds attempt `a`'s recorded provider requests `rs` (in try order) as recorded: each
    /// commits a refund when `claims` say it made one. Answered ones give the provider's
    /// latency a sample, first tries the time to reach it; `call.respond_after` is the time
    /// from the last answered request's answer to the service's.
    fn add_recorded_requests(
        &mut self,
        a: &Attempt<'a>,
        rs: &[&'a ProviderRequestRec],
        claims: &Claims<'a>,
        call: &mut RecordedCall,
    ) {
        for (n, r) in rs.iter().copied().enumerate() {
            let try_no = r
                .try_no
                .unwrap_or_else(|| u32::try_from(n).unwrap_or(u32::MAX));
            // The model's service receives the call when it is made.
            let reach = since(a.call.at.at, r.sent.at);
            let latency = Duration::from_nanos(r.latency_ns.unwrap_or(0));
            let commits = (is_2xx(r.status) && !claims.repeated.contains(&(a.n, n)))
                || claims.committed.contains(&(a.n, n));
            // Only answered requests measure the provider's latency.
            if r.latency_ns.is_some() && r.status.is_some() {
                self.latencies.push(latency);
            }
            if try_no == 0 {
                self.reaches.push(reach);
            }
            self.span.see(r.sent.at, &r.source);
            if let (Some(l), Some(resp)) = (r.latency_ns, a.answer) {
                let answered = r.sent.at + i64::try_from(l).unwrap_or(i64::MAX);
                call.respond_after = since(answered, resp.0.at);
            }
            self.requests.insert(
                RequestKey::service(a.ticket, a.n, try_no),
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

    /// Adds the request of attempt `a`, which timed out with the service's answer never
    /// recorded: the answer came after the executor gave up (one provider median later, a
    /// guess), and made a refund only if the export lists one nothing else returned, created
    /// after the call (taken from `unclaimed`). Warns of the guess.
    fn add_unanswered(
        &mut self,
        b: &Builder<'a>,
        a: &Attempt<'a>,
        unclaimed: &mut Vec<&'a ExportedRefund>,
    ) {
        let refund = unclaimed
            .iter()
            .position(|x| x.created.at >= a.call.at.at)
            .map(|k| unclaimed.remove(k));
        let latency = b.provider_p50;
        self.unanswered += 1;
        self.unanswered_refunds += usize::from(refund.is_some());
        self.warnings.push(Warning {
            source: a.call.source.clone(),
            message: format!(
                "ticket {}: tool call {} timed out and the service's answer is not recorded: replayed as {} {} ms after the timeout",
                a.label,
                a.n,
                if refund.is_some() {
                    "a refund (the export lists one)"
                } else {
                    "no answer (no refund)"
                },
                1 + latency.as_millis()
            ),
        });
        self.requests.insert(
            RequestKey::service(a.ticket, a.n, 0),
            RecordedRequest {
                reach_provider: b.timeout + Duration::from_millis(1),
                latency,
                status: refund.map(|_| 200),
                commits: refund.is_some(),
                idempotency_key: None,
            },
        );
    }

    /// Adds the request of attempt `a`, of which only the service's answer is known (at `at`,
    /// with a refund when `ok`; a log): the provider's latency is the smaller of the answer's
    /// time and the base's provider median, the rest the time to reach the provider.
    fn add_split_answer(&mut self, b: &Builder<'a>, a: &Attempt<'a>, at: Instant, ok: bool) {
        let total = since(a.call.at.at, at.at);
        let latency = total.min(b.provider_p50);
        let reach = total - latency;
        self.split_answers += 1;
        self.reaches.push(reach);
        self.requests.insert(
            RequestKey::service(a.ticket, a.n, 0),
            RecordedRequest {
                reach_provider: reach,
                latency,
                status: Some(if ok { 200 } else { 500 }),
                commits: ok,
                idempotency_key: None,
            },
        );
    }

    /// What the recording lacked, for [`drawn`]; `out` is the replay scenario (the base's
    /// sections, the executor's timeout as imported, the fitted provider latency).
    fn lacked<'s>(&'s self, b: &'s Builder<'a>, out: &'s Scenario) -> Lacked<'s> {
        Lacked {
            timeout_stated: b.rec.executor_timeout_ns.is_some(),
            undecided_retries: self.undecided_retries,
            split_answers: self.split_answers,
            recorded_requests: b.grouped.requests.values().map(Vec::len).sum(),
            calls: self.tickets.values().map(|t| t.calls.len()).sum(),
            unanswered: self.unanswered,
            unanswered_refunds: self.unanswered_refunds,
            have_export: b.have_export,
            keys_said: b
                .grouped
                .requests
                .values()
                .flatten()
                .filter(|r| r.idempotency_key.is_some())
                .count(),
            base: out,
            base_p50: b.provider_p50,
            p50_source: b.p50_source,
            humans_recorded: b.humans_recorded,
            escalated: self.escalated,
        }
    }

    /// The tickets' arrivals, the replay section (over `out`'s service settings, with
    /// `reach_provider` fitted), and the import's warnings: the readers', the builder's and
    /// the per-ticket ones, compacted ([`super::recording::compact_warnings`]).
    fn into_parts(
        self,
        b: &Builder<'a>,
        out: &Scenario,
        reach_provider: LatencyDist,
    ) -> (Vec<TicketSpec>, Replay, Vec<Warning>) {
        let mut suppressed = b.rec.suppressed.clone();
        super::recording::add_suppressed(&mut suppressed, self.per_ticket.suppressed);
        let mut warnings = self.warnings;
        warnings.extend(self.per_ticket.warnings);
        let replay = Replay {
            sources: b.sources.to_vec(),
            ticket_labels: b.grouped.ticket_ids.labels(),
            key_mode: Some(out.refunds_service.idempotency_key),
            pool_size: out.refunds_service.pool_size,
            reach_provider,
            requests: self.requests,
            tickets: self.tickets,
            outside_refunds_recorded: b.humans_recorded,
        };
        let warnings = super::recording::compact_warnings(warnings, &suppressed);
        (self.specs, replay, warnings)
    }
}

/// When the executor gave call `c`'s result to the model (`None` without a result): the
/// recorded result, except for a timed-out call, the executor's `timeout` after the call (a
/// log prints it a millisecond late), unless the recorded result is later than that (the
/// executor probed the status first).
fn result_end(c: &ToolCallRec, timeout: Duration) -> Option<UnixNs> {
    c.result.as_ref().map(|r| {
        let timeout_at = c.at.at + i64::try_from(timeout.as_nanos()).unwrap_or(i64::MAX);
        if r.timed_out && r.at.at <= timeout_at + 1_000_000 {
            timeout_at
        } else {
            r.at.at
        }
    })
}

/// The service's answer to call `c` (when, and whether with a refund): its recorded response,
/// else the tool's result unless it timed out.
fn service_answer(c: &ToolCallRec) -> Option<(Instant, bool)> {
    c.service_response
        .as_ref()
        .map(|r| (r.at, r.ok))
        .or_else(|| {
            c.result
                .as_ref()
                .filter(|r| !r.timed_out)
                .map(|r| (r.at, r.ok))
        })
}

/// Attempt `a` as the replay records it, instants as durations since `origin`: made `think`
/// after the previous result (and `call_after` after the recorded decision), its result
/// reaching the model at `end` ([`result_end`]). `respond_after` is left 0 for the requests to
/// set.
fn recorded_call(
    origin: UnixNs,
    a: &Attempt<'_>,
    think: Duration,
    call_after: Option<Duration>,
    end: Option<UnixNs>,
) -> RecordedCall {
    let c = a.call;
    RecordedCall {
        think,
        think_after: match (c.decision_at, end) {
            (Some(d), Some(end)) if a.last => Some(since(end, d.at)),
            _ => None,
        },
        at: since(origin, c.at.at),
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
        response_at: a.answer.map(|r| since(origin, r.0.at)),
        response_tolerance: a
            .answer
            .map_or(Duration::ZERO, |r| Duration::from_nanos(r.0.tolerance_ns)),
        respond_after: Duration::ZERO,
        return_after: match (&c.result, &c.service_response) {
            (Some(r), Some(s)) if !r.timed_out => since(s.at.at, r.at.at),
            _ => Duration::ZERO,
        },
        call_after,
        source: c.source.to_string(),
    }
}

/// The warning for a ticket (`label`, first call `first`) whose provider's list shows refunds
/// no request of the service made while its recording shows no escalation (its last tool
/// result is not a failure); `None` otherwise.
fn unescalated_outside_refunds(
    label: &TicketRef,
    first: &ToolCallRec,
    ticket: &RecordedTicket,
) -> Option<Warning> {
    if ticket.outside_refunds.is_empty() || ticket.gave_up() {
        return None;
    }
    Some(Warning {
        source: first.source.clone(),
        message: format!(
            "ticket {label}: the provider's list shows {} that no request of the \
             service made, but the recording shows no escalation (its last tool result \
             is not a failure): counted as recorded, replayed only if a run escalates \
             the ticket",
            plural(ticket.outside_refunds.len(), "refund", "refunds")
        ),
    })
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
/// [`ImportReport::drawn_from_base`]), in a fixed order.
fn drawn(l: &Lacked<'_>) -> Vec<Drawn> {
    [
        l.executor_timeout(),
        l.model_decisions(),
        l.provider_requests(),
        l.service_answers(),
        l.humans(),
        l.idempotency_key(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// `t` as humantime writes it (`1s 500ms`).
fn dur(t: Duration) -> String {
    humantime::format_duration(t).to_string()
}

impl Drawn {
    /// The `fact` drawn, and what the replay uses instead.
    fn new(fact: &str, from_base: String) -> Self {
        Drawn {
            fact: fact.to_string(),
            from_base,
        }
    }
}

impl Lacked<'_> {
    /// The executor's timeout, when the recording does not state it.
    fn executor_timeout(&self) -> Option<Drawn> {
        (!self.timeout_stated).then(|| {
            Drawn::new(
                "executor timeout",
                format!(
                    "the recording does not state it: the base's executor.timeout ({}) ends \
                     each timed-out call",
                    dur(self.base.executor.timeout)
                ),
            )
        })
    }

    /// The model's decisions, when some retry's is not recorded.
    fn model_decisions(&self) -> Option<Drawn> {
        (self.undecided_retries > 0).then(|| {
            Drawn::new(
                "model decisions",
                format!(
                    "not recorded before {}: the base's agent.call_overhead ({}) is the time \
                     from the model's decision to its call",
                    plural(self.undecided_retries, "retry", "retries"),
                    dur(self.base.agent.call_overhead)
                ),
            )
        })
    }

    /// The provider's requests, when answered calls were split into a time to reach the
    /// provider and a time at it, or none is recorded and some call went unanswered.
    fn provider_requests(&self) -> Option<Drawn> {
        let dist = self.unrecorded_latency();
        if self.split_answers > 0 {
            let which = if self.recorded_requests == 0 {
                "none recorded".to_string()
            } else {
                format!(
                    "{} of {} without a recorded request",
                    plural(self.split_answers, "call", "calls"),
                    self.calls
                )
            };
            Some(Drawn::new(
                "provider requests",
                format!(
                    "{which}: each answered call's time at the provider is the smaller of its \
                     answer time and the median of the base's {} ({}), the rest its \
                     time to reach the provider; a request the recording does not hold (a \
                     counterfactual's retry) draws from {dist}",
                    self.p50_source,
                    dur(self.base_p50)
                ),
            ))
        } else if self.recorded_requests == 0 && self.unanswered > 0 {
            Some(Drawn::new(
                "provider requests",
                format!("none recorded: every request draws from {dist}"),
            ))
        } else {
            None
        }
    }

    /// What a request the recording does not hold draws its provider latency from: the base's
    /// (or, with recorded requests, the fitted) `stripe.latency`, or the base's
    /// `stripe.latency_choices` when set.
    fn unrecorded_latency(&self) -> String {
        let stripe = &self.base.stripe;
        if stripe.latency_choices.is_empty() {
            format!(
                "{}stripe.latency {}",
                if self.recorded_requests == 0 {
                    "the base's "
                } else {
                    "the fitted "
                },
                serde_json::to_string(&stripe.latency).unwrap_or_default()
            )
        } else {
            let choices: Vec<String> = stripe.latency_choices.iter().map(|&t| dur(t)).collect();
            format!(
                "the base's stripe.latency_choices {}",
                serde_json::to_string(&choices).unwrap_or_default()
            )
        }
    }

    /// The service's answers, when timed-out calls have none recorded.
    fn service_answers(&self) -> Option<Drawn> {
        if self.unanswered == 0 {
            return None;
        }
        let refunds = if self.have_export {
            format!(
                "{} of them a refund (the provider's list shows one that no other answer returned), \
                 the others none",
                self.unanswered_refunds
            )
        } else {
            "none a refund: without the provider's list of refunds (stripe-list, refunds-csv) \
             the recording cannot show that one was made"
                .to_string()
        };
        Some(Drawn::new(
            "the service's answers",
            format!(
                "{} without a recorded answer from the service: each replayed as an answer \
                 1 ms and the median of the base's {} ({}) after the executor \
                 gave up, {refunds}",
                plural(self.unanswered, "timed-out call", "timed-out calls"),
                self.p50_source,
                dur(self.base_p50)
            ),
        ))
    }

    /// The humans who take escalated tickets, when the recording does not hold what they did
    /// and the base simulates them.
    fn humans(&self) -> Option<Drawn> {
        if self.humans_recorded || self.escalated == 0 || !self.base.humans.enabled {
            return None;
        }
        let why = if self.have_export {
            "the service's provider requests are not recorded, so the provider's list cannot \
             tell a human's refund from the agent's"
        } else {
            "without the provider's list of refunds (stripe-list, refunds-csv) the recording \
             holds no human's refund"
        };
        let humans = &self.base.humans;
        Some(Drawn::new(
            "humans",
            format!(
                "{} escalated: {why}; the humans who take them are simulated from the base's \
                 humans section (pickup delay {}, check probability {})",
                plural(self.escalated, "recorded ticket", "recorded tickets"),
                serde_json::to_string(&humans.pickup_delay).unwrap_or_default(),
                humans.check_probability
            ),
        ))
    }

    /// The `Idempotency-Key`, when no request says whether it carried one (and some request
    /// is replayed).
    fn idempotency_key(&self) -> Option<Drawn> {
        let requests = self.recorded_requests > 0 || self.split_answers > 0 || self.unanswered > 0;
        if self.keys_said > 0 || !requests {
            return None;
        }
        let mode = serde_json::to_value(self.base.refunds_service.idempotency_key)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        Some(Drawn::new(
            "Idempotency-Key",
            format!(
                "not recorded for any request: the base's refunds_service.idempotency_key \
                 ({mode}) decides what each carries"
            ),
        ))
    }
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
