//! `expect`: bounds on the run report's metrics.

use std::collections::BTreeMap;

use crate::scenario::config::Bound;
use crate::scenario::effect::{canonical_metric, METRIC_ALIASES};
use crate::scenario::limits::METRICS;
use crate::scenario::rules::{fail, Check};

/// Each key names a metric in [`METRICS`] (or its effect-neutral alias, not both) and each bound is consistent (see `bound_rules`).
pub(super) fn validate(expect: &BTreeMap<String, Bound>) -> Check {
    for (metric, bound) in expect {
        let canonical = canonical_metric(metric);
        if !METRICS.contains(&canonical) {
            let neutral: Vec<&str> = METRIC_ALIASES.iter().map(|(_, n)| *n).collect();
            return fail(
                format!("expect.{metric}"),
                format!(
                    "unknown metric {metric:?}; expected one of: {} (or an effect-neutral \
                     alias: {})",
                    METRICS.join(", "),
                    neutral.join(", ")
                ),
            );
        }
        if canonical != metric && expect.contains_key(canonical) {
            return fail(
                format!("expect.{metric}"),
                format!(
                    "{metric:?} is another name of {canonical:?}, which is bounded too; \
                     expected one of the two"
                ),
            );
        }
        crate::scenario::bound_rules::bound(&format!("expect.{metric}"), bound)?;
    }
    Ok(())
}
