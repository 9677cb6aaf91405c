//! Scenario arguments: files, or directories of them.

use std::path::{Path, PathBuf};

use super::error::GateError;

/// Expands each argument: a file stays as given; a directory becomes its `*.json` files
/// (not recursive, sorted by name), except tool definitions (`*.tool.json`). A directory with
/// no scenario, or a path that does not exist, is an error.
pub fn scenario_files(args: &[PathBuf]) -> Result<Vec<PathBuf>, GateError> {
    if args.is_empty() {
        return Err(GateError::Input {
            path: "SCENARIO".into(),
            message: "no scenario given; expected scenario files or directories".into(),
        });
    }
    let mut out = Vec::new();
    for a in args {
        if a.is_dir() {
            out.extend(dir_scenarios(a)?);
        } else if a.exists() {
            // A file, or a device or pipe (`/dev/stdin`, `/dev/zero`): the loader reads it
            // through the size cap and says what is wrong with it.
            out.push(a.clone());
        } else {
            return Err(GateError::Input {
                path: a.display().to_string(),
                message:
                    "no such file or directory; expected a scenario file or a directory of them"
                        .into(),
            });
        }
    }
    Ok(out)
}

fn dir_scenarios(dir: &Path) -> Result<Vec<PathBuf>, GateError> {
    let err = |message: String| GateError::Input {
        path: dir.display().to_string(),
        message,
    };
    let entries = std::fs::read_dir(dir).map_err(|e| err(format!("cannot read directory: {e}")))?;
    let mut files: Vec<PathBuf> = Vec::new();
    for e in entries {
        let p = e
            .map_err(|e| err(format!("cannot read directory: {e}")))?
            .path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if p.is_file() && name.ends_with(".json") && !name.ends_with(".tool.json") {
            files.push(p);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(err(
            "no scenario in this directory; expected *.json files (tool definitions *.tool.json are skipped)".into(),
        ));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_expand_to_sorted_scenarios_without_tool_files() {
        let dir = crate::repo_root().join("scenarios");
        let files = scenario_files(std::slice::from_ref(&dir)).unwrap();
        assert_eq!(files, vec![dir.join("carrier-outage.json")]);
    }

    #[test]
    fn missing_paths_are_named() {
        let msg = scenario_files(&[PathBuf::from("/nonexistent/x.json")])
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("/nonexistent/x.json: no such file or directory"),
            "{msg}"
        );
    }
}
