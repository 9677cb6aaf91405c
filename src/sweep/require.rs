//! `--require NAME<=V`: the safe region of a sweep is the grid points where every requirement
//! holds.
//!
//! `NAME` is one of:
//! - `p_duplicate`: the fraction of seeds with a duplicate refund ticket (`p_duplicate<=0.01`);
//! - a column of `points.csv`, `METRIC.STAT` with `STAT` one of `mean`, `p50`, `p90`, `max`
//!   (`duplicate_refund_tickets.mean<=0.5`, `latency.tool_call.p99_ms.p90<=9000`);
//! - a bare metric, which means its **max over seeds**: the bound holds on every seed
//!   (`duplicate_refund_tickets<=0`, `latency.tool_call.p99_ms<=10000`).
//!
//! Without `--require`, the sweep requires `duplicate_refund_tickets<=0`: no seed has a
//! duplicate.

use serde::{Deserialize, Serialize};

use super::error::SweepError;
use super::table::{PointRow, DUPLICATES, STATS};

/// The requirement used when none is given.
pub(crate) const DEFAULT_REQUIRE: &str = "duplicate_refund_tickets<=0";

/// One requirement, resolved against the sweep's metrics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Require {
    /// As written in `points.csv`: `p_duplicate` or `METRIC.STAT`.
    pub column: String,
    /// Upper bound (inclusive).
    pub max: f64,
}

impl Require {
    /// Parses `NAME<=V` (see the module docs) against the sweep's metric names.
    pub fn parse(arg: &str, names: &[String]) -> Result<Require, SweepError> {
        let err = |m: String| SweepError::arg("--require", arg, m);
        let Some((name, v)) = arg.split_once("<=") else {
            return Err(err(
                "expected NAME<=VALUE, e.g. duplicate_refund_tickets<=0 or p_duplicate<=0.01"
                    .into(),
            ));
        };
        // An effect-neutral alias (`duplicate_effect_tickets`) names the same metric; so does
        // one with a statistic (`duplicate_effect_tickets.mean`).
        let name = name.trim();
        let aliased = match name.split_once('.') {
            Some((m, stat)) => format!("{}.{stat}", crate::scenario::effect::canonical_metric(m)),
            None => crate::scenario::effect::canonical_metric(name).to_string(),
        };
        let name = aliased.as_str();
        let max: f64 = v
            .trim()
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite())
            .ok_or_else(|| err(format!("expected a number after `<=`, got {:?}", v.trim())))?;
        let column = if name == "p_duplicate" || names.iter().any(|n| n == name) {
            if name == "p_duplicate" {
                name.to_string()
            } else {
                format!("{name}.max")
            }
        } else {
            match name.rsplit_once('.') {
                Some((m, s)) if STATS.contains(&s) && names.iter().any(|n| n == m) => {
                    name.to_string()
                }
                _ => {
                    return Err(err(format!(
                        "unknown metric {name:?}; expected p_duplicate, a report metric \
                         (duplicate_refund_tickets, latency.tool_call.p99_ms, …: its max over \
                         seeds) or METRIC.STAT with STAT one of {}",
                        STATS.join(", ")
                    )))
                }
            }
        };
        Ok(Require { column, max })
    }

    /// The point's value of this requirement's column.
    pub fn value(&self, p: &PointRow, names: &[String]) -> f64 {
        if self.column == "p_duplicate" {
            return p.p_duplicate;
        }
        let (m, s) = self.column.rsplit_once('.').unwrap_or((DUPLICATES, "max"));
        names
            .iter()
            .position(|n| n == m)
            .and_then(|i| p.stats[i].get(s))
            .unwrap_or(f64::NAN)
    }

    /// Whether it holds at `p` (a NaN value does not hold).
    pub fn holds(&self, p: &PointRow, names: &[String]) -> bool {
        self.value(p, names) <= self.max
    }
}

impl std::fmt::Display for Require {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}<={}", self.column, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::table::Stat;

    fn names() -> Vec<String> {
        vec![DUPLICATES.into(), "latency.tool_call.p99_ms".into()]
    }

    #[test]
    fn bare_metrics_mean_the_max_over_seeds() {
        let r = Require::parse("duplicate_refund_tickets<=0", &names()).unwrap();
        assert_eq!(r.column, "duplicate_refund_tickets.max");
        let r = Require::parse("latency.tool_call.p99_ms.p90 <= 9000", &names()).unwrap();
        assert_eq!(
            (r.column.as_str(), r.max),
            ("latency.tool_call.p99_ms.p90", 9000.0)
        );
        let p = PointRow {
            point: 0,
            values: vec![],
            seeds: 2,
            p_duplicate: 0.5,
            safe: false,
            lint: vec![],
            explore: None,
            stats: vec![Stat::of(&[0.0, 1.0]), Stat::of(&[8000.0, 9500.0])],
        };
        assert!(!Require::parse("duplicate_refund_tickets<=0", &names())
            .unwrap()
            .holds(&p, &names()));
        assert!(Require::parse("duplicate_refund_tickets.p50<=0", &names())
            .unwrap()
            .holds(&p, &names()));
        assert!(Require::parse("p_duplicate<=0.5", &names())
            .unwrap()
            .holds(&p, &names()));
        assert!(!Require::parse("p_duplicate<=0.49", &names())
            .unwrap()
            .holds(&p, &names()));
        // Nearest rank: the p90 of two seeds is the larger one.
        assert!(!r.holds(&p, &names()));
        let p50 = Require::parse("latency.tool_call.p99_ms.p50<=8000", &names()).unwrap();
        assert!(p50.holds(&p, &names()));
    }

    #[test]
    fn bad_requirements_say_what_was_expected() {
        let msg = |a: &str| Require::parse(a, &names()).unwrap_err().to_string();
        assert!(msg("dups<=0").starts_with("--require dups<=0: unknown metric \"dups\""));
        assert!(msg("p_duplicate<0.1").contains("expected NAME<=VALUE"));
        assert!(msg("p_duplicate<=x").contains("expected a number after `<=`"));
    }
}
