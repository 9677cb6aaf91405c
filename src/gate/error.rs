//! Why a gate command (`check`, `diff`) could not run: bad input, exit code 2.

use crate::scenario::ScenarioError;

impl From<crate::seeds::SeedsError> for GateError {
    fn from(e: crate::seeds::SeedsError) -> Self {
        GateError::Seeds {
            flag: e.flag,
            arg: e.arg,
            message: e.message,
        }
    }
}

/// Bad input to `check` or `diff`. Every message is one line naming the argument or file at
/// fault and what was expected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    /// A scenario or policy could not be loaded.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A malformed `--seeds` (long numbers echoed in scientific notation).
    #[error("{flag} {}: {}", crate::scenario::echo(.arg), crate::scenario::short_numbers(.message))]
    Seeds {
        /// The flag (`--seeds`, `--candidate-seeds`).
        flag: &'static str,
        /// The argument as given.
        arg: String,
        /// What is wrong and what was expected.
        message: String,
    },
    /// A malformed `--tolerance`.
    #[error("--tolerance {}: {}", crate::scenario::echo(.arg), crate::scenario::short_numbers(.message))]
    Tolerance {
        /// The argument as given.
        arg: String,
        /// What is wrong and what was expected.
        message: String,
    },
    /// A scenario argument that is neither a file nor a directory with scenarios.
    #[error("{path}: {message}")]
    Input {
        /// The path as given.
        path: String,
        /// What is wrong and what was expected.
        message: String,
    },
    /// A run went past the run budget while running (`--max-events`, `--max-memory-mb`): the
    /// first in the command's order.
    #[error(transparent)]
    OverBudget(#[from] crate::scenario::OverBudget),
    /// An output file could not be written.
    #[error("{flag} {path}: {message}")]
    Output {
        /// The flag (`--junit`).
        flag: &'static str,
        /// The path as given.
        path: String,
        /// What went wrong.
        message: String,
    },
}
