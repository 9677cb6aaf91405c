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
pub type UnixNs = i64;

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
pub const WARNINGS_PER_KIND: usize = 5;

/// The kind of a warning: its message with every run of digits as `#` and every quoted text
/// as `"…"`, so the same warning about different lines, tickets or values is one kind.
pub fn warning_kind(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut in_quote = false;
    let mut last_digit = false;
    for c in message.chars() {
        if c == '"' {
            if !in_quote {
                out.push_str("\"…\"");
            }
            in_quote = !in_quote;
            last_digit = false;
            continue;
        }
        if in_quote {
            continue;
        }
        if c.is_ascii_digit() {
            if !last_digit {
                out.push('#');
            }
            last_digit = true;
            continue;
        }
        last_digit = false;
        out.push(c);
    }
    out
}

/// `warnings` with at most [`WARNINGS_PER_KIND`] of each kind (the first in file and line
/// order), then one line per kind that had more, at the first one not kept: "… and N more
/// like this: KIND". `suppressed` adds the readers' own uncounted ones.
pub fn compact_warnings(
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
            message: format!("… and {} more like this: {kind}", thousands(n)),
        });
    }
    out.sort();
    out
}

/// `455899` → `455,899`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl Recording {
    /// Appends `other` (another file's recording).
    pub fn extend(&mut self, other: Recording) {
        self.tool_calls.extend(other.tool_calls);
        self.provider_requests.extend(other.provider_requests);
        self.refunds.extend(other.refunds);
        self.executor_timeout_ns = self.executor_timeout_ns.or(other.executor_timeout_ns);
        self.warnings.extend(other.warnings);
        for (kind, (n, source)) in other.suppressed {
            let e = self.suppressed.entry(kind).or_insert((0, source.clone()));
            e.0 += n;
            e.1 = e.1.clone().min(source);
        }
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
