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

use std::rc::Rc;

use super::agent::handle_delivery;
use super::dist;
use super::ticket::{Delivery, Ticket};
use super::world::{Ids, World};
use crate::history::EventKind;
use crate::scenario::{ConsumerDedup, DuplicateFrom};
use crate::sim::SimTime;

// What one delivery is, and the event's id, live in `ticket`, below the agent that reads them;
// their old paths stay.
pub(crate) use super::ticket::event_id;
pub(crate) use super::ticket::DUPLICATE_ATTEMPT_BASE;

/// Delivers ticket `t`'s event: starts the agent on it, and, when the sender delivers it a
/// second time, a task holding the ticket's lease until that second delivery arrives (so the
/// ticket is not closed before), which either drops it (`consumer_dedup: event_id`) or starts
/// a second agent run on the ticket.
pub(crate) fn deliver(w: &Rc<World>, t: Ticket) {
    let cfg = &w.cfg.deliveries;
    if cfg.redelivers() {
        return super::redelivery::deliver(w, t);
    }
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
    let other_trigger = cfg.duplicate_from == DuplicateFrom::OtherTrigger;
    let second = again.map(|delay| {
        let mut d = Delivery::duplicate(&first);
        d.other_trigger = other_trigger;
        (delay, d, t.clone())
    });
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
    // A second trigger's own event id is not one the consumer has seen.
    if w.cfg.deliveries.consumer_dedup == ConsumerDedup::EventId && !d.other_trigger {
        w.record(
            Ids::ticket(t.id),
            EventKind::DeliveryDeduped {
                event_id,
                record_deleted: false,
            },
        );
        return;
    }
    handle_delivery(w, t, d).await;
}
