//! The refunds service's ledger: per ticket, the requests in flight and the refund recorded.

use std::collections::BTreeMap;

use crate::history::TicketStatus;

/// One ticket's row.
#[derive(Clone, Debug, Default)]
pub struct TicketRow {
    /// Requests for this ticket currently being worked on.
    pub in_flight: u32,
    /// The refund the service recorded, if any.
    pub refund_id: Option<String>,
    /// The per-ticket idempotency nonce, written once (key mode `per_ticket`).
    pub nonce: Option<String>,
    /// Local dedup: the request that holds the ticket's pending row (first come, first served).
    pub owner: Option<u64>,
    /// How many nonces this ticket has had (more than one only with `new_nonce_after_error`).
    pub nonce_generation: u64,
}

/// Rows by ticket id.
#[derive(Debug, Default)]
pub struct Ledger {
    rows: BTreeMap<u64, TicketRow>,
}

impl Ledger {
    /// The row of `ticket`, created empty on first use.
    pub fn row(&mut self, ticket: u64) -> &mut TicketRow {
        self.rows.entry(ticket).or_default()
    }

    /// `get_status(ticket)`: refunded if a refund is recorded, pending if a request is in
    /// flight, else none.
    pub fn status(&self, ticket: u64) -> TicketStatus {
        match self.rows.get(&ticket) {
            Some(TicketRow {
                refund_id: Some(id),
                ..
            }) => TicketStatus::Refunded {
                refund_id: id.clone(),
            },
            Some(r) if r.in_flight > 0 => TicketStatus::Pending,
            _ => TicketStatus::None,
        }
    }
}
