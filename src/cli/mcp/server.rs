//! The MCP server: the four tools' definitions (`tools/list`) and their calls (`tools/call`),
//! each run on a blocking thread under a wall-clock limit, so that one long call never holds
//! up another, or the server's answers to `tools/list` and `ping`.

use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Value};

use refundsim::scenario::RunBudget;

use super::args::{CheckArgs, FixArgs, LintArgs, SimulateArgs};
use super::tools::{self, MAX_CANDIDATES, MAX_EXPLORE_CASES, MAX_SEEDS};

/// The server: the run budget each call's runs are admitted against and watched under, and
/// the wall-clock limit of one call.
#[derive(Clone, Debug)]
pub(crate) struct Server {
    pub(crate) budget: RunBudget,
    pub(crate) call_timeout: Duration,
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("refundsim", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "refundsim simulates a timeout plus a retry on a money-moving tool call in \
                 virtual time. lint_tools: findings on tool definitions and a retry policy; \
                 simulate: one run's summary, invariants and the first duplicated ticket's \
                 story; check_policy: the CI gate's verdict with replay commands; suggest_fix: \
                 the cheapest policy that removes the duplicates. Every tool takes `scenario` \
                 (a path or an object; default the incident), `policies` and `set`, as the CLI \
                 does (docs/mcp.md).",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(definitions()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        definitions().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if self.get_tool(&name).is_none() {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {name:?}; expected one of lint_tools, simulate, check_policy, \
                     suggest_fix"
                ),
                None,
            ));
        }
        let budget = self.budget;
        let arguments = request.arguments;
        // A simulation is CPU work on its own thread; the server's tasks keep answering. A
        // call past the limit is answered with an error, and its result, when it comes, is
        // dropped (the work is bounded by the run budget and the per-call caps).
        let job = tokio::task::spawn_blocking(move || tools::call(&name, arguments, budget));
        let result = match tokio::time::timeout(self.call_timeout, job).await {
            Ok(Ok(Ok(answer))) => {
                let mut r = CallToolResult::success(vec![ContentBlock::text(answer.text)]);
                r.structured_content = Some(answer.structured);
                r
            }
            Ok(Ok(Err(message))) => CallToolResult::error(vec![ContentBlock::text(message)]),
            Ok(Err(e)) => CallToolResult::error(vec![ContentBlock::text(format!(
                "internal error: the call stopped: {e}"
            ))]),
            Err(_) => CallToolResult::error(vec![ContentBlock::text(format!(
                "the call took longer than {} of wall-clock time (refundsim mcp \
                 --call-timeout); expected a smaller call: fewer seeds or explore cases, or a \
                 shorter horizon",
                humantime::format_duration(self.call_timeout)
            ))]),
        };
        Ok(result.into())
    }
}

/// The annotations every tool of this server deserves: it reads its inputs and simulates,
/// changes nothing, gives the same answer to the same call, and reaches nothing outside.
fn annotations(title: &str) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

/// An object schema naming the top-level fields of a command's `--json`; other fields are
/// allowed (the JSON's documented fields grow).
fn output_schema(properties: Value, required: &[&str]) -> Arc<JsonObject> {
    let v = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": true,
    });
    match v {
        Value::Object(o) => Arc::new(o),
        _ => unreachable!("an object literal"),
    }
}

/// The four tools, as `tools/list` gives them.
pub(crate) fn definitions() -> Vec<Tool> {
    let simulate_out = output_schema(
        json!({
            "scenario": {"type": "string", "description": "the scenario's name"},
            "seed": {"type": "integer"},
            "tickets": {"type": "integer"},
            "duplicate_refund_tickets": {"type": "integer"},
            "duplicated_ticket_ids": {"type": "array", "items": {"type": "integer"}},
            "over_refund_cents": {"type": "integer"},
            "invariants": {"type": "array", "items": {"type": "object"}},
            "expectations_met": {"type": "boolean"},
            "story": {"type": "array", "items": {"type": "string"},
                      "description": "the first duplicated (or the asked) ticket's story"},
            "replay": {"type": "string", "description": "the command that replays this run"},
        }),
        &[
            "scenario",
            "seed",
            "tickets",
            "duplicated_ticket_ids",
            "invariants",
            "expectations_met",
            "replay",
        ],
    );
    let check_out = output_schema(
        json!({
            "cases": {"type": "array", "items": {"type": "object"},
                      "description": "one per scenario × policy: checks, invariants, violations with their replay commands, the exploration"},
            "passed": {"type": "boolean"},
        }),
        &["cases", "passed"],
    );
    let lint_out = output_schema(
        json!({
            "files": {"type": "array", "items": {"type": "object"}},
            "findings": {"type": "array", "items": {"type": "object"},
                         "description": "each with its rule id, severity, field path, message, hint and fix (--set overrides)"},
            "queueing": {"type": "array", "items": {"type": "object"}},
        }),
        &["findings"],
    );
    let fix_out = output_schema(
        json!({
            "scenario": {"type": "string"},
            "seeds": {"type": "array", "items": {"type": "integer"}},
            "explore_cases": {"type": "integer"},
            "baseline": {"type": "object", "description": "the scenario as given, verified"},
            "fix": {"type": ["object", "null"],
                    "description": "the cheapest verified answer: its changes, cost and `patch` (a policy), or null"},
            "alternatives": {"type": "array", "items": {"type": "object"}},
            "tried": {"type": "array", "items": {"type": "object"}},
        }),
        &["scenario", "baseline", "fix"],
    );
    vec![
        Tool::new(
            "lint_tools",
            "Static checks of tool definitions (MCP tools/list result, Anthropic or OpenAI \
             function tools) under a retry policy given in plain fields (timeout, \
             on_timeout, who retries, idempotency key): each finding with its rule, field \
             path, hint and fix as --set overrides. Answers `refundsim lint --json` of the \
             scenario `refundsim new` writes for the tools with those fields set.",
            schema_for_type::<LintArgs>(),
        )
        .with_raw_output_schema(lint_out)
        .with_title("Lint tool definitions and a retry policy")
        .with_annotations(annotations("Lint tool definitions and a retry policy")),
        Tool::new(
            "simulate",
            "Run a scenario (default: the incident) once and answer its summary, the \
             invariants and the first duplicated ticket's story, as `refundsim run --ticket \
             T --json`.",
            schema_for_type::<SimulateArgs>(),
        )
        .with_raw_output_schema(simulate_out)
        .with_title("Simulate a scenario")
        .with_annotations(annotations("Simulate a scenario")),
        Tool::new(
            "check_policy",
            format!(
                "The CI gate's verdict on a scenario (default: the incident) bare and under \
                 each policy: every seed against the `expect` bounds plus a bounded \
                 exploration, each violation with the story and the replay command, as \
                 `refundsim check --json`. At most {MAX_SEEDS} seeds and {MAX_EXPLORE_CASES} \
                 explore cases per call."
            ),
            schema_for_type::<CheckArgs>(),
        )
        .with_raw_output_schema(check_out)
        .with_title("Check a policy with the CI gate")
        .with_annotations(annotations("Check a policy with the CI gate")),
        Tool::new(
            "suggest_fix",
            format!(
                "The fewest policy changes that make a scenario (default: the incident) hold \
                 every safety invariant on every seed and a bounded exploration, found by a \
                 counterexample-guided search and verified by simulation: the answer as a \
                 merge patch, alternatives and the evidence, as `refundsim fix --json`. At most \
                 {MAX_SEEDS} seeds, {MAX_EXPLORE_CASES} explore cases and {MAX_CANDIDATES} \
                 candidates per call; the incident's search takes minutes."
            ),
            schema_for_type::<FixArgs>(),
        )
        .with_raw_output_schema(fix_out)
        .with_title("Suggest a fix")
        .with_annotations(annotations("Suggest a fix")),
    ]
}
