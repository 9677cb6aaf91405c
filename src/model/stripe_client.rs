//! The Stripe SDK inside the refunds service: one logical `refunds.create` call, with optional
//! network retries that reuse one idempotency key (stripe-node / stripe-python rules).

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use super::caller::CallerState;
use super::dist;
use super::layers::before_provider::{self, EgressAnswer, ToProvider};
use super::layers::{self, via_ids, Via};
use super::stripe::{Delivered, Origin, RefundParams, Response, StripeRequest};
use super::stripe_api::{connect_fails, serve, Caller};
use super::stripe_trace::{classify, record_outcome, record_request};
use super::world::{Ids, World};
use crate::history::ProviderOutcome;
use crate::scenario::{
    DroppedConnectionRetry, KeyMode, Position, RequestKey, SdkKey, StripeClient,
};
use crate::sim::{race, Either, JoinHandle, SimTime};

/// Stripe's answer on its way to the SDK: straight from Stripe's task, or through the proxies
/// after `sdk` (a boxed future only then).
enum Server {
    Task(JoinHandle<Delivered>),
    Egress(Pin<Box<dyn Future<Output = EgressAnswer>>>),
}

impl Future for Server {
    type Output = EgressAnswer;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<EgressAnswer> {
        match self.get_mut() {
            Server::Task(task) => Pin::new(task).poll(cx).map(EgressAnswer::Stripe),
            Server::Egress(path) => path.as_mut().poll(cx),
        }
    }
}

/// How a logical call ended, as the refunds service sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CallResult {
    /// A refund object came back (new or replayed); its id and whether money moves.
    Refunded(String),
    /// An error response or no response (status 0); the text names it.
    Failed(u16, String),
    /// A key conflict: 409 `idempotency_key_in_use` or 400 `idempotency_error`.
    KeyConflict(u16, String),
}

/// stripe-node's `_shouldRetry`: connection errors and timeouts, 409, ≥ 500, and 429 only with
/// `Stripe-Should-Retry: true`; the header's `false` forbids a retry. With `honour_headers`
/// false (a generic HTTP client) the header is not read: connection errors, 409 and ≥ 500.
fn should_retry(d: Option<&Delivered>, honour_headers: bool) -> bool {
    match d {
        None | Some(Delivered::ConnectionLost | Delivered::ConnectFailed) => true,
        Some(Delivered::Response(Response {
            should_retry: Some(h),
            ..
        })) if honour_headers => *h,
        Some(Delivered::Response(r)) => r.status == 409 || r.status >= 500,
    }
}

/// The longest `Retry-After` an SDK waits for (stripe-node's and stripe-python's cap): 60 s.
pub(crate) const MAX_RETRY_AFTER: SimTime = SimTime::from_secs(60);

/// The wait before a retry: the SDK's backoff, or the answer's `Retry-After` when that is longer
/// and at most [`MAX_RETRY_AFTER`] (stripe-node's `_getSleepTimeInMS`, stripe-python's
/// `_sleep_time_seconds`), only when the SDK honours the provider's headers.
fn retry_wait(backoff: SimTime, d: Option<&Delivered>, honour_headers: bool) -> SimTime {
    match d {
        Some(Delivered::Response(Response {
            retry_after: Some(after),
            ..
        })) if honour_headers && *after <= MAX_RETRY_AFTER => backoff.max(*after),
        _ => backoff,
    }
}

/// Backoff before SDK network retry `n` (1-based), as DESIGN §1 states it:
/// `min(0.5·2^(n−1), 5) s × U(0.5, 1)`, at least 0.5 s (stripe-python's exponential form;
/// stripe-node grows as `0.5·(n−1)²` under the same cap, jitter and floor).
fn backoff(n: u32, u: f64) -> SimTime {
    super::backoff::stripe_sdk(n, u)
}

/// The key the SDK generates for try `try_no` when the service sent none (see
/// `StripeClient::key`): only when a network retry is possible at all, as stripe-node
/// generates one only with `maxNetworkRetries > 0`; on stripe-node's retry of a dropped
/// connection (`dropped`), the old version sends no key and the fixed one the call's key.
fn sdk_key(
    cfg: &StripeClient,
    ticket: u64,
    call: u64,
    try_no: u32,
    dropped: bool,
) -> Option<String> {
    if dropped && cfg.retry_dropped_connection == DroppedConnectionRetry::WithoutKey {
        return None;
    }
    let retries_possible = cfg.max_network_retries > 0
        || cfg.retry_dropped_connection == DroppedConnectionRetry::WithKey;
    if !retries_possible {
        return None;
    }
    match cfg.key {
        SdkKey::Reuse => Some(super::ids::sdk_key(ticket, call, None)),
        SdkKey::NewPerRetry => Some(super::ids::sdk_key(ticket, call, Some(try_no))),
        SdkKey::None | SdkKey::ReplacePerCall => None,
    }
}

/// One logical `refunds.create(charge, amount, reason)` from the refunds service. `key` is the
/// service's idempotency key; with network retries on and no key, the SDK generates one per
/// logical call. Stripe draws and backoff draws are keyed by `(ticket, attempt, exec_try, sdk_try)`
/// (ticket by [`World::ticket_key`]). The SDK's network retries run the one retry loop
/// ([`layers::retry_loop`]) with [`SdkRetryPolicy`] around one HTTP request ([`SdkTry`]).
///
/// Returns the call's result and whether any of its tries ended without a definite answer (no
/// response, an SDK timeout, an abort, a 5xx or a 409): then a refund may exist even when the
/// last try's answer was a definite refusal (a 429 after a 500 that committed).
pub(crate) async fn create_refund(
    w: Rc<World>,
    key: Option<String>,
    params: RefundParams,
    ids: Ids,
    exec_try: u32,
    via: &Via,
    caller: Option<&CallerState>,
) -> (CallResult, bool) {
    let ticket = params.ticket;
    let call = ids.call.unwrap_or(0);
    let business_id = match w.cfg.refunds_service.business_id {
        KeyMode::None => None,
        KeyMode::PerAttempt => Some(super::ids::business_id(ticket, Some(call))),
        KeyMode::PerTicket => Some(super::ids::business_id(ticket, None)),
    };
    let mut one = SdkTry {
        w: w.clone(),
        key,
        params,
        business_id,
        ids,
        exec_try,
        via,
        caller,
        has_egress: !w.layers_at(Position::BeforeProvider).is_empty(),
        uncertain: false,
    };
    let mut policy = SdkRetryPolicy;
    let last = layers::retry_loop(&w, &mut policy, &mut one).await;
    (last.result(), one.uncertain)
}

/// How one SDK try ended: what came back (`None`: the SDK's timeout or the caller's abort),
/// and its trace classification.
struct SdkAnswer {
    got: Option<Delivered>,
    aborted: bool,
    /// The words of an egress proxy that answered itself (it gave up).
    proxy_text: Option<String>,
    status: u16,
    outcome: ProviderOutcome,
    refund_id: Option<String>,
}

impl SdkAnswer {
    /// The logical call's result when this is the last try.
    fn result(self) -> CallResult {
        let (status, outcome) = (self.status, self.outcome);
        if let (200, Some(id)) = (status, self.refund_id) {
            return CallResult::Refunded(id);
        }
        if self.aborted {
            return CallResult::Failed(0, "connection aborted by the caller".into());
        }
        let text = match self.proxy_text {
            // A breaker's refusal has no HTTP status at all.
            Some(t) if status == 0 => t,
            Some(t) => format!("{t} (HTTP {status})"),
            None => format!("stripe {outcome} (HTTP {status})"),
        };
        if outcome.is_key_conflict() {
            CallResult::KeyConflict(status, text)
        } else {
            CallResult::Failed(status, text)
        }
    }
}

/// Calls `f` with the Stripe draw key of SDK try `sdk_try`: (attempt, executor try, SDK try,
/// then the tries of the layers above), on the stack unless layers above retried.
fn with_entity<R>(
    ids: Ids,
    exec_try: u32,
    sdk_try: u32,
    via: &Via,
    f: impl FnOnce(&[u64]) -> R,
) -> R {
    let head = [
        u64::from(ids.attempt.unwrap_or(0)),
        u64::from(exec_try),
        u64::from(sdk_try),
    ];
    let tail = via_ids(via);
    if tail.is_empty() {
        f(&head)
    } else {
        f(&[&head[..], &tail[..]].concat())
    }
}

/// One HTTP request of the SDK's logical call: sent to Stripe (or down the egress proxies),
/// under the SDK's timeout, abandoned when the caller aborts in flight.
struct SdkTry<'a> {
    w: Rc<World>,
    key: Option<String>,
    params: RefundParams,
    business_id: Option<String>,
    ids: Ids,
    exec_try: u32,
    via: &'a Via,
    caller: Option<&'a CallerState>,
    has_egress: bool,
    /// Whether a try so far ended without a definite answer.
    uncertain: bool,
}

impl SdkTry<'_> {
    /// Sends try `try_no`'s request: to Stripe as a task of its own, or down the egress
    /// proxies; its Stripe draws keyed by [`with_entity`].
    fn send(&self, req: StripeRequest, try_no: u32) -> Server {
        let (w, ids, ticket) = (&self.w, self.ids, self.params.ticket);
        let script_key = RequestKey::service(ticket, ids.attempt.unwrap_or(0), try_no);
        with_entity(ids, self.exec_try, try_no, self.via, |entity| {
            if self.has_egress {
                Server::Egress(before_provider::to_provider(
                    w.clone(),
                    ToProvider {
                        req,
                        ids,
                        entity: entity.to_vec(),
                        script_key,
                        sdk_try: try_no,
                    },
                ))
            } else {
                let rng = w.ticket_stream("stripe", ticket, entity);
                let ww = w.clone();
                let connect_failed = connect_fails(w, ticket, entity);
                Server::Task(w.spawn_for_with(ticket, move || async move {
                    if connect_failed {
                        Delivered::ConnectFailed
                    } else {
                        serve(ww, req, ids, Caller::Service, rng, script_key).await
                    }
                }))
            }
        })
    }
}

impl layers::Inner for SdkTry<'_> {
    type Answer = SdkAnswer;

    async fn try_once(&mut self, try_no: u32, _via: Via) -> layers::TryEnd<SdkAnswer> {
        let (w, ids, ticket) = (&self.w, self.ids, self.params.ticket);
        let cfg = &w.cfg.refunds_service.stripe_client;
        let call = ids.call.unwrap_or(0);
        // Only stripe-node's retry of a dropped connection goes past `max_network_retries`.
        let dropped_retry = try_no > cfg.max_network_retries;
        let key = if cfg.key == SdkKey::ReplacePerCall {
            // The client's own key for this logical call, whatever the service sent.
            Some(super::ids::client_key(ticket, call))
        } else {
            self.key
                .clone()
                .or_else(|| sdk_key(cfg, ticket, call, try_no, dropped_retry))
        };
        let req = StripeRequest {
            idempotency_key: key,
            params: self.params.clone(),
            business_id: self.business_id.clone(),
            origin: Origin {
                ticket,
                request: ids.call,
            },
        };
        // With proxies after `sdk`, each of their tries is traced where it leaves for Stripe.
        if !self.has_egress {
            record_request(w, ids, &req, try_no, &Via::new());
        }
        let start = w.now();
        let server = self.send(req, try_no);
        let sdk_timeout = w.sim.timeout(SimTime::from_duration(cfg.timeout), server);
        // The caller may abort the call in flight (`abort_in_flight`): the connection closes and
        // the SDK stops waiting; Stripe's task runs on and may still commit.
        let (got, aborted) = match self.caller {
            Some(c) if c.aborted() => (None, true),
            Some(c) => match race(sdk_timeout, c.abort_signal()).await {
                Either::Left(got) => (got.ok(), false),
                Either::Right(()) => (None, true),
            },
            None => (sdk_timeout.await.ok(), false),
        };
        // A proxy's own answer (it gave up) is read as what it is: a 504 or a dropped connection.
        let (got, proxy_text) = match got.map(EgressAnswer::into_delivered) {
            Some((d, text)) => (Some(d), text),
            None => (None, None),
        };
        let (status, outcome, refund_id) = match &got {
            Some(d) => classify(d),
            None if aborted => (0, ProviderOutcome::AbortedByCaller, None),
            None => (0, ProviderOutcome::SdkTimeout, None),
        };
        if !self.has_egress {
            let answer = (status, outcome, refund_id.clone());
            record_outcome(w, ids, answer, start, &Via::new());
        }
        // A connection never made is a definite answer: nothing reached Stripe.
        let unknown = status == 0 && outcome != ProviderOutcome::ConnectFailed;
        self.uncertain |= unknown || status == 409 || status >= 500;
        layers::TryEnd::Answered {
            value: SdkAnswer {
                got,
                aborted,
                proxy_text,
                status,
                outcome,
                refund_id,
            },
            class: None,
        }
    }
}

/// The SDK's network retries (stripe-node's and stripe-python's rules): after a try that
/// [`should_retry`] names, up to `max_network_retries`, plus stripe-node's one retry of a
/// dropped connection (`retry_dropped_connection`); a refund or an abort ends the call. The
/// wait is the SDK's [`backoff`], or the answer's `Retry-After` ([`retry_wait`]), its draw keyed
/// by (ticket, attempt, executor try, SDK try) in stream `sdk_backoff`, never by a run-wide
/// counter, so a change elsewhere in the run never moves it.
struct SdkRetryPolicy;

impl layers::Policy<SdkTry<'_>> for SdkRetryPolicy {
    fn retry(
        &mut self,
        n: u32,
        end: &layers::TryEnd<SdkAnswer>,
        inner: &mut SdkTry<'_>,
    ) -> layers::Next {
        let layers::TryEnd::Answered { value: a, .. } = end else {
            return layers::Next::Report;
        };
        if (a.status == 200 && a.refund_id.is_some()) || a.aborted {
            return layers::Next::Report;
        }
        let w = &inner.w;
        let cfg = &w.cfg.refunds_service.stripe_client;
        let dropped = matches!(a.got, Some(Delivered::ConnectionLost));
        let dropped_retry = dropped
            && n == cfg.max_network_retries
            && cfg.retry_dropped_connection != DroppedConnectionRetry::Off;
        let honour = cfg.honour_retry_headers;
        if !(dropped_retry || (n < cfg.max_network_retries && should_retry(a.got.as_ref(), honour)))
        {
            return layers::Next::Report;
        }
        let ticket = inner.params.ticket;
        let u = with_entity(inner.ids, inner.exec_try, n, inner.via, |entity| {
            let mut rng = w.ticket_stream("sdk_backoff", ticket, entity);
            dist::uniform(&mut rng, 0.0, 1.0)
        });
        layers::Next::After(retry_wait(backoff(n + 1, u), a.got.as_ref(), honour))
    }
}

#[cfg(test)]
mod tests {
    use super::super::stripe::{Body, ErrorType};
    use super::*;

    #[test]
    fn backoff_follows_stripe_node() {
        assert_eq!(backoff(1, 1.0), SimTime::from_millis(500));
        assert_eq!(backoff(1, 0.0), SimTime::from_millis(500), "floor 0.5 s");
        assert_eq!(backoff(2, 1.0), SimTime::from_secs(1));
        assert_eq!(backoff(5, 1.0), SimTime::from_secs(5), "capped at 5 s");
        assert_eq!(backoff(5, 0.0), SimTime::from_millis(2500));
    }

    #[test]
    fn retry_rules() {
        assert!(should_retry(None, true));
        assert!(should_retry(Some(&Delivered::ConnectionLost), true));
        assert!(should_retry(Some(&Delivered::ConnectFailed), true));
        assert!(should_retry(Some(&Delivered::ConnectFailed), false));
        let resp = |status, should_retry| {
            Delivered::Response(Response {
                status,
                body: Body::Error {
                    kind: ErrorType::ApiError,
                    code: None,
                    param: None,
                    message: String::new(),
                },
                idempotent_replayed: false,
                should_retry,
                retry_after: None,
            })
        };
        assert!(should_retry(Some(&resp(409, None)), true));
        assert!(should_retry(Some(&resp(500, None)), true));
        assert!(!should_retry(Some(&resp(429, None)), true));
        assert!(should_retry(Some(&resp(429, Some(true))), true));
        assert!(!should_retry(Some(&resp(500, Some(false))), true));
        assert!(!should_retry(Some(&resp(400, None)), true));
        // A client that does not read the header: its own rule.
        assert!(!should_retry(Some(&resp(429, Some(true))), false));
        assert!(should_retry(Some(&resp(500, Some(false))), false));
        assert!(should_retry(Some(&resp(409, None)), false));
    }

    #[test]
    fn retry_after_lengthens_the_wait_up_to_60_s_when_honoured() {
        let with = |after: u64| {
            Delivered::Response(Response {
                status: 429,
                body: Body::Error {
                    kind: ErrorType::RateLimitError,
                    code: None,
                    param: None,
                    message: String::new(),
                },
                idempotent_replayed: false,
                should_retry: Some(true),
                retry_after: Some(SimTime::from_secs(after)),
            })
        };
        let b = SimTime::from_millis(500);
        assert_eq!(retry_wait(b, Some(&with(10)), true), SimTime::from_secs(10));
        assert_eq!(retry_wait(b, Some(&with(60)), true), SimTime::from_secs(60));
        assert_eq!(
            retry_wait(b, Some(&with(61)), true),
            b,
            "over the cap: ignored"
        );
        assert_eq!(retry_wait(b, Some(&with(10)), false), b, "not honoured");
        assert_eq!(
            retry_wait(SimTime::from_secs(20), Some(&with(10)), true),
            SimTime::from_secs(20)
        );
        assert_eq!(retry_wait(b, None, true), b);
    }
}
