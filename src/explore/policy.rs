//! Policies as functions over a scenario: the incident's settings, the full fix, and each single
//! fix alone (the same settings as `policies/*.json`).

use std::time::Duration;

use crate::scenario::{
    AppliesTo, Cancellation, DroppedConnectionRetry, KeyMode, KeyRotation, LatencyDist,
    OnKeyConflict, OnPendingRow, OnTimeout, OnUnknownOutcome, ProbeAfter, ProviderKind,
    ReportTimeout, Scenario, StatusSource, UnknownOutcomeRecord,
};

/// The mitigation that matches the world's provider, so a key-based fix means the same thing on
/// every provider (issue "providers, deliveries and failures"):
///
/// - **Stripe**: nothing more; its `Idempotency-Key` carries the per-ticket key.
/// - **Business id**: the service sends one business id per logical refund (`business_id:
///   per_ticket`): the provider's dedup on it then does what Stripe's key does.
/// - **Keys ignored, or a duplicate window**: no key can protect a retry at the provider, so
///   the service dedups itself: a pending row per ticket whose second request waits for the
///   first (`local_dedup`, `on_pending_row: wait`), a look at the charge's refunds before each
///   create (`lookup_before_create`: a crash may have lost a committed call), a lookup after an
///   unknown outcome (`on_unknown_outcome: lookup`), a status source that asks the provider
///   (`status_source: provider`), no SDK network retries nor stripe-node's retry of a dropped
///   connection (they would resend with a key the provider ignores), and no `abort_in_flight`
///   (the service would forget a call the provider may still commit).
pub(crate) fn provider_mitigation(s: &mut Scenario) {
    let svc = &mut s.refunds_service;
    match s.provider.kind {
        ProviderKind::Stripe => {}
        ProviderKind::BusinessId => svc.business_id = KeyMode::PerTicket,
        ProviderKind::KeysIgnored | ProviderKind::DedupWindow => {
            svc.local_dedup = true;
            svc.lookup_before_create = true;
            svc.on_pending_row = OnPendingRow::Wait;
            svc.on_unknown_outcome = OnUnknownOutcome::Lookup;
            svc.on_key_conflict = OnKeyConflict::Lookup;
            svc.status_source = StatusSource::Provider;
            svc.stripe_client.max_network_retries = 0;
            svc.stripe_client.retry_dropped_connection = DroppedConnectionRetry::Off;
            // An abort makes the service forget a call the provider may still commit, and
            // nothing at the provider would recognise the next try.
            no_abort_in_flight(s);
        }
    }
}

/// The incident: no key, timeout reported as an error, retry once on any tool, compliant model,
/// no drift. Leaves the world's timeout, pool and faults as generated.
pub fn incident(s: &mut Scenario) {
    s.refunds_service.idempotency_key = KeyMode::None;
    s.executor.on_timeout = OnTimeout::ReportError;
    s.agent.retry.applies_to = AppliesTo::AnyTool;
    s.agent.retry.max_retries = 1;
    s.agent.retry.compliance = 1.0;
    s.agent.retry.amount_drift_probability = 0.0;
}

/// Per-ticket key only.
pub(crate) fn key_only(s: &mut Scenario) {
    incident(s);
    s.refunds_service.idempotency_key = KeyMode::PerTicket;
}

/// Status probe after a timeout only.
pub fn probe_only(s: &mut Scenario) {
    incident(s);
    s.executor.on_timeout = OnTimeout::ProbeStatus;
}

/// Retries only for idempotent tools, with the Stripe SDK's network retries on.
pub(crate) fn idempotent_retries_only(s: &mut Scenario) {
    incident(s);
    s.agent.retry.applies_to = AppliesTo::IdempotentTools;
    s.refunds_service.stripe_client.max_network_retries = 2;
}

/// 15 s executor timeout only.
pub(crate) fn timeout_15s_only(s: &mut Scenario) {
    incident(s);
    s.executor.timeout = Duration::from_secs(15);
}

/// Pool of 8 connections only.
pub(crate) fn pool_resize_only(s: &mut Scenario) {
    incident(s);
    s.refunds_service.pool_size = 8;
}

/// The full fix as the property's premise: per-ticket key, probe on timeout, retries only for
/// idempotent tools (a compliant model, no drift), and humans who check the dashboard and the
/// service's status before a manual refund and pick up no sooner than 10 minutes.
///
/// On the layered call path (DESIGN §1b) the claim is that **one per-ticket key, carried
/// unchanged through every layer, makes every retry of every layer safe**. The premise says
/// what that takes, and no more:
///
/// - **The key is never rotated**: `rotate_key: never` and no `new_nonce_after_error`. Writing a
///   new key after an error whose outcome is unknown (a 502, a 409, an abort) makes the next try a
///   new refund (the `key-rotated-on-unknown` recipe), so a rotating service does not carry "one
///   key per ticket".
/// - **No `abort_in_flight` cancellation** at the executor or at any added layer (it becomes
///   `queued_only`, which still drops work that has not reached Stripe). The fix's status probe
///   reads the service's ledger; an abort rolls the ledger back while Stripe may still commit,
///   so the probe answers "no refund was made" for a refund that exists (the `abort-in-flight`
///   recipe): the fix would then tell the model a false failure and hand humans a ticket whose
///   status is wrong, which is not the fix's design.
/// - Everything else on the path is left as the world drew it: added `retry` and `proxy`
///   layers with any `max_retries`, `retry_on`, backoff, budget, `per_try_timeout` and
///   `on_timeout` (a framework retry layer keeps `applies_to: any_tool`: the key, not a filter,
///   is what makes its retries safe), and the SDK's `key` and `retry_dropped_connection`: the
///   service always sends its per-ticket key, which the SDK reuses on every try whatever those
///   say, so they do not weaken the claim and the property checks that they do not.
pub fn full_fix(s: &mut Scenario) {
    incident(s);
    s.refunds_service.idempotency_key = KeyMode::PerTicket;
    s.refunds_service.rotate_key = KeyRotation::Never;
    s.refunds_service.new_nonce_after_error = false;
    no_abort_in_flight(s);
    s.executor.on_timeout = OnTimeout::ProbeStatus;
    s.agent.retry.applies_to = AppliesTo::IdempotentTools;
    s.humans.enabled = true;
    s.humans.check_probability = 1.0;
    s.humans.check_service_status = true;
    median_at_least(&mut s.humans.pickup_delay, Duration::from_secs(600));
    provider_mitigation(s);
}

/// The headline claim's premise, as `policies/keys-and-probe.json` states it: a per-ticket key
/// never rotated, the status probe after a timeout or an unknown outcome over the service's
/// ledger, which records a call without a definite answer as unknown, probing before any
/// failure is shown (`probe_after: any_failure`); every added layer reports a timed-out last
/// try as an unknown outcome (`on_timeout: unknown`), not a failure; and humans who check the
/// provider and the service's status before a manual refund (picking up no sooner than 10
/// minutes). **Retries stay allowed**: the model's rule applies to any tool, and everything
/// the world drew about retries is kept — the model's compliance (below 1, the model may
/// ignore "do not retry"), executor, framework, proxy and SDK retries, faults, and every
/// layer's cancellation, `abort_in_flight` included (an aborted call is an unknown outcome,
/// recorded as such).
pub fn keys_and_probe(s: &mut Scenario) {
    s.refunds_service.idempotency_key = KeyMode::PerTicket;
    s.refunds_service.rotate_key = KeyRotation::Never;
    s.refunds_service.new_nonce_after_error = false;
    // Never rotated includes a key conflict: `retry_new_key` writes a new key on a 409.
    if s.refunds_service.on_key_conflict == OnKeyConflict::RetryNewKey {
        s.refunds_service.on_key_conflict = OnKeyConflict::Fail;
    }
    s.refunds_service.status_source = StatusSource::Ledger;
    s.refunds_service.sdk_timeout_recorded_as = UnknownOutcomeRecord::Unknown;
    s.executor.on_timeout = OnTimeout::ProbeStatus;
    s.executor.probe_after = ProbeAfter::AnyFailure;
    s.agent.retry.applies_to = AppliesTo::AnyTool;
    for l in s.layers.values_mut() {
        l.on_timeout = ReportTimeout::Unknown;
    }
    s.humans.enabled = true;
    s.humans.check_probability = 1.0;
    s.humans.check_service_status = true;
    median_at_least(&mut s.humans.pickup_delay, Duration::from_secs(600));
    provider_mitigation(s);
}

/// [`keys_and_probe`] without [`provider_mitigation`]: the claim's premise as written for
/// Stripe, applied whatever the provider.
pub(crate) fn keys_and_probe_unmitigated(s: &mut Scenario) {
    let kind = s.provider.kind;
    s.provider.kind = ProviderKind::Stripe;
    keys_and_probe(s);
    s.provider.kind = kind;
}

/// The provider mitigations' twins: a world on another provider under the claim's policy with
/// its matching mitigation taken away (or a part of it), each of which breaks it.
pub const PROVIDER_TWINS: &[(&str, Policy)] = &[
    ("keys ignored, no service-side dedup", |s| {
        s.provider.kind = ProviderKind::KeysIgnored;
        keys_and_probe_unmitigated(s);
    }),
    ("duplicate window, no service-side dedup", |s| {
        s.provider.kind = ProviderKind::DedupWindow;
        keys_and_probe_unmitigated(s);
    }),
    ("business id per attempt", |s| {
        s.provider.kind = ProviderKind::BusinessId;
        keys_and_probe(s);
        s.refunds_service.business_id = KeyMode::PerAttempt;
    }),
    ("keys ignored, crashes, no lookup before create", |s| {
        s.provider.kind = ProviderKind::KeysIgnored;
        keys_and_probe(s);
        s.refunds_service.lookup_before_create = false;
        s.refunds_service.crash_after_provider_ok = 1.0;
    }),
    (
        "finished duplicate refused with 422, read as nothing done, key rotated",
        |s| {
            keys_and_probe(s);
            s.provider.duplicate_rejected_status = Some(422);
            s.refunds_service.rotate_key = KeyRotation::AfterDefiniteFailure;
        },
    ),
];

/// The claim's twins: [`keys_and_probe`] with one thing changed, each of which breaks it.
pub const CLAIM_TWINS: &[(&str, Policy)] = &[
    ("key removed (probe alone)", |s| {
        keys_and_probe(s);
        s.refunds_service.idempotency_key = KeyMode::None;
    }),
    ("key per attempt", |s| {
        keys_and_probe(s);
        s.refunds_service.idempotency_key = KeyMode::PerAttempt;
    }),
    ("key rotated after an error", |s| {
        keys_and_probe(s);
        s.refunds_service.rotate_key = KeyRotation::AfterError;
    }),
    ("naive status source, no key", |s| {
        keys_and_probe(s);
        s.refunds_service.idempotency_key = KeyMode::None;
        s.refunds_service.status_source = StatusSource::CompletedOnly;
    }),
];

/// Replaces every `abort_in_flight` cancellation (executor and added layers) by `queued_only`.
fn no_abort_in_flight(s: &mut Scenario) {
    let downgrade = |c: &mut Cancellation| {
        if *c == Cancellation::AbortInFlight {
            *c = Cancellation::QueuedOnly;
        }
    };
    downgrade(&mut s.executor.cancellation);
    for l in s.layers.values_mut() {
        downgrade(&mut l.cancellation);
    }
}

/// Raises `d` so that its median is at least `floor`: a lognormal's `p50` (and `p99` with it), an
/// exponential's mean (to `floor / ln 2`), and every value of the other forms.
fn median_at_least(d: &mut LatencyDist, floor: Duration) {
    match d {
        LatencyDist::Lognormal { p50, p99 } => {
            *p50 = (*p50).max(floor);
            *p99 = (*p99).max(*p50);
        }
        LatencyDist::Constant { value } => *value = (*value).max(floor),
        LatencyDist::Exponential { mean } => {
            *mean = (*mean).max(floor.div_f64(std::f64::consts::LN_2));
        }
        LatencyDist::Empirical { samples } => {
            for x in samples {
                *x = (*x).max(floor);
            }
        }
        LatencyDist::Script(s) => {
            for x in s.by_request.values_mut() {
                *x = (*x).max(floor);
            }
            median_at_least(&mut s.otherwise, floor);
        }
    }
}

/// A policy applied in place.
pub type Policy = fn(&mut Scenario);

/// The single fixes by name, in the order of `docs/findings.md`.
pub const SINGLE_FIXES: &[(&str, Policy)] = &[
    ("key-only", key_only),
    ("probe-only", probe_only),
    ("idempotent-retries-only", idempotent_retries_only),
    ("timeout-15s-only", timeout_15s_only),
    ("pool-resize-only", pool_resize_only),
];
