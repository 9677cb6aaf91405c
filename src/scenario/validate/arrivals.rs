//! `arrivals`: a schedule or recorded tickets, and the amounts and charges they draw.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::scenario::config::{Arrivals, Scenario};
use crate::scenario::limits::{MAX_DURATION, MAX_FIRST_TICKET_ID};
use crate::scenario::rules::{
    amount, at_least_one, at_most, at_most_cents, factor, fail, fmt_d, not_below, rate, Check,
};

/// A schedule or tickets; the first ticket id; the schedule's rates and expected tickets; each
/// recorded ticket; amounts; charge factors — in that order.
pub(super) fn validate(s: &Scenario) -> Check {
    let a = &s.arrivals;
    if a.schedule.is_empty() && a.tickets.is_empty() {
        return fail(
            "arrivals.schedule",
            "empty schedule: expected at least one phase in arrivals.schedule (e.g. \
             {\"duration\": \"10m\", \"rate_per_s\": 0.1}) or one ticket in arrivals.tickets",
        );
    }
    if a.first_ticket_id > MAX_FIRST_TICKET_ID {
        return fail(
            "arrivals.first_ticket_id",
            format!(
                "invalid value: expected at most 2^53 ({MAX_FIRST_TICKET_ID}), got {}",
                a.first_ticket_id
            ),
        );
    }
    if a.tickets.is_empty() {
        schedule(a, s.horizon)?;
    }
    tickets(a, s.horizon)?;
    amount("arrivals.amount", &a.amount)?;
    at_most_cents("arrivals.amount.max_cents", a.amount.max_cents)?;
    at_most_cents("arrivals.amount.p99_cents", a.amount.p99_cents)?;
    if a.charge_factor.max > 1000.0 {
        return fail(
            "arrivals.charge_factor.max",
            format!(
                "invalid value: expected at most 1000, got {}",
                a.charge_factor.max
            ),
        );
    }
    factor("arrivals.charge_factor", &a.charge_factor)
}

/// Each phase's rate and duration (the tickets they open enter the run budget).
fn schedule(a: &Arrivals, _horizon: Duration) -> Check {
    for (i, phase) in a.schedule.iter().enumerate() {
        rate(
            &format!("arrivals.schedule.{i}.rate_per_s"),
            phase.rate_per_s,
        )?;
        at_most(
            &format!("arrivals.schedule.{i}.duration"),
            phase.duration,
            MAX_DURATION,
        )?;
    }
    Ok(())
}

/// Recorded tickets: unique ids, opened by the horizon, amounts > 0 and charges ≥ amounts.
fn tickets(a: &Arrivals, horizon: Duration) -> Check {
    let mut seen = BTreeSet::new();
    for (i, t) in a.tickets.iter().enumerate() {
        let p = format!("arrivals.tickets.{i}");
        if !seen.insert(t.id) {
            return fail(
                format!("{p}.id"),
                format!(
                    "invalid value: expected a unique ticket id, got {} again",
                    t.id
                ),
            );
        }
        if t.opened_at > horizon {
            return fail(
                format!("{p}.opened_at"),
                format!(
                    "invalid value: expected a time at or before the horizon ({}), got {}",
                    fmt_d(horizon),
                    fmt_d(t.opened_at)
                ),
            );
        }
        at_most_cents(&format!("{p}.charge_amount_cents"), t.charge_amount_cents)?;
        at_least_one(format!("{p}.amount_cents"), t.amount_cents)?;
        not_below(
            format!("{p}.charge_amount_cents"),
            t.charge_amount_cents,
            "amount_cents",
            t.amount_cents,
        )?;
    }
    Ok(())
}
