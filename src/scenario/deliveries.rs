//! The `deliveries` section: how the event that starts the agent on a ticket (a helpdesk's
//! `ticket.created` webhook, a queue message) reaches it. Webhooks are delivered at least once:
//! Stripe's and Zendesk's webhook docs both tell consumers to expect the same event more than
//! once and to dedup on its id.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::latency::LatencyDist;

/// Delivery of a ticket's triggering event to the agent. Default: every event delivered
/// exactly once (what every run before this section existed did).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Deliveries {
    /// Probability that a ticket's triggering event is delivered a second time (at-least-once
    /// delivery: the sender did not see the consumer's 2xx in time, or retried after a network
    /// error, and sent the same event again). In [0, 1]. Default: 0.
    #[serde(default)]
    pub duplicate_probability: f64,
    /// Delay of the second delivery after the first. Default: lognormal, p50 10 s, p99 2 min
    /// (a sender that retries after its own delivery timeout).
    #[serde(default = "default_duplicate_delay")]
    pub duplicate_delay: LatencyDist,
    /// What the consumer does with a delivery whose event id it has seen: `none` (default:
    /// every delivery starts a handler) or `event_id` (it records event ids and drops a
    /// delivery it has seen: the mitigation both Stripe and Zendesk recommend).
    #[serde(default)]
    pub consumer_dedup: ConsumerDedup,
}

fn default_duplicate_delay() -> LatencyDist {
    LatencyDist::new(Duration::from_secs(10), Duration::from_secs(120))
}

impl Default for Deliveries {
    fn default() -> Self {
        Deliveries {
            duplicate_probability: 0.0,
            duplicate_delay: default_duplicate_delay(),
            consumer_dedup: ConsumerDedup::None,
        }
    }
}

impl Deliveries {
    /// Whether the section is at its defaults (then it is left out of `refundsim show`).
    pub fn is_default(&self) -> bool {
        *self == Deliveries::default()
    }

    /// Whether a ticket's event may be delivered twice.
    pub fn at_least_once(&self) -> bool {
        self.duplicate_probability > 0.0
    }
}

/// Consumer-side deduplication of deliveries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConsumerDedup {
    /// Every delivery starts the agent on the ticket (the bug).
    #[default]
    None,
    /// The consumer records each event id it has handled and drops a delivery whose id it has
    /// seen (the mitigation).
    EventId,
}
