//! `refundsim lint`: static checks of scenarios, policies and tool definitions, and of the tools
//! a live MCP server lists (`--mcp-server`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use refundsim::error::CliError;
use refundsim::lint;

use super::{emit, exit, print_json};

#[derive(clap::Args)]
pub(crate) struct LintArgs {
    /// Scenarios, policies, MCP `tools/list` results or Anthropic tool definitions (JSON). With
    /// --mcp-server: at most one scenario (or policy) whose policy the server's tools are linted
    /// against (default: the incident's rule).
    #[arg(required_unless_present = "mcp_server", value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Start this MCP server over stdio ("COMMAND [ARGS]", split as a POSIX shell would, run
    /// without a shell), read every page of its tools/list and lint each tool's annotations
    /// against the policy: e.g. --mcp-server "npx -y @modelcontextprotocol/server-everything".
    #[arg(long, value_name = "COMMAND")]
    mcp_server: Option<String>,
    /// With --mcp-server: how long each step (initialize, each tools/list page) may take before
    /// the server is given up on (exit 2).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = humantime::parse_duration)]
    mcp_timeout: Duration,
    /// Merge this policy into each scenario before linting (as `show` does); repeatable, in
    /// order. With it, every FILE must be a scenario.
    #[arg(long = "policy", value_name = "POLICY")]
    policies: Vec<PathBuf>,
    /// Override one field of each scenario before linting, after policies; repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Print the findings as JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(a: LintArgs) -> anyhow::Result<ExitCode> {
    if let Some(command) = &a.mcp_server {
        return run_server(command, &a);
    }
    let report = lint::lint_files_with(&a.files, &a.policies, &a.sets)?;
    if a.json {
        print_json(&report)?;
    } else {
        emit(lint::lint_text(&report))?;
    }
    Ok(exit(!report.has_errors()))
}

fn run_server(command: &str, a: &LintArgs) -> anyhow::Result<ExitCode> {
    if a.files.len() > 1 {
        return Err(CliError::Input(format!(
            "--mcp-server takes at most one scenario (or policy) to lint the server's tools \
             against, and {} files were given",
            a.files.len()
        ))
        .into());
    }
    if a.mcp_timeout.is_zero() {
        return Err(CliError::Input(
            "--mcp-timeout 0s: expected a positive duration, e.g. 30s".into(),
        )
        .into());
    }
    // The policy first: a bad scenario is reported without starting the server.
    let listing_free = lint::ServerListing {
        command: command.to_string(),
        name: String::new(),
        version: String::new(),
        protocol_version: String::new(),
        pages: 0,
        tools: Vec::new(),
    };
    let scenario = a.files.first().map(PathBuf::as_path);
    lint::lint_server(&listing_free, scenario, &a.policies, &a.sets)?;
    let listing = super::lint_server::read_server(command, a.mcp_timeout)?;
    let report = lint::lint_server(&listing, scenario, &a.policies, &a.sets)?;
    if a.json {
        print_json(&report)?;
    } else {
        emit(lint::server_lint_text(&report))?;
    }
    Ok(exit(!report.has_errors()))
}
