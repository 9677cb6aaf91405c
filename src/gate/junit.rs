//! JUnit XML for `check --junit`: one `<testsuite>` per scenario file, one `<testcase>` per
//! scenario × policy; a failing case carries a `<failure>` whose text holds each failed rule,
//! its seed and the replay command. The shape GitHub Actions (test-reporter actions), GitLab
//! (`artifacts:reports:junit`) and Jenkins (`junit` step) read.

use std::fmt::Write;

use super::bounds::fmt_num;
use super::check::{CaseReport, CheckReport};

/// The report as JUnit XML (UTF-8, with a trailing newline).
pub fn junit_xml(r: &CheckReport) -> String {
    let failures = r.cases.iter().filter(|c| !c.passed).count();
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        s,
        "<testsuites name=\"refundsim check\" tests=\"{}\" failures=\"{failures}\" errors=\"0\">",
        r.cases.len()
    );
    let mut i = 0;
    while i < r.cases.len() {
        let path = &r.cases[i].scenario_path;
        let n = r.cases[i..]
            .iter()
            .take_while(|c| &c.scenario_path == path)
            .count();
        suite(&mut s, &r.cases[i..i + n]);
        i += n;
    }
    s.push_str("</testsuites>\n");
    s
}

fn suite(s: &mut String, cases: &[CaseReport]) {
    let failures = cases.iter().filter(|c| !c.passed).count();
    let _ = writeln!(
        s,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\">",
        esc(&cases[0].scenario_path),
        cases.len()
    );
    for c in cases {
        testcase(s, c);
    }
    s.push_str("  </testsuite>\n");
}

fn testcase(s: &mut String, c: &CaseReport) {
    let _ = write!(
        s,
        "    <testcase classname=\"refundsim.check.{}\" name=\"{}\"",
        esc(&c.scenario),
        esc(&format!(
            "{} × {}",
            c.scenario_path,
            c.policy.as_deref().unwrap_or("no policy")
        ))
    );
    if c.passed {
        s.push_str("/>\n");
        return;
    }
    let first = &c.violations[0];
    let message = format!(
        "{} {} failed on seed {}: {}",
        first.metric, first.rule, first.seed, first.replay
    );
    let mut body = String::new();
    for v in &c.violations {
        let _ = writeln!(
            body,
            "{} {}: seed {} has {}\nreplay: {}",
            v.metric,
            v.rule,
            v.seed,
            fmt_num(v.value),
            v.replay
        );
        if let Some(t) = v.ticket {
            let _ = writeln!(body, "first offending ticket {t}:");
            for line in &v.story {
                let _ = writeln!(body, "  {line}");
            }
        }
    }
    let _ = write!(
        s,
        ">\n      <failure type=\"expect\" message=\"{}\">{}</failure>\n    </testcase>\n",
        esc(&message),
        esc(&body)
    );
}

/// Escapes text for XML attributes and content; drops characters XML 1.0 forbids.
fn esc(t: &str) -> String {
    let mut o = String::with_capacity(t.len());
    for ch in t.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\t' | '\n' | '\r' => o.push(ch),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_drops_control_characters() {
        assert_eq!(
            esc("a<b & 'c' \"d\">\u{1}"),
            "a&lt;b &amp; &apos;c&apos; &quot;d&quot;&gt;"
        );
    }
}
