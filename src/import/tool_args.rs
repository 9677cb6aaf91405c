//! Which tool-call arguments hold the ticket id and the amount: from the tool definition (the
//! base scenario's `tools`, or `--tool-definition FILE`), then the common names.
//!
//! A team's trace carries the arguments its own tool declares: the incident's `issue_refund`
//! (`scenarios/issue_refund.tool.json`) names them `ticket_id` and `amount_cents`, the incident
//! log writes `ticket=` and `amount=`. The importer therefore tries, in order:
//!
//! 1. a name given with `--ticket-field` / `--amount-field` (then only that name);
//! 2. the tool definition's parameters: first those among the common names, then any whose
//!    name contains `ticket`, then `case`, `ref`, `id` (for the ticket) or `amount`, then
//!    `cents` (for the amount), in name order;
//! 3. the common names [`TICKET_ARGUMENTS`] and [`AMOUNT_ARGUMENTS`].
//!
//! Tool definitions are read in every shape agent teams have (each names its parameters in a
//! JSON Schema `properties` object, except the incident's bare block):
//!
//! | shape | where the parameters are | source |
//! |---|---|---|
//! | MCP `tools/list` result, or one MCP tool | `inputSchema.properties` | MCP specification, "Tools" (`Tool.inputSchema`) |
//! | Anthropic tool | `input_schema.properties` | Anthropic Messages API, "tools" |
//! | OpenAI Chat Completions function | `function.parameters.properties` | OpenAI API reference, `tools[].function` |
//! | OpenAI Responses function | `parameters.properties` (with `"type": "function"`) | OpenAI API reference, Responses `tools[]` |
//! | the incident's published block | `parameters` (each key a parameter) | `scenarios/issue_refund.tool.json` |

use std::path::Path;

use serde_json::Value;

use super::ImportError;
use crate::scenario::ToolDefinition;

/// Argument names that commonly hold a ticket id, tried after the tool definition's.
pub const TICKET_ARGUMENTS: [&str; 3] = ["ticket", "ticket_id", "ticketId"];

/// Argument names that commonly hold an amount in cents, tried after the tool definition's.
pub const AMOUNT_ARGUMENTS: [&str; 3] = ["amount", "amount_cents", "amountCents"];

/// Words that mark a tool definition's parameter as the ticket's, in order of preference
/// (`support_ticket`, `case_ref`, `order_ref`, `conversation_id`).
const TICKET_WORDS: [&str; 4] = ["ticket", "case", "ref", "id"];

/// Words that mark a parameter as the amount's (`refund_amount`, `cents`).
const AMOUNT_WORDS: [&str; 2] = ["amount", "cents"];

/// The argument names to look for, in order, and where they came from (for messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgumentNames {
    /// Names that may hold the ticket id, first match wins.
    pub ticket: Vec<String>,
    /// Names that may hold the amount in cents, first match wins.
    pub amount: Vec<String>,
}

impl Default for ArgumentNames {
    /// The common names only.
    fn default() -> Self {
        ArgumentNames::resolve(&[], None, None)
    }
}

impl ArgumentNames {
    /// The names to try: `ticket_flag` / `amount_flag` alone when given; otherwise the
    /// definition's `parameters` (the common names among them first, then any containing
    /// `ticket`, `case`, `ref` or `id` / `amount` or `cents`), then the common names.
    pub fn resolve(
        parameters: &[String],
        ticket_flag: Option<&str>,
        amount_flag: Option<&str>,
    ) -> Self {
        let pick = |flag: Option<&str>, common: &[&str], words: &[&str]| -> Vec<String> {
            if let Some(f) = flag {
                return vec![f.to_string()];
            }
            let mut out: Vec<String> = Vec::new();
            let mut push = |n: &str| {
                if !out.iter().any(|o| o == n) {
                    out.push(n.to_string());
                }
            };
            for p in parameters.iter().filter(|p| common.contains(&p.as_str())) {
                push(p);
            }
            for word in words {
                for p in parameters
                    .iter()
                    .filter(|p| p.to_ascii_lowercase().contains(word))
                {
                    push(p);
                }
            }
            for c in common {
                push(c);
            }
            out
        };
        ArgumentNames {
            ticket: pick(ticket_flag, &TICKET_ARGUMENTS, &TICKET_WORDS),
            amount: pick(amount_flag, &AMOUNT_ARGUMENTS, &AMOUNT_WORDS),
        }
    }

    /// The ticket names as a list for messages: `` `ticket_id`, `ticket` or `ticketId` ``.
    pub fn ticket_list(&self) -> String {
        listed(&self.ticket)
    }

    /// The amount names as a list for messages.
    pub fn amount_list(&self) -> String {
        listed(&self.amount)
    }
}

/// `` `a`, `b` or `c` ``.
pub(crate) fn listed(names: &[String]) -> String {
    listed_with(names, "or")
}

/// `` `a`, `b` and `c` ``.
pub(crate) fn listed_all(names: &[String]) -> String {
    listed_with(names, "and")
}

fn listed_with(names: &[String], conjunction: &str) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.len() {
        0 => String::new(),
        1 => quoted[0].clone(),
        n => format!(
            "{} {conjunction} {}",
            quoted[..n - 1].join(", "),
            quoted[n - 1]
        ),
    }
}

/// The parameter names of one tool definition value in any shape the module docs list, with
/// the tool's name; `None` when `v` is not a tool definition.
pub fn parameters_of(v: &Value) -> Option<(String, Vec<String>)> {
    let o = v.as_object()?;
    // OpenAI Chat Completions: {"type": "function", "function": {"name", "parameters"}}
    if let Some(f) = o.get("function").and_then(Value::as_object) {
        let name = f.get("name")?.as_str()?.to_string();
        return Some((name, schema_properties(f.get("parameters"))));
    }
    let name = o.get("name")?.as_str()?.to_string();
    let schema = o
        .get("inputSchema")
        .or_else(|| o.get("input_schema"))
        .or_else(|| o.get("parameters"));
    Some((name, schema_properties(schema)))
}

/// The property names of a JSON Schema object (`properties`), or of a bare parameter block
/// (each key a parameter, as the incident's definition has it), in name order.
fn schema_properties(schema: Option<&Value>) -> Vec<String> {
    let Some(Value::Object(s)) = schema else {
        return Vec::new();
    };
    match s.get("properties") {
        Some(Value::Object(p)) => p.keys().cloned().collect(),
        _ if s.contains_key("type") => Vec::new(),
        _ => s.keys().cloned().collect(),
    }
}

/// The parameters of tool `tool` in the scenario's tool definitions; `None` when it has none.
pub fn parameters_in_scenario(tools: &[ToolDefinition], tool: &str) -> Option<Vec<String>> {
    let t = tools.iter().find(|t| t.name == tool)?;
    let names = schema_properties(t.input_schema.as_ref().or(t.parameters.as_ref()));
    (!names.is_empty()).then_some(names)
}

/// Reads `--tool-definition FILE`: one tool definition, an array of them, `{"tools": [...]}`
/// or an MCP `tools/list` response (`{"result": {"tools": [...]}}`), in any shape the module
/// docs list. Returns every tool's (name, parameters).
///
/// # Errors
/// The file cannot be read, is not JSON, or holds no tool definition (the message names the
/// file and the shapes expected).
pub fn read_definitions(path: &Path) -> Result<Vec<(String, Vec<String>)>, ImportError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ImportError::at(&name, 0, format!("cannot read: {e}")))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let v: Value = serde_json::from_str(text).map_err(|e| {
        ImportError::at(
            &name,
            e.line() as u64,
            format!(
                "not valid JSON ({}): expected a tool definition",
                super::fields::bare_message(&e)
            ),
        )
    })?;
    let list = match &v {
        Value::Array(items) => items.clone(),
        Value::Object(o) => match o
            .get("result")
            .and_then(|r| r.get("tools"))
            .or_else(|| o.get("tools"))
        {
            Some(Value::Array(items)) => items.clone(),
            _ => vec![v.clone()],
        },
        _ => Vec::new(),
    };
    let defs: Vec<(String, Vec<String>)> = list.iter().filter_map(parameters_of).collect();
    if defs.is_empty() {
        return Err(ImportError::at(
            &name,
            1,
            "expected a tool definition (MCP `inputSchema`, Anthropic `input_schema`, OpenAI \
             `function.parameters` or `parameters`), an array of them, or a `tools/list` result",
        ));
    }
    Ok(defs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn every_shape_gives_its_parameters() {
        let want = Some((
            "issue_refund".to_string(),
            names(&["amount_cents", "ticket_id"]),
        ));
        let schema = json!({"type": "object", "properties": {"ticket_id": {"type": "string"}, "amount_cents": {"type": "integer"}}});
        for def in [
            json!({"name": "issue_refund", "inputSchema": schema}),
            json!({"name": "issue_refund", "input_schema": schema}),
            json!({"type": "function", "function": {"name": "issue_refund", "parameters": schema}}),
            json!({"type": "function", "name": "issue_refund", "parameters": schema}),
            json!({"name": "issue_refund", "parameters": {"ticket_id": {"type": "string"}, "amount_cents": {"type": "integer"}}}),
        ] {
            assert_eq!(parameters_of(&def), want, "{def}");
        }
        assert_eq!(parameters_of(&json!({"description": "x"})), None);
    }

    #[test]
    fn the_definitions_names_come_first_then_the_common_ones() {
        let a =
            ArgumentNames::resolve(&names(&["reason", "amount_cents", "ticket_id"]), None, None);
        assert_eq!(a.ticket, names(&["ticket_id", "ticket", "ticketId"]));
        assert_eq!(a.amount, names(&["amount_cents", "amount", "amountCents"]));
        let b =
            ArgumentNames::resolve(&names(&["support_ticket_ref", "refund_amount"]), None, None);
        assert_eq!(b.ticket[0], "support_ticket_ref");
        assert_eq!(b.amount[0], "refund_amount");
        let c = ArgumentNames::resolve(&names(&["ticket_id"]), Some("case"), Some("cents"));
        assert_eq!((c.ticket, c.amount), (names(&["case"]), names(&["cents"])));
        assert_eq!(
            ArgumentNames::default().ticket_list(),
            "`ticket`, `ticket_id` or `ticketId`"
        );
    }

    #[test]
    fn the_shipped_tool_names_ticket_id_and_amount_cents() {
        let tools = crate::scenario::default_tools();
        assert_eq!(
            parameters_in_scenario(&tools, "issue_refund"),
            Some(names(&["amount_cents", "reason", "ticket_id"]))
        );
    }
}
