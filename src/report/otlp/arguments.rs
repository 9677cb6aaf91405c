//! The tool call's arguments and result as JSON text, the way a real tool span records them
//! (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`).
//!
//! The arguments carry the names the tool definition declares: the scenario's `tools` entry for
//! `agent.tool`, its ticket and amount parameters picked as `refundsim import` picks them
//! ([`crate::import::ArgumentNames`]: `ticket_id` and `amount_cents` for the shipped
//! `issue_refund`). A parameter the definition types `integer` or `number` is written as a
//! number, any other as a string (the shipped tool's `ticket_id` is a string).

use serde_json::Value;

use crate::import::tool_args::parameters_in_scenario;
use crate::import::ArgumentNames;
use crate::scenario::{Scenario, ToolDefinition};

/// The tool's ticket and amount arguments: their names, and the JSON Schema type the
/// definition declares for each (`None` when it declares none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolArguments {
    ticket: (String, Option<String>),
    amount: (String, Option<String>),
}

impl ToolArguments {
    /// The arguments of the scenario's refund tool (`agent.tool`), from its definition in
    /// `tools`; without a definition that declares parameters, `ticket` and `amount`.
    pub fn of(sc: &Scenario) -> ToolArguments {
        let params = parameters_in_scenario(&sc.tools, &sc.agent.tool).unwrap_or_default();
        let names = ArgumentNames::resolve(&params, None, None);
        let def = sc.tools.iter().find(|t| t.name == sc.agent.tool);
        let pick = |list: &[String], fallback: &str| {
            let name = list.first().map_or(fallback, String::as_str).to_string();
            let declared = def.and_then(|d| declared_type(d, &name));
            (name, declared)
        };
        ToolArguments {
            ticket: pick(&names.ticket, "ticket"),
            amount: pick(&names.amount, "amount"),
        }
    }

    /// `{"TICKET_ARG":…,"AMOUNT_ARG":…}`: the ticket as a string, or as a number when the
    /// definition types it `integer` or `number` and it reads as one; the amount in cents as
    /// a number, or as text when the definition types it `string`.
    pub fn json(&self, ticket: &str, amount_cents: u64) -> String {
        let ticket_value = match ticket.parse::<u64>() {
            Ok(n) if is_number(&self.ticket.1) => n.to_string(),
            _ => json_string(ticket),
        };
        let amount_value = if self.amount.1.as_deref() == Some("string") {
            json_string(&amount_cents.to_string())
        } else {
            amount_cents.to_string()
        };
        format!(
            "{{{}:{ticket_value},{}:{amount_value}}}",
            json_string(&self.ticket.0),
            json_string(&self.amount.0)
        )
    }
}

fn is_number(declared: &Option<String>) -> bool {
    matches!(declared.as_deref(), Some("integer" | "number"))
}

/// The JSON Schema `type` the definition declares for parameter `name` (in
/// `input_schema.properties`, or the incident's bare `parameters` block).
fn declared_type(def: &ToolDefinition, name: &str) -> Option<String> {
    let schema = def.input_schema.as_ref().or(def.parameters.as_ref());
    let Some(Value::Object(s)) = schema else {
        return None;
    };
    let props = match s.get("properties") {
        Some(Value::Object(p)) => p,
        _ => s,
    };
    props
        .get(name)
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// What the model was shown, as a JSON object when it has the shape the executor writes (`{
/// status: "refunded", refund_id: "re_…" }`: keys unquoted, values quoted), else as a JSON
/// string of the text.
pub(crate) fn result_json(shown: &str) -> String {
    match shown_fields(shown) {
        Some(fields) => {
            let pairs: Vec<String> = fields
                .iter()
                .map(|(k, v)| format!("{}:{}", json_string(k), json_string(v)))
                .collect();
            format!("{{{}}}", pairs.join(","))
        }
        None => json_string(shown),
    }
}

/// The text of a result that did not succeed: its `error` (`{ error: "timeout after 8000ms" }`
/// → `timeout after 8000ms`), else its `note` (an unknown outcome's `outcome unknown; do not
/// retry`), else the text as shown.
pub(crate) fn error_text(shown: &str) -> String {
    let fields = shown_fields(shown).unwrap_or_default();
    ["error", "note"]
        .iter()
        .find_map(|key| {
            fields
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        })
        .unwrap_or_else(|| shown.to_string())
}

/// The `key: "value"` pairs of an executor result, in order; `None` when `shown` is not one.
fn shown_fields(shown: &str) -> Option<Vec<(String, String)>> {
    let body = shown.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut rest = body.trim_start();
    let mut fields = Vec::new();
    while !rest.is_empty() {
        let key_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if key_len == 0 {
            return None;
        }
        let key = &rest[..key_len];
        rest = rest[key_len..].trim_start().strip_prefix(':')?.trim_start();
        let (value, after) = quoted(rest)?;
        fields.push((key.to_string(), value));
        rest = after.trim_start();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r.trim_start();
        } else if !rest.is_empty() {
            return None;
        }
    }
    Some(fields)
}

/// A double-quoted value at the start of `s` (a backslash escapes the next character), and
/// what follows it.
fn quoted(s: &str) -> Option<(String, &str)> {
    let mut chars = s.strip_prefix('"')?.char_indices();
    let mut value = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((value, &s[1 + i + 1..])),
            '\\' => value.push(chars.next()?.1),
            c => value.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_tool_takes_a_string_ticket_id_and_integer_amount_cents() {
        let sc = crate::scenario::load_str(r#"{"name":"t","horizon":"10m","arrivals":{"schedule":[{"duration":"10m","rate_per_s":0.05}]}}"#, "inline").unwrap();
        let args = ToolArguments::of(&sc);
        assert_eq!(
            args.json("47512", 4200),
            r#"{"ticket_id":"47512","amount_cents":4200}"#
        );
    }

    #[test]
    fn a_tool_typing_its_ticket_an_integer_gets_a_number() {
        let sc = crate::scenario::load_str(
            r#"{"name":"t","horizon":"10m","arrivals":{"schedule":[{"duration":"10m","rate_per_s":0.05}]},"agent":{"tool":"refund"},"tools":[{"name":"refund","input_schema":
               {"type":"object","properties":{"case_ref":{"type":"integer"},"cents":{"type":"integer"}}}}]}"#,
            "inline",
        )
        .unwrap();
        let args = ToolArguments::of(&sc);
        assert_eq!(args.json("12", 500), r#"{"case_ref":12,"cents":500}"#);
        // A ticket that is not a number stays text.
        assert_eq!(args.json("T-7", 500), r#"{"case_ref":"T-7","cents":500}"#);
    }

    #[test]
    fn results_become_json_objects() {
        assert_eq!(
            result_json(r#"{ status: "refunded", refund_id: "re_00000002" }"#),
            r#"{"status":"refunded","refund_id":"re_00000002"}"#
        );
        assert_eq!(
            result_json(
                r#"{ status: "unknown", note: "timeout after 15000ms (sidecar); outcome unknown, do not retry" }"#
            ),
            r#"{"status":"unknown","note":"timeout after 15000ms (sidecar); outcome unknown, do not retry"}"#
        );
        assert_eq!(result_json("plain text"), r#""plain text""#);
        assert_eq!(
            error_text(r#"{ error: "timeout after 8000ms" }"#),
            "timeout after 8000ms"
        );
        assert_eq!(
            error_text(r#"{ status: "pending", note: "outcome unknown; do not retry" }"#),
            "outcome unknown; do not retry"
        );
        assert_eq!(error_text("odd"), "odd");
        assert_eq!(shown_fields(r#"{ a: "x" b: "y" }"#), None);
    }
}
