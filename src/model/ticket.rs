//! A refund ticket, and one delivery of its triggering event as the agent run it starts sees
//! it (see `deliveries` for how an event is delivered, once or twice).

use std::cell::Cell;
use std::rc::Rc;

use crate::sim::tag;

/// A refund ticket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ticket {
    /// Id.
    pub id: u64,
    /// Approved refund, cents.
    pub amount_cents: u64,
    /// Charge, cents.
    pub charge_amount_cents: u64,
    /// Arrival phase label.
    pub phase: String,
}

/// Model attempt numbers of the agent run started by a duplicate delivery start here (0 is the
/// first delivery's first call; [`super::humans::HUMAN_ATTEMPT_BASE`] a human's re-run), so
/// the two runs' calls never share an attempt id.
pub(crate) const DUPLICATE_ATTEMPT_BASE: u32 = 2000;

/// One delivery of a ticket's event, as the agent run it starts sees it.
#[derive(Clone, Debug)]
pub(crate) struct Delivery {
    /// 0 for the first delivery, 1 for the duplicate; with the consumer model of
    /// `model::redelivery`, the handler run's number on the ticket (0, 1, 2, …).
    pub index: u32,
    /// Whether the run records its delivery (`duplicate_probability` > 0; the consumer model
    /// records deliveries itself).
    pub traced: bool,
    /// Whether the run opens the ticket (its charge, `ticket_opened`): the first delivery's,
    /// unless the consumer model opened it already.
    pub opens: bool,
    /// The delivery comes from a second trigger with an event id of its own
    /// (`deliveries.duplicate_from: other_trigger`).
    pub other_trigger: bool,
    /// Shared by both deliveries of one ticket: whether a human has been handed the ticket.
    /// A helpdesk ticket has one assignee, so a second escalation of it starts no second human.
    human_assigned: Rc<Cell<bool>>,
}

impl Delivery {
    /// The first (or only) delivery of a ticket's event.
    pub(crate) fn first(traced: bool) -> Self {
        Delivery {
            index: 0,
            traced,
            opens: true,
            other_trigger: false,
            human_assigned: Rc::default(),
        }
    }

    /// Handler run `index` of a ticket the consumer model opened and whose deliveries it
    /// records; shares `first`'s human assignment.
    pub(crate) fn run(first: &Delivery, index: u32) -> Self {
        Delivery {
            index,
            traced: false,
            opens: false,
            other_trigger: false,
            human_assigned: first.human_assigned.clone(),
        }
    }

    /// The duplicate of `first`.
    pub(crate) fn duplicate(first: &Delivery) -> Self {
        Delivery {
            index: 1,
            traced: true,
            opens: false,
            other_trigger: false,
            human_assigned: first.human_assigned.clone(),
        }
    }

    /// The run's first model attempt number: 0, [`DUPLICATE_ATTEMPT_BASE`] for the second
    /// run, and that times the run's index after (run 2 from 4000, …).
    pub(crate) fn attempt_base(&self) -> u32 {
        DUPLICATE_ATTEMPT_BASE.saturating_mul(self.index)
    }

    /// Ids appended to the run's own stream keys (agent think times, run-level backoff): none
    /// for the first delivery, `(tag("delivery"), index)` for a later run.
    pub(crate) fn stream_ids(&self) -> Vec<u64> {
        if self.index == 0 {
            Vec::new()
        } else {
            vec![tag("delivery"), u64::from(self.index)]
        }
    }

    /// Whether this run's escalation hands the ticket to a human: true for the ticket's first
    /// escalation only.
    pub(crate) fn assign_human(&self) -> bool {
        !self.human_assigned.replace(true)
    }
}

/// The event id of ticket `id`'s triggering event, the same on every delivery.
pub(crate) fn event_id(ticket: u64) -> String {
    super::ids::event(ticket)
}

/// The event id delivery `d` of `ticket` carries: the ticket's event's, or a second trigger's
/// own ([`super::ids::other_trigger_event`]).
pub(crate) fn delivered_event_id(ticket: u64, d: &Delivery) -> String {
    if d.other_trigger {
        super::ids::other_trigger_event(ticket)
    } else {
        event_id(ticket)
    }
}
