//! refundsim
#![warn(missing_docs)]
pub mod model;
pub mod scenario;
pub mod sim;
