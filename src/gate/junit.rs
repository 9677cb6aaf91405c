//! JUnit XML for `check --junit`, written by [`quick_junit`] (nextest's JUnit writer, which
//! escapes text and attributes): one `<testsuite>` per scenario file, one `<testcase>` per
//! scenario × policy; a failing case carries a `<failure>` whose text holds each failed rule,
//! its seed and the replay command. The shape GitHub Actions (test-reporter actions), GitLab
//! (`artifacts:reports:junit`) and Jenkins (`junit` step) read. No `time` or `timestamp`: the
//! report is deterministic, wall-clock time is not part of it.

use std::fmt::Write;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::check::{CaseReport, CheckReport};

/// The report as JUnit XML (UTF-8, with a trailing newline).
pub fn junit_xml(r: &CheckReport) -> String {
    let mut report = Report::new("refundsim check");
    let mut i = 0;
    while i < r.cases.len() {
        let path = &r.cases[i].scenario_path;
        let n = r.cases[i..]
            .iter()
            .take_while(|c| &c.scenario_path == path)
            .count();
        let mut suite = TestSuite::new(path.as_str());
        suite.add_test_cases(r.cases[i..i + n].iter().map(testcase));
        report.add_test_suite(suite);
        i += n;
    }
    let mut xml = report
        .to_string()
        .expect("serializing to a String cannot fail: no I/O, and quick-junit escapes all text");
    if !xml.ends_with('\n') {
        xml.push('\n');
    }
    xml
}

fn testcase(c: &CaseReport) -> TestCase {
    let name = format!("{} × {}", c.scenario_path, c.variant());
    let status = if c.passed {
        TestCaseStatus::success()
    } else {
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
        status
            .set_type("expect")
            .set_message(message(c))
            .set_description(body(c));
        status
    };
    let mut case = TestCase::new(name, status);
    case.set_classname(format!("refundsim.check.{}", c.scenario));
    case
}

/// The first failed rule ([`Violation::headline`]: on how many of the seeds run it failed, the
/// worst seed and its value) and its replay command; else the exploration's verdict and its
/// replay.
///
/// [`Violation::headline`]: super::check::Violation::headline
fn message(c: &CaseReport) -> String {
    if let Some(v) = c.violations.first() {
        return format!("{}; replay: {}", v.headline(), v.replay);
    }
    match c.explore.as_ref().filter(|e| !e.ok) {
        Some(e) => format!("{}; replay: {}", e.headline(), e.replay),
        None => "failed".to_string(),
    }
}

/// Every failed rule with its seed, value, replay command and the first offending ticket's story.
fn body(c: &CaseReport) -> String {
    let mut body = String::new();
    for v in &c.violations {
        let _ = writeln!(body, "{}\nreplay: {}", v.headline(), v.replay);
        if let Some(t) = v.ticket {
            let _ = writeln!(body, "first offending ticket {t}:");
            for line in &v.story {
                let _ = writeln!(body, "  {line}");
            }
        }
    }
    if let Some(e) = c.explore.as_ref().filter(|e| !e.ok) {
        let _ = writeln!(body, "{}\nreplay: {}", e.headline(), e.replay);
        for line in e.found.iter().flat_map(|f| &f.story) {
            let _ = writeln!(body, "  {line}");
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::check::Violation;
    use crate::scenario::ExpectSource;

    fn case(name: &str, passed: bool) -> CaseReport {
        CaseReport {
            scenario_path: "s/<a & b>.json".into(),
            scenario: name.into(),
            policy: Some("p\"'.json".into()),
            sets: vec!["executor.timeout=15s".into()],
            expect_source: ExpectSource::SafetyInvariants,
            seeds: vec![1],
            checks: Vec::new(),
            invariants: Vec::new(),
            effect: None,
            violations: if passed {
                Vec::new()
            } else {
                vec![Violation {
                    metric: "duplicate_refund_tickets".into(),
                    rule: "≤ 0 per seed".into(),
                    seed: 1,
                    value: 3.0,
                    aggregate: None,
                    ticket: Some(7),
                    story: vec!["a <story> line\u{1}".into()],
                    replay: "refundsim run x --seed 1".into(),
                    failing_seeds: 1,
                    seeds: 1,
                }]
            },
            explore: None,
            explore_off: false,
            passed,
        }
    }

    #[test]
    fn markup_is_escaped_and_control_characters_dropped() {
        let r = CheckReport {
            cases: vec![case("ok<", true), case("bad&", false)],
            passed: false,
        };
        let xml = junit_xml(&r);
        assert!(
            xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"),
            "{xml}"
        );
        assert!(xml.ends_with("</testsuites>\n"), "{xml}");
        assert!(!xml.contains('\u{1}'), "{xml}");
        assert!(xml.contains("name=\"s/&lt;a &amp; b&gt;.json\""), "{xml}");
        assert!(
            xml.contains("classname=\"refundsim.check.bad&amp;\""),
            "{xml}"
        );
        assert!(xml.contains("a &lt;story&gt; line"), "{xml}");
        assert!(
            xml.contains("tests=\"2\"") && xml.contains("failures=\"1\""),
            "{xml}"
        );
        // Well-formed: a reader gets to the end without an error.
        let mut reader = quick_xml::Reader::from_str(&xml);
        let mut cases = 0;
        loop {
            match reader.read_event().unwrap() {
                quick_xml::events::Event::Eof => break,
                quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e)
                    if e.name().as_ref() == b"testcase" =>
                {
                    cases += 1
                }
                _ => {}
            }
        }
        assert_eq!(cases, 2);
    }
}
