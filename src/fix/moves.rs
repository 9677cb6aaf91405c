//! The policy changes `fix` may make (issue 31 item 3), read off the stack of the scenario at
//! hand: its key mode and rotation, its status probe and what it reports, which tools the model
//! may retry, every retrying layer the scenario declares, cancellation, the executor's timeout,
//! the pool, and what humans do before a manual refund. Each change says which [`Sign`]s of a
//! counterexample it acts on; the search tries only those.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{json, Value};

use super::diagnose::Sign;

/// One field set to one value: a step of a candidate patch.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Move {
    /// Dotted field path, as `--set` takes it (`refunds_service.idempotency_key`).
    pub path: String,
    /// The value set (JSON).
    #[serde(serialize_with = "ser_value")]
    pub value: OrdValue,
    /// Why this change answers the counterexample, in one sentence.
    pub why: String,
}

/// A JSON value ordered by its compact text (so moves sort and dedupe deterministically).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct OrdValue(pub String);

impl OrdValue {
    /// The value.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.0).expect("an OrdValue holds JSON text")
    }
}

fn ser_value<S: serde::Serializer>(v: &OrdValue, s: S) -> Result<S::Ok, S::Error> {
    v.json().serialize(s)
}

impl Move {
    fn new(path: &str, value: Value, why: &str) -> Move {
        Move {
            path: path.to_string(),
            value: OrdValue(value.to_string()),
            why: why.to_string(),
        }
    }

    /// `PATH=VALUE`, as `--set` takes it.
    pub fn set_arg(&self) -> String {
        format!("{}={}", self.path, self.value.0)
    }
}

/// The field at dotted `path` of a scenario's JSON.
pub fn get<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |v, seg| v.get(seg))
}

/// A duration field in ms (`"8s"` → 8000).
fn millis(doc: &Value, path: &str) -> Option<u64> {
    get(doc, path)
        .and_then(Value::as_str)
        .and_then(|s| humantime::parse_duration(s).ok())
        .map(|d| d.as_millis() as u64)
}

fn duration_text(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// Every change of `doc` (the candidate's scenario, every field spelled out as `show` prints it)
/// that acts on a sign of `signs`, the violated invariant's counterexample. A change that would
/// leave the field as it is, or that touches a section the scenario does not have, is left
/// out.
pub fn moves(doc: &Value, signs: &BTreeSet<Sign>) -> Vec<Move> {
    let has = |s: &Sign| signs.contains(s);
    let dup = has(&Sign::Duplicate);
    let resent = has(&Sign::ModelRetry)
        || has(&Sign::ServiceResent)
        || has(&Sign::McpResend)
        || has(&Sign::Redelivery)
        || has(&Sign::StepReplayed)
        || has(&Sign::HumanRerun)
        || signs
            .iter()
            .any(|s| matches!(s, Sign::LayerRetry(_) | Sign::Hedge(_)));
    let told_failed = has(&Sign::ShownFailed) || has(&Sign::Escalated);
    let mut out = Out {
        doc,
        list: Vec::new(),
    };

    // Keys: what lets the provider tell a second request from a new refund.
    if dup && resent {
        out.propose(
            "refunds_service.idempotency_key",
            json!("per_ticket"),
            "a second request for the ticket reached the provider without the first one's key: one idempotency key per ticket makes the provider replay the first refund",
        );
        out.propose(
            "refunds_service.local_dedup",
            json!(true),
            "a pending row per ticket makes a second request wait for the first one's result instead of reaching the provider",
        );
    }
    if dup && get(doc, "refunds_service.idempotency_key") == Some(&json!("per_ticket")) {
        out.propose(
            "refunds_service.rotate_key",
            json!("never"),
            "the ticket's key was rotated, so a later request was a new refund: never rotate it",
        );
        out.propose(
            "refunds_service.new_nonce_after_error",
            json!(false),
            "a new nonce after an error made a later request a new refund",
        );
        out.propose(
            "refunds_service.stripe_client.key",
            json!("reuse"),
            "the provider client replaced the service's key with its own",
        );
    }
    if has(&Sign::Conflict) {
        out.propose(
            "refunds_service.on_key_conflict",
            json!("lookup"),
            "a 409 means a request with the key is in progress: look the refund up instead of failing or starting over",
        );
    }
    if has(&Sign::UnknownOutcome) && (dup || told_failed) {
        out.propose(
            "refunds_service.on_unknown_outcome",
            json!("lookup"),
            "after an unknown outcome (5xx, no answer) the refund may exist: look it up before answering",
        );
    }

    // Who retries.
    if has(&Sign::ModelRetry) && dup {
        out.propose(
            "agent.retry.applies_to",
            json!("idempotent_tools"),
            "the model retried a tool that is not marked idempotent: retry only idempotent tools",
        );
        out.propose(
            "agent.retry.max_retries",
            json!(0),
            "the model retried the call: no model retries",
        );
    }
    if dup {
        for s in signs {
            let (Sign::LayerRetry(layer) | Sign::Hedge(layer)) = s else {
                continue;
            };
            let base = format!("layers.{layer}");
            let kind = get(doc, &format!("{base}.kind")).and_then(Value::as_str);
            out.propose(
                &format!("{base}.max_retries"),
                json!(0),
                &format!("layer {layer} sent the call again: no retries there"),
            );
            if get(doc, &format!("{base}.max_retries")).is_none() {
                out_push_absent(&mut out.list, doc, &base, "max_retries", json!(0), layer);
            }
            if kind == Some("retry") {
                out.propose(
                    &format!("{base}.applies_to"),
                    json!("idempotent_tools"),
                    &format!("layer {layer} retried a tool that is not marked idempotent"),
                );
            }
            if matches!(kind, Some("retry") | Some("proxy")) {
                let on = get(doc, &format!("{base}.retry_on"));
                if on != Some(&json!(["connect-failure"])) {
                    out.push(Move::new(
                        &format!("{base}.retry_on"),
                        json!(["connect-failure"]),
                        &format!("layer {layer} retried after the request may have run: retry only connections never made (Envoy's connect-failure)"),
                    ));
                }
            }
        }
        if has(&Sign::ServiceResent) {
            out.propose(
                "refunds_service.stripe_client.max_network_retries",
                json!(0),
                "the provider client retried the request: no client retries",
            );
            out.propose(
                "refunds_service.acquire_retries",
                json!(0),
                "the service retried the pool acquire past its caller's timeout",
            );
        }
    }
    if has(&Sign::McpResend) && dup {
        if let Some(ex) = doc.get("executor") {
            if ex.get("request_idempotency").is_none() {
                out.push(Move::new(
                    "executor.request_idempotency",
                    json!({}),
                    "the MCP client sent the tools/call again: the tool server's request key rejects the copy",
                ));
            }
        }
    }
    if has(&Sign::Redelivery)
        && dup
        && doc.get("deliveries").is_some_and(|d| !d.is_null())
        && get(doc, "deliveries.consumer_dedup") != Some(&json!("event_id"))
    {
        {
            out.push(Move::new(
                "deliveries.consumer_dedup",
                json!("event_id"),
                "the ticket's event came again: dedup by event id at the consumer",
            ));
        }
    }

    // Probe: ask before reporting a failure.
    if has(&Sign::ExecutorTimeout) && (dup || told_failed) {
        out.propose(
            "executor.on_timeout",
            json!("probe_status"),
            "the executor reported a timed-out call as failed: probe the ticket's status first",
        );
    }
    if (told_failed || dup) && get(doc, "executor.on_timeout") == Some(&json!("probe_status")) {
        out.propose(
            "executor.probe_after",
            json!("any_failure"),
            "an error answer after the refund committed was reported as a failure: probe after any failure",
        );
    }
    if has(&Sign::ProbeSaidNone) {
        out.propose(
            "refunds_service.status_source",
            json!("ledger"),
            "a probe said none while a request was in flight: read the service's ledger",
        );
        out.propose(
            "refunds_service.sdk_timeout_recorded_as",
            json!("unknown"),
            "a call with no answer was recorded as failed, so the probe said none: record it as unknown",
        );
    }

    // Time: the timeout, the pool and what a timeout cancels.
    if has(&Sign::ExecutorTimeout) {
        if let Some(ms) = millis(doc, "executor.timeout") {
            let mut seen = BTreeSet::new();
            for t in [15_000u64.max(ms * 2)] {
                if t > ms && seen.insert(t) {
                    out.push(Move::new(
                        "executor.timeout",
                        json!(duration_text(t)),
                        "the call outlived the executor's timeout: wait longer",
                    ));
                }
            }
        }
        if has(&Sign::PoolQueue) {
            if let Some(n) = get(doc, "refunds_service.pool_size").and_then(Value::as_u64) {
                out.push(Move::new(
                    "refunds_service.pool_size",
                    json!(n * 2),
                    "calls queued for a connection past the timeout: a larger pool",
                ));
            }
            out.propose(
                "refunds_service.deadline_propagation",
                json!(true),
                "work queued past the caller's timeout still reached the provider: propagate the deadline",
            );
            out.propose(
                "executor.cancellation",
                json!("queued_only"),
                "work queued past the caller's timeout still reached the provider: cancel what has not reached it",
            );
        }
    }
    if has(&Sign::NoRefund) {
        out.propose(
            "executor.cancellation",
            json!("none"),
            "cancelled work left the ticket with no refund: let started work finish",
        );
        out.propose(
            "refunds_service.deadline_propagation",
            json!(false),
            "a propagated deadline dropped the ticket's only request",
        );
        if has(&Sign::Escalated) {
            out.propose(
                "humans.enabled",
                json!(true),
                "the escalation reached no one: have humans take escalations",
            );
        }
    }

    // Humans: look before a manual refund.
    if has(&Sign::HumanManualRefund) && dup {
        out.propose(
            "humans.check_probability",
            json!(1.0),
            "a human refunded from the dashboard without checking: always check the provider first",
        );
        out.propose(
            "humans.check_service_status",
            json!(true),
            "a human refunded while the first request was still pending: check the service's status too",
        );
        out.propose(
            "humans.manual_refund_via",
            json!("tool"),
            "a human's dashboard refund carries no key: re-run the tool instead, under the ticket's key",
        );
    }
    let mut list = out.list;
    list.sort();
    list.dedup_by(|a, b| a.path == b.path && a.value == b.value);
    list
}

/// The changes proposed so far, over the candidate's document.
struct Out<'a> {
    doc: &'a Value,
    list: Vec<Move>,
}

impl Out<'_> {
    /// `path` set to `value`, when the scenario has that field and it differs.
    fn propose(&mut self, path: &str, value: Value, why: &str) {
        if get(self.doc, path).is_some_and(|now| *now != value) {
            self.list.push(Move::new(path, value, why));
        }
    }

    fn push(&mut self, m: Move) {
        self.list.push(m);
    }
}

/// A layer field the scenario leaves to its default (`show` omits some): proposed all the same.
fn out_push_absent(
    out: &mut Vec<Move>,
    doc: &Value,
    base: &str,
    field: &str,
    v: Value,
    layer: &str,
) {
    if get(doc, base).is_some() {
        out.push(Move::new(
            &format!("{base}.{field}"),
            v,
            &format!("layer {layer} sent the call again: no retries there"),
        ));
    }
}
