//! The `refundsim` command line: parses arguments, calls the library, maps outcomes to exit
//! codes (0 ok, 1 an expectation failed, 2 bad usage or input).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use refundsim::explore;
use refundsim::gate;
use refundsim::lint;
use refundsim::report;
use refundsim::scenario;
use refundsim::sweep;

mod allocator;

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
    Run(RunArgs),
    /// Print the JSON Schema of scenario files.
    Schema,
    /// Print a scenario after policies and `--set`, every default written out, with the stack
    /// of layers it compiles to (a valid scenario file itself).
    #[command(allow_negative_numbers = true)]
    Show(ShowArgs),
    /// CI gate: every scenario × policy × seed against `expect` bounds and conservation
    /// (exit 1 if one fails).
    #[command(allow_negative_numbers = true)]
    Check(CheckArgs),
    /// Compare a candidate policy with a baseline on the same seeds (exit 1 if a tolerance is
    /// exceeded).
    #[command(allow_negative_numbers = true)]
    Diff(DiffArgs),
    /// Static checks of scenarios, policies and tool definitions (exit 1 on an error finding).
    #[command(allow_negative_numbers = true)]
    Lint(LintArgs),
    /// Search interleavings of a scenario for a safety violation and shrink it to a minimal
    /// scenario file (exit 1 when one is found).
    #[command(allow_negative_numbers = true)]
    Explore(ExploreArgs),
    /// Sizing: run a scenario over a grid of field values × seeds; write points.csv, runs.csv,
    /// sweep.json and SVG plots, and pick the cheapest safe point (exit 1 if `--minimize`
    /// finds none).
    #[command(allow_negative_numbers = true)]
    Sweep(SweepArgs),
    /// Combine the output directories of `sweep --shard 1/N … N/N` into the whole sweep's.
    #[command(allow_negative_numbers = true)]
    Merge(MergeArgs),
    /// Turn recorded traces, tool-call logs and a refund export into a scenario that replays
    /// them (see docs/import.md).
    #[command(allow_negative_numbers = true)]
    Import(ImportArgs),
    /// Import recordings in memory and replay them: compare with the recording ticket by ticket
    /// (exit 1 when refunds or a timing differ by more than 1 ms), or with --policy show what
    /// the policy would have done to exactly that traffic.
    #[command(allow_negative_numbers = true)]
    Replay(ReplayArgs),
    /// Run one scenario and write a self-contained HTML report: the summary, timelines over
    /// virtual time, duplicated tickets' stories, and optionally a sweep's table and plots
    /// (exit 1 if an `expect` bound fails; the file is written either way).
    #[command(allow_negative_numbers = true)]
    Report(ReportArgs),
}

#[derive(clap::Args)]
struct RecordingArgs {
    /// Recorded inputs: OTLP/JSON traces, tool-call logs, JSON lines, LangSmith runs, Langfuse
    /// observations, OpenAI Agents SDK trace exports, refund exports (CSV, or Stripe's list);
    /// several combine (e.g. a trace and the provider's refund export).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The format of every FILE [default: detected per file from its content].
    #[arg(long, value_enum)]
    format: Option<refundsim::import::Format>,
    /// Scenario supplying what the recording lacks: policy, pool, distributions, background
    /// load [default: the built-in defaults].
    #[arg(long, value_name = "SCENARIO")]
    base: Option<PathBuf>,
    /// The date (YYYY-MM-DD, UTC) of a log's times of day [default: the base's clock_origin
    /// date, else 1970-01-01].
    #[arg(long, value_name = "YYYY-MM-DD")]
    date: Option<String>,
    /// The refund tool's name in the recording [default: the base scenario's agent.tool,
    /// issue_refund].
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
    /// The tool-call argument holding the ticket id (a string or an integer) [default: the
    /// tool definition's argument, else ticket, ticket_id or ticketId].
    #[arg(long, value_name = "NAME")]
    ticket_field: Option<String>,
    /// The tool-call argument holding the amount in cents [default: the tool definition's
    /// argument, else amount, amount_cents or amountCents].
    #[arg(long, value_name = "NAME")]
    amount_field: Option<String>,
    /// Tool definitions naming the refund tool's arguments: an MCP tools/list result, MCP,
    /// Anthropic or OpenAI function definitions [default: the base scenario's tools].
    #[arg(long, value_name = "FILE")]
    tool_definition: Option<PathBuf>,
    /// A refund-export column name: `id=`, `charge=`, `amount=`, `created=`, `status=` or
    /// `ticket=` followed by the column's name in the CSV header; repeatable.
    #[arg(long = "csv-column", value_name = "FIELD=COLUMN")]
    csv_columns: Vec<String>,
    /// The text of a tool result that says the call timed out, where a timeout is not an
    /// error (the OpenAI Agents SDK's default): `*` for any text, `{seconds}` for the timeout
    /// in seconds, which the recording then states [default: "Tool '*' timed out after
    /// {seconds} seconds."].
    #[arg(long, value_name = "PATTERN")]
    timeout_output: Option<String>,
}

impl RecordingArgs {
    fn inputs(&self) -> Result<refundsim::import::ImportInputs, refundsim::error::CliError> {
        use refundsim::error::CliError;
        let mut options = refundsim::import::ImportOptions {
            date: self.date.clone(),
            ..Default::default()
        };
        if let Some(p) = &self.timeout_output {
            options.timeout_output = p.clone();
        }
        for c in &self.csv_columns {
            let bad = || {
                CliError::Input(format!(
                    "--csv-column {c}: expected FIELD=COLUMN with FIELD one of id, charge, amount, created, status, ticket"
                ))
            };
            let (field, column) = c.split_once('=').ok_or_else(bad)?;
            if column.is_empty() {
                return Err(bad());
            }
            let cols = &mut options.csv_columns;
            let slot = match field {
                "id" => &mut cols.id,
                "charge" => &mut cols.charge,
                "amount" => &mut cols.amount,
                "created" => &mut cols.created,
                "status" => &mut cols.status,
                "ticket" => &mut cols.ticket,
                _ => return Err(bad()),
            };
            *slot = column.to_string();
        }
        Ok(refundsim::import::ImportInputs {
            files: self.files.clone(),
            format: self.format,
            base: self.base.clone(),
            options,
            tool: self.tool.clone(),
            ticket_field: self.ticket_field.clone(),
            amount_field: self.amount_field.clone(),
            tool_definition: self.tool_definition.clone(),
        })
    }
}

#[derive(clap::Args)]
struct ImportArgs {
    #[command(flatten)]
    recording: RecordingArgs,
    /// Where to write the replay scenario (whole or not at all).
    #[arg(long, value_name = "SCENARIO")]
    out: PathBuf,
}

#[derive(clap::Args)]
struct ReplayArgs {
    #[command(flatten)]
    recording: RecordingArgs,
    /// A counterfactual: this RFC 7396 merge patch over the replay; repeatable, in order.
    #[arg(long = "policy", value_name = "FILE")]
    policies: Vec<PathBuf>,
    /// A counterfactual: override one field, e.g. `--set executor.timeout=15s`; repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Root seed (draws only for what the recording lacks) [default: the base's `seed`].
    #[arg(long)]
    seed: Option<u64>,
    /// Print the comparison as JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct ReportArgs {
    /// Scenario file (JSON).
    scenario: PathBuf,
    /// Root seed [default: the scenario's `seed`].
    #[arg(long)]
    seed: Option<u64>,
    /// RFC 7396 JSON merge patch applied over the scenario; repeatable, applied in order.
    #[arg(long = "policy", value_name = "FILE")]
    policies: Vec<PathBuf>,
    /// Override one field, e.g. `--set executor.timeout=15s`; repeatable, applied after policies.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Embed the table and plots of this `sweep` (or `merge`) output directory.
    #[arg(long, value_name = "DIR")]
    sweep: Option<PathBuf>,
    /// The HTML file to write (whole or not at all; its directory must exist).
    #[arg(long, value_name = "FILE.html")]
    out: PathBuf,
}

#[derive(clap::Args)]
struct SweepArgs {
    /// Scenario file (JSON).
    scenario: PathBuf,
    /// RFC 7396 JSON merge patch applied over the scenario; repeatable, applied in order.
    #[arg(long = "policy", value_name = "FILE")]
    policies: Vec<PathBuf>,
    /// Override one field for every grid point, e.g. `--set humans.check_probability=0`;
    /// repeatable, after policies.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// An axis of the grid: a field and its values, `executor.timeout=8s,10s,15s`,
    /// `refunds_service.pool_size=2..12`, `2..12:2`, `5s..30s:5s`; repeatable (the grid is the
    /// product, the first --vary slowest).
    #[arg(long, required = true, value_name = "PATH=VALUES")]
    vary: Vec<String>,
    /// Seeds `A..B` (inclusive), the same for every point.
    #[arg(
        long,
        value_name = "A..B",
        default_value = "1..20",
        allow_hyphen_values = true
    )]
    seeds: String,
    /// Run only shard K of N (1 ≤ K ≤ N) of the (point, seed) runs; combine with `merge`.
    #[arg(long, value_name = "K/N")]
    shard: Option<String>,
    /// The safe region: points where METRIC<=V holds (a bare metric is its max over seeds;
    /// also `METRIC.mean`, `.p50`, `.p90`, `.max`, and `p_duplicate`); repeatable
    /// [default: duplicate_refund_tickets<=0].
    #[arg(long, value_name = "METRIC<=V")]
    require: Vec<String>,
    /// Print the safe point with the smallest value of this varied PATH; repeatable (ties
    /// broken by the next, then by service response p99).
    #[arg(long, value_name = "PATH")]
    minimize: Vec<String>,
    /// Output directory (created if missing; its files are replaced whole).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

#[derive(clap::Args)]
struct MergeArgs {
    /// The output directories of `sweep --shard 1/N` … `N/N`, in any order.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// Output directory of the whole sweep.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

#[derive(clap::Args)]
struct ShowArgs {
    /// Scenario file (JSON).
    scenario: PathBuf,
    /// RFC 7396 JSON merge patch applied over the scenario; repeatable, applied in order.
    #[arg(long = "policy", value_name = "FILE")]
    policies: Vec<PathBuf>,
    /// Override one field, e.g. `--set layers.sidecar.max_retries=0`; repeatable, after policies.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
}

#[derive(clap::Args)]
struct ExploreArgs {
    /// Scenario file (JSON): its policy is kept; tickets, latencies, faults and ties are perturbed.
    scenario: PathBuf,
    /// RFC 7396 JSON merge patch applied over the scenario; repeatable, applied in order.
    #[arg(long = "policy", value_name = "FILE")]
    policies: Vec<PathBuf>,
    /// Override one field, e.g. `--set humans.check_probability=1`; repeatable, after policies.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Cases to try (1 to 1,000,000).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    cases: u32,
    /// Search seed (same seed ⇒ same cases and the same minimal scenario).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Events within this of each other may run in either order, e.g. `1ms`.
    #[arg(long, value_name = "DURATION", value_parser = parse_epsilon, default_value = "0s")]
    epsilon: std::time::Duration,
    /// Enumerate every schedule of a tiny scenario (≤ 3 recorded tickets) depth-first instead.
    #[arg(long)]
    exhaustive: bool,
    /// With --exhaustive: stop after this many schedules.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    max_schedules: u64,
    /// Where to write the minimal scenario [default: SCENARIO's name + `-minimal.json` here].
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Scenario file (JSON).
    scenario: PathBuf,
    /// Root seed [default: the scenario's `seed`].
    #[arg(long)]
    seed: Option<u64>,
    /// RFC 7396 JSON merge patch applied over the scenario; repeatable, applied in order.
    #[arg(long = "policy", value_name = "FILE")]
    policies: Vec<PathBuf>,
    /// Override one field, e.g. `--set executor.timeout=15s`; repeatable, applied after policies.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Write the JSONL history to FILE (written whole or not at all).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Write the run as Chrome Trace Event JSON to FILE, for ui.perfetto.dev or
    /// chrome://tracing (written whole or not at all; see docs/perfetto.md).
    #[arg(long, value_name = "FILE")]
    perfetto: Option<PathBuf>,
    /// Write the run as OpenTelemetry traces (OTLP/JSON, semantic conventions only) to FILE,
    /// for Jaeger, Tempo, Langfuse or `refundsim import` (whole or not at all; see
    /// docs/otlp-export.md).
    #[arg(long, value_name = "FILE")]
    otlp: Option<PathBuf>,
    /// What --otlp records of the opt-in attributes: a comma-separated list of `arguments`
    /// (the tool calls' arguments: without them no span names its ticket), `results` (the
    /// tool results) and `headers` (the Stripe requests' Idempotency-Key), or `none`.
    #[arg(
        long,
        value_name = "LIST",
        default_value = "arguments",
        requires = "otlp"
    )]
    otlp_capture: report::otlp::OtlpCapture,
    /// Write Stripe's list of the run's refunds to FILE, as the body of `GET /v1/refunds`
    /// (whole or not at all; see docs/otlp-export.md).
    #[arg(long, value_name = "FILE")]
    stripe_list: Option<PathBuf>,
    /// Print this ticket's story in the incident log's style.
    #[arg(long, value_name = "ID")]
    ticket: Option<u64>,
}

#[derive(clap::Args)]
struct CheckArgs {
    /// Scenario files, or directories of them (`*.json` except `*.tool.json`).
    #[arg(required = true, value_name = "SCENARIO|DIR")]
    scenarios: Vec<PathBuf>,
    /// Also run every scenario under this policy (separately); repeatable.
    #[arg(long = "policy", value_name = "FILE")]
    policies: Vec<PathBuf>,
    /// Override one field in every case, after its policy, e.g. `--set executor.timeout=15s`;
    /// repeatable. A change to the scenario makes the safety invariants its gate.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Seeds `A..B` (inclusive) [default: 1..N, N the scenario's `gate.seeds`, 30 unless set].
    #[arg(long, value_name = "A..B", allow_hyphen_values = true)]
    seeds: Option<String>,
    /// Cases of the bounded `explore` of each case that claims safety (or asserts a hole with
    /// `exploration.finds`); 0 turns it off [default: the scenario's `gate.explore_cases`, 256
    /// unless set].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100_000))]
    explore_cases: Option<u32>,
    /// Write a JUnit XML report to FILE (whole or not at all).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct DiffArgs {
    /// Scenario files, or directories of them.
    #[arg(required = true, value_name = "SCENARIO")]
    scenarios: Vec<PathBuf>,
    /// Baseline policy file.
    #[arg(long, value_name = "FILE")]
    baseline: PathBuf,
    /// Candidate policy file.
    #[arg(long, value_name = "FILE")]
    candidate: PathBuf,
    /// Seeds `A..B` (inclusive), the same for both policies [default: 1..N, N the scenario's
    /// `gate.seeds`, 30 unless set].
    #[arg(long, value_name = "A..B", allow_hyphen_values = true)]
    seeds: Option<String>,
    /// Run the candidate on other seeds: an unpaired comparison (to measure what pairing buys).
    #[arg(long, value_name = "A..B", allow_hyphen_values = true)]
    candidate_seeds: Option<String>,
    /// Largest allowed mean difference (candidate − baseline) of a metric; repeatable
    /// [default: duplicate_refund_tickets=0, lost_refunds=0, false_failures=0].
    #[arg(long = "tolerance", value_name = "METRIC=VALUE")]
    tolerances: Vec<String>,
    /// Override one field on both sides, after their policy; repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Report an unsafe candidate (a safety invariant broken on a seed or by the exploration)
    /// without failing: the comparison alone decides. By default an unsafe candidate exits 1.
    #[arg(long)]
    allow_unsafe: bool,
    /// Fail on an unsafe candidate even when its own `expect` states what it leaves open (by
    /// default only a candidate that claims safety fails for being unsafe).
    #[arg(long, conflicts_with = "allow_unsafe")]
    require_safe: bool,
    /// Cases of the bounded `explore` of the candidate; 0 turns it off [default: the
    /// scenario's `gate.explore_cases`, 256 unless set].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100_000))]
    explore_cases: Option<u32>,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct LintArgs {
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

/// Whether file descriptor 1 was closed when the process started (`refundsim run … >&-`), noted
/// before Rust's runtime reopens a closed standard descriptor on `/dev/null` (which would make
/// the output vanish with exit 0).
static STDOUT_CLOSED_AT_START: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Runs before `main` and before Rust's runtime sanitizes the standard descriptors: notes a
/// closed fd 1 (`fcntl(1, F_GETFD)` fails with `EBADF`) in [`STDOUT_CLOSED_AT_START`].
#[cfg(unix)]
#[ctor::ctor(unsafe)]
fn note_closed_stdout() {
    // SAFETY: fcntl with F_GETFD only queries the descriptor's flags; errno is read right after.
    let closed = unsafe { libc::fcntl(1, libc::F_GETFD) } == -1
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF);
    STDOUT_CLOSED_AT_START.store(closed, std::sync::atomic::Ordering::Relaxed);
}

/// On SIGINT (Ctrl-C) or SIGTERM, removes the temporary files of the outputs being written
/// (`--trace`, `--perfetto`, `--otlp`, `--stripe-list`, `--out`: see `refundsim::output`) and
/// exits 130 or 143 (128 + the signal), as a shell reports a process the signal killed.
fn remove_temporaries_on_signals() {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGINT, SIGTERM};
        match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
            Ok(mut signals) => {
                std::thread::spawn(move || {
                    if let Some(sig) = signals.forever().next() {
                        refundsim::output::remove_temporaries_and_exit(128 + sig);
                    }
                });
            }
            Err(e) => tracing::warn!("cannot handle SIGINT/SIGTERM: {e}"),
        }
    }
}

fn main() -> ExitCode {
    // SIGPIPE stays ignored (Rust's default): a closed pipe (`refundsim run … | head -c0`) is a
    // write error that `emit` reports as `stdout: cannot write: Broken pipe`, exit 2, rather
    // than a silent death by signal (exit 141) that a script cannot tell from success.
    if STDOUT_CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!(
            "error: stdout is closed (`>&-`); expected it open: redirect it to a file or \
             /dev/null instead"
        );
        return ExitCode::from(2);
    }
    remove_temporaries_on_signals();
    refundsim::output::set_clear_progress(clear_progress_bars);
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
                emit(text.ansi())?;
            } else {
                emit(text)?;
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
    // The budget guards runs; `lint`, `show`, `schema` and `merge` simulate nothing.
    let simulates = !matches!(
        cli.command,
        Command::Lint(_) | Command::Show(_) | Command::Schema | Command::Merge(_)
    );
    scenario::budget::set_max_events(if simulates { cli.max_events } else { u64::MAX });
    scenario::budget::set_max_memory_mb(if simulates {
        cli.max_memory_mb
    } else {
        u64::MAX
    });
    scenario::budget::enforce_while_running(simulates);
    refundsim::input::set_max_input_bytes(cli.max_input_mb.map(|mb| mb.saturating_mul(1 << 20)));
    match cli.command {
        Command::Run(args) => cmd_run(args),
        Command::Check(args) => cmd_check(args),
        Command::Diff(args) => cmd_diff(args),
        Command::Lint(args) => cmd_lint(args),
        Command::Explore(args) => cmd_explore(args),
        Command::Sweep(args) => cmd_sweep(args),
        Command::Report(args) => cmd_report(args),
        Command::Merge(args) => {
            // Writing the merged sweep over one of its shards would destroy that shard.
            if let Ok(out) = args.out.canonicalize() {
                if let Some(d) = args
                    .dirs
                    .iter()
                    .find(|d| d.canonicalize().is_ok_and(|d| d == out))
                {
                    return Err(refundsim::error::CliError::Input(format!(
                        "--out {}: is one of the shard directories being merged ({}); expected a \
                         new directory",
                        args.out.display(),
                        d.display()
                    ))
                    .into());
                }
            }
            let s = sweep::merge(&args.dirs)?;
            finish_sweep(&s, &args.out)
        }
        Command::Import(args) => cmd_import(args),
        Command::Replay(args) => cmd_replay(args),
        Command::Show(args) => {
            let sc = scenario::load(&args.scenario, &args.policies, &args.sets)?;
            print_json(&scenario::compiled(&sc))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Schema => {
            emit(scenario::schema_json())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

fn cmd_run(a: RunArgs) -> anyhow::Result<ExitCode> {
    let bar = virtual_time_bar();
    let observer = virtual_time_progress(&bar);
    let outcome = report::cli::cli_run_with_progress(
        &report::cli::CliOptions {
            scenario: a.scenario,
            seed: a.seed,
            policies: a.policies,
            sets: a.sets,
            json: a.json,
            trace: a.trace,
            perfetto: a.perfetto,
            otlp: a.otlp,
            otlp_capture: a.otlp_capture,
            stripe_list: a.stripe_list,
            ticket: a.ticket,
        },
        observer,
    );
    bar.finish_and_clear();
    let outcome = outcome?;
    emit(&outcome.stdout)?;
    Ok(exit(outcome.expectations_met))
}

fn cmd_import(a: ImportArgs) -> anyhow::Result<ExitCode> {
    let inputs = a.recording.inputs()?;
    // Said before the --out check, which would call a directory an input to be overwritten.
    if let Some(dir) = inputs.files.iter().find(|f| f.is_dir()) {
        return Err(refundsim::error::CliError::Input(format!(
            "{}: is a directory, expected a file",
            dir.display()
        ))
        .into());
    }
    let inputs_paths: Vec<&PathBuf> = inputs.files.iter().chain(inputs.base.iter()).collect();
    refundsim::output::refuse_overwriting_inputs("--out", &a.out, &inputs_paths)
        .map_err(refundsim::error::CliError::Input)?;
    if a.out.as_os_str() == "-" {
        return Err(refundsim::error::CliError::Input(
            "--out -: expected a file path (the scenario is written to a file; `refundsim replay` \
             replays a recording without one)"
                .into(),
        )
        .into());
    }
    let bar = ImportBar::new("import");
    let imported = refundsim::import::import_with_progress(&inputs, &bar);
    bar.0.finish_and_clear();
    let imported = imported?;
    eprint!("{}", refundsim::import::render_warnings(&imported.report));
    refundsim::output::write_whole(&a.out, |w: &mut dyn Write| {
        w.write_all(imported.json.as_bytes())
    })
    .map_err(|e| refundsim::error::CliError::Input(format!("--out {}: {e}", a.out.display())))?;
    emit(format!(
        "{}wrote {}: `refundsim run {}` replays it; add --policy FILE for a counterfactual\n",
        refundsim::import::render_report(&imported.report),
        a.out.display(),
        a.out.display()
    ))?;
    Ok(ExitCode::SUCCESS)
}

fn cmd_replay(a: ReplayArgs) -> anyhow::Result<ExitCode> {
    let inputs = a.recording.inputs()?;
    let bar = ImportBar::new("replay");
    let imported = refundsim::import::import_with_progress(&inputs, &bar);
    let imported = imported.inspect_err(|_| bar.0.finish_and_clear())?;
    refundsim::import::ImportProgress::step(&bar, "loading the replay scenario");
    let origin_name = format!("replay of {}", imported.report_sources(&inputs));
    let sc = scenario::load_text(&imported.json, &origin_name, &a.policies, &a.sets);
    bar.0.finish_and_clear();
    let sc = sc?;
    let seed = a.seed.unwrap_or(sc.seed);
    // The run's bar over virtual time, as `run`'s: it only reads the clock.
    let bar = virtual_time_bar_of("replay");
    let mut observer = virtual_time_progress(&bar);
    let horizon = sc.horizon;
    let out = refundsim::run::run_with_progress(
        &sc,
        seed,
        &refundsim::run::Invocation::default(),
        move |now| observer(now, horizon),
    );
    bar.finish_and_clear();
    let Some(c) = out.report.recording else {
        anyhow::bail!("the imported scenario has no replay section");
    };
    let exact = a.policies.is_empty() && a.sets.is_empty();
    eprint!("{}", refundsim::import::render_warnings(&imported.report));
    if a.json {
        let mut warnings: Vec<_> = imported.report.warnings.iter().collect();
        warnings.sort();
        let warnings: Vec<String> = warnings
            .iter()
            .map(|w| format!("{}: {}", w.source, w.message))
            .collect();
        print_json(&serde_json::json!({
            "mode": if exact { "exact" } else { "counterfactual" },
            "seed": seed,
            "warnings": warnings,
            "drawn_from_base": imported.report.drawn_from_base,
            "comparison": c,
        }))?;
    } else {
        let origin = sc
            .clock_origin
            .as_deref()
            .and_then(|s| humantime::parse_rfc3339(s).ok());
        let mut text = refundsim::import::render_report(&imported.report);
        text += "\n";
        text += &if exact {
            refundsim::replay::render_exact(&c, origin)
        } else {
            format!(
                "recorded vs counterfactual (this policy on the recorded traffic):\n{}",
                refundsim::replay::render_counterfactual(&c)
            )
        };
        emit(text)?;
    }
    Ok(exit(!exact || c.matches))
}

fn cmd_report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let bar = virtual_time_bar();
    let opts = report::html::HtmlOptions {
        scenario: a.scenario,
        seed: a.seed,
        policies: a.policies,
        sets: a.sets,
        sweep: a.sweep,
    };
    let made = report::html::write_html_report(&opts, &a.out, virtual_time_progress(&bar));
    bar.finish_and_clear();
    let made = made?;
    let r = &made.report;
    emit(format!(
        "wrote {}: {} (seed {}), {} duplicate-refund tickets, {} stories shown\n",
        display(&a.out),
        r.scenario,
        r.seed,
        r.duplicate_refund_tickets(),
        made.stories.len()
    ))?;
    Ok(exit(r.expectations_met))
}

fn exit(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn print_json(v: &impl serde::Serialize) -> anyhow::Result<()> {
    emit(format!("{}\n", serde_json::to_string_pretty(v)?))
}

/// Writes a command's output to stdout and flushes it, so that a full disk or another write
/// error is one that says "stdout" (exit 2) rather than a panic in `print!` or output silently
/// lost at exit. A closed pipe (`| head -c0`) is the same: `stdout: cannot write: Broken pipe`,
/// exit 2 (SIGPIPE is ignored, so the write fails with `EPIPE` instead of killing the process).
fn emit(text: impl std::fmt::Display) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    write!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|e| refundsim::error::CliError::Input(format!("stdout: cannot write: {e}")).into())
}

fn cmd_check(a: CheckArgs) -> anyhow::Result<ExitCode> {
    if let Some(path) = &a.junit {
        let inputs: Vec<&PathBuf> = a.scenarios.iter().chain(a.policies.iter()).collect();
        refundsim::output::refuse_overwriting_inputs("--junit", path, &inputs)
            .map_err(anyhow::Error::msg)?;
    }
    let opts = gate::CheckOptions {
        scenarios: a.scenarios,
        policies: a.policies,
        sets: a.sets,
        seeds: a
            .seeds
            .map(|s| gate::SeedRange::parse("--seeds", &s))
            .transpose()?,
        explore_cases: a.explore_cases,
    };
    let bar = RunsBar::new("check");
    let report = gate::check_with_progress(&opts, &bar);
    bar.0.finish_and_clear();
    let report = report?;
    // stdout first: a run that cannot print its report (exit 2) leaves no JUnit file that a
    // CI step with `if: always()` would publish as a verdict.
    if a.json {
        print_json(&report)?;
    } else {
        emit(gate::check_text(&report))?;
    }
    if let Some(path) = &a.junit {
        gate::write_atomically(path, &gate::junit_xml(&report))
            .map_err(|e| anyhow::anyhow!("--junit {}: {e}", display(path)))?;
    }
    Ok(exit(report.passed))
}

fn cmd_diff(a: DiffArgs) -> anyhow::Result<ExitCode> {
    let opts = gate::DiffOptions {
        scenarios: a.scenarios,
        baseline: a.baseline,
        candidate: a.candidate,
        seeds: a
            .seeds
            .map(|s| gate::SeedRange::parse("--seeds", &s))
            .transpose()?,
        candidate_seeds: a
            .candidate_seeds
            .map(|s| gate::SeedRange::parse("--candidate-seeds", &s))
            .transpose()?,
        tolerances: a.tolerances,
        sets: a.sets,
        allow_unsafe: a.allow_unsafe,
        require_safe: a.require_safe,
        explore_cases: a.explore_cases,
    };
    let bar = RunsBar::new("diff");
    let report = gate::diff_with_progress(&opts, &bar);
    bar.0.finish_and_clear();
    let report = report?;
    if a.json {
        print_json(&report)?;
    } else {
        emit(gate::diff_text(&report))?;
    }
    Ok(exit(report.passed))
}

fn cmd_lint(a: LintArgs) -> anyhow::Result<ExitCode> {
    let report = lint::lint_files_with(&a.files, &a.policies, &a.sets)?;
    if a.json {
        print_json(&report)?;
    } else {
        emit(lint::lint_text(&report))?;
    }
    Ok(exit(!report.has_errors()))
}

fn cmd_explore(a: ExploreArgs) -> anyhow::Result<ExitCode> {
    let opts = explore::CliOptions {
        scenario: a.scenario,
        policies: a.policies,
        sets: a.sets,
        cases: a.cases,
        seed: a.seed,
        epsilon: a.epsilon,
        exhaustive: a.exhaustive,
        max_schedules: a.max_schedules,
        out: a.out,
    };
    let bar = std::cell::OnceCell::new();
    let outcome = explore::cli_run(&opts, || bar.get_or_init(|| progress_bar(a.cases)).inc(1));
    if let Some(bar) = bar.get() {
        bar.finish_and_clear();
    }
    let outcome = outcome?;
    emit(&outcome)?;
    if matches!(outcome, explore::CliOutcome::Aborted { .. }) {
        // Inconclusive: neither "no violation" (0) nor a violation (1).
        return Ok(ExitCode::from(2));
    }
    Ok(exit(!outcome.found_violation()))
}

fn cmd_sweep(a: SweepArgs) -> anyhow::Result<ExitCode> {
    if let Some((i, m)) = a
        .minimize
        .iter()
        .enumerate()
        .find(|(i, m)| a.minimize[..*i].contains(m))
    {
        let _ = i;
        return Err(refundsim::error::CliError::Input(format!(
            "--minimize {m}: given twice; expected each field once, in order of priority"
        ))
        .into());
    }
    let opts = sweep::SweepOptions {
        scenario: a.scenario,
        policies: a.policies,
        sets: a.sets,
        vary: a.vary,
        seeds: Some(gate::SeedRange::parse("--seeds", &a.seeds)?),
        shard: a.shard.as_deref().map(sweep::Shard::parse).transpose()?,
        require: a.require,
        minimize: a.minimize,
    };
    let bar = RunsBar::new("sweep");
    let s = sweep::sweep_with_progress(&opts, &bar);
    bar.0.finish_and_clear();
    finish_sweep(&s?, &a.out)
}

/// Writes a sweep's files, prints its summary and the files written; exit 1 when `--minimize`
/// has nothing to recommend (no safe point, or none that lint and a short explore accept).
fn finish_sweep(s: &sweep::Sweep, out: &Path) -> anyhow::Result<ExitCode> {
    let written = sweep::write_dir(out, s)?;
    let mut text = sweep::sweep_text(s);
    let names: Vec<String> = written.iter().map(|p| display(p)).collect();
    text.push_str(&format!("wrote {}\n", names.join(", ")));
    emit(&text)?;
    Ok(exit(!s.no_recommendation()))
}

/// The progress bars made so far ([`tracked`]), for [`clear_progress_bars`].
static PROGRESS_BARS: std::sync::Mutex<Vec<indicatif::WeakProgressBar>> =
    std::sync::Mutex::new(Vec::new());

/// `bar`, listed so that an early exit (a run stopped over the budget, Ctrl-C) clears it before
/// its message ([`refundsim::output::clear_progress`]).
fn tracked(bar: indicatif::ProgressBar) -> indicatif::ProgressBar {
    PROGRESS_BARS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(bar.downgrade());
    bar
}

/// Clears every progress bar still alive from stderr (nothing when stderr is not a terminal:
/// the bars are hidden there).
fn clear_progress_bars() {
    let bars = PROGRESS_BARS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for bar in bars.iter().filter_map(indicatif::WeakProgressBar::upgrade) {
        bar.finish_and_clear();
    }
}

/// The `explore` progress bar on stderr, drawn from the first case on.
fn progress_bar(cases: u32) -> indicatif::ProgressBar {
    let bar = tracked(indicatif::ProgressBar::new(u64::from(cases)));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} explore {pos} runs (cases and shrinking) {elapsed}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    bar
}

/// The `run` progress bar on stderr over virtual time `0..horizon`, moved now and then by the
/// engine (see `run::run_with_progress`); a short run never draws it.
fn virtual_time_bar() -> indicatif::ProgressBar {
    virtual_time_bar_of("run")
}

/// [`virtual_time_bar`] for `command` (`replay`'s run of the imported scenario).
fn virtual_time_bar_of(command: &'static str) -> indicatif::ProgressBar {
    let bar = tracked(indicatif::ProgressBar::new(1));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {prefix} [{bar:30}] {msg} of virtual time, {elapsed}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_prefix(command);
    // Until the engine's first report says how far of which horizon.
    bar.set_message("0s");
    bar
}

/// Moves `bar` from a run's progress reports (virtual time reached, horizon).
fn virtual_time_progress(bar: &indicatif::ProgressBar) -> impl FnMut(Duration, Duration) + 'static {
    let bar = bar.clone();
    move |now: Duration, horizon: Duration| {
        bar.set_length(millis(horizon));
        bar.set_position(millis(now.min(horizon)));
        bar.set_message(format!(
            "{} of {}",
            humantime::format_duration(Duration::from_secs(now.as_secs())),
            humantime::format_duration(horizon)
        ));
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The `check`/`diff` progress bar on stderr over every run (scenario × policy × seed), ticked
/// by the worker threads as runs finish.
struct RunsBar(indicatif::ProgressBar);

impl RunsBar {
    fn new(command: &'static str) -> Self {
        // Hidden until `start` knows the number of runs (an empty bar of 0 runs drew full).
        let bar = tracked(indicatif::ProgressBar::with_draw_target(
            Some(0),
            indicatif::ProgressDrawTarget::hidden(),
        ));
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {prefix} [{bar:30}] {pos}/{len} runs, {elapsed}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.set_prefix(command);
        RunsBar(bar)
    }
}

impl gate::Progress for RunsBar {
    fn start(&self, runs: u64) {
        self.0.set_length(runs);
        self.0
            .set_draw_target(indicatif::ProgressDrawTarget::stderr());
    }
    fn run_done(&self) {
        self.0.inc(1);
    }
}

/// The `import`/`replay` progress bar on stderr, in `check`'s style: the bytes of each file as
/// it is read, the steps without a count (parsing a document read whole, checking the
/// scenario) as a spinner, then the tickets built. Hidden where stderr is not a terminal.
struct ImportBar(indicatif::ProgressBar);

impl ImportBar {
    fn new(command: &'static str) -> Self {
        let bar = tracked(indicatif::ProgressBar::new(0));
        bar.set_prefix(command);
        if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            // The spinner turns while a step (a 140 MB document's parse) reports nothing.
            bar.enable_steady_tick(Duration::from_millis(120));
        }
        ImportBar(bar)
    }

    fn style(&self, template: &str) {
        self.0.set_style(
            indicatif::ProgressStyle::with_template(template)
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
    }
}

impl refundsim::import::ImportProgress for ImportBar {
    fn reading(&self, file: &str, len: u64) {
        self.style("{spinner} {prefix} [{bar:30}] reading {msg}: {bytes}/{total_bytes}, {elapsed}");
        self.0.set_length(len);
        self.0.set_position(0);
        self.0.set_message(file.to_string());
    }
    fn read(&self, bytes: u64) {
        self.0.set_position(bytes);
    }
    fn step(&self, what: &str) {
        self.style("{spinner} {prefix} {msg}, {elapsed}");
        self.0.set_message(what.to_string());
    }
    fn building(&self, tickets: u64) {
        self.style("{spinner} {prefix} [{bar:30}] building {pos}/{len} tickets, {elapsed}");
        self.0.set_length(tickets);
        self.0.set_position(0);
    }
    fn ticket_built(&self) {
        self.0.inc(1);
    }
}

/// `--epsilon`: a humantime duration of at most 60 s (a near-tie, not a reordering of minutes).
fn parse_epsilon(s: &str) -> Result<std::time::Duration, String> {
    let d = humantime::parse_duration(s)
        .map_err(|e| format!("{e}; expected a duration like \"1ms\""))?;
    if d > std::time::Duration::from_secs(60) {
        return Err(format!("expected at most 60s, got {s}"));
    }
    Ok(d)
}
