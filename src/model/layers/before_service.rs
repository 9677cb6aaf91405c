//! Proxies and sidecars between the tool executor and the refunds service (`kind: "proxy"`
//! layers, or any added layer placed between `executor` and `refunds_service` in `stack`).
//!
//! Each try is a new HTTP request to the service (a new call id). A try the proxy gives up on
//! (its `per_try_timeout`) keeps running in the service, like any timed-out request. A proxy
//! that gives up reports 504 (`on_timeout: error`, as Envoy does) or an unknown outcome.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use super::{self as layers, status_class, Place, Via};
use crate::model::refunds_service::ServiceResult;
use crate::model::service_call::{send, Outgoing};
use crate::model::world::{Ids, World};
use crate::scenario::{Position, ReportTimeout, RetryLayer, RetryOn};
use crate::sim::SimTime;

/// The path from the executor to the service: through the added layers between `executor` and
/// `refunds_service` (top to bottom), then [`send`]. `last_call` holds the call id of the latest
/// request sent, for the executor's trace.
pub(crate) fn before_service(
    w: Rc<World>,
    req: Outgoing,
    last_call: Rc<Cell<u64>>,
) -> Pin<Box<dyn Future<Output = ServiceResult>>> {
    layers::through::<BeforeService>(w, ToService { req, last_call }, 0)
}

/// A request on its way down the proxies, with where to note the call id of the latest try.
#[derive(Clone)]
pub(crate) struct ToService {
    req: Outgoing,
    last_call: Rc<Cell<u64>>,
}

/// The proxies between `executor` and `refunds_service`: each try is a new HTTP request to the
/// service; a proxy that gives up answers 504 or an unknown outcome.
pub(crate) struct BeforeService;

impl Place for BeforeService {
    type Req = ToService;
    type Answer = ServiceResult;
    const POSITION: Position = Position::BeforeService;

    fn ids(r: &ToService) -> Ids {
        Ids::attempt(r.req.ticket, r.req.attempt)
    }
    fn via(r: &ToService) -> &Via {
        &r.req.via
    }
    fn ticket(r: &ToService) -> u64 {
        r.req.ticket
    }
    fn for_try(w: &World, r: &ToService, layer: &RetryLayer, via: Via) -> ToService {
        let mut req = r.req.clone();
        req.via = via;
        req.cancellation = req.cancellation.max(layer.cancellation);
        if let Some(t) = layer.per_try_timeout {
            req.deadline = req.deadline.min(w.now() + SimTime::from_duration(t));
        }
        ToService {
            req,
            last_call: r.last_call.clone(),
        }
    }
    fn below(w: Rc<World>, r: ToService) -> Pin<Box<dyn Future<Output = ServiceResult>>> {
        Box::pin(send(w, r.req, r.last_call))
    }
    fn class(value: &ServiceResult) -> Option<RetryOn> {
        match value {
            ServiceResult::Error { status, .. } => status_class(*status),
            ServiceResult::Reset(_) => Some(RetryOn::Reset),
            ServiceResult::Rejected(_) => Some(RetryOn::CircuitOpen),
            ServiceResult::Refunded(_) | ServiceResult::Unknown(_) => None,
        }
    }
    fn status(value: &ServiceResult) -> Option<u16> {
        match value {
            ServiceResult::Error { status, .. } => Some(*status),
            _ => None,
        }
    }
    fn gave_up(name: &str, layer: &RetryLayer, after: SimTime) -> ServiceResult {
        let text = format!("upstream request timeout after {after} ({name})");
        match layer.on_timeout {
            ReportTimeout::Error => ServiceResult::Error { status: 504, text },
            ReportTimeout::Unknown => ServiceResult::Unknown(text),
        }
    }
    /// An open breaker between the executor and the service refuses the call before it is
    /// sent (an exception in the HTTP client's pipeline, no HTTP answer).
    fn rejected(name: &str, layer: &RetryLayer) -> ServiceResult {
        ServiceResult::Rejected(super::circuit_breaker::open_text(name, layer))
    }
}
