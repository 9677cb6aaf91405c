//! The refunds service's spans (resource `service.name` = `refunds-service`), per the HTTP
//! semantic conventions ("HTTP spans", v1.23+ names):
//!
//! - its handling of a tool call is an HTTP SERVER span `POST /refunds`, a child of the tool
//!   span (the executor propagates the trace context), from receiving the call to answering
//!   it; a late ("zombie") answer ends after the tool span did;
//! - each request to Stripe is an HTTP CLIENT span `POST`, a child of the SERVER span, from the
//!   request to Stripe's answer (or to the SDK giving up).
//!
//! Span status follows the conventions' "Status": a SERVER span fails on a 5xx only, a CLIENT
//! span on a 4xx, a 5xx, or no answer.

use super::context::Context;
use super::semconv::{
    ERROR_TYPE, HTTP_REQUEST_HEADER_CONTENT_TYPE, HTTP_REQUEST_HEADER_IDEMPOTENCY_KEY,
    HTTP_REQUEST_METHOD, HTTP_REQUEST_RESEND_COUNT, HTTP_RESPONSE_HEADER_IDEMPOTENT_REPLAYED,
    HTTP_RESPONSE_STATUS_CODE, HTTP_ROUTE, SERVER_ADDRESS, SERVER_PORT, URL_FULL, URL_PATH,
    URL_SCHEME,
};
use super::wire::{Span, SpanId, TraceId, KIND_CLIENT, KIND_SERVER};
use crate::history::ProviderOutcome;

/// The refunds service's route for creating a refund.
pub(crate) const SERVICE_ROUTE: &str = "/refunds";
/// Stripe's refund-create URL.
pub(crate) const STRIPE_URL: &str = "https://api.stripe.com/v1/refunds";
/// Stripe's host.
pub(crate) const STRIPE_HOST: &str = "api.stripe.com";
/// The body's media type of a Stripe API request (form-encoded).
pub(crate) const STRIPE_CONTENT_TYPE: &str = "application/x-www-form-urlencoded";

/// A request the service is handling.
#[derive(Clone, Debug)]
pub(super) struct OpenServer {
    /// The refunds-service request id (`Event::call`).
    pub call: u64,
    pub id: SpanId,
    /// The tool span it serves.
    pub parent: Option<SpanId>,
    /// Virtual time, ns.
    pub start: u64,
    /// The HTTP status of Stripe's latest answer to it (0: none came).
    pub last_stripe: Option<u16>,
    /// It gave up waiting for a pool connection.
    pub pool_timeout: bool,
    /// It was dropped because its caller's deadline had passed.
    pub dropped: bool,
    /// It failed after Stripe's 200, before answering.
    pub crashed: bool,
}

impl OpenServer {
    /// The HTTP status the service answered with: 200 for a refund; else, as the service
    /// decides it, 500 after a crash, Stripe's 4xx passed through, 502 when Stripe answered 5xx
    /// or not at all, 504 when the caller's deadline passed first, 503 when no pool
    /// connection came.
    pub(super) fn status(&self, ok: bool) -> u16 {
        match self.last_stripe {
            _ if ok => 200,
            _ if self.crashed => 500,
            Some(s @ 400..=499) => s,
            Some(_) => 502,
            None if self.dropped => 504,
            None if self.pool_timeout => 503,
            None => 502,
        }
    }
}

/// A request to Stripe still waiting for its answer.
#[derive(Clone, Debug)]
pub(super) struct OpenClient {
    /// The service request it belongs to.
    pub call: u64,
    pub id: SpanId,
    pub parent: SpanId,
    /// Virtual time, ns.
    pub start: u64,
    /// The SDK's network try (0 = first).
    pub sdk_try: u32,
    /// `Idempotency-Key`, when sent.
    pub key: Option<String>,
    /// The tries of the proxies after `sdk` this request is (its `stripe_request`'s `via`):
    /// with a proxy's `per_try_timeout`, several of one call's requests are in flight at once,
    /// and each answer is paired with the request of the same `via`.
    pub via: std::collections::BTreeMap<String, u32>,
}

/// Stripe's answer to a request, from its `stripe_response` event.
pub(super) struct StripeAnswer {
    /// HTTP status; 0 when none came.
    pub status: u16,
    pub outcome: ProviderOutcome,
    /// Virtual time, ns.
    pub at: u64,
}

/// The finished SERVER span of `req`, answered `ok` at `at`: `http.request.method`,
/// `http.route`, `url.path`, `url.scheme`, `http.response.status_code`, and for a 5xx
/// `error.type` (the status as text) with status ERROR.
pub(super) fn server_span(
    ctx: &Context,
    trace: &TraceId,
    req: &OpenServer,
    ok: bool,
    at: u64,
    error: Option<&str>,
) -> Span {
    let status = req.status(ok);
    let span = Span::new(
        trace,
        &req.id,
        req.parent.as_ref(),
        format!("POST {SERVICE_ROUTE}"),
        KIND_SERVER,
        (ctx.unix(req.start), ctx.unix(at)),
    )
    .string(HTTP_REQUEST_METHOD, "POST")
    .string(HTTP_ROUTE, SERVICE_ROUTE)
    .string(URL_PATH, SERVICE_ROUTE)
    .string(URL_SCHEME, "http")
    .int(HTTP_RESPONSE_STATUS_CODE, u64::from(status));
    if status >= 500 {
        span.string(ERROR_TYPE, status.to_string())
            .failed(error.unwrap_or_default())
    } else {
        span
    }
}

/// The finished CLIENT span of `req`: `http.request.method`, `url.full`, `server.address`,
/// `server.port`, `http.request.resend_count` on a retry, `http.response.status_code` when an
/// answer came; when captured, the request's `idempotency-key` and `content-type` headers and
/// a replayed answer's `idempotent-replayed` header. A 4xx or 5xx sets `error.type` to the
/// status; no answer sets it to `timeout` (the SDK's own timeout), `AbortError` (the caller
/// aborted the request) or `StripeConnectionError` (the connection was lost: the Stripe SDKs'
/// error for it).
pub(super) fn client_span(
    ctx: &Context,
    trace: &TraceId,
    req: &OpenClient,
    answer: &StripeAnswer,
) -> Span {
    let mut span = Span::new(
        trace,
        &req.id,
        Some(&req.parent),
        "POST".to_string(),
        KIND_CLIENT,
        (ctx.unix(req.start), ctx.unix(answer.at)),
    )
    .string(HTTP_REQUEST_METHOD, "POST")
    .string(URL_FULL, STRIPE_URL)
    .string(SERVER_ADDRESS, STRIPE_HOST)
    .int(SERVER_PORT, 443);
    if req.sdk_try > 0 {
        span = span.int(HTTP_REQUEST_RESEND_COUNT, u64::from(req.sdk_try));
    }
    if ctx.options.capture.headers {
        span = span.strings(HTTP_REQUEST_HEADER_CONTENT_TYPE, &[STRIPE_CONTENT_TYPE]);
        if let Some(k) = &req.key {
            span = span.strings(HTTP_REQUEST_HEADER_IDEMPOTENCY_KEY, &[k.as_str()]);
        }
    }
    if answer.status == 0 {
        let error = match answer.outcome {
            ProviderOutcome::SdkTimeout => "timeout",
            ProviderOutcome::AbortedByCaller => "AbortError",
            _ => "StripeConnectionError",
        };
        return span
            .string(ERROR_TYPE, error)
            .failed(answer.outcome.as_str());
    }
    span = span.int(HTTP_RESPONSE_STATUS_CODE, u64::from(answer.status));
    if ctx.options.capture.headers && answer.outcome == ProviderOutcome::Replayed {
        span = span.strings(HTTP_RESPONSE_HEADER_IDEMPOTENT_REPLAYED, &["true"]);
    }
    if answer.status >= 400 {
        span.string(ERROR_TYPE, answer.status.to_string())
            .failed(answer.outcome.as_str())
    } else {
        span
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> OpenServer {
        OpenServer {
            call: 1,
            id: [1; 8],
            parent: None,
            start: 0,
            last_stripe: None,
            pool_timeout: false,
            dropped: false,
            crashed: false,
        }
    }

    #[test]
    fn the_services_status_is_the_one_it_answers() {
        let r = req();
        assert_eq!((r.status(true), r.status(false)), (200, 502));
        let with = |f: fn(&mut OpenServer)| {
            let mut r = req();
            f(&mut r);
            r.status(false)
        };
        assert_eq!(with(|r| r.pool_timeout = true), 503);
        assert_eq!(with(|r| r.dropped = true), 504);
        assert_eq!(with(|r| r.last_stripe = Some(400)), 400);
        assert_eq!(with(|r| r.last_stripe = Some(409)), 409);
        assert_eq!(with(|r| r.last_stripe = Some(500)), 502);
        assert_eq!(with(|r| r.last_stripe = Some(0)), 502);
        assert_eq!(
            with(|r| {
                r.last_stripe = Some(200);
                r.crashed = true
            }),
            500
        );
    }
}
