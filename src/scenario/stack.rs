//! The compiled stack: the one place that knows what a scenario's stack of retrying layers does
//! as a whole — which added layers sit where, how many tries each layer can make, how many
//! Stripe requests one ticket's tool calls can fan out to, and what a timeout means in time: how
//! long the executor keeps the model waiting for one try (its answer time) and for all of them
//! (its deadline), and how long after a first request each retrying layer's last retry can
//! leave (its retry span). The model (`model::world`), validation, the run budget, lint and
//! explore read it here instead of re-deriving it.

use std::time::Duration;

use super::config::{DroppedConnectionRetry, OnTimeout, Scenario};
use super::layers::{layers_at, BackoffKind, Position, RetryLayer};

/// The SDK's largest wait between network retries: stripe-node's `maxNetworkRetryDelay`, 5 s
/// (`lib/net/HttpClient` and `StripeResource`; the Python and Go SDKs cap at 2 s and 5 s).
pub(super) const SDK_MAX_RETRY_DELAY: Duration = Duration::from_secs(5);

/// Every position an added layer can take, top (the agent's side) to bottom (the provider's).
pub const POSITIONS: [Position; 4] = [
    Position::AboveModel,
    Position::AroundTool,
    Position::BeforeService,
    Position::BeforeProvider,
];

/// One retrying layer of the stack, built-in or added, and the most tries it makes of what it
/// wraps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerTries {
    /// The field that sets its retries (`agent.retry.max_retries`,
    /// `layers.sidecar.max_retries`, `executor.retry.max_retries`,
    /// `refunds_service.stripe_client.max_network_retries`).
    pub field: String,
    /// Its most tries: retries + 1 (the SDK's one extra retry of a dropped connection,
    /// `retry_dropped_connection`, included).
    pub tries: u32,
}

/// A scenario's stack, compiled once: the added layers at each position, top to bottom, and
/// every retrying layer's tries.
#[derive(Clone, Debug)]
pub struct Stack {
    at: [Vec<(String, RetryLayer)>; 4],
    tries: Vec<LayerTries>,
    executor_deadline: Duration,
    executor_timeout: Duration,
    executor_answer: Duration,
    model_retries_span: Duration,
    sdk_retries_span: Duration,
}

impl Stack {
    /// Compiles `s`'s stack (`stack`, or the built-in layers; see [`layers_at`]). Names in
    /// `stack` that `layers` does not define are left out (validation refuses them).
    pub fn of(s: &Scenario) -> Stack {
        let at = POSITIONS.map(|p| {
            layers_at(s, p)
                .into_iter()
                .map(|(n, l)| (n.to_string(), l.clone()))
                .collect()
        });
        let mut stack = Stack {
            at,
            tries: Vec::new(),
            executor_deadline: executor_deadline(s),
            executor_timeout: s.executor.timeout,
            executor_answer: executor_answer(s),
            model_retries_span: Duration::ZERO,
            sdk_retries_span: sdk_retries_span(s),
        };
        // Per model retry: the executor's answer, the model's think p99, its call overhead.
        stack.model_retries_span = stack
            .executor_answer
            .saturating_add(s.agent.think_time.p99())
            .saturating_add(s.agent.call_overhead)
            .saturating_mul(s.agent.retry.max_retries);
        stack.tries = stack.tries_top_down(s);
        stack
    }

    /// The added layers at `position`, top to bottom, with their names.
    pub fn layers_at(&self, position: Position) -> &[(String, RetryLayer)] {
        let i = POSITIONS
            .iter()
            .position(|p| *p == position)
            .unwrap_or_default();
        &self.at[i]
    }

    /// Every retrying layer, top to bottom: the run-level retry, the model's rule, framework
    /// layers, the executor's retry, proxies before the service, the SDK, egress proxies. Each
    /// with its most tries (1 for a layer that never retries).
    pub fn tries(&self) -> &[LayerTries] {
        &self.tries
    }

    /// The most Stripe requests one ticket's tool calls can fan out to through the stack: the
    /// product of every layer's tries (a request per try of every layer below it).
    pub fn fan_out(&self) -> f64 {
        self.tries.iter().map(|l| f64::from(l.tries)).product()
    }

    /// How long the executor can keep the model waiting for one tool call: `executor.timeout`
    /// per try, times its tries, plus the longest backoffs between them (LangChain's formula
    /// at the top of its jitter, as `executor.retry` draws it). `executor.timeout` without an
    /// executor retry.
    pub fn executor_deadline(&self) -> Duration {
        self.executor_deadline
    }

    /// How long the executor takes to answer one tool call that times out: `executor.timeout`,
    /// plus `executor.probe_max_wait` when `on_timeout` is `probe_status` (it probes the service
    /// for up to that long before it answers).
    pub fn executor_answer(&self) -> Duration {
        self.executor_answer
    }

    /// An upper estimate of how long after a first try the executor's last retry starts: its
    /// deadline ([`Stack::executor_deadline`]) less the first try's timeout. Zero without an
    /// executor `retry`.
    pub fn executor_retries_span(&self) -> Duration {
        self.executor_deadline.saturating_sub(self.executor_timeout)
    }

    /// An upper estimate of how long after a first tool call the model's last retry of it
    /// starts: per retry (`agent.retry.max_retries`), the executor's answer time, the model's
    /// `think_time` p99 and its `call_overhead`. Zero when the model never retries.
    pub fn model_retries_span(&self) -> Duration {
        self.model_retries_span
    }

    /// An upper estimate of how long after its first request the SDK's last network retry
    /// leaves: per retry (`max_network_retries`), one try (the SDK's `timeout`, or Stripe's
    /// latency p99 when shorter) and its largest backoff, [`SDK_MAX_RETRY_DELAY`].
    pub fn sdk_retries_span(&self) -> Duration {
        self.sdk_retries_span
    }

    /// An upper estimate of how long after its first try the last retry of added layer `l`
    /// leaves, when one try lasts `per_try` (what the caller knows a try waits on): per retry,
    /// `per_try` and the backoff at its largest ([`largest_backoff`]).
    /// A hedge's last try leaves `hedging_delay` after the one before it at the latest (sooner
    /// when a try fails), so its span is `max_retries × hedging_delay`, whatever `per_try`.
    pub fn layer_retries_span(l: &RetryLayer, per_try: Duration) -> Duration {
        if crate::scenario::layer_kinds::defaults(l.kind).hedges {
            return l.hedging_delay().saturating_mul(l.retries());
        }
        (1..=l.all_retries()).fold(Duration::ZERO, |t, n| {
            t.saturating_add(per_try)
                .saturating_add(largest_backoff(l, n))
        })
    }

    fn tries_top_down(&self, s: &Scenario) -> Vec<LayerTries> {
        let mut out = Vec::new();
        let added = |out: &mut Vec<LayerTries>, p: Position| {
            for (name, l) in self.layers_at(p) {
                out.push(LayerTries {
                    field: format!("layers.{name}.max_retries"),
                    tries: l
                        .all_retries()
                        .saturating_add(1)
                        .saturating_mul(l.copies_per_try()),
                });
            }
        };
        added(&mut out, Position::AboveModel);
        out.push(LayerTries {
            field: "agent.retry.max_retries".into(),
            tries: s.agent.retry.max_retries.saturating_add(1),
        });
        added(&mut out, Position::AroundTool);
        out.push(LayerTries {
            field: "executor.retry.max_retries".into(),
            tries: s
                .executor
                .retry
                .as_ref()
                .map_or(0, |r| r.max_retries)
                .saturating_add(1),
        });
        added(&mut out, Position::BeforeService);
        let sdk = &s.refunds_service.stripe_client;
        let dropped = u32::from(sdk.retry_dropped_connection != DroppedConnectionRetry::Off);
        out.push(LayerTries {
            field: "refunds_service.stripe_client.max_network_retries".into(),
            tries: sdk
                .max_network_retries
                .saturating_add(1)
                .saturating_add(dropped),
        });
        added(&mut out, Position::BeforeProvider);
        out
    }
}

/// See [`Stack::executor_answer`].
fn executor_answer(s: &Scenario) -> Duration {
    let ex = &s.executor;
    match ex.on_timeout {
        OnTimeout::ProbeStatus => ex.timeout.saturating_add(ex.probe_max_wait),
        OnTimeout::ReportError => ex.timeout,
    }
}

/// See [`Stack::sdk_retries_span`].
fn sdk_retries_span(s: &Scenario) -> Duration {
    let c = &s.refunds_service.stripe_client;
    c.timeout
        .min(s.stripe.latency.p99())
        .saturating_add(SDK_MAX_RETRY_DELAY)
        .saturating_mul(c.max_network_retries)
}

/// The largest wait before retry `n` (1-based) of added layer `l`: its backoff before jitter
/// (`base` for a constant backoff, `base · 2^(n−1)` for Envoy's exponential one), capped at
/// `max_delay`; full and equal jitter only shorten it.
pub(super) fn largest_backoff(l: &RetryLayer, n: u32) -> Duration {
    let base = l.base();
    let d = match l.backoff.kind {
        BackoffKind::Constant => base,
        BackoffKind::Exponential => {
            let factor = 2f64.powi(n.saturating_sub(1).min(62) as i32);
            Duration::try_from_secs_f64((base.as_secs_f64() * factor).max(0.0))
                .unwrap_or(Duration::MAX)
        }
    };
    d.min(l.max_delay().max(base))
}

/// See [`Stack::executor_deadline`].
fn executor_deadline(s: &Scenario) -> Duration {
    let Some(r) = &s.executor.retry else {
        return s.executor.timeout;
    };
    let mut t = s
        .executor
        .timeout
        .saturating_mul(r.max_retries.saturating_add(1));
    for k in 0..r.max_retries {
        let d = r.initial_delay.as_secs_f64() * r.backoff_factor.powi(k.min(62) as i32);
        let d = (d.min(r.max_delay.as_secs_f64()) * (1.0 + r.jitter)).max(0.0);
        t = t.saturating_add(Duration::try_from_secs_f64(d).unwrap_or(Duration::MAX));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recipe(name: &str) -> Scenario {
        let path = crate::repo_root().join(format!("scenarios/recipes/{name}.json"));
        crate::scenario::load(&path, &[], &[]).expect("recipe loads")
    }

    /// `stacked-retries`: a framework retry (3 tries) above the executor, a sidecar (2 tries)
    /// before the service, the model's rule (2 tries): 12 requests per ticket, top to bottom.
    #[test]
    fn the_stacked_retries_recipe_fans_out_to_12() {
        let s = recipe("stacked-retries");
        let stack = Stack::of(&s);
        let tries: Vec<(&str, u32)> = stack
            .tries()
            .iter()
            .map(|l| (l.field.as_str(), l.tries))
            .filter(|(_, t)| *t > 1)
            .collect();
        assert_eq!(stack.fan_out(), 12.0, "{tries:?}");
        assert_eq!(tries.len(), 3, "{tries:?}");
    }

    /// stripe-node's extra retry of a dropped connection is one more try of the SDK, counted by
    /// validation's cap and the run budget alike.
    #[test]
    fn the_sdks_dropped_connection_retry_is_a_try() {
        let mut s = recipe("stripe-node-reset-retry");
        let sdk = |st: &Stack| {
            st.tries()
                .iter()
                .find(|l| l.field == "refunds_service.stripe_client.max_network_retries")
                .map(|l| l.tries)
        };
        let with = Stack::of(&s);
        s.refunds_service.stripe_client.retry_dropped_connection = DroppedConnectionRetry::Off;
        let without = Stack::of(&s);
        assert_eq!(sdk(&with), sdk(&without).map(|t| t + 1));
        assert_eq!(
            with.fan_out(),
            without.fan_out() / f64::from(sdk(&without).unwrap()) * f64::from(sdk(&with).unwrap())
        );
    }

    /// The executor's deadline: 3 tries of 8 s and the two longest backoffs (1 s and 2 s, at the
    /// top of a 0.5 jitter: 1.5 s and 3 s).
    #[test]
    fn the_executors_deadline_counts_its_tries_and_longest_backoffs() {
        let mut s = recipe("stacked-retries");
        s.executor.timeout = Duration::from_secs(8);
        s.executor.retry = Some(
            serde_json::from_value(serde_json::json!({
                "max_retries": 2, "initial_delay": "1s", "backoff_factor": 2.0,
                "max_delay": "10s", "jitter": 0.5
            }))
            .unwrap(),
        );
        assert_eq!(
            Stack::of(&s).executor_deadline(),
            Duration::from_millis(24_000 + 1_500 + 3_000)
        );
        s.executor.retry = None;
        assert_eq!(Stack::of(&s).executor_deadline(), Duration::from_secs(8));
    }

    /// The executor answers a timed-out call after its timeout, plus `probe_max_wait` when it
    /// probes; the model's retries span one such answer, a think p99 and a call overhead each.
    #[test]
    fn the_executors_answer_counts_its_probe_and_the_models_retries_span_it() {
        let mut s = recipe("stacked-retries");
        s.executor.timeout = Duration::from_secs(8);
        s.executor.on_timeout = OnTimeout::ReportError;
        assert_eq!(Stack::of(&s).executor_answer(), Duration::from_secs(8));
        s.executor.on_timeout = OnTimeout::ProbeStatus;
        s.executor.probe_max_wait = Duration::from_secs(30);
        let stack = Stack::of(&s);
        assert_eq!(stack.executor_answer(), Duration::from_secs(38));
        let round = Duration::from_secs(38) + s.agent.think_time.p99() + s.agent.call_overhead;
        assert_eq!(s.agent.retry.max_retries, 1);
        assert_eq!(stack.model_retries_span(), round);
        s.agent.retry.max_retries = 0;
        assert_eq!(Stack::of(&s).model_retries_span(), Duration::ZERO);
    }

    /// The SDK's span: per network retry the shorter of its timeout and Stripe's p99, and
    /// stripe-node's largest backoff (5 s).
    #[test]
    fn the_sdks_retries_span_counts_its_largest_backoff() {
        let mut s = recipe("stacked-retries");
        let c = &mut s.refunds_service.stripe_client;
        c.max_network_retries = 2;
        c.timeout = Duration::from_millis(1);
        assert_eq!(
            Stack::of(&s).sdk_retries_span(),
            Duration::from_millis(2 * (1 + 5_000))
        );
        s.refunds_service.stripe_client.max_network_retries = 0;
        assert_eq!(Stack::of(&s).sdk_retries_span(), Duration::ZERO);
    }

    /// An added layer's span: per retry one try and Envoy's backoff at its largest, doubling
    /// from `base` and capped at `max_delay`.
    #[test]
    fn a_layers_retries_span_counts_each_retrys_largest_backoff() {
        let l: RetryLayer = serde_json::from_value(serde_json::json!({
            "kind": "retry", "max_retries": 3,
            "backoff": {"kind": "exponential", "base": "100ms", "max": "300ms"}
        }))
        .unwrap();
        assert_eq!(largest_backoff(&l, 1), Duration::from_millis(100));
        assert_eq!(largest_backoff(&l, 2), Duration::from_millis(200));
        assert_eq!(largest_backoff(&l, 3), Duration::from_millis(300));
        assert_eq!(
            Stack::layer_retries_span(&l, Duration::from_secs(1)),
            Duration::from_millis(3_000 + 100 + 200 + 300)
        );
    }

    /// A hedge's last try leaves `max_retries × hedging_delay` after its first at the latest,
    /// however long one try lasts (it does not wait for an answer).
    #[test]
    fn a_hedges_span_is_its_delays() {
        let l: RetryLayer = serde_json::from_value(serde_json::json!({
            "kind": "hedge", "max_retries": 3, "hedging_delay": "500ms"
        }))
        .unwrap();
        assert_eq!(
            Stack::layer_retries_span(&l, Duration::from_secs(10)),
            Duration::from_millis(1_500)
        );
        let polly = RetryLayer::new(crate::scenario::LayerKind::Hedge);
        assert_eq!(
            Stack::layer_retries_span(&polly, Duration::from_secs(10)),
            Duration::from_secs(2)
        );
    }
}
