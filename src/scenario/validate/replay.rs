//! `replay`: a recorded incident (written by `refundsim import`, editable by hand).

use crate::scenario::config::Scenario;
use crate::scenario::replay::RecordedCall;
use crate::scenario::rules::{fail, latency, Check};

/// `pool_size` ≥ 1; `reach_provider` a valid latency (not a script); each request's `status`
/// an HTTP status (100–599) or null; each recorded call's instants in order (result, decision
/// and response not before the call, the decision not before the result).
pub(super) fn validate(s: &Scenario) -> Check {
    let Some(r) = &s.replay else { return Ok(()) };
    if r.pool_size == 0 {
        return fail(
            "replay.pool_size",
            "expected ≥ 1 (the recording's pool size), got 0",
        );
    }
    latency("replay.reach_provider", &r.reach_provider)?;
    if let Err(e) = r.wait_scale(s.refunds_service.pool_size, s.refunds_service.overhead) {
        return fail("refunds_service.pool_size", e);
    }
    for (key, req) in &r.requests {
        if let Some(st) = req.status.filter(|st| !(100..=599).contains(st)) {
            return fail(
                format!("replay.requests.{key}.status"),
                format!("expected an HTTP status from 100 to 599, or null for no answer, got {st}"),
            );
        }
    }
    for (id, t) in &r.tickets {
        for (i, c) in t.calls.iter().enumerate() {
            recorded_call(&format!("replay.tickets.{id}.calls.{i}"), c)?;
        }
    }
    Ok(())
}

/// One recorded call of a ticket at field path `p`: its instants in order (`at` first, the
/// decision after the result) and its `result` one of the known words.
fn recorded_call(p: &str, c: &RecordedCall) -> Check {
    let before = |field: &str, at: std::time::Duration, of: &str, than| {
        fail(
            format!("{p}.{field}"),
            format!(
                "{} is before `{of}` ({}): expected recorded instants in order",
                humantime::format_duration(at),
                humantime::format_duration(than)
            ),
        )
    };
    for (field, at) in [
        ("result_at", c.result_at),
        ("decision_at", c.decision_at),
        ("response_at", c.response_at),
    ] {
        if let Some(at) = at.filter(|&at| at < c.at) {
            return before(field, at, "at", c.at);
        }
    }
    if let (Some(d), Some(r)) = (c.decision_at, c.result_at) {
        if d < r {
            return before("decision_at", d, "result_at", r);
        }
    }
    if let Some(k) = c
        .result
        .as_deref()
        .filter(|k| !["ok", "fail", "timeout"].contains(k))
    {
        return fail(
            format!("{p}.result"),
            format!("expected \"ok\", \"fail\" or \"timeout\", got \"{k}\""),
        );
    }
    Ok(())
}
