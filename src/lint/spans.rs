//! How long after a first request a retry can reach the provider, per retrying layer: the
//! compiled stack's retry spans ([`crate::scenario::Stack`]: timeouts, probes, backoff at its
//! largest, think time) plus what only lint estimates, the burst's p99 pool wait and a service
//! request's p99 (see [`super::burst`]). Upper estimates, for the rules that compare a retry
//! with a provider's dedup window or key retention.

use std::time::Duration;

use super::burst::estimate;
use crate::scenario::{Position, RetryLayer, Scenario, Stack};

fn secs(x: f64) -> Duration {
    Duration::try_from_secs_f64(x.max(0.0)).unwrap_or(Duration::MAX)
}

/// The burst's p99 pool wait (see [`super::burst`]): how much later than its first try a retry
/// from above the service may reach the provider for queueing alone.
fn pool_wait(s: &Scenario) -> Duration {
    secs(estimate(s).pool_wait_s)
}

/// An upper estimate of how long after its first try a retry of added layer `l` at `position`
/// reaches the provider: [`Stack::layer_retries_span`] with one try lasting its
/// `per_try_timeout`, else what the layer waits on (the executor's answer time above the
/// executor, the burst p99 of a service request in front of the service, the provider's p99
/// after the SDK); plus the burst's p99 pool wait when the retry passes the pool again.
pub(super) fn layer_span(s: &Scenario, position: Position, l: &RetryLayer) -> Duration {
    let per_try = l.per_try_timeout.unwrap_or_else(|| match position {
        Position::AboveModel | Position::AroundTool => Stack::of(s).executor_answer(),
        Position::BeforeService => secs(estimate(s).p99_s),
        Position::BeforeProvider => s.stripe.latency.p99(),
    });
    let t = Stack::layer_retries_span(l, per_try);
    if position != Position::BeforeProvider && l.retries() > 0 {
        t.saturating_add(pool_wait(s))
    } else {
        t
    }
}

/// An upper estimate of how long after the first request the SDK's last network retry reaches
/// the provider ([`Stack::sdk_retries_span`]).
pub(super) fn sdk_span(s: &Scenario) -> Duration {
    Stack::of(s).sdk_retries_span()
}

/// An upper estimate of how long after the first request a retry by the model's rule or the
/// executor's `retry` reaches the provider, and which of them: the longer of
/// [`Stack::model_retries_span`] and [`Stack::executor_retries_span`], plus the burst's p99 pool
/// wait. `model` and `executor` say which of them retry the tool. `None` when neither does.
pub(super) fn upper_retry_span(
    s: &Scenario,
    model: bool,
    executor: bool,
) -> Option<(Duration, &'static str)> {
    let stack = Stack::of(s);
    let mut best: Option<(Duration, &'static str)> = None;
    if model {
        best = Some((stack.model_retries_span(), "the model's retries"));
    }
    if let (true, Some(_)) = (executor, &s.executor.retry) {
        let t = stack.executor_retries_span();
        if best.is_none_or(|(b, _)| t > b) {
            best = Some((t, "the executor's retries"));
        }
    }
    best.map(|(t, what)| (t.saturating_add(pool_wait(s)), what))
}
