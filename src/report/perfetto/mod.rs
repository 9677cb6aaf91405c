//! `run --perfetto FILE`: a run as a Chrome Trace Event JSON file (the "JSON Object Format",
//! `{"traceEvents": [...], "displayTimeUnit": "ms"}`) that <https://ui.perfetto.dev> and
//! `chrome://tracing` open. What each track, slice and arrow means: `docs/perfetto.md`.
//!
//! - Process `pool`: a track per connection (numbered by the exporter, see `pool.rs`) with a
//!   slice per hold.
//! - Process `tickets`: a track per ticket (more when its spans overlap, see `layout.rs`) with
//!   its tool calls, executor timeouts, refunds-service requests, pool waits, Stripe calls and
//!   point events; arrows from each executor timeout to the retry and to the late response.
//! - Process `reconciliation`: the reconciliation job's alerts, when it raises any.
//!
//! It is an [`crate::history::Observer`]-style consumer of the event stream: pool holds and
//! alerts are written as they happen, a ticket's events when the ticket closes, so memory holds
//! the open tickets only. Timestamps are virtual time since the scenario's start, in µs with
//! the ns as three fixed decimals; the file is a pure function of the run's events.

mod json;
mod layout;
mod pool;
#[cfg(test)]
mod tests;
mod ticket;

use std::collections::BTreeMap;
use std::io::Write;

use crate::history::{Event, EventKind};
use json::{metadata, Args, Line};
use layout::{lay_out, Ids};
use pool::PoolTracks;
use ticket::TicketEvents;

/// Process id of the pool's tracks.
const POOL_PID: u32 = 1;
/// Process id of the tickets' tracks.
const TICKETS_PID: u32 = 2;
/// Process id of the reconciliation job's track.
const RECONCILIATION_PID: u32 = 3;
/// The first thread id (above every process id, so no track is taken for a process's main
/// thread).
const FIRST_TID: u32 = 10;

/// What the exporter keeps per open ticket until it closes (its tool calls, requests, marks),
/// bytes, as the run budget counts it while running.
pub(crate) const PERFETTO_BYTES_PER_OPEN_TICKET: u64 = 6144;

/// Streams a run's events as Chrome Trace Event JSON to a writer. The first I/O error stops
/// the writing and is kept for [`PerfettoStream::finish`].
pub(crate) struct PerfettoStream<W: Write> {
    out: W,
    error: Option<std::io::Error>,
    ids: Ids,
    pool: PoolTracks,
    tickets: BTreeMap<u64, TicketEvents>,
    next_ordinal: u64,
    alerts_tid: Option<u32>,
    last_ns: u64,
    /// Trace events written so far (metadata included).
    pub events: u64,
    /// The scenario's effect when it is not a refund: slice names and arguments speak of it.
    effect: Option<crate::scenario::Effect>,
}

impl<W: Write> PerfettoStream<W> {
    /// A stream to `out` for a run of scenario `scenario` under `seed` (both recorded in the
    /// file's `otherData`); writes the file's head and the processes' names.
    pub(crate) fn new(out: W, scenario: &str, seed: u64) -> Self {
        let mut s = PerfettoStream {
            out,
            error: None,
            ids: Ids {
                next_tid: FIRST_TID,
                next_flow: 0,
            },
            pool: PoolTracks::default(),
            tickets: BTreeMap::new(),
            next_ordinal: 0,
            alerts_tid: None,
            last_ns: 0,
            events: 0,
            effect: None,
        };
        let head = format!(
            "{{\"otherData\":{{\"scenario\":{},\"seed\":\"{seed}\",\"clock\":\"virtual time since \
             the scenario's start\"}},\"traceEvents\":[\n",
            serde_json::to_string(scenario).unwrap_or_else(|_| "\"\"".into())
        );
        s.raw(head.as_bytes());
        let mut lines = Vec::new();
        for (pid, name) in [(POOL_PID, "pool"), (TICKETS_PID, "tickets")] {
            lines.push(process_name(pid, name));
            lines.push(metadata(
                pid,
                None,
                "process_sort_index",
                &Args::default().u("sort_index", u64::from(pid)),
            ));
        }
        s.write_lines(lines);
        s
    }

    /// Takes in one event of the run, in order.
    pub(crate) fn event(&mut self, e: &Event) {
        let t = e.t_ns.as_nanos();
        self.last_ns = self.last_ns.max(t);
        let mut lines = Vec::new();
        let connection = match &e.kind {
            EventKind::PoolAcquire { .. } => Some(self.pool.acquire(e, &mut self.ids, &mut lines)),
            EventKind::PoolRelease => {
                self.pool.release(e.call, t, &mut lines);
                None
            }
            EventKind::ReconciliationAlert { tickets, .. } => {
                self.alert(t, tickets, &mut lines);
                None
            }
            _ => None,
        };
        if let Some(id) = e.ticket {
            let ordinal = &mut self.next_ordinal;
            self.tickets
                .entry(id)
                .or_insert_with(|| {
                    *ordinal += 1;
                    TicketEvents::new(id, *ordinal - 1)
                })
                .record(e, connection);
        }
        self.write_lines(lines);
    }

    /// Bytes kept for the tickets still open: [`PERFETTO_BYTES_PER_OPEN_TICKET`] each.
    pub(crate) fn held_bytes(&self) -> u64 {
        self.tickets.len() as u64 * PERFETTO_BYTES_PER_OPEN_TICKET
    }

    /// Ticket `id` is closed: its tracks are laid out and written, and forgotten.
    pub(crate) fn ticket_closed(&mut self, id: u64) {
        if let Some(t) = self.tickets.remove(&id) {
            self.write_ticket(t);
        }
    }

    /// Writes the tickets still open (by id), ends the connections still held, closes the
    /// JSON document and flushes; returns the writer, or the first I/O error.
    pub(crate) fn finish(mut self) -> std::io::Result<W> {
        for (_, t) in std::mem::take(&mut self.tickets) {
            self.write_ticket(t);
        }
        let mut lines = Vec::new();
        self.pool.release_all(self.last_ns, &mut lines);
        self.write_lines(lines);
        self.raw(b"\n],\"displayTimeUnit\":\"ms\"}\n");
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }

    fn write_ticket(&mut self, t: TicketEvents) {
        let laid = lay_out(t, &mut self.ids);
        self.write_lines(laid.metadata);
        self.write_lines(laid.events);
    }

    /// A reconciliation alert, on the `reconciliation` process's one track.
    fn alert(&mut self, t: u64, tickets: &[u64], lines: &mut Vec<String>) {
        let tid = match self.alerts_tid {
            Some(tid) => tid,
            None => {
                let tid = self.ids.tid();
                self.alerts_tid = Some(tid);
                lines.push(process_name(RECONCILIATION_PID, "reconciliation"));
                lines.push(metadata(
                    RECONCILIATION_PID,
                    None,
                    "process_sort_index",
                    &Args::default().u("sort_index", u64::from(RECONCILIATION_PID)),
                ));
                let name = Args::default().s("name", "alerts");
                lines.push(metadata(
                    RECONCILIATION_PID,
                    Some(tid),
                    "thread_name",
                    &name,
                ));
                tid
            }
        };
        let ids: Vec<String> = tickets.iter().map(u64::to_string).collect();
        let line = Line::new('i', RECONCILIATION_PID, tid)
            .ts(t)
            .name(&format!("alert: {} duplicated tickets", tickets.len()))
            .cat("reconciliation")
            .raw("s", "\"t\"")
            .args(&Args::default().s("tickets", ids.join(" ")))
            .done();
        lines.push(line);
    }

    /// Slices and arguments in `effect`'s words from now on
    /// ([`Effect::say`](crate::scenario::Effect::say)); a refund changes nothing.
    pub(crate) fn with_effect(mut self, effect: crate::scenario::Effect) -> Self {
        self.effect = Some(effect).filter(|e| !e.is_refund());
        self
    }

    fn write_lines(&mut self, lines: Vec<String>) {
        for l in lines {
            let l = match &self.effect {
                Some(e) => e.say(&l),
                None => l,
            };
            let sep: &[u8] = if self.events == 0 { b"" } else { b",\n" };
            self.raw(sep);
            self.raw(l.as_bytes());
            self.events += 1;
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

fn process_name(pid: u32, name: &str) -> String {
    metadata(pid, None, "process_name", &Args::default().s("name", name))
}
