//! Framework retry middleware around tool execution (`kind: "retry"` layers, or any added layer
//! placed between `model_retry` and `executor` in `stack`).
//!
//! Each try is a whole executor call with its own executor timeout; a failure the model would
//! have been shown is retried first by these layers, top to bottom, as LangChain's
//! ToolRetryMiddleware and the common agent frameworks do. `applies_to: idempotent_tools`
//! limits a layer to tools whose MCP annotations say `readOnlyHint || idempotentHint`.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use super::agent::tool_is_idempotent;
use super::executor::{call_tool, ToolReply};
use super::layers::{self, Layer, TryEnd, Via};
use super::world::{Ids, World};
use crate::history::Outcome;
use crate::scenario::{AppliesTo, Cancellation, Position, ReportTimeout};
use crate::sim::SimTime;

/// The model's tool call `attempt` through the added layers between `model_retry` and
/// `executor`, then the executor. `via` holds the try of a run-level retry above the model, if
/// it retried (empty otherwise), and `cancel` what giving up on it cancels (the run-level
/// layer's `cancellation`; `none` without one).
pub fn call_via(
    w: Rc<World>,
    ticket: u64,
    attempt: u32,
    amount_cents: u64,
    via: Via,
    cancel: Cancellation,
) -> Pin<Box<dyn Future<Output = ToolReply>>> {
    through(w, ticket, attempt, amount_cents, via, cancel, 0)
}

fn through(
    w: Rc<World>,
    ticket: u64,
    attempt: u32,
    amount_cents: u64,
    via: Via,
    cancel: Cancellation,
    depth: usize,
) -> Pin<Box<dyn Future<Output = ToolReply>>> {
    Box::pin(async move {
        let found = w
            .layers_at(Position::AroundTool)
            .get(depth)
            .map(|(n, l)| (n.to_string(), l.applies_to, l.cancellation));
        let Some((name, applies_to, own)) = found else {
            return call_tool(w, ticket, attempt, amount_cents, via, cancel).await;
        };
        if applies_to == AppliesTo::IdempotentTools && !tool_is_idempotent(&w) {
            return through(w, ticket, attempt, amount_cents, via, cancel, depth + 1).await;
        }
        let ww = w.clone();
        let cancel = cancel.max(own);
        let try_once = move |_n: u32, via| {
            let inner = through(
                ww.clone(),
                ticket,
                attempt,
                amount_cents,
                via,
                cancel,
                depth + 1,
            );
            async move {
                let value = inner.await;
                let class = match value.outcome {
                    Outcome::Fail => value.class,
                    Outcome::Ok | Outcome::Info => None,
                };
                TryEnd::Answered { value, class }
            }
        };
        let (layer_name, cfg) = &w.layers_at(Position::AroundTool)[depth];
        debug_assert_eq!(*layer_name, name);
        let layer_name = layer_name.as_str();
        let on_timeout = cfg.on_timeout;
        let report = move |after: SimTime| match on_timeout {
            ReportTimeout::Error => ToolReply::layer_timeout(after, layer_name, false),
            ReportTimeout::Unknown => ToolReply::layer_timeout(after, layer_name, true),
        };
        let ids = Ids::attempt(ticket, attempt);
        layers::run(
            &w,
            Layer {
                name: layer_name,
                cfg,
            },
            ids,
            &via,
            try_once,
            report,
        )
        .await
    })
}
