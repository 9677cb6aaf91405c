//! The history: the typed event record of a run, and its JSONL trace format.

mod event;
mod observer;
mod trace;

pub(crate) use event::Text;
pub use event::{
    Caller, Decision, Event, EventKind, HumanAction, Outcome, ProviderOutcome, RedeliveryReason,
    RefundStatus, TicketStatus,
};
pub(crate) use observer::TraceStream;
pub use observer::{Keep, Observer};
pub(crate) use trace::clock_time;
pub use trace::{read_trace, write_event, write_trace, TraceError};

/// All events of one run, in the order they happened (time, then sequence).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    /// The events.
    pub events: Vec<Event>,
}

impl History {
    /// Events of one ticket, in order.
    pub fn ticket(&self, ticket: u64) -> impl Iterator<Item = &Event> {
        self.events.iter().filter(move |e| e.ticket == Some(ticket))
    }
}

impl Observer for History {
    fn event(&mut self, e: Event) {
        self.events.push(e);
    }
}
