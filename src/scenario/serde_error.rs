//! serde errors as one-line messages: the dotted JSON path, line and column, and what was
//! expected in words where serde names a Rust type.

use serde_json::Value;

use super::error::{Location, ScenarioError};

const DURATION_EXPECTED: &str = r#"a duration like "8s", "400ms" or "53m""#;

fn line_col(e: &serde_json::Error) -> Option<(usize, usize)> {
    (e.line() > 0).then(|| (e.line(), e.column().max(1)))
}

/// Parses JSON text into a [`Value`], tracking the path as it descends, so that a syntax error
/// inside a value names its field: `NaN` or `Infinity` (not JSON) and a number beyond `f64`
/// (`1e309`, "number out of range") give [`ScenarioError::Invalid`] at the field's dotted path
/// with its line and column; a syntax error between values (a missing comma, a truncated file)
/// stays a [`ScenarioError::Syntax`]. `prefix` starts the message (`"invalid policy: "`).
///
/// # Errors
/// The error of the first problem in the text, as above.
pub(super) fn parse_value(text: &str, origin: &str, prefix: &str) -> Result<Value, ScenarioError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize::<_, Value>(&mut de).map_err(|e| {
        let segs = segments(e.path());
        let inner = e.inner();
        match non_finite(text, inner) {
            Some(message) if !segs.is_empty() => ScenarioError::Invalid {
                at: Location::new(origin, line_col(inner)),
                path: segs.join("."),
                message: format!("{prefix}{message}"),
                applied: Vec::new(),
            },
            _ => syntax(origin, text, inner, prefix),
        }
    })?;
    de.end().map_err(|e| syntax(origin, text, &e, prefix))?;
    Ok(value)
}

/// What to say when `e` is a number JSON cannot hold: a literal `NaN`/`Infinity`, or a number
/// whose magnitude exceeds `f64::MAX` (serde_json: "number out of range"). The number itself is
/// not repeated (it may be hundreds of digits long).
fn non_finite(text: &str, e: &serde_json::Error) -> Option<String> {
    const FINITE: &str = "expected a finite number (JSON has no NaN or Infinity; magnitudes up to \
                          about 1.8e308)";
    let message = bare_message(e);
    if message == "number out of range" {
        return Some(format!("number out of range: {FINITE}"));
    }
    if message != "expected value" && message != "invalid number" {
        return None;
    }
    // serde_json reports "expected value" at or just past the first character it could not
    // take: widen to the whole word around that column.
    let (line, col) = line_col(e)?;
    let chars: Vec<char> = text.lines().nth(line - 1)?.chars().collect();
    let in_word = |c: char| c.is_ascii_alphabetic() || c == '-' || c == '+';
    let mut start = (col - 1).min(chars.len());
    while start > 0 && in_word(chars[start - 1]) {
        start -= 1;
    }
    let word: String = chars[start..]
        .iter()
        .copied()
        .take_while(|&c| in_word(c))
        .collect();
    let bare = word.trim_start_matches(['-', '+']);
    ["NaN", "nan", "Infinity", "infinity", "inf", "Inf"]
        .contains(&bare)
        .then(|| format!("`{word}` is not a JSON number: {FINITE}"))
}

/// serde_json's message without its ` at line L column C` suffix. Quoted values in it are
/// shortened when the error is displayed (see [`super::error::shorten_quoted`]).
fn bare_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    match s.strip_suffix(&suffix) {
        Some(bare) if e.line() > 0 => bare.to_string(),
        _ => s,
    }
}

pub(super) fn syntax(
    origin: &str,
    text: &str,
    e: &serde_json::Error,
    prefix: &str,
) -> ScenarioError {
    if let Some(nesting) = crate::input::nesting_message(e, None) {
        return ScenarioError::Syntax {
            at: Location::new(origin, line_col(e)),
            message: format!("{prefix}{nesting}"),
        };
    }
    let bare = bare_message(e);
    let mut message = format!("{prefix}{bare}");
    if e.classify() == serde_json::error::Category::Eof {
        message.push_str(" (the file ends early: is the JSON truncated or a bracket unclosed?)");
    } else if (bare == "key must be a string" || bare == "expected value") && after_a_comma(text, e)
    {
        message.push_str(" (a stray comma? JSON has no empty items)");
    }
    ScenarioError::Syntax {
        at: Location::new(origin, line_col(e)),
        message,
    }
}

/// Whether the last character before `e`'s column, past whitespace (on this line or those
/// before), is a comma, and the error is at another comma or a closing bracket:
/// `"pool_size": 3,,` fails at the second comma, `[1, ,2]` at the lone one.
fn after_a_comma(text: &str, e: &serde_json::Error) -> bool {
    let Some((line, col)) = line_col(e) else {
        return false;
    };
    let before: String = text
        .lines()
        .take(line)
        .enumerate()
        .map(|(i, l)| {
            if i + 1 == line {
                l.chars().take(col.saturating_sub(1)).collect::<String>()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let at = text.lines().nth(line - 1).and_then(|l| {
        l.chars()
            .skip(col.saturating_sub(1))
            .find(|c| !c.is_whitespace())
    });
    before.trim_end().ends_with(',') && matches!(at, Some(',' | '}' | ']'))
}

pub(super) fn segments(path: &serde_path_to_error::Path) -> Vec<String> {
    path.iter()
        .map(|seg| match seg {
            serde_path_to_error::Segment::Seq { index } => index.to_string(),
            serde_path_to_error::Segment::Map { key } => key.clone(),
            serde_path_to_error::Segment::Enum { variant } => variant.clone(),
            // A map key that could not be read (e.g. a ticket id that is not a number): the
            // location points at the key itself.
            serde_path_to_error::Segment::Unknown => "<key>".to_string(),
        })
        .collect()
}

/// The dotted path and an augmented message for a data error (unknown or missing field, wrong
/// type, bad value).
pub(super) fn data_error(mut segs: Vec<String>, e: &serde_json::Error) -> (String, String) {
    let message = bare_message(e);
    for lead in ["unknown field `", "missing field `", "duplicate field `"] {
        if let Some(rest) = message.strip_prefix(lead) {
            if let Some((field, _)) = rest.split_once('`') {
                if segs.last().map(String::as_str) != Some(field) {
                    segs.push(field.to_string());
                }
            }
        }
    }
    (segs.join("."), augment(message))
}

/// Fields that accept a second spelling (serde `alias`): (field, alias). A file or `--set` that
/// gives both is told so, instead of a bare "duplicate field" naming a spelling the user may
/// never have written.
const ALIASES: [(&str, &str); 2] = [
    ("max_retries", "num_retries"),
    ("input_schema", "inputSchema"),
];

/// For serde's "duplicate field" on a field with a second spelling ([`ALIASES`]): that the
/// other spelling is the same field.
fn alias_hint(message: &str) -> Option<String> {
    ALIASES.iter().find_map(|(field, alias)| {
        (message == format!("duplicate field `{field}`")).then(|| {
            format!(" (`{alias}` is another spelling of `{field}`: give one of them, once)")
        })
    })
}

/// Says what was expected in words where serde's message names a Rust type.
fn augment(mut message: String) -> String {
    if let Some(hint) = alias_hint(&message) {
        message.push_str(&hint);
        return message;
    }
    if [
        "missing field `name`",
        "missing field `horizon`",
        "missing field `arrivals`",
    ]
    .iter()
    .any(|m| message.starts_with(m))
    {
        message.push_str(
            " (a scenario needs name, horizon and arrivals; a policy patch goes after --policy)",
        );
        return message;
    }
    if message.ends_with(", expected a duration") {
        let negative = message.starts_with("invalid value: string \"-");
        message.truncate(message.len() - "a duration".len());
        message.push_str(DURATION_EXPECTED);
        if negative {
            message.push_str(" (durations cannot be negative)");
        }
        return message;
    }
    for (rust, words) in [
        ("expected u64", "expected a non-negative integer"),
        ("expected u32", "expected a non-negative integer below 2^32"),
        (
            "expected u16",
            "expected a non-negative integer below 65536",
        ),
        ("expected u8", "expected a non-negative integer below 256"),
        ("expected i64", "expected an integer"),
        ("expected f64", "expected a number"),
        ("expected a boolean", "expected true or false"),
        (
            "expected struct Bound",
            "expected an object like {\"min\": 1, \"max\": 5}",
        ),
    ] {
        if message.ends_with(rust) {
            message.truncate(message.len() - rust.len());
            message.push_str(words);
            return message;
        }
    }
    if let Some(i) = message.find("expected struct ") {
        let name = message[i + "expected struct ".len()..].to_string();
        message.truncate(i);
        // The Rust type's name means nothing to a user: say what the object holds.
        message.push_str(match name.as_str() {
            "Written" | "LatencyDist" => {
                "expected a latency distribution object like {\"p50\": \"300ms\", \"p99\": \"2s\"} \
                 (see latency distributions in docs/scenario.md)"
            }
            _ => "expected a JSON object (see this section in docs/scenario.md)",
        });
    }
    message
}

pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::test_support::{err_of, rejects, with, MINIMAL};

    #[test]
    fn unknown_field_names_path_line_and_expected() {
        let text = with(r#"{"refunds_service":{"pool_sise":4}}"#);
        rejects(
            &text,
            &[
                "x.json:",
                "refunds_service.pool_sise",
                "unknown field",
                "expected one of",
                "pool_size",
            ],
        );
        rejects(r#"{"nmae":"t"}"#, &["x.json:1:", "nmae: unknown field"]);
    }

    #[test]
    fn unknown_field_has_line_and_column() {
        let text = "{\n  \"name\": \"t\",\n  \"horizon\": \"1h\",\n  \"bogus\": 1\n}";
        let msg = err_of(text);
        assert!(msg.starts_with("x.json:4:"), "{msg}");
        assert!(msg.contains("bogus: unknown field `bogus`"), "{msg}");
    }

    #[test]
    fn missing_required_field_is_named() {
        rejects(
            r#"{"name":"t","arrivals":{"schedule":[]}}"#,
            &["horizon: missing field `horizon`"],
        );
        rejects(
            &with(r#"{"arrivals":{"schedule":[{"rate_per_s":1}]}}"#),
            &["arrivals.schedule.0.duration", "missing field"],
        );
    }

    #[test]
    fn bad_durations_say_what_a_duration_looks_like() {
        let expected = r#"expected a duration like "8s", "400ms" or "53m""#;
        rejects(
            &with(r#"{"executor":{"timeout":"-5s"}}"#),
            &["executor.timeout", "\"-5s\"", expected, "negative"],
        );
        rejects(
            &with(r#"{"executor":{"timeout":"8 sex"}}"#),
            &["executor.timeout", "\"8 sex\"", expected],
        );
        rejects(
            &with(r#"{"executor":{"timeout":8}}"#),
            &["executor.timeout", "integer `8`", expected],
        );
        rejects(
            &with(r#"{"refunds_service":{"acquire_timeout":"soon"}}"#),
            &["refunds_service.acquire_timeout", expected],
        );
        rejects(
            &with(r#"{"stripe":{"latency":{"p50":"1s","p99":"2 parsecs"}}}"#),
            &["stripe.latency.p99", expected],
        );
    }

    #[test]
    fn duration_error_has_line_and_column() {
        let text = "{\"name\":\"t\",\n\"horizon\":\"1h\",\n\"executor\": {\"timeout\": \"-5s\"}}";
        let msg = err_of(text);
        assert!(msg.starts_with("x.json:3:"), "{msg}");
    }

    #[test]
    fn truncated_json_reports_eof_with_line_and_column() {
        let text = "{\"name\":\"t\",\n\"horizon\":\"1h\",\n\"arrivals\":{\"schedule\":[";
        let msg = err_of(text);
        assert!(msg.starts_with("x.json:3:"), "{msg}");
        assert!(msg.contains("EOF while parsing"), "{msg}");
        assert!(msg.contains("truncated"), "{msg}");
    }

    /// A stray comma gets a hint (serde_json says "key must be a string" or "expected value",
    /// which does not point at the comma); a trailing one is named by serde_json itself.
    #[test]
    fn a_stray_comma_is_named() {
        for (text, at) in [
            (
                "{\"name\": \"t\",\n \"r\": {\n  \"pool_size\": 3,,\n },\n \"x\": 1}",
                "x.json:3:18: key must be a string (a stray comma?",
            ),
            (
                "{\"name\": \"t\", \"tags\": [1, ,2]}",
                "x.json:1:27: expected value (a stray comma?",
            ),
            (
                "{\"name\": \"t\",\n  \"horizon\": \"1h\",\n}",
                "x.json:3:1: trailing comma",
            ),
        ] {
            let msg = err_of(text);
            assert!(msg.starts_with(at), "{msg}");
        }
        assert!(!err_of("{\"name\": \"t\", 5: 1}").contains("comma"));
        assert!(!err_of("{\"name\": \"t\", \"x\": }").contains("comma"));
    }

    #[test]
    fn syntax_error_and_trailing_garbage() {
        rejects(
            "{\"name\": \"t\",,}",
            &["x.json:1:14: key must be a string"],
        );
        rejects(
            &format!("{MINIMAL} {{}}"),
            &["x.json:1:", "trailing characters"],
        );
    }
}
