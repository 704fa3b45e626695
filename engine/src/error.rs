//! Engine errors: a format error located in a named file, or an I/O failure.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug)]
pub enum Error {
    /// Decoding `path` failed at a known offset.
    Format {
        path: PathBuf,
        source: formats::perf::Error,
    },
    /// Opening, mapping, reading or writing `path` failed.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// An ELF binary could not be used.
    Binary { path: PathBuf, message: String },
    /// The capture does not fit the request (no mapping, build-id mismatch, …).
    Mismatch(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Format { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Binary { path, message } => write!(f, "{}: {message}", path.display()),
            Error::Mismatch(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

pub fn io_error(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { path, source }
}
