//! The files `refundsim run` streams a run's events to as they happen (`--trace`, `--perfetto`,
//! `--otlp`, `--stripe-list`), as one [`Sink`] handed to [`crate::run::run_recorded`].

use std::io::Write;

use super::otlp::OtlpStream;
use super::perfetto::PerfettoStream;
use super::stripe_list::StripeListStream;
use crate::history::{Event, TraceStream};
use crate::run::Sink;

/// A trace being streamed while a run goes on: JSONL lines to any writer.
pub(crate) type TraceSink = TraceStream<Box<dyn Write>>;

/// A Chrome Trace Event JSON file (`--perfetto`) being streamed while a run goes on.
pub(crate) type PerfettoSink = PerfettoStream<Box<dyn Write>>;

/// OpenTelemetry traces in OTLP/JSON (`--otlp`) being streamed while a run goes on.
pub(crate) type OtlpSink = OtlpStream<Box<dyn Write>>;

/// Stripe's list of the run's refunds (`--stripe-list`), written when the run ends.
pub(crate) type StripeListSink = StripeListStream<Box<dyn Write>>;

/// The outputs a run streams its events to as they happen; each is optional. After the run,
/// check each stream's `finish` ([`TraceStream::finish`], [`PerfettoStream::finish`],
/// [`OtlpStream::finish`], [`StripeListStream::finish`]) for I/O errors.
#[derive(Default)]
pub(crate) struct Sinks {
    /// The JSONL trace (`--trace`).
    pub trace: Option<TraceSink>,
    /// The Chrome Trace Event JSON (`--perfetto`).
    pub perfetto: Option<PerfettoSink>,
    /// The OTLP/JSON traces (`--otlp`).
    pub otlp: Option<OtlpSink>,
    /// Stripe's list of refunds (`--stripe-list`).
    pub stripe_list: Option<StripeListSink>,
}

impl Sink for Sinks {
    fn event(&mut self, e: &Event) {
        if let Some(t) = &mut self.trace {
            t.write(e);
        }
        if let Some(p) = &mut self.perfetto {
            p.event(e);
        }
        if let Some(o) = &mut self.otlp {
            o.event(e);
        }
        if let Some(l) = &mut self.stripe_list {
            l.event(e);
        }
    }

    fn ticket_closed(&mut self, id: u64) {
        if let Some(p) = &mut self.perfetto {
            p.ticket_closed(id);
        }
        if let Some(o) = &mut self.otlp {
            o.ticket_closed(id);
        }
    }

    /// The Perfetto and OTLP exporters' open tickets and the Stripe list's refunds.
    fn held_bytes(&self) -> u64 {
        let perfetto = self.perfetto.as_ref().map_or(0, |p| p.held_bytes());
        let otlp = self.otlp.as_ref().map_or(0, |o| o.held_bytes());
        let list = self.stripe_list.as_ref().map_or(0, |l| l.held_bytes());
        perfetto + otlp + list
    }
}
