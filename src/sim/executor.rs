//! refundsim's own single-threaded executor over virtual time.
//!
//! Tasks are polled by [`Sim::run`]; when no task is ready the clock jumps to the earliest pending
//! timer. Timers are ordered by `(deadline, kind, sequence number)`, so events at the same instant
//! fire in the order they were scheduled, and a run is a pure function of its inputs.
//!
//! **Exact ties between a timeout and the work it guards.** A [`Sim::timeout`]'s timer is of kind
//! [`TimerKind::Deadline`]; every other timer is [`TimerKind::Work`]. At one instant, every work
//! timer fires (and the tasks it wakes run) before any deadline timer, so work that completes at
//! exactly its time limit is in time — whether it runs inside the timed-out future or in a task
//! of its own behind a [`JoinHandle`]. Among deadlines due at one instant, the one set first
//! fires first. Exploration mode may still reorder events within its `epsilon`.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use super::tiebreak::{TieBreak, MAX_CANDIDATES};
use super::time::SimTime;
use super::timer::{Sleep, Timeout};

type Task = Pin<Box<dyn Future<Output = ()>>>;

/// Ready queue shared with wakers. Wakers must be `Send + Sync`, hence the `Mutex`; it is never
/// contended because everything runs on one thread.
#[derive(Default)]
struct ReadyQueue {
    queue: VecDeque<u64>,
}

struct TaskWaker {
    id: u64,
    ready: Arc<Mutex<ReadyQueue>>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        let mut ready = self.ready.lock().expect("ready queue poisoned");
        if !ready.queue.contains(&self.id) {
            ready.queue.push_back(self.id);
        }
    }
}

/// What a timer stands for, which decides the order of timers due at the same instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TimerKind {
    /// A sleep: the end of some work (a latency, a pause, a scheduled arrival).
    Work,
    /// The time limit of a [`Sim::timeout`]: fires after every work timer due at the same instant.
    Deadline,
}

/// A pending timer's place in the order: `(deadline, kind << 63 | sequence number)`, which
/// sorts as `(deadline, kind, sequence number)` in a two-word key (sequence numbers stay far
/// below 2^63).
pub(super) type TimerKey = (SimTime, u64);

/// The bit that puts a [`TimerKind::Deadline`] after every work timer at the same instant.
const DEADLINE_BIT: u64 = 1 << 63;

/// What [`Sim::on_progress`] keeps: told the virtual time.
type ProgressObserver = Box<dyn FnMut(SimTime)>;

pub(super) struct Inner {
    now: Cell<SimTime>,
    next_seq: Cell<u64>,
    next_task: Cell<u64>,
    /// Pending timers keyed by `(deadline, kind, sequence)`: the order of same-instant events.
    timers: RefCell<BTreeMap<TimerKey, Waker>>,
    tasks: RefCell<BTreeMap<u64, Option<Task>>>,
    ready: Arc<Mutex<ReadyQueue>>,
    events_processed: Cell<u64>,
    tie_break: RefCell<Option<Box<dyn TieBreak>>>,
    epsilon: Cell<SimTime>,
    decisions: Cell<u64>,
    /// The progress observer ([`Sim::on_progress`]) and how many events apart it is told.
    progress: RefCell<Option<(u64, ProgressObserver)>>,
    /// The event count at which the observer is told next (`u64::MAX` without one).
    next_progress: Cell<u64>,
}

/// A handle to one simulation: its virtual clock, timers and tasks. Cheap to clone; every clone
/// refers to the same simulation. Not `Send`: a simulation lives on one thread.
#[derive(Clone)]
pub struct Sim {
    pub(super) inner: Rc<Inner>,
}

impl Default for Sim {
    fn default() -> Self {
        Self::new()
    }
}

/// Statistics of a finished [`Sim::run`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunStats {
    /// Virtual time when the run went quiescent (no ready task, no pending timer).
    pub end: SimTime,
    /// Task polls plus timer firings: the engine's unit of work ("events").
    pub events: u64,
    /// Tasks still parked when the run ended (waiting on something that can never happen).
    pub parked_tasks: usize,
}

impl Sim {
    /// A new simulation at virtual time 0 with no tasks.
    pub fn new() -> Self {
        Sim {
            inner: Rc::new(Inner {
                now: Cell::new(SimTime::ZERO),
                next_seq: Cell::new(0),
                next_task: Cell::new(0),
                timers: RefCell::new(BTreeMap::new()),
                tasks: RefCell::new(BTreeMap::new()),
                ready: Arc::new(Mutex::new(ReadyQueue::default())),
                events_processed: Cell::new(0),
                tie_break: RefCell::new(None),
                epsilon: Cell::new(SimTime::ZERO),
                decisions: Cell::new(0),
                progress: RefCell::new(None),
                next_progress: Cell::new(u64::MAX),
            }),
        }
    }

    /// A simulation in exploration mode: whenever several timers are due within `epsilon` of the
    /// earliest one, `tie_break` picks which fires next (the clock then moves to that timer's
    /// deadline; the others fire late by less than `epsilon`). `epsilon = 0` permutes only
    /// exact ties.
    pub fn exploring(tie_break: Box<dyn TieBreak>, epsilon: SimTime) -> Self {
        let sim = Sim::new();
        *sim.inner.tie_break.borrow_mut() = Some(tie_break);
        sim.inner.epsilon.set(epsilon);
        sim
    }

    /// Asks the tie-break to pick one of `n` alternatives for a discrete draw, when it drives
    /// draws (exhaustive mode); `None` otherwise (the caller uses its seeded stream).
    pub fn pick(&self, n: usize) -> Option<usize> {
        if n < 2 {
            return None;
        }
        let mut tb = self.inner.tie_break.borrow_mut();
        let tb = tb.as_mut().filter(|t| t.drives_draws())?;
        self.inner.decisions.set(self.inner.decisions.get() + 1);
        Some(tb.choose(n))
    }

    /// Takes the tie-break back out (e.g. to read a [`super::Script`]'s recorded decisions).
    pub fn take_tie_break(&self) -> Option<Box<dyn TieBreak>> {
        self.inner.tie_break.borrow_mut().take()
    }

    /// Decisions the tie-break made so far (timer orders and draws with 2+ alternatives).
    pub fn decisions(&self) -> u64 {
        self.inner.decisions.get()
    }

    /// Removes the next timer to fire: the earliest, or in exploration mode the tie-break's pick
    /// among those due within `epsilon` of the earliest.
    fn pop_next_timer(&self) -> Option<(TimerKey, Waker)> {
        let mut timers = self.inner.timers.borrow_mut();
        let (&(first, _), _) = timers.first_key_value()?;
        let mut tb = self.inner.tie_break.borrow_mut();
        let Some(tb) = tb.as_mut() else {
            return timers.pop_first();
        };
        let limit = first.saturating_add(self.inner.epsilon.get());
        let candidates: Vec<TimerKey> = timers
            .range(..=(limit, u64::MAX))
            .map(|(k, _)| *k)
            .take(MAX_CANDIDATES)
            .collect();
        if candidates.len() < 2 {
            return timers.pop_first();
        }
        self.inner.decisions.set(self.inner.decisions.get() + 1);
        let key = candidates[tb.choose(candidates.len()).min(candidates.len() - 1)];
        timers.remove_entry(&key)
    }

    /// The current virtual time.
    pub fn now(&self) -> SimTime {
        self.inner.now.get()
    }

    /// Starts `fut` as a new task and returns a handle to its output. Dropping the handle detaches
    /// the task: it keeps running (this is how a timed-out call's "zombie" work continues).
    pub fn spawn<F, T>(&self, fut: F) -> JoinHandle<T>
    where
        F: Future<Output = T> + 'static,
        T: 'static,
    {
        let slot = Rc::new(RefCell::new(JoinSlot {
            value: None,
            waker: None,
        }));
        let writer = slot.clone();
        let task: Task = Box::pin(async move {
            let value = fut.await;
            let mut slot = writer.borrow_mut();
            slot.value = Some(value);
            if let Some(w) = slot.waker.take() {
                w.wake();
            }
        });
        let id = self.inner.next_task.get();
        self.inner.next_task.set(id + 1);
        self.inner.tasks.borrow_mut().insert(id, Some(task));
        self.inner
            .ready
            .lock()
            .expect("ready queue poisoned")
            .queue
            .push_back(id);
        JoinHandle { slot }
    }

    /// A future that completes at `now + d`.
    pub fn sleep(&self, d: SimTime) -> Sleep {
        self.sleep_until(self.now().saturating_add(d))
    }

    /// A future that completes at virtual instant `deadline` (at once if it has passed).
    pub fn sleep_until(&self, deadline: SimTime) -> Sleep {
        Sleep::new(self.clone(), deadline, TimerKind::Work)
    }

    /// Runs `fut` with a time limit of `d`: `Ok(output)` if it completes first, else
    /// `Err(Elapsed)`, and `fut` is dropped. When both are due at the same instant the work wins,
    /// also when it runs in a spawned task (see the module docs: deadline timers fire last).
    pub fn timeout<F: Future>(&self, d: SimTime, fut: F) -> Timeout<F> {
        let limit = Sleep::new(
            self.clone(),
            self.now().saturating_add(d),
            TimerKind::Deadline,
        );
        Timeout::new(fut, limit)
    }

    pub(super) fn register_timer(
        &self,
        deadline: SimTime,
        kind: TimerKind,
        waker: Waker,
    ) -> TimerKey {
        let seq = self.inner.next_seq.get();
        self.inner.next_seq.set(seq + 1);
        let order = match kind {
            TimerKind::Work => seq,
            TimerKind::Deadline => DEADLINE_BIT | seq,
        };
        let key = (deadline, order);
        self.inner.timers.borrow_mut().insert(key, waker);
        key
    }

    pub(super) fn update_timer(&self, key: TimerKey, waker: &Waker) {
        if let Some(w) = self.inner.timers.borrow_mut().get_mut(&key) {
            if !w.will_wake(waker) {
                *w = waker.clone();
            }
        }
    }

    pub(super) fn cancel_timer(&self, key: TimerKey) {
        self.inner.timers.borrow_mut().remove(&key);
    }

    /// Tells `observer` the virtual time every `every_events` events (at least 1) during
    /// [`Sim::run`], for a progress display. The observer gets the clock only: it cannot touch
    /// the simulation, so a run with one has the same history as a run without.
    pub fn on_progress(&self, every_events: u64, observer: impl FnMut(SimTime) + 'static) {
        let every = every_events.max(1);
        *self.inner.progress.borrow_mut() = Some((every, Box::new(observer)));
        self.inner
            .next_progress
            .set(self.inner.events_processed.get().saturating_add(every));
    }

    fn tell_progress(&self) {
        if let Some((every, observer)) = self.inner.progress.borrow_mut().as_mut() {
            observer(self.now());
            self.inner
                .next_progress
                .set(self.inner.events_processed.get().saturating_add(*every));
        }
    }

    /// Number of pending timers (for tests and diagnostics).
    pub fn pending_timers(&self) -> usize {
        self.inner.timers.borrow().len()
    }

    /// Moves the clock to `t` without running tasks, firing (waking) every timer due by then in
    /// `(deadline, sequence)` order. For driving futures by hand in tests; [`Sim::run`] does this
    /// itself. Panics if `t` is in the past (a broken internal invariant).
    pub fn advance_to(&self, t: SimTime) {
        assert!(t >= self.now(), "virtual time cannot go backwards");
        loop {
            let next = {
                let mut timers = self.inner.timers.borrow_mut();
                match timers.first_key_value() {
                    Some((&(due, _), _)) if due <= t => timers.pop_first(),
                    _ => None,
                }
            };
            match next {
                Some(((due, _), waker)) => {
                    self.inner.now.set(due);
                    waker.wake();
                }
                None => break,
            }
        }
        self.inner.now.set(t);
    }

    /// Runs until no task is ready and no timer is pending, then returns statistics.
    /// Ready tasks run in wake order; then the clock jumps to the earliest timer.
    pub fn run(&self) -> RunStats {
        loop {
            self.run_ready();
            let next = self.pop_next_timer();
            match next {
                Some(((due, _), waker)) => {
                    self.inner.now.set(due.max(self.now()));
                    self.count_event();
                    waker.wake();
                    if self.inner.events_processed.get() >= self.inner.next_progress.get() {
                        self.tell_progress();
                    }
                }
                None => break,
            }
        }
        RunStats {
            end: self.now(),
            events: self.inner.events_processed.get(),
            parked_tasks: self.inner.tasks.borrow().len(),
        }
    }

    fn count_event(&self) {
        self.inner
            .events_processed
            .set(self.inner.events_processed.get() + 1);
    }

    fn pop_ready(&self) -> Option<u64> {
        self.inner
            .ready
            .lock()
            .expect("ready queue poisoned")
            .queue
            .pop_front()
    }

    fn run_ready(&self) {
        while let Some(id) = self.pop_ready() {
            let task = match self.inner.tasks.borrow_mut().get_mut(&id) {
                Some(slot) => slot.take(),
                None => None,
            };
            let Some(mut task) = task else { continue };
            self.count_event();
            let waker = Waker::from(Arc::new(TaskWaker {
                id,
                ready: self.inner.ready.clone(),
            }));
            let mut cx = Context::from_waker(&waker);
            match task.as_mut().poll(&mut cx) {
                Poll::Ready(()) => {
                    self.inner.tasks.borrow_mut().remove(&id);
                }
                Poll::Pending => {
                    if let Some(slot) = self.inner.tasks.borrow_mut().get_mut(&id) {
                        *slot = Some(task);
                    }
                }
            }
        }
    }
}

struct JoinSlot<T> {
    value: Option<T>,
    waker: Option<Waker>,
}

/// The output of a spawned task, as a future. Dropping it detaches (does not cancel) the task.
pub struct JoinHandle<T> {
    slot: Rc<RefCell<JoinSlot<T>>>,
}

impl<T> JoinHandle<T> {
    /// Whether the task has finished.
    pub fn is_finished(&self) -> bool {
        self.slot.borrow().value.is_some()
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = T;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let mut slot = self.slot.borrow_mut();
        match slot.value.take() {
            Some(v) => Poll::Ready(v),
            None => {
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_instant_events_run_in_schedule_order() {
        let sim = Sim::new();
        let log = Rc::new(RefCell::new(Vec::new()));
        for (i, ms) in [(0, 5u64), (1, 3), (2, 5), (3, 3)] {
            let (s, log) = (sim.clone(), log.clone());
            sim.spawn(async move {
                s.sleep(SimTime::from_millis(ms)).await;
                log.borrow_mut().push((s.now().as_nanos() / 1_000_000, i));
            });
        }
        let stats = sim.run();
        assert_eq!(*log.borrow(), vec![(3, 1), (3, 3), (5, 0), (5, 2)]);
        assert_eq!(stats.end, SimTime::from_millis(5));
        assert_eq!(stats.parked_tasks, 0);
    }

    #[test]
    fn exploration_permutes_same_instant_events() {
        use crate::sim::tiebreak::Script;
        let orders = |prefix: Vec<usize>| {
            let sim = Sim::exploring(Box::new(Script::new(prefix)), SimTime::ZERO);
            let log = Rc::new(RefCell::new(Vec::new()));
            for i in 0..3 {
                let (s, log) = (sim.clone(), log.clone());
                sim.spawn(async move {
                    s.sleep(SimTime::from_millis(5)).await;
                    log.borrow_mut().push(i);
                });
            }
            sim.run();
            let v = log.borrow().clone();
            v
        };
        assert_eq!(orders(vec![]), vec![0, 1, 2]);
        assert_eq!(orders(vec![2]), vec![2, 0, 1]);
        assert_eq!(orders(vec![1, 1]), vec![1, 2, 0]);
    }

    #[test]
    fn epsilon_lets_a_near_tie_fire_first() {
        use crate::sim::tiebreak::Script;
        let sim = Sim::exploring(Box::new(Script::new(vec![1])), SimTime::from_millis(1));
        let log = Rc::new(RefCell::new(Vec::new()));
        for (i, us) in [(0, 8_000_000u64), (1, 8_000_500)] {
            let (s, log) = (sim.clone(), log.clone());
            sim.spawn(async move {
                s.sleep(SimTime::from_nanos(us * 1000)).await;
                log.borrow_mut().push((i, s.now().as_nanos()));
            });
        }
        sim.run();
        // The later timer (8.0005 s) fired first; the earlier one fired late, at the same instant.
        assert_eq!(*log.borrow(), vec![(1, 8_000_500_000), (0, 8_000_500_000)]);
    }

    #[test]
    fn join_handle_returns_output_and_detached_tasks_keep_running() {
        let sim = Sim::new();
        let done = Rc::new(Cell::new(SimTime::ZERO));
        let (s, d) = (sim.clone(), done.clone());
        let out = Rc::new(Cell::new(0));
        let o = out.clone();
        sim.spawn(async move {
            let s2 = s.clone();
            let zombie = s.spawn(async move {
                s2.sleep(SimTime::from_millis(9700)).await;
                d.set(s2.now());
                7
            });
            let r = s.timeout(SimTime::from_secs(8), zombie).await;
            assert!(r.is_err());
            assert_eq!(s.now(), SimTime::from_secs(8));
            let h = s.spawn(async { 41 });
            o.set(h.await);
        });
        sim.run();
        assert_eq!(out.get(), 41);
        assert_eq!(
            done.get(),
            SimTime::from_millis(9700),
            "the timed-out work still finished"
        );
    }

    #[test]
    fn timeout_prefers_future_at_equal_instant_and_cancels_timer() {
        let sim = Sim::new();
        let s = sim.clone();
        let res = Rc::new(Cell::new(None));
        let r = res.clone();
        sim.spawn(async move {
            let s2 = s.clone();
            let v = s.timeout(SimTime::from_secs(1), async move {
                s2.sleep(SimTime::from_secs(1)).await;
                5
            });
            r.set(Some(v.await.ok()));
            assert_eq!(s.pending_timers(), 0);
        });
        sim.run();
        assert_eq!(res.get(), Some(Some(5)));
    }

    /// Runs `work(sim)` under a 1 s timeout that it meets at exactly 1 s; `Some(output)` if the
    /// work was in time.
    fn tie<F, W>(work: W) -> Option<u32>
    where
        W: FnOnce(Sim) -> F + 'static,
        F: Future<Output = u32> + 'static,
    {
        let sim = Sim::new();
        let s = sim.clone();
        let res = Rc::new(Cell::new(None));
        let r = res.clone();
        sim.spawn(async move {
            let v = s.timeout(SimTime::from_secs(1), work(s.clone())).await;
            r.set(Some(v.ok()));
        });
        sim.run();
        res.get().expect("the timed call returned")
    }

    #[test]
    fn exact_tie_goes_to_plain_work() {
        let got = tie(|s| async move {
            s.sleep(SimTime::from_secs(1)).await;
            5
        });
        assert_eq!(got, Some(5));
    }

    #[test]
    fn exact_tie_goes_to_spawned_work_too() {
        // The spawned task registers its timer after the timeout's (a later sequence number);
        // the deadline still fires last at the shared instant.
        let got = tie(|s| {
            let inner = s.clone();
            s.spawn(async move {
                inner.sleep(SimTime::from_secs(1)).await;
                6
            })
        });
        assert_eq!(got, Some(6));
        let chained = tie(|s| {
            let inner = s.clone();
            s.spawn(async move {
                inner.sleep(SimTime::from_millis(400)).await;
                let deeper = inner.clone();
                inner
                    .spawn(async move {
                        deeper.sleep(SimTime::from_millis(600)).await;
                        7
                    })
                    .await
            })
        });
        assert_eq!(
            chained,
            Some(7),
            "a chain of spawned tasks ending at the deadline"
        );
    }

    #[test]
    fn work_one_nanosecond_late_times_out() {
        let got = tie(|s| {
            let inner = s.clone();
            s.spawn(async move {
                inner.sleep(SimTime::from_nanos(1_000_000_001)).await;
                8
            })
        });
        assert_eq!(got, None);
    }
}
