//! Why `lint` could not read a file: bad input, exit code 2.

use crate::scenario::ScenarioError;

/// A file `lint` cannot read as any of the shapes it knows. One line, naming the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LintError {
    /// A scenario (or a policy over the defaults) that does not load.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The file is larger than the input limit (`--max-input-mb`): refused unread.
    #[error(transparent)]
    TooLarge(crate::input::InputError),
    /// The file could not be read.
    #[error("{file}: cannot read file: {message}")]
    Read {
        /// The file.
        file: String,
        /// The I/O error.
        message: String,
    },
    /// Not JSON.
    #[error("{file}:{line}:{column}: {message}")]
    Syntax {
        /// The file.
        file: String,
        /// Line, 1-based.
        line: usize,
        /// Column, 1-based.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// JSON of the wrong shape.
    #[error("{file}: {}{message}", if .path.is_empty() { String::new() } else { format!("{}: ", .path) })]
    Shape {
        /// The file.
        file: String,
        /// Dot-separated JSON path (empty: the whole document).
        path: String,
        /// What is wrong and what was expected.
        message: String,
    },
}
