//! The OTLP/JSON wire format of traces: `ExportTraceServiceRequest` documents (one, several
//! back to back, one per line as the Collector's file exporter writes, or a JSON array of them)
//! → a flat list of [`Span`]s, each with the file and line it starts on and its field path.
//!
//! The encoding is protobuf's JSON mapping with OTLP's amendments (OTLP specification, "JSON
//! Protobuf Encoding"): lowerCamelCase keys; `traceId`/`spanId` as hex strings (compared as
//! given here, so base64 ids from a non-conforming exporter link too); 64-bit integers
//! (`startTimeUnixNano`, `intValue`) as decimal strings, numbers accepted too; enums (`kind`,
//! `status.code`) as integers, their names (`SPAN_KIND_SERVER`) accepted too. Unknown keys are
//! ignored, as the specification asks of receivers.

use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::import::fields::{as_written, bare_message, shown, Lines};
use crate::import::{ImportError, Source, UnixNs};

/// `kind` of a span that handles a request (OTLP `SPAN_KIND_SERVER`).
pub(super) const KIND_SERVER: i64 = 2;
/// `kind` of a span that sends a request (OTLP `SPAN_KIND_CLIENT`).
pub(super) const KIND_CLIENT: i64 = 3;

/// One span, as read.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Span {
    /// `traceId`, as written.
    pub trace_id: String,
    /// `spanId`, as written.
    pub span_id: String,
    /// `parentSpanId`; empty for a root span.
    pub parent_span_id: String,
    /// `name`.
    pub name: String,
    /// `kind`: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer.
    pub kind: i64,
    /// `startTimeUnixNano`.
    pub start: UnixNs,
    /// `endTimeUnixNano` (not before `start`).
    pub end: UnixNs,
    /// Whether `status.code` is ERROR (2).
    pub error: bool,
    /// `status.message` (empty when absent).
    pub status_message: String,
    /// `attributes`, in order.
    pub attrs: Vec<(String, AnyValue)>,
    /// Where the span's object starts.
    pub source: Source,
    /// The span's field path in its document: `resourceSpans[0].scopeSpans[1].spans[4]`.
    pub path: String,
}

/// An attribute value (OTLP `AnyValue`).
#[derive(Clone, Debug, PartialEq)]
pub(super) enum AnyValue {
    /// `stringValue`.
    Str(String),
    /// `intValue`.
    Int(i64),
    /// `doubleValue`.
    Double(f64),
    /// `boolValue`.
    Bool(bool),
    /// `arrayValue.values`.
    Array(Vec<AnyValue>),
    /// `kvlistValue.values`.
    KvList(Vec<(String, AnyValue)>),
    /// `bytesValue`, or an empty value.
    Other,
}

impl AnyValue {
    /// What kind of value this is, for errors: `a stringValue`, `an intValue`, … (a
    /// `bytesValue` or an empty value is not read, so shown by its kind rather than as `null`).
    pub(super) fn kind(&self) -> &'static str {
        match self {
            AnyValue::Str(_) => "a stringValue",
            AnyValue::Int(_) => "an intValue",
            AnyValue::Double(_) => "a doubleValue",
            AnyValue::Bool(_) => "a boolValue",
            AnyValue::Array(_) => "an arrayValue",
            AnyValue::KvList(_) => "a kvlistValue",
            AnyValue::Other => "a bytesValue or an empty value",
        }
    }

    /// The value as plain JSON (a key-value list as an object), for structured tool arguments.
    pub(super) fn to_json(&self) -> Value {
        match self {
            AnyValue::Str(s) => Value::String(s.clone()),
            AnyValue::Int(i) => Value::from(*i),
            AnyValue::Double(d) => Value::from(*d),
            AnyValue::Bool(b) => Value::Bool(*b),
            AnyValue::Array(a) => Value::Array(a.iter().map(AnyValue::to_json).collect()),
            AnyValue::KvList(kv) => {
                Value::Object(kv.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
            AnyValue::Other => Value::Null,
        }
    }
}

impl TryFrom<Value> for AnyValue {
    type Error = String;

    fn try_from(v: Value) -> Result<Self, String> {
        const EXPECTED: &str = "expected an AnyValue object like {\"stringValue\": \"…\"} or \
                                {\"intValue\": \"42\"}";
        let Value::Object(mut map) = v else {
            return Err(format!("{EXPECTED}, got {}", shown(&v)));
        };
        if let Some(s) = map.remove("stringValue") {
            return match s {
                Value::String(s) => Ok(AnyValue::Str(s)),
                other => Err(format!(
                    "stringValue: expected a string, got {}",
                    shown(&other)
                )),
            };
        }
        if let Some(i) = map.remove("intValue") {
            return int64(&i).map(AnyValue::Int).ok_or_else(|| {
                format!(
                    "intValue: expected a 64-bit integer as a decimal string, got {}",
                    shown(&i)
                )
            });
        }
        if let Some(d) = map.remove("doubleValue") {
            let parsed = match &d {
                Value::Number(n) => n.as_f64(),
                Value::String(s) => s.parse().ok(),
                _ => None,
            };
            return parsed
                .map(AnyValue::Double)
                .ok_or_else(|| format!("doubleValue: expected a number, got {}", shown(&d)));
        }
        if let Some(b) = map.remove("boolValue") {
            return match b {
                Value::Bool(b) => Ok(AnyValue::Bool(b)),
                other => Err(format!(
                    "boolValue: expected true or false, got {}",
                    shown(&other)
                )),
            };
        }
        if let Some(a) = map.remove("arrayValue") {
            return values(a, "arrayValue")
                .map(|vs| AnyValue::Array(vs.into_iter().map(|(_, v)| v).collect()));
        }
        if let Some(kv) = map.remove("kvlistValue") {
            return values(kv, "kvlistValue").map(AnyValue::KvList);
        }
        Ok(AnyValue::Other)
    }
}

/// The `values` of an `arrayValue` (plain values, keys empty) or a `kvlistValue` (`{key,
/// value}` objects).
fn values(v: Value, what: &str) -> Result<Vec<(String, AnyValue)>, String> {
    let list = match v {
        Value::Object(mut m) => m.remove("values").unwrap_or(Value::Array(Vec::new())),
        other => {
            return Err(format!(
                "{what}: expected {{\"values\": […]}}, got {}",
                shown(&other)
            ))
        }
    };
    let Value::Array(items) = list else {
        return Err(format!(
            "{what}.values: expected an array, got {}",
            shown(&list)
        ));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            if what == "kvlistValue" {
                let mut m = match item {
                    Value::Object(m) => m,
                    other => {
                        return Err(format!(
                            "{what}.values[{i}]: expected {{\"key\": …, \"value\": …}}, got {}",
                            shown(&other)
                        ))
                    }
                };
                let key = match m.remove("key") {
                    Some(Value::String(k)) => k,
                    _ => return Err(format!("{what}.values[{i}].key: expected a string")),
                };
                let value = m
                    .remove("value")
                    .unwrap_or(Value::Object(Default::default()));
                AnyValue::try_from(value)
                    .map(|v| (key, v))
                    .map_err(|e| format!("{what}.values[{i}].value: {e}"))
            } else {
                AnyValue::try_from(item)
                    .map(|v| (String::new(), v))
                    .map_err(|e| format!("{what}.values[{i}]: {e}"))
            }
        })
        .collect()
}

/// A 64-bit integer written as a decimal string (OTLP/JSON) or a JSON integer.
fn int64(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => s.trim().parse().ok(),
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

#[derive(Deserialize)]
#[serde(
    rename_all = "camelCase",
    expecting = "an ExportTraceServiceRequest object ({\"resourceSpans\": […]})"
)]
struct Request<'a> {
    /// Required: a JSON document without it is not an OTLP export (a Stripe list, another
    /// format given under `--format otlp`), and is refused rather than read as no spans.
    #[serde(borrow)]
    resource_spans: Vec<ResourceSpans<'a>>,
}

#[derive(Deserialize)]
#[serde(
    rename_all = "camelCase",
    expecting = "a ResourceSpans object ({\"resource\": …, \"scopeSpans\": […]})"
)]
struct ResourceSpans<'a> {
    #[serde(default, borrow)]
    scope_spans: Vec<ScopeSpans<'a>>,
}

#[derive(Deserialize)]
#[serde(
    rename_all = "camelCase",
    expecting = "a ScopeSpans object ({\"scope\": …, \"spans\": […]})"
)]
struct ScopeSpans<'a> {
    #[serde(default, borrow)]
    spans: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", expecting = "a span object")]
struct SpanWire {
    #[serde(deserialize_with = "id")]
    trace_id: String,
    #[serde(deserialize_with = "id")]
    span_id: String,
    #[serde(default)]
    parent_span_id: String,
    #[serde(default)]
    name: String,
    #[serde(default, deserialize_with = "kind")]
    kind: i64,
    #[serde(deserialize_with = "nanos")]
    start_time_unix_nano: UnixNs,
    #[serde(deserialize_with = "nanos")]
    end_time_unix_nano: UnixNs,
    #[serde(default)]
    attributes: Vec<KeyValue>,
    #[serde(default)]
    status: Status,
}

#[derive(Deserialize)]
#[serde(expecting = "an attribute object ({\"key\": …, \"value\": {…}})")]
struct KeyValue {
    key: String,
    #[serde(default = "empty_value")]
    value: AnyValueWire,
}

fn empty_value() -> AnyValueWire {
    AnyValueWire(AnyValue::Other)
}

#[derive(Deserialize)]
#[serde(try_from = "Value")]
struct AnyValueWire(AnyValue);

impl TryFrom<Value> for AnyValueWire {
    type Error = String;
    fn try_from(v: Value) -> Result<Self, String> {
        AnyValue::try_from(v).map(AnyValueWire)
    }
}

#[derive(Default, Deserialize)]
#[serde(expecting = "a status object ({\"code\": 2, \"message\": …})")]
struct Status {
    #[serde(default, deserialize_with = "status_code")]
    code: i64,
    #[serde(default, deserialize_with = "message")]
    message: String,
}

/// `status.message`: a string; null or absent is empty; other types are ignored (the message is
/// only read to recognise a timeout).
fn message<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        _ => String::new(),
    })
}

fn id<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) if !s.is_empty() => Ok(s),
        other => Err(D::Error::custom(format!(
            "expected a hex id string, got {}",
            shown(&other)
        ))),
    }
}

fn nanos<'de, D: Deserializer<'de>>(d: D) -> Result<UnixNs, D::Error> {
    let v = Value::deserialize(d)?;
    let parsed = match &v {
        Value::String(s) if s.bytes().all(|b| b.is_ascii_digit()) => s.parse::<UnixNs>().ok(),
        Value::Number(n) => n.as_i64().filter(|&n| n >= 0),
        _ => None,
    };
    parsed.ok_or_else(|| {
        D::Error::custom(format!(
            "expected a decimal string of nanoseconds since the Unix epoch, got {}",
            shown(&v)
        ))
    })
}

/// An enum as its number or its name (`SPAN_KIND_SERVER`, or `SERVER`), against `names` (the
/// names in number order, without their prefix).
fn enum_value(v: &Value, prefix: &str, names: &[&str]) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().filter(|&n| (0..names.len() as i64).contains(&n)),
        Value::String(s) => {
            let s = s.to_ascii_uppercase();
            let bare = s.strip_prefix(prefix).unwrap_or(&s);
            names.iter().position(|n| *n == bare).map(|i| i as i64)
        }
        _ => None,
    }
}

fn kind<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    const NAMES: [&str; 6] = [
        "UNSPECIFIED",
        "INTERNAL",
        "SERVER",
        "CLIENT",
        "PRODUCER",
        "CONSUMER",
    ];
    let v = Value::deserialize(d)?;
    enum_value(&v, "SPAN_KIND_", &NAMES).ok_or_else(|| {
        D::Error::custom(format!(
            "expected a span kind 0..=5 (2 = SERVER, 3 = CLIENT) or its name, got {}",
            shown(&v)
        ))
    })
}

fn status_code<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let v = Value::deserialize(d)?;
    enum_value(&v, "STATUS_CODE_", &["UNSET", "OK", "ERROR"]).ok_or_else(|| {
        D::Error::custom(format!(
            "expected a status code 0, 1 or 2 (ERROR) or its name, got {}",
            shown(&v)
        ))
    })
}

/// Reads every span of `text`, the content of file `name`.
///
/// # Errors
/// Not JSON; a document that is not an `ExportTraceServiceRequest` (or an array of them); a
/// span without `traceId`, `spanId`, `startTimeUnixNano` or `endTimeUnixNano`, or with a value
/// of the wrong shape, or ending before it starts. The error names the line the problem is on
/// and its field path.
pub(super) fn spans(name: &str, text: &str) -> Result<Vec<Span>, ImportError> {
    let lines = Lines::new(text);
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    for doc in serde_json::Deserializer::from_str(body).into_iter::<&RawValue>() {
        let doc = doc.map_err(|e| {
            ImportError::at(
                name,
                e.line() as u64,
                format!("not JSON: {}", bare_message(&e)),
            )
        })?;
        let at = |raw: &RawValue| lines.line_of(offset(text, raw.get()));
        if doc.get().starts_with('[') {
            let docs: Vec<&RawValue> = parse(name, at(doc), doc.get(), "")?;
            for (i, d) in docs.into_iter().enumerate() {
                document(name, &lines, text, d, &format!("[{i}]"), &mut out)?;
            }
        } else {
            document(name, &lines, text, doc, "", &mut out)?;
        }
    }
    Ok(out)
}

/// The byte offset of `part` (a slice of `text`) in `text`.
fn offset(text: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(text.as_ptr() as usize)
}

/// Reads the spans of one `ExportTraceServiceRequest` document (at `prefix`, `[i]` inside an
/// array, else empty) into `out`.
fn document<'a>(
    name: &str,
    lines: &Lines,
    text: &'a str,
    doc: &'a RawValue,
    prefix: &str,
    out: &mut Vec<Span>,
) -> Result<(), ImportError> {
    let doc_line = lines.line_of(offset(text, doc.get()));
    let req: Request<'a> = parse(name, doc_line, doc.get(), prefix).map_err(|e| {
        let object = doc.get().trim_start().starts_with('{');
        if !object || doc.get().contains("\"resourceSpans\"") {
            e
        } else {
            ImportError::at(
                name,
                doc_line,
                "expected an OTLP/JSON export ({\"resourceSpans\": […]}); under --format otlp \
                 every file is read as OTLP (leave --format out to detect each file's format)",
            )
        }
    })?;
    let dot = if prefix.is_empty() { "" } else { "." };
    for (r, rs) in req.resource_spans.into_iter().enumerate() {
        for (s, ss) in rs.scope_spans.into_iter().enumerate() {
            for (k, raw) in ss.spans.into_iter().enumerate() {
                let path = format!("{prefix}{dot}resourceSpans[{r}].scopeSpans[{s}].spans[{k}]");
                let line = lines.line_of(offset(text, raw.get()));
                let mut w: SpanWire = parse(name, line, raw.get(), &path)?;
                if w.end_time_unix_nano < w.start_time_unix_nano {
                    return Err(ImportError::at(
                        name,
                        line,
                        format!(
                            "{path}.endTimeUnixNano: {} is before startTimeUnixNano {}",
                            w.end_time_unix_nano, w.start_time_unix_nano
                        ),
                    ));
                }
                out.push(Span {
                    trace_id: w.trace_id,
                    span_id: w.span_id,
                    parent_span_id: w.parent_span_id,
                    name: w.name,
                    kind: w.kind,
                    start: w.start_time_unix_nano,
                    end: w.end_time_unix_nano,
                    error: w.status.code == 2,
                    status_message: std::mem::take(&mut w.status.message),
                    attrs: w
                        .attributes
                        .into_iter()
                        .map(|a| (a.key, a.value.0))
                        .collect(),
                    source: Source {
                        file: name.to_string(),
                        line,
                    },
                    path,
                });
            }
        }
    }
    Ok(())
}

/// Deserializes `raw` (which starts on line `line` of file `name`, at field path `prefix`),
/// naming the line and the field path of a problem.
fn parse<'a, T: Deserialize<'a>>(
    name: &str,
    line: u64,
    raw: &'a str,
    prefix: &str,
) -> Result<T, ImportError> {
    let mut de = serde_json::Deserializer::from_str(raw);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let inner = e.inner();
        let at = line + (inner.line() as u64).saturating_sub(1);
        let rel = e.path().to_string();
        let path = match (prefix.is_empty(), rel.as_str()) {
            (_, ".") => prefix.to_string(),
            (true, rel) => rel.to_string(),
            (false, rel) if rel.starts_with('[') => format!("{prefix}{rel}"),
            (false, rel) => format!("{prefix}.{rel}"),
        };
        let message = as_written(&bare_message(inner), raw);
        if path.is_empty() {
            ImportError::at(name, at, message)
        } else {
            ImportError::at(name, at, format!("{path}: {message}"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span_json(extra: &str) -> String {
        format!(
            r#"{{"traceId":"aa","spanId":"01","startTimeUnixNano":"5","endTimeUnixNano":"7"{extra}}}"#
        )
    }

    fn doc(spans: &[String]) -> String {
        format!(
            r#"{{"resourceSpans":[{{"resource":{{}},"scopeSpans":[{{"scope":{{"name":"x"}},"spans":[{}]}}]}}]}}"#,
            spans.join(",")
        )
    }

    fn err(text: &str) -> String {
        spans("t.json", text).unwrap_err().to_string()
    }

    #[test]
    fn reads_a_span_with_every_value_kind() {
        let s = span_json(
            r#","parentSpanId":"00","name":"n","kind":"SPAN_KIND_CLIENT","status":{"code":"STATUS_CODE_ERROR"},
            "attributes":[{"key":"s","value":{"stringValue":"v"}},{"key":"i","value":{"intValue":"42"}},
            {"key":"i2","value":{"intValue":43}},{"key":"d","value":{"doubleValue":1.5}},
            {"key":"b","value":{"boolValue":true}},{"key":"a","value":{"arrayValue":{"values":[{"stringValue":"k"}]}}},
            {"key":"kv","value":{"kvlistValue":{"values":[{"key":"ticket","value":{"intValue":"7"}}]}}},
            {"key":"e","value":{}}]"#,
        );
        let got = spans("t.json", &doc(&[s])).unwrap();
        assert_eq!(got.len(), 1);
        let sp = &got[0];
        assert_eq!(
            (sp.kind, sp.error, sp.start, sp.end),
            (KIND_CLIENT, true, 5, 7)
        );
        assert_eq!(sp.path, "resourceSpans[0].scopeSpans[0].spans[0]");
        assert_eq!(sp.source.line, 1);
        let vals: Vec<AnyValue> = sp.attrs.iter().map(|(_, v)| v.clone()).collect();
        assert_eq!(
            vals,
            vec![
                AnyValue::Str("v".into()),
                AnyValue::Int(42),
                AnyValue::Int(43),
                AnyValue::Double(1.5),
                AnyValue::Bool(true),
                AnyValue::Array(vec![AnyValue::Str("k".into())]),
                AnyValue::KvList(vec![("ticket".into(), AnyValue::Int(7))]),
                AnyValue::Other,
            ]
        );
        assert_eq!(vals[6].to_json(), serde_json::json!({"ticket": 7}));
    }

    #[test]
    fn json_lines_arrays_and_pretty_documents_give_each_span_its_line() {
        let one = doc(&[span_json("")]);
        let lines = format!("{one}\n\n{one}\n");
        let got = spans("t.json", &lines).unwrap();
        assert_eq!(
            got.iter().map(|s| s.source.line).collect::<Vec<_>>(),
            [1, 3]
        );
        let arr = format!("[{one},\n{one}]");
        let got = spans("t.json", &arr).unwrap();
        assert_eq!(got[1].path, "[1].resourceSpans[0].scopeSpans[0].spans[0]");
        assert_eq!(got[1].source.line, 2);
        let pretty = serde_json::to_string_pretty(
            &serde_json::from_str::<Value>(&doc(&[span_json(""), span_json("")])).unwrap(),
        )
        .unwrap();
        let got = spans("t.json", &pretty).unwrap();
        let starts: Vec<u64> = got.iter().map(|s| s.source.line).collect();
        assert_eq!(starts.len(), 2);
        assert!(starts[0] > 1 && starts[1] > starts[0], "{starts:?}");
        let text: Vec<&str> = pretty.lines().collect();
        for l in starts {
            // the span's `{`, its first key (serde_json sorts them) on the next line
            assert_eq!(text[l as usize - 1].trim(), "{");
            assert!(text[l as usize].contains("endTimeUnixNano"));
        }
    }

    #[test]
    fn bad_times_name_line_and_path() {
        let bad =
            span_json("").replace(r#""startTimeUnixNano":"5""#, r#""startTimeUnixNano":"abc""#);
        let text = format!("{}\n{}", doc(&[span_json("")]), doc(&[span_json(""), bad]));
        assert_eq!(
            err(&text),
            "t.json:2: resourceSpans[0].scopeSpans[0].spans[1].startTimeUnixNano: expected a \
             decimal string of nanoseconds since the Unix epoch, got \"abc\""
        );
        let backwards = span_json("").replace(r#""endTimeUnixNano":"7""#, r#""endTimeUnixNano":4"#);
        assert_eq!(
            err(&doc(&[backwards])),
            "t.json:1: resourceSpans[0].scopeSpans[0].spans[0].endTimeUnixNano: 4 is before \
             startTimeUnixNano 5"
        );
    }

    #[test]
    fn missing_and_malformed_fields_name_their_path() {
        let no_end = r#"{"traceId":"aa","spanId":"01","startTimeUnixNano":"5"}"#.to_string();
        assert_eq!(
            err(&doc(&[no_end])),
            "t.json:1: resourceSpans[0].scopeSpans[0].spans[0]: missing field `endTimeUnixNano`"
        );
        let bad_int = span_json(r#","attributes":[{"key":"k","value":{"intValue":"4x"}}]"#);
        assert_eq!(
            err(&doc(&[bad_int])),
            "t.json:1: resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value: intValue: \
             expected a 64-bit integer as a decimal string, got \"4x\""
        );
        let bad_kind = span_json(r#","kind":9"#);
        assert!(err(&doc(&[bad_kind])).starts_with(
            "t.json:1: resourceSpans[0].scopeSpans[0].spans[0].kind: expected a span kind"
        ));
        let no_id = r#"{"traceId":"","spanId":"01","startTimeUnixNano":"5","endTimeUnixNano":"7"}"#;
        assert_eq!(
            err(&doc(&[no_id.to_string()])),
            "t.json:1: resourceSpans[0].scopeSpans[0].spans[0].traceId: expected a hex id \
             string, got \"\""
        );
    }

    #[test]
    fn documents_that_are_not_requests_are_refused_with_their_line() {
        assert_eq!(
            err("{\"resourceSpans\":[]}\n{\"resourceSpans\": 3}"),
            "t.json:2: resourceSpans: invalid type: integer `3`, expected a sequence"
        );
        assert_eq!(
            err("\"x\""),
            "t.json:1: invalid type: string \"x\", expected an ExportTraceServiceRequest object \
             ({\"resourceSpans\": […]})"
        );
        assert_eq!(
            err("{\"resourceSpans\":[]}\n{\"resourceSpans\": [}"),
            "t.json:2: not JSON: expected value"
        );
        // An object of another format (a Stripe list under --format otlp) is refused, not read
        // as a trace without spans.
        assert_eq!(
            err("{\"object\": \"list\", \"data\": []}"),
            "t.json:1: expected an OTLP/JSON export ({\"resourceSpans\": […]}); under --format \
             otlp every file is read as OTLP (leave --format out to detect each file's format)"
        );
    }
}
