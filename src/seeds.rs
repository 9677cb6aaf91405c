//! `--seeds A..B`: an inclusive range of root seeds, shared by the gate (`check`, `diff`) and
//! `sweep`.

use std::fmt;

/// A malformed seed range: the flag, the argument as given, and what was expected. One line:
/// `--seeds 5..2: expected A ≤ B, got 5 > 2` (long numbers echoed in scientific notation).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{flag} {}: {}", crate::scenario::echo(.arg), crate::scenario::short_numbers(.message))]
pub struct SeedsError {
    /// The flag (`--seeds`, `--candidate-seeds`).
    pub flag: &'static str,
    /// The argument as given.
    pub arg: String,
    /// What is wrong and what was expected.
    pub message: String,
}

/// Root seeds `first..=last` (`--seeds 1..30` is 30 seeds; `--seeds 7` is one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedRange {
    /// First seed.
    pub first: u64,
    /// Last seed, included.
    pub last: u64,
}

/// Most seeds one range may hold: 10,000 (the incident scenario takes ~40 ms a seed, so ~7 min
/// per scenario × policy on one core).
pub(crate) const MAX_SEEDS: u64 = 10_000;

impl SeedRange {
    /// Parses `A..B` (inclusive, `A` ≤ `B`) or a single `N`; `flag` names the argument in errors.
    ///
    /// # Errors
    /// [`SeedsError`]: not a range or a number, `A` > `B`, or more than [`MAX_SEEDS`] seeds.
    pub fn parse(flag: &'static str, arg: &str) -> Result<SeedRange, SeedsError> {
        let err = |message: String| SeedsError {
            flag,
            arg: arg.to_string(),
            message,
        };
        let num = |s: &str| {
            s.trim().parse::<u64>().map_err(|e| {
                err(match e.kind() {
                    std::num::IntErrorKind::PosOverflow => {
                        format!(
                            "seed {} is too large: expected at most {}",
                            s.trim(),
                            u64::MAX
                        )
                    }
                    _ if s.trim().is_empty() => {
                        "expected seeds as A..B (inclusive, e.g. 1..30) or \
                         one seed N, with a number on each side of `..`"
                            .to_string()
                    }
                    _ => format!(
                        "expected seeds as A..B (inclusive, e.g. 1..30) or one seed N, got {s:?}"
                    ),
                })
            })
        };
        let (first, last) = match arg.split_once("..") {
            Some((a, b)) => (num(a)?, num(b.strip_prefix('=').unwrap_or(b))?),
            None => {
                let n = num(arg)?;
                (n, n)
            }
        };
        if first > last {
            return Err(err(format!("expected A ≤ B, got {first} > {last}")));
        }
        if last - first >= MAX_SEEDS {
            return Err(err(format!("expected at most {MAX_SEEDS} seeds")));
        }
        Ok(SeedRange { first, last })
    }

    /// The seeds, ascending.
    pub fn seeds(&self) -> Vec<u64> {
        (self.first..=self.last).collect()
    }
}

impl fmt::Display for SeedRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.first, self.last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_and_single_seeds() {
        assert_eq!(
            SeedRange::parse("--seeds", "1..30").unwrap().seeds().len(),
            30
        );
        assert_eq!(
            SeedRange::parse("--seeds", "1..=3").unwrap().seeds(),
            vec![1, 2, 3]
        );
        assert_eq!(SeedRange::parse("--seeds", "28").unwrap().seeds(), vec![28]);
    }

    #[test]
    fn rejects_bad_ranges_naming_the_flag() {
        let msg = |a: &str| SeedRange::parse("--seeds", a).unwrap_err().to_string();
        assert_eq!(msg("5..2"), "--seeds 5..2: expected A ≤ B, got 5 > 2");
        assert!(msg("a..b").starts_with("--seeds a..b: expected seeds as A..B"));
        assert!(msg("1..99999999999999999999").ends_with(
            "seed 99999999999999999999 is too large: expected at most 18446744073709551615"
        ));
        assert!(msg("-1..3").contains("expected seeds as A..B"));
        assert!(msg("1..").ends_with("with a number on each side of `..`"));
        assert!(msg("1..999999999").contains("at most 10000 seeds"));
        assert!(msg("1..10001").contains("at most 10000 seeds"));
    }
}
