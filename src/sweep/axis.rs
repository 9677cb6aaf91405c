//! `--vary PATH=V1,V2,…`: one axis of the grid, a scenario field and the values it takes.
//!
//! Items are separated by commas; each is a value (as `--set` takes it: JSON if it parses, else
//! a string, so `8s` is the duration string and `4` the number) or an inclusive range:
//!
//! | item | values |
//! |---|---|
//! | `2..12` | the integers 2, 3, …, 12 |
//! | `2..12:2` | 2, 4, …, 12 (a step; the last value is the last one ≤ the end) |
//! | `0.1..0.5:0.1` | 0.1, 0.2, …, 0.5 (decimals need a step; printed to the step's decimals) |
//! | `5s..30s:5s` | 5s, 10s, …, 30s (durations need a step; humantime, like the scenario) |
//!
//! `..=` is accepted for `..`. Items may be mixed (`8s,10s,15s..30s:5s`); a value may not
//! repeat.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::error::SweepError;

/// Most values one axis may hold.
pub(crate) const MAX_AXIS_VALUES: usize = 1_000;

/// One varied field: its path (as `--set` takes it) and its values in the order given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Axis {
    /// Dot-separated field path, e.g. `refunds_service.pool_size`.
    pub path: String,
    /// The values, as `--set` text (`8s`, `4`).
    pub values: Vec<String>,
}

impl Axis {
    /// Parses one `--vary` argument (see the module docs). Errors name `--vary`, the argument
    /// and what was expected.
    pub fn parse(arg: &str) -> Result<Axis, SweepError> {
        let err = |m: String| SweepError::arg("--vary", arg, m);
        let Some((path, list)) = arg.split_once('=') else {
            return Err(err(
                "expected PATH=V1,V2,… or PATH=A..B, e.g. executor.timeout=8s,10s,15s or \
                 refunds_service.pool_size=2..12"
                    .into(),
            ));
        };
        let path = path.trim();
        if path.is_empty() || path.split('.').any(str::is_empty) {
            return Err(err(format!(
                "expected a dot-separated field path before `=`, got {path:?}"
            )));
        }
        let mut values: Vec<String> = Vec::new();
        for item in list.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(err(
                    "empty value; expected values separated by single commas".into(),
                ));
            }
            for v in expand(item).map_err(|m| err(format!("{item}: {m}")))? {
                if values.contains(&v) {
                    return Err(err(format!("value {v} given twice; expected each once")));
                }
                values.push(v);
                if values.len() > MAX_AXIS_VALUES {
                    return Err(err(format!(
                        "expected at most {MAX_AXIS_VALUES} values on one axis"
                    )));
                }
            }
        }
        Ok(Axis {
            path: path.to_string(),
            values,
        })
    }

    /// `PATH=VALUE` for `--set`.
    pub fn set(&self, i: usize) -> String {
        format!("{}={}", self.path, self.values[i])
    }
}

/// One item: a value, or a range expanded to its values.
fn expand(item: &str) -> Result<Vec<String>, String> {
    let Some((a, rest)) = item.split_once("..") else {
        return Ok(vec![item.to_string()]);
    };
    let rest = rest.strip_prefix('=').unwrap_or(rest);
    let (b, step) = match rest.split_once(':') {
        Some((b, s)) => (b, Some(s)),
        None => (rest, None),
    };
    let (a, b) = (a.trim(), b.trim());
    if let (Ok(x), Ok(y)) = (a.parse::<i64>(), b.parse::<i64>()) {
        let s = match step {
            None => 1,
            Some(s) => s
                .trim()
                .parse::<i64>()
                .ok()
                .filter(|&s| s > 0)
                .ok_or_else(|| format!("expected a positive integer step, got {s:?}"))?,
        };
        return int_range(x, y, s);
    }
    let Some(step) = step else {
        return Err(
            "expected an integer range A..B, or a step for decimals and durations \
             (0.1..0.5:0.1, 5s..30s:5s)"
                .into(),
        );
    };
    if let (Ok(x), Ok(y), Ok(s)) = (a.parse::<f64>(), b.parse::<f64>(), step.parse::<f64>()) {
        return decimal_range(x, y, s, decimals(step).max(decimals(a)).max(decimals(b)));
    }
    let dur = |s: &str| humantime::parse_duration(s.trim());
    if let (Ok(x), Ok(y), Ok(s)) = (dur(a), dur(b), dur(step)) {
        return duration_range(x, y, s);
    }
    Err(format!(
        "expected a range of integers (2..12, 2..12:2), decimals (0.1..0.5:0.1) or durations \
         (5s..30s:5s), got {a:?}..{b:?} step {step:?}"
    ))
}

fn check_len(n: u128) -> Result<(), String> {
    if n > MAX_AXIS_VALUES as u128 {
        return Err(format!(
            "expected at most {MAX_AXIS_VALUES} values on one axis"
        ));
    }
    Ok(())
}

fn int_range(a: i64, b: i64, step: i64) -> Result<Vec<String>, String> {
    if a > b {
        return Err(format!("expected A ≤ B, got {a} > {b}"));
    }
    check_len(((b as i128 - a as i128) / step as i128 + 1) as u128)?;
    Ok((0..)
        .map(|i: i64| a + i * step)
        .take_while(|&v| v <= b)
        .map(|v| v.to_string())
        .collect())
}

fn decimals(s: &str) -> usize {
    s.trim().split_once('.').map_or(0, |(_, f)| f.len())
}

fn decimal_range(a: f64, b: f64, step: f64, places: usize) -> Result<Vec<String>, String> {
    if !(a.is_finite() && b.is_finite() && step.is_finite() && step > 0.0) {
        return Err("expected finite bounds and a positive step".into());
    }
    if a > b {
        return Err(format!("expected A ≤ B, got {a} > {b}"));
    }
    // Count steps with a tolerance of half a unit in the last printed place, so 0.1..0.5:0.1
    // ends at 0.5 although 0.1 + 4 × 0.1 is not exactly 0.5 in binary.
    let n = ((b - a) / step + 1e-9).floor();
    // Compared as a float first: a count past u128 (a step of 1e-300) must not wrap around.
    if n.is_nan() || n >= MAX_AXIS_VALUES as f64 {
        check_len(u128::MAX)?;
    }
    check_len(n as u128 + 1)?;
    Ok((0..=n as u64)
        .map(|i| format!("{:.*}", places, a + i as f64 * step))
        .collect())
}

fn duration_range(a: Duration, b: Duration, step: Duration) -> Result<Vec<String>, String> {
    if step.is_zero() {
        return Err("expected a positive step".into());
    }
    if a > b {
        return Err(format!(
            "expected A ≤ B, got {} > {}",
            humantime::format_duration(a),
            humantime::format_duration(b)
        ));
    }
    check_len(((b - a).as_nanos() / step.as_nanos()).saturating_add(1))?;
    let mut out = Vec::new();
    let mut v = a;
    while v <= b {
        out.push(humantime::format_duration(v).to_string());
        v += step;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(arg: &str) -> Vec<String> {
        Axis::parse(arg).unwrap().values
    }

    fn msg(arg: &str) -> String {
        Axis::parse(arg).unwrap_err().to_string()
    }

    #[test]
    fn lists_and_ranges_expand_in_order() {
        assert_eq!(values("a.b=8s,10s,15s"), ["8s", "10s", "15s"]);
        assert_eq!(values("a=2..5"), ["2", "3", "4", "5"]);
        assert_eq!(values("a=2..=11:3"), ["2", "5", "8", "11"]);
        assert_eq!(values("a=2..12:4"), ["2", "6", "10"]);
        assert_eq!(
            values("a=0.1..0.5:0.1"),
            ["0.1", "0.2", "0.3", "0.4", "0.5"]
        );
        assert_eq!(values("a=5s..20s:5s"), ["5s", "10s", "15s", "20s"]);
        assert_eq!(values("a=500ms..1500ms:500ms"), ["500ms", "1s", "1s 500ms"]);
        assert_eq!(values("a=1,3..4"), ["1", "3", "4"]);
        let a = Axis::parse("refunds_service.pool_size=3").unwrap();
        assert_eq!(a.set(0), "refunds_service.pool_size=3");
    }

    #[test]
    fn bad_arguments_name_the_flag_and_what_was_expected() {
        assert!(msg("pool_size").starts_with("--vary pool_size: expected PATH=V1,V2,…"));
        assert_eq!(
            msg("a=5..2"),
            "--vary a=5..2: 5..2: expected A ≤ B, got 5 > 2"
        );
        assert!(msg("a=5s..20s").contains("a step for decimals and durations"));
        assert!(msg("a=1,,2").contains("empty value"));
        assert!(msg("a=1,2,1").contains("value 1 given twice"));
        assert!(msg("a=1..2:0").contains("positive integer step"));
        assert!(msg("a=0..100000").contains("at most 1000 values"));
        // Counts past u128 do not wrap into a panic (a step of 1e-300, a range of 1e300).
        for arg in [
            "a=0.0..1.0:1e-300",
            "a=0.0..1e300:1",
            "a=0.0..1.0:5e-324",
            "a=0.0..1e300:1e-300",
        ] {
            assert!(msg(arg).contains("at most 1000 values"), "{arg}");
        }
        assert!(msg(".a=1").contains("dot-separated field path"));
    }
}
