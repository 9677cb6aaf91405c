//! Erlang B and Erlang C: the loss and waiting probabilities of a c-server queue, pure
//! arithmetic over (servers, offered load). The queueing oracle ([`crate::analysis::queueing`]) and a
//! recording's pool calibration (`scenario::replay`) both use them; this file imports nothing
//! of the crate, so either may.

/// The probability that a call offered `a` Erlangs is lost on `c` servers with no queue
/// (Erlang B), by the recursion in [`crate::analysis::queueing`]'s module docs. 0 for `a ≤ 0`.
pub(crate) fn erlang_b(c: u32, a: f64) -> f64 {
    if a <= 0.0 {
        return 0.0;
    }
    let mut b = 1.0;
    for k in 1..=c {
        b = a * b / (f64::from(k) + a * b);
    }
    b
}

/// The probability that an arrival waits in an M/M/c queue with `c` servers and offered load `a`
/// Erlangs (Erlang C), from [`erlang_b`]: `C = B / (1 − ρ(1 − B))`, ρ = a / c. 0 for `a ≤ 0`;
/// 1 for `a ≥ c` (no steady state: every arrival eventually waits).
pub fn erlang_c(c: u32, a: f64) -> f64 {
    if a <= 0.0 {
        return 0.0;
    }
    if c == 0 || a >= f64::from(c) {
        return 1.0;
    }
    let b = erlang_b(c, a);
    let rho = a / f64::from(c);
    b / (1.0 - rho * (1.0 - b))
}
