//! Units of report metrics, for `diff`'s table: counts, money in cents (shown in dollars) and
//! latencies in ms, told apart by the name's suffix as `docs/report.md` names them.

/// The unit of a report metric: `cents` for names ending `_cents` (money, shown as `$` in
/// text), `ms` for names ending `_ms` (latency percentiles), else `count` (events, tickets,
/// requests).
pub fn unit_of(metric: &str) -> &'static str {
    if metric.ends_with("_cents") {
        "cents"
    } else if metric.ends_with("_ms") {
        "ms"
    } else if metric.ends_with("_fraction") || metric.ends_with("_utilisation") {
        "fraction"
    } else {
        "count"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_the_suffix() {
        assert_eq!(unit_of("over_refund_cents"), "cents");
        assert_eq!(unit_of("latency_tool_call_p99_ms"), "ms");
        assert_eq!(unit_of("duplicate_refund_tickets"), "count");
        assert_eq!(unit_of("pool_wait_over_threshold_fraction"), "fraction");
        assert_eq!(unit_of("pool_utilisation"), "fraction");
    }
}
