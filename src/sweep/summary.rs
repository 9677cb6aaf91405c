//! `summary.csv`: the narrow companion of `points.csv`, the columns a person asks for first, one
//! row per grid point.
//!
//! Columns, in order:
//! - `point`, then each varied field by its path (`executor.timeout`), as `points.csv` has them;
//! - `seeds`, `p_duplicate` (the fraction of seeds with a duplicate refund ticket);
//! - `duplicate_refund_tickets.mean`, `duplicate_refund_tickets.max` (duplicate-refund tickets,
//!   mean and maximum over seeds);
//! - `latency.tool_call.p50_ms.mean`, `latency.tool_call.p99_ms.mean` (the refunds service's
//!   response time p50 and p99 in ms, means over seeds);
//! - `safe`: `yes` when every `--require` holds, else `no`;
//! - with `--minimize` only, `recommended`: `yes` on the recommended point, else `no`.
//!
//! Every column but `safe` and `recommended` is the `points.csv` column of the same name,
//! rounded for reading (`points.csv` keeps every digit): `p_duplicate` to 3 decimals, means of
//! counts to 2, milliseconds to 1, a maximum as it is; a metric the sweep did not record (an old
//! `sweep.json`) is left out.

use super::exec::Sweep;
use super::table::{csv_text, num, DUPLICATES, TOOL_CALL_P50, TOOL_CALL_P99};

/// The `points.csv` metric columns `summary.csv` copies, as (metric, statistic, decimals; `None`
/// as `points.csv` writes it), in order.
const METRIC_COLUMNS: &[(&str, &str, Option<usize>)] = &[
    (DUPLICATES, "mean", Some(2)),
    (DUPLICATES, "max", None),
    (TOOL_CALL_P50, "mean", Some(1)),
    (TOOL_CALL_P99, "mean", Some(1)),
];

/// `x` with `decimals` (`None`: as `points.csv` writes it); empty for a missing value (NaN).
fn rounded(x: f64, decimals: Option<usize>) -> String {
    match decimals {
        Some(_) if x.is_nan() => String::new(),
        Some(d) => format!("{x:.d$}"),
        None => num(x),
    }
}

/// `summary.csv`'s text for a whole sweep (see the module docs for its columns). The same
/// sweep gives the same bytes.
pub(crate) fn summary_csv(s: &Sweep) -> String {
    let inputs = &s.inputs;
    let metrics: Vec<(String, usize, &str, Option<usize>)> = METRIC_COLUMNS
        .iter()
        .filter_map(|&(m, stat, decimals)| {
            let i = inputs.metrics.iter().position(|n| n == m)?;
            Some((format!("{m}.{stat}"), i, stat, decimals))
        })
        .collect();
    let recommending = !inputs.minimize.is_empty();
    let mut header: Vec<String> = vec!["point".into()];
    header.extend(inputs.paths());
    header.extend(["seeds".into(), "p_duplicate".into()]);
    header.extend(metrics.iter().map(|(name, ..)| name.clone()));
    header.push("safe".into());
    if recommending {
        header.push("recommended".into());
    }
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_string();
    let rows = s.points.iter().map(|p| {
        let mut row = vec![p.point.to_string()];
        row.extend(p.values.iter().cloned());
        row.push(p.seeds.to_string());
        row.push(rounded(p.p_duplicate, Some(3)));
        for &(_, i, stat, decimals) in &metrics {
            row.push(rounded(p.stats[i].get(stat).unwrap_or(f64::NAN), decimals));
        }
        row.push(yes_no(p.safe));
        if recommending {
            row.push(yes_no(s.best == Some(p.point)));
        }
        row
    });
    csv_text(header, rows)
}
