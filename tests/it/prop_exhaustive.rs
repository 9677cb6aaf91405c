//! Exhaustive mode on a tiny world (`scenarios/findings/tiny-world.json`: 2 tickets, 4 latency
//! choices): every schedule checked depth-first. Zero violations with the full fix; the first
//! violation, with its story, for the incident's policy and for each single fix.

use std::path::Path;

use refundsim::explore::{exhaustive::exhaustive, policy};
use refundsim::scenario::{load, Scenario};

fn tiny() -> Scenario {
    load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/findings/tiny-world.json"),
        &[],
        &[],
    )
    .unwrap()
}

#[test]
fn full_fix_holds_on_every_schedule_of_the_tiny_world() {
    let mut sc = tiny();
    policy::full_fix(&mut sc);
    let r = exhaustive(&sc, 100_000);
    assert!(r.complete, "not every schedule was visited");
    assert_eq!(r.first_violation, None);
    assert_eq!(
        r.schedules, 20,
        "distinct schedules of the tiny world under the full fix"
    );
}

#[test]
fn incident_and_each_single_fix_have_a_violating_schedule() {
    let mut sc = tiny();
    policy::incident(&mut sc);
    let r = exhaustive(&sc, 100_000);
    let (v, _) = r
        .first_violation
        .expect("the incident's policy double-refunds");
    assert_eq!(v.invariant, "at_most_one_refund_per_ticket");
    for (name, fix) in policy::SINGLE_FIXES {
        let mut sc = tiny();
        fix(&mut sc);
        let r = exhaustive(&sc, 100_000);
        let (v, choices) = r
            .first_violation
            .unwrap_or_else(|| panic!("{name}: no violating schedule in {}", r.schedules));
        assert!(
            !v.story.is_empty(),
            "{name}: the violation comes with its story"
        );
        eprintln!(
            "--- {name}: {v} after {} schedules, choices {choices:?}\n{}",
            r.schedules,
            v.story.join("\n")
        );
    }
}
