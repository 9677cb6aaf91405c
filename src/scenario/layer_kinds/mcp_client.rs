//! `kind: mcp_client`: an MCP client sending each tool call as a JSON-RPC `tools/call` to the
//! tool server (the executor). Its re-issues are the protocol's own:
//!
//! - the 2026-07-28 specification (changelog item 9, SEP-2575): "A broken response stream
//!   loses the in-flight request; clients MUST re-issue it as a new request with a new request
//!   ID" (`reissue_on_stream_break`, default true), and Streamable HTTP: "Closing the SSE
//!   response stream MUST be treated by the server as cancellation of that request", while
//!   "Processing may have completed before cancellation arrives";
//! - a request timeout of 60 s (the MCP TypeScript SDK's `DEFAULT_REQUEST_TIMEOUT_MSEC =
//!   60000`), after which the SDKs send `notifications/cancelled` (rmcp with the reason
//!   "request timeout"); a timeout is reported, not re-sent, unless `retry_on` names `timeout`.
//!
//! `max_retries` 1 caps the re-issues of one tool call (the specification names no count; one
//! re-issue is the least its MUST asks); re-issues go out at once, without a backoff.

use std::time::Duration;

use super::KindDefaults;

/// See the module docs.
pub(super) const DEFAULTS: KindDefaults = KindDefaults {
    name: "mcp_client",
    above_model: false,
    network_proxy: false,
    tool_client: true,
    tool_filter: false,
    circuit_breaker: false,
    hedges: false,
    max_retries: 1,
    retry_on: &[],
    base: Duration::ZERO,
    max_delay: |base| base,
};
