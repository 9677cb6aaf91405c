//! Analysis of a scenario or of a run's events, below every front end that shows it: the pool's
//! queueing oracle ([`queueing`]: Erlang C and Allen–Cunneen, read by `report/` and `lint/`),
//! one ticket's story with the incident-shape scan ([`story`]: read by `run`, `report/`,
//! `gate/` and `explore/`), and the statistics of a sample of runs ([`stats`]: read by `gate/`
//! and `sweep/`). Nothing here runs a simulation or prints to a terminal.

pub use crate::erlang;
pub mod queueing;
pub mod stats;
pub mod story;
