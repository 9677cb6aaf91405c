//! Helpers shared by the scenario unit tests.

use std::io::Write;
use std::path::PathBuf;

use serde_json::Value;

use super::{load, load_str, Scenario, ScenarioError};

pub(super) const MINIMAL: &str =
    r#"{"name":"t","horizon":"1h","arrivals":{"schedule":[{"duration":"10m","rate_per_s":0.1}]}}"#;

/// A minimal scenario with `extra` merged in (RFC 7396), pretty-printed so fields sit on their
/// own lines.
pub(super) fn with(extra: &str) -> String {
    let mut doc: Value = serde_json::from_str(MINIMAL).unwrap();
    json_patch::merge(&mut doc, &serde_json::from_str(extra).unwrap());
    serde_json::to_string_pretty(&doc).unwrap()
}

pub(super) fn err_of(text: &str) -> String {
    load_str(text, "x.json")
        .expect_err("should be rejected")
        .to_string()
}

/// Asserts the error message for `text` contains every one of `parts`.
pub(super) fn rejects(text: &str, parts: &[&str]) {
    let msg = err_of(text);
    for part in parts {
        assert!(msg.contains(part), "message {msg:?} lacks {part:?}");
    }
    assert!(
        msg.starts_with("x.json"),
        "message {msg:?} does not start with the file"
    );
    assert!(!msg.contains('\n'), "message {msg:?} is not one line");
}

pub(super) fn file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

pub(super) fn load_with(
    text: &str,
    policies: &[&str],
    sets: &[&str],
) -> Result<Scenario, ScenarioError> {
    let base = file(text);
    let files: Vec<_> = policies.iter().map(|p| file(p)).collect();
    let paths: Vec<PathBuf> = files.iter().map(|f| f.path().to_path_buf()).collect();
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    load(base.path(), &paths, &sets)
}
