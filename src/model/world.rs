//! The wired-up model: shared state every component task receives explicitly.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use tokio::sync::Semaphore;

use super::layers::LayerLoad;
use crate::scenario::{layers_at, Position, RetryLayer};

/// The positions an added layer can take, in the order of `World::path`.
const POSITIONS: [Position; 4] = [
    Position::AboveModel,
    Position::AroundTool,
    Position::BeforeService,
    Position::BeforeProvider,
];
use super::ledger::Ledger;
use super::stripe::FakeStripe;
use crate::history::{Event, EventKind, History};
use crate::scenario::Scenario;
use crate::sim::{Sim, SimTime, StreamRng, Streams};

/// Identifies who an event is about.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ids {
    /// Ticket id.
    pub ticket: Option<u64>,
    /// Model attempt.
    pub attempt: Option<u32>,
    /// Refunds-service request id.
    pub call: Option<u64>,
}

impl Ids {
    /// Ids of a ticket.
    pub fn ticket(ticket: u64) -> Self {
        Ids {
            ticket: Some(ticket),
            ..Ids::default()
        }
    }
    /// Ids of a ticket's model attempt.
    pub fn attempt(ticket: u64, attempt: u32) -> Self {
        Ids {
            ticket: Some(ticket),
            attempt: Some(attempt),
            call: None,
        }
    }
    /// Ids of one refunds-service request.
    pub fn call(ticket: u64, attempt: u32, call: u64) -> Self {
        Ids {
            ticket: Some(ticket),
            attempt: Some(attempt),
            call: Some(call),
        }
    }
}

/// Pool gauges kept by the model (they include background load, which is not traced).
#[derive(Debug, Default)]
pub struct PoolGauges {
    /// Requests waiting for a connection now.
    pub waiting: Cell<u32>,
    /// Largest `waiting` seen.
    pub max_waiting: Cell<u32>,
    /// Connections handed out.
    pub acquired: Cell<u64>,
    /// Connections returned.
    pub released: Cell<u64>,
}

/// Everything a component needs: the simulation handle, the scenario, the seeded streams, the
/// history being recorded, and the shared service state.
pub struct World {
    /// The engine.
    pub sim: Sim,
    /// The scenario being run.
    pub cfg: Rc<Scenario>,
    /// Seeded per-entity random streams.
    pub streams: Streams,
    /// Events recorded so far.
    pub history: RefCell<History>,
    /// The refunds service's connection pool to Stripe (FIFO).
    pub pool: Arc<Semaphore>,
    /// Pool gauges.
    pub pool_gauges: PoolGauges,
    /// The refunds service's ledger.
    pub ledger: RefCell<Ledger>,
    /// The fake Stripe account.
    pub stripe: RefCell<FakeStripe>,
    next_call: Cell<u64>,
    layer_loads: RefCell<std::collections::BTreeMap<String, Rc<LayerLoad>>>,
    /// The added layers at each position of the stack, compiled once per run.
    path: [Vec<(String, RetryLayer)>; 4],
}

impl World {
    /// Wires a world for `cfg` under root seed `seed`.
    pub fn new(sim: Sim, cfg: Rc<Scenario>, seed: u64) -> Rc<World> {
        let stripe = FakeStripe::new(
            SimTime::from_duration(cfg.stripe.idempotency_key_retention),
            cfg.stripe.rate_limit_per_s,
        );
        let pool = Arc::new(Semaphore::new(cfg.refunds_service.pool_size as usize));
        let path = POSITIONS.map(|p| {
            layers_at(&cfg, p)
                .into_iter()
                .map(|(n, l)| (n.to_string(), l.clone()))
                .collect()
        });
        Rc::new(World {
            sim,
            cfg,
            streams: Streams::new(seed),
            history: RefCell::new(History::default()),
            pool,
            pool_gauges: PoolGauges::default(),
            ledger: RefCell::new(Ledger::default()),
            stripe: RefCell::new(stripe),
            next_call: Cell::new(1),
            layer_loads: RefCell::default(),
            path,
        })
    }

    /// Current virtual time.
    pub fn now(&self) -> SimTime {
        self.sim.now()
    }

    /// Records an event at the current instant.
    pub fn record(&self, ids: Ids, kind: EventKind) {
        self.history.borrow_mut().events.push(Event {
            t_ns: self.now(),
            ticket: ids.ticket,
            attempt: ids.attempt,
            call: ids.call,
            kind,
        });
    }

    /// A fresh refunds-service request id (1, 2, …).
    pub fn next_call_id(&self) -> u64 {
        let c = self.next_call.get();
        self.next_call.set(c + 1);
        c
    }

    /// The added layers at `position`, top to bottom, with their names (compiled once per run
    /// from `stack` and `layers`).
    pub fn layers_at(&self, position: Position) -> &[(String, RetryLayer)] {
        let i = POSITIONS.iter().position(|p| *p == position).unwrap_or(0);
        &self.path[i]
    }

    /// The requests and retries in flight through the added layer `name` (for its budget).
    pub fn layer_load(&self, name: &str) -> Rc<LayerLoad> {
        self.layer_loads
            .borrow_mut()
            .entry(name.to_string())
            .or_default()
            .clone()
    }

    /// The stream `name` for entity `ids`.
    pub fn stream(&self, name: &str, ids: &[u64]) -> StreamRng {
        self.streams.stream(name, ids)
    }

    /// The key that stands for ticket `id` in every random stream: a generated ticket's arrival
    /// ordinal (`id − arrivals.first_ticket_id`, so 0 for the first ticket), a recorded
    /// ticket's own id. Renumbering generated tickets therefore changes no draw, and removing
    /// one recorded ticket (as shrinking does) leaves the others' draws alone.
    pub fn ticket_key(&self, id: u64) -> u64 {
        let a = &self.cfg.arrivals;
        if a.tickets.is_empty() {
            id.wrapping_sub(a.first_ticket_id)
        } else {
            id
        }
    }

    /// The stream `name` for ticket `id` and further entity `ids`, keyed by
    /// [`World::ticket_key`].
    pub fn ticket_stream(&self, name: &str, id: u64, ids: &[u64]) -> StreamRng {
        let mut key = Vec::with_capacity(ids.len() + 1);
        key.push(self.ticket_key(id));
        key.extend_from_slice(ids);
        self.streams.stream(name, &key)
    }

    /// The Stripe charge id of a ticket.
    pub fn charge_id(ticket: u64) -> String {
        format!("ch_{ticket}")
    }
}
