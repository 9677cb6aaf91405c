//! `refundsim new`: a starting scenario from a tool definition.

use std::path::PathBuf;
use std::process::ExitCode;

use refundsim::error::CliError;
use refundsim::new::{new_scenario, NewOptions};

use super::{display, emit};

#[derive(clap::Args)]
pub(crate) struct NewArgs {
    /// Tool definitions (JSON): an MCP tools/list response or result, an Anthropic tool or a
    /// list of them, an OpenAI function tool or a list of them, or a tool with a bare
    /// `parameters` block (scenarios/issue_refund.tool.json).
    #[arg(value_name = "TOOL_FILE")]
    tool_file: PathBuf,
    /// Write the scenario here (atomically) instead of to stdout.
    #[arg(long, value_name = "SCENARIO")]
    out: Option<PathBuf>,
    /// Replace SCENARIO if it exists (without it, an existing file is an error, exit 2).
    #[arg(long, requires = "out")]
    force: bool,
    /// The tool to model, by name [default: the one tool not marked readOnlyHint].
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
    /// The effect's noun (refund, charge, payout, transfer, order, message, or lower-case
    /// words) [default: inferred from the tool's name].
    #[arg(long, value_name = "NOUN")]
    effect: Option<String>,
    /// The provider operation that makes one effect, e.g. "POST /v1/payment_intents"
    /// [default: the effect's own].
    #[arg(long, value_name = "OPERATION")]
    operation: Option<String>,
}

pub(crate) fn run(a: NewArgs) -> anyhow::Result<ExitCode> {
    let mut opts = NewOptions::new();
    opts.tool = a.tool;
    opts.effect = a.effect;
    opts.operation = a.operation;
    let starter = new_scenario(&a.tool_file, &opts)?;
    match &a.out {
        None => emit(&starter.text)?,
        Some(out) => {
            if !a.force && std::fs::symlink_metadata(out).is_ok() {
                return Err(CliError::Input(format!(
                    "{}: already exists; expected a new file (pass --force to replace it)",
                    display(out)
                ))
                .into());
            }
            refundsim::output::refuse_overwriting_inputs("--out", out, &[&a.tool_file])
                .map_err(CliError::Input)?;
            refundsim::output::write_atomically(out, &starter.text)
                .map_err(|e| CliError::Input(format!("{}: {e}", display(out))))?;
            eprintln!(
                "wrote {} (tool `{}`, effect `{}`); next: refundsim lint {0}; refundsim check {0}",
                display(out),
                starter.tool,
                starter.effect
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
