//! Proxies between the Stripe SDK and Stripe (an egress proxy or sidecar): added layers placed
//! after `sdk` in `stack`.
//!
//! Each try is a new HTTP request to Stripe carrying the SDK's request unchanged (same key), so
//! with a key Stripe replays or answers 409, and without one every try that executes is a new
//! refund. Each try is traced where it leaves for Stripe (`stripe_request` and Stripe's
//! `stripe_response`, with the proxies' tries as `via`), as the SDK's tries are without
//! proxies. A try the proxy gives up on (`per_try_timeout`) keeps executing at Stripe. A proxy
//! that gives up answers the SDK with its own 504 (`on_timeout: error`, as Envoy does) or drops
//! the connection (`unknown`): an [`EgressAnswer::Proxy`], which is not Stripe's answer and is
//! not counted as one.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use super::{self as layers, Place, Via};
use crate::model::stripe::{Body, Delivered, ErrorType, Response, StripeRequest};
use crate::model::stripe_api::{connect_fails, serve, Caller};
use crate::model::stripe_trace::{record_request, record_response};
use crate::model::world::{Ids, World};
use crate::scenario::{Position, ReportTimeout, RequestKey, RetryLayer, RetryOn};
use crate::sim::SimTime;

/// One request from the SDK to Stripe: what to send and the draw key of its first try.
#[derive(Clone)]
pub(crate) struct ToProvider {
    /// The request.
    pub req: StripeRequest,
    /// Its ids in the trace.
    pub ids: Ids,
    /// The Stripe draw key without the proxies' tries.
    pub entity: Vec<u64>,
    /// The per-request latency script key.
    pub script_key: RequestKey,
    /// The SDK's network try (0 = first), for the trace.
    pub sdk_try: u32,
}

/// What comes back up the proxies after `sdk`: Stripe's answer passed through, or a proxy's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum EgressAnswer {
    /// Stripe's answer (already traced where the try left for Stripe).
    Stripe(Delivered),
    /// A proxy gave up on its last try (`per_try_timeout`) and answered itself.
    Proxy {
        /// Its own status: 504 (`on_timeout: error`), or `None` when it dropped the
        /// connection (`unknown`).
        status: Option<u16>,
        /// What the caller is told (`egress: upstream request timeout after 3s`).
        text: String,
    },
    /// An open circuit breaker after `sdk` refused the request before it left (an exception in
    /// the HTTP client's pipeline): nothing reached Stripe. The text is the breaker's words.
    Rejected(String),
}

impl EgressAnswer {
    /// What the SDK reads from it, with the proxy's words when the proxy answered itself:
    /// Stripe's answer, or the proxy's 504 (an `api_error` body with Envoy's words) or dropped
    /// connection.
    pub(crate) fn into_delivered(self) -> (Delivered, Option<String>) {
        match self {
            EgressAnswer::Stripe(d) => (d, None),
            EgressAnswer::Proxy {
                status: Some(status),
                text,
            } => {
                let body = Body::Error {
                    kind: ErrorType::ApiError,
                    code: None,
                    param: None,
                    message: text.clone(),
                };
                let response = Response {
                    status,
                    body,
                    idempotent_replayed: false,
                    should_retry: None,
                    retry_after: None,
                };
                (Delivered::Response(response), Some(text))
            }
            EgressAnswer::Proxy { status: None, text } => (Delivered::ConnectionLost, Some(text)),
            // The SDK knows nothing was sent, as when a connection cannot be made.
            EgressAnswer::Rejected(text) => (Delivered::ConnectFailed, Some(text)),
        }
    }
}

/// The class of what Stripe (or a proxy below) answered, for a proxy's `retry_on`: a dropped
/// connection is a `reset`, a connection never made a `connect-failure`, a status its Envoy class (a proxy's own 504 is a `gateway-error`).
fn class_of(a: &EgressAnswer) -> Option<RetryOn> {
    match a {
        EgressAnswer::Stripe(Delivered::ConnectionLost)
        | EgressAnswer::Proxy { status: None, .. } => Some(RetryOn::Reset),
        EgressAnswer::Stripe(Delivered::ConnectFailed) => Some(RetryOn::ConnectFailure),
        EgressAnswer::Stripe(Delivered::Response(r)) => layers::http_class(r.status),
        EgressAnswer::Proxy {
            status: Some(s), ..
        } => layers::http_class(*s),
        EgressAnswer::Rejected(_) => Some(RetryOn::CircuitOpen),
    }
}

/// The path from the SDK to Stripe through the proxies after `sdk` (top to bottom).
pub(crate) fn to_provider(
    w: Rc<World>,
    p: ToProvider,
) -> Pin<Box<dyn Future<Output = EgressAnswer>>> {
    layers::through::<BeforeProvider>(w, Down { p, via: Via::new() }, 0)
}

/// A request on its way down the egress proxies, with their tries so far.
#[derive(Clone)]
pub(crate) struct Down {
    p: ToProvider,
    via: Via,
}

/// The proxies after `sdk`: each try is a new HTTP request to Stripe carrying the SDK's request
/// unchanged, as a task of its own (Stripe keeps executing when the proxy gives up on a try).
pub(crate) struct BeforeProvider;

impl Place for BeforeProvider {
    type Req = Down;
    type Answer = EgressAnswer;
    const POSITION: Position = Position::BeforeProvider;
    const TRY_AS_TASK: bool = true;

    fn ids(d: &Down) -> Ids {
        d.p.ids
    }
    fn via(d: &Down) -> &Via {
        &d.via
    }
    fn ticket(d: &Down) -> u64 {
        d.p.req.origin.ticket
    }
    fn for_try(_w: &World, d: &Down, _layer: &RetryLayer, via: Via) -> Down {
        Down {
            p: d.p.clone(),
            via,
        }
    }
    /// One try leaves for Stripe: traced (`stripe_request` now, Stripe's `stripe_response` when
    /// it comes, both with the proxies' tries), served by Stripe as a task of its own.
    fn below(w: Rc<World>, d: Down) -> Pin<Box<dyn Future<Output = EgressAnswer>>> {
        let ticket = d.p.req.origin.ticket;
        let mut entity = d.p.entity;
        entity.extend(layers::via_ids(&d.via));
        let rng = w.ticket_stream("stripe", ticket, &entity);
        let (ww, req, ids, script_key) = (w.clone(), d.p.req, d.p.ids, d.p.script_key);
        record_request(&w, ids, &req, d.p.sdk_try, &d.via);
        let start = w.now();
        let connect_failed = connect_fails(&w, ticket, &entity);
        Box::pin(w.spawn_for_with(ticket, move || async move {
            let got = if connect_failed {
                Delivered::ConnectFailed
            } else {
                serve(ww.clone(), req, ids, Caller::Service, rng, script_key).await
            };
            record_response(&ww, ids, &got, start, &d.via);
            EgressAnswer::Stripe(got)
        }))
    }
    fn class(a: &EgressAnswer) -> Option<RetryOn> {
        class_of(a)
    }
    fn status(a: &EgressAnswer) -> Option<u16> {
        match a {
            EgressAnswer::Stripe(Delivered::Response(r)) => Some(r.status),
            EgressAnswer::Proxy { status, .. } => *status,
            _ => None,
        }
    }
    fn gave_up(name: &str, layer: &RetryLayer, after: SimTime) -> EgressAnswer {
        let (status, text) = match layer.on_timeout {
            ReportTimeout::Error => (
                Some(504),
                format!("{name}: upstream request timeout after {after}"),
            ),
            ReportTimeout::Unknown => (
                None,
                format!("{name}: gave up after {after} and dropped the connection"),
            ),
        };
        EgressAnswer::Proxy { status, text }
    }
    /// An open breaker after `sdk` refuses the request before it leaves for Stripe; the SDK
    /// reads it as a connection never made ([`EgressAnswer::into_delivered`]).
    fn rejected(name: &str, layer: &RetryLayer) -> EgressAnswer {
        EgressAnswer::Rejected(super::circuit_breaker::open_text(name, layer))
    }
}
