//! The limits that keep a run finite and its numbers exact: the longest durations, the largest
//! counts and amounts a scenario may hold, and the metric names its `expect` may bound. A leaf:
//! the configuration's types and schema, the validation and the layers read them.

use std::time::Duration;

/// Metric names a scenario's `expect` may bound. This list must match the metric names of the
/// run report (`metrics` / `report`); a name missing here cannot be bounded, a name here that the
/// report lacks would never be checked. The `latency_*_ms` names are the report's
/// `latency.{tool_call,pool_wait,stripe}.{p50_ms,p99_ms,max_ms}`, in ms (one word each, so a
/// `--set expect.NAME.max=…` path can name them).
pub const METRICS: &[&str] = &[
    "tickets",
    "tool_calls",
    "executor_timeouts",
    "retries",
    "escalations",
    "refunds_created",
    "refunds_failed_after_200",
    "duplicate_refund_tickets",
    "extra_refunds",
    "over_refund_cents",
    "lost_refunds",
    "false_failures",
    "stripe_replays",
    "stripe_409",
    "stripe_400",
    "stripe_429",
    "stripe_500",
    "stripe_no_response",
    "manual_refunds",
    "status_probes",
    "untruthful_probes",
    "conservation_violations",
    "max_pool_queue_depth",
    "pool_wait_mean_ms",
    "pool_wait_over_threshold_fraction",
    "pool_utilisation",
    "reconciliation_alerts",
    "duplicate_deliveries",
    "deliveries_deduped",
    "breaker_rejections",
    "latency_tool_call_p50_ms",
    "latency_tool_call_p99_ms",
    "latency_tool_call_max_ms",
    "latency_pool_wait_p50_ms",
    "latency_pool_wait_p99_ms",
    "latency_pool_wait_max_ms",
    "latency_stripe_p50_ms",
    "latency_stripe_p99_ms",
    "latency_stripe_max_ms",
];

/// Longest allowed horizon: 30 days.
pub const MAX_HORIZON: Duration = Duration::from_secs(30 * 24 * 3600);
/// Longest allowed value of any other duration field: 365 days (virtual time is an integer count
/// of nanoseconds, which holds about 584 years; the cap keeps sums of durations far from overflow).
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);
/// Largest allowed `arrivals.first_ticket_id` (2^53, so ticket ids stay exact in JSON readers).
pub const MAX_FIRST_TICKET_ID: u64 = 1 << 53;
/// Largest amount in cents anywhere in a scenario ($10 billion), so money sums cannot overflow.
pub const MAX_CENTS: u64 = 1_000_000_000_000;
/// Largest retry count (model, executor layer, SDK) and human attempts: 100.
pub(crate) const MAX_RETRIES: u32 = 100;
/// Largest `stripe.faults.latency_spike_factor`: 1000.
pub(crate) const MAX_SPIKE_FACTOR: f64 = 1000.0;
/// Shortest `reconciliation.interval`: 1 s.
pub(crate) const MIN_RECONCILIATION_INTERVAL: Duration = Duration::from_secs(1);

/// Most Stripe requests one ticket's tool calls may fan out to through the stack's retries
/// ([`Stack::fan_out`](super::stack::Stack::fan_out)): 1,000 (the `stacked-retries` recipe makes 12).
pub(crate) const MAX_TRIES_PER_TOOL_CALL: f64 = 1000.0;
