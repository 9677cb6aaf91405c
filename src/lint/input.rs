//! What a file given to `lint` is: a scenario, a policy, an MCP `tools/list` result or
//! Anthropic-format tool definitions, told apart by shape.
//!
//! - a JSON array: Anthropic tool definitions;
//! - `{"result": {"tools": [...]}}`: a JSON-RPC `tools/list` response;
//! - an object whose keys are only `tools`, `nextCursor`, `_meta`: an MCP `tools/list` result;
//! - an object with `horizon` or `arrivals`: a scenario;
//! - an object with `name` and one of `input_schema`, `inputSchema`, `parameters`,
//!   `annotations`: one tool definition;
//! - any other object: a policy, linted as a merge patch over the defaults ([`DEFAULTS_BASE`]).

use std::path::Path;

use serde_json::Value;

use super::error::LintError;
use super::tools::{tool_facts, ToolFacts};
use crate::scenario::{self, Scenario, ScenarioError};

/// The scenario a lone policy is applied to: every default, one steady ticket every 10 s for an
/// hour (so the burst estimate sees light load), and humans with their defaults (a policy does
/// not know its scenario's humans; the shipped scenarios have them).
pub const DEFAULTS_BASE: &str = r#"{"name":"defaults","horizon":"1h","arrivals":{"schedule":[{"label":"steady","duration":"1h","rate_per_s":0.1}]},"humans":{}}"#;

/// A file, read.
#[derive(Debug)]
pub(crate) enum LintInput {
    /// A scenario file.
    Scenario(Box<Scenario>),
    /// A policy, applied over [`DEFAULTS_BASE`].
    Policy(Box<Scenario>),
    /// Tool definitions only.
    Tools(Vec<ToolFacts>),
}

impl LintInput {
    /// `scenario`, `policy` or `tools`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            LintInput::Scenario(_) => "scenario",
            LintInput::Policy(_) => "policy",
            LintInput::Tools(_) => "tools",
        }
    }
}

/// Reads `path` and tells what it is.
pub(crate) fn read_input(path: &Path) -> Result<LintInput, LintError> {
    let file = path.display().to_string();
    let v = read_json(path, &file)?;
    let shape = |message: &str| LintError::Shape {
        file: file.clone(),
        path: String::new(),
        message: message.to_string(),
    };
    match &v {
        Value::Array(items) => tool_list(&file, "", items),
        Value::Object(o) => {
            if let Some((at, tools)) = tool_list_in(o) {
                return tool_array(&file, at, tools);
            }
            if o.contains_key("horizon") || o.contains_key("arrivals") {
                // Lint simulates nothing: no run budget applies.
                let s = scenario::load_within(path, &[], &[], &scenario::RunBudget::UNLIMITED)?;
                return Ok(LintInput::Scenario(Box::new(s)));
            }
            let tool_keys = ["input_schema", "inputSchema", "parameters", "annotations"];
            if o.contains_key("name") && tool_keys.iter().any(|k| o.contains_key(*k)) {
                return Ok(LintInput::Tools(vec![tool_facts(&file, "", &v)?]));
            }
            policy(&file, &v)
        }
        _ => Err(shape(
            "expected a scenario, a policy, a tools/list result or tool definitions (a JSON object or array)",
        )),
    }
}

/// Where an object holds a list of tools, and that list: `result.tools` of a JSON-RPC
/// `tools/list` response, or `tools` of an object whose keys are only `tools`, `nextCursor`,
/// `_meta` (an MCP `tools/list` result). Shared by `lint` and `new`.
pub(crate) fn tool_list_in(o: &serde_json::Map<String, Value>) -> Option<(&'static str, &Value)> {
    if let Some(tools) = o.get("result").and_then(|r| r.get("tools")) {
        return Some(("result.tools", tools));
    }
    if o.contains_key("tools")
        && o.keys()
            .all(|k| matches!(k.as_str(), "tools" | "nextCursor" | "_meta"))
    {
        return Some(("tools", &o["tools"]));
    }
    None
}

/// `path` (shown as `file`) read as JSON: UTF-8 text, a leading byte-order mark skipped.
///
/// # Errors
/// [`LintError::Read`] when it cannot be read, [`LintError::TooLarge`] past the input limit,
/// and [`LintError::Syntax`] at the first byte that is not UTF-8 or where the JSON breaks (an
/// empty file, or nesting past the limit, said as such).
fn read_json(path: &Path, file: &str) -> Result<Value, LintError> {
    let bytes = crate::input::read_input(path, "a lint input").map_err(|e| match e {
        crate::input::InputError::Read { source, .. } => LintError::Read {
            file: file.to_string(),
            message: source.to_string(),
        },
        other => LintError::TooLarge(other),
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let (line, column, what) = crate::scenario::not_utf8_at(e.as_bytes(), e.utf8_error());
        LintError::Syntax {
            file: file.to_string(),
            line,
            column,
            message: format!("{what}; expected a JSON scenario, policy or tool list"),
        }
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    serde_json::from_str(text).map_err(|e| {
        // serde's text ends with " at line L column C", which the error already shows.
        let raw = e.to_string();
        let bare = raw.split(" at line ").next().unwrap_or(&raw).to_string();
        let message = if text.trim().is_empty() {
            "file is empty; expected a JSON scenario, policy or tool list".to_string()
        } else if let Some(nesting) = crate::input::nesting_message(&e, None) {
            nesting
        } else {
            format!("not valid JSON ({bare}); expected a scenario, a policy, or tool definitions")
        };
        LintError::Syntax {
            file: file.to_string(),
            line: e.line(),
            column: e.column(),
            message,
        }
    })
}

fn tool_array(file: &str, path: &str, v: &Value) -> Result<LintInput, LintError> {
    match v.as_array() {
        Some(items) => tool_list(file, path, items),
        None => Err(LintError::Shape {
            file: file.to_string(),
            path: path.to_string(),
            message: "expected an array of tool definitions".into(),
        }),
    }
}

fn tool_list(file: &str, path: &str, items: &[Value]) -> Result<LintInput, LintError> {
    let tools = items
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let at = if path.is_empty() {
                i.to_string()
            } else {
                format!("{path}.{i}")
            };
            tool_facts(file, &at, t)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(LintInput::Tools(tools))
}

fn policy(file: &str, patch: &Value) -> Result<LintInput, LintError> {
    let mut doc: Value = serde_json::from_str(DEFAULTS_BASE).expect("the defaults base is JSON");
    json_patch::merge(&mut doc, patch);
    let text = doc.to_string();
    match scenario::load_text(&text, file, &[], &[], &scenario::RunBudget::UNLIMITED) {
        Ok(s) => Ok(LintInput::Policy(Box::new(s))),
        Err(ScenarioError::Invalid { path, message, .. }) => Err(LintError::Shape {
            file: file.to_string(),
            path,
            message: format!("{message} (read as a policy over the defaults)"),
        }),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary or otherwise non-UTF-8 file is a syntax error at its first bad byte, with what
    /// was expected (it was "cannot read file: stream did not contain valid UTF-8").
    #[test]
    fn a_file_that_is_not_text_says_where_and_what_was_expected() {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), b"{\n \"a\": \"\xe9t\xe9\"}").unwrap();
        let msg = read_input(f.path()).unwrap_err().to_string();
        assert_eq!(
            msg,
            format!(
                "{}:2:8: not UTF-8 text (byte 0xe9); expected a JSON scenario, policy or tool list",
                f.path().display()
            )
        );
    }
}
