//! The caller's side of one refunds-service request, shared with the service's task: whether
//! the caller gave up, and what it cancelled when it did (DESIGN §1b, cancellation per layer).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use crate::scenario::Cancellation;

/// Shared between the layer that waits for a request and the service task that runs it.
#[derive(Debug, Default)]
pub(crate) struct CallerState {
    gone: Cell<bool>,
    cancel: Cell<Cancellation>,
    /// The first task waiting in [`CallerState::abort_signal`] (usually the only one), woken
    /// when the caller aborts; inline, so a request's wait allocates nothing.
    first_waiter: RefCell<Option<Waker>>,
    /// The tasks that waited after the first, in the order they did.
    more_waiters: RefCell<Vec<Waker>>,
}

impl CallerState {
    /// The caller stopped waiting, cancelling with `mode`. With `abort_in_flight` a Stripe call
    /// in flight is told at once (its connection closes); the provider is not.
    pub(crate) fn give_up(&self, mode: Cancellation) {
        self.gone.set(true);
        self.cancel.set(self.cancel.get().max(mode));
        if mode == Cancellation::AbortInFlight {
            let first = self.first_waiter.borrow_mut().take();
            let more = std::mem::take(&mut *self.more_waiters.borrow_mut());
            for w in first.into_iter().chain(more) {
                w.wake();
            }
        }
    }

    /// Whether the caller stopped waiting (the answer will be late).
    pub(crate) fn gone(&self) -> bool {
        self.gone.get()
    }

    /// Whether work that has not reached Stripe should be dropped.
    pub(crate) fn drops_queued(&self) -> bool {
        self.gone.get() && self.cancel.get() >= Cancellation::QueuedOnly
    }

    /// Whether a Stripe call in flight has been aborted.
    pub(crate) fn aborted(&self) -> bool {
        self.gone.get() && self.cancel.get() == Cancellation::AbortInFlight
    }

    /// Completes when the caller aborts in-flight work (at once if it already has; never,
    /// otherwise).
    pub(crate) fn abort_signal(&self) -> AbortSignal<'_> {
        AbortSignal { caller: self }
    }
}

/// The future of [`CallerState::abort_signal`].
#[derive(Debug)]
pub(crate) struct AbortSignal<'a> {
    caller: &'a CallerState,
}

impl Future for AbortSignal<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.caller.aborted() {
            return Poll::Ready(());
        }
        let mut first = self.caller.first_waiter.borrow_mut();
        match first.as_ref() {
            None => *first = Some(cx.waker().clone()),
            Some(w) if w.will_wake(cx.waker()) => {}
            Some(_) => {
                let mut more = self.caller.more_waiters.borrow_mut();
                if !more.iter().any(|w| w.will_wake(cx.waker())) {
                    more.push(cx.waker().clone());
                }
            }
        }
        Poll::Pending
    }
}
