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

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::value::RawValue;
use serde_json::Value;

use super::ImportError;
use crate::scenario::ToolDefinition;

/// Argument names that commonly hold a ticket id, tried after the tool definition's.
pub(crate) const TICKET_ARGUMENTS: [&str; 3] = ["ticket", "ticket_id", "ticketId"];

/// Argument names that commonly hold an amount in cents, tried after the tool definition's.
pub(crate) const AMOUNT_ARGUMENTS: [&str; 3] = ["amount", "amount_cents", "amountCents"];

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

/// What a call's arguments were, for messages: `` its arguments are `a` and `b` ``, or `it has
/// no arguments`.
pub(crate) fn arguments_seen(names: &[String]) -> String {
    if names.is_empty() {
        "it has no arguments".to_string()
    } else {
        format!("its arguments are {}", listed_all(names))
    }
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
/// the tool's name; `None` when `v` is not a tool definition (see [`definition`] for why).
#[cfg(test)]
pub(crate) fn parameters_of(v: &Value) -> Option<(String, Vec<String>)> {
    definition(v).ok()
}

/// One tool definition in any shape the module docs list: the tool's name and its parameter
/// names. A definition has a non-empty `name` (for the Chat Completions shape, under
/// `function`) and an object of parameters under `inputSchema` (MCP), `input_schema`
/// (Anthropic) or `parameters` (OpenAI, or the incident's bare block); anything else — an
/// object with a `name` and nothing saying what the tool takes — is not one.
///
/// # Errors
/// What is missing, in words (`` `lookup` has no `inputSchema` … ``), for a message that also
/// names the file and the value's path.
pub(crate) fn definition(v: &Value) -> Result<(String, Vec<String>), String> {
    const SHAPES: &str = "expected a tool definition: an MCP tool (`name`, `inputSchema`), an \
                          Anthropic tool (`name`, `input_schema`), an OpenAI function (`name`, \
                          `parameters`, or `{\"type\": \"function\", \"function\": {…}}`) or the \
                          incident's block (`name`, `parameters`)";
    let Some(o) = v.as_object() else {
        return Err(format!("{SHAPES}, got {}", super::fields::shown(v)));
    };
    // OpenAI Chat Completions: {"type": "function", "function": {"name", "parameters"}}
    let (o, prefix) = match o.get("function") {
        Some(Value::Object(f)) => (f, "function."),
        Some(other) => {
            return Err(format!(
                "function: expected the function's definition (an object with `name` and \
                 `parameters`), got {}",
                super::fields::shown(other)
            ))
        }
        None => (o, ""),
    };
    let name = match o.get("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n.clone(),
        Some(other) => {
            return Err(format!(
                "{prefix}name: expected the tool's name (a non-empty string), got {}",
                super::fields::shown(other)
            ))
        }
        None => return Err(format!("no `{prefix}name`: {SHAPES}")),
    };
    let keys: &[&str] = if prefix.is_empty() {
        &["inputSchema", "input_schema", "parameters"]
    } else {
        &["parameters"]
    };
    match keys.iter().find_map(|k| o.get(*k).map(|s| (*k, s))) {
        Some((_, schema @ Value::Object(_))) => Ok((name, schema_properties(Some(schema)))),
        Some((k, other)) => Err(format!(
            "{prefix}{k}: expected the parameters of `{name}` (a JSON Schema object, or the \
             incident's block of parameters), got {}",
            super::fields::shown(other)
        )),
        None => Err(format!(
            "`{name}` has no {}: {SHAPES}",
            if prefix.is_empty() {
                "`inputSchema`, `input_schema` or `parameters` (nothing says what it takes)"
            } else {
                "`function.parameters` (nothing says what it takes)"
            }
        )),
    }
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
pub(crate) fn parameters_in_scenario(tools: &[ToolDefinition], tool: &str) -> Option<Vec<String>> {
    let t = tools.iter().find(|t| t.name == tool)?;
    let names = schema_properties(t.input_schema.as_ref().or(t.parameters.as_ref()));
    (!names.is_empty()).then_some(names)
}

/// One tool definition of a `--tool-definition` file: the tool's name, its parameter names
/// and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Definition {
    /// The tool's name.
    pub name: String,
    /// Its parameter names, in name order.
    pub parameters: Vec<String>,
    /// Its field path in the file (`tools[1]`), empty for a file holding one definition.
    pub path: String,
    /// The line it starts on.
    pub line: u64,
}

/// Reads `--tool-definition FILE`: one tool definition, an array of them, `{"tools": [...]}`
/// or an MCP `tools/list` response (`{"result": {"tools": [...]}}`), in any shape the module
/// docs list ([`definition`]). Returns every tool's definition, in file order.
///
/// # Errors
/// The file cannot be read, is not JSON, or holds something that is not a tool definition (the
/// message names the file, the line and path of the value, and the shapes expected).
pub(crate) fn read_definitions(path: &Path) -> Result<Vec<Definition>, ImportError> {
    let name = path.display().to_string();
    let text = read_definitions_text(&name, path)?;
    let file = DefinitionsFile {
        name: &name,
        text: &text,
        lines: super::fields::Lines::new(&text),
    };
    let body = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let doc: &RawValue =
        serde_json::from_str(body).map_err(|e| file.not_json(&e, e.line() as u64))?;
    let items = file.items(doc)?;
    if items.is_empty() {
        return Err(ImportError::at(
            &name,
            file.line_of(doc),
            "no tool definition in the file: expected a tool definition, an array of them, \
             `{\"tools\": [...]}` or a `tools/list` result",
        ));
    }
    items
        .into_iter()
        .map(|(at, raw)| file.definition_at(at, raw))
        .collect()
}

/// The text of the tool definitions file `path` (named `name` in messages).
///
/// # Errors
/// The file cannot be read, is not UTF-8, or is empty (or only a byte order mark and
/// whitespace).
fn read_definitions_text(name: &str, path: &Path) -> Result<String, ImportError> {
    let bytes = crate::input::read_input(path, "a tool definition")
        .map_err(|e| ImportError::at(name, 0, e.reason()))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let (line, column, what) = crate::scenario::not_utf8_at(e.as_bytes(), e.utf8_error());
        ImportError::at(
            name,
            line as u64,
            format!("{what} at column {column}; expected a JSON tool definition"),
        )
    })?;
    if text
        .strip_prefix('\u{feff}')
        .unwrap_or(&text)
        .trim()
        .is_empty()
    {
        return Err(ImportError::at(
            name,
            0,
            "file is empty; expected a JSON tool definition",
        ));
    }
    Ok(text)
}

/// A tool definitions file being read: its name, its text and where its lines start.
struct DefinitionsFile<'t> {
    name: &'t str,
    text: &'t str,
    lines: super::fields::Lines,
}

impl<'t> DefinitionsFile<'t> {
    /// The line a value of the text starts on.
    fn line_of(&self, raw: &RawValue) -> u64 {
        self.lines
            .line_of((raw.get().as_ptr() as usize).saturating_sub(self.text.as_ptr() as usize))
    }

    /// The error for JSON that does not parse, at `line`.
    fn not_json(&self, e: &serde_json::Error, line: u64) -> ImportError {
        if crate::input::is_nesting_limit(e) {
            return ImportError::at(self.name, line, super::fields::bare_message(e));
        }
        ImportError::at(
            self.name,
            line,
            format!(
                "not valid JSON ({}): expected a tool definition",
                super::fields::bare_message(e)
            ),
        )
    }

    /// The definitions in document `doc` with their paths: an array's items, a `tools`
    /// array's (at the top or under `result`, [`tools_list`]), else the document itself.
    ///
    /// # Errors
    /// The array or object does not parse, or `tools` is not an array.
    fn items(&self, doc: &'t RawValue) -> Result<Vec<(String, &'t RawValue)>, ImportError> {
        if doc.get().starts_with('[') {
            let items: Vec<&RawValue> = serde_json::from_str(doc.get())
                .map_err(|e| self.not_json(&e, self.line_of(doc)))?;
            return Ok(super::fields::numbered("", items));
        }
        let fields: BTreeMap<String, &RawValue> = if doc.get().starts_with('{') {
            serde_json::from_str(doc.get()).map_err(|e| self.not_json(&e, self.line_of(doc)))?
        } else {
            Default::default()
        };
        match tools_list(&fields) {
            Some((at, list)) => {
                let items: Vec<&RawValue> = serde_json::from_str(list.get()).map_err(|_| {
                    ImportError::at(
                        self.name,
                        self.line_of(list),
                        format!("{at}: expected an array of tool definitions"),
                    )
                })?;
                Ok(super::fields::numbered(at, items))
            }
            None => Ok(vec![(String::new(), doc)]),
        }
    }

    /// The tool definition `raw`, at path `at` (empty for the whole file).
    ///
    /// # Errors
    /// It does not parse, or is not a tool definition ([`definition`]): the message names its
    /// line and path.
    fn definition_at(&self, at: String, raw: &RawValue) -> Result<Definition, ImportError> {
        let line = self.line_of(raw);
        let v: Value = serde_json::from_str(raw.get()).map_err(|e| self.not_json(&e, line))?;
        let (tool, parameters) = definition(&v).map_err(|message| {
            let message = if at.is_empty() {
                message
            } else {
                format!("{at}: {message}")
            };
            ImportError::at(self.name, line, message)
        })?;
        Ok(Definition {
            name: tool,
            parameters,
            path: at,
            line,
        })
    }
}

/// The `tools` array of an MCP `tools/list` response (`result.tools`), else of
/// `{"tools": [...]}`, with its path; `fields` are the document's.
fn tools_list<'t>(fields: &BTreeMap<String, &'t RawValue>) -> Option<(&'static str, &'t RawValue)> {
    let result_tools = fields
        .get("result")
        .filter(|r| r.get().starts_with('{'))
        .and_then(|r| {
            serde_json::from_str::<BTreeMap<String, &RawValue>>(r.get())
                .ok()?
                .get("tools")
                .copied()
        })
        .map(|t| ("result.tools", t));
    result_tools.or_else(|| fields.get("tools").map(|t| ("tools", *t)))
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
    fn an_object_with_a_name_only_is_not_a_definition() {
        assert_eq!(
            definition(&json!({"name": "issue_refund"})).unwrap_err(),
            "`issue_refund` has no `inputSchema`, `input_schema` or `parameters` (nothing says \
             what it takes): expected a tool definition: an MCP tool (`name`, `inputSchema`), an \
             Anthropic tool (`name`, `input_schema`), an OpenAI function (`name`, `parameters`, \
             or `{\"type\": \"function\", \"function\": {…}}`) or the incident's block (`name`, \
             `parameters`)"
        );
        assert_eq!(
            definition(&json!({"name": "t", "inputSchema": "x"})).unwrap_err(),
            "inputSchema: expected the parameters of `t` (a JSON Schema object, or the \
             incident's block of parameters), got \"x\""
        );
        assert_eq!(
            definition(&json!({"type": "function", "function": {"name": "t"}})).unwrap_err(),
            "`t` has no `function.parameters` (nothing says what it takes): expected a tool \
             definition: an MCP tool (`name`, `inputSchema`), an Anthropic tool (`name`, \
             `input_schema`), an OpenAI function (`name`, `parameters`, or `{\"type\": \
             \"function\", \"function\": {…}}`) or the incident's block (`name`, `parameters`)"
        );
        assert!(definition(&json!({"name": "", "parameters": {}})).is_err());
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
