//! An MCP client in generated worlds (`strategy::world_with_mcp_client`): the worlds draw its
//! settings, the claim holds with it (the per-ticket key makes a re-issued or duplicated call's
//! second run a replay), and without a key its second run is found and shrinks to a small world
//! that the per-ticket key closes.
//!
//! Fixed proptest seeds and case budgets, which `PROPTEST_CASES` overrides
//! (`common::prop::runner`).

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{TestCaseError, TestError};

use refundsim::explore::strategy::{world_with_mcp_client, MCP_LAYER};
use refundsim::explore::{check_case, check_case_claim, policy, Case};
use refundsim::scenario::{KeyMode, Scenario};

use crate::common::prop::{runner, sampler};

/// Whether `s`'s MCP client can send a tool call a second time.
fn resends(s: &Scenario) -> bool {
    s.layers.get(MCP_LAYER).is_some_and(|l| {
        l.mcp_duplicates() || (l.mcp_streams_break() && l.mcp_reissues() && l.retries() > 0)
    })
}

/// The worlds draw every setting of the client: breaking streams (by probability and by
/// script), no re-issue, duplicated calls, short request timeouts, timeouts without
/// `notifications/cancelled` and re-sent ones, and the tool server's request key.
#[test]
fn covers_the_mcp_client_settings_the_worlds_draw() {
    let mut r = sampler(31);
    let strategy = world_with_mcp_client();
    let (mut client, mut by_p, mut scripted, mut no_reissue, mut dup) = (0, 0, 0, 0, 0);
    let (mut short, mut kept, mut resent, mut keyed, mut second) = (0, 0, 0, 0, 0);
    for _ in 0..256 {
        let s = strategy.new_tree(&mut r).unwrap().current().scenario;
        let Some(l) = s.layers.get(MCP_LAYER) else {
            continue;
        };
        client += 1;
        by_p += usize::from(l.stream_break_probability.unwrap_or(0.0) > 0.0);
        scripted += usize::from(l.stream_break_requests.is_some());
        no_reissue += usize::from(!l.mcp_reissues());
        dup += usize::from(l.mcp_duplicates());
        short += usize::from(l.mcp_request_timeout() < s.executor.timeout);
        kept += usize::from(!l.mcp_sends_cancelled());
        resent += usize::from(l.retries_on(refundsim::scenario::RetryOn::Timeout));
        keyed += usize::from(s.executor.request_idempotency.is_some());
        second += usize::from(resends(&s));
    }
    eprintln!(
        "of 256 worlds: client {client} (breaks by p {by_p}, scripted {scripted}, no re-issue \
         {no_reissue}, duplicates {dup}, timeout below the executor's {short}, not cancelled \
         {kept}, re-sent {resent}, server key {keyed}, a second send {second})"
    );
    assert!(client > 200, "the client is kept in most worlds: {client}");
    for n in [
        by_p, scripted, no_reissue, dup, short, kept, resent, keyed, second,
    ] {
        assert!(n > 10, "a setting drawn too rarely: {n}");
    }
}

/// The claim (`policies/keys-and-probe.json`) over worlds with an MCP client: a re-issued,
/// re-sent or duplicated `tools/call` reaches Stripe with the ticket's key and is replayed (or,
/// while the first runs, gets a 409 that the probe resolves).
#[test]
fn holds_keys_and_probe_with_an_mcp_client() {
    let mut r = runner(128, 95);
    let second = std::cell::Cell::new(0u64);
    let result = r.run(&world_with_mcp_client(), |mut case: Case| {
        policy::keys_and_probe(&mut case.scenario);
        second.set(second.get() + u64::from(resends(&case.scenario)));
        check_case_claim(&case)
            .map_err(|v| TestCaseError::fail(format!("{v}\n{}", v.story.join("\n"))))
    });
    if let Err(e) = result {
        panic!("the claim has a counterexample with an MCP client: {e}");
    }
    assert!(
        second.get() > 50,
        "clients that send again: {}",
        second.get()
    );
}

/// Nothing but the MCP client can repeat the refund, and it sends every call twice: no key, no
/// retries elsewhere, no humans, the client the only added layer.
fn only_the_client_repeats(s: &mut Scenario) {
    if let Some(l) = s.layers.get_mut(MCP_LAYER) {
        l.duplicate_send_probability = Some(1.0);
        l.stream_break_probability = None;
        l.stream_break_requests = None;
        l.request_timeout = None;
    }
    s.refunds_service.idempotency_key = KeyMode::None;
    s.agent.retry.max_retries = 0;
    s.executor.retry = None;
    s.executor.request_idempotency = None;
    s.refunds_service.stripe_client.max_network_retries = 0;
    s.layers.retain(|n, _| n == MCP_LAYER);
    s.stack = s.layers.contains_key(MCP_LAYER).then(|| {
        [
            "model_retry",
            MCP_LAYER,
            "executor",
            "refunds_service",
            "sdk",
        ]
        .map(String::from)
        .to_vec()
    });
    s.humans.enabled = false;
}

/// Without a key the client's second send is a second refund, found in a small world; the
/// per-ticket key, and the tool server's request key, close the same world. The search looks for that invariant only
/// (these worlds, without humans, also lose refunds a dropped request never made).
#[test]
fn breaks_without_a_key_and_the_ticket_key_closes_it() {
    let strategy = world_with_mcp_client().prop_map(|mut c| {
        only_the_client_repeats(&mut c.scenario);
        c
    });
    let twice = |case: &Case| match check_case(case) {
        Err(v) if v.invariant == "at_most_one_refund_per_ticket" => Some(v),
        _ => None,
    };
    let result = runner(256, 96).run(&strategy, |case| match twice(&case) {
        Some(v) => Err(TestCaseError::fail(v.to_string())),
        None => Ok(()),
    });
    let minimal = match result {
        Err(TestError::Fail(_, minimal)) => minimal,
        other => panic!("expected a counterexample, got {other:?}"),
    };
    let v = twice(&minimal).expect("the shrunk case still refunds twice");
    eprintln!("--- MCP client, no key: {v}\n{}", v.story.join("\n"));
    // Shrinking stops at its 4,096 iterations with 10 of the up to 30 tickets left.
    assert_eq!(minimal.scenario.arrivals.tickets.len(), 10);
    assert!(resends(&minimal.scenario), "{:?}", minimal.scenario.layers);
    assert!(
        v.story.iter().any(|l| l.contains("tools/call sent TWICE")),
        "{}",
        v.story.join("\n")
    );
    let mut fixed = minimal.clone();
    fixed.scenario.refunds_service.idempotency_key = KeyMode::PerTicket;
    assert_eq!(twice(&fixed).map(|v| v.to_string()), None);
    let mut keyed = minimal.clone();
    keyed.scenario.executor.request_idempotency = Some(Default::default());
    assert_eq!(
        twice(&keyed).map(|v| v.to_string()),
        None,
        "the server's key"
    );
}
