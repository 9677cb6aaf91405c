//! Why a scenario could not be loaded: [`ScenarioError`] with its [`Location`], and
//! [`ValidationError`] for a scenario that parsed but breaks a rule.

use std::fmt;

use crate::text::short_numbers;

/// What a scenario file should hold, for errors about the whole document.
pub(super) const SCENARIO_EXPECTED: &str = "a JSON object with at least name, horizon, arrivals";
/// What a policy file should hold.
pub(super) const POLICY_EXPECTED: &str = "a JSON object (an RFC 7396 merge patch over a scenario)";

/// A file name with the line and column (1-based) where known: displays as `file:line:col` or
/// `file`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Location {
    /// The file (or other origin) as given.
    pub file: String,
    /// Line and column, 1-based, when known.
    pub line_col: Option<(usize, usize)>,
}

impl Location {
    pub(super) fn new(file: &str, line_col: Option<(usize, usize)>) -> Self {
        Location {
            file: file.to_string(),
            line_col,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line_col {
            Some((line, col)) => write!(f, "{}:{line}:{col}", self.file),
            None => f.write_str(&self.file),
        }
    }
}

/// Why a scenario, policy or `--set` could not be loaded. Every message is one line naming the
/// file, the JSON path (and line/column where known) and what was expected. All are bad input:
/// [`ScenarioError::exit_code`] is 2.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{file}: cannot read file: {source}")]
    Read {
        /// The file.
        file: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is larger than the input limit (`--max-input-mb`): refused unread.
    #[error(transparent)]
    TooLarge(crate::input::InputError),
    /// The file is empty or only whitespace.
    #[error("{file}: file is empty; expected {expected}")]
    Empty {
        /// The file.
        file: String,
        /// What the file should hold.
        expected: &'static str,
    },
    /// The text is not JSON (syntax error, truncated file), or a policy is not a JSON object.
    #[error("{at}: {}", shorten_message(.message))]
    Syntax {
        /// Where.
        at: Location,
        /// What is wrong and what was expected.
        message: String,
    },
    /// A field is unknown, missing, of the wrong type or an invalid value.
    #[error("{at}: {}: {}{}", show_path(.path), shorten_message(.message), show_applied(.applied))]
    Invalid {
        /// Where. Line and column are absent when the value came from a policy or `--set`.
        at: Location,
        /// Dot-separated JSON path of the field, e.g. `refunds_service.pool_size` (empty: the
        /// whole document).
        path: String,
        /// What is wrong and what was expected.
        message: String,
        /// The policies (`policy FILE`) and overrides (`--set PATH=VALUE`) applied before the
        /// error arose when the faulty value is not the file's own; empty otherwise.
        applied: Vec<String>,
    },
    /// A malformed `--set PATH=VALUE`.
    #[error("--set {}: {}", shorten(.arg), shorten_message(.message))]
    Set {
        /// The argument as given.
        arg: String,
        /// What is wrong and what was expected.
        message: String,
    },
}

impl ScenarioError {
    /// The process exit code for this error: 2 (bad usage or input, DESIGN §5).
    pub fn exit_code(&self) -> i32 {
        2
    }
}

pub(super) fn show_path(path: &str) -> std::borrow::Cow<'_, str> {
    if path.is_empty() {
        "(top level)".into()
    } else {
        shorten(path)
    }
}

/// `message` with every long value in it shortened: double-quoted values
/// ([`shorten_quoted`]) and `` `backquoted` `` names (serde's unknown fields and variants) of
/// more than 64 characters become their first 48, an ellipsis and their length.
pub(crate) fn shorten_message(message: &str) -> std::borrow::Cow<'_, str> {
    if message.chars().count() <= 64 {
        return message.into();
    }
    shorten_backquoted(&shorten_quoted(message)).into()
}

/// `message` with every `` `name` `` in it longer than 64 characters (a field, variant, tool or
/// layer name from the input) shortened to its first 48, an ellipsis and its length.
pub(crate) fn shorten_backquoted(message: &str) -> String {
    message
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                shorten(part)
            } else {
                part.into()
            }
        })
        .collect::<Vec<_>>()
        .join("`")
}

fn show_applied(applied: &[String]) -> String {
    if applied.is_empty() {
        String::new()
    } else {
        let shown: Vec<String> = applied.iter().map(|a| shorten(a).into_owned()).collect();
        format!(" (after applying {})", shown.join(", "))
    }
}

/// `text` as given when short; else its first 48 characters, an ellipsis and its length, so an
/// error never prints back a 309-digit number or a pasted file.
pub(crate) fn shorten(text: &str) -> std::borrow::Cow<'_, str> {
    const MAX: usize = 64;
    let n = text.chars().count();
    if n <= MAX {
        return std::borrow::Cow::Borrowed(text);
    }
    let head: String = text.chars().take(48).collect();
    std::borrow::Cow::Owned(format!("{head}… ({n} characters)"))
}

/// `message` with every double-quoted value in it (as Rust's `{:?}` and serde write them, with
/// `\"` and other escapes inside) of more than 64 characters shortened to its first 48, an
/// ellipsis and its length: `"aaaa"… (4000 characters)`, as the importers quote. Escapes are
/// honoured, so a value full of quotes or backslashes is one value; text
/// outside quotes is kept. An unclosed quote runs to the end of the message.
pub(crate) fn shorten_quoted(message: &str) -> std::borrow::Cow<'_, str> {
    const MAX: usize = 64;
    const HEAD: usize = 48;
    if message.chars().count() <= MAX {
        return std::borrow::Cow::Borrowed(message);
    }
    let mut out = String::with_capacity(message.len().min(4096));
    let mut rest = message;
    while let Some(open) = rest.find('"') {
        out.push_str(&rest[..=open]);
        let body = &rest[open + 1..];
        // Logical characters of the quoted value: (byte end of each, in `body`).
        let mut ends = Vec::new();
        let mut close = None;
        let mut it = body.char_indices().peekable();
        while let Some((i, c)) = it.next() {
            match c {
                '"' => {
                    close = Some(i);
                    break;
                }
                '\\' => skip_escape(&mut it),
                _ => {}
            }
            let end = it.peek().map_or(body.len(), |&(j, _)| j);
            ends.push(end.min(close.unwrap_or(body.len())));
        }
        let end = close.unwrap_or(body.len());
        let value = &body[..end];
        if ends.len() > MAX {
            out.push_str(&value[..ends[HEAD - 1]]);
            out.push_str(&format!("\"… ({} characters)", ends.len()));
        } else {
            out.push_str(value);
            if close.is_some() {
                out.push('"');
            }
        }
        rest = match close {
            Some(c) => &body[c + 1..],
            None => "",
        };
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// Skips the rest of an escape after its backslash — `\"`, `\\`, `\n`, … or `\u{1b}` /
/// `\u001b` — which is one character of a quoted value (see [`shorten_quoted`]).
fn skip_escape(it: &mut std::iter::Peekable<std::str::CharIndices<'_>>) {
    let Some((_, 'u')) = it.next() else {
        return;
    };
    if it.peek().map(|&(_, c)| c) == Some('{') {
        for (_, c) in it.by_ref() {
            if c == '}' {
                break;
            }
        }
    } else {
        for _ in 0..4 {
            it.next();
        }
    }
}

/// `text` fit to echo in a message: numbers over 24 characters in scientific notation, then
/// anything over 64 characters shortened to its first 48 and its length.
pub(crate) fn echo(text: &str) -> String {
    shorten(&short_numbers(text)).into_owned()
}

/// A scenario that parsed but breaks a rule: the field's dot-separated path and what was
/// expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {}", shorten(.path), shorten_message(.message))]
#[non_exhaustive]
pub struct ValidationError {
    /// Dot-separated JSON path, e.g. `stripe.latency.p99` or `arrivals.schedule.1.rate_per_s`.
    pub path: String,
    /// What is wrong and what was expected.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::shorten_quoted;

    #[test]
    fn every_long_quoted_value_is_shortened_whatever_its_content() {
        let quotes = format!("invalid value: string {:?}, expected x", "a\"".repeat(500));
        let short = shorten_quoted(&quotes);
        assert_eq!(
            short,
            format!(
                "invalid value: string \"{}\"… (1000 characters), expected x",
                r#"a\""#.repeat(24)
            )
        );
        // A 70-character value ending in a quote.
        let end = format!("string {:?}, expected x", format!("{}\"", "b".repeat(69)));
        assert_eq!(
            shorten_quoted(&end),
            format!("string \"{}\"… (70 characters), expected x", "b".repeat(48))
        );
        // Escapes count as one character each, and a shortened value is not shortened again.
        let esc = format!("got {:?}", "\u{1b}\\".repeat(40));
        let once = shorten_quoted(&esc).into_owned();
        assert!(once.ends_with("\"… (80 characters)"), "{once}");
        assert_eq!(shorten_quoted(&once), once);
        // Short values and text outside quotes are kept; an unclosed quote runs to the end.
        let kept = format!("{} \"short\"", "x".repeat(80));
        assert_eq!(shorten_quoted(&kept), kept);
        let open = format!("got \"{}", "c".repeat(100));
        assert_eq!(
            shorten_quoted(&open),
            format!("got \"{}\"… (100 characters)", "c".repeat(48))
        );
    }
}
