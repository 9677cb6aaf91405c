//! The `refundsim` command line: parses arguments, calls the library, maps outcomes to exit
//! codes (0 ok, 1 an expectation failed, 2 bad usage or input).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};

use refundsim::history::write_trace;
use refundsim::report::{story, summary};
use refundsim::run::{run as run_scenario, Invocation};
use refundsim::scenario;

/// Deterministic virtual-time simulator of duplicate refunds from retried tool calls.
#[derive(Parser)]
#[command(name = "refundsim", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one scenario and print its summary (exit 1 if an `expect` bound fails).
    Run(RunArgs),
    /// Print the JSON Schema of scenario files.
    Schema,
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
    /// Print this ticket's story in the incident log's style.
    #[arg(long, value_name = "ID")]
    ticket: Option<u64>,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("REFUNDSIM_LOG"))
        .without_time()
        .init();
    match run() {
        Ok(code) => code,
        Err(e) => {
            match e.downcast_ref::<scenario::ScenarioError>() {
                Some(se) => eprintln!("error: {se}"),
                None => eprintln!("error: {e:#}"),
            }
            ExitCode::from(2)
        }
    }
}

fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => cmd_run(args),
        Command::Schema => {
            print!("{}", scenario::schema_json());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

fn cmd_run(a: RunArgs) -> anyhow::Result<ExitCode> {
    let sc = scenario::load(&a.scenario, &a.policies, &a.sets)?;
    let origin = sc
        .clock_origin
        .as_deref()
        .and_then(|s| humantime::parse_rfc3339(s).ok());
    let seed = a.seed.unwrap_or(sc.seed);
    let how = Invocation {
        scenario_path: display(&a.scenario),
        policies: a.policies.iter().map(|p| display(p)).collect(),
        sets: a.sets.clone(),
    };
    let out = run_scenario(&sc, seed, &how);
    let story_lines = match a.ticket {
        Some(t) => {
            let lines = story(&out.history, t, origin);
            if lines.is_empty() {
                bail!(
                    "--ticket {t}: no such ticket in this run (it opened {} tickets; duplicated ones are listed in the summary)",
                    out.report.metrics.tickets
                );
            }
            Some(lines)
        }
        None => None,
    };
    if let Some(path) = &a.trace {
        write_atomically(path, |f| write_trace(f, &out.history.events, origin))
            .with_context(|| format!("--trace {}", display(path)))?;
    }
    let mut stdout = std::io::stdout().lock();
    if a.json {
        let mut v = serde_json::to_value(&out.report)?;
        if let (Some(lines), Some(obj)) = (&story_lines, v.as_object_mut()) {
            obj.insert("story".into(), serde_json::json!(lines));
        }
        writeln!(stdout, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        write!(
            stdout,
            "{}",
            summary(&out.report, origin, sc.reconciliation.enabled)
        )?;
        if let Some(lines) = &story_lines {
            writeln!(stdout, "\nticket {}:", a.ticket.unwrap_or(0))?;
            for l in lines {
                writeln!(stdout, "{l}")?;
            }
        }
    }
    Ok(if out.report.expectations_met {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Writes to a temporary file beside `path`, then renames it over `path`: no partial file on error.
fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<&std::fs::File>) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!("directory {} does not exist", dir.display());
    }
    let tmp =
        tempfile::NamedTempFile::new_in(dir).context("cannot create a file in that directory")?;
    {
        let mut w = std::io::BufWriter::new(tmp.as_file());
        write(&mut w)?;
        w.flush()?;
    }
    tmp.persist(path)?;
    Ok(())
}
