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
    /// Where the second delivery comes from: `same_event` (the sender resends the event, with
    /// its event id) or `other_trigger` (a second trigger for the same ticket — the helpdesk's
    /// `ticket.updated` webhook beside `ticket.created`, an email-to-ticket integration, a
    /// scheduled sweep — with an event id of its own, `evt_{ticket}_b`, so a consumer that
    /// dedups by event id does not recognise it). Default: `same_event`.
    #[serde(default, skip_serializing_if = "DuplicateFrom::is_same_event")]
    pub duplicate_from: DuplicateFrom,
    /// What the consumer does with a delivery whose event id it has seen: `none` (default:
    /// every delivery starts a handler) or `event_id` (it records event ids and drops a
    /// delivery it has seen: the mitigation both Stripe and Zendesk recommend).
    #[serde(default)]
    pub consumer_dedup: ConsumerDedup,
    /// A queue the event is read from, with a visibility timeout (SQS, Celery on Redis): each
    /// receive hides the message for `visibility_timeout`, and a message not acked by then is
    /// received again — a second, third… handler while the first may still run. Default: none
    /// (the event is pushed to the consumer, as a webhook).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<QueueDelivery>,
    /// A consumer-group rebalance (Kafka): at `at` the consumer's partition is revoked, and
    /// every message it had received but not committed by `drain_deadline` later is delivered
    /// again to the partition's next owner. Default: none. Not with `queue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebalance: Option<Rebalance>,
    /// Brokers the producer publishes each event to: 1 (default) or 2 (the producer publishes
    /// every message to two brokers on purpose, for availability; the consumer reads both, so
    /// each event arrives twice, under two delivery ids and one event id).
    #[serde(default = "one_broker", skip_serializing_if = "is_one_broker")]
    pub brokers: u32,
    /// How long the consumer's dedup records (`consumer_dedup: event_id`) live, and when one is
    /// written. Default: written when a handler starts, kept for ever (what
    /// `consumer_dedup: event_id` did before this field existed).
    #[serde(default, skip_serializing_if = "DedupRecord::is_default")]
    pub dedup_record: DedupRecord,
}

fn one_broker() -> u32 {
    1
}

fn is_one_broker(n: &u32) -> bool {
    *n == 1
}

/// The visibility timeout SQS gives a queue that does not set one, and its maximum: "The
/// default visibility timeout for a message is 30 seconds. The minimum is 0 seconds. The
/// maximum is 12 hours." (SQS API reference, `ChangeMessageVisibility`).
pub const SQS_DEFAULT_VISIBILITY_TIMEOUT: Duration = Duration::from_secs(30);

/// SQS's maximum visibility timeout, also the most a message's visibility can be extended to
/// in total: 12 h.
pub const SQS_MAX_VISIBILITY_TIMEOUT: Duration = Duration::from_secs(12 * 3600);

/// Kafka's `max.poll.interval.ms` default, 300 000 ms (5 min): the classic consumer group's
/// rebalance timeout, how long the group waits for a member to finish its batch and rejoin.
pub const KAFKA_DEFAULT_MAX_POLL_INTERVAL: Duration = Duration::from_secs(300);

/// A queue with a visibility timeout between the producer and the consumer.
///
/// Real settings: SQS `VisibilityTimeout` 30 s by default (0 s to 12 h), a redrive policy's
/// `maxReceiveCount` (1 to 1000; no default: without a redrive policy a message is received
/// again until the queue's retention, 4 days by default); Celery on Redis, whose
/// `broker_transport_options["visibility_timeout"]` defaults to 3600 s ("the number of seconds
/// to wait for the worker to acknowledge the task before the message is redelivered to
/// another worker").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct QueueDelivery {
    /// How long a received message stays invisible; not acked by then, it is received again.
    /// Default: 30 s (SQS's default; Celery on Redis: `"1h"`).
    #[serde(default = "default_visibility_timeout", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub visibility_timeout: Duration,
    /// Receives after which a message not acked goes to the dead-letter queue instead of being
    /// received again (SQS redrive policy `maxReceiveCount`, 1 to 1000). Default: none (no
    /// redrive policy: received again until the run ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_receives: Option<u32>,
    /// When the consumer acks (SQS `DeleteMessage`): `after_handler` (default; the
    /// at-least-once pattern SQS documents, Celery's `task_acks_late=True`) or
    /// `before_handler` (Celery's default early ack: at most once, never redelivered).
    #[serde(default)]
    pub ack: AckAt,
    /// Probability that the consumer crashes after its handler ended but before the ack (the
    /// process is killed, the deploy restarts it): the message is received again when its
    /// visibility timeout expires, and the handler runs again. In [0, 1]. Default: 0.
    #[serde(default)]
    pub crash_before_ack_probability: f64,
    /// Whether the consumer extends the message's visibility while its handler runs (a
    /// heartbeat calling SQS `ChangeMessageVisibility`, Celery's long `visibility_timeout`
    /// advice's alternative), up to SQS's 12 h total. Default: false.
    #[serde(default)]
    pub extend_visibility: bool,
    /// How long the queue keeps a message it was never acked for: past it, the message is
    /// deleted instead of received again. Default: 4 days (SQS `MessageRetentionPeriod`,
    /// 345 600 s; 1 min to 14 days).
    #[serde(default = "default_message_retention", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub message_retention: Duration,
}

/// SQS's default `MessageRetentionPeriod`: 345 600 s (4 days).
pub const SQS_DEFAULT_MESSAGE_RETENTION: Duration = Duration::from_secs(4 * 24 * 3600);

fn default_message_retention() -> Duration {
    SQS_DEFAULT_MESSAGE_RETENTION
}

fn default_visibility_timeout() -> Duration {
    SQS_DEFAULT_VISIBILITY_TIMEOUT
}

impl Default for QueueDelivery {
    fn default() -> Self {
        QueueDelivery {
            visibility_timeout: SQS_DEFAULT_VISIBILITY_TIMEOUT,
            max_receives: None,
            ack: AckAt::AfterHandler,
            crash_before_ack_probability: 0.0,
            extend_visibility: false,
            message_retention: SQS_DEFAULT_MESSAGE_RETENTION,
        }
    }
}

/// When the consumer acks a message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AckAt {
    /// After the handler (the agent run) ended: a handler longer than the visibility timeout,
    /// or a crash before the ack, has the message received again.
    #[default]
    AfterHandler,
    /// As soon as the message is received, before the handler starts: never redelivered (a
    /// crash loses the work instead).
    BeforeHandler,
}

/// A consumer-group rebalance during the run (Kafka).
///
/// A Kafka consumer commits an offset (a position: every message before it is done) after
/// processing; `max.poll.records` (default 500) messages come per poll, and the group waits up
/// to the rebalance timeout, `max.poll.interval.ms` (default 300 000 ms), for the consumer to
/// finish and commit. What is not committed by then is consumed again by the partition's
/// next owner from the last committed offset: every message after the first unfinished one,
/// finished or not, while the revoked consumer's handlers keep running.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Rebalance {
    /// When the rebalance starts (virtual time since the scenario's start). Required.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub at: Duration,
    /// How long the consumer has to finish and commit before its partition goes to the next
    /// owner; messages arriving meanwhile wait. Default: 5 min (`max.poll.interval.ms`).
    #[serde(default = "default_drain_deadline", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub drain_deadline: Duration,
}

fn default_drain_deadline() -> Duration {
    KAFKA_DEFAULT_MAX_POLL_INTERVAL
}

/// The lifetime of the consumer's dedup records (with `consumer_dedup: event_id`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct DedupRecord {
    /// How long a record is kept after it is written (a Redis key's TTL, a table's
    /// retention). Default: none (kept for ever).
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub lifetime: Option<Duration>,
    /// Whether the record is deleted when a second copy is seen and dropped (a consumer that
    /// expects exactly two copies, one per broker, and frees the record at the second): a
    /// third copy then runs again. Default: false.
    #[serde(default)]
    pub delete_on_duplicate: bool,
    /// When the record is written: `handler_start` (default) or `ack` (after the handler
    /// ended: a copy arriving while the first handler runs is not dropped).
    #[serde(default)]
    pub recorded_at: RecordAt,
}

impl DedupRecord {
    /// Whether every field is at its default.
    pub fn is_default(&self) -> bool {
        *self == DedupRecord::default()
    }
}

/// When the consumer writes its dedup record for an event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecordAt {
    /// When the handler starts.
    #[default]
    HandlerStart,
    /// When the message is acked (after the handler ended, unless `ack: before_handler`).
    Ack,
}

fn default_duplicate_delay() -> LatencyDist {
    LatencyDist::new(Duration::from_secs(10), Duration::from_secs(120))
}

impl Default for Deliveries {
    fn default() -> Self {
        Deliveries {
            duplicate_probability: 0.0,
            duplicate_delay: default_duplicate_delay(),
            duplicate_from: DuplicateFrom::SameEvent,
            consumer_dedup: ConsumerDedup::None,
            queue: None,
            rebalance: None,
            brokers: 1,
            dedup_record: DedupRecord::default(),
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

    /// Whether a message may be delivered again through the mechanisms the ack decides
    /// (a queue, a rebalance), two brokers, or a dedup record with a lifetime: then every
    /// delivery goes through the consumer model of `model::redelivery`.
    pub fn redelivers(&self) -> bool {
        self.queue.is_some()
            || self.rebalance.is_some()
            || self.brokers > 1
            || !self.dedup_record.is_default()
    }
}

/// Where a ticket's second delivery comes from (`deliveries.duplicate_from`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DuplicateFrom {
    /// The sender delivers the same event again, with the same event id (at-least-once
    /// webhooks: Stripe's and Zendesk's docs).
    #[default]
    SameEvent,
    /// A different trigger for the same ticket starts a second handler with its own event id.
    OtherTrigger,
}

impl DuplicateFrom {
    fn is_same_event(&self) -> bool {
        *self == DuplicateFrom::SameEvent
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
