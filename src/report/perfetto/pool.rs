//! The connection pool as tracks, one per connection.
//!
//! Pool events do not say which connection served a request, so the exporter numbers them: a
//! request that acquires takes the lowest-numbered connection no traced request holds, and
//! gives it back at its release. Background load holds connections without events, so a
//! connection that looks idle here may be serving it; the numbering never needs more tracks
//! than `pool_size`, since ticket requests alone never hold more.

use std::collections::{BTreeMap, BTreeSet};

use super::json::{metadata, Args, Line};
use super::layout::Ids;
use super::POOL_PID;
use crate::history::Event;

/// Who holds which connection, and each connection's track.
#[derive(Default)]
pub(super) struct PoolTracks {
    /// Track (thread id) of connection `i + 1`.
    tids: Vec<u32>,
    /// Connections known and free now (0-based).
    free: BTreeSet<usize>,
    /// The connection each call holds.
    held: BTreeMap<u64, usize>,
}

impl PoolTracks {
    /// `e` (a `pool_acquire`) took a connection: returns its number (1-based) and writes the
    /// start of the hold (and the track's names the first time) to `out`.
    pub(super) fn acquire(&mut self, e: &Event, ids: &mut Ids, out: &mut Vec<String>) -> u32 {
        let slot = match self.free.pop_first() {
            Some(s) => s,
            None => {
                let tid = ids.tid();
                self.tids.push(tid);
                let n = self.tids.len();
                let name = Args::default().s("name", format!("connection {n}"));
                out.push(metadata(POOL_PID, Some(tid), "thread_name", &name));
                let sort = Args::default().u("sort_index", n as u64);
                out.push(metadata(POOL_PID, Some(tid), "thread_sort_index", &sort));
                n - 1
            }
        };
        let call = e.call.unwrap_or(0);
        self.held.insert(call, slot);
        let ticket = e.ticket.unwrap_or(0);
        let mut args = Args::default().u("ticket", ticket).u("call", call);
        if let Some(a) = e.attempt {
            args = args.u("attempt", u64::from(a));
        }
        let line = Line::new('B', POOL_PID, self.tids[slot])
            .ts(e.t_ns.as_nanos())
            .name(&format!("ticket {ticket} · call {call}"))
            .cat("pool")
            .args(&args)
            .done();
        out.push(line);
        u32::try_from(slot + 1).unwrap_or(u32::MAX)
    }

    /// `call` gave its connection back at `t` (ns); writes the end of the hold to `out`.
    pub(super) fn release(&mut self, call: Option<u64>, t: u64, out: &mut Vec<String>) {
        let Some(slot) = call.and_then(|c| self.held.remove(&c)) else {
            return;
        };
        self.free.insert(slot);
        out.push(Line::new('E', POOL_PID, self.tids[slot]).ts(t).done());
    }

    /// Ends every hold still open at `t` (a run that stopped with connections out).
    pub(super) fn release_all(&mut self, t: u64, out: &mut Vec<String>) {
        let calls: Vec<u64> = self.held.keys().copied().collect();
        for c in calls {
            self.release(Some(c), t, out);
        }
    }
}
