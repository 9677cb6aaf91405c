//! Why `sweep` or `merge` could not run: bad input, exit code 2.

use crate::gate::GateError;
use crate::scenario::ScenarioError;

/// Bad input to `sweep` or `merge`, or an output that could not be written. Every message is
/// one line naming the flag, file or directory at fault and what was expected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// The scenario, a policy or a `--set` could not be loaded.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A malformed `--seeds`.
    #[error(transparent)]
    Gate(#[from] GateError),
    /// A run went past the run budget while running: the first in the sweep's order.
    #[error(transparent)]
    OverBudget(#[from] crate::scenario::OverBudget),
    /// A malformed argument: `--vary`, `--shard`, `--require`, `--minimize`.
    #[error("{flag} {}: {}", crate::scenario::echo(.arg), crate::scenario::short_numbers(.message))]
    Arg {
        /// The flag.
        flag: &'static str,
        /// The argument as given.
        arg: String,
        /// What is wrong and what was expected.
        message: String,
    },
    /// A shard directory that `merge` cannot combine with the others.
    #[error("merge {dir}: {message}")]
    Merge {
        /// The directory as given (or `DIR…` for the set of them).
        dir: String,
        /// What is wrong and what was expected.
        message: String,
    },
    /// A sweep's output directory that cannot be read back (`refundsim report --sweep`).
    #[error("{dir}: {message}")]
    Read {
        /// The directory, or the file in it, as given.
        dir: String,
        /// What is wrong and what was expected.
        message: String,
    },
    /// An output file could not be written.
    #[error("--out {path}: {message}")]
    Output {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

impl SweepError {
    pub(super) fn arg(flag: &'static str, arg: &str, message: impl Into<String>) -> Self {
        SweepError::Arg {
            flag,
            arg: arg.to_string(),
            message: message.into(),
        }
    }

    pub(super) fn merge(dir: impl std::fmt::Display, message: impl Into<String>) -> Self {
        SweepError::Merge {
            dir: dir.to_string(),
            message: message.into(),
        }
    }
}
