//! Added retry layers of the call path (DESIGN §1b), and the one retry loop every one of them
//! runs.
//!
//! In the shape of tower's `Retry<P, S>`: a layer gets a request, calls its inner service once
//! per try, and decides from each outcome (by [`RetryOn`] class) whether to try again after a
//! backoff. The decision and the mechanism are apart: [`decide`] is a pure function of the
//! layer's config, the outcome and its budget; [`retry`] only loops, times tries out and sleeps.
//! Where a layer sits changes only what its inner service is:
//!
//! | position in `stack` | inner service | file |
//! |---|---|---|
//! | above `model_retry` (`run_retry`) | a whole agent turn | `model/agent.rs` (`Turns`, an [`Inner`]) |
//! | between `model_retry` and `executor` | an executor call | [`around_tool`] (an MCP client: [`mcp_client`]) |
//! | between `executor` and `refunds_service` | an HTTP request to the service | [`before_service`] |
//! | after `sdk` | an HTTP request to Stripe | [`before_provider`] |
//!
//! The three request positions are each a [`Place`], walked by [`through`]: a new position is
//! one file with one `impl Place` and its entry in `Position`.
//!
//! Draws: a layer's backoff comes from a stream keyed by (ticket, layer name, model attempt,
//! the tries of the layers above, try number), and each try's requests carry the layer's try
//! number in their Stripe draw key only when it is not 0, so adding a layer that never retries
//! changes no draw.

pub(crate) mod around_tool;
pub(crate) mod before_provider;
pub(crate) mod before_service;
pub(crate) mod circuit_breaker;
pub(crate) mod hedge;
pub(crate) mod mcp_client;

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use super::dist;
pub(crate) use super::world::LayerLoad;
use super::world::{Ids, World};
use crate::history::EventKind;
use crate::scenario::layer_kinds::defaults;
use crate::scenario::{BackoffKind, Jitter, LayerKind, Position, RetryLayer, RetryOn};
use crate::sim::{tag, SimTime};

/// The tries of the layers a request went through, top to bottom: `(layer name, try)` with
/// try ≥ 1 only (a first try leaves no mark, so a layer that never retries changes nothing).
pub(crate) type Via = Vec<(String, u32)>;

/// The draw-key ids of a [`Via`]: `(tag(name), try)` per entry.
pub(crate) fn via_ids(via: &Via) -> Vec<u64> {
    via.iter()
        .flat_map(|(name, n)| [tag(name), u64::from(*n)])
        .collect()
}

/// How one try of a layer ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TryEnd<T> {
    /// The inner service answered `T`; `class` is its retryable class, if it is a failure.
    Answered {
        /// The answer.
        value: T,
        /// Its class (`None`: a success, or a failure no `retry_on` names).
        class: Option<RetryOn>,
    },
    /// The layer's per-try timeout passed first; the try's work keeps running.
    TimedOut,
}

impl<T> TryEnd<T> {
    fn class(&self) -> Option<RetryOn> {
        match self {
            TryEnd::Answered { class, .. } => *class,
            TryEnd::TimedOut => Some(RetryOn::Timeout),
        }
    }
}

/// Whether the layer retries after try `n` (0-based) ended with `class`: the class is in
/// `retry_on`, tries remain, and the retry budget (Envoy's rule: retries in flight below
/// `max(min_retry_concurrency, budget_percent % of requests in flight)`) allows it.
pub(crate) fn decide(layer: &RetryLayer, n: u32, class: Option<RetryOn>, load: &LayerLoad) -> bool {
    let Some(class) = class else { return false };
    if n >= layer.retries() || !layer.retries_on(class) {
        return false;
    }
    budget_allows(layer, load)
}

/// Whether `layer`'s retry budget, if any, allows one more retry (or hedged try) now: Envoy's
/// rule, retries in flight below `max(min_retry_concurrency, budget_percent % of requests in
/// flight)`.
pub(crate) fn budget_allows(layer: &RetryLayer, load: &LayerLoad) -> bool {
    if let Some(t) = &layer.retry_throttling {
        let max = u64::from(t.max_tokens) * 1000;
        // gRFC A6: "if the token_count is less than or equal to the threshold
        // (max_tokens / 2), then RPCs will not be retried".
        if load.tokens_milli.get().unwrap_or(max) * 2 <= max {
            return false;
        }
    }
    match &layer.budget {
        None => true,
        Some(b) => {
            let share = b.budget_percent / 100.0 * load.active.get() as f64;
            let allowed = share.max(f64::from(b.min_retry_concurrency));
            (load.retrying.get() as f64) < allowed
        }
    }
}

/// One request through `layer` ended with `class`: under `retry_throttling`, a failure the
/// layer retries on takes a token away (not below 0), a success gives `token_ratio` back (not
/// above `max_tokens`), as gRFC A6 counts them; other failures change nothing.
pub(crate) fn throttle_record(layer: &RetryLayer, load: &LayerLoad, class: Option<RetryOn>) {
    let Some(t) = &layer.retry_throttling else {
        return;
    };
    let max = u64::from(t.max_tokens) * 1000;
    let now = load.tokens_milli.get().unwrap_or(max);
    let next = match class {
        None => (now + (t.token_ratio * 1000.0).round() as u64).min(max),
        Some(c) if layer.retries_on(c) => now.saturating_sub(1000),
        Some(_) => now,
    };
    load.tokens_milli.set(Some(next));
}

/// The delay before retry `n` (1-based) with uniform draw `u` in [0, 1): constant `base`, or
/// `base · 2^(n−1)` capped at `max`; then full jitter `U(0, d)`, equal jitter
/// `d/2 + U(0, d/2)` or proportional jitter `d · U(1 − f, 1 + f)` (`backoff.jitter_factor`).
pub(crate) fn backoff(layer: &RetryLayer, n: u32, u: f64) -> SimTime {
    let jitter = match layer.backoff.jitter {
        Jitter::None => super::backoff::Jitter::None,
        Jitter::Full => super::backoff::Jitter::Full,
        Jitter::Equal => super::backoff::Jitter::Equal,
        Jitter::Proportional => super::backoff::Jitter::Proportional(
            layer
                .backoff
                .jitter_factor
                .unwrap_or(crate::scenario::DEFAULT_JITTER_FACTOR),
        ),
    };
    super::backoff::envoy(
        layer.backoff.kind == BackoffKind::Exponential,
        layer.base().as_secs_f64(),
        layer.max_delay().as_secs_f64(),
        jitter,
        n,
        u,
    )
}

/// One layer's identity in a run: its name, config and load.
pub(crate) struct Layer<'a> {
    /// The layer's name in `stack`.
    pub name: &'a str,
    /// Its config.
    pub cfg: &'a RetryLayer,
}

/// What one retry layer wraps (tower's inner `Service`), and what its place in the stack
/// records around the one retry loop, [`retry_loop`]. Each place — the run-level retry above the
/// model, framework middleware around the tool, the executor's own retry, a proxy before the
/// service, an egress proxy before the provider — differs only by this and by its [`Policy`].
pub(crate) trait Inner {
    /// The answer reported upward.
    type Answer;
    /// Try `n` (0-based) of the inner service; `via` is what the policy marks the try with
    /// ([`Policy::via`]: an added layer's caller's [`Via`] with its try appended when `n` ≥ 1).
    async fn try_once(&mut self, n: u32, via: Via) -> TryEnd<Self::Answer>;
    /// Where an added layer's events after the try that just ended are recorded.
    fn ids(&self) -> Ids {
        Ids::default()
    }
    /// The key of an added layer's retry `n` (1-based) backoff draw, in stream `layer_backoff`.
    fn backoff_key(&self, _n: u32) -> Vec<u64> {
        Vec::new()
    }
    /// Try `n` timed out and its work was dropped; called before the policy decides.
    fn try_timed_out(&mut self, _n: u32) {}
    /// Retry `n` (1-based) is decided; an added layer's policy calls it before its backoff is
    /// drawn.
    fn retrying(&mut self, _n: u32) {}
    /// The answer to report when the last try timed out after `after`.
    fn timed_out(&mut self, _after: SimTime) -> Self::Answer {
        unreachable!("a policy without a per-try timeout never times a try out")
    }
}

/// Whether and when to try again (tower's `Policy`), apart from the loop that runs the tries:
/// an added layer's [`LayerPolicy`] (`retry_on`, `num_retries`, `budget`, its backoff and
/// events), the executor's `retry` (LangChain's ToolRetryMiddleware), the SDK's network
/// retries (stripe-node's rules).
pub(crate) trait Policy<I: Inner> {
    /// How long one try may run before the loop drops it (its work keeps running where it is a
    /// task of its own); `None`: tries are not timed out by the loop.
    fn per_try_timeout(&self) -> Option<SimTime> {
        None
    }
    /// How long the try about to start may run: [`Policy::per_try_timeout`], shortened to what
    /// is left of a deadline over all tries (an added layer's `deadline`).
    fn try_limit(&self) -> Option<SimTime> {
        self.per_try_timeout()
    }
    /// What try `n` is marked with in its requests ([`Via`]); empty by default.
    fn via(&self, _n: u32) -> Via {
        Via::new()
    }
    /// Try `n` is about to start.
    fn starting(&mut self, _n: u32) {}
    /// Try `n` has ended (answered or timed out), before [`Policy::retry`].
    fn ended(&mut self, _n: u32) {}
    /// After try `n` (0-based) ended with `end`: report it upward, or try again.
    fn retry(&mut self, n: u32, end: &TryEnd<I::Answer>, inner: &mut I) -> Next;
}

/// What a [`Policy`] decides after a try.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Report the try's answer upward.
    Report,
    /// Try again after this backoff (a zero backoff still yields to the engine once).
    After(SimTime),
    /// Try again at once, without yielding: the wait already happened inside the try (the
    /// model thought before deciding).
    Now,
}

/// The one retry loop: runs `inner`'s tries n = 0, 1, … under `policy` (each under its
/// per-try timeout, if any), sleeps the wait the policy decides between them, and returns the
/// answer to report upward: the last answer, or [`Inner::timed_out`] when the last try timed out.
pub(crate) async fn retry_loop<I: Inner, P: Policy<I>>(
    w: &Rc<World>,
    policy: &mut P,
    inner: &mut I,
) -> I::Answer {
    let mut n = 0u32;
    loop {
        policy.starting(n);
        let one = inner.try_once(n, policy.via(n));
        let limit = policy.try_limit();
        let end = match limit {
            Some(t) => w.sim.timeout(t, one).await.unwrap_or(TryEnd::TimedOut),
            None => one.await,
        };
        policy.ended(n);
        if matches!(end, TryEnd::TimedOut) {
            inner.try_timed_out(n);
        }
        match policy.retry(n, &end, inner) {
            Next::After(wait) => {
                n += 1;
                w.sim.sleep(wait).await;
            }
            Next::Now => n += 1,
            Next::Report => {
                return match end {
                    TryEnd::Answered { value, .. } => value,
                    TryEnd::TimedOut => inner.timed_out(limit.unwrap_or_default()),
                }
            }
        }
    }
}

/// An added layer's policy: `retry_on`, `num_retries` and `budget` ([`decide`]),
/// `per_try_timeout`, its backoff ([`backoff`], drawn from stream `layer_backoff` keyed by
/// [`Inner::backoff_key`]), its load (for its budget), and the events `layer_timeout`,
/// `layer_budget_exhausted` and `layer_retry` recorded at [`Inner::ids`]. Tries after the first
/// are marked with the layer's try in their [`Via`].
pub(crate) struct LayerPolicy<'a> {
    w: &'a Rc<World>,
    layer: Layer<'a>,
    ticket: u64,
    via: &'a Via,
    load: Rc<LayerLoad>,
    /// When the layer's `deadline` passes: set when its first try starts.
    deadline_at: Option<SimTime>,
    /// Retries made under `timeout_retries`, which do not count against `max_retries`.
    uncounted: u32,
}

impl<'a> LayerPolicy<'a> {
    /// The policy of `layer` for a request of `ticket` that came through the tries `via`.
    pub(crate) fn new(w: &'a Rc<World>, layer: Layer<'a>, ticket: u64, via: &'a Via) -> Self {
        let load = w.layer_load(layer.name);
        LayerPolicy {
            w,
            layer,
            ticket,
            via,
            load,
            deadline_at: None,
            uncounted: 0,
        }
    }

    /// Whether the layer's `deadline` has passed, or would have by `at`.
    fn past_deadline(&self, at: SimTime) -> bool {
        self.deadline_at.is_some_and(|d| at >= d)
    }
}

impl<I: Inner> Policy<I> for LayerPolicy<'_> {
    fn per_try_timeout(&self) -> Option<SimTime> {
        self.layer.cfg.per_try_timeout.map(SimTime::from_duration)
    }
    fn try_limit(&self) -> Option<SimTime> {
        let per_try = self.layer.cfg.per_try_timeout.map(SimTime::from_duration);
        let Some(at) = self.deadline_at else {
            return per_try;
        };
        let left = at.saturating_sub(self.w.sim.now());
        Some(per_try.map_or(left, |t| t.min(left)))
    }
    fn via(&self, n: u32) -> Via {
        let mut here = self.via.clone();
        if n > 0 {
            here.push((self.layer.name.to_string(), n));
        }
        here
    }
    fn starting(&mut self, n: u32) {
        if n == 0 {
            self.deadline_at = self
                .layer
                .cfg
                .deadline
                .map(|d| self.w.sim.now() + SimTime::from_duration(d));
        }
        self.load.active.set(self.load.active.get() + 1);
        if n > 0 {
            self.load.retrying.set(self.load.retrying.get() + 1);
        }
    }
    fn ended(&mut self, n: u32) {
        self.load.active.set(self.load.active.get() - 1);
        if n > 0 {
            self.load.retrying.set(self.load.retrying.get() - 1);
        }
    }
    fn retry(&mut self, n: u32, end: &TryEnd<I::Answer>, inner: &mut I) -> Next {
        let (w, name, cfg) = (self.w, self.layer.name, self.layer.cfg);
        let class = end.class();
        throttle_record(cfg, &self.load, class);
        let ids = inner.ids();
        let deadline = |w: &World, in_flight: bool| {
            w.record(
                ids,
                EventKind::LayerDeadlineExceeded {
                    layer: name.to_string(),
                    layer_try: n,
                    deadline_ns: cfg.deadline.map_or(0, |d| d.as_nanos() as u64),
                    in_flight,
                },
            );
            Next::Report
        };
        if matches!(end, TryEnd::TimedOut) && self.past_deadline(w.sim.now()) {
            return deadline(w, true);
        }
        if matches!(end, TryEnd::TimedOut) {
            let after_ns = cfg.per_try_timeout.map_or(0, |d| d.as_nanos() as u64);
            w.record(
                ids,
                EventKind::LayerTimeout {
                    layer: name.to_string(),
                    layer_try: n,
                    after_ns,
                },
            );
        }
        // A timed-out try is re-run from `timeout_retries` first, outside the retry budget.
        let uncounted =
            matches!(end, TryEnd::TimedOut) && self.uncounted < cfg.timeout_retries.unwrap_or(0);
        let counted = n - self.uncounted;
        if uncounted {
            self.uncounted += 1;
        } else if !decide(cfg, counted, class, &self.load) {
            if class.is_some_and(|c| cfg.retries_on(c)) && counted < cfg.retries() {
                w.record(
                    ids,
                    EventKind::LayerBudgetExhausted {
                        layer: name.to_string(),
                        layer_try: counted + 1,
                    },
                );
            }
            return Next::Report;
        }
        inner.retrying(n + 1);
        let mut rng = w.ticket_stream("layer_backoff", self.ticket, &inner.backoff_key(n + 1));
        let delay = backoff(cfg, n + 1, dist::uniform(&mut rng, 0.0, 1.0));
        if self.past_deadline(w.sim.now() + delay) {
            return deadline(w, false);
        }
        w.record(
            ids,
            EventKind::LayerRetry {
                layer: name.to_string(),
                layer_try: n + 1,
                reason: class.map(retry_on_name).unwrap_or_default().into(),
                backoff_ns: delay.as_nanos(),
            },
        );
        Next::After(delay)
    }
}

/// An added layer around `inner`: [`retry_loop`] under the layer's [`LayerPolicy`]. `ticket`
/// keys the backoff stream; `via` holds the tries of the layers above.
pub(crate) async fn retry<I: Inner>(
    w: &Rc<World>,
    layer: Layer<'_>,
    ticket: u64,
    via: &Via,
    inner: &mut I,
) -> I::Answer {
    let mut policy = LayerPolicy::new(w, layer, ticket, via);
    retry_loop(w, &mut policy, inner).await
}

/// An [`Inner`] made of a closure per try and one for a timed-out last try, with its events at
/// fixed `ids` and its backoff keyed by (layer name, model attempt, the tries above, try).
struct Closures<F, R> {
    ids: Ids,
    key: Vec<u64>,
    try_once: F,
    timed_out: R,
}

impl<T, F, Fut, R> Inner for Closures<F, R>
where
    F: FnMut(u32, Via) -> Fut,
    Fut: Future<Output = TryEnd<T>>,
    R: Fn(SimTime) -> T,
{
    type Answer = T;
    async fn try_once(&mut self, n: u32, via: Via) -> TryEnd<T> {
        (self.try_once)(n, via).await
    }
    fn ids(&self) -> Ids {
        self.ids
    }
    fn backoff_key(&self, n: u32) -> Vec<u64> {
        [&self.key[..], &[u64::from(n)]].concat()
    }
    fn timed_out(&mut self, after: SimTime) -> T {
        (self.timed_out)(after)
    }
}

/// [`retry`] with closures: runs `try_once(n, via)` for n = 0, 1, … under the layer's policy and
/// returns the answer to report upward: the last answer, or `timed_out(after)` when the last
/// try timed out. `via` is the caller's [`Via`] with this layer's try appended when it is ≥ 1.
pub(crate) async fn run<T, F, Fut>(
    w: &Rc<World>,
    layer: Layer<'_>,
    ids: Ids,
    via: &Via,
    try_once: F,
    timed_out: impl Fn(SimTime) -> T,
) -> T
where
    F: FnMut(u32, Via) -> Fut,
    Fut: Future<Output = TryEnd<T>>,
{
    let ticket = ids.ticket.unwrap_or(0);
    let mut key = vec![tag(layer.name), u64::from(ids.attempt.unwrap_or(0))];
    key.extend(via_ids(via));
    let mut inner = Closures {
        ids,
        key,
        try_once,
        timed_out,
    };
    retry(w, layer, ticket, via, &mut inner).await
}

/// A position of the stack where added layers sit, as [`through`] walks it: what a request
/// through it is, what lies below its last layer, and what one layer's try and its giving up
/// look like there. Implemented by [`around_tool::AroundTool`], [`before_service::BeforeService`]
/// and [`before_provider::BeforeProvider`]; the run-level retry above the model is an [`Inner`] of its own
/// (it wraps a whole turn, not a request).
pub(crate) trait Place: 'static {
    /// A request on its way down, with the tries of the layers above ([`Place::via`]).
    type Req: Clone + 'static;
    /// What comes back up.
    type Answer: 'static;
    /// Where in `stack` the layers sit.
    const POSITION: Position;
    /// Whether each try runs as a task of its own, which keeps executing when the layer gives up
    /// on it (the provider side). Otherwise a dropped try's own tasks decide (the service's work
    /// is a task of its own already).
    const TRY_AS_TASK: bool = false;
    /// Where the layers' events go; its attempt keys their backoff draws.
    fn ids(req: &Self::Req) -> Ids;
    /// The tries of the layers above.
    fn via(req: &Self::Req) -> &Via;
    /// The ticket whose task a try belongs to.
    fn ticket(req: &Self::Req) -> u64;
    /// Whether `layer` acts on this request (a `retry` layer's `applies_to`); one that does not
    /// is passed through.
    fn applies(_w: &World, _layer: &RetryLayer) -> bool {
        true
    }
    /// The request of one try of `layer`: `via` set, and the layer's `cancellation` (and, where
    /// it propagates, its deadline) applied.
    fn for_try(w: &World, req: &Self::Req, layer: &RetryLayer, via: Via) -> Self::Req;
    /// What lies below the position's last layer.
    fn below(w: Rc<World>, req: Self::Req) -> Pin<Box<dyn Future<Output = Self::Answer>>>;
    /// The retryable class of an answer (`None`: a success, or a failure no `retry_on` names).
    fn class(answer: &Self::Answer) -> Option<RetryOn>;
    /// The HTTP status of an answer, where the position reads one (for `retriable_status_codes`);
    /// `None` by default.
    fn status(_answer: &Self::Answer) -> Option<u16> {
        None
    }
    /// An `mcp_client` layer `name` (`layer`) at `depth` around `req` ([`mcp_client::call`]).
    /// Validation places one only around tool execution; elsewhere it is passed through.
    fn mcp_client(
        w: Rc<World>,
        req: Self::Req,
        depth: usize,
        _name: &str,
        _layer: &RetryLayer,
    ) -> Pin<Box<dyn Future<Output = Self::Answer>>>
    where
        Self: Sized,
    {
        through::<Self>(w, req, depth + 1)
    }
    /// What layer `name` reports upward when its last try timed out after `after`
    /// (`on_timeout`).
    fn gave_up(name: &str, layer: &RetryLayer, after: SimTime) -> Self::Answer;
    /// What the open circuit breaker `name` answers at once (class `circuit-open`): nothing is
    /// sent below it.
    fn rejected(name: &str, layer: &RetryLayer) -> Self::Answer;
}

/// `req` through the layers of `P`'s position from the one at `depth` down, each running the
/// one retry loop ([`run`]) around the rest, then [`Place::below`].
pub(crate) fn through<P: Place>(
    w: Rc<World>,
    req: P::Req,
    depth: usize,
) -> Pin<Box<dyn Future<Output = P::Answer>>> {
    Box::pin(async move {
        let here = w.clone();
        let Some((name, cfg)) = here.layers_at(P::POSITION).get(depth) else {
            return P::below(w, req).await;
        };
        if !P::applies(&w, cfg) {
            return through::<P>(w, req, depth + 1).await;
        }
        match cfg.kind {
            // A client of the tool server, with its own loop: re-issues and duplicated sends.
            LayerKind::McpClient => return P::mcp_client(w, req, depth, name, cfg).await,
            LayerKind::CircuitBreaker => {
                return circuit_breaker::call::<P>(w.clone(), req, depth, name, cfg).await;
            }
            LayerKind::Retry | LayerKind::Proxy | LayerKind::RunRetry | LayerKind::Hedge => {}
        }
        let layer = Layer { name, cfg };
        if defaults(cfg.kind).hedges {
            return hedge::hedge::<P>(&w, layer, &req, depth).await;
        }
        let (ww, base) = (w.clone(), req.clone());
        let try_once = move |_n: u32, via: Via| {
            let inner = one_try::<P>(&ww, &base, cfg, via, depth);
            async move {
                let value = inner.await;
                let class = cfg.status_class(P::status(&value), P::class(&value));
                TryEnd::Answered { value, class }
            }
        };
        let report = |after: SimTime| P::gave_up(name, cfg, after);
        run(&w, layer, P::ids(&req), P::via(&req), try_once, report).await
    })
}

/// One try of the layer `cfg` at `depth` of `P`'s position: `req` for the try marked `via`,
/// through the layers below it, as a task of its own where the position's tries are
/// ([`Place::TRY_AS_TASK`]).
fn one_try<P: Place>(
    w: &Rc<World>,
    req: &P::Req,
    cfg: &RetryLayer,
    via: Via,
    depth: usize,
) -> Pin<Box<dyn Future<Output = P::Answer>>> {
    let one = P::for_try(w, req, cfg, via);
    let ticket = P::ticket(&one);
    let inner = through::<P>(w.clone(), one, depth + 1);
    if P::TRY_AS_TASK {
        Box::pin(w.spawn_for(ticket, inner))
    } else {
        inner
    }
}

/// The `retry_on` spelling of a class.
pub(crate) fn retry_on_name(c: RetryOn) -> &'static str {
    match c {
        RetryOn::Reset => "reset",
        RetryOn::ConnectFailure => "connect-failure",
        RetryOn::FiveXx => "5xx",
        RetryOn::GatewayError => "gateway-error",
        RetryOn::Retriable4xx => "retriable-4xx",
        RetryOn::TooManyRequests => "429",
        RetryOn::Timeout => "timeout",
        RetryOn::PoolExhausted => "pool-exhausted",
        RetryOn::LlmError => "llm-error",
        RetryOn::RetriableStatusCodes => "retriable-status-codes",
        RetryOn::CircuitOpen => "circuit-open",
    }
}

/// The class of an HTTP status a layer sees from the refunds service: `pool-exhausted` for 503
/// (the service answers 503 only when its pool is exhausted), `gateway-error` for 502 and 504
/// (Stripe failed or went silent; a proxy's own timeout), `5xx`, `retriable-4xx` (409), `429`;
/// `None` for other statuses. A layer whose `retry_on` lists `5xx` also retries gateway errors
/// and pool exhaustion, as Envoy's `5xx` covers 502–504.
pub(crate) fn status_class(status: u16) -> Option<RetryOn> {
    match status {
        503 => Some(RetryOn::PoolExhausted),
        _ => http_class(status),
    }
}

/// The class of an HTTP status in Envoy's terms: `gateway-error` (502–504), `5xx`,
/// `retriable-4xx` (409), `429`; `None` for other statuses.
pub(crate) fn http_class(status: u16) -> Option<RetryOn> {
    match status {
        502..=504 => Some(RetryOn::GatewayError),
        500..=599 => Some(RetryOn::FiveXx),
        409 => Some(RetryOn::Retriable4xx),
        429 => Some(RetryOn::TooManyRequests),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{LayerKind, RetryBudget};
    use std::time::Duration;

    fn layer(json: &str) -> RetryLayer {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn kinds_have_their_defaults() {
        let r = RetryLayer::new(LayerKind::Retry);
        assert_eq!(r.retries(), 2);
        assert!(r.retries_on(RetryOn::Timeout) && r.retries_on(RetryOn::FiveXx));
        assert_eq!(
            (r.base(), r.max_delay()),
            (Duration::from_secs(1), Duration::from_secs(60))
        );
        let p = RetryLayer::new(LayerKind::Proxy);
        assert_eq!(p.retries(), 1);
        assert!(p.retries_on(RetryOn::Reset) && p.retries_on(RetryOn::FiveXx));
        assert!(!p.retries_on(RetryOn::Timeout) && !p.retries_on(RetryOn::Retriable4xx));
        assert_eq!(
            (p.base(), p.max_delay()),
            (Duration::from_millis(25), Duration::from_millis(250))
        );
        assert_eq!(layer(r#"{"kind": "proxy", "num_retries": 3}"#).retries(), 3);
    }

    #[test]
    fn backoff_kinds_and_jitters() {
        let exp =
            layer(r#"{"kind": "retry", "backoff": {"base": "1s", "max": "5s", "jitter": "none"}}"#);
        let secs = |n, u| backoff(&exp, n, u).as_nanos() as f64 / 1e9;
        assert_eq!(
            [secs(1, 0.3), secs(2, 0.3), secs(3, 0.3), secs(4, 0.3)],
            [1.0, 2.0, 4.0, 5.0]
        );
        let full = layer(r#"{"kind": "retry", "backoff": {"base": "2s", "jitter": "full"}}"#);
        assert_eq!(backoff(&full, 1, 0.25), SimTime::from_millis(500));
        let equal = layer(r#"{"kind": "retry", "backoff": {"base": "2s", "jitter": "equal"}}"#);
        assert_eq!(backoff(&equal, 1, 0.5), SimTime::from_millis(1500));
        let constant = layer(
            r#"{"kind": "retry", "backoff": {"kind": "constant", "base": "300ms", "jitter": "none"}}"#,
        );
        assert_eq!(backoff(&constant, 7, 0.9), SimTime::from_millis(300));
    }

    /// gRFC A6's counting: a retried-on failure takes a token, a success gives `token_ratio`
    /// back up to `max_tokens`, another failure class nothing; at or below half, no retry.
    #[test]
    fn retry_throttling_counts_tokens_as_grpc_does() {
        let mut l = RetryLayer::new(LayerKind::Proxy);
        l.retry_on = Some(vec![RetryOn::FiveXx]);
        l.retry_throttling = Some(crate::scenario::RetryThrottling {
            max_tokens: 4,
            token_ratio: 0.5,
        });
        let load = LayerLoad::default();
        assert!(budget_allows(&l, &load), "starts full");
        throttle_record(&l, &load, Some(RetryOn::FiveXx));
        throttle_record(&l, &load, Some(RetryOn::TooManyRequests));
        assert_eq!(
            load.tokens_milli.get(),
            Some(3000),
            "429 is not retried on here"
        );
        assert!(budget_allows(&l, &load));
        throttle_record(&l, &load, Some(RetryOn::FiveXx));
        assert_eq!(load.tokens_milli.get(), Some(2000));
        assert!(!budget_allows(&l, &load), "at half: throttled");
        throttle_record(&l, &load, None);
        assert_eq!(load.tokens_milli.get(), Some(2500));
        assert!(budget_allows(&l, &load));
        for _ in 0..10 {
            throttle_record(&l, &load, None);
        }
        assert_eq!(load.tokens_milli.get(), Some(4000), "capped at max_tokens");
        for _ in 0..10 {
            throttle_record(&l, &load, Some(RetryOn::FiveXx));
        }
        assert_eq!(load.tokens_milli.get(), Some(0), "not below 0");
    }

    #[test]
    fn decide_follows_retry_on_count_and_budget() {
        let mut l = layer(r#"{"kind": "proxy", "max_retries": 2}"#);
        let load = LayerLoad::default();
        assert!(decide(&l, 0, Some(RetryOn::FiveXx), &load));
        assert!(decide(&l, 1, Some(RetryOn::Reset), &load));
        assert!(!decide(&l, 2, Some(RetryOn::Reset), &load), "no tries left");
        assert!(
            !decide(&l, 0, Some(RetryOn::Timeout), &load),
            "not in retry_on"
        );
        assert!(!decide(&l, 0, None, &load), "a success");
        l.budget = Some(RetryBudget {
            budget_percent: 50.0,
            min_retry_concurrency: 1,
        });
        load.active.set(10);
        load.retrying.set(4);
        assert!(
            decide(&l, 0, Some(RetryOn::FiveXx), &load),
            "4 < 50 % of 10"
        );
        load.retrying.set(5);
        assert!(!decide(&l, 0, Some(RetryOn::FiveXx), &load), "budget spent");
    }

    #[test]
    fn statuses_map_to_envoy_classes() {
        assert_eq!(status_class(503), Some(RetryOn::PoolExhausted));
        assert_eq!(status_class(504), Some(RetryOn::GatewayError));
        assert_eq!(status_class(500), Some(RetryOn::FiveXx));
        assert_eq!(status_class(409), Some(RetryOn::Retriable4xx));
        assert_eq!(status_class(429), Some(RetryOn::TooManyRequests));
        assert_eq!(status_class(400), None);
    }
}
