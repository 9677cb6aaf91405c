//! The caller's side of one refunds-service request, shared with the service's task: whether
//! the caller gave up, and what it cancelled when it did (DESIGN §1b, cancellation per layer).

use std::cell::Cell;

use tokio::sync::Notify;

use crate::scenario::Cancellation;

/// Shared between the layer that waits for a request and the service task that runs it.
#[derive(Debug, Default)]
pub struct CallerState {
    gone: Cell<bool>,
    cancel: Cell<Cancellation>,
    abort: Notify,
}

impl CallerState {
    /// The caller stopped waiting, cancelling with `mode`. With `abort_in_flight` a Stripe call
    /// in flight is told at once (its connection closes); the provider is not.
    pub fn give_up(&self, mode: Cancellation) {
        self.gone.set(true);
        self.cancel.set(self.cancel.get().max(mode));
        if mode == Cancellation::AbortInFlight {
            self.abort.notify_waiters();
        }
    }

    /// Whether the caller stopped waiting (the answer will be late).
    pub fn gone(&self) -> bool {
        self.gone.get()
    }

    /// Whether work that has not reached Stripe should be dropped.
    pub fn drops_queued(&self) -> bool {
        self.gone.get() && self.cancel.get() >= Cancellation::QueuedOnly
    }

    /// Whether a Stripe call in flight has been aborted.
    pub fn aborted(&self) -> bool {
        self.gone.get() && self.cancel.get() == Cancellation::AbortInFlight
    }

    /// Completes when the caller aborts in-flight work (never, otherwise). Check
    /// [`CallerState::aborted`] first: an abort before this is created is not seen.
    pub fn abort_signal(&self) -> tokio::sync::futures::Notified<'_> {
        self.abort.notified()
    }
}
