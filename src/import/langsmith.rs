//! Reader of the `langsmith` input format: LangSmith runs, as `Client.list_runs()` gives them
//! (`run.model_dump(mode="json")` of each `langsmith.schemas.Run`), in a JSON array or one run
//! per line; the REST API's `{"runs": [...]}` page is read too.
//!
//! A run (langsmith-sdk `python/langsmith/schemas.py`, `RunBase` and `Run`) has `id`, `name`,
//! `run_type` (`"tool"`, `"llm"`, `"chain"`, …), `start_time` and `end_time` (ISO 8601; pydantic
//! writes `2025-03-07T10:00:08.034000Z`, `…T10:00:00Z` on a whole second; a time without a zone
//! is UTC), `inputs`, `outputs`, `error` (`"{repr(exception)}\n\n{traceback}"`),
//! `parent_run_id`, `trace_id` (the root run's id), `dotted_order`, `status` and `extra`.
//!
//! - A run with `run_type` `"tool"` whose `name` is the refund tool is a tool call: `at` its
//!   start; the ticket and amount from `inputs` (the arguments as `@traceable` binds them, or
//!   LangChain's `{"input": str(tool_input)}`: see [`super::agent_trace`]); the result at its
//!   end (none while `end_time` is null): failed when `error` is set or `status` is `"error"`,
//!   timed out when the exception the error names is a timeout (its first line,
//!   `TimeoutError()`, or a traceback's last line, as [`super::otlp`] recognises
//!   `error.type`), or when `outputs` is the text of a timeout (`--timeout-output`); the refund
//!   id from `outputs`; the call id from a `tool_call_id` in `outputs` (LangChain's
//!   `ToolMessage`).
//! - A run with `run_type` `"llm"` is a model call: a failed tool call's decision is the end of
//!   the first one of its trace that starts after the call ends and no later than its next
//!   call of the refund tool.
//! - The trace is `trace_id`, else the root of `dotted_order`, else `parent_run_id`, else the
//!   run's own id.
//!
//! Runs carry no provider facts: the refunds service's answers and Stripe's requests are drawn
//! from the base scenario (see [`super::build`]).

use serde_json::Value;

use super::agent_trace::{each_in_lines, each_in_text, AgentTrace, Item, ToolRun};
use super::{ImportError, ImportOptions, Recording};

/// What a record is, for errors.
const WHAT: &str = "a LangSmith run object";

/// Whether `compact` (the head of a file, without whitespace) looks like LangSmith runs: a
/// `run_type` beside a `trace_id`, `dotted_order` or `start_time`.
pub(crate) fn detect(compact: &str) -> bool {
    compact.contains("\"run_type\":")
        && ["\"trace_id\":", "\"dotted_order\":", "\"start_time\":"]
            .iter()
            .any(|k| compact.contains(k))
}

/// Reads `text`, the content of file `name`: a JSON array of runs, runs one per line, or a
/// `{"runs": [...]}` page.
///
/// # Errors
/// Not JSON; a run that is not an object, lacks `run_type` or, for a tool or llm run,
/// `start_time`; a time that is not ISO 8601; an end before the start; a tool run of the refund
/// tool without a ticket. Each error names the file, the line the run starts on and its field
/// path (`[3].inputs`).
pub(crate) fn read(name: &str, text: &str, opts: &ImportOptions) -> Result<Recording, ImportError> {
    let mut trace = AgentTrace::new(name, opts)?;
    each_in_text(name, text, &["runs"], WHAT, &mut |item| {
        run(&mut trace, item, opts)
    })?;
    Ok(trace.finish(opts, "tool run"))
}

/// [`read`] over lines as they are read (one run per line, streamed).
///
/// # Errors
/// As [`read`], and the lines' own errors.
pub(crate) fn read_lines(
    name: &str,
    lines: impl Iterator<Item = Result<String, ImportError>>,
    opts: &ImportOptions,
) -> Result<Recording, ImportError> {
    let mut trace = AgentTrace::new(name, opts)?;
    each_in_lines(name, lines, &["runs"], WHAT, &mut |item| {
        run(&mut trace, item, opts)
    })?;
    Ok(trace.finish(opts, "tool run"))
}

/// One run.
fn run(trace: &mut AgentTrace, item: &Item<'_>, opts: &ImportOptions) -> Result<(), ImportError> {
    let Some(run_type) = item.text(&["run_type"])? else {
        return Err(item.error(
            "run_type",
            "missing: expected a LangSmith run (\"tool\", \"llm\", \"chain\", …)",
        ));
    };
    let name = item.text(&["name"])?.unwrap_or_default();
    match run_type {
        "tool" if name == opts.tool => {}
        "tool" => {
            trace.other_tool(item, name);
            return Ok(());
        }
        "llm" => {
            let (start, end) = item.times(&["start_time"], &["end_time"])?;
            if let Some(end) = end {
                trace.model(item, trace_of(item)?, start, end);
            }
            return Ok(());
        }
        _ => return Ok(()),
    }
    let (start, end) = item.times(&["start_time"], &["end_time"])?;
    let error = item.text(&["error"])?.filter(|e| !e.trim().is_empty());
    let failed = error.is_some() || item.text(&["status"])? == Some("error");
    let outputs = item.get(&["outputs"]);
    trace.tool(
        item,
        ToolRun {
            trace: trace_of(item)?,
            call_id: outputs.and_then(|(_, v)| tool_call_id(v, 0)),
            start,
            end,
            arguments: item.get(&["inputs"]),
            failed,
            timed_out: error.is_some_and(names_a_timeout),
            output: outputs,
            fallback: false,
        },
        opts,
    )
}

/// The run's trace: `trace_id`, else the root run of `dotted_order` (`{time}{id}` segments
/// joined by `.`, the time 22 characters), else `parent_run_id`, else `id`.
fn trace_of(item: &Item<'_>) -> Result<String, ImportError> {
    if let Some(t) = item.id(&["trace_id"])? {
        return Ok(t);
    }
    if let Some(d) = item.text(&["dotted_order"])? {
        let root = d.split('.').next().unwrap_or_default();
        if let Some(id) = root.get(22..).filter(|id| !id.is_empty()) {
            return Ok(id.to_string());
        }
    }
    Ok(item
        .id(&["parent_run_id"])?
        .or(item.id(&["id"])?)
        .unwrap_or_default())
}

/// Whether a run's `error` names a timeout: its first line (`repr` of the exception,
/// `TimeoutError()`) or, for a bare traceback, its last line that is not indented
/// (`TimeoutError`).
fn names_a_timeout(error: &str) -> bool {
    let lines: Vec<&str> = error.lines().filter(|l| !l.trim().is_empty()).collect();
    let first = lines.first().copied();
    let last = lines
        .iter()
        .rev()
        .find(|l| !l.starts_with(char::is_whitespace))
        .copied();
    [first, last]
        .into_iter()
        .flatten()
        .any(|l| super::otlp::is_timeout(Some(l), ""))
}

/// A `tool_call_id` in a run's outputs (a LangChain `ToolMessage`'s).
fn tool_call_id(v: &Value, depth: usize) -> Option<String> {
    let Value::Object(o) = v else { return None };
    if let Some(Value::String(id)) = o.get("tool_call_id") {
        return Some(id.clone());
    }
    if depth >= 3 {
        return None;
    }
    o.values().find_map(|inner| tool_call_id(inner, depth + 1))
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
        read("r.json", text, &ImportOptions::default())
    }

    fn err(text: &str) -> String {
        read_str(text).unwrap_err().to_string()
    }

    const RUNS: &str = r#"[
{"id": "c1", "name": "handle_ticket", "run_type": "chain", "start_time": "2025-03-07T10:00:00Z",
 "end_time": "2025-03-07T10:00:09.300000Z", "inputs": {"ticket_id": "T-1"}, "trace_id": "c1"},
{"id": "t1", "name": "issue_refund", "run_type": "tool", "start_time": "2025-03-07T10:00:00Z",
 "end_time": "2025-03-07T10:00:08Z", "error": "TimeoutError()\n\nTraceback (most recent call last):\n  ...\nTimeoutError\n",
 "inputs": {"ticket_id": "T-1", "amount_cents": 4200, "reason": "x"}, "outputs": null,
 "status": "error", "trace_id": "c1", "parent_run_id": "c1"},
{"id": "l1", "name": "ChatOpenAI", "run_type": "llm", "start_time": "2025-03-07T10:00:08.005000",
 "end_time": "2025-03-07T10:00:08.030000Z", "trace_id": "c1"},
{"id": "t2", "name": "issue_refund", "run_type": "tool", "start_time": "2025-03-07T10:00:08.034000Z",
 "end_time": "2025-03-07T10:00:09.300000Z", "error": null,
 "inputs": {"input": "{'ticket_id': 'T-1', 'amount_cents': 4200}"},
 "outputs": {"output": {"lc": 1, "type": "constructor", "kwargs": {"content": "{\"refund_id\": \"re_A2\"}", "tool_call_id": "call_2"}}},
 "status": "success", "dotted_order": "20250307T100000000000Zc1.20250307T100008034000Zt2"},
{"id": "t3", "name": "lookup_order", "run_type": "tool", "start_time": "2025-03-07T10:00:01Z", "end_time": null}
]"#;

    #[test]
    fn tool_runs_are_tool_calls_and_llm_runs_decide() {
        let rec = read_str(RUNS).unwrap();
        assert_eq!(rec.warnings, vec![]);
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
                    c.call_id.as_deref(),
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
                    None,
                    4
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
                    Some("call_2"),
                    10
                ),
            ]
        );
        // The same runs one per line, and as the REST API's page.
        let lines: Vec<String> = serde_json::from_str::<Vec<Value>>(RUNS)
            .unwrap()
            .iter()
            .map(Value::to_string)
            .collect();
        let by_line = read_lines(
            "r.jsonl",
            lines.iter().map(|l| Ok(l.clone())),
            &ImportOptions::default(),
        )
        .unwrap();
        assert_eq!(by_line.tool_calls.len(), 2);
        assert_eq!(by_line.tool_calls[1].source.line, 4);
        assert_eq!(by_line.tool_calls[0].decision_at, Some(ms(8030)));
        let page = read_str(&format!("{{\"runs\": {RUNS}, \"cursors\": {{}}}}")).unwrap();
        assert_eq!(page.tool_calls.len(), 2);
    }

    #[test]
    fn an_error_that_is_not_a_timeout_fails_the_call() {
        let rec = read_str(
            r#"{"name": "issue_refund", "run_type": "tool", "start_time": "2025-03-07T10:00:00Z", "end_time": "2025-03-07T10:00:01Z", "inputs": {"ticket": 7, "amount": 5}, "error": "ValueError('card declined')\n\nTraceback (most recent call last):\n  File \"asyncio/timeouts.py\", line 1\nValueError: card declined"}"#,
        )
        .unwrap();
        let r = rec.tool_calls[0].result.as_ref().unwrap();
        assert!(!r.ok && !r.timed_out);
        assert_eq!(rec.tool_calls[0].ticket.as_str(), "7");
    }

    #[test]
    fn only_other_tools_warn() {
        let rec = read_str(
            r#"[{"name": "lookup", "run_type": "tool", "start_time": "2025-03-07T10:00:00Z"}]"#,
        )
        .unwrap();
        assert!(rec.tool_calls.is_empty());
        assert_eq!(
            rec.warnings[0].message,
            "no tool run is of tool `issue_refund`; the tools seen are `lookup`: name the \
             refund tool with --tool NAME"
        );
    }

    #[test]
    fn bad_runs_name_the_line_and_the_field() {
        assert_eq!(
            err("[\n{\"run_type\": \"tool\", \"name\": \"issue_refund\", \"start_time\": \"yesterday\"}]"),
            "r.json:2: [0].start_time: expected an ISO 8601 time like \
             \"2025-03-07T10:00:08.034000Z\" (or \"2025-03-07 10:00:08.034000\", UTC), got \
             \"yesterday\""
        );
        assert_eq!(
            err("[{\"name\": \"x\"},\n {\"run_type\": 3}]"),
            "r.json:1: [0].run_type: missing: expected a LangSmith run (\"tool\", \"llm\", \
             \"chain\", …)"
        );
        assert_eq!(
            err("[{\"run_type\": \"llm\", \"start_time\": \"2025-03-07T10:00:01Z\", \"end_time\": \"2025-03-07T10:00:00Z\"}]"),
            "r.json:1: [0].end_time: ends 1.000 s before it starts: expected an end at or \
             after the start"
        );
        assert_eq!(
            err("[{\"run_type\": \"tool\", \"name\": \"issue_refund\", \"start_time\": \"2025-03-07T10:00:00Z\", \"inputs\": {\"args\": [\"T-1\"], \"kwargs\": {}}}]"),
            "r.json:1: [0]: tool call of `issue_refund` has no ticket: its arguments are \
             `args` and `kwargs` (1 positional, which a trace does not name); expected a ticket \
             argument `ticket`, `ticket_id` or `ticketId` (from the tool definition and the \
             common names): name it with --ticket-field NAME, or give the tool's definition \
             with --tool-definition FILE"
        );
        assert_eq!(
            err("[{\"run_type\": \"tool\", \"name\": \"issue_refund\", \"start_time\": \"2025-03-07T10:00:00Z\", \"inputs\": {\"input\": \"{'ticket_id': 'T-1', 'amount_cents': 'lots'}\"}}]"),
            "r.json:1: [0].inputs.input: \"amount_cents\": expected integer cents (a whole number in the currency's smallest unit, like 4200, or its decimal digits as a string, \"4200\"), got \"lots\""
        );
        assert_eq!(
            err("[1]"),
            "r.json:1: [0]: expected a LangSmith run object, got 1"
        );
        assert!(err("[{").starts_with("r.json:1: not JSON: "));
    }
}
