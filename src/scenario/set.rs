//! `--set PATH=VALUE` overrides: `PATH` is dot-separated, numeric segments index arrays, and
//! missing objects on the way are created; `VALUE` is JSON if it parses, else a string.

use serde_json::{Map, Value};

use super::error::{show_path, ScenarioError};
use super::serde_error::kind;

fn set_error(arg: &str, message: impl Into<String>) -> ScenarioError {
    ScenarioError::Set {
        arg: arg.to_string(),
        message: message.into(),
    }
}

/// Whether `raw` starts like a JSON number (a digit, or a sign or point before one).
fn looks_numeric(raw: &str) -> bool {
    let t = raw.trim().trim_start_matches(['-', '+', '.']);
    t.starts_with(|c: char| c.is_ascii_digit())
}

/// Applies one `PATH=VALUE` override to a scenario's JSON.
pub(super) fn apply_set(doc: &mut Value, arg: &str) -> Result<(), ScenarioError> {
    let (path, _, raw) = split_set(arg)?;
    // An alias (`service.pool_size`) sets the field it names (`refunds_service.pool_size`).
    let canonical = super::aliases::canonical_set_path(path);
    let segs: Vec<&str> = canonical.split('.').collect();
    let value = set_value(arg, path, raw)?;
    let Some((last, parents)) = segs.split_last() else {
        return Err(set_error(arg, "empty PATH"));
    };
    check_layer_exists(doc, arg, &segs)?;
    assign(doc, arg, &segs, parents, last, value)
}

/// `PATH=VALUE` split, with the path's segments checked: not empty, at most 64, no empty
/// segment.
fn split_set(arg: &str) -> Result<(&str, Vec<&str>, &str), ScenarioError> {
    let Some((path, raw)) = arg.split_once('=') else {
        return Err(set_error(
            arg,
            "expected PATH=VALUE, e.g. executor.timeout=15s or refunds_service.pool_size=20",
        ));
    };
    let path = path.trim();
    if path.is_empty() {
        return Err(set_error(
            arg,
            "empty PATH; expected a dot-separated field path such as refunds_service.pool_size",
        ));
    }
    // Scenario paths are a handful of names deep; a path of thousands would recurse as deep.
    const MAX_SEGMENTS: usize = 64;
    let segs: Vec<&str> = path.split('.').collect();
    if segs.len() > MAX_SEGMENTS {
        return Err(set_error(
            arg,
            format!(
                "PATH has {} segments; expected at most {MAX_SEGMENTS} (a scenario's fields are a \
                 few names deep)",
                segs.len()
            ),
        ));
    }
    if segs.iter().any(|s| s.is_empty()) {
        return Err(set_error(
            arg,
            format!("empty segment in PATH `{path}`; expected names separated by single dots"),
        ));
    }
    Ok((path, segs, raw))
}

/// The VALUE of `PATH=VALUE`: JSON when it parses, else a string; an array, object or number
/// that JSON cannot hold is an error naming the field.
fn set_value(arg: &str, path: &str, raw: &str) -> Result<Value, ScenarioError> {
    Ok(match serde_json::from_str::<Value>(raw) {
        Ok(value) => value,
        // An array or object that does not parse is a mistake in it (`1e309`, `NaN`, a missing
        // comma), not a string: name the field inside it.
        Err(_) if raw.trim_start().starts_with(['[', '{']) => {
            return Err(json_value_error(arg, path, raw));
        }
        // A numeric literal JSON cannot hold (`1e309`, 400 digits) is an error here, where the
        // flag can be named, rather than a string the field then refuses.
        Err(_) if looks_numeric(raw) && raw.trim().parse::<f64>().is_ok_and(|x| !x.is_finite()) => {
            return Err(set_error(
                arg,
                format!(
                    "{path}: number out of range: expected a finite number \
                     (magnitudes up to about 1.8e308)"
                ),
            ));
        }
        Err(_) => Value::String(raw.to_string()),
    })
}

/// Refuses a field of a layer that `layers` does not define.
fn check_layer_exists(doc: &Value, arg: &str, segs: &[&str]) -> Result<(), ScenarioError> {
    // A field of a layer that does not exist is a typo far more often than a new layer.
    if let ["layers", name, _, ..] = segs {
        let defined: Vec<String> = doc
            .get("layers")
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        if !defined.iter().any(|d| d == name) {
            return Err(set_error(
                arg,
                format!(
                    "unknown layer {name:?}; expected one of the layers defined in `layers` ({}), \
                     or add it whole: layers.{name}={{\"kind\":\"retry\"}} and its place in `stack`",
                    if defined.is_empty() { "none defined".to_string() } else { defined.join(", ") }
                ),
            ));
        }
    }
    Ok(())
}

/// Sets `value` at `segs` (`parents` then `last`) in `doc`, creating objects on the way;
/// `null` removes the field.
fn assign(
    doc: &mut Value,
    arg: &str,
    segs: &[&str],
    parents: &[&str],
    last: &str,
    value: Value,
) -> Result<(), ScenarioError> {
    let mut cur = doc;
    for (i, seg) in parents.iter().enumerate() {
        let here = &segs[..=i];
        cur = match cur {
            Value::Object(map) => {
                let slot = map.entry(seg.to_string()).or_insert(Value::Null);
                if slot.is_null() {
                    *slot = Value::Object(Map::new());
                }
                slot
            }
            Value::Array(items) => {
                let idx = index(arg, &segs[..i], seg, items.len())?;
                &mut items[idx]
            }
            other => return Err(not_container(arg, &segs[..i], here, other)),
        };
    }
    match cur {
        Value::Object(map) => {
            if value.is_null() {
                map.remove(last);
            } else {
                map.insert(last.to_string(), value);
            }
        }
        Value::Array(items) => {
            let idx = index(arg, parents, last, items.len())?;
            items[idx] = value;
        }
        other => return Err(not_container(arg, parents, segs, other)),
    }
    Ok(())
}

/// The error for a `VALUE` that starts like a JSON array or object but does not parse: the
/// field inside it (`arrivals.schedule.0.rate_per_s: number out of range: …`) where known,
/// else the syntax error and its column.
fn json_value_error(arg: &str, path: &str, raw: &str) -> ScenarioError {
    match super::serde_error::parse_value(raw, "", "") {
        Err(ScenarioError::Invalid {
            path: inner,
            message,
            ..
        }) => set_error(arg, format!("{path}.{inner}: {message}")),
        Err(ScenarioError::Syntax { at, message }) => {
            let column = match at.line_col {
                Some((1, col)) => format!(" at column {col}"),
                Some((line, col)) => format!(" at line {line} column {col}"),
                None => String::new(),
            };
            set_error(
                arg,
                format!(
                    "{path}: invalid JSON{column}: {message}; a VALUE starting with `[` or `{{` \
                     is read as JSON (quote it, {path}=\"…\", for a string)"
                ),
            )
        }
        // The value parsed after all (it cannot: serde_json refused it above), or another error.
        Err(other) => set_error(arg, format!("{path}: {other}")),
        Ok(_) => set_error(arg, format!("{path}: invalid JSON")),
    }
}

fn index(arg: &str, parent: &[&str], seg: &str, len: usize) -> Result<usize, ScenarioError> {
    let at = show_path(&parent.join(".")).to_string();
    let expected = match len {
        0 => format!("`{at}` is an empty array"),
        1 => format!("`{at}` has 1 element; expected index 0"),
        n => format!(
            "`{at}` has {n} elements; expected an index from 0 to {}",
            n - 1
        ),
    };
    let idx: usize = seg
        .parse()
        .map_err(|_| set_error(arg, format!("`{seg}` is not an array index: {expected}")))?;
    if idx >= len {
        return Err(set_error(
            arg,
            format!("index {idx} out of range: {expected}"),
        ));
    }
    Ok(idx)
}

fn not_container(arg: &str, parent: &[&str], full: &[&str], v: &Value) -> ScenarioError {
    set_error(
        arg,
        format!(
            "cannot set `{}`: `{}` is {}, not an object or array",
            full.join("."),
            show_path(&parent.join(".")),
            kind(v)
        ),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::scenario::test_support::{load_with, with, MINIMAL};
    use crate::scenario::KeyMode;

    #[test]
    fn set_overrides() {
        let s = load_with(
            MINIMAL,
            &[],
            &[
                "executor.timeout=15s",
                "refunds_service.pool_size=20",
                "arrivals.schedule.0.rate_per_s=0.5",
                "executor.retry.max_retries=3",
                "refunds_service.idempotency_key=per_ticket",
                "name=\"123\"",
                "description=a = b",
                "clock_origin=2024-05-14T16:00:00Z",
            ],
        )
        .unwrap();
        assert_eq!(s.executor.timeout, Duration::from_secs(15));
        assert_eq!(s.refunds_service.pool_size, 20);
        assert_eq!(s.arrivals.schedule[0].rate_per_s, 0.5);
        let retry = s.executor.retry.expect("--set created executor.retry");
        assert_eq!(retry.max_retries, 3);
        assert_eq!(retry.backoff_factor, 2.0);
        assert_eq!(s.refunds_service.idempotency_key, KeyMode::PerTicket);
        assert_eq!(s.name, "123");
        assert_eq!(s.description, "a = b");
        assert_eq!(s.clock_origin.as_deref(), Some("2024-05-14T16:00:00Z"));

        let base = with(r#"{"executor":{"timeout":"3s"}}"#);
        let s = load_with(&base, &[], &["executor.timeout=null"]).unwrap();
        assert_eq!(s.executor.timeout, Duration::from_secs(8));
    }

    #[test]
    fn malformed_sets_are_rejected() {
        let cases: &[(&str, &[&str])] = &[
            (
                "executor.timeout",
                &["--set executor.timeout:", "expected PATH=VALUE"],
            ),
            ("=5", &["--set =5:", "empty PATH"]),
            ("executor..timeout=5s", &["empty segment"]),
            (
                "arrivals.schedule.3.rate_per_s=1",
                &[
                    "index 3 out of range",
                    "`arrivals.schedule` has 1 element; expected index 0",
                ],
            ),
            ("arrivals.schedule.1=1", &["index 1 out of range"]),
            (
                "arrivals.schedule.first.rate_per_s=1",
                &[
                    "`first` is not an array index",
                    "`arrivals.schedule` has 1 element",
                ],
            ),
            (
                "name.first=x",
                &["cannot set `name.first`", "`name` is a string"],
            ),
            (
                "arrivals.schedule.0.rate_per_s.x.y=1",
                &["`arrivals.schedule.0.rate_per_s` is a number"],
            ),
            (
                r#"arrivals.schedule=[{"duration":"1m","rate_per_s":1e309}]"#,
                &[
                    "--set arrivals.schedule=[",
                    ": arrivals.schedule.0.rate_per_s: number out of range: expected a finite",
                ],
            ),
            (
                r#"arrivals.schedule=[{"duration":"1m","rate_per_s":NaN}]"#,
                &["arrivals.schedule.0.rate_per_s: `NaN` is not a JSON number"],
            ),
            (
                r#"executor={"timeout":"3s" "on_timeout":"report_error"}"#,
                &[
                    "executor: invalid JSON at column 17: expected `,` or `}`",
                    "executor=\"…\"",
                ],
            ),
        ];
        let digits = format!(
            r#"arrivals.schedule=[{{"duration":"1m","rate_per_s":{}}}]"#,
            "9".repeat(309)
        );
        let nested = format!(
            "executor.timeout={}1{}",
            r#"{"a":"#.repeat(5000),
            "}".repeat(5000)
        );
        let long: &[(&str, &[&str])] = &[
            (
                &digits,
                &["arrivals.schedule.0.rate_per_s: number out of range"],
            ),
            (
                &nested,
                &[
                    "executor.timeout: invalid JSON at column 636: nested deeper than the \
                     nesting limit of 128 levels",
                ],
            ),
        ];
        for (arg, parts) in cases.iter().chain(long) {
            let msg = load_with(MINIMAL, &[], &[arg]).unwrap_err().to_string();
            for part in *parts {
                assert!(
                    msg.contains(part),
                    "--set {arg}: message {msg:?} lacks {part:?}"
                );
            }
        }
    }
}
