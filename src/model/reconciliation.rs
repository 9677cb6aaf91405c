//! The reconciliation job: every interval up to the horizon, counts Stripe refunds (that move
//! money) per ticket and alerts on each ticket with more than one, once. And the stale-pending
//! sweep of the service's own ledger (`reconciliation.stale_pending`).

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use super::refunds_service::{rotates_key, ServiceResult};
use super::world::{Ids, World};
use crate::history::EventKind;
use crate::sim::SimTime;

/// Runs the job until the horizon, when `reconciliation.enabled`.
pub(crate) async fn run(w: Rc<World>) {
    let cfg = &w.cfg.reconciliation;
    if !cfg.enabled {
        return;
    }
    let interval = SimTime::from_duration(cfg.interval);
    let horizon = SimTime::from_duration(w.cfg.horizon);
    let mut alerted = BTreeSet::new();
    w.stripe.borrow_mut().follow_new_refunds();
    let mut k = 1u64;
    loop {
        let at = SimTime::from_nanos(interval.as_nanos().saturating_mul(k));
        if at > horizon || interval == SimTime::ZERO {
            return;
        }
        w.sim.sleep_until(at).await;
        // Tickets with a refund created since the last run; a ticket crosses one refund only
        // when a new one is created, so these are the only candidates for a new alert.
        let recent: BTreeSet<(u64, String)> =
            w.stripe.borrow_mut().take_recent().into_iter().collect();
        // ticket → creation times of its money-moving refunds, in order.
        let mut by_ticket: BTreeMap<u64, Vec<SimTime>> = BTreeMap::new();
        {
            let stripe = w.stripe.borrow();
            for (ticket, charge) in &recent {
                let times = by_ticket.entry(*ticket).or_default();
                times.extend(
                    stripe
                        .refunds_for_charge(charge)
                        .into_iter()
                        .filter(|r| r.origin.ticket == *ticket && r.status.moves_money())
                        .map(|r| r.created),
                );
            }
        }
        let (mut tickets, mut at_ns) = (Vec::new(), Vec::new());
        for (ticket, times) in by_ticket {
            if times.len() > 1 && alerted.insert(ticket) {
                // Times were gathered charge by charge; the second refund is the second-earliest.
                let mut times = times;
                times.sort_unstable();
                tickets.push(ticket);
                at_ns.push(times[1].as_nanos());
            }
        }
        // Closed tickets read by this run are gone for good: no later run can alert on them.
        for id in w.reconciled() {
            alerted.remove(&id);
        }
        if !tickets.is_empty() {
            w.record(
                Default::default(),
                EventKind::ReconciliationAlert {
                    tickets,
                    duplicate_at_ns: at_ns,
                },
            );
        }
        k += 1;
    }
}

/// The stale-pending sweep, when `reconciliation.stale_pending` is set: every `every` up to the
/// horizon, each ledger row pending for at least `after` (in ticket order) is closed. With
/// `check_provider`, a refund that moves money on the ticket's charge is recorded as the
/// ticket's refund; otherwise (or when there is none) the row is marked failed: its unknown
/// outcome and its pending-row owner are cleared, the service's status reads `none`, and the
/// key is rotated when the service's `rotate_key` rotates after a definite failure (the sweep's
/// "failed" is one in the service's books).
pub(crate) async fn sweep_stale_pending(w: Rc<World>) {
    let Some(cfg) = w.cfg.reconciliation.stale_pending.clone() else {
        return;
    };
    let every = SimTime::from_duration(cfg.every);
    let after = SimTime::from_duration(cfg.after);
    let horizon = SimTime::from_duration(w.cfg.horizon);
    let marked_failed = ServiceResult::error(500, "marked failed by the stale-pending sweep");
    let mut k = 1u64;
    loop {
        let at = SimTime::from_nanos(every.as_nanos().saturating_mul(k));
        if at > horizon || every == SimTime::ZERO {
            return;
        }
        w.sim.sleep_until(at).await;
        k += 1;
        let Some(cutoff) = at.as_nanos().checked_sub(after.as_nanos()) else {
            continue;
        };
        let stale = w.ledger.borrow().pending_since(SimTime::from_nanos(cutoff));
        for ticket in stale {
            let found = if cfg.check_provider {
                w.stripe
                    .borrow()
                    .first_money_moving_refund(&w.charge_of(ticket))
                    .map(|r| String::from(&*r.id))
            } else {
                None
            };
            let (since, key_rotated) = {
                let mut ledger = w.ledger.borrow_mut();
                let row = ledger.row(ticket);
                let since = row.pending_since.take().unwrap_or(at);
                let mut key_rotated = false;
                match &found {
                    Some(id) => row.refund_id = Some(id.clone()),
                    None => {
                        row.marked_failed = true;
                        row.unknown_outcome = false;
                        row.owner = None;
                        if rotates_key(&w.cfg.refunds_service, &marked_failed) {
                            key_rotated = row.nonce.is_some();
                            row.rotate_nonce();
                        }
                    }
                }
                (since, key_rotated)
            };
            w.record(
                Ids::ticket(ticket),
                EventKind::StalePendingClosed {
                    pending_for_ns: (at - since).as_nanos(),
                    refund_id: found,
                    key_rotated,
                },
            );
        }
    }
}
