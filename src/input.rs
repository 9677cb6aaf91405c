//! Reading the user's files with bounds: every scenario, policy, tool definition, lint input,
//! sweep directory's `sweep.json` and (through [`crate::import`]) every recording is read
//! through [`read_capped`], so a file larger than its limit — `/dev/zero`, a pipe that never
//! ends, a log given as a scenario — is refused after reading one byte more than the limit,
//! with flat memory, instead of growing until the machine runs out.
//!
//! JSON is parsed by serde_json, whose nesting limit is 128 levels (arrays and objects inside
//! each other); [`nesting_message`] words its bare `recursion limit exceeded` as the limit it
//! is.
//!
//! ```
//! use std::io::Write;
//! let mut f = tempfile::NamedTempFile::new().unwrap();
//! f.write_all(&[b' '; 101]).unwrap();
//! let err = refundsim::input::read_capped(f.path(), 100, "a scenario").unwrap_err();
//! assert!(err.to_string().ends_with(
//!     "more than the 100-byte limit of a scenario; raise it with --max-input-mb MB"
//! ));
//! assert_eq!(refundsim::input::read_capped(f.path(), 101, "a scenario").unwrap().len(), 101);
//! ```

use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// The default largest scenario, policy, tool definition, lint input or `sweep.json`, bytes
/// (16 MiB): the incident's scenario is 3 KB, a scenario with a recorded replay of a day at one
/// ticket a second about 14 MB. Raised with `--max-input-mb` ([`set_max_input_bytes`]).
pub(crate) const DEFAULT_MAX_INPUT_BYTES: u64 = 16 << 20;

/// The flag that raises the limits, for messages.
pub(crate) const MAX_INPUT_FLAG: &str = "--max-input-mb MB";

/// serde_json's nesting limit: arrays and objects at most 128 levels inside each other. It is
/// fixed (serde_json's `unbounded_depth` would need a stack of its own); a scenario nests about
/// 6 levels, an OTLP trace about 10.
pub(crate) const NESTING_LIMIT: usize = 128;

/// The limit set with [`set_max_input_bytes`], bytes; 0: none set, the defaults apply.
static MAX_INPUT_BYTES: AtomicU64 = AtomicU64::new(0);

/// Sets the largest file later reads accept, bytes, for every input: scenarios, policies, tool
/// definitions, lint inputs, `sweep.json` and the recordings `import` reads whole (the CLI's
/// `--max-input-mb`; process-wide). `None` restores the
/// defaults: [`DEFAULT_MAX_INPUT_BYTES`], and [`crate::import::MAX_INPUT_BYTES`] for
/// recordings.
pub fn set_max_input_bytes(n: Option<u64>) {
    MAX_INPUT_BYTES.store(n.map_or(0, |n| n.max(1)), Ordering::Relaxed);
}

/// The limit [`set_max_input_bytes`] set, if any.
pub(crate) fn max_input_override() -> Option<u64> {
    Some(MAX_INPUT_BYTES.load(Ordering::Relaxed)).filter(|&n| n > 0)
}

/// The largest scenario, policy, tool definition, lint input or `sweep.json` now, bytes:
/// [`DEFAULT_MAX_INPUT_BYTES`] unless [`set_max_input_bytes`] set another.
pub(crate) fn max_input_bytes() -> u64 {
    max_input_override().unwrap_or(DEFAULT_MAX_INPUT_BYTES)
}

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The file could not be opened or read (missing, a directory, no permission).
    #[error("{file}: {}", self.reason())]
    Read {
        /// The file, as given.
        file: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file holds more than the limit: refused without reading the rest.
    #[error("{file}: {}", self.reason())]
    TooLarge {
        /// The file, as given.
        file: String,
        /// The limit, bytes.
        limit: u64,
        /// What the file was read as (`a scenario`, `a policy`).
        what: &'static str,
    },
}

impl InputError {
    /// The message without the file (for errors that name it themselves).
    pub fn reason(&self) -> String {
        match self {
            InputError::Read { source, .. } => format!("cannot read file: {source}"),
            InputError::TooLarge { limit, what, .. } => format!(
                "more than the {} limit of {what}; raise it with {MAX_INPUT_FLAG}",
                bytes(*limit)
            ),
        }
    }
}

/// `16777216` → `16 MiB (16777216 bytes)`; a limit that is not whole MiB, as bytes.
fn bytes(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB ({n}-byte)", n >> 20)
    } else {
        format!("{n}-byte")
    }
}

/// The file at `path`, at most `limit` bytes: read with [`Read::take`]`(limit + 1)`, so a
/// device or a pipe without end (`/dev/zero`) is refused after `limit + 1` bytes, whatever its
/// reported size. `what` names the file's role in the message (`a scenario`).
///
/// # Errors
/// [`InputError::Read`] when it cannot be read; [`InputError::TooLarge`] when it holds more
/// than `limit` bytes.
pub fn read_capped(path: &Path, limit: u64, what: &'static str) -> Result<Vec<u8>, InputError> {
    let file = || path.display().to_string();
    let read_err = |source| InputError::Read {
        file: file(),
        source,
    };
    let f = std::fs::File::open(path).map_err(read_err)?;
    // The size, where the file has one, sizes the buffer (and refuses a large file unread).
    let len = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
    let too_large = || InputError::TooLarge {
        file: file(),
        limit,
        what,
    };
    if len.is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let mut out = Vec::with_capacity(len.unwrap_or(0).min(limit) as usize);
    f.take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(read_err)?;
    if out.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(out)
}

/// [`read_capped`] at the limit [`max_input_bytes`] set.
///
/// # Errors
/// As [`read_capped`].
pub(crate) fn read_input(path: &Path, what: &'static str) -> Result<Vec<u8>, InputError> {
    read_capped(path, max_input_bytes(), what)
}

/// Whether `e` is serde_json's nesting limit (`recursion limit exceeded`).
pub(crate) fn is_nesting_limit(e: &serde_json::Error) -> bool {
    e.classify() == serde_json::error::Category::Syntax
        && e.to_string().starts_with("recursion limit exceeded")
}

/// serde_json's `recursion limit exceeded` in words: that it is a nesting limit, the limit,
/// and where it was reached when `at` says (`column 128`; an error whose location already
/// names the line and column passes `None`). `None` for any other error.
pub(crate) fn nesting_message(e: &serde_json::Error, at: Option<&str>) -> Option<String> {
    if !is_nesting_limit(e) {
        return None;
    }
    let at = at.map_or_else(String::new, |a| format!(" at {a}"));
    Some(format!(
        "nested deeper than the nesting limit of {NESTING_LIMIT} levels (arrays and objects \
         inside each other){at}: expected JSON nested at most {NESTING_LIMIT} levels (a fixed \
         limit)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_at_the_limit_is_read_and_one_byte_more_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        std::fs::write(&p, vec![b'x'; 64]).unwrap();
        assert_eq!(read_capped(&p, 64, "a scenario").unwrap().len(), 64);
        let err = read_capped(&p, 63, "a scenario").unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{}: more than the 63-byte limit of a scenario; raise it with --max-input-mb MB",
                p.display()
            )
        );
        assert_eq!(bytes(16 << 20), "16 MiB (16777216-byte)");
    }

    #[cfg(unix)]
    #[test]
    fn a_device_without_end_stops_at_the_limit() {
        let err = read_capped(Path::new("/dev/zero"), 1 << 20, "a scenario").unwrap_err();
        assert!(matches!(err, InputError::TooLarge { limit, .. } if limit == 1 << 20));
    }

    #[test]
    fn the_nesting_limit_is_named() {
        let deep = "[".repeat(200) + &"]".repeat(200);
        let e = serde_json::from_str::<serde_json::Value>(&deep).unwrap_err();
        assert_eq!(
            nesting_message(&e, Some("column 128")).unwrap(),
            "nested deeper than the nesting limit of 128 levels (arrays and objects inside each \
             other) at column 128: expected JSON nested at most 128 levels (a fixed limit)"
        );
        assert_eq!((e.line(), e.column()), (1, 128));
        let other = serde_json::from_str::<serde_json::Value>("[1,").unwrap_err();
        assert_eq!(nesting_message(&other, None), None);
    }
}
