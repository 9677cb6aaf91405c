//! Reader of tool-call logs in the incident log's style:
//!
//! ```text
//! 16:41:09.210  tool_call issue_refund(ticket=48213, amount=4200)
//! 16:41:17.211  tool_executor: timeout after 8000ms, injecting error result
//! 16:41:17.240  model: "The refund call timed out. Retrying once per policy."
//! 16:41:17.244  tool_call issue_refund(ticket=48213, amount=4200)
//! 16:41:18.501  tool_result: { status: "refunded", refund_id: "re_1P9x..." }
//! 16:41:19.9xx  [async, arrives after executor gave up] refunds-service response
//!               for the FIRST call: { status: "refunded", refund_id: "re_1P8w..." }
//! ```
//!
//! - An entry starts with a time of day `HH:MM:SS.mmm` (UTC, on the date of
//!   [`ImportOptions::date`]; a time more than 12 h before the previous one is on the next day);
//!   an indented line without a time continues the entry before it.
//! - Redacted digits (`x`) are accepted at the end of the time: `19.9xx` stands for
//!   19.900–19.999 s and is read as the middle, 19.9495 s, with a tolerance of ±49.5 ms, and a
//!   warning.
//! - Kinds: `tool_call NAME(k=v, …)` (the ticket and the amount, in cents, from the arguments
//!   named by [`ImportOptions::arguments`]; a ticket id may be any text, `T-7` or `48213`);
//!   `tool_executor: timeout after Nms` (the current call's result: a timeout);
//!   `model: "…"` (the model's decision after the current call's result); `tool_result: {…}`
//!   (the current call's result: ok when its `status` is `refunded` or it has a `refund_id`);
//!   `… refunds-service response for the FIRST call: {…}` (a late response, for the ticket's
//!   first, second, … call, or its latest timed-out call when no ordinal is given).
//! - A line without a ticket id belongs to the ticket of the tool call before it.
//! - Other lines are skipped with a warning; truncated refund ids (`re_1P9x...`) are kept as
//!   written and compared by count only.

use super::fields::quoted as shown;
use super::fields::{ticket_text, TICKET_TEXT};
use super::recording::{
    Instant, Recording, ServiceResponseRec, TicketRef, ToolCallRec, ToolResultRec, Warning,
};
use super::tool_args::listed_all;
use super::{ImportError, ImportOptions, Source};

const DAY_NS: i64 = 86_400 * 1_000_000_000;

/// Days from 1970-01-01 to `y-m-d` (proleptic Gregorian; Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Midnight UTC of `date` (`YYYY-MM-DD`), ns since the Unix epoch.
///
/// # Errors
/// `date` is not a valid `YYYY-MM-DD`.
pub(crate) fn midnight(date: &str) -> Result<i64, String> {
    let bad = || format!("expected a date YYYY-MM-DD, got {}", shown(date));
    let parts: Vec<&str> = date.split('-').collect();
    let [y, m, d] = parts[..] else {
        return Err(bad());
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return Err(bad());
    }
    let (y, m, d): (i64, i64, i64) = (
        y.parse().map_err(|_| bad())?,
        m.parse().map_err(|_| bad())?,
        d.parse().map_err(|_| bad())?,
    );
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days_in = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    // Nanoseconds since the epoch in an i64 reach 2262-04-11.
    if !(1970..=2261).contains(&y) {
        return Err(format!(
            "expected a date from 1970-01-01 to 2261-12-31 (nanoseconds since 1970 fit 64 bits), got {}",
            shown(date)
        ));
    }
    if !(1970..=2261).contains(&y)
        || !(1..=12).contains(&m)
        || d < 1
        || d > days_in[(m - 1) as usize]
    {
        return Err(bad());
    }
    Ok(days_from_civil(y, m, d) * DAY_NS)
}

/// A time of day `HH:MM:SS[.fff]` with trailing redacted digits as `x`: (ns since midnight of
/// the range's middle, half the range's width in ns), and the rest of the line.
fn time_of_day(line: &str) -> Option<((i64, u64), &str)> {
    let end = line
        .find(|c: char| !(c.is_ascii_digit() || c == ':' || c == '.' || c == 'x'))
        .unwrap_or(line.len());
    let (t, rest) = line.split_at(end);
    let (hms, frac) = t.split_once('.').unwrap_or((t, ""));
    let parts: Vec<&str> = hms.split(':').collect();
    let [h, m, s] = parts[..] else { return None };
    if h.len() != 2 || m.len() != 2 || s.len() != 2 {
        return None;
    }
    let (h, m, s): (i64, i64, i64) = (h.parse().ok()?, m.parse().ok()?, s.parse().ok()?);
    if h > 23 || m > 59 || s > 60 || frac.len() > 9 {
        return None;
    }
    // Digits, then only x's.
    let digits = frac.trim_end_matches('x');
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let redacted = frac.len() - digits.len();
    let unit = 10i64.pow(9 - frac.len() as u32);
    let low: i64 = if digits.is_empty() {
        0
    } else {
        digits.parse::<i64>().ok()? * 10i64.pow(redacted as u32) * unit
    };
    let width = 10i64.pow(redacted as u32) * unit - unit;
    let base = ((h * 60 + m) * 60 + s) * 1_000_000_000;
    let half = u64::try_from(width / 2).unwrap_or(0);
    Some(((base + low + width / 2, half), rest))
}

/// `k=v` pairs inside the first `(...)` of `s`.
fn arguments(s: &str) -> Option<Vec<(String, String)>> {
    let open = s.find('(')?;
    let close = s[open..].find(')')? + open;
    Some(
        s[open + 1..close]
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .filter_map(|p| {
                let (k, v) = p.split_once('=').or_else(|| p.split_once(':'))?;
                Some((
                    k.trim().to_string(),
                    v.trim().trim_matches('"').trim_matches('\'').to_string(),
                ))
            })
            .collect(),
    )
}

/// The quoted value of `field:` or `"field":` in a JS-like object.
fn quoted(s: &str, field: &str) -> Option<String> {
    let mut from = 0;
    while let Some(i) = s[from..].find(field) {
        let at = from + i + field.len();
        let rest = s[at..].trim_start_matches('"').trim_start();
        if let Some(rest) = rest.strip_prefix(':') {
            let rest = rest.trim_start();
            if let Some(v) = rest.strip_prefix('"') {
                return v.find('"').map(|e| v[..e].to_string());
            }
        }
        from = at;
    }
    None
}

const ORDINALS: [&str; 5] = ["FIRST", "SECOND", "THIRD", "FOURTH", "FIFTH"];

/// Reads `text`, the content of file `name`, on the date `opts.date` (1970-01-01 when absent).
///
/// # Errors
/// The date is invalid; a line that starts with a digit is not a valid time; a tool call lacks
/// a numeric ticket id or amount; a line that needs a tool call before it has none; times go
/// backwards by less than 12 h.
pub(crate) fn read(name: &str, text: &str, opts: &ImportOptions) -> Result<Recording, ImportError> {
    read_lines(name, text.lines().map(|l| Ok(l.to_string())), opts)
}

/// [`read`] over lines as they are read (a file is streamed, not loaded whole: see
/// [`super::LineReader`]); only the recorded facts are kept.
///
/// # Errors
/// As [`read`], and the lines' own errors (a line too long, not UTF-8, unreadable).
pub(crate) fn read_lines(
    name: &str,
    lines: impl Iterator<Item = Result<String, ImportError>>,
    opts: &ImportOptions,
) -> Result<Recording, ImportError> {
    let date = opts.date.as_deref().unwrap_or("1970-01-01");
    let day0 = midnight(date).map_err(|e| ImportError::at(name, 0, format!("--date: {e}")))?;
    let mut log = LogReader {
        name,
        opts,
        rec: Recording::default(),
        current: None,
    };
    let mut clock = Clock {
        day: day0,
        previous: None,
    };
    // The entry being read: complete when the next timed line starts.
    let mut pending: Option<Entry> = None;
    for (i, raw) in lines.enumerate() {
        let raw = raw?;
        let line_no = i as u64 + 1;
        let line = raw.trim_end();
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            let Some(e) = pending.as_mut() else {
                return Err(ImportError::at(
                    name,
                    line_no,
                    "an indented continuation line before any timed line: expected a line starting HH:MM:SS.mmm",
                ));
            };
            e.body.push(' ');
            e.body.push_str(line.trim());
            continue;
        }
        let Some(((tod, tolerance), rest)) = time_of_day(line) else {
            log.untimed(line_no, line)?;
            continue;
        };
        let at = clock
            .place(tod)
            .map_err(|m| ImportError::at(name, line_no, m))?;
        if tolerance > 0 {
            log.warn_redacted(line_no, tolerance);
        }
        let next = Entry {
            line_no,
            instant: Instant {
                at,
                tolerance_ns: tolerance,
            },
            body: rest.trim().to_string(),
        };
        if let Some(done) = pending.replace(next) {
            log.entry(&done)?;
        }
    }
    if let Some(done) = pending {
        log.entry(&done)?;
    }
    Ok(log.rec)
}

/// Where a log's times of day fall: on its current day, which moves on when a time is more
/// than 12 h before the previous one.
struct Clock {
    /// Midnight of the current day, ns since the epoch.
    day: i64,
    /// The previous line's instant.
    previous: Option<i64>,
}

impl Clock {
    /// The instant of time of day `tod` (ns since midnight), ns since the epoch.
    ///
    /// # Errors
    /// The message when the time goes back from the previous line's by 12 h or less.
    fn place(&mut self, tod: i64) -> Result<i64, String> {
        let mut at = self.day + tod;
        if let Some(p) = self.previous.filter(|&p| at < p) {
            if p - at > DAY_NS / 2 {
                self.day += DAY_NS;
                at += DAY_NS;
            } else {
                return Err(format!(
                    "time goes back {:.3} s from the line before: expected lines in time order",
                    (p - at) as f64 / 1e9
                ));
            }
        }
        self.previous = Some(at);
        Ok(at)
    }
}

/// One complete log entry: a timed line and its continuation lines.
struct Entry {
    /// The timed line's number (1-based).
    line_no: u64,
    /// Its time, and the tolerance its redacted digits give.
    instant: Instant,
    /// The text after the time, continuation lines joined with a space.
    body: String,
}

/// A log being read into a recording.
struct LogReader<'a> {
    /// The file's name, for sources and errors.
    name: &'a str,
    opts: &'a ImportOptions,
    rec: Recording,
    /// The index in `rec.tool_calls` of the latest tool call.
    current: Option<usize>,
}

impl LogReader<'_> {
    /// Where line `line_no` is.
    fn here(&self, line_no: u64) -> Source {
        Source {
            file: self.name.into(),
            line: line_no,
        }
    }

    /// The error `message` at entry `e`'s line.
    fn error(&self, e: &Entry, message: impl Into<String>) -> ImportError {
        ImportError::at(self.name, e.line_no, message)
    }

    /// A line without a time at its start: skipped with a warning, unless it starts with a
    /// digit.
    ///
    /// # Errors
    /// The line starts with a digit: a time, but not a valid `HH:MM:SS.mmm`.
    fn untimed(&mut self, line_no: u64, line: &str) -> Result<(), ImportError> {
        if line.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(ImportError::at(
                self.name,
                line_no,
                format!(
                    "time: expected HH:MM:SS.mmm (trailing digits may be redacted as x), got {}",
                    shown(line.split_whitespace().next().unwrap_or(""))
                ),
            ));
        }
        self.rec.warn(Warning {
            source: self.here(line_no),
            message: "no HH:MM:SS.mmm time at the start: line skipped".into(),
        });
        Ok(())
    }

    /// Warns that line `line_no`'s time has redacted digits, read as the middle of their range
    /// (± `tolerance` ns).
    fn warn_redacted(&mut self, line_no: u64, tolerance: u64) {
        self.rec.warn(Warning {
            source: self.here(line_no),
            message: format!(
                "redacted digits in the time: read as the middle of their range, ±{:.1} ms",
                tolerance as f64 / 1e6
            ),
        });
    }

    /// Reads entry `e` by its kind: a tool call, the executor's timeout, the model's decision,
    /// the tool's result or the service's response; anything else is skipped with a warning.
    ///
    /// # Errors
    /// As the kind's reader.
    fn entry(&mut self, e: &Entry) -> Result<(), ImportError> {
        let body = e.body.as_str();
        if let Some(rest) = body.strip_prefix("tool_call") {
            self.tool_call(e, rest.trim())
        } else if body.starts_with("tool_executor:") && body.contains("timeout") {
            self.executor_timeout(e)
        } else if body.starts_with("model:") {
            let k = self.need_call(e, "model decision")?;
            self.rec.tool_calls[k].decision_at.get_or_insert(e.instant);
            Ok(())
        } else if body.starts_with("tool_result") {
            self.tool_result(e)
        } else if body.contains("response") && (body.contains("service") || body.contains("async"))
        {
            self.service_response(e)
        } else {
            self.rec.warn(Warning {
                source: self.here(e.line_no),
                message: format!(
                    "not a tool_call, tool_executor timeout, model decision, tool_result or service response: skipped (\"{}\")",
                    body.chars().take(40).collect::<String>()
                ),
            });
            Ok(())
        }
    }

    /// The latest tool call's index, for entry `e` (a `what`) that belongs to it.
    ///
    /// # Errors
    /// No tool call came before.
    fn need_call(&self, e: &Entry, what: &str) -> Result<usize, ImportError> {
        self.current.ok_or_else(|| {
            self.error(
                e,
                format!("{what} before any tool_call line: expected a tool_call first"),
            )
        })
    }

    /// `tool_call NAME(k=v, …)` (`rest` is what follows `tool_call`): a new current tool call,
    /// with its ticket and amount from the arguments named by the options. A call of another
    /// tool without a ticket is skipped.
    ///
    /// # Errors
    /// No `(…)` of arguments; the ticket or the amount is not valid, or the refund tool's call
    /// has no ticket; more tool calls than an import reads.
    fn tool_call(&mut self, e: &Entry, rest: &str) -> Result<(), ImportError> {
        let tool: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-' || *c == '.')
            .collect();
        let args = arguments(rest).ok_or_else(|| {
            self.error(
                e,
                "tool_call: expected NAME(key=value, ...) after tool_call",
            )
        })?;
        let Some(ticket) = self.ticket_argument(e, &tool, &args)? else {
            return Ok(());
        };
        let amount = self.amount_argument(e, &args)?;
        let amount_missing = amount.is_none().then(|| {
            format!(
                "tool_call {tool}: {}",
                super::tool_args::arguments_seen(&argument_names(&args))
            )
        });
        self.rec.tool_calls.push(ToolCallRec {
            ticket,
            tool,
            call_id: None,
            at: e.instant,
            amount_cents: amount,
            amount_missing,
            result: None,
            decision_at: None,
            service_response: None,
            source: self.here(e.line_no),
        });
        super::check_record_count(self.name, e.line_no, "tool call", self.rec.tool_calls.len())?;
        self.current = Some(self.rec.tool_calls.len() - 1);
        Ok(())
    }

    /// The ticket of a call of `tool` with arguments `args`: `None` for another tool's call
    /// without one.
    ///
    /// # Errors
    /// The ticket argument is not a ticket id, or the refund tool's call has none.
    fn ticket_argument(
        &self,
        e: &Entry,
        tool: &str,
        args: &[(String, String)],
    ) -> Result<Option<TicketRef>, ImportError> {
        let names = &self.opts.arguments;
        match argument(args, &names.ticket) {
            Some((k, v)) => match ticket_text(v.trim_matches(['"', '\''])) {
                Some(ticket) => Ok(Some(ticket)),
                None => Err(self.error(
                    e,
                    format!(
                        "tool_call arguments.{k}: expected {TICKET_TEXT}, got {}",
                        shown(v)
                    ),
                )),
            },
            None if tool != self.opts.tool => Ok(None),
            None => {
                let seen = argument_names(args);
                Err(self.error(
                    e,
                    format!(
                        "tool_call arguments: expected a ticket argument {} (=TICKET), got {}: \
                         name it with --ticket-field NAME",
                        names.ticket_list(),
                        if seen.is_empty() {
                            "none".to_string()
                        } else {
                            listed_all(&seen)
                        }
                    ),
                ))
            }
        }
    }

    /// The amount in cents among a call's arguments `args`, when one is named.
    ///
    /// # Errors
    /// The amount argument is not whole cents.
    fn amount_argument(
        &self,
        e: &Entry,
        args: &[(String, String)],
    ) -> Result<Option<u64>, ImportError> {
        let Some((k, v)) = argument(args, &self.opts.arguments.amount) else {
            return Ok(None);
        };
        match super::fields::amount_text(v.trim_matches(['"', '\''])) {
            Some(cents) => Ok(Some(cents)),
            None => Err(self.error(
                e,
                format!(
                    "tool_call arguments.{k}: expected {}, got {}",
                    super::fields::AMOUNT_TEXT,
                    shown(v)
                ),
            )),
        }
    }

    /// `tool_executor: timeout after Nms`: the current call's result is a timeout, and the
    /// recording's executor timeout is N ms.
    ///
    /// # Errors
    /// No tool call before; N is not whole milliseconds from 1 to 86,400,000; an earlier
    /// line stated another timeout.
    fn executor_timeout(&mut self, e: &Entry) -> Result<(), ImportError> {
        let k = self.need_call(e, "tool_executor timeout")?;
        if let Some(after) = e.body.split("after").nth(1) {
            let ms = timeout_ms(after).map_err(|m| self.error(e, m))?;
            if let Some(earlier) = self
                .rec
                .executor_timeout_ns
                .filter(|&t| t != ms * 1_000_000)
            {
                return Err(self.error(
                    e,
                    format!(
                        "tool_executor timeout: {ms}ms, but an earlier line said {}ms: expected one executor timeout per recording",
                        earlier / 1_000_000
                    ),
                ));
            }
            self.rec.executor_timeout_ns = Some(ms * 1_000_000);
        }
        self.rec.tool_calls[k].result = Some(ToolResultRec {
            at: e.instant,
            ok: false,
            timed_out: true,
            refund_id: None,
        });
        Ok(())
    }

    /// `tool_result: {…}`: the current call's result, ok when its `status` is `refunded`, or
    /// without a status when it has a refund id and no error.
    ///
    /// # Errors
    /// No tool call before.
    fn tool_result(&mut self, e: &Entry) -> Result<(), ImportError> {
        let k = self.need_call(e, "tool_result")?;
        let (status, refund_id) = self.answer_fields(e);
        let ok = match status.as_deref() {
            Some(s) => s == "refunded",
            None => refund_id.is_some() && !e.body.contains("error"),
        };
        self.rec.tool_calls[k].result = Some(ToolResultRec {
            at: e.instant,
            ok,
            timed_out: false,
            refund_id,
        });
        Ok(())
    }

    /// `… refunds-service response for the FIRST call: {…}`: a late response of the service,
    /// for the call [`LogReader::response_target`] names; ok when its `status` is `refunded`,
    /// or without a status when it has a refund id.
    ///
    /// # Errors
    /// As [`LogReader::response_target`].
    fn service_response(&mut self, e: &Entry) -> Result<(), ImportError> {
        let k = self.need_call(e, "service response")?;
        let target = self.response_target(e, k)?;
        let (status, refund_id) = self.answer_fields(e);
        self.rec.tool_calls[target].service_response = Some(ServiceResponseRec {
            at: e.instant,
            ok: match status.as_deref() {
                Some(s) => s == "refunded",
                None => refund_id.is_some(),
            },
            refund_id,
        });
        Ok(())
    }

    /// The tool call a service response (entry `e`, after call `k`) is for, among the calls of
    /// `k`'s ticket: the one its ordinal names (`FIRST call`, …), else the latest timed-out call
    /// without a response, else `k`.
    ///
    /// # Errors
    /// The ticket has fewer calls than the ordinal says.
    fn response_target(&self, e: &Entry, k: usize) -> Result<usize, ImportError> {
        let calls = &self.rec.tool_calls;
        let ticket = &calls[k].ticket;
        let of_ticket: Vec<usize> = (0..calls.len())
            .filter(|&j| calls[j].ticket == *ticket)
            .collect();
        let upper = e.body.to_ascii_uppercase();
        match ORDINALS
            .iter()
            .position(|o| upper.contains(&format!("{o} CALL")))
        {
            Some(n) => of_ticket.get(n).copied().ok_or_else(|| {
                self.error(
                    e,
                    format!(
                        "response for the {} call of ticket {ticket}, which has {} before it",
                        ORDINALS[n].to_ascii_lowercase(),
                        super::fields::plural(of_ticket.len(), "tool call", "tool calls")
                    ),
                )
            }),
            None => Ok(of_ticket
                .iter()
                .rev()
                .copied()
                .find(|&j| {
                    calls[j].result.as_ref().is_some_and(|r| r.timed_out)
                        && calls[j].service_response.is_none()
                })
                .unwrap_or(k)),
        }
    }

    /// The `status` and `refund_id` of a result or response (entry `e`), warning when the
    /// refund id is truncated (`re_1P9x...`): refunds are then compared by count.
    fn answer_fields(&mut self, e: &Entry) -> (Option<String>, Option<String>) {
        let status = quoted(&e.body, "status");
        let refund_id = quoted(&e.body, "refund_id");
        if refund_id
            .as_deref()
            .is_some_and(|s| s.ends_with("...") || s.ends_with('…'))
        {
            self.rec.warn(Warning {
                source: self.here(e.line_no),
                message: "truncated refund id: refunds are compared by count".into(),
            });
        }
        (status, refund_id)
    }
}

/// The first of `names` among a call's arguments `args`: its name and value.
fn argument<'s>(args: &'s [(String, String)], names: &'s [String]) -> Option<(&'s str, &'s str)> {
    names.iter().find_map(|k| {
        args.iter()
            .find(|(a, _)| a == k)
            .map(|(_, v)| (k.as_str(), v.as_str()))
    })
}

/// The names of a call's arguments `args`, in order.
fn argument_names(args: &[(String, String)]) -> Vec<String> {
    args.iter().map(|(a, _)| a.clone()).collect()
}

/// The milliseconds of `timeout after Nms`, from `after`, the text after `after`.
///
/// # Errors
/// The message when the first word is not `Nms` with N whole milliseconds from 1 to 86,400,000.
fn timeout_ms(after: &str) -> Result<u64, String> {
    let word = after.trim().split([',', ' ']).next().unwrap_or("");
    word.strip_suffix("ms")
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| d.parse::<u64>().ok())
        .filter(|&ms| (1..=86_400_000).contains(&ms))
        .ok_or_else(|| {
            format!(
                "tool_executor timeout: expected `timeout after Nms` with N a whole number of milliseconds from 1 to 86400000, got {}",
                shown(word)
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = include_str!("../../tests/fixtures/incident/incident-trace-ticket-48213.log");

    fn opts() -> ImportOptions {
        ImportOptions {
            date: Some("2024-05-14".into()),
            ..ImportOptions::default()
        }
    }

    #[test]
    fn dates_count_days_from_the_epoch() {
        assert_eq!(midnight("1970-01-01"), Ok(0));
        assert_eq!(midnight("2024-05-14"), Ok(19_857 * DAY_NS));
        assert_eq!(midnight("2000-03-01"), Ok(11_017 * DAY_NS));
        assert!(midnight("2023-02-29").is_err());
        assert!(midnight("2024-5-14").is_err());
    }

    #[test]
    fn redacted_digits_are_the_middle_of_their_range() {
        let ((t, tol), rest) = time_of_day("16:41:19.9xx  x").unwrap();
        assert_eq!(t, ((16 * 60 + 41) * 60 + 19) * 1_000_000_000 + 949_500_000);
        assert_eq!(tol, 49_500_000);
        assert_eq!(rest, "  x");
        let ((t, tol), _) = time_of_day("00:00:01.250 y").unwrap();
        assert_eq!((t, tol), (1_250_000_000, 0));
        assert!(time_of_day("16:4:19.9").is_none());
        assert!(time_of_day("16:41:19.x9").is_none());
    }

    #[test]
    fn the_incident_log_reads_into_two_calls_and_a_late_response() {
        let rec = read("incident.log", LOG, &opts()).unwrap();
        let day = midnight("2024-05-14").unwrap();
        let t = |h: i64, m: i64, s: i64, ms: i64| {
            day + ((h * 60 + m) * 60 + s) * 1_000_000_000 + ms * 1_000_000
        };
        assert_eq!(rec.tool_calls.len(), 2);
        assert_eq!(rec.executor_timeout_ns, Some(8_000_000_000));
        let first = &rec.tool_calls[0];
        assert_eq!(
            (first.ticket.clone(), first.amount_cents),
            (48213.into(), Some(4200))
        );
        assert_eq!(first.at.at, t(16, 41, 9, 210));
        let r = first.result.as_ref().unwrap();
        assert!(r.timed_out && !r.ok);
        assert_eq!(r.at.at, t(16, 41, 17, 211));
        assert_eq!(first.decision_at.unwrap().at, t(16, 41, 17, 240));
        let late = first.service_response.as_ref().unwrap();
        assert!(late.ok);
        assert_eq!(late.refund_id.as_deref(), Some("re_1P8w..."));
        assert_eq!(late.at.at, t(16, 41, 19, 949) + 500_000);
        assert_eq!(late.at.tolerance_ns, 49_500_000);
        let second = &rec.tool_calls[1];
        assert_eq!(second.at.at, t(16, 41, 17, 244));
        let r = second.result.as_ref().unwrap();
        assert!(r.ok && !r.timed_out);
        assert_eq!(r.refund_id.as_deref(), Some("re_1P9x..."));
        assert!(second.service_response.is_none());
        // The redacted time and two truncated ids.
        assert_eq!(rec.warnings.len(), 3, "{:?}", rec.warnings);
    }

    #[test]
    fn bad_lines_name_the_line_and_what_was_expected() {
        let err = |text: &str| read("x.log", text, &opts()).unwrap_err().to_string();
        assert_eq!(
            err("16:41:09.210  tool_result: { status: \"refunded\" }"),
            "x.log:1: tool_result before any tool_call line: expected a tool_call first"
        );
        // Any short text is a ticket id (`T-7`), kept as written.
        let rec = read(
            "x.log",
            "16:41:09.210  tool_call issue_refund(ticket=T-7, amount=1)",
            &opts(),
        )
        .unwrap();
        assert_eq!(rec.tool_calls[0].ticket.as_str(), "T-7");
        // A 309-digit ticket or amount is shortened as the other readers shorten it.
        let nines = "9".repeat(309);
        for (args, field) in [
            (format!("ticket={nines}, amount=4200"), "ticket"),
            (format!("ticket=1, amount={nines}"), "amount"),
        ] {
            let msg = err(&format!("16:41:09.210  tool_call issue_refund({args})"));
            assert!(
                msg.starts_with(&format!("x.log:1: tool_call arguments.{field}: expected"))
                    && msg.ends_with(&format!("got \"{}\"… (309 characters)", "9".repeat(48))),
                "{msg}"
            );
        }
        // The whole word is quoted, its unit too.
        let msg = err("16:41:09.210 tool_call issue_refund(ticket=1, amount=1)\n16:41:17.211 tool_executor: timeout after 99999999999999999999999ms");
        assert!(msg.ends_with("got \"99999999999999999999999ms\""), "{msg}");
        assert_eq!(
            err("16:41:09.210  tool_call issue_refund(amount=1)"),
            "x.log:1: tool_call arguments: expected a ticket argument `ticket`, `ticket_id` or \
             `ticketId` (=TICKET), got `amount`: name it with --ticket-field NAME"
        );
        assert!(err(
            "16:41:09.210 tool_call issue_refund(ticket=1, amount=1)\n16:41:08.000 model: \"x\""
        )
        .starts_with("x.log:2: time goes back 1.210 s"));
        assert!(err("1641:09 tool_call").starts_with("x.log:1: time: expected HH:MM:SS.mmm"));
        assert!(read(
            "x.log",
            "",
            &ImportOptions {
                date: Some("2024-13-01".into()),
                ..opts()
            }
        )
        .unwrap_err()
        .to_string()
        .contains("--date: expected a date YYYY-MM-DD"));
    }

    #[test]
    fn status_decides_and_timeouts_and_dates_are_checked() {
        let rec = read(
            "x.log",
            "16:41:09.210 tool_call issue_refund(ticket=1, amount=5)\n16:41:10.000 tool_result: { status: \"failed\", refund_id: \"re_1\" }",
            &opts(),
        )
        .unwrap();
        assert!(!rec.tool_calls[0].result.as_ref().unwrap().ok);
        let err = |text: &str| read("x.log", text, &opts()).unwrap_err().to_string();
        let call = "16:41:09.210 tool_call issue_refund(ticket=1, amount=5)\n";
        for bad in ["-8000ms", "8000.5ms", "99999999999999999999ms", "0ms", "8s"] {
            let e = err(&format!(
                "{call}16:41:17.211 tool_executor: timeout after {bad}, x"
            ));
            assert!(
                e.starts_with("x.log:2: tool_executor timeout: expected `timeout after Nms`"),
                "{bad}: {e}"
            );
        }
        assert_eq!(
            err(&format!("{call}16:41:17.211 tool_executor: timeout after 8000ms\n16:41:18.000 tool_call issue_refund(ticket=1, amount=5)\n16:41:26.000 tool_executor: timeout after 9000ms")),
            "x.log:4: tool_executor timeout: 9000ms, but an earlier line said 8000ms: expected one executor timeout per recording"
        );
        for date in ["2600-01-01", "2262-04-12", "1969-12-31"] {
            let e = read(
                "x.log",
                call,
                &ImportOptions {
                    date: Some(date.into()),
                    ..opts()
                },
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("expected a date from 1970-01-01 to 2261-12-31"),
                "{e}"
            );
        }
    }

    #[test]
    fn midnight_rolls_over_to_the_next_day() {
        let rec = read(
            "x.log",
            "23:59:59.000 tool_call issue_refund(ticket=1, amount=5)\n00:00:01.000 tool_result: { status: \"refunded\", refund_id: \"re_1\" }",
            &opts(),
        )
        .unwrap();
        let c = &rec.tool_calls[0];
        assert_eq!(c.result.as_ref().unwrap().at.at - c.at.at, 2_000_000_000);
    }
}
