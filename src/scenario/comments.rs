//! `$comment` in every object of a scenario: free text for the reader of the file, as JSON
//! Schema's `$comment` keyword is (draft 7 on: "a place for comments to schema maintainers and
//! readers"), and ignored by refundsim.
//!
//! The top-level `$comment` is a field of [`super::Scenario`] (a policy states its scope in it).
//! Below the top level, [`strip_comments`] removes `$comment` keys from the parsed JSON before
//! it is deserialized, so every section, layer, latency and bound may carry one without each
//! struct declaring it; a tool's free-form `input_schema` / `inputSchema` / `parameters` keep
//! theirs (a JSON Schema's own `$comment`). [`allow_comments`] says the same in the generated
//! JSON Schema.

use serde_json::{Map, Value};

/// The key.
const COMMENT: &str = "$comment";

/// A tool's fields that hold free-form JSON (a schema the tool's author wrote), left untouched.
const FREE_FORM: [&str; 3] = ["input_schema", "inputSchema", "parameters"];

/// Removes every `$comment` key below the top level of `doc` (the top level's is the scenario's
/// `comment` field), except inside a tool's free-form schema (`tools.N.input_schema`, …).
///
/// # Errors
/// The path (segments) of the first `$comment` whose value is not a string, and the message.
pub(super) fn strip_comments(doc: &mut Value) -> Result<(), (Vec<String>, String)> {
    let Value::Object(top) = doc else {
        return Ok(());
    };
    let mut path = Vec::new();
    for (key, v) in top.iter_mut() {
        path.push(key.clone());
        if key == "tools" {
            strip_tools(v, &mut path)?;
        } else {
            strip(v, &mut path)?;
        }
        path.pop();
    }
    Ok(())
}

/// `tools`: each tool's own `$comment` and its annotations', not its free-form schemas'.
fn strip_tools(v: &mut Value, path: &mut Vec<String>) -> Result<(), (Vec<String>, String)> {
    let Value::Array(tools) = v else {
        return strip(v, path);
    };
    for (i, tool) in tools.iter_mut().enumerate() {
        path.push(i.to_string());
        if let Value::Object(map) = tool {
            take_comment(map, path)?;
            for (key, field) in map.iter_mut() {
                if !FREE_FORM.contains(&key.as_str()) {
                    path.push(key.clone());
                    strip(field, path)?;
                    path.pop();
                }
            }
        }
        path.pop();
    }
    Ok(())
}

fn strip(v: &mut Value, path: &mut Vec<String>) -> Result<(), (Vec<String>, String)> {
    match v {
        Value::Object(map) => {
            take_comment(map, path)?;
            for (key, field) in map.iter_mut() {
                path.push(key.clone());
                strip(field, path)?;
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                path.push(i.to_string());
                strip(item, path)?;
                path.pop();
            }
        }
        _ => {}
    }
    Ok(())
}

/// Removes `map`'s `$comment` when it is a string (or `null`, which a merge patch uses to
/// remove one).
fn take_comment(
    map: &mut Map<String, Value>,
    path: &[String],
) -> Result<(), (Vec<String>, String)> {
    match map.get(COMMENT) {
        None => Ok(()),
        Some(Value::String(_) | Value::Null) => {
            map.remove(COMMENT);
            Ok(())
        }
        Some(other) => {
            let mut at = path.to_vec();
            at.push(COMMENT.to_string());
            Err((
                at,
                format!(
                    "invalid type: {}, expected a string (free text for the reader, ignored)",
                    super::serde_error::kind(other)
                ),
            ))
        }
    }
}

/// Adds a string `$comment` property to every object schema in `schema` that lists
/// `properties` or describes a map (`additionalProperties` as a schema), and to the
/// `propertyNames` enum of a map with fixed keys (`expect`), so that an editor checking a file
/// against the schema accepts what [`strip_comments`] accepts.
pub(super) fn allow_comments(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let is_map = map
                .get("additionalProperties")
                .is_some_and(Value::is_object);
            if map.contains_key("properties") || is_map {
                let props = map
                    .entry("properties")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(props) = props {
                    props.entry(COMMENT).or_insert_with(|| {
                        serde_json::json!({
                            "description": "Free text for the reader of the file, ignored by refundsim.",
                            "type": "string"
                        })
                    });
                }
                if let Some(Value::Array(names)) =
                    map.get_mut("propertyNames").and_then(|p| p.get_mut("enum"))
                {
                    names.push(Value::String(COMMENT.to_string()));
                }
            }
            for (key, v) in map.iter_mut() {
                // A property named like a keyword is not a schema to walk into twice; every
                // other value may hold schemas.
                if key != "propertyNames" && key != "enum" && key != "const" && key != "default" {
                    allow_comments(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(allow_comments),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_go_below_the_top_but_a_tool_schema_keeps_its_own() {
        let mut doc = serde_json::json!({
            "$comment": "top",
            "executor": {"$comment": "e", "timeout": "8s"},
            "layers": {"$comment": null, "s": {"$comment": "l", "kind": "proxy"}},
            "tools": [{"$comment": "t", "name": "x", "input_schema": {"$comment": "keep"}}]
        });
        strip_comments(&mut doc).unwrap();
        assert_eq!(
            doc,
            serde_json::json!({
                "$comment": "top",
                "executor": {"timeout": "8s"},
                "layers": {"s": {"kind": "proxy"}},
                "tools": [{"name": "x", "input_schema": {"$comment": "keep"}}]
            })
        );
        let mut bad = serde_json::json!({"stripe": {"latency": {"$comment": 3}}});
        let (path, message) = strip_comments(&mut bad).unwrap_err();
        assert_eq!(path.join("."), "stripe.latency.$comment");
        assert!(message.contains("expected a string"), "{message}");
    }
}
