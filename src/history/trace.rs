//! The JSONL trace: one event per line, with the virtual time in ns (`t_ns`) and formatted as a
//! wall-clock `HH:MM:SS.mmm` from the scenario's `clock_origin` (`t`), with a `+Nd ` day marker
//! past the origin's first midnight.

use std::io::{BufRead, Write};
use std::time::SystemTime;

use serde::Serialize;

use super::Event;

pub(crate) use crate::sim::clock_time;

#[derive(Serialize)]
struct Line<'a> {
    t: String,
    #[serde(flatten)]
    event: &'a Event,
}

/// Writes `events` as JSONL to `out`. Errors are I/O errors of `out`.
pub fn write_trace<W: Write>(
    mut out: W,
    events: &[Event],
    origin: Option<SystemTime>,
) -> std::io::Result<()> {
    for e in events {
        write_event(&mut out, e, origin)?;
    }
    out.flush()
}

/// Writes one event as one JSONL line (no flush).
pub fn write_event<W: Write>(
    out: &mut W,
    e: &Event,
    origin: Option<SystemTime>,
) -> std::io::Result<()> {
    let line = Line {
        t: clock_time(origin, e.t_ns),
        event: e,
    };
    serde_json::to_writer(&mut *out, &line)?;
    out.write_all(b"\n")
}

/// Why a trace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// I/O failure.
    #[error("{origin}: {source}")]
    Io {
        /// The file.
        origin: String,
        /// The error.
        source: std::io::Error,
    },
    /// A line is not a valid event.
    #[error("{origin}:{line}:{column}: not a trace event: {message}")]
    Parse {
        /// The file.
        origin: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What serde said.
        message: String,
    },
}

/// Reads a JSONL trace written by [`write_trace`]; `origin` names the input in errors.
/// Blank lines are skipped; the formatted `t` field is ignored (`t_ns` is authoritative).
pub fn read_trace<R: BufRead>(input: R, origin: &str) -> Result<Vec<Event>, TraceError> {
    let mut events = Vec::new();
    for (i, line) in input.lines().enumerate() {
        let line = line.map_err(|source| TraceError::Io {
            origin: origin.into(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let e: Event = serde_json::from_str(&line).map_err(|e| TraceError::Parse {
            origin: origin.into(),
            line: i + 1,
            column: e.column(),
            message: e.to_string(),
        })?;
        events.push(e);
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{EventKind, Outcome};
    use crate::sim::SimTime;

    #[test]
    fn clock_time_counts_from_origin() {
        let origin = humantime::parse_rfc3339("2024-05-14T16:41:00Z").unwrap();
        assert_eq!(
            clock_time(Some(origin), SimTime::from_millis(9_210)),
            "16:41:09.210"
        );
        assert_eq!(clock_time(None, SimTime::from_secs(3_661)), "01:01:01.000");
        let late = humantime::parse_rfc3339("9999-12-31T23:59:59Z").unwrap();
        assert_eq!(
            clock_time(Some(late), SimTime::from_secs(2)),
            "+1d 00:00:01.000",
            "past midnight, with a day marker"
        );
        assert_eq!(
            clock_time(None, SimTime::from_secs(86_399)),
            "23:59:59.000",
            "no marker on the first day"
        );
        assert_eq!(
            clock_time(None, SimTime::from_secs(30 * 86_400 + 1)),
            "+30d 00:00:01.000"
        );
        assert!(clock_time(None, SimTime::MAX).ends_with(".709"));
    }

    /// A provider outcome is read as a type: a known name becomes its variant, an unknown one is
    /// refused with the trace's line (the checker never sees free text).
    #[test]
    fn provider_outcomes_are_read_as_types() {
        let ok = r#"{"t_ns":4120630261,"ticket":47500,"attempt":0,"call":1,"kind":"stripe_response","status":200,"outcome":"replayed","refund_id":"re_1","latency_ns":5}"#;
        let events = read_trace(format!("\n{ok}\n").as_bytes(), "t.jsonl").unwrap();
        assert!(matches!(
            events[0].kind,
            EventKind::StripeResponse {
                outcome: crate::history::ProviderOutcome::Replayed,
                ..
            }
        ));
        let bad = ok.replace("replayed", "replayd");
        match read_trace(format!("{ok}\n{bad}\n").as_bytes(), "t.jsonl") {
            Err(TraceError::Parse { line, message, .. }) => {
                assert_eq!(line, 2);
                assert!(message.contains("unknown variant `replayd`"), "{message}");
            }
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn trace_round_trips() {
        let events = vec![
            Event {
                t_ns: SimTime::from_millis(5),
                ticket: Some(48213),
                attempt: Some(0),
                call: None,
                kind: EventKind::ToolCall {
                    tool: "issue_refund".into(),
                    amount_cents: 4200,
                },
            },
            Event {
                t_ns: SimTime::from_millis(8005),
                ticket: Some(48213),
                attempt: Some(0),
                call: Some(1),
                kind: EventKind::ToolResult {
                    outcome: Outcome::Fail,
                    shown: "error: timeout".into(),
                    refund_id: None,
                },
            },
        ];
        let mut buf = Vec::new();
        write_trace(&mut buf, &events, None).unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(
            text.starts_with(r#"{"t":"00:00:00.005","t_ns":5000000,"ticket":48213"#),
            "{text}"
        );
        assert_eq!(read_trace(&buf[..], "mem").unwrap(), events);
        let err = read_trace(&b"{\"t_ns\":1}\n{oops"[..], "x.jsonl")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("x.jsonl:1:"), "{err}");
    }
}
