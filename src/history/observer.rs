//! Consumers of the event stream: a run hands every event, as it happens, to one [`Observer`]
//! (metrics, invariants, the trace writer, a story filter), and tells it when a ticket is
//! closed — nothing in the model can touch that ticket any more — so the observer can fold the
//! ticket's facts into its totals and drop them. Memory then stays flat in the horizon.

use std::io::Write;
use std::time::SystemTime;

use super::trace::write_event;
use super::Event;

/// Receives a run's events in the order they happen (time, then sequence).
pub trait Observer {
    /// One event, at the current virtual instant.
    fn event(&mut self, e: Event);
    /// Ticket `id` is closed: no task works on it any more, so no later event names it.
    /// Observers drop what they kept about it. Called at most once per ticket.
    fn ticket_closed(&mut self, _id: u64) {}
    /// Bytes this observer holds now that grow with the run (what it keeps per open ticket,
    /// kept events), for the run budget enforced while running
    /// ([`crate::scenario::RunWatch`]); 0 by default.
    fn held_bytes(&self) -> u64 {
        0
    }
}

/// Which events a run keeps in memory (in [`super::History`]) besides its online metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Keep {
    /// None: memory stays flat in the horizon (`run`, `check`, `explore`).
    #[default]
    Nothing,
    /// Every event (tests and library users that want the whole history; memory grows with
    /// the horizon, about 2.6 KB per ticket).
    All,
    /// The events of one ticket (a `--ticket` story, produced by re-running the same seed).
    Ticket(u64),
}

impl Keep {
    /// Whether `e` is kept.
    pub fn wants(self, e: &Event) -> bool {
        match self {
            Keep::Nothing => false,
            Keep::All => true,
            Keep::Ticket(t) => e.ticket == Some(t),
        }
    }
}

/// Streams events as JSONL lines (the trace format) to a writer as they happen. The first I/O
/// error stops the writing and is kept for [`TraceStream::finish`].
pub(crate) struct TraceStream<W: Write> {
    out: W,
    origin: Option<SystemTime>,
    error: Option<std::io::Error>,
    /// Lines written.
    pub lines: u64,
}

impl<W: Write> TraceStream<W> {
    /// A stream to `out`, formatting wall-clock times from `origin` (midnight when `None`).
    pub(crate) fn new(out: W, origin: Option<SystemTime>) -> Self {
        TraceStream {
            out,
            origin,
            error: None,
            lines: 0,
        }
    }

    /// Writes one event (after an earlier error: nothing).
    pub(crate) fn write(&mut self, e: &Event) {
        if self.error.is_some() {
            return;
        }
        match write_event(&mut self.out, e, self.origin) {
            Ok(()) => self.lines += 1,
            Err(err) => self.error = Some(err),
        }
    }

    /// Flushes and returns the writer, or the first I/O error.
    pub(crate) fn finish(mut self) -> std::io::Result<W> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }
}
