//! One open ticket's money-moving refunds, counted as the evaluator counts them for invariant 1
//! (see `Evaluator::record` in `src/invariants.rs`), so that the HTML report's duplicates over
//! time and its stories name the tickets `duplicate_refund_tickets` counts.

use crate::history::{Event, EventKind};
use crate::sim::SimTime;

/// The money-moving refunds of one ticket, (amount in cents, creation time), in creation order.
#[derive(Clone, Debug, Default)]
pub(super) struct TicketRefunds(Vec<(u64, SimTime)>);

impl TicketRefunds {
    /// Notes one of the ticket's events: a money-moving refund created, or a pending one that
    /// settled `failed` or `canceled` (it no longer counts).
    pub(super) fn record(&mut self, e: &Event) {
        match &e.kind {
            EventKind::RefundCreated {
                amount_cents,
                moves_money: true,
                ..
            } => self.0.push((*amount_cents, e.t_ns)),
            EventKind::RefundSettled {
                amount_cents,
                created_ns,
                moves_money: false,
                ..
            } => {
                let created = SimTime::from_nanos(*created_ns);
                if let Some(i) = self
                    .0
                    .iter()
                    .position(|&(a, c)| a == *amount_cents && c == created)
                {
                    self.0.remove(i);
                }
            }
            _ => {}
        }
    }

    /// Whether `e` is an event [`TicketRefunds::record`] counts.
    pub(super) fn counts(e: &Event) -> bool {
        matches!(
            e.kind,
            EventKind::RefundCreated {
                moves_money: true,
                ..
            } | EventKind::RefundSettled {
                moves_money: false,
                ..
            }
        )
    }

    /// When the ticket became a duplicate: its second refund's creation; `None` with fewer
    /// than two.
    pub(super) fn duplicate_at(&self) -> Option<SimTime> {
        self.0.get(1).map(|&(_, t)| t)
    }
}
