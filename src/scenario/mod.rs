//! Scenario files: the format (serde), defaults, validation, and policy merge patches.

pub mod aliases;
mod bound_rules;
pub mod budget;
mod comments;
mod config;
mod deliveries;
mod dupkeys;
pub mod effect;
mod error;
mod gate_config;
mod gate_expect;
mod latency;
pub mod layer_kinds;
pub mod layers;
mod limits;
mod load;
mod locate;
mod modes;
pub mod provider;
pub mod replay;
mod retry_layer;
mod rules;
mod serde_error;
mod set;
mod shape;
mod stack;
#[cfg(test)]
mod test_support;
mod validate;

pub use crate::text::short_numbers;
pub(crate) use crate::text::{dollars, group_thousands};
pub use budget::{OverBudget, RunBudget, RunWatch};
pub use config::*;
pub use deliveries::{
    AckAt, ConsumerDedup, DedupRecord, Deliveries, DuplicateFrom, QueueDelivery, Rebalance,
    RecordAt, KAFKA_DEFAULT_MAX_POLL_INTERVAL, SQS_DEFAULT_MESSAGE_RETENTION,
    SQS_DEFAULT_VISIBILITY_TIMEOUT, SQS_MAX_VISIBILITY_TIMEOUT,
};
pub use effect::Effect;
pub(crate) use error::{echo, shorten_backquoted, shorten_quoted};
pub use error::{Location, ScenarioError, ValidationError};
pub use gate_config::{
    Exploration, GateConfig, DEFAULT_EXPLORE_CASES, DEFAULT_GATE_SEEDS, MAX_EXPLORE_CASES,
    SAFETY_INVARIANTS,
};
pub use gate_expect::ExpectSource;
pub use layers::{
    compiled, layers_at, stack_of, Backoff, BackoffKind, BreakerDefaults, BreakerSettings,
    Checkpoint, Jitter, LayerKind, Position, ReportTimeout, RetryBudget, RetryLayer, RetryOn,
    RetryThrottling, DEFAULT_JITTER_FACTOR, MCP_DEFAULT_DUPLICATE_GAP, MCP_DEFAULT_REQUEST_TIMEOUT,
};
pub(crate) use limits::MAX_TRIES_PER_TOOL_CALL;
pub use limits::{MAX_CENTS, MAX_DURATION, MAX_FIRST_TICKET_ID, MAX_HORIZON, METRICS};
pub use load::{
    load, load_str, load_text, load_with_expect_source, load_within, not_utf8_at, schema_json,
};
pub(crate) use locate::{locate, offset_to_line_col};
pub use provider::{EffectLimit, Provider, ProviderKind, Settle};
pub use replay::{
    OutsideRefund, PoolCalibration, RecordedCall, RecordedRequest, RecordedTicket, Replay,
};
pub use stack::{LayerTries, Stack, POSITIONS};
pub use validate::validate;
