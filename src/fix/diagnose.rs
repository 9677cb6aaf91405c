//! What a counterexample shows (issue 31 item 3): the mechanisms one violating ticket's events
//! went through, as a set of [`Sign`]s. The search only tries the policy changes that act on a
//! sign the counterexample shows (a duplicate made by a keyless retry suggests a key or removing
//! that retry; a human's dashboard refund suggests checking first; a probe that said `none`
//! suggests the status source), so each step answers the evidence of the last.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::history::{Caller, Event, EventKind, HumanAction, Outcome};

/// One mechanism a violating ticket's events show.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case", tag = "sign", content = "layer")]
pub enum Sign {
    /// The model called the tool more than once for the ticket (its retry rule).
    ModelRetry,
    /// The executor gave up on a call (its `timeout`).
    ExecutorTimeout,
    /// A request waited for a pool connection.
    PoolQueue,
    /// A request waited past its time and was dropped, or its pool wait timed out.
    Dropped,
    /// A layer of the stack retried the call (`layers.NAME`).
    LayerRetry(String),
    /// A hedging layer sent another try while one was running (`layers.NAME`).
    Hedge(String),
    /// An MCP client re-issued or duplicated a `tools/call`.
    McpResend,
    /// The ticket's event was delivered again.
    Redelivery,
    /// A run-level retry replayed a step.
    StepReplayed,
    /// The refunds service sent Stripe more than one request for the ticket.
    ServiceResent,
    /// Stripe answered 409 (a request with the same key in progress) or a duplicate refusal.
    Conflict,
    /// Stripe answered 5xx or never answered: the outcome of a request was unknown.
    UnknownOutcome,
    /// The executor probed the ticket's status.
    Probed,
    /// A probe answered `none`.
    ProbeSaidNone,
    /// The ticket was escalated to a human.
    Escalated,
    /// A human refunded from the dashboard.
    HumanManualRefund,
    /// A human re-ran the tool.
    HumanRerun,
    /// The service crashed after the provider answered.
    ServiceCrash,
    /// A circuit breaker refused the call.
    BreakerRejected,
    /// The tool result shown to the model was `fail` while a refund exists (invariant
    /// `truthful_tool_results` / `unknown_not_shown_as_failure`).
    ShownFailed,
    /// The ticket ended with no refund.
    NoRefund,
    /// More than one refund moved money for the ticket.
    Duplicate,
}

impl Sign {
    /// In words, for the evidence.
    pub fn words(&self) -> String {
        match self {
            Sign::ModelRetry => "the model called the tool again".into(),
            Sign::ExecutorTimeout => "the executor timed out".into(),
            Sign::PoolQueue => "requests queued for a pool connection".into(),
            Sign::Dropped => "a request was dropped before the provider".into(),
            Sign::LayerRetry(l) => format!("layer {l} retried"),
            Sign::Hedge(l) => format!("layer {l} hedged"),
            Sign::McpResend => "the MCP client sent the tools/call again".into(),
            Sign::Redelivery => "the ticket's event was delivered again".into(),
            Sign::StepReplayed => "a run-level retry replayed the step".into(),
            Sign::ServiceResent => "the service sent the provider more than one request".into(),
            Sign::Conflict => "the provider answered a duplicate in progress (409)".into(),
            Sign::UnknownOutcome => {
                "a provider request's outcome was unknown (5xx or no answer)".into()
            }
            Sign::Probed => "the executor probed the status".into(),
            Sign::ProbeSaidNone => "a probe answered none".into(),
            Sign::Escalated => "the ticket was escalated".into(),
            Sign::HumanManualRefund => "a human refunded from the dashboard".into(),
            Sign::HumanRerun => "a human re-ran the tool".into(),
            Sign::ServiceCrash => "the service crashed after the provider's answer".into(),
            Sign::BreakerRejected => "a circuit breaker refused the call".into(),
            Sign::ShownFailed => "the model was told a call failed".into(),
            Sign::NoRefund => "the ticket ended with no refund".into(),
            Sign::Duplicate => "more than one refund moved money".into(),
        }
    }
}

/// The signs one ticket's events show, in [`Sign`]'s order.
pub fn signs(events: &[&Event]) -> BTreeSet<Sign> {
    let mut s = BTreeSet::new();
    let (mut tool_calls, mut stripe_requests, mut money_refunds) = (0u32, 0u32, 0u32);
    for e in events {
        match &e.kind {
            EventKind::ToolCall { .. } => tool_calls += 1,
            EventKind::ExecutorTimeout { .. } => {
                s.insert(Sign::ExecutorTimeout);
            }
            EventKind::PoolWait { .. } => {
                s.insert(Sign::PoolQueue);
            }
            EventKind::PoolTimeout { .. } | EventKind::RequestDropped => {
                s.insert(Sign::Dropped);
            }
            EventKind::LayerRetry { layer, .. } => {
                s.insert(Sign::LayerRetry(layer.clone()));
            }
            EventKind::LayerHedge { layer, .. } => {
                s.insert(Sign::Hedge(layer.clone()));
            }
            EventKind::McpReissued { .. } | EventKind::McpDuplicateSent { .. } => {
                s.insert(Sign::McpResend);
            }
            EventKind::Delivered { duplicate, .. } if *duplicate => {
                s.insert(Sign::Redelivery);
            }
            EventKind::StepReplayed { .. } => {
                s.insert(Sign::StepReplayed);
            }
            EventKind::StripeRequest { .. } => stripe_requests += 1,
            EventKind::StripeResponse { status, .. } => {
                if *status == 409 || (400..500).contains(status) && *status != 429 {
                    s.insert(Sign::Conflict);
                }
                if *status == 0 || *status >= 500 {
                    s.insert(Sign::UnknownOutcome);
                }
            }
            EventKind::Probe { status, .. } => {
                s.insert(Sign::Probed);
                if matches!(status, crate::history::TicketStatus::None) {
                    s.insert(Sign::ProbeSaidNone);
                }
            }
            EventKind::Escalation { .. } => {
                s.insert(Sign::Escalated);
            }
            EventKind::Human { action } => {
                match action {
                    HumanAction::ManualRefund => s.insert(Sign::HumanManualRefund),
                    HumanAction::RerunTool => s.insert(Sign::HumanRerun),
                    HumanAction::FoundExisting => false,
                };
            }
            EventKind::RefundCreated {
                moves_money, by, ..
            } => {
                if *moves_money {
                    money_refunds += 1;
                }
                if *by == Caller::Human {
                    s.insert(Sign::HumanManualRefund);
                }
            }
            EventKind::ServiceCrash { .. } => {
                s.insert(Sign::ServiceCrash);
            }
            EventKind::BreakerRejected { .. } => {
                s.insert(Sign::BreakerRejected);
            }
            EventKind::ToolResult { outcome, .. } if *outcome == Outcome::Fail => {
                s.insert(Sign::ShownFailed);
            }
            _ => {}
        }
    }
    if tool_calls > 1 {
        s.insert(Sign::ModelRetry);
    }
    if stripe_requests > 1 {
        s.insert(Sign::ServiceResent);
    }
    if money_refunds > 1 {
        s.insert(Sign::Duplicate);
    }
    if money_refunds == 0 {
        s.insert(Sign::NoRefund);
    }
    s
}
