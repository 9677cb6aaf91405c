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

use super::executor::{send, Outgoing};
use super::layers::{self, status_class, Layer, TryEnd};
use super::refunds_service::ServiceResult;
use super::world::{Ids, World};
use crate::scenario::{Position, ReportTimeout};
use crate::sim::SimTime;

/// The path from the executor to the service: through the added layers between `executor` and
/// `refunds_service` (top to bottom), then [`send`]. `last_call` holds the call id of the latest
/// request sent, for the executor's trace.
pub fn before_service(
    w: Rc<World>,
    req: Outgoing,
    last_call: Rc<Cell<u64>>,
) -> Pin<Box<dyn Future<Output = ServiceResult>>> {
    through(w, req, last_call, 0)
}

fn through(
    w: Rc<World>,
    req: Outgoing,
    last_call: Rc<Cell<u64>>,
    depth: usize,
) -> Pin<Box<dyn Future<Output = ServiceResult>>> {
    Box::pin(async move {
        let Some(name) = w
            .layers_at(Position::BeforeService)
            .get(depth)
            .map(|(n, _)| n.to_string())
        else {
            return send(w, req, last_call).await;
        };
        let cfg = &w.cfg.layers[&name];
        let ids = Ids::attempt(req.ticket, req.attempt);
        let (ww, base) = (w.clone(), req.clone());
        let try_once = move |_n: u32, via| {
            let mut req = base.clone();
            req.via = via;
            req.cancellation = req.cancellation.max(ww.cfg.layers[&name].cancellation);
            if let Some(t) = ww.cfg.layers[&name].per_try_timeout {
                req.deadline = req.deadline.min(ww.now() + SimTime::from_duration(t));
            }
            let inner = through(ww.clone(), req, last_call.clone(), depth + 1);
            async move {
                let value = inner.await;
                let class = match &value {
                    ServiceResult::Error { status, .. } => status_class(*status),
                    ServiceResult::Refunded(_) | ServiceResult::Unknown(_) => None,
                };
                TryEnd::Answered { value, class }
            }
        };
        let layer_name = w.layers_at(Position::BeforeService)[depth].0.as_str();
        let on_timeout = cfg.on_timeout;
        let report = move |after: SimTime| {
            let text = format!("upstream request timeout after {after} ({layer_name})");
            match on_timeout {
                ReportTimeout::Error => ServiceResult::Error { status: 504, text },
                ReportTimeout::Unknown => ServiceResult::Unknown(text),
            }
        };
        let layer = Layer {
            name: layer_name,
            cfg,
        };
        layers::run(&w, layer, ids, &req.via, try_once, report).await
    })
}
