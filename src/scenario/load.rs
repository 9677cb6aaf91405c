//! Loading a scenario (DESIGN §4): parse the file, apply policy merge patches (RFC 7396) and
//! `--set PATH=VALUE` overrides, validate.
//!
//! Every error is one line naming the file, the JSON path (dot-separated, array indices as
//! numbers: `arrivals.schedule.1.rate_per_s`, the same syntax `--set` takes), the line and column
//! where known, and what was expected:
//!
//! ```text
//! scenarios/x.json:12:17: refunds_service.pool_size: invalid value: expected an integer ≥ 1, got 0
//! ```

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::budget::RunBudget;
use super::comments::{allow_comments, strip_comments};
use super::config::Scenario;
use super::error::{Location, ScenarioError, POLICY_EXPECTED, SCENARIO_EXPECTED};
use super::gate_expect::{changes_world, policies_expect, ExpectSource};
use super::locate::{json_pointer, locate, offset_to_line_col};
use super::serde_error::{data_error, kind, parse_value, segments, syntax};
use super::set::apply_set;
use super::shape::check_shape;
use super::validate::validate;

/// Loads the scenario file at `path`, applies each policy file in order (an RFC 7396 JSON merge
/// patch), then each `PATH=VALUE` override, and validates the result.
///
/// `PATH` is dot-separated; numeric segments index arrays (`arrivals.schedule.1.rate_per_s`);
/// missing objects on the way are created. `VALUE` is parsed as JSON if it parses, else taken as
/// a string, so `executor.timeout=15s` and `refunds_service.pool_size=20` both work (write
/// `name="123"` for a string that looks like JSON). `VALUE` `null` removes the field, like a merge
/// patch, so its default applies.
///
/// `expect` follows the gate's rule (`src/scenario/gate_expect.rs`): the scenario's own while
/// the policies and sets leave the simulated world as written; once they change it, the safety
/// invariants, with the bounds a policy's `expect` states replacing theirs. This is the one
/// function from "scenario + policies + sets" to the merged scenario that `run`, `show`,
/// `check`, `diff`, `lint` and `explore` share.
///
/// Last, the scenario is admitted against the default run budget
/// ([`RunBudget::default`]; [`load_within`] takes another).
///
/// # Errors
/// [`ScenarioError`], naming the file (or the `--set`) at fault, the JSON path and what was
/// expected.
pub fn load(path: &Path, policies: &[PathBuf], sets: &[String]) -> Result<Scenario, ScenarioError> {
    load_within(path, policies, sets, &RunBudget::default())
}

/// [`load`], admitting the scenario against `budget` (the CLI's `--max-events` and
/// `--max-memory-mb`; [`RunBudget::UNLIMITED`] for commands that simulate nothing).
///
/// # Errors
/// As [`load`]; over the budget, the field that drives the estimate most.
pub fn load_within(
    path: &Path,
    policies: &[PathBuf],
    sets: &[String],
    budget: &RunBudget,
) -> Result<Scenario, ScenarioError> {
    load_with_expect_source(path, policies, sets, budget).map(|(s, _)| s)
}

/// [`load_within`], also telling where the scenario's `expect` came from.
///
/// # Errors
/// As [`load`].
pub fn load_with_expect_source(
    path: &Path,
    policies: &[PathBuf],
    sets: &[String],
    budget: &RunBudget,
) -> Result<(Scenario, ExpectSource), ScenarioError> {
    let origin = path.display().to_string();
    let text = read(path, "a scenario", SCENARIO_EXPECTED)?;
    load_text_with_expect_source(&text, &origin, policies, sets, budget)
}

/// [`load`] of scenario `text` (from `origin`, which errors name) rather than a file: e.g. the
/// scenario `refundsim replay` imports in memory, with its policies and `--set`s.
///
/// Admitted against `budget`, as [`load_within`].
///
/// # Errors
/// As [`load`].
pub fn load_text(
    text: &str,
    origin: &str,
    policies: &[PathBuf],
    sets: &[String],
    budget: &RunBudget,
) -> Result<Scenario, ScenarioError> {
    load_text_with_expect_source(text, origin, policies, sets, budget).map(|(s, _)| s)
}

fn load_text_with_expect_source(
    text: &str,
    origin: &str,
    policies: &[PathBuf],
    sets: &[String],
    budget: &RunBudget,
) -> Result<(Scenario, ExpectSource), ScenarioError> {
    let origin = origin.to_string();
    let (scenario, base) = parse(text, &origin)?;
    if policies.is_empty() && sets.is_empty() {
        return checked(scenario, text, &origin, None, budget).map(|s| (s, ExpectSource::Scenario));
    }

    let mut doc = base.clone();
    let mut applied = Vec::new();
    let mut patches = Vec::new();
    for policy in policies {
        let patch = read_policy(policy)?;
        json_patch::merge(&mut doc, &patch);
        patches.push(patch);
        applied.push(format!("policy {}", policy.display()));
    }
    for set in sets {
        apply_set(&mut doc, set)?;
        applied.push(format!("--set {set}"));
    }
    let merged = deserialize_patched(&doc, &origin, &applied)?;
    let changed = changes_world(&scenario, &merged);
    let own = (!changed).then(|| {
        base.get("expect").cloned().unwrap_or_else(|| {
            serde_json::to_value(super::config::default_expect()).expect("bounds")
        })
    });
    let (expect, source) = policies_expect(own, &patches, sets)?;
    let map = doc
        .as_object_mut()
        .expect("a deserialized scenario is an object");
    match expect {
        Some(e) => map.insert("expect".to_string(), e),
        None => map.remove("expect"),
    };
    let merged = deserialize_patched(&doc, &origin, &applied)?;
    checked(merged, text, &origin, Some((&base, &doc, applied)), budget).map(|s| (s, source))
}

/// The scenario of a patched document; errors name the patches applied.
fn deserialize_patched(
    doc: &Value,
    origin: &str,
    applied: &[String],
) -> Result<Scenario, ScenarioError> {
    // A `--set` of a whole section may bring an alias inside it (`--set provider={…}`), and a
    // policy or `--set` a `$comment`.
    let mut doc = doc.clone();
    let doc = &mut doc;
    if let Err((segs, message)) = super::aliases::canonicalize(doc)
        .and_then(|()| strip_comments(doc))
        .and_then(|()| check_shape(doc))
    {
        return Err(ScenarioError::Invalid {
            at: Location::new(origin, None),
            path: segs.join("."),
            message,
            applied: applied.to_vec(),
        });
    }
    serde_path_to_error::deserialize(&*doc).map_err(|e| {
        let (path, message) = data_error(segments(e.path()), e.inner());
        ScenarioError::Invalid {
            at: Location::new(origin, None),
            path,
            message,
            applied: applied.to_vec(),
        }
    })
}

/// Parses and validates scenario text and admits it against the default run budget; `origin`
/// names it in errors.
///
/// # Errors
/// As [`load`].
pub fn load_str(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
    let (scenario, _) = parse(text, origin)?;
    checked(scenario, text, origin, None, &RunBudget::default())
}

/// The JSON Schema of the scenario format, pretty-printed with a trailing newline. The copy in
/// `docs/scenario.schema.json` is checked against it by a unit test (`REFUNDSIM_BLESS=1 cargo
/// test -p refundsim-unit-tests schema` rewrites it).
pub fn schema_json() -> String {
    let mut schema = schemars::schema_for!(Scenario);
    // `$comment` is accepted in every object (`src/scenario/comments.rs`); the schema says so.
    if let Some(map) = schema.as_object_mut() {
        let mut root = Value::Object(std::mem::take(map));
        allow_comments(&mut root);
        if let Value::Object(root) = root {
            *map = root;
        }
    }
    let mut s = serde_json::to_string_pretty(&schema).expect("a JSON Schema serializes");
    s.push('\n');
    s
}

/// A scenario's or policy's text, at most [`crate::input::max_input_bytes`]; `what` names the
/// file's role for a file too large (`a scenario`), `expected` what it should be, for a file
/// that is not text.
fn read(path: &Path, what: &'static str, expected: &str) -> Result<String, ScenarioError> {
    let bytes = crate::input::read_input(path, what).map_err(|e| match e {
        crate::input::InputError::Read { file, source } => ScenarioError::Read { file, source },
        other => ScenarioError::TooLarge(other),
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        not_utf8(
            &path.display().to_string(),
            e.as_bytes(),
            e.utf8_error(),
            expected,
        )
    })?;
    // A UTF-8 byte-order mark, as some editors write, is not part of the JSON.
    Ok(text
        .strip_prefix('\u{feff}')
        .map(str::to_string)
        .unwrap_or(text))
}

/// A file that is not UTF-8 text (a binary, a file in another encoding): where its first
/// invalid byte is (line and column of the valid text before it) and what was expected.
fn not_utf8(origin: &str, bytes: &[u8], e: std::str::Utf8Error, expected: &str) -> ScenarioError {
    let (line, column, what) = not_utf8_at(bytes, e);
    ScenarioError::Syntax {
        at: super::error::Location::new(origin, Some((line, column))),
        message: format!("{what}; expected {expected}"),
    }
}

/// Where `bytes` stop being UTF-8 (`e` from decoding them): the 1-based line and column (in
/// characters) of the first invalid byte, and `not UTF-8 text (byte 0xff)` naming it. For
/// every reader of user files (scenarios, policies, `lint`, `import`), so that a binary or a
/// file in another encoding is reported the same way.
pub fn not_utf8_at(bytes: &[u8], e: std::str::Utf8Error) -> (usize, usize, String) {
    let valid = &bytes[..e.valid_up_to()];
    let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
    let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let column = 1 + String::from_utf8_lossy(&valid[line_start..])
        .chars()
        .count();
    let byte = bytes.get(e.valid_up_to()).copied().unwrap_or(0);
    (line, column, format!("not UTF-8 text (byte 0x{byte:02x})"))
}

/// Deserializes scenario text on its own, so errors carry line and column. Returns the scenario
/// and the text's JSON.
fn parse(text: &str, origin: &str) -> Result<(Scenario, Value), ScenarioError> {
    if text.trim().is_empty() {
        return Err(ScenarioError::Empty {
            file: origin.to_string(),
            expected: SCENARIO_EXPECTED,
        });
    }
    let mut value = parse_value(text, origin, "")?;
    super::dupkeys::check(text).map_err(|e| syntax(origin, text, &e, ""))?;
    // Aliases moved to their fields, and `$comment` below the top level (for the reader) gone,
    // before the shape walk and serde.
    let prepared = super::aliases::canonicalize(&mut value)
        .and_then(|()| strip_comments(&mut value))
        .and_then(|()| check_shape(&value));
    if let Err((segs, message)) = prepared {
        let line_col = locate(text, &segs).map(|off| offset_to_line_col(text, off));
        return Err(ScenarioError::Invalid {
            at: Location::new(origin, line_col),
            path: segs.join("."),
            message,
            applied: Vec::new(),
        });
    }
    // Typed from the parsed JSON rather than from the text a second time: one deserializer for
    // every scenario, patched or not (each one instantiates the whole scenario's `Deserialize`
    // under `serde_path_to_error`, a large share of this crate's build), and one parse per run.
    // The line and column are those of the field at fault, else of the nearest enclosing field
    // the text spells out.
    let scenario: Scenario = serde_path_to_error::deserialize(&value).map_err(|e| {
        let segs = segments(e.path());
        let line_col = (0..=segs.len())
            .rev()
            .find_map(|n| locate(text, &segs[..n]))
            .map(|off| offset_to_line_col(text, off));
        let (path, message) = data_error(segs, e.inner());
        ScenarioError::Invalid {
            at: Location::new(origin, line_col),
            path,
            message,
            applied: Vec::new(),
        }
    })?;
    Ok((scenario, value))
}

fn read_policy(path: &Path) -> Result<Value, ScenarioError> {
    let origin = path.display().to_string();
    let text = read(path, "a policy", POLICY_EXPECTED)?;
    if text.trim().is_empty() {
        return Err(ScenarioError::Empty {
            file: origin,
            expected: POLICY_EXPECTED,
        });
    }
    let mut patch = parse_value(&text, &origin, "invalid policy: ")?;
    super::dupkeys::check(&text).map_err(|e| syntax(&origin, &text, &e, "invalid policy: "))?;
    if let Err((segs, message)) = super::aliases::canonicalize(&mut patch) {
        let line_col = locate(&text, &segs).map(|off| offset_to_line_col(&text, off));
        return Err(ScenarioError::Invalid {
            at: Location::new(&origin, line_col),
            path: segs.join("."),
            message,
            applied: Vec::new(),
        });
    }
    if !patch.is_object() {
        let start = text.len() - text.trim_start().len();
        return Err(ScenarioError::Syntax {
            at: Location::new(&origin, Some(offset_to_line_col(&text, start))),
            message: format!(
                "invalid policy: expected {POLICY_EXPECTED}, got {}",
                kind(&patch)
            ),
        });
    }
    gate_untouched(&patch, &text, &origin)?;
    Ok(patch)
}

/// A policy is the candidate the gate judges: it may assert the hole it leaves
/// (`exploration.finds`) but not change the gate itself (`gate`, or the exploration's bounds),
/// or a candidate could switch off or narrow its own exploration (issue 27). The scenario file
/// and `--set`/`--explore-cases` set those.
fn gate_untouched(patch: &Value, text: &str, origin: &str) -> Result<(), ScenarioError> {
    // The fields that set the gate; anything else under `gate` or `exploration` (an unknown
    // field, a wrong type) is left to deserialization, which names it as for any section.
    const BOUNDS: &[&str] = &[
        "max_tickets",
        "arrival_window",
        "fault_probability_max",
        "add_layers",
    ];
    const GATE: &[&str] = &["seeds", "explore_cases"];
    let set_in = |section: &str, keys: &[&str]| {
        patch
            .get(section)
            .and_then(Value::as_object)
            .and_then(|m| m.keys().find(|k| keys.contains(&k.as_str())).cloned())
            .map(|k| vec![section.to_string(), k])
    };
    let Some(path) = set_in("gate", GATE).or_else(|| set_in("exploration", BOUNDS)) else {
        return Ok(());
    };
    let at = locate(text, &path).map(|o| offset_to_line_col(text, o));
    Err(ScenarioError::Invalid {
        at: Location::new(origin, at),
        path: path.join("."),
        message: "a policy is the candidate the gate judges and cannot change the gate \
                  (`gate`, or the exploration's bounds); expected only `exploration.finds` \
                  in a policy: set the gate in the scenario file, or with --seeds, \
                  --explore-cases or --set"
            .into(),
        applied: Vec::new(),
    })
}

/// Validates, then maps a validation error to a located [`ScenarioError`]. `patched` holds the
/// file's own JSON, the patched JSON and the patches applied, when there were any.
/// `expect` with each effect-neutral metric name (`duplicate_effect_tickets`) under the name the
/// report stores it by (`duplicate_refund_tickets`); validation has refused a metric bounded
/// under both names.
fn canonical_expect(mut scenario: Scenario) -> Scenario {
    scenario.expect = std::mem::take(&mut scenario.expect)
        .into_iter()
        .map(|(k, b)| (super::effect::canonical_metric(&k).to_string(), b))
        .collect();
    scenario
}

fn checked(
    scenario: Scenario,
    text: &str,
    origin: &str,
    patched: Option<(&Value, &Value, Vec<String>)>,
    budget: &RunBudget,
) -> Result<Scenario, ScenarioError> {
    // Last, the budget: it estimates a scenario whose every field is valid, so an invalid
    // value (a 0 s probe interval, 10^9 retries) is reported as such, not as too much work.
    let Err(err) = validate(&scenario).and_then(|()| budget.admit(&scenario)) else {
        return Ok(canonical_expect(scenario));
    };
    let segs: Vec<String> = if err.path.is_empty() {
        Vec::new()
    } else {
        err.path.split('.').map(str::to_string).collect()
    };
    // With policies or `--set`s applied, the error always lists them (a cross-field rule may
    // fail on a field the file spells out because an override changed the other field); a field
    // an override changed has no line in the file, and the override that set it is named first.
    let (from_file, applied) = match patched {
        None => (true, Vec::new()),
        Some((base, doc, mut applied)) => {
            let pointer = json_pointer(&segs);
            let same =
                base.pointer(&pointer).is_some() && base.pointer(&pointer) == doc.pointer(&pointer);
            if !same {
                if let Some(i) = applied.iter().rposition(|a| sets_path(a, &err.path)) {
                    let culprit = applied.remove(i);
                    applied.insert(0, culprit);
                }
            }
            (same, applied)
        }
    };
    let line_col = if from_file {
        // The field itself, else the nearest enclosing field the file spells out.
        (1..=segs.len())
            .rev()
            .find_map(|n| locate(text, &segs[..n]))
            .map(|off| offset_to_line_col(text, off))
    } else {
        None
    };
    Err(ScenarioError::Invalid {
        at: Location::new(origin, line_col),
        path: err.path,
        message: err.message,
        applied,
    })
}

/// Whether the applied override `applied` (`"--set PATH=VALUE"`) set the field at `path` or a
/// field inside or around it.
fn sets_path(applied: &str, path: &str) -> bool {
    let Some((set_path, _)) = applied
        .strip_prefix("--set ")
        .and_then(|a| a.split_once('='))
    else {
        return false;
    };
    let set_path = set_path.trim();
    let within = |outer: &str, inner: &str| {
        inner == outer || (inner.starts_with(outer) && inner[outer.len()..].starts_with('.'))
    };
    within(set_path, path) || within(path, set_path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::test_support::{err_of, file, load_with, with, MINIMAL};
    use crate::scenario::{KeyMode, OnTimeout};
    use std::time::Duration;

    #[test]
    fn minimal_scenario_loads_with_defaults() {
        let s = load_str(MINIMAL, "x.json").unwrap();
        assert_eq!(s.name, "t");
        assert_eq!(s.seed, 1);
        assert_eq!(s.horizon, Duration::from_secs(3600));
        assert_eq!(s.executor.timeout, Duration::from_secs(8));
        assert_eq!(s.executor.on_timeout, OnTimeout::ReportError);
        assert_eq!(s.refunds_service.pool_size, 8);
        assert_eq!(s.refunds_service.idempotency_key, KeyMode::None);
        assert_eq!(s.agent.tool, "issue_refund");
        assert_eq!(s.tools.len(), 1);
        assert!(s.expect.contains_key("duplicate_refund_tickets"));
        assert_eq!(s.arrivals.schedule[0].duration, Duration::from_secs(600));
    }

    #[test]
    fn round_trip_through_json_is_equal() {
        let text = with(
            r#"{"clock_origin":"2024-05-14T16:00:00Z","executor":{"retry":{},"on_timeout":"probe_status"},
                "refunds_service":{"acquire_timeout":"2s","idempotency_key":"per_ticket"},
                "arrivals":{"tickets":[{"id":7,"opened_at":"1m 30s","amount_cents":100,"charge_amount_cents":300}]},
                "stripe":{"faults":{"latency_spike":0.01}},"expect":{"tickets":{"min":1}}}"#,
        );
        let s = load_str(&text, "x.json").unwrap();
        let json = serde_json::to_string(&s).unwrap();
        let back = load_str(&json, "round-trip").unwrap();
        assert_eq!(s, back);
    }

    #[test]
    fn empty_file_has_its_own_message() {
        for text in ["", "  \n\t\n"] {
            let msg = err_of(text);
            assert_eq!(msg, "x.json: file is empty; expected a JSON object with at least name, horizon, arrivals");
        }
    }

    #[test]
    fn pool_size_zero_is_located() {
        let text = "{\n  \"name\": \"t\",\n  \"horizon\": \"1h\",\n  \"arrivals\": {\"schedule\": [{\"duration\": \"10m\", \"rate_per_s\": 0.1}]},\n  \"refunds_service\": {\"pool_size\": 0}\n}";
        let msg = err_of(text);
        assert_eq!(
            msg,
            "x.json:5:36: refunds_service.pool_size: invalid value: expected an integer ≥ 1, got 0"
        );
    }

    /// A binary or otherwise non-UTF-8 file names its first bad byte's place and what was
    /// expected (it said only "stream did not contain valid UTF-8").
    #[test]
    fn a_file_that_is_not_text_says_where_and_what_was_expected() {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), b"{\n  \"name\": \"caf\xc3\xa9 \xff\xfe\"}").unwrap();
        let msg = load(f.path(), &[], &[]).unwrap_err().to_string();
        assert_eq!(
            msg,
            format!(
                "{}:2:17: not UTF-8 text (byte 0xff); expected {SCENARIO_EXPECTED}",
                f.path().display()
            )
        );
        let scenario = file(
            r#"{"name":"t","horizon":"1h","arrivals":{"schedule":[{"duration":"1h","rate_per_s":1}]}}"#,
        );
        let msg = load(scenario.path(), &[f.path().to_path_buf()], &[])
            .unwrap_err()
            .to_string();
        assert!(
            msg.ends_with(&format!("expected {POLICY_EXPECTED}")),
            "{msg}"
        );
    }

    #[test]
    fn load_reads_files_and_names_them() {
        let f = file("{\n\"name\": 5}");
        let err = load(f.path(), &[], &[]).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!("{}:2:", f.path().display())),
            "{msg}"
        );
        assert!(msg.contains("name: invalid type"), "{msg}");
        assert_eq!(err.exit_code(), 2);

        let missing = Path::new("/nonexistent/refundsim/x.json");
        let msg = load(missing, &[], &[]).unwrap_err().to_string();
        assert!(
            msg.starts_with("/nonexistent/refundsim/x.json: cannot read file"),
            "{msg}"
        );
    }

    #[test]
    fn policy_merge_patch_applies() {
        let policy = r#"{"executor":{"timeout":"15s","on_timeout":"probe_status"},"refunds_service":{"idempotency_key":"per_ticket"}}"#;
        let s = load_with(MINIMAL, &[policy], &[]).unwrap();
        assert_eq!(s.executor.timeout, Duration::from_secs(15));
        assert_eq!(s.executor.on_timeout, OnTimeout::ProbeStatus);
        assert_eq!(s.refunds_service.idempotency_key, KeyMode::PerTicket);
        assert_eq!(s.refunds_service.pool_size, 8);
    }

    #[test]
    fn policies_apply_in_order_then_sets() {
        let a = r#"{"executor":{"timeout":"15s"},"refunds_service":{"pool_size":4}}"#;
        let b = r#"{"executor":{"timeout":"20s"}}"#;
        let s = load_with(MINIMAL, &[a, b], &[]).unwrap();
        assert_eq!(s.executor.timeout, Duration::from_secs(20));
        assert_eq!(s.refunds_service.pool_size, 4);
        let s = load_with(MINIMAL, &[a, b], &["executor.timeout=30s"]).unwrap();
        assert_eq!(s.executor.timeout, Duration::from_secs(30));
    }

    #[test]
    fn null_in_policy_removes_field() {
        let base = with(r#"{"executor":{"timeout":"3s"},"clock_origin":"2024-05-14T16:00:00Z"}"#);
        assert_eq!(
            load_with(&base, &[], &[]).unwrap().executor.timeout,
            Duration::from_secs(3)
        );
        let s = load_with(
            &base,
            &[r#"{"executor":{"timeout":null},"clock_origin":null}"#],
            &[],
        )
        .unwrap();
        assert_eq!(s.executor.timeout, Duration::from_secs(8));
        assert_eq!(s.clock_origin, None);
    }

    #[test]
    fn bad_policies_are_named() {
        let p = file(r#"["not", "an", "object"]"#);
        let base = file(MINIMAL);
        let msg = load(base.path(), &[p.path().to_path_buf()], &[])
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with(&format!("{}:1:1: invalid policy", p.path().display())),
            "{msg}"
        );
        assert!(msg.contains("expected a JSON object"), "{msg}");
        assert!(msg.contains("got an array"), "{msg}");

        let p = file("{\n  \"executor\": {\"timeout\": \"15s\"\n");
        let msg = load(base.path(), &[p.path().to_path_buf()], &[])
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with(&format!("{}:3:", p.path().display())),
            "{msg}"
        );
        assert!(msg.contains("EOF while parsing"), "{msg}");

        let p = file(" \n");
        let msg = load(base.path(), &[p.path().to_path_buf()], &[])
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("file is empty; expected a JSON object (an RFC 7396 merge patch"),
            "{msg}"
        );
    }

    #[test]
    fn errors_after_patching_name_the_patches() {
        let msg = load_with(MINIMAL, &[r#"{"refunds_service":{"pool_size":"x"}}"#], &[])
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("refunds_service.pool_size: invalid type"),
            "{msg}"
        );
        assert!(msg.contains("(after applying policy "), "{msg}");

        let msg = load_with(MINIMAL, &[], &["refunds_service.pool_size=0"])
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains(
                "refunds_service.pool_size: invalid value: expected an integer ≥ 1, got 0"
            ),
            "{msg}"
        );
        assert!(
            msg.ends_with("(after applying --set refunds_service.pool_size=0)"),
            "{msg}"
        );

        let msg = load_with(MINIMAL, &[], &["executor.timout=15s"])
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("executor.timout: unknown field `timout`"),
            "{msg}"
        );

        // A validation error in the file's own value keeps its line and column after patching.
        let base = "{\"name\":\"t\",\"horizon\":\"1h\",\n\"arrivals\":{\"schedule\":[{\"duration\":\"10m\",\"rate_per_s\":0.1}]},\n\"humans\":{\"check_probability\":3}}";
        let f = file(base);
        let msg = load(f.path(), &[], &["seed=3".to_string()])
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with(&format!("{}:3:", f.path().display())),
            "{msg}"
        );
        // ... and still lists the overrides: a cross-field rule may fail there because of them.
        assert!(msg.ends_with("(after applying --set seed=3)"), "{msg}");

        // The override that set the failing field is named first, whatever its position.
        let msg = load_with(
            MINIMAL,
            &[],
            &[
                "refunds_service.pool_size=0",
                "seed=4",
                "executor.timeout=9s",
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(
            msg.contains("(after applying --set refunds_service.pool_size=0, --set seed=4, "),
            "{msg}"
        );
        let msg = load_with(
            MINIMAL,
            &[],
            &["seed=4", "refunds_service={\"pool_size\":0}"],
        )
        .unwrap_err()
        .to_string();
        assert!(
            msg.contains("(after applying --set refunds_service={\"pool_size\":0}, --set seed=4)"),
            "{msg}"
        );
    }

    #[test]
    fn sets_path_matches_the_field_and_what_encloses_it() {
        assert!(sets_path("--set executor.timeout=1s", "executor.timeout"));
        assert!(sets_path("--set executor={}", "executor.timeout"));
        assert!(sets_path(
            "--set executor.retry.max_retries=3",
            "executor.retry"
        ));
        assert!(!sets_path("--set executor.timeouts=1s", "executor.timeout"));
        assert!(!sets_path("--set executor.timeout=1s", "executor.timeouts"));
        assert!(!sets_path("policy p.json", "executor.timeout"));
    }

    /// `shared/failing/rate-nan-literal.json` and `rate-out-of-range.json`: a number JSON cannot
    /// hold names its field, in a scenario and in a policy, without repeating the number.
    #[test]
    fn non_finite_numbers_name_their_field() {
        for (lit, want) in [
            ("NaN", "`NaN` is not a JSON number"),
            ("-Infinity", "`-Infinity` is not a JSON number"),
            ("1e309", "number out of range"),
        ] {
            let text = format!(
                "{{\"name\":\"t\",\"horizon\":\"1m\",\n\"arrivals\":{{\"schedule\":[{{\"duration\":\"1m\",\"rate_per_s\": {lit}}}]}}}}"
            );
            let msg = err_of(&text);
            assert!(
                msg.contains(":2:")
                    && msg.contains("arrivals.schedule.0.rate_per_s: ")
                    && msg.contains(want),
                "{lit}: {msg}"
            );
            let msg = load_with(
                MINIMAL,
                &[&format!("{{\"stripe\":{{\"fail_probability\":{lit}}}}}")],
                &[],
            )
            .unwrap_err()
            .to_string();
            assert!(
                msg.contains("stripe.fail_probability: invalid policy: "),
                "{lit}: {msg}"
            );
        }
        let long = "9".repeat(309);
        let msg = load_with(MINIMAL, &[], &[&format!("executor.timeout={long}")])
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("number out of range") && msg.contains("(326 characters)"),
            "{msg}"
        );
        assert!(!msg.contains(&"9".repeat(60)), "{msg}");
        // A wrong type where an enum goes is a type error with its path, not "expected value".
        let msg = err_of("{\"name\":\"t\",\"horizon\":\"1m\",\"arrivals\":{\"schedule\":[{\"duration\":\"1m\",\"rate_per_s\":0.1}]},\"refunds_service\":{\"idempotency_key\":0}}");
        assert!(
            msg.contains("refunds_service.idempotency_key: invalid type: integer `0`"),
            "{msg}"
        );
        // A syntax error between values is still a plain syntax error.
        assert!(!err_of("{\"name\": \"t\",,}").contains("not a JSON number"));
    }

    #[test]
    fn schema_describes_the_format() {
        let schema: Value = serde_json::from_str(&schema_json()).unwrap();
        assert_eq!(schema["title"], "Scenario");
        assert!(schema["properties"]["refunds_service"].is_object());
        assert!(schema_json().ends_with("}\n"));
    }

    /// `docs/scenario.schema.json` must match the types. `REFUNDSIM_BLESS=1 cargo test -p
    /// refundsim-unit-tests schema` rewrites it.
    #[test]
    fn schema_file_is_current() {
        let path = crate::repo_root().join("docs/scenario.schema.json");
        let fresh = schema_json();
        if std::env::var_os("REFUNDSIM_BLESS").is_some() {
            std::fs::write(&path, &fresh).unwrap();
            return;
        }
        let shipped = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            shipped == fresh,
            "{} is stale; regenerate it with `REFUNDSIM_BLESS=1 cargo test -p refundsim-unit-tests schema`",
            path.display()
        );
    }
}
