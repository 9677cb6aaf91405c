//! Proxies between the Stripe SDK and Stripe (an egress proxy or sidecar): added layers placed
//! after `sdk` in `stack`.
//!
//! Each try is a new HTTP request to Stripe carrying the SDK's request unchanged (same key), so
//! with a key Stripe replays or answers 409, and without one every try that executes is a new
//! refund. A try the proxy gives up on (`per_try_timeout`) keeps executing at Stripe. A proxy
//! that gives up answers the SDK 504 (`on_timeout: error`, as Envoy does) or drops the
//! connection (`unknown`).

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use super::{self as layers, Place, Via};
use crate::model::stripe::{Body, Delivered, ErrorType, Response, StripeRequest};
use crate::model::stripe_api::{serve, Caller};
use crate::model::world::{Ids, World};
use crate::scenario::{Position, ReportTimeout, RequestKey, RetryLayer, RetryOn};
use crate::sim::SimTime;

/// One request from the SDK to Stripe: what to send and the draw key of its first try.
#[derive(Clone)]
pub struct ToProvider {
    /// The request.
    pub req: StripeRequest,
    /// Its ids in the trace.
    pub ids: Ids,
    /// The Stripe draw key without the proxies' tries.
    pub entity: Vec<u64>,
    /// The per-request latency script key.
    pub script_key: RequestKey,
}

/// The class of what Stripe (or a proxy below) answered, for a proxy's `retry_on`.
fn class_of(d: &Delivered) -> Option<RetryOn> {
    match d {
        Delivered::ConnectionLost => Some(RetryOn::Reset),
        Delivered::Response(r) => layers::http_class(r.status),
    }
}

/// The path from the SDK to Stripe through the proxies after `sdk` (top to bottom).
pub fn to_provider(w: Rc<World>, p: ToProvider) -> Pin<Box<dyn Future<Output = Delivered>>> {
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
    type Answer = Delivered;
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
    fn below(w: Rc<World>, d: Down) -> Pin<Box<dyn Future<Output = Delivered>>> {
        let ticket = d.p.req.origin.ticket;
        let mut entity = d.p.entity;
        entity.extend(layers::via_ids(&d.via));
        let rng = w.ticket_stream("stripe", ticket, &entity);
        let (ww, req, ids, script_key) = (w.clone(), d.p.req, d.p.ids, d.p.script_key);
        Box::pin(w.spawn_for_with(ticket, move || {
            serve(ww, req, ids, Caller::Service, rng, script_key)
        }))
    }
    fn class(d: &Delivered) -> Option<RetryOn> {
        class_of(d)
    }
    fn gave_up(_name: &str, layer: &RetryLayer, after: SimTime) -> Delivered {
        match layer.on_timeout {
            ReportTimeout::Error => Delivered::Response(Response {
                status: 504,
                body: Body::Error {
                    kind: ErrorType::ApiError,
                    code: None,
                    param: None,
                    message: format!("upstream request timeout after {after}"),
                },
                idempotent_replayed: false,
                should_retry: None,
                retry_after: None,
            }),
            ReportTimeout::Unknown => Delivered::ConnectionLost,
        }
    }
}
