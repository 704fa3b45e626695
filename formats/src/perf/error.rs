//! Precise errors for perf.data decoding. Every error carries the byte offset where decoding
//! stopped; the caller adds the file name.

use std::fmt;

use crate::error::Cause;

/// Where in the input an error happened: a plain file offset, or an offset inside the
/// decompressed stream of the COMPRESSED record that starts at `record`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offset {
    /// An absolute byte offset in the input file (or pipe stream).
    File(u64),
    /// A place inside the zstd stream of `perf record -z`.
    Compressed {
        /// File offset of the COMPRESSED record whose payload the stream started in.
        record: u64,
        /// Byte offset inside the decompressed record stream.
        decompressed: u64,
    },
}

impl fmt::Display for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Offset::File(o) => write!(f, "byte offset {o}"),
            Offset::Compressed {
                record,
                decompressed,
            } => write!(
                f,
                "decompressed byte {decompressed} of the zstd stream (COMPRESSED record at byte offset {record})"
            ),
        }
    }
}

/// What went wrong while decoding perf.data; [`Error`] adds where.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The first 8 bytes are not "PERFILE2" in either byte order.
    BadMagic,
    /// The file header's `size` field is neither 104, 72 (legacy) nor 16 (pipe).
    BadHeaderSize(u64),
    /// A structure ends past the end of the input.
    Truncated {
        /// The structure being read (e.g. `"perf_event_attr"`).
        what: &'static str,
        /// Bytes it needs.
        needed: u64,
        /// Bytes left in the input from its start.
        available: u64,
    },
    /// A header section (attrs, data, features) lies outside the file.
    SectionOutOfBounds {
        /// The section (`"attrs"`, `"data"`, `"feature"`).
        what: &'static str,
        /// The section's `perf_file_section.offset`.
        offset: u64,
        /// The section's `perf_file_section.size`.
        size: u64,
        /// Length of the input in bytes.
        file_size: u64,
    },
    /// `attr_size` cannot hold a `perf_event_attr` plus its ids section.
    BadAttrSize(u64),
    /// `perf_event_attr.size` is below the 64 bytes of the first ABI version.
    BadAttrStructSize(u32),
    /// There are no event attributes at all.
    NoAttrs,
    /// A pipe-mode SAMPLE record came before any HEADER_ATTR declared its event.
    SampleBeforeAttr,
    /// A record header's size is below 8 bytes.
    RecordTooSmall {
        /// `perf_event_header.size` as read.
        size: u16,
    },
    /// A SAMPLE record is shorter than its `sample_type` requires.
    SampleTooShort {
        /// The `PERF_SAMPLE_*` field that did not fit (e.g. `"BRANCH_STACK"`).
        field: &'static str,
        /// `perf_event_header.size` of the SAMPLE record.
        record_size: usize,
    },
    /// A sample or side-band record names an event id that no attr declares.
    UnknownEventId(u64),
    /// Several events whose samples cannot be told apart (no common id position).
    AmbiguousEvents,
    /// A record's body is shorter than its fixed layout.
    RecordBodyTooShort {
        /// `perf_event_header.type`.
        record_type: u32,
        /// `perf_event_header.size`, in bytes.
        size: usize,
    },
    /// The zstd stream of COMPRESSED records could not be decoded.
    Zstd(Cause),
    /// COMPRESSED2's declared payload does not fit its record.
    BadCompressed2 {
        /// The record's u64 `data_size`.
        data_size: u64,
        /// `perf_event_header.size` of the record.
        record_size: u16,
    },
    /// The stream ended in the middle of a record.
    PartialRecord {
        /// Bytes of the record that were there.
        have: u64,
        /// Bytes the record needs (its header's `size`, or 8 for the header itself).
        need: u64,
    },
    /// Reading the input failed.
    Io(Cause),
}

/// A perf.data decoding error: what went wrong and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// Where decoding stopped.
    pub offset: Offset,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl Error {
    /// An error of `kind` at absolute file offset `offset`.
    pub fn at(offset: u64, kind: ErrorKind) -> Self {
        Error {
            offset: Offset::File(offset),
            kind,
        }
    }

    /// `what`, at `offset`, needs `needed` bytes of which only `available` are there.
    pub(crate) fn truncated(
        offset: u64,
        what: &'static str,
        needed: usize,
        available: usize,
    ) -> Self {
        Error::at(
            offset,
            ErrorKind::Truncated {
                what,
                needed: needed as u64,
                available: available as u64,
            },
        )
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ErrorKind::*;
        match self {
            BadMagic => write!(f, "expected the perf.data magic \"PERFILE2\""),
            BadHeaderSize(s) => write!(
                f,
                "expected a header size of 104, 72 (legacy) or 16 (pipe mode), found {s}"
            ),
            Truncated { what, needed, available } => write!(
                f,
                "truncated {what}: expected {needed} bytes, only {available} available"
            ),
            SectionOutOfBounds { what, offset, size, file_size } => write!(
                f,
                "{what} section [{offset}, +{size}) lies outside the {file_size}-byte file"
            ),
            BadAttrSize(s) => write!(f, "expected attr_size ≥ 80 (attr + ids section), found {s}"),
            BadAttrStructSize(s) => write!(f, "expected perf_event_attr.size ≥ 64, found {s}"),
            NoAttrs => write!(f, "expected at least one event attribute, found none"),
            SampleBeforeAttr => write!(
                f,
                "expected a HEADER_ATTR record before the first SAMPLE, found a SAMPLE"
            ),
            RecordTooSmall { size } => {
                write!(f, "expected a record size of at least 8 bytes, found {size}")
            }
            SampleTooShort { field, record_size } => write!(
                f,
                "SAMPLE record of {record_size} bytes ends before its {field} field"
            ),
            UnknownEventId(id) => write!(f, "record names event id {id}, which no attr declares"),
            AmbiguousEvents => write!(
                f,
                "several events without a common sample id position (need PERF_SAMPLE_IDENTIFIER)"
            ),
            RecordBodyTooShort { record_type, size } => write!(
                f,
                "record of type {record_type} is only {size} bytes, shorter than its layout"
            ),
            Zstd(e) => write!(f, "zstd stream of COMPRESSED records is corrupt: {e}"),
            BadCompressed2 { data_size, record_size } => write!(
                f,
                "COMPRESSED2 record declares {data_size} payload bytes but is only {record_size} bytes"
            ),
            PartialRecord { have, need } => write!(
                f,
                "input ends inside a record: {have} of its {need} bytes present"
            ),
            Io(e) => write!(f, "read failed: {e}"),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.offset, self.kind)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Zstd(c) | ErrorKind::Io(c) => Some(c.error()),
            _ => None,
        }
    }
}

/// `Result` with a perf [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
