//! Errors of the sample profile readers. Text errors carry the 1-based line number and use
//! LLVM's wording; binary errors carry the byte offset where decoding stopped. The caller adds
//! the file name (`<file>:<line>: <message>` like llvm-profdata).

use std::fmt;

use crate::bytes::{ReadError, ReadErrorKind};
use crate::error::Cause;

/// Why a sample profile could not be read or written; each variant carries its own location.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// No reader recognises the input (LLVM: "Unrecognized sample profile encoding format").
    UnrecognizedFormat,
    /// A text line could not be parsed. `expected` is LLVM's message prefix.
    Text {
        /// 1-based line number.
        line: usize,
        /// What the line should have been.
        expected: TextExpectation,
        /// The offending line as read (lossily decoded, cut by [`crate::error::excerpt`]).
        found: String,
    },
    /// A count saturated at 2^64-1 while adding samples (LLVM: "Counter overflow").
    CounterOverflow,
    /// The input ends inside a structure.
    Truncated {
        /// Byte offset where the structure starts (or where reading stopped).
        offset: u64,
        /// The structure being read (a field or section name).
        what: &'static str,
    },
    /// A structure is present but its content is invalid.
    Malformed {
        /// Byte offset of the invalid structure.
        offset: u64,
        /// What is wrong with it.
        what: String,
    },
    /// A GCOV v4 text profile could not be parsed (1-based line and column).
    V4Text {
        /// 1-based line number.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser expected or found.
        message: String,
    },
    /// The profile is well-formed but inconsistent (e.g. refers to an undeclared symbol).
    Invalid(String),
    /// A binary profile of a version this reader does not know.
    UnsupportedVersion {
        /// Byte offset of the version field.
        offset: u64,
        /// The version as read.
        version: u64,
    },
    /// A zlib-compressed section failed to inflate; `source` is the inflater's error.
    Zlib {
        /// Byte offset of the compressed section.
        offset: u64,
        /// The inflater's message.
        message: String,
        /// The inflater's error, if it produced one.
        source: Option<Cause>,
    },
    /// The profile cannot be written in the requested format.
    UnsupportedForWriting(&'static str),
    /// Writing failed.
    Io(Cause),
}

/// Which rule a text sample profile line broke; selects LLVM's message in [`Error::Text`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextExpectation {
    /// A function header `name:total:head` was expected ("Expected 'mangled_name:NUM:NUM'").
    Header,
    /// A body line `offset[.disc]: count [target:count]...` or a callsite header was expected.
    Body,
    /// A non-metadata line (`!CFGChecksum`, `!Attributes`) came after metadata of the same
    /// function ("Found non-metadata after metadata").
    MetadataLast,
    /// A call site nested deeper than [`crate::sampleprof::MAX_NESTING`] (profmill's limit;
    /// LLVM has none).
    ShallowerNesting,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnrecognizedFormat => f.write_str("Unrecognized sample profile encoding format"),
            Error::Text {
                line,
                expected,
                found,
            } => {
                let what: std::borrow::Cow<'_, str> = match expected {
                    TextExpectation::Header => "Expected 'mangled_name:NUM:NUM', found ".into(),
                    TextExpectation::Body => {
                        "Expected 'NUM[.NUM]: NUM[ mangled_name:NUM]*', found ".into()
                    }
                    TextExpectation::MetadataLast => "Found non-metadata after metadata: ".into(),
                    TextExpectation::ShallowerNesting => format!(
                        "inlining nested deeper than {} (profmill's limit): ",
                        crate::sampleprof::MAX_NESTING
                    )
                    .into(),
                };
                write!(f, "{line}: {what}{found}")
            }
            Error::V4Text {
                line,
                column,
                message,
            } => write!(f, "{line}:{column}: {message}"),
            Error::Invalid(m) => write!(f, "invalid profile: {m}"),
            Error::CounterOverflow => f.write_str("Counter overflow"),
            Error::Truncated { offset, what } => {
                write!(f, "byte offset {offset}: truncated {what}")
            }
            Error::Malformed { offset, what } => write!(f, "byte offset {offset}: {what}"),
            Error::UnsupportedVersion { offset, version } => {
                write!(f, "byte offset {offset}: unsupported version {version}")
            }
            Error::Zlib {
                offset, message, ..
            } => {
                write!(
                    f,
                    "byte offset {offset}: zlib decompression failed: {message}"
                )
            }
            Error::UnsupportedForWriting(why) => {
                write!(
                    f,
                    "Profile encoding format unsupported for writing operations: {why}"
                )
            }
            Error::Io(e) => write!(f, "{e}"),
        }
    }
}

impl Error {
    /// A failed [`Reader`](crate::bytes::Reader) read of the field `what`.
    pub(crate) fn read(e: ReadError, what: &'static str) -> Error {
        match e.kind {
            ReadErrorKind::UlebTooBig | ReadErrorKind::SlebTooBig => Error::Malformed {
                offset: e.offset,
                what: format!("{what}: ULEB128 value exceeds 64 bits"),
            },
            _ => Error::Truncated {
                offset: e.offset,
                what,
            },
        }
    }

    /// The message as llvm-profdata words it for `file`: `file:LINE: …` for text errors,
    /// `file: …` otherwise.
    pub fn located(&self, file: &str) -> String {
        match self {
            Error::Text { .. } | Error::V4Text { .. } => format!("{file}:{self}"),
            _ => format!("{file}: {self}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Zlib {
                source: Some(c), ..
            }
            | Error::Io(c) => Some(c.error()),
            _ => None,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(Cause::new(e))
    }
}

/// `Result` with a sample profile [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
