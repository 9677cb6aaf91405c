//! A `hedge` layer's own loop, beside [`super::retry_loop`]: a next try sent while the tries
//! before it are still running.
//!
//! Try 0 starts at once (and, with probability `additional_request_chance`, try 1 beside it,
//! as Envoy's `hedge_policy` does). While no answer has come `hedging_delay` after the latest try started,
//! the next try starts beside it (Polly v8's latency mode, gRPC's `hedgingDelay`, Envoy's
//! `hedge_on_per_try_timeout`), up to `max_retries` hedged tries. Each answer is read as it
//! comes, by its retryable class ([`Place::class`]):
//!
//! - a success, or a failure `retry_on` does not name (gRPC: a fatal status; Polly: an outcome
//!   `ShouldHandle` does not handle), is reported at once, and the tries still running are
//!   dropped client-side (Polly cancels them, gRPC cancels the outstanding RPCs, Envoy resets
//!   the other upstream streams). What a dropped try already started keeps running where it
//!   runs, as when a per-try timeout drops a try: the service's work is a task of its own, and
//!   a request at the provider executes to its end, so a loser's refund still lands;
//! - a failure `retry_on` names (gRPC's `nonFatalStatusCodes`) sends the next try at once, if
//!   one remains; when every try has failed so, the first try's failure is reported (Polly v8:
//!   "the final result will be the primary execution's failure").
//!
//! A hedged try is a retry for the layer's `budget` (Envoy counts hedges against the retry
//! budget; gRPC's retry throttling covers hedges too): a try the budget refuses is not sent
//! (`layer_budget_exhausted`) and no later one is. Each hedged try is recorded as
//! `layer_hedge` and marked in its [`Via`] like a retry, so its Stripe draws differ from the
//! first try's. A hedge never times a try out (validation refuses `per_try_timeout`).

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;

use super::{budget_allows, one_try, retry_on_name, Layer, LayerLoad, Place, Via};
use crate::history::EventKind;
use crate::model::world::World;
use crate::sim::SimTime;

/// A try in flight, counted in the layer's load (for its budget) until it ends or is dropped.
struct InFlight {
    load: Rc<LayerLoad>,
    hedged: bool,
}

impl InFlight {
    fn new(load: &Rc<LayerLoad>, n: u32) -> Self {
        load.active.set(load.active.get() + 1);
        if n > 0 {
            load.retrying.set(load.retrying.get() + 1);
        }
        InFlight {
            load: load.clone(),
            hedged: n > 0,
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.load.active.set(self.load.active.get() - 1);
        if self.hedged {
            self.load.retrying.set(self.load.retrying.get() - 1);
        }
    }
}

/// One try running: its number, its place in the load, and its answer to come.
type Running<A> = (u32, InFlight, Pin<Box<dyn Future<Output = A>>>);

/// `req` through hedge `layer` (the layer at `depth` of `P`'s position) and the rest of the
/// stack below it: see the module docs.
pub(crate) async fn hedge<P: Place>(
    w: &Rc<World>,
    layer: Layer<'_>,
    req: &P::Req,
    depth: usize,
) -> P::Answer {
    let (name, cfg) = (layer.name, layer.cfg);
    let ids = P::ids(req);
    let load = w.layer_load(name);
    let total = cfg.retries().saturating_add(1);
    let delay = SimTime::from_duration(cfg.hedging_delay());
    let via_of = |n: u32| {
        let mut via: Via = P::via(req).clone();
        if n > 0 {
            via.push((name.to_string(), n));
        }
        via
    };
    let mut running: Vec<Running<P::Answer>> = vec![(
        0,
        InFlight::new(&load, 0),
        one_try::<P>(w, req, cfg, via_of(0), depth),
    )];
    let (mut started, mut last_start) = (1u32, w.now());
    let mut sending = total > 1;
    // Envoy's `additional_request_chance`: a second try at once, drawn from a stream of its own
    // (keyed by the request's tries above) so that no other draw moves.
    if let Some(p) = cfg.additional_request_chance.filter(|p| *p > 0.0) {
        let mut key = vec![super::tag(name), u64::from(ids.attempt.unwrap_or(0))];
        key.extend(super::via_ids(P::via(req)));
        let mut rng = w.ticket_stream("hedge_additional", P::ticket(req), &key);
        if sending
            && crate::model::dist::uniform(&mut rng, 0.0, 1.0) < p
            && budget_allows(cfg, &load)
        {
            w.record(
                ids,
                EventKind::LayerHedge {
                    layer: name.to_string(),
                    layer_try: 1,
                    reason: "additional_request_chance".into(),
                    after_ns: 0,
                    running: 1,
                },
            );
            running.push((
                1,
                InFlight::new(&load, 1),
                one_try::<P>(w, req, cfg, via_of(1), depth),
            ));
            started = 2;
        }
    }
    let (mut primary, mut last) = (None, None);
    loop {
        let mut wait = (sending && started < total)
            .then(|| Box::pin(w.sim.sleep_until(last_start.saturating_add(delay))));
        // The tries first: an answer due at the instant the next try would start wins.
        let got = poll_fn(|cx| {
            for (i, (_, _, f)) in running.iter_mut().enumerate() {
                if let Poll::Ready(v) = f.as_mut().poll(cx) {
                    return Poll::Ready(Some((i, v)));
                }
            }
            match wait.as_mut().map(|s| s.as_mut().poll(cx)) {
                Some(Poll::Ready(())) => Poll::Ready(None),
                _ => Poll::Pending,
            }
        })
        .await;
        let reason = match got {
            None => "delay".to_string(),
            Some((i, value)) => {
                let (n, _, _) = running.swap_remove(i);
                let class = cfg.status_class(P::status(&value), P::class(&value));
                super::throttle_record(cfg, &load, class);
                match class.filter(|c| cfg.retries_on(*c)) {
                    // A success or a fatal failure: reported; the others are dropped.
                    None => return value,
                    Some(class) => {
                        if n == 0 {
                            primary = Some(value);
                        } else {
                            last = Some(value);
                        }
                        retry_on_name(class).to_string()
                    }
                }
            }
        };
        if sending && started < total {
            let n = started;
            if budget_allows(cfg, &load) {
                w.record(
                    ids,
                    EventKind::LayerHedge {
                        layer: name.to_string(),
                        layer_try: n,
                        reason: reason.into(),
                        after_ns: w.now().saturating_sub(last_start).as_nanos(),
                        running: running.len() as u32,
                    },
                );
                running.push((
                    n,
                    InFlight::new(&load, n),
                    one_try::<P>(w, req, cfg, via_of(n), depth),
                ));
                started += 1;
                last_start = w.now();
            } else {
                w.record(
                    ids,
                    EventKind::LayerBudgetExhausted {
                        layer: name.to_string(),
                        layer_try: n,
                    },
                );
                sending = false;
            }
        }
        if running.is_empty() {
            return primary
                .or(last)
                .expect("a hedge that sent a try has its answer");
        }
    }
}
