//! What the provider recognises a repeated refund request by, as this scenario's service sends
//! it: the one place the rules ask before they call a retry safe or suggest a key.
//!
//! - **Stripe** (`provider.kind: stripe`): the `Idempotency-Key`. A retry from above the
//!   service is recognised when the key is per ticket and not rotated after an error.
//! - **Business id** (`business_id`): the body's business id; idempotency keys are ignored. A
//!   retry from above the service is recognised when `refunds_service.business_id` is
//!   `per_ticket`; the SDK's own tries, and a proxy's below it, resend the same body, so any
//!   business id the service sends carries over to them.
//! - **Keys ignored** (`keys_ignored`): nothing the service sends. Only the service's own dedup
//!   (`local_dedup`) keeps a retry from above from reaching the provider; nothing protects the
//!   SDK's tries.
//! - **Duplicate window** (`dedup_window`): identical parameters within `provider.dedup_window`
//!   of the first request. A retry is recognised when it reaches the provider within the window
//!   (the span the caller gives, an upper estimate: timeouts, backoff at its largest and the
//!   burst's p99 pool wait), or when the service dedups (`local_dedup`).
//!
//! Key retention is not counted here: `key-retention-too-short` compares it with the longest
//! path to a retry.

use std::time::Duration;

use crate::scenario::{KeyMode, KeyRotation, ProviderKind, Scenario};

/// Where a retry re-sends the refund from, which decides what it carries unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Origin {
    /// Above the refunds service (the model, the executor, a layer above the service): every
    /// try is a new request to the service, with the key and business id the service makes
    /// for it.
    Above,
    /// Below the service (the SDK's own tries, a proxy between the SDK and the provider): the
    /// same request's body and headers again.
    Below,
}

impl Origin {
    /// Where an added layer at `position` re-sends from: below the service only after `sdk`.
    pub(super) fn at(position: crate::scenario::Position) -> Self {
        if position == crate::scenario::Position::BeforeProvider {
            Origin::Below
        } else {
            Origin::Above
        }
    }
}

/// Whether the provider recognises a retry as the request it repeats, and if not, why and
/// what would make it.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Guard {
    /// The provider (or the service's own dedup) recognises the retry.
    pub holds: bool,
    /// Why it does not, for a finding's message: "the service sends no idempotency key".
    pub problem: String,
    /// The `PATH=VALUE` overrides that make it hold; empty when nothing the service sends can
    /// (the SDK's tries on a provider that ignores keys).
    pub fix: Vec<String>,
    /// The same remedy in words, for a finding's hint.
    pub fix_text: String,
}

impl Guard {
    fn holds() -> Self {
        Guard {
            holds: true,
            problem: String::new(),
            fix: Vec::new(),
            fix_text: String::new(),
        }
    }

    /// A finding's hint and fix when the guard fails: the provider's remedy or `narrow` (a
    /// layer's own change, the override `narrowed`), or `narrow` alone, with the problem, when
    /// nothing the service sends can make the guard hold.
    pub(super) fn hint_or(&self, narrow: &str, narrowed: String) -> (String, Vec<String>) {
        if self.fix.is_empty() {
            (format!("{narrow}: {}", self.problem), vec![narrowed])
        } else {
            (format!("{}, or {narrow}", self.fix_text), self.fix.clone())
        }
    }

    fn fails(problem: impl Into<String>, fix: Vec<String>, fix_text: impl Into<String>) -> Self {
        Guard {
            holds: false,
            problem: problem.into(),
            fix,
            fix_text: fix_text.into(),
        }
    }
}

fn s_(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// `d` rounded up to whole seconds, for spans in messages (an estimate has no milliseconds).
pub(super) fn up_to_seconds(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs() + u64::from(d.subsec_nanos() > 0))
}

/// The key every layer above the service carries unchanged across its retries: a per-ticket key
/// that is not rotated after an error.
pub(super) fn stable_service_key(s: &Scenario) -> bool {
    s.refunds_service.idempotency_key == KeyMode::PerTicket && !rotates_on_any_error(s)
}

/// Whether the service writes a new key after any error, unknown outcomes included
/// (`new_nonce_after_error`, or `rotate_key: after_error`).
pub(super) fn rotates_on_any_error(s: &Scenario) -> bool {
    let svc = &s.refunds_service;
    svc.new_nonce_after_error || svc.rotate_key == KeyRotation::AfterError
}

/// Whether the provider recognises anything the service sends once per ticket, whenever it
/// comes: a per-ticket idempotency key on Stripe, a per-ticket business id on a `business_id`
/// provider; never on `keys_ignored` or `dedup_window` (nothing the service sends is read).
pub(super) fn ticket_id_recognised(s: &Scenario) -> bool {
    let svc = &s.refunds_service;
    match s.provider.kind {
        ProviderKind::Stripe => svc.idempotency_key == KeyMode::PerTicket,
        ProviderKind::BusinessId => svc.business_id == KeyMode::PerTicket,
        ProviderKind::KeysIgnored | ProviderKind::DedupWindow => false,
    }
}

/// The per-ticket identifier this provider reads, and the override that sends it: Stripe's key
/// (kept after errors), a `business_id` provider's business id; on the providers that read
/// neither, the service's own dedup. For hints that name the provider's remedy.
pub(super) fn ticket_id_fix(s: &Scenario) -> (Vec<String>, String) {
    match s.provider.kind {
        ProviderKind::Stripe => {
            let mut fix = vec!["refunds_service.idempotency_key=per_ticket".to_string()];
            let svc = &s.refunds_service;
            if svc.new_nonce_after_error {
                fix.push("refunds_service.new_nonce_after_error=false".into());
            }
            if svc.rotate_key == KeyRotation::AfterError {
                fix.push("refunds_service.rotate_key=after_definite_failure".into());
            }
            (
                fix,
                "set refunds_service.idempotency_key to \"per_ticket\" (and keep refunds_service.new_nonce_after_error false) so every try carries one key".into(),
            )
        }
        ProviderKind::BusinessId => (
            vec!["refunds_service.business_id=per_ticket".into()],
            "set refunds_service.business_id to \"per_ticket\" (one business id per logical refund, which provider.kind \"business_id\" recognises a repeat by; it ignores idempotency keys)".into(),
        ),
        ProviderKind::KeysIgnored => (
            vec!["refunds_service.local_dedup=true".into()],
            "dedup in the service (refunds_service.local_dedup: true): provider.kind \"keys_ignored\" ignores any key, so no key helps".into(),
        ),
        ProviderKind::DedupWindow => (
            vec!["refunds_service.local_dedup=true".into()],
            format!(
                "dedup in the service (refunds_service.local_dedup: true): provider.kind \"dedup_window\" takes no keys and recognises a repeat only within provider.dedup_window ({})",
                s_(s.provider.dedup_window)
            ),
        ),
    }
}

/// Whether the provider recognises a retry from `origin` that reaches it up to `span` after
/// the first request (the span matters only to a `dedup_window` provider), and if not, why and
/// the remedy. See the module docs for each provider's rule.
pub(super) fn guard(s: &Scenario, origin: Origin, span: Duration) -> Guard {
    let svc = &s.refunds_service;
    let (fix, fix_text) = ticket_id_fix(s);
    match (s.provider.kind, origin) {
        (ProviderKind::Stripe, _) => {
            if stable_service_key(s) {
                return Guard::holds();
            }
            Guard::fails(unstable_key(svc.idempotency_key), fix, fix_text)
        }
        (ProviderKind::BusinessId, _) => {
            let ok = match origin {
                Origin::Above => svc.business_id == KeyMode::PerTicket,
                Origin::Below => svc.business_id != KeyMode::None,
            };
            if ok {
                return Guard::holds();
            }
            Guard::fails(unstable_business_id(svc.business_id), fix, fix_text)
        }
        (ProviderKind::KeysIgnored, Origin::Above) if svc.local_dedup => Guard::holds(),
        (ProviderKind::KeysIgnored, Origin::Above) => Guard::fails(
            "the provider ignores idempotency keys (provider.kind \"keys_ignored\") and the service does not dedup (refunds_service.local_dedup false)",
            fix,
            fix_text,
        ),
        (ProviderKind::KeysIgnored, Origin::Below) => Guard::fails(
            "the provider ignores idempotency keys (provider.kind \"keys_ignored\"), and the service's dedup is above this retry",
            Vec::new(),
            String::new(),
        ),
        (ProviderKind::DedupWindow, _) => {
            let window = s.provider.dedup_window;
            if span <= window || (origin == Origin::Above && svc.local_dedup) {
                return Guard::holds();
            }
            let problem = format!(
                "the provider recognises a repeat only within provider.dedup_window ({}) of the first request, and this retry can reach it up to {} after{}",
                s_(window),
                s_(up_to_seconds(span)),
                if origin == Origin::Above {
                    " (and the service does not dedup)"
                } else {
                    ""
                }
            );
            match origin {
                Origin::Above => Guard::fails(problem, fix, fix_text),
                Origin::Below => Guard::fails(problem, Vec::new(), String::new()),
            }
        }
    }
}

/// Why a Stripe retry under the service's idempotency key mode `mode` is not recognised
/// (a per-ticket key fails only when it is rotated after an error).
fn unstable_key(mode: KeyMode) -> &'static str {
    match mode {
        KeyMode::None => "the service sends no idempotency key",
        KeyMode::PerAttempt => "the service makes a new idempotency key per request",
        KeyMode::PerTicket => {
            "the service rotates its per-ticket key after any error (new_nonce_after_error or rotate_key: after_error)"
        }
    }
}

/// Why a `business_id` provider does not recognise a retry under the service's business id
/// mode `mode`: none sent, or one per request.
fn unstable_business_id(mode: KeyMode) -> &'static str {
    match mode {
        KeyMode::None => {
            "the service sends no business id, the only thing provider.kind \"business_id\" recognises a repeat by (it ignores idempotency keys)"
        }
        _ => {
            "the service derives its business id per request (ref_TICKET_REQUEST), so each try carries a new one (provider.kind \"business_id\" ignores idempotency keys)"
        }
    }
}
