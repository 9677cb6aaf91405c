//! Field values the readers share: UTC times as text or integers, and offending values quoted
//! short in error messages.

use std::time::UNIX_EPOCH;

use super::{TicketRef, UnixNs};
pub(crate) use crate::text::plural;

/// An instant recorded to the second (`secs` since the Unix epoch, Stripe's `created`): the
/// middle of that second, ± 0.5 s. `None` when it overflows.
pub(crate) fn within_second(secs: i64) -> Option<super::Instant> {
    const HALF_S: u64 = 500_000_000;
    Some(super::Instant {
        at: secs
            .checked_mul(1_000_000_000)?
            .checked_add(HALF_S as i64)?,
        tolerance_ns: HALF_S,
    })
}

/// The refund statuses Stripe documents.
const REFUND_STATUSES: [&str; 5] = [
    "pending",
    "requires_action",
    "succeeded",
    "failed",
    "canceled",
];

/// What a refund status may be, for error messages (a refund export's, Stripe's list's).
pub(crate) const REFUND_STATUS_TEXT: &str =
    "a refund status (pending, requires_action, succeeded, failed or canceled)";

/// One of Stripe's refund statuses, in any case: lowercased; `None` for any other text.
pub(crate) fn refund_status(s: &str) -> Option<String> {
    let status = s.to_ascii_lowercase();
    REFUND_STATUSES.contains(&status.as_str()).then_some(status)
}

/// What a ticket id may be, for error messages.
pub(crate) const TICKET_TEXT: &str =
    "a ticket id (a non-negative integer, or a string like \"T-100000\" of at most 200 characters)";

/// A ticket id from a JSON value: a non-negative integer (kept as its decimal text), or a
/// non-empty string of at most 200 characters without control characters (kept as written:
/// `"T-100000"`, `"48213"`). `None` otherwise.
pub(crate) fn ticket_value(v: &serde_json::Value) -> Option<TicketRef> {
    match v {
        serde_json::Value::Number(n) => n.as_u64().map(TicketRef::from),
        serde_json::Value::String(s) => ticket_text(s),
        _ => None,
    }
}

/// A ticket id from text (a log's `ticket=…`, a CSV cell): see [`ticket_value`].
pub(crate) fn ticket_text(s: &str) -> Option<TicketRef> {
    let s = s.trim();
    (!s.is_empty() && s.chars().count() <= 200 && !s.chars().any(char::is_control))
        .then(|| TicketRef(s.to_string()))
}

/// What an amount may be, for error messages: the same rule in every format that writes
/// amounts as JSON (tool arguments, JSON lines, Stripe's list).
pub(crate) const AMOUNT_TEXT: &str = "integer cents (a whole number in the currency's smallest \
                                      unit, like 4200, or its decimal digits as a string, \
                                      \"4200\")";

/// An amount in cents from a JSON value: a non-negative integer (`4200`), or a string of
/// decimal digits only (`"4200"`, as some SDKs and Python's `str()` write integers). Not a
/// fraction (`42.0`, `"42.00"`), an exponent (`4.2e3`), a sign, spaces or a value beyond
/// `u64`: `None`, and the reader refuses it with [`AMOUNT_TEXT`].
pub(crate) fn amount_value(v: &serde_json::Value) -> Option<u64> {
    match v {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => amount_text(s),
        _ => None,
    }
}

/// [`amount_value`] of a text (a log's `amount=4200`): decimal digits only.
pub(crate) fn amount_text(s: &str) -> Option<u64> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// What a text time may look like, for error messages.
pub(crate) const TIME_TEXT: &str =
    "an RFC 3339 time like \"2024-05-14T16:41:09.210Z\" (or \"2024-05-14 16:41:09\", UTC)";

/// Parses an RFC 3339 time (`2024-05-14T16:41:09.210Z`, any number of fractional digits, `Z`,
/// `+00:00` or another `±HH:MM` offset) or the same without an offset and with a space for the
/// `T` (`2024-05-14 16:41:09`, taken as UTC, as Stripe's dashboard writes it). Times before
/// 1970 are refused. `None` when `text` is not such a time.
pub(crate) fn parse_utc(text: &str) -> Option<UnixNs> {
    let text = text.trim();
    let (body, offset_s) = split_offset(text)?;
    let t = humantime::parse_rfc3339_weak(body).ok()?;
    let since = t.duration_since(UNIX_EPOCH).ok()?;
    let ns = i64::try_from(since.as_nanos()).ok()?;
    ns.checked_sub(offset_s.checked_mul(1_000_000_000)?)
        .filter(|&ns| ns >= 0)
}

/// `text` without a trailing `±HH:MM` offset, and the offset in seconds east of UTC; a trailing
/// `Z`/`z` is dropped. `None` when the offset's digits are not a valid offset.
fn split_offset(text: &str) -> Option<(&str, i64)> {
    let b = text.as_bytes();
    if b.len() >= "2024-05-14T16:41:09+00:00".len() {
        let at = b.len() - 6;
        let sign = match b[at] {
            b'+' => 1,
            b'-' => -1,
            _ => 0,
        };
        if sign != 0 && b[at + 3] == b':' {
            let hh: i64 = text.get(at + 1..at + 3)?.parse().ok()?;
            let mm: i64 = text.get(at + 4..)?.parse().ok()?;
            if hh > 23 || mm > 59 {
                return None;
            }
            return Some((&text[..at], sign * (hh * 3600 + mm * 60)));
        }
    }
    Some((text.strip_suffix(['Z', 'z']).unwrap_or(text), 0))
}

/// `text` quoted as JSON would (`"abc"`), shortened to its first 48 characters, an ellipsis and
/// its length when longer than 64: an error never prints back a pasted file.
pub(crate) fn quoted(text: &str) -> String {
    const MAX: usize = 64;
    let n = text.chars().count();
    if n <= MAX {
        return format!("{text:?}");
    }
    let head: String = text.chars().take(48).collect();
    format!("{head:?}… ({n} characters)")
}

/// `text` as it is when at most 64 characters, else its first 48, an ellipsis and its length:
/// a number or a word shown in an error as the file writes it.
pub(crate) fn shortened(text: &str) -> String {
    let n = text.chars().count();
    if n <= 64 {
        return text.to_string();
    }
    let head: String = text.chars().take(48).collect();
    format!("{head}… ({n} characters)")
}

/// `message` with every number that JSON reading turned into a floating-point value shown as
/// `raw` (the text of the record the message is about) writes it: `1e30` rather than `1e+30`,
/// `99999999999999999999` rather than `1e+20`, `1.0e3` rather than `1000.0`. serde_json keeps
/// no text of a number, so the message's renderings (a token with a `.` or an exponent) are
/// matched by value with the record's numbers that are not exact integers; integers the
/// message states itself (limits, counts) have neither and are left alone.
pub(crate) fn as_written(message: &str, raw: &str) -> String {
    let written: Vec<(f64, &str)> = number_tokens(raw)
        .filter(|t| is_float_token(t))
        .filter_map(|t| Some((t.parse::<f64>().ok()?, t)))
        .collect();
    if written.is_empty() {
        return message.to_string();
    }
    let mut out = String::with_capacity(message.len());
    let mut last = 0;
    for (start, t) in number_token_spans(message) {
        if !(t.contains(['.', 'e', 'E'])) {
            continue;
        }
        let Ok(v) = t.parse::<f64>() else { continue };
        if let Some((_, w)) = written
            .iter()
            .find(|(x, w)| x.to_bits() == v.to_bits() && *w != t)
        {
            out.push_str(&message[last..start]);
            out.push_str(&shortened(w));
            last = start + t.len();
        }
    }
    out.push_str(&message[last..]);
    out
}

/// Whether a JSON number token is one serde_json reads as floating point: a fraction, an
/// exponent, or an integer beyond `i64` and `u64`.
fn is_float_token(t: &str) -> bool {
    is_json_number(t)
        && (t.contains(['.', 'e', 'E']) || (t.parse::<u64>().is_err() && t.parse::<i64>().is_err()))
}

/// Whether `t` is a number as JSON writes one: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
/// (not `007`, `1.`, `.5` or a hex id's `00e1`).
fn is_json_number(t: &str) -> bool {
    let b = t.strip_prefix('-').unwrap_or(t).as_bytes();
    let digits = |i: usize| b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let int = digits(0);
    if int == 0 || (int > 1 && b[0] == b'0') {
        return false;
    }
    let mut i = int;
    if b.get(i) == Some(&b'.') {
        let frac = digits(i + 1);
        if frac == 0 {
            return false;
        }
        i += 1 + frac;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp = digits(i);
        if exp == 0 {
            return false;
        }
        i += exp;
    }
    i == b.len()
}

/// The number-like tokens of `text` (see [`number_token_spans`]).
fn number_tokens(text: &str) -> impl Iterator<Item = &str> {
    number_token_spans(text).map(|(_, t)| t)
}

/// The tokens of `text` that look like JSON numbers (`-12.5e+3`), with their byte offsets: a
/// run of digits, `.`, `e`/`E` and signs that starts with a digit or a `-` before one, and
/// is not part of a word (`re_1e5`, `T-100`).
fn number_token_spans(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let b = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() {
            let start = i;
            let word_before = start > 0
                && (b[start - 1].is_ascii_alphanumeric()
                    || b[start - 1] == b'_'
                    || b[start - 1] == b'.'
                    || b[start - 1] == b'-');
            let digit_at = |k: usize| b.get(k).is_some_and(u8::is_ascii_digit);
            let starts = digit_at(start) || (b[start] == b'-' && digit_at(start + 1));
            if !starts || word_before {
                // Skip the rest of a word, so that its digits are not a token.
                let in_word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
                // A digit or a `-` right after a word (`T-100`, `re_1`) continues it.
                let was_word = in_word(b[i]) || (starts && word_before);
                i += 1;
                while was_word && i < b.len() && in_word(b[i]) {
                    i += 1;
                }
                continue;
            }
            let mut end = start + 1;
            while end < b.len() {
                let c = b[end];
                let sign_ok = (c == b'+' || c == b'-') && matches!(b[end - 1], b'e' | b'E');
                if c.is_ascii_digit() || c == b'.' || c == b'e' || c == b'E' || sign_ok {
                    end += 1;
                } else {
                    break;
                }
            }
            i = end;
            if end < b.len() && (b[end].is_ascii_alphabetic() || b[end] == b'_') {
                continue;
            }
            return Some((start, &text[start..end]));
        }
        None
    })
}

/// A JSON value as shown in an error: strings quoted and shortened (see [`quoted`]), others as
/// JSON, shortened the same way.
pub(crate) fn shown(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => quoted(s),
        other => {
            let s = other.to_string();
            if s.chars().count() <= 64 {
                s
            } else {
                let head: String = s.chars().take(48).collect();
                format!("{head}… ({} characters)", s.chars().count())
            }
        }
    }
}

/// serde_json's message without its ` at line L column C` suffix, the values it quotes
/// shortened (see [`crate::scenario::shorten_quoted`]); its nesting limit in words, with the
/// column ([`crate::input::nesting_message`]).
pub(crate) fn bare_message(e: &serde_json::Error) -> String {
    if let Some(nesting) = crate::input::nesting_message(e, Some(&format!("column {}", e.column())))
    {
        return nesting;
    }
    let s = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let bare = s.strip_suffix(&suffix).unwrap_or(&s);
    crate::scenario::shorten_quoted(bare).into_owned()
}

/// The first `re_…` word of `text` (a refund id in a tool's result text): letters, digits, `_`
/// and `.`, so a truncated `re_1P9x...` stays as recorded; `re_` inside a word (`pre_…`) is not
/// one.
pub(crate) fn refund_id_word(text: &str) -> Option<String> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
    text.match_indices("re_")
        .find(|(i, _)| !text[..*i].chars().next_back().is_some_and(word))
        .map(|(i, _)| text[i..].chars().take_while(|&c| word(c)).collect())
}

/// 1-based line numbers of byte offsets in one text.
pub(crate) struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    /// Indexes the line starts of `text`.
    pub(crate) fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { starts }
    }

    /// The 1-based line holding byte `offset`.
    pub(crate) fn line_of(&self, offset: usize) -> u64 {
        self.starts.partition_point(|&s| s <= offset) as u64
    }
}

/// The elements of a JSON array, `items`, with their paths: `{at}[0]`, `{at}[1]`, ….
pub(crate) fn numbered<'t>(
    at: &str,
    items: Vec<&'t serde_json::value::RawValue>,
) -> Vec<(String, &'t serde_json::value::RawValue)> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, r)| (format!("{at}[{i}]"), r))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2024-05-14T16:41:09.210Z in ns since the Unix epoch.
    const T: UnixNs = 1_715_704_869_210_000_000;

    #[test]
    fn rfc3339_forms_agree() {
        assert_eq!(parse_utc("2024-05-14T16:41:09.210Z"), Some(T));
        assert_eq!(parse_utc("2024-05-14T16:41:09.210+00:00"), Some(T));
        assert_eq!(parse_utc("2024-05-14T18:41:09.210+02:00"), Some(T));
        assert_eq!(parse_utc("2024-05-14T11:41:09.210-05:00"), Some(T));
        assert_eq!(parse_utc("2024-05-14 16:41:09.210"), Some(T));
        assert_eq!(parse_utc("2024-05-14T16:41:09.210z"), Some(T));
        assert_eq!(parse_utc("2024-05-14 16:41:09"), Some(T - 210_000_000));
    }

    #[test]
    fn bad_times_are_refused() {
        for bad in [
            "",
            "16:41:09",
            "2024-05-14",
            "2024-13-14T16:41:09Z",
            "2024-05-14T16:41:09+0200",
            "2024-05-14T16:41:09+25:00",
            "1969-12-31T23:59:59Z",
            "2024-05-14T16:41:09.2x0Z",
        ] {
            assert_eq!(parse_utc(bad), None, "{bad}");
        }
    }

    #[test]
    fn lines_of_offsets() {
        let l = Lines::new("a\nbc\n\nd");
        assert_eq!([0, 1, 2, 4, 5, 6].map(|o| l.line_of(o)), [1, 1, 2, 2, 3, 4]);
    }

    #[test]
    fn numbers_read_as_floats_are_shown_as_written() {
        let raw = r#"{"ticket": "T-100", "amount": 1e30, "n": 99999999999999999999, "x": 1.0e3}"#;
        assert_eq!(
            as_written("amount: expected integer cents, got 1e+30", raw),
            "amount: expected integer cents, got 1e30"
        );
        assert_eq!(
            as_written("invalid type: floating point `1e+20`, expected u64", raw),
            "invalid type: floating point `99999999999999999999`, expected u64"
        );
        assert_eq!(as_written("got 1000.0", raw), "got 1.0e3");
        // Integers the message states itself, and words with digits, are left alone.
        assert_eq!(
            as_written("expected 1 to 1000000000000, ticket T-100", raw),
            "expected 1 to 1000000000000, ticket T-100"
        );
        let huge = "9".repeat(300);
        assert_eq!(
            as_written("got 1e+300", &format!("{{\"amount\": {huge}}}")),
            format!("got {}… (300 characters)", "9".repeat(48))
        );
        assert_eq!(
            number_tokens("re_1e5 T-100 -4.5e+3, 7x 8").collect::<Vec<_>>(),
            ["-4.5e+3", "8"]
        );
        assert!(!is_float_token("0000000000000e01") && !is_float_token("09.210"));
        assert!(is_float_token("1e30") && is_float_token("99999999999999999999"));
    }

    #[test]
    fn amounts_are_integers_or_their_digits() {
        use serde_json::json;
        assert_eq!(amount_value(&json!(4200)), Some(4200));
        assert_eq!(amount_value(&json!("2500")), Some(2500));
        for bad in [
            json!(42.0),
            json!(-5),
            json!("42.00"),
            json!(" 42"),
            json!("+42"),
            json!(""),
            json!("99999999999999999999"),
            json!(1e30),
            json!(null),
        ] {
            assert_eq!(amount_value(&bad), None, "{bad}");
        }
    }

    #[test]
    fn long_values_are_shortened() {
        assert_eq!(quoted("abc"), "\"abc\"");
        let long = "x".repeat(100);
        assert_eq!(
            quoted(&long),
            format!("\"{}\"… (100 characters)", "x".repeat(48))
        );
    }
}
