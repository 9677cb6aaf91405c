//! Numbers and counts in messages: long numbers in scientific notation, thousands separators,
//! dollars, estimates (`about 1,234`) and plurals. A leaf: every layer that writes a message
//! (scenario validation, the run budget, import, reports) uses these, and they use nothing.

/// `n` and the noun for it: `1 tool call`, `2 tool calls`.
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `1234567` → `1,234,567`: an exact count with thousands separators (budget messages, the
/// capped warnings' "… and 455,899 more", dollars in summaries).
pub(crate) fn group_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Cents as dollars with thousands separators: `586712` → `$5,867.12` (summaries, causes).
pub(crate) fn dollars(cents: u64) -> String {
    format!("${}.{:02}", group_thousands(cents / 100), cents % 100)
}

/// `message` with each run of digits (with an optional `.` and fraction) longer than 24
/// characters replaced by the number in scientific notation with at most 6 significant
/// digits (`1e300`, `1.23457e40`).
pub fn short_numbers(message: &str) -> String {
    const LONG: usize = 24;
    let bytes = message.as_bytes();
    let mut out = String::with_capacity(message.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        // One fraction: a `.` followed by a digit (`1..5` is two numbers and a range).
        if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
        }
        let run = &message[start..i];
        // A number already cut short (`999…`) is left as it is: read whole, it would be a
        // different number.
        let cut = message[i..].starts_with('…') || message[i..].starts_with("\"…");
        if run.len() > LONG && !cut {
            if let Ok(x) = run.parse::<f64>() {
                out.push_str(&message[copied..start]);
                out.push_str(&scientific(x));
                copied = i;
            }
        }
    }
    out.push_str(&message[copied..]);
    out
}

/// `x` as `{:e}` with at most 6 significant digits and no trailing zeros: `1e300`, `2.5e30`.
fn scientific(x: f64) -> String {
    let t = format!("{x:.5e}");
    match t.split_once('e') {
        Some((m, e)) => {
            let m = if m.contains('.') {
                m.trim_end_matches('0').trim_end_matches('.')
            } else {
                m
            };
            format!("{m}e{e}")
        }
        None => t,
    }
}

/// Above this an estimate prints as "more than 10^12": beyond it the digits say nothing.
pub(crate) const SATURATE: f64 = 1e12;

/// `about 1,234`: an estimate rounded to an integer with thousands separators; `under 1` for
/// a positive estimate below one half; `more than 10^12` above that or when not finite.
pub fn about(x: f64) -> String {
    if x.is_nan() || x >= SATURATE {
        "more than 10^12".to_string()
    } else if x > 0.0 && x < 0.5 {
        "under 1".to_string()
    } else {
        format!("about {}", thousands(x))
    }
}

/// `up to 1,234` (a count that can be reached), saturating as [`about`] does.
pub(crate) fn up_to(x: f64) -> String {
    if x.is_nan() || x >= SATURATE {
        "more than 10^12".to_string()
    } else {
        format!("up to {}", thousands(x))
    }
}

/// `about 12.5` below 1,000 (one decimal), else as [`about`]: for counts where a fraction
/// tells (connections kept busy).
pub(crate) fn about_tenths(x: f64) -> String {
    if x.is_finite() && x.abs() < 999.95 {
        format!("about {x:.1}")
    } else {
        about(x)
    }
}

/// `1,234,567`: `x` rounded to an integer with thousands separators; saturates as "more than
/// 10^12" (so never a 300-digit number, `inf` or `NaN`); 0 for a negative or zero `x`.
pub fn thousands(x: f64) -> String {
    if x.is_nan() || x >= SATURATE {
        return "more than 10^12".to_string();
    }
    group_thousands(if x > 0.0 { x.round() as u64 } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::short_numbers;

    #[test]
    fn long_numbers_read_in_scientific_notation_and_short_ones_stay() {
        let huge = format!("got {}", 1e300f64);
        assert_eq!(short_numbers(&huge), "got 1e300");
        assert_eq!(
            short_numbers(&format!("got {} and {}", 2.5e40f64, -1.234567891e30f64)),
            "got 2.5e40 and -1.23457e30"
        );
        assert_eq!(
            short_numbers("at most 100,000, got 9007199254740993"),
            "at most 100,000, got 9007199254740993"
        );
        assert_eq!(
            short_numbers("got 0.000000000000000000000000001"),
            "got 1e-27"
        );
        assert_eq!(short_numbers("no digits"), "no digits");
        let range = format!("1..{}", "9".repeat(300));
        assert_eq!(short_numbers(&range), "1..1e300");
        let cut = format!("string \"{}\"… (301 characters)", "9".repeat(48));
        assert_eq!(short_numbers(&cut), cut);
        let bare = format!("{}… (301 characters)", "9".repeat(48));
        assert_eq!(short_numbers(&bare), bare);
    }
}
