//! `--shard K/N`: which part of a sweep's (point, seed) runs this process makes.

use serde::{Deserialize, Serialize};

use super::error::SweepError;

/// Shard `k` of `n` (1-based, as nextest's `--partition count:K/N`): the runs whose index in
/// the sweep's run order (point-major, then seed ascending) is `k − 1` modulo `n`. Every run
/// belongs to exactly one shard, whatever the machine; shards are nearly equal in size and each
/// sees every part of the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, 1 to `n`.
    pub k: u32,
    /// The number of shards.
    pub n: u32,
}

impl Shard {
    /// Parses `K/N` (or nextest's `count:K/N`); errors name `--shard` and what was expected.
    pub fn parse(arg: &str) -> Result<Shard, SweepError> {
        let err = |m: String| SweepError::arg("--shard", arg, m);
        let body = arg.strip_prefix("count:").unwrap_or(arg);
        let parsed = body.split_once('/').and_then(|(k, n)| {
            Some((k.trim().parse::<u32>().ok()?, n.trim().parse::<u32>().ok()?))
        });
        let Some((k, n)) = parsed else {
            return Err(err(
                "expected K/N with 1 ≤ K ≤ N, e.g. 2/4 for the second of four shards".into(),
            ));
        };
        if n == 0 || k == 0 || k > n {
            return Err(err(format!("expected 1 ≤ K ≤ N, got K = {k}, N = {n}")));
        }
        Ok(Shard { k, n })
    }

    /// Whether the run at `index` (in the sweep's run order) is this shard's.
    pub fn owns(&self, index: usize) -> bool {
        index % self.n as usize == (self.k - 1) as usize
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_runs() {
        let shards: Vec<Shard> = (1..=3)
            .map(|k| Shard::parse(&format!("{k}/3")).unwrap())
            .collect();
        for i in 0..10 {
            assert_eq!(shards.iter().filter(|s| s.owns(i)).count(), 1);
        }
        assert!(shards[0].owns(0) && shards[1].owns(1) && shards[2].owns(5));
        assert_eq!(Shard::parse("count:2/4").unwrap(), Shard { k: 2, n: 4 });
    }

    #[test]
    fn bad_shards_say_what_was_expected() {
        let msg = |a: &str| Shard::parse(a).unwrap_err().to_string();
        assert_eq!(
            msg("0/3"),
            "--shard 0/3: expected 1 ≤ K ≤ N, got K = 0, N = 3"
        );
        assert_eq!(
            msg("4/3"),
            "--shard 4/3: expected 1 ≤ K ≤ N, got K = 4, N = 3"
        );
        assert!(msg("2").starts_with("--shard 2: expected K/N"));
    }
}
