//! Timer futures: [`Sleep`] and [`Timeout`].

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use super::executor::{Sim, TimerHandle, TimerKind};
use super::time::SimTime;

/// Completes when virtual time reaches its deadline. Created by [`Sim::sleep`] and
/// [`Sim::sleep_until`]. Dropping it cancels its timer.
pub struct Sleep {
    sim: Sim,
    deadline: SimTime,
    kind: TimerKind,
    key: Option<TimerHandle>,
}

impl Sleep {
    pub(super) fn new(sim: Sim, deadline: SimTime, kind: TimerKind) -> Self {
        Sleep {
            sim,
            deadline,
            kind,
            key: None,
        }
    }

    /// The virtual instant this sleep completes at.
    pub fn deadline(&self) -> SimTime {
        self.deadline
    }
}

impl Future for Sleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.sim.now() >= self.deadline {
            if let Some(key) = self.key.take() {
                self.sim.cancel_timer(key);
            }
            return Poll::Ready(());
        }
        match self.key {
            Some(key) => self.sim.update_timer(key, cx.waker()),
            None => {
                let key = self
                    .sim
                    .register_timer(self.deadline, self.kind, cx.waker().clone());
                self.key = Some(key);
            }
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.sim.cancel_timer(key);
        }
    }
}

/// The error of a [`Timeout`] whose time limit passed first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("deadline elapsed")]
pub struct Elapsed;

pin_project! {
    /// Runs a future with a time limit; created by [`Sim::timeout`]. The inner future is polled
    /// first, so a future that completes at exactly the deadline wins. The inner future is
    /// stored inline and pinned structurally (no allocation per timeout).
    pub struct Timeout<F> {
        #[pin]
        fut: F,
        sleep: Sleep,
    }
}

impl<F: Future> Timeout<F> {
    pub(super) fn new(fut: F, sleep: Sleep) -> Self {
        Timeout { fut, sleep }
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(v) = this.fut.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        match Pin::new(this.sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed)),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_test::{assert_pending, assert_ready, task};

    #[test]
    fn sleep_polled_by_hand_wakes_at_its_deadline() {
        let sim = Sim::new();
        let mut sleep = task::spawn(sim.sleep(SimTime::from_millis(400)));
        assert_pending!(sleep.poll());
        assert_eq!(sim.pending_timers(), 1);
        sim.advance_to(SimTime::from_millis(399));
        assert!(!sleep.is_woken());
        assert_pending!(sleep.poll());
        sim.advance_to(SimTime::from_millis(400));
        assert!(sleep.is_woken());
        assert_ready!(sleep.poll());
        assert_eq!(sim.pending_timers(), 0);
    }

    #[test]
    fn dropping_a_sleep_cancels_its_timer() {
        let sim = Sim::new();
        let mut sleep = task::spawn(sim.sleep(SimTime::from_secs(8)));
        assert_pending!(sleep.poll());
        drop(sleep);
        assert_eq!(sim.pending_timers(), 0);
    }

    #[test]
    fn timeout_polled_by_hand_reports_elapsed() {
        let sim = Sim::new();
        let inner = sim.sleep(SimTime::from_millis(9700));
        let mut t = task::spawn(sim.timeout(SimTime::from_secs(8), inner));
        assert_pending!(t.poll());
        sim.advance_to(SimTime::from_secs(8));
        assert!(t.is_woken());
        assert_eq!(assert_ready!(t.poll()), Err(Elapsed));
    }

    #[test]
    fn zero_sleep_is_ready_at_once() {
        let sim = Sim::new();
        let mut s = task::spawn(sim.sleep(SimTime::ZERO));
        assert_ready!(s.poll());
        assert_eq!(sim.pending_timers(), 0);
    }
}
