//! `refundsim replay`: import recordings in memory and compare a replay with them.

use std::path::PathBuf;
use std::process::ExitCode;

use refundsim::scenario;

use super::recording::RecordingArgs;
use super::{emit, exit, print_json};

#[derive(clap::Args)]
pub(crate) struct ReplayArgs {
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

pub(crate) fn run(
    a: ReplayArgs,
    budget: refundsim::scenario::RunBudget,
) -> anyhow::Result<ExitCode> {
    let inputs = a.recording.inputs(budget)?;
    let bar = super::progress::ImportBar::new("replay");
    let imported = refundsim::import::import_with_progress(&inputs, &bar);
    let imported = imported.inspect_err(|_| bar.0.finish_and_clear())?;
    refundsim::import::ImportProgress::step(&bar, "loading the replay scenario");
    let origin_name = format!("replay of {}", imported.report_sources(&inputs));
    let sc = scenario::load_text(&imported.json, &origin_name, &a.policies, &a.sets, &budget);
    bar.0.finish_and_clear();
    let sc = sc?;
    let seed = a.seed.unwrap_or(sc.seed);
    // The run's bar over virtual time, as `run`'s: it only reads the clock.
    let bar = super::progress::virtual_time_bar_of("replay");
    let mut observer = super::progress::virtual_time_progress(&bar);
    let horizon = sc.horizon;
    let watch = scenario::RunWatch::new(budget);
    let out = refundsim::run::run_with_progress_watched(
        &sc,
        seed,
        &refundsim::run::Invocation::default(),
        &watch,
        move |now| observer(now, horizon),
    );
    bar.finish_and_clear();
    let out = out?;
    let Some(c) = out.report.recording else {
        anyhow::bail!("the imported scenario has no replay section");
    };
    let exact = a.policies.is_empty() && a.sets.is_empty();
    eprint!("{}", refundsim::import::render_warnings(&imported.report));
    print_replay(&a, &imported, &sc, seed, &c, exact)?;
    Ok(exit(!exact || c.matches))
}

/// Prints a replay's comparison: `--json`'s object, or the import report and the exact or
/// counterfactual table.
fn print_replay(
    a: &ReplayArgs,
    imported: &refundsim::import::Imported,
    sc: &refundsim::scenario::Scenario,
    seed: u64,
    c: &refundsim::replay::Comparison,
    exact: bool,
) -> anyhow::Result<()> {
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
            refundsim::replay::render_exact(c, origin)
        } else {
            format!(
                "recorded vs counterfactual (this policy on the recorded traffic):\n{}",
                refundsim::replay::render_counterfactual(c)
            )
        };
        emit(text)?;
    }
    Ok(())
}
