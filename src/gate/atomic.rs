//! Writing a file whole or not at all.

use std::io::Write;
use std::path::Path;

/// Writes `text` to a temporary file beside `path`, then renames it over `path`: a reader never
/// sees a partial file, and on error nothing is left behind. The error is one line.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!("directory {} does not exist", dir.display()));
    }
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| format!("cannot create a file in {}: {e}", dir.display()))?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.flush())
        .map_err(|e| format!("cannot write: {e}"))?;
    tmp.persist(path)
        .map_err(|e| format!("cannot rename into place: {}", e.error))?;
    Ok(())
}
