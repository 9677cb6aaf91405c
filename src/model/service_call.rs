//! One HTTP request to the refunds service, from the caller's side: it gets a call id, is
//! traced (`service_request`), and runs in the service as a task of its own; a caller that
//! stops waiting gives up on it with its cancellation. The executor sends its tries here,
//! straight or through the proxies before the service (`layers/before_service.rs`).

use std::cell::Cell;
use std::rc::Rc;

use super::caller::CallerState;
use super::layers::Via;
use super::refunds_service::{issue, ServiceRequest, ServiceResult};
use super::world::{Ids, World};
use crate::history::EventKind;
use crate::scenario::Cancellation;
use crate::sim::SimTime;

/// A request on its way from the executor to the refunds service, before it gets a call id.
#[derive(Clone, Debug)]
pub(crate) struct Outgoing {
    /// Ticket.
    pub ticket: u64,
    /// Model attempt.
    pub attempt: u32,
    /// Executor-level try.
    pub exec_try: u32,
    /// Amount, cents.
    pub amount_cents: u64,
    /// When the caller gives up (deadline propagation).
    pub deadline: SimTime,
    /// Tries of the added layers above (see [`Via`]).
    pub via: Via,
    /// What giving up on this request cancels: the strongest `cancellation` among the layers
    /// above it (the executor and the added layers on its way).
    pub cancellation: Cancellation,
}

/// Sends `req` to the refunds service as a request of its own (a new call id, traced as
/// `service_request`) and waits for the answer. The service's work is a task of its own: if
/// this future is dropped before the answer (a timeout above gave up), the work keeps running
/// and its answer is traced as late.
pub(crate) async fn send(w: Rc<World>, req: Outgoing, last_call: Rc<Cell<u64>>) -> ServiceResult {
    let call = w.next_call_id();
    last_call.set(call);
    let ids = Ids::call(req.ticket, req.attempt, call);
    w.record(
        ids,
        EventKind::ServiceRequest {
            exec_try: req.exec_try,
            via: req.via.iter().cloned().collect(),
        },
    );
    let mode = req.cancellation;
    let req = ServiceRequest {
        ticket: req.ticket,
        attempt: req.attempt,
        call,
        exec_try: req.exec_try,
        amount_cents: req.amount_cents,
        deadline: req.deadline,
        via: req.via,
    };
    let caller = Rc::new(CallerState::default());
    let guard = GiveUpOnDrop(Some((caller.clone(), mode)));
    let (ticket, attempt) = (req.ticket, req.attempt);
    let ww = w.clone();
    let answer = w
        .spawn_for_with(ticket, move || issue(ww, req, caller))
        .await;
    // A replayed call's recorded way back from the service (`replay.tickets…return_after`).
    if let Some(call) = w.cfg.replay.as_ref().and_then(|r| r.call(ticket, attempt)) {
        if !call.return_after.is_zero() {
            w.sim.sleep(SimTime::from_duration(call.return_after)).await;
        }
    }
    guard.disarm();
    answer
}

/// Gives up on a request (with its cancellation) when the waiting future is dropped before the
/// answer, i.e. when a timeout above fired.
struct GiveUpOnDrop(Option<(Rc<CallerState>, Cancellation)>);

impl GiveUpOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for GiveUpOnDrop {
    fn drop(&mut self) {
        if let Some((caller, mode)) = self.0.take() {
            caller.give_up(mode);
        }
    }
}
