//! `agent` and `tools`: the tool the agent calls, and the retry caps of every layer that retries.

use crate::scenario::config::Scenario;
use crate::scenario::limits::{MAX_CENTS, MAX_DURATION};
use crate::scenario::rules::{
    at_most, at_most_cents, at_most_retries, fail, latency, probability, Check,
};

/// `tools` is not empty; every retry count (agent, executor, SDK) is capped; the amount drift is
/// capped; `agent.tool` names a tool; think time, overhead and retry probabilities — in that
/// order.
pub(super) fn validate(s: &Scenario) -> Check {
    let agent = &s.agent;
    if s.tools.is_empty() {
        return fail(
            "tools",
            format!(
                "empty list; expected at least the tool agent.tool names ({:?})",
                agent.tool
            ),
        );
    }
    retry_caps(s)?;
    if !s.tools.iter().any(|t| t.name == agent.tool) {
        let names: Vec<&str> = s.tools.iter().map(|t| t.name.as_str()).collect();
        return fail(
            "agent.tool",
            format!(
                "invalid value: expected the name of a tool in `tools` ({}), got {:?}",
                names.join(", "),
                agent.tool
            ),
        );
    }
    for (i, t) in s.tools.iter().enumerate() {
        effect_words(i, t)?;
    }
    latency("agent.think_time", &agent.think_time)?;
    at_most("agent.call_overhead", agent.call_overhead, MAX_DURATION)?;
    probability("agent.retry.compliance", agent.retry.compliance)?;
    probability(
        "agent.retry.amount_drift_probability",
        agent.retry.amount_drift_probability,
    )?;
    probability("agent.llm_error_after_tool", agent.llm_error_after_tool)
}

/// Retry counts of the agent, the executor and the Stripe SDK, then the agent's amount drift.
fn retry_caps(s: &Scenario) -> Check {
    let agent = &s.agent;
    at_most_retries("agent.retry.max_retries", agent.retry.max_retries)?;
    if let Some(r) = &s.executor.retry {
        at_most_retries("executor.retry.max_retries", r.max_retries)?;
    }
    at_most_retries(
        "refunds_service.stripe_client.max_network_retries",
        s.refunds_service.stripe_client.max_network_retries,
    )?;
    if agent.retry.amount_drift_cents.unsigned_abs() > MAX_CENTS {
        at_most_cents(
            "agent.retry.amount_drift_cents",
            agent.retry.amount_drift_cents.unsigned_abs(),
        )?;
    }
    Ok(())
}

/// A tool's `effect` is a noun the outputs can use, and its `operation` one line of text.
fn effect_words(i: usize, t: &crate::scenario::ToolDefinition) -> Check {
    use crate::scenario::effect::{valid_noun, KNOWN_EFFECTS, MAX_NOUN_CHARS};
    if let Some(e) = &t.effect {
        if !valid_noun(e) {
            let known: Vec<&str> = KNOWN_EFFECTS.iter().map(|(n, _)| *n).collect();
            return fail(
                format!("tools.{i}.effect"),
                format!(
                    "invalid value {e:?}: expected a singular noun of lower-case letters (words \
                     separated by one space or `-`, at most {MAX_NOUN_CHARS} characters), e.g. \
                     one of {}",
                    known.join(", ")
                ),
            );
        }
    }
    if let Some(op) = &t.operation {
        let ok = !op.trim().is_empty() && op.len() <= 200 && !op.chars().any(char::is_control);
        if !ok {
            return fail(
                format!("tools.{i}.operation"),
                format!(
                    "invalid value {op:?}: expected one line of at most 200 characters naming \
                     the provider operation, e.g. \"POST /v1/payment_intents\""
                ),
            );
        }
    }
    Ok(())
}
