//! proptest strategies for small adversarial worlds (swarm style: each case also switches
//! components and faults on or off), reusable in users' own property tests.
//!
//! ```
//! use proptest::prelude::*;
//! use refundsim::explore::{strategy::world, policy};
//!
//! proptest!(ProptestConfig::with_cases(8), |(mut case in world())| {
//!     policy::full_fix(&mut case.scenario);
//!     prop_assert!(refundsim::explore::check_case(&case).is_ok());
//! });
//! ```

use std::time::Duration;

use proptest::prelude::*;
use serde_json::json;

use crate::scenario::{load_str, Scenario, TieBreakConfig};

/// Names of the added layers a generated world may have.
pub mod layer_names {
    /// The framework retry layer, between `model_retry` and `executor`.
    pub const FRAMEWORK: &str = "framework_retry";
    /// The proxy layer, between `executor` and `refunds_service`.
    pub const PROXY: &str = "sidecar";
    /// The run-level retry layer, above `model_retry`.
    pub const RUN: &str = "agent_run";
}

/// One generated case: a scenario (recorded tickets, explicit knobs) run under a seeded tie-break.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// The world. Its `tie_break` section carries the tie-break seed and epsilon.
    pub scenario: Scenario,
}

/// Bounds of the generated worlds (the issue's "small adversarial worlds").
pub mod bounds {
    /// Tickets per world.
    pub const TICKETS: std::ops::RangeInclusive<usize> = 1..=30;
    /// Pool sizes.
    pub const POOL: std::ops::RangeInclusive<u32> = 1..=8;
    /// Executor timeout, ms.
    pub const TIMEOUT_MS: std::ops::RangeInclusive<u64> = 500..=30_000;
    /// Stripe latencies, ms (besides the timeout itself and ±1 ms around it).
    pub const LATENCY_MS: std::ops::RangeInclusive<u64> = 10..=40_000;
    /// Ticket arrival times, ms after start.
    pub const ARRIVAL_MS: std::ops::RangeInclusive<u64> = 0..=60_000;
}

fn ms(v: u64) -> String {
    format!("{v}ms")
}

/// `(opened_at ms, amount cents, charge factor ×10)`: arrivals often collide (same instant).
fn ticket() -> impl Strategy<Value = (u64, u64, u64)> {
    let at = prop_oneof![
        Just(0u64),
        (0u64..4).prop_map(|k| k * 1000),
        bounds::ARRIVAL_MS
    ];
    (at, 100u64..=50_000, prop_oneof![Just(10u64), 10u64..=40])
}

/// Stripe latencies in ms, centred on the timeout: exactly it, 1 ms either side, or anything.
fn latencies(timeout_ms: u64) -> impl Strategy<Value = Vec<u64>> {
    let one = prop_oneof![
        Just(timeout_ms),
        Just(timeout_ms.saturating_sub(1).max(1)),
        Just(timeout_ms + 1),
        bounds::LATENCY_MS,
    ];
    prop::collection::vec(one, 1..=4)
}

/// Knobs switched on or off per case.
#[derive(Clone, Debug)]
struct Swarm {
    pool: u32,
    background_per_s: Option<f64>,
    think_ms: u64,
    sdk_retries: bool,
    sdk_timeout_ms: Option<u64>,
    e500: Option<f64>,
    lost: Option<f64>,
    lock: Option<f64>,
    key: &'static str,
    probe: bool,
    idempotent_only: bool,
    exec_retry: bool,
    deadline_propagation: bool,
    human_check: f64,
    pickup_min: u64,
    compliance: f64,
    tie_seed: u64,
    epsilon_ms: u64,
}

fn swarm() -> impl Strategy<Value = Swarm> {
    let p = || prop::option::of(prop_oneof![Just(1.0), 0.0f64..0.5]);
    (
        (
            bounds::POOL,
            prop::option::of(0.1f64..5.0),
            1u64..200,
            any::<bool>(),
            prop::option::of(500u64..10_000),
        ),
        (p(), p(), prop::option::of(0.0f64..0.3)),
        (
            prop_oneof![Just("none"), Just("per_attempt"), Just("per_ticket")],
            any::<bool>(),
            any::<bool>(),
        ),
        (
            any::<bool>(),
            any::<bool>(),
            prop_oneof![Just(0.0), Just(0.5), Just(1.0)],
            10u64..=120,
        ),
        (
            any::<u64>(),
            prop_oneof![Just(0u64), Just(1), 0u64..50],
            prop_oneof![2 => Just(1.0), 1 => Just(0.5), 1 => Just(0.0)],
        ),
    )
        .prop_map(|(a, b, c, d, e)| Swarm {
            pool: a.0,
            background_per_s: a.1,
            think_ms: a.2,
            sdk_retries: a.3,
            sdk_timeout_ms: a.4,
            e500: b.0,
            lost: b.1,
            lock: b.2,
            key: c.0,
            probe: c.1,
            idempotent_only: c.2,
            exec_retry: d.0,
            deadline_propagation: d.1,
            human_check: d.2,
            pickup_min: d.3,
            tie_seed: e.0,
            epsilon_ms: e.1,
            compliance: e.2,
        })
}

/// Every `retry_on` class, in the file format's spelling.
const RETRY_ON: [&str; 8] = [
    "reset",
    "connect-failure",
    "5xx",
    "gateway-error",
    "retriable-4xx",
    "429",
    "timeout",
    "pool-exhausted",
];

/// One added layer's knobs. Its `per_try_timeout` is one of the world's Stripe latencies
/// (picked by index) plus −1, 0 or +1 ms, so per-try timeouts fire at, just before and just
/// after a response.
#[derive(Clone, Debug)]
pub(crate) struct LayerDraw {
    max_retries: u32,
    per_try_timeout: Option<(prop::sample::Index, i64)>,
    retry_on: Option<Vec<&'static str>>,
    backoff: (&'static str, u64, &'static str),
    budget: Option<(f64, u32)>,
    on_timeout_unknown: bool,
    cancellation: &'static str,
}

fn cancellation() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        2 => Just("none"),
        1 => Just("queued_only"),
        1 => Just("abort_in_flight"),
    ]
}

pub(crate) fn layer_draw() -> impl Strategy<Value = LayerDraw> {
    (
        0u32..=2,
        prop::option::weighted(0.7, (any::<prop::sample::Index>(), -1i64..=1)),
        prop::option::of(prop::sample::subsequence(
            RETRY_ON.to_vec(),
            0..=RETRY_ON.len(),
        )),
        (
            prop_oneof![Just("constant"), Just("exponential")],
            0u64..=200,
            prop_oneof![Just("none"), Just("full"), Just("equal")],
        ),
        prop::option::weighted(0.2, (0.0f64..=100.0, 0u32..=3)),
        any::<bool>(),
        cancellation(),
    )
        .prop_map(|(r, t, on, b, budget, unknown, c)| LayerDraw {
            max_retries: r,
            per_try_timeout: t,
            retry_on: on,
            backoff: b,
            budget,
            on_timeout_unknown: unknown,
            cancellation: c,
        })
}

/// The call path's added layers and the knobs below and around them, drawn per case. Each
/// added layer is an `Option` that shrinks toward `None` (no layer).
#[derive(Clone, Debug)]
struct StackDraw {
    framework: Option<LayerDraw>,
    proxy: Option<LayerDraw>,
    executor_cancellation: &'static str,
    sdk_key: &'static str,
    dropped_connection: &'static str,
}

fn stack_draw() -> impl Strategy<Value = StackDraw> {
    (
        prop::option::weighted(0.35, layer_draw()),
        prop::option::weighted(0.35, layer_draw()),
        cancellation(),
        prop_oneof![Just("reuse"), Just("new_per_retry"), Just("none")],
        prop_oneof![Just("off"), Just("without_key"), Just("with_key")],
    )
        .prop_map(|(f, p, c, k, d)| StackDraw {
            framework: f,
            proxy: p,
            executor_cancellation: c,
            sdk_key: k,
            dropped_connection: d,
        })
}

pub(crate) fn layer_json(kind: &str, d: &LayerDraw, lat: &[u64]) -> serde_json::Value {
    let mut v = json!({
        "kind": kind,
        "max_retries": d.max_retries,
        "backoff": {"kind": d.backoff.0, "base": ms(d.backoff.1), "jitter": d.backoff.2},
        "on_timeout": if d.on_timeout_unknown {"unknown"} else {"error"},
        "cancellation": d.cancellation,
    });
    if let Some((i, off)) = &d.per_try_timeout {
        let l = lat[i.index(lat.len())] as i64;
        v["per_try_timeout"] = json!(ms((l + off).max(1) as u64));
    }
    if let Some(on) = &d.retry_on {
        v["retry_on"] = json!(on);
    }
    if let Some((pct, min)) = d.budget {
        v["budget"] = json!({"budget_percent": pct, "min_retry_concurrency": min});
    }
    v
}

/// The provider and the failures beyond the happy path (issue "providers, deliveries and
/// failures"), drawn per case; each part shrinks toward off (Stripe, no failure).
#[derive(Clone, Debug)]
pub(crate) struct ProviderDraw {
    kind: &'static str,
    dedup_window_ms: u64,
    in_flight_status: u16,
    business_id: &'static str,
    retry_after_ms: Option<u64>,
    lock_concurrent: bool,
    local_dedup: Option<&'static str>,
    crash: Option<f64>,
    llm_error: Option<(f64, LayerDraw, bool)>,
}

fn provider_draw() -> impl Strategy<Value = ProviderDraw> {
    let p = || prop_oneof![Just(1.0), 0.0f64..0.5];
    (
        (
            prop_oneof![
                4 => Just("stripe"),
                1 => Just("keys_ignored"),
                1 => Just("dedup_window"),
                1 => Just("business_id"),
            ],
            1_000u64..=120_000,
            prop_oneof![Just(409u16), Just(422)],
            prop_oneof![Just("none"), Just("per_attempt"), Just("per_ticket")],
        ),
        (
            prop::option::weighted(0.2, 0u64..=5_000),
            prop::bool::weighted(0.2),
            prop::option::weighted(0.25, prop_oneof![Just("wait"), Just("conflict")]),
        ),
        prop::option::weighted(0.2, p()),
        prop::option::weighted(0.2, (p(), layer_draw(), any::<bool>())),
    )
        .prop_map(|(a, b, crash, llm)| ProviderDraw {
            kind: a.0,
            dedup_window_ms: a.1,
            in_flight_status: a.2,
            business_id: a.3,
            retry_after_ms: b.0,
            lock_concurrent: b.1,
            local_dedup: b.2,
            crash,
            llm_error: llm,
        })
}

/// Adds a [`ProviderDraw`] to a world's JSON: the `provider` section when not plain Stripe, the
/// service's business id, local dedup and crash, and the model's LLM error after a tool with a
/// run-level retry ([`layer_names::RUN`]) above the model that retries it (`llm-error` added to
/// its `retry_on` when the flag says so, or by its default).
fn add_provider(v: &mut serde_json::Value, pd: &ProviderDraw, lat: &[u64]) {
    let mut provider = json!({"kind": pd.kind, "dedup_window": ms(pd.dedup_window_ms),
                              "in_flight_duplicate_status": pd.in_flight_status,
                              "lock_concurrent_requests": pd.lock_concurrent});
    if let Some(r) = pd.retry_after_ms {
        provider["retry_after"] = json!(ms(r));
    }
    v["provider"] = provider;
    v["refunds_service"]["business_id"] = json!(pd.business_id);
    if let Some(on_pending) = pd.local_dedup {
        v["refunds_service"]["local_dedup"] = json!(true);
        v["refunds_service"]["on_pending_row"] = json!(on_pending);
    }
    if let Some(p) = pd.crash {
        v["refunds_service"]["crash_after_provider_ok"] = json!(p);
    }
    if let Some((p, layer, add_llm)) = &pd.llm_error {
        v["agent"]["llm_error_after_tool"] = json!(p);
        let mut l = layer_json("run_retry", layer, lat);
        if *add_llm {
            if let Some(on) = l.get_mut("retry_on").and_then(|o| o.as_array_mut()) {
                on.push(json!("llm-error"));
            }
        }
        v["layers"][layer_names::RUN] = l;
        let mut stack: Vec<serde_json::Value> = match v.get("stack") {
            Some(serde_json::Value::Array(s)) => s.clone(),
            _ => ["model_retry", "executor", "refunds_service", "sdk"]
                .iter()
                .map(|s| json!(s))
                .collect(),
        };
        stack.insert(0, json!(layer_names::RUN));
        v["schema_version"] = json!(2);
        v["stack"] = json!(stack);
    }
}

/// Builds the scenario file text of a case, so every generated world is a valid, loadable file.
fn build(
    tickets: &[(u64, u64, u64)],
    timeout_ms: u64,
    lat: &[u64],
    s: &Swarm,
    st: &StackDraw,
    pd: &ProviderDraw,
) -> Scenario {
    let tickets: Vec<_> = tickets
        .iter()
        .enumerate()
        .map(|(i, &(at, amount, f))| {
            json!({"id": i + 1, "opened_at": ms(at), "amount_cents": amount,
                   "charge_amount_cents": amount * f / 10})
        })
        .collect();
    let mut v = json!({
        "name": "generated",
        "horizon": "2m",
        "arrivals": {"tickets": tickets},
        "agent": {"think_time": {"p50": ms(s.think_ms), "p99": ms(s.think_ms * 3)},
                  "retry": {"applies_to": if s.idempotent_only {"idempotent_tools"} else {"any_tool"},
                            "compliance": s.compliance}},
        "executor": {"timeout": ms(timeout_ms),
                     "on_timeout": if s.probe {"probe_status"} else {"report_error"},
                     "probe_interval": "500ms", "probe_max_wait": "60s",
                     "cancellation": st.executor_cancellation},
        "refunds_service": {"pool_size": s.pool, "idempotency_key": s.key,
                            "deadline_propagation": s.deadline_propagation,
                            "stripe_client": {"max_network_retries": if s.sdk_retries {2} else {0},
                                              "timeout": ms(s.sdk_timeout_ms.unwrap_or(80_000)),
                                              "key": st.sdk_key,
                                              "retry_dropped_connection": st.dropped_connection}},
        "stripe": {"latency_choices": lat.iter().map(|&l| ms(l)).collect::<Vec<_>>(),
                   "faults": {"error_500_after_commit": s.e500.unwrap_or(0.0),
                              "response_lost_after_commit": s.lost.unwrap_or(0.0),
                              "lock_timeout": s.lock.unwrap_or(0.0)}},
        "humans": {"pickup_delay": {"p50": format!("{}m", s.pickup_min), "p99": format!("{}m", s.pickup_min * 2)},
                   "check_probability": s.human_check},
        "tie_break": {"seed": s.tie_seed, "epsilon": ms(s.epsilon_ms)},
        "expect": {}
    });
    if let Some(frac) = s.background_per_s {
        // A fraction of what the pool can carry (hold p50 300 ms): the queue stays finite.
        let rate = frac / 5.0 * 0.9 * f64::from(s.pool) / 0.3;
        v["background_load"] =
            json!({"rate_per_s": rate, "hold": {"p50": "300ms", "p99": "1500ms"}});
    }
    if s.exec_retry {
        v["executor"]["retry"] = json!({});
    }
    if st.framework.is_some() || st.proxy.is_some() {
        let mut stack = vec!["model_retry"];
        if let Some(d) = &st.framework {
            v["layers"][layer_names::FRAMEWORK] = layer_json("retry", d, lat);
            stack.push(layer_names::FRAMEWORK);
        }
        stack.push("executor");
        if let Some(d) = &st.proxy {
            v["layers"][layer_names::PROXY] = layer_json("proxy", d, lat);
            stack.push(layer_names::PROXY);
        }
        stack.extend(["refunds_service", "sdk"]);
        v["schema_version"] = json!(2);
        v["stack"] = json!(stack);
    }
    add_provider(&mut v, pd, lat);
    load_str(&v.to_string(), "generated").expect("generated worlds are valid scenarios")
}

/// Small adversarial worlds: 1–30 recorded tickets with colliding arrival times, amounts and
/// charges (sometimes a full refund); pool 1–8; executor timeout 0.5–30 s; per-request Stripe
/// latencies from 1–4 choices including exactly the timeout and 1 ms either side; think times;
/// optional background load (below what the pool carries); SDK retries and a short SDK timeout on or off; faults (500 after
/// commit, response lost after commit, 429 `lock_timeout`; 409s arise from overlapping requests);
/// every key mode; probe on or off; an executor retry layer; deadline propagation; humans who
/// check first with probability 0, ½ or 1; and a tie-break seed with ε of 0–50 ms.
///
/// The call path may also have added layers (each with probability 0.35, shrinking toward no
/// layer): a framework `retry` layer ([`layer_names::FRAMEWORK`]) between `model_retry` and
/// `executor`, and a `proxy` layer ([`layer_names::PROXY`]) between `executor` and
/// `refunds_service`. Each has 0–2 retries, often a `per_try_timeout` at one of the world's
/// Stripe latencies or 1 ms either side, the kind's default `retry_on` or any subset of the
/// classes, a constant or exponential backoff from 0–200 ms with any jitter, sometimes a retry
/// budget, `on_timeout` `error` or `unknown`, and any `cancellation`. The executor's
/// `cancellation` and the SDK's `key` (`reuse`, `new_per_retry`, `none`) and
/// `retry_dropped_connection` (`off`, `without_key`, `with_key`) are drawn too.
pub fn world() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(ticket(), bounds::TICKETS),
        bounds::TIMEOUT_MS,
        swarm(),
        stack_draw(),
        provider_draw(),
    )
        .prop_flat_map(|(tickets, timeout, s, st, pd)| {
            latencies(timeout).prop_map(move |lat| Case {
                scenario: build(&tickets, timeout, &lat, &s, &st, &pd),
            })
        })
}

/// The tie-break section of a case, for reports.
pub fn tie_break(case: &Case) -> Option<&TieBreakConfig> {
    case.scenario.tie_break.as_ref()
}

/// A duration in ms, for callers building worlds by hand.
pub fn millis(v: u64) -> Duration {
    Duration::from_millis(v)
}

// ---- Deliveries (issue 10) ------------------------------------------------------------------
// Drawn apart from `world()`, so the worlds `world()` generates, and every search pinned on
// them, stay as they were; `world_with_deliveries()` adds the draw on top.

/// How a generated world delivers each ticket's triggering event, and what its service does
/// with a key conflict (two handlers racing on one key).
#[derive(Clone, Debug)]
pub(crate) struct DeliveryDraw {
    /// `deliveries.duplicate_probability`: 0, 1 or anything between (shrinks toward 0).
    pub duplicate_probability: f64,
    /// `deliveries.duplicate_delay` (constant), ms: often within a Stripe call, so the two
    /// handlers overlap (shrinks toward 1 ms).
    pub delay_ms: u64,
    /// `deliveries.consumer_dedup: event_id` (shrinks toward `none`).
    pub consumer_dedup: bool,
    /// `refunds_service.on_key_conflict` (shrinks toward `fail`).
    pub on_key_conflict: &'static str,
}

/// The deliveries draw of [`world_with_deliveries`].
pub(crate) fn delivery_draw() -> impl Strategy<Value = DeliveryDraw> {
    (
        prop_oneof![Just(0.0), Just(1.0), 0.0f64..=1.0],
        prop_oneof![1u64..=500, bounds::LATENCY_MS],
        any::<bool>(),
        prop_oneof![Just("fail"), Just("lookup"), Just("retry_new_key")],
    )
        .prop_map(|(p, d, dedup, k)| DeliveryDraw {
            duplicate_probability: p,
            delay_ms: d,
            consumer_dedup: dedup,
            on_key_conflict: k,
        })
}

/// Writes `d` into `s`.
pub(crate) fn apply_deliveries(s: &mut Scenario, d: &DeliveryDraw) {
    use crate::scenario::{ConsumerDedup, LatencyDist, OnKeyConflict};
    s.deliveries.duplicate_probability = d.duplicate_probability;
    s.deliveries.duplicate_delay = LatencyDist::constant(millis(d.delay_ms.max(1)));
    s.deliveries.consumer_dedup = if d.consumer_dedup {
        ConsumerDedup::EventId
    } else {
        ConsumerDedup::None
    };
    s.refunds_service.on_key_conflict = match d.on_key_conflict {
        "lookup" => OnKeyConflict::Lookup,
        "retry_new_key" => OnKeyConflict::RetryNewKey,
        _ => OnKeyConflict::Fail,
    };
}

/// [`world`] plus a [`delivery_draw`]: duplicate deliveries of each ticket's event (a second,
/// concurrent agent run on the ticket, after a delay of 1 ms to 40 s), consumer dedup on or
/// off, and every `on_key_conflict`.
pub fn world_with_deliveries() -> impl Strategy<Value = Case> {
    (world(), delivery_draw()).prop_map(|(mut c, d)| {
        apply_deliveries(&mut c.scenario, &d);
        c
    })
}

// ---- Providers that refuse a finished duplicate (issue 29) ----------------------------------
// Drawn apart from `world()` as the deliveries are, so the worlds it generates stay as they were.

/// [`world`] plus a provider that may refuse a finished duplicate with an error instead of
/// replaying its answer (`provider.duplicate_rejected_status`: none half the time, else 400,
/// 409, 422 or 500; shrinks toward none), on whichever provider kind the world drew.
pub fn world_with_provider_refusals() -> impl Strategy<Value = Case> {
    let status = prop::option::weighted(
        0.5,
        prop_oneof![Just(400u16), Just(409), Just(422), Just(500)],
    );
    (world(), status).prop_map(|(mut c, status)| {
        c.scenario.provider.duplicate_rejected_status = status;
        c
    })
}

// ---- Time limits across tries and effects that commit early (issue 29, item 6) -------------
// Drawn apart from `world()`, so its worlds stay as they were.

/// [`world`] plus, on each added layer the world drew, a `deadline` over all its tries (none
/// half the time, else 1 ms to 30 s: often shorter than the tries it bounds); on a run-level
/// retry, any `checkpoint`; and the service's `work_after_refund` (none half the time, else
/// 1 ms to 30 s: often past the executor's timeout); and 1–2 uncounted `timeout_retries` on a
/// layer 30 % of the time. Shrinks toward none of them.
pub fn world_with_time_limits() -> impl Strategy<Value = Case> {
    use crate::scenario::Checkpoint;
    let deadlines = prop::collection::vec(prop::option::weighted(0.5, 1u64..30_000), 3);
    let work = prop::option::weighted(0.5, 1u64..30_000);
    let checkpoint = prop_oneof![
        Just(Checkpoint::None),
        Just(Checkpoint::AtLeastOncePerRetry),
        Just(Checkpoint::AtMostOncePerRetry),
    ];
    let reruns = prop::collection::vec(prop::option::weighted(0.3, 1u32..=2), 3);
    let draws = (world(), deadlines, work, checkpoint, reruns);
    draws.prop_map(|(mut c, deadlines, work, checkpoint, reruns)| {
        let s = &mut c.scenario;
        for ((layer, d), r) in s.layers.values_mut().zip(deadlines).zip(reruns) {
            layer.deadline = d.map(millis);
            layer.timeout_retries = r;
            if layer.kind == crate::scenario::LayerKind::RunRetry {
                layer.checkpoint = checkpoint;
            }
        }
        s.refunds_service.work_after_refund = work.map_or(Duration::ZERO, millis);
        c
    })
}

// ---- Redelivery that depends on the ack (issue 29, item 4) ------------------------------------
// Drawn apart from `world()` and `world_with_deliveries()`, so their worlds, and every search
// pinned on them, stay as they were; `world_with_redelivery()` adds the draw on top.

/// How a generated world's consumer receives each ticket's event: a queue with a visibility
/// timeout, a rebalance, two brokers, and dedup records with a lifetime.
#[derive(Clone, Debug)]
pub(crate) struct RedeliveryDraw {
    /// 0: pushed (no queue, no rebalance); 1: a queue; 2: a consumer group with a rebalance.
    pub mode: u8,
    /// Queue: visibility timeout, ms (often shorter than one agent run).
    pub visibility_ms: u64,
    /// Queue: `max_receives` (bounded so a run stays small; always set).
    pub max_receives: u32,
    /// Queue: ack before the handler.
    pub ack_before: bool,
    /// Queue: crash before the ack, probability.
    pub crash: f64,
    /// Queue: extend visibility while the handler runs.
    pub extend: bool,
    /// Rebalance: start and drain deadline, ms.
    pub rebalance_ms: (u64, u64),
    /// Two brokers.
    pub two_brokers: bool,
    /// `consumer_dedup: event_id`.
    pub dedup: bool,
    /// Dedup record lifetime, ms (`None`: for ever).
    pub lifetime_ms: Option<u64>,
    /// Delete the record at the second copy.
    pub delete_on_duplicate: bool,
    /// Record at the ack rather than at the handler's start.
    pub record_at_ack: bool,
}

/// The draw of [`world_with_redelivery`].
pub(crate) fn redelivery_draw() -> impl Strategy<Value = RedeliveryDraw> {
    (
        (
            0u8..=2,
            1u64..=60_000,
            1u32..=4,
            any::<bool>(),
            prop_oneof![Just(0.0), Just(1.0), 0.0f64..=1.0],
            any::<bool>(),
        ),
        (
            (0u64..=60_000, 1u64..=60_000),
            any::<bool>(),
            any::<bool>(),
            prop_oneof![Just(None), (1u64..=60_000).prop_map(Some)],
            any::<bool>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (mode, visibility_ms, max_receives, ack_before, crash, extend),
                (rebalance_ms, two_brokers, dedup, lifetime_ms, delete_on_duplicate, record_at_ack),
            )| RedeliveryDraw {
                mode,
                visibility_ms,
                max_receives,
                ack_before,
                crash,
                extend,
                rebalance_ms,
                two_brokers,
                dedup,
                lifetime_ms,
                delete_on_duplicate,
                record_at_ack,
            },
        )
}

/// Writes `d` into `s`.
pub(crate) fn apply_redelivery(s: &mut Scenario, d: &RedeliveryDraw) {
    use crate::scenario::{AckAt, ConsumerDedup, DedupRecord, QueueDelivery, Rebalance, RecordAt};
    let dl = &mut s.deliveries;
    dl.queue = (d.mode == 1).then(|| QueueDelivery {
        visibility_timeout: millis(d.visibility_ms),
        max_receives: Some(d.max_receives),
        ack: if d.ack_before {
            AckAt::BeforeHandler
        } else {
            AckAt::AfterHandler
        },
        crash_before_ack_probability: d.crash,
        extend_visibility: d.extend,
        ..QueueDelivery::default()
    });
    dl.rebalance = (d.mode == 2).then(|| Rebalance {
        at: millis(d.rebalance_ms.0),
        drain_deadline: millis(d.rebalance_ms.1),
    });
    dl.brokers = if d.two_brokers { 2 } else { 1 };
    dl.consumer_dedup = if d.dedup {
        ConsumerDedup::EventId
    } else {
        ConsumerDedup::None
    };
    dl.dedup_record = DedupRecord {
        lifetime: d.lifetime_ms.map(millis),
        delete_on_duplicate: d.delete_on_duplicate,
        recorded_at: if d.record_at_ack {
            RecordAt::Ack
        } else {
            RecordAt::HandlerStart
        },
        ..DedupRecord::default()
    };
}

/// [`world`] plus a [`redelivery_draw`]: each ticket's event read from a queue whose
/// visibility timeout (1 ms to 60 s) is often shorter than the agent run, up to 4 receives,
/// acked before or after the handler, a crash before the ack; or from a consumer group
/// rebalanced in the first minute with a drain deadline up to 60 s; published to one or two
/// brokers; deduped or not, with a record kept for ever or 1 ms to 60 s, deleted at the
/// second copy or not, written at the handler's start or at the ack.
pub fn world_with_redelivery() -> impl Strategy<Value = Case> {
    (world(), redelivery_draw()).prop_map(|(mut c, d)| {
        apply_redelivery(&mut c.scenario, &d);
        c
    })
}

// ---- An MCP client (issue 29 item 3) ----------------------------------------------------------
// Drawn apart from `world()`, so the worlds `world()` generates stay as they were;
// `world_with_mcp_client()` adds the layer on top.

/// The name of a generated world's `mcp_client` layer.
pub const MCP_LAYER: &str = "mcp";

/// How a generated world's MCP client sends its tool calls.
#[derive(Clone, Debug)]
pub(crate) struct McpDraw {
    /// `stream_break_probability`.
    pub break_probability: f64,
    /// `stream_break_requests: [1]` (every first request's stream breaks).
    pub break_first: bool,
    /// `reissue_on_stream_break`.
    pub reissue: bool,
    /// `max_retries` (re-issues per tool call).
    pub max_retries: u32,
    /// `request_timeout`, ms.
    pub timeout_ms: u64,
    /// `send_cancelled`.
    pub send_cancelled: bool,
    /// `retry_on: ["timeout"]`.
    pub resend_on_timeout: bool,
    /// `duplicate_send_probability`.
    pub duplicate_probability: f64,
    /// `duplicate_send_gap`, ms.
    pub gap_ms: u64,
    /// `executor.request_idempotency` on.
    pub request_key: bool,
}

/// The draw of [`world_with_mcp_client`].
pub(crate) fn mcp_draw() -> impl Strategy<Value = McpDraw> {
    (
        (
            prop_oneof![Just(0.0), Just(1.0), 0.0f64..=1.0],
            any::<bool>(),
            any::<bool>(),
            0u32..=2,
            prop_oneof![Just(60_000u64), 100u64..=30_000],
        ),
        (
            any::<bool>(),
            any::<bool>(),
            prop_oneof![Just(0.0), Just(1.0), 0.0f64..=1.0],
            0u64..=2_000,
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (break_probability, break_first, reissue, max_retries, timeout_ms),
                (send_cancelled, resend_on_timeout, duplicate_probability, gap_ms, request_key),
            )| McpDraw {
                break_probability,
                break_first,
                reissue,
                max_retries,
                timeout_ms,
                send_cancelled,
                resend_on_timeout,
                duplicate_probability,
                gap_ms,
                request_key,
            },
        )
}

/// Writes `d` into `s`: an `mcp_client` layer [`MCP_LAYER`] right above `executor` (below a
/// framework retry layer, which calls the client), and the tool server's request key. A world
/// whose stack would then exceed the per-ticket cap keeps its stack without the client.
pub(crate) fn apply_mcp_client(s: &mut Scenario, d: &McpDraw) {
    use crate::scenario::{LayerKind, RequestIdempotency, RetryLayer, RetryOn};
    let before = s.clone();
    let mut l = RetryLayer::new(LayerKind::McpClient);
    l.max_retries = Some(d.max_retries);
    l.stream_break_probability = Some(d.break_probability);
    l.stream_break_requests = d.break_first.then(|| vec![1]);
    l.reissue_on_stream_break = Some(d.reissue);
    l.request_timeout = Some(millis(d.timeout_ms));
    l.send_cancelled = Some(d.send_cancelled);
    l.retry_on = Some(if d.resend_on_timeout {
        vec![RetryOn::Timeout]
    } else {
        Vec::new()
    });
    l.duplicate_send_probability = Some(d.duplicate_probability);
    l.duplicate_send_gap = Some(millis(d.gap_ms));
    let mut stack = crate::scenario::stack_of(s);
    let at = stack.iter().position(|n| n == "executor").unwrap_or(0);
    stack.insert(at, MCP_LAYER.to_string());
    s.schema_version = s.schema_version.max(2);
    s.layers.insert(MCP_LAYER.to_string(), l);
    s.stack = Some(stack);
    s.executor.request_idempotency = d.request_key.then(RequestIdempotency::default);
    if crate::scenario::validate(s).is_err() {
        *s = before;
    }
}

/// [`world`] plus an MCP client ([`mcp_draw`]): response streams that break with probability 0,
/// 1 or any, or on every first request; re-issued or not, 0–2 times; a request timeout of 60 s
/// or 100 ms to 30 s, with or without `notifications/cancelled`, re-sent or not; calls
/// duplicated with probability 0, 1 or any, 0–2 s apart; and the tool server's request key on
/// or off.
pub fn world_with_mcp_client() -> impl Strategy<Value = Case> {
    (world(), mcp_draw()).prop_map(|(mut c, d)| {
        apply_mcp_client(&mut c.scenario, &d);
        c
    })
}

// ---- Hedged requests (issue 29, item 1) -----------------------------------------------------
// Drawn apart from `world()` as the deliveries are, so the worlds it generates stay as they were.

/// Where and how a generated world hedges: a `hedge` layer ([`HEDGE`]) around the tool, in
/// front of the service or after `sdk`.
#[derive(Clone, Debug)]
pub(crate) struct HedgeDraw {
    /// 0: between `model_retry` and `executor`; 1: between `executor` and `refunds_service`;
    /// 2: after `sdk` (shrinks toward 0).
    pub position: u8,
    /// `max_retries`: hedged tries beside the first, 0–3 (shrinks toward 0).
    pub max_retries: u32,
    /// `hedging_delay`, ms: 0 (all at once), short, or one of a Stripe call's lengths.
    pub delay_ms: u64,
    /// A retry budget (Envoy's defaults) or none.
    pub budget: bool,
    /// `retry_on`: the kind's default (every class) or none (every failure fatal, gRPC's
    /// default `nonFatalStatusCodes`).
    pub all_non_fatal: bool,
}

/// The hedge layer's name in a generated world.
pub const HEDGE: &str = "hedge";

/// The hedge draw of [`world_with_hedges`].
pub(crate) fn hedge_draw() -> impl Strategy<Value = HedgeDraw> {
    (
        0u8..=2,
        0u32..=3,
        prop_oneof![Just(0u64), 1u64..=500, bounds::LATENCY_MS],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(position, max_retries, delay_ms, budget, all)| HedgeDraw {
            position,
            max_retries,
            delay_ms,
            budget,
            all_non_fatal: !all,
        })
}

/// Writes `d` into `s`: the hedge layer, placed in `stack` (the built-in layers when the world
/// has none), with fewer hedged tries when the stack's fan-out would pass validation's cap.
pub(crate) fn apply_hedge(s: &mut Scenario, d: &HedgeDraw) {
    use crate::scenario::layers::BUILT_IN_LAYERS;
    use crate::scenario::{LayerKind, RetryBudget, RetryLayer, Stack};
    let mut layer = RetryLayer::new(LayerKind::Hedge);
    layer.max_retries = Some(d.max_retries);
    layer.hedging_delay = Some(millis(d.delay_ms));
    if d.budget {
        layer.budget = Some(RetryBudget {
            budget_percent: 20.0,
            min_retry_concurrency: 3,
        });
    }
    if !d.all_non_fatal {
        layer.retry_on = Some(Vec::new());
    }
    let mut stack = s
        .stack
        .clone()
        .unwrap_or_else(|| BUILT_IN_LAYERS.iter().map(|n| n.to_string()).collect());
    let at = |name: &str| stack.iter().position(|n| n == name).unwrap_or(stack.len());
    let i = match d.position {
        0 => at("executor"),
        1 => at("refunds_service"),
        _ => stack.len(),
    };
    stack.insert(i, HEDGE.to_string());
    s.schema_version = 2;
    s.stack = Some(stack);
    s.layers.insert(HEDGE.to_string(), layer);
    while Stack::of(s).fan_out() > crate::scenario::MAX_TRIES_PER_TOOL_CALL {
        let l = s.layers.get_mut(HEDGE).expect("just inserted");
        match l.max_retries {
            Some(n) if n > 0 => l.max_retries = Some(n - 1),
            _ => break,
        }
    }
}

/// [`world`] plus a [`hedge_draw`]: a `hedge` layer around the tool, in front of the service or
/// after `sdk`, with 0–3 hedged tries after 0 ms to 40 s, a retry budget or none, and every
/// failure non-fatal (Polly's default) or fatal (gRPC's).
pub fn world_with_hedges() -> impl Strategy<Value = Case> {
    (world(), hedge_draw()).prop_map(|(mut c, d)| {
        apply_hedge(&mut c.scenario, &d);
        c
    })
}

// ---- Circuit breakers (issue 29, item 2) ----------------------------------------------------
// Drawn apart from `world()`, as the deliveries are, so its worlds stay as they were.

/// A circuit breaker drawn for a generated world: whose defaults, its settings, whether it
/// counts timeouts, and whether it sits above or below a framework retry layer.
#[derive(Clone, Debug)]
pub struct BreakerDraw {
    /// resilience4j's defaults (else Polly's).
    pub resilience4j: bool,
    /// `failure_ratio`, in hundredths (5 to 100).
    pub ratio_pct: u32,
    /// `minimum_throughput` (1 to 8: small, so it opens in a generated burst).
    pub minimum_throughput: u32,
    /// `break_duration`, ms (1 ms to 10 s).
    pub break_ms: u64,
    /// A count window of this many calls (else a time window of `window_ms`).
    pub window_calls: Option<u32>,
    /// A time window, ms (100 ms to 60 s).
    pub window_ms: u64,
    /// `half_open_calls` (1 or 2).
    pub half_open_calls: u32,
    /// Whether timeouts count (`failure_on` left out); else `["5xx", "429"]`.
    pub counts_timeouts: bool,
    /// Where the breaker sits in the stack.
    pub place: BreakerPlace,
}

/// Where a generated breaker sits in the stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerPlace {
    /// At the top of the layers around the tool (above a framework retry, if the world has one).
    AroundToolTop,
    /// At the bottom of the layers around the tool, just above `executor`.
    AroundToolBottom,
    /// Between `executor` and `refunds_service` (in the HTTP client's pipeline to the service).
    BeforeService,
    /// After `sdk`, on the hop to Stripe.
    AfterSdk,
}

/// Draws a [`BreakerDraw`].
pub fn breaker_draw() -> impl Strategy<Value = BreakerDraw> {
    (
        (any::<bool>(), 5u32..=100, 1u32..=8, 1u64..=10_000),
        (
            prop::option::of(1u32..=10),
            100u64..=60_000,
            1u32..=2,
            any::<bool>(),
            prop_oneof![
                Just(BreakerPlace::AroundToolTop),
                Just(BreakerPlace::AroundToolBottom),
                Just(BreakerPlace::BeforeService),
                Just(BreakerPlace::AfterSdk),
            ],
        ),
    )
        .prop_map(
            |(
                (resilience4j, ratio_pct, minimum_throughput, break_ms),
                (window_calls, window_ms, half_open_calls, counts_timeouts, place),
            )| BreakerDraw {
                resilience4j,
                ratio_pct,
                minimum_throughput,
                break_ms,
                window_calls,
                window_ms,
                half_open_calls,
                counts_timeouts,
                place,
            },
        )
}

/// The name of the breaker a generated world gets.
pub const BREAKER: &str = "breaker";

/// Writes `d` into `s`: a `circuit_breaker` layer named [`BREAKER`] between `model_retry` and
/// `executor`, at the top or the bottom of the layers already there.
pub fn apply_breaker(s: &mut Scenario, d: &BreakerDraw) {
    use crate::scenario::{
        stack_of, BreakerDefaults, BreakerSettings, LayerKind, RetryLayer, RetryOn,
    };
    let mut settings = BreakerSettings {
        defaults: if d.resilience4j {
            BreakerDefaults::Resilience4j
        } else {
            BreakerDefaults::Polly
        },
        failure_ratio: Some(f64::from(d.ratio_pct) / 100.0),
        minimum_throughput: Some(d.minimum_throughput),
        break_duration: Some(millis(d.break_ms)),
        half_open_calls: Some(d.half_open_calls),
        failure_on: (!d.counts_timeouts).then(|| vec![RetryOn::FiveXx, RetryOn::TooManyRequests]),
        ..BreakerSettings::default()
    };
    match d.window_calls {
        // A count window holds at least `minimum_throughput` calls (validation refuses less).
        Some(n) => settings.window_calls = Some(n.max(d.minimum_throughput)),
        None => settings.sampling_duration = Some(millis(d.window_ms)),
    }
    let mut layer = RetryLayer::new(LayerKind::CircuitBreaker);
    layer.breaker = Some(settings);
    s.layers.insert(BREAKER.to_string(), layer);
    let mut stack = stack_of(s);
    let after = |name: &str| stack.iter().position(|n| n == name).map_or(0, |i| i + 1);
    let at = match d.place {
        BreakerPlace::AroundToolTop => after("model_retry"),
        BreakerPlace::AroundToolBottom => after("executor") - 1,
        BreakerPlace::BeforeService => after("executor"),
        BreakerPlace::AfterSdk => stack.len(),
    };
    stack.insert(at, BREAKER.to_string());
    s.stack = Some(stack);
    s.schema_version = s.schema_version.max(2);
}

/// [`world`] plus a [`breaker_draw`]: a circuit breaker around the tool with Polly's or
/// resilience4j's defaults, a small minimum throughput (1 to 8 calls), a ratio from 5 % to
/// 100 %, open 1 ms to 10 s, a count or time window, 1 or 2 probes, counting timeouts or not,
/// above or below the world's framework retry, between the executor and the service, or after
/// `sdk`.
pub fn world_with_breakers() -> impl Strategy<Value = Case> {
    (world(), breaker_draw()).prop_map(|(mut c, d)| {
        apply_breaker(&mut c.scenario, &d);
        c
    })
}
