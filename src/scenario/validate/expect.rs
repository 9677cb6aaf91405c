//! `expect`: bounds on the run report's metrics.

use std::collections::BTreeMap;

use crate::scenario::config::Bound;
use crate::scenario::limits::METRICS;
use crate::scenario::rules::{fail, Check};

/// Each key names a metric in [`METRICS`] and each bound is consistent (see `bound_rules`).
pub(super) fn validate(expect: &BTreeMap<String, Bound>) -> Check {
    for (metric, bound) in expect {
        if !METRICS.contains(&metric.as_str()) {
            return fail(
                format!("expect.{metric}"),
                format!(
                    "unknown metric {metric:?}; expected one of: {}",
                    METRICS.join(", ")
                ),
            );
        }
        crate::scenario::bound_rules::bound(&format!("expect.{metric}"), bound)?;
    }
    Ok(())
}
