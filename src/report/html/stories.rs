//! The events of the duplicated tickets with the smallest ids, kept online for their stories
//! (what `refundsim run --ticket ID` prints): an open ticket's events are kept until it closes,
//! then dropped unless it is a duplicate among the smallest [`DuplicateStories::new`]'s `cap`
//! ids. A ticket that can no longer be among them is not kept at all, so memory is the open
//! tickets' events and `cap` stories, flat in the horizon.

use std::collections::BTreeMap;

use super::refunds::TicketRefunds;
use crate::history::{Event, Observer};

/// The online consumer: feed it the run's events ([`Observer`]), then
/// [`DuplicateStories::finish`].
#[derive(Debug, Default)]
pub struct DuplicateStories {
    cap: usize,
    open: BTreeMap<u64, (TicketRefunds, Vec<Event>)>,
    kept: BTreeMap<u64, Vec<Event>>,
}

impl DuplicateStories {
    /// Keeps the events of at most `cap` duplicated tickets: those with the smallest ids.
    pub fn new(cap: usize) -> DuplicateStories {
        DuplicateStories {
            cap,
            ..DuplicateStories::default()
        }
    }

    /// Whether ticket `id` could still be kept: fewer than `cap` kept, or a smaller id than the
    /// largest kept.
    fn may_keep(&self, id: u64) -> bool {
        self.kept.len() < self.cap || self.kept.last_key_value().is_some_and(|(k, _)| id < *k)
    }

    /// Notes one event of an open ticket.
    pub fn record(&mut self, e: Event) {
        let Some(t) = e.ticket else { return };
        if !self.open.contains_key(&t) && !self.may_keep(t) {
            return;
        }
        let (refunds, events) = self.open.entry(t).or_default();
        refunds.record(&e);
        events.push(e);
    }

    /// Ticket `id` closed: kept if it is a duplicate among the smallest ids, else dropped.
    pub fn close(&mut self, id: u64) {
        let Some((refunds, events)) = self.open.remove(&id) else {
            return;
        };
        if refunds.duplicate_at().is_none() || !self.may_keep(id) {
            return;
        }
        self.kept.insert(id, events);
        if self.kept.len() > self.cap {
            self.kept.pop_last();
        }
    }

    /// Closes the tickets still open; the kept tickets' events by ticket id, ascending.
    pub fn finish(mut self) -> BTreeMap<u64, Vec<Event>> {
        for id in self.open.keys().copied().collect::<Vec<_>>() {
            self.close(id);
        }
        self.kept
    }
}

impl Observer for DuplicateStories {
    fn event(&mut self, e: Event) {
        self.record(e);
    }
    fn ticket_closed(&mut self, id: u64) {
        self.close(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Caller, EventKind, RefundStatus};
    use crate::sim::SimTime;

    fn refund(t: u64, ticket: u64) -> Event {
        Event {
            t_ns: SimTime::from_secs(t),
            ticket: Some(ticket),
            attempt: None,
            call: None,
            kind: EventKind::RefundCreated {
                refund_id: format!("re_{ticket}_{t}"),
                amount_cents: 1,
                status: RefundStatus::Succeeded,
                moves_money: true,
                by: Caller::Service,
            },
        }
    }

    #[test]
    fn keeps_the_smallest_duplicated_ids_whatever_the_closing_order() {
        let mut s = DuplicateStories::new(2);
        // Tickets 9, 5, 7 and 3 get two refunds, 4 gets one; they close in that order.
        for (t, id) in [9, 5, 4, 7, 3].into_iter().enumerate() {
            s.record(refund(t as u64, id));
            if id != 4 {
                s.record(refund(t as u64 + 10, id));
            }
            s.close(id);
        }
        // Ticket 11 opens after two smaller duplicates are kept: not kept, not even while open.
        s.record(refund(20, 11));
        assert!(!s.open.contains_key(&11));
        let kept = s.finish();
        assert_eq!(kept.keys().copied().collect::<Vec<_>>(), [3, 5]);
        assert_eq!(kept[&3].len(), 2);
    }

    #[test]
    fn tickets_still_open_at_the_end_count() {
        let mut s = DuplicateStories::new(5);
        s.record(refund(1, 2));
        s.record(refund(2, 2));
        s.record(refund(3, 1));
        assert_eq!(s.finish().keys().copied().collect::<Vec<_>>(), [2]);
    }
}
