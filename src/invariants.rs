//! Invariants and metrics evaluated over a history (DESIGN §3), independent of the model code
//! that produced it, plus the scenario's `expect` bounds.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::history::{
    Caller, Decision, Event, EventKind, History, Outcome, ProviderOutcome, TicketStatus,
};
use crate::id_map::{self, IdMap};
use crate::model::ModelGauges;
use crate::scenario::Bound;
use crate::sim::SimTime;

/// p50 / p99 / max of a latency sample, in milliseconds.
///
/// p50 and p99 come from an HDR histogram ([`hdrhistogram`]) with 3 significant decimal
/// digits: each is the nearest-rank percentile rounded up to the highest value equivalent to it
/// at that precision (within 0.1 % above the exact value). `count` and `max_ms` are exact.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Sample size.
    pub count: usize,
    /// Median, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Maximum, ms.
    pub max_ms: f64,
}

impl Percentiles {
    /// Percentiles of `ns` (through a [`LatencyHistogram`]).
    pub fn of(ns: Vec<u64>) -> Self {
        let mut h = LatencyHistogram::default();
        for v in ns {
            h.record(v);
        }
        h.percentiles()
    }
}

/// Significant decimal digits the latency histograms keep (HDR's precision).
pub(crate) const LATENCY_SIGFIGS: u8 = 3;

/// An online latency sample in nanoseconds: an HDR histogram (memory fixed by its range and
/// [`LATENCY_SIGFIGS`], not by the sample size) plus the exact maximum.
///
/// Counts are `u32`: half the memory of `u64` counts (about 115 KB for values up to minutes
/// instead of 230 KB), which a run feels because its histograms are written at scattered
/// offsets; about 2 % of the incident's run time. A bucket would need 4,294,967,296 samples
/// to overflow (far beyond what the run budget admits); one that did would saturate (see
/// [`LatencyHistogram::record`]).
#[derive(Clone, Debug)]
pub(crate) struct LatencyHistogram {
    h: hdrhistogram::Histogram<u32>,
    max: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        let mut h = hdrhistogram::Histogram::new(LATENCY_SIGFIGS)
            .expect("3 significant digits is within HDR's 0..=5");
        h.auto(true);
        LatencyHistogram { h, max: 0 }
    }
}

impl LatencyHistogram {
    /// Adds one value, ns. Values beyond the histogram's range (more than 292 years), and a
    /// bucket's count beyond `u32::MAX`, saturate.
    pub(crate) fn record(&mut self, ns: u64) {
        if self.h.record(ns).is_err() {
            self.h.saturating_record(ns);
        }
        self.max = self.max.max(ns);
    }

    /// p50 / p99 (HDR precision) and the exact count and max, in ms.
    pub(crate) fn percentiles(&self) -> Percentiles {
        let n = self.h.len();
        if n == 0 {
            return Percentiles::default();
        }
        let at = |q: f64| self.h.value_at_quantile(q).min(self.max) as f64 / 1e6;
        Percentiles {
            count: n as usize,
            p50_ms: at(0.50),
            p99_ms: at(0.99),
            max_ms: self.max as f64 / 1e6,
        }
    }
}

/// Latency distributions of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Latencies {
    /// The refunds service's response time per request, late ("zombie") responses included:
    /// what a tool call would take if nobody timed out, so its max can exceed the executor's
    /// timeout. Printed as "service response time"; named `tool_call` in the JSON report and in
    /// `expect` (`latency_tool_call_p99_ms`) for compatibility.
    pub tool_call: Percentiles,
    /// Time ticket requests waited for a pool connection.
    pub pool_wait: Percentiles,
    /// Stripe `POST /v1/refunds` round trips as the SDK saw them.
    pub stripe: Percentiles,
}

/// One invariant's verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InvariantResult {
    /// Name (`at_most_one_refund_per_ticket`, …).
    pub name: String,
    /// Whether it held.
    pub holds: bool,
    /// Count of offending tickets or items.
    pub violations: u64,
    /// First offending ticket, if any.
    pub first_ticket: Option<u64>,
}

/// Metrics left out of the JSON report when 0, so reports of runs without the feature they
/// count stay as they were.
const ZERO_SKIPPED: &[&str] = &[
    "duplicate_deliveries",
    "deliveries_deduped",
    "breaker_rejections",
];

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Every figure computed from one run's history. Names and units are stable; see
/// `docs/report.md`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Tickets opened.
    pub tickets: u64,
    /// Tool calls the model made (first calls and retries).
    pub tool_calls: u64,
    /// Executor timeouts.
    pub executor_timeouts: u64,
    /// Model retries.
    pub retries: u64,
    /// Tickets escalated to a human.
    pub escalations: u64,
    /// Refund objects that move money (any caller).
    pub refunds_created: u64,
    /// Tickets with more than one money-moving refund (invariant 1).
    pub duplicate_refund_tickets: u64,
    /// Refunds beyond the first per ticket.
    pub extra_refunds: u64,
    /// Σ over tickets of max(0, refunded − approved), cents (invariant 2).
    pub over_refund_cents: u64,
    /// Tickets that ended with no refund (invariant 3).
    pub lost_refunds: u64,
    /// Tool results shown as `fail` for a call whose refund exists (invariant 4): one of the
    /// call's Stripe requests created a refund or got one back (including an idempotent replay).
    pub false_failures: u64,
    /// Manual refunds by humans.
    pub manual_refunds: u64,
    /// Status probes the executor sent (`get_status` after a timeout or an unknown outcome).
    pub status_probes: u64,
    /// Probe answers `none` contradicted by a refund from a request sent before the probe
    /// (invariant `truthful_probes`).
    pub untruthful_probes: u64,
    /// Refunds created `pending` that settled `failed` or `canceled` (`provider.settle`):
    /// answered 200, no money moved.
    pub refunds_failed_after_200: u64,
    /// Stripe responses replayed from an idempotency key.
    pub stripe_replays: u64,
    /// Stripe 409 `idempotency_key_in_use`, or another provider's answer to a duplicate still in
    /// progress (409 or 422, `provider.in_flight_duplicate_status`).
    pub stripe_409: u64,
    /// Stripe 400s (idempotency errors, charge already refunded, invalid amount), and a
    /// provider's refusal of a finished duplicate with any 4xx
    /// (`provider.duplicate_rejected_status`).
    pub stripe_400: u64,
    /// Stripe 429s.
    pub stripe_429: u64,
    /// Stripe 500s.
    pub stripe_500: u64,
    /// Stripe requests whose response never arrived (connection lost or SDK timeout).
    pub stripe_no_response: u64,
    /// Broken conservation rules (invariant 5); always 0 unless the model is broken.
    pub conservation_violations: u64,
    /// Most requests waiting for a pool connection at once.
    pub max_pool_queue_depth: u64,
    /// Mean time a pool request (ticket or background, served or timed out) waited for a
    /// connection, ms; 0 without requests. The simulated Wq of the queueing oracle.
    pub pool_wait_mean_ms: f64,
    /// Fraction of pool requests that waited longer than `t` =
    /// `refunds_service.pool_wait_threshold` (default `executor.timeout`): the simulated
    /// P(wait > t); 0 without requests.
    pub pool_wait_over_threshold_fraction: f64,
    /// The `t` of `pool_wait_over_threshold_fraction`, ms: `refunds_service.pool_wait_threshold`,
    /// default `executor.timeout` (a setting echoed, not a measurement).
    pub pool_wait_threshold_ms: f64,
    /// Busy connection-time inside the horizon / (`pool_size` × horizon): the time-average
    /// fraction of connections held, in `[0, 1]`; ρ in steady state.
    pub pool_utilisation: f64,
    /// Reconciliation alerts raised (tickets flagged).
    pub reconciliation_alerts: u64,
    /// Second deliveries of a ticket's triggering event (at-least-once delivery), deduped or
    /// not. Left out of the JSON report when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub duplicate_deliveries: u64,
    /// Second deliveries the consumer dropped by event id (`consumer_dedup: event_id`). Left
    /// out of the JSON report when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub deliveries_deduped: u64,
    /// Calls an open circuit breaker refused at once (`breaker_rejected` events). Left out of
    /// the JSON report when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub breaker_rejections: u64,
    /// Virtual time of the first reconciliation alert, ns.
    pub first_alert_ns: Option<u64>,
    /// Longest time from a duplicate's creation to its alert, ns.
    pub max_time_to_alert_ns: Option<u64>,
    /// Duplicated tickets by arrival phase label.
    pub duplicates_by_phase: BTreeMap<String, u64>,
    /// Duplicated ticket ids, ascending: the smallest [`MAX_LISTED_IDS`] of them (the full count
    /// is `duplicate_refund_tickets`).
    pub duplicated_ticket_ids: Vec<u64>,
    /// Latencies.
    pub latency: Latencies,
    /// Invariants of DESIGN §3.
    pub invariants: Vec<InvariantResult>,
}

impl Metrics {
    /// A metric by its report name, as `f64` (for `expect` bounds). `None` for unknown names.
    ///
    /// The latency percentiles are reached as `latency_{tool_call,pool_wait,stripe}_{p50,p99,max}_ms`
    /// (the report's `latency.tool_call.p99_ms` is `latency_tool_call_p99_ms`: one word, so
    /// `--set expect.latency_tool_call_p99_ms.max=9000` can name it), in ms.
    pub fn get(&self, name: &str) -> Option<f64> {
        if let Some(rest) = name.strip_prefix("latency_") {
            return self.latency_percentile(rest);
        }
        let v = serde_json::to_value(self).ok()?;
        match v.get(name) {
            Some(x) => x.as_f64(),
            // Left out of the JSON when 0 (see the fields).
            None if ZERO_SKIPPED.contains(&name) => Some(0.0),
            None => None,
        }
    }
}

impl Metrics {
    /// `tool_call_p99_ms` and the like: one percentile of one latency distribution, ms.
    fn latency_percentile(&self, name: &str) -> Option<f64> {
        let l = &self.latency;
        for (dist, p) in [
            ("tool_call_", &l.tool_call),
            ("pool_wait_", &l.pool_wait),
            ("stripe_", &l.stripe),
        ] {
            if let Some(stat) = name.strip_prefix(dist) {
                return match stat {
                    "p50_ms" => Some(p.p50_ms),
                    "p99_ms" => Some(p.p99_ms),
                    "max_ms" => Some(p.max_ms),
                    _ => None,
                };
            }
        }
        None
    }
}

/// What the evaluator keeps about one open ticket; folded into the totals and dropped when the
/// ticket closes.
#[derive(Default)]
struct TicketFacts {
    /// Whether its `ticket_opened` was seen (an event for a ticket after it closed opens facts
    /// without it: a broken eviction rule, counted as a conservation violation).
    opened: bool,
    approved: u64,
    /// Its arrival phase's label: 0 for none (facts without their `ticket_opened`), else `k`
    /// for the [`Evaluator`]'s `phases[k - 1]`.
    phase: u32,
    /// Money-moving refunds: (amount, created).
    refunds: Few<(u64, SimTime)>,
    refunded_attempts: VecMap<u32, ()>,
    tool_calls: VecMap<u32, u32>,
    tool_results: VecMap<u32, u32>,
    final_ok: bool,
    escalated: bool,
    /// Per service call: requests and responses seen, and what `truthful_probes` and
    /// `unknown_not_shown_as_failure` need.
    calls: VecMap<u64, CallFacts>,
    /// (attempt, event ordinal) of every tool result reported as a failure.
    fails: Vec<(u32, u64)>,
    /// (when, event ordinal) of every probe answer `none`.
    none_probes: Vec<(SimTime, u64)>,
    /// Service calls whose Stripe requests created a money-moving refund.
    refunding_calls: Few<u64>,
    /// The last tool result of each attempt (two deliveries of a ticket's event run two agent
    /// turns at once, so the ticket's last result may be the other turn's).
    last_results: VecMap<u32, Option<Outcome>>,
}

/// One service call of a ticket.
#[derive(Default)]
struct CallFacts {
    requests: u32,
    responses: u32,
    /// The model attempt it belongs to.
    attempt: u32,
    /// When its `service_request` was seen.
    sent: SimTime,
    /// Whether it sent a request to Stripe, and Stripe's last answer (0: none came).
    stripe_status: Option<u16>,
    /// Whether the service's answer reported a refund.
    ok: bool,
}

impl CallFacts {
    /// Whether its outcome is unknown now: still being worked on, or it reached Stripe and got
    /// no definite answer (no response, a 409 `idempotency_key_in_use`, or a 5xx) and the
    /// service reported no refund.
    fn outcome_unknown(&self) -> bool {
        self.responses == 0
            || (!self.ok && matches!(self.stripe_status, Some(s) if s == 0 || s == 409 || s >= 500))
    }
}

/// What some invariants need to know about the scenario (the rest read only the history).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvalRules {
    /// `executor.on_timeout` is `probe_status`: `unknown_not_shown_as_failure` applies.
    pub probe_status: bool,
    /// `agent.retry.compliance` is 1: `no_retry_after_do_not_retry` applies.
    pub compliant_model: bool,
}

impl EvalRules {
    /// The rules `scenario` implies.
    pub fn of(scenario: &crate::scenario::Scenario) -> Self {
        EvalRules {
            probe_status: scenario.executor.on_timeout == crate::scenario::OnTimeout::ProbeStatus,
            compliant_model: scenario.agent.retry.compliance >= 1.0,
        }
    }
}

/// A map for the handful of entries a ticket has (attempts, service calls): the first entry
/// inline, the others in a vector searched linearly, in insertion order — cheaper than a tree
/// for a few keys, and allocation-free until the second entry (most tickets have one attempt
/// and one service call).
#[derive(Debug)]
struct VecMap<K, V> {
    first: Option<(K, V)>,
    rest: Vec<(K, V)>,
}

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        VecMap {
            first: None,
            rest: Vec::new(),
        }
    }
}

impl<K: PartialEq + Copy, V: Default> VecMap<K, V> {
    fn entry(&mut self, k: K) -> &mut V {
        match &mut self.first {
            None => return &mut self.first.insert((k, V::default())).1,
            Some(first) if first.0 == k => return &mut self.first.as_mut().expect("just seen").1,
            Some(_) => {}
        }
        let i = match self.rest.iter().position(|(x, _)| *x == k) {
            Some(i) => i,
            None => {
                self.rest.push((k, V::default()));
                self.rest.len() - 1
            }
        };
        &mut self.rest[i].1
    }
    fn get(&self, k: &K) -> Option<&V> {
        self.iter().find(|(x, _)| *x == k).map(|(_, v)| v)
    }
    fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        self.first
            .iter_mut()
            .chain(&mut self.rest)
            .find(|(x, _)| x == k)
            .map(|(_, v)| v)
    }
    fn contains(&self, k: &K) -> bool {
        self.get(k).is_some()
    }
    fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }
    fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.first.iter().chain(&self.rest).map(|(k, v)| (k, v))
    }
    fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, v)| v)
    }
}

/// A list of the few items a ticket has (its refunds, the calls that made them), in insertion
/// order: the first item inline, the others in a vector, so a ticket with one refund allocates
/// nothing for it (a vector's first push allocated twice per ticket).
#[derive(Debug)]
struct Few<T> {
    first: Option<T>,
    rest: Vec<T>,
}

impl<T> Default for Few<T> {
    fn default() -> Self {
        Few {
            first: None,
            rest: Vec::new(),
        }
    }
}

impl<T> Few<T> {
    fn push(&mut self, item: T) {
        if self.first.is_none() {
            self.first = Some(item);
        } else {
            self.rest.push(item);
        }
    }
    fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }
    fn iter(&self) -> impl Iterator<Item = &T> {
        self.first.iter().chain(&self.rest)
    }
    /// Removes the first item that matches, keeping the others' order.
    fn remove_first(&mut self, matches: impl Fn(&T) -> bool) {
        if self.first.as_ref().is_some_and(&matches) {
            self.first = if self.rest.is_empty() {
                None
            } else {
                Some(self.rest.remove(0))
            };
        } else if let Some(i) = self.rest.iter().position(matches) {
            self.rest.remove(i);
        }
    }
}

/// Most ids a report list (duplicated tickets, incident-shaped tickets) holds: the smallest
/// ones. The full count is beside the list (e.g. `duplicate_refund_tickets`).
pub const MAX_LISTED_IDS: usize = 1000;

/// Keeps the `MAX_LISTED_IDS` smallest ids of a set, ascending.
#[derive(Clone, Debug, Default)]
pub(crate) struct CappedIds(BTreeSet<u64>);

impl CappedIds {
    /// Adds `id`, dropping the largest id when over the cap.
    pub(crate) fn insert(&mut self, id: u64) {
        self.0.insert(id);
        if self.0.len() > MAX_LISTED_IDS {
            self.0.pop_last();
        }
    }
    /// The ids kept, ascending.
    pub(crate) fn into_vec(self) -> Vec<u64> {
        self.0.into_iter().collect()
    }
}

/// Metrics and invariants computed online, as events happen (DESIGN §3).
///
/// Feed it every event in order ([`Evaluator::record`]); tell it when a ticket closes
/// ([`Evaluator::ticket_closed`]) so it folds that ticket into the totals and drops its facts;
/// [`Evaluator::finish`] folds the tickets still open and returns the metrics. Memory is the
/// open tickets' facts plus three fixed-size latency histograms, so it is flat in the horizon.
/// Closing tickets early or never gives the same metrics, as long as no event names a ticket
/// after it closed.
#[derive(Default)]
pub(crate) struct Evaluator {
    rules: EvalRules,
    m: Metrics,
    inv: Invariants,
    /// Boxed: the facts are a few hundred bytes, which a table's growth would move around. A
    /// hash map: looked up at every event; folded in ascending id at the end.
    tickets: IdMap<Box<TicketFacts>>,
    /// Service calls that name no ticket: (requests, responses).
    orphan_calls: BTreeMap<u64, (u32, u32)>,
    /// Service calls without exactly one request and one response, among folded tickets.
    unanswered: u64,
    /// Events naming a ticket that had already closed.
    after_close: u64,
    tool_lat: LatencyHistogram,
    pool_lat: LatencyHistogram,
    stripe_lat: LatencyHistogram,
    acquires: u64,
    releases: u64,
    duplicated: CappedIds,
    /// Events seen (orders false failures by when they were reported).
    seq: u64,
    /// Arrival phase labels seen, each once (a run has a handful): tickets keep an index, not a
    /// copy of the label.
    phases: Vec<String>,
}

/// Computes every metric and invariant from `history` and the model gauges (offline: the same
/// [`Evaluator`] a run uses online, fed the whole history and closing no ticket early), with
/// default [`EvalRules`] (the scenario-dependent invariants do not apply; see
/// [`evaluate_under`]).
pub fn evaluate(history: &History, gauges: &ModelGauges) -> Metrics {
    evaluate_under(history, gauges, EvalRules::default())
}

/// [`evaluate`] under the scenario's `rules` (what a run of it uses online).
pub fn evaluate_under(history: &History, gauges: &ModelGauges, rules: EvalRules) -> Metrics {
    let mut ev = Evaluator::new(rules);
    for e in &history.events {
        ev.record(e);
    }
    ev.finish(gauges)
}

impl Evaluator {
    /// An evaluator under `rules` (from [`EvalRules::of`] the scenario being run).
    pub(crate) fn new(rules: EvalRules) -> Self {
        Evaluator {
            rules,
            ..Evaluator::default()
        }
    }

    /// Ticket `id` is closed: fold its facts into the totals and drop them.
    pub(crate) fn ticket_closed(&mut self, id: u64) {
        if let Some(f) = self.tickets.remove(&id) {
            self.fold(id, &f);
        }
    }

    /// Folds the tickets still open (ascending id) and the structural checks; the metrics.
    pub(crate) fn finish(mut self, gauges: &ModelGauges) -> Metrics {
        for (id, f) in id_map::into_sorted(std::mem::take(&mut self.tickets)) {
            self.fold(id, &f);
        }
        let Evaluator {
            mut m,
            mut inv,
            orphan_calls,
            unanswered,
            after_close,
            tool_lat,
            pool_lat,
            stripe_lat,
            acquires,
            releases,
            duplicated,
            ..
        } = self;
        let unanswered = unanswered
            + orphan_calls
                .values()
                .filter(|(req, resp)| *req != 1 || *resp != 1)
                .count() as u64;
        let pool_leak = acquires != releases || gauges.pool_acquired != gauges.pool_released;
        let stripe_open = gauges.stripe_in_flight as u64;
        let structural = unanswered
            + u64::from(pool_leak)
            + stripe_open
            + after_close
            + gauges.premature_evictions;
        if structural > 0 {
            m.conservation_violations += structural;
            inv.count("conservation", structural);
        }
        m.duplicated_ticket_ids = duplicated.into_vec();
        m.max_pool_queue_depth = u64::from(gauges.max_pool_queue_depth);
        let per_wait = |x: f64| {
            if gauges.pool_waits == 0 {
                0.0
            } else {
                x / gauges.pool_waits as f64
            }
        };
        m.pool_wait_mean_ms = per_wait(gauges.pool_wait_ns as f64 / 1e6);
        m.pool_wait_over_threshold_fraction = per_wait(gauges.pool_waits_over_threshold as f64);
        m.pool_wait_threshold_ms = gauges.pool_wait_threshold.as_nanos() as f64 / 1e6;
        m.pool_utilisation = if gauges.pool_capacity_ns == 0 {
            0.0
        } else {
            gauges.pool_busy_ns as f64 / gauges.pool_capacity_ns as f64
        };
        m.latency = Latencies {
            tool_call: tool_lat.percentiles(),
            pool_wait: pool_lat.percentiles(),
            stripe: stripe_lat.percentiles(),
        };
        m.invariants = inv.finish();
        m
    }

    /// One ticket's verdicts: its refunds (duplicates, over-refund, lost refund), its
    /// conservation (each attempt one call and one result, an ending, each service call
    /// answered once) and the truth of what it was told (probes, false failures).
    fn fold(&mut self, id: u64, f: &TicketFacts) {
        self.fold_refunds(id, f);
        self.fold_conservation(id, f);
        self.fold_truthfulness(id, f);
    }

    /// A ticket's refunds against the one it was approved: more than one (a duplicate,
    /// counted under its arrival phase), more money than approved, or none.
    fn fold_refunds(&mut self, id: u64, f: &TicketFacts) {
        let (m, inv) = (&mut self.m, &mut self.inv);
        let n = f.refunds.len() as u64;
        if n > 1 {
            m.duplicate_refund_tickets += 1;
            m.extra_refunds += n - 1;
            self.duplicated.insert(id);
            let phase = match f.phase {
                0 => "",
                k => self.phases[k as usize - 1].as_str(),
            };
            match m.duplicates_by_phase.get_mut(phase) {
                Some(n) => *n += 1,
                None => {
                    m.duplicates_by_phase.insert(phase.to_string(), 1);
                }
            }
            inv.hit("at_most_one_refund_per_ticket", id, id);
        }
        let total: u64 = f.refunds.iter().fold(0u64, |a, r| a.saturating_add(r.0));
        if total > f.approved {
            m.over_refund_cents = m.over_refund_cents.saturating_add(total - f.approved);
            inv.hit("no_over_refund", id, id);
        }
        if n == 0 {
            m.lost_refunds += 1;
            inv.hit("no_lost_refund", id, id);
        }
    }

    /// A ticket's conservation: each attempt's tool call has one result and the ticket ended
    /// (a final `ok` or an escalation); its service calls without exactly one request and one
    /// response, and whether it had events after it closed, go to the run's structural counts.
    fn fold_conservation(&mut self, id: u64, f: &TicketFacts) {
        let calls_ok = f
            .tool_calls
            .iter()
            .all(|(a, c)| *c == 1 && f.tool_results.get(a) == Some(&1))
            && f.tool_results.len() == f.tool_calls.len();
        let ended = f.final_ok || f.escalated;
        if !calls_ok || !ended {
            self.m.conservation_violations += 1;
            self.inv.hit("conservation", id, id);
        }
        self.unanswered += f
            .calls
            .values()
            .filter(|c| c.requests != 1 || c.responses != 1)
            .count() as u64;
        if !f.opened {
            self.after_close += 1;
        }
    }

    /// Whether what the ticket was told was true: a probe's `none` is untruthful when a
    /// request sent before it created a refund, and a tool result `fail` is a false failure
    /// when its attempt did refund.
    fn fold_truthfulness(&mut self, id: u64, f: &TicketFacts) {
        let (m, inv) = (&mut self.m, &mut self.inv);
        for &(at, seq) in &f.none_probes {
            let contradicted = f.refunding_calls.iter().any(|&c| {
                f.calls
                    .get(&c)
                    .is_some_and(|call| call.requests > 0 && call.sent < at)
            });
            if contradicted {
                m.untruthful_probes += 1;
                inv.hit("truthful_probes", id, seq);
            }
        }
        for &(attempt, seq) in &f.fails {
            if f.refunded_attempts.contains(&attempt) {
                m.false_failures += 1;
                inv.hit("truthful_tool_results", id, seq);
            }
        }
    }

    /// Counts one event and files it under its ticket (every event with a ticket opens the
    /// ticket's facts, even one that adds nothing to them).
    pub(crate) fn record(&mut self, e: &Event) {
        self.seq += 1;
        self.count(e);
        self.file(e);
    }

    /// Adds an event to the run-wide counters and latency samples, whichever ticket it names
    /// (escalations excepted: [`Evaluator::file`] counts those once per ticket).
    fn count(&mut self, e: &Event) {
        let m = &mut self.m;
        match &e.kind {
            EventKind::TicketOpened { .. } => m.tickets += 1,
            EventKind::ToolCall { .. } => m.tool_calls += 1,
            EventKind::ServiceResponse { latency_ns, .. } => self.tool_lat.record(*latency_ns),
            EventKind::Probe { .. } => m.status_probes += 1,
            EventKind::PoolAcquire { waited_ns } => {
                self.acquires += 1;
                self.pool_lat.record(*waited_ns);
            }
            EventKind::PoolTimeout { waited_ns } => self.pool_lat.record(*waited_ns),
            EventKind::PoolRelease => self.releases += 1,
            EventKind::StripeResponse {
                status,
                outcome,
                latency_ns,
                ..
            } => {
                self.stripe_lat.record(*latency_ns);
                count_stripe_status(m, *status, *outcome);
            }
            EventKind::RefundCreated {
                moves_money, by, ..
            } => {
                if *by == Caller::Human {
                    m.manual_refunds += 1;
                }
                if *moves_money {
                    m.refunds_created += 1;
                }
            }
            EventKind::RefundSettled {
                moves_money: false, ..
            } => m.refunds_failed_after_200 += 1,
            EventKind::ExecutorTimeout { .. } => m.executor_timeouts += 1,
            EventKind::ModelDecision {
                decision: Decision::Retry,
                ..
            } => m.retries += 1,
            EventKind::ReconciliationAlert {
                tickets,
                duplicate_at_ns,
            } => count_alert(m, e.t_ns, tickets.len(), duplicate_at_ns),
            EventKind::Delivered {
                duplicate: true, ..
            } => m.duplicate_deliveries += 1,
            EventKind::DeliveryDeduped { .. } => {
                m.duplicate_deliveries += 1;
                m.deliveries_deduped += 1;
            }
            EventKind::BreakerRejected { .. } => m.breaker_rejections += 1,
            _ => {}
        }
    }

    /// Files an event under its ticket's facts and checks the invariants that are decided as
    /// events happen (`unknown_not_shown_as_failure`, `no_retry_after_do_not_retry`). An event
    /// that names no ticket goes to [`Evaluator::file_without_ticket`].
    fn file(&mut self, e: &Event) {
        let Some(id) = e.ticket else {
            return self.file_without_ticket(e);
        };
        let seq = self.seq;
        let f = self.tickets.entry(id).or_default();
        match &e.kind {
            EventKind::TicketOpened {
                amount_cents,
                phase,
                ..
            } => f.open(*amount_cents, phase_number(&mut self.phases, phase)),
            EventKind::ToolCall { .. } => {
                if let Some(a) = e.attempt {
                    *f.tool_calls.entry(a) += 1;
                }
            }
            EventKind::ToolResult { outcome, .. } => {
                let Some(a) = e.attempt else { return };
                if f.tool_result(a, *outcome, seq) && self.rules.probe_status {
                    self.inv.hit("unknown_not_shown_as_failure", id, seq);
                }
            }
            EventKind::ServiceRequest { .. } => {
                f.service_request(e.call.unwrap_or(0), e.attempt.unwrap_or(0), e.t_ns);
            }
            EventKind::ServiceResponse { ok, .. } => f.service_response(e.call.unwrap_or(0), *ok),
            EventKind::Probe {
                status: TicketStatus::None,
                error: None,
            } => f.none_probes.push((e.t_ns, seq)),
            EventKind::StripeResponse {
                status, refund_id, ..
            } => f.stripe_response(e.call, e.attempt, *status, refund_id.is_some()),
            EventKind::RefundCreated {
                amount_cents,
                moves_money: true,
                ..
            } => f.refund_created(*amount_cents, e.t_ns, e.attempt, e.call),
            EventKind::RefundSettled {
                amount_cents,
                created_ns,
                moves_money: false,
                ..
            } => f.refund_voided(*amount_cents, SimTime::from_nanos(*created_ns)),
            EventKind::ModelDecision {
                decision: Decision::Retry,
                ..
            } => {
                // A compliant model never retries after "outcome unknown; do not retry": the
                // result the decision reads is its own attempt's.
                let after_info = e.attempt.is_some_and(|a| f.last_result_was_info(a));
                if self.rules.compliant_model && after_info {
                    self.inv.hit("no_retry_after_do_not_retry", id, seq);
                }
            }
            // Once per ticket: two handlers of one ticket (a duplicate delivery) may both
            // escalate it.
            EventKind::Escalation { .. } => self.m.escalations += u64::from(f.escalate()),
            _ => {}
        }
    }

    /// Files an event that names no ticket: a service call's request or response (an orphan
    /// call, which [`Evaluator::finish`] counts as unanswered unless it has exactly one of
    /// each), or an escalation (counted each time).
    fn file_without_ticket(&mut self, e: &Event) {
        let id = e.call.unwrap_or(0);
        match e.kind {
            EventKind::ServiceRequest { .. } => self.orphan_calls.entry(id).or_default().0 += 1,
            EventKind::ServiceResponse { .. } => self.orphan_calls.entry(id).or_default().1 += 1,
            EventKind::Escalation { .. } => self.m.escalations += 1,
            _ => {}
        }
    }
}

/// The 1-based number of arrival phase `label` in `phases` (the labels seen so far, each once),
/// appending it when new: what [`TicketFacts::phase`] keeps instead of a copy of the label.
fn phase_number(phases: &mut Vec<String>, label: &str) -> u32 {
    let k = match phases.iter().position(|p| p == label) {
        Some(i) => i,
        None => {
            phases.push(label.to_string());
            phases.len() - 1
        }
    };
    u32::try_from(k + 1).expect("fewer than 2^32 phase labels")
}

impl TicketFacts {
    /// Its `ticket_opened`: `approved_cents` is what support approved, `phase` the number of
    /// its arrival phase (see [`phase_number`]).
    fn open(&mut self, approved_cents: u64, phase: u32) {
        self.opened = true;
        self.approved = approved_cents;
        self.phase = phase;
    }

    /// A tool result of `attempt`, the `seq`-th event. Whether it is a failure shown while a
    /// service call of that attempt still has an unknown outcome (in flight, or without a
    /// definite answer): what `unknown_not_shown_as_failure` forbids under `probe_status`.
    fn tool_result(&mut self, attempt: u32, outcome: Outcome, seq: u64) -> bool {
        *self.tool_results.entry(attempt) += 1;
        self.final_ok = outcome == Outcome::Ok;
        *self.last_results.entry(attempt) = Some(outcome);
        if outcome != Outcome::Fail {
            return false;
        }
        self.fails.push((attempt, seq));
        self.calls
            .values()
            .any(|c| c.attempt == attempt && c.requests > 0 && c.outcome_unknown())
    }

    /// Service call `call` of model attempt `attempt` sent its request at `at`.
    fn service_request(&mut self, call: u64, attempt: u32, at: SimTime) {
        let c = self.calls.entry(call);
        c.requests += 1;
        c.attempt = attempt;
        c.sent = at;
    }

    /// The service answered call `call`; `ok` when the answer reported a refund.
    fn service_response(&mut self, call: u64, ok: bool) {
        let c = self.calls.entry(call);
        c.responses += 1;
        c.ok |= ok;
    }

    /// Stripe answered a request of `call` with HTTP `status` (0: no response), with a refund
    /// (`refunded`) or not. A 200 with a refund, new or replayed, means this attempt's refund
    /// exists.
    fn stripe_response(
        &mut self,
        call: Option<u64>,
        attempt: Option<u32>,
        status: u16,
        refunded: bool,
    ) {
        if let Some(cf) = call.and_then(|c| self.calls.get_mut(&c)) {
            cf.stripe_status = Some(status);
        }
        if let (Some(a), 200, true) = (attempt, status, refunded) {
            *self.refunded_attempts.entry(a) = ();
        }
    }

    /// A money-moving refund of `amount_cents` created at `at`, by `attempt`'s `call` when
    /// the agent's path made it (a human's manual refund has neither).
    fn refund_created(
        &mut self,
        amount_cents: u64,
        at: SimTime,
        attempt: Option<u32>,
        call: Option<u64>,
    ) {
        self.refunds.push((amount_cents, at));
        if let Some(a) = attempt {
            *self.refunded_attempts.entry(a) = ();
        }
        if let Some(c) = call {
            self.refunding_calls.push(c);
        }
    }

    /// A pending refund (`amount_cents`, created at `created`) failed or was canceled: it
    /// moved no money after all and no longer counts for the ticket (which may now have none:
    /// a lost refund).
    fn refund_voided(&mut self, amount_cents: u64, created: SimTime) {
        self.refunds
            .remove_first(|&(a, c)| a == amount_cents && c == created);
    }

    /// Whether the last tool result of `attempt` was `info` ("outcome unknown; do not retry").
    fn last_result_was_info(&self, attempt: u32) -> bool {
        matches!(self.last_results.get(&attempt), Some(Some(Outcome::Info)))
    }

    /// Marks the ticket escalated; whether this is its first escalation.
    fn escalate(&mut self) -> bool {
        !std::mem::replace(&mut self.escalated, true)
    }
}

/// Stripe's answer by status: replays, 409, 400, 429, 5xx, and no response at all.
fn count_stripe_status(m: &mut Metrics, status: u16, outcome: ProviderOutcome) {
    match (status, outcome) {
        // A saved response replayed under its key, a refund or a saved 500: a replay, not a
        // new 5xx (Stripe's `Idempotent-Replayed: true`).
        (_, ProviderOutcome::Replayed) => m.stripe_replays += 1,
        // A finished duplicate refused (`provider.duplicate_rejected_status`): a 5xx counts as
        // one, any 4xx as a refusal with the 400s, so a 409 or 422 here is not taken for a
        // request still in flight.
        (s, ProviderOutcome::DuplicateRejected) if s >= 500 => m.stripe_500 += 1,
        (_, ProviderOutcome::DuplicateRejected) => m.stripe_400 += 1,
        // An in-flight duplicate: Stripe's 409, or 422 where `provider.in_flight_duplicate_status`
        // says so (the only 422 the fake provider sends).
        (409 | 422, _) => m.stripe_409 += 1,
        (400, _) => m.stripe_400 += 1,
        (429, _) => m.stripe_429 += 1,
        (s, _) if s >= 500 => m.stripe_500 += 1,
        (0, _) => m.stripe_no_response += 1,
        _ => {}
    }
}

/// A reconciliation alert: the tickets it names, the first alert, and the longest lag from a
/// duplicate to its alert.
fn count_alert(m: &mut Metrics, at: SimTime, tickets: usize, duplicate_at_ns: &[u64]) {
    m.reconciliation_alerts += tickets as u64;
    m.first_alert_ns.get_or_insert(at.as_nanos());
    for d in duplicate_at_ns {
        let lag = at.as_nanos().saturating_sub(*d);
        m.max_time_to_alert_ns = Some(m.max_time_to_alert_ns.unwrap_or(0).max(lag));
    }
}

/// Violations per invariant, with the first offending ticket: the one with the smallest order
/// key (its id for per-ticket verdicts, when it was reported for false failures), so the answer
/// does not depend on the order tickets close in.
/// (order key, ticket) of an invariant's first offender.
type FirstHit = (u64, u64);

#[derive(Default)]
struct Invariants {
    /// Name → (violations, the first offender as (order key, ticket)).
    found: BTreeMap<&'static str, (u64, Option<FirstHit>)>,
}

impl Invariants {
    fn hit(&mut self, name: &'static str, ticket: u64, order: u64) {
        let e = self.found.entry(name).or_insert((0, None));
        e.0 += 1;
        if e.1.is_none_or(|(o, _)| order < o) {
            e.1 = Some((order, ticket));
        }
    }
    fn count(&mut self, name: &'static str, n: u64) {
        self.found.entry(name).or_insert((0, None)).0 += n;
    }
    fn finish(self) -> Vec<InvariantResult> {
        INVARIANTS
            .iter()
            .map(|&name| {
                let (violations, first) = self.found.get(name).copied().unwrap_or((0, None));
                let first_ticket = first.map(|(_, t)| t);
                InvariantResult {
                    name: name.into(),
                    holds: violations == 0,
                    violations,
                    first_ticket,
                }
            })
            .collect()
    }
}

/// The invariants of DESIGN §3, in order.
pub(crate) const INVARIANTS: &[&str] = &[
    "at_most_one_refund_per_ticket",
    "no_over_refund",
    "no_lost_refund",
    "truthful_tool_results",
    "conservation",
    "truthful_probes",
    "unknown_not_shown_as_failure",
    "no_retry_after_do_not_retry",
];

/// One `expect` bound's verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExpectationResult {
    /// Metric name.
    pub metric: String,
    /// Its value in this run.
    pub value: f64,
    /// Lower bound.
    pub min: Option<f64>,
    /// Upper bound.
    pub max: Option<f64>,
    /// Whether the value is within the bounds.
    pub ok: bool,
    /// `ok`, `reproduced` (within bounds that assert a failure: a `min` above 0 on a metric
    /// that counts harm, as the incident's `duplicate_refund_tickets ≥ 1` does) or `failed`.
    pub verdict: &'static str,
    /// The bound's parts over seeds (`mean_min`, `mean_max`, `p90_max`,
    /// `violating_seeds_max`), which one run cannot check: only `refundsim check` over several
    /// seeds does. Left out of JSON when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub over_seeds: Vec<String>,
}

/// Metrics that count harm (an invariant's violations): a lower bound on one asserts that the
/// scenario reproduces a failure.
pub(crate) const HARM_METRICS: &[&str] = &[
    "duplicate_refund_tickets",
    "extra_refunds",
    "over_refund_cents",
    "lost_refunds",
    "false_failures",
    "untruthful_probes",
    "refunds_failed_after_200",
    "conservation_violations",
];

/// Whether a lower bound `lower` on `metric` asserts a failure: `lower` above 0 on one of
/// [`HARM_METRICS`] (the incident's `duplicate_refund_tickets ≥ 1`). Such a bound that holds
/// reads `reproduced`, not `ok`, in `run`, `check`, `--json` and the HTML.
pub(crate) fn asserts_harm(metric: &str, lower: f64) -> bool {
    lower > 0.0 && HARM_METRICS.contains(&metric)
}

/// Checks each bound against `metrics`. An unknown metric name fails its bound (value NaN);
/// the loader rejects those before a run.
pub fn expectations(metrics: &Metrics, expect: &BTreeMap<String, Bound>) -> Vec<ExpectationResult> {
    expect
        .iter()
        .map(|(name, b)| {
            let value = metrics.get(name).unwrap_or(f64::NAN);
            let ok = !value.is_nan()
                && b.min.is_none_or(|lo| value >= lo)
                && b.max.is_none_or(|hi| value <= hi);
            let over_seeds = [
                ("mean_min", b.mean_min),
                ("mean_max", b.mean_max),
                ("p90_max", b.p90_max),
                ("violating_seeds_max", b.violating_seeds_max),
            ]
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| format!("{k} {v}")))
            .collect();
            let asserts_harm = [b.min, b.mean_min]
                .into_iter()
                .flatten()
                .any(|lo| asserts_harm(name, lo));
            ExpectationResult {
                metric: name.clone(),
                value,
                min: b.min,
                max: b.max,
                ok,
                verdict: match (ok, asserts_harm) {
                    (false, _) => "failed",
                    (true, true) => "reproduced",
                    (true, false) => "ok",
                },
                over_seeds,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An in-flight duplicate counts as `stripe_409` whether the provider answers 409 or 422
    /// (`provider.in_flight_duplicate_status`); a 400 stays a 400.
    #[test]
    fn in_flight_duplicates_count_as_409_with_either_status() {
        let mut m = Metrics::default();
        count_stripe_status(&mut m, 409, ProviderOutcome::IdempotencyKeyInUse);
        count_stripe_status(&mut m, 422, ProviderOutcome::IdempotencyError);
        count_stripe_status(&mut m, 422, ProviderOutcome::DuplicateInProgress);
        count_stripe_status(&mut m, 400, ProviderOutcome::IdempotencyError);
        count_stripe_status(&mut m, 200, ProviderOutcome::Replayed);
        assert_eq!((m.stripe_409, m.stripe_400, m.stripe_replays), (3, 1, 1));
        // A finished duplicate refused is a refusal, whatever its 4xx; its 500 is a 5xx.
        count_stripe_status(&mut m, 422, ProviderOutcome::DuplicateRejected);
        count_stripe_status(&mut m, 409, ProviderOutcome::DuplicateRejected);
        count_stripe_status(&mut m, 500, ProviderOutcome::DuplicateRejected);
        assert_eq!((m.stripe_409, m.stripe_400, m.stripe_500), (3, 3, 1));
    }

    /// Every status lands in exactly its own counter, once.
    #[test]
    fn each_stripe_status_has_its_counter() {
        let counters = |m: &Metrics| {
            [
                m.stripe_replays,
                m.stripe_409,
                m.stripe_400,
                m.stripe_429,
                m.stripe_500,
                m.stripe_no_response,
            ]
        };
        let cases = [
            (200, ProviderOutcome::Replayed, [1, 0, 0, 0, 0, 0]),
            (
                409,
                ProviderOutcome::IdempotencyKeyInUse,
                [0, 1, 0, 0, 0, 0],
            ),
            (
                400,
                ProviderOutcome::ChargeAlreadyRefunded,
                [0, 0, 1, 0, 0, 0],
            ),
            (429, ProviderOutcome::LockTimeout, [0, 0, 0, 1, 0, 0]),
            (429, ProviderOutcome::RateLimited, [0, 0, 0, 1, 0, 0]),
            (503, ProviderOutcome::ApiError, [0, 0, 0, 0, 1, 0]),
            (0, ProviderOutcome::SdkTimeout, [0, 0, 0, 0, 0, 1]),
            (0, ProviderOutcome::ConnectionLost, [0, 0, 0, 0, 0, 1]),
            (0, ProviderOutcome::ConnectFailed, [0, 0, 0, 0, 0, 1]),
            (200, ProviderOutcome::Created, [0, 0, 0, 0, 0, 0]),
            (402, ProviderOutcome::InvalidRequest, [0, 0, 0, 0, 0, 0]),
        ];
        for (status, outcome, want) in cases {
            let mut m = Metrics::default();
            count_stripe_status(&mut m, status, outcome);
            count_stripe_status(&mut m, status, outcome);
            assert_eq!(counters(&m), want.map(|n| 2 * n), "{status} {outcome}");
        }
    }

    /// A saved 500 replayed under its key is a replay, not a new 5xx (issue 13).
    #[test]
    fn a_replayed_500_counts_as_a_replay() {
        let mut m = Metrics::default();
        count_stripe_status(&mut m, 500, ProviderOutcome::Replayed);
        count_stripe_status(&mut m, 500, ProviderOutcome::ApiError);
        assert_eq!((m.stripe_replays, m.stripe_500), (1, 1));
    }

    /// Refunds are counted by their typed fields: a service refund per attempt, a second one is
    /// a duplicate; a human's refund counts as manual; a pending refund that settles `failed`
    /// no longer counts for its ticket.
    #[test]
    fn refunds_count_by_who_made_them_and_how_they_settled() {
        use crate::history::{Caller, RefundStatus};
        let ev = |ms: u64, ticket: u64, attempt: Option<u32>, kind: EventKind| Event {
            t_ns: SimTime::from_millis(ms),
            ticket: Some(ticket),
            attempt,
            call: attempt.map(|a| u64::from(a) + 10 * ticket),
            kind,
        };
        let opened = |t: u64| {
            ev(
                0,
                t,
                None,
                EventKind::TicketOpened {
                    amount_cents: 4200,
                    charge_amount_cents: 10_000,
                    phase: "p".into(),
                },
            )
        };
        let created = |ms, t, attempt, status: RefundStatus, by: Caller| {
            ev(
                ms,
                t,
                attempt,
                EventKind::RefundCreated {
                    refund_id: format!("re_{t}_{ms}"),
                    amount_cents: 4200,
                    status,
                    moves_money: status.moves_money(),
                    by,
                },
            )
        };
        let history = History {
            events: vec![
                opened(1),
                created(10, 1, Some(0), RefundStatus::Succeeded, Caller::Service),
                created(20, 1, Some(1), RefundStatus::Succeeded, Caller::Service),
                opened(2),
                created(30, 2, None, RefundStatus::Succeeded, Caller::Human),
                opened(3),
                created(40, 3, Some(0), RefundStatus::Pending, Caller::Service),
                ev(
                    50,
                    3,
                    Some(0),
                    EventKind::RefundSettled {
                        refund_id: "re_3_40".into(),
                        amount_cents: 4200,
                        created_ns: SimTime::from_millis(40).as_nanos(),
                        status: RefundStatus::Failed,
                        moves_money: false,
                    },
                ),
            ],
        };
        let gauges = ModelGauges {
            max_pool_queue_depth: 0,
            pool_acquired: 0,
            pool_released: 0,
            pool_waits: 0,
            pool_wait_ns: 0,
            pool_waits_over_threshold: 0,
            pool_wait_threshold: SimTime::ZERO,
            pool_busy_ns: 0,
            pool_capacity_ns: 0,
            stripe_in_flight: 0,
            premature_evictions: 0,
        };
        let m = evaluate(&history, &gauges);
        assert_eq!(
            (
                m.refunds_created,
                m.manual_refunds,
                m.duplicate_refund_tickets,
                m.extra_refunds,
                m.refunds_failed_after_200,
                m.lost_refunds,
            ),
            (4, 1, 1, 1, 1, 1)
        );
    }

    #[test]
    fn nearest_rank_percentiles() {
        let p = Percentiles::of((1..=100).map(|ms| ms * 1_000_000).collect());
        assert_eq!((p.max_ms, p.count), (100.0, 100), "max and count are exact");
        // Nearest rank (50 ms, 99 ms), rounded up within the histogram's 3 significant digits.
        for (got, exact) in [(p.p50_ms, 50.0), (p.p99_ms, 99.0)] {
            assert!(got >= exact && got <= exact * 1.001, "{got} vs {exact}");
        }
        // A sample far larger than any kept vector: 1,000,000 values, fixed memory.
        let mut h = LatencyHistogram::default();
        for i in 0..1_000_000u64 {
            h.record(i * 1000);
        }
        let p = h.percentiles();
        assert!(
            (p.p50_ms - 500.0).abs() <= 0.5 && (p.p99_ms - 990.0).abs() <= 1.0,
            "{p:?}"
        );
        assert_eq!(p.max_ms, 999.999);
        assert_eq!(Percentiles::of(vec![]).max_ms, 0.0);
    }
}

#[cfg(test)]
mod metric_names {
    use super::*;

    #[test]
    fn every_expectable_metric_exists_in_the_report_and_vice_versa() {
        let m = Metrics::default();
        for name in crate::scenario::METRICS {
            assert!(
                m.get(name).is_some(),
                "METRICS lists {name}, which the report lacks"
            );
        }
        let v = serde_json::to_value(&m).unwrap();
        for (k, val) in v.as_object().unwrap() {
            if val.is_u64() {
                assert!(
                    crate::scenario::METRICS.contains(&k.as_str()),
                    "report metric {k} cannot be bounded in `expect`"
                );
            }
        }
    }
}
