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
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    /// A future polled by hand with a waker that remembers whether it was woken.
    struct Polled<F> {
        fut: Pin<Box<F>>,
        woken: Arc<Flag>,
    }

    #[derive(Default)]
    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    impl<F: Future> Polled<F> {
        fn new(fut: F) -> Self {
            Polled {
                fut: Box::pin(fut),
                woken: Arc::default(),
            }
        }
        fn poll(&mut self) -> Poll<F::Output> {
            self.woken.0.store(false, Ordering::SeqCst);
            let waker = Waker::from(self.woken.clone());
            self.fut.as_mut().poll(&mut Context::from_waker(&waker))
        }
        fn is_woken(&self) -> bool {
            self.woken.0.load(Ordering::SeqCst)
        }
    }

    #[test]
    fn sleep_polled_by_hand_wakes_at_its_deadline() {
        let sim = Sim::new();
        let mut sleep = Polled::new(sim.sleep(SimTime::from_millis(400)));
        assert!(sleep.poll().is_pending());
        assert_eq!(sim.pending_timers(), 1);
        sim.advance_to(SimTime::from_millis(399));
        assert!(!sleep.is_woken());
        assert!(sleep.poll().is_pending());
        sim.advance_to(SimTime::from_millis(400));
        assert!(sleep.is_woken());
        assert!(sleep.poll().is_ready());
        assert_eq!(sim.pending_timers(), 0);
    }

    #[test]
    fn dropping_a_sleep_cancels_its_timer() {
        let sim = Sim::new();
        let mut sleep = Polled::new(sim.sleep(SimTime::from_secs(8)));
        assert!(sleep.poll().is_pending());
        drop(sleep);
        assert_eq!(sim.pending_timers(), 0);
    }

    #[test]
    fn timeout_polled_by_hand_reports_elapsed() {
        let sim = Sim::new();
        let inner = sim.sleep(SimTime::from_millis(9700));
        let mut t = Polled::new(sim.timeout(SimTime::from_secs(8), inner));
        assert!(t.poll().is_pending());
        sim.advance_to(SimTime::from_secs(8));
        assert!(t.is_woken());
        assert_eq!(t.poll(), Poll::Ready(Err(Elapsed)));
    }

    #[test]
    fn zero_sleep_is_ready_at_once() {
        let sim = Sim::new();
        let mut s = Polled::new(sim.sleep(SimTime::ZERO));
        assert!(s.poll().is_ready());
        assert_eq!(sim.pending_timers(), 0);
    }
}
