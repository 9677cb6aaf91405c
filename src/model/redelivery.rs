//! The consumer of a ticket's triggering event when a delivery may come again because of the
//! ack: a queue with a visibility timeout (SQS, Celery on Redis), a consumer-group rebalance
//! (Kafka), a producer that publishes to two brokers, and dedup records with a lifetime.
//!
//! Each copy of the event is a message with its own delivery id (`msg_{ticket}_{copy}`: copy
//! 0, copy 1 from the second broker, then the sender's resend). A receive of a message is
//! checked against the consumer's dedup record (`consumer_dedup: event_id`), and, unless
//! dropped, starts a handler run: a full agent run on the ticket, concurrent with any other.
//!
//! - **Queue** (`deliveries.queue`): a receive hides the message for `visibility_timeout`.
//!   When the handler ends the consumer acks (unless it crashes first, drawn with
//!   `crash_before_ack_probability`); at the timeout a message not acked is received again,
//!   until `max_receives` (then dead-lettered) or `message_retention`. Only the latest
//!   receive's ack deletes the message: SQS says a delete with an older receipt handle
//!   "succeeds, but the message might not be deleted", so a handler longer than the timeout
//!   has its message received again and again (Celery's Redis docs: "executed again, and
//!   again in a loop"). With `ack: before_handler` the receive is acked at once.
//! - **Rebalance** (`deliveries.rebalance`): messages are offsets in arrival order; at `at`
//!   the partition is revoked, deliveries pause until `at + drain_deadline`, and then every
//!   message received before `at` from the first one whose handler had not ended is consumed
//!   again by the next owner (a committed offset is a position).
//!
//! Draws: the sender's resend exactly as `model::deliveries` draws it (the ticket's `delivery`
//! stream); a crash before the ack from the ticket's `redelivery` stream keyed by (copy,
//! receive), drawn only when its probability is above 0. Handler run `k` takes model attempts
//! from [`Delivery::attempt_base`] and agent streams keyed by [`Delivery::stream_ids`].

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use super::agent::{handle_delivery, open_ticket};
use super::dist;
use super::ticket::{event_id, Delivery, Ticket};
use super::world::{Ids, World};
use crate::history::{EventKind, RedeliveryReason};
use crate::scenario::{AckAt, ConsumerDedup, RecordAt, SQS_MAX_VISIBILITY_TIMEOUT};
use crate::sim::SimTime;

/// The consumer group's offsets received before its rebalance, in arrival order, each with
/// the instant its handler ended (`None` while it runs). Empty without a rebalance.
#[derive(Debug, Default)]
pub(crate) struct Group {
    done: BTreeMap<u64, Option<SimTime>>,
}

impl Group {
    fn push(&mut self, done: Option<SimTime>) -> u64 {
        let offset = self.done.len() as u64;
        self.done.insert(offset, done);
        offset
    }

    /// Whether `offset` is past the committed position at `deadline`: some offset at or
    /// before it had no handler ended by then.
    fn uncommitted(&self, offset: u64, deadline: SimTime) -> bool {
        self.done
            .range(..=offset)
            .any(|(_, d)| d.is_none_or(|t| t > deadline))
    }
}

/// One ticket's consumer state, shared by every copy and receive of its event.
struct Consumer {
    t: Ticket,
    /// The ticket's first run, whose human assignment every run shares.
    first: Delivery,
    /// Handler runs started.
    runs: Cell<u32>,
    /// Deliveries that reached the consumer (any copy, any receive).
    deliveries: Cell<u32>,
    /// When the dedup record was written, if one is held.
    record: Cell<Option<SimTime>>,
}

impl Consumer {
    /// Whether a delivery at `now` is dropped by the dedup record (and whether the record is
    /// then deleted).
    fn drops(&self, w: &World, now: SimTime) -> Option<bool> {
        let d = &w.cfg.deliveries;
        if d.consumer_dedup != ConsumerDedup::EventId {
            return None;
        }
        let at = self.record.get()?;
        let alive = d
            .dedup_record
            .lifetime
            .is_none_or(|l| now < at.saturating_add(SimTime::from_duration(l)));
        if !alive {
            self.record.set(None);
            return None;
        }
        let delete = d.dedup_record.delete_on_duplicate;
        if delete {
            self.record.set(None);
        }
        Some(delete)
    }

    fn write(&self, w: &World, when: RecordAt) {
        let d = &w.cfg.deliveries;
        if d.consumer_dedup == ConsumerDedup::EventId && d.dedup_record.recorded_at == when {
            self.record.set(Some(w.now()));
        }
    }

    fn next_run(&self) -> Delivery {
        let k = self.runs.get();
        self.runs.set(k + 1);
        Delivery::run(&self.first, k)
    }
}

/// One message (one copy of the event) in the queue.
struct Message {
    id: String,
    copy: u32,
    /// The latest receive (its ack alone deletes the message).
    receive: Cell<u32>,
    acked: Cell<bool>,
    /// Whether the latest receive's handler still runs.
    running: Cell<bool>,
}

/// Opens ticket `t` and delivers each copy of its event to the consumer.
pub(crate) fn deliver(w: &Rc<World>, t: Ticket) {
    let cfg = &w.cfg.deliveries;
    open_ticket(w, &t);
    // The sender's resend, drawn as the push model draws it.
    let resend = cfg.at_least_once().then(|| {
        let mut rng = w.ticket_stream("delivery", t.id, &[]);
        let dup = dist::chance(&mut rng, cfg.duplicate_probability);
        let delay = dist::latency(&mut rng, &cfg.duplicate_delay);
        dup.then_some(delay)
    });
    let id = t.id;
    let c = Rc::new(Consumer {
        t,
        first: Delivery::first(false),
        runs: Cell::new(0),
        deliveries: Cell::new(0),
        record: Cell::new(None),
    });
    let brokers = cfg.brokers;
    for copy in 0..brokers {
        let reason = (copy > 0).then_some(RedeliveryReason::SecondBroker);
        let (ww, cc) = (w.clone(), c.clone());
        w.spawn_detached_for_with(id, move || message(ww, cc, copy, SimTime::ZERO, reason));
    }
    if let Some(Some(delay)) = resend {
        let (ww, cc) = (w.clone(), c.clone());
        w.spawn_detached_for_with(id, move || {
            message(ww, cc, brokers, delay, Some(RedeliveryReason::SenderResent))
        });
    }
}

/// One message's life: received, handled, acked or received again.
async fn message(
    w: Rc<World>,
    c: Rc<Consumer>,
    copy: u32,
    delay: SimTime,
    reason: Option<RedeliveryReason>,
) {
    if delay > SimTime::ZERO {
        w.sim.sleep(delay).await;
    }
    let msg = Rc::new(Message {
        id: format!("msg_{}_{copy}", c.t.id),
        copy,
        receive: Cell::new(0),
        acked: Cell::new(false),
        running: Cell::new(false),
    });
    let d = &w.cfg.deliveries;
    if d.queue.is_some() {
        queued(&w, &c, &msg, reason).await;
    } else if d.rebalance.is_some() {
        rebalanced(&w, &c, &msg, reason).await;
    } else {
        receive(&w, &c, &msg, reason, None);
    }
}

/// A queue's message: received again each time its visibility timeout expires unacked.
async fn queued(
    w: &Rc<World>,
    c: &Rc<Consumer>,
    msg: &Rc<Message>,
    reason: Option<RedeliveryReason>,
) {
    let Some(q) = w.cfg.deliveries.queue.clone() else {
        return;
    };
    let sent = w.now();
    let timeout = SimTime::from_duration(q.visibility_timeout);
    let retention = sent.saturating_add(SimTime::from_duration(q.message_retention));
    let mut reason = reason;
    loop {
        let at = w.now();
        receive(w, c, msg, reason.take(), Some(&q));
        // Invisible until the timeout; extended while the handler runs (up to 12 h in all).
        let cap = at.saturating_add(SimTime::from_duration(SQS_MAX_VISIBILITY_TIMEOUT));
        loop {
            w.sim.sleep(timeout).await;
            if msg.acked.get() {
                return;
            }
            let extend = q.extend_visibility && msg.running.get() && w.now() < cap;
            if !extend {
                break;
            }
        }
        let n = msg.receive.get();
        if q.max_receives.is_some_and(|m| n >= m) {
            // Gone from the queue: a late ack deletes nothing.
            msg.acked.set(true);
            w.record(
                Ids::ticket(c.t.id),
                EventKind::DeadLettered {
                    delivery_id: msg.id.clone(),
                    receives: n,
                },
            );
            return;
        }
        if w.now() >= retention {
            msg.acked.set(true);
            return;
        }
        reason = Some(RedeliveryReason::VisibilityTimeout {
            timeout_ns: timeout.as_nanos(),
        });
    }
}

/// A consumer group's message: paused during the rebalance; received before it and not
/// committed by its drain deadline, consumed again by the partition's next owner.
async fn rebalanced(
    w: &Rc<World>,
    c: &Rc<Consumer>,
    msg: &Rc<Message>,
    reason: Option<RedeliveryReason>,
) {
    let Some(r) = w.cfg.deliveries.rebalance.clone() else {
        return;
    };
    let start = SimTime::from_duration(r.at);
    let drain = SimTime::from_duration(r.drain_deadline);
    let deadline = start.saturating_add(drain);
    if w.now() >= start && w.now() < deadline {
        w.sim.sleep_until(deadline).await;
    }
    let before = w.now() < start;
    let offset = receive(w, c, msg, reason, None).filter(|_| before);
    let Some(offset) = offset else {
        return;
    };
    w.sim.sleep_until(deadline).await;
    if w.group.borrow().uncommitted(offset, deadline) {
        let again = Some(RedeliveryReason::Rebalance {
            drain_ns: drain.as_nanos(),
        });
        receive(w, c, msg, again, None);
    }
}

/// One receive of `msg`: recorded, then dropped by the dedup record or handed to a handler
/// run. Returns the message's group offset when a rebalance is configured (for the first
/// receive).
fn receive(
    w: &Rc<World>,
    c: &Rc<Consumer>,
    msg: &Rc<Message>,
    reason: Option<RedeliveryReason>,
    q: Option<&crate::scenario::QueueDelivery>,
) -> Option<u64> {
    let n = msg.receive.get() + 1;
    msg.receive.set(n);
    let ids = Ids::ticket(c.t.id);
    let grouped = w.cfg.deliveries.rebalance.is_some() && n == 1;
    if let Some(record_deleted) = c.drops(w, w.now()) {
        w.record(
            ids,
            EventKind::DeliveryDeduped {
                event_id: event_id(c.t.id),
                record_deleted,
            },
        );
        c.deliveries.set(c.deliveries.get() + 1);
        if q.is_some() {
            ack(w, c, msg, n, false);
        }
        return grouped.then(|| w.group.borrow_mut().push(Some(w.now())));
    }
    w.record(
        ids,
        EventKind::Delivered {
            event_id: event_id(c.t.id),
            duplicate: c.deliveries.get() > 0,
            delivery_id: Some(msg.id.clone()),
            receive: Some(n),
            reason,
        },
    );
    c.deliveries.set(c.deliveries.get() + 1);
    c.write(w, RecordAt::HandlerStart);
    let early = q.is_some_and(|q| q.ack == AckAt::BeforeHandler);
    if early {
        ack(w, c, msg, n, true);
    }
    let crash = match q {
        Some(q) if !early && q.crash_before_ack_probability > 0.0 => {
            let mut rng =
                w.ticket_stream("redelivery", c.t.id, &[u64::from(msg.copy), u64::from(n)]);
            dist::chance(&mut rng, q.crash_before_ack_probability)
        }
        _ => false,
    };
    let offset = grouped.then(|| w.group.borrow_mut().push(None));
    msg.running.set(true);
    let run = c.next_run();
    let (ww, cc, mm) = (w.clone(), c.clone(), msg.clone());
    let acks = q.is_some() && !early;
    w.spawn_detached_for_with(c.t.id, move || async move {
        handle_delivery(ww.clone(), cc.t.clone(), run).await;
        if mm.receive.get() == n {
            mm.running.set(false);
        }
        if let Some(o) = offset {
            ww.group.borrow_mut().done.insert(o, Some(ww.now()));
        }
        if crash {
            ww.record(
                Ids::ticket(cc.t.id),
                EventKind::ConsumerCrashed {
                    delivery_id: mm.id.clone(),
                    receive: n,
                },
            );
            return;
        }
        if acks && mm.receive.get() == n {
            ack(&ww, &cc, &mm, n, true);
        } else if !early {
            // No queue: the handler's end is the 2xx to the sender, the "ack".
            cc.write(&ww, RecordAt::Ack);
        }
    });
    offset
}

/// Acks receive `n` of `msg` (deletes the message) and, when `handled` (not a copy the dedup
/// record dropped), writes a dedup record kept from the ack.
fn ack(w: &World, c: &Consumer, msg: &Message, n: u32, handled: bool) {
    if msg.acked.replace(true) {
        return;
    }
    w.record(
        Ids::ticket(c.t.id),
        EventKind::DeliveryAcked {
            delivery_id: msg.id.clone(),
            receive: n,
        },
    );
    if handled {
        c.write(w, RecordAt::Ack);
    }
}

/// Shared handle to a world's consumer group (kept in [`World`]).
pub(crate) type GroupCell = RefCell<Group>;
