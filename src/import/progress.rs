//! Progress of an import, for a progress bar: told which file is read and how far, and how many
//! tickets are built, never a record. It sees no content, so showing progress cannot change
//! what is imported.

use std::io::Read;

/// Told what [`super::import_with_progress`] is doing: each file as it is read (its size, then
/// the bytes read so far), the steps without a count (parsing a document read whole, checking
/// the replay scenario), then the tickets built. Every method does nothing by default.
pub trait ImportProgress {
    /// Starts reading `file`, `len` bytes long (0 when the size is not known: a pipe).
    fn reading(&self, file: &str, len: u64) {
        let _ = (file, len);
    }
    /// `bytes` of the file being read have been read so far.
    fn read(&self, bytes: u64) {
        let _ = bytes;
    }
    /// A step without a count (`parsing …`, `checking the replay scenario`).
    fn step(&self, what: &str) {
        let _ = what;
    }
    /// Starts building the replay of `tickets` tickets.
    fn building(&self, tickets: u64) {
        let _ = tickets;
    }
    /// One more ticket built.
    fn ticket_built(&self) {}
}

/// No progress: what [`super::import`] uses.
impl ImportProgress for () {}

/// A reader that tells `progress` how many bytes have gone through it.
pub(crate) struct Counted<'p, R> {
    inner: R,
    read: u64,
    progress: &'p dyn ImportProgress,
}

impl<'p, R> Counted<'p, R> {
    pub(crate) fn new(inner: R, progress: &'p dyn ImportProgress) -> Self {
        Counted {
            inner,
            read: 0,
            progress,
        }
    }
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n > 0 {
            self.read += n as u64;
            self.progress.read(self.read);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[derive(Default)]
    struct Seen(RefCell<Vec<u64>>);

    impl ImportProgress for Seen {
        fn read(&self, bytes: u64) {
            self.0.borrow_mut().push(bytes);
        }
    }

    #[test]
    fn a_counted_reader_reports_the_bytes_read_and_passes_them_on() {
        let seen = Seen::default();
        let mut out = Vec::new();
        let mut r = Counted::new(
            std::io::BufReader::with_capacity(4, &b"0123456789"[..]),
            &seen,
        );
        r.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"0123456789");
        assert_eq!(seen.0.borrow().last(), Some(&10));
        assert!(seen.0.borrow().windows(2).all(|w| w[0] < w[1]));
    }
}
