//! Means, nearest-rank percentiles and 95 % confidence intervals (Student's t quantiles from
//! `statrs`).

/// Arithmetic mean; 0 for an empty sample.
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample variance (n − 1 denominator); 0 for fewer than two values.
pub(crate) fn variance(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64
}

/// Nearest-rank percentile `p` in (0, 1] of `xs`; 0 for an empty sample.
pub(crate) fn percentile(xs: &[f64], p: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let i = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

/// `t(0.975, df)`: the 0.975 quantile of Student's t with `df` degrees of freedom (the
/// two-sided 95 % critical value), from [`statrs`]' inverse CDF. `df` may be fractional (Welch);
/// below 1 it is taken as 1. E.g. `t975(3.0)` ≈ 3.182, `t975(29.0)` ≈ 2.045.
///
/// Beyond [`T_NORMAL_DF`] degrees of freedom it is the normal quantile 1.959964: statrs' inverse
/// loses precision there (1.8266 at df 10⁷), and t and normal differ by less than 2·10⁻⁵. `diff`
/// never gets there (its df is at most 2 × [`super::MAX_SEEDS`]).
pub(crate) fn t975(df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
    let df = if df.is_nan() { 1.0 } else { df.max(1.0) };
    if df > T_NORMAL_DF {
        return Normal::new(0.0, 1.0)
            .expect("mean 0, sd 1 is valid")
            .inverse_cdf(0.975);
    }
    StudentsT::new(0.0, 1.0, df)
        .expect("location 0, scale 1 and df ≥ 1 are valid")
        .inverse_cdf(0.975)
}

/// Degrees of freedom beyond which [`t975`] is the normal quantile: 10⁵.
pub(crate) const T_NORMAL_DF: f64 = 1e5;

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
pub(crate) fn welch(b: &[f64], c: &[f64]) -> Interval {
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
        // d = 1, 2, 3, 4: mean 2.5, s = 1.2910, se = 0.6455, t(3) = 3.1824 → ±2.054.
        let i = paired(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(i.mean, 2.5);
        assert!((i.high - 4.554).abs() < 1e-3, "{i:?}");
        assert!((i.low - 0.446).abs() < 1e-3, "{i:?}");
    }

    #[test]
    fn welch_of_equal_spreads() {
        // b = 0,2 (var 2), c = 3,5 (var 2): diff 3, se = √2, df = 2 → t 4.3027.
        let i = welch(&[0.0, 2.0], &[3.0, 5.0]);
        assert_eq!(i.mean, 3.0);
        assert!(
            (i.high - (3.0 + 4.302_653 * 2f64.sqrt())).abs() < 1e-4,
            "{i:?}"
        );
    }

    #[test]
    fn percentiles_and_t_quantiles() {
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&xs, 0.9), 9.0);
        assert_eq!(percentile(&[], 0.9), 0.0);
        // The textbook table (3 decimals) for df 1, 3, 29, 40, 60, 120; ∞ is 1.95996.
        for (df, t) in [
            (1.0, 12.706),
            (3.0, 3.182),
            (29.0, 2.045),
            (40.0, 2.021),
            (60.0, 2.000),
            (120.0, 1.980),
        ] {
            assert!((t975(df) - t).abs() < 5e-4, "df {df}: {} vs {t}", t975(df));
        }
        // Large df: 20 000 (2 × MAX_SEEDS) from statrs (exact 1.960083), 10⁷ the normal.
        assert!((t975(2e4) - 1.960_083).abs() < 1e-5, "{}", t975(2e4));
        assert!((t975(1e7) - 1.959_964).abs() < 1e-5, "{}", t975(1e7));
        // Fractional df (Welch) falls between its neighbours; below 1 counts as 1.
        assert!(t975(45.7) < t975(45.0) && t975(45.7) > t975(46.0));
        assert_eq!(t975(0.2), t975(1.0));
    }
}
