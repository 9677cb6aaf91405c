//! Reader of the `openai-agents` input format: the OpenAI Agents SDK's traces, as its
//! `BackendSpanExporter` POSTs them to `/v1/traces/ingest` (`{"data": [...]}`), or the same
//! items in a JSON array or one per line (a custom `TracingProcessor` writing `export()` of
//! each).
//!
//! An item (openai-agents-python, `tracing/traces.py`, `tracing/spans.py`) is a trace
//! (`"object": "trace"`, skipped) or a span: `{"object": "trace.span", "id", "trace_id",
//! "parent_id", "started_at", "ended_at", "span_data", "error"}`, times as Python's
//! `datetime.isoformat()` writes them (`2025-03-07T10:00:08.034000+00:00`, no fraction on a
//! whole second), `error` null or `{"message", "data"}`. `span_data.type` says what the span
//! is (`tracing/span_data.py`):
//!
//! - `"function"` named as the refund tool (`span_data.name`) is a tool call: `at` its start;
//!   the ticket and amount from `span_data.input`, the model's JSON arguments; the result at
//!   its end (none while `ended_at` is null): failed when `error` is set, timed out when the
//!   error's `message` or `data.error` names a timeout (the SDK's `ToolTimeoutError` with
//!   `timeout_behavior="raise_exception"`), or when `span_data.output` is the text of a
//!   timeout ([`super::timeout_output`]: by default the SDK hands the model
//!   `Tool 'issue_refund' timed out after 8 seconds.` and ends the span normally; the seconds
//!   are the executor timeout the recording states); the refund id from `span_data.output`
//!   (`str()` of what the tool returned, a Python dict's repr for a dict).
//! - `"generation"` and `"response"` spans are model calls: a failed tool call's decision is
//!   the end of the first one of its trace that starts after the call ends and no later than
//!   its next call of the refund tool.
//!
//! Function spans have no call id, and the SDK records no provider facts: the refunds
//! service's answers and Stripe's requests are drawn from the base scenario (see
//! [`super::build`]).

use serde_json::{Map, Value};

use super::agent_trace::{each_in_lines, each_in_text, AgentTrace, Item, ToolRun};
use super::{ImportError, ImportOptions, Recording};

/// What a record is, for errors.
const WHAT: &str = "an OpenAI Agents SDK trace or span object";

/// Whether `compact` (the head of a file, without whitespace) looks like the SDK's export:
/// an item with `"object": "trace.span"`, or a trace with its `workflow_name`.
pub(crate) fn detect(compact: &str) -> bool {
    compact.contains("\"object\":\"trace.span\"")
        || (compact.contains("\"object\":\"trace\"") && compact.contains("\"workflow_name\":"))
}

/// Reads `text`, the content of file `name`: the exporter's `{"data": [...]}`, a JSON array of
/// items, or items one per line.
///
/// # Errors
/// Not JSON; an item that is not an object, or whose `object` is neither `"trace"` nor
/// `"trace.span"`; a span without `span_data` or, for a function or model span, `started_at`;
/// a time that is not ISO 8601; an end before the start; a call of the refund tool without a
/// ticket; two timeout texts stating different timeouts. Each error names the file, the line
/// and the field path (`data[3].span_data.input`).
pub(crate) fn read(name: &str, text: &str, opts: &ImportOptions) -> Result<Recording, ImportError> {
    let mut trace = AgentTrace::new(name, opts)?;
    each_in_text(name, text, &["data"], WHAT, &mut |item| {
        span(&mut trace, item, opts)
    })?;
    Ok(trace.finish(opts, "function span"))
}

/// [`read`] over lines as they are read (one item per line, streamed).
///
/// # Errors
/// As [`read`], and the lines' own errors.
pub(crate) fn read_lines(
    name: &str,
    lines: impl Iterator<Item = Result<String, ImportError>>,
    opts: &ImportOptions,
) -> Result<Recording, ImportError> {
    let mut trace = AgentTrace::new(name, opts)?;
    each_in_lines(name, lines, &["data"], WHAT, &mut |item| {
        span(&mut trace, item, opts)
    })?;
    Ok(trace.finish(opts, "function span"))
}

const START: [&str; 1] = ["started_at"];
const END: [&str; 1] = ["ended_at"];

/// One item: a function span of the refund tool is a tool call, a generation or response
/// span a model decision; a trace, another tool's function span (counted) and other spans are
/// skipped.
///
/// # Errors
/// The item is not a trace or a span ([`span_data`]), a field read has the wrong type.
fn span(trace: &mut AgentTrace, item: &Item<'_>, opts: &ImportOptions) -> Result<(), ImportError> {
    let Some(data) = span_data(item)? else {
        return Ok(());
    };
    let kind = data_text(item, data, "type")?.unwrap_or_default();
    let name = data_text(item, data, "name")?.unwrap_or_default();
    match kind {
        "function" if name == opts.tool => function_span(trace, item, data, opts),
        "function" => {
            trace.other_tool(item, name);
            Ok(())
        }
        "generation" | "response" => {
            let (start, end) = item.times(&START, &END)?;
            if let Some(end) = end {
                trace.model(item, trace_of(item)?, start, end);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// A span's `span_data`; `None` for a trace (not a span).
///
/// # Errors
/// `object` is neither `"trace"` nor `"trace.span"` (nor absent beside a `span_data`), or
/// `span_data` is not an object.
fn span_data<'i>(item: &Item<'i>) -> Result<Option<&'i Map<String, Value>>, ImportError> {
    match item.text(&["object"])? {
        Some("trace") => return Ok(None),
        Some("trace.span") => {}
        None if item.obj.contains_key("span_data") => {}
        other => {
            return Err(item.error(
                "object",
                format!(
                    "expected \"trace\" or \"trace.span\", got {}",
                    other.map_or_else(|| "nothing".to_string(), super::fields::quoted)
                ),
            ))
        }
    }
    match item.obj.get("span_data") {
        Some(Value::Object(d)) => Ok(Some(d)),
        other => Err(item.error(
            "span_data",
            format!(
                "expected the span's data object ({{\"type\": \"function\", …}}), got {}",
                other.map_or_else(|| "nothing".to_string(), super::fields::shown)
            ),
        )),
    }
}

/// The text of `span_data.key` (`data`); `None` when absent or null.
///
/// # Errors
/// It is not a string.
fn data_text<'d>(
    item: &Item<'_>,
    data: &'d Map<String, Value>,
    key: &str,
) -> Result<Option<&'d str>, ImportError> {
    match data.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(other) => Err(item.error(
            &format!("span_data.{key}"),
            format!("expected a string, got {}", super::fields::shown(other)),
        )),
    }
}

/// A function span of the refund tool (its `span_data` is `data`): a tool call, failed when
/// the span has an `error`, timed out when that names a timeout, or when its output is the
/// text of a timeout (`--timeout-output`).
///
/// # Errors
/// Its times or trace id are not valid, or its arguments ([`AgentTrace::tool`]).
fn function_span(
    trace: &mut AgentTrace,
    item: &Item<'_>,
    data: &Map<String, Value>,
    opts: &ImportOptions,
) -> Result<(), ImportError> {
    let (start, end) = item.times(&START, &END)?;
    let error = item.get(&["error"]).map(|(_, e)| e);
    trace.tool(
        item,
        ToolRun {
            trace: trace_of(item)?,
            call_id: None,
            start,
            end,
            arguments: data.get("input").map(|v| ("span_data.input", v)),
            failed: error.is_some(),
            timed_out: error.is_some_and(error_is_timeout),
            output: data
                .get("output")
                .filter(|v| !v.is_null())
                .map(|v| ("span_data.output", v)),
            fallback: false,
        },
        opts,
    )
}

/// Whether a span's `error` (`{"message", "data"}`) names a timeout: its message, or the
/// `error` the SDK puts in its data (`str(exception)`).
fn error_is_timeout(error: &Value) -> bool {
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    let message = text(error.get("message"));
    let data = text(error.get("data").and_then(|d| d.get("error")));
    super::otlp::is_timeout(None, &message) || super::otlp::is_timeout(None, &data)
}

/// The span's trace; empty when absent.
fn trace_of(item: &Item<'_>) -> Result<String, ImportError> {
    Ok(item.id(&["trace_id"])?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{Instant, ToolResultRec, DEFAULT_TIMEOUT_OUTPUT};

    /// 2025-03-07T10:00:00Z, ns.
    const T0: i64 = 1_741_341_600_000_000_000;

    fn ms(n: i64) -> Instant {
        Instant::exact(T0 + n * 1_000_000)
    }

    fn read_with(text: &str, opts: &ImportOptions) -> Result<Recording, ImportError> {
        read("t.json", text, opts)
    }

    fn read_str(text: &str) -> Result<Recording, ImportError> {
        read_with(text, &ImportOptions::default())
    }

    fn err(text: &str) -> String {
        read_str(text).unwrap_err().to_string()
    }

    const BODY: &str = r#"{"data": [
{"object": "trace", "id": "trace_1", "workflow_name": "Agent workflow", "group_id": null, "metadata": null},
{"object": "trace.span", "id": "span_f", "trace_id": "trace_1", "parent_id": "span_t", "started_at": "2025-03-07T10:00:00+00:00", "ended_at": "2025-03-07T10:00:08+00:00",
 "span_data": {"type": "function", "name": "issue_refund", "input": "{\"ticket_id\":\"T-1\",\"amount_cents\":4200}", "output": "Tool 'issue_refund' timed out after 8 seconds.", "mcp_data": null}, "error": null},
{"object": "trace.span", "id": "span_r", "trace_id": "trace_1", "parent_id": "span_t", "started_at": "2025-03-07T10:00:08.005000+00:00", "ended_at": "2025-03-07T10:00:08.030000+00:00", "span_data": {"type": "response", "response_id": "resp_1"}, "error": null},
{"object": "trace.span", "id": "span_g", "trace_id": "trace_1", "parent_id": "span_t", "started_at": "2025-03-07T10:00:08.034000+00:00", "ended_at": "2025-03-07T10:00:09.300000+00:00",
 "span_data": {"type": "function", "name": "issue_refund", "input": "{\"ticket_id\":\"T-1\",\"amount_cents\":4200}", "output": "{'refund_id': 're_A2', 'status': 'succeeded'}", "mcp_data": null}, "error": null},
{"object": "trace.span", "id": "span_t", "trace_id": "trace_1", "parent_id": null, "started_at": "2025-03-07T09:59:59.998810+00:00", "ended_at": "2025-03-07T10:00:09.300700+00:00", "span_data": {"type": "custom", "name": "task", "data": {}}, "error": null}
]}"#;

    #[test]
    fn function_spans_are_tool_calls_and_the_sdks_timeout_text_is_a_timeout() {
        let rec = read_str(BODY).unwrap();
        assert_eq!(rec.warnings, vec![]);
        assert_eq!(rec.executor_timeout_ns, Some(8_000_000_000));
        let got: Vec<_> = rec
            .tool_calls
            .iter()
            .map(|c| {
                (
                    c.ticket.as_str(),
                    c.amount_cents,
                    c.at,
                    c.result.clone(),
                    c.decision_at,
                    c.source.line,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "T-1",
                    Some(4200),
                    ms(0),
                    Some(ToolResultRec {
                        at: ms(8000),
                        ok: false,
                        timed_out: true,
                        refund_id: None
                    }),
                    Some(ms(8030)),
                    3
                ),
                (
                    "T-1",
                    Some(4200),
                    ms(8034),
                    Some(ToolResultRec {
                        at: ms(9300),
                        ok: true,
                        timed_out: false,
                        refund_id: Some("re_A2".into())
                    }),
                    None,
                    6
                ),
            ]
        );
        // A bare array and JSON lines read the same.
        let items: Vec<Value> = serde_json::from_str::<Value>(BODY).unwrap()["data"]
            .as_array()
            .unwrap()
            .clone();
        let array = read_str(&serde_json::to_string(&items).unwrap()).unwrap();
        assert_eq!(array.tool_calls.len(), 2);
        let lines: Vec<String> = items.iter().map(Value::to_string).collect();
        let by_line = read_lines(
            "t.jsonl",
            lines.iter().map(|l| Ok(l.clone())),
            &ImportOptions::default(),
        )
        .unwrap();
        assert_eq!(by_line.tool_calls[0].result, rec.tool_calls[0].result);
        assert_eq!(by_line.tool_calls[1].source.line, 4);
    }

    #[test]
    fn the_timeout_text_is_configurable() {
        // Another text: the SDK's default is then an ordinary result.
        let other = ImportOptions {
            timeout_output: "Tool call timed out".into(),
            ..ImportOptions::default()
        };
        let rec = read_with(BODY, &other).unwrap();
        let r = rec.tool_calls[0].result.as_ref().unwrap();
        assert!(r.ok && !r.timed_out);
        assert_eq!(rec.executor_timeout_ns, None);
        let custom = BODY.replace(
            "Tool 'issue_refund' timed out after 8 seconds.",
            "Tool call timed out",
        );
        let r = read_with(&custom, &other).unwrap();
        assert!(r.tool_calls[0].result.as_ref().unwrap().timed_out);
        // A glob without {seconds} states no timeout.
        let glob = ImportOptions {
            timeout_output: "Tool '*' timed out after * seconds.".into(),
            ..ImportOptions::default()
        };
        let rec = read_with(BODY, &glob).unwrap();
        assert!(rec.tool_calls[0].result.as_ref().unwrap().timed_out);
        assert_eq!(rec.executor_timeout_ns, None);
        assert_eq!(
            ImportOptions::default().timeout_output,
            DEFAULT_TIMEOUT_OUTPUT
        );
    }

    #[test]
    fn an_error_span_fails_the_call() {
        let raised = BODY.replacen(
            "\"output\": \"Tool 'issue_refund' timed out after 8 seconds.\", \"mcp_data\": null}, \"error\": null",
            "\"output\": null, \"mcp_data\": null}, \"error\": {\"message\": \"Error running tool\", \"data\": {\"tool_name\": \"issue_refund\", \"error\": \"Tool 'issue_refund' timed out after 8 seconds.\"}}",
            1,
        );
        let r = read_str(&raised).unwrap();
        let res = r.tool_calls[0].result.as_ref().unwrap();
        assert!(!res.ok && res.timed_out);
        let declined = raised.replace("timed out after 8 seconds.", "card declined");
        let res = read_str(&declined).unwrap().tool_calls[0]
            .result
            .clone()
            .unwrap();
        assert!(!res.ok && !res.timed_out);
    }

    #[test]
    fn bad_items_name_the_line_and_the_field() {
        assert_eq!(
            err("{\"data\": [\n{\"object\": \"trace.span\", \"trace_id\": \"t\", \"started_at\": \"2025-03-07T10:00:00+00:00\", \"span_data\": {\"type\": \"function\", \"name\": \"issue_refund\", \"input\": \"{\\\"ticket_id\\\": \\\"T-1\\\", \\\"amount_cents\\\": -5}\"}}]}"),
            "t.json:2: data[0].span_data.input: \"amount_cents\": expected integer cents (a whole number in the currency's smallest unit, like 4200, or its decimal digits as a string, \"4200\"), got -5"
        );
        assert_eq!(
            err("[{\"object\": \"response\"}]"),
            "t.json:1: [0].object: expected \"trace\" or \"trace.span\", got \"response\""
        );
        assert_eq!(
            err("[{\"object\": \"trace.span\", \"span_data\": \"function\"}]"),
            "t.json:1: [0].span_data: expected the span's data object ({\"type\": \"function\", …}), got \"function\""
        );
        assert_eq!(
            err("[{\"object\": \"trace.span\", \"span_data\": {\"type\": \"function\", \"name\": \"issue_refund\", \"input\": \"not json\"}, \"started_at\": \"2025-03-07T10:00:00+00:00\"}]"),
            "t.json:1: [0]: tool call of `issue_refund` has no ticket: its arguments \
             `[0].span_data.input` are not an object of arguments, got \"not json\"; \
             expected a ticket argument `ticket`, `ticket_id` or `ticketId` (from the tool \
             definition and the common names): name it with --ticket-field NAME, or give the \
             tool's definition with --tool-definition FILE"
        );
        let two = BODY
            .replacen("after 8 seconds", "after 15 seconds", 1)
            .replacen(
                "\"output\": \"{'refund_id': 're_A2', 'status': 'succeeded'}\"",
                "\"output\": \"Tool 'issue_refund' timed out after 8 seconds.\"",
                1,
            );
        assert_eq!(
            read_str(&two).unwrap_err().to_string(),
            "t.json:6: data[3].span_data.output: the timeout text states 8 seconds, the one at \
             t.json:3 15 seconds: one recording has one executor timeout (import the two \
             apart, or name another --timeout-output)"
        );
        let bad = ImportOptions {
            timeout_output: "*".into(),
            ..ImportOptions::default()
        };
        assert!(read_with(BODY, &bad)
            .unwrap_err()
            .to_string()
            .starts_with("t.json: --timeout-output \"*\": expected the text"));
    }
}
