//! A tool call's `scenario`, `policies` and `set` turned into what the CLI takes: paths and
//! `PATH=VALUE` strings.
//!
//! A path is used as given (relative to the server's working directory), so the library reads
//! it exactly as `refundsim run PATH` does. An inline object is written, pretty-printed, to a
//! file of a directory of the call's own (`scenario.json`, `policy-1.json`, …), and the
//! incident (the default scenario of `simulate` and `check_policy`) is written from the copy
//! built into the binary to `scenarios/carrier-outage.json` there. Every text the library
//! answers (messages, replay commands, the JSON) then has that directory's prefix removed, so
//! it names `scenario.json` or `scenarios/carrier-outage.json` as a user would after saving
//! the object: one loading path for files and objects, with the same aliases, comments, shape
//! check and validation, and the same one-line errors.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use super::args::Source;

/// The incident scenario, built in: what `simulate` and `check_policy` take without a
/// `scenario`, wherever the server runs.
pub(crate) const INCIDENT: &str = include_str!("../../../scenarios/carrier-outage.json");

/// Where the incident is written in a call's directory, and how answers name it.
pub(crate) const INCIDENT_PATH: &str = "scenarios/carrier-outage.json";

/// The files and overrides of one call; the directory (and the objects written to it) is
/// removed when this is dropped.
pub(crate) struct Inputs {
    dir: tempfile::TempDir,
    /// The directory's path with a trailing separator, as it appears in the library's texts.
    prefix: String,
    /// The scenario file.
    pub(crate) scenario: PathBuf,
    /// The policy files, in order.
    pub(crate) policies: Vec<PathBuf>,
    /// Paths given that do not exist, for [`Inputs::error`].
    missing: Vec<String>,
    /// `PATH=VALUE` overrides, in the order of the `set` object's keys (sorted), after the
    /// tool's own plain fields.
    pub(crate) sets: Vec<String>,
}

impl Inputs {
    /// Writes the call's inline objects and resolves its paths; `scenario` `None` is the
    /// incident. `plain` are the tool's own overrides (already `PATH=VALUE`), applied before
    /// `set`.
    ///
    /// # Errors
    /// A one-line message: the call's directory cannot be made or written.
    pub(crate) fn new(
        scenario: Option<&Source>,
        policies: &[Source],
        set: &BTreeMap<String, Value>,
        plain: Vec<String>,
    ) -> Result<Inputs, String> {
        let dir = tempfile::Builder::new()
            .prefix("refundsim-mcp-")
            .tempdir()
            .map_err(|e| format!("cannot create a temporary directory for the call: {e}"))?;
        let prefix = format!("{}{}", dir.path().display(), std::path::MAIN_SEPARATOR);
        let write = |name: &str, text: &str| -> Result<PathBuf, String> {
            let path = dir.path().join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot write {name} for the call: {e}"))?;
            }
            std::fs::write(&path, text)
                .map_err(|e| format!("cannot write {name} for the call: {e}"))?;
            Ok(path)
        };
        let object_text = |o: &serde_json::Map<String, Value>| {
            let mut text = serde_json::to_string_pretty(o).expect("a JSON object serializes");
            text.push('\n');
            text
        };
        let missing = scenario
            .into_iter()
            .chain(policies)
            .filter_map(|s| match s {
                Source::Path(p) if !std::path::Path::new(p).exists() => Some(p.clone()),
                _ => None,
            })
            .collect();
        let scenario = match scenario {
            None => write(INCIDENT_PATH, INCIDENT)?,
            Some(Source::Path(p)) => PathBuf::from(p),
            Some(Source::Inline(o)) => write("scenario.json", &object_text(o))?,
        };
        let policies = policies
            .iter()
            .enumerate()
            .map(|(i, p)| match p {
                Source::Path(p) => Ok(PathBuf::from(p)),
                Source::Inline(o) => write(&format!("policy-{}.json", i + 1), &object_text(o)),
            })
            .collect::<Result<Vec<_>, String>>()?;
        let mut sets = plain;
        sets.extend(set.iter().map(|(path, value)| set_arg(path, value)));
        Ok(Inputs {
            dir,
            prefix,
            missing,
            scenario,
            policies,
            sets,
        })
    }

    /// Writes `text` to `name` in the call's directory (e.g. tool definitions to read), and
    /// returns its path.
    ///
    /// # Errors
    /// A one-line message naming the file.
    pub(crate) fn write(&self, name: &str, text: &str) -> Result<PathBuf, String> {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text)
            .map_err(|e| format!("cannot write {name} for the call: {e}"))?;
        Ok(path)
    }

    /// `text` with the call's directory removed from every path in it: a file written for
    /// the call is named as the user would name it after saving it (`scenario.json`).
    pub(crate) fn relabel(&self, text: &str) -> String {
        text.replace(&self.prefix, "")
    }

    /// The library's error `e` for a tool error: relabelled, and, when a path given does not
    /// exist, saying where relative paths start from (the server's working directory, which
    /// its client chose).
    pub(crate) fn error(&self, e: impl std::fmt::Display) -> String {
        let mut message = self.relabel(&e.to_string());
        if let Some(p) = self
            .missing
            .iter()
            .find(|p| message.starts_with(p.as_str()))
        {
            let cwd = std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_else(|_| "unknown".into());
            if std::path::Path::new(p).is_relative() {
                message += &format!(
                    " (relative to the server's working directory {cwd}; expected a path from \
                     there, an absolute path, or the object itself)"
                );
            }
        }
        message
    }

    /// [`Inputs::relabel`] of every string in `v`.
    pub(crate) fn relabel_value(&self, v: Value) -> Value {
        match v {
            Value::String(s) if s.contains(&self.prefix) => Value::String(self.relabel(&s)),
            Value::Array(a) => Value::Array(a.into_iter().map(|x| self.relabel_value(x)).collect()),
            Value::Object(o) => Value::Object(
                o.into_iter()
                    .map(|(k, x)| (k, self.relabel_value(x)))
                    .collect(),
            ),
            other => other,
        }
    }
}

/// One entry of `set` as the CLI's `--set PATH=VALUE`: a string as itself (the CLI takes a
/// value that is not JSON as a string: `executor.timeout=15s`), unless it would read as JSON
/// (`"8"`, `"true"`), then quoted; any other value as its JSON text.
pub(crate) fn set_arg(path: &str, value: &Value) -> String {
    match value {
        Value::String(s) if serde_json::from_str::<Value>(s).is_err() => format!("{path}={s}"),
        other => format!("{path}={other}"),
    }
}
