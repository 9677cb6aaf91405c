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

/// docs/report.md's excerpts quote the gallery's files: each fenced block after a
/// `<!-- gallery: FILE -->` marker holds lines of `docs/gallery/FILE`, in its order (a line `…`
/// marks what the excerpt leaves out).
#[test]
fn the_report_docs_quote_the_gallery_as_it_is() {
    let doc = read("docs/report.md");
    let marker = "<!-- gallery: ";
    let mut quoted = 0;
    for (i, _) in doc.match_indices(marker) {
        let rest = &doc[i + marker.len()..];
        let file = &rest[..rest.find(" -->").expect("the marker ends")];
        let fence = rest
            .find("```")
            .expect("a fenced excerpt follows the marker");
        let body = &rest[fence..];
        let body = &body[body.find('\n').unwrap() + 1..];
        let body = &body[..body.find("```").expect("the excerpt ends")];
        let shipped = read(&format!("docs/gallery/{file}"));
        let mut lines = shipped.lines();
        for q in body.lines().filter(|l| l.trim() != "…") {
            assert!(
                lines.any(|l| l == q),
                "docs/report.md quotes docs/gallery/{file} with a line it does not hold there \
                 (or out of order): {q:?}; run docs/gallery/regenerate.sh and re-quote"
            );
        }
        quoted += 1;
    }
    assert!(quoted >= 5, "docs/report.md quotes {quoted} gallery files");
}

/// The gallery's text files are what the commands print now: `docs/gallery/regenerate.sh`
/// (its text steps) re-run with this build, compared byte for byte.
#[test]
fn the_gallery_text_is_what_the_commands_print_now() {
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("refundsim");
    let o = std::process::Command::new("bash")
        .arg("docs/gallery/regenerate.sh")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("REFUNDSIM", &bin)
        .env("GALLERY_OUT", dir.path())
        .env("GALLERY_TEXT_ONLY", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in [
        "run.txt",
        "story.txt",
        "check.txt",
        "check.junit.xml",
        "diff.txt",
    ] {
        let now = std::fs::read_to_string(dir.path().join(f)).unwrap();
        assert!(
            now == read(&format!("docs/gallery/{f}")),
            "docs/gallery/{f} is not what the command prints now: run docs/gallery/regenerate.sh"
        );
    }
}
