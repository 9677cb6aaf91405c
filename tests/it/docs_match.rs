//! Documents that quote shipped files quote them exactly.

use std::path::Path;

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn the_policy_gate_workflow_in_docs_ci_is_the_shipped_one() {
    let doc = read("docs/ci.md");
    let start = doc
        .find("name: refund policy gate")
        .expect("docs/ci.md quotes the workflow");
    let end = start + doc[start..].find("```").expect("the quote ends");
    assert_eq!(
        &doc[start..end],
        read(".github/workflows/refund-policy.yml"),
        "docs/ci.md and .github/workflows/refund-policy.yml differ"
    );
}

#[test]
fn the_incident_fixtures_the_docs_cite_are_in_the_repository() {
    let facts = read("tests/fixtures/incident/incident-facts.md");
    assert!(
        facts.contains("41"),
        "incident-facts.md lost the duplicate count"
    );
    let log = read("tests/fixtures/incident/incident-trace-ticket-48213.log");
    assert!(log.contains("48213"));
    let tool: serde_json::Value =
        serde_json::from_str(&read("tests/fixtures/incident/issue_refund.tool.json")).unwrap();
    assert_eq!(tool["name"], "issue_refund");
}

/// Every code fence in the README and docs is closed: an unclosed one turns the rest of the
/// page inside out (a merge once dropped one in the README).
#[test]
fn markdown_code_fences_are_balanced() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md"), root.join("CHANGELOG.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "md") {
            files.push(e.path());
        }
    }
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let fences = text
            .lines()
            .filter(|l| l.trim_start().starts_with("```"))
            .count();
        assert_eq!(fences % 2, 0, "{}: {fences} code fences", f.display());
    }
}
