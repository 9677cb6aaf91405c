//! The `refundsim` command line: parses arguments, calls the library, maps outcomes to exit
//! codes (0 ok, 1 an expectation failed, 2 bad usage or input).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use refundsim::{gate, lint, scenario, sweep};

mod allocator;
mod cli;

/// mimalloc instead of the system allocator: a run allocates and frees small objects (task
/// boxes, ids, event texts) at a high rate, and glibc's malloc and free were about 15 % of an
/// incident run's instructions. The library does not choose an allocator for its users. See
/// `src/allocator.rs` for how it calls mimalloc.
#[global_allocator]
static ALLOCATOR: allocator::Allocator = allocator::Allocator;

/// Deterministic virtual-time simulator of duplicate refunds from retried tool calls.
#[derive(Parser)]
#[command(name = "refundsim", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Run budget: refuse a scenario whose estimated engine events per run exceed N (the
    /// message gives the estimate of events, CPU time and memory).
    #[arg(long, global = true, value_name = "N", default_value_t = scenario::budget::DEFAULT_MAX_EVENTS)]
    max_events: u64,
    /// Memory budget: refuse a scenario whose estimated peak memory per run exceeds MB
    /// megabytes (the message gives the estimate and what drives it).
    #[arg(long, global = true, value_name = "MB", default_value_t = scenario::budget::DEFAULT_MAX_MEMORY_MB)]
    max_memory_mb: u64,
    /// Input limit: refuse an input file larger than MB mebibytes, without reading past it
    /// [default: 16 for scenarios, policies, tool definitions, lint inputs and sweep.json; 256
    /// for recordings that import reads whole].
    #[arg(long, global = true, value_name = "MB", value_parser = clap::value_parser!(u64).range(1..))]
    max_input_mb: Option<u64>,
}

/// Every subcommand takes a negative number as a flag's value (`--max-events -1`), so that clap
/// says it is not a valid value instead of suggesting `-- -1`.
#[derive(Subcommand)]
enum Command {
    /// Run one scenario and print its summary (exit 1 if an `expect` bound fails).
    #[command(allow_negative_numbers = true)]
    Run(cli::run::RunArgs),
    /// Print the JSON Schema of scenario files.
    Schema,
    /// Print a scenario after policies and `--set`, every default written out, with the stack
    /// of layers it compiles to (a valid scenario file itself).
    #[command(allow_negative_numbers = true)]
    Show(cli::show::ShowArgs),
    /// CI gate: every scenario × policy × seed against `expect` bounds and conservation
    /// (exit 1 if one fails).
    #[command(allow_negative_numbers = true)]
    Check(cli::check::CheckArgs),
    /// Compare a candidate policy with a baseline on the same seeds (exit 1 if a tolerance is
    /// exceeded).
    #[command(allow_negative_numbers = true)]
    Diff(cli::diff::DiffArgs),
    /// Static checks of scenarios, policies and tool definitions (exit 1 on an error finding).
    #[command(allow_negative_numbers = true)]
    Lint(cli::lint::LintArgs),
    /// Write a starting scenario from a tool definition (MCP, Anthropic or OpenAI shape), every
    /// section spelled out with a `$comment`, ready for `lint` and `check`.
    New(cli::new::NewArgs),
    /// Search interleavings of a scenario for a safety violation and shrink it to a minimal
    /// scenario file (exit 1 when one is found).
    #[command(allow_negative_numbers = true)]
    Explore(cli::explore::ExploreArgs),
    /// Search the policy changes that make a scenario safe (every seed and a bounded explore),
    /// verify each by simulation, and write the cheapest as a merge patch (exit 1 if none).
    #[command(allow_negative_numbers = true)]
    Fix(cli::fix::FixArgs),
    /// Sizing: run a scenario over a grid of field values × seeds; write points.csv, runs.csv,
    /// sweep.json and SVG plots, and pick the cheapest safe point (exit 1 if `--minimize`
    /// finds none).
    #[command(allow_negative_numbers = true)]
    Sweep(cli::sweep::SweepArgs),
    /// Combine the output directories of `sweep --shard 1/N … N/N` into the whole sweep's.
    #[command(allow_negative_numbers = true)]
    Merge(cli::sweep::MergeArgs),
    /// Turn recorded traces, tool-call logs and a refund export into a scenario that replays
    /// them (see docs/import.md).
    #[command(allow_negative_numbers = true)]
    Import(cli::import::ImportArgs),
    /// Import recordings in memory and replay them: compare with the recording ticket by ticket
    /// (exit 1 when refunds or a timing differ by more than 1 ms), or with --policy show what
    /// the policy would have done to exactly that traffic.
    #[command(allow_negative_numbers = true)]
    Replay(cli::replay::ReplayArgs),
    /// Run one scenario and write a self-contained HTML report: the summary, timelines over
    /// virtual time, duplicated tickets' stories, and optionally a sweep's table and plots
    /// (exit 1 if an `expect` bound fails; the file is written either way).
    #[command(allow_negative_numbers = true)]
    Report(cli::report::ReportArgs),
    /// Serve the commands as MCP tools over stdio (lint_tools, simulate, check_policy,
    /// suggest_fix), for an agent's MCP client (see docs/mcp.md).
    Mcp(cli::mcp::McpArgs),
}

fn main() -> ExitCode {
    // SIGPIPE stays ignored (Rust's default): a closed pipe (`refundsim run … | head -c0`) is a
    // write error that `emit` reports as `stdout: cannot write: Broken pipe`, exit 2, rather
    // than a silent death by signal (exit 141) that a script cannot tell from success.
    if cli::process::STDOUT_CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!(
            "error: stdout is closed (`>&-`); expected it open: redirect it to a file or \
             /dev/null instead"
        );
        return ExitCode::from(2);
    }
    cli::process::remove_temporaries_on_signals();
    refundsim::output::set_clear_progress(cli::progress::clear_progress_bars);
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("REFUNDSIM_LOG"))
        .without_time()
        .init();
    match run() {
        Ok(code) => code,
        Err(e) => {
            if let Some(se) = e.downcast_ref::<scenario::ScenarioError>() {
                eprintln!("error: {se}");
            } else if let Some(ge) = e.downcast_ref::<gate::GateError>() {
                eprintln!("error: {ge}");
            } else if let Some(we) = e.downcast_ref::<sweep::SweepError>() {
                eprintln!("error: {we}");
            } else if let Some(le) = e.downcast_ref::<lint::LintError>() {
                eprintln!("error: {le}");
            } else if let Some(xe) = e.downcast_ref::<refundsim::error::CliError>() {
                eprintln!("error: {xe}");
            } else {
                eprintln!("error: {e:#}");
            }
            ExitCode::from(2)
        }
    }
}

fn run() -> anyhow::Result<ExitCode> {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // `--help` and `--version` are output like any other: a closed pipe or a full disk is
        // exit 2 naming stdout, not a silent exit 0 (clap's own `exit` ignores write errors).
        Err(e) if !e.use_stderr() => {
            let text = e.render();
            if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                cli::emit(text.ansi())?;
            } else {
                cli::emit(text)?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        // Usage errors as clap words them, with a number of more than 24 digits (a pasted
        // `--max-events 999…`) in scientific notation instead of printed back whole.
        Err(e) => {
            let text = refundsim::scenario::short_numbers(&e.render().to_string());
            eprint!("{text}");
            return Ok(ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2)));
        }
    };
    // The run budget, a value handed to the commands that simulate (`lint`, `show`, `schema`
    // and `merge` simulate nothing).
    let budget = scenario::RunBudget {
        max_events: cli.max_events,
        max_memory_mb: cli.max_memory_mb,
    };
    refundsim::input::set_max_input_bytes(cli.max_input_mb.map(|mb| mb.saturating_mul(1 << 20)));
    match cli.command {
        Command::Run(args) => cli::run::run(args, budget),
        Command::Schema => cli::show::schema(),
        Command::Show(args) => cli::show::show(args),
        Command::Check(args) => cli::check::run(args, budget),
        Command::Diff(args) => cli::diff::run(args, budget),
        Command::Lint(args) => cli::lint::run(args),
        Command::New(args) => cli::new::run(args),
        Command::Explore(args) => cli::explore::run(args, budget),
        Command::Fix(args) => cli::fix::run(args, budget),
        Command::Sweep(args) => cli::sweep::run(args, budget),
        Command::Merge(args) => cli::sweep::merge(args),
        Command::Import(args) => cli::import::run(args, budget),
        Command::Replay(args) => cli::replay::run(args, budget),
        Command::Report(args) => cli::report::run(args, budget),
        Command::Mcp(args) => cli::mcp::run(args, budget),
    }
}
