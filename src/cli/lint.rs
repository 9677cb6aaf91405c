//! `refundsim lint`: static checks of scenarios, policies and tool definitions.

use std::path::PathBuf;
use std::process::ExitCode;

use refundsim::lint;

use super::{emit, exit, print_json};

#[derive(clap::Args)]
pub(crate) struct LintArgs {
    /// Scenarios, policies, MCP `tools/list` results or Anthropic tool definitions (JSON).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
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
    let report = lint::lint_files_with(&a.files, &a.policies, &a.sets)?;
    if a.json {
        print_json(&report)?;
    } else {
        emit(lint::lint_text(&report))?;
    }
    Ok(exit(!report.has_errors()))
}
