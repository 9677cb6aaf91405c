//! Reader of the `otlp` input format: OpenTelemetry traces in OTLP/JSON → the agent's tool
//! calls, the refunds service's answers and its requests to the provider.
//!
//! The wire format is read in `otlp/wire.rs`; this file links the spans by `parentSpanId`
//! (within one `traceId`) and maps them:
//!
//! - a **tool span** — `gen_ai.operation.name = execute_tool` (or, without that attribute, a
//!   span named `execute_tool TOOL`) whose `gen_ai.tool.name` is the refund tool
//!   ([`ImportOptions::tool`]) — is a [`ToolCallRec`]: `at` = its start; the ticket and amount
//!   from the JSON object in `gen_ai.tool.call.arguments` (a string, or a structured
//!   `kvlistValue`) under the first of [`ImportOptions::arguments`]' names it holds (the tool
//!   definition's, then `ticket`, `ticket_id`, `ticketId`; `amount`, `amount_cents`,
//!   `amountCents`), the ticket a string or an integer; else the ticket from a
//!   `refund.ticket_id` or ticket-argument attribute of the span; the result
//!   at its end, ok unless `status.code` is ERROR or `error.type` is `timeout`, timed out when
//!   `error.type` is `timeout`, its refund id from `gen_ai.tool.call.result`;
//! - a failed tool call's `decision_at` is the end of the first model span of its trace
//!   (`gen_ai.operation.name` `chat`, `text_completion` or `generate_content`) that starts
//!   after the tool span ends and no later than the trace's next tool span;
//! - the outermost **SERVER span** below a tool span is the refunds service's answer to it
//!   ([`ServiceResponseRec`]): `at` = its end (after the tool span's end for a late answer), ok
//!   unless its status is ERROR or `http.response.status_code` ≥ 400, its refund id from a
//!   `refund.id` attribute, else from the last provider request below it that has one;
//! - a **CLIENT span** `POST …/v1/refunds` (`http.request.method`; `url.path`, or the path of
//!   `url.full`; the pre-1.21 names `http.method`, `http.target`, `http.url` and
//!   `http.status_code` too) is a [`ProviderRequestRec`]: `sent` = its start; status from
//!   `http.response.status_code`, latency = end − start when a status is recorded (none: the
//!   answer never came); `service_received` = the start of the nearest SERVER span above it
//!   (below its tool span); `attempt` = the index of its tool span among its ticket's tool
//!   calls in start order; `try_no` = `http.request.resend_count` when recorded, else its
//!   index in start order among the provider requests below the same SERVER span; the
//!   refund id from a `refund.id` attribute; the ticket from its tool span, else from a
//!   `refund.ticket_id` or ticket-field attribute on it or the nearest span above it that has
//!   one (a request with no ticket anywhere is skipped with a warning). The `Idempotency-Key`
//!   from `http.request.header.idempotency-key` (a string array per the semantic conventions;
//!   a plain string accepted): when the attribute is absent, the key is recorded as absent
//!   (`Some(None)`) only if the span records other `http.request.header.*` attributes (the
//!   instrumentation captured headers, and this one was not among them); otherwise the
//!   recording does not say (`None`): capturing headers is opt-in.
//!
//! Spans may come in any order, across `resourceSpans`/`scopeSpans`, documents, lines and
//! (with [`read_files`]) files. A span id repeated in one trace (an exporter's retry) keeps the
//! first copy, with a warning. The outputs are sorted by time, then file and line.

mod wire;

use std::collections::BTreeMap;

use serde_json::Value;

use wire::{AnyValue, Span, KIND_CLIENT, KIND_SERVER};

use super::agent_trace::{decisions, Timed};
use super::fields::{
    amount_value, as_written, quoted, shown, ticket_value, AMOUNT_TEXT, TICKET_TEXT,
};
use super::tool_args::listed_all;
use super::{
    ImportError, ImportOptions, Instant, ProviderRequestRec, Recording, ServiceResponseRec,
    TicketRef, ToolCallRec, ToolResultRec, Warning,
};

/// The attribute that carries a ticket id on a span that has no tool arguments (besides
/// the ticket argument names of [`ImportOptions::arguments`]).
pub(crate) const TICKET_ATTRIBUTE: &str = "refund.ticket_id";

/// The attribute that carries the refund id on a provider CLIENT span or a service SERVER span
/// (the semantic conventions have none for a response body).
pub(crate) const REFUND_ID_ATTRIBUTE: &str = "refund.id";

/// Reads `text`, the content of file `name` (see the module docs for the mapping).
///
/// # Errors
/// The text is not OTLP/JSON, or a span is malformed (see [`read_files`]).
pub(crate) fn read(name: &str, text: &str, opts: &ImportOptions) -> Result<Recording, ImportError> {
    read_files(&[(name, text)], opts)
}

/// Reads several files as one set of traces, so that a parent in one file links a child in
/// another (the agent and the refunds service often export to different files). `files` are
/// (name, content) pairs.
///
/// # Errors
/// A file is not OTLP/JSON (`docs/import.md`, "OTLP/JSON"); a tool span has no ticket or has
/// arguments that are not a JSON object; an attribute the mapping reads has the wrong type (an HTTP
/// status that is not an integer in 100..=599); a parent chain loops. Each error names the
/// file, the line the span starts on and its field path.
pub(crate) fn read_files(
    files: &[(&str, &str)],
    opts: &ImportOptions,
) -> Result<Recording, ImportError> {
    let mut spans = Vec::new();
    for (name, text) in files {
        spans.extend(wire::spans(name, text)?);
    }
    let traces = Traces::link(spans)?;
    traces.recording(opts)
}

/// The spans, each with its parent.
struct Traces {
    spans: Vec<Span>,
    parent: Vec<Option<usize>>,
    warnings: Vec<Warning>,
}

impl Traces {
    /// Indexes `spans` by (trace, span id) and links each to its parent (`None` for a root, or
    /// a parent that is not in the input).
    fn link(all: Vec<Span>) -> Result<Traces, ImportError> {
        let mut index: BTreeMap<(String, String), usize> = BTreeMap::new();
        let mut spans: Vec<Span> = Vec::new();
        let mut warnings = Vec::new();
        for span in all {
            let key = (span.trace_id.clone(), span.span_id.clone());
            if let Some(&first) = index.get(&key) {
                warnings.push(Warning {
                    source: span.source.clone(),
                    message: format!(
                        "{}: span {} of trace {} repeats the one at {}; the repeat is ignored",
                        span.path, span.span_id, span.trace_id, spans[first].source
                    ),
                });
                continue;
            }
            index.insert(key, spans.len());
            spans.push(span);
        }
        let parent = spans
            .iter()
            .map(|s| {
                (!s.parent_span_id.is_empty())
                    .then(|| index.get(&(s.trace_id.clone(), s.parent_span_id.clone())))
                    .flatten()
                    .copied()
            })
            .collect();
        let traces = Traces {
            spans,
            parent,
            warnings,
        };
        traces.check_no_loops()?;
        Ok(traces)
    }

    fn check_no_loops(&self) -> Result<(), ImportError> {
        for (i, s) in self.spans.iter().enumerate() {
            let mut at = i;
            for _ in 0..=self.spans.len() {
                match self.parent[at] {
                    Some(p) if p == i => {
                        return Err(ImportError::at(
                            &s.source.file,
                            s.source.line,
                            format!(
                                "{}.parentSpanId: the chain of parents of span {} loops back to it",
                                s.path, s.span_id
                            ),
                        ))
                    }
                    Some(p) => at = p,
                    None => break,
                }
            }
        }
        Ok(())
    }

    /// The spans above `i`, nearest first.
    fn ancestors(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(self.parent[i], move |&p| self.parent[p])
    }

    /// The nearest tool span above `i`, as an index into `tools`.
    fn tool_above(&self, i: usize, tools: &BTreeMap<usize, usize>) -> Option<usize> {
        self.ancestors(i).find_map(|a| tools.get(&a).copied())
    }

    /// The nearest SERVER span above `i` and below its tool span.
    fn server_above(&self, i: usize, tools: &BTreeMap<usize, usize>) -> Option<usize> {
        self.ancestors(i)
            .take_while(|a| !tools.contains_key(a))
            .find(|&a| self.spans[a].kind == KIND_SERVER)
    }

    fn recording(mut self, opts: &ImportOptions) -> Result<Recording, ImportError> {
        let mut calls = self.tool_calls(opts)?;
        // span index → position in `calls` (sorted by start, then file and line)
        let tools: BTreeMap<usize, usize> = calls
            .iter()
            .enumerate()
            .map(|(k, (i, _))| (*i, k))
            .collect();
        let mut attempt = vec![0u32; calls.len()];
        let mut per_ticket: BTreeMap<&TicketRef, u32> = BTreeMap::new();
        for (k, (_, c)) in calls.iter().enumerate() {
            let n = per_ticket.entry(&c.ticket).or_default();
            attempt[k] = *n;
            *n += 1;
        }
        self.decisions(&mut calls);
        let requests = self.provider_requests(opts, &tools, &calls, &attempt)?;
        self.service_responses(&tools, &mut calls, &requests)?;
        let mut provider_requests: Vec<ProviderRequestRec> =
            requests.into_iter().map(|(_, _, r)| r).collect();
        provider_requests.sort_by(|a, b| (a.sent.at, &a.source).cmp(&(b.sent.at, &b.source)));
        if calls.is_empty() {
            self.note_other_tools(opts);
        }
        Ok(Recording {
            tool_calls: calls.into_iter().map(|(_, c)| c).collect(),
            provider_requests,
            refunds: Vec::new(),
            executor_timeout_ns: None,
            warnings: self.warnings,
            suppressed: Default::default(),
        })
    }

    /// The tool spans of the refund tool as tool calls (without their service response), with
    /// their span index, sorted by start, then file and line.
    fn tool_calls(&self, opts: &ImportOptions) -> Result<Vec<(usize, ToolCallRec)>, ImportError> {
        let mut calls = Vec::new();
        for (i, s) in self.spans.iter().enumerate() {
            if tool_name(s).as_deref() == Some(opts.tool.as_str()) {
                calls.push((i, tool_call(s, opts)?));
            }
        }
        calls.sort_by(|(_, a), (_, b)| (a.at.at, &a.source).cmp(&(b.at.at, &b.source)));
        Ok(calls)
    }

    /// Sets each failed tool call's decision time: the end of the first model span
    /// (`gen_ai.operation.name` `chat`, `text_completion` or `generate_content`, or
    /// OpenInference's `openinference.span.kind = LLM`) of its trace
    /// that starts once the call's result is in and no later than the trace's next tool call.
    fn decisions(&self, calls: &mut [(usize, ToolCallRec)]) {
        let is_model = |s: &Span| {
            matches!(
                attr(s, "gen_ai.operation.name"),
                Some((_, AnyValue::Str(op)))
                    if ["chat", "text_completion", "generate_content"].contains(&op.as_str())
            ) || matches!(
                attr(s, "openinference.span.kind"),
                Some((_, AnyValue::Str(k))) if k.eq_ignore_ascii_case("LLM")
            )
        };
        let models: Vec<Timed<'_>> = self
            .spans
            .iter()
            .filter(|sp| is_model(sp))
            .map(timed)
            .collect();
        let tools: Vec<Timed<'_>> = calls.iter().map(|(i, _)| timed(&self.spans[*i])).collect();
        let decided = decisions(&tools, &models);
        for ((_, call), d) in calls.iter_mut().zip(decided) {
            if call.result.as_ref().is_some_and(|r| !r.ok) {
                call.decision_at = d.map(Instant::exact);
            }
        }
    }

    /// The provider refund requests, each with its SERVER span (if any) and its span index.
    fn provider_requests(
        &mut self,
        opts: &ImportOptions,
        tools: &BTreeMap<usize, usize>,
        calls: &[(usize, ToolCallRec)],
        attempt: &[u32],
    ) -> Result<Vec<(usize, Option<usize>, ProviderRequestRec)>, ImportError> {
        let mut out = Vec::new();
        for (i, s) in self.spans.iter().enumerate() {
            if s.kind != KIND_CLIENT || !is_refund_create(s) {
                continue;
            }
            let tool = self.tool_above(i, tools);
            let ticket = match tool {
                Some(k) => Some(calls[k].1.ticket.clone()),
                None => self.ticket_at_or_above(i, opts)?,
            };
            let Some(ticket) = ticket else {
                self.warnings.push(Warning {
                    source: s.source.clone(),
                    message: format!(
                        "{}: a provider refund request with no tool span above it and no \
                         `{TICKET_ATTRIBUTE}` or {} attribute: skipped",
                        s.path,
                        opts.arguments.ticket_list()
                    ),
                });
                continue;
            };
            let server = self.server_above(i, tools);
            let status = http_status(s)?;
            out.push((
                i,
                server,
                ProviderRequestRec {
                    ticket,
                    attempt: tool.map(|k| attempt[k]),
                    try_no: resend_count(s)?,
                    service_received: server.map(|v| Instant::exact(self.spans[v].start)),
                    sent: Instant::exact(s.start),
                    // Without a status the answer never came: the span's duration is how
                    // long the client waited before its connection was lost or it gave up.
                    latency_ns: Some((s.end - s.start) as u64),
                    status,
                    idempotency_key: idempotency_key(s)?,
                    refund_id: string_attr(s, REFUND_ID_ATTRIBUTE)?.map(str::to_string),
                    source: s.source.clone(),
                },
            ));
        }
        // A request without `http.request.resend_count` counts in start order below its
        // SERVER span.
        let mut order: Vec<usize> = (0..out.len()).collect();
        order.sort_by(|&a, &b| {
            let (x, y) = (&out[a].2, &out[b].2);
            (x.sent.at, &x.source).cmp(&(y.sent.at, &y.source))
        });
        let mut tries: BTreeMap<usize, u32> = BTreeMap::new();
        for k in order {
            let Some(server) = out[k].1 else { continue };
            let n = tries.entry(server).or_default();
            if out[k].2.try_no.is_none() {
                out[k].2.try_no = Some(*n);
            }
            *n += 1;
        }
        Ok(out)
    }

    /// A ticket id on span `i` or the nearest span above it that has one.
    fn ticket_at_or_above(
        &self,
        i: usize,
        opts: &ImportOptions,
    ) -> Result<Option<TicketRef>, ImportError> {
        for k in std::iter::once(i).chain(self.ancestors(i)) {
            if let Some(t) = ticket_attr(&self.spans[k], opts)? {
                return Ok(Some(t));
            }
        }
        Ok(None)
    }

    /// Sets each tool call's service response: the earliest outermost SERVER span below it.
    fn service_responses(
        &self,
        tools: &BTreeMap<usize, usize>,
        calls: &mut [(usize, ToolCallRec)],
        requests: &[(usize, Option<usize>, ProviderRequestRec)],
    ) -> Result<(), ImportError> {
        let mut chosen: BTreeMap<usize, usize> = BTreeMap::new();
        for (i, s) in self.spans.iter().enumerate() {
            if s.kind != KIND_SERVER || self.server_above(i, tools).is_some() {
                continue;
            }
            let Some(k) = self.tool_above(i, tools) else {
                continue;
            };
            let earlier = |j: usize| {
                let o = &self.spans[j];
                (s.start, &s.source) < (o.start, &o.source)
            };
            if chosen.get(&k).is_none_or(|&j| earlier(j)) {
                chosen.insert(k, i);
            }
        }
        // per SERVER span: the refund id of its last provider request (by sent, file, line)
        // that has one
        let mut last_refund: BTreeMap<usize, &str> = BTreeMap::new();
        let mut with_ids: Vec<&(usize, Option<usize>, ProviderRequestRec)> = requests
            .iter()
            .filter(|(_, server, r)| server.is_some() && r.refund_id.is_some())
            .collect();
        with_ids
            .sort_by(|(_, _, a), (_, _, b)| (a.sent.at, &a.source).cmp(&(b.sent.at, &b.source)));
        for (_, server, r) in with_ids {
            if let (Some(server), Some(id)) = (server, &r.refund_id) {
                last_refund.insert(*server, id);
            }
        }
        for (k, i) in chosen {
            let s = &self.spans[i];
            let status = http_status(s)?;
            let from_provider = last_refund.get(&i).map(|r| r.to_string());
            calls[k].1.service_response = Some(ServiceResponseRec {
                at: Instant::exact(s.end),
                ok: !s.error && status.is_none_or(|c| c < 400),
                refund_id: string_attr(s, REFUND_ID_ATTRIBUTE)?
                    .map(str::to_string)
                    .or(from_provider),
            });
        }
        Ok(())
    }

    /// A warning when no tool span is of the refund tool but some are of others.
    fn note_other_tools(&mut self, opts: &ImportOptions) {
        let others: std::collections::BTreeSet<String> =
            self.spans.iter().filter_map(tool_name).collect();
        if let Some(first) = self.spans.iter().find(|s| tool_name(s).is_some()) {
            self.warnings.push(Warning {
                source: first.source.clone(),
                message: format!(
                    "no execute_tool span is of tool `{}`; the tools seen are {}: name the \
                     refund tool in the import options",
                    opts.tool,
                    others
                        .iter()
                        .map(|t| format!("`{t}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
    }
}

/// A span's trace and times, for [`decisions`].
fn timed(sp: &Span) -> Timed<'_> {
    Timed {
        trace: &sp.trace_id,
        start: sp.start,
        end: sp.end,
        source: &sp.source,
    }
}

/// The tool of a tool span, `None` for other spans. A tool span is, in the conventions teams'
/// instrumentations follow:
/// - GenAI: `gen_ai.operation.name = execute_tool` (or, without it, a span named
///   `execute_tool TOOL`); the tool is `gen_ai.tool.name`, else the name's suffix;
/// - MCP client spans: `mcp.method.name = tools/call` (or a span named `tools/call TOOL`); the
///   tool is `gen_ai.tool.name`, else the name's suffix;
/// - OpenInference: `openinference.span.kind = TOOL`; the tool is `tool.name`, else the span's
///   name.
fn tool_name(s: &Span) -> Option<String> {
    let text = |key: &str| match attr(s, key).map(|(_, v)| v) {
        Some(AnyValue::Str(v)) => Some(v.as_str()),
        _ => None,
    };
    if text("openinference.span.kind").is_some_and(|k| k.eq_ignore_ascii_case("TOOL")) {
        return Some(text("tool.name").unwrap_or(&s.name).trim().to_string());
    }
    let op = attr(s, "gen_ai.operation.name").map(|(_, v)| v);
    let from_name = s
        .name
        .strip_prefix("execute_tool ")
        .or_else(|| s.name.strip_prefix("tools/call "))
        .map(str::trim);
    let mcp_call = text("mcp.method.name") == Some("tools/call");
    match op {
        Some(AnyValue::Str(op)) if op == "execute_tool" => {}
        _ if mcp_call => {}
        None if from_name.is_some() => {}
        _ => return None,
    }
    match text("gen_ai.tool.name") {
        Some(t) => Some(t.to_string()),
        None => from_name.map(str::to_string),
    }
}

/// The first of `keys` that `s` has: a tool span's fact under the names of the conventions in
/// [`tool_name`] (GenAI first, then MCP's, then OpenInference's).
fn first_attr<'a>(s: &'a Span, keys: &[&'a str]) -> Option<(&'a str, usize, &'a AnyValue)> {
    keys.iter()
        .find_map(|k| attr(s, k).map(|(i, v)| (*k, i, v)))
}

/// A tool span as a tool call (its service response is set later).
///
/// # Errors
/// The ticket or the amount argument is not valid ([`argument_error`]), the span has no
/// ticket at all ([`no_ticket`]), or an attribute read has the wrong type.
fn tool_call(s: &Span, opts: &ImportOptions) -> Result<ToolCallRec, ImportError> {
    let args = tool_arguments(s)?;
    let names = &opts.arguments;
    let ticket = match first_argument(&args, &names.ticket) {
        Some((key, v)) => {
            Some(ticket_value(v).ok_or_else(|| argument_error(s, &args, key, TICKET_TEXT, v))?)
        }
        None => ticket_attr(s, opts)?,
    };
    let Some(ticket) = ticket else {
        return Err(no_ticket(s, opts, &args));
    };
    let amount_cents = match first_argument(&args, &names.amount) {
        Some((key, v)) => {
            Some(amount_value(v).ok_or_else(|| argument_error(s, &args, key, AMOUNT_TEXT, v))?)
        }
        None => None,
    };
    Ok(ToolCallRec {
        ticket,
        tool: opts.tool.clone(),
        call_id: call_id(s)?,
        at: Instant::exact(s.start),
        amount_cents,
        amount_missing: amount_cents.is_none().then(|| {
            format!(
                "{}: tool span of `{}`: {}",
                s.path,
                opts.tool,
                arguments_seen(&args)
            )
        }),
        result: Some(tool_result(s)),
        decision_at: None,
        service_response: None,
        source: s.source.clone(),
    })
}

/// The first of `names` among a tool span's arguments `args` (its attribute's index and the
/// arguments' object): the name and its value.
fn first_argument<'a>(
    args: &'a Option<(usize, JsonObject)>,
    names: &'a [String],
) -> Option<(&'a str, &'a Value)> {
    let a = &args.as_ref()?.1;
    names.iter().find_map(|n| a.get(n).map(|v| (n.as_str(), v)))
}

/// The error for the argument `key` of tool span `s` (arguments `args`), whose value `v` is
/// not `expected`: at the arguments' attribute, a number shown as their JSON text writes it.
fn argument_error(
    s: &Span,
    args: &Option<(usize, JsonObject)>,
    key: &str,
    expected: &str,
    v: &Value,
) -> ImportError {
    let idx = args.as_ref().map_or(0, |(i, _)| *i);
    let mut message = format!("{}: expected {expected}, got {}", quoted(key), shown(v));
    // A number as the arguments' JSON text writes it.
    if let Some((_, _, AnyValue::Str(text))) =
        first_attr(s, &["gen_ai.tool.call.arguments", "input.value"])
    {
        message = as_written(&message, text);
    }
    attr_error(s, idx, "gen_ai.tool.call.arguments", &message)
}

/// What a tool span's arguments `args` were, for messages: `` its arguments are `a` and `b` ``,
/// empty, or not recorded.
fn arguments_seen(args: &Option<(usize, JsonObject)>) -> String {
    match args {
        Some((_, a)) if !a.is_empty() => format!(
            "its arguments are {}",
            listed_all(&a.keys().cloned().collect::<Vec<_>>())
        ),
        Some(_) => "its arguments are empty".to_string(),
        None => "it records no `gen_ai.tool.call.arguments`".to_string(),
    }
}

/// The error for tool span `s` (arguments `args`) that names no ticket: what it has, and the
/// flags that name one.
fn no_ticket(s: &Span, opts: &ImportOptions, args: &Option<(usize, JsonObject)>) -> ImportError {
    ImportError::at(
        &s.source.file,
        s.source.line,
        format!(
            "{}: tool span of `{}` has no ticket: {}; expected a ticket argument {} \
             (from the tool definition and the common names) or a `{TICKET_ATTRIBUTE}` \
             attribute: name it with --ticket-field NAME, or give the tool's definition \
             with --tool-definition FILE",
            s.path,
            opts.tool,
            arguments_seen(args),
            opts.arguments.ticket_list()
        ),
    )
}

/// A tool span's call id: GenAI's `gen_ai.tool.call.id`, else OpenInference's and MCP's ids
/// (`jsonrpc.request.id` may be an integer).
///
/// # Errors
/// `gen_ai.tool.call.id` is not a string.
fn call_id(s: &Span) -> Result<Option<String>, ImportError> {
    Ok(match string_attr(s, "gen_ai.tool.call.id")? {
        Some(id) => Some(id.to_string()),
        None => ["tool_call.id", "tool.id", "jsonrpc.request.id"]
            .iter()
            .find_map(|k| attr_text(s, k)),
    })
}

/// A tool span's result, at its end: failed when the span says so (the semantic conventions
/// set `error.type` only on failure, and status ERROR with it), timed out when the failure
/// names a timeout ([`is_timeout`]), with the refund id its result holds.
fn tool_result(s: &Span) -> ToolResultRec {
    let error_type = attr_text(s, "error.type");
    let failed = s.error || error_type.is_some();
    ToolResultRec {
        at: Instant::exact(s.end),
        ok: !failed,
        timed_out: failed && is_timeout(error_type.as_deref(), &s.status_message),
        refund_id: first_attr(s, &["gen_ai.tool.call.result", "output.value"])
            .and_then(|(_, _, v)| refund_id_in(v)),
    }
}

/// Whether a failed tool span was the executor's timeout, as instrumentations write it: an
/// `error.type` naming one (`timeout`, Python's `TimeoutError`, `asyncio.TimeoutError`, gRPC's
/// `DEADLINE_EXCEEDED`, MCP's request timeout code `408`), or a status message saying so
/// ("timed out", "timeout").
pub(crate) fn is_timeout(error_type: Option<&str>, message: &str) -> bool {
    let said = |t: &str| {
        let t = t.to_ascii_lowercase();
        t.contains("timeout")
            || t.contains("timed out")
            || t.contains("timedout")
            || t.contains("deadline")
    };
    error_type.is_some_and(|e| said(e) || e.trim() == "408") || said(message)
}

/// An attribute's value as text (a string, or an integer's digits), for attributes whose type
/// varies between instrumentations (`error.type`).
fn attr_text(s: &Span, key: &str) -> Option<String> {
    match attr(s, key)?.1 {
        AnyValue::Str(v) => Some(v.clone()),
        other => match other.to_json() {
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        },
    }
}

/// A JSON object.
type JsonObject = serde_json::Map<String, Value>;

/// The tool arguments object (`gen_ai.tool.call.arguments`, or OpenInference's `input.value`:
/// a JSON string or a key-value list), with the attribute's index.
fn tool_arguments(s: &Span) -> Result<Option<(usize, JsonObject)>, ImportError> {
    let Some((key, idx, v)) = first_attr(s, &["gen_ai.tool.call.arguments", "input.value"]) else {
        return Ok(None);
    };
    let json = match v {
        AnyValue::Str(text) => serde_json::from_str::<Value>(text).map_err(|_| {
            attr_error(
                s,
                idx,
                key,
                &format!(
                    "expected a JSON object of the tool's arguments, got {}",
                    quoted(text)
                ),
            )
        })?,
        other => other.to_json(),
    };
    match json {
        Value::Object(map) => Ok(Some((idx, map))),
        other => Err(attr_error(
            s,
            idx,
            key,
            &format!(
                "expected a JSON object of the tool's arguments, got {}",
                shown(&other)
            ),
        )),
    }
}

/// A ticket id from a `refund.ticket_id` or ticket-argument attribute of `s`.
fn ticket_attr(s: &Span, opts: &ImportOptions) -> Result<Option<TicketRef>, ImportError> {
    let keys =
        std::iter::once(TICKET_ATTRIBUTE).chain(opts.arguments.ticket.iter().map(String::as_str));
    for key in keys {
        if let Some((idx, v)) = attr(s, key) {
            let json = v.to_json();
            return ticket_value(&json).map(Some).ok_or_else(|| {
                attr_error(
                    s,
                    idx,
                    key,
                    &format!("expected {TICKET_TEXT}, got {}", shown(&json)),
                )
            });
        }
    }
    Ok(None)
}

/// A non-negative integer, or a string of digits.
fn non_negative(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse().ok()
        }
        _ => None,
    }
}

/// The refund id in a tool result: `refund_id` (or an `id` starting `re_`) of a JSON object;
/// else the first `re_…` word of the text (letters, digits, `_` and `.`, so a truncated
/// `re_1P9x...` stays as recorded).
fn refund_id_in(v: &AnyValue) -> Option<String> {
    let json = match v {
        AnyValue::Str(text) => serde_json::from_str::<Value>(text).unwrap_or(Value::Null),
        other => other.to_json(),
    };
    if let Value::Object(map) = &json {
        let id = map.get("refund_id").and_then(Value::as_str).or_else(|| {
            map.get("id")
                .and_then(Value::as_str)
                .filter(|i| i.starts_with("re_"))
        });
        if let Some(id) = id {
            return Some(id.to_string());
        }
    }
    let AnyValue::Str(text) = v else {
        return None;
    };
    super::fields::refund_id_word(text)
}

/// Whether `s` is `POST …/v1/refunds` (a refund create; `POST /v1/refunds/ID` updates one).
fn is_refund_create(s: &Span) -> bool {
    let method = ["http.request.method", "http.method"]
        .iter()
        .find_map(|k| match attr(s, k) {
            Some((_, AnyValue::Str(m))) => Some(m.as_str()),
            _ => None,
        });
    if !method.is_some_and(|m| m.eq_ignore_ascii_case("POST")) {
        return false;
    }
    let path = ["url.path", "url.full", "http.target", "http.url"]
        .iter()
        .find_map(|k| match attr(s, k) {
            Some((_, AnyValue::Str(u))) => Some(url_path(u)),
            _ => None,
        });
    path.is_some_and(|p| p.trim_end_matches('/') == "/v1/refunds")
}

/// The path of a URL (`https://api.stripe.com/v1/refunds?x=1` → `/v1/refunds`), or of a
/// path with a query.
fn url_path(url: &str) -> &str {
    let rest = match url.find("://") {
        Some(i) => {
            let after = &url[i + 3..];
            after.find('/').map_or("", |j| &after[j..])
        }
        None => url,
    };
    rest.split(['?', '#']).next().unwrap_or("")
}

/// `http.response.status_code` (or `http.status_code`): an integer in 100..=599.
fn http_status(s: &Span) -> Result<Option<u16>, ImportError> {
    for key in ["http.response.status_code", "http.status_code"] {
        if let Some((idx, v)) = attr(s, key) {
            return non_negative(&v.to_json())
                .filter(|c| (100..=599).contains(c))
                .map(|c| Some(c as u16))
                .ok_or_else(|| {
                    attr_error(
                        s,
                        idx,
                        key,
                        &format!(
                            "expected an HTTP status code (100..=599), got {}",
                            shown(&v.to_json())
                        ),
                    )
                });
        }
    }
    Ok(None)
}

/// `http.request.resend_count`: the SDK's try (absent on the first request).
fn resend_count(s: &Span) -> Result<Option<u32>, ImportError> {
    const KEY: &str = "http.request.resend_count";
    let Some((idx, v)) = attr(s, KEY) else {
        return Ok(None);
    };
    non_negative(&v.to_json())
        .and_then(|n| u32::try_from(n).ok())
        .map(Some)
        .ok_or_else(|| {
            attr_error(
                s,
                idx,
                KEY,
                &format!(
                    "expected a non-negative integer, got {}",
                    shown(&v.to_json())
                ),
            )
        })
}

/// The `Idempotency-Key` the request carried (see the module docs for what absence means).
fn idempotency_key(s: &Span) -> Result<Option<Option<String>>, ImportError> {
    const PREFIX: &str = "http.request.header.";
    let found = s.attrs.iter().enumerate().find(|(_, (k, _))| {
        k.get(PREFIX.len()..).is_some_and(|h| {
            k[..PREFIX.len()].eq_ignore_ascii_case(PREFIX)
                && (h.eq_ignore_ascii_case("idempotency-key")
                    || h.eq_ignore_ascii_case("idempotency_key"))
        })
    });
    let Some((idx, (key, v))) = found else {
        let captured = s.attrs.iter().any(|(k, _)| {
            k.get(..PREFIX.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(PREFIX))
        });
        return Ok(captured.then_some(None));
    };
    match v {
        AnyValue::Str(k) => Ok(Some(Some(k.clone()))),
        AnyValue::Array(vals) => match vals.first() {
            None => Ok(Some(None)),
            Some(AnyValue::Str(k)) => Ok(Some(Some(k.clone()))),
            Some(other) => Err(attr_error(
                s,
                idx,
                key,
                &format!(
                    "expected an array of strings, got {}",
                    shown(&other.to_json())
                ),
            )),
        },
        other => Err(attr_error(
            s,
            idx,
            key,
            &format!(
                "expected an array of strings, got {}",
                shown(&other.to_json())
            ),
        )),
    }
}

/// The first attribute `key` of `s`, with its index.
fn attr<'a>(s: &'a Span, key: &str) -> Option<(usize, &'a AnyValue)> {
    s.attrs
        .iter()
        .enumerate()
        .find(|(_, (k, _))| k == key)
        .map(|(i, (_, v))| (i, v))
}

/// A string attribute; an error when it has another type.
fn string_attr<'a>(s: &'a Span, key: &str) -> Result<Option<&'a str>, ImportError> {
    match attr(s, key) {
        None => Ok(None),
        Some((_, AnyValue::Str(v))) => Ok(Some(v)),
        Some((idx, other)) => Err(attr_error(
            s,
            idx,
            key,
            &match other {
                AnyValue::Other => format!("expected a stringValue, got {}", other.kind()),
                _ => format!(
                    "expected a stringValue, got {} {}",
                    other.kind(),
                    shown(&other.to_json())
                ),
            },
        )),
    }
}

/// An error about attribute `idx` (`key`) of span `s`.
fn attr_error(s: &Span, idx: usize, key: &str, message: &str) -> ImportError {
    ImportError::at(
        &s.source.file,
        s.source.line,
        format!("{}.attributes[{idx}] ({key}): {message}", s.path),
    )
}

#[cfg(test)]
mod tests;
