//! `refundsim import`: recorded traces, logs and refund exports to a scenario file.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use super::emit;
use super::recording::RecordingArgs;

#[derive(clap::Args)]
pub(crate) struct ImportArgs {
    #[command(flatten)]
    recording: RecordingArgs,
    /// Where to write the replay scenario (whole or not at all).
    #[arg(long, value_name = "SCENARIO")]
    out: PathBuf,
}

pub(crate) fn run(
    a: ImportArgs,
    budget: refundsim::scenario::RunBudget,
) -> anyhow::Result<ExitCode> {
    let inputs = a.recording.inputs(budget)?;
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
    let bar = super::progress::ImportBar::new("import");
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
