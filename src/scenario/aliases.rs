//! Other names of scenario fields, so a file can speak of its own tool and provider while
//! every file written before keeps working (issue 30): the service section as `service`
//! (`refunds_service`), the provider's settings under `provider` (`stripe.*` and
//! `refunds_service.business_id`), and the fields named after refunds by the effect
//! (`work_after_effect`, `stripe.faults.effect_pending`/`effect_failed`,
//! `humans.manual_effect_via`). The loader moves each alias to the field it names before
//! deserializing — in the file, in each policy and in the result of `--set` — so one field has
//! one value; a document that sets a field under both names is refused.

use serde_json::{Map, Value};

/// `(alias, field)`: a path a file may use and the field it sets, applied in this order (so
/// `service.business_id` is first `refunds_service.business_id`).
pub const PATH_ALIASES: [(&[&str], &[&str]); 7] = [
    (&["service"], &["refunds_service"]),
    (
        &["refunds_service", "work_after_effect"],
        &["refunds_service", "work_after_refund"],
    ),
    (
        &["stripe", "faults", "effect_pending"],
        &["stripe", "faults", "refund_pending"],
    ),
    (
        &["stripe", "faults", "effect_failed"],
        &["stripe", "faults", "refund_failed"],
    ),
    (
        &["humans", "manual_effect_via"],
        &["humans", "manual_refund_via"],
    ),
    (
        &["provider", "idempotency_key_retention"],
        &["stripe", "idempotency_key_retention"],
    ),
    (
        &["provider", "business_id"],
        &["refunds_service", "business_id"],
    ),
];

/// The name a `stack` entry may use for the `refunds_service` layer.
pub const SERVICE_LAYER_ALIAS: &str = "service";

/// Moves every alias in `doc` (a scenario or a policy) to the field it names, and `service` in
/// `stack` to `refunds_service`.
///
/// # Errors
/// The alias's path segments and a message, when `doc` also sets the field under its own name.
pub(crate) fn canonicalize(doc: &mut Value) -> Result<(), (Vec<String>, String)> {
    for (alias, field) in PATH_ALIASES {
        let Some(value) = take(doc, alias) else {
            continue;
        };
        if get(doc, field).is_some() {
            return Err((
                alias.iter().map(|s| s.to_string()).collect(),
                format!(
                    "`{}` is another name of `{}`, which is set too; expected one of the two",
                    alias.join("."),
                    field.join(".")
                ),
            ));
        }
        put(doc, field, value);
    }
    if let Some(stack) = doc.get_mut("stack").and_then(Value::as_array_mut) {
        for entry in stack {
            if entry.as_str() == Some(SERVICE_LAYER_ALIAS) {
                *entry = Value::from("refunds_service");
            }
        }
    }
    // `expect` bounds by their neutral metric names, and an exploration's expected invariant
    // by its neutral name, under the names the report keeps (so a policy's bound on
    // `duplicate_refund_tickets` merges with a file's on `duplicate_effect_tickets`).
    if let Some(expect) = doc.get_mut("expect").and_then(Value::as_object_mut) {
        for (refund, neutral) in super::effect::METRIC_ALIASES {
            if let Some(bound) = expect.remove(neutral) {
                if expect.contains_key(refund) {
                    return Err((
                        vec!["expect".into(), neutral.into()],
                        format!(
                            "{neutral:?} is another name of {refund:?}, which is bounded too; \
                             expected one of the two"
                        ),
                    ));
                }
                expect.insert(refund.to_string(), bound);
            }
        }
    }
    if let Some(finds) = doc.pointer_mut("/exploration/finds") {
        let refund = super::effect::INVARIANT_ALIASES
            .iter()
            .find(|(_, neutral)| finds.as_str() == Some(neutral))
            .map(|(refund, _)| *refund);
        if let Some(refund) = refund {
            *finds = Value::from(refund);
        }
    }
    Ok(())
}

/// A `--set` path with its leading alias replaced (`service.pool_size` →
/// `refunds_service.pool_size`, `provider.business_id` → `refunds_service.business_id`).
pub(crate) fn canonical_set_path(path: &str) -> String {
    let mut segs: Vec<String> = path.split('.').map(str::to_string).collect();
    for (alias, field) in PATH_ALIASES {
        let matches = segs.len() >= alias.len() && segs.iter().zip(alias).all(|(s, a)| s == a);
        if matches {
            let rest = segs.split_off(alias.len());
            segs = field.iter().map(|s| s.to_string()).chain(rest).collect();
        }
    }
    if segs.len() >= 2 && segs[0] == "expect" {
        segs[1] = super::effect::canonical_metric(&segs[1]).to_string();
    }
    segs.join(".")
}

/// A scenario document (as `refundsim show` prints it) in the effect-neutral spelling a
/// non-refund scenario is written in: every field of [`PATH_ALIASES`] by its alias (`service`
/// for `refunds_service`, `provider.idempotency_key_retention`, `work_after_effect`…), `service`
/// in `stack`, and `expect` bounds by their neutral metric names
/// ([`METRIC_ALIASES`](super::effect::METRIC_ALIASES)). Loading it gives the same scenario.
pub fn speak_neutrally(doc: &mut Value) {
    // Every field by its other name, the inverse of `canonicalize` (last alias first, so the
    // service's own fields move before the section is renamed).
    for (alias, field) in PATH_ALIASES.iter().rev() {
        if let Some(value) = take(doc, field) {
            put(doc, alias, value);
        }
    }
    let Some(obj) = doc.as_object_mut() else {
        return;
    };
    if let Some(stack) = obj.get_mut("stack").and_then(Value::as_array_mut) {
        for entry in stack {
            if entry.as_str() == Some("refunds_service") {
                *entry = Value::from(SERVICE_LAYER_ALIAS);
            }
        }
    }
    if let Some(expect) = obj.get_mut("expect").and_then(Value::as_object_mut) {
        for (refund, neutral) in super::effect::METRIC_ALIASES {
            if let Some(b) = expect.remove(refund) {
                expect.insert(neutral.to_string(), b);
            }
        }
    }
}

fn get<'a>(doc: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(doc, |v, seg| v.get(*seg))
}

fn take(doc: &mut Value, path: &[&str]) -> Option<Value> {
    let (last, parents) = path.split_last()?;
    let mut v = doc;
    for seg in parents {
        v = v.get_mut(*seg)?;
    }
    v.as_object_mut()?.remove(*last)
}

fn put(doc: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut v = doc;
    for seg in parents {
        let Some(obj) = v.as_object_mut() else {
            return;
        };
        v = obj
            .entry(seg.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    if let Some(obj) = v.as_object_mut() {
        obj.insert(last.to_string(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn aliases_move_to_their_fields() {
        let mut doc = json!({
            "service": {"pool_size": 3},
            "provider": {"idempotency_key_retention": "1h", "business_id": "ticket", "kind": "stripe"},
            "stack": ["model_retry", "executor", "service", "sdk"]
        });
        canonicalize(&mut doc).unwrap();
        assert_eq!(
            doc,
            json!({
                "refunds_service": {"pool_size": 3, "business_id": "ticket"},
                "stripe": {"idempotency_key_retention": "1h"},
                "provider": {"kind": "stripe"},
                "stack": ["model_retry", "executor", "refunds_service", "sdk"]
            })
        );
        let mut both = json!({"service": {}, "refunds_service": {}});
        let (path, message) = canonicalize(&mut both).unwrap_err();
        assert_eq!(path, ["service"]);
        assert!(
            message.contains("another name of `refunds_service`"),
            "{message}"
        );
        assert_eq!(
            canonical_set_path("service.pool_size"),
            "refunds_service.pool_size"
        );
        assert_eq!(
            canonical_set_path("provider.idempotency_key_retention"),
            "stripe.idempotency_key_retention"
        );
        assert_eq!(
            canonical_set_path("service.business_id"),
            "refunds_service.business_id"
        );
        assert_eq!(canonical_set_path("servicex.a"), "servicex.a");
        // show's spelling loads back to the same document.
        let original = json!({
            "refunds_service": {"work_after_refund": "1s", "business_id": "per_ticket", "pool_size": 3},
            "stripe": {"idempotency_key_retention": "1h", "faults": {"refund_pending": 0.5}},
            "humans": {"manual_refund_via": "tool"},
            "stack": ["model_retry", "executor", "refunds_service", "sdk"],
            "expect": {"duplicate_refund_tickets": {"max": 0}}
        });
        let mut shown = original.clone();
        speak_neutrally(&mut shown);
        assert!(!shown.to_string().contains("efund"), "{shown}");
        canonicalize(&mut shown).unwrap();
        // The provider section the aliases lived in is left empty: Stripe, every default.
        assert_eq!(
            shown.as_object_mut().unwrap().remove("provider"),
            Some(json!({}))
        );
        assert_eq!(shown, original);
        assert_eq!(
            canonical_set_path("expect.extra_effects.max"),
            "expect.extra_refunds.max"
        );
        assert_eq!(
            canonical_set_path("service.work_after_effect"),
            "refunds_service.work_after_refund"
        );
        let mut doc = json!({"refunds_service": {"work_after_refund": "1s"}, "service": {"work_after_effect": "2s"}});
        assert!(
            canonicalize(&mut doc).is_err(),
            "the section under two names"
        );
        let mut doc = json!({"expect": {"duplicate_effect_tickets": {"max": 0}}, "exploration": {"finds": "no_lost_effect"}});
        canonicalize(&mut doc).unwrap();
        assert_eq!(
            doc,
            json!({"expect": {"duplicate_refund_tickets": {"max": 0}}, "exploration": {"finds": "no_lost_refund"}})
        );
        let mut both =
            json!({"expect": {"duplicate_effect_tickets": {}, "duplicate_refund_tickets": {}}});
        assert_eq!(
            canonicalize(&mut both).unwrap_err().0,
            ["expect", "duplicate_effect_tickets"]
        );
        let mut doc = json!({"service": {"work_after_effect": "2s"}, "humans": {"manual_effect_via": "tool"}});
        canonicalize(&mut doc).unwrap();
        assert_eq!(
            doc,
            json!({"refunds_service": {"work_after_refund": "2s"}, "humans": {"manual_refund_via": "tool"}})
        );
    }
}
