//! refundsim
#![warn(missing_docs)]
pub mod sim;
