//! Scenario files: the format (serde), defaults, validation, and policy merge patches.

mod config;
mod load;

pub use config::*;
pub use load::{
    load, load_str, schema_json, validate, Location, ScenarioError, ValidationError, MAX_DURATION,
    MAX_EXPECTED_BACKGROUND, MAX_EXPECTED_TICKETS, MAX_FIRST_TICKET_ID, MAX_HORIZON, METRICS,
};
