//! `run --otlp FILE`: a run as OpenTelemetry traces in OTLP/JSON, written the way real
//! instrumentation of the incident's systems would write them, with the semantic conventions'
//! attributes only (none of refundsim's). What each span and attribute is, and how to open the
//! file: `docs/otlp-export.md`.
//!
//! The file is one `ExportTraceServiceRequest` (OTLP specification, "JSON Protobuf Encoding")
//! with two `resourceSpans`:
//!
//! - `service.name` = `support-agent`: per tool call an `execute_tool TOOL` span, and per
//!   decision after a failed result a `chat` span (GenAI semantic conventions; `agent.rs`);
//! - `service.name` = `refunds-service`: per call it handled a `POST /refunds` SERVER span,
//!   child of the tool span, and per request to Stripe a `POST` CLIENT span, child of that
//!   (HTTP semantic conventions; `service.rs`).
//!
//! One trace per ticket, its id derived from the scenario, the seed and the ticket (`ids.rs`).
//! Times are the scenario's `clock_origin` (or the Unix epoch) plus virtual time. Arguments,
//! results and headers are each opt-in, as in real instrumentations ([`OtlpCapture`]).
//!
//! It streams, like `--perfetto`: a span is written when it ends, so memory holds the open
//! spans only; the service's spans wait in an anonymous temporary file until the agent's are
//! all written, then follow them. The bytes are a pure function of the run's events and the
//! options.

mod agent;
mod arguments;
mod context;
mod ids;
mod options;
pub mod semconv;
mod service;
#[cfg(test)]
mod tests;
mod ticket;
mod wire;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Seek, Write};

use crate::history::Event;
use crate::scenario::Scenario;
use context::Context;
use ticket::{Side, TicketSpans};
use wire::{resource_spans_head, RESOURCE_SPANS_TAIL};

pub use arguments::ToolArguments;
pub use context::origin_unix_ns;
pub use options::OtlpCapture;
pub(crate) use options::OtlpOptions;

/// `service.name` of the agent's spans.
pub(crate) const AGENT_SERVICE: &str = "support-agent";
/// `service.name` of the refunds service's spans.
pub(crate) const REFUNDS_SERVICE: &str = "refunds-service";
/// The instrumentation scope's name on both resources: what produced the spans.
pub(crate) const SCOPE: &str = "refundsim";

/// What the exporter keeps per open ticket (its open spans and their ids), bytes, as the run
/// budget counts it while running.
pub(crate) const OTLP_BYTES_PER_OPEN_TICKET: u64 = 1024;

/// Streams a run's events as an OTLP/JSON `ExportTraceServiceRequest` to a writer. The first
/// I/O error stops the writing and is kept for [`OtlpStream::finish`].
pub(crate) struct OtlpStream<W: Write> {
    out: W,
    /// The refunds service's spans, until the agent's are all written.
    spool: BufWriter<File>,
    error: Option<io::Error>,
    ctx: Context,
    tickets: BTreeMap<u64, TicketSpans>,
    /// Spans written so far, the agent's and the service's.
    pub spans: (u64, u64),
}

impl<W: Write> OtlpStream<W> {
    /// A stream to `out` for a run of `sc` under `seed`; writes the document's head and the
    /// agent's resource.
    ///
    /// # Errors
    /// The temporary file that holds the service's spans cannot be created.
    pub(crate) fn new(out: W, sc: &Scenario, seed: u64, options: &OtlpOptions) -> io::Result<Self> {
        let spool = BufWriter::with_capacity(1 << 16, tempfile::tempfile()?);
        let mut s = OtlpStream {
            out,
            spool,
            error: None,
            ctx: Context::new(sc, seed, options),
            tickets: BTreeMap::new(),
            spans: (0, 0),
        };
        let head = format!(
            "{{\"resourceSpans\":[\n{}",
            resource_spans_head(AGENT_SERVICE, SCOPE)
        );
        s.raw(head.as_bytes());
        Ok(s)
    }

    /// Takes in one event of the run, in order.
    pub(crate) fn event(&mut self, e: &Event) {
        let Some(ticket) = e.ticket else {
            return;
        };
        let ctx = &self.ctx;
        let spans = self
            .tickets
            .entry(ticket)
            .or_insert_with(|| TicketSpans::new(ctx, ticket));
        if let Some((side, span)) = spans.record(ctx, e) {
            self.write_span(side, &span);
        }
    }

    /// Bytes kept for the tickets still open: [`OTLP_BYTES_PER_OPEN_TICKET`] each.
    pub(crate) fn held_bytes(&self) -> u64 {
        self.tickets.len() as u64 * OTLP_BYTES_PER_OPEN_TICKET
    }

    /// Ticket `id` is closed: its spans still open never end, and are dropped.
    pub(crate) fn ticket_closed(&mut self, id: u64) {
        self.tickets.remove(&id);
    }

    /// Closes the agent's resource, appends the service's, closes the document and flushes;
    /// returns the writer, or the first I/O error. Spans still open are not written.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        self.tickets.clear();
        self.raw(RESOURCE_SPANS_TAIL.as_bytes());
        self.raw(b",\n");
        self.raw(resource_spans_head(REFUNDS_SERVICE, SCOPE).as_bytes());
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut spool = self.spool.into_inner().map_err(|e| e.into_error())?;
        spool.rewind()?;
        io::copy(&mut spool, &mut self.out)?;
        self.out.write_all(RESOURCE_SPANS_TAIL.as_bytes())?;
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn write_span(&mut self, side: Side, span: &wire::Span) {
        if self.error.is_some() {
            return;
        }
        let (count, out): (&mut u64, &mut dyn Write) = match side {
            Side::Agent => (&mut self.spans.0, &mut self.out),
            Side::Service => (&mut self.spans.1, &mut self.spool),
        };
        let sep: &[u8] = if *count == 0 { b"" } else { b",\n" };
        let written = out
            .write_all(sep)
            .and_then(|()| serde_json::to_writer(&mut *out, span).map_err(io::Error::from));
        match written {
            Ok(()) => *count += 1,
            Err(e) => self.error = Some(e),
        }
    }

    fn raw(&mut self, bytes: &[u8]) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.out.write_all(bytes) {
            self.error = Some(e);
        }
    }
}
