//! Issue 27, item 4: a counterexample has nothing extra in it. For every shipped finding and
//! for the violations of the incident, `probe-only.json` and `key-only.json`, `explore`'s
//! minimal scenario still violates a safety invariant, and removing any one of its tickets makes
//! the violation disappear. (Before, the probe-only violation on ticket 4 was shrunk to a world
//! of 4 tickets, tickets 1–3 playing no part.)

use std::path::PathBuf;

use refundsim::explore::check_scenario;
use refundsim::explore::search::{explore, ExploreOptions, Outcome};
use refundsim::scenario::load;

fn minimal_of(scenario: &str, policies: &[&str]) -> refundsim::scenario::Scenario {
    let policies: Vec<PathBuf> = policies.iter().map(PathBuf::from).collect();
    let sc = load(scenario.as_ref(), &policies, &[]).unwrap();
    let opts = ExploreOptions {
        cases: 2000,
        seed: 1,
        ..ExploreOptions::default()
    };
    match explore(&sc, &opts, || {}) {
        Outcome::Found { minimal, .. } => *minimal,
        other => panic!("{scenario} {policies:?}: expected a violation, got {other:?}"),
    }
}

fn assert_every_ticket_needed(what: &str, minimal: &refundsim::scenario::Scenario) {
    assert!(
        check_scenario(minimal).is_err(),
        "{what}: the minimal scenario violates nothing"
    );
    let n = minimal.arrivals.tickets.len();
    for i in 0..n {
        let mut fewer = minimal.clone();
        let gone = fewer.arrivals.tickets.remove(i);
        if fewer.arrivals.tickets.is_empty() {
            continue;
        }
        assert!(
            check_scenario(&fewer).is_ok(),
            "{what}: ticket {} of {n} is not needed: the violation remains without it",
            gone.id
        );
    }
}

#[test]
fn the_incidents_and_the_single_fixes_counterexamples_have_no_extra_ticket() {
    for policies in [
        &[][..],
        &["policies/probe-only.json"][..],
        &["policies/key-only.json"][..],
    ] {
        let minimal = minimal_of("scenarios/carrier-outage.json", policies);
        assert_every_ticket_needed(&format!("carrier-outage {policies:?}"), &minimal);
    }
    // probe-only's 500-after-commit needs one ticket, not the four the shrinker left before.
    let minimal = minimal_of(
        "scenarios/carrier-outage.json",
        &["policies/probe-only.json"],
    );
    assert_eq!(minimal.arrivals.tickets.len(), 1);
}

#[test]
fn every_shipped_findings_counterexample_has_no_extra_ticket() {
    let mut files: Vec<PathBuf> = std::fs::read_dir("scenarios/findings")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "{files:?}");
    for f in files {
        let minimal = minimal_of(f.to_str().unwrap(), &[]);
        assert_every_ticket_needed(&f.display().to_string(), &minimal);
    }
}
