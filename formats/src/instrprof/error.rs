//! Precise errors for instrumentation-profile decoding: what was wrong and where (a byte offset
//! for binary files, a line number for text). The caller adds the file name.

use std::fmt;

use crate::error::Cause;

/// Where an error happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// A byte offset in a binary input (raw or indexed).
    Byte(u64),
    /// A 1-based line number in a text input.
    Line(u64),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Byte(o) => write!(f, "byte offset {o}"),
            Location::Line(l) => write!(f, "line {l}"),
        }
    }
}

/// The error classes of LLVM's `instrprof_error`, with our detail.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Not indexed, raw or text.
    UnrecognizedFormat,
    /// A raw profile after the first whose magic differs.
    BadMagic,
    /// A header field is inconsistent with the file (sizes beyond the end, misalignment).
    BadHeader(String),
    /// A raw profile of a version this reader was told not to accept.
    RawVersionMismatch {
        /// The version in the file's header.
        found: u64,
        /// The version the reader was told to accept.
        expected: u64,
    },
    /// A version this reader does not know.
    UnsupportedVersion(String),
    /// An indexed profile whose `HashType` is not MD5 (`IndexedInstrProf::HashT::MD5` = 0).
    UnsupportedHashType(u64),
    /// The input ends inside a structure.
    Truncated(&'static str),
    /// A value-profile block claims more bytes than the file has.
    TooLarge,
    /// Anything else LLVM calls `malformed`, with its explanation.
    Malformed(String),
    /// The zlib stream of a names section does not decompress (with the inflater's error, or
    /// none when the stream is longer than announced).
    UncompressFailed(Option<Cause>),
    /// A raw counter above 2^56: LLVM's "excessively large counter value" (a warning that
    /// llvm-profdata counts as an input error).
    CounterValueTooLarge {
        /// The function's name (or GUID if the name is unknown).
        function: String,
        /// The counter value as read.
        value: u64,
    },
    /// A raw profile with data records read with a binary for correlation.
    UnexpectedCorrelationInfo,
    /// Valid data that profmill cannot represent faithfully, so refuses.
    UnsupportedFeature(String),
}

/// An instrumentation-profile error: what went wrong and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// Where decoding stopped.
    pub at: Location,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl Error {
    pub(crate) fn at_byte(offset: usize, kind: ErrorKind) -> Error {
        Error {
            at: Location::Byte(offset as u64),
            kind,
        }
    }
    pub(crate) fn at_line(line: usize, kind: ErrorKind) -> Error {
        Error {
            at: Location::Line(line as u64),
            kind,
        }
    }
    /// [`ErrorKind::Malformed`] at byte `offset`, explained by `why`.
    pub fn malformed(offset: usize, why: impl Into<String>) -> Error {
        Error::at_byte(offset, ErrorKind::Malformed(why.into()))
    }
    /// [`ErrorKind::Truncated`] at byte `offset`, inside `what`.
    pub fn truncated(offset: usize, what: &'static str) -> Error {
        Error::at_byte(offset, ErrorKind::Truncated(what))
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::UnrecognizedFormat => write!(f, "unrecognized instrumentation profile encoding format"),
            ErrorKind::BadMagic => write!(f, "invalid instrumentation profile data (bad magic)"),
            ErrorKind::BadHeader(why) => write!(f, "invalid instrumentation profile data (file header is corrupt): {why}"),
            ErrorKind::RawVersionMismatch { found, expected } => write!(
                f,
                "raw profile version mismatch: Profile uses raw profile format version = {found}; expected version = {expected}\nPLEASE update this tool to version in the raw profile, or regenerate raw profile with expected version."
            ),
            ErrorKind::UnsupportedVersion(why) => write!(f, "unsupported instrumentation profile format version: {why}"),
            ErrorKind::UnsupportedHashType(t) => write!(f, "unsupported instrumentation profile hash type {t}"),
            ErrorKind::Truncated(what) => write!(f, "truncated profile data: {what}"),
            ErrorKind::TooLarge => write!(f, "too much profile data: a value profile block runs past the end of the file"),
            ErrorKind::Malformed(why) => write!(f, "malformed instrumentation profile data: {why}"),
            ErrorKind::UncompressFailed(_) => write!(f, "failed to uncompress data (zlib)"),
            ErrorKind::UnsupportedFeature(why) => write!(f, "unsupported profile data: {why}"),
            ErrorKind::UnexpectedCorrelationInfo => {
                write!(f, "debug info/binary for correlation is not necessary")
            }
            ErrorKind::CounterValueTooLarge { function, value } => write!(
                f,
                "excessively large counter value suggests corrupted profile data: {function}: {value}"
            ),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at {})", self.kind, self.at)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::UncompressFailed(Some(c)) => Some(c.error()),
            _ => None,
        }
    }
}

/// `Result` with an instrprof [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
