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

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Map, Value};

use super::config::{AmountDist, FactorRange, LatencyDist, Scenario};

/// Metric names a scenario's `expect` may bound. This list must match the metric names of the
/// run report (`metrics` / `report`); a name missing here cannot be bounded, a name here that the
/// report lacks would never be checked.
pub const METRICS: &[&str] = &[
    "tickets",
    "tool_calls",
    "executor_timeouts",
    "retries",
    "escalations",
    "refunds_created",
    "duplicate_refund_tickets",
    "extra_refunds",
    "over_refund_cents",
    "lost_refunds",
    "false_failures",
    "stripe_replays",
    "stripe_409",
    "stripe_400",
    "stripe_429",
    "stripe_500",
    "stripe_no_response",
    "manual_refunds",
    "conservation_violations",
    "max_pool_queue_depth",
    "reconciliation_alerts",
];

/// Upper bound on the expected number of generated tickets (Σ rate × phase time before the
/// horizon); more would not finish in reasonable time.
pub const MAX_EXPECTED_TICKETS: f64 = 2_000_000.0;
/// Upper bound on the expected number of background requests (rate × horizon).
pub const MAX_EXPECTED_BACKGROUND: f64 = 20_000_000.0;
/// Longest allowed horizon: 30 days.
pub const MAX_HORIZON: Duration = Duration::from_secs(30 * 24 * 3600);
/// Longest allowed value of any other duration field: 365 days (virtual time is an integer count
/// of nanoseconds, which holds about 584 years; the cap keeps sums of durations far from overflow).
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);
/// Largest allowed `arrivals.first_ticket_id` (2^53, so ticket ids stay exact in JSON readers).
pub const MAX_FIRST_TICKET_ID: u64 = 1 << 53;

const SCENARIO_EXPECTED: &str = "a JSON object with at least name, horizon, arrivals";
const POLICY_EXPECTED: &str = "a JSON object (an RFC 7396 merge patch over a scenario)";
const DURATION_EXPECTED: &str = r#"a duration like "8s", "400ms" or "53m""#;
const RFC3339_EXAMPLE: &str = r#""2024-05-14T16:00:00Z""#;

/// A file name with the line and column (1-based) where known: displays as `file:line:col` or
/// `file`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Location {
    /// The file (or other origin) as given.
    pub file: String,
    /// Line and column, 1-based, when known.
    pub line_col: Option<(usize, usize)>,
}

impl Location {
    fn new(file: &str, line_col: Option<(usize, usize)>) -> Self {
        Location {
            file: file.to_string(),
            line_col,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line_col {
            Some((line, col)) => write!(f, "{}:{line}:{col}", self.file),
            None => f.write_str(&self.file),
        }
    }
}

/// Why a scenario, policy or `--set` could not be loaded. Every message is one line naming the
/// file, the JSON path (and line/column where known) and what was expected. All are bad input:
/// [`ScenarioError::exit_code`] is 2.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{file}: cannot read file: {source}")]
    Read {
        /// The file.
        file: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is empty or only whitespace.
    #[error("{file}: file is empty; expected {expected}")]
    Empty {
        /// The file.
        file: String,
        /// What the file should hold.
        expected: &'static str,
    },
    /// The text is not JSON (syntax error, truncated file), or a policy is not a JSON object.
    #[error("{at}: {message}")]
    Syntax {
        /// Where.
        at: Location,
        /// What is wrong and what was expected.
        message: String,
    },
    /// A field is unknown, missing, of the wrong type or an invalid value.
    #[error("{at}: {}: {message}{}", show_path(.path), show_applied(.applied))]
    Invalid {
        /// Where. Line and column are absent when the value came from a policy or `--set`.
        at: Location,
        /// Dot-separated JSON path of the field, e.g. `refunds_service.pool_size` (empty: the
        /// whole document).
        path: String,
        /// What is wrong and what was expected.
        message: String,
        /// The policies (`policy FILE`) and overrides (`--set PATH=VALUE`) applied before the
        /// error arose when the faulty value is not the file's own; empty otherwise.
        applied: Vec<String>,
    },
    /// A malformed `--set PATH=VALUE`.
    #[error("--set {arg}: {message}")]
    Set {
        /// The argument as given.
        arg: String,
        /// What is wrong and what was expected.
        message: String,
    },
}

impl ScenarioError {
    /// The process exit code for this error: 2 (bad usage or input, DESIGN §5).
    pub fn exit_code(&self) -> i32 {
        2
    }
}

fn show_path(path: &str) -> &str {
    if path.is_empty() {
        "(top level)"
    } else {
        path
    }
}

fn show_applied(applied: &[String]) -> String {
    if applied.is_empty() {
        String::new()
    } else {
        format!(" (after applying {})", applied.join(", "))
    }
}

/// A scenario that parsed but breaks a rule: the field's dot-separated path and what was
/// expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
#[non_exhaustive]
pub struct ValidationError {
    /// Dot-separated JSON path, e.g. `stripe.latency.p99` or `arrivals.schedule.1.rate_per_s`.
    pub path: String,
    /// What is wrong and what was expected.
    pub message: String,
}

/// Loads the scenario file at `path`, applies each policy file in order (an RFC 7396 JSON merge
/// patch), then each `PATH=VALUE` override, and validates the result.
///
/// `PATH` is dot-separated; numeric segments index arrays (`arrivals.schedule.1.rate_per_s`);
/// missing objects on the way are created. `VALUE` is parsed as JSON if it parses, else taken as
/// a string, so `executor.timeout=15s` and `refunds_service.pool_size=20` both work (write
/// `name="123"` for a string that looks like JSON). `VALUE` `null` removes the field, like a merge
/// patch, so its default applies.
pub fn load(path: &Path, policies: &[PathBuf], sets: &[String]) -> Result<Scenario, ScenarioError> {
    let origin = path.display().to_string();
    let text = read(path)?;
    let (scenario, base) = parse(&text, &origin)?;
    if policies.is_empty() && sets.is_empty() {
        return checked(scenario, &text, &origin, None);
    }

    let mut doc = base.clone();
    let mut applied = Vec::new();
    for policy in policies {
        let patch = read_policy(policy)?;
        json_patch::merge(&mut doc, &patch);
        applied.push(format!("policy {}", policy.display()));
    }
    for set in sets {
        apply_set(&mut doc, set)?;
        applied.push(format!("--set {set}"));
    }
    if let Err((segs, message)) = check_shape(&doc) {
        return Err(ScenarioError::Invalid {
            at: Location::new(&origin, None),
            path: segs.join("."),
            message,
            applied,
        });
    }
    let scenario: Scenario = serde_path_to_error::deserialize(&doc).map_err(|e| {
        let (path, message) = data_error(segments(e.path()), e.inner());
        ScenarioError::Invalid {
            at: Location::new(&origin, None),
            path,
            message,
            applied: applied.clone(),
        }
    })?;
    checked(scenario, &text, &origin, Some((&base, &doc, applied)))
}

/// Parses and validates scenario text; `origin` names it in errors.
pub fn load_str(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
    let (scenario, _) = parse(text, origin)?;
    checked(scenario, text, origin, None)
}

/// The JSON Schema of the scenario format, pretty-printed with a trailing newline. The copy in
/// `docs/scenario.schema.json` is checked against it by a unit test (`REFUNDSIM_BLESS=1 cargo
/// test schema` rewrites it).
pub fn schema_json() -> String {
    let schema = schemars::schema_for!(Scenario);
    let mut s = serde_json::to_string_pretty(&schema).expect("a JSON Schema serializes");
    s.push('\n');
    s
}

fn read(path: &Path) -> Result<String, ScenarioError> {
    std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
        file: path.display().to_string(),
        source,
    })
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
    let value: Value = serde_json::from_str(text).map_err(|e| syntax(origin, &e, ""))?;
    if let Err((segs, message)) = check_shape(&value) {
        let line_col = locate(text, &segs).map(|off| offset_to_line_col(text, off));
        return Err(ScenarioError::Invalid {
            at: Location::new(origin, line_col),
            path: segs.join("."),
            message,
            applied: Vec::new(),
        });
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let scenario: Scenario = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let inner = e.inner();
        if is_syntax(inner) {
            return syntax(origin, inner, "");
        }
        let at = Location::new(origin, line_col(inner));
        let (path, message) = data_error(segments(e.path()), inner);
        ScenarioError::Invalid {
            at,
            path,
            message,
            applied: Vec::new(),
        }
    })?;
    de.end().map_err(|e| syntax(origin, &e, ""))?;
    Ok((scenario, value))
}

// ---------------------------------------------------------------------------------------------
// Objects where objects belong
//
// serde accepts a JSON array for a struct (its fields in declaration order), so
// `"latency": ["1s", "2s"]` would load. The generated schema says where objects belong; this
// walk rejects an array there before serde sees it.

fn schema_value() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        serde_json::to_value(schemars::schema_for!(Scenario)).unwrap_or(Value::Null)
    })
}

/// The path of the first value that is not an object where the format wants one, and the error
/// message.
fn check_shape(doc: &Value) -> Result<(), (Vec<String>, String)> {
    if !doc.is_object() {
        return Err((
            Vec::new(),
            format!(
                "invalid type: expected {SCENARIO_EXPECTED}, got {}",
                kind(doc)
            ),
        ));
    }
    let mut path = Vec::new();
    if misplaced_array(doc, schema_value(), &mut path, 0) {
        return Err((
            path,
            "invalid type: expected a JSON object, got an array".to_string(),
        ));
    }
    Ok(())
}

/// Follows `$ref`s (`#/$defs/Name`) into the root schema.
fn resolve(mut node: &Value) -> &Value {
    for _ in 0..64 {
        let Some(target) = node.get("$ref").and_then(Value::as_str) else {
            break;
        };
        match target
            .strip_prefix('#')
            .and_then(|p| schema_value().pointer(p))
        {
            Some(next) => node = next,
            None => break,
        }
    }
    node
}

fn allows(node: &Value, ty: &str) -> bool {
    match node.get("type") {
        Some(Value::String(t)) => t == ty,
        Some(Value::Array(ts)) => ts.iter().any(|t| t == ty),
        _ => false,
    }
}

/// Whether `value` or a value inside it is an array where `node` wants an object; `path` then
/// holds its path.
fn misplaced_array(value: &Value, node: &Value, path: &mut Vec<String>, depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    let node = resolve(node);
    for key in ["anyOf", "oneOf", "allOf"] {
        for alt in node
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if misplaced_array(value, alt, path, depth + 1) {
                return true;
            }
        }
    }
    match value {
        Value::Array(items) => {
            if allows(node, "object") && !allows(node, "array") {
                return true;
            }
            if let Some(item) = node.get("items") {
                for (i, v) in items.iter().enumerate() {
                    path.push(i.to_string());
                    if misplaced_array(v, item, path, depth + 1) {
                        return true;
                    }
                    path.pop();
                }
            }
        }
        Value::Object(map) => {
            for (key, v) in map {
                let sub = node
                    .get("properties")
                    .and_then(|p| p.get(key))
                    .or_else(|| node.get("additionalProperties").filter(|a| a.is_object()));
                if let Some(sub) = sub {
                    path.push(key.clone());
                    if misplaced_array(v, sub, path, depth + 1) {
                        return true;
                    }
                    path.pop();
                }
            }
        }
        _ => {}
    }
    false
}

fn read_policy(path: &Path) -> Result<Value, ScenarioError> {
    let origin = path.display().to_string();
    let text = read(path)?;
    if text.trim().is_empty() {
        return Err(ScenarioError::Empty {
            file: origin,
            expected: POLICY_EXPECTED,
        });
    }
    let patch: Value =
        serde_json::from_str(&text).map_err(|e| syntax(&origin, &e, "invalid policy: "))?;
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
    Ok(patch)
}

/// Validates, then maps a validation error to a located [`ScenarioError`]. `patched` holds the
/// file's own JSON, the patched JSON and the patches applied, when there were any.
fn checked(
    scenario: Scenario,
    text: &str,
    origin: &str,
    patched: Option<(&Value, &Value, Vec<String>)>,
) -> Result<Scenario, ScenarioError> {
    let Err(err) = validate(&scenario) else {
        return Ok(scenario);
    };
    let segs: Vec<String> = if err.path.is_empty() {
        Vec::new()
    } else {
        err.path.split('.').map(str::to_string).collect()
    };
    let (from_file, applied) = match patched {
        None => (true, Vec::new()),
        Some((base, doc, applied)) => {
            let pointer = json_pointer(&segs);
            let same =
                base.pointer(&pointer).is_some() && base.pointer(&pointer) == doc.pointer(&pointer);
            if same {
                (true, Vec::new())
            } else {
                (false, applied)
            }
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

// ---------------------------------------------------------------------------------------------
// serde error messages

fn is_syntax(e: &serde_json::Error) -> bool {
    matches!(
        e.classify(),
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof
    )
}

fn line_col(e: &serde_json::Error) -> Option<(usize, usize)> {
    (e.line() > 0).then(|| (e.line(), e.column().max(1)))
}

/// serde_json's message without its ` at line L column C` suffix.
fn bare_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    match s.strip_suffix(&suffix) {
        Some(bare) if e.line() > 0 => bare.to_string(),
        _ => s,
    }
}

fn syntax(origin: &str, e: &serde_json::Error, prefix: &str) -> ScenarioError {
    let mut message = format!("{prefix}{}", bare_message(e));
    if e.classify() == serde_json::error::Category::Eof {
        message.push_str(" (the file ends early: is the JSON truncated or a bracket unclosed?)");
    }
    ScenarioError::Syntax {
        at: Location::new(origin, line_col(e)),
        message,
    }
}

fn segments(path: &serde_path_to_error::Path) -> Vec<String> {
    path.iter()
        .map(|seg| match seg {
            serde_path_to_error::Segment::Seq { index } => index.to_string(),
            serde_path_to_error::Segment::Map { key } => key.clone(),
            serde_path_to_error::Segment::Enum { variant } => variant.clone(),
            serde_path_to_error::Segment::Unknown => "?".to_string(),
        })
        .collect()
}

/// The dotted path and an augmented message for a data error (unknown or missing field, wrong
/// type, bad value).
fn data_error(mut segs: Vec<String>, e: &serde_json::Error) -> (String, String) {
    let message = bare_message(e);
    for lead in ["unknown field `", "missing field `", "duplicate field `"] {
        if let Some(rest) = message.strip_prefix(lead) {
            if let Some((field, _)) = rest.split_once('`') {
                if segs.last().map(String::as_str) != Some(field) {
                    segs.push(field.to_string());
                }
            }
        }
    }
    (segs.join("."), augment(message))
}

/// Says what was expected in words where serde's message names a Rust type.
fn augment(mut message: String) -> String {
    if message.ends_with(", expected a duration") {
        let negative = message.starts_with("invalid value: string \"-");
        message.truncate(message.len() - "a duration".len());
        message.push_str(DURATION_EXPECTED);
        if negative {
            message.push_str(" (durations cannot be negative)");
        }
        return message;
    }
    for (rust, words) in [
        ("expected u64", "expected a non-negative integer"),
        ("expected u32", "expected a non-negative integer below 2^32"),
        ("expected i64", "expected an integer"),
        ("expected f64", "expected a number"),
        ("expected a boolean", "expected true or false"),
    ] {
        if message.ends_with(rust) {
            message.truncate(message.len() - rust.len());
            message.push_str(words);
            return message;
        }
    }
    message
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

// ---------------------------------------------------------------------------------------------
// --set PATH=VALUE

fn set_error(arg: &str, message: impl Into<String>) -> ScenarioError {
    ScenarioError::Set {
        arg: arg.to_string(),
        message: message.into(),
    }
}

/// Applies one `PATH=VALUE` override to a scenario's JSON.
fn apply_set(doc: &mut Value, arg: &str) -> Result<(), ScenarioError> {
    let Some((path, raw)) = arg.split_once('=') else {
        return Err(set_error(
            arg,
            "expected PATH=VALUE, e.g. executor.timeout=15s or refunds_service.pool_size=20",
        ));
    };
    let path = path.trim();
    if path.is_empty() {
        return Err(set_error(
            arg,
            "empty PATH; expected a dot-separated field path such as refunds_service.pool_size",
        ));
    }
    let segs: Vec<&str> = path.split('.').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return Err(set_error(
            arg,
            format!("empty segment in PATH `{path}`; expected names separated by single dots"),
        ));
    }
    let value =
        serde_json::from_str::<Value>(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
    let Some((last, parents)) = segs.split_last() else {
        return Err(set_error(arg, "empty PATH"));
    };

    let mut cur = doc;
    for (i, seg) in parents.iter().enumerate() {
        let here = &segs[..=i];
        cur = match cur {
            Value::Object(map) => {
                let slot = map.entry(seg.to_string()).or_insert(Value::Null);
                if slot.is_null() {
                    *slot = Value::Object(Map::new());
                }
                slot
            }
            Value::Array(items) => {
                let idx = index(arg, &segs[..i], seg, items.len())?;
                &mut items[idx]
            }
            other => return Err(not_container(arg, &segs[..i], here, other)),
        };
    }
    match cur {
        Value::Object(map) => {
            if value.is_null() {
                map.remove(*last);
            } else {
                map.insert(last.to_string(), value);
            }
        }
        Value::Array(items) => {
            let idx = index(arg, parents, last, items.len())?;
            items[idx] = value;
        }
        other => return Err(not_container(arg, parents, &segs, other)),
    }
    Ok(())
}

fn index(arg: &str, parent: &[&str], seg: &str, len: usize) -> Result<usize, ScenarioError> {
    let at = show_path(&parent.join(".")).to_string();
    let expected = match len {
        0 => format!("`{at}` is an empty array"),
        1 => format!("`{at}` has 1 element; expected index 0"),
        n => format!(
            "`{at}` has {n} elements; expected an index from 0 to {}",
            n - 1
        ),
    };
    let idx: usize = seg
        .parse()
        .map_err(|_| set_error(arg, format!("`{seg}` is not an array index: {expected}")))?;
    if idx >= len {
        return Err(set_error(
            arg,
            format!("index {idx} out of range: {expected}"),
        ));
    }
    Ok(idx)
}

fn not_container(arg: &str, parent: &[&str], full: &[&str], v: &Value) -> ScenarioError {
    set_error(
        arg,
        format!(
            "cannot set `{}`: `{}` is {}, not an object or array",
            full.join("."),
            show_path(&parent.join(".")),
            kind(v)
        ),
    )
}

// ---------------------------------------------------------------------------------------------
// Locating a path in JSON text

fn json_pointer(segs: &[String]) -> String {
    segs.iter()
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect()
}

fn offset_to_line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    (line, offset - line_start + 1)
}

/// Byte offset of the value at `path` in the JSON `text` (numeric segments index arrays), if the
/// text spells it out.
fn locate(text: &str, path: &[String]) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    for seg in path {
        match *b.get(i)? {
            b'{' => i = find_key(text, i + 1, seg)?,
            b'[' => {
                let idx: usize = seg.parse().ok()?;
                i = skip_ws(b, i + 1);
                for _ in 0..idx {
                    if *b.get(i)? == b']' {
                        return None;
                    }
                    i = skip_ws(b, skip_value(b, i)?);
                    if *b.get(i)? != b',' {
                        return None;
                    }
                    i = skip_ws(b, i + 1);
                }
                if *b.get(i)? == b']' {
                    return None;
                }
            }
            _ => return None,
        }
    }
    Some(i)
}

/// From just inside an object's `{`, the offset of the value of member `key`.
fn find_key(text: &str, mut i: usize, key: &str) -> Option<usize> {
    let b = text.as_bytes();
    loop {
        i = skip_ws(b, i);
        if *b.get(i)? != b'"' {
            return None;
        }
        let end = skip_string(b, i)?;
        let name: String = serde_json::from_str(text.get(i..end)?).ok()?;
        i = skip_ws(b, end);
        if *b.get(i)? != b':' {
            return None;
        }
        i = skip_ws(b, i + 1);
        if name == key {
            return Some(i);
        }
        i = skip_ws(b, skip_value(b, i)?);
        if *b.get(i)? != b',' {
            return None;
        }
        i += 1;
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// From an opening quote, the offset just past the closing quote.
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        match *b.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// From the start of a value, the offset just past it.
fn skip_value(b: &[u8], mut i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            loop {
                match *b.get(i)? {
                    b'"' => {
                        i = skip_string(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']') && !b[i].is_ascii_whitespace()
            {
                i += 1;
            }
            Some(i)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Validation

type Check = Result<(), ValidationError>;

fn fail(path: impl Into<String>, message: impl Into<String>) -> Check {
    Err(ValidationError {
        path: path.into(),
        message: message.into(),
    })
}

/// A duration as `humantime` parses it, in days at most (`31d`, `1h 30m`, `400ms`, `0s`).
fn fmt_d(d: Duration) -> String {
    if d.is_zero() {
        return "0s".to_string();
    }
    let secs = d.as_secs();
    let nanos = d.subsec_nanos();
    let parts = [
        (secs / 86_400, "d"),
        (secs / 3600 % 24, "h"),
        (secs / 60 % 60, "m"),
        (secs % 60, "s"),
        (u64::from(nanos / 1_000_000), "ms"),
        (u64::from(nanos / 1000 % 1000), "us"),
        (u64::from(nanos % 1000), "ns"),
    ];
    let shown: Vec<String> = parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n}{unit}"))
        .collect();
    shown.join(" ")
}

fn at_most(path: &str, d: Duration, max: Duration) -> Check {
    if d > max {
        return fail(
            path,
            format!(
                "invalid value: expected a duration of at most {}, got {}",
                fmt_d(max),
                fmt_d(d)
            ),
        );
    }
    Ok(())
}

fn positive(path: &str, d: Duration) -> Check {
    if d.is_zero() {
        return fail(
            path,
            format!(
                "invalid value: expected a duration > 0 like \"8s\", got {}",
                fmt_d(d)
            ),
        );
    }
    at_most(path, d, MAX_DURATION)
}

fn probability(path: &str, p: f64) -> Check {
    if !(0.0..=1.0).contains(&p) {
        return fail(
            path,
            format!("invalid value: expected a probability in [0, 1], got {p}"),
        );
    }
    Ok(())
}

fn latency(path: &str, d: &LatencyDist) -> Check {
    positive(&format!("{path}.p50"), d.p50)?;
    if d.p99 < d.p50 {
        return fail(
            format!("{path}.p99"),
            format!(
                "invalid value: expected a duration ≥ p50 ({}), got {}",
                fmt_d(d.p50),
                fmt_d(d.p99)
            ),
        );
    }
    at_most(&format!("{path}.p99"), d.p99, MAX_DURATION)
}

fn amount(path: &str, a: &AmountDist) -> Check {
    if a.p50_cents == 0 {
        return fail(
            format!("{path}.p50_cents"),
            "invalid value: expected an integer ≥ 1, got 0",
        );
    }
    if a.p99_cents < a.p50_cents {
        return fail(
            format!("{path}.p99_cents"),
            format!(
                "invalid value: expected ≥ p50_cents ({}), got {}",
                a.p50_cents, a.p99_cents
            ),
        );
    }
    if a.min_cents == 0 {
        return fail(
            format!("{path}.min_cents"),
            "invalid value: expected an integer ≥ 1, got 0",
        );
    }
    if a.max_cents < a.min_cents {
        return fail(
            format!("{path}.max_cents"),
            format!(
                "invalid value: expected ≥ min_cents ({}), got {}",
                a.min_cents, a.max_cents
            ),
        );
    }
    Ok(())
}

fn factor(path: &str, f: &FactorRange) -> Check {
    if !(f.min.is_finite() && f.min >= 1.0) {
        return fail(
            format!("{path}.min"),
            format!("invalid value: expected a finite number ≥ 1, got {}", f.min),
        );
    }
    if !(f.max.is_finite() && f.max >= f.min) {
        return fail(
            format!("{path}.max"),
            format!(
                "invalid value: expected a finite number ≥ min ({}), got {}",
                f.min, f.max
            ),
        );
    }
    Ok(())
}

fn rate(path: &str, r: f64) -> Check {
    if !(r.is_finite() && r >= 0.0) {
        return fail(
            path,
            format!("invalid value: expected a finite number ≥ 0, got {r}"),
        );
    }
    Ok(())
}

/// Checks the rules the types cannot express (each error names the field's path):
///
/// - `horizon` in (0, 30 days]; every other duration at most 365 days; timeouts, intervals and
///   every latency `p50` > 0; every latency `p99` ≥ its `p50`;
/// - `arrivals`: a non-empty `schedule` or non-empty `tickets`; rates finite and ≥ 0; at most
///   [`MAX_EXPECTED_TICKETS`] expected tickets before the horizon and [`MAX_EXPECTED_BACKGROUND`]
///   background requests (else the run "would not finish"); tickets with unique ids,
///   `opened_at` ≤ horizon, `amount_cents` > 0 and `charge_amount_cents` ≥ `amount_cents`;
///   amount p99 ≥ p50 > 0, `max_cents` ≥ `min_cents` > 0; charge factors 1 ≤ min ≤ max;
/// - probabilities in [0, 1]; `stripe.faults.latency_spike_factor` ≥ 1; `executor.retry`
///   `backoff_factor` ≥ 1 and `jitter` in [0, 1); `refunds_service.pool_size` ≥ 1;
/// - `agent.tool` names one of `tools`; `clock_origin` is RFC 3339 UTC; `expect` keys are in
///   [`METRICS`] and each bound has `min` ≤ `max`.
///
/// A schedule longer than the horizon is allowed: arrivals stop at the horizon.
pub fn validate(s: &Scenario) -> Result<(), ValidationError> {
    if s.horizon.is_zero() || s.horizon > MAX_HORIZON {
        return fail(
            "horizon",
            format!(
                "invalid value: expected a duration > 0 and at most 30 days (\"30d\"), got {}",
                fmt_d(s.horizon)
            ),
        );
    }
    if let Some(origin) = &s.clock_origin {
        if humantime::parse_rfc3339(origin).is_err() {
            return fail(
                "clock_origin",
                format!("invalid value: expected an RFC 3339 UTC time like {RFC3339_EXAMPLE}, got {origin:?}"),
            );
        }
    }
    validate_arrivals(s)?;

    let bg = &s.background_load;
    rate("background_load.rate_per_s", bg.rate_per_s)?;
    let bg_expected = bg.rate_per_s * s.horizon.as_secs_f64();
    if bg_expected > MAX_EXPECTED_BACKGROUND {
        return fail(
            "background_load.rate_per_s",
            format!(
                "would not finish: {} per second over the {} horizon is about {bg_expected:.0} requests; \
                 expected at most {MAX_EXPECTED_BACKGROUND:.0}",
                bg.rate_per_s,
                fmt_d(s.horizon)
            ),
        );
    }
    latency("background_load.hold", &bg.hold)?;

    let agent = &s.agent;
    if !s.tools.iter().any(|t| t.name == agent.tool) {
        let names: Vec<&str> = s.tools.iter().map(|t| t.name.as_str()).collect();
        return fail(
            "agent.tool",
            format!(
                "invalid value: expected the name of a tool in `tools` ({}), got {:?}",
                names.join(", "),
                agent.tool
            ),
        );
    }
    latency("agent.think_time", &agent.think_time)?;
    at_most("agent.call_overhead", agent.call_overhead, MAX_DURATION)?;
    probability("agent.retry.compliance", agent.retry.compliance)?;
    probability(
        "agent.retry.amount_drift_probability",
        agent.retry.amount_drift_probability,
    )?;

    let ex = &s.executor;
    positive("executor.timeout", ex.timeout)?;
    positive("executor.probe_interval", ex.probe_interval)?;
    at_most("executor.probe_max_wait", ex.probe_max_wait, MAX_DURATION)?;
    if let Some(r) = &ex.retry {
        at_most(
            "executor.retry.initial_delay",
            r.initial_delay,
            MAX_DURATION,
        )?;
        at_most("executor.retry.max_delay", r.max_delay, MAX_DURATION)?;
        if !(r.backoff_factor.is_finite() && r.backoff_factor >= 1.0) {
            return fail(
                "executor.retry.backoff_factor",
                format!(
                    "invalid value: expected a finite number ≥ 1, got {}",
                    r.backoff_factor
                ),
            );
        }
        if !(0.0..1.0).contains(&r.jitter) {
            return fail(
                "executor.retry.jitter",
                format!(
                    "invalid value: expected a number in [0, 1), got {}",
                    r.jitter
                ),
            );
        }
    }

    let svc = &s.refunds_service;
    if svc.pool_size == 0 {
        return fail(
            "refunds_service.pool_size",
            "invalid value: expected an integer ≥ 1, got 0",
        );
    }
    if let Some(t) = svc.acquire_timeout {
        at_most("refunds_service.acquire_timeout", t, MAX_DURATION)?;
    }
    at_most("refunds_service.overhead", svc.overhead, MAX_DURATION)?;
    positive(
        "refunds_service.stripe_client.timeout",
        svc.stripe_client.timeout,
    )?;

    let st = &s.stripe;
    latency("stripe.latency", &st.latency)?;
    at_most(
        "stripe.idempotency_key_retention",
        st.idempotency_key_retention,
        MAX_DURATION,
    )?;
    let f = &st.faults;
    for (name, p) in [
        ("error_500_after_commit", f.error_500_after_commit),
        ("response_lost_after_commit", f.response_lost_after_commit),
        ("lock_timeout", f.lock_timeout),
        ("latency_spike", f.latency_spike),
        ("refund_pending", f.refund_pending),
        ("refund_failed", f.refund_failed),
    ] {
        probability(&format!("stripe.faults.{name}"), p)?;
    }
    if !(f.latency_spike_factor.is_finite() && f.latency_spike_factor >= 1.0) {
        return fail(
            "stripe.faults.latency_spike_factor",
            format!(
                "invalid value: expected a finite number ≥ 1, got {}",
                f.latency_spike_factor
            ),
        );
    }

    latency("humans.pickup_delay", &s.humans.pickup_delay)?;
    probability("humans.check_probability", s.humans.check_probability)?;
    positive("reconciliation.interval", s.reconciliation.interval)?;

    for (metric, bound) in &s.expect {
        if !METRICS.contains(&metric.as_str()) {
            return fail(
                format!("expect.{metric}"),
                format!(
                    "unknown metric {metric:?}; expected one of: {}",
                    METRICS.join(", ")
                ),
            );
        }
        if let (Some(min), Some(max)) = (bound.min, bound.max) {
            if min > max {
                return fail(
                    format!("expect.{metric}"),
                    format!("invalid bound: expected min ≤ max, got min {min} > max {max}"),
                );
            }
        }
    }
    Ok(())
}

fn validate_arrivals(s: &Scenario) -> Check {
    let a = &s.arrivals;
    if a.schedule.is_empty() && a.tickets.is_empty() {
        return fail(
            "arrivals.schedule",
            "empty schedule: expected at least one phase in arrivals.schedule (e.g. \
             {\"duration\": \"10m\", \"rate_per_s\": 0.1}) or one ticket in arrivals.tickets",
        );
    }
    if a.first_ticket_id > MAX_FIRST_TICKET_ID {
        return fail(
            "arrivals.first_ticket_id",
            format!(
                "invalid value: expected at most 2^53 ({MAX_FIRST_TICKET_ID}), got {}",
                a.first_ticket_id
            ),
        );
    }
    if a.tickets.is_empty() {
        let mut start = Duration::ZERO;
        let mut expected = 0.0;
        for (i, phase) in a.schedule.iter().enumerate() {
            rate(
                &format!("arrivals.schedule.{i}.rate_per_s"),
                phase.rate_per_s,
            )?;
            at_most(
                &format!("arrivals.schedule.{i}.duration"),
                phase.duration,
                MAX_DURATION,
            )?;
            let end = start.saturating_add(phase.duration);
            let within = end.min(s.horizon).saturating_sub(start.min(s.horizon));
            expected += phase.rate_per_s * within.as_secs_f64();
            start = end;
        }
        if expected > MAX_EXPECTED_TICKETS {
            return fail(
                "arrivals.schedule",
                format!(
                    "would not finish: the schedule opens about {expected:.0} tickets before the horizon; \
                     expected at most {MAX_EXPECTED_TICKETS:.0} (lower rate_per_s or shorten the phases)"
                ),
            );
        }
    }
    let mut seen = BTreeSet::new();
    for (i, t) in a.tickets.iter().enumerate() {
        let p = format!("arrivals.tickets.{i}");
        if !seen.insert(t.id) {
            return fail(
                format!("{p}.id"),
                format!(
                    "invalid value: expected a unique ticket id, got {} again",
                    t.id
                ),
            );
        }
        if t.opened_at > s.horizon {
            return fail(
                format!("{p}.opened_at"),
                format!(
                    "invalid value: expected a time at or before the horizon ({}), got {}",
                    fmt_d(s.horizon),
                    fmt_d(t.opened_at)
                ),
            );
        }
        if t.amount_cents == 0 {
            return fail(
                format!("{p}.amount_cents"),
                "invalid value: expected an integer ≥ 1, got 0",
            );
        }
        if t.charge_amount_cents < t.amount_cents {
            return fail(
                format!("{p}.charge_amount_cents"),
                format!(
                    "invalid value: expected ≥ amount_cents ({}), got {}",
                    t.amount_cents, t.charge_amount_cents
                ),
            );
        }
    }
    amount("arrivals.amount", &a.amount)?;
    factor("arrivals.charge_factor", &a.charge_factor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{KeyMode, OnTimeout};
    use std::io::Write;

    const MINIMAL: &str = r#"{"name":"t","horizon":"1h","arrivals":{"schedule":[{"duration":"10m","rate_per_s":0.1}]}}"#;

    /// A minimal scenario with `extra` merged in (RFC 7396), pretty-printed so fields sit on their
    /// own lines.
    fn with(extra: &str) -> String {
        let mut doc: Value = serde_json::from_str(MINIMAL).unwrap();
        json_patch::merge(&mut doc, &serde_json::from_str(extra).unwrap());
        serde_json::to_string_pretty(&doc).unwrap()
    }

    fn err_of(text: &str) -> String {
        load_str(text, "x.json")
            .expect_err("should be rejected")
            .to_string()
    }

    /// Asserts the error message for `text` contains every one of `parts`.
    fn rejects(text: &str, parts: &[&str]) {
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

    fn file(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    fn load_with(text: &str, policies: &[&str], sets: &[&str]) -> Result<Scenario, ScenarioError> {
        let base = file(text);
        let files: Vec<_> = policies.iter().map(|p| file(p)).collect();
        let paths: Vec<PathBuf> = files.iter().map(|f| f.path().to_path_buf()).collect();
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        load(base.path(), &paths, &sets)
    }

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
    fn defaults_pass_validation() {
        let s = load_str(MINIMAL, "x.json").unwrap();
        assert_eq!(validate(&s), Ok(()));
        for metric in s.expect.keys() {
            assert!(
                METRICS.contains(&metric.as_str()),
                "default expect names unknown metric {metric}"
            );
        }
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
    fn unknown_field_names_path_line_and_expected() {
        let text = with(r#"{"refunds_service":{"pool_sise":4}}"#);
        rejects(
            &text,
            &[
                "x.json:",
                "refunds_service.pool_sise",
                "unknown field",
                "expected one of",
                "pool_size",
            ],
        );
        rejects(r#"{"nmae":"t"}"#, &["x.json:1:", "nmae: unknown field"]);
    }

    #[test]
    fn unknown_field_has_line_and_column() {
        let text = "{\n  \"name\": \"t\",\n  \"horizon\": \"1h\",\n  \"bogus\": 1\n}";
        let msg = err_of(text);
        assert!(msg.starts_with("x.json:4:"), "{msg}");
        assert!(msg.contains("bogus: unknown field `bogus`"), "{msg}");
    }

    #[test]
    fn wrong_types_say_what_was_expected() {
        rejects(
            &with(r#"{"refunds_service":{"pool_size":"eight"}}"#),
            &[
                "refunds_service.pool_size",
                "invalid type: string \"eight\"",
                "expected a non-negative integer",
            ],
        );
        rejects(
            &with(r#"{"refunds_service":{"pool_size":-1}}"#),
            &["refunds_service.pool_size", "-1", "non-negative integer"],
        );
        rejects(
            &with(r#"{"arrivals":{"schedule":[{"duration":"1m","rate_per_s":"fast"}]}}"#),
            &["arrivals.schedule.0.rate_per_s", "expected a number"],
        );
        rejects(
            &with(r#"{"refunds_service":{"idempotency_key":"per_tiket"}}"#),
            &[
                "refunds_service.idempotency_key",
                "unknown variant `per_tiket`",
                "per_ticket",
            ],
        );
        rejects(
            &with(r#"{"humans":{"enabled":"yes"}}"#),
            &["humans.enabled", "expected true or false"],
        );
        rejects(
            "[1, 2]",
            &["x.json:1:1: (top level): invalid type: expected a JSON object with at least name"],
        );
        rejects(
            &with(r#"{"stripe":{"latency":["1s","2s"]}}"#),
            &["stripe.latency: invalid type: expected a JSON object, got an array"],
        );
        rejects(
            &with(r#"{"executor":{"retry":[2]}}"#),
            &["executor.retry: invalid type"],
        );
        rejects(
            &with(r#"{"arrivals":{"schedule":[["10m", 0.1]]}}"#),
            &["arrivals.schedule.0: invalid type"],
        );
        rejects(
            &with(r#"{"expect":{"tickets":[1, 2]}}"#),
            &["expect.tickets: invalid type"],
        );
        let msg = load_with(MINIMAL, &[], &["stripe.latency=[\"1s\",\"2s\"]"])
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("stripe.latency: invalid type: expected a JSON object, got an array (after applying --set"),
            "{msg}"
        );
        // A tool's input schema is free-form JSON.
        let tool = with(
            r#"{"tools":[{"name":"issue_refund","input_schema":{"type":"object","required":["a"]}}]}"#,
        );
        assert!(load_str(&tool, "x.json").is_ok());
    }

    #[test]
    fn missing_required_field_is_named() {
        rejects(
            r#"{"name":"t","arrivals":{"schedule":[]}}"#,
            &["horizon: missing field `horizon`"],
        );
        rejects(
            &with(r#"{"arrivals":{"schedule":[{"rate_per_s":1}]}}"#),
            &["arrivals.schedule.0.duration", "missing field"],
        );
    }

    #[test]
    fn bad_durations_say_what_a_duration_looks_like() {
        let expected = r#"expected a duration like "8s", "400ms" or "53m""#;
        rejects(
            &with(r#"{"executor":{"timeout":"-5s"}}"#),
            &["executor.timeout", "\"-5s\"", expected, "negative"],
        );
        rejects(
            &with(r#"{"executor":{"timeout":"8 sex"}}"#),
            &["executor.timeout", "\"8 sex\"", expected],
        );
        rejects(
            &with(r#"{"executor":{"timeout":8}}"#),
            &["executor.timeout", "integer `8`", expected],
        );
        rejects(
            &with(r#"{"refunds_service":{"acquire_timeout":"soon"}}"#),
            &["refunds_service.acquire_timeout", expected],
        );
        rejects(
            &with(r#"{"stripe":{"latency":{"p50":"1s","p99":"2 parsecs"}}}"#),
            &["stripe.latency.p99", expected],
        );
    }

    #[test]
    fn duration_error_has_line_and_column() {
        let text = "{\"name\":\"t\",\n\"horizon\":\"1h\",\n\"executor\": {\"timeout\": \"-5s\"}}";
        let msg = err_of(text);
        assert!(msg.starts_with("x.json:3:"), "{msg}");
    }

    #[test]
    fn empty_file_has_its_own_message() {
        for text in ["", "  \n\t\n"] {
            let msg = err_of(text);
            assert_eq!(msg, "x.json: file is empty; expected a JSON object with at least name, horizon, arrivals");
        }
    }

    #[test]
    fn truncated_json_reports_eof_with_line_and_column() {
        let text = "{\"name\":\"t\",\n\"horizon\":\"1h\",\n\"arrivals\":{\"schedule\":[";
        let msg = err_of(text);
        assert!(msg.starts_with("x.json:3:"), "{msg}");
        assert!(msg.contains("EOF while parsing"), "{msg}");
        assert!(msg.contains("truncated"), "{msg}");
    }

    #[test]
    fn syntax_error_and_trailing_garbage() {
        rejects(
            "{\"name\": \"t\",,}",
            &["x.json:1:14: key must be a string"],
        );
        rejects(
            &format!("{MINIMAL} {{}}"),
            &["x.json:1:", "trailing characters"],
        );
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

    #[test]
    fn empty_schedule_is_rejected() {
        rejects(
            r#"{"name":"t","horizon":"1h","arrivals":{}}"#,
            &[
                "x.json:1:",
                "arrivals.schedule",
                "empty schedule",
                "expected",
            ],
        );
        rejects(
            r#"{"name":"t","horizon":"1h","arrivals":{"schedule":[]}}"#,
            &["arrivals.schedule: empty schedule"],
        );
    }

    #[test]
    fn explicit_tickets_replace_schedule() {
        let text = r#"{"name":"t","horizon":"1h","arrivals":{"tickets":[
            {"id":1,"opened_at":"1s","amount_cents":100,"charge_amount_cents":100}]}}"#;
        assert!(load_str(text, "x.json").is_ok());
    }

    #[test]
    fn rates_that_would_not_finish() {
        rejects(
            &with(r#"{"arrivals":{"schedule":[{"duration":"1h","rate_per_s":1000}]}}"#),
            &[
                "arrivals.schedule",
                "would not finish",
                "3600000",
                "2000000",
            ],
        );
        rejects(
            &with(r#"{"horizon":"30d","background_load":{"rate_per_s":10000}}"#),
            &["background_load.rate_per_s", "would not finish"],
        );
        rejects(
            &with(r#"{"arrivals":{"schedule":[{"duration":"1m","rate_per_s":-1}]}}"#),
            &[
                "arrivals.schedule.0.rate_per_s",
                "expected a finite number ≥ 0, got -1",
            ],
        );
        // A long schedule is fine: arrivals stop at the horizon.
        let ok = with(
            r#"{"horizon":"10m","arrivals":{"schedule":[{"duration":"10m","rate_per_s":1},{"duration":"300d","rate_per_s":1000}]}}"#,
        );
        assert!(load_str(&ok, "x.json").is_ok());
    }

    #[test]
    fn horizon_bounds() {
        rejects(
            &with(r#"{"horizon":"0s"}"#),
            &[
                "horizon",
                "expected a duration > 0 and at most 30 days",
                "got 0s",
            ],
        );
        rejects(
            &with(r#"{"horizon":"31days"}"#),
            &["horizon", "at most 30 days", "got 31d"],
        );
        assert!(load_str(&with(r#"{"horizon":"30d"}"#), "x.json").is_ok());
    }

    #[test]
    fn ticket_rules() {
        let t = |tickets: &str| with(&format!(r#"{{"arrivals":{{"tickets":{tickets}}}}}"#));
        rejects(
            &t(r#"[{"id":1,"opened_at":"2h","amount_cents":100,"charge_amount_cents":100}]"#),
            &[
                "arrivals.tickets.0.opened_at",
                "at or before the horizon (1h)",
                "2h",
            ],
        );
        rejects(
            &t(
                r#"[{"id":1,"opened_at":"1s","amount_cents":100,"charge_amount_cents":100},
                   {"id":1,"opened_at":"2s","amount_cents":100,"charge_amount_cents":100}]"#,
            ),
            &["arrivals.tickets.1.id", "unique ticket id"],
        );
        rejects(
            &t(r#"[{"id":1,"opened_at":"1s","amount_cents":0,"charge_amount_cents":100}]"#),
            &["arrivals.tickets.0.amount_cents", "≥ 1, got 0"],
        );
        rejects(
            &t(r#"[{"id":1,"opened_at":"1s","amount_cents":500,"charge_amount_cents":100}]"#),
            &[
                "arrivals.tickets.0.charge_amount_cents",
                "expected ≥ amount_cents (500), got 100",
            ],
        );
    }

    #[test]
    fn latency_distributions() {
        rejects(
            &with(r#"{"stripe":{"latency":{"p50":"2s","p99":"1s"}}}"#),
            &["stripe.latency.p99", "≥ p50 (2s), got 1s"],
        );
        rejects(
            &with(r#"{"stripe":{"latency":{"p50":"0s","p99":"1s"}}}"#),
            &["stripe.latency.p50", "> 0"],
        );
        rejects(
            &with(r#"{"agent":{"think_time":{"p50":"2s","p99":"1s"}}}"#),
            &["agent.think_time.p99"],
        );
        rejects(
            &with(r#"{"humans":{"pickup_delay":{"p50":"2s","p99":"1s"}}}"#),
            &["humans.pickup_delay.p99"],
        );
        rejects(
            &with(r#"{"background_load":{"hold":{"p50":"0s","p99":"0s"}}}"#),
            &["background_load.hold.p50"],
        );
        assert!(load_str(
            &with(r#"{"stripe":{"latency":{"p50":"1s","p99":"1s"}}}"#),
            "x.json"
        )
        .is_ok());
    }

    #[test]
    fn amounts_and_factors() {
        let a = |amount: &str| with(&format!(r#"{{"arrivals":{{"amount":{amount}}}}}"#));
        rejects(
            &a(r#"{"p50_cents":100,"p99_cents":50,"min_cents":1,"max_cents":1000}"#),
            &["arrivals.amount.p99_cents", "≥ p50_cents (100)"],
        );
        rejects(
            &a(r#"{"p50_cents":100,"p99_cents":500,"min_cents":0,"max_cents":1000}"#),
            &["arrivals.amount.min_cents", "≥ 1"],
        );
        rejects(
            &a(r#"{"p50_cents":100,"p99_cents":500,"min_cents":10,"max_cents":5}"#),
            &["arrivals.amount.max_cents", "≥ min_cents (10)"],
        );
        rejects(
            &with(r#"{"arrivals":{"charge_factor":{"min":0.5,"max":2}}}"#),
            &["arrivals.charge_factor.min", "≥ 1, got 0.5"],
        );
        rejects(
            &with(r#"{"arrivals":{"charge_factor":{"min":2,"max":1.5}}}"#),
            &["arrivals.charge_factor.max", "≥ min (2)"],
        );
    }

    #[test]
    fn probabilities_and_factors() {
        rejects(
            &with(r#"{"agent":{"retry":{"compliance":1.5}}}"#),
            &["agent.retry.compliance", "probability in [0, 1], got 1.5"],
        );
        rejects(
            &with(r#"{"agent":{"retry":{"amount_drift_probability":-0.1}}}"#),
            &["agent.retry.amount_drift_probability"],
        );
        rejects(
            &with(r#"{"humans":{"check_probability":2}}"#),
            &["humans.check_probability"],
        );
        for fault in [
            "error_500_after_commit",
            "response_lost_after_commit",
            "lock_timeout",
            "latency_spike",
            "refund_pending",
            "refund_failed",
        ] {
            let text = with(&format!(r#"{{"stripe":{{"faults":{{"{fault}":1.01}}}}}}"#));
            rejects(
                &text,
                &[&format!("stripe.faults.{fault}"), "probability in [0, 1]"],
            );
        }
        rejects(
            &with(r#"{"stripe":{"faults":{"latency_spike_factor":0.5}}}"#),
            &["stripe.faults.latency_spike_factor", "≥ 1"],
        );
    }

    #[test]
    fn executor_and_reconciliation_rules() {
        rejects(
            &with(r#"{"executor":{"timeout":"0s"}}"#),
            &["executor.timeout", "duration > 0"],
        );
        rejects(
            &with(r#"{"executor":{"probe_interval":"0s"}}"#),
            &["executor.probe_interval", "duration > 0"],
        );
        rejects(
            &with(r#"{"reconciliation":{"interval":"0s"}}"#),
            &["reconciliation.interval", "duration > 0"],
        );
        rejects(
            &with(r#"{"executor":{"retry":{"backoff_factor":0.5}}}"#),
            &["executor.retry.backoff_factor", "≥ 1"],
        );
        rejects(
            &with(r#"{"executor":{"retry":{"jitter":1.0}}}"#),
            &["executor.retry.jitter", "[0, 1)"],
        );
        rejects(
            &with(r#"{"executor":{"timeout":"1000years"}}"#),
            &["executor.timeout", "at most 365d"],
        );
    }

    #[test]
    fn agent_tool_must_be_defined() {
        rejects(
            &with(r#"{"agent":{"tool":"refund_it"}}"#),
            &["agent.tool", "issue_refund", "\"refund_it\""],
        );
        let text =
            with(r#"{"tools":[{"name":"refund_v2","annotations":{"idempotentHint":true}}]}"#);
        rejects(
            &text,
            &[
                "agent.tool",
                "expected the name of a tool in `tools` (refund_v2)",
            ],
        );
        let ok = with(r#"{"agent":{"tool":"refund_v2"},"tools":[{"name":"refund_v2"}]}"#);
        assert!(load_str(&ok, "x.json").is_ok());
    }

    #[test]
    fn clock_origin_must_be_rfc3339() {
        rejects(
            &with(r#"{"clock_origin":"yesterday at 4"}"#),
            &["clock_origin", "RFC 3339", "2024-05-14T16:00:00Z"],
        );
        assert!(load_str(
            &with(r#"{"clock_origin":"2024-05-14T16:00:00Z"}"#),
            "x.json"
        )
        .is_ok());
    }

    #[test]
    fn expect_keys_and_bounds() {
        rejects(
            &with(r#"{"expect":{"duplicates":{"max":0}}}"#),
            &[
                "expect.duplicates",
                "unknown metric",
                "duplicate_refund_tickets",
            ],
        );
        rejects(
            &with(r#"{"expect":{"tickets":{"min":5,"max":1}}}"#),
            &["expect.tickets", "min ≤ max"],
        );
        rejects(
            &with(r#"{"expect":{"tickets":{"mn":5}}}"#),
            &["expect.tickets.mn", "unknown field"],
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
        assert!(!msg.contains("after applying"), "{msg}");
    }

    #[test]
    fn set_overrides() {
        let s = load_with(
            MINIMAL,
            &[],
            &[
                "executor.timeout=15s",
                "refunds_service.pool_size=20",
                "arrivals.schedule.0.rate_per_s=0.5",
                "executor.retry.max_retries=3",
                "refunds_service.idempotency_key=per_ticket",
                "name=\"123\"",
                "description=a = b",
                "clock_origin=2024-05-14T16:00:00Z",
            ],
        )
        .unwrap();
        assert_eq!(s.executor.timeout, Duration::from_secs(15));
        assert_eq!(s.refunds_service.pool_size, 20);
        assert_eq!(s.arrivals.schedule[0].rate_per_s, 0.5);
        let retry = s.executor.retry.expect("--set created executor.retry");
        assert_eq!(retry.max_retries, 3);
        assert_eq!(retry.backoff_factor, 2.0);
        assert_eq!(s.refunds_service.idempotency_key, KeyMode::PerTicket);
        assert_eq!(s.name, "123");
        assert_eq!(s.description, "a = b");
        assert_eq!(s.clock_origin.as_deref(), Some("2024-05-14T16:00:00Z"));

        let base = with(r#"{"executor":{"timeout":"3s"}}"#);
        let s = load_with(&base, &[], &["executor.timeout=null"]).unwrap();
        assert_eq!(s.executor.timeout, Duration::from_secs(8));
    }

    #[test]
    fn malformed_sets_are_rejected() {
        let cases: &[(&str, &[&str])] = &[
            (
                "executor.timeout",
                &["--set executor.timeout:", "expected PATH=VALUE"],
            ),
            ("=5", &["--set =5:", "empty PATH"]),
            ("executor..timeout=5s", &["empty segment"]),
            (
                "arrivals.schedule.3.rate_per_s=1",
                &[
                    "index 3 out of range",
                    "`arrivals.schedule` has 1 element; expected index 0",
                ],
            ),
            ("arrivals.schedule.1=1", &["index 1 out of range"]),
            (
                "arrivals.schedule.first.rate_per_s=1",
                &[
                    "`first` is not an array index",
                    "`arrivals.schedule` has 1 element",
                ],
            ),
            (
                "name.first=x",
                &["cannot set `name.first`", "`name` is a string"],
            ),
            (
                "arrivals.schedule.0.rate_per_s.x.y=1",
                &["`arrivals.schedule.0.rate_per_s` is a number"],
            ),
        ];
        for (arg, parts) in cases {
            let msg = load_with(MINIMAL, &[], &[arg]).unwrap_err().to_string();
            for part in *parts {
                assert!(
                    msg.contains(part),
                    "--set {arg}: message {msg:?} lacks {part:?}"
                );
            }
        }
    }

    #[test]
    fn locate_finds_values() {
        let text = "{\"a\": {\"b\\\"\": [1, {\"c\": \"x,]}\"}, [2, 3]], \"d\": 4}, \"e\": true}";
        let seg = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let at = |p: &[&str]| locate(text, &seg(p)).map(|i| &text[i..i + 1]);
        assert_eq!(at(&["a", "d"]), Some("4"));
        assert_eq!(at(&["a", "b\"", "1", "c"]), Some("\""));
        assert_eq!(at(&["a", "b\"", "2", "1"]), Some("3"));
        assert_eq!(at(&["e"]), Some("t"));
        assert_eq!(at(&["a", "b\"", "3"]), None);
        assert_eq!(at(&["z"]), None);
        assert_eq!(offset_to_line_col("ab\ncd", 4), (2, 2));
    }

    #[test]
    fn schema_describes_the_format() {
        let schema: Value = serde_json::from_str(&schema_json()).unwrap();
        assert_eq!(schema["title"], "Scenario");
        assert!(schema["properties"]["refunds_service"].is_object());
        assert!(schema_json().ends_with("}\n"));
    }

    /// `docs/scenario.schema.json` must match the types. `REFUNDSIM_BLESS=1 cargo test schema`
    /// rewrites it.
    #[test]
    fn schema_file_is_current() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scenario.schema.json");
        let fresh = schema_json();
        if std::env::var_os("REFUNDSIM_BLESS").is_some() {
            std::fs::write(&path, &fresh).unwrap();
            return;
        }
        let shipped = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            shipped == fresh,
            "{} is stale; regenerate it with `REFUNDSIM_BLESS=1 cargo test --lib schema`",
            path.display()
        );
    }
}
