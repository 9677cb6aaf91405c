//! Writing a file whole or not at all (see [`crate::output`]).

use std::io::Write;
use std::path::Path;

/// Writes `text` to `path` whole or not at all, never replacing a device or FIFO and keeping a
/// symlink (see [`crate::output::write_whole`]). The error is one line.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    crate::output::write_whole(path, |w: &mut dyn Write| w.write_all(text.as_bytes()))
}
