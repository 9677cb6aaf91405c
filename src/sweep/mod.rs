//! Sizing sweeps (`refundsim sweep`, `refundsim merge`): a scenario over a grid of field values
//! × seeds, on common random numbers, summarised per grid point, plotted, and the safe point
//! that costs least.
//!
//! ```
//! use refundsim::sweep::{sweep, SweepOptions};
//! let s = sweep(&SweepOptions {
//!     scenario: "scenarios/recipes/pool-acquire-retry.json".into(),
//!     vary: vec!["executor.timeout=1s,30s".into()],
//!     seeds: Some(refundsim::gate::SeedRange { first: 1, last: 2 }),
//!     ..Default::default()
//! })
//! .unwrap();
//! assert_eq!(s.points.len(), 2);
//! assert_eq!(s.runs.len(), 4);
//! ```
//!
//! - **Grid.** Each `--vary PATH=VALUES` is an axis ([`Axis`]: lists, integer / decimal /
//!   duration ranges with steps); the grid is their cartesian product, the first axis slowest.
//!   A grid point is the scenario under the sweep's policies and `--set`s, then `--set
//!   PATH=VALUE` for each axis.
//! - **Common random numbers.** Every point runs on the same seeds; a seed gives every point the
//!   same tickets, amounts and latency draws, so the differences between points are the varied
//!   fields' effect, not sampling noise (the pairing `diff` uses).
//! - **Outputs** ([`write_dir`]): `summary.csv` (per point, the columns a person asks for
//!   first: the varied values, seeds, P(any duplicate), duplicate tickets, service response
//!   p50 and p99, safe, recommended), `points.csv` (per point: the varied values, `seeds`,
//!   `p_duplicate` — the fraction of seeds with a duplicate refund ticket —, `safe`, then
//!   `METRIC.mean`, `.p50`, `.p90`, `.max` over seeds for every report metric, see
//!   [`metric_names`]), `runs.csv` (per (point, seed): every metric), `sweep.json` (the
//!   inputs, the points, the recommendation), and SVG plots ([`plots`]). Numbers are Rust's
//!   shortest round-trip form; nothing depends on the thread count.
//! - **Safe region** ([`Require`]): the points where every `--require` holds; `--minimize`
//!   picks the safe point with the smallest value of its paths, then the smallest service
//!   response p99, among those `lint` finds no error in and a short `explore` finds no
//!   violation in (`vet`: every point is linted, at most [`MAX_EXPLORED`] candidates explored;
//!   the ones passed over are [`Skipped`]).
//! - **Shards** ([`Shard`], [`merge`]): `--shard K/N` runs every N-th run; `merge` checks the
//!   shards and gives the unsharded sweep's files back, byte for byte.

mod axis;
mod error;
mod exec;
mod files;
mod inputs;
mod merge;
mod plot;
mod read;
mod require;
mod shard;
mod summary;
mod table;
mod text;
mod vet;

pub use axis::Axis;
pub use error::SweepError;
pub use exec::{sweep, sweep_with_progress, Sweep, SweepOptions};
pub use files::write_dir;
pub use inputs::Inputs;
pub use merge::merge;
pub use plot::plots;
pub use read::{read_dir, SweepPoint, SweepRead};
pub use require::Require;
pub use shard::Shard;
pub use table::{Explored, PointRow, RunRow, Stat};
pub(crate) use table::{DUPLICATES, TOOL_CALL_P50, TOOL_CALL_P99};
pub use text::sweep_text;
pub use vet::Skipped;
