//! The attribute names the exporter writes, each from the OpenTelemetry semantic conventions
//! (<https://opentelemetry.io/docs/specs/semconv/>); none is refundsim's own. The GenAI names
//! are "Development" status (GenAI spans, "Execute tool span" and "Inference"); the HTTP,
//! `url.*`, `server.*`, `error.type` and `service.name` names are stable.

/// `service.name` (Resource semantic conventions, "Service"): the logical name of the service
/// that wrote the spans.
pub(crate) const SERVICE_NAME: &str = "service.name";

/// `gen_ai.operation.name` (GenAI spans): `execute_tool` on a tool span, `chat` on a model call.
pub(crate) const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
/// `gen_ai.tool.name` (GenAI spans, "Execute tool span"): the tool the model called.
pub(crate) const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
/// `gen_ai.tool.call.id` (GenAI spans, "Execute tool span"): the tool call's id.
pub(crate) const GEN_AI_TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
/// `gen_ai.tool.call.arguments` (GenAI spans, "Execute tool span", Opt-In): the arguments the
/// model passed, as a JSON string.
pub(crate) const GEN_AI_TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
/// `gen_ai.tool.call.result` (GenAI spans, "Execute tool span", Opt-In): the result the tool
/// returned, when it returned one, as a JSON string.
pub(crate) const GEN_AI_TOOL_CALL_RESULT: &str = "gen_ai.tool.call.result";
/// `gen_ai.request.model` (GenAI spans, "Inference"): the model a `chat` call asked for.
pub(crate) const GEN_AI_REQUEST_MODEL: &str = "gen_ai.request.model";
/// `gen_ai.provider.name` (GenAI spans, "Inference"): who serves the model (`anthropic`,
/// `openai`, …).
pub(crate) const GEN_AI_PROVIDER_NAME: &str = "gen_ai.provider.name";

/// `error.type` (General, "Recording errors"; HTTP spans): the class of error an operation
/// ended with: `timeout`, an exception's type, or an HTTP status code as text.
pub(crate) const ERROR_TYPE: &str = "error.type";
/// `_OTHER`: the well-known `error.type` for an error the instrumentation has no name for.
pub(crate) const ERROR_TYPE_OTHER: &str = "_OTHER";

/// `http.request.method` (HTTP spans, client and server).
pub(crate) const HTTP_REQUEST_METHOD: &str = "http.request.method";
/// `http.response.status_code` (HTTP spans): an `intValue`; absent when no answer came.
pub(crate) const HTTP_RESPONSE_STATUS_CODE: &str = "http.response.status_code";
/// `http.route` (HTTP server spans): the matched route template.
pub(crate) const HTTP_ROUTE: &str = "http.route";
/// `http.request.resend_count` (HTTP client spans): the ordinal of a resend (the SDK's
/// network retry 1, 2, …); absent on the first try.
pub(crate) const HTTP_REQUEST_RESEND_COUNT: &str = "http.request.resend_count";
/// `http.request.header.<key>` (HTTP spans, Opt-In): a request header's values, as a string
/// array, its name lowercased.
pub(crate) const HTTP_REQUEST_HEADER_IDEMPOTENCY_KEY: &str = "http.request.header.idempotency-key";
/// `http.request.header.content-type` (HTTP spans, Opt-In).
pub(crate) const HTTP_REQUEST_HEADER_CONTENT_TYPE: &str = "http.request.header.content-type";
/// `http.response.header.<key>` (HTTP spans, Opt-In): Stripe's `Idempotent-Replayed: true` on
/// a saved answer replayed under its key.
pub(crate) const HTTP_RESPONSE_HEADER_IDEMPOTENT_REPLAYED: &str =
    "http.response.header.idempotent-replayed";

/// `url.full` (HTTP client spans): the absolute URL requested.
pub(crate) const URL_FULL: &str = "url.full";
/// `url.path` (HTTP server spans).
pub(crate) const URL_PATH: &str = "url.path";
/// `url.scheme` (HTTP server spans).
pub(crate) const URL_SCHEME: &str = "url.scheme";
/// `server.address` (HTTP client spans): the host name called.
pub(crate) const SERVER_ADDRESS: &str = "server.address";
/// `server.port` (HTTP client spans).
pub(crate) const SERVER_PORT: &str = "server.port";

/// Every attribute name above: what a test checks a file's attributes against.
pub const ALL: [&str; 21] = [
    SERVICE_NAME,
    GEN_AI_OPERATION_NAME,
    GEN_AI_TOOL_NAME,
    GEN_AI_TOOL_CALL_ID,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_PROVIDER_NAME,
    ERROR_TYPE,
    HTTP_REQUEST_METHOD,
    HTTP_RESPONSE_STATUS_CODE,
    HTTP_ROUTE,
    HTTP_REQUEST_RESEND_COUNT,
    HTTP_REQUEST_HEADER_IDEMPOTENCY_KEY,
    HTTP_REQUEST_HEADER_CONTENT_TYPE,
    HTTP_RESPONSE_HEADER_IDEMPOTENT_REPLAYED,
    URL_FULL,
    URL_PATH,
    URL_SCHEME,
    SERVER_ADDRESS,
    SERVER_PORT,
];
