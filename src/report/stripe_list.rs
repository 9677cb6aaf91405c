//! `run --stripe-list FILE`: the provider's own list of the refunds a run made, as the body of
//! Stripe's `GET /v1/refunds` (Stripe API reference, "List all refunds" and "The Refund
//! object"): `{"object": "list", "data": [...], "has_more": false, "url": "/v1/refunds"}`,
//! newest first, as Stripe lists them.
//!
//! Every refund Stripe created is listed, whoever asked for it: the refunds service's, and a
//! human's from the dashboard. Each carries the ticket in `metadata` under
//! [`TICKET_METADATA_KEY`], written as the tool's ticket argument writes it: the service puts
//! it there, and a human refunding a ticket from the dashboard types it (so reconciliation can
//! match the refund to its ticket). A refund's `status` is its last one (a `pending` refund
//! that settled is listed as it settled); `created` is Unix seconds of the scenario's
//! `clock_origin` (or the epoch) plus virtual time.
//!
//! Refunds are kept until the run ends (about 100 bytes each, counted by the run budget) and
//! the list is written then.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use crate::history::{Event, EventKind, RefundStatus};
use crate::scenario::Scenario;

/// The metadata key that holds the ticket id on every listed refund.
pub(crate) const TICKET_METADATA_KEY: &str = "ticket_id";

/// The `reason` of every listed refund: the refunds are support tickets' refunds.
pub(crate) const REFUND_REASON: &str = "requested_by_customer";

/// What the list keeps per refund until the run ends, bytes (for the run budget).
pub(crate) const STRIPE_LIST_BYTES_PER_REFUND: u64 = 112;

/// One refund, as the run made it.
#[derive(Clone, Debug)]
struct Listed {
    id: String,
    amount: u64,
    ticket: Option<u64>,
    created_ns: u64,
    status: RefundStatus,
}

/// Gathers a run's refunds and writes them as Stripe's list when the run ends.
pub(crate) struct StripeListStream<W: Write> {
    out: W,
    origin_ns: u64,
    labels: BTreeMap<u64, String>,
    refunds: Vec<Listed>,
    /// Refunds not yet in their final status, by id → index in `refunds`.
    unsettled: BTreeMap<String, usize>,
}

impl<W: Write> StripeListStream<W> {
    /// A list of the refunds of a run of `sc`, to be written to `out`.
    pub(crate) fn new(out: W, sc: &Scenario) -> Self {
        StripeListStream {
            out,
            origin_ns: super::otlp::origin_unix_ns(sc),
            labels: sc
                .replay
                .as_ref()
                .map(|r| r.ticket_labels.clone())
                .unwrap_or_default(),
            refunds: Vec::new(),
            unsettled: BTreeMap::new(),
        }
    }

    /// Takes in one event of the run, in order: refunds created and settled.
    pub(crate) fn event(&mut self, e: &Event) {
        match &e.kind {
            EventKind::RefundCreated {
                refund_id,
                amount_cents,
                status,
                ..
            } => {
                if matches!(status, RefundStatus::Pending | RefundStatus::RequiresAction) {
                    self.unsettled.insert(refund_id.clone(), self.refunds.len());
                }
                self.refunds.push(Listed {
                    id: refund_id.clone(),
                    amount: *amount_cents,
                    ticket: e.ticket,
                    created_ns: e.t_ns.as_nanos(),
                    status: *status,
                });
            }
            EventKind::RefundSettled {
                refund_id, status, ..
            } => {
                if let Some(i) = self.unsettled.remove(refund_id) {
                    self.refunds[i].status = *status;
                }
            }
            _ => {}
        }
    }

    /// Bytes kept: [`STRIPE_LIST_BYTES_PER_REFUND`] per refund.
    pub(crate) fn held_bytes(&self) -> u64 {
        self.refunds.len() as u64 * STRIPE_LIST_BYTES_PER_REFUND
    }

    /// Writes the list (newest first; refunds created in the same instant in the reverse of
    /// their order) and flushes; returns the writer, or the I/O error.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        // Events come in time order: the reverse is newest first.
        let data = self.refunds.iter().rev().map(|r| self.object(r)).collect();
        let list = RefundList {
            object: "list",
            data,
            has_more: false,
            url: "/v1/refunds",
        };
        serde_json::to_writer_pretty(&mut self.out, &list)?;
        self.out.write_all(b"\n")?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn object(&self, r: &Listed) -> RefundObject {
        let unix_ns = self.origin_ns.saturating_add(r.created_ns);
        let mut metadata = BTreeMap::new();
        if let Some(t) = r.ticket {
            let text = self
                .labels
                .get(&t)
                .cloned()
                .unwrap_or_else(|| t.to_string());
            metadata.insert(TICKET_METADATA_KEY, text);
        }
        RefundObject {
            id: r.id.clone(),
            object: "refund",
            amount: r.amount,
            charge: r.ticket.map(|t| crate::model::ids::charge(t).to_string()),
            created: unix_ns / 1_000_000_000,
            currency: "usd",
            metadata,
            payment_intent: None,
            reason: REFUND_REASON,
            status: r.status.as_str(),
        }
    }
}

/// The body of `GET /v1/refunds`.
#[derive(Serialize)]
struct RefundList {
    object: &'static str,
    data: Vec<RefundObject>,
    has_more: bool,
    url: &'static str,
}

/// A refund object, with the fields Stripe's API reference shows (those the simulation knows).
#[derive(Serialize)]
struct RefundObject {
    id: String,
    object: &'static str,
    /// Cents.
    amount: u64,
    /// `ch_{ticket}`, the charge the ticket refunds.
    charge: Option<String>,
    /// Unix seconds.
    created: u64,
    currency: &'static str,
    metadata: BTreeMap<&'static str, String>,
    /// The simulated charges are not made through payment intents.
    payment_intent: Option<String>,
    reason: &'static str,
    status: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Caller;
    use crate::sim::SimTime;

    fn created(ms: u64, ticket: u64, id: &str, status: RefundStatus) -> Event {
        Event {
            t_ns: SimTime::from_millis(ms),
            ticket: Some(ticket),
            attempt: None,
            call: None,
            kind: EventKind::RefundCreated {
                refund_id: id.into(),
                amount_cents: 4200,
                status,
                moves_money: status.moves_money(),
                by: Caller::Service,
            },
        }
    }

    #[test]
    fn the_list_is_stripes_newest_first_with_final_statuses() {
        let sc = crate::scenario::load_str(
            r#"{"name":"t","clock_origin":"2024-05-14T16:41:09Z","horizon":"10m","arrivals":{"schedule":[{"duration":"10m","rate_per_s":0.05}]}}"#,
            "inline",
        )
        .unwrap();
        let mut list = StripeListStream::new(Vec::new(), &sc);
        list.event(&created(0, 7, "re_1", RefundStatus::Succeeded));
        list.event(&created(1500, 7, "re_2", RefundStatus::Pending));
        list.event(&Event {
            t_ns: SimTime::from_millis(9000),
            ticket: Some(7),
            attempt: None,
            call: None,
            kind: EventKind::RefundSettled {
                refund_id: "re_2".into(),
                amount_cents: 4200,
                created_ns: 1_500_000_000,
                status: RefundStatus::Failed,
                moves_money: false,
            },
        });
        assert_eq!(list.refunds.len(), 2);
        let out = String::from_utf8(list.finish().unwrap()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["object"], "list");
        assert_eq!(v["has_more"], false);
        assert_eq!(v["url"], "/v1/refunds");
        let data = v["data"].as_array().unwrap();
        assert_eq!(data[0]["id"], "re_2");
        assert_eq!(data[0]["status"], "failed");
        assert_eq!(data[0]["created"], 1_715_704_870u64);
        assert_eq!(data[1]["id"], "re_1");
        assert_eq!(data[1]["created"], 1_715_704_869u64);
        assert_eq!(data[1]["charge"], "ch_7");
        assert_eq!(data[1]["metadata"]["ticket_id"], "7");
        assert_eq!(data[1]["payment_intent"], serde_json::Value::Null);
        assert_eq!(data[1]["currency"], "usd");
        assert_eq!(data[1]["object"], "refund");
    }
}
