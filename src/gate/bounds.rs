//! An `expect` bound checked over the seeds of one scenario × policy: per-seed `min` / `max`
//! (with the tolerated fraction of failing seeds) and the aggregates `mean_min`, `mean_max`,
//! `p90_max`; plus the `conservation` invariant, which always gates.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::stats::{mean, percentile};
use crate::run::RunReport;
use crate::scenario::Bound;

/// Which rule of a bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// `min`, on every seed (or all but `violating_seeds_max` of them).
    Min,
    /// `max`, on every seed (or all but `violating_seeds_max` of them).
    Max,
    /// `mean_min` over the seeds.
    MeanMin,
    /// `mean_max` over the seeds.
    MeanMax,
    /// `p90_max` over the seeds.
    P90Max,
    /// The `conservation` invariant (no `conservation_violations` on any seed), checked even
    /// without a bound: a violation is a model bug.
    Conservation,
}

/// One rule of one bound, checked over the seeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BoundCheck {
    /// Metric name.
    pub metric: String,
    /// The rule.
    pub rule: Rule,
    /// The rule's limit.
    pub limit: f64,
    /// Per-seed rules: the fraction of seeds allowed to fail (`violating_seeds_max`, default 0).
    pub allowed_fraction: f64,
    /// Per-seed rules: the worst seed's value; aggregates: the mean or p90.
    pub value: f64,
    /// Per-seed rules: the seeds that break it, ascending; empty for aggregates.
    pub failing_seeds: Vec<u64>,
    /// The seed to replay: the worst seed (the first on ties), or the first failing one when
    /// the worst does not fail (a NaN elsewhere).
    pub seed: u64,
    /// Whether the rule holds.
    pub ok: bool,
}

impl BoundCheck {
    /// The rule as text, e.g. `max 0 per seed`, `mean ≤ 2.5`.
    pub fn describe(&self) -> String {
        let l = self.limit;
        let tolerated = if self.allowed_fraction > 0.0 {
            format!(
                " on ≥ {}% of seeds",
                fmt_num((1.0 - self.allowed_fraction) * 100.0)
            )
        } else {
            " per seed".to_string()
        };
        match self.rule {
            Rule::Min => format!("≥ {}{tolerated}", fmt_num(l)),
            Rule::Max => format!("≤ {}{tolerated}", fmt_num(l)),
            Rule::MeanMin => format!("mean ≥ {}", fmt_num(l)),
            Rule::MeanMax => format!("mean ≤ {}", fmt_num(l)),
            Rule::P90Max => format!("p90 ≤ {}", fmt_num(l)),
            Rule::Conservation => "invariant conservation (always)".to_string(),
        }
    }
}

/// A number without a trailing `.0`; at most 3 decimals.
pub(crate) fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Checks every bound of `expect` over `runs` (one report per seed, in seed order), then the
/// conservation invariant unless `expect` already bounds `conservation_violations` ≤ 0 on every
/// seed.
pub(crate) fn check_bounds(
    expect: &BTreeMap<String, Bound>,
    runs: &[&RunReport],
) -> Vec<BoundCheck> {
    let mut out = Vec::new();
    for (metric, b) in expect {
        let values: Vec<(u64, f64)> = runs
            .iter()
            .map(|r| (r.seed, r.metrics.get(metric).unwrap_or(f64::NAN)))
            .collect();
        let allowed = b.violating_seeds_max.unwrap_or(0.0);
        if let Some(l) = b.min {
            out.push(per_seed(metric, Rule::Min, l, allowed, &values));
        }
        if let Some(l) = b.max {
            out.push(per_seed(metric, Rule::Max, l, allowed, &values));
        }
        if let Some(l) = b.mean_min {
            out.push(aggregate(metric, Rule::MeanMin, l, &values));
        }
        if let Some(l) = b.mean_max {
            out.push(aggregate(metric, Rule::MeanMax, l, &values));
        }
        if let Some(l) = b.p90_max {
            out.push(aggregate(metric, Rule::P90Max, l, &values));
        }
    }
    let gated = expect.get("conservation_violations").is_some_and(|b| {
        b.max.is_some_and(|m| m <= 0.0) && b.violating_seeds_max.unwrap_or(0.0) == 0.0
    });
    if !gated {
        let values: Vec<(u64, f64)> = runs
            .iter()
            .map(|r| (r.seed, r.metrics.conservation_violations as f64))
            .collect();
        let mut c = per_seed("conservation_violations", Rule::Max, 0.0, 0.0, &values);
        c.rule = Rule::Conservation;
        out.push(c);
    }
    out
}

fn per_seed(
    metric: &str,
    rule: Rule,
    limit: f64,
    allowed: f64,
    values: &[(u64, f64)],
) -> BoundCheck {
    let breaks = |v: f64| {
        v.is_nan()
            || if rule == Rule::Min {
                v < limit
            } else {
                v > limit
            }
    };
    let failing_seeds: Vec<u64> = values
        .iter()
        .filter(|(_, v)| breaks(*v))
        .map(|(s, _)| *s)
        .collect();
    let low = rule == Rule::Min;
    let (worst_seed, worst) = worst(values, low);
    let fraction = failing_seeds.len() as f64 / values.len().max(1) as f64;
    BoundCheck {
        metric: metric.to_string(),
        rule,
        limit,
        allowed_fraction: allowed,
        value: worst,
        // The worst seed when it breaks the rule (it does whenever any seed does, NaN aside).
        seed: if failing_seeds.contains(&worst_seed) || failing_seeds.is_empty() {
            worst_seed
        } else {
            failing_seeds[0]
        },
        ok: fraction <= allowed,
        failing_seeds,
    }
}

fn aggregate(metric: &str, rule: Rule, limit: f64, values: &[(u64, f64)]) -> BoundCheck {
    let xs: Vec<f64> = values.iter().map(|(_, v)| *v).collect();
    let value = match rule {
        Rule::P90Max => percentile(&xs, 0.9),
        _ => mean(&xs),
    };
    let low = rule == Rule::MeanMin;
    let ok = !value.is_nan() && if low { value >= limit } else { value <= limit };
    BoundCheck {
        metric: metric.to_string(),
        rule,
        limit,
        allowed_fraction: 0.0,
        value,
        failing_seeds: Vec::new(),
        seed: worst(values, low).0,
        ok,
    }
}

/// The seed with the lowest (`low`) or highest value, the first one on ties.
fn worst(values: &[(u64, f64)], low: bool) -> (u64, f64) {
    let mut best = values.first().copied().unwrap_or((0, f64::NAN));
    for &(s, v) in values {
        if (low && v < best.1) || (!low && v > best.1) {
            best = (s, v);
        }
    }
    best
}

/// The invariant whose `first_ticket` is an offending ticket for a bound on `metric` that is
/// too high, if any.
pub(crate) fn invariant_of(metric: &str) -> Option<&'static str> {
    Some(match metric {
        "duplicate_refund_tickets" | "extra_refunds" => "at_most_one_refund_per_ticket",
        "over_refund_cents" => "no_over_refund",
        "lost_refunds" => "no_lost_refund",
        "false_failures" => "truthful_tool_results",
        "conservation_violations" => "conservation",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(xs: &[f64]) -> Vec<(u64, f64)> {
        xs.iter()
            .enumerate()
            .map(|(i, v)| (i as u64 + 1, *v))
            .collect()
    }

    #[test]
    fn per_seed_max_counts_failing_seeds_against_the_tolerated_fraction() {
        let v = vals(&[0.0, 3.0, 0.0, 5.0]);
        let strict = per_seed("m", Rule::Max, 0.0, 0.0, &v);
        assert_eq!(
            (
                strict.ok,
                strict.failing_seeds.clone(),
                strict.seed,
                strict.value
            ),
            (false, vec![2, 4], 4, 5.0)
        );
        assert!(per_seed("m", Rule::Max, 0.0, 0.5, &v).ok);
        assert!(!per_seed("m", Rule::Max, 0.0, 0.49, &v).ok);
        assert_eq!(strict.describe(), "≤ 0 per seed");
        assert_eq!(
            per_seed("m", Rule::Min, 1.0, 0.1, &v).describe(),
            "≥ 1 on ≥ 90% of seeds"
        );
    }

    fn report(seed: u64, duplicates: u64, conservation: u64) -> RunReport {
        RunReport {
            schema_version: crate::run::REPORT_SCHEMA_VERSION,
            scenario: "t".into(),
            seed,
            metrics: crate::invariants::Metrics {
                duplicate_refund_tickets: duplicates,
                conservation_violations: conservation,
                ..Default::default()
            },
            expectations: Vec::new(),
            expectations_met: true,
            causes: Vec::new(),
            incident_shaped_tickets: Vec::new(),
            sim_events: 0,
            sim_end_ns: 0,
            replay: String::new(),
            recording: None,
        }
    }

    #[test]
    fn conservation_gates_even_with_an_empty_expect_but_other_invariants_do_not() {
        let runs = [report(1, 5, 0), report(2, 7, 1)];
        let refs: Vec<&RunReport> = runs.iter().collect();
        let checks = check_bounds(&BTreeMap::new(), &refs);
        assert_eq!(checks.len(), 1);
        let c = &checks[0];
        assert_eq!(
            (c.rule, c.ok, c.failing_seeds.clone(), c.seed),
            (Rule::Conservation, false, vec![2], 2)
        );
        // The default expect already bounds conservation: no second row.
        let checks = check_bounds(&crate::scenario::default_expect(), &refs);
        assert_eq!(checks.len(), 4);
        assert!(checks.iter().all(|c| c.rule == Rule::Max));
    }

    #[test]
    fn aggregates_pick_the_worst_seed() {
        let v = vals(&[1.0, 4.0, 1.0, 2.0]);
        let m = aggregate("m", Rule::MeanMax, 2.0, &v);
        assert_eq!((m.value, m.ok, m.seed), (2.0, true, 2));
        let p = aggregate("m", Rule::P90Max, 3.0, &v);
        assert_eq!((p.value, p.ok), (4.0, false));
        let lo = aggregate("m", Rule::MeanMin, 2.5, &v);
        assert_eq!((lo.ok, lo.seed), (false, 1));
    }
}
