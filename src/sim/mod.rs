//! The discrete-event engine, knowing nothing of refunds: virtual clock, a single-threaded
//! executor for `async` tasks, timers, and seeded random streams.
//!
//! ```
//! use refundsim::sim::{Sim, SimTime};
//! let sim = Sim::new();
//! let s = sim.clone();
//! let work = sim.spawn(async move {
//!     let s2 = s.clone();
//!     // A call that takes 9.7 s under an 8 s timeout: the executor gives up at 8 s.
//!     let call = s.spawn(async move { s2.sleep(SimTime::from_millis(9_700)).await; "refunded" });
//!     let r = s.timeout(SimTime::from_secs(8), call).await;
//!     (r.is_err(), s.now())
//! });
//! let stats = sim.run();
//! assert_eq!(stats.end, SimTime::from_millis(9_700)); // the zombie still finished
//! # let _ = work;
//! ```

mod executor;
mod race;
mod rng;
mod stream_rng;
mod tiebreak;
mod time;
mod timer;

pub use executor::{
    CallTimer, Exceeded, JoinHandle, Limits, RunStats, Sim, TimerCallback, TimerKind,
};
pub use race::{race, Either, Race};
pub use rng::{tag, StreamRng, Streams};
pub use tiebreak::TieBreak;
pub(crate) use tiebreak::{Script, Seeded};
pub(crate) use time::clock_time;
pub use time::SimTime;
pub use timer::{Elapsed, Sleep, Timeout};
