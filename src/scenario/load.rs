//! Loading a scenario: parse, apply policy merge patches and `--set` overrides, validate.
//! STUB: being written.

use std::path::{Path, PathBuf};

use super::config::Scenario;

/// Why a scenario, policy or `--set` could not be loaded. Every message names the file, the JSON
/// path (and line/column where known) and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// Placeholder.
    #[error("{0}")]
    Other(String),
}

/// Loads `path`, applies each policy file in order (RFC 7396 merge patch), then each
/// `PATH=VALUE` override, and validates the result.
pub fn load(_path: &Path, _policies: &[PathBuf], _sets: &[String]) -> Result<Scenario, ScenarioError> {
    todo!()
}

/// Parses and validates scenario text; `origin` names it in errors.
pub fn load_str(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
    serde_json::from_str(text).map_err(|e| ScenarioError::Other(format!("{origin}: {e}")))
}

/// The JSON Schema of the scenario format, pretty-printed with a trailing newline.
pub fn schema_json() -> String {
    todo!()
}
