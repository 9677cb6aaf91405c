//! The reconciliation job: every interval up to the horizon, counts Stripe refunds (that move
//! money) per ticket and alerts on each ticket with more than one, once.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use super::world::World;
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
