//! Ticket arrivals, generated lazily (one pending arrival at a time): a piecewise-constant Poisson
//! rate schedule, or an explicit recorded list.
//!
//! Common random numbers: inter-arrival times come from the `arrivals` stream of each phase and a
//! ticket's amount and charge from the `ticket` stream keyed by its id, so every policy run on
//! the same seed sees the same tickets.

use std::rc::Rc;

use super::deliveries::deliver;
use super::dist;
use super::ticket::Ticket;
use super::world::World;
use crate::scenario::TicketSpec;
use crate::sim::SimTime;

/// Draws ticket `id`'s amount and charge.
#[cfg(test)]
pub(crate) fn draw_ticket(w: &World, id: u64, phase: String) -> Ticket {
    let a = &w.cfg.arrivals;
    let mut rng = w.ticket_stream("ticket", id, &[]);
    let amount_cents = dist::amount_from(&mut rng, &a.amount, &w.latencies.amount);
    let factor = dist::uniform(&mut rng, a.charge_factor.min, a.charge_factor.max);
    Ticket {
        id,
        amount_cents,
        charge_amount_cents: charge_amount(amount_cents, factor),
        phase,
    }
}

/// Generated tickets whose draws are made together (see [`TicketDraws`]).
const TICKET_BATCH: usize = 8;

/// Generated tickets' draws, each one's `(amount_cents, charge_amount_cents)` as
/// [`draw_ticket`] draws them, made [`TICKET_BATCH`] tickets at a time: their `"ticket"` streams
/// derived together, the amounts' lognormals stage by stage ([`dist::amounts_from`]).
#[derive(Default)]
struct TicketDraws(dist::DrawnAhead<(u64, u64), TICKET_BATCH>);

impl TicketDraws {
    /// Ticket `id` with phase label `phase`.
    fn ticket(&mut self, w: &World, id: u64, phase: String) -> Ticket {
        let (amount_cents, charge_amount_cents) = self.0.get(id, |ids| {
            let a = &w.cfg.arrivals;
            let mut rngs = w
                .streams
                .streams_of("ticket", ids.map(|id| w.ticket_key(id)));
            let amounts = dist::amounts_from(&mut rngs, &a.amount, &w.latencies.amount);
            std::array::from_fn(|i| {
                let factor = dist::uniform(&mut rngs[i], a.charge_factor.min, a.charge_factor.max);
                (amounts[i], charge_amount(amounts[i], factor))
            })
        });
        Ticket {
            id,
            amount_cents,
            charge_amount_cents,
            phase,
        }
    }
}

/// The charge behind a refund of `amount_cents` drawn with charge factor `factor`: never less
/// than the refund.
fn charge_amount(amount_cents: u64, factor: f64) -> u64 {
    (((amount_cents as f64) * factor).ceil() as u64).max(amount_cents)
}

/// Opens tickets until the horizon, starting an agent task for each.
pub(crate) async fn generate(w: Rc<World>) {
    let horizon = SimTime::from_duration(w.cfg.horizon);
    if !w.cfg.arrivals.tickets.is_empty() {
        return explicit(w, horizon).await;
    }
    let mut id = w.cfg.arrivals.first_ticket_id;
    let mut draws = TicketDraws::default();
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
                let ticket = draws.ticket(&w, id, label.clone());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;
    use crate::sim::Sim;
    use std::cell::RefCell;

    /// Tickets drawn in batches are the tickets [`draw_ticket`] draws one by one, whatever the
    /// first id, across batch boundaries and after a jump back or ahead.
    #[test]
    fn tickets_drawn_in_batches_equal_tickets_drawn_alone() {
        let text = r#"{"name":"t","horizon":"1h",
            "arrivals":{"schedule":[{"duration":"1h","rate_per_s":1}],
                        "amount":{"p50_cents":4200,"p99_cents":90000,"min_cents":100,"max_cents":500000},
                        "charge_factor":{"min":1,"max":1.8}}}"#;
        let cfg = crate::scenario::load_text(text, "t.json", &[], &[], &Default::default())
            .expect("valid");
        let observer: Rc<RefCell<dyn crate::history::Observer>> =
            Rc::new(RefCell::new(History::default()));
        let w = World::new(Sim::new(), Rc::new(cfg), 11, observer);
        let mut draws = TicketDraws::default();
        let ids = (48_000..48_021).chain([48_003, 48_100, 48_107, 48_108, 7, 48_101]);
        let mut distinct = std::collections::BTreeSet::new();
        let mut widest = 1.0f64;
        for id in ids {
            let t = draws.ticket(&w, id, "p".into());
            let alone = draw_ticket(&w, id, "p".into());
            assert_eq!(
                (
                    t.id,
                    t.amount_cents,
                    t.charge_amount_cents,
                    t.phase.as_str()
                ),
                (
                    alone.id,
                    alone.amount_cents,
                    alone.charge_amount_cents,
                    alone.phase.as_str()
                ),
                "ticket {id}"
            );
            // charge_factor 1..1.8 of the amount, rounded up.
            let ratio = t.charge_amount_cents as f64 / t.amount_cents as f64;
            assert!(
                (1.0..=1.8 + 1.0 / 100.0).contains(&ratio),
                "ticket {id}: {ratio}"
            );
            distinct.insert(t.amount_cents);
            widest = widest.max(ratio);
        }
        assert!(distinct.len() > 20, "amounts vary: {distinct:?}");
        assert!(widest > 1.5, "charges reach 1.5x their refunds: {widest}");
    }

    /// A charge is its refund times the factor, rounded up to a cent, never below the refund.
    #[test]
    fn a_charge_is_its_refund_times_the_factor_rounded_up() {
        assert_eq!(charge_amount(1000, 1.25), 1250);
        assert_eq!(charge_amount(999, 1.001), 1000);
        assert_eq!(charge_amount(4200, 1.0), 4200);
        assert_eq!(charge_amount(4200, 0.5), 4200);
    }
}
