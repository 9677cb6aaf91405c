//! The refunds service's connection pool to Stripe: `size` connections handed out in strict
//! FIFO order (an M/G/c queue's waiting line, DESIGN §2).
//!
//! A released connection goes straight to the first waiter, if any, at the instant of the
//! release; a new request only takes a free connection when nobody waits. This is the fairness
//! of `tokio::sync::Semaphore` (which the pool used to be) and of common connection pools
//! (HikariCP's hand-off queue, r2d2's FIFO waiters). Waiters are either tasks (a ticket's
//! request, which awaits [`Pool::acquire`]) or callbacks ([`PoolCallback`], used by background
//! load, which costs no task per request).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// Told when a connection it waits for is handed to it (see [`Pool::wait_with_callback`]).
pub(crate) trait PoolCallback {
    /// The waiter at place `place` in line (as [`Pool::wait_with_callback`] returned it) now
    /// holds a connection; it returns it with [`Pool::release`].
    fn granted(&self, place: u64);
}

/// Who waits for a connection.
enum Waiter {
    /// A task awaiting [`Acquire`]; its waker once it has been polled.
    Task(Option<Waker>),
    /// A callback, told with its place in line.
    Call(Rc<dyn PoolCallback>),
}

struct State {
    free: u32,
    /// Waiting line in arrival order, by ticket number.
    waiting: VecDeque<(u64, Waiter)>,
    /// Task waiters handed a connection that have not yet been polled to take it.
    granted: Vec<u64>,
    next_ticket: u64,
}

/// A FIFO pool of `size` connections. Single-threaded: it lives in one simulation.
pub(crate) struct Pool {
    state: RefCell<State>,
    /// Connections held now.
    in_use: Cell<u32>,
}

/// A held connection; dropping it returns the connection to the pool (to the first waiter).
#[must_use = "dropping a permit returns its connection at once"]
pub(crate) struct Permit {
    pool: Rc<Pool>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.pool.release();
    }
}

impl Pool {
    /// A pool of `size` free connections.
    pub(crate) fn new(size: u32) -> Pool {
        Pool {
            state: RefCell::new(State {
                free: size,
                waiting: VecDeque::new(),
                granted: Vec::new(),
                next_ticket: 0,
            }),
            in_use: Cell::new(0),
        }
    }

    /// Requests waiting in the line now (tasks and background requests).
    pub(crate) fn waiting(&self) -> usize {
        self.state.borrow().waiting.len()
    }

    /// Connections held now.
    #[cfg(test)]
    pub(crate) fn in_use(&self) -> u32 {
        self.in_use.get()
    }

    /// Waits in line for a connection. Dropping the future leaves the line (or, if it was
    /// handed a connection it had not yet taken, returns that connection to the next waiter).
    pub(crate) fn acquire(self: &Rc<Self>) -> Acquire {
        Acquire {
            pool: self.clone(),
            ticket: None,
            done: false,
        }
    }

    /// Takes a free connection now if nobody waits: `Ok(())` if taken (return it with
    /// [`Pool::release`]). Otherwise joins the line as `callback` and returns `Err(place in
    /// line)`: the place `callback` is told when a connection is handed to it, and the one to
    /// give [`Pool::leave`].
    pub(crate) fn wait_with_callback(&self, callback: Rc<dyn PoolCallback>) -> Result<(), u64> {
        self.take_or_join(|| Waiter::Call(callback))
    }

    /// Takes a free connection if nobody waits (`Ok`), else puts `waiter()` at the back of the
    /// line and returns its place (`Err`). The waiter is made only when it joins the line.
    fn take_or_join(&self, waiter: impl FnOnce() -> Waiter) -> Result<(), u64> {
        let mut s = self.state.borrow_mut();
        if s.free > 0 && s.waiting.is_empty() {
            s.free -= 1;
            self.in_use.set(self.in_use.get() + 1);
            return Ok(());
        }
        let ticket = s.next_ticket;
        s.next_ticket += 1;
        s.waiting.push_back((ticket, waiter()));
        Err(ticket)
    }

    /// Leaves the line (e.g. after an acquire timeout): `true` if `ticket` was still waiting.
    pub(crate) fn leave(&self, ticket: u64) -> bool {
        let mut s = self.state.borrow_mut();
        let Some(i) = s.waiting.iter().position(|(t, _)| *t == ticket) else {
            return false;
        };
        let removed = s.waiting.remove(i);
        drop(s);
        // Dropped outside the borrow: a waker's or callback's drop may run arbitrary code.
        drop(removed);
        true
    }

    /// Returns a held connection: to the first waiter if there is one, else to the free set.
    pub(crate) fn release(&self) {
        self.in_use.set(self.in_use.get() - 1);
        let mut s = self.state.borrow_mut();
        match s.waiting.pop_front() {
            None => s.free += 1,
            Some((ticket, waiter)) => {
                self.in_use.set(self.in_use.get() + 1);
                match waiter {
                    Waiter::Task(waker) => {
                        s.granted.push(ticket);
                        drop(s);
                        if let Some(w) = waker {
                            w.wake();
                        }
                    }
                    Waiter::Call(callback) => {
                        drop(s);
                        callback.granted(ticket);
                    }
                }
            }
        }
    }
}

/// The future of [`Pool::acquire`]: a [`Permit`] once a connection is handed to it.
pub(crate) struct Acquire {
    pool: Rc<Pool>,
    /// Place in line once it waits.
    ticket: Option<u64>,
    done: bool,
}

impl Future for Acquire {
    type Output = Permit;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Permit> {
        let this = &mut *self;
        let Some(ticket) = this.ticket else {
            return match this
                .pool
                .take_or_join(|| Waiter::Task(Some(cx.waker().clone())))
            {
                Ok(()) => {
                    this.done = true;
                    Poll::Ready(Permit {
                        pool: this.pool.clone(),
                    })
                }
                Err(ticket) => {
                    this.ticket = Some(ticket);
                    Poll::Pending
                }
            };
        };
        let mut s = this.pool.state.borrow_mut();
        if let Some(i) = s.granted.iter().position(|&t| t == ticket) {
            s.granted.swap_remove(i);
            drop(s);
            this.done = true;
            return Poll::Ready(Permit {
                pool: this.pool.clone(),
            });
        }
        if let Some((_, Waiter::Task(slot))) = s.waiting.iter_mut().find(|(t, _)| *t == ticket) {
            match slot {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => *slot = Some(cx.waker().clone()),
            }
        }
        Poll::Pending
    }
}

impl Drop for Acquire {
    fn drop(&mut self) {
        let Some(ticket) = self.ticket else { return };
        if self.done {
            return;
        }
        let mut s = self.pool.state.borrow_mut();
        if let Some(i) = s.granted.iter().position(|&t| t == ticket) {
            // Handed a connection it never took: pass it on.
            s.granted.swap_remove(i);
            drop(s);
            self.pool.release();
        } else {
            drop(s);
            self.pool.leave(ticket);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// Records the places in line it is granted.
    #[derive(Default)]
    struct Log(RefCell<Vec<u64>>);
    impl PoolCallback for Log {
        fn granted(&self, place: u64) {
            self.0.borrow_mut().push(place);
        }
    }

    fn noop_cx() -> Context<'static> {
        Context::from_waker(Waker::noop())
    }

    #[test]
    fn releases_go_to_waiters_in_arrival_order_before_new_requests() {
        let pool = Rc::new(Pool::new(1));
        let log = Rc::new(Log::default());
        assert_eq!(pool.wait_with_callback(log.clone()), Ok(()));
        let mut task = Box::pin(pool.acquire());
        assert!(task.as_mut().poll(&mut noop_cx()).is_pending());
        assert_eq!(pool.wait_with_callback(log.clone()), Err(1));
        assert_eq!(pool.in_use(), 1);
        // The holder returns its connection: the task (first in line) gets it, not place 1.
        pool.release();
        let Poll::Ready(permit) = task.as_mut().poll(&mut noop_cx()) else {
            panic!("the first waiter was not served")
        };
        assert!(log.0.borrow().is_empty());
        // A newcomer queues behind place 1 even though the line moves.
        let mut late = Box::pin(pool.acquire());
        assert!(late.as_mut().poll(&mut noop_cx()).is_pending());
        drop(permit);
        assert_eq!(*log.0.borrow(), vec![1]);
        assert!(late.as_mut().poll(&mut noop_cx()).is_pending());
        pool.release();
        assert!(late.as_mut().poll(&mut noop_cx()).is_ready());
    }

    #[test]
    fn a_waiter_that_leaves_or_drops_a_granted_connection_passes_it_on() {
        let pool = Rc::new(Pool::new(1));
        let log = Rc::new(Log::default());
        assert_eq!(pool.wait_with_callback(log.clone()), Ok(()));
        let mut task = Box::pin(pool.acquire());
        assert!(task.as_mut().poll(&mut noop_cx()).is_pending());
        let place = pool.wait_with_callback(log.clone()).unwrap_err();
        assert_eq!(pool.wait_with_callback(log.clone()), Err(place + 1));
        assert!(pool.leave(place));
        assert!(!pool.leave(place));
        pool.release(); // to the task, which never takes it
        drop(task); // so it goes on to the last waiter (the one before it left)
        assert_eq!(*log.0.borrow(), vec![place + 1]);
        assert_eq!(pool.in_use(), 1);
        pool.release();
        assert_eq!(pool.in_use(), 0);
        assert_eq!(pool.wait_with_callback(log.clone()), Ok(()));
    }
}
