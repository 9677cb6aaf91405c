//! Rules on an MCP client between the model and the tool server (`kind: "mcp_client"`): the
//! protocol sends one tool call more than once (a broken response stream re-issued with a new
//! request id, as the 2026-07-28 specification requires; a timed-out call re-sent; a
//! duplicated `tools/call`), and nothing in the protocol ties the copies together.

use super::finding::{Finding, Severity};
use super::guard::{guard, Origin};
use super::spans::layer_span;
use super::tools::ToolFacts;
use crate::scenario::layer_kinds::defaults;
use crate::scenario::{layers_at, Position, RetryLayer, RetryOn, Scenario};

/// What an `mcp_client` layer sends again, and the field that makes it: `(path, words)`.
fn resends(name: &str, l: &RetryLayer) -> Option<(String, String)> {
    if l.mcp_duplicates() {
        return Some((
            format!("layers.{name}.duplicate_send_probability"),
            format!(
                "sends a tool call twice with fresh request ids (duplicate_send_probability {})",
                l.duplicate_send_probability.unwrap_or(0.0)
            ),
        ));
    }
    if l.mcp_reissues() && l.retries() > 0 {
        return Some((
            format!("layers.{name}.reissue_on_stream_break"),
            "re-issues a call whose response stream broke as a new request with a new request id (the 2026-07-28 specification's MUST), after the tool already ran".to_string(),
        ));
    }
    if l.retries() > 0 && l.retries_on(RetryOn::Timeout) {
        return Some((
            format!("layers.{name}.retry_on"),
            "re-sends a timed-out call with a new request id (retry_on timeout)".to_string(),
        ));
    }
    None
}

/// `mcp-client-resends-without-key`: an `mcp_client` layer that sends the non-idempotent `tool`
/// again ([`resends`]) while neither the provider recognises the second run ([`guard`]: on
/// Stripe the service's per-ticket key) nor the tool server has a request idempotency key
/// (`executor.request_idempotency`, MCP SEP-3182). The fix: the key per logical refund in the
/// service, or the tool server's request key.
pub(crate) fn mcp_client_resends_without_key(s: &Scenario, tool: &ToolFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    if tool.idempotent || s.executor.request_idempotency.is_some() {
        return out;
    }
    for (name, l) in layers_at(s, Position::AroundTool) {
        if !defaults(l.kind).tool_client {
            continue;
        }
        let Some((path, what)) = resends(name, l) else {
            continue;
        };
        let g = guard(s, Origin::Above, layer_span(s, Position::AroundTool, l));
        if g.holds {
            continue;
        }
        let (hint, fix) = if g.fix.is_empty() {
            (
                "give the tool server a request idempotency key (executor.request_idempotency, MCP SEP-3182): the second request is then answered from the first".to_string(),
                vec!["executor.request_idempotency={}".to_string()],
            )
        } else {
            (
                format!(
                    "{}, or give the tool server a request idempotency key (executor.request_idempotency, MCP SEP-3182)",
                    g.fix_text
                ),
                g.fix,
            )
        };
        out.push(
            Finding::new(
                "mcp-client-resends-without-key",
                Severity::Error,
                path,
                format!(
                    "MCP client `{name}` {what}; `{}` is neither readOnlyHint nor idempotentHint, the protocol ties the two requests together by nothing, and {}: the tool runs twice and refunds twice",
                    tool.name, g.problem
                ),
                hint,
            )
            .with_fix(fix),
        );
    }
    out
}
