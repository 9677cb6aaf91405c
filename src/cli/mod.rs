//! The glue of each command: its clap arguments, the library call it makes, what it prints and
//! the exit code it returns. One module per command; `main.rs` only dispatches.
//!
//! The glue lives in the binary, not the library: it draws progress bars (indicatif), handles
//! signals and maps outcomes to exit codes, which are the binary's business; what each command
//! computes is already one library call (`report::cli::cli_run`, `gate::check_with_progress`,
//! `sweep::sweep_with_progress`, `explore::cli_run`, …).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

pub(crate) mod check;
pub(crate) mod diff;
pub(crate) mod explore;
pub(crate) mod fix;
pub(crate) mod import;
pub(crate) mod lint;
pub(crate) mod lint_server;
pub(crate) mod mcp;
pub(crate) mod new;
pub(crate) mod process;
pub(crate) mod progress;
mod recording;
pub(crate) mod replay;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod show;
pub(crate) mod sweep;

pub(crate) fn display(p: &Path) -> String {
    p.display().to_string()
}

pub(crate) fn exit(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

pub(crate) fn print_json(v: &impl serde::Serialize) -> anyhow::Result<()> {
    emit(format!("{}\n", serde_json::to_string_pretty(v)?))
}

/// Writes a command's output to stdout and flushes it, so that a full disk or another write
/// error is one that says "stdout" (exit 2) rather than a panic in `print!` or output silently
/// lost at exit. A closed pipe (`| head -c0`) is the same: `stdout: cannot write: Broken pipe`,
/// exit 2 (SIGPIPE is ignored, so the write fails with `EPIPE` instead of killing the process).
pub(crate) fn emit(text: impl std::fmt::Display) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    write!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|e| refundsim::error::CliError::Input(format!("stdout: cannot write: {e}")).into())
}
