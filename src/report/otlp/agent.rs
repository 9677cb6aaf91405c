//! The agent's spans (resource `service.name` = `support-agent`), per the GenAI semantic
//! conventions:
//!
//! - a tool call is an `execute_tool TOOL` span (kind INTERNAL) from the call to the result
//!   shown to the model ("Execute tool span");
//! - the model's decision after a result that was not ok is a `chat` span (kind INTERNAL: the
//!   simulated model runs in-process) from the result to the decision ("Inference").

use super::arguments::{error_text, result_json};
use super::context::Context;
use super::ids::tool_call_id;
use super::semconv::{
    ERROR_TYPE, ERROR_TYPE_OTHER, GEN_AI_OPERATION_NAME, GEN_AI_PROVIDER_NAME,
    GEN_AI_REQUEST_MODEL, GEN_AI_TOOL_CALL_ARGUMENTS, GEN_AI_TOOL_CALL_ID, GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
};
use super::wire::{Span, SpanId, TraceId, KIND_INTERNAL};
use crate::history::Outcome;

/// A tool call whose result has not been shown yet.
#[derive(Clone, Debug)]
pub(super) struct OpenTool {
    /// The model's attempt number (`Event::attempt`).
    pub attempt: u32,
    pub id: SpanId,
    /// Virtual time of the call, ns.
    pub start: u64,
    pub tool: String,
    pub amount_cents: u64,
    /// The executor's timeout fired after the call's latest request to the service.
    pub timed_out: bool,
}

/// The result shown to the model, from its `tool_result` event.
pub(super) struct ToolOutcome<'a> {
    pub outcome: Outcome,
    pub shown: &'a str,
    /// Virtual time, ns.
    pub at: u64,
}

/// The model's call after a result that was not ok, until it decides.
#[derive(Clone, Debug)]
pub(super) struct OpenChat {
    /// The attempt whose result the model reads.
    pub attempt: u32,
    pub id: SpanId,
    /// Virtual time the result arrived, ns.
    pub start: u64,
}

/// The finished tool span of `call` on ticket `ticket`: `gen_ai.operation.name`,
/// `gen_ai.tool.name`, `gen_ai.tool.call.id`, and when captured `gen_ai.tool.call.arguments`
/// and (for a call that succeeded) `gen_ai.tool.call.result`. A call that did not succeed sets
/// status ERROR with the text the model read, and `error.type`: `timeout` when the executor's
/// timeout fired during its last request, or for an unknown outcome (`info`: the executor, or
/// a layer below it, gave up waiting and could not tell what happened), else `_OTHER`.
pub(super) fn tool_span(
    ctx: &Context,
    trace: &TraceId,
    ticket: u64,
    call: &OpenTool,
    result: &ToolOutcome,
) -> Span {
    let mut span = Span::new(
        trace,
        &call.id,
        None,
        format!("execute_tool {}", call.tool),
        KIND_INTERNAL,
        (ctx.unix(call.start), ctx.unix(result.at)),
    )
    .string(GEN_AI_OPERATION_NAME, "execute_tool")
    .string(GEN_AI_TOOL_NAME, call.tool.as_str())
    .string(GEN_AI_TOOL_CALL_ID, tool_call_id(&call.id));
    let capture = ctx.options.capture;
    if capture.arguments {
        let args = ctx
            .arguments
            .json(&ctx.ticket_text(ticket), call.amount_cents);
        span = span.string(GEN_AI_TOOL_CALL_ARGUMENTS, args);
    }
    let error = match result.outcome {
        Outcome::Ok => None,
        Outcome::Info => Some("timeout"),
        Outcome::Fail if call.timed_out => Some("timeout"),
        Outcome::Fail => Some(ERROR_TYPE_OTHER),
    };
    if let Some(error) = error {
        span.string(ERROR_TYPE, error)
            .failed(error_text(result.shown))
    } else if capture.results {
        span.string(GEN_AI_TOOL_CALL_RESULT, result_json(result.shown))
    } else {
        span
    }
}

/// The finished `chat` span of the model's decision, ending at `at`: `gen_ai.operation.name`
/// = `chat`, and the model (`gen_ai.request.model`, in the name too) and provider
/// (`gen_ai.provider.name`) when the options give them.
pub(super) fn chat_span(ctx: &Context, trace: &TraceId, chat: &OpenChat, at: u64) -> Span {
    let name = match &ctx.options.model {
        Some(m) => format!("chat {m}"),
        None => "chat".to_string(),
    };
    let mut span = Span::new(
        trace,
        &chat.id,
        None,
        name,
        KIND_INTERNAL,
        (ctx.unix(chat.start), ctx.unix(at)),
    )
    .string(GEN_AI_OPERATION_NAME, "chat");
    if let Some(p) = &ctx.options.provider {
        span = span.string(GEN_AI_PROVIDER_NAME, p.as_str());
    }
    if let Some(m) = &ctx.options.model {
        span = span.string(GEN_AI_REQUEST_MODEL, m.as_str());
    }
    span
}
