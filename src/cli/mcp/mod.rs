//! `refundsim mcp`: an MCP server over stdio (the official Rust SDK, rmcp) whose tools are the
//! CLI's commands: `lint_tools`, `simulate`, `check_policy` and `suggest_fix` (docs/mcp.md).
//!
//! Stdout carries the protocol's messages only; diagnostics go to stderr (`REFUNDSIM_LOG`).
//! The server stops when its client closes stdin.

use std::process::ExitCode;
use std::time::Duration;

use refundsim::error::CliError;
use rmcp::ServiceExt;

mod args;
mod inputs;
mod server;
mod tools;

#[derive(clap::Args)]
pub(crate) struct McpArgs {
    /// Wall-clock limit of one tool call, e.g. `2m`: past it the call answers an error (the
    /// server goes on answering other calls meanwhile).
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = parse_timeout)]
    call_timeout: Duration,
}

/// `--call-timeout`: a humantime duration from 1 s to 1 h.
fn parse_timeout(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s)
        .map_err(|e| format!("{e}; expected a duration like \"120s\""))?;
    if d < Duration::from_secs(1) || d > Duration::from_secs(3600) {
        return Err(format!("expected from 1s to 1h, got {s}"));
    }
    Ok(d)
}

pub(crate) fn run(a: McpArgs, budget: refundsim::scenario::RunBudget) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Input(format!("cannot start the server's runtime: {e}")))?;
    runtime.block_on(async move {
        let server = server::Server {
            budget,
            call_timeout: a.call_timeout,
        };
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| CliError::Input(format!("mcp: cannot start the session: {e}")))?;
        service
            .waiting()
            .await
            .map_err(|e| CliError::Input(format!("mcp: the session stopped: {e}")))?;
        Ok::<_, anyhow::Error>(())
    })?;
    // A blocking call still running (past its time limit) is not waited for.
    runtime.shutdown_background();
    Ok(ExitCode::SUCCESS)
}
