//! Reader of the `langfuse` input format: Langfuse observations, one per line as the
//! blob-storage export writes them ("Enriched observations", `observations_v2/`), or as the
//! public API returns them (`GET /api/public/observations`: `{"data": [...], "meta": …}`, or
//! an array).
//!
//! The export's fields are snake_case (`trace_id`, `start_time`, `status_message`,
//! `parent_observation_id`); the API's are camelCase (`traceId`, `startTime`,
//! `statusMessage`, `parentObservationId`): both are read. An observation has `id`,
//! `trace_id`, `type` (`SPAN`, `GENERATION`, `EVENT`, `AGENT`, `TOOL`, `CHAIN`, …), `name`,
//! `start_time` and `end_time` (the export's `2025-03-07 10:00:08.034000`, UTC; the API's RFC
//! 3339), `input` and `output` (JSON text in the export, `""` when not set; JSON values in the
//! API), `level` (`DEBUG`, `DEFAULT`, `WARNING`, `ERROR`) and `status_message`.
//!
//! - An observation of type `TOOL` named as the refund tool is a tool call: `at` its start; the
//!   ticket and amount from `input` (the Python SDK's `@observe` records `{"args": [...],
//!   "kwargs": {...}}`: the arguments are looked for in `kwargs`, see
//!   [`super::agent_trace`]); the result at its end (none while `end_time` is null): failed
//!   when `level` is `ERROR`, timed out when its `status_message` names a timeout (the SDK
//!   writes `str(e) or type(e).__name__`, `TimeoutError` for an empty message) or its `output`
//!   is the text of a timeout (`--timeout-output`); the refund id from `output`.
//! - Langfuse SDKs before observation types wrote tool calls as `SPAN`s: when a file holds no
//!   `TOOL` observation of the refund tool, a `SPAN` named as the tool is one.
//! - A `GENERATION` is a model call: a failed tool call's decision is the end of the first one
//!   of its trace that starts after the call ends and no later than its next call of the
//!   refund tool.
//!
//! Observations carry no provider facts: the refunds service's answers and Stripe's requests
//! are drawn from the base scenario (see [`super::build`]).

use serde_json::Value;

use super::agent_trace::{each_in_lines, each_in_text, AgentTrace, Item, ToolRun};
use super::{ImportError, ImportOptions, Recording};

/// What a record is, for errors.
const WHAT: &str = "a Langfuse observation object";

/// Whether `compact` (the head of a file, without whitespace) looks like Langfuse
/// observations: a `parent_observation_id` (`parentObservationId`), or a trace id beside a
/// status message.
pub(crate) fn detect(compact: &str) -> bool {
    compact.contains("\"parent_observation_id\":")
        || compact.contains("\"parentObservationId\":")
        || (["\"trace_id\":", "\"traceId\":"]
            .iter()
            .any(|k| compact.contains(k))
            && ["\"status_message\":", "\"statusMessage\":"]
                .iter()
                .any(|k| compact.contains(k)))
}

/// Reads `text`, the content of file `name`: observations one per line, a JSON array of
/// them, or the API's `{"data": [...]}`.
///
/// # Errors
/// Not JSON; an observation that is not an object or lacks `type`; a tool or generation
/// without a start time; a time that is neither RFC 3339 nor `YYYY-MM-DD HH:MM:SS.ffffff`; an
/// end before the start; a tool call of the refund tool without a ticket. Each error names the
/// file, the line and the field path.
pub(crate) fn read(name: &str, text: &str, opts: &ImportOptions) -> Result<Recording, ImportError> {
    let mut trace = AgentTrace::new(name, opts)?;
    each_in_text(name, text, &["data"], WHAT, &mut |item| {
        observation(&mut trace, item, opts)
    })?;
    Ok(trace.finish(opts, "TOOL observation"))
}

/// [`read`] over lines as they are read (the export's JSON lines, streamed).
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
        observation(&mut trace, item, opts)
    })?;
    Ok(trace.finish(opts, "TOOL observation"))
}

const START: [&str; 2] = ["start_time", "startTime"];
const END: [&str; 2] = ["end_time", "endTime"];

/// One observation.
fn observation(
    trace: &mut AgentTrace,
    item: &Item<'_>,
    opts: &ImportOptions,
) -> Result<(), ImportError> {
    let Some(kind) = item.text(&["type"])? else {
        return Err(item.error(
            "type",
            "missing: expected an observation type (\"TOOL\", \"GENERATION\", \"SPAN\", …)",
        ));
    };
    let name = item.text(&["name"])?.unwrap_or_default();
    let fallback = match kind.to_ascii_uppercase().as_str() {
        "TOOL" if name == opts.tool => false,
        "TOOL" => {
            trace.other_tool(item, name);
            return Ok(());
        }
        "SPAN" if name == opts.tool => true,
        "GENERATION" => {
            let (start, end) = item.times(&START, &END)?;
            if let Some(end) = end {
                trace.model(item, trace_of(item)?, start, end);
            }
            return Ok(());
        }
        _ => return Ok(()),
    };
    let (start, end) = item.times(&START, &END)?;
    let failed = item
        .text(&["level"])?
        .is_some_and(|l| l.eq_ignore_ascii_case("ERROR"));
    let message = item
        .text(&["status_message", "statusMessage"])?
        .unwrap_or_default();
    trace.tool(
        item,
        ToolRun {
            trace: trace_of(item)?,
            call_id: None,
            start,
            end,
            arguments: set(item.get(&["input"])),
            failed,
            timed_out: super::otlp::is_timeout(None, message),
            output: set(item.get(&["output"])),
            fallback,
        },
        opts,
    )
}

/// A field that is set: the export writes `""` for one that is not.
fn set<'a>(field: Option<(&'a str, &'a Value)>) -> Option<(&'a str, &'a Value)> {
    field.filter(|(_, v)| v.as_str() != Some(""))
}

/// The observation's trace (`trace_id`, or the API's `traceId`); empty when absent.
fn trace_of(item: &Item<'_>) -> Result<String, ImportError> {
    Ok(item.id(&["trace_id", "traceId"])?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{Instant, ToolResultRec};

    /// 2025-03-07T10:00:00Z, ns.
    const T0: i64 = 1_741_341_600_000_000_000;

    fn ms(n: i64) -> Instant {
        Instant::exact(T0 + n * 1_000_000)
    }

    fn read_str(text: &str) -> Result<Recording, ImportError> {
        read("o.jsonl", text, &ImportOptions::default())
    }

    fn err(text: &str) -> String {
        read_str(text).unwrap_err().to_string()
    }

    const EXPORT: &str = r#"{"id": "a", "trace_id": "tr1", "type": "AGENT", "name": "handle_ticket", "start_time": "2025-03-07 10:00:00.000000", "end_time": "2025-03-07 10:00:09.300000", "parent_observation_id": "", "input": "{\"args\": [\"T-1\"], \"kwargs\": {}}", "output": "done", "level": "DEFAULT", "status_message": ""}
{"id": "t1", "trace_id": "tr1", "type": "TOOL", "name": "issue_refund", "start_time": "2025-03-07 10:00:00.000000", "end_time": "2025-03-07 10:00:08.000000", "parent_observation_id": "a", "input": "{\"args\": [], \"kwargs\": {\"ticket_id\": \"T-1\", \"amount_cents\": 4200}}", "output": "", "level": "ERROR", "status_message": "TimeoutError"}
{"id": "g1", "trace_id": "tr1", "type": "GENERATION", "name": "OpenAI-generation", "start_time": "2025-03-07 10:00:08.005000", "end_time": "2025-03-07 10:00:08.030000", "parent_observation_id": "a", "input": "", "output": "", "level": "DEFAULT", "status_message": ""}

{"id": "t2", "trace_id": "tr1", "type": "TOOL", "name": "issue_refund", "start_time": "2025-03-07 10:00:08.034000", "end_time": "2025-03-07 10:00:09.300000", "parent_observation_id": "a", "input": "{\"args\": [], \"kwargs\": {\"ticket_id\": \"T-1\", \"amount_cents\": 4200}}", "output": "{\"refund_id\": \"re_A2\", \"status\": \"succeeded\"}", "level": "DEFAULT", "status_message": ""}
"#;

    /// (ticket, amount, call, result, decision, line) of a tool call.
    type Story<'a> = (
        &'a str,
        Option<u64>,
        Instant,
        Option<ToolResultRec>,
        Option<Instant>,
        u64,
    );

    fn story(rec: &Recording) -> Vec<Story<'_>> {
        rec.tool_calls
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
            .collect()
    }

    #[test]
    fn tool_observations_are_tool_calls_and_generations_decide() {
        let rec = read_str(EXPORT).unwrap();
        assert_eq!(rec.warnings, vec![]);
        assert_eq!(
            story(&rec),
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
                    2
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
                    5
                ),
            ]
        );
    }

    #[test]
    fn the_apis_camel_case_names_read_the_same() {
        let api = r#"{"data": [
{"id": "t1", "traceId": "tr1", "type": "TOOL", "name": "issue_refund", "startTime": "2025-03-07T10:00:00.000Z", "endTime": "2025-03-07T10:00:08.000Z", "parentObservationId": "a", "input": {"args": [], "kwargs": {"ticket_id": "T-1", "amount_cents": 4200}}, "output": null, "level": "ERROR", "statusMessage": "TimeoutError"},
{"id": "g1", "traceId": "tr1", "type": "GENERATION", "startTime": "2025-03-07T10:00:08.005Z", "endTime": "2025-03-07T10:00:08.030Z", "level": "DEFAULT"},
{"id": "t2", "traceId": "tr1", "type": "TOOL", "name": "issue_refund", "startTime": "2025-03-07T10:00:08.034Z", "endTime": "2025-03-07T10:00:09.300Z", "input": {"args": [], "kwargs": {"ticket_id": "T-1", "amount_cents": 4200}}, "output": {"refund_id": "re_A2", "status": "succeeded"}, "level": "DEFAULT", "statusMessage": null}
], "meta": {"page": 1}}"#;
        assert!(detect(&api.replace(char::is_whitespace, "")));
        let from_api = read_str(api).unwrap();
        let export = read_str(EXPORT).unwrap();
        let strip = |r: &Recording| {
            story(r)
                .into_iter()
                .map(|(t, a, at, res, d, _)| (t.to_string(), a, at, res, d))
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(&from_api), strip(&export));
        assert_eq!(from_api.tool_calls[1].source.line, 4);
    }

    #[test]
    fn spans_named_as_the_tool_count_when_no_tool_observation_does() {
        let old = EXPORT.replace("\"TOOL\"", "\"SPAN\"");
        assert_eq!(read_str(&old).unwrap().tool_calls.len(), 2);
        // Beside TOOL observations a SPAN of the same name is a wrapper, not another call.
        let mixed = format!(
            "{EXPORT}{}",
            EXPORT
                .lines()
                .nth(1)
                .unwrap()
                .replace("\"TOOL\"", "\"SPAN\"")
        );
        assert_eq!(read_str(&mixed).unwrap().tool_calls.len(), 2);
    }

    #[test]
    fn bad_observations_name_the_line_and_the_field() {
        assert_eq!(
            err("\n{\"type\": \"TOOL\", \"name\": \"issue_refund\", \"start_time\": \"2025-03-07 10:00:00\", \"end_time\": \"2025-03-07 25:00:00\"}"),
            "o.jsonl:2: end_time: expected an ISO 8601 time like \"2025-03-07T10:00:08.034000Z\" \
             (or \"2025-03-07 10:00:08.034000\", UTC), got \"2025-03-07 25:00:00\""
        );
        assert_eq!(
            err("{\"name\": \"issue_refund\"}"),
            "o.jsonl:1: type: missing: expected an observation type (\"TOOL\", \"GENERATION\", \
             \"SPAN\", …)"
        );
        assert_eq!(
            err("{\"type\": \"TOOL\", \"name\": \"issue_refund\", \"start_time\": \"2025-03-07 10:00:00\", \"input\": \"{\\\"args\\\": [], \\\"kwargs\\\": {\\\"ticket_id\\\": [1]}}\"}"),
            "o.jsonl:1: input.kwargs: \"ticket_id\": expected a ticket id (a non-negative \
             integer, or a string like \"T-100000\" of at most 200 characters), got [1]"
        );
        assert_eq!(
            err("{\"type\": \"TOOL\", \"name\": \"issue_refund\", \"end_time\": \"2025-03-07 10:00:00\"}"),
            "o.jsonl:1: start_time: missing: expected the time the record started"
        );
        assert_eq!(
            err("{\"type\": \"TOOL\", \"name\": \"issue_refund\", \"start_time\": \"2025-03-07 10:00:00\", \"level\": 3}"),
            "o.jsonl:1: level: expected a string, got 3"
        );
    }
}
