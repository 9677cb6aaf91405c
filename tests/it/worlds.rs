//! The three worlds that are not the refund incident (`scenarios/worlds/charge-card.json`,
//! `payout-queue.json`, `order-mcp.json`, docs/worlds.md): each bare run has its duplicates, its
//! fix in `policies/worlds/NAME.fix.json` has none, and no output a user reads says "refund"
//! (the command name `refundsim` and file names aside; the JSON keys keep their documented refund
//! aliases, so of `run --json` only the story is read).

use std::path::Path;

use serde_json::Value;

use crate::common::{refundsim, run_json};

/// A world: its name, the bare run's duplicate tickets and extra effects on its own seed.
const WORLDS: [(&str, u64, u64); 3] = [
    ("charge-card", 4, 20),
    ("payout-queue", 2, 3),
    ("order-mcp", 3, 3),
];

fn scenario(name: &str) -> String {
    format!("scenarios/worlds/{name}.json")
}

fn fix(name: &str) -> String {
    format!("policies/worlds/{name}.fix.json")
}

fn num(report: &Value, key: &str) -> u64 {
    report[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} in {report}"))
}

/// stdout of `refundsim ARGS`, whose exit code must be one of `codes`.
fn text(args: &[&str], codes: &[i32]) -> String {
    let out = refundsim().args(args).output().expect("runs");
    let code = out.status.code().unwrap_or(-1);
    assert!(
        codes.contains(&code),
        "refundsim {}: exit {code}\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// `s` without the command name and without file names (any word naming a `.json`, `.jsonl` or
/// `.html` file, or a path under the test's temporary directory).
fn scrub(s: &str, dir: &Path) -> String {
    let dir = dir.display().to_string();
    s.replace(&dir, "")
        .replace("refundsim", "")
        .split(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '`')
        .filter(|w| !w.contains(".json") && !w.contains(".html"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Panics naming the output and the line if `s` says "refund" in any case.
fn assert_no_refund(what: &str, s: &str, dir: &Path) {
    let scrubbed = scrub(s, dir);
    if let Some(i) = scrubbed.to_ascii_lowercase().find("refund") {
        let from = scrubbed[..i]
            .char_indices()
            .rev()
            .nth(80)
            .map_or(0, |(j, _)| j);
        let to = (i + 80).min(scrubbed.len());
        let to = (to..=scrubbed.len())
            .find(|&j| scrubbed.is_char_boundary(j))
            .unwrap_or(scrubbed.len());
        panic!("{what} says refund: …{}…", &scrubbed[from..to]);
    }
}

#[test]
fn each_world_has_duplicates_and_its_fix_has_none() {
    for (name, tickets, extra) in WORLDS {
        let bare = run_json(&[&scenario(name)]);
        assert_eq!(
            (
                num(&bare, "duplicate_effect_tickets"),
                num(&bare, "extra_effects")
            ),
            (tickets, extra),
            "{name} bare"
        );
        assert_eq!(
            bare["expectations_met"], true,
            "{name}: its own expect holds"
        );
        let fixed = run_json(&[&scenario(name), "--policy", &fix(name)]);
        assert_eq!(
            (
                num(&fixed, "duplicate_effect_tickets"),
                num(&fixed, "extra_effects"),
                num(&fixed, "lost_effects")
            ),
            (0, 0, 0),
            "{name} under its fix"
        );
    }
    // The payout world's duplicates empty the balance: two sellers are not paid at all.
    assert_eq!(
        num(&run_json(&[&scenario("payout-queue")]), "lost_effects"),
        2
    );
}

#[test]
fn no_output_of_a_world_says_refund() {
    let dir = tempfile::tempdir().unwrap();
    for (name, _, _) in WORLDS {
        let sc = scenario(name);
        let fx = fix(name);
        let bare = run_json(&[&sc]);
        let ticket = bare["duplicated_ticket_ids"][0]
            .as_u64()
            .unwrap_or_else(|| panic!("{name}: a duplicated ticket"))
            .to_string();
        let d = dir.path();
        let run = text(&["run", &sc], &[0]);
        assert_no_refund(&format!("{name}: run"), &run, d);
        let story = text(&["run", &sc, "--ticket", &ticket], &[0]);
        assert!(story.contains(&format!("ticket {ticket}:")), "{story}");
        assert_no_refund(&format!("{name}: run --ticket {ticket}"), &story, d);
        let fixed_story = text(&["run", &sc, "--policy", &fx, "--ticket", &ticket], &[0]);
        assert_no_refund(&format!("{name}: the fix's story"), &fixed_story, d);
        let json = run_json(&[&sc, "--ticket", &ticket]);
        let lines: Vec<&str> = json["story"]
            .as_array()
            .expect("a story with --ticket")
            .iter()
            .map(|l| l.as_str().expect("a line"))
            .collect();
        assert!(!lines.is_empty());
        assert_no_refund(&format!("{name}: run --json story"), &lines.join("\n"), d);
        for args in [
            vec!["lint", sc.as_str()],
            vec!["lint", &sc, "--policy", &fx],
        ] {
            let out = text(&args, &[0, 1]);
            assert_no_refund(&args.join(" "), &out, d);
        }
        for args in [
            vec!["check", sc.as_str()],
            vec!["check", &sc, "--policy", &fx, "--explore-cases", "256"],
        ] {
            let out = text(&args, &[0]);
            assert_no_refund(&args.join(" "), &out, d);
        }
        // The payout fix leaves the balance open (exploration.finds): `explore` finds it and
        // prints the offending ticket's story.
        if name == "payout-queue" {
            let min = d.join("payout-minimal.json");
            let min_s = min.to_str().unwrap();
            let out = text(
                &[
                    "explore", &sc, "--policy", &fx, "--cases", "256", "--out", min_s,
                ],
                &[1],
            );
            assert!(out.contains("no_lost_effect violated"), "{out}");
            assert_no_refund("explore", &out, d);
        }
        // `show` prints the world in its own spelling, which runs the same.
        let shown = text(&["show", &sc], &[0]);
        // The author's own words (`$comment`, `description`) are theirs to write.
        let mut fields: Value = serde_json::from_str(&shown).unwrap();
        for own in ["$comment", "description"] {
            fields.as_object_mut().unwrap().remove(own);
        }
        assert_no_refund(&format!("{name}: show"), &fields.to_string(), d);
        let shown_file = d.join(format!("{name}-shown.json"));
        std::fs::write(&shown_file, &shown).unwrap();
        let again = run_json(&[shown_file.to_str().unwrap()]);
        assert_eq!(
            (
                num(&again, "duplicate_effect_tickets"),
                num(&again, "extra_effects")
            ),
            (
                num(&bare, "duplicate_effect_tickets"),
                num(&bare, "extra_effects")
            ),
            "{name}: show's spelling runs the same"
        );
        let diff = text(
            &[
                "diff",
                &sc,
                "--baseline",
                &fx,
                "--candidate",
                &fx,
                "--seeds",
                "1..2",
                "--explore-cases",
                "0",
            ],
            &[0, 1],
        );
        assert_no_refund(&format!("{name}: diff"), &diff, d);
        let html = d.join(format!("{name}.html"));
        let html_s = html.to_str().unwrap();
        text(&["report", &sc, "--out", html_s], &[0]);
        let page = std::fs::read_to_string(&html).unwrap();
        assert_no_refund(&format!("{name}: report"), &page, d);
        let trace = d.join(format!("{name}.perfetto.json"));
        let trace_s = trace.to_str().unwrap();
        text(&["run", &sc, "--perfetto", trace_s], &[0]);
        let timeline = std::fs::read_to_string(&trace).unwrap();
        assert_no_refund(&format!("{name}: --perfetto"), &timeline, d);
    }
}

#[test]
fn each_world_checks_and_its_fix_lints_clean() {
    for (name, _, _) in WORLDS {
        text(&["check", &scenario(name), "--policy", &fix(name)], &[0]);
        let lint = text(&["lint", &scenario(name), "--policy", &fix(name)], &[0]);
        assert!(lint.contains("lint ok: 0 error(s)"), "{name}: {lint}");
    }
}

#[test]
fn scrub_keeps_what_a_user_reads() {
    let d = Path::new("/tmp/x");
    assert_eq!(
        scrub(
            "refundsim run scenarios/a.json --ticket 1: POST /v1/refunds",
            d
        ),
        " run --ticket 1: POST /v1/refunds"
    );
}
