//! What the agent-side formats share: LangSmith runs ([`super::langsmith`]), Langfuse
//! observations ([`super::langfuse`]) and the OpenAI Agents SDK's spans
//! ([`super::openai_agents`]) are each a list of timed records — a run, an observation, a
//! span — linked by a trace id, of which some are calls of the refund tool and some are model
//! calls. Each reader maps its own fields onto a [`ToolRun`] or a model span; [`AgentTrace`]
//! turns them into tool calls as the OTLP reader does:
//!
//! - the ticket and the amount from the tool's arguments, under the names
//!   [`ImportOptions::arguments`] resolves (the tool definition's, then the common ones),
//!   looked for in the arguments object and in the wrappers frameworks put around it
//!   (`kwargs`, `input`, `inputs`, `arguments`, `args`, `tool_input`), each an object, a JSON
//!   string or a Python literal (`str()` of a dict);
//! - the result at the record's end: ok unless the format marks it failed, or its output is the
//!   text of a timeout ([`ImportOptions::timeout_output`]); its refund id from the output;
//! - a failed call's decision: the end of the first model call of its trace that starts once
//!   the result is in and no later than the trace's next call of the refund tool
//!   ([`decisions`], the OTLP reader's rule).
//!
//! Files are read whole (a JSON array, or one document holding the array under a container
//! key such as `data`) or line by line (JSON lines); either way each record is named by its
//! file, the line it starts on and its field path.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::fields::{
    amount_value, as_written, bare_message, parse_utc, quoted, shown, ticket_value, AMOUNT_TEXT,
    TICKET_TEXT,
};
use super::timeout_output::TimeoutOutput;
use super::tool_args::listed_all;
use super::{
    ImportError, ImportOptions, Instant, Recording, Source, ToolCallRec, ToolResultRec, UnixNs,
    Warning,
};

/// Keys under which frameworks wrap a tool's arguments, looked into in this order.
pub(crate) const ARGUMENT_WRAPPERS: [&str; 6] = [
    "kwargs",
    "input",
    "inputs",
    "arguments",
    "args",
    "tool_input",
];

/// How deep wrappers are looked into.
const MAX_WRAPPING: usize = 3;

/// One record object of an agent-side file, with where it is.
pub(crate) struct Item<'a> {
    /// The file, as given.
    pub file: &'a str,
    /// The line the record starts on.
    pub line: u64,
    /// Its field path: `[3]` in an array, `data[3]` in a container, empty for a record alone
    /// on its line or in its document.
    pub path: &'a str,
    /// The record.
    pub obj: &'a Map<String, Value>,
    /// The record's text in the file, for numbers as written in errors.
    pub raw: &'a str,
}

impl Item<'_> {
    /// Where the record is.
    pub(super) fn source(&self) -> Source {
        Source {
            file: self.file.to_string(),
            line: self.line,
        }
    }

    /// `field`'s path in the file: `[3].start_time`, or `start_time` for a record alone.
    pub(super) fn at(&self, field: &str) -> String {
        join(self.path, field)
    }

    /// An error about `field` (its path in the file, as [`Item::at`]).
    pub(super) fn error(&self, field: &str, message: impl std::fmt::Display) -> ImportError {
        ImportError::at(
            self.file,
            self.line,
            as_written(&format!("{}: {message}", self.at(field)), self.raw),
        )
    }

    /// The first of `keys` (the names a field has in the format's spellings, e.g.
    /// `trace_id`, `traceId`) present and not null, with the key.
    pub(super) fn get<'k>(&self, keys: &[&'k str]) -> Option<(&'k str, &Value)> {
        keys.iter()
            .find_map(|k| self.obj.get(*k).filter(|v| !v.is_null()).map(|v| (*k, v)))
    }

    /// A text field: absent or null is `None`; another type than a string is an error.
    pub(super) fn text(&self, keys: &[&str]) -> Result<Option<&str>, ImportError> {
        match self.get(keys) {
            None => Ok(None),
            Some((_, Value::String(s))) => Ok(Some(s)),
            Some((k, other)) => {
                Err(self.error(k, format!("expected a string, got {}", shown(other))))
            }
        }
    }

    /// An id field: a string, or an integer as its digits.
    pub(super) fn id(&self, keys: &[&str]) -> Result<Option<String>, ImportError> {
        match self.get(keys) {
            None => Ok(None),
            Some((_, Value::String(s))) => Ok((!s.is_empty()).then(|| s.clone())),
            Some((_, Value::Number(n))) if n.is_u64() => Ok(Some(n.to_string())),
            Some((k, other)) => {
                Err(self.error(k, format!("expected an id string, got {}", shown(other))))
            }
        }
    }

    /// A time field (ISO 8601 / RFC 3339 text; without a zone, UTC; see
    /// [`super::fields::parse_utc`]): absent or null is `None`.
    pub(super) fn time(&self, keys: &[&str]) -> Result<Option<UnixNs>, ImportError> {
        let Some((k, v)) = self.get(keys) else {
            return Ok(None);
        };
        match v {
            Value::String(s) => parse_utc(s).map(Some),
            _ => None,
        }
        .ok_or_else(|| {
            self.error(
                k,
                format!(
                    "expected an ISO 8601 time like \"2025-03-07T10:00:08.034000Z\" (or \
                     \"2025-03-07 10:00:08.034000\", UTC), got {}",
                    shown(v)
                ),
            )
        })
    }

    /// The record's start (required) and end (`None` while it was still running; not before
    /// the start).
    pub(super) fn times(
        &self,
        start: &[&str],
        end: &[&str],
    ) -> Result<(UnixNs, Option<UnixNs>), ImportError> {
        let Some(s) = self.time(start)? else {
            return Err(self.error(start[0], "missing: expected the time the record started"));
        };
        let e = self.time(end)?;
        if let Some(e) = e.filter(|&e| e < s) {
            let k = self.get(end).map_or(end[0], |(k, _)| k);
            return Err(self.error(
                k,
                format!(
                    "ends {:.3} s before it starts: expected an end at or after the start",
                    (s - e) as f64 / 1e9
                ),
            ));
        }
        Ok((s, e))
    }
}

fn join(path: &str, field: &str) -> String {
    match (path.is_empty(), field.is_empty()) {
        (true, _) => field.to_string(),
        (false, true) => path.to_string(),
        (false, false) => format!("{path}.{field}"),
    }
}

/// Calls `f` with every record of `text` (the whole content of file `name`): JSON values one
/// after another (one document, or one per line); an array's elements are records (`[i]`), as
/// are those of an object's array under one of `containers` (`data[i]`); any other object is a
/// record. `what` names a record for errors (`a LangSmith run object`).
///
/// # Errors
/// Not JSON; a record that is not an object; `f`'s errors.
pub(crate) fn each_in_text(
    name: &str,
    text: &str,
    containers: &[&str],
    what: &str,
    f: &mut dyn FnMut(&Item<'_>) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let lines = super::fields::Lines::new(text);
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let line_of = |raw: &RawValue| {
        let off = (raw.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
        lines.line_of(off)
    };
    each_value(name, body, None, &line_of, containers, what, f)
}

/// [`each_in_text`] over lines as they are read (JSON lines, streamed: see
/// [`super::LineReader`]); every record of a line is on that line.
///
/// # Errors
/// As [`each_in_text`], and the lines' own errors.
pub(crate) fn each_in_lines(
    name: &str,
    lines: impl Iterator<Item = Result<String, ImportError>>,
    containers: &[&str],
    what: &str,
    f: &mut dyn FnMut(&Item<'_>) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    for (i, line) in lines.enumerate() {
        let line = line?;
        let n = i as u64 + 1;
        let body = line.strip_prefix('\u{feff}').unwrap_or(&line);
        each_value(name, body, Some(n), &|_| n, containers, what, f)?;
    }
    Ok(())
}

/// The values of `body`; `line` is the line they are all on (JSON lines), else `line_of`
/// tells each one's. Each record ([`records`]) that is an object is given to `f`.
///
/// # Errors
/// A value is not JSON ([`not_json`]), a record is not an object of `what`, or `f`'s error.
fn each_value(
    name: &str,
    body: &str,
    line: Option<u64>,
    line_of: &dyn Fn(&RawValue) -> u64,
    containers: &[&str],
    what: &str,
    f: &mut dyn FnMut(&Item<'_>) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    for doc in serde_json::Deserializer::from_str(body).into_iter::<&RawValue>() {
        let doc = doc.map_err(|e| not_json(name, line, what, &e))?;
        for (path, raw) in records(name, doc, line_of, containers)? {
            let at = line_of(raw);
            let v: Value = serde_json::from_str(raw.get()).map_err(|e| {
                ImportError::at(
                    name,
                    at,
                    format!("{}: {}", join(&path, ""), bare_message(&e)),
                )
            })?;
            let Value::Object(obj) = &v else {
                let shown_path = if path.is_empty() { "(record)" } else { &path };
                return Err(ImportError::at(
                    name,
                    at,
                    format!("{shown_path}: expected {what}, got {}", shown(&v)),
                ));
            };
            f(&Item {
                file: name,
                line: at,
                path: &path,
                obj,
                raw: raw.get(),
            })?;
        }
    }
    Ok(())
}

/// The error for a document of file `name` that is not JSON: at its `line` (JSON lines, with
/// the column unless nested too deep), else at the parser's line.
fn not_json(name: &str, line: Option<u64>, what: &str, e: &serde_json::Error) -> ImportError {
    let at = line.unwrap_or(e.line() as u64);
    let column = if line.is_some() && !crate::input::is_nesting_limit(e) {
        format!(" (column {})", e.column())
    } else {
        String::new()
    };
    ImportError::at(
        name,
        at,
        format!(
            "not JSON: {}{column}: expected {what}s (a JSON array, or one per line)",
            bare_message(e)
        ),
    )
}

/// The records of document `doc`, each with its path: an array's elements, else the elements
/// of the first of `containers` that is an array field of the object, else the document
/// itself.
///
/// # Errors
/// The array does not parse ([`elements`]).
fn records<'d>(
    name: &str,
    doc: &'d RawValue,
    line_of: &dyn Fn(&RawValue) -> u64,
    containers: &[&str],
) -> Result<Vec<(String, &'d RawValue)>, ImportError> {
    let parse = |raw, path| elements(name, raw, path, line_of(raw));
    if doc.get().starts_with('[') {
        return parse(doc, "");
    }
    let container = if doc.get().starts_with('{') {
        let fields: BTreeMap<String, &RawValue> =
            serde_json::from_str(doc.get()).unwrap_or_default();
        containers.iter().find_map(|c| {
            fields
                .get(*c)
                .filter(|r| r.get().starts_with('['))
                .map(|r| (*c, *r))
        })
    } else {
        None
    };
    match container {
        Some((key, raw)) => parse(raw, key),
        None => Ok(vec![(String::new(), doc)]),
    }
}

/// The elements of the JSON array `raw` (at `path`, on `line`), each with its path.
fn elements<'a>(
    name: &str,
    raw: &'a RawValue,
    path: &str,
    line: u64,
) -> Result<Vec<(String, &'a RawValue)>, ImportError> {
    let items: Vec<&RawValue> = serde_json::from_str(raw.get()).map_err(|e| {
        let at = if path.is_empty() { "(document)" } else { path };
        ImportError::at(name, line, format!("{at}: {}", bare_message(&e)))
    })?;
    Ok(super::fields::numbered(path, items))
}

/// The first of `names` that `args` holds (not null), with its value.
fn first_arg<'a>(
    args: &'a Map<String, Value>,
    names: &'a [String],
) -> Option<(&'a str, &'a Value)> {
    names.iter().find_map(|n| {
        args.get(n)
            .filter(|v| !v.is_null())
            .map(|v| (n.as_str(), v))
    })
}

/// A call of the refund tool as a format records it.
pub(crate) struct ToolRun<'a> {
    /// The trace it belongs to (decisions are looked for in the same trace).
    pub trace: String,
    /// The tool call id, when the format has one.
    pub call_id: Option<String>,
    /// When the call started.
    pub start: UnixNs,
    /// When it ended (`None`: still running when recorded; no result).
    pub end: Option<UnixNs>,
    /// The arguments as recorded, with their field (for errors).
    pub arguments: Option<(&'a str, &'a Value)>,
    /// Whether the format marks the call failed (an error, a status, a level).
    pub failed: bool,
    /// Whether that failure names a timeout (see [`super::otlp::is_timeout`]).
    pub timed_out: bool,
    /// What the tool returned, with its field.
    pub output: Option<(&'a str, &'a Value)>,
    /// Whether the record is a tool call only when the file holds no other (a Langfuse `SPAN`
    /// named as the tool, as SDKs before observation types wrote tool calls).
    pub fallback: bool,
}

/// A model call (an LLM run, a generation), what ends a decision.
struct ModelCall {
    trace: String,
    start: UnixNs,
    end: UnixNs,
    source: Source,
}

/// The tool calls and model calls read so far from one file.
pub(crate) struct AgentTrace {
    timeout_output: TimeoutOutput,
    calls: Vec<(String, ToolCallRec)>,
    /// Calls from records that count only when `calls` is empty (see [`ToolRun::fallback`]).
    fallback: Vec<(String, ToolCallRec)>,
    models: Vec<ModelCall>,
    /// Tool records of other tools than the refund tool: how many, per tool, and the first.
    other_tools: BTreeMap<String, usize>,
    first_other: Option<Source>,
    /// The executor timeout a timed-out result states (`{seconds}`), and where.
    timeout: Option<(u64, Source)>,
    /// Warnings.
    pub warnings: Vec<Warning>,
}

impl AgentTrace {
    /// An empty trace, matching timeout texts against `opts.timeout_output`.
    ///
    /// # Errors
    /// The pattern is not one (named as the flag `--timeout-output`).
    pub(super) fn new(name: &str, opts: &ImportOptions) -> Result<Self, ImportError> {
        let timeout_output = TimeoutOutput::new(&opts.timeout_output)
            .map_err(|e| ImportError::at(name, 0, format!("--timeout-output {e}")))?;
        Ok(AgentTrace {
            timeout_output,
            calls: Vec::new(),
            fallback: Vec::new(),
            models: Vec::new(),
            other_tools: BTreeMap::new(),
            first_other: None,
            timeout: None,
            warnings: Vec::new(),
        })
    }

    /// A model call of `trace` at `item`.
    pub(super) fn model(&mut self, item: &Item<'_>, trace: String, start: UnixNs, end: UnixNs) {
        self.models.push(ModelCall {
            trace,
            start,
            end,
            source: item.source(),
        });
    }

    /// A tool record of another tool than the refund tool (counted for a warning when the
    /// file holds no call of the refund tool).
    pub(super) fn other_tool(&mut self, item: &Item<'_>, tool: &str) {
        *self.other_tools.entry(tool.to_string()).or_default() += 1;
        if self.first_other.is_none() {
            self.first_other = Some(item.source());
        }
    }

    /// A call of the refund tool at `item` (see the module docs for the mapping).
    ///
    /// # Errors
    /// No ticket in the arguments; a ticket or an amount of the wrong type; a timeout text
    /// stating another timeout than an earlier one; more than [`super::MAX_RECORDS`] calls.
    pub(super) fn tool(
        &mut self,
        item: &Item<'_>,
        run: ToolRun<'_>,
        opts: &ImportOptions,
    ) -> Result<(), ImportError> {
        let names = &opts.arguments;
        let mut seen = Vec::new();
        let found = run.arguments.and_then(|(field, v)| {
            find_arguments(v, &names.ticket, String::new(), 0, &mut seen)
                .map(|(rel, args)| (join(field, &rel), args))
        });
        let Some((args_at, args)) = found else {
            return Err(no_ticket(item, run.arguments, &seen, opts));
        };
        let bad = |key: &str, expected: &str, v: &Value| {
            item.error(
                &args_at,
                format!("{}: expected {expected}, got {}", quoted(key), shown(v)),
            )
        };
        let (key, v) = first_arg(&args, &names.ticket)
            .ok_or_else(|| item.error(&args_at, "expected a ticket argument"))?;
        let ticket = ticket_value(v).ok_or_else(|| bad(key, TICKET_TEXT, v))?;
        let amount_cents = match first_arg(&args, &names.amount) {
            Some((k, v)) => Some(amount_value(v).ok_or_else(|| bad(k, AMOUNT_TEXT, v))?),
            None => None,
        };
        let result = self.result(item, &run)?;
        let list = if run.fallback {
            &mut self.fallback
        } else {
            &mut self.calls
        };
        list.push((
            run.trace,
            ToolCallRec {
                ticket,
                tool: opts.tool.clone(),
                call_id: run.call_id,
                at: Instant::exact(run.start),
                amount_cents,
                amount_missing: amount_cents.is_none().then(|| {
                    let keys: Vec<String> = args.keys().cloned().collect();
                    format!(
                        "{}: {}",
                        item.at(&args_at),
                        super::tool_args::arguments_seen(&keys)
                    )
                }),
                result,
                decision_at: None,
                service_response: None,
                source: item.source(),
            },
        ));
        let n = self.calls.len() + self.fallback.len();
        super::check_record_count(item.file, item.line, "tool call", n)
    }

    /// The result of `run` (none while it was still running): failed as the format marks it
    /// or when its output is the text of a timeout (whose seconds the recording then states);
    /// the refund id from the output of a successful call.
    fn result(
        &mut self,
        item: &Item<'_>,
        run: &ToolRun<'_>,
    ) -> Result<Option<ToolResultRec>, ImportError> {
        let Some(end) = run.end else {
            return Ok(None);
        };
        let said = run
            .output
            .and_then(|(_, v)| output_text(v, 0))
            .and_then(|t| self.timeout_output.matches(t));
        if let Some(Some(seconds)) = said {
            self.stated_timeout(item, run.output.map_or("", |(f, _)| f), seconds)?;
        }
        let failed = run.failed || said.is_some();
        Ok(Some(ToolResultRec {
            at: Instant::exact(end),
            ok: !failed,
            timed_out: (run.failed && run.timed_out) || said.is_some(),
            refund_id: if failed {
                None
            } else {
                run.output.and_then(|(_, v)| refund_id_in(v, 0))
            },
        }))
    }

    /// The executor timeout a timed-out result states: the first one, and every other the same.
    fn stated_timeout(
        &mut self,
        item: &Item<'_>,
        field: &str,
        seconds: f64,
    ) -> Result<(), ImportError> {
        let ns = (seconds * 1e9).round();
        if !(1e6..=86_400e9).contains(&ns) {
            return Err(item.error(
                field,
                format!(
                    "the timeout text states {seconds} seconds: expected 0.001 to 86400 (one day)"
                ),
            ));
        }
        let ns = ns as u64;
        match &self.timeout {
            Some((first, at)) if *first != ns => Err(item.error(
                field,
                format!(
                    "the timeout text states {seconds} seconds, the one at {at} {} seconds: one \
                     recording has one executor timeout (import the two apart, or name another \
                     --timeout-output)",
                    *first as f64 / 1e9
                ),
            )),
            Some(_) => Ok(()),
            None => {
                self.timeout = Some((ns, item.source()));
                Ok(())
            }
        }
    }

    /// The recording: the calls with their decisions, sorted by time, then file and line.
    pub(super) fn finish(mut self, opts: &ImportOptions, what: &str) -> Recording {
        if self.calls.is_empty() {
            self.calls = std::mem::take(&mut self.fallback);
        }
        let tools: Vec<Timed<'_>> = self
            .calls
            .iter()
            .map(|(trace, c)| Timed {
                trace,
                start: c.at.at,
                end: c.result.as_ref().map_or(c.at.at, |r| r.at.at),
                source: &c.source,
            })
            .collect();
        let models: Vec<Timed<'_>> = self
            .models
            .iter()
            .map(|m| Timed {
                trace: &m.trace,
                start: m.start,
                end: m.end,
                source: &m.source,
            })
            .collect();
        let decided = decisions(&tools, &models);
        for ((_, call), d) in self.calls.iter_mut().zip(decided) {
            if call.result.as_ref().is_some_and(|r| !r.ok) {
                call.decision_at = d.map(Instant::exact);
            }
        }
        let mut calls: Vec<ToolCallRec> = self.calls.into_iter().map(|(_, c)| c).collect();
        calls.sort_by(|a, b| (a.at.at, &a.source).cmp(&(b.at.at, &b.source)));
        if calls.is_empty() {
            if let Some(first) = self.first_other {
                self.warnings.push(Warning {
                    source: first,
                    message: format!(
                        "no {what} is of tool `{}`; the tools seen are {}: name the refund tool \
                         with --tool NAME",
                        opts.tool,
                        listed_all(&self.other_tools.keys().cloned().collect::<Vec<_>>())
                    ),
                });
            }
        }
        Recording {
            tool_calls: calls,
            provider_requests: Vec::new(),
            refunds: Vec::new(),
            executor_timeout_ns: self.timeout.map(|(ns, _)| ns),
            warnings: self.warnings,
            suppressed: Default::default(),
        }
    }
}

/// The error for a call of the refund tool at `item` whose `arguments` (with their field)
/// hold no ticket argument; `seen` are the keys looked at.
fn no_ticket(
    item: &Item<'_>,
    arguments: Option<(&str, &Value)>,
    seen: &[String],
    opts: &ImportOptions,
) -> ImportError {
    let what = match arguments {
        None => "it records no arguments".to_string(),
        Some((field, v)) if object_of(v).is_none() => format!(
            "its arguments `{}` are not an object of arguments, got {}",
            item.at(field),
            shown(v)
        ),
        Some(_) if seen.is_empty() => "its arguments are empty".to_string(),
        Some((_, v)) => match positional_count(v) {
            0 => format!("its arguments are {}", listed_all(seen)),
            n => format!(
                "its arguments are {} ({n} positional, which a trace does not name)",
                listed_all(seen)
            ),
        },
    };
    ImportError::at(
        item.file,
        item.line,
        format!(
            "{}: tool call of `{}` has no ticket: {what}; expected a ticket argument {} (from \
             the tool definition and the common names): name it with --ticket-field NAME, or \
             give the tool's definition with --tool-definition FILE",
            if item.path.is_empty() {
                "(record)"
            } else {
                item.path
            },
            opts.tool,
            opts.arguments.ticket_list()
        ),
    )
}

/// A record's trace and times, for linking decisions.
pub(crate) struct Timed<'a> {
    /// The trace id.
    pub trace: &'a str,
    /// Start.
    pub start: UnixNs,
    /// End.
    pub end: UnixNs,
    /// Where (ties between records starting at once break by file and line).
    pub source: &'a Source,
}

/// For each of `tools` (calls of the refund tool), the end of the model call that decided what
/// to do after its result: the first of `models` in the same trace (by start, then file and
/// line) that starts at or after the tool call's end and no later than the trace's next tool
/// call's start. `None` when there is none.
pub(crate) fn decisions(tools: &[Timed<'_>], models: &[Timed<'_>]) -> Vec<Option<UnixNs>> {
    let mut by_trace: BTreeMap<&str, Vec<&Timed<'_>>> = BTreeMap::new();
    for m in models {
        by_trace.entry(m.trace).or_default().push(m);
    }
    for list in by_trace.values_mut() {
        list.sort_by(|a, b| (a.start, a.source).cmp(&(b.start, b.source)));
    }
    let mut starts: BTreeMap<&str, Vec<UnixNs>> = BTreeMap::new();
    for t in tools {
        starts.entry(t.trace).or_default().push(t.start);
    }
    for s in starts.values_mut() {
        s.sort_unstable();
    }
    tools
        .iter()
        .map(|t| {
            let s = &starts[t.trace];
            let next_tool = s
                .get(s.partition_point(|&x| x <= t.start))
                .copied()
                .unwrap_or(UnixNs::MAX);
            let list = by_trace.get(t.trace)?;
            list.get(list.partition_point(|m| m.start < t.end))
                .filter(|m| m.start <= next_tool)
                .map(|m| m.end)
        })
        .collect()
}

/// `v` as an object: an object, or a string holding one as JSON or as a Python literal.
fn object_of(v: &Value) -> Option<Cow<'_, Map<String, Value>>> {
    match v {
        Value::Object(m) => Some(Cow::Borrowed(m)),
        Value::String(s) => {
            let t = s.trim();
            if !t.starts_with('{') {
                return None;
            }
            let parsed = serde_json::from_str::<Value>(t)
                .ok()
                .or_else(|| super::py_literal::parse(t))?;
            match parsed {
                Value::Object(m) => Some(Cow::Owned(m)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The arguments object in `v` that holds one of the ticket names, looking into
/// [`ARGUMENT_WRAPPERS`], with its path below `v` (`kwargs`; empty for `v` itself); the keys
/// seen on the way are added to `seen` (for the error when there is none).
fn find_arguments(
    v: &Value,
    ticket: &[String],
    rel: String,
    depth: usize,
    seen: &mut Vec<String>,
) -> Option<(String, Map<String, Value>)> {
    let obj = object_of(v)?;
    if ticket
        .iter()
        .any(|n| obj.get(n).is_some_and(|v| !v.is_null()))
    {
        return Some((rel, obj.into_owned()));
    }
    seen.extend(obj.keys().map(|k| join(&rel, k)));
    if depth < MAX_WRAPPING {
        for w in ARGUMENT_WRAPPERS {
            if let Some(inner) = obj.get(w) {
                if let Some(found) = find_arguments(inner, ticket, join(&rel, w), depth + 1, seen) {
                    return Some(found);
                }
            }
        }
    }
    None
}

/// How many positional arguments `v` holds under `args` (a Python call's `*args`, which a
/// trace records without names).
fn positional_count(v: &Value) -> usize {
    object_of(v)
        .and_then(|o| o.get("args").and_then(Value::as_array).map(Vec::len))
        .unwrap_or(0)
}

/// The text of a tool's output, for the timeout pattern: a string, or the `output` or
/// `content` text of an object (a LangSmith run's `{"output": …}`, a LangChain
/// `ToolMessage`'s `kwargs.content`).
fn output_text(v: &Value, depth: usize) -> Option<&str> {
    match v {
        Value::String(s) => Some(s),
        Value::Object(o) if depth < MAX_WRAPPING => ["output", "content", "kwargs"]
            .iter()
            .find_map(|k| o.get(*k).and_then(|inner| output_text(inner, depth + 1))),
        _ => None,
    }
}

/// The refund id in a tool's output: `refund_id` (or an `id` starting `re_`) of an object —
/// the output itself, or one inside it, or in a string holding JSON or a Python literal —
/// else the first `re_…` word of its text.
pub(crate) fn refund_id_in(v: &Value, depth: usize) -> Option<String> {
    if depth > MAX_WRAPPING + 2 {
        return None;
    }
    match v {
        Value::String(s) => {
            let t = s.trim();
            if t.starts_with('{') || t.starts_with('[') {
                let parsed = serde_json::from_str::<Value>(t)
                    .ok()
                    .or_else(|| super::py_literal::parse(t));
                if let Some(id) = parsed.and_then(|p| refund_id_in(&p, depth + 1)) {
                    return Some(id);
                }
            }
            super::fields::refund_id_word(s)
        }
        Value::Object(o) => {
            let direct = o.get("refund_id").and_then(Value::as_str).or_else(|| {
                o.get("id")
                    .and_then(Value::as_str)
                    .filter(|i| i.starts_with("re_"))
            });
            if let Some(id) = direct {
                return Some(id.to_string());
            }
            o.values().find_map(|inner| refund_id_in(inner, depth + 1))
        }
        Value::Array(items) => items
            .iter()
            .find_map(|inner| refund_id_in(inner, depth + 1)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names() -> Vec<String> {
        ImportOptions::default().arguments.ticket
    }

    #[test]
    fn arguments_are_found_inside_the_wrappers_frameworks_write() {
        let find = |v: Value| {
            let mut seen = Vec::new();
            find_arguments(&v, &names(), String::new(), 0, &mut seen)
                .map(|(p, m)| (p, Value::Object(m)))
        };
        let args = json!({"ticket_id": "T-1", "amount_cents": 5});
        assert_eq!(find(args.clone()), Some((String::new(), args.clone())));
        assert_eq!(
            find(json!({"args": [], "kwargs": {"ticket_id": "T-1", "amount_cents": 5}})),
            Some(("kwargs".into(), args.clone()))
        );
        assert_eq!(
            find(json!({"input": "{'ticket_id': 'T-1', 'amount_cents': 5}"})),
            Some(("input".into(), args.clone()))
        );
        assert_eq!(
            find(json!("{\"ticket_id\": \"T-1\", \"amount_cents\": 5}")),
            Some((String::new(), args))
        );
        let mut seen = Vec::new();
        assert_eq!(
            find_arguments(
                &json!({"args": ["T-1", 5], "kwargs": {"reason": "x"}}),
                &names(),
                String::new(),
                0,
                &mut seen
            ),
            None
        );
        assert_eq!(seen, ["args", "kwargs", "kwargs.reason"]);
    }

    #[test]
    fn refund_ids_are_found_in_outputs_of_every_shape() {
        for v in [
            json!({"refund_id": "re_A2", "status": "succeeded"}),
            json!("{\"refund_id\": \"re_A2\"}"),
            json!("{'refund_id': 're_A2', 'status': 'succeeded'}"),
            json!({"output": {"kwargs": {"content": "{\"refund_id\": \"re_A2\"}"}}}),
            json!({"id": "re_A2", "object": "refund"}),
            json!("Refunded: re_A2 for T-1"),
        ] {
            assert_eq!(refund_id_in(&v, 0).as_deref(), Some("re_A2"), "{v}");
        }
        assert_eq!(refund_id_in(&json!({"status": "ok"}), 0), None);
    }

    #[test]
    fn decisions_follow_the_otlp_rule() {
        let src = Source::default();
        let t = |trace, start, end| Timed {
            trace,
            start,
            end,
            source: &src,
        };
        let tools = [t("a", 0, 10), t("a", 20, 30), t("b", 0, 10)];
        // a's model call at 12..15 decides after the first call; the one at 40 comes after
        // the last; b's starts before its call ends.
        let models = [t("a", 12, 15), t("a", 40, 45), t("b", 5, 8), t("c", 10, 11)];
        assert_eq!(decisions(&tools, &models), [Some(15), Some(45), None]);
        // A model call after the next tool call's start is not the decision.
        let late = [t("a", 25, 26)];
        assert_eq!(decisions(&tools[..2], &late), [None, None]);
    }
}
