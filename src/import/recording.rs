//! The recording: what the importers read out of traces, logs and refund exports, in one
//! format-neutral shape that [`super::build`] turns into a replay scenario.
//!
//! Every time is an absolute instant in nanoseconds since the Unix epoch (UTC), whatever the
//! source said (OTLP's `startTimeUnixNano`, a CSV's `created` seconds, a log's time of day on the
//! date given to the importer). Every record keeps where it came from ([`Source`]) so the
//! importer's errors and the replay's comparison can name the file and line.

use std::fmt;

/// Where a record came from: a file and a 1-based line (for a JSON document, the line its
/// object starts on; 0 when unknown).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Source {
    /// The file as given on the command line.
    pub file: String,
    /// 1-based line; 0 when unknown.
    pub line: u64,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file)
        } else {
            write!(f, "{}:{}", self.file, self.line)
        }
    }
}

/// A ticket id as recorded: its text, whatever the source's type (an integer id `48213` is the
/// text `"48213"`; a string id `"T-100000"` is kept as written). The importer's builder turns
/// each into the replay's numeric ticket id and keeps the text for stories and comparisons
/// (see [`super::build`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TicketRef(pub String);

impl TicketRef {
    /// The id as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The numeric id, when the text is a non-negative integer in its canonical decimal form
    /// (`"48213"`; not `"048213"` or `"T-7"`).
    pub fn number(&self) -> Option<u64> {
        let n: u64 = self.0.parse().ok()?;
        (n.to_string() == self.0).then_some(n)
    }
}

impl From<u64> for TicketRef {
    fn from(n: u64) -> Self {
        TicketRef(n.to_string())
    }
}

impl From<&str> for TicketRef {
    fn from(s: &str) -> Self {
        TicketRef(s.to_string())
    }
}

impl PartialEq<u64> for TicketRef {
    fn eq(&self, n: &u64) -> bool {
        self.number() == Some(*n)
    }
}

impl fmt::Display for TicketRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An instant: nanoseconds since the Unix epoch, UTC.
pub(crate) type UnixNs = i64;

/// An instant known up to a tolerance: a log's redacted digits (`19.9xx`) give the middle of the
/// range they allow and half its width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instant {
    /// The instant (the middle of the range for a redacted one), ns since the Unix epoch.
    pub at: UnixNs,
    /// Half the width of the range the source allows, ns; 0 when exact.
    pub tolerance_ns: u64,
}

impl Instant {
    /// An exactly recorded instant.
    pub fn exact(at: UnixNs) -> Self {
        Instant {
            at,
            tolerance_ns: 0,
        }
    }
}

/// What a tool call's result said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResultRec {
    /// When the model was given the result (for a timeout: when the executor gave up).
    pub at: Instant,
    /// Whether the tool reported success (a refund id) rather than an error.
    pub ok: bool,
    /// Whether the error was the executor's timeout.
    pub timed_out: bool,
    /// The refund id in the result, as recorded (may be truncated, like `re_1P9x...`).
    pub refund_id: Option<String>,
}

/// The refunds service's answer to one tool call, which may arrive after the executor gave up
/// (a late, "zombie" response).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceResponseRec {
    /// When the service answered.
    pub at: Instant,
    /// Whether it answered with a refund.
    pub ok: bool,
    /// The refund id in the answer, as recorded.
    pub refund_id: Option<String>,
}

/// One tool call of the agent (one model attempt), with what followed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCallRec {
    /// The ticket the call is for.
    pub ticket: TicketRef,
    /// The tool's name (`gen_ai.tool.name`).
    pub tool: String,
    /// The tool call id (`gen_ai.tool.call.id`), when recorded.
    pub call_id: Option<String>,
    /// When the call reached the executor.
    pub at: Instant,
    /// The amount asked for, cents, when recorded.
    pub amount_cents: Option<u64>,
    /// When no amount was read: the call's field path in its file and what its arguments
    /// held (`` resourceSpans[0].scopeSpans[0].spans[0]: its arguments are `refund_value` and
    /// `ticket_id` ``), for the error that names them if the ticket's amount is recorded
    /// nowhere else. `None` when the call has an amount.
    pub amount_missing: Option<String>,
    /// The result given to the model.
    pub result: Option<ToolResultRec>,
    /// When the model decided what to do after a failed result (a retry or giving up).
    pub decision_at: Option<Instant>,
    /// The refunds service's answer, when it is recorded apart from the result (a late
    /// response, or a service span).
    pub service_response: Option<ServiceResponseRec>,
    /// Where the call was recorded.
    pub source: Source,
}

/// One HTTP request from the refunds service to the provider (`POST /v1/refunds`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderRequestRec {
    /// The ticket the request is for.
    pub ticket: TicketRef,
    /// The model attempt (0-based index of the ticket's tool call) it serves, when the recording
    /// links it (e.g. by span parentage); otherwise the latest tool call of the ticket that
    /// started before it.
    pub attempt: Option<u32>,
    /// The SDK's try (0 for the first request of a service request, 1 for its first network
    /// retry), when known; otherwise counted in order per attempt.
    pub try_no: Option<u32>,
    /// When the refunds service received the tool call this request serves (its SERVER span),
    /// when recorded: the time from there to `sent` is the time to reach the provider.
    pub service_received: Option<Instant>,
    /// When the request was sent.
    pub sent: Instant,
    /// How long the provider took to answer, ns; `None` when no answer was recorded.
    pub latency_ns: Option<u64>,
    /// The HTTP status of the answer; `None` when there was none (connection lost).
    pub status: Option<u16>,
    /// The `Idempotency-Key` header it carried: `Some(None)` when recorded as absent, `None`
    /// when the recording does not say.
    pub idempotency_key: Option<Option<String>>,
    /// The refund id in the answer.
    pub refund_id: Option<String>,
    /// Where the request was recorded.
    pub source: Source,
}

/// One refund in the provider's export: the ground truth of what was refunded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportedRefund {
    /// The refund id (`re_…`).
    pub id: String,
    /// The charge or payment intent it refunds.
    pub charge: String,
    /// Amount, cents.
    pub amount_cents: u64,
    /// When the provider created it.
    pub created: Instant,
    /// Stripe's refund status (`succeeded`, `pending`, `failed`, `canceled`, `requires_action`).
    pub status: String,
    /// The ticket id from the refund's metadata.
    pub ticket: TicketRef,
    /// Where the row was.
    pub source: Source,
}

/// A warning about the input that did not stop the import (a redacted time, a truncated id).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Warning {
    /// Where.
    pub source: Source,
    /// What, and what the importer did about it.
    pub message: String,
}

/// Everything read from the input files, in the order read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recording {
    /// The agent's tool calls.
    pub tool_calls: Vec<ToolCallRec>,
    /// The refunds service's requests to the provider.
    pub provider_requests: Vec<ProviderRequestRec>,
    /// The provider's refund export.
    pub refunds: Vec<ExportedRefund>,
    /// The executor timeout the recording states (e.g. `timeout after 8000ms`), ns.
    pub executor_timeout_ns: Option<u64>,
    /// Warnings: at most [`WARNINGS_PER_KIND`] of each kind (see [`Recording::warn`]).
    pub warnings: Vec<Warning>,
    /// Warnings not kept, by kind ([`warning_kind`]): how many, and where the first was.
    pub suppressed: std::collections::BTreeMap<String, (u64, Source)>,
}

/// How many warnings of one kind an import keeps and prints (5); the rest are counted and
/// summed up in one line, "… and 455,899 more like this", so a file of junk lines gives a
/// screen of warnings, not 84 MB of them.
pub(crate) const WARNINGS_PER_KIND: usize = 5;

/// Words after which a warning names the record it is about (`ticket T-100000:`, `refund
/// re_0001 is …`, `span 00f1 of trace 4bf9 …`): the same warning about another record is the
/// same kind.
const SUBJECTS: [&str; 4] = ["ticket", "refund", "span", "trace"];

/// The kind of a warning: its message with the values that change from one occurrence to the
/// next masked, so the same warning about other lines, tickets or values is one kind, and
/// different warnings stay apart:
///
/// - a number standing alone as a value — a count, a time, a line (`1,007`, `8.5`,
///   `16:41:09.210`, `r.jsonl:12`) — is `#`; digits inside an identifier (`refund_v2`,
///   `T-100000`, `re_0001`, `run2.log`) are kept, so warnings about the tool `refund_v1` and
///   the tool `refund_v2` are two kinds;
/// - the identifier after `ticket`, `refund`, `span` or `trace` (when it has a digit) is `#`:
///   the record the warning is about;
/// - a quoted text (`"GET /healthz 200"`) is `"…"`.
pub(crate) fn warning_kind(message: &str) -> String {
    let chars: Vec<char> = message.chars().collect();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(message.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' {
            out.push_str("\"…\"");
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += 1;
            }
            i += 1;
            continue;
        }
        if ident(c) && (i == 0 || !ident(chars[i - 1])) {
            // A number standing alone (not the tail of `T-100000`, `v2.1`), with any unit
            // after it (`8000ms`): a value.
            let after_word = i > 0
                && matches!(chars[i - 1], '-' | '.')
                && i > 1
                && ident(chars[i - 2])
                && !chars[i - 2].is_ascii_digit();
            if c.is_ascii_digit() && !after_word {
                out.push('#');
                i = number_end(&chars, i);
                while i < chars.len() && chars[i].is_alphabetic() {
                    out.push(chars[i]);
                    i += 1;
                }
                continue;
            }
            // A word: an identifier (kept whole, digits and all), or a subject before an id.
            let end = word_end(&chars, i);
            let word: String = chars[i..end].iter().collect();
            out.push_str(&word);
            i = end;
            // The id after a subject word.
            if SUBJECTS.contains(&word.as_str()) && chars.get(i) == Some(&' ') {
                let id_end = id_end(&chars, i + 1);
                if chars[i + 1..id_end].iter().any(char::is_ascii_digit) {
                    out.push_str(" #");
                    i = id_end;
                }
            }
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

/// The end of the word starting at `i`: letters, digits, `_`, and `-` or `.` between them
/// (`T-100000`, `run2.log`, `8.5`).
fn word_end(chars: &[char], i: usize) -> usize {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut end = i;
    while end < chars.len()
        && (ident(chars[end])
            || (matches!(chars[end], '-' | '.')
                && end > i
                && chars.get(end + 1).is_some_and(|&n| ident(n))))
    {
        end += 1;
    }
    end
}

/// The end of the number starting at `i`: digits, with `,`, `.` or `:` between digits
/// (`19,995`, `8.5`, `16:41:09.210`); a unit after it (`ms`) is not part of it.
fn number_end(chars: &[char], i: usize) -> usize {
    let mut end = i;
    while end < chars.len()
        && (chars[end].is_ascii_digit()
            || (matches!(chars[end], ',' | '.' | ':')
                && end > i
                && chars.get(end + 1).is_some_and(char::is_ascii_digit)))
    {
        end += 1;
    }
    end
}

/// The end of a record's id starting at `i`: up to a space, `:`, `,`, `;` or a bracket.
fn id_end(chars: &[char], i: usize) -> usize {
    let mut end = i;
    while end < chars.len() && !matches!(chars[end], ' ' | ':' | ',' | ';' | '(' | ')') {
        end += 1;
    }
    end
}

/// `warnings` with at most [`WARNINGS_PER_KIND`] of each kind (the first in file and line
/// order), then one line per kind that had more, at the first one not kept: "… and N more
/// like this: KIND". `suppressed` adds the readers' own uncounted ones.
pub(crate) fn compact_warnings(
    mut warnings: Vec<Warning>,
    suppressed: &std::collections::BTreeMap<String, (u64, Source)>,
) -> Vec<Warning> {
    warnings.sort();
    let mut kept: std::collections::BTreeMap<String, usize> = Default::default();
    let mut extra: std::collections::BTreeMap<String, (u64, Source)> = suppressed.clone();
    let mut out = Vec::new();
    for w in warnings {
        let kind = warning_kind(&w.message);
        let n = kept.entry(kind.clone()).or_default();
        if *n < WARNINGS_PER_KIND {
            *n += 1;
            out.push(w);
        } else {
            let e = extra.entry(kind).or_insert((0, w.source.clone()));
            e.0 += 1;
            e.1 = e.1.clone().min(w.source);
        }
    }
    for (kind, (n, source)) in extra {
        out.push(Warning {
            source,
            message: format!(
                "… and {} more like this: {kind}",
                crate::scenario::group_thousands(n)
            ),
        });
    }
    out.sort();
    out
}

/// Adds the counts of warnings not kept, by kind, of `other` to `into`: each kind's count
/// summed, at the earliest source of either.
pub(crate) fn add_suppressed(
    into: &mut std::collections::BTreeMap<String, (u64, Source)>,
    other: std::collections::BTreeMap<String, (u64, Source)>,
) {
    for (kind, (n, source)) in other {
        let e = into.entry(kind).or_insert((0, source.clone()));
        e.0 += n;
        e.1 = e.1.clone().min(source);
    }
}

impl Recording {
    /// Appends `other` (another file's recording).
    pub fn extend(&mut self, other: Recording) {
        self.tool_calls.extend(other.tool_calls);
        self.provider_requests.extend(other.provider_requests);
        self.refunds.extend(other.refunds);
        self.executor_timeout_ns = self.executor_timeout_ns.or(other.executor_timeout_ns);
        self.warnings.extend(other.warnings);
        add_suppressed(&mut self.suppressed, other.suppressed);
    }

    /// Adds a warning, keeping at most [`WARNINGS_PER_KIND`] of its kind ([`warning_kind`]);
    /// a later one is only counted (memory stays flat in a file of junk lines).
    pub fn warn(&mut self, w: Warning) {
        let kind = warning_kind(&w.message);
        if let Some(e) = self.suppressed.get_mut(&kind) {
            e.0 += 1;
            return;
        }
        let same = self
            .warnings
            .iter()
            .rev()
            .take(64)
            .filter(|x| warning_kind(&x.message) == kind)
            .count();
        if same < WARNINGS_PER_KIND {
            self.warnings.push(w);
        } else {
            self.suppressed.insert(kind, (1, w.source));
        }
    }

    /// Whether nothing was read.
    pub fn is_empty(&self) -> bool {
        self.tool_calls.is_empty() && self.provider_requests.is_empty() && self.refunds.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_masked_and_identifiers_kept() {
        let k = warning_kind;
        // The same warning about other tickets, attempts, times and lines: one kind.
        assert_eq!(
            k("ticket T-100000: tool call 1 comes 3.0 ms after the previous result"),
            k("ticket T-100001: tool call 2 comes 14.5 ms after the previous result")
        );
        assert_eq!(
            k("ticket 48213: tool call 1 comes 3.0 ms after the previous result"),
            "ticket #: tool call # comes # ms after the previous result"
        );
        assert_eq!(
            k("refund re_0001 is for ticket T-5, which has no tool call: ignored"),
            k("refund re_0002 is for ticket T-6, which has no tool call: ignored")
        );
        assert_eq!(
            k("19,995 lines at 16:41:09.210 (timeout after 8000ms) skipped (\"GET /x 200\")"),
            "# lines at # (timeout after #ms) skipped (\"…\")"
        );
        // Different things: digits inside identifiers are not values.
        assert_ne!(
            k("3 tool call(s) of tools other than `issue_refund` (this one of `refund_v1`) skipped"),
            k("3 tool call(s) of tools other than `issue_refund` (this one of `refund_v2`) skipped")
        );
        assert_ne!(
            k("no execute_tool span is of tool `issue_refund`; the tools seen are `lookup2`"),
            k("no execute_tool span is of tool `issue_refund`; the tools seen are `lookup3`")
        );
        assert_eq!(k("model gpt-4o answered"), "model gpt-4o answered");
    }

    #[test]
    fn a_thousand_repetitions_are_capped_and_different_warnings_kept() {
        let w = |line: u64, message: String| Warning {
            source: Source {
                file: "r.log".into(),
                line,
            },
            message,
        };
        let mut rec = Recording::default();
        for i in 0..1000u64 {
            rec.warn(w(
                i + 1,
                format!("ticket T-{i}: tool call 1 comes {i}.0 ms after"),
            ));
        }
        for v in 1..=7 {
            rec.warn(w(
                2000 + v,
                format!("1 tool call(s) of tools other than `issue_refund` (this one of `refund_v{v}`) skipped"),
            ));
        }
        let out = compact_warnings(rec.warnings.clone(), &rec.suppressed);
        let messages: Vec<&str> = out.iter().map(|w| w.message.as_str()).collect();
        assert_eq!(messages.len(), 5 + 1 + 7, "{messages:#?}");
        assert!(
            messages.contains(&"… and 995 more like this: ticket #: tool call # comes # ms after")
        );
        for v in 1..=7 {
            assert!(
                messages
                    .iter()
                    .any(|m| m.contains(&format!("`refund_v{v}`"))),
                "{messages:#?}"
            );
        }
    }
}
