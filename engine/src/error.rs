//! The perf and BOLT domains' error: what failed, on which file, and where in it.
//!
//! The convention every engine error follows: a typed, `#[non_exhaustive]` enum whose
//! `Display` is one line naming the file (and the offset or line the format error carries),
//! with the underlying error also returned by `source()`.

use std::fmt;
use std::path::PathBuf;

/// A failure of the perf or BOLT domain, or of shared input/output.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Decoding `path` failed at a known offset.
    Format {
        /// The capture.
        path: PathBuf,
        /// What the decoder expected, and where.
        source: formats::perf::Error,
    },
    /// Opening, mapping, reading or writing `path` failed.
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// An ELF binary could not be used.
    Binary {
        /// The binary.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The capture does not fit the request (no mapping, build-id mismatch, …).
    Mismatch(String),
    /// A profile store is malformed.
    Store {
        /// The store.
        path: PathBuf,
        /// What is wrong, and where.
        source: formats::store::StoreError,
    },
    /// A Parquet file cannot be read as profile rows (or written).
    Parquet {
        /// The file.
        path: PathBuf,
        /// The byte offset of the offending part: a column chunk, or the footer.
        offset: u64,
        /// What is wrong, and what was expected.
        message: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Format { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Binary { path, message } => write!(f, "{}: {message}", path.display()),
            Error::Mismatch(m) => f.write_str(m),
            Error::Store { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Parquet {
                path,
                offset,
                message,
            } => write!(f, "{}: byte offset {offset}: {message}", path.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Format { source, .. } => Some(source),
            Error::Io { source, .. } => Some(source),
            Error::Store { source, .. } => Some(source),
            Error::Binary { .. } | Error::Mismatch(_) | Error::Parquet { .. } => None,
        }
    }
}

/// The engine's result.
pub type Result<T> = std::result::Result<T, Error>;

/// Wraps an I/O failure on `path` (for `map_err`).
pub fn io_error(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { path, source }
}
