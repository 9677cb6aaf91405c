//! refundsim
#![warn(missing_docs)]
pub mod check;
pub mod history;
pub mod model;
pub mod report;
pub mod run;
pub mod scenario;
pub mod sim;
