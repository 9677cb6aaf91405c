//! Reading a tool file for `new`: every shape `lint` reads (an MCP `tools/list` response or
//! result, an Anthropic tool or a list of them, the incident's bare `parameters` block; the list
//! detection and each tool's name and hints are `lint`'s own, `src/lint/input.rs` and
//! `src/lint/tools.rs`), plus OpenAI function tools: the Chat Completions shape
//! `{"type": "function", "function": {...}}` and the Responses API's flat
//! `{"type": "function", "name", "parameters"}`.

use std::path::Path;

use serde_json::Value;

use super::ordered::Ordered;
use super::NewError;
use crate::lint::{tool_facts, tool_list_in, LintError};

/// One tool found in the file, normalized to the scenario's `tools` shape.
#[derive(Clone, Debug)]
pub(crate) struct FoundTool {
    /// Its name.
    pub(crate) name: String,
    /// The JSON path of its object in the file (`result.tools.1`, `0.function`, empty alone).
    pub(crate) path: String,
    /// What the file's shape was read as (`an MCP tools/list response`).
    pub(crate) shape: &'static str,
    /// `annotations.readOnlyHint`.
    pub(crate) read_only: bool,
    /// `description`, as given.
    pub(crate) description: Option<Ordered>,
    /// The input schema and the scenario field it goes in: `input_schema` (a full JSON Schema:
    /// Anthropic `input_schema`, MCP `inputSchema`, OpenAI `parameters`) or `parameters` (the
    /// incident's bare parameter block).
    pub(crate) schema: Option<(&'static str, Ordered)>,
    /// `annotations`, the MCP ToolAnnotations fields only, as given.
    pub(crate) annotations: Option<Ordered>,
    /// Fields of the definition the scenario's tool shape has no place for, not copied.
    pub(crate) dropped: Vec<String>,
}

/// What a file's text is, for errors: `file`, its text, and its JSON.
pub(super) struct Source<'a> {
    pub(super) file: &'a str,
    pub(super) text: &'a str,
}

impl Source<'_> {
    /// An error at the JSON path `path` (dot-separated), with the line and column when the text
    /// spells it out (else of the nearest enclosing value).
    pub(super) fn error(&self, path: &str, message: impl Into<String>) -> NewError {
        let segs: Vec<String> = if path.is_empty() {
            Vec::new()
        } else {
            path.split('.').map(str::to_string).collect()
        };
        let at = (0..=segs.len())
            .rev()
            .find_map(|n| crate::scenario::locate(self.text, &segs[..n]))
            .map(|off| crate::scenario::offset_to_line_col(self.text, off));
        NewError::Input {
            file: self.file.to_string(),
            at,
            path: path.to_string(),
            message: message.into(),
        }
    }
}

/// The file's text, at most the input limit, UTF-8 (a leading byte-order mark skipped).
///
/// # Errors
/// [`NewError::Read`] when it cannot be read or is too large; [`NewError::Input`] at the first
/// byte that is not UTF-8.
pub(super) fn read_text(path: &Path, file: &str) -> Result<String, NewError> {
    let bytes = crate::input::read_input(path, "a tool definition file")
        .map_err(|e| NewError::Read(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let (line, column, what) = crate::scenario::not_utf8_at(e.as_bytes(), e.utf8_error());
        NewError::Input {
            file: file.to_string(),
            at: Some((line, column)),
            path: String::new(),
            message: format!("{what}; expected {EXPECTED}"),
        }
    })?;
    Ok(text
        .strip_prefix('\u{feff}')
        .map(str::to_string)
        .unwrap_or(text))
}

/// What a tool file should hold, for errors.
pub(super) const EXPECTED: &str = "tool definitions as JSON: an MCP tools/list response or \
    result ({\"tools\": [...]}), an Anthropic tool (name, description, input_schema) or a list \
    of them, an OpenAI function tool ({\"type\": \"function\", ...}) or a list of them, or a \
    tool with a bare `parameters` block";

/// Every tool in the file's text.
///
/// # Errors
/// [`NewError::Input`]: not JSON, an unknown shape, no tools, a tool without a name, a field of
/// the wrong type, each with the path and line.
pub(super) fn tools_in(src: &Source) -> Result<Vec<FoundTool>, NewError> {
    if src.text.trim().is_empty() {
        return Err(src.error("", format!("file is empty; expected {EXPECTED}")));
    }
    let v: Value = serde_json::from_str(src.text).map_err(|e| {
        let raw = e.to_string();
        let bare = raw.split(" at line ").next().unwrap_or(&raw).to_string();
        let message = crate::input::nesting_message(&e, None)
            .unwrap_or_else(|| format!("not valid JSON ({bare}); expected {EXPECTED}"));
        NewError::Input {
            file: src.file.to_string(),
            at: Some((e.line(), e.column())),
            path: String::new(),
            message,
        }
    })?;
    let ordered: Ordered =
        serde_json::from_str(src.text).map_err(|e| src.error("", e.to_string()))?;
    let (list_path, items, shape): (&str, Vec<&Value>, &'static str) = match &v {
        Value::Array(items) => ("", items.iter().collect(), "a list of tool definitions"),
        Value::Object(o) => {
            if let Some((at, list)) = tool_list_in(o) {
                let shape = if at == "result.tools" {
                    "an MCP tools/list response (JSON-RPC)"
                } else {
                    "an MCP tools/list result"
                };
                let Some(items) = list.as_array() else {
                    return Err(src.error(at, "expected an array of tool definitions"));
                };
                (at, items.iter().collect(), shape)
            } else if is_tool(o) {
                return Ok(vec![one_tool(
                    src,
                    &ordered,
                    "",
                    &v,
                    "one tool definition",
                )?]);
            } else if o.contains_key("horizon") || o.contains_key("arrivals") {
                return Err(src.error(
                    "",
                    format!("this is a scenario, not a tool definition; expected {EXPECTED}"),
                ));
            } else {
                return Err(src.error("", format!("unknown shape; expected {EXPECTED}")));
            }
        }
        _ => return Err(src.error("", format!("expected {EXPECTED}"))),
    };
    if items.is_empty() {
        let at = if list_path.is_empty() { "" } else { list_path };
        return Err(src.error(
            at,
            "no tools: the list is empty; expected at least one tool definition",
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let at = join(list_path, &i.to_string());
            one_tool(src, &ordered, &at, item, shape)
        })
        .collect()
}

/// Whether an object is one tool: OpenAI's `{"type": "function", "function": {...}}`, or `name`
/// with one of `input_schema`, `inputSchema`, `parameters`, `annotations` (as `lint` tells one).
fn is_tool(o: &serde_json::Map<String, Value>) -> bool {
    let tool_keys = ["input_schema", "inputSchema", "parameters", "annotations"];
    chat_function(o).is_some()
        || (o.contains_key("name") && tool_keys.iter().any(|k| o.contains_key(*k)))
}

/// The inner `function` of an OpenAI Chat Completions tool.
fn chat_function(o: &serde_json::Map<String, Value>) -> Option<&Value> {
    (o.get("type").and_then(Value::as_str) == Some("function"))
        .then(|| o.get("function").filter(|f| f.is_object()))
        .flatten()
}

fn join(prefix: &str, seg: &str) -> String {
    if prefix.is_empty() {
        seg.to_string()
    } else {
        format!("{prefix}.{seg}")
    }
}

/// The MCP ToolAnnotations fields the scenario's `annotations` holds.
const ANNOTATIONS: [&str; 5] = [
    "title",
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// One tool at `at`, normalized.
fn one_tool(
    src: &Source,
    ordered: &Ordered,
    at: &str,
    v: &Value,
    list_shape: &'static str,
) -> Result<FoundTool, NewError> {
    let lint_error = |e: LintError| match e {
        LintError::Shape { path, message, .. } => src.error(&path, message),
        other => NewError::Read(other.to_string()),
    };
    let obj = v
        .as_object()
        .ok_or_else(|| src.error(at, "expected a tool definition object with a `name`"))?;
    // OpenAI's Chat Completions shape wraps the definition in `function`; the Responses API's
    // is flat, with `type: "function"` beside `name`. Both call the full JSON Schema of the
    // arguments `parameters`.
    let (at, v, openai, shape) = match chat_function(obj) {
        Some(f) => (
            join(at, "function"),
            f,
            true,
            "an OpenAI Chat Completions function tool",
        ),
        None if obj.get("type").and_then(Value::as_str) == Some("function") => (
            at.to_string(),
            v,
            true,
            "an OpenAI Responses API function tool",
        ),
        None => (at.to_string(), v, false, list_shape),
    };
    let facts = tool_facts(src.file, &at, v).map_err(lint_error)?;
    let obj = v
        .as_object()
        .ok_or_else(|| src.error(&at, "expected a tool definition object with a `name`"))?;
    let node = at
        .split('.')
        .filter(|s| !s.is_empty())
        .try_fold(ordered, |o, seg| o.at(seg))
        .ok_or_else(|| src.error(&at, "internal: the tool's object could not be found again"))?;
    if let Some(d) = obj.get("description") {
        if !d.is_string() {
            return Err(src.error(
                &join(&at, "description"),
                "expected the tool's description as a string",
            ));
        }
    }
    let mut dropped = Vec::new();
    let mut schema = None;
    for key in ["input_schema", "inputSchema", "parameters"] {
        let Some(s) = node.get(key) else { continue };
        if schema.is_some() {
            dropped.push(key.to_string());
            continue;
        }
        let field = if key == "parameters" && !openai {
            "parameters"
        } else {
            "input_schema"
        };
        schema = Some((field, s.clone()));
    }
    let annotations = match node.get("annotations") {
        Some(Ordered::Object(pairs)) => {
            if let Some(t) = obj["annotations"].get("title") {
                if !t.is_string() && !t.is_null() {
                    return Err(src.error(&join(&at, "annotations.title"), "expected a string"));
                }
            }
            let mut kept = Vec::new();
            for (k, val) in pairs {
                if ANNOTATIONS.contains(&k.as_str()) && *val != Ordered::Leaf(Value::Null) {
                    kept.push((k.clone(), val.clone()));
                } else {
                    dropped.push(format!("annotations.{k}"));
                }
            }
            Some(Ordered::Object(kept))
        }
        _ => None,
    };
    let known = [
        "name",
        "description",
        "input_schema",
        "inputSchema",
        "parameters",
        "annotations",
    ];
    if let Ordered::Object(pairs) = node {
        for (k, _) in pairs {
            let shape_key = openai && k == "type";
            if !known.contains(&k.as_str()) && !shape_key {
                dropped.push(k.clone());
            }
        }
    }
    Ok(FoundTool {
        name: facts.name,
        path: at,
        shape,
        read_only: facts.read_only,
        description: node.get("description").cloned(),
        schema,
        annotations,
        dropped,
    })
}
