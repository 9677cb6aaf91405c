//! Latency distributions (DESIGN §1b, "latency wherever it appears"): the `LatencyDist` object
//! used by `background_load.hold`, `agent.think_time`, `stripe.latency` and
//! `humans.pickup_delay`.
//!
//! Forms, told apart by `kind` (absent means `lognormal`, so every file written before the other
//! forms existed reads as it always did):
//!
//! | form | JSON |
//! |---|---|
//! | lognormal | `{"p50": "380ms", "p99": "1600ms"}` (or with `"kind": "lognormal"`) |
//! | constant | `{"kind": "constant", "value": "400ms"}` |
//! | exponential | `{"kind": "exponential", "mean": "400ms"}` |
//! | empirical | `{"kind": "empirical", "samples": ["310ms", "420ms", "9700ms"]}` |
//! | script | `{"kind": "script", "by_request": {"7/0/0": "9700ms"}, "otherwise": {...}}` |
//!
//! A `script` is keyed by request, not by arrival order (see [`RequestKey`]), and is only
//! accepted for `stripe.latency`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Most samples an `empirical` distribution may list.
pub const MAX_EMPIRICAL_SAMPLES: usize = 100_000;

/// A distribution of durations. Every form draws exactly two numbers from its stream (see
/// `model::dist::latency`), so changing a latency's form moves no other draw.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum LatencyDist {
    /// A lognormal with median `p50` and 99th percentile `p99`:
    /// `sigma = (ln p99 − ln p50) / 2.3263`; `p99 == p50` makes it a constant.
    Lognormal {
        /// Median; > 0.
        p50: Duration,
        /// 99th percentile; ≥ `p50`.
        p99: Duration,
    },
    /// Always `value`.
    Constant {
        /// The latency; > 0.
        value: Duration,
    },
    /// An exponential with mean `mean` (memoryless; median `mean · ln 2`).
    Exponential {
        /// Mean; > 0.
        mean: Duration,
    },
    /// A uniform choice among recorded `samples` (1 to 100,000 of them; repeat a value to weight
    /// it).
    Empirical {
        /// The samples, each > 0.
        samples: Vec<Duration>,
    },
    /// Exact latencies for listed requests, `otherwise` for the rest. Only for `stripe.latency`.
    Script(LatencyScript),
}

/// The `script` form: a recorded incident's Stripe latencies, replayed per request.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LatencyScript {
    /// The latency of each listed request.
    pub by_request: BTreeMap<RequestKey, Duration>,
    /// The distribution of every request not listed (not itself a script).
    pub otherwise: Box<LatencyDist>,
}

/// Which Stripe request a `script` entry is for, spelled as in the JSONL trace's
/// `stripe_request` event:
///
/// - `"TICKET/ATTEMPT/TRY"`: a request of the refunds service: ticket id (`ticket`), model
///   attempt (`attempt`: 0 for the first call, 1 for the model's first retry, from 1000 for a
///   human's tool re-run) and SDK try (`sdk_try`: 0, then 1 for the SDK's first network retry).
///   Executor retries and added layers' tries of one model attempt share the entry.
/// - `"TICKET/human/TRY"`: a human's manual refund from the dashboard (`attempt` is null in the
///   trace), `TRY` being the human's attempt (`sdk_try`: 0 for the first).
///
/// Numbers are decimal without leading zeros, so each request has one spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestKey {
    /// Ticket id (as in the trace, not the ticket's arrival ordinal).
    pub ticket: u64,
    /// Model attempt; `None` for a human's dashboard refund.
    pub attempt: Option<u32>,
    /// SDK try (a human's attempt for a dashboard refund).
    pub try_no: u32,
}

impl RequestKey {
    /// The key of a refunds-service request.
    pub fn service(ticket: u64, attempt: u32, try_no: u32) -> Self {
        RequestKey {
            ticket,
            attempt: Some(attempt),
            try_no,
        }
    }

    /// The key of a human's dashboard refund.
    pub fn human(ticket: u64, try_no: u32) -> Self {
        RequestKey {
            ticket,
            attempt: None,
            try_no,
        }
    }
}

impl fmt::Display for RequestKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.attempt {
            Some(a) => write!(f, "{}/{a}/{}", self.ticket, self.try_no),
            None => write!(f, "{}/human/{}", self.ticket, self.try_no),
        }
    }
}

/// What a request key looks like, for error messages.
pub(crate) const REQUEST_KEY_EXPECTED: &str =
    "a request key \"TICKET/ATTEMPT/TRY\" like \"7/0/0\", or \"TICKET/human/TRY\" like \"7/human/0\"";

fn number<T: FromStr>(s: &str) -> Option<T> {
    let canonical =
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    canonical.then(|| s.parse().ok()).flatten()
}

impl FromStr for RequestKey {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("invalid value: expected {REQUEST_KEY_EXPECTED}, got \"{s}\"");
        let parts: Vec<&str> = s.split('/').collect();
        let [ticket, attempt, try_no] = parts[..] else {
            return Err(bad());
        };
        let ticket = number(ticket).ok_or_else(bad)?;
        let try_no = number(try_no).ok_or_else(bad)?;
        let attempt = match attempt {
            "human" => None,
            a => Some(number(a).ok_or_else(bad)?),
        };
        Ok(RequestKey {
            ticket,
            attempt,
            try_no,
        })
    }
}

impl Serialize for RequestKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for RequestKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Cow::<str>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl LatencyDist {
    /// A lognormal with median `p50` and 99th percentile `p99`.
    pub fn new(p50: Duration, p99: Duration) -> Self {
        LatencyDist::Lognormal { p50, p99 }
    }

    /// Always `value`.
    pub fn constant(value: Duration) -> Self {
        LatencyDist::Constant { value }
    }

    /// An exponential with mean `mean`.
    pub fn exponential(mean: Duration) -> Self {
        LatencyDist::Exponential { mean }
    }

    /// A uniform choice among `samples`.
    pub fn empirical(samples: Vec<Duration>) -> Self {
        LatencyDist::Empirical { samples }
    }

    /// Exact latencies for the requests in `by_request`, `otherwise` for the rest.
    pub fn script(by_request: BTreeMap<RequestKey, Duration>, otherwise: LatencyDist) -> Self {
        LatencyDist::Script(LatencyScript {
            by_request,
            otherwise: Box::new(otherwise),
        })
    }

    /// The form's name, as written in `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            LatencyDist::Lognormal { .. } => "lognormal",
            LatencyDist::Constant { .. } => "constant",
            LatencyDist::Exponential { .. } => "exponential",
            LatencyDist::Empirical { .. } => "empirical",
            LatencyDist::Script(_) => "script",
        }
    }

    /// The median, for estimates and bounds that want a typical value: `p50` (lognormal),
    /// `value` (constant), `mean · ln 2` (exponential), the nearest-rank median of the samples
    /// (empirical: the ⌈n/2⌉-th smallest), and the median of `otherwise` (script: the scripted
    /// requests are a handful among many).
    pub fn median(&self) -> Duration {
        match self {
            LatencyDist::Lognormal { p50, .. } => *p50,
            LatencyDist::Constant { value } => *value,
            LatencyDist::Exponential { mean } => mean.mul_f64(std::f64::consts::LN_2),
            LatencyDist::Empirical { samples } => nearest_rank(samples, 0.5),
            LatencyDist::Script(s) => s.otherwise.median(),
        }
    }

    /// The 99th percentile, for tail estimates (lint, exploration bounds): `p99` (lognormal),
    /// `value` (constant), `mean · ln 100` (exponential), the nearest-rank 99th percentile of
    /// the samples (empirical), and the larger of `otherwise`'s 99th percentile and the longest
    /// scripted latency (script: a recorded tail is a tail).
    pub fn p99(&self) -> Duration {
        match self {
            LatencyDist::Lognormal { p99, .. } => *p99,
            LatencyDist::Constant { value } => *value,
            LatencyDist::Exponential { mean } => mean.mul_f64(std::f64::consts::LN_10 * 2.0),
            LatencyDist::Empirical { samples } => nearest_rank(samples, 0.99),
            LatencyDist::Script(s) => {
                let longest = s.by_request.values().max().copied().unwrap_or_default();
                s.otherwise.p99().max(longest)
            }
        }
    }
}

/// The nearest-rank `q` quantile of `samples` (zero when empty).
fn nearest_rank(samples: &[Duration], q: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The forms by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum LatencyKind {
    Lognormal,
    Constant,
    Exponential,
    Empirical,
    Script,
}

/// A duration as humantime writes it, inside a list or a map.
#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(transparent)]
struct Human(#[serde(with = "humantime_serde")] Duration);

/// The object as written: every form's fields, all optional. Which fields are allowed and
/// required depends on `kind`, checked by [`LatencyDist::try_from`] with serde's own messages
/// (`missing field`, `unknown field`), so the loader names the field's path.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<LatencyKind>,
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    p50: Option<Duration>,
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    p99: Option<Duration>,
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    value: Option<Duration>,
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    mean: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    samples: Option<Vec<Human>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by_request: Option<BTreeMap<RequestKey, Human>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    otherwise: Option<Box<LatencyDist>>,
}

impl Written {
    /// The names of the fields present, in declaration order.
    fn present(&self) -> Vec<&'static str> {
        [
            ("p50", self.p50.is_some()),
            ("p99", self.p99.is_some()),
            ("value", self.value.is_some()),
            ("mean", self.mean.is_some()),
            ("samples", self.samples.is_some()),
            ("by_request", self.by_request.is_some()),
            ("otherwise", self.otherwise.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, on)| on.then_some(name))
        .collect()
    }
}

/// The fields of each form, besides `kind`.
fn fields_of(kind: LatencyKind) -> &'static [&'static str] {
    match kind {
        LatencyKind::Lognormal => &["p50", "p99"],
        LatencyKind::Constant => &["value"],
        LatencyKind::Exponential => &["mean"],
        LatencyKind::Empirical => &["samples"],
        LatencyKind::Script => &["by_request", "otherwise"],
    }
}

/// The form's name with its article: "a constant", "an exponential".
fn a_kind(kind: LatencyKind) -> String {
    let name = kind_name(kind);
    let article = if name.starts_with('e') { "an" } else { "a" };
    format!("{article} {name}")
}

fn kind_name(kind: LatencyKind) -> &'static str {
    match kind {
        LatencyKind::Lognormal => "lognormal",
        LatencyKind::Constant => "constant",
        LatencyKind::Exponential => "exponential",
        LatencyKind::Empirical => "empirical",
        LatencyKind::Script => "script",
    }
}

fn missing(field: &str, kind: LatencyKind) -> String {
    format!(
        "missing field `{field}` ({} latency needs {})",
        a_kind(kind),
        fields_of(kind)
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(" and ")
    )
}

impl TryFrom<Written> for LatencyDist {
    type Error = String;

    fn try_from(w: Written) -> Result<Self, String> {
        let kind = w.kind.unwrap_or(LatencyKind::Lognormal);
        let allowed = fields_of(kind);
        if let Some(extra) = w.present().into_iter().find(|f| !allowed.contains(f)) {
            let mut expected = vec!["`kind`".to_string()];
            expected.extend(allowed.iter().map(|f| format!("`{f}`")));
            let hint = if w.kind.is_none() {
                " (a latency without `kind` is a lognormal; add `kind` for another form)"
            } else {
                ""
            };
            return Err(format!(
                "unknown field `{extra}` for {} latency, expected {}{hint}",
                a_kind(kind),
                expected.join(", ")
            ));
        }
        let need = |v: Option<Duration>, field: &str| v.ok_or_else(|| missing(field, kind));
        Ok(match kind {
            LatencyKind::Lognormal => LatencyDist::Lognormal {
                p50: need(w.p50, "p50")?,
                p99: need(w.p99, "p99")?,
            },
            LatencyKind::Constant => LatencyDist::Constant {
                value: need(w.value, "value")?,
            },
            LatencyKind::Exponential => LatencyDist::Exponential {
                mean: need(w.mean, "mean")?,
            },
            LatencyKind::Empirical => LatencyDist::Empirical {
                samples: w
                    .samples
                    .ok_or_else(|| missing("samples", kind))?
                    .into_iter()
                    .map(|h| h.0)
                    .collect(),
            },
            LatencyKind::Script => LatencyDist::Script(LatencyScript {
                by_request: w
                    .by_request
                    .ok_or_else(|| missing("by_request", kind))?
                    .into_iter()
                    .map(|(k, h)| (k, h.0))
                    .collect(),
                otherwise: w.otherwise.ok_or_else(|| missing("otherwise", kind))?,
            }),
        })
    }
}

impl From<&LatencyDist> for Written {
    fn from(d: &LatencyDist) -> Self {
        let mut w = Written {
            kind: None,
            p50: None,
            p99: None,
            value: None,
            mean: None,
            samples: None,
            by_request: None,
            otherwise: None,
        };
        match d {
            // Written as before the other forms existed: no `kind`.
            LatencyDist::Lognormal { p50, p99 } => {
                w.p50 = Some(*p50);
                w.p99 = Some(*p99);
            }
            LatencyDist::Constant { value } => {
                w.kind = Some(LatencyKind::Constant);
                w.value = Some(*value);
            }
            LatencyDist::Exponential { mean } => {
                w.kind = Some(LatencyKind::Exponential);
                w.mean = Some(*mean);
            }
            LatencyDist::Empirical { samples } => {
                w.kind = Some(LatencyKind::Empirical);
                w.samples = Some(samples.iter().map(|d| Human(*d)).collect());
            }
            LatencyDist::Script(s) => {
                w.kind = Some(LatencyKind::Script);
                w.by_request = Some(s.by_request.iter().map(|(k, d)| (*k, Human(*d))).collect());
                w.otherwise = Some(s.otherwise.clone());
            }
        }
        w
    }
}

impl Serialize for LatencyDist {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Written::from(self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for LatencyDist {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Written::deserialize(d)?;
        LatencyDist::try_from(w).map_err(serde::de::Error::custom)
    }
}

/// The JSON Schema of each form (documentation only; loading goes through [`Written`]).
#[allow(dead_code)]
mod forms {
    use std::collections::BTreeMap;

    use schemars::JsonSchema;

    use super::LatencyDist;

    #[derive(JsonSchema)]
    #[schemars(inline)]
    #[serde(rename_all = "snake_case")]
    pub(super) enum LognormalKind {
        Lognormal,
    }
    #[derive(JsonSchema)]
    #[schemars(inline)]
    #[serde(rename_all = "snake_case")]
    pub(super) enum ConstantKind {
        Constant,
    }
    #[derive(JsonSchema)]
    #[schemars(inline)]
    #[serde(rename_all = "snake_case")]
    pub(super) enum ExponentialKind {
        Exponential,
    }
    #[derive(JsonSchema)]
    #[schemars(inline)]
    #[serde(rename_all = "snake_case")]
    pub(super) enum EmpiricalKind {
        Empirical,
    }
    #[derive(JsonSchema)]
    #[schemars(inline)]
    #[serde(rename_all = "snake_case")]
    pub(super) enum ScriptKind {
        Script,
    }

    /// A lognormal by its median and 99th percentile (`kind` may be left out):
    /// `sigma = (ln p99 − ln p50) / 2.3263`; `p99 == p50` makes it a constant.
    #[derive(JsonSchema)]
    #[schemars(inline)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Lognormal {
        /// `"lognormal"`, or absent.
        #[serde(default)]
        kind: Option<LognormalKind>,
        /// Median; > 0.
        p50: String,
        /// 99th percentile; ≥ `p50`, at most 365 days.
        p99: String,
    }

    /// Always `value`.
    #[derive(JsonSchema)]
    #[schemars(inline)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Constant {
        /// `"constant"`.
        kind: ConstantKind,
        /// The latency; > 0, at most 365 days.
        value: String,
    }

    /// An exponential with this mean.
    #[derive(JsonSchema)]
    #[schemars(inline)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Exponential {
        /// `"exponential"`.
        kind: ExponentialKind,
        /// Mean; > 0, at most 365 days.
        mean: String,
    }

    /// A uniform choice among the samples.
    #[derive(JsonSchema)]
    #[schemars(inline)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Empirical {
        /// `"empirical"`.
        kind: EmpiricalKind,
        /// 1 to 100,000 durations, each > 0 and at most 365 days.
        samples: Vec<String>,
    }

    /// Exact latencies per request, `otherwise` for the rest. Only for `stripe.latency`.
    #[derive(JsonSchema)]
    #[schemars(inline)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Script {
        /// `"script"`.
        kind: ScriptKind,
        /// Request key (`"TICKET/ATTEMPT/TRY"`, or `"TICKET/human/TRY"` for a human's dashboard
        /// refund) to its latency.
        by_request: BTreeMap<String, String>,
        /// The distribution of every request not listed; not a script.
        otherwise: Box<LatencyDist>,
    }

    /// A latency distribution, one of five forms told apart by `kind` (absent: lognormal).
    #[derive(JsonSchema)]
    #[serde(untagged)]
    pub(super) enum Forms {
        Lognormal(Lognormal),
        Constant(Constant),
        Exponential(Exponential),
        Empirical(Empirical),
        Script(Script),
    }
}

impl JsonSchema for LatencyDist {
    fn schema_name() -> Cow<'static, str> {
        "LatencyDist".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        forms::Forms::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn duration() -> impl Strategy<Value = Duration> {
        prop_oneof![
            (1u64..=10_000).prop_map(Duration::from_millis),
            (1u64..=31_536_000_000_000_000).prop_map(Duration::from_nanos),
        ]
    }

    fn key() -> impl Strategy<Value = RequestKey> {
        (any::<u64>(), prop::option::of(any::<u32>()), any::<u32>()).prop_map(
            |(ticket, attempt, try_no)| RequestKey {
                ticket,
                attempt,
                try_no,
            },
        )
    }

    fn simple() -> impl Strategy<Value = LatencyDist> {
        prop_oneof![
            (duration(), duration()).prop_map(|(a, b)| LatencyDist::new(a.min(b), a.max(b))),
            duration().prop_map(LatencyDist::constant),
            duration().prop_map(LatencyDist::exponential),
            prop::collection::vec(duration(), 1..20).prop_map(LatencyDist::empirical),
        ]
    }

    fn any_form() -> impl Strategy<Value = LatencyDist> {
        prop_oneof![
            simple(),
            (
                prop::collection::btree_map(key(), duration(), 0..10),
                simple()
            )
                .prop_map(|(by_request, otherwise)| LatencyDist::script(by_request, otherwise)),
        ]
    }

    proptest! {
        #[test]
        fn every_form_round_trips_through_json(d in any_form()) {
            let text = serde_json::to_string(&d).unwrap();
            let back: LatencyDist = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(back, d);
        }

        #[test]
        fn request_keys_round_trip_through_their_spelling(k in key()) {
            prop_assert_eq!(k.to_string().parse::<RequestKey>(), Ok(k));
        }
    }

    #[test]
    fn request_keys_have_one_spelling() {
        assert_eq!("7/0/0".parse(), Ok(RequestKey::service(7, 0, 0)));
        assert_eq!("7/human/3".parse(), Ok(RequestKey::human(7, 3)));
        for bad in [
            "",
            "7",
            "7/0",
            "7/0/0/0",
            "07/0/0",
            "7/00/0",
            "7/-1/0",
            "7/ 0/0",
            "7/Human/0",
            "+7/0/0",
            "18446744073709551616/0/0",
        ] {
            assert!(bad.parse::<RequestKey>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_old_object_is_written_as_before() {
        let d = LatencyDist::new(Duration::from_millis(380), Duration::from_millis(1600));
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"p50":"380ms","p99":"1s 600ms"}"#
        );
    }
}
