//! The LLM agent: reads a ticket, calls the refund tool, reads the tool result, applies the retry
//! rule from its system prompt, and escalates when it will not retry.

use std::rc::Rc;

use super::dist;
use super::framework_retry;
use super::humans::escalate;
use super::world::{Ids, World};
use crate::history::{Decision, EventKind, Outcome};
use crate::scenario::AppliesTo;
use crate::sim::SimTime;

/// A refund ticket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ticket {
    /// Id.
    pub id: u64,
    /// Approved refund, cents.
    pub amount_cents: u64,
    /// Charge, cents.
    pub charge_amount_cents: u64,
    /// Arrival phase label.
    pub phase: String,
}

/// Whether the rule lets the model retry the agent's tool: `any_tool`, or `idempotent_tools` and
/// the tool's annotations say `readOnlyHint || idempotentHint`.
pub fn retry_eligible(w: &World) -> bool {
    match w.cfg.agent.retry.applies_to {
        AppliesTo::AnyTool => true,
        AppliesTo::IdempotentTools => tool_is_idempotent(w),
    }
}

/// Whether the agent's tool is idempotent by its MCP annotations (`readOnlyHint ||
/// idempotentHint`).
pub fn tool_is_idempotent(w: &World) -> bool {
    w.cfg
        .tools
        .iter()
        .find(|t| t.name == w.cfg.agent.tool)
        .is_some_and(|t| t.is_idempotent())
}

/// One ticket's life in the agent, from opening to a final tool result or escalation.
pub async fn handle_ticket(w: Rc<World>, t: Ticket) {
    let cfg = &w.cfg.agent;
    w.stripe
        .borrow_mut()
        .add_charge(&World::charge_id(t.id), t.charge_amount_cents);
    w.record(
        Ids::ticket(t.id),
        EventKind::TicketOpened {
            amount_cents: t.amount_cents,
            charge_amount_cents: t.charge_amount_cents,
            phase: t.phase.clone(),
        },
    );
    let mut rng = w.ticket_stream("agent", t.id, &[]);
    let overhead = SimTime::from_duration(cfg.call_overhead);
    w.sim.sleep(dist::latency(&mut rng, &cfg.think_time)).await;
    let mut attempt = 0u32;
    let mut amount = t.amount_cents;
    loop {
        w.sim.sleep(overhead).await;
        let ids = Ids::attempt(t.id, attempt);
        w.record(
            ids,
            EventKind::ToolCall {
                tool: cfg.tool.clone(),
                amount_cents: amount,
            },
        );
        let reply = framework_retry::call(w.clone(), t.id, attempt, amount).await;
        w.record(
            ids,
            EventKind::ToolResult {
                outcome: reply.outcome,
                shown: reply.shown.clone(),
                refund_id: reply.refund_id.clone(),
            },
        );
        if reply.outcome == Outcome::Ok {
            return;
        }
        // Draws in a fixed order per decision, whatever is decided.
        let think = dist::latency(&mut rng, &cfg.think_time);
        let complies = dist::chance(&mut rng, cfg.retry.compliance);
        let drifts = dist::chance(&mut rng, cfg.retry.amount_drift_probability);
        w.sim.sleep(think).await;
        let allowed = attempt < cfg.retry.max_retries && retry_eligible(&w);
        let retry = reply.outcome == Outcome::Fail
            && attempt < cfg.retry.max_retries
            && (allowed == complies);
        if retry {
            let text = if reply.timed_out {
                "The refund call timed out. Retrying once per policy.".to_string()
            } else {
                format!(
                    "The refund call failed: {}. Retrying once per policy.",
                    reply.shown
                )
            };
            let text = if cfg.retry.max_retries == 1 {
                text
            } else {
                text.replace("once ", "")
            };
            w.record(
                ids,
                EventKind::ModelDecision {
                    decision: Decision::Retry,
                    text,
                },
            );
            if drifts {
                amount = amount
                    .saturating_add_signed(cfg.retry.amount_drift_cents)
                    .max(1);
            }
            attempt += 1;
            continue;
        }
        let text = match reply.outcome {
            Outcome::Info => "The refund's outcome is unknown. Escalating to a human.",
            _ => "The refund could not be completed. Escalating to a human.",
        };
        w.record(
            ids,
            EventKind::ModelDecision {
                decision: Decision::Escalate,
                text: text.into(),
            },
        );
        escalate(&w, &t, ids, reply.shown).await;
        return;
    }
}
