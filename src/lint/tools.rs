//! Tool definitions as lint reads them (Anthropic or MCP shape, read leniently: only `name` and
//! the MCP annotations matter), and the rules on tools alone.

use serde_json::Value;

use super::error::LintError;
use super::finding::{Finding, Severity};
use crate::scenario::ToolDefinition;

/// What the rules need of a tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ToolFacts {
    /// Tool name.
    pub name: String,
    /// JSON path of the tool object (`tools.0`, `result.tools.2`, or empty for a lone tool).
    pub path: String,
    /// Whether the definition has an `annotations` object.
    pub annotated: bool,
    /// `readOnlyHint` (default false).
    pub read_only: bool,
    /// `idempotentHint` (default false).
    pub idempotent: bool,
    /// `destructiveHint` (default true): the tool may destroy or overwrite, rather than only
    /// add. Meaningful only when not `readOnlyHint` (MCP ToolAnnotations).
    pub destructive: bool,
}

impl ToolFacts {
    /// Modifies its environment: not `readOnlyHint`.
    pub(crate) fn mutating(&self) -> bool {
        !self.read_only
    }

    /// From a scenario's parsed definition at `path`.
    pub(crate) fn of_definition(t: &ToolDefinition, path: String) -> Self {
        let a = t.annotations.as_ref();
        ToolFacts {
            name: t.name.clone(),
            path,
            annotated: a.is_some(),
            read_only: a.is_some_and(|a| a.read_only_hint),
            idempotent: a.is_some_and(|a| a.idempotent_hint),
            destructive: a.is_none_or(|a| a.destructive_hint),
        }
    }
}

fn join(prefix: &str, field: &str) -> String {
    if prefix.is_empty() {
        field.to_string()
    } else {
        format!("{prefix}.{field}")
    }
}

/// Reads one tool object at `path`; `file` names it in errors.
pub(crate) fn tool_facts(file: &str, path: &str, v: &Value) -> Result<ToolFacts, LintError> {
    let bad = |at: String, message: &str| LintError::Shape {
        file: file.to_string(),
        path: at,
        message: message.to_string(),
    };
    let obj = v.as_object().ok_or_else(|| {
        bad(
            path.to_string(),
            "expected a tool definition object with a `name`",
        )
    })?;
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| bad(join(path, "name"), "expected the tool's name as a string"))?;
    let ann = match obj.get("annotations") {
        None | Some(Value::Null) => None,
        Some(Value::Object(a)) => Some(a),
        Some(_) => {
            return Err(bad(
                join(path, "annotations"),
                "expected an object of MCP ToolAnnotations",
            ))
        }
    };
    // A hint absent (or null) takes MCP's default for it.
    let hint = |key: &str, default: bool| -> Result<bool, LintError> {
        match ann.and_then(|a| a.get(key)) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(bad(
                join(path, &format!("annotations.{key}")),
                "expected true or false",
            )),
        }
    };
    Ok(ToolFacts {
        name: name.to_string(),
        path: path.to_string(),
        annotated: ann.is_some_and(|a| {
            [
                "readOnlyHint",
                "destructiveHint",
                "idempotentHint",
                "openWorldHint",
            ]
            .iter()
            .any(|k| a.contains_key(*k))
        }),
        read_only: hint("readOnlyHint", false)?,
        idempotent: hint("idempotentHint", false)?,
        destructive: hint("destructiveHint", true)?,
    })
}

/// Rules on a tool alone: `tool-annotations-missing`.
pub(crate) fn tool_rules(t: &ToolFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    if !t.annotated {
        out.push(Finding::new(
            "tool-annotations-missing",
            Severity::Warning,
            join(&t.path, "annotations"),
            format!(
                "tool `{}` declares no behaviour hints (no annotations, or none of readOnlyHint, destructiveHint, idempotentHint, openWorldHint), so MCP's defaults apply: not read-only, destructive, not idempotent",
                t.name
            ),
            "state them explicitly (e.g. {\"readOnlyHint\": false, \"destructiveHint\": true, \"idempotentHint\": false}) so retry rules and reviewers see what the tool does",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_or_unknown_annotations_count_as_missing() {
        for a in [r#"{}"#, r#"{"bogus":true}"#, r#"{"title":"Refund"}"#] {
            let v: Value =
                serde_json::from_str(&format!(r#"{{"name":"r","annotations":{a}}}"#)).unwrap();
            let t = tool_facts("f", "tools.0", &v).unwrap();
            let f = tool_rules(&t);
            assert_eq!(f.len(), 1, "{a}");
            assert_eq!(f[0].id, "tool-annotations-missing");
        }
    }

    #[test]
    fn reads_hints_and_rejects_bad_shapes() {
        let v: Value =
            serde_json::from_str(r#"{"name":"get","annotations":{"readOnlyHint":true}}"#).unwrap();
        let t = tool_facts("f", "tools.0", &v).unwrap();
        assert!(t.read_only && !t.mutating() && t.annotated && !t.idempotent);
        let v: Value =
            serde_json::from_str(r#"{"name":"x","annotations":{"idempotentHint":"yes"}}"#).unwrap();
        let msg = tool_facts("f", "tools.1", &v).unwrap_err().to_string();
        assert_eq!(
            msg,
            "f: tools.1.annotations.idempotentHint: expected true or false"
        );
    }
}
