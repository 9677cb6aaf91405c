//! The refunds service's ledger: per ticket, the requests in flight and the refund recorded.

use crate::history::TicketStatus;
use crate::id_map::IdMap;
use crate::sim::SimTime;

/// One ticket's row.
#[derive(Clone, Debug, Default)]
pub(crate) struct TicketRow {
    /// Requests for this ticket currently being worked on.
    pub in_flight: u32,
    /// The refund the service recorded, if any.
    pub refund_id: Option<String>,
    /// The per-ticket idempotency nonce, written once (key mode `per_ticket`).
    pub nonce: Option<String>,
    /// Local dedup: the request that holds the ticket's pending row (first come, first served).
    pub owner: Option<u64>,
    /// How many nonces this ticket has had (more than one only after a rotation: `rotate_key`,
    /// `new_nonce_after_error` or `on_key_conflict: retry_new_key`).
    pub nonce_generation: u64,
    /// A call for this ticket ended without a definite answer and was recorded as unknown
    /// (`sdk_timeout_recorded_as: unknown`).
    pub unknown_outcome: bool,
    /// Since when the row has been pending (the start of the request that found it neither
    /// pending nor refunded); `None` when it is not. Read by the stale-pending sweep only.
    pub pending_since: Option<SimTime>,
    /// The stale-pending sweep marked the row failed (`reconciliation.stale_pending`); cleared
    /// by the next request for the ticket.
    pub marked_failed: bool,
}

impl TicketRow {
    /// Rotates the ticket's per-ticket key: drops its nonce, so the next
    /// `idempotency_key` writes a new one drawn from the `nonce` stream of the next generation.
    /// Counts a generation only when a nonce was written (a ticket without a per-ticket key
    /// has nothing to rotate). The one path for every rotation: `rotate_key` after a failed
    /// answer and `on_key_conflict: retry_new_key`.
    pub(crate) fn rotate_nonce(&mut self) {
        if self.nonce.take().is_some() {
            self.nonce_generation += 1;
        }
    }
}

/// Rows by ticket id.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    /// Rows by ticket. A hash map: looked up per request and dropped per ticket, never
    /// iterated (so its order reaches no output).
    rows: IdMap<TicketRow>,
}

impl Ledger {
    /// The row of `ticket`, created empty on first use.
    pub(crate) fn row(&mut self, ticket: u64) -> &mut TicketRow {
        self.rows.entry(ticket).or_default()
    }

    /// Drops `ticket`'s row (the ticket is closed: nothing reads or writes it any more).
    /// Refuses (returns `false`, keeps the row) while a request for it is in flight: a broken
    /// eviction rule.
    pub(crate) fn evict(&mut self, ticket: u64) -> bool {
        if self.rows.get(&ticket).is_some_and(|r| r.in_flight > 0) {
            return false;
        }
        self.rows.remove(&ticket);
        true
    }

    /// The tickets whose rows have been pending since `cutoff` or earlier and hold no refund,
    /// in ticket order (the map itself is never iterated into output).
    pub(crate) fn pending_since(&self, cutoff: SimTime) -> Vec<u64> {
        let mut out: Vec<u64> = self
            .rows
            .iter()
            .filter(|(_, r)| r.refund_id.is_none() && r.pending_since.is_some_and(|t| t <= cutoff))
            .map(|(id, _)| *id)
            .collect();
        out.sort_unstable();
        out
    }

    /// Rows held now (for tests of eviction).
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// `get_status(ticket)` from the ledger alone: `refunded` if a refund is recorded; with
    /// `completed_only` nothing else (so `none`); otherwise `pending` while a request is in
    /// flight, then `unknown` if an outcome was recorded as unknown, else `none`.
    pub(crate) fn status(&self, ticket: u64, completed_only: bool) -> TicketStatus {
        let Some(r) = self.rows.get(&ticket) else {
            return TicketStatus::None;
        };
        match r {
            TicketRow {
                refund_id: Some(id),
                ..
            } => TicketStatus::Refunded {
                refund_id: id.clone(),
            },
            _ if completed_only => TicketStatus::None,
            // Marked failed by the stale-pending sweep: `none`, whatever is still in flight.
            r if r.marked_failed => TicketStatus::None,
            r if r.in_flight > 0 => TicketStatus::Pending,
            r if r.unknown_outcome => TicketStatus::Unknown,
            _ => TicketStatus::None,
        }
    }
}
