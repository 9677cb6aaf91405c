//! Framework retry middleware around tool execution (`kind: "retry"` layers, or any added layer
//! placed between `model_retry` and `executor` in `stack`), and the MCP client there
//! (`kind: "mcp_client"`, [`super::mcp_client`]).
//!
//! Each try is a whole executor call with its own executor timeout; a failure the model would
//! have been shown is retried first by these layers, top to bottom, as LangChain's
//! ToolRetryMiddleware and the common agent frameworks do. `applies_to: idempotent_tools`
//! limits a layer to tools whose MCP annotations say `readOnlyHint || idempotentHint`.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use super::{self as layers, Place, Via};
use crate::history::Outcome;
use crate::model::executor::{call_tool, tool_is_idempotent, ToolReply};
use crate::model::world::{Ids, World};
use crate::scenario::{AppliesTo, Cancellation, Position, ReportTimeout, RetryLayer, RetryOn};
use crate::sim::SimTime;

/// The model's tool call `attempt` through the added layers between `model_retry` and
/// `executor`, then the executor. `via` holds the try of a run-level retry above the model, if
/// it retried (empty otherwise), and `cancel` what giving up on it cancels (the run-level
/// layer's `cancellation`; `none` without one).
pub(crate) fn call_via(
    w: Rc<World>,
    ticket: u64,
    attempt: u32,
    amount_cents: u64,
    via: Via,
    cancel: Cancellation,
) -> Pin<Box<dyn Future<Output = ToolReply>>> {
    let call = ToolCall {
        ticket,
        attempt,
        amount_cents,
        via,
        cancel,
    };
    layers::through::<AroundTool>(w, call, 0)
}

/// A tool call on its way down the framework layers.
#[derive(Clone)]
pub(crate) struct ToolCall {
    ticket: u64,
    attempt: u32,
    amount_cents: u64,
    via: Via,
    cancel: Cancellation,
}

impl ToolCall {
    /// The call's amount, cents: the argument a tool server's idempotency key is checked
    /// against.
    pub(crate) fn amount_cents(&self) -> u64 {
        self.amount_cents
    }
}

/// The framework layers between `model_retry` and `executor`: each try is a whole executor
/// call; a layer with `applies_to: idempotent_tools` passes other tools through.
pub(crate) struct AroundTool;

impl Place for AroundTool {
    type Req = ToolCall;
    type Answer = ToolReply;
    const POSITION: Position = Position::AroundTool;

    fn ids(req: &ToolCall) -> Ids {
        Ids::attempt(req.ticket, req.attempt)
    }
    fn via(req: &ToolCall) -> &Via {
        &req.via
    }
    fn ticket(req: &ToolCall) -> u64 {
        req.ticket
    }
    fn applies(w: &World, layer: &RetryLayer) -> bool {
        layer.applies_to != AppliesTo::IdempotentTools || tool_is_idempotent(w)
    }
    fn for_try(_w: &World, req: &ToolCall, layer: &RetryLayer, via: Via) -> ToolCall {
        ToolCall {
            via,
            cancel: req.cancel.max(layer.cancellation),
            ..req.clone()
        }
    }
    fn below(w: Rc<World>, r: ToolCall) -> Pin<Box<dyn Future<Output = ToolReply>>> {
        Box::pin(call_tool(
            w,
            r.ticket,
            r.attempt,
            r.amount_cents,
            r.via,
            r.cancel,
        ))
    }
    fn class(value: &ToolReply) -> Option<RetryOn> {
        match value.outcome {
            Outcome::Fail => value.class,
            Outcome::Ok | Outcome::Info => None,
        }
    }
    fn mcp_client(
        w: Rc<World>,
        req: ToolCall,
        depth: usize,
        name: &str,
        layer: &RetryLayer,
    ) -> Pin<Box<dyn Future<Output = ToolReply>>> {
        super::mcp_client::call(w, req, depth, name.to_string(), layer.clone())
    }
    fn gave_up(name: &str, layer: &RetryLayer, after: SimTime) -> ToolReply {
        let unknown = layer.on_timeout == ReportTimeout::Unknown;
        ToolReply::layer_timeout(after, name, unknown)
    }
    fn rejected(name: &str, layer: &RetryLayer) -> ToolReply {
        ToolReply::circuit_open(super::circuit_breaker::open_text(name, layer))
    }
}
