//! The compiled stack: the one place that knows what a scenario's stack of retrying layers does
//! as a whole — which added layers sit where, how many tries each layer can make, how many
//! Stripe requests one ticket's tool calls can fan out to, and how long the executor can keep
//! the model waiting. The model (`model::world`), validation, the run budget, lint and explore
//! read it here instead of re-deriving it.

use std::time::Duration;

use super::config::{DroppedConnectionRetry, Scenario};
use super::layers::{layers_at, Position, RetryLayer};

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
        };
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

    fn tries_top_down(&self, s: &Scenario) -> Vec<LayerTries> {
        let mut out = Vec::new();
        let added = |out: &mut Vec<LayerTries>, p: Position| {
            for (name, l) in self.layers_at(p) {
                out.push(LayerTries {
                    field: format!("layers.{name}.max_retries"),
                    tries: l.retries().saturating_add(1),
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
}
