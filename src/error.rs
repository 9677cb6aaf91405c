//! Why a front-end command (`run`, `explore`, `report`, `replay`) could not run: bad input, exit
//! code 2.

use crate::scenario::ScenarioError;

/// Bad input to a command. Every message is one line naming the argument or file at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// The scenario or a policy could not be loaded.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A run went past the run budget while running (`--max-events`, `--max-memory-mb`).
    #[error(transparent)]
    OverBudget(#[from] crate::scenario::OverBudget),
    /// A flag that does not fit the scenario, or an output file that cannot be written.
    #[error("{0}")]
    Input(String),
}
