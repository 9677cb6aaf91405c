//! The starting scenario's text: every section spelled out in reading order, each with a
//! `$comment` (accepted in every object of a scenario, `src/scenario/comments.rs`).

use super::ordered::Ordered;
use super::read::FoundTool;
use crate::scenario::effect::{valid_noun, KNOWN_EFFECTS};

/// The verbs stripped from a tool's name to find a free noun (`issue_gift_card` → `gift card`).
const VERBS: [&str; 9] = [
    "create_", "issue_", "send_", "place_", "make_", "submit_", "add_", "book_", "post_",
];

/// The effect's noun a tool's name implies: a name containing `refund` → `refund`, `payout` →
/// `payout`, `transfer` → `transfer`, `order` → `order`, `charge`/`pay`/`payment` → `charge`,
/// `message`/`email`/`sms`/`notify` → `message` (checked in that order, case-insensitively);
/// else the name without a leading verb (`create_`, `issue_`, `send_`, `place_`, `make_`,
/// `submit_`, `add_`, `book_`, `post_`) with `_` and `-` as spaces (`issue_gift_card` → `gift
/// card`); and `effect` when that is not a valid noun
/// ([`crate::scenario::effect::valid_noun`]).
pub fn infer_effect(tool_name: &str) -> String {
    let name = tool_name.to_ascii_lowercase();
    let rules: [(&[&str], &str); 6] = [
        (&["refund"], "refund"),
        (&["payout"], "payout"),
        (&["transfer"], "transfer"),
        (&["order"], "order"),
        (&["charge", "pay", "payment"], "charge"),
        (&["message", "email", "sms", "notify"], "message"),
    ];
    if let Some((_, noun)) = rules
        .iter()
        .find(|(words, _)| words.iter().any(|w| name.contains(w)))
    {
        return (*noun).to_string();
    }
    let bare = VERBS
        .iter()
        .find_map(|v| name.strip_prefix(v))
        .unwrap_or(&name);
    let noun = bare.replace(['_', '-'], " ");
    if valid_noun(&noun) {
        noun
    } else {
        "effect".to_string()
    }
}

fn s(text: impl Into<String>) -> Ordered {
    Ordered::str(text)
}

fn n(v: u64) -> Ordered {
    Ordered::leaf(v)
}

fn b(v: bool) -> Ordered {
    Ordered::leaf(v)
}

fn obj(pairs: Vec<(&str, Ordered)>) -> Ordered {
    Ordered::object(pairs)
}

/// The scenario for `tool` read from `file`, effect `effect`, with `operation` if given.
pub(super) fn scenario_text(
    file: &str,
    tool: &FoundTool,
    effect: &str,
    operation: Option<&str>,
) -> String {
    let name = &tool.name;
    let known = KNOWN_EFFECTS.iter().any(|(k, _)| *k == effect);
    let op_default = crate::scenario::Effect::new(name, Some(effect), operation).operation;
    let from = if tool.path.is_empty() {
        format!("{file} ({})", tool.shape)
    } else {
        format!(
            "{file}, the tool at JSON path `{}` ({})",
            tool.path, tool.shape
        )
    };
    let doc =
        obj(vec![
            (
                "$comment",
                s(format!(
                    "A starting scenario written by `refundsim new` from {from}. Every section is \
                 spelled out with a $comment saying what it models; change the values to \
                 describe your own stack, then run `refundsim lint` and `refundsim check` on \
                 this file. Nothing here is an incident: no background load, no faults, no \
                 humans; the safe settings lint asks for (a per-ticket idempotency key, a status \
                 probe after a timeout, model retries only for idempotent tools) are chosen, and \
                 each comment says what the carrier-outage incident had instead \
                 (scenarios/carrier-outage.json). `$comment` is free text, ignored by refundsim."
                )),
            ),
            ("schema_version", n(2)),
            ("name", s(name.clone())),
            (
                "description",
                s(format!(
                "Starting scenario for the `{name}` tool (each call makes {a} {effect}): a few \
                 tickets through the agent, executor, service and SDK to {op_default}, with no \
                 retry that could repeat it unrecognised.",
                a = if effect.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" }
            )),
            ),
            ("seed", n(1)),
            ("horizon", s("10m")),
            ("arrivals", arrivals(effect)),
            (
                "background_load",
                obj(vec![
                    (
                        "$comment",
                        s(
                            "Other requests sharing the service's connection pool: none. Set \
                       rate_per_s (and hold) to model the traffic your pool also serves.",
                        ),
                    ),
                    ("rate_per_s", n(0)),
                ]),
            ),
            (
                "agent",
                obj(vec![
                    (
                        "$comment",
                        s(format!(
                            "The LLM agent: it calls `{name}` once per ticket and, on a failed \
                         call, retries at most max_retries times, but only a tool marked \
                         readOnlyHint or idempotentHint (applies_to: idempotent_tools). The \
                         incident's prompt said 'retry once' for any tool (applies_to: any_tool), \
                         which repeats a call that timed out but succeeded."
                        )),
                    ),
                    ("tool", s(name.clone())),
                    (
                        "retry",
                        obj(vec![
                            ("max_retries", n(1)),
                            ("applies_to", s("idempotent_tools")),
                        ]),
                    ),
                ]),
            ),
            (
                "tools",
                Ordered::Array(vec![tool_entry(&from, tool, effect, known, operation)]),
            ),
            (
                "executor",
                obj(vec![
                    (
                        "$comment",
                        s(
                            "The tool executor: the time limit of one call, and what it tells the \
                       model when the limit passes. probe_status asks the service for the \
                       ticket's status before answering (an unknown outcome is not a failure); \
                       the incident had an 8s timeout and report_error.",
                        ),
                    ),
                    ("timeout", s("15s")),
                    ("on_timeout", s("probe_status")),
                    ("probe_after", s("unknown_outcome")),
                    ("probe_interval", s("1s")),
                    ("probe_max_wait", s("60s")),
                ]),
            ),
            (
                "service",
                obj(vec![
                    (
                        "$comment",
                        s("The service behind the tool: a ledger row per ticket, a pool of connections to the \
                         provider, and the idempotency key it sends. per_ticket writes one key \
                         per ticket, so a repeated call is recognised by the provider; the \
                         incident sent none. stripe_client is the provider's SDK: its network \
                         retries reuse the call's key."),
                    ),
                    ("pool_size", n(8)),
                    ("idempotency_key", s("per_ticket")),
                    ("rotate_key", s("never")),
                    ("status_source", s("ledger")),
                    (
                        "stripe_client",
                        obj(vec![("max_network_retries", n(0)), ("timeout", s("80s"))]),
                    ),
                ]),
            ),
            (
                "stripe",
                obj(vec![
                    (
                        "$comment",
                        s(format!(
                            "The provider's latency and rules for {op_default}: lognormal by p50 \
                         and p99, keys kept 24h, no injected faults. Put your provider's \
                         measured latency here; stripe.faults injects 500s and lost responses."
                        )),
                    ),
                    (
                        "latency",
                        obj(vec![("p50", s("350ms")), ("p99", s("1500ms"))]),
                    ),
                    ("idempotency_key_retention", s("24h")),
                ]),
            ),
            (
                "provider",
                obj(vec![
                    (
                        "$comment",
                        s(
                            "How the provider recognises a repeated request: stripe is Stripe's \
                       Idempotency-Key rules. Other kinds: keys_ignored, dedup_window, \
                       business_id (docs/scenario.md, `provider`).",
                        ),
                    ),
                    ("kind", s("stripe")),
                ]),
            ),
            (
                "humans",
                obj(vec![
                    (
                        "$comment",
                        s(
                            "Humans who take escalated tickets: off, so an escalated ticket stays \
                       without its effect (counted as lost). Turn them on to model your \
                       support team (pickup_delay, check_probability, manual_refund_via).",
                        ),
                    ),
                    ("enabled", b(false)),
                ]),
            ),
            (
                "reconciliation",
                obj(vec![
                (
                    "$comment",
                    s("A job that alerts on a ticket with more than one effect: off, as in the \
                       incident. enabled: true and an interval to model yours."),
                ),
                ("enabled", b(false)),
            ]),
            ),
            (
                "layers",
                obj(vec![(
                    "$comment",
                    s(
                        "Added layers of the call path, by name (framework retry middleware, a \
                   proxy, a hedge, an MCP client): none. Add one here and name it in stack \
                   (docs/scenario.md, `The call path as layers`).",
                    ),
                )]),
            ),
            ("stack", stack()),
            ("expect", expect()),
            (
                "exploration",
                obj(vec![
                (
                    "$comment",
                    s("What `refundsim check`'s bounded exploration may change: ticket counts \
                       and arrival times, but no invented faults and no added retry layers, as \
                       every recipe narrows it (the defaults are 0.5 and true). Raise \
                       fault_probability_max to let it inject provider faults: with humans off, \
                       a failed call the agent does not retry then leaves its ticket without \
                       its effect, and check reports no_lost_effect."),
                ),
                ("fault_probability_max", n(0)),
                ("add_layers", b(false)),
            ]),
            ),
        ]);
    let mut text = serde_json::to_string_pretty(&doc).expect("an ordered JSON value serializes");
    text.push('\n');
    text
}

fn arrivals(effect: &str) -> Ordered {
    let ticket = |id: u64, at: &str, cents: u64| {
        obj(vec![
            ("id", n(id)),
            ("opened_at", s(at)),
            ("amount_cents", n(cents)),
            ("charge_amount_cents", n(cents * 2)),
        ])
    };
    obj(vec![
        (
            "$comment",
            s(format!(
                "Four explicit tickets 300ms apart, each asking for one {effect} of \
                 amount_cents (charge_amount_cents is the object a second effect may be capped \
                 by, read only under provider.effect_limit: charge, a refund's default: twice \
                 the amount, so a duplicate would succeed and show). Replace them with a recorded \
                 list, or with a rate schedule ({{\"schedule\": [{{\"duration\": \"10m\", \
                 \"rate_per_s\": 0.5}}]}}) for load."
            )),
        ),
        (
            "tickets",
            Ordered::Array(vec![
                ticket(1, "0s", 1200),
                ticket(2, "300ms", 4500),
                ticket(3, "600ms", 800),
                ticket(4, "900ms", 15000),
            ]),
        ),
    ])
}

fn tool_entry(
    from: &str,
    tool: &FoundTool,
    effect: &str,
    known: bool,
    operation: Option<&str>,
) -> Ordered {
    let mut comment = format!(
        "The tool, copied from {from}. effect names what one call does ({}); ",
        if known {
            "a noun refundsim knows"
        } else {
            "a free noun"
        }
    );
    comment.push_str(match &tool.annotations {
        Some(_) => {
            "its MCP annotations are kept as given: only readOnlyHint and idempotentHint \
                    change what the agent may retry."
        }
        None => {
            "it has no MCP annotations, so the spec's defaults apply (not read-only, \
                 destructive, not idempotent); state them to silence lint's \
                 tool-annotations-missing."
        }
    });
    if !tool.dropped.is_empty() {
        comment.push_str(&format!(
            " Not copied (no place in a scenario's tool): {}.",
            tool.dropped.join(", ")
        ));
    }
    let mut pairs = vec![("$comment", s(comment)), ("name", s(tool.name.clone()))];
    if let Some(d) = &tool.description {
        pairs.push(("description", d.clone()));
    }
    if let Some((field, schema)) = &tool.schema {
        pairs.push((field, schema.clone()));
    }
    if let Some(a) = &tool.annotations {
        pairs.push(("annotations", a.clone()));
    }
    pairs.push(("effect", s(effect)));
    if let Some(op) = operation {
        pairs.push(("operation", s(op)));
    }
    obj(pairs)
}

fn stack() -> Ordered {
    Ordered::Array(
        ["model_retry", "executor", "service", "sdk"]
            .into_iter()
            .map(s)
            .collect(),
    )
}

fn expect() -> Ordered {
    let at_most_zero = || obj(vec![("max", n(0))]);
    obj(vec![
        (
            "$comment",
            s(
                "What `refundsim check` holds this scenario to, per seed: no ticket with two \
               effects, none over its amount, none lost, every request answered once.",
            ),
        ),
        ("duplicate_effect_tickets", at_most_zero()),
        ("over_effect_cents", at_most_zero()),
        ("lost_effects", at_most_zero()),
        ("conservation_violations", at_most_zero()),
    ])
}

#[cfg(test)]
mod tests {
    use super::infer_effect;

    #[test]
    fn effects_from_names() {
        for (name, noun) in [
            ("issue_refund", "refund"),
            ("create_payout", "payout"),
            ("send_transfer", "transfer"),
            ("place_order", "order"),
            ("charge_card", "charge"),
            ("pay_invoice", "charge"),
            ("send_email", "message"),
            ("notify_customer", "message"),
            ("issue_gift_card", "gift card"),
            ("book_flight", "flight"),
            ("do_thing2", "effect"),
            ("x_", "effect"),
        ] {
            assert_eq!(infer_effect(name), noun, "{name}");
        }
    }
}
