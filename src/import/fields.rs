//! Field values the readers share: UTC times as text or integers, and offending values quoted
//! short in error messages.

use std::time::UNIX_EPOCH;

use super::{TicketRef, UnixNs};

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
/// shortened (see [`crate::scenario::shorten_quoted`]).
pub(crate) fn bare_message(e: &serde_json::Error) -> String {
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
    fn long_values_are_shortened() {
        assert_eq!(quoted("abc"), "\"abc\"");
        let long = "x".repeat(100);
        assert_eq!(
            quoted(&long),
            format!("\"{}\"… (100 characters)", "x".repeat(48))
        );
    }
}
