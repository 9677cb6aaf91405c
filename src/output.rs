//! Writing output files (`--trace`, `--junit`, `explore --out`) whole or not at all.
//!
//! A regular file (or a symlink to one) is written to a temporary file beside it and renamed over
//! it, so a reader never sees a partial file and a failure leaves nothing behind; the new file gets
//! the old one's permissions, or `0644`. A device, FIFO or socket (`/dev/null`, `/dev/stdout`, a
//! pipe) is written in place, never replaced. A directory is an error.
//!
//! Every temporary file being written is listed in a registry, so that on SIGINT or SIGTERM
//! (Ctrl-C during `run --trace t.jsonl`) the binary can remove them all before it ends the
//! process ([`remove_temporaries`]): an interrupted command leaves neither the output nor a
//! hidden `.tmpXXXXXX` beside it. The library offers the cleanup; ending the process is the
//! caller's decision.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// The temporary files being written (created, not yet renamed into place or dropped).
static IN_PROGRESS: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn in_progress() -> MutexGuard<'static, BTreeSet<PathBuf>> {
    // A panic while holding the lock leaves the set as consistent as it was: keep using it.
    IN_PROGRESS.lock().unwrap_or_else(|e| e.into_inner())
}

/// What clears the terminal's progress bars ([`set_clear_progress`]), if anything does.
static CLEAR_PROGRESS: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Sets what [`clear_progress`] calls: the CLI's function that clears its progress bars on
/// stderr. The first call wins; a library user that draws no bars never calls it.
pub fn set_clear_progress(clear: fn()) {
    let _ = CLEAR_PROGRESS.set(clear);
}

/// Clears the progress bars on stderr (see [`set_clear_progress`]) before a message that ends
/// the process early, so the message starts on a line of its own rather than after a bar.
pub fn clear_progress() {
    if let Some(clear) = CLEAR_PROGRESS.get() {
        clear();
    }
}

/// The registry of temporary output files, locked and emptied of its files by
/// [`remove_temporaries`]: while it is held, no new temporary file is created and none is
/// renamed into place.
pub struct TemporariesRemoved(#[allow(dead_code)] MutexGuard<'static, BTreeSet<PathBuf>>);

/// Clears the progress bars ([`clear_progress`]) and removes every temporary output file being
/// written. Returns the registry still locked: a caller about to end the process (the binary
/// on SIGINT or SIGTERM) holds it until then, so that no output is created or renamed into
/// place meanwhile; dropping it lets writing go on.
pub fn remove_temporaries() -> TemporariesRemoved {
    clear_progress();
    let set = in_progress();
    for path in set.iter() {
        let _ = fs::remove_file(path);
    }
    TemporariesRemoved(set)
}

/// Writes the output of `write` to `path` as described in the module docs. Errors are one line.
pub fn write_whole(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), String> {
    let (file, handle) = WholeFile::create(path)?;
    let mut w = io::BufWriter::new(handle);
    write(&mut w)
        .and_then(|()| w.flush())
        .map_err(|e| format!("cannot write: {e}"))?;
    drop(w);
    file.commit()
}

/// Writes `text` to `path` whole or not at all, never replacing a device or FIFO and keeping a
/// symlink (see [`write_whole`]). The error is one line, naming what failed (`cannot write: …`).
pub fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    write_whole(path, |w: &mut dyn Write| w.write_all(text.as_bytes()))
}

/// An output file being written whole or not at all (see the module docs), for writers that
/// must outlive a borrow, such as a trace streamed while a run goes on: write to the handle
/// [`WholeFile::create`] returns, then [`WholeFile::commit`]. Dropping it uncommitted leaves
/// no file behind (a device is written in place and cannot be taken back).
pub(crate) struct WholeFile {
    target: PathBuf,
    tmp: Option<tempfile::NamedTempFile>,
}

impl Drop for WholeFile {
    fn drop(&mut self) {
        if let Some(tmp) = &self.tmp {
            // The temporary file is removed by its own drop, right after this.
            in_progress().remove(tmp.path());
        }
    }
}

impl WholeFile {
    /// Opens `path` for writing as [`write_whole`] would; returns the file and a handle to
    /// write to. Errors are one line.
    pub(crate) fn create(path: &Path) -> Result<(WholeFile, fs::File), String> {
        let (target, dir) = match destination(path)? {
            Destination::Stream => {
                let f = open_stream(path).map_err(|e| format!("cannot open: {e}"))?;
                let whole = WholeFile {
                    target: path.to_path_buf(),
                    tmp: None,
                };
                return Ok((whole, f));
            }
            Destination::File { target, dir } => (target, dir),
        };
        // Created and registered under the registry's lock: a signal handler that has begun
        // removing the registered files sees this one too, or it is never created.
        let mut registry = in_progress();
        let tmp = tempfile::NamedTempFile::new_in(&dir)
            .map_err(|e| format!("cannot create a file in {}: {e}", dir.display()))?;
        registry.insert(tmp.path().to_path_buf());
        drop(registry);
        let handle = tmp.as_file().try_clone();
        // From here on, dropping `whole` unregisters and removes the temporary file.
        let whole = WholeFile {
            target,
            tmp: Some(tmp),
        };
        let handle = handle.map_err(|e| format!("cannot open a file in {}: {e}", dir.display()))?;
        Ok((whole, handle))
    }

    /// Renames the written file into place with the old file's permissions (or `0644`).
    pub(crate) fn commit(mut self) -> Result<(), String> {
        let Some(tmp) = self.tmp.take() else {
            return Ok(());
        };
        // Renamed under the registry's lock, so a signal handler never removes a file that is
        // already in place, nor leaves a temporary one.
        let mut registry = in_progress();
        registry.remove(tmp.path());
        let perms = fs::metadata(&self.target)
            .map(|m| m.permissions())
            .unwrap_or_else(|_| default_permissions());
        tmp.as_file()
            .set_permissions(perms)
            .map_err(|e| format!("cannot set permissions: {e}"))?;
        tmp.persist(&self.target)
            .map_err(|e| format!("cannot rename into place: {}", e.error))?;
        Ok(())
    }
}

/// A path that names an open stream rather than a file to replace: anything under `/dev/` or
/// `/proc/` (`/dev/stdout` is a symlink to `/proc/self/fd/1`, which may be a regular file the
/// shell redirected to: replacing it would lose what the shell appends). Written in place.
fn is_stream_path(path: &Path) -> bool {
    path.starts_with("/dev/") || path.starts_with("/proc/")
}

/// Opens a device or stream path for writing. `/dev/stdout`, `/dev/stderr` and `/dev/fd/N`
/// (and `/proc/self/fd/N`) are this process's own descriptors: they are duplicated, not
/// reopened, so a shell's `>>` keeps appending and `>` keeps its offset.
fn open_stream(path: &Path) -> io::Result<fs::File> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let fd = match path.to_str() {
            Some("/dev/stdout") => Some(1),
            Some("/dev/stderr") => Some(2),
            Some(p) => p
                .strip_prefix("/dev/fd/")
                .or_else(|| p.strip_prefix("/proc/self/fd/"))
                .and_then(|n| n.parse::<i32>().ok()),
            None => None,
        };
        match fd {
            Some(1) => return Ok(io::stdout().as_fd().try_clone_to_owned()?.into()),
            Some(2) => return Ok(io::stderr().as_fd().try_clone_to_owned()?.into()),
            _ => {}
        }
    }
    fs::OpenOptions::new().write(true).open(path)
}

/// Refuses to replace an existing regular file the user may not write (the rename would
/// succeed in a writable directory, unlike `>`).
fn refuse_read_only(target: &Path) -> Result<(), String> {
    match fs::metadata(target) {
        Ok(m) if m.permissions().readonly() => {
            Err("is read-only; expected a file you may write".into())
        }
        _ => Ok(()),
    }
}

/// The file a symlink points to (so the link is kept and its target replaced), or `path` itself.
fn resolve_symlink(path: &Path) -> Result<PathBuf, String> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match fs::canonicalize(path) {
            Ok(p) => Ok(p),
            Err(_) => Err("is a dangling symlink".into()),
        },
        _ => Ok(path.to_path_buf()),
    }
}

#[cfg(unix)]
fn default_permissions() -> fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    fs::Permissions::from_mode(0o644)
}

#[cfg(not(unix))]
fn default_permissions() -> fs::Permissions {
    tempfile::tempfile()
        .and_then(|f| f.metadata())
        .map(|m| m.permissions())
        .expect("a temp file")
}

/// Where [`write_whole`] would write `path`: a device or FIFO written in place, or a regular
/// file (through a symlink, its target) replaced from a temporary file in `dir`.
enum Destination {
    Stream,
    File { target: PathBuf, dir: PathBuf },
}

/// Resolves `path` as [`WholeFile::create`] writes it, refusing a directory, a read-only file
/// and a missing directory. Creates nothing. Errors are one line.
fn destination(path: &Path) -> Result<Destination, String> {
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err("is a directory; expected a file path".into()),
        Ok(m) if !m.is_file() || is_stream_path(path) => return Ok(Destination::Stream),
        _ => {}
    }
    let target = resolve_symlink(path)?;
    refuse_read_only(&target)?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(format!("directory {} does not exist", dir.display()));
    }
    Ok(Destination::File { target, dir })
}

/// Checks, before any work, that [`write_whole`] could write `path` ([`destination`]): not a
/// directory, its directory exists, not read-only (a device or FIFO is fine). Creates nothing.
/// The error is the one line [`WholeFile::create`] would give, so a command that writes its
/// output last (`check --junit`) refuses a bad path before it runs instead of after.
pub fn check_writable(path: &Path) -> Result<(), String> {
    destination(path).map(|_| ())
}

/// Whether `a` and `b` name the same existing file (so an output never overwrites an input).
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    matches!((fs::canonicalize(a), fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
}

/// Refuses an output path that is one of the inputs (or a `.json` file inside an input
/// directory). The error is one line naming `flag`.
pub fn refuse_overwriting_inputs(
    flag: &str,
    out: &Path,
    inputs: &[&PathBuf],
) -> Result<(), String> {
    for input in inputs {
        let in_dir = input.is_dir()
            && out.extension().is_some_and(|e| e == "json")
            && out.parent().is_some_and(|d| {
                same_file(
                    if d.as_os_str().is_empty() {
                        Path::new(".")
                    } else {
                        d
                    },
                    input,
                )
            });
        if same_file(out, input) || in_dir {
            return Err(format!(
                "{flag} {}: would overwrite the input {}; choose another file",
                out.display(),
                input.display()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_regular_files_whole_and_keeps_symlinks_and_devices() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("out.txt");
        write_whole(&f, |w: &mut dyn Write| w.write_all(b"one")).unwrap();
        assert_eq!(fs::read_to_string(&f).unwrap(), "one");
        let err = write_whole(&f, |w| {
            w.write_all(b"partial")?;
            Err(io::Error::other("boom"))
        });
        assert!(err.unwrap_err().contains("boom"));
        assert_eq!(
            fs::read_to_string(&f).unwrap(),
            "one",
            "a failed write leaves the old file"
        );
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp file left"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(&f).unwrap().permissions().mode() & 0o777,
                0o644
            );
            let link = dir.path().join("link.txt");
            std::os::unix::fs::symlink(&f, &link).unwrap();
            write_whole(&link, |w| w.write_all(b"two")).unwrap();
            assert!(
                fs::symlink_metadata(&link)
                    .unwrap()
                    .file_type()
                    .is_symlink(),
                "the link is kept"
            );
            assert_eq!(fs::read_to_string(&f).unwrap(), "two");
            write_whole(Path::new("/dev/null"), |w| w.write_all(b"x")).unwrap();
            assert!(
                !fs::metadata("/dev/null").unwrap().is_file(),
                "/dev/null is still a device"
            );
        }
        assert!(write_whole(dir.path(), |w| w.write_all(b"x"))
            .unwrap_err()
            .contains("is a directory"));
        assert!(same_file(&f, &dir.path().join(".").join("out.txt")));
    }
}
