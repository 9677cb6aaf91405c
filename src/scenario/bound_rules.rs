//! The rules of one `expect` bound ([`Bound`]): finite numbers, lower ≤ upper, and a
//! `violating_seeds_max` that is a fraction and has a per-seed bound to count against.

use super::config::Bound;
use super::rules::{fail, Check};

/// Checks `b`; `path` is `expect.METRIC`.
pub(super) fn bound(path: &str, b: &Bound) -> Check {
    let fields = [
        ("min", b.min),
        ("max", b.max),
        ("mean_min", b.mean_min),
        ("mean_max", b.mean_max),
        ("p90_max", b.p90_max),
        ("violating_seeds_max", b.violating_seeds_max),
    ];
    for (name, v) in fields {
        if v.is_some_and(|x| !x.is_finite()) {
            return fail(
                format!("{path}.{name}"),
                "invalid value: expected a finite number",
            );
        }
    }
    ordered(path, ("min", b.min), ("max", b.max))?;
    ordered(path, ("mean_min", b.mean_min), ("mean_max", b.mean_max))?;
    if let Some(f) = b.violating_seeds_max {
        if !(0.0..=1.0).contains(&f) {
            return fail(
                format!("{path}.violating_seeds_max"),
                format!("invalid value: expected a fraction of seeds in [0, 1], got {f}"),
            );
        }
        if b.min.is_none() && b.max.is_none() {
            return fail(
                format!("{path}.violating_seeds_max"),
                "invalid bound: counts seeds that break `min` or `max`; expected `min` or `max` beside it",
            );
        }
    }
    Ok(())
}

fn ordered(path: &str, lo: (&str, Option<f64>), hi: (&str, Option<f64>)) -> Check {
    if let (Some(a), Some(b)) = (lo.1, hi.1) {
        if a > b {
            return fail(
                path,
                format!(
                    "invalid bound: expected {} ≤ {}, got {} {a} > {} {b}",
                    lo.0, hi.0, lo.0, hi.0
                ),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(json: &str) -> Bound {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn accepts_consistent_bounds() {
        let ok = b(r#"{"max":0,"mean_max":0.5,"p90_max":2,"violating_seeds_max":0.1}"#);
        assert_eq!(bound("expect.x", &ok), Ok(()));
    }

    #[test]
    fn rejects_inconsistent_bounds_naming_the_field() {
        let msg = |json: &str| bound("expect.x", &b(json)).unwrap_err().to_string();
        assert_eq!(
            msg(r#"{"min":2,"max":1}"#),
            "expect.x: invalid bound: expected min ≤ max, got min 2 > max 1"
        );
        assert_eq!(
            msg(r#"{"mean_min":2,"mean_max":1}"#),
            "expect.x: invalid bound: expected mean_min ≤ mean_max, got mean_min 2 > mean_max 1"
        );
        assert_eq!(
            msg(r#"{"max":0,"violating_seeds_max":1.5}"#),
            "expect.x.violating_seeds_max: invalid value: expected a fraction of seeds in [0, 1], got 1.5"
        );
        assert!(msg(r#"{"violating_seeds_max":0.5}"#).contains("expected `min` or `max` beside it"));
    }
}
