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

use super::layers::{self, Layer, TryEnd, Via};
use super::stripe::{Body, Delivered, ErrorType, Response, StripeRequest};
use super::stripe_api::{serve, Caller};
use super::world::{Ids, World};
use crate::scenario::{Position, ReportTimeout, RequestKey, RetryOn};
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
    through(w, p, Via::new(), 0)
}

fn through(
    w: Rc<World>,
    p: ToProvider,
    via: Via,
    depth: usize,
) -> Pin<Box<dyn Future<Output = Delivered>>> {
    Box::pin(async move {
        let Some((name, cfg)) = w
            .layers_at(Position::BeforeProvider)
            .get(depth)
            .map(|(n, l)| (n.to_string(), (*l).clone()))
        else {
            let ticket = p.req.origin.ticket;
            let mut entity = p.entity.clone();
            entity.extend(layers::via_ids(&via));
            let rng = w.ticket_stream("stripe", ticket, &entity);
            let (ww, req, ids, script_key) = (w.clone(), p.req, p.ids, p.script_key);
            return w
                .spawn_for_with(ticket, move || {
                    serve(ww, req, ids, Caller::Service, rng, script_key)
                })
                .await;
        };
        let ww = w.clone();
        let base = p.clone();
        let try_once = move |_n: u32, via| {
            let inner = through(ww.clone(), base.clone(), via, depth + 1);
            // A task of its own: Stripe keeps executing when the proxy gives up on a try.
            let handle = ww.spawn_for(base.req.origin.ticket, inner);
            async move {
                let value = handle.await;
                let class = class_of(&value);
                TryEnd::Answered { value, class }
            }
        };
        let on_timeout = cfg.on_timeout;
        let report = move |after: SimTime| match on_timeout {
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
        };
        let layer = Layer {
            name: &name,
            cfg: &cfg,
        };
        layers::run(&w, layer, p.ids, &via, try_once, report).await
    })
}
