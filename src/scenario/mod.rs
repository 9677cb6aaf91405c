//! Scenario files: the format (serde), defaults, validation, and policy merge patches.

mod config;
mod load;

pub use config::*;
pub use load::{load, load_str, schema_json, ScenarioError};
