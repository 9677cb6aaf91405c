//! Reader of the `refunds_csv` input format (not yet written: every input is refused).

use super::{ImportError, ImportOptions, Recording};

/// Reads `text`, the content of file `name`.
///
/// # Errors
/// Always, until this reader is written.
pub fn read(name: &str, _text: &str, _opts: &ImportOptions) -> Result<Recording, ImportError> {
    Err(ImportError::at(name, 0, "this format is not supported yet"))
}
