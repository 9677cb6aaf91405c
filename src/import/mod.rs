//! `refundsim import`: recorded traces, logs and refund exports → a scenario that replays them.
//!
//! One file per input format reads into the format-neutral [`Recording`]:
//!
//! | format | reader | what it holds |
//! |---|---|---|
//! | `otlp` | [`otlp`] | OTLP/JSON `ExportTraceServiceRequest` (one document, or JSON lines as the Collector's file exporter writes): GenAI `execute_tool` spans, the service's SERVER spans, the provider's HTTP CLIENT spans |
//! | `log` | [`log`] | tool-call logs in the incident log's style (`HH:MM:SS.mmm` lines) |
//! | `jsonl` | [`jsonl`] | one tool call or provider request per line (fields in `docs/import.md`) |
//! | `refunds-csv` | [`refunds_csv`] | the provider's refund export: the ground truth of what was refunded |
//! | `stripe-list` | [`stripe_list`] | the same ground truth as Stripe's API lists it (`GET /v1/refunds`) |
//! | `langsmith` | [`langsmith`] | LangSmith runs (`Client.list_runs()`): tool runs and llm runs |
//! | `langfuse` | [`langfuse`] | Langfuse observations (blob-storage export, or the public API): `TOOL` and `GENERATION` observations |
//! | `openai-agents` | [`openai_agents`] | the OpenAI Agents SDK's trace export: function spans and model spans |
//!
//! The three agent-side formats carry the agent's tool calls and model decisions only: the
//! replay draws the provider's facts (its requests, latencies, the service's late answers)
//! from the base scenario, and [`ImportReport::drawn_from_base`] says which.
//!
//! [`build`] then turns the recording and a base scenario into the replay scenario (its
//! `replay` section, see [`crate::scenario::Replay`]).

mod agent_trace;
pub(crate) mod build;
pub(crate) mod fields;
pub(crate) mod jsonl;
pub(crate) mod langfuse;
pub(crate) mod langsmith;
pub(crate) mod log;
pub(crate) mod openai_agents;
pub(crate) mod otlp;
mod progress;
mod py_literal;
pub(crate) mod recording;
pub(crate) mod refunds_csv;
pub(crate) mod stripe_list;
pub(crate) mod timeout_output;
pub(crate) mod tool_args;

use std::fmt;
use std::path::Path;

use fields::plural;

pub use build::{build, Drawn, Fit, ImportReport};
pub(crate) use build::{build_with_progress, origin_date};
pub use progress::ImportProgress;
pub(crate) use recording::UnixNs;
pub use recording::{
    ExportedRefund, Instant, ProviderRequestRec, Recording, ServiceResponseRec, Source, TicketRef,
    ToolCallRec, ToolResultRec, Warning,
};
pub(crate) use timeout_output::{TimeoutOutput, DEFAULT_TIMEOUT_OUTPUT};
pub use tool_args::ArgumentNames;
pub(crate) use tool_args::TICKET_ARGUMENTS;

/// Largest input file read whole, bytes (256 MiB): an OTLP/JSON document. A larger one is
/// refused with a message rather than read into memory; logs, JSON lines and refund exports are
/// streamed, and bounded by [`MAX_RECORDS`]. `--max-input-mb` sets another ([`max_whole_bytes`]).
pub(crate) const MAX_INPUT_BYTES: u64 = 256 << 20;

/// The largest recording read whole now: [`MAX_INPUT_BYTES`], unless `--max-input-mb` set
/// another ([`crate::input::set_max_input_bytes`]).
pub(crate) fn max_whole_bytes() -> u64 {
    crate::input::max_input_override().unwrap_or(MAX_INPUT_BYTES)
}

/// Most tool calls, provider requests or exported refunds one import reads, of each kind
/// (1,000,000: eleven days at one ticket a second): the import and its replay hold every record
/// and the replay scenario in memory, about 7 KB per tool call (a day at one ticket a second,
/// 86,319 tickets and 259,000 spans: 600 MB to import or replay, `docs/performance.md`), so
/// the cap is about 7 GB. A larger recording is refused with a message naming the file, the
/// line and the count.
pub const MAX_RECORDS: usize = 1_000_000;

/// The error for the `n`-th record of kind `what` (`"tool call"`) at `file:line` when `n` is
/// over [`MAX_RECORDS`].
pub(crate) fn check_record_count(
    file: &str,
    line: u64,
    what: &str,
    n: usize,
) -> Result<(), ImportError> {
    if n <= MAX_RECORDS {
        return Ok(());
    }
    Err(ImportError::at(
        file,
        line,
        format!(
            "{what} {n}: more than the {MAX_RECORDS} {what}s an import reads (a replay holds \
             each in memory, about 7 KB a tool call: 7 GB at the cap); expected a recording of \
             one incident: import a shorter window, or split it by time"
        ),
    ))
}

/// An input format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// OTLP/JSON traces.
    Otlp,
    /// Tool-call logs in the incident log's style.
    Log,
    /// One tool call or provider request per JSON line.
    Jsonl,
    /// The provider's refund export (CSV).
    RefundsCsv,
    /// The provider's own list of refunds: the body of Stripe's `GET /v1/refunds`.
    StripeList,
    /// LangSmith runs, as `Client.list_runs()` gives them.
    Langsmith,
    /// Langfuse observations (the blob-storage export, or the public API's).
    Langfuse,
    /// The OpenAI Agents SDK's trace export (`BackendSpanExporter`'s body).
    OpenaiAgents,
}

impl Format {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Otlp => "otlp",
            Format::Log => "log",
            Format::Jsonl => "jsonl",
            Format::RefundsCsv => "refunds-csv",
            Format::StripeList => "stripe-list",
            Format::Langsmith => "langsmith",
            Format::Langfuse => "langfuse",
            Format::OpenaiAgents => "openai-agents",
        }
    }

    /// Detects the format from the content: a JSON document or line holding `resourceSpans` is
    /// OTLP; JSON with `"object": "trace.span"` is the OpenAI Agents SDK's export; JSON with
    /// `run_type` (and `trace_id`, `dotted_order` or `start_time`) is LangSmith runs; JSON with
    /// `parent_observation_id` (or `parentObservationId`, or a trace id beside a status
    /// message) is Langfuse observations; JSON with `"object": "list"` or `"object": "refund"`
    /// is a Stripe list; other JSON lines are `jsonl`; a first line of comma-separated names
    /// including `id` and `amount` is a refund export; a line starting `HH:MM:SS` is a log.
    /// The agent-side formats are tried before the Stripe list, whose `"object": "refund"` a
    /// tool's output may hold. `None` when nothing fits. A UTF-8 byte order mark (as
    /// spreadsheets write) is skipped.
    pub fn detect(text: &str) -> Option<Format> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let first = text.lines().map(str::trim).find(|l| !l.is_empty())?;
        if first.starts_with('{') || first.starts_with('[') {
            let head: String = text.chars().take(4096).collect();
            let compact: String = text
                .chars()
                .take(DETECT_CHARS)
                .filter(|c| !c.is_whitespace())
                .collect();
            return Some(if head.contains("\"resourceSpans\"") {
                Format::Otlp
            } else if openai_agents::detect(&compact) {
                Format::OpenaiAgents
            } else if langsmith::detect(&compact) {
                Format::Langsmith
            } else if langfuse::detect(&compact) {
                Format::Langfuse
            } else if stripe_list::detect(&head) {
                Format::StripeList
            } else {
                Format::Jsonl
            });
        }
        let b = first.as_bytes();
        if b.len() >= 8
            && b[0].is_ascii_digit()
            && b[1].is_ascii_digit()
            && b[2] == b':'
            && b[5] == b':'
        {
            return Some(Format::Log);
        }
        let cols: Vec<String> = first
            .split(',')
            .map(|c| c.trim().trim_matches('"').to_ascii_lowercase())
            .collect();
        if cols.iter().any(|c| c == "id") && cols.iter().any(|c| c == "amount") {
            return Some(Format::RefundsCsv);
        }
        None
    }
}

/// How much of a JSON file's start the agent-side formats are detected from, characters: a
/// LangSmith run or a Langfuse generation with its messages runs to several thousand.
const DETECT_CHARS: usize = 32 << 10;

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Names in the inputs that differ between teams, with the defaults the docs give.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportOptions {
    /// The date (`YYYY-MM-DD`, UTC) a log's times of day are on. Default: the base scenario's
    /// `clock_origin` date, else 1970-01-01.
    pub date: Option<String>,
    /// The tool whose calls are refunds. Default: `issue_refund` (in [`import()`]: the base
    /// scenario's `agent.tool`).
    pub tool: String,
    /// The arguments of a tool call that may hold the ticket id and the amount (cents), tried
    /// in order. Default: the common names ([`TICKET_ARGUMENTS`], [`AMOUNT_ARGUMENTS`]); in
    /// [`import()`], the tool definition's names first (see [`tool_args`]).
    pub arguments: ArgumentNames,
    /// Refund-export columns: (`id`, `charge`, `amount`, `created`, `status`, ticket metadata).
    /// Default: `id`, `charge`, `amount`, `created`, `status`, `metadata.ticket`; a column left
    /// at its default name is also looked for under the alternatives [`refunds_csv`] lists
    /// (`payment_intent` for the charge, `created (utc)`, `ticket_id (metadata)` as Stripe's
    /// dashboard writes metadata columns, …).
    pub csv_columns: CsvColumns,
    /// The text of a tool result that says the call timed out, for formats where a timeout is
    /// not an error (the OpenAI Agents SDK's default): `*` for any text, `{seconds}` for the
    /// timeout, which the recording then states (see [`timeout_output`]). Default:
    /// [`DEFAULT_TIMEOUT_OUTPUT`], `Tool '*' timed out after {seconds} seconds.`.
    pub timeout_output: String,
}

/// Column names of a refund export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvColumns {
    /// Refund id column. Default `id`.
    pub id: String,
    /// Charge column. Default `charge` (else `payment_intent`).
    pub charge: String,
    /// Amount column (cents, or a decimal amount in major units when it has a `.`). Default
    /// `amount`.
    pub amount: String,
    /// Creation time column (Unix seconds, RFC 3339, or `YYYY-MM-DD HH:MM:SS` in UTC). Default
    /// `created`.
    pub created: String,
    /// Status column. Default `status`.
    pub status: String,
    /// Ticket id column. Default `metadata.ticket`.
    pub ticket: String,
}

impl Default for CsvColumns {
    fn default() -> Self {
        CsvColumns {
            id: "id".into(),
            charge: "charge".into(),
            amount: "amount".into(),
            created: "created".into(),
            status: "status".into(),
            ticket: "metadata.ticket".into(),
        }
    }
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            date: None,
            tool: "issue_refund".into(),
            arguments: ArgumentNames::default(),
            csv_columns: CsvColumns::default(),
            timeout_output: DEFAULT_TIMEOUT_OUTPUT.to_string(),
        }
    }
}

/// Why an input could not be imported (exit 2). The message names the file, the line and the
/// field, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {message}")]
pub struct ImportError {
    /// Where.
    pub at: Source,
    /// What was wrong and what was expected.
    pub message: String,
}

impl ImportError {
    /// An error at `file:line`.
    pub fn at(file: &str, line: u64, message: impl Into<String>) -> Self {
        ImportError {
            at: Source {
                file: file.to_string(),
                line,
            },
            message: message.into(),
        }
    }
}

/// What a recording should be, for a file that is not text.
const EXPECTED_TEXT: &str = "expected UTF-8 text: a tool-call log, JSON lines, OTLP/JSON, \
                             LangSmith runs, Langfuse observations, an OpenAI Agents SDK trace \
                             export or a CSV refund export";

/// Reads one file, in `format` or the detected one. `name` is the file as the user spelled it.
///
/// # Errors
/// The file cannot be read, is larger than [`MAX_INPUT_BYTES`], is not UTF-8, its format cannot
/// be detected, or the format's reader rejects it.
pub fn read_file(
    path: &Path,
    format: Option<Format>,
    opts: &ImportOptions,
) -> Result<Recording, ImportError> {
    let (name, text, format) = load(path, format)?;
    read_text(&name, &text, format, opts)
}

/// Reads every file, OTLP ones together (a span's parent may be in another file: the agent and
/// the refunds service often export to different files), the others one by one, in order.
/// Logs, JSON lines and refund exports are streamed (read line by line, only the recorded facts
/// kept); an OTLP file is read whole and may be at most [`MAX_INPUT_BYTES`]. At most
/// [`MAX_RECORDS`] records of each kind are read.
///
/// # Errors
/// As [`read_file`] for each file.
pub fn read_files(
    paths: &[std::path::PathBuf],
    format: Option<Format>,
    opts: &ImportOptions,
) -> Result<Recording, ImportError> {
    read_files_with_progress(paths, format, opts, &())
}

/// [`read_files`], telling `progress` each file as it is read and the bytes read so far (a file
/// read whole: once it is in memory, then its parsing as a step). Progress sees no content: the
/// recording is exactly [`read_files`]'.
///
/// # Errors
/// As [`read_files`].
pub(crate) fn read_files_with_progress(
    paths: &[std::path::PathBuf],
    format: Option<Format>,
    opts: &ImportOptions,
    progress: &dyn ImportProgress,
) -> Result<Recording, ImportError> {
    let mut files = FilesRead {
        opts,
        progress,
        rec: Recording::default(),
        otlp_texts: Vec::new(),
    };
    for p in paths {
        files.read(p, format)?;
    }
    let rec = files.finish()?;
    // Each reader stops at MAX_RECORDS of its own file; several files together are bounded too.
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    for (what, n) in [
        ("tool call", rec.tool_calls.len()),
        ("provider request", rec.provider_requests.len()),
        ("exported refund", rec.refunds.len()),
    ] {
        check_record_count(&names.join(", "), 0, what, n)?;
    }
    Ok(rec)
}

/// The files of a recording being read, one after the other.
struct FilesRead<'a> {
    opts: &'a ImportOptions,
    progress: &'a dyn ImportProgress,
    /// What the files read so far hold, but the OTLP files'.
    rec: Recording,
    /// The OTLP files read so far, (name, text): parsed together at the end.
    otlp_texts: Vec<(String, String)>,
}

impl FilesRead<'_> {
    /// Reads file `p`, in `format` or the one its content shows ([`sniff`]): streamed (logs,
    /// JSON lines, refund exports, agent exports as JSON lines), or read whole (OTLP, kept for
    /// [`FilesRead::finish`]; Stripe's list; agent exports as one document).
    ///
    /// # Errors
    /// As [`read_file`].
    fn read(&mut self, p: &Path, format: Option<Format>) -> Result<(), ImportError> {
        let (name, format) = sniff(p, format)?;
        let len = std::fs::metadata(p)
            .ok()
            .filter(std::fs::Metadata::is_file)
            .map_or(0, |m| m.len());
        self.progress.reading(&name, len);
        let opts = self.opts;
        let open = || open_counted(p, &name, self.progress);
        match format {
            Format::Otlp => {
                let (name, text) = self.load_whole(p, &name, Format::Otlp)?;
                self.otlp_texts.push((name, text));
            }
            Format::StripeList => {
                let (name, text) = self.load_whole(p, &name, Format::StripeList)?;
                self.rec.extend(stripe_list::read(&name, &text, opts)?);
            }
            Format::Log => {
                let lines = LineReader::new(&name, open()?);
                self.rec.extend(log::read_lines(&name, lines, opts)?);
            }
            Format::Jsonl => {
                let lines = LineReader::new(&name, open()?);
                self.rec.extend(jsonl::read_lines(&name, lines, opts)?);
            }
            Format::RefundsCsv => self
                .rec
                .extend(refunds_csv::read_from(&name, open()?, opts)?),
            Format::Langsmith | Format::Langfuse | Format::OpenaiAgents => {
                if json_lines(p, &name)? {
                    let lines = LineReader::new(&name, open()?);
                    self.rec.extend(match format {
                        Format::Langsmith => langsmith::read_lines(&name, lines, opts)?,
                        Format::Langfuse => langfuse::read_lines(&name, lines, opts)?,
                        _ => openai_agents::read_lines(&name, lines, opts)?,
                    });
                } else {
                    let (name, text) = self.load_whole(p, &name, format)?;
                    self.rec.extend(read_text(&name, &text, format, opts)?);
                }
            }
        }
        Ok(())
    }

    /// File `p` (named `name`) read whole, in `format`: its name as loaded and its text. The
    /// progress is told once it is in memory, then its parsing as a step (OTLP files are
    /// parsed together once all are read).
    ///
    /// # Errors
    /// As [`load`].
    fn load_whole(
        &self,
        p: &Path,
        name: &str,
        format: Format,
    ) -> Result<(String, String), ImportError> {
        let (name_loaded, text, _) = load(p, Some(format))?;
        self.progress.read(text.len() as u64);
        if format != Format::Otlp {
            self.progress.step(&format!("parsing {name}"));
        }
        Ok((name_loaded, text))
    }

    /// The recording of every file: the OTLP files' spans parsed and linked together (a
    /// span's parent may be in another file), added to the others'.
    ///
    /// # Errors
    /// As [`otlp::read_files`].
    fn finish(mut self) -> Result<Recording, ImportError> {
        if !self.otlp_texts.is_empty() {
            self.progress.step(&format!(
                "parsing and linking the spans of {}",
                plural(self.otlp_texts.len(), "OTLP file", "OTLP files")
            ));
            let files: Vec<(&str, &str)> = self
                .otlp_texts
                .iter()
                .map(|(n, t)| (n.as_str(), t.as_str()))
                .collect();
            self.rec.extend(otlp::read_files(&files, self.opts)?);
        }
        Ok(self.rec)
    }
}

/// File `p` (named `name`) opened to be streamed, telling `progress` the bytes read, past a
/// UTF-8 byte order mark.
///
/// # Errors
/// The file cannot be opened or read.
fn open_counted<'p>(
    p: &Path,
    name: &str,
    progress: &'p dyn ImportProgress,
) -> Result<std::io::BufReader<progress::Counted<'p, std::fs::File>>, ImportError> {
    let f = std::fs::File::open(p)
        .map_err(|e| ImportError::at(name, 0, format!("cannot read: {e}")))?;
    let mut r = std::io::BufReader::with_capacity(1 << 16, progress::Counted::new(f, progress));
    skip_bom(&mut r).map_err(|e| ImportError::at(name, 0, format!("cannot read: {e}")))?;
    Ok(r)
}

/// Longest line a streamed reader accepts, bytes (16 MiB): a longer one is refused rather than
/// read into memory.
pub(crate) const MAX_LINE_BYTES: usize = 16 << 20;

/// The lines of a streamed file, each checked: at most [`MAX_LINE_BYTES`], UTF-8; errors name
/// the file and the line.
pub(crate) struct LineReader<R> {
    name: String,
    input: R,
    line: u64,
    done: bool,
}

impl<R: std::io::BufRead> LineReader<R> {
    /// Lines of `input`, the content of file `name`.
    pub(crate) fn new(name: &str, input: R) -> Self {
        LineReader {
            name: name.to_string(),
            input,
            line: 0,
            done: false,
        }
    }
}

impl<R: std::io::BufRead> Iterator for LineReader<R> {
    type Item = Result<String, ImportError>;

    fn next(&mut self) -> Option<Self::Item> {
        use std::io::{BufRead, Read};
        if self.done {
            return None;
        }
        self.line += 1;
        let mut buf = Vec::new();
        let limit = MAX_LINE_BYTES as u64 + 1;
        match (&mut self.input).take(limit).read_until(b'\n', &mut buf) {
            Ok(0) => {
                self.done = true;
                return None;
            }
            Ok(_) => {}
            Err(e) => {
                self.done = true;
                return Some(Err(ImportError::at(
                    &self.name,
                    self.line,
                    format!("cannot read: {e}"),
                )));
            }
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        } else if buf.len() > MAX_LINE_BYTES {
            self.done = true;
            return Some(Err(ImportError::at(
                &self.name,
                self.line,
                format!("a line longer than {MAX_LINE_BYTES} bytes: expected one record per line"),
            )));
        }
        Some(String::from_utf8(buf).map_err(|e| {
            self.done = true;
            ImportError::at(&self.name, self.line, {
                let (_, column, what) = crate::scenario::not_utf8_at(e.as_bytes(), e.utf8_error());
                format!("{what} at column {column}; {EXPECTED_TEXT}")
            })
        }))
    }
}

/// Whether the file at `path` is JSON lines, to be streamed: its first line that is not blank
/// is a whole JSON value, ending within the first 64 KiB. Otherwise (a JSON array or a document
/// over several lines, or one longer line) it is read whole, at most [`MAX_INPUT_BYTES`].
fn json_lines(path: &Path, name: &str) -> Result<bool, ImportError> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(64 << 10).read_to_end(&mut head))
        .map_err(|e| ImportError::at(name, 0, format!("cannot read: {e}")))?;
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&head);
    let Some(line) = head
        .split_inclusive(|&b| b == b'\n')
        .find(|l| !l.trim_ascii().is_empty())
    else {
        return Ok(false);
    };
    if line.last() != Some(&b'\n') {
        return Ok(false);
    }
    Ok(std::str::from_utf8(line)
        .ok()
        .is_some_and(|l| serde_json::from_str::<&serde_json::value::RawValue>(l.trim()).is_ok()))
}

/// Skips a UTF-8 byte order mark at the start of `r`.
fn skip_bom(r: &mut impl std::io::BufRead) -> std::io::Result<()> {
    if r.fill_buf()?.starts_with(b"\xef\xbb\xbf") {
        r.consume(3);
    }
    Ok(())
}

/// A file's name and format (given, or detected from its first 64 KiB).
fn sniff(path: &Path, format: Option<Format>) -> Result<(String, Format), ImportError> {
    use std::io::Read;
    let name = path.display().to_string();
    let meta = std::fs::metadata(path)
        .map_err(|e| ImportError::at(&name, 0, format!("cannot read: {e}")))?;
    if meta.is_dir() {
        return Err(ImportError::at(&name, 0, "is a directory, expected a file"));
    }
    if let Some(f) = format {
        return Ok((name, f));
    }
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(64 << 10).read_to_end(&mut head))
        .map_err(|e| ImportError::at(&name, 0, format!("cannot read: {e}")))?;
    if head.len() < 64 << 10 && is_blank(&head) {
        return Err(empty(&name));
    }
    // A multi-byte character may be cut at the end of the sample.
    let text = match std::str::from_utf8(&head) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or("")
        }
        Err(e) => {
            let (line, column, what) = crate::scenario::not_utf8_at(&head, e);
            return Err(ImportError::at(
                &name,
                line as u64,
                format!("{what} at column {column}; {EXPECTED_TEXT}"),
            ));
        }
    };
    match Format::detect(text) {
        Some(f) => Ok((name, f)),
        None => Err(undetected(&name)),
    }
}

/// Whether `bytes` hold nothing but whitespace (and a byte order mark).
fn is_blank(bytes: &[u8]) -> bool {
    bytes
        .strip_prefix(b"\xef\xbb\xbf")
        .unwrap_or(bytes)
        .trim_ascii()
        .is_empty()
}

/// The error for an empty file (or one of whitespace only): there is no format to tell.
fn empty(name: &str) -> ImportError {
    ImportError::at(
        name,
        0,
        "the file is empty (or only whitespace): expected a recording to import — OTLP/JSON, \
         LangSmith runs, Langfuse observations, an OpenAI Agents SDK trace export, a Stripe \
         list of refunds, JSON lines, a refund export CSV or a tool-call log",
    )
}

fn undetected(name: &str) -> ImportError {
    ImportError::at(
        name,
        1,
        "cannot tell the format: expected OTLP/JSON (`resourceSpans`), LangSmith runs \
         (`run_type`), Langfuse observations (`parent_observation_id`), an OpenAI Agents SDK \
         trace export (`\"object\": \"trace.span\"`), a Stripe list of refunds (`\"object\": \
         \"list\"`), JSON lines, a refund export CSV (a header with `id` and `amount`) or a log \
         (`HH:MM:SS.mmm` lines); name it with --format \
         otlp|log|jsonl|refunds-csv|stripe-list|langsmith|langfuse|openai-agents",
    )
}

/// A file's name, text and format (given, or detected); at most [`MAX_INPUT_BYTES`].
fn load(path: &Path, format: Option<Format>) -> Result<(String, String, Format), ImportError> {
    let name = path.display().to_string();
    let meta = std::fs::metadata(path)
        .map_err(|e| ImportError::at(&name, 0, format!("cannot read: {e}")))?;
    if meta.is_dir() {
        return Err(ImportError::at(&name, 0, "is a directory, expected a file"));
    }
    // Bounded even where the size is not known beforehand (a pipe, /dev/zero).
    let limit = max_whole_bytes();
    let bytes = crate::input::read_capped(path, limit, "a file read whole").map_err(|e| {
        ImportError::at(
            &name,
            0,
            match e {
                crate::input::InputError::Read { source, .. } => format!("cannot read: {source}"),
                _ => format!(
                    "more than the {limit}-byte limit of a file read whole (an OTLP/JSON \
                     document, a JSON array); export JSON lines, split the recording, or raise \
                     the limit with {}",
                    crate::input::MAX_INPUT_FLAG
                ),
            },
        )
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let (line, column, what) = crate::scenario::not_utf8_at(e.as_bytes(), e.utf8_error());
        ImportError::at(
            &name,
            line as u64,
            format!("{what} at column {column}; {EXPECTED_TEXT}"),
        )
    })?;
    if format.is_none() && is_blank(text.as_bytes()) {
        return Err(empty(&name));
    }
    match format.or_else(|| Format::detect(&text)) {
        Some(f) => Ok((name, text, f)),
        None => Err(undetected(&name)),
    }
}

/// Reads `text` (the content of file `name`) in `format`.
///
/// # Errors
/// The format's reader rejects the text.
pub fn read_text(
    name: &str,
    text: &str,
    format: Format,
    opts: &ImportOptions,
) -> Result<Recording, ImportError> {
    match format {
        Format::Log => log::read(name, text, opts),
        Format::Jsonl => jsonl::read(name, text, opts),
        Format::Otlp => otlp::read(name, text, opts),
        Format::RefundsCsv => refunds_csv::read(name, text, opts),
        Format::StripeList => stripe_list::read(name, text, opts),
        Format::Langsmith => langsmith::read(name, text, opts),
        Format::Langfuse => langfuse::read(name, text, opts),
        Format::OpenaiAgents => openai_agents::read(name, text, opts),
    }
}

/// The inputs of `refundsim import` and `refundsim replay`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportInputs {
    /// The recorded files, in order.
    pub files: Vec<std::path::PathBuf>,
    /// Their format, or `None` to detect it per file.
    pub format: Option<Format>,
    /// The scenario supplying what the recording lacks; `None`: the built-in defaults.
    pub base: Option<std::path::PathBuf>,
    /// The log's date and the refund export's columns. Its tool and argument names are
    /// resolved by [`import()`] from the fields below and the tool definition.
    pub options: ImportOptions,
    /// The refund tool's name (`--tool`); `None`: the base scenario's `agent.tool`.
    pub tool: Option<String>,
    /// The argument holding the ticket id (`--ticket-field`); `None`: from the tool
    /// definition, then the common names.
    pub ticket_field: Option<String>,
    /// The argument holding the amount in cents (`--amount-field`); `None`: as the ticket's.
    pub amount_field: Option<String>,
    /// A file of tool definitions (`--tool-definition`) naming the refund tool's arguments;
    /// `None`: the base scenario's `tools`.
    pub tool_definition: Option<std::path::PathBuf>,
    /// The run budget the base and the imported scenario are admitted against (as a
    /// scenario loaded for a run is: a recording too large for it is refused at import).
    pub budget: crate::scenario::RunBudget,
}

/// An imported recording: the replay scenario, as a value and as the JSON `import` writes.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The replay scenario.
    pub scenario: crate::scenario::Scenario,
    /// Its JSON text (pretty, with a trailing newline).
    pub json: String,
    /// What the import found.
    pub report: ImportReport,
}

/// The base used without `--base`: the built-in defaults (an 8 s timeout reported as an error,
/// retry once, no idempotency key, the default pool and latencies).
const DEFAULT_BASE: &str = r#"{"name": "recording", "horizon": "1h", "arrivals": {"schedule": [{"duration": "1h", "rate_per_s": 0.01}]}}"#;

/// Reads every file and builds the replay scenario over the base (see [`build()`]).
///
/// # Errors
/// The base cannot be loaded; a file cannot be read or parsed ([`ImportError`], exit 2); the
/// recording holds nothing to replay.
pub fn import(inputs: &ImportInputs) -> Result<Imported, crate::error::CliError> {
    import_with_progress(inputs, &())
}

/// [`import()`], telling `progress` the files read, the tickets built and the steps between
/// (for a progress bar). Progress sees no content: the import is exactly [`import()`]'s.
///
/// # Errors
/// As [`import()`].
pub fn import_with_progress(
    inputs: &ImportInputs,
    progress: &dyn ImportProgress,
) -> Result<Imported, crate::error::CliError> {
    use crate::error::CliError;
    let base = match &inputs.base {
        Some(p) => crate::scenario::load_within(p, &[], &[], &inputs.budget)?,
        None => crate::scenario::load_str(DEFAULT_BASE, "built-in base")?,
    };
    let opts = import_options(inputs, &base)?;
    let rec = read_files_with_progress(&inputs.files, inputs.format, &opts, progress)
        .map_err(|e| CliError::Input(e.to_string()))?;
    let sources: Vec<String> = inputs
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    let (scenario, report) = build_with_progress(&rec, &base, &sources, &opts, progress)
        .map_err(|e| CliError::Input(e.to_string()))?;
    progress.step("checking the replay scenario");
    let json = serde_json::to_string_pretty(&scenario)
        .map_err(|e| CliError::Input(format!("cannot write the scenario: {e}")))?
        + "\n";
    check_loads_back(&json, &sources, &inputs.budget)?;
    Ok(Imported {
        scenario,
        json,
        report,
    })
}

/// The options the readers and the builder use: `inputs.options` with the log's date (else
/// the base's `clock_origin` date), the refund tool's name (else the base's `agent.tool`) and
/// the argument names its definition gives (`--tool-definition`, else the base's `tools`).
///
/// # Errors
/// `--timeout-output` is not a valid pattern; the tool definition file cannot be read, or
/// defines other tools only ([`other_tool`]).
fn import_options(
    inputs: &ImportInputs,
    base: &crate::scenario::Scenario,
) -> Result<ImportOptions, crate::error::CliError> {
    use crate::error::CliError;
    let mut opts = inputs.options.clone();
    TimeoutOutput::new(&opts.timeout_output)
        .map_err(|e| CliError::Input(format!("--timeout-output {e}")))?;
    if opts.date.is_none() {
        opts.date = origin_date(base);
    }
    opts.tool = inputs
        .tool
        .clone()
        .unwrap_or_else(|| base.agent.tool.clone());
    let parameters = match &inputs.tool_definition {
        Some(p) => {
            let defs =
                tool_args::read_definitions(p).map_err(|e| CliError::Input(e.to_string()))?;
            match defs.iter().find(|d| d.name == opts.tool) {
                Some(d) => d.parameters.clone(),
                None => return Err(CliError::Input(other_tool(p, &defs, &opts.tool, inputs))),
            }
        }
        None => tool_args::parameters_in_scenario(&base.tools, &opts.tool).unwrap_or_default(),
    };
    opts.arguments = ArgumentNames::resolve(
        &parameters,
        inputs.ticket_field.as_deref(),
        inputs.amount_field.as_deref(),
    );
    Ok(opts)
}

/// What is written must load back as it is: the replay `json` is checked like any scenario.
/// The builder checks what it can where the record is known; anything left is named by the
/// input files (`sources`) and the scenario's field (a line of the generated JSON would mean
/// nothing).
///
/// # Errors
/// The scenario does not load.
fn check_loads_back(
    json: &str,
    sources: &[String],
    budget: &crate::scenario::RunBudget,
) -> Result<(), crate::error::CliError> {
    let Err(e) = crate::scenario::load_text(json, "the imported scenario", &[], &[], budget) else {
        return Ok(());
    };
    let what = match &e {
        crate::scenario::ScenarioError::Invalid { path, message, .. } => {
            format!("{path}: {}", crate::scenario::shorten_quoted(message))
        }
        other => other.to_string(),
    };
    Err(crate::error::CliError::Input(format!(
        "{}: the recording gives an invalid replay scenario: {what}",
        sources.join(", ")
    )))
}

/// The error for a `--tool-definition` file that defines other tools than the refund tool
/// `tool`: both names, where the refund tool's name came from, and the two ways out. The
/// definition never renames the tool being imported: a definition of `refund_v2` beside a
/// trace of `issue_refund` is more likely the wrong file than a rename.
fn other_tool(
    file: &Path,
    defs: &[tool_args::Definition],
    tool: &str,
    inputs: &ImportInputs,
) -> String {
    let from = if inputs.tool.is_some() {
        "--tool"
    } else if inputs.base.is_some() {
        "the base scenario's agent.tool"
    } else {
        "the default agent.tool"
    };
    let first = &defs[0];
    let at = if first.path.is_empty() {
        format!("{}:{}", file.display(), first.line)
    } else {
        format!("{}:{}: {}", file.display(), first.line, first.path)
    };
    if defs.len() == 1 {
        format!(
            "{at}: the tool definition is of `{}`, but the tool imported is `{tool}` (from \
             {from}): expected a definition of `{tool}`; import `{}`'s calls with --tool {}, or \
             give `{tool}`'s definition",
            first.name, first.name, first.name
        )
    } else {
        let names: Vec<String> = defs.iter().map(|d| d.name.clone()).collect();
        format!(
            "{}: no definition of `{tool}` (the tool imported, from {from}); the file defines \
             {}: name the refund tool with --tool NAME, or give `{tool}`'s definition",
            file.display(),
            tool_args::listed_all(&names)
        )
    }
}

impl Imported {
    /// The input files, comma-separated, for messages.
    pub fn report_sources(&self, inputs: &ImportInputs) -> String {
        inputs
            .files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `import`'s text: what was read, the fits (recorded vs fitted percentiles) and the warnings.
pub fn render_report(r: &ImportReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let n = |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
    let _ = writeln!(
        out,
        "imported {}, {}, {}, {}",
        n(r.tickets, "ticket", "tickets"),
        n(r.tool_calls, "tool call", "tool calls"),
        n(r.provider_requests, "provider request", "provider requests"),
        n(r.exported_refunds, "exported refund", "exported refunds")
    );
    for f in &r.fits {
        let _ = writeln!(
            out,
            "{} ({} recorded) → {}: {}",
            f.what,
            f.samples,
            f.field,
            serde_json::to_string(&f.dist).unwrap_or_default()
        );
        if !f.rows.is_empty() {
            let _ = writeln!(
                out,
                "  {:>4}  {:>12}  {:>12}",
                "", "recorded ms", "fitted ms"
            );
            for (p, rec, fit) in &f.rows {
                let _ = writeln!(out, "  p{p:<3}  {rec:>12.1}  {fit:>12.1}");
            }
        }
        if let Some(n) = &f.note {
            let _ = writeln!(out, "  {n}");
        }
    }
    if !r.drawn_from_base.is_empty() {
        let _ = writeln!(out, "drawn from the base scenario, not recorded:");
        for d in &r.drawn_from_base {
            let _ = writeln!(out, "  - {}: {}", d.fact, d.from_base);
        }
    }
    out
}

/// The import's warnings, one line each (`warning: FILE:LINE: …`), in file and line order: for
/// stderr.
pub fn render_warnings(r: &ImportReport) -> String {
    use std::fmt::Write as _;
    let mut ws: Vec<&Warning> = r.warnings.iter().collect();
    ws.sort();
    let mut out = String::new();
    for w in ws {
        let _ = writeln!(out, "warning: {}: {}", w.source, w.message);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(bytes: &[u8]) -> Vec<Result<String, String>> {
        LineReader::new("f.log", bytes)
            .map(|l| l.map_err(|e| e.to_string()))
            .collect()
    }

    #[test]
    fn streamed_lines_are_checked_one_by_one() {
        assert_eq!(
            lines(b"a\r\nb\n\nc"),
            [
                Ok("a".into()),
                Ok("b".into()),
                Ok(String::new()),
                Ok("c".into())
            ]
        );
        assert_eq!(
            lines(b"a\n\xff\nc\n"),
            [
                Ok("a".into()),
                Err(format!(
                    "f.log:2: not UTF-8 text (byte 0xff) at column 1; {EXPECTED_TEXT}"
                ))
            ]
        );
        let mut long = vec![b'x'; MAX_LINE_BYTES + 1];
        long.extend_from_slice(b"\nnext\n");
        let got = lines(&long);
        assert_eq!(got.len(), 1);
        assert!(got[0]
            .as_ref()
            .unwrap_err()
            .starts_with("f.log:1: a line longer than 16777216 bytes"));
        // Exactly at the limit is fine.
        let mut at = vec![b'y'; MAX_LINE_BYTES];
        at.push(b'\n');
        assert_eq!(lines(&at)[0].as_ref().map(String::len), Ok(MAX_LINE_BYTES));
    }

    #[test]
    fn formats_are_detected_from_the_content() {
        assert_eq!(
            Format::detect("{\"resourceSpans\": []}"),
            Some(Format::Otlp)
        );
        assert_eq!(
            Format::detect("{\"type\": \"tool_call\"}"),
            Some(Format::Jsonl)
        );
        assert_eq!(
            Format::detect("id,amount,charge\n"),
            Some(Format::RefundsCsv)
        );
        assert_eq!(
            Format::detect("16:41:09.210  tool_call x()"),
            Some(Format::Log)
        );
        assert_eq!(Format::detect("hello"), None);
        assert_eq!(
            Format::detect("[{\"id\": \"r\", \"run_type\": \"tool\", \"trace_id\": \"t\"}]"),
            Some(Format::Langsmith)
        );
        assert_eq!(
            Format::detect(
                "{\"id\": \"o\", \"trace_id\": \"t\", \"parent_observation_id\": \"\"}\n"
            ),
            Some(Format::Langfuse)
        );
        assert_eq!(
            Format::detect("{\"data\": [{\"object\": \"trace.span\", \"id\": \"span_1\"}]}"),
            Some(Format::OpenaiAgents)
        );
        // A tool's output holding a Stripe refund does not make runs a Stripe list.
        assert_eq!(
            Format::detect("{\"run_type\": \"tool\", \"start_time\": \"x\", \"outputs\": {\"object\": \"refund\"}}"),
            Some(Format::Langsmith)
        );
        for f in [Format::Langsmith, Format::Langfuse, Format::OpenaiAgents] {
            use clap::ValueEnum;
            assert_eq!(
                f.to_possible_value().map(|v| v.get_name().to_string()),
                Some(f.name().to_string())
            );
        }
    }
}
