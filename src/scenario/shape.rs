//! Objects where objects belong.
//!
//! serde accepts a JSON array for a struct (its fields in declaration order), so
//! `"latency": ["1s", "2s"]` would load. The generated schema says where objects belong; this
//! walk rejects an array there before serde sees it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::error::SCENARIO_EXPECTED;
use super::serde_error::kind;

/// The shipped `docs/scenario.schema.json` (which `load::tests::schema_file_is_current` keeps
/// identical to `schema_json()`, and `schema_is_the_generated_one` below checks as a
/// value).
const SCHEMA_JSON: &str = include_str!("../../docs/scenario.schema.json");

/// The scenario's JSON Schema as far as the walk reads it, parsed from [`SCHEMA_JSON`]: parsing
/// it costs a fraction of generating it (which was 2.6 % of an incident run's instructions),
/// and reading only these keywords into typed fields (descriptions, defaults and the rest
/// skipped, not kept) a fraction of parsing it into a `serde_json::Value`.
fn schema() -> &'static Node {
    static SCHEMA: OnceLock<Node> = OnceLock::new();
    SCHEMA.get_or_init(|| serde_json::from_str(SCHEMA_JSON).unwrap_or_default())
}

/// One schema node: the keywords that say where objects belong. A boolean schema (`true`,
/// `false`) reads as a node without any of them, as it did as a `Value` (whose `get` finds
/// nothing in a boolean).
#[derive(Default)]
struct Node {
    /// `$ref`: `#/$defs/Name`.
    reference: Option<String>,
    /// `type`: one type name or several.
    types: Vec<String>,
    /// `anyOf`, `oneOf` and `allOf`, in that order.
    alternatives: [Vec<Node>; 3],
    items: Option<Box<Node>>,
    properties: BTreeMap<String, Node>,
    /// `additionalProperties` when it is an object (a boolean does not describe the values).
    additional: Option<Box<Node>>,
    /// `$defs` (the root's).
    defs: BTreeMap<String, Node>,
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON Schema (an object or a boolean)")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Node, E> {
        Ok(Node::default())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut node = Node::default();
        while let Some(Keyword(key)) = map.next_key()? {
            match key {
                Some(Read::Ref) => node.reference = map.next_value::<Option<String>>()?,
                Some(Read::Type) => node.types = map.next_value::<Types>()?.0,
                Some(Read::Alternatives(i)) => node.alternatives[i] = map.next_value()?,
                Some(Read::Items) => node.items = Some(map.next_value()?),
                Some(Read::Properties) => node.properties = map.next_value()?,
                Some(Read::Additional) => {
                    node.additional = map.next_value::<Additional>()?.0.map(Box::new);
                }
                Some(Read::Defs) => node.defs = map.next_value()?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(node)
    }
}

/// The keywords a [`Node`] keeps.
enum Read {
    Ref,
    Type,
    /// `anyOf`, `oneOf`, `allOf`: 0, 1, 2.
    Alternatives(usize),
    Items,
    Properties,
    Additional,
    Defs,
}

/// A key of a schema object: the keyword it names if a [`Node`] keeps it (read without
/// allocating).
struct Keyword(Option<Read>);

impl<'de> Deserialize<'de> for Keyword {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Keyword;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a keyword")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Keyword, E> {
                Ok(Keyword(match v {
                    "$ref" => Some(Read::Ref),
                    "type" => Some(Read::Type),
                    "anyOf" => Some(Read::Alternatives(0)),
                    "oneOf" => Some(Read::Alternatives(1)),
                    "allOf" => Some(Read::Alternatives(2)),
                    "items" => Some(Read::Items),
                    "properties" => Some(Read::Properties),
                    "additionalProperties" => Some(Read::Additional),
                    "$defs" => Some(Read::Defs),
                    _ => None,
                }))
            }
        }
        d.deserialize_str(V)
    }
}

/// A `type` keyword: a type name or an array of them.
struct Types(Vec<String>);

impl<'de> Deserialize<'de> for Types {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Types;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a type name or an array of them")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Types, E> {
                Ok(Types(vec![v.to_owned()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Types, A::Error> {
                let mut all = Vec::new();
                while let Some(t) = seq.next_element::<String>()? {
                    all.push(t);
                }
                Ok(Types(all))
            }
        }
        d.deserialize_any(V)
    }
}

/// An `additionalProperties` keyword: a schema for the values when it is an object.
struct Additional(Option<Node>);

impl<'de> Deserialize<'de> for Additional {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Additional;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON Schema (an object or a boolean)")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Additional, E> {
                Ok(Additional(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Additional, A::Error> {
                NodeVisitor.visit_map(map).map(|n| Additional(Some(n)))
            }
        }
        d.deserialize_any(V)
    }
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
    if misplaced_array(doc, schema(), &mut path, 0) {
        // The walk pushed the path's segments innermost first, on its way out.
        path.reverse();
        return Err((
            path,
            "invalid type: expected a JSON object, got an array".to_string(),
        ));
    }
    Ok(())
}

/// Follows `$ref`s (`#/$defs/Name`) into the root schema.
fn resolve(mut node: &Node) -> &Node {
    for _ in 0..64 {
        let Some(target) = node.reference.as_deref() else {
            break;
        };
        match target
            .strip_prefix("#/$defs/")
            .and_then(|name| schema().defs.get(name))
        {
            Some(next) => node = next,
            None => break,
        }
    }
    node
}

fn allows(node: &Node, ty: &str) -> bool {
    node.types.iter().any(|t| t == ty)
}

/// Whether `value` or a value inside it is an array where `node` wants an object; `path` then
/// holds its path, innermost segment first (segments are only written on the way out of a
/// match, so a scenario without one allocates none).
fn misplaced_array(value: &Value, node: &Node, path: &mut Vec<String>, depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    let node = resolve(node);
    for alt in node.alternatives.iter().flatten() {
        if misplaced_array(value, alt, path, depth + 1) {
            return true;
        }
    }
    match value {
        Value::Array(items) => {
            if allows(node, "object") && !allows(node, "array") {
                return true;
            }
            if let Some(item) = node.items.as_deref() {
                for (i, v) in items.iter().enumerate() {
                    if misplaced_array(v, item, path, depth + 1) {
                        path.push(i.to_string());
                        return true;
                    }
                }
            }
        }
        Value::Object(map) => {
            for (key, v) in map {
                let sub = node.properties.get(key).or(node.additional.as_deref());
                if let Some(sub) = sub {
                    if misplaced_array(v, sub, path, depth + 1) {
                        path.push(key.clone());
                        return true;
                    }
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
        let generated: serde_json::Value =
            serde_json::from_str(&crate::scenario::schema_json()).unwrap();
        let shipped: serde_json::Value = serde_json::from_str(super::SCHEMA_JSON).unwrap();
        assert_eq!(shipped, generated);
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
