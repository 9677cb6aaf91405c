//! Virtual time: an integer count of nanoseconds since scenario start.

use std::fmt;
use std::ops::{Add, Sub};
use std::time::Duration;

/// A point in virtual time, in integer nanoseconds since the scenario's start (time 0).
///
/// Never a float: two runs that add the same durations land on the same instant bit for bit.
/// Also used for spans of virtual time (the difference of two instants), see [`SimTime::as_duration`].
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct SimTime(u64);

impl SimTime {
    /// Time 0, the start of the scenario.
    pub const ZERO: SimTime = SimTime(0);
    /// The largest representable instant (about 584 years), used as "never".
    pub const MAX: SimTime = SimTime(u64::MAX);

    /// An instant `ns` nanoseconds after the start.
    pub const fn from_nanos(ns: u64) -> Self {
        SimTime(ns)
    }

    /// An instant `ms` milliseconds after the start.
    pub const fn from_millis(ms: u64) -> Self {
        SimTime(ms * 1_000_000)
    }

    /// An instant `s` seconds after the start.
    pub const fn from_secs(s: u64) -> Self {
        SimTime(s * 1_000_000_000)
    }

    /// Converts a [`Duration`], saturating at [`SimTime::MAX`] (durations above ~584 years).
    pub fn from_duration(d: Duration) -> Self {
        SimTime(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }

    /// Nanoseconds since the start.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// This instant (or span) as a [`Duration`].
    pub const fn as_duration(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// Seconds as `f64`, for reports only (never for scheduling).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// Milliseconds as `f64`, for reports only.
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// `self + d`, saturating at [`SimTime::MAX`].
    pub fn saturating_add(self, d: SimTime) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }

    /// `self - earlier`, or zero when `earlier` is later.
    pub fn saturating_sub(self, earlier: SimTime) -> SimTime {
        SimTime(self.0.saturating_sub(earlier.0))
    }
}

impl Add for SimTime {
    type Output = SimTime;
    fn add(self, rhs: SimTime) -> SimTime {
        self.saturating_add(rhs)
    }
}

impl Sub for SimTime {
    type Output = SimTime;
    fn sub(self, rhs: SimTime) -> SimTime {
        self.saturating_sub(rhs)
    }
}

impl From<Duration> for SimTime {
    fn from(d: Duration) -> Self {
        SimTime::from_duration(d)
    }
}

impl fmt::Display for SimTime {
    /// Seconds with millisecond precision, e.g. `9.700s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:03}s",
            self.0 / 1_000_000_000,
            (self.0 / 1_000_000) % 1000
        )
    }
}

/// Formats virtual instant `t` as `HH:MM:SS.mmm` UTC, counting from `origin` (midnight when
/// `None`), like the incident log. Only the time of day is shown (no calendar arithmetic that
/// could overflow), with a day marker `+Nd ` once the clock has passed midnight N times since
/// the origin's day began, so times past 24 h never read as earlier ones.
pub(crate) fn clock_time(origin: Option<std::time::SystemTime>, t: SimTime) -> String {
    const DAY_MS: u128 = 86_400_000;
    let origin_ms = origin
        .and_then(|o| o.duration_since(std::time::SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() % DAY_MS);
    let total = origin_ms + u128::from(t.as_nanos() / 1_000_000);
    let (day, ms) = (total / DAY_MS, total % DAY_MS);
    let marker = if day > 0 {
        format!("+{day}d ")
    } else {
        String::new()
    };
    format!(
        "{marker}{:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        (ms / 60_000) % 60,
        (ms / 1000) % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_are_exact_integers() {
        assert_eq!(SimTime::from_millis(8000), SimTime::from_secs(8));
        assert_eq!(
            SimTime::from_duration(Duration::from_micros(1500)).as_nanos(),
            1_500_000
        );
        assert_eq!(SimTime::from_secs(3) - SimTime::from_secs(5), SimTime::ZERO);
        assert_eq!(SimTime::MAX + SimTime::from_secs(1), SimTime::MAX);
        assert_eq!(SimTime::from_millis(9700).to_string(), "9.700s");
    }
}
