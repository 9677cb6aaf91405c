//! The reconciliation job: every interval up to the horizon, counts Stripe refunds (that move
//! money) per ticket and alerts on each ticket with more than one, once.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use super::world::World;
use crate::history::EventKind;
use crate::sim::SimTime;

/// Runs the job until the horizon, when `reconciliation.enabled`.
pub async fn run(w: Rc<World>) {
    let cfg = &w.cfg.reconciliation;
    if !cfg.enabled {
        return;
    }
    let interval = SimTime::from_duration(cfg.interval);
    let horizon = SimTime::from_duration(w.cfg.horizon);
    let mut alerted = BTreeSet::new();
    let mut k = 1u64;
    loop {
        let at = SimTime::from_nanos(interval.as_nanos().saturating_mul(k));
        if at > horizon || interval == SimTime::ZERO {
            return;
        }
        w.sim.sleep_until(at).await;
        // ticket → creation times of its money-moving refunds, in order.
        let mut by_ticket: BTreeMap<u64, Vec<SimTime>> = BTreeMap::new();
        for r in w
            .stripe
            .borrow()
            .refunds()
            .iter()
            .filter(|r| r.status.moves_money())
        {
            by_ticket
                .entry(r.origin.ticket)
                .or_default()
                .push(r.created);
        }
        let (mut tickets, mut at_ns) = (Vec::new(), Vec::new());
        for (ticket, times) in by_ticket {
            if times.len() > 1 && alerted.insert(ticket) {
                tickets.push(ticket);
                at_ns.push(times[1].as_nanos());
            }
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
