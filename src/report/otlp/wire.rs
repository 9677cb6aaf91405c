//! The OTLP/JSON wire format of one span (OTLP specification, "JSON Protobuf Encoding" of
//! `opentelemetry.proto.trace.v1.Span`): lowerCamelCase keys; `traceId` (32 hex digits) and
//! `spanId` (16) in lowercase hex, not base64; 64-bit integers (`startTimeUnixNano`,
//! `intValue`) as decimal strings; `kind` and `status.code` as integers. Fields are written in
//! the order declared here (derived `Serialize` on structs, never a map), so the bytes do not
//! depend on serde_json's features.

use serde::Serialize;

/// `SPAN_KIND_INTERNAL`: work inside one process (a tool call, the model's decision).
pub(crate) const KIND_INTERNAL: u8 = 1;
/// `SPAN_KIND_SERVER`: handling a remote request (the refunds service's `POST /refunds`).
pub(crate) const KIND_SERVER: u8 = 2;
/// `SPAN_KIND_CLIENT`: a request to a remote service (the service's call to Stripe).
pub(crate) const KIND_CLIENT: u8 = 3;

/// `STATUS_CODE_ERROR`. Spans that did not fail leave the status unset (0), as the
/// specification asks of instrumentation libraries ("Set Status").
pub(crate) const STATUS_ERROR: u8 = 2;

/// A trace id: 16 bytes.
pub(crate) type TraceId = [u8; 16];
/// A span id: 8 bytes.
pub(crate) type SpanId = [u8; 8];

/// Lowercase hex of `bytes`.
pub(super) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    s
}

/// One span, ready to write.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Span {
    /// 32 hex digits.
    pub trace_id: String,
    /// 16 hex digits.
    pub span_id: String,
    /// 16 hex digits; absent on a root span.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub parent_span_id: String,
    /// The span's name (`execute_tool issue_refund`, `POST /refunds`, `POST`).
    pub name: String,
    /// [`KIND_INTERNAL`], [`KIND_SERVER`] or [`KIND_CLIENT`].
    pub kind: u8,
    /// Nanoseconds since the Unix epoch, in decimal.
    pub start_time_unix_nano: String,
    /// Nanoseconds since the Unix epoch, in decimal.
    pub end_time_unix_nano: String,
    /// The attributes, in the order they were added.
    pub attributes: Vec<KeyValue>,
    /// Unset (absent) unless the span failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

/// An attribute (`KeyValue`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct KeyValue {
    /// The attribute's name (see `semconv.rs`).
    pub key: &'static str,
    /// Its value.
    pub value: AnyValue,
}

/// An attribute value (`AnyValue`), externally tagged as OTLP/JSON writes it:
/// `{"stringValue": "…"}`, `{"intValue": "200"}`, `{"arrayValue": {"values": […]}}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) enum AnyValue {
    /// A string.
    #[serde(rename = "stringValue")]
    String(String),
    /// A 64-bit integer, written as a decimal string.
    #[serde(rename = "intValue")]
    Int(String),
    /// An array of values.
    #[serde(rename = "arrayValue")]
    Array(ArrayValue),
}

/// `ArrayValue`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct ArrayValue {
    /// The elements.
    pub values: Vec<AnyValue>,
}

/// `Status`: set only on a failed span.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Status {
    /// [`STATUS_ERROR`].
    pub code: u8,
    /// What went wrong, for a person; absent when empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}

impl Span {
    /// A span of `kind` named `name`, from `start` to `end` (ns since the Unix epoch), with no
    /// attributes yet.
    pub(super) fn new(
        trace: &TraceId,
        id: &SpanId,
        parent: Option<&SpanId>,
        name: String,
        kind: u8,
        (start, end): (u64, u64),
    ) -> Span {
        Span {
            trace_id: hex(trace),
            span_id: hex(id),
            parent_span_id: parent.map_or_else(String::new, |p| hex(p)),
            name,
            kind,
            start_time_unix_nano: start.to_string(),
            end_time_unix_nano: end.max(start).to_string(),
            attributes: Vec::new(),
            status: None,
        }
    }

    /// Adds a string attribute.
    pub(super) fn string(mut self, key: &'static str, value: impl Into<String>) -> Span {
        self.push(key, AnyValue::String(value.into()));
        self
    }

    /// Adds an integer attribute.
    pub(super) fn int(mut self, key: &'static str, value: u64) -> Span {
        self.push(key, AnyValue::Int(value.to_string()));
        self
    }

    /// Adds a string-array attribute (an HTTP header's values).
    pub(super) fn strings(mut self, key: &'static str, values: &[&str]) -> Span {
        let values = values
            .iter()
            .map(|v| AnyValue::String((*v).to_string()))
            .collect();
        self.push(key, AnyValue::Array(ArrayValue { values }));
        self
    }

    /// Sets the status to ERROR with `message`.
    pub(super) fn failed(mut self, message: impl Into<String>) -> Span {
        self.status = Some(Status {
            code: STATUS_ERROR,
            message: message.into(),
        });
        self
    }

    fn push(&mut self, key: &'static str, value: AnyValue) {
        self.attributes.push(KeyValue { key, value });
    }
}

/// The `resource` and `scope` that open one `resourceSpans` entry whose `spans` array follows:
/// `{"resource":{"attributes":[service.name]},"scopeSpans":[{"scope":{"name":SCOPE},"spans":[`.
pub(crate) fn resource_spans_head(service: &str, scope: &str) -> String {
    let string = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    format!(
        "{{\"resource\":{{\"attributes\":[{{\"key\":\"{}\",\"value\":{{\"stringValue\":{}}}}}]}},\
         \"scopeSpans\":[{{\"scope\":{{\"name\":{}}},\"spans\":[\n",
        super::semconv::SERVICE_NAME,
        string(service),
        string(scope)
    )
}

/// What closes a `resourceSpans` entry opened by [`resource_spans_head`].
pub(crate) const RESOURCE_SPANS_TAIL: &str = "\n]}]}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_is_written_as_otlp_json_writes_it() {
        let span = Span::new(
            &[0xab; 16],
            &[1, 2, 3, 4, 5, 6, 7, 8],
            Some(&[0xff; 8]),
            "POST".into(),
            KIND_CLIENT,
            (1_715_704_869_212_000_000, 1_715_704_877_211_000_000),
        )
        .string("http.request.method", "POST")
        .int("http.response.status_code", 200)
        .strings("http.request.header.idempotency-key", &["k"])
        .failed("x");
        assert_eq!(
            serde_json::to_string(&span).unwrap(),
            r#"{"traceId":"abababababababababababababababab","spanId":"0102030405060708","parentSpanId":"ffffffffffffffff","name":"POST","kind":3,"startTimeUnixNano":"1715704869212000000","endTimeUnixNano":"1715704877211000000","attributes":[{"key":"http.request.method","value":{"stringValue":"POST"}},{"key":"http.response.status_code","value":{"intValue":"200"}},{"key":"http.request.header.idempotency-key","value":{"arrayValue":{"values":[{"stringValue":"k"}]}}}],"status":{"code":2,"message":"x"}}"#
        );
    }

    #[test]
    fn a_root_span_has_no_parent_and_an_unset_status() {
        let span = Span::new(&[0; 16], &[0; 8], None, "s".into(), KIND_INTERNAL, (5, 3));
        let text = serde_json::to_string(&span).unwrap();
        assert!(
            !text.contains("parentSpanId") && !text.contains("status"),
            "{text}"
        );
        // An end before the start is clamped to the start.
        assert!(text.contains(r#""endTimeUnixNano":"5""#), "{text}");
    }
}
