//! Means, nearest-rank percentiles and 95 % confidence intervals (Student's t).

/// Arithmetic mean; 0 for an empty sample.
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample variance (n − 1 denominator); 0 for fewer than two values.
pub fn variance(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64
}

/// Nearest-rank percentile `p` in (0, 1] of `xs`; 0 for an empty sample.
pub fn percentile(xs: &[f64], p: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let i = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

/// Two-sided 95 % critical values of Student's t, `t(0.975, df)` for df 1..=30.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// `t(0.975, df)`: the table for df ≤ 30; beyond, the value at the next tabulated df below
/// (40: 2.021, 60: 2.000, 120: 1.980; 1.960 from 1000), which errs wide. `df` is rounded down.
pub fn t975(df: f64) -> f64 {
    let d = df.floor().max(1.0) as usize;
    match d {
        1..=30 => T975[d - 1],
        31..=39 => T975[29],
        40..=59 => 2.021,
        60..=119 => 2.000,
        120..=999 => 1.980,
        _ => 1.960,
    }
}

/// A mean with its 95 % confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Interval {
    /// Point estimate.
    pub mean: f64,
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
}

/// The mean of paired differences `d` with its t interval: `mean ± t(0.975, n−1)·s/√n`.
/// With one value the interval is that value (no spread can be estimated).
pub fn paired(d: &[f64]) -> Interval {
    let m = mean(d);
    let n = d.len() as f64;
    let half = if d.len() < 2 {
        0.0
    } else {
        t975(n - 1.0) * (variance(d) / n).sqrt()
    };
    Interval {
        mean: m,
        low: m - half,
        high: m + half,
    }
}

/// The difference of means `mean(c) − mean(b)` of independent samples with Welch's interval
/// (Welch–Satterthwaite degrees of freedom).
pub fn welch(b: &[f64], c: &[f64]) -> Interval {
    let m = mean(c) - mean(b);
    let (vb, vc) = (
        variance(b) / b.len().max(1) as f64,
        variance(c) / c.len().max(1) as f64,
    );
    let se2 = vb + vc;
    if se2 == 0.0 {
        return Interval {
            mean: m,
            low: m,
            high: m,
        };
    }
    let df = se2.powi(2)
        / (vb.powi(2) / (b.len().max(2) - 1) as f64 + vc.powi(2) / (c.len().max(2) - 1) as f64);
    let half = t975(df) * se2.sqrt();
    Interval {
        mean: m,
        low: m - half,
        high: m + half,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_interval_matches_a_hand_computation() {
        // d = 1, 2, 3, 4: mean 2.5, s = 1.2910, se = 0.6455, t(3) = 3.182 → ±2.054.
        let i = paired(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(i.mean, 2.5);
        assert!((i.high - 4.554).abs() < 1e-3, "{i:?}");
        assert!((i.low - 0.446).abs() < 1e-3, "{i:?}");
    }

    #[test]
    fn welch_of_equal_spreads() {
        // b = 0,2 (var 2), c = 3,5 (var 2): diff 3, se = √2, df = 2 → t 4.303.
        let i = welch(&[0.0, 2.0], &[3.0, 5.0]);
        assert_eq!(i.mean, 3.0);
        assert!((i.high - (3.0 + 4.303 * 2f64.sqrt())).abs() < 1e-9);
    }

    #[test]
    fn percentiles_and_t_table() {
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&xs, 0.9), 9.0);
        assert_eq!(percentile(&[], 0.9), 0.0);
        assert_eq!(t975(29.0), 2.045);
        assert_eq!(t975(45.7), 2.021);
        assert_eq!(t975(5000.0), 1.960);
    }
}
