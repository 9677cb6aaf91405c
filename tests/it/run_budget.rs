//! The run budget as a value (issue 28): a run watched under a budget returns an error instead
//! of ending the process, the library's own runs are never stopped, and of several runs stopped
//! the one reported is the first in the command's order, whichever stopped first in time.

use refundsim::run::{run, run_watched, Invocation};
use refundsim::scenario::{load, load_within, RunBudget, RunWatch};

use crate::common::INCIDENT;

/// The incident at a budget of 20,000 engine events: admitted with no limit, stopped while
/// running by a watch (it runs about 98,000), and run to the end by the library's `run`.
fn incident_and_small_budget() -> (refundsim::scenario::Scenario, RunBudget) {
    let budget = RunBudget {
        max_events: 20_000,
        ..RunBudget::default()
    };
    let sc = load_within(INCIDENT.as_ref(), &[], &[], &RunBudget::UNLIMITED).unwrap();
    (sc, budget)
}

#[test]
fn a_watched_run_over_the_budget_is_an_error_value_and_the_library_run_is_never_stopped() {
    let (sc, budget) = incident_and_small_budget();
    let how = Invocation {
        scenario_path: INCIDENT.into(),
        ..Invocation::default()
    };
    let watch = RunWatch::new(budget);
    let stop = run_watched(&sc, 157, &how, &watch, 0).unwrap_err();
    let text = stop.to_string();
    for needle in [
        "scenario \"carrier-outage\", seed 157: stopped over the run budget at ",
        "engine events, past the budget of 20,000 (the estimate before the run was about 98,220)",
        "(run alone: refundsim run scenarios/carrier-outage.json --seed 157 --max-events 20000)",
    ] {
        assert!(text.contains(needle), "{text:?} lacks {needle:?}");
    }
    assert_eq!(watch.verdict(), Err(stop));
    // The same scenario through the library's run: never stopped, the incident's numbers.
    let out = run(&sc, 157, &how);
    assert_eq!(out.report.duplicate_refund_tickets(), 43);
    assert!(out.report.sim_events > 20_000, "{}", out.report.sim_events);
    // Under a budget it fits, a watched run is the plain run.
    let roomy = RunWatch::new(RunBudget::default());
    let watched = run_watched(&sc, 157, &how, &roomy, 0).unwrap();
    assert_eq!(
        serde_json::to_value(&watched.report).unwrap(),
        serde_json::to_value(&out.report).unwrap()
    );
    assert_eq!(roomy.verdict(), Ok(()));
}

#[test]
fn the_stop_reported_is_the_first_in_the_commands_order_not_the_first_in_time() {
    let (sc, budget) = incident_and_small_budget();
    let how = Invocation::default();
    let watch = RunWatch::new(budget);
    // Seed 9 runs first in time but sits at order 5; seed 3 at order 2 stops later.
    let later = run_watched(&sc, 9, &how, &watch, 5).unwrap_err();
    assert!(later.to_string().contains("seed 9:"), "{later}");
    let first = run_watched(&sc, 3, &how, &watch, 2).unwrap_err();
    assert!(first.to_string().contains("seed 3:"), "{first}");
    assert_eq!(watch.verdict(), Err(first.clone()));
    // A run placed after the first stop is abandoned: its error is the first stop.
    assert_eq!(run_watched(&sc, 11, &how, &watch, 7).unwrap_err(), first);
}

#[test]
fn loading_admits_against_the_budget_it_is_given() {
    let small = RunBudget {
        max_events: 1_000,
        ..RunBudget::default()
    };
    let err = load_within(INCIDENT.as_ref(), &[], &[], &small)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("arrivals.schedule: over the run budget: about 3,111 tickets"),
        "{err}"
    );
    assert!(err.contains("the budget is 1,000 engine events"), "{err}");
    assert!(load(INCIDENT.as_ref(), &[], &[]).is_ok());
}
