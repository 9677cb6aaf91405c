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

use std::cell::{Cell, RefCell, UnsafeCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use super::tiebreak::{TieBreak, MAX_CANDIDATES};
use super::time::SimTime;
use super::timer::{Sleep, Timeout};

type Task = Pin<Box<dyn Future<Output = ()>>>;

/// A task's identity: its slab slot in the low 32 bits, the slot's generation in the high 32.
/// A slot's generation changes when its task finishes, so a leftover wake-up of a finished task
/// never polls the next task put in the same slot (it would take 2^32 reuses of one slot while
/// the stale id is still queued to alias).
type TaskId = u64;

fn task_id(slot: u32, generation: u32) -> TaskId {
    (u64::from(generation) << 32) | u64::from(slot)
}

thread_local! {
    /// One byte per thread, read only for its address: which thread is running, in two
    /// instructions (no atomic operation, no `Arc` of `std::thread::current()`). Two threads
    /// alive at the same time never share the address.
    static THREAD_MARK: u8 = const { 0 };
}

/// The address of the running thread's [`THREAD_MARK`].
#[inline(always)]
fn thread_mark() -> usize {
    THREAD_MARK.with(|m| std::ptr::from_ref(m) as usize)
}

/// The ready queue, in wake order, shared with the tasks' wakers.
///
/// Wakers must be `Send + Sync`, but a simulation runs on one thread (its [`Sim`] is not
/// `Send`) and its tasks wake each other there. So the queue is a plain `VecDeque` that only
/// the simulation's own thread touches, and a wake from any other thread (which no model
/// does) goes through a `Mutex` and joins the queue at its next pop. A `Mutex` around every
/// push and pop, plus an atomic swap per wake, drew about 4 % of a cycle profile's samples
/// (the whole eighth round of docs/performance.md saved about 1 % of CPU).
struct ReadyQueue {
    /// [`thread_mark`] of the thread that made the simulation.
    owner: usize,
    /// The queue: only ever touched on the `owner` thread, by one short borrow at a time.
    local: UnsafeCell<VecDeque<TaskId>>,
    /// Wakes from other threads, until the owner's next pop takes them in.
    remote: Mutex<Vec<Arc<TaskWaker>>>,
    /// Whether `remote` may have entries (read without the lock on every pop).
    has_remote: AtomicBool,
}

// SAFETY: `local` is only read or written by `ReadyQueue`'s methods, and only on the `owner`
// thread: `push`/`pop` are called by the simulation, which never leaves the thread that made
// it (`Sim` is neither `Send` nor `Sync`), and a waker calls `push` only after checking that
// it runs on `owner` (`wake_by_ref`); other threads use `remote`, behind its `Mutex`. No two
// threads alive at once have the same `thread_mark`, so `local` is never touched by two
// threads, and each use is one `VecDeque` call that calls nothing back (no overlapping
// borrows on the owner thread either).
unsafe impl Sync for ReadyQueue {}

impl ReadyQueue {
    /// An empty queue owned by the calling thread.
    fn new() -> Self {
        ReadyQueue {
            owner: thread_mark(),
            local: UnsafeCell::new(VecDeque::new()),
            remote: Mutex::new(Vec::new()),
            has_remote: AtomicBool::new(false),
        }
    }

    /// Appends `id`. Only on the owner thread (checked in debug builds; see the `Sync` impl).
    #[inline(always)]
    fn push(&self, id: TaskId) {
        debug_assert_eq!(thread_mark(), self.owner, "the ready queue is the owner's");
        // SAFETY: on the owner thread, with no other borrow of `local` alive (see `Sync`).
        unsafe { (*self.local.get()).push_back(id) }
    }

    /// Takes the next ready task, after the wakes other threads sent since the last pop.
    /// Only on the owner thread.
    #[inline(always)]
    fn pop(&self) -> Option<TaskId> {
        debug_assert_eq!(thread_mark(), self.owner, "the ready queue is the owner's");
        if self.has_remote.load(Ordering::Acquire) {
            self.take_remote();
        }
        // SAFETY: on the owner thread, with no other borrow of `local` alive (see `Sync`).
        unsafe { (*self.local.get()).pop_front() }
    }

    /// Wakes, now on the owner thread, the tasks other threads woke.
    #[cold]
    fn take_remote(&self) {
        let woken = {
            let mut remote = self.remote.lock().unwrap_or_else(|e| e.into_inner());
            self.has_remote.store(false, Ordering::Release);
            std::mem::take(&mut *remote)
        };
        for w in woken {
            w.wake_by_ref();
        }
    }

    /// A wake from a thread other than the owner: queued for the owner's next pop.
    #[cold]
    fn push_remote(&self, waker: Arc<TaskWaker>) {
        self.remote
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(waker);
        self.has_remote.store(true, Ordering::Release);
    }
}

/// The one waker of one task, made at spawn and reused for every poll of that task.
struct TaskWaker {
    id: TaskId,
    /// Whether `id` is in the ready queue (pushed and not yet popped): wakes while it is are
    /// no-ops, so a task is queued at most once (the same order as a queue without duplicates).
    /// Only read and written on the simulation's thread (plain loads and stores).
    queued: AtomicBool,
    ready: Arc<ReadyQueue>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    #[inline]
    fn wake_by_ref(self: &Arc<Self>) {
        if thread_mark() != self.ready.owner {
            self.ready.push_remote(self.clone());
        } else if !self.queued.load(Ordering::Relaxed) {
            self.queued.store(true, Ordering::Relaxed);
            self.ready.push(self.id);
        }
    }
}

/// A live task: its future and its waker (both made once, at spawn).
struct Running {
    future: Task,
    waker: Waker,
    /// The same allocation as `waker`, to clear its `queued` flag before each poll.
    handle: Arc<TaskWaker>,
}

/// One slot of the task slab.
struct TaskSlot {
    generation: u32,
    /// `None` when the slot is free, or while its task is being polled.
    running: Option<Running>,
}

/// Tasks in a slab: slots are reused through a free list, so spawning allocates no map node.
#[derive(Default)]
struct Tasks {
    slots: Vec<TaskSlot>,
    free: Vec<u32>,
    live: usize,
    /// Bytes of the live tasks' futures plus [`TASK_OVERHEAD_BYTES`] each (for [`Limits`]).
    live_bytes: u64,
    /// Wakers of finished tasks that nothing else referenced any more, kept for reuse: spawning
    /// takes one (under its new id) instead of allocating.
    spare_wakers: Vec<Arc<TaskWaker>>,
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
/// below 2^63). Keys are unique: every registration takes a new sequence number.
pub(super) type TimerKey = (SimTime, u64);

/// A registered timer: its key and its slot in the timer slab (what [`Sleep`] keeps).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TimerHandle {
    key: TimerKey,
    slot: u32,
}

/// The bit that puts a [`TimerKind::Deadline`] after every work timer at the same instant.
const DEADLINE_BIT: u64 = 1 << 63;

/// Something a timer calls when it fires, instead of waking a task: for model components that
/// react to an instant without a task of their own (background load is thousands of short
/// requests a run; as callbacks they cost one engine event each instead of a spawned task's
/// polls). The call happens inside [`Sim::run`] with no engine state borrowed, so `fire` may
/// register timers, spawn tasks and wake tasks.
pub trait TimerCallback {
    /// The timer registered with `token` (see [`Sim::call_at`]) is due: the clock reads its
    /// deadline.
    fn fire(&self, token: u64);
}

/// What a due timer does: wake the task that waits on it, or call a [`TimerCallback`].
pub(super) enum TimerAction {
    Wake(Waker),
    Call(Rc<dyn TimerCallback>, u64),
}

impl TimerAction {
    /// Carries the action out (outside every engine borrow).
    fn fire(self) {
        match self {
            TimerAction::Wake(waker) => waker.wake(),
            TimerAction::Call(callback, token) => callback.fire(token),
        }
    }
}

/// A timer registered by [`Sim::call_at`], to cancel it with [`Sim::cancel_call`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallTimer(TimerHandle);

/// One slot of the timer slab. The slot is live while `action` is `Some`; `key` tells a heap
/// entry for this slot's current timer from a stale one (cancelled, fired, or an earlier timer
/// that used the slot).
struct TimerSlot {
    key: TimerKey,
    action: Option<TimerAction>,
}

/// A heap entry: a timer's key and slot. Entries order by [`HeapEntry::rank`], the key as one
/// 128-bit integer `deadline << 64 | order`: two branch-free instructions wherever a comparison
/// lands (the derived order of the nested tuple `Reverse<((SimTime, u64), u32)>` it once was
/// was sometimes called out of line, which made pushes and pops a third dearer).
///
/// The slot is a whole word although slots fit in 32 bits: an entry is moved as 16 + 8 bytes,
/// and a 4-byte slot written then read back as the last 8 bytes of a move cannot be forwarded
/// from the store buffer (a stall of a dozen cycles; about a quarter of `insert_timer`'s samples
/// in a cycle profile of the incident).
#[derive(Clone, Copy, Debug)]
struct HeapEntry {
    deadline: u64,
    order: u64,
    slot: u64,
}

impl HeapEntry {
    fn new(key: TimerKey, slot: u32) -> Self {
        HeapEntry {
            deadline: key.0.as_nanos(),
            order: key.1,
            slot: u64::from(slot),
        }
    }

    /// The sort key: earlier deadline first, then lower order. Unique per timer.
    #[inline(always)]
    fn rank(&self) -> u128 {
        (u128::from(self.deadline) << 64) | u128::from(self.order)
    }

    fn handle(&self) -> TimerHandle {
        TimerHandle {
            key: (SimTime::from_nanos(self.deadline), self.order),
            slot: self.slot as u32,
        }
    }
}

/// A binary min-heap of [`HeapEntry`] by [`HeapEntry::rank`]: the timer queue.
///
/// Ranks are unique, so the order entries come out in is fixed by their keys alone, whatever
/// the heap's layout: the same as `std::collections::BinaryHeap`'s, which it replaces. Its
/// push and pop keep the entry being placed in registers and write it once, where it ends
/// up; std's pop first swaps it into the root field by field and then reads it back as one
/// 16-byte load, which the store buffer cannot forward (a stall on every pop: about a fifth of
/// the engine loop's samples in a cycle profile of the incident).
#[derive(Default)]
struct TimerHeap {
    data: Vec<HeapEntry>,
}

impl TimerHeap {
    fn len(&self) -> usize {
        self.data.len()
    }

    /// The earliest entry.
    #[inline(always)]
    fn peek(&self) -> Option<&HeapEntry> {
        self.data.first()
    }

    #[inline]
    fn push(&mut self, e: HeapEntry) {
        let mut pos = self.data.len();
        self.data.push(e);
        let rank = e.rank();
        while pos > 0 {
            let parent = (pos - 1) / 2;
            let p = self.data[parent];
            if p.rank() <= rank {
                break;
            }
            self.data[pos] = p;
            pos = parent;
        }
        self.data[pos] = e;
    }

    /// Removes and returns the earliest entry.
    #[inline]
    fn pop(&mut self) -> Option<HeapEntry> {
        let last = self.data.pop()?;
        let Some(&top) = self.data.first() else {
            return Some(last);
        };
        self.sift_down(0, last);
        Some(top)
    }

    /// Places `e` at `pos` or below: moves the earlier child up while it is earlier than `e`.
    #[inline(always)]
    fn sift_down(&mut self, mut pos: usize, e: HeapEntry) {
        let n = self.data.len();
        let rank = e.rank();
        loop {
            let mut child = 2 * pos + 1;
            if child >= n {
                break;
            }
            if child + 1 < n && self.data[child + 1].rank() < self.data[child].rank() {
                child += 1;
            }
            let c = self.data[child];
            if rank <= c.rank() {
                break;
            }
            self.data[pos] = c;
            pos = child;
        }
        self.data[pos] = e;
    }

    /// Keeps the entries `keep` accepts, and restores the heap order (bottom-up, O(n)).
    fn retain(&mut self, keep: impl FnMut(&HeapEntry) -> bool) {
        self.data.retain(keep);
        for pos in (0..self.data.len() / 2).rev() {
            let e = self.data[pos];
            self.sift_down(pos, e);
        }
    }
}

/// Pending timers: a min-heap of `(key, slot)` over a slab of wakers, with lazy cancellation.
/// Cancelling frees the slot and leaves the heap entry, which is dropped when it reaches the top
/// (or when stale entries outnumber live ones and the heap is compacted).
#[derive(Default)]
struct Timers {
    heap: TimerHeap,
    slots: Vec<TimerSlot>,
    free: Vec<u32>,
    live: usize,
}

/// Stale heap entries tolerated beyond the live count before the heap is compacted. Small: a
/// run has few live timers at a time (7.5 on average in the incident), and the cancelled ones
/// are mostly timeouts far in the future (8 s, 80 s); left in the heap they made every push and
/// pop walk a heap four or five times as deep as the live timers need (an incident run had 35
/// entries for 7.5 live timers on average at a slack of 64). A compaction costs one pass over
/// the heap and happens at most once per `live + STALE_SLACK` cancellations.
const STALE_SLACK: usize = 2;

impl Timers {
    fn is_live(&self, key: TimerKey, slot: u32) -> bool {
        let s = &self.slots[slot as usize];
        s.key == key && s.action.is_some()
    }

    fn insert(&mut self, key: TimerKey, action: TimerAction) -> TimerHandle {
        let slot = match self.free.pop() {
            Some(slot) => {
                // Field by field: a free slot's action is `None` (nothing to drop), and building
                // a whole `TimerSlot` to copy in went through the stack in pieces that the copy
                // then read back across store boundaries (a store-forwarding stall).
                let s = &mut self.slots[slot as usize];
                s.key = key;
                s.action = Some(action);
                slot
            }
            None => {
                let slot = u32::try_from(self.slots.len()).expect("fewer than 2^32 timers");
                self.slots.push(TimerSlot {
                    key,
                    action: Some(action),
                });
                slot
            }
        };
        self.live += 1;
        self.heap.push(HeapEntry::new(key, slot));
        TimerHandle { key, slot }
    }

    /// Frees a live timer's slot and returns its action; `None` if it is no longer live.
    fn remove(&mut self, h: TimerHandle) -> Option<TimerAction> {
        let s = self.slots.get_mut(h.slot as usize)?;
        if s.key != h.key {
            return None;
        }
        let action = s.action.take()?;
        self.free.push(h.slot);
        self.live -= 1;
        Some(action)
    }

    /// Drops stale entries from the top; afterwards the top (if any) is the earliest live timer.
    fn peek_live(&mut self) -> Option<TimerHandle> {
        while let Some(e) = self.heap.peek() {
            let h = e.handle();
            if self.is_live(h.key, h.slot) {
                return Some(h);
            }
            self.heap.pop();
        }
        None
    }

    /// Removes the earliest live timer from the heap, leaving its slot live (to be pushed back
    /// or removed by the caller).
    fn pop_live(&mut self) -> Option<TimerHandle> {
        let h = self.peek_live()?;
        self.heap.pop();
        Some(h)
    }

    /// Removes the earliest live timer, heap entry and slot, and returns its key and action
    /// (stale entries on the way are dropped): [`Timers::pop_live`] then [`Timers::remove`] in
    /// one pass, for the engine loop.
    #[inline(always)]
    fn pop_due(&mut self) -> Option<(TimerKey, TimerAction)> {
        loop {
            let e = self.heap.pop()?;
            let h = e.handle();
            if let Some(action) = self.remove(h) {
                return Some((h.key, action));
            }
        }
    }

    /// Rebuilds the heap without stale entries once they outnumber live timers (plus a slack),
    /// so long cancelled timeouts do not pile up. Amortised O(1) per cancellation.
    fn compact_if_stale(&mut self) {
        if self.heap.len() > 2 * self.live + STALE_SLACK {
            let slots = &self.slots;
            self.heap.retain(|e| {
                let h = e.handle();
                let s = &slots[h.slot as usize];
                s.key == h.key && s.action.is_some()
            });
        }
    }
}

/// What [`Sim::on_progress`] keeps: told the virtual time.
type ProgressObserver = Box<dyn FnMut(SimTime)>;

/// Per live task beyond its future: its slot, waker, box header and ready-queue entry, bytes.
pub(crate) const TASK_OVERHEAD_BYTES: u64 = 128;
/// Per live timer: its slot (key, action with a waker or callback) and heap entry, bytes.
pub(crate) const TIMER_BYTES: u64 = 96;

/// Resource limits of one [`Sim::run`] (the CLI's run budget, enforced while running): the run
/// stops, with [`RunStats::stopped`] saying why, once it has processed more than `max_events`
/// events or holds more than `max_bytes`. Held bytes are counted, not measured, so the same
/// run stops at the same event on every machine: the live tasks' futures (their exact sizes)
/// plus [`TASK_OVERHEAD_BYTES`] each, live timers at [`TIMER_BYTES`], and what `held` reports
/// for the model's own state. Checked every `check_every` events.
pub struct Limits {
    /// Events after which the run stops.
    pub max_events: u64,
    /// Counted bytes after which the run stops.
    pub max_bytes: u64,
    /// Events between two checks (at least 1).
    pub check_every: u64,
    /// Bytes the model holds outside tasks and timers (open tickets, queues, provider state).
    pub held: Box<dyn Fn() -> u64>,
    /// Asked at each check: `true` abandons the run (another run of the same command has
    /// stopped first, so this one's results will not be used); [`Exceeded::abandoned`] says so.
    pub abandon: Box<dyn Fn() -> bool>,
}

/// Why and where a run with [`Limits`] stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exceeded {
    /// `true` for the event limit, `false` for the memory limit.
    pub events_limit: bool,
    /// `true` if [`Limits::abandon`] stopped the run, not one of its own limits.
    pub abandoned: bool,
    /// Virtual time at the check that stopped it.
    pub at: SimTime,
    /// Events processed by then.
    pub events: u64,
    /// Counted bytes held by then: `task_bytes + timers × TIMER_BYTES + model_bytes`.
    pub bytes: u64,
    /// Live tasks and their bytes (futures plus overhead).
    pub tasks: usize,
    /// See [`Exceeded::tasks`].
    pub task_bytes: u64,
    /// Live timers.
    pub timers: usize,
    /// What [`Limits::held`] reported.
    pub model_bytes: u64,
}

pub(super) struct Inner {
    now: Cell<SimTime>,
    next_seq: Cell<u64>,
    /// Pending timers keyed by `(deadline, kind, sequence)`: the order of same-instant events.
    timers: RefCell<Timers>,
    tasks: RefCell<Tasks>,
    ready: Arc<ReadyQueue>,
    events_processed: Cell<u64>,
    tie_break: RefCell<Option<Box<dyn TieBreak>>>,
    epsilon: Cell<SimTime>,
    decisions: Cell<u64>,
    /// The progress observer ([`Sim::on_progress`]) and how many events apart it is told.
    progress: RefCell<Option<(u64, ProgressObserver)>>,
    /// The event count at which the observer is told next (`u64::MAX` without one).
    next_progress: Cell<u64>,
    /// Limits of the run ([`Sim::set_limits`]) and the event count of the next check
    /// (`u64::MAX` without limits).
    limits: RefCell<Option<Limits>>,
    next_check: Cell<u64>,
    stopped: Cell<Option<Exceeded>>,
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
    /// `Some` if the run stopped early at one of its [`Limits`]: its history is cut short.
    pub stopped: Option<Exceeded>,
}

impl Sim {
    /// A new simulation at virtual time 0 with no tasks.
    pub fn new() -> Self {
        Sim {
            inner: Rc::new(Inner {
                now: Cell::new(SimTime::ZERO),
                next_seq: Cell::new(0),
                timers: RefCell::new(Timers::default()),
                tasks: RefCell::new(Tasks::default()),
                ready: Arc::new(ReadyQueue::new()),
                events_processed: Cell::new(0),
                tie_break: RefCell::new(None),
                epsilon: Cell::new(SimTime::ZERO),
                decisions: Cell::new(0),
                progress: RefCell::new(None),
                next_progress: Cell::new(u64::MAX),
                limits: RefCell::new(None),
                next_check: Cell::new(u64::MAX),
                stopped: Cell::new(None),
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
    /// among those due within `epsilon` of the earliest (at most [`MAX_CANDIDATES`] of them, in
    /// key order); the others stay pending.
    fn pop_next_timer(&self) -> Option<(TimerKey, TimerAction)> {
        let mut timers = self.inner.timers.borrow_mut();
        let mut tb = self.inner.tie_break.borrow_mut();
        let Some(tb) = tb.as_mut() else {
            return timers.pop_due();
        };
        let first = timers.pop_live()?;
        let limit = first.key.0.saturating_add(self.inner.epsilon.get());
        let mut candidates = [first; MAX_CANDIDATES];
        let mut n = 1;
        while n < MAX_CANDIDATES {
            match timers.peek_live() {
                Some(h) if h.key.0 <= limit => {
                    timers.heap.pop();
                    candidates[n] = h;
                    n += 1;
                }
                _ => break,
            }
        }
        let pick = if n < 2 {
            0
        } else {
            self.inner.decisions.set(self.inner.decisions.get() + 1);
            tb.choose(n).min(n - 1)
        };
        for (i, h) in candidates[..n].iter().enumerate() {
            if i != pick {
                timers.heap.push(HeapEntry::new(h.key, h.slot));
            }
        }
        let chosen = candidates[pick];
        let action = timers.remove(chosen).expect("a popped timer is live");
        Some((chosen.key, action))
    }

    /// The current virtual time.
    pub fn now(&self) -> SimTime {
        self.inner.now.get()
    }

    /// Starts `fut` as a new task and returns a handle to its output. Dropping the handle detaches
    /// the task: it keeps running (this is how a timed-out call's "zombie" work continues).
    /// Allocates the task's future, its waker and its output slot once; polls allocate nothing.
    pub fn spawn<F, T>(&self, fut: F) -> JoinHandle<T>
    where
        F: Future<Output = T> + 'static,
        T: 'static,
    {
        self.spawn_holding((), fut)
    }

    /// [`Sim::spawn`] with a `guard` the task owns: it is dropped as soon as `fut` completes
    /// (before the output is handed to the [`JoinHandle`]), or with the task if it never does.
    /// The same as spawning `async move { let out = fut.await; drop(guard); out }`, with one
    /// layer of future less to build and move.
    #[inline]
    pub fn spawn_holding<G, F, T>(&self, guard: G, fut: F) -> JoinHandle<T>
    where
        G: 'static,
        F: Future<Output = T> + 'static,
        T: 'static,
    {
        self.spawn_holding_with(guard, move || fut)
    }

    /// [`Sim::spawn_holding`] of the future `make()` returns, built directly in the task's box:
    /// `fut` passed by value is copied into the box whole (futures of `async fn`s are as large
    /// as their largest state, often kilobytes, however little they hold before their first
    /// poll), where `make` — a closure that calls the `async fn` — writes only the arguments.
    /// `make` runs before the task is queued, after `guard` is taken.
    #[inline]
    pub fn spawn_holding_with<G, F, T>(&self, guard: G, make: impl FnOnce() -> F) -> JoinHandle<T>
    where
        G: 'static,
        F: Future<Output = T> + 'static,
        T: 'static,
    {
        let slot = Rc::new(RefCell::new(JoinSlot {
            value: None,
            waker: None,
        }));
        let join = slot.clone();
        self.insert_task(Box::into_pin(boxed_in_place(move || Guarded {
            fut: make(),
            guard: Some(guard),
            slot: Some(join),
        })));
        JoinHandle { slot }
    }

    /// Starts `fut` as a new task that nobody will await: [`Sim::spawn`] without the
    /// [`JoinHandle`] (and without allocating the output slot behind one).
    pub fn spawn_detached<F>(&self, fut: F)
    where
        F: Future<Output = ()> + 'static,
    {
        self.spawn_detached_holding((), fut);
    }

    /// [`Sim::spawn_detached`] with a `guard` the task owns and drops as soon as `fut`
    /// completes (see [`Sim::spawn_holding`]).
    #[inline]
    pub fn spawn_detached_holding<G, F>(&self, guard: G, fut: F)
    where
        G: 'static,
        F: Future<Output = ()> + 'static,
    {
        self.spawn_detached_holding_with(guard, move || fut);
    }

    /// [`Sim::spawn_detached_holding`] of the future `make()` returns, built directly in the
    /// task's box (see [`Sim::spawn_holding_with`]).
    #[inline]
    pub fn spawn_detached_holding_with<G, F>(&self, guard: G, make: impl FnOnce() -> F)
    where
        G: 'static,
        F: Future<Output = ()> + 'static,
    {
        self.insert_task(Box::into_pin(boxed_in_place(move || Guarded {
            fut: make(),
            guard: Some(guard),
            slot: None::<Rc<RefCell<JoinSlot<()>>>>,
        })));
    }

    /// Puts a new task in a free slot of the slab and queues it to be polled.
    fn insert_task(&self, future: Task) {
        let bytes = std::mem::size_of_val(&*future) as u64 + TASK_OVERHEAD_BYTES;
        let id = {
            let mut tasks = self.inner.tasks.borrow_mut();
            tasks.live_bytes += bytes;
            let index = match tasks.free.pop() {
                Some(index) => index,
                None => {
                    let index = u32::try_from(tasks.slots.len()).expect("fewer than 2^32 tasks");
                    tasks.slots.push(TaskSlot {
                        generation: 0,
                        running: None,
                    });
                    index
                }
            };
            let id = task_id(index, tasks.slots[index as usize].generation);
            let handle = match tasks.spare_wakers.pop() {
                Some(mut spare) => {
                    // Unshared since it was put aside (see `run_ready`): no stale waker exists.
                    let w = Arc::get_mut(&mut spare).expect("a spare waker is unshared");
                    w.id = id;
                    *w.queued.get_mut() = true;
                    spare
                }
                None => Arc::new(TaskWaker {
                    id,
                    queued: AtomicBool::new(true),
                    ready: self.inner.ready.clone(),
                }),
            };
            tasks.slots[index as usize].running = Some(Running {
                future,
                waker: Waker::from(handle.clone()),
                handle,
            });
            tasks.live += 1;
            id
        };
        self.inner.ready.push(id);
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
    /// `fut` is stored inline in the returned future (no allocation).
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
    ) -> TimerHandle {
        self.insert_timer(deadline, kind, TimerAction::Wake(waker))
    }

    /// Calls `callback.fire(token)` at virtual instant `deadline` (at the current instant if it
    /// has passed), ordered among other timers like a [`Sim::sleep_until`] of the same `kind`
    /// registered now. One engine event when it fires; no task.
    pub fn call_at(
        &self,
        deadline: SimTime,
        kind: TimerKind,
        callback: Rc<dyn TimerCallback>,
        token: u64,
    ) -> CallTimer {
        let deadline = deadline.max(self.now());
        CallTimer(self.insert_timer(deadline, kind, TimerAction::Call(callback, token)))
    }

    /// Cancels a timer of [`Sim::call_at`]; no effect if it has fired or was cancelled.
    pub fn cancel_call(&self, timer: CallTimer) {
        self.cancel_timer(timer.0);
    }

    fn insert_timer(&self, deadline: SimTime, kind: TimerKind, action: TimerAction) -> TimerHandle {
        let seq = self.inner.next_seq.get();
        self.inner.next_seq.set(seq + 1);
        let order = match kind {
            TimerKind::Work => seq,
            TimerKind::Deadline => DEADLINE_BIT | seq,
        };
        self.inner
            .timers
            .borrow_mut()
            .insert((deadline, order), action)
    }

    pub(super) fn update_timer(&self, h: TimerHandle, waker: &Waker) {
        let mut timers = self.inner.timers.borrow_mut();
        let Some(s) = timers.slots.get_mut(h.slot as usize) else {
            return;
        };
        if s.key != h.key {
            return;
        }
        if let Some(TimerAction::Wake(w)) = s.action.as_mut() {
            if !w.will_wake(waker) {
                *w = waker.clone();
            }
        }
    }

    pub(super) fn cancel_timer(&self, h: TimerHandle) {
        let removed = {
            let mut timers = self.inner.timers.borrow_mut();
            let removed = timers.remove(h);
            if removed.is_some() {
                timers.compact_if_stale();
            }
            removed
        };
        // Dropped outside the borrow: a waker's or callback's drop may run arbitrary code.
        drop(removed);
    }

    /// Number of pending (live) timers, for tests and diagnostics.
    pub fn pending_timers(&self) -> usize {
        self.inner.timers.borrow().live
    }

    /// Moves the clock to `t` without running tasks, firing (waking) every timer due by then in
    /// `(deadline, sequence)` order. For driving futures by hand in tests; [`Sim::run`] does this
    /// itself. Panics if `t` is in the past (a broken internal invariant).
    pub fn advance_to(&self, t: SimTime) {
        assert!(t >= self.now(), "virtual time cannot go backwards");
        loop {
            let next = {
                let mut timers = self.inner.timers.borrow_mut();
                match timers.peek_live() {
                    Some(h) if h.key.0 <= t => {
                        timers.heap.pop();
                        timers.remove(h).map(|w| (h.key.0, w))
                    }
                    _ => None,
                }
            };
            match next {
                Some((due, action)) => {
                    self.inner.now.set(due);
                    action.fire();
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
            if self.inner.events_processed.get() >= self.inner.next_check.get()
                && self.check_limits()
            {
                break;
            }
            let next = self.pop_next_timer();
            match next {
                Some(((due, _), action)) => {
                    self.inner.now.set(due.max(self.now()));
                    self.count_event();
                    action.fire();
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
            parked_tasks: self.inner.tasks.borrow().live,
            stopped: self.inner.stopped.get(),
        }
    }

    /// Sets the run's resource [`Limits`] (none by default). They only stop a run: a run
    /// within them has exactly the history it has without them.
    pub fn set_limits(&self, limits: Limits) {
        let every = limits.check_every.max(1);
        *self.inner.limits.borrow_mut() = Some(Limits {
            check_every: every,
            ..limits
        });
        self.inner
            .next_check
            .set(self.inner.events_processed.get().saturating_add(every));
    }

    /// Bytes held by live tasks (futures plus overhead) and live timers, as [`Limits`] counts them.
    pub fn held_bytes(&self) -> u64 {
        self.inner.tasks.borrow().live_bytes + self.inner.timers.borrow().live as u64 * TIMER_BYTES
    }

    /// Checks the limits; `true` (and [`RunStats::stopped`] set) if the run must stop.
    fn check_limits(&self) -> bool {
        let limits = self.inner.limits.borrow();
        let Some(l) = limits.as_ref() else {
            self.inner.next_check.set(u64::MAX);
            return false;
        };
        let events = self.inner.events_processed.get();
        self.inner
            .next_check
            .set(events.saturating_add(l.check_every));
        let (tasks, task_bytes) = {
            let t = self.inner.tasks.borrow();
            (t.live, t.live_bytes)
        };
        let timers = self.inner.timers.borrow().live;
        let model_bytes = (l.held)();
        let bytes = task_bytes
            .saturating_add(timers as u64 * TIMER_BYTES)
            .saturating_add(model_bytes);
        let events_limit = events > l.max_events;
        let over = events_limit || bytes > l.max_bytes;
        let abandoned = !over && (l.abandon)();
        if !over && !abandoned {
            return false;
        }
        self.inner.stopped.set(Some(Exceeded {
            events_limit,
            abandoned,
            at: self.now(),
            events,
            bytes,
            tasks,
            task_bytes,
            timers,
            model_bytes,
        }));
        true
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

    fn count_event(&self) {
        self.inner
            .events_processed
            .set(self.inner.events_processed.get() + 1);
    }

    fn pop_ready(&self) -> Option<TaskId> {
        self.inner.ready.pop()
    }

    /// Takes the task `id` out of its slot to poll it; `None` if it has finished (a stale wake).
    fn take_task(&self, id: TaskId) -> Option<Running> {
        let mut tasks = self.inner.tasks.borrow_mut();
        let slot = tasks.slots.get_mut((id & u64::from(u32::MAX)) as usize)?;
        if u64::from(slot.generation) != id >> 32 {
            return None;
        }
        slot.running.take()
    }

    fn run_ready(&self) {
        while let Some(id) = self.pop_ready() {
            let Some(mut task) = self.take_task(id) else {
                continue;
            };
            self.count_event();
            // Wakes from here on (including during this poll) queue the task again.
            task.handle.queued.store(false, Ordering::Relaxed);
            let mut cx = Context::from_waker(&task.waker);
            let poll = task.future.as_mut().poll(&mut cx);
            let index = (id & u64::from(u32::MAX)) as usize;
            let mut tasks = self.inner.tasks.borrow_mut();
            match poll {
                Poll::Pending => tasks.slots[index].running = Some(task),
                Poll::Ready(()) => {
                    let slot = &mut tasks.slots[index];
                    slot.generation = slot.generation.wrapping_add(1);
                    tasks.free.push(index as u32);
                    tasks.live -= 1;
                    tasks.live_bytes -=
                        std::mem::size_of_val(&*task.future) as u64 + TASK_OVERHEAD_BYTES;
                    drop(tasks);
                    // Dropped outside the borrow: the future's drop may touch the simulation.
                    let Running {
                        future,
                        waker,
                        mut handle,
                    } = task;
                    drop(future);
                    drop(waker);
                    // Reusable only if no clone of the waker survives anywhere (a clone could
                    // later wake whatever task the waker would then stand for).
                    if Arc::get_mut(&mut handle).is_some() {
                        self.inner.tasks.borrow_mut().spare_wakers.push(handle);
                    }
                }
            }
        }
    }
}

/// `Box::new(make())` with the value built directly in the box: the box is allocated first and
/// `make()` returns its value into it (the compiler passes the box as the return slot), instead
/// of building the value on the stack and copying it. Task futures are kilobytes; the copies
/// were about 5 % of a run's instructions.
#[inline(always)]
fn boxed_in_place<T>(make: impl FnOnce() -> T) -> Box<T> {
    let mut boxed = Box::<T>::new_uninit();
    boxed.write(make());
    // SAFETY: `write` just initialised the box's value (and if `make` panicked we never get
    // here; the uninitialised box is freed without dropping a `T`). `Box::write`, the safe
    // form of these two lines, needs Rust 1.87; this crate supports 1.85.
    unsafe { boxed.assume_init() }
}

pin_project_lite::pin_project! {
    /// A spawned task: `fut`, then drop `guard`, then hand the output to the [`JoinHandle`]'s
    /// `slot` (if any). A struct rather than an `async` block: the task's future is moved into
    /// its box once, where an `async` block would copy it again at its first poll (large
    /// futures made those copies a measurable share of a run).
    struct Guarded<G, F: Future> {
        #[pin]
        fut: F,
        guard: Option<G>,
        slot: Option<Rc<RefCell<JoinSlot<F::Output>>>>,
    }
}

impl<G, F: Future> Future for Guarded<G, F> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        let Poll::Ready(value) = this.fut.poll(cx) else {
            return Poll::Pending;
        };
        drop(this.guard.take());
        if let Some(slot) = this.slot.take() {
            let mut slot = slot.borrow_mut();
            slot.value = Some(value);
            if let Some(w) = slot.waker.take() {
                w.wake();
            }
        }
        Poll::Ready(())
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

    /// A waker woken on another thread (which no model does) still gets its task polled, at
    /// the simulation's next pop, once however often it was woken.
    #[test]
    fn a_wake_from_another_thread_queues_the_task_once() {
        struct Parked {
            waker: Rc<RefCell<Option<Waker>>>,
            polls: Rc<Cell<u32>>,
        }
        impl Future for Parked {
            type Output = ();
            fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
                self.polls.set(self.polls.get() + 1);
                if self.polls.get() == 1 {
                    *self.waker.borrow_mut() = Some(cx.waker().clone());
                    Poll::Pending
                } else {
                    Poll::Ready(())
                }
            }
        }
        let sim = Sim::new();
        let (waker, polls) = (Rc::new(RefCell::new(None)), Rc::new(Cell::new(0)));
        sim.spawn(Parked {
            waker: waker.clone(),
            polls: polls.clone(),
        });
        assert_eq!(sim.run().parked_tasks, 1);
        assert_eq!(polls.get(), 1);
        let w = waker.borrow_mut().take().expect("the task left its waker");
        std::thread::scope(|s| {
            s.spawn(|| {
                w.wake_by_ref();
                w.wake_by_ref();
            });
        });
        let stats = sim.run();
        assert_eq!(stats.parked_tasks, 0);
        assert_eq!(polls.get(), 2, "polled once more, not once per wake");
    }

    /// The timer heap gives entries back in rank order through any mix of pushes, pops and
    /// retains (checked against a sorted set), with ranks that tie on the deadline and differ
    /// only in the order word, and heaps from empty to a few hundred entries deep.
    #[test]
    fn timer_heap_pops_in_rank_order_through_pushes_pops_and_retains() {
        use std::collections::BTreeSet;
        let mut heap = TimerHeap::default();
        let mut reference: BTreeSet<(u64, u64, u64)> = BTreeSet::new();
        let mut z: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            z ^= z << 13;
            z ^= z >> 7;
            z ^= z << 17;
            z
        };
        let mut popped = 0;
        for step in 0..20_000u64 {
            let r = next();
            match r % 10 {
                0..=5 => {
                    // Few distinct deadlines: many ties broken by the order word.
                    let e = HeapEntry {
                        deadline: (r >> 8) % 50,
                        order: (r >> 32) | (step << 40),
                        slot: step,
                    };
                    heap.push(e);
                    reference.insert((e.deadline, e.order, e.slot));
                }
                6..=8 => {
                    let got = heap.pop().map(|e| (e.deadline, e.order, e.slot));
                    assert_eq!(got, reference.pop_first(), "pop at step {step}");
                    popped += usize::from(got.is_some());
                }
                _ => {
                    let m = 2 + r % 5;
                    heap.retain(|e| e.slot % m != 0);
                    reference.retain(|e| e.2 % m != 0);
                }
            }
            assert_eq!(heap.len(), reference.len());
            let top = heap.peek().map(|e| (e.deadline, e.order, e.slot));
            assert_eq!(top.as_ref(), reference.first(), "top at step {step}");
        }
        assert!(popped > 1_000, "the sequence pops often: {popped}");
        while let Some(e) = heap.pop() {
            assert_eq!(Some((e.deadline, e.order, e.slot)), reference.pop_first());
        }
        assert!(reference.is_empty());
    }

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

    /// A future that records the waker of every poll and never completes.
    struct Parked {
        polls: Rc<Cell<u32>>,
        waker: Rc<RefCell<Option<Waker>>>,
    }

    impl Future for Parked {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.polls.set(self.polls.get() + 1);
            *self.waker.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    #[test]
    fn a_stale_waker_never_polls_the_next_task_in_its_slot() {
        let sim = Sim::new();
        let stale = Rc::new(RefCell::new(None));
        let first = Parked {
            polls: Rc::new(Cell::new(0)),
            waker: stale.clone(),
        };
        // A task that finishes after one poll, leaving its waker behind.
        sim.spawn(async move {
            let mut first = std::pin::pin!(first);
            std::future::poll_fn(|cx| {
                let _ = first.as_mut().poll(cx);
                Poll::Ready(())
            })
            .await;
        });
        assert_eq!(sim.run().events, 1);
        // The next task takes the freed slot.
        let polls = Rc::new(Cell::new(0));
        sim.spawn(Parked {
            polls: polls.clone(),
            waker: Rc::new(RefCell::new(None)),
        });
        assert_eq!(sim.run().events, 2);
        assert_eq!(polls.get(), 1);
        stale.borrow().as_ref().expect("waker kept").wake_by_ref();
        let stats = sim.run();
        assert_eq!(polls.get(), 1, "the stale wake polled the new task");
        assert_eq!(stats.events, 2);
        assert_eq!(stats.parked_tasks, 1);
    }

    #[test]
    fn a_task_is_polled_with_the_same_waker_every_time_and_queued_once() {
        let sim = Sim::new();
        let polls = Rc::new(Cell::new(0));
        let waker = Rc::new(RefCell::new(None::<Waker>));
        sim.spawn(Parked {
            polls: polls.clone(),
            waker: waker.clone(),
        });
        sim.run();
        let first = waker.borrow().clone().expect("polled");
        // Three wakes before the next poll queue the task once.
        first.wake_by_ref();
        first.wake_by_ref();
        let by_value = first.clone();
        by_value.wake();
        assert_eq!(sim.run().events, 2);
        assert_eq!(polls.get(), 2);
        assert!(first.will_wake(waker.borrow().as_ref().expect("polled")));
    }

    #[test]
    fn cancelled_timers_are_skipped_and_compacted_without_changing_the_order() {
        let sim = Sim::new();
        let log = Rc::new(RefCell::new(Vec::new()));
        let (s, l) = (sim.clone(), log.clone());
        sim.spawn(async move {
            // Far more cancelled timeouts than live timers: the heap gets compacted.
            for i in 0..200 {
                let r = s.timeout(SimTime::from_secs(100 + i), async {}).await;
                assert!(r.is_ok());
            }
            assert_eq!(s.pending_timers(), 0);
            let mut handles = Vec::new();
            for (i, ms) in [(0, 7u64), (1, 3), (2, 7), (3, 1)] {
                let (s2, l2) = (s.clone(), l.clone());
                handles.push(s.spawn(async move {
                    s2.sleep(SimTime::from_millis(ms)).await;
                    l2.borrow_mut().push(i);
                }));
            }
            for h in handles {
                h.await;
            }
        });
        let stats = sim.run();
        assert_eq!(*log.borrow(), vec![3, 1, 0, 2]);
        assert_eq!(stats.end, SimTime::from_millis(7));
        assert_eq!(sim.pending_timers(), 0);
        assert!(sim.inner.timers.borrow().heap.len() <= STALE_SLACK);
    }

    #[test]
    fn exploration_offers_only_live_timers_in_key_order() {
        use crate::sim::tiebreak::Script;
        let sim = Sim::exploring(Box::new(Script::new(vec![1])), SimTime::ZERO);
        let log = Rc::new(RefCell::new(Vec::new()));
        // A cancelled timer due at the same instant is not a candidate.
        let (s, l) = (sim.clone(), log.clone());
        sim.spawn(async move {
            let r = s.timeout(SimTime::from_millis(5), async {}).await;
            assert!(r.is_ok());
            s.sleep(SimTime::from_millis(5)).await;
            l.borrow_mut().push(0);
        });
        for i in 1..=2 {
            let (s, l) = (sim.clone(), log.clone());
            sim.spawn(async move {
                s.sleep(SimTime::from_millis(5)).await;
                l.borrow_mut().push(i);
            });
        }
        sim.run();
        assert_eq!(*log.borrow(), vec![1, 0, 2]);
        assert_eq!(sim.decisions(), 2);
    }

    #[test]
    fn exploration_offers_at_most_max_candidates() {
        use crate::sim::tiebreak::Script;
        // Pick the last candidate every time: of 10 timers due at once, the 8th fires first.
        let sim = Sim::exploring(Box::new(Script::new(vec![usize::MAX; 16])), SimTime::ZERO);
        let log = Rc::new(RefCell::new(Vec::new()));
        for i in 0..10 {
            let (s, l) = (sim.clone(), log.clone());
            sim.spawn(async move {
                s.sleep(SimTime::from_millis(5)).await;
                l.borrow_mut().push(i);
            });
        }
        sim.run();
        assert_eq!(*log.borrow(), vec![7, 8, 9, 6, 5, 4, 3, 2, 1, 0]);
    }

    #[test]
    fn boxed_in_place_holds_the_value_and_a_panicking_make_drops_nothing() {
        let b = boxed_in_place(|| [7u64; 300]);
        assert!(b.iter().all(|&x| x == 7));
        struct Counted(Rc<Cell<u32>>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.set(self.0.get() + 1);
            }
        }
        let drops = Rc::new(Cell::new(0));
        let b = boxed_in_place(|| Counted(drops.clone()));
        drop(b);
        assert_eq!(
            drops.get(),
            1,
            "the boxed value is dropped once, with its box"
        );
        let d = drops.clone();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            boxed_in_place(|| -> Counted {
                let _inside = Counted(d);
                panic!("make failed")
            })
        }));
        assert!(caught.is_err());
        assert_eq!(
            drops.get(),
            2,
            "only the value inside `make` was dropped, by its unwind"
        );
    }

    /// A world whose tasks pile up: every 1 ms a task starts that sleeps an hour (1,000 of
    /// them a second for 10 s, all in flight at the end).
    /// Limits of `max_events`, `max_bytes` and `check_every`, with nothing held by the model
    /// and no abandoning.
    fn limits(max_events: u64, max_bytes: u64, check_every: u64) -> Limits {
        Limits {
            max_events,
            max_bytes,
            check_every,
            held: Box::new(|| 0),
            abandon: Box::new(|| false),
        }
    }

    fn piling_up(sim: &Sim) {
        let s = sim.clone();
        sim.spawn_detached(async move {
            for _ in 0..10_000 {
                let t = s.clone();
                s.spawn_detached(async move { t.sleep(SimTime::from_secs(3600)).await });
                s.sleep(SimTime::from_millis(1)).await;
            }
        });
    }

    /// Limits stop a run once the counted bytes (live futures, timers and what the model
    /// reports) or the events pass them, and say where; a run within them is unchanged.
    #[test]
    fn limits_stop_a_run_that_holds_or_does_too_much_and_leave_others_alone() {
        let free = Sim::new();
        piling_up(&free);
        let whole = free.run();
        assert_eq!(whole.stopped, None);

        let roomy = Sim::new();
        piling_up(&roomy);
        roomy.set_limits(limits(u64::MAX, u64::MAX, 100));
        assert_eq!(
            roomy.run(),
            whole,
            "limits that are never reached change nothing"
        );

        let held = Sim::new();
        piling_up(&held);
        held.set_limits(Limits {
            held: Box::new(|| 500_000),
            ..limits(u64::MAX, 1_000_000, 100)
        });
        let stats = held.run();
        let e = stats.stopped.expect("stopped on memory");
        assert!(!e.events_limit);
        assert!(e.bytes > 1_000_000 && e.bytes < 1_100_000, "{e:?}");
        assert_eq!(e.model_bytes, 500_000);
        assert_eq!(
            e.bytes,
            e.task_bytes + e.timers as u64 * TIMER_BYTES + e.model_bytes
        );
        assert!(e.tasks > 100 && e.timers > 100, "{e:?}");
        assert!(
            e.task_bytes >= e.tasks as u64 * TASK_OVERHEAD_BYTES,
            "{e:?}"
        );
        assert!(e.at < SimTime::from_secs(10), "stopped early: {e:?}");
        assert!(stats.events < whole.events);

        let busy = Sim::new();
        piling_up(&busy);
        busy.set_limits(limits(5_000, u64::MAX, 100));
        let e = busy.run().stopped.expect("stopped on events");
        assert!(e.events_limit);
        assert!(e.events > 5_000 && e.events <= 5_100, "{e:?}");
        // What `held_bytes` reports is what the check counted (the run stops right there).
        assert_eq!(
            held.held_bytes(),
            e_held_engine_bytes(&held),
            "held_bytes = tasks' bytes + timers × TIMER_BYTES"
        );
    }

    fn e_held_engine_bytes(sim: &Sim) -> u64 {
        let e = sim.inner.stopped.get().expect("stopped");
        assert!(e.timers > 1 && e.task_bytes > 0, "{e:?}");
        e.task_bytes + e.timers as u64 * TIMER_BYTES
    }

    /// The limits' edges, found by cargo-mutants: checked at every turn of the loop, a run stops
    /// at the first check past `max_events` (not at it), a run holding exactly `max_bytes` goes on,
    /// and a run is abandoned when asked even within its limits.
    #[test]
    fn limits_stop_just_past_their_bounds_and_abandon_on_request() {
        let exact = Sim::new();
        piling_up(&exact);
        exact.set_limits(limits(5_000, u64::MAX, 1));
        let e = exact.run().stopped.expect("stopped on events");
        // Here each turn of the loop is three events (a timer, two polls), so the checks fall at
        // 4,997, 5,000 and 5,003: the run is at 5,000 events at one and stops at the next.
        assert_eq!(e.events, 5_003, "{e:?}");

        let at_budget = Sim::new();
        piling_up(&at_budget);
        at_budget.set_limits(Limits {
            // The sum saturates at u64::MAX: exactly the budget, which is allowed.
            held: Box::new(|| u64::MAX),
            ..limits(u64::MAX, u64::MAX, 100)
        });
        assert_eq!(at_budget.run().stopped, None);

        let abandoned = Sim::new();
        piling_up(&abandoned);
        abandoned.set_limits(Limits {
            abandon: Box::new(|| true),
            ..limits(u64::MAX, u64::MAX, 100)
        });
        let stats = abandoned.run();
        let e = stats.stopped.expect("abandoned");
        assert!(e.abandoned && !e.events_limit, "{e:?}");
        assert!(e.events >= 100 && e.events < 200, "{e:?}");
    }

    /// Finished tasks give their bytes back: after a run whose tasks all end, nothing is held.
    #[test]
    fn finished_tasks_are_no_longer_counted() {
        let sim = Sim::new();
        for _ in 0..50 {
            let s = sim.clone();
            sim.spawn_detached(async move { s.sleep(SimTime::from_secs(1)).await });
        }
        assert!(sim.held_bytes() >= 50 * TASK_OVERHEAD_BYTES);
        sim.run();
        assert_eq!(sim.held_bytes(), 0);
    }

    #[test]
    fn spawns_with_a_maker_run_like_spawns_of_the_future() {
        async fn work(s: Sim, ms: u64, log: Rc<RefCell<Vec<u64>>>) -> u64 {
            s.sleep(SimTime::from_millis(ms)).await;
            log.borrow_mut().push(ms);
            ms * 2
        }
        let sim = Sim::new();
        let log = Rc::new(RefCell::new(Vec::new()));
        let guard_dropped = Rc::new(Cell::new(false));
        struct Guard(Rc<Cell<bool>>);
        impl Drop for Guard {
            fn drop(&mut self) {
                self.0.set(true);
            }
        }
        let (s, l) = (sim.clone(), log.clone());
        let h = sim.spawn_holding_with(Guard(guard_dropped.clone()), move || work(s, 5, l));
        let (s, l) = (sim.clone(), log.clone());
        sim.spawn_detached_holding_with((), move || async move {
            work(s, 3, l).await;
        });
        let out = Rc::new(Cell::new(0));
        let o = out.clone();
        sim.spawn(async move { o.set(h.await) });
        sim.run();
        assert_eq!(*log.borrow(), vec![3, 5]);
        assert_eq!(out.get(), 10);
        assert!(guard_dropped.get());
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
