//! What the process does around a command: notes a closed stdout before Rust's runtime hides
//! it, and removes the temporary output files on SIGINT or SIGTERM before exiting.

/// Whether file descriptor 1 was closed when the process started (`refundsim run … >&-`), noted
/// before Rust's runtime reopens a closed standard descriptor on `/dev/null` (which would make
/// the output vanish with exit 0).
pub(crate) static STDOUT_CLOSED_AT_START: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Runs before `main` and before Rust's runtime sanitizes the standard descriptors: notes a
/// closed fd 1 (`fcntl(1, F_GETFD)` fails with `EBADF`) in [`STDOUT_CLOSED_AT_START`].
#[cfg(unix)]
#[ctor::ctor(unsafe)]
fn note_closed_stdout() {
    // SAFETY: fcntl with F_GETFD only queries the descriptor's flags; errno is read right after.
    let closed = unsafe { libc::fcntl(1, libc::F_GETFD) } == -1
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF);
    STDOUT_CLOSED_AT_START.store(closed, std::sync::atomic::Ordering::Relaxed);
}

/// On SIGINT (Ctrl-C) or SIGTERM, removes the temporary files of the outputs being written
/// (`--trace`, `--perfetto`, `--otlp`, `--stripe-list`, `--out`: see `refundsim::output`) and
/// exits 130 or 143 (128 + the signal), as a shell reports a process the signal killed.
pub(crate) fn remove_temporaries_on_signals() {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGINT, SIGTERM};
        match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
            Ok(mut signals) => {
                std::thread::spawn(move || {
                    if let Some(sig) = signals.forever().next() {
                        // Held until the process ends: nothing is renamed into place meanwhile.
                        let _held = refundsim::output::remove_temporaries();
                        std::process::exit(128 + sig);
                    }
                });
            }
            Err(e) => tracing::warn!("cannot handle SIGINT/SIGTERM: {e}"),
        }
    }
}
