//! Deliveries of a ticket's triggering event (the helpdesk's `ticket.created` webhook) to the
//! consumer that starts the agent on it. Webhooks are delivered at least once (Stripe's and
//! Zendesk's webhook docs both say so): with `deliveries.duplicate_probability` the event comes
//! a second time after `duplicate_delay`, and unless the consumer dedups on the event id the
//! second delivery starts a second, concurrent agent run on the same ticket.
//!
//! Draws: whether a ticket's event is delivered twice, and the delay, come from the
//! `delivery` stream of the ticket, drawn only when `duplicate_probability` is above 0. The
//! duplicate run's model attempts count from [`DUPLICATE_ATTEMPT_BASE`] (so its Stripe requests
//! have draw keys of their own) and its agent stream is keyed by [`Delivery::stream_ids`]; so
//! with no duplicate, or a duplicate dropped by dedup, every other draw stays where it was.

use std::cell::Cell;
use std::rc::Rc;

use super::agent::{handle_delivery, Ticket};
use super::dist;
use super::world::{Ids, World};
use crate::history::EventKind;
use crate::scenario::ConsumerDedup;
use crate::sim::{tag, SimTime};

/// Model attempt numbers of the agent run started by a duplicate delivery start here (0 is the
/// first delivery's first call; [`super::humans::HUMAN_ATTEMPT_BASE`] a human's re-run), so
/// the two runs' calls never share an attempt id.
pub(crate) const DUPLICATE_ATTEMPT_BASE: u32 = 2000;

/// One delivery of a ticket's event, as the agent run it starts sees it.
#[derive(Clone, Debug)]
pub(crate) struct Delivery {
    /// 0 for the first delivery, 1 for the duplicate.
    pub index: u32,
    /// Whether deliveries are traced (`duplicate_probability` > 0).
    pub traced: bool,
    /// Shared by both deliveries of one ticket: whether a human has been handed the ticket.
    /// A helpdesk ticket has one assignee, so a second escalation of it starts no second human.
    human_assigned: Rc<Cell<bool>>,
}

impl Delivery {
    /// The first (or only) delivery of a ticket's event.
    pub fn first(traced: bool) -> Self {
        Delivery {
            index: 0,
            traced,
            human_assigned: Rc::default(),
        }
    }

    /// The duplicate of `first`.
    fn duplicate(first: &Delivery) -> Self {
        Delivery {
            index: 1,
            traced: true,
            human_assigned: first.human_assigned.clone(),
        }
    }

    /// The run's first model attempt number (0, or [`DUPLICATE_ATTEMPT_BASE`]).
    pub fn attempt_base(&self) -> u32 {
        if self.index == 0 {
            0
        } else {
            DUPLICATE_ATTEMPT_BASE
        }
    }

    /// Ids appended to the run's own stream keys (agent think times, run-level backoff): none
    /// for the first delivery, `(tag("delivery"), 1)` for the duplicate.
    pub fn stream_ids(&self) -> Vec<u64> {
        if self.index == 0 {
            Vec::new()
        } else {
            vec![tag("delivery"), u64::from(self.index)]
        }
    }

    /// Whether this run's escalation hands the ticket to a human: true for the ticket's first
    /// escalation only.
    pub fn assign_human(&self) -> bool {
        !self.human_assigned.replace(true)
    }
}

/// The event id of ticket `id`'s triggering event, the same on every delivery.
pub fn event_id(ticket: u64) -> String {
    super::ids::event(ticket)
}

/// Delivers ticket `t`'s event: starts the agent on it, and, when the sender delivers it a
/// second time, a task holding the ticket's lease until that second delivery arrives (so the
/// ticket is not closed before), which either drops it (`consumer_dedup: event_id`) or starts
/// a second agent run on the ticket.
pub fn deliver(w: &Rc<World>, t: Ticket) {
    let cfg = &w.cfg.deliveries;
    let traced = cfg.at_least_once();
    let again = if traced {
        let mut rng = w.ticket_stream("delivery", t.id, &[]);
        let dup = dist::chance(&mut rng, cfg.duplicate_probability);
        let delay = dist::latency(&mut rng, &cfg.duplicate_delay);
        dup.then_some(delay)
    } else {
        None
    };
    let first = Delivery::first(traced);
    let second = again.map(|delay| (delay, Delivery::duplicate(&first), t.clone()));
    let id = t.id;
    let ww = w.clone();
    w.spawn_detached_for_with(id, move || handle_delivery(ww, t, first));
    if let Some((delay, d, t)) = second {
        let ww = w.clone();
        w.spawn_detached_for_with(id, move || redeliver(ww, t, delay, d));
    }
}

/// The second delivery, `delay` after the first.
async fn redeliver(w: Rc<World>, t: Ticket, delay: SimTime, d: Delivery) {
    w.sim.sleep(delay).await;
    let event_id = event_id(t.id);
    if w.cfg.deliveries.consumer_dedup == ConsumerDedup::EventId {
        w.record(Ids::ticket(t.id), EventKind::DeliveryDeduped { event_id });
        return;
    }
    handle_delivery(w, t, d).await;
}
