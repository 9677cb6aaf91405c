//! `--timeout-output PATTERN`: a tool result whose text says the call timed out.
//!
//! Some agent frameworks do not fail a tool call that timed out: they hand the model a text
//! instead. The OpenAI Agents SDK does so by default (`timeout_behavior="error_as_result"`):
//! its function span ends normally, without an error, and its output is
//! `default_tool_timeout_error_message`, `Tool 'issue_refund' timed out after 8 seconds.`
//! (openai-agents-python, `src/agents/tool.py`). Only the text tells it from a result.
//!
//! A pattern is that text with wildcards: `*` stands for any text, `{seconds}` for the timeout
//! in seconds (a number, which the recording then states as the executor's timeout, as a log's
//! `timeout after 8000ms` does). The whole result must match (surrounding whitespace aside);
//! each wildcard takes the text up to the first place the literal text after it appears.
//! Default: [`DEFAULT_TIMEOUT_OUTPUT`].

use std::fmt;

/// The OpenAI Agents SDK's default text for a timed-out tool.
pub(crate) const DEFAULT_TIMEOUT_OUTPUT: &str = "Tool '*' timed out after {seconds} seconds.";

/// The placeholder for the timeout's seconds.
const SECONDS: &str = "{seconds}";

#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(String),
    Any,
    Seconds,
}

/// A parsed `--timeout-output` pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TimeoutOutput {
    pieces: Vec<Piece>,
}

/// Why a pattern cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct PatternError(String);

impl TimeoutOutput {
    /// Parses `pattern` (see the module docs).
    ///
    /// # Errors
    /// The pattern is empty, only wildcards (it would take every result for a timeout), or
    /// holds `{seconds}` more than once.
    pub(crate) fn new(pattern: &str) -> Result<Self, PatternError> {
        let mut pieces = Vec::new();
        let mut rest = pattern.trim();
        while !rest.is_empty() {
            let star = rest.find('*');
            let secs = rest.find(SECONDS);
            let next = match (star, secs) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let Some(at) = next else {
                pieces.push(Piece::Text(rest.to_string()));
                break;
            };
            if at > 0 {
                pieces.push(Piece::Text(rest[..at].to_string()));
            }
            if secs == Some(at) {
                pieces.push(Piece::Seconds);
                rest = &rest[at + SECONDS.len()..];
            } else {
                pieces.push(Piece::Any);
                rest = &rest[at + 1..];
            }
        }
        if !pieces.iter().any(|p| matches!(p, Piece::Text(_))) {
            return Err(PatternError(format!(
                "{pattern:?}: expected the text of a timed-out tool's result, with `*` for any \
                 text and `{SECONDS}` for the seconds (like {DEFAULT_TIMEOUT_OUTPUT:?}); a \
                 pattern of wildcards alone would take every result for a timeout"
            )));
        }
        if pieces.iter().filter(|p| **p == Piece::Seconds).count() > 1 {
            return Err(PatternError(format!(
                "{pattern:?}: `{SECONDS}` may appear once"
            )));
        }
        Ok(TimeoutOutput { pieces })
    }

    /// Whether `text` says the call timed out: `None` when it does not match, else the
    /// seconds `{seconds}` took (`None` without the placeholder).
    pub(crate) fn matches(&self, text: &str) -> Option<Option<f64>> {
        let text = text.trim();
        let mut pos = 0;
        let mut pending: Option<&Piece> = None;
        let mut seconds = None;
        let mut take = |wild: Option<&Piece>, captured: &str| -> Option<()> {
            if wild == Some(&Piece::Seconds) {
                let s: f64 = captured.trim().parse().ok()?;
                (s.is_finite() && s > 0.0).then_some(())?;
                seconds = Some(s);
            }
            Some(())
        };
        for (k, piece) in self.pieces.iter().enumerate() {
            let Piece::Text(lit) = piece else {
                pending = Some(piece);
                continue;
            };
            let last = k + 1 == self.pieces.len();
            match pending.take() {
                None => {
                    if !text[pos..].starts_with(lit.as_str()) {
                        return None;
                    }
                    pos += lit.len();
                }
                Some(wild) if last => {
                    let end = text.len().checked_sub(lit.len())?;
                    if end < pos || !text.ends_with(lit.as_str()) {
                        return None;
                    }
                    take(Some(wild), &text[pos..end])?;
                    pos = text.len();
                }
                Some(wild) => {
                    let at = text[pos..].find(lit.as_str())?;
                    take(Some(wild), &text[pos..pos + at])?;
                    pos += at + lit.len();
                }
            }
        }
        match pending {
            Some(wild) => take(Some(wild), &text[pos..])?,
            None if pos != text.len() => return None,
            None => {}
        }
        Some(seconds)
    }
}

impl Default for TimeoutOutput {
    fn default() -> Self {
        TimeoutOutput::new(DEFAULT_TIMEOUT_OUTPUT).expect("the default pattern parses")
    }
}

impl fmt::Display for TimeoutOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.pieces {
            match p {
                Piece::Text(t) => f.write_str(t)?,
                Piece::Any => f.write_str("*")?,
                Piece::Seconds => f.write_str(SECONDS)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdks_default_text_is_a_timeout_with_its_seconds() {
        let p = TimeoutOutput::default();
        assert_eq!(
            p.matches("Tool 'issue_refund' timed out after 8 seconds."),
            Some(Some(8.0))
        );
        assert_eq!(
            p.matches(" Tool 'a after b' timed out after 2.5 seconds.\n"),
            Some(Some(2.5))
        );
        assert_eq!(p.to_string(), DEFAULT_TIMEOUT_OUTPUT);
        for other in [
            "{'refund_id': 're_A2', 'status': 'succeeded'}",
            "Tool 'issue_refund' timed out after eight seconds.",
            "Tool 'issue_refund' timed out after 8 seconds. Retrying.",
            "Tool 'issue_refund' timed out after 0 seconds.",
            "",
        ] {
            assert_eq!(p.matches(other), None, "{other}");
        }
    }

    #[test]
    fn globs_and_plain_text() {
        let glob = TimeoutOutput::new("Tool '*' timed out after * seconds.").unwrap();
        assert_eq!(
            glob.matches("Tool 'x' timed out after 8 seconds."),
            Some(None)
        );
        let plain = TimeoutOutput::new("Error: timeout").unwrap();
        assert_eq!(plain.matches("Error: timeout"), Some(None));
        assert_eq!(plain.matches("Error: timeout!"), None);
        let prefix = TimeoutOutput::new("timed out*").unwrap();
        assert_eq!(prefix.matches("timed out after 8s"), Some(None));
        let suffix = TimeoutOutput::new("*timed out").unwrap();
        assert_eq!(suffix.matches("the call timed out"), Some(None));
        assert_eq!(suffix.matches("timed out!"), None);
    }

    #[test]
    fn bad_patterns_are_refused() {
        assert!(TimeoutOutput::new("").is_err());
        assert!(TimeoutOutput::new("*").is_err());
        assert!(TimeoutOutput::new("{seconds}*").is_err());
        assert!(TimeoutOutput::new("{seconds} and {seconds}").is_err());
    }
}
