//! The model: one file per real component.
pub mod stripe;
