//! Reader of the `jsonl` input format: one JSON object per line, each a tool call, a provider
//! request or the executor's timeout, in refundsim's own field names (`docs/import.md`, "JSON
//! lines"). For recordings that are neither OTLP traces nor logs in the incident's style: a
//! script turns whatever the system recorded into these lines.
//!
//! ```text
//! {"type":"tool_call","ticket":48213,"at":"2024-05-14T16:41:09.210Z","amount_cents":4200,
//!  "result":{"at":"2024-05-14T16:41:17.211Z","ok":false,"timed_out":true},
//!  "decision_at":"2024-05-14T16:41:17.240Z",
//!  "service_response":{"at":"2024-05-14T16:41:19.950Z","ok":true,"refund_id":"re_1P8wAbC"}}
//! {"type":"provider_request","ticket":48213,"attempt":0,"try":0,"sent":"2024-05-14T16:41:19.472Z",
//!  "latency_ms":449,"status":200,"idempotency_key":null,"refund_id":"re_1P8wAbC"}
//! {"type":"executor","timeout_ms":8000}
//! ```
//! (each object on one line). Times are RFC 3339 text (UTC, or with an offset) or integer
//! nanoseconds since the Unix epoch. Unknown fields are errors; blank lines are skipped.

use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_json::Value;

use super::fields::{
    amount_value, as_written, bare_message, parse_utc, shown, ticket_value, AMOUNT_TEXT,
    TICKET_TEXT, TIME_TEXT,
};
use super::{
    ImportError, ImportOptions, Instant, ProviderRequestRec, Recording, ServiceResponseRec, Source,
    TicketRef, ToolCallRec, ToolResultRec, Warning,
};

/// The `type`s a line may have.
const TYPES: &str = "\"tool_call\", \"provider_request\" or \"executor\"";

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a tool_call object")]
struct ToolCallLine {
    #[serde(deserialize_with = "ticket")]
    ticket: TicketRef,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(deserialize_with = "time")]
    at: Instant,
    #[serde(default, deserialize_with = "amount")]
    amount_cents: Option<u64>,
    #[serde(default)]
    result: Option<ResultLine>,
    #[serde(default, deserialize_with = "opt_time")]
    decision_at: Option<Instant>,
    #[serde(default)]
    service_response: Option<ServiceLine>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a result object ({\"at\": …, \"ok\": …, \"timed_out\": …, \"refund_id\": …})"
)]
struct ResultLine {
    #[serde(deserialize_with = "time")]
    at: Instant,
    ok: bool,
    #[serde(default)]
    timed_out: bool,
    #[serde(default)]
    refund_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a service_response object ({\"at\": …, \"ok\": …, \"refund_id\": …})"
)]
struct ServiceLine {
    #[serde(deserialize_with = "time")]
    at: Instant,
    ok: bool,
    #[serde(default)]
    refund_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a provider_request object")]
struct ProviderLine {
    #[serde(deserialize_with = "ticket")]
    ticket: TicketRef,
    #[serde(default)]
    attempt: Option<u32>,
    #[serde(default, rename = "try")]
    try_no: Option<u32>,
    #[serde(default, deserialize_with = "opt_time")]
    service_received: Option<Instant>,
    #[serde(deserialize_with = "time")]
    sent: Instant,
    #[serde(default, deserialize_with = "latency_ms")]
    latency_ms: Option<u64>,
    #[serde(default, deserialize_with = "status")]
    status: Option<u16>,
    #[serde(default, deserialize_with = "recorded")]
    idempotency_key: Option<Option<String>>,
    #[serde(default)]
    refund_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an executor object ({\"timeout_ms\": 8000})"
)]
struct ExecutorLine {
    timeout_ms: u64,
}

fn ticket<'de, D: Deserializer<'de>>(d: D) -> Result<TicketRef, D::Error> {
    let v = Value::deserialize(d)?;
    ticket_value(&v)
        .ok_or_else(|| D::Error::custom(format!("expected {TICKET_TEXT}, got {}", shown(&v))))
}

/// `amount_cents`: integer cents, or a string of its digits (the rule of every format,
/// [`super::fields::amount_value`]); null is absent.
fn amount<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = Value::deserialize(d)?;
    if v.is_null() {
        return Ok(None);
    }
    amount_value(&v)
        .map(Some)
        .ok_or_else(|| D::Error::custom(format!("expected {AMOUNT_TEXT}, got {}", shown(&v))))
}

fn time<'de, D: Deserializer<'de>>(d: D) -> Result<Instant, D::Error> {
    let v = Value::deserialize(d)?;
    match &v {
        Value::String(s) => parse_utc(s),
        Value::Number(n) => n.as_i64().filter(|&n| n >= 0),
        _ => None,
    }
    .map(Instant::exact)
    .ok_or_else(|| {
        D::Error::custom(format!(
            "expected {TIME_TEXT} or integer nanoseconds since the Unix epoch, got {}",
            shown(&v)
        ))
    })
}

fn opt_time<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Instant>, D::Error> {
    time(d).map(Some)
}

fn latency_ms<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = Value::deserialize(d)?;
    if v.is_null() {
        return Ok(None);
    }
    v.as_f64()
        .filter(|ms| ms.is_finite() && *ms >= 0.0 && *ms < 1e12)
        .map(|ms| Some((ms * 1e6).round() as u64))
        .ok_or_else(|| {
            D::Error::custom(format!(
                "expected milliseconds (a non-negative number), got {}",
                shown(&v)
            ))
        })
}

fn status<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u16>, D::Error> {
    let v = Value::deserialize(d)?;
    if v.is_null() {
        return Ok(None);
    }
    v.as_u64()
        .filter(|c| (100..=599).contains(c))
        .map(|c| Some(c as u16))
        .ok_or_else(|| {
            D::Error::custom(format!(
                "expected an HTTP status code (100..=599) or null, got {}",
                shown(&v)
            ))
        })
}

/// A field that may be absent (not recorded: `None`), null (recorded as absent: `Some(None)`)
/// or a string.
fn recorded<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// Reads `text`, the content of file `name`: one object per line (see the module docs).
///
/// # Errors
/// A line that is not a JSON object, has no known `type`, lacks a required field, has an
/// unknown field or a value of the wrong shape; two `executor` lines that disagree. The error
/// names the file, the line and the field path.
pub(crate) fn read(name: &str, text: &str, opts: &ImportOptions) -> Result<Recording, ImportError> {
    read_lines(name, text.lines().map(|l| Ok(l.to_string())), opts)
}

/// [`read`] over lines as they are read (a file is streamed, not loaded whole: see
/// [`super::LineReader`]).
///
/// # Errors
/// As [`read`], and the lines' own errors (a line too long, not UTF-8, unreadable).
pub(crate) fn read_lines(
    name: &str,
    lines: impl Iterator<Item = Result<String, ImportError>>,
    opts: &ImportOptions,
) -> Result<Recording, ImportError> {
    let mut reader = JsonLines {
        name,
        opts,
        rec: Recording::default(),
        timeout_line: 0,
        other_tools: (None, 0),
    };
    for (i, line) in lines.enumerate() {
        let line = line?;
        let n = i as u64 + 1;
        let line = line.strip_prefix('\u{feff}').unwrap_or(&line).trim();
        if line.is_empty() {
            continue;
        }
        reader.line(n, line)?;
    }
    Ok(reader.finish())
}

/// A file of JSON lines being read into a recording.
struct JsonLines<'a> {
    /// The file's name, for sources and errors.
    name: &'a str,
    opts: &'a ImportOptions,
    rec: Recording,
    /// The line that stated the executor's timeout (0 before one did).
    timeout_line: u64,
    /// The tool calls of other tools than `opts.tool` skipped: the first (line, tool), for the
    /// warning, and how many (a count, not a list: a recording of other tools' calls holds no
    /// more than its first in memory).
    other_tools: (Option<(u64, String)>, usize),
}

impl JsonLines<'_> {
    /// Reads line `n`, `line` (trimmed, not blank): a tool call (skipped when of another
    /// tool), a provider request or the executor's timeout.
    ///
    /// # Errors
    /// The line is not a JSON object with a known `type` and that type's fields
    /// ([`typed_object`], [`fields`]); the executor's timeout is not valid
    /// ([`JsonLines::executor`]); more records than an import reads. The error names the line.
    fn line(&mut self, n: u64, line: &str) -> Result<(), ImportError> {
        let name = self.name;
        // Numbers in the message as the line writes them (`1e30`, not `1e+30`).
        let err = |msg: String| ImportError::at(name, n, as_written(&msg, line));
        let (kind, body) = typed_object(line).map_err(err)?;
        let source = Source {
            file: name.to_string(),
            line: n,
        };
        match kind.as_str() {
            "tool_call" => {
                let l: ToolCallLine = fields(body).map_err(err)?;
                match l.tool {
                    Some(t) if t != self.opts.tool => {
                        let (first, count) = &mut self.other_tools;
                        first.get_or_insert((n, t));
                        *count += 1;
                    }
                    _ => {
                        self.rec.tool_calls.push(tool_call(l, self.opts, source));
                        let count = self.rec.tool_calls.len();
                        super::check_record_count(name, n, "tool call", count)?;
                    }
                }
            }
            "provider_request" => {
                let l: ProviderLine = fields(body).map_err(err)?;
                self.rec.provider_requests.push(provider_request(l, source));
                let count = self.rec.provider_requests.len();
                super::check_record_count(name, n, "provider request", count)?;
            }
            "executor" => {
                let l: ExecutorLine = fields(body).map_err(err)?;
                self.executor(&l, n).map_err(err)?;
            }
            other => {
                return Err(err(format!(
                    "type: expected {TYPES}, got {}",
                    shown(&Value::String(other.to_string()))
                )))
            }
        }
        Ok(())
    }

    /// The executor's timeout, stated on line `n`: the recording's, when no earlier line
    /// stated another.
    ///
    /// # Errors
    /// The message when the timeout is not 1 ms to a day, or differs from an earlier line's.
    fn executor(&mut self, l: &ExecutorLine, n: u64) -> Result<(), String> {
        if !(1..=86_400_000).contains(&l.timeout_ms) {
            return Err(format!(
                "timeout_ms: expected a whole number of milliseconds from 1 to 86400000 \
                 (one day), got {}",
                l.timeout_ms
            ));
        }
        let ns = l.timeout_ms.saturating_mul(1_000_000);
        match self.rec.executor_timeout_ns {
            Some(prev) if prev != ns => {
                return Err(format!(
                    "timeout_ms: {} differs from the {} ms on line {}: one \
                     recording has one executor timeout",
                    l.timeout_ms,
                    prev / 1_000_000,
                    self.timeout_line
                ))
            }
            Some(_) => {}
            None => {
                self.rec.executor_timeout_ns = Some(ns);
                self.timeout_line = n;
            }
        }
        Ok(())
    }

    /// The recording read, with a warning for the calls of other tools skipped; tool calls
    /// and provider requests in time order (ties in line order).
    fn finish(mut self) -> Recording {
        if let (Some((line, tool)), skipped) = &self.other_tools {
            self.rec.warn(Warning {
                source: Source {
                    file: self.name.to_string(),
                    line: *line,
                },
                message: format!(
                    "{} of tools other than `{}` (this one of `{tool}`) skipped",
                    super::fields::plural(*skipped, "tool call", "tool calls"),
                    self.opts.tool
                ),
            });
        }
        let mut rec = self.rec;
        rec.tool_calls
            .sort_by(|a, b| (a.at.at, &a.source).cmp(&(b.at.at, &b.source)));
        rec.provider_requests
            .sort_by(|a, b| (a.sent.at, &a.source).cmp(&(b.sent.at, &b.source)));
        rec
    }
}

/// A line's `type` and its other fields.
///
/// # Errors
/// The message when the line is not JSON, not an object, or has no `type` string.
fn typed_object(line: &str) -> Result<(String, Value), String> {
    let mut obj = match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(obj)) => obj,
        Ok(other) => return Err(format!("expected a JSON object, got {}", shown(&other))),
        Err(e) if crate::input::is_nesting_limit(&e) => {
            return Err(format!("not JSON: {}", bare_message(&e)))
        }
        Err(e) => {
            return Err(format!(
                "not JSON: {} (column {})",
                bare_message(&e),
                e.column()
            ))
        }
    };
    match obj.remove("type") {
        Some(Value::String(t)) => Ok((t, Value::Object(obj))),
        Some(other) => Err(format!("type: expected {TYPES}, got {}", shown(&other))),
        None => Err(format!("missing field `type`: expected {TYPES}")),
    }
}

/// Deserializes a line's fields (without `type`), naming the field path of a problem.
fn fields<T: for<'de> Deserialize<'de>>(body: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(body).map_err(|e| {
        let path = e.path().to_string();
        let message = bare_message(e.inner());
        if path == "." {
            message
        } else {
            format!("{path}: {message}")
        }
    })
}

fn tool_call(l: ToolCallLine, opts: &ImportOptions, source: Source) -> ToolCallRec {
    ToolCallRec {
        ticket: l.ticket,
        tool: l.tool.unwrap_or_else(|| opts.tool.clone()),
        call_id: l.call_id,
        at: l.at,
        amount_cents: l.amount_cents,
        amount_missing: l
            .amount_cents
            .is_none()
            .then(|| "tool_call: the line has no `amount_cents`".to_string()),
        result: l.result.map(|r| ToolResultRec {
            at: r.at,
            ok: r.ok,
            timed_out: r.timed_out,
            refund_id: r.refund_id,
        }),
        decision_at: l.decision_at,
        service_response: l.service_response.map(|s| ServiceResponseRec {
            at: s.at,
            ok: s.ok,
            refund_id: s.refund_id,
        }),
        source,
    }
}

fn provider_request(l: ProviderLine, source: Source) -> ProviderRequestRec {
    ProviderRequestRec {
        ticket: l.ticket,
        attempt: l.attempt,
        try_no: l.try_no,
        service_received: l.service_received,
        sent: l.sent,
        latency_ns: l.latency_ms,
        status: l.status,
        idempotency_key: l.idempotency_key,
        refund_id: l.refund_id,
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2024-05-14T16:41:09.210Z, ns.
    const T0: i64 = 1_715_704_869_210_000_000;

    fn read_str(text: &str) -> Result<Recording, ImportError> {
        read("r.jsonl", text, &ImportOptions::default())
    }

    fn err(text: &str) -> String {
        read_str(text).unwrap_err().to_string()
    }

    #[test]
    fn reads_every_field() {
        let text = r#"
{"type":"executor","timeout_ms":8000}
{"type":"provider_request","ticket":"48213","attempt":1,"try":0,"service_received":"2024-05-14T16:41:17.248Z","sent":1715704878061000000,"latency_ms":428.5,"status":200,"idempotency_key":"k1","refund_id":"re_2"}
{"type":"tool_call","ticket":48213,"tool":"issue_refund","call_id":"toolu_01A","at":"2024-05-14T18:41:09.210+02:00","amount_cents":4200,"result":{"at":"2024-05-14T16:41:17.211Z","ok":false,"timed_out":true},"decision_at":"2024-05-14T16:41:17.240Z","service_response":{"at":"2024-05-14T16:41:19.950Z","ok":true,"refund_id":"re_1"}}
{"type":"provider_request","ticket":48213,"sent":"2024-05-14T16:41:19.472Z","idempotency_key":null}
{"type":"provider_request","ticket":48213,"sent":"2024-05-14T16:41:19.472Z","status":null}
"#;
        let rec = read_str(text).unwrap();
        let ms = |n: i64| Instant::exact(T0 + n * 1_000_000);
        let src = |line| Source {
            file: "r.jsonl".into(),
            line,
        };
        assert_eq!(rec.executor_timeout_ns, Some(8_000_000_000));
        assert_eq!(
            rec.tool_calls,
            vec![ToolCallRec {
                ticket: 48213.into(),
                tool: "issue_refund".into(),
                call_id: Some("toolu_01A".into()),
                at: ms(0),
                amount_cents: Some(4200),
                amount_missing: None,
                result: Some(ToolResultRec {
                    at: ms(8001),
                    ok: false,
                    timed_out: true,
                    refund_id: None,
                }),
                decision_at: Some(ms(8030)),
                service_response: Some(ServiceResponseRec {
                    at: ms(10_740),
                    ok: true,
                    refund_id: Some("re_1".into()),
                }),
                source: src(4),
            }]
        );
        assert_eq!(
            rec.provider_requests[0],
            ProviderRequestRec {
                ticket: 48213.into(),
                attempt: Some(1),
                try_no: Some(0),
                service_received: Some(ms(8038)),
                sent: ms(8851),
                latency_ns: Some(428_500_000),
                status: Some(200),
                idempotency_key: Some(Some("k1".into())),
                refund_id: Some("re_2".into()),
                source: src(3),
            }
        );
        // absent: not recorded; null: recorded as absent
        let keys: Vec<_> = rec.provider_requests[1..]
            .iter()
            .map(|r| (r.source.line, r.idempotency_key.clone(), r.status))
            .collect();
        assert_eq!(keys, [(5, Some(None), None), (6, None, None)]);
    }

    #[test]
    fn other_tools_are_skipped_with_one_warning() {
        let text = "{\"type\":\"tool_call\",\"ticket\":1,\"tool\":\"lookup\",\"at\":0}\n\
                    {\"type\":\"tool_call\",\"ticket\":1,\"tool\":\"lookup\",\"at\":0}\n";
        let rec = read_str(text).unwrap();
        assert!(rec.tool_calls.is_empty());
        assert_eq!(rec.warnings.len(), 1);
        assert_eq!(rec.warnings[0].source.line, 1);
        assert!(rec.warnings[0]
            .message
            .starts_with("2 tool calls of tools other than"));
    }

    #[test]
    fn bad_lines_name_line_and_field() {
        let ok = "{\"type\":\"executor\",\"timeout_ms\":8000}\n";
        assert_eq!(
            err(&format!("{ok}{{\"type\":\"tool_call\",\"ticket\":1,\"at\":\"abc\"}}")),
            "r.jsonl:2: at: expected an RFC 3339 time like \"2024-05-14T16:41:09.210Z\" (or \
             \"2024-05-14 16:41:09\", UTC) or integer nanoseconds since the Unix epoch, got \"abc\""
        );
        assert_eq!(
            err(
                r#"{"type":"tool_call","ticket":1,"at":0,"result":{"at":0,"ok":true,"refund":"re_1"}}"#
            ),
            "r.jsonl:1: result.refund: unknown field `refund`, expected one of `at`, `ok`, \
             `timed_out`, `refund_id`"
        );
        assert_eq!(
            err(r#"{"type":"provider_request","ticket":1}"#),
            "r.jsonl:1: missing field `sent`"
        );
        assert_eq!(
            err(r#"{"type":"provider_request","ticket":-1,"sent":0}"#),
            "r.jsonl:1: ticket: expected a ticket id (a non-negative integer, or a string like \
             \"T-100000\" of at most 200 characters), got -1"
        );
        assert_eq!(
            err(r#"{"type":"provider_request","ticket":1,"sent":0,"status":700}"#),
            "r.jsonl:1: status: expected an HTTP status code (100..=599) or null, got 700"
        );
        assert_eq!(
            err(r#"{"type":"provider_request","ticket":1,"sent":0,"latency_ms":"fast"}"#),
            "r.jsonl:1: latency_ms: expected milliseconds (a non-negative number), got \"fast\""
        );
        assert_eq!(
            err(r#"{"type":"refund","id":"re_1"}"#),
            "r.jsonl:1: type: expected \"tool_call\", \"provider_request\" or \"executor\", got \
             \"refund\""
        );
        assert_eq!(
            err(r#"{"ticket":1}"#),
            "r.jsonl:1: missing field `type`: expected \"tool_call\", \"provider_request\" or \
             \"executor\""
        );
        assert_eq!(err("[1]"), "r.jsonl:1: expected a JSON object, got [1]");
        assert_eq!(
            err("\n\n{\"type\": }"),
            "r.jsonl:3: not JSON: expected value (column 10)"
        );
        assert_eq!(
            err(&format!(
                "{ok}{{\"type\":\"executor\",\"timeout_ms\":15000}}"
            )),
            "r.jsonl:2: timeout_ms: 15000 differs from the 8000 ms on line 1: one recording has \
             one executor timeout"
        );
    }
}
