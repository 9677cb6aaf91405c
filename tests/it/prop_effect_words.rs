//! Your own tool's words over generated worlds: a world whose tool declares an effect other
//! than `refund` (charge, payout, order, a free noun) prints no refund word in `run`'s summary,
//! a duplicated ticket's story, `lint`, or the HTML report — whatever layers, deliveries,
//! providers and faults the world draws. The same world as a refund says "refund", so the
//! check has teeth.

use proptest::strategy::{Strategy, ValueTree};

use refundsim::explore::strategy::{
    world, world_with_breakers, world_with_hedges, world_with_mcp_client, world_with_redelivery,
    world_with_time_limits,
};
use refundsim::explore::Case;

use crate::common::prop::sampler;
use crate::common::refundsim;

/// `text` without the command's name and the files the test wrote, lower-cased.
fn plain(text: &str, dir: &std::path::Path) -> String {
    text.replace(&dir.display().to_string(), "DIR")
        .replace("refundsim", "")
        .to_lowercase()
}

fn out(args: &[&str]) -> String {
    let o = refundsim().args(args).output().unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// Every output of `case` with its tool's effect set to `effect`: run's summary, the story of
/// its first duplicated ticket (or ticket 1), lint, and (with `html`) the report.
fn outputs(case: &Case, effect: &str, dir: &std::path::Path, html: bool) -> String {
    let mut sc = serde_json::to_value(&case.scenario).unwrap();
    let tool = sc["agent"]["tool"].clone();
    // The team's own tool: its name and effect (a refund keeps the incident's tool name).
    let name = if effect == "refund" {
        tool.as_str().unwrap().to_string()
    } else {
        format!("make_{}", effect.replace(' ', "_"))
    };
    for t in sc["tools"].as_array_mut().unwrap() {
        if t["name"] == tool {
            t["effect"] = effect.into();
            t["name"] = name.clone().into();
            t["description"] = format!("Make one {effect} for a ticket.").into();
        }
    }
    sc["agent"]["tool"] = name.into();
    let file = dir.join(format!("world-{effect}.json").replace(' ', "-"));
    std::fs::write(&file, serde_json::to_string_pretty(&sc).unwrap()).unwrap();
    let f = file.to_str().unwrap();
    let json: serde_json::Value = serde_json::from_str(&out(&["run", f, "--json"])).unwrap();
    let ticket = json["duplicated_ticket_ids"][0]
        .as_u64()
        .unwrap_or(1)
        .to_string();
    let mut all = out(&["run", f, "--ticket", &ticket]);
    all += &out(&["lint", f]);
    // Each finding's fix, in the effect's words (`service.…`, `work_after_effect`), is still
    // a valid `--set` of this file.
    let lint: serde_json::Value = serde_json::from_str(&out(&["lint", f, "--json"])).unwrap();
    for finding in lint["findings"].as_array().unwrap() {
        let fix: Vec<String> = finding["fix"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|v| format!("--set={}", v.as_str().unwrap()))
                    .collect()
            })
            .unwrap_or_default();
        if fix.is_empty() {
            continue;
        }
        let mut args = vec!["lint", f];
        args.extend(fix.iter().map(String::as_str));
        let o = refundsim().args(&args).output().unwrap();
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{effect}: the fix of {} is not a valid --set: {}",
            finding["id"],
            String::from_utf8_lossy(&o.stderr)
        );
    }
    if html {
        let page = dir.join("page.html");
        out(&["report", f, "--out", page.to_str().unwrap()]);
        all += &std::fs::read_to_string(&page).unwrap();
    }
    all
}

/// Draws one world from a strategy.
type Draw = dyn Fn(&mut proptest::test_runner::TestRunner) -> Case;

#[test]
fn non_refund_worlds_print_no_refund_word() {
    let mut r = sampler(61);
    let dir = tempfile::tempdir().unwrap();
    let strategies: Vec<Box<Draw>> = vec![
        Box::new(|r| world().new_tree(r).unwrap().current()),
        Box::new(|r| world_with_breakers().new_tree(r).unwrap().current()),
        Box::new(|r| world_with_hedges().new_tree(r).unwrap().current()),
        Box::new(|r| world_with_mcp_client().new_tree(r).unwrap().current()),
        Box::new(|r| world_with_redelivery().new_tree(r).unwrap().current()),
        Box::new(|r| world_with_time_limits().new_tree(r).unwrap().current()),
    ];
    let effects = ["charge", "payout", "order", "gift card"];
    let mut duplicated = 0;
    for round in 0..4 {
        for (i, draw) in strategies.iter().enumerate() {
            let case = draw(&mut r);
            let effect = effects[(round + i) % effects.len()];
            let text = outputs(&case, effect, dir.path(), i == 0 && round == 0);
            let said = plain(&text, dir.path());
            if let Some(at) = said.find("refund") {
                let from = at.saturating_sub(120);
                panic!(
                    "a {effect} world printed a refund word: …{}…\nscenario: {}",
                    &said[from..(at + 60).min(said.len())],
                    serde_json::to_string(&case.scenario).unwrap()
                );
            }
            duplicated += usize::from(text.contains("more than once"));
            // The same world as a refund speaks of refunds: the check above can fail.
            if round == 0 {
                let as_refund = plain(&outputs(&case, "refund", dir.path(), false), dir.path());
                assert!(as_refund.contains("refund"), "{as_refund}");
            }
        }
    }
    assert!(
        duplicated >= 3,
        "too few worlds with a duplicate: {duplicated}"
    );
}
