//! Ticket arrivals, generated lazily (one pending arrival at a time): a piecewise-constant Poisson
//! rate schedule, or an explicit recorded list.
//!
//! Common random numbers: inter-arrival times come from the `arrivals` stream of each phase and a
//! ticket's amount and charge from the `ticket` stream keyed by its id, so every policy run on
//! the same seed sees the same tickets.

use std::rc::Rc;

use super::agent::Ticket;
use super::deliveries::deliver;
use super::dist;
use super::world::World;
use crate::scenario::TicketSpec;
use crate::sim::SimTime;

/// Draws ticket `id`'s amount and charge.
pub fn draw_ticket(w: &World, id: u64, phase: String) -> Ticket {
    let a = &w.cfg.arrivals;
    let mut rng = w.ticket_stream("ticket", id, &[]);
    let amount_cents = dist::amount_from(&mut rng, &a.amount, &w.latencies.amount);
    let factor = dist::uniform(&mut rng, a.charge_factor.min, a.charge_factor.max);
    let charge_amount_cents = ((amount_cents as f64) * factor).ceil() as u64;
    Ticket {
        id,
        amount_cents,
        charge_amount_cents: charge_amount_cents.max(amount_cents),
        phase,
    }
}

/// Opens tickets until the horizon, starting an agent task for each.
pub async fn generate(w: Rc<World>) {
    let horizon = SimTime::from_duration(w.cfg.horizon);
    if !w.cfg.arrivals.tickets.is_empty() {
        return explicit(w, horizon).await;
    }
    let mut id = w.cfg.arrivals.first_ticket_id;
    let mut phase_start = SimTime::ZERO;
    for (i, phase) in w.cfg.arrivals.schedule.iter().enumerate() {
        let phase_end = (phase_start + SimTime::from_duration(phase.duration)).min(horizon);
        let label = phase.label.clone().unwrap_or_else(|| format!("phase{i}"));
        let mut rng = w.stream("arrivals", &[i as u64]);
        let mut t = phase_start;
        if phase.rate_per_s > 0.0 {
            loop {
                t = t + dist::interarrival(&mut rng, phase.rate_per_s);
                if t >= phase_end {
                    break;
                }
                w.sim.sleep_until(t).await;
                let ticket = draw_ticket(&w, id, label.clone());
                deliver(&w, ticket);
                id += 1;
            }
        }
        phase_start = phase_end;
        if phase_start >= horizon {
            break;
        }
    }
}

async fn explicit(w: Rc<World>, horizon: SimTime) {
    let mut specs: Vec<&TicketSpec> = w.cfg.arrivals.tickets.iter().collect();
    specs.sort_by_key(|s| (s.opened_at, s.id));
    let specs: Vec<TicketSpec> = specs.into_iter().cloned().collect();
    for s in specs {
        let at = SimTime::from_duration(s.opened_at);
        if at > horizon {
            break;
        }
        w.sim.sleep_until(at).await;
        let t = Ticket {
            id: s.id,
            amount_cents: s.amount_cents,
            charge_amount_cents: s.charge_amount_cents,
            phase: "recorded".into(),
        };
        deliver(&w, t);
    }
}
