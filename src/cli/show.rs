//! `refundsim show` and `refundsim schema`: a scenario with every default written out, and the
//! JSON Schema of scenario files.

use std::path::PathBuf;
use std::process::ExitCode;

use refundsim::scenario;

use super::{emit, print_json};

#[derive(clap::Args)]
pub(crate) struct ShowArgs {
    /// Scenario file (JSON).
    scenario: PathBuf,
    /// RFC 7396 JSON merge patch applied over the scenario; repeatable, applied in order.
    #[arg(long = "policy", value_name = "FILE")]
    policies: Vec<PathBuf>,
    /// Override one field, e.g. `--set layers.sidecar.max_retries=0`; repeatable, after policies.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
}

/// `show`: the scenario after policies and `--set`, with the stack it compiles to.
pub(crate) fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    // `show` simulates nothing: no run budget applies.
    let unlimited = scenario::RunBudget::UNLIMITED;
    let sc = scenario::load_within(&args.scenario, &args.policies, &args.sets, &unlimited)?;
    let mut shown = serde_json::to_value(scenario::compiled(&sc))?;
    if !sc.effect().is_refund() {
        scenario::aliases::speak_neutrally(&mut shown);
    }
    print_json(&shown)?;
    Ok(ExitCode::SUCCESS)
}

/// `schema`: the JSON Schema of scenario files.
pub(crate) fn schema() -> anyhow::Result<ExitCode> {
    emit(scenario::schema_json())?;
    Ok(ExitCode::SUCCESS)
}
