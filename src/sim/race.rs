//! [`race`]: the first of two futures to complete, the other dropped.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

/// Which of two raced futures completed first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Either<A, B> {
    /// The first future's output.
    Left(A),
    /// The second future's output.
    Right(B),
}

/// Completes with the output of whichever of `a` and `b` completes first; `a` is polled first,
/// so when both are ready at the same poll `a` wins. The other future is dropped. Both futures
/// are stored inline (no allocation).
pub fn race<A: Future, B: Future>(a: A, b: B) -> Race<A, B> {
    Race { a, b }
}

pin_project! {
    /// The future of [`race`].
    pub struct Race<A, B> {
        #[pin]
        a: A,
        #[pin]
        b: B,
    }
}

impl<A: Future, B: Future> Future for Race<A, B> {
    type Output = Either<A::Output, B::Output>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(v) = this.a.poll(cx) {
            return Poll::Ready(Either::Left(v));
        }
        match this.b.poll(cx) {
            Poll::Ready(v) => Poll::Ready(Either::Right(v)),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{Sim, SimTime};
    use std::cell::Cell;
    use std::rc::Rc;

    #[test]
    fn the_earlier_future_wins_and_ties_go_to_the_first() {
        let sim = Sim::new();
        let out = Rc::new(Cell::new((0, 0)));
        let (s, o) = (sim.clone(), out.clone());
        sim.spawn(async move {
            let first = match race(
                s.sleep(SimTime::from_secs(2)),
                s.sleep(SimTime::from_secs(1)),
            )
            .await
            {
                Either::Left(()) => 1,
                Either::Right(()) => 2,
            };
            let tie = match race(
                s.sleep(SimTime::from_secs(1)),
                s.sleep(SimTime::from_secs(1)),
            )
            .await
            {
                Either::Left(()) => 1,
                Either::Right(()) => 2,
            };
            o.set((first, tie));
        });
        sim.run();
        assert_eq!(out.get(), (2, 1));
        assert_eq!(sim.pending_timers(), 0, "the loser's timer is dropped");
    }
}
