//! Background load: other requests that hold a connection of the same pool (not traced per
//! request; they show in the pool gauges and in ticket requests' waits).
//!
//! Thousands of these arrive in a run, and each only waits in line, holds a connection and
//! returns it, so they run as engine callbacks ([`TimerCallback`], [`PoolCallback`]) rather
//! than as tasks: an arrival, a hand-off and a release are one engine event each. The draws and
//! the order in the pool's line are those of a task per request.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::{Rc, Weak};

use super::dist::{self, DrawnAhead};
use super::pool::PoolCallback;
use super::refunds_service::release;
use super::world::{Ids, World};
use crate::sim::{CallTimer, SimTime, StreamRng, TimerCallback, TimerKind};

/// Timer tokens: the low two bits say what is due, the rest is a place in the pool's line.
const ARRIVAL: u64 = 0;
const HOLD_END: u64 = 1;
const ACQUIRE_TIMEOUT: u64 = 2;

/// The background load of one run.
struct Background {
    /// Itself, to hand to the timers and the pool it registers with.
    me: Weak<Background>,
    /// Weak: the world's pool holds this generator while one of its requests waits in line.
    w: Weak<World>,
    arrivals: RefCell<StreamRng>,
    rate: f64,
    horizon: SimTime,
    /// Requests so far (the next request's number).
    n: Cell<u64>,
    /// Requests waiting in the pool's line, in line order.
    waiting: RefCell<VecDeque<Waiting>>,
    /// The holds of the next requests, drawn ahead.
    holds: RefCell<DrawnAhead<SimTime, HOLD_BATCH>>,
}

/// Requests whose holds are drawn together (see [`Background::hold_of`]).
const HOLD_BATCH: usize = 8;

/// A background request in the pool's line.
struct Waiting {
    /// Its place in line.
    place: u64,
    /// How long it will hold its connection.
    hold: SimTime,
    /// When it joined the line.
    since: SimTime,
    /// Its acquire-timeout timer, if any.
    timeout: Option<CallTimer>,
}

/// Starts Poisson arrivals at `background_load.rate_per_s` until the horizon; each waits for
/// a connection (FIFO with ticket requests, up to `refunds_service.acquire_timeout`) and holds
/// it for a `hold` draw.
pub(crate) fn start(w: &Rc<World>) {
    let rate = w.cfg.background_load.rate_per_s;
    if rate <= 0.0 {
        return;
    }
    let bg = Rc::new_cyclic(|me| Background {
        me: me.clone(),
        w: Rc::downgrade(w),
        arrivals: RefCell::new(w.stream("background_arrivals", &[])),
        rate,
        horizon: SimTime::from_duration(w.cfg.horizon),
        n: Cell::new(0),
        waiting: RefCell::default(),
        holds: RefCell::default(),
    });
    bg.schedule_arrival(w);
}

impl Background {
    fn rc(&self) -> Rc<Background> {
        self.me
            .upgrade()
            .expect("a callback's owner is alive while it is called")
    }

    /// Draws the next interarrival gap and sets its timer, unless it falls past the horizon.
    fn schedule_arrival(&self, w: &World) {
        let next = w.now() + dist::interarrival(&mut self.arrivals.borrow_mut(), self.rate);
        if next < self.horizon {
            w.sim.call_at(next, TimerKind::Work, self.rc(), ARRIVAL);
        }
    }

    /// Request `n` arrives: it draws its hold and takes a free connection or joins the line.
    fn arrive(&self, w: &World) {
        self.schedule_arrival(w);
        let n = self.n.get();
        self.n.set(n + 1);
        let hold = self.hold_of(w, n);
        w.pool_gauges.wait_begins();
        match w.pool.wait_with_callback(self.rc()) {
            Ok(()) => self.hold(w, hold, SimTime::ZERO),
            Err(place) => {
                let timeout = w.cfg.refunds_service.acquire_timeout.map(|limit| {
                    let at = w.now().saturating_add(SimTime::from_duration(limit));
                    let token = ACQUIRE_TIMEOUT | (place << 2);
                    w.sim.call_at(at, TimerKind::Deadline, self.rc(), token)
                });
                self.waiting.borrow_mut().push_back(Waiting {
                    place,
                    hold,
                    since: w.now(),
                    timeout,
                });
            }
        }
    }

    /// The hold of request `n`: its draw from the stream `("background_hold", n)`. Drawn for
    /// [`HOLD_BATCH`] requests at a time (their streams derived and first blocks computed
    /// together, [`crate::sim::Streams::streams_of`]): each request's stream is its own, so
    /// drawing ahead gives every request the hold it would draw on arrival. Up to
    /// `HOLD_BATCH - 1` holds drawn past the last arrival go unused.
    fn hold_of(&self, w: &World, n: u64) -> SimTime {
        self.holds.borrow_mut().get(n, |ids| {
            let mut rngs = w.streams.streams_of("background_hold", ids);
            w.latencies.background_hold.draw_each(&mut rngs)
        })
    }

    /// Holds a connection just taken after waiting `waited` for `hold`, then returns it.
    #[inline]
    fn hold(&self, w: &World, hold: SimTime, waited: SimTime) {
        w.pool_gauges.wait_ends(true, waited, w.now());
        let end = w.now().saturating_add(hold);
        w.sim.call_at(end, TimerKind::Work, self.rc(), HOLD_END);
    }

    /// Takes the request at `place` out of `waiting`.
    fn take_waiting(&self, place: u64) -> Option<Waiting> {
        let mut waiting = self.waiting.borrow_mut();
        let i = waiting.iter().position(|e| e.place == place)?;
        waiting.remove(i)
    }
}

impl TimerCallback for Background {
    fn fire(&self, token: u64) {
        let Some(w) = self.w.upgrade() else { return };
        match token & 3 {
            ARRIVAL => self.arrive(&w),
            HOLD_END => {
                release(&w, Ids::default());
                w.pool.release();
            }
            _ => {
                // The acquire timeout of the request at `place` (cancelled when it is served,
                // so it is still in line).
                let place = token >> 2;
                if let Some(gone) = self.take_waiting(place) {
                    if w.pool.leave(place) {
                        w.pool_gauges
                            .wait_ends(false, w.now() - gone.since, w.now());
                    }
                }
            }
        }
    }
}

impl PoolCallback for Background {
    fn granted(&self, place: u64) {
        let Some(w) = self.w.upgrade() else { return };
        let Some(served) = self.take_waiting(place) else {
            return;
        };
        if let Some(t) = served.timeout {
            w.sim.cancel_call(t);
        }
        self.hold(&w, served.hold, w.now() - served.since);
    }
}
