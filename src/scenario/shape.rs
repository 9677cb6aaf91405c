//! Objects where objects belong.
//!
//! serde accepts a JSON array for a struct (its fields in declaration order), so
//! `"latency": ["1s", "2s"]` would load. The generated schema says where objects belong; this
//! walk rejects an array there before serde sees it.

use std::sync::OnceLock;

use serde_json::Value;

use super::error::SCENARIO_EXPECTED;
use super::serde_error::kind;

/// The scenario's JSON Schema, parsed from the shipped `docs/scenario.schema.json` (which
/// `load::tests::schema_file_is_current` keeps identical to `schema_for!(Scenario)`, and
/// `schema_is_the_generated_one` below checks as a value): parsing it costs a fraction of
/// generating it, which was 2.6 % of an incident run's instructions.
fn schema_value() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        serde_json::from_str(include_str!("../../docs/scenario.schema.json")).unwrap_or(Value::Null)
    })
}

/// The path of the first value that is not an object where the format wants one, and the error
/// message.
pub(super) fn check_shape(doc: &Value) -> Result<(), (Vec<String>, String)> {
    if !doc.is_object() {
        return Err((
            Vec::new(),
            format!(
                "invalid type: expected {SCENARIO_EXPECTED}, got {}",
                kind(doc)
            ),
        ));
    }
    let mut path = Vec::new();
    if misplaced_array(doc, schema_value(), &mut path, 0) {
        return Err((
            path,
            "invalid type: expected a JSON object, got an array".to_string(),
        ));
    }
    Ok(())
}

/// Follows `$ref`s (`#/$defs/Name`) into the root schema.
fn resolve(mut node: &Value) -> &Value {
    for _ in 0..64 {
        let Some(target) = node.get("$ref").and_then(Value::as_str) else {
            break;
        };
        match target
            .strip_prefix('#')
            .and_then(|p| schema_value().pointer(p))
        {
            Some(next) => node = next,
            None => break,
        }
    }
    node
}

fn allows(node: &Value, ty: &str) -> bool {
    match node.get("type") {
        Some(Value::String(t)) => t == ty,
        Some(Value::Array(ts)) => ts.iter().any(|t| t == ty),
        _ => false,
    }
}

/// Whether `value` or a value inside it is an array where `node` wants an object; `path` then
/// holds its path.
fn misplaced_array(value: &Value, node: &Value, path: &mut Vec<String>, depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    let node = resolve(node);
    for key in ["anyOf", "oneOf", "allOf"] {
        for alt in node
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if misplaced_array(value, alt, path, depth + 1) {
                return true;
            }
        }
    }
    match value {
        Value::Array(items) => {
            if allows(node, "object") && !allows(node, "array") {
                return true;
            }
            if let Some(item) = node.get("items") {
                for (i, v) in items.iter().enumerate() {
                    path.push(i.to_string());
                    if misplaced_array(v, item, path, depth + 1) {
                        return true;
                    }
                    path.pop();
                }
            }
        }
        Value::Object(map) => {
            for (key, v) in map {
                let sub = node
                    .get("properties")
                    .and_then(|p| p.get(key))
                    .or_else(|| node.get("additionalProperties").filter(|a| a.is_object()));
                if let Some(sub) = sub {
                    path.push(key.clone());
                    if misplaced_array(v, sub, path, depth + 1) {
                        return true;
                    }
                    path.pop();
                }
            }
        }
        _ => {}
    }
    false
}

#[cfg(test)]
mod tests {
    use crate::scenario::load_str;
    use crate::scenario::test_support::{load_with, rejects, with, MINIMAL};

    #[test]
    fn schema_is_the_generated_one() {
        let generated =
            serde_json::to_value(schemars::schema_for!(crate::scenario::Scenario)).unwrap();
        assert_eq!(super::schema_value(), &generated);
    }

    #[test]
    fn wrong_types_say_what_was_expected() {
        rejects(
            &with(r#"{"refunds_service":{"pool_size":"eight"}}"#),
            &[
                "refunds_service.pool_size",
                "invalid type: string \"eight\"",
                "expected a non-negative integer",
            ],
        );
        rejects(
            &with(r#"{"refunds_service":{"pool_size":-1}}"#),
            &["refunds_service.pool_size", "-1", "non-negative integer"],
        );
        rejects(
            &with(r#"{"arrivals":{"schedule":[{"duration":"1m","rate_per_s":"fast"}]}}"#),
            &["arrivals.schedule.0.rate_per_s", "expected a number"],
        );
        rejects(
            &with(r#"{"refunds_service":{"idempotency_key":"per_tiket"}}"#),
            &[
                "refunds_service.idempotency_key",
                "unknown variant `per_tiket`",
                "per_ticket",
            ],
        );
        rejects(
            &with(r#"{"humans":{"enabled":"yes"}}"#),
            &["humans.enabled", "expected true or false"],
        );
        rejects(
            "[1, 2]",
            &["x.json:1:1: (top level): invalid type: expected a JSON object with at least name"],
        );
        rejects(
            &with(r#"{"stripe":{"latency":["1s","2s"]}}"#),
            &["stripe.latency: invalid type: expected a JSON object, got an array"],
        );
        rejects(
            &with(r#"{"executor":{"retry":[2]}}"#),
            &["executor.retry: invalid type"],
        );
        rejects(
            &with(r#"{"arrivals":{"schedule":[["10m", 0.1]]}}"#),
            &["arrivals.schedule.0: invalid type"],
        );
        rejects(
            &with(r#"{"expect":{"tickets":[1, 2]}}"#),
            &["expect.tickets: invalid type"],
        );
        let msg = load_with(MINIMAL, &[], &["stripe.latency=[\"1s\",\"2s\"]"])
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("stripe.latency: invalid type: expected a JSON object, got an array (after applying --set"),
            "{msg}"
        );
        // A tool's input schema is free-form JSON.
        let tool = with(
            r#"{"tools":[{"name":"issue_refund","input_schema":{"type":"object","required":["a"]}}]}"#,
        );
        assert!(load_str(&tool, "x.json").is_ok());
    }
}
