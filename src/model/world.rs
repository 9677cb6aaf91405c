//! The wired-up model: shared state every component task receives explicitly.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::dist;
use super::layers::circuit_breaker::Breaker;
use super::ledger::Ledger;
use super::pool::Pool;
use super::stripe::FakeStripe;
use crate::history::{Event, EventKind, Observer};
use crate::id_map::IdMap;
use crate::scenario::{LatencyDist, Position, RetryLayer, Scenario, Stack};
use crate::sim::{Sim, SimTime, StreamRng, Streams};

/// Identifies who an event is about.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Ids {
    /// Ticket id.
    pub ticket: Option<u64>,
    /// Model attempt.
    pub attempt: Option<u32>,
    /// Refunds-service request id.
    pub call: Option<u64>,
}

impl Ids {
    /// Ids of a ticket.
    pub(crate) fn ticket(ticket: u64) -> Self {
        Ids {
            ticket: Some(ticket),
            ..Ids::default()
        }
    }
    /// Ids of a ticket's model attempt.
    pub(crate) fn attempt(ticket: u64, attempt: u32) -> Self {
        Ids {
            ticket: Some(ticket),
            attempt: Some(attempt),
            call: None,
        }
    }
    /// Ids of one refunds-service request.
    pub(crate) fn call(ticket: u64, attempt: u32, call: u64) -> Self {
        Ids {
            ticket: Some(ticket),
            attempt: Some(attempt),
            call: Some(call),
        }
    }
}

/// Requests and retries in flight through one added layer (for its retry budget; see
/// `layers::decide`), kept per layer name for the run ([`World::layer_load`]).
#[derive(Debug, Default)]
pub(crate) struct LayerLoad {
    /// Requests in flight through the layer.
    pub active: Cell<u64>,
    /// Of those, requests on a retry (try ≥ 1).
    pub retrying: Cell<u64>,
    /// The layer's `retry_throttling` token count, in thousandths of a token (gRFC A6 keeps
    /// three decimals); `None` until the first request ends (then it starts at `max_tokens`).
    pub tokens_milli: Cell<Option<u64>>,
}

/// Pool gauges kept by the model (they include background load, which is not traced).
///
/// Besides the queue depth, they accumulate online what the report's queueing metrics need
/// (`pool_wait_mean_ms`, `pool_wait_over_threshold_fraction`, `pool_utilisation`): every
/// request's wait, whether it exceeded the threshold, and the connections' busy time inside
/// the horizon. Nothing per request is kept.
#[derive(Debug, Default)]
pub(crate) struct PoolGauges {
    /// Requests waiting for a connection now.
    pub waiting: Cell<u32>,
    /// Largest `waiting` seen.
    pub max_waiting: Cell<u32>,
    /// Connections handed out.
    pub acquired: Cell<u64>,
    /// Connections returned.
    pub released: Cell<u64>,
    /// Waits ended (a connection, or an acquire timeout).
    pub waits: Cell<u64>,
    /// Σ of the ended waits, ns.
    pub wait_ns: Cell<u128>,
    /// Waits longer than `threshold`.
    pub waits_over_threshold: Cell<u64>,
    /// The `t` of P(wait > t) (see `Scenario::pool_wait_threshold`).
    pub threshold: SimTime,
    /// Where busy time stops counting (the scenario's horizon).
    pub horizon: SimTime,
    /// Σ over returned connections of min(return, horizon) − Σ over handed-out ones of
    /// min(hand-out, horizon), ns: the busy connection-time inside `[0, horizon]` once every
    /// connection is back.
    pub busy_ns: Cell<i128>,
}

impl PoolGauges {
    /// Gauges counting waits longer than `threshold` and busy time up to `horizon`.
    pub(crate) fn new(threshold: SimTime, horizon: SimTime) -> Self {
        PoolGauges {
            threshold,
            horizon,
            ..PoolGauges::default()
        }
    }

    /// A request joins the wait for a connection.
    pub(crate) fn wait_begins(&self) {
        self.waiting.set(self.waiting.get() + 1);
        self.max_waiting
            .set(self.max_waiting.get().max(self.waiting.get()));
    }

    /// A request stops waiting at `now` after `waited`: with a connection (`acquired`) or
    /// without (a timeout).
    pub(crate) fn wait_ends(&self, acquired: bool, waited: SimTime, now: SimTime) {
        self.waiting.set(self.waiting.get() - 1);
        self.waits.set(self.waits.get() + 1);
        self.wait_ns
            .set(self.wait_ns.get() + u128::from(waited.as_nanos()));
        if waited > self.threshold {
            self.waits_over_threshold
                .set(self.waits_over_threshold.get() + 1);
        }
        if acquired {
            self.acquired.set(self.acquired.get() + 1);
            self.busy_ns.set(self.busy_ns.get() - self.clipped(now));
        }
    }

    /// A connection is returned at `now`.
    pub(crate) fn returned(&self, now: SimTime) {
        self.released.set(self.released.get() + 1);
        self.busy_ns.set(self.busy_ns.get() + self.clipped(now));
    }

    fn clipped(&self, t: SimTime) -> i128 {
        i128::from(t.min(self.horizon).as_nanos())
    }
}

/// Everything a component needs: the simulation handle, the scenario, the seeded streams, the
/// observer the events go to, and the shared service state.
///
/// # Eviction (flat memory)
///
/// Every task that works on a ticket holds a [`TicketLease`] (taken by [`World::spawn_for`]).
/// When a ticket's last lease drops, nothing in the model can touch it any more: its agent,
/// executor calls, the service's and the SDK's zombie work, proxies and the human who took it
/// have all finished, and only that ticket's own requests carry its idempotency keys. The
/// ticket is then *closed*: the observer folds its facts into the totals, and the ledger row is
/// dropped. Its Stripe charge, refunds and idempotency entries are dropped at the same time,
/// unless the reconciliation job will run again before the horizon: then they stay until that
/// run has read them.
pub(crate) struct World {
    /// The engine.
    pub sim: Sim,
    /// The scenario being run.
    pub cfg: Rc<Scenario>,
    /// Seeded per-entity random streams.
    pub streams: Streams,
    /// Where events go (metrics, trace, story filter).
    observer: Rc<RefCell<dyn Observer>>,
    /// Leases held per open ticket (and its charge id). A hash map: looked up at every spawn
    /// and every task's end, never iterated (so its order reaches no output).
    leases: RefCell<IdMap<Open>>,
    /// Closed tickets whose Stripe objects wait for the next reconciliation run.
    awaiting_reconciliation: RefCell<Vec<u64>>,
    /// Set once the run is over: late lease drops then change nothing.
    finished: Cell<bool>,
    /// Evictions refused because the state was still in use (a broken eviction rule).
    premature: Cell<u64>,
    /// The refunds service's connection pool to Stripe (FIFO).
    pub pool: Rc<Pool>,
    /// Pool gauges.
    pub pool_gauges: PoolGauges,
    /// The refunds service's ledger.
    pub ledger: RefCell<Ledger>,
    /// The fake Stripe account.
    pub stripe: RefCell<FakeStripe>,
    next_call: Cell<u64>,
    layer_loads: RefCell<std::collections::BTreeMap<String, Rc<LayerLoad>>>,
    breakers: RefCell<std::collections::BTreeMap<String, Rc<RefCell<Breaker>>>>,
    /// The stack, compiled once per run: its layers at each position, and what it does as a
    /// whole.
    pub stack: Stack,
    /// The latencies drawn per request, with their parameters computed once per run.
    pub latencies: Latencies,
    /// Whether the pool is replayed from a recording (a `replay` section): recorded requests
    /// then take their recorded time to reach the provider, and neither the pool nor
    /// background load is simulated.
    pub replays_pool: bool,
    /// A pool counterfactual's scaling of the recorded waits for a connection (the time to
    /// reach the provider beyond `baseline`, times `factor`; see
    /// [`crate::scenario::Replay::wait_scale`]); `None` at the recorded pool size.
    pub reach_scale: Option<(SimTime, f64)>,
    /// Whether recorded provider answers win over the fake provider's rules: a `replay`
    /// section run with the recorded key mode and pool size (an exact replay; see
    /// [`crate::scenario::Replay::replayed_as_recorded`]). Where the rules disagree with a
    /// recorded answer, the run follows the recording and records
    /// [`EventKind::RecordingDisagrees`](crate::history::EventKind::RecordingDisagrees).
    pub recording_wins: bool,
    /// The consumer group's offsets before its rebalance (`deliveries.rebalance`; empty
    /// without one).
    pub group: super::redelivery::GroupCell,
    /// The MCP clients' request ids and the tool server's idempotency records
    /// (`kind: "mcp_client"` layers, `executor.request_idempotency`; unused without them).
    pub mcp: super::layers::mcp_client::McpState,
}

/// The scenario's latency distributions that are drawn per request or per model decision,
/// each with its lognormal parameters computed once (see [`dist::Latency`]).
#[derive(Clone, Debug)]
pub(crate) struct Latencies {
    /// `stripe.latency`.
    pub stripe: dist::Latency,
    /// `background_load.hold`.
    pub background_hold: dist::Latency,
    /// `agent.think_time`.
    pub think_time: dist::Latency,
    /// `replay.reach_provider` (a constant 0 without a `replay` section).
    pub reach_provider: dist::Latency,
    /// `arrivals.amount`'s lognormal (drawn per generated ticket).
    pub amount: dist::Lognormal,
}

impl Latencies {
    fn new(cfg: &Scenario) -> Self {
        Latencies {
            stripe: dist::Latency::new(&cfg.stripe.latency),
            background_hold: dist::Latency::new(&cfg.background_load.hold),
            think_time: dist::Latency::new(&cfg.agent.think_time),
            reach_provider: dist::Latency::new(
                &cfg.replay
                    .as_ref()
                    .map_or(LatencyDist::constant(std::time::Duration::ZERO), |r| {
                        r.reach_provider.clone()
                    }),
            ),
            amount: dist::Lognormal::of_amount(&cfg.arrivals.amount),
        }
    }
}

impl World {
    /// Wires a world for `cfg` under root seed `seed`.
    pub(crate) fn new(
        sim: Sim,
        cfg: Rc<Scenario>,
        seed: u64,
        observer: Rc<RefCell<dyn Observer>>,
    ) -> Rc<World> {
        let stripe = FakeStripe::new(
            SimTime::from_duration(cfg.stripe.idempotency_key_retention),
            cfg.stripe.rate_limit_per_s,
        )
        .with_provider(&cfg.provider)
        .with_effect(&cfg.provider, &cfg.effect());
        let pool = Rc::new(Pool::new(cfg.refunds_service.pool_size));
        let pool_gauges = PoolGauges::new(
            SimTime::from_duration(cfg.pool_wait_threshold()),
            SimTime::from_duration(cfg.horizon),
        );
        let stack = Stack::of(&cfg);
        let latencies = Latencies::new(&cfg);
        let replays_pool = cfg.replay.is_some();
        let overhead = cfg.refunds_service.overhead;
        let reach_scale = cfg
            .replay
            .as_ref()
            .filter(|r| r.pool_size != cfg.refunds_service.pool_size)
            .and_then(|r| {
                // Validation refuses a pool that cannot carry the recorded load.
                let factor = r.wait_scale(cfg.refunds_service.pool_size, overhead).ok()?;
                let baseline = r.pool_calibration(overhead)?.baseline;
                Some((SimTime::from_duration(baseline), factor))
            });
        let recording_wins = cfg.replay.as_ref().is_some_and(|r| {
            r.replayed_as_recorded(
                cfg.refunds_service.idempotency_key,
                cfg.refunds_service.pool_size,
            )
        });
        Rc::new(World {
            sim,
            cfg,
            streams: Streams::new(seed),
            observer,
            leases: RefCell::default(),
            awaiting_reconciliation: RefCell::default(),
            finished: Cell::new(false),
            premature: Cell::new(0),
            pool,
            pool_gauges,
            ledger: RefCell::new(Ledger::default()),
            stripe: RefCell::new(stripe),
            next_call: Cell::new(1),
            layer_loads: RefCell::default(),
            breakers: RefCell::default(),
            stack,
            latencies,
            replays_pool,
            group: RefCell::default(),
            mcp: Default::default(),
            reach_scale,
            recording_wins,
        })
    }

    /// Current virtual time.
    pub(crate) fn now(&self) -> SimTime {
        self.sim.now()
    }

    /// Records an event at the current instant (hands it to the observer).
    pub(crate) fn record(&self, ids: Ids, kind: EventKind) {
        self.observer.borrow_mut().event(Event {
            t_ns: self.now(),
            ticket: ids.ticket,
            attempt: ids.attempt,
            call: ids.call,
            kind,
        });
    }

    /// A lease on ticket `id`: the ticket stays open while one is held (see the type's docs).
    pub(crate) fn lease(self: &Rc<Self>, id: u64) -> TicketLease {
        self.leases.borrow_mut().entry(id).or_default().leases += 1;
        TicketLease {
            w: self.clone(),
            id,
        }
    }

    /// Spawns `fut` as a task that works on ticket `id` (holding a lease on it until it ends).
    #[inline]
    pub(crate) fn spawn_for<F, T>(self: &Rc<Self>, id: u64, fut: F) -> crate::sim::JoinHandle<T>
    where
        F: std::future::Future<Output = T> + 'static,
        T: 'static,
    {
        self.spawn_for_with(id, move || fut)
    }

    /// [`World::spawn_for`] of the future `make()` returns, built directly in the task's box
    /// (see [`crate::sim::Sim::spawn_holding_with`]): pass `move || some_async_fn(args)` rather
    /// than `some_async_fn(args)`, which is built on the stack and copied whole into the box.
    #[inline]
    pub(crate) fn spawn_for_with<F, T>(
        self: &Rc<Self>,
        id: u64,
        make: impl FnOnce() -> F,
    ) -> crate::sim::JoinHandle<T>
    where
        F: std::future::Future<Output = T> + 'static,
        T: 'static,
    {
        let lease = self.lease(id);
        self.sim.spawn_holding_with(lease, make)
    }

    /// [`World::spawn_detached_for`] of the future `make()` returns, built directly in the
    /// task's box (see [`World::spawn_for_with`]).
    #[inline]
    pub(crate) fn spawn_detached_for_with<F>(self: &Rc<Self>, id: u64, make: impl FnOnce() -> F)
    where
        F: std::future::Future<Output = ()> + 'static,
    {
        let lease = self.lease(id);
        self.sim.spawn_detached_holding_with(lease, make);
    }

    /// Evictions refused so far because the ticket's state was still in use: a closed ticket
    /// with work in flight, i.e. a task that worked on it without a lease (a model bug; the
    /// run's `conservation` invariant counts it).
    pub(crate) fn premature_evictions(&self) -> u64 {
        self.premature.get()
    }

    fn release(&self, id: u64) {
        if self.finished.get() {
            return;
        }
        let closed = {
            let mut leases = self.leases.borrow_mut();
            match leases.get_mut(&id) {
                Some(open) if open.leases > 1 => {
                    open.leases -= 1;
                    None
                }
                Some(_) => leases.remove(&id),
                None => None,
            }
        };
        if let Some(open) = closed {
            self.close(id, open.charge);
        }
    }

    /// The Stripe charge id of ticket `ticket` ([`World::charge_id`]), made once per open
    /// ticket and shared by every request on it (a ticket without a lease gets a new one).
    pub(crate) fn charge_of(&self, ticket: u64) -> Rc<str> {
        match self.leases.borrow_mut().get_mut(&ticket) {
            Some(open) => open
                .charge
                .get_or_insert_with(|| Self::charge_id(ticket))
                .clone(),
            None => Self::charge_id(ticket),
        }
    }

    /// Closes ticket `id` (whose charge id is `charge` if it was made): the observer folds it
    /// in, the ledger row goes, and its Stripe objects go now or after the next reconciliation
    /// run.
    fn close(&self, id: u64, charge: Option<Rc<str>>) {
        self.observer.borrow_mut().ticket_closed(id);
        if !self.ledger.borrow_mut().evict(id) {
            self.premature.set(self.premature.get() + 1);
        }
        if self.reconciliation_runs_after(self.now()) {
            self.awaiting_reconciliation.borrow_mut().push(id);
        } else if !self
            .stripe
            .borrow_mut()
            .evict_charge(&charge.unwrap_or_else(|| Self::charge_id(id)))
        {
            self.premature.set(self.premature.get() + 1);
        }
    }

    /// Whether the reconciliation job runs at or after `t` (and so will read Stripe's refunds).
    fn reconciliation_runs_after(&self, t: SimTime) -> bool {
        let r = &self.cfg.reconciliation;
        let interval = SimTime::from_duration(r.interval).as_nanos();
        if !r.enabled || interval == 0 {
            return false;
        }
        // The first run at or after `t` (a run at exactly `t` may not have read yet).
        let next = t
            .as_nanos()
            .div_ceil(interval)
            .max(1)
            .saturating_mul(interval);
        next <= SimTime::from_duration(self.cfg.horizon).as_nanos()
    }

    /// Bytes the model holds outside the engine's tasks and timers, as the run budget counts
    /// them while running ([`crate::sim::Limits::held`]): per open ticket
    /// [`HELD_BYTES_PER_OPEN_TICKET`], per ledger row, per Stripe charge and key entry, per
    /// request in the pool's line and per ticket awaiting reconciliation (constants below), and
    /// what the run's observer holds ([`crate::history::Observer::held_bytes`]: `--perfetto`'s
    /// open tickets, kept events).
    pub(crate) fn held_bytes(&self) -> u64 {
        let n = |x: usize| x as u64;
        n(self.leases.borrow().len()) * HELD_BYTES_PER_OPEN_TICKET
            + n(self.ledger.borrow().len()) * HELD_BYTES_PER_LEDGER_ROW
            + {
                let s = self.stripe.borrow();
                n(s.charges_held()) * HELD_BYTES_PER_CHARGE + n(s.keys_held()) * HELD_BYTES_PER_KEY
            }
            + n(self.pool.waiting()) * HELD_BYTES_PER_POOL_WAITER
            + n(self.awaiting_reconciliation.borrow().len())
                * HELD_BYTES_PER_AWAITING_RECONCILIATION
            + self.observer.try_borrow().map_or(0, |o| o.held_bytes())
    }

    /// Called by the reconciliation job after each run: drops the Stripe objects of tickets
    /// closed before it read them.
    /// Returns those tickets.
    pub(crate) fn reconciled(&self) -> Vec<u64> {
        let ids = std::mem::take(&mut *self.awaiting_reconciliation.borrow_mut());
        let mut stripe = self.stripe.borrow_mut();
        for id in &ids {
            if !stripe.evict_charge(&Self::charge_id(*id)) {
                self.premature.set(self.premature.get() + 1);
            }
        }
        ids
    }

    /// Ends the run for the model's bookkeeping: leases dropped afterwards (by tasks torn down
    /// with the engine) change nothing.
    pub(crate) fn finish(&self) {
        self.finished.set(true);
    }

    /// A fresh refunds-service request id (1, 2, …).
    pub(crate) fn next_call_id(&self) -> u64 {
        let c = self.next_call.get();
        self.next_call.set(c + 1);
        c
    }

    /// The added layers at `position`, top to bottom, with their names (compiled once per run
    /// from `stack` and `layers`).
    pub(crate) fn layers_at(&self, position: Position) -> &[(String, RetryLayer)] {
        self.stack.layers_at(position)
    }

    /// The requests and retries in flight through the added layer `name` (for its budget).
    pub(crate) fn layer_load(&self, name: &str) -> Rc<LayerLoad> {
        self.layer_loads
            .borrow_mut()
            .entry(name.to_string())
            .or_default()
            .clone()
    }

    /// The state of the circuit breaker `name` (configured by `cfg`), shared by every request
    /// through it in the run.
    pub(crate) fn breaker(&self, name: &str, cfg: &RetryLayer) -> Rc<RefCell<Breaker>> {
        self.breakers
            .borrow_mut()
            .entry(name.to_string())
            .or_insert_with(|| Rc::new(RefCell::new(Breaker::new(cfg))))
            .clone()
    }

    /// The stream `name` for entity `ids`.
    #[inline(always)]
    pub(crate) fn stream(&self, name: &str, ids: &[u64]) -> StreamRng {
        self.streams.stream(name, ids)
    }

    /// The key that stands for ticket `id` in every random stream: a generated ticket's arrival
    /// ordinal (`id − arrivals.first_ticket_id`, so 0 for the first ticket), a recorded
    /// ticket's own id. Renumbering generated tickets therefore changes no draw, and removing
    /// one recorded ticket (as shrinking does) leaves the others' draws alone.
    pub(crate) fn ticket_key(&self, id: u64) -> u64 {
        let a = &self.cfg.arrivals;
        if a.tickets.is_empty() {
            id.wrapping_sub(a.first_ticket_id)
        } else {
            id
        }
    }

    /// The stream `name` for ticket `id` and further entity `ids`, keyed by
    /// [`World::ticket_key`].
    #[inline(always)]
    pub(crate) fn ticket_stream(&self, name: &str, id: u64, ids: &[u64]) -> StreamRng {
        self.streams
            .stream_after(name, Some(self.ticket_key(id)), ids)
    }

    /// The Stripe charge id of a ticket.
    pub(crate) fn charge_id(ticket: u64) -> Rc<str> {
        super::ids::charge(ticket)
    }
}

/// Held per open ticket outside its tasks (its facts in the online metrics, its lease, its
/// incident-shape state), bytes; see [`World::held_bytes`].
pub(crate) const HELD_BYTES_PER_OPEN_TICKET: u64 = 1024;
/// Held per ledger row, bytes.
pub(crate) const HELD_BYTES_PER_LEDGER_ROW: u64 = 256;
/// Held per Stripe charge (its map entry, id, refunds), bytes.
pub(crate) const HELD_BYTES_PER_CHARGE: u64 = 512;
/// Held per idempotency-key entry (its key, parameters and saved response), bytes.
pub(crate) const HELD_BYTES_PER_KEY: u64 = 768;
/// Held per request waiting in the pool's line (its entry and, for background load, its
/// record), bytes.
pub(crate) const HELD_BYTES_PER_POOL_WAITER: u64 = 128;
/// Held per ticket awaiting the next reconciliation pass (its id in a list), bytes.
pub(crate) const HELD_BYTES_PER_AWAITING_RECONCILIATION: u64 = std::mem::size_of::<u64>() as u64;

/// What the world keeps per open ticket.
#[derive(Default)]
struct Open {
    /// Leases held.
    leases: u32,
    /// Its charge id, once [`World::charge_of`] made it.
    charge: Option<Rc<str>>,
}

/// Keeps a ticket open while held; see [`World`]'s eviction rules. Taken by [`World::lease`].
pub(crate) struct TicketLease {
    w: Rc<World>,
    id: u64,
}

impl Drop for TicketLease {
    fn drop(&mut self) {
        self.w.release(self.id);
    }
}
