//! Which `expect` a scenario carries once policies and `--set` apply (issue 11): a scenario's
//! own `expect` is its contract *as written*; a policy or `--set` that changes what is simulated
//! makes another world, whose gate is the safety invariants, each replaced by the bound a
//! policy states for that metric.
//!
//! The rule, per metric of the effective `expect`:
//!
//! 1. The policies and `--set`s leave the simulated world as written (every field but the
//!    display-only ones — `name`, `description`, `$comment`, `clock_origin` —, the gate's
//!    own `gate` and `exploration`, and `seed` and `expect` is equal after they apply): the scenario's `expect`; each policy's `expect`
//!    replaces the bound of every metric it names, as in rule 2 (issue 27: merging a policy's
//!    `mean_max` 5 field by field into the scenario's `mean_min` 20 made an invalid bound and
//!    an exit 2 on a valid comparison), and `--set expect.…` applies last, field by field.
//! 2. They change the world: start from the safety invariants ([`default_expect`]); each
//!    policy's `expect`, in order, *replaces* the bound of every metric it names (a later
//!    policy naming the same metric merges into the earlier one's bound, RFC 7396), and `null`
//!    for a metric removes its bound (a policy that demonstrates duplicates says
//!    `"over_refund_cents": null`); `"expect": null` starts over from the safety invariants.
//!    Then `--set expect.…` applies on top. The scenario's own `expect` is not used: a fix
//!    never restates it with nulls.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{Map, Value};

use super::config::{default_expect, Scenario};
use super::error::ScenarioError;
use super::set::apply_set;

/// Where a loaded scenario's `expect` came from (see [`super::load_with_expect_source`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ExpectSource {
    /// The scenario's own (written in the file, or the default when it has none): no policy or
    /// `--set` changed what is simulated.
    Scenario,
    /// The safety invariants (duplicates, over-refunds, lost refunds, conservation all ≤ 0):
    /// a policy or `--set` changed the world and no policy states an `expect`.
    SafetyInvariants,
    /// The safety invariants with the bounds a policy's `expect` states replacing theirs.
    Policies,
}

impl ExpectSource {
    /// One line for reports, e.g. `the scenario's own`.
    pub fn describe(self) -> &'static str {
        match self {
            ExpectSource::Scenario => "the scenario's own (the scenario as written)",
            ExpectSource::SafetyInvariants => {
                "the safety invariants (policy or --set changes the scenario; no policy expect)"
            }
            ExpectSource::Policies => {
                "the policy's own, over the safety invariants (policy changes the scenario)"
            }
        }
    }
}

/// Whether `merged` simulates anything other than `base`: every field but `name`,
/// `description`, `$comment`, `clock_origin` (it only sets the clock that stories print),
/// `gate` and `exploration` (what the gate runs, not what one run simulates), `seed` and
/// `expect` is compared.
pub(super) fn changes_world(base: &Scenario, merged: &Scenario) -> bool {
    world(base) != world(merged)
}

fn world(s: &Scenario) -> Scenario {
    let mut w = s.clone();
    w.name.clear();
    w.description.clear();
    w.comment = None;
    w.clock_origin = None;
    w.gate = Default::default();
    w.exploration = Default::default();
    w.seed = 0;
    w.expect.clear();
    w
}

/// The effective `expect` as JSON, from the policies' patches in order and every `--set` (only
/// those under `expect` act here), with its source. `own` is the scenario's own `expect` when
/// the policies and `--set`s leave the world as written (rule 1), `None` when they change it
/// (rule 2: start from the safety invariants). In both, a policy's bound for a metric
/// *replaces* the bound it starts from (so a policy's `{"mean_max": 5}` never meets the
/// scenario's `mean_min` 20 field by field and makes an invalid bound); a later policy naming
/// the same metric merges into the earlier policy's bound (RFC 7396). `None` in the result
/// means no `expect` member: the field's default applies (the safety invariants).
pub(super) fn policies_expect(
    own: Option<Value>,
    patches: &[Value],
    sets: &[String],
) -> Result<(Option<Value>, ExpectSource), ScenarioError> {
    let safety = || serde_json::to_value(default_expect()).expect("bounds serialize");
    let as_written = own.is_some();
    let start = || own.clone().unwrap_or_else(safety);
    let mut expect = start();
    let mut named: BTreeSet<String> = BTreeSet::new();
    let mut source = if as_written {
        ExpectSource::Scenario
    } else {
        ExpectSource::SafetyInvariants
    };
    for patch in patches {
        let Some(pe) = patch.get("expect") else {
            continue;
        };
        if !as_written {
            source = ExpectSource::Policies;
        }
        match pe {
            Value::Null => {
                // `expect: null` removes the member: the safety invariants, as ever.
                expect = safety();
                named.clear();
                if !as_written {
                    source = ExpectSource::SafetyInvariants;
                }
            }
            Value::Object(bounds) => {
                let Some(map) = expect.as_object_mut() else {
                    // The scenario's own `expect` is not an object: deserialization says so.
                    return Ok((Some(expect), source));
                };
                for (metric, b) in bounds {
                    if b.is_null() {
                        map.remove(metric);
                    } else if named.contains(metric) {
                        json_patch::merge(map.entry(metric.clone()).or_insert(Value::Null), b);
                    } else {
                        // Replaces the safety bound whole; `null` fields in it (old policies
                        // that removed the scenario's fields) are dropped by the merge.
                        let mut fresh = Value::Object(Map::new());
                        json_patch::merge(&mut fresh, b);
                        map.insert(metric.clone(), fresh);
                    }
                    named.insert(metric.clone());
                }
            }
            // Not an object: deserialization reports it, naming the policy.
            other => return Ok((Some(other.clone()), ExpectSource::Policies)),
        }
    }
    let mut wrapper = Value::Object(Map::from_iter([("expect".to_string(), expect)]));
    for set in sets.iter().filter(|s| is_expect_set(s)) {
        apply_set(&mut wrapper, set)?;
        if source == ExpectSource::SafetyInvariants && !as_written {
            source = ExpectSource::Policies;
        }
    }
    Ok((wrapper.get("expect").cloned(), source))
}

/// `--set expect=…` or `--set expect.…=…`.
fn is_expect_set(arg: &str) -> bool {
    arg.split_once('=')
        .map(|(p, _)| p.trim())
        .is_some_and(|p| p == "expect" || p.starts_with("expect."))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::test_support::{with, MINIMAL};
    use crate::scenario::{load_with_expect_source, Bound};
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    /// The incident's shape: a scenario that *expects* duplicates.
    fn demo() -> String {
        with(
            r#"{"expect":{"duplicate_refund_tickets":{"min":1,"mean_min":20,"violating_seeds_max":0.25}}}"#,
        )
    }

    fn load(
        text: &str,
        policies: &[&str],
        sets: &[&str],
    ) -> (BTreeMap<String, Bound>, ExpectSource) {
        let base = crate::scenario::test_support::file(text);
        let files: Vec<_> = policies
            .iter()
            .map(|p| crate::scenario::test_support::file(p))
            .collect();
        let paths: Vec<PathBuf> = files.iter().map(|f| f.path().to_path_buf()).collect();
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let (s, src) =
            load_with_expect_source(base.path(), &paths, &sets, &Default::default()).unwrap();
        (s.expect, src)
    }

    fn max(m: f64) -> Bound {
        Bound::at_most(m)
    }

    #[test]
    fn the_scenario_as_written_keeps_its_expect() {
        let (e, src) = load(&demo(), &[], &[]);
        assert_eq!(src, ExpectSource::Scenario);
        assert_eq!(e["duplicate_refund_tickets"].min, Some(1.0));
        // Changing only the name, description, seed or expect is still the scenario as written.
        let (e, src) = load(
            &demo(),
            &[r#"{"name":"x","description":"y","seed":9}"#],
            &["expect.duplicate_refund_tickets.mean_min=30"],
        );
        assert_eq!(src, ExpectSource::Scenario);
        assert_eq!(e["duplicate_refund_tickets"].mean_min, Some(30.0));
        assert_eq!(e["duplicate_refund_tickets"].min, Some(1.0));
    }

    #[test]
    fn display_only_fields_never_switch_the_expect() {
        for set in [
            r#"clock_origin="2024-05-14T10:00:00Z""#,
            r#"description="another story""#,
            r#"name="renamed""#,
        ] {
            let (e, src) = load(&demo(), &[], &[set]);
            assert_eq!(src, ExpectSource::Scenario, "{set}");
            assert_eq!(e["duplicate_refund_tickets"].mean_min, Some(20.0), "{set}");
        }
    }

    #[test]
    fn a_policy_bound_replaces_the_scenarios_own_bound_for_its_metric() {
        // key-only's bound on a policy that leaves the world as written (its key set back to
        // the scenario's `none`): the policy's `mean_max` 5 replaces the scenario's bound whole,
        // instead of meeting its `mean_min` 20 and making an invalid bound (exit 2).
        let (e, src) = load(
            &demo(),
            &[r#"{"expect":{"duplicate_refund_tickets":{"mean_max":5},"over_refund_cents":null}}"#],
            &[],
        );
        assert_eq!(src, ExpectSource::Scenario);
        assert_eq!(
            e["duplicate_refund_tickets"],
            Bound {
                mean_max: Some(5.0),
                ..Bound::default()
            }
        );
        // A later policy naming the same metric still merges into the earlier policy's bound.
        let (e, _) = load(
            &demo(),
            &[
                r#"{"expect":{"duplicate_refund_tickets":{"mean_max":5}}}"#,
                r#"{"expect":{"duplicate_refund_tickets":{"min":1}}}"#,
            ],
            &[],
        );
        assert_eq!(e["duplicate_refund_tickets"].min, Some(1.0));
        assert_eq!(e["duplicate_refund_tickets"].mean_max, Some(5.0));
        assert_eq!(e["duplicate_refund_tickets"].mean_min, None);
    }

    #[test]
    fn a_change_without_policy_expect_is_gated_by_the_safety_invariants() {
        for (policies, sets) in [
            (vec![r#"{"executor":{"timeout":"15s"}}"#], vec![]),
            (vec![], vec!["refunds_service.pool_size=20"]),
        ] {
            let (e, src) = load(&demo(), &policies, &sets);
            assert_eq!(src, ExpectSource::SafetyInvariants);
            assert_eq!(e, default_expect());
        }
    }

    #[test]
    fn a_policy_expect_replaces_the_safety_bounds_it_names_and_keeps_the_others() {
        let (e, src) = load(
            &demo(),
            &[
                r#"{"executor":{"timeout":"15s"},"expect":{"duplicate_refund_tickets":{"mean_max":5},"over_refund_cents":null,"false_failures":{"max":0}}}"#,
            ],
            &[],
        );
        assert_eq!(src, ExpectSource::Policies);
        let want: BTreeMap<String, Bound> = [
            (
                "duplicate_refund_tickets",
                Bound {
                    mean_max: Some(5.0),
                    ..Bound::default()
                },
            ),
            ("false_failures", max(0.0)),
            ("lost_refunds", max(0.0)),
            ("conservation_violations", max(0.0)),
        ]
        .into_iter()
        .map(|(m, b)| (m.to_string(), b))
        .collect();
        assert_eq!(e, want);
    }

    #[test]
    fn old_policies_with_nulls_mean_the_same() {
        let old = r#"{"executor":{"timeout":"15s"},"expect":{"duplicate_refund_tickets":{"min":null,"violating_seeds_max":null,"mean_min":null,"max":0}}}"#;
        let (e, _) = load(&demo(), &[old], &[]);
        assert_eq!(e, default_expect());
    }

    #[test]
    fn later_policies_merge_into_earlier_bounds_and_sets_apply_last() {
        let a = r#"{"executor":{"timeout":"15s"},"expect":{"escalations":{"min":1}}}"#;
        let b = r#"{"expect":{"escalations":{"max":9}}}"#;
        let (e, _) = load(MINIMAL, &[a, b], &["expect.lost_refunds=null"]);
        assert_eq!(
            e["escalations"],
            Bound {
                min: Some(1.0),
                max: Some(9.0),
                ..Bound::default()
            }
        );
        assert!(!e.contains_key("lost_refunds"));
        assert!(e.contains_key("duplicate_refund_tickets"));
        // `expect: null` starts over from the safety invariants.
        let (e, src) = load(&demo(), &[a, r#"{"expect":null}"#], &[]);
        assert_eq!((e, src), (default_expect(), ExpectSource::SafetyInvariants));
    }

    #[test]
    fn errors_in_a_policy_expect_name_the_policy() {
        let base = crate::scenario::test_support::file(&demo());
        let p = crate::scenario::test_support::file(
            r#"{"executor":{"timeout":"15s"},"expect":{"dups":{"max":0}}}"#,
        );
        let msg = load_with_expect_source(
            base.path(),
            &[p.path().to_path_buf()],
            &[],
            &Default::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            msg.contains("expect.dups: unknown metric \"dups\""),
            "{msg}"
        );
        assert!(msg.contains("(after applying policy "), "{msg}");
    }
}
