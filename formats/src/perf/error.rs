//! Precise errors for perf.data decoding. Every error carries the byte offset where decoding
//! stopped; the caller adds the file name.

use std::fmt;

use crate::error::Cause;

/// Where in the input an error happened: a plain file offset, or an offset inside the
/// decompressed stream of the COMPRESSED record that starts at `record`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offset {
    File(u64),
    Compressed { record: u64, decompressed: u64 },
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

#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The first 8 bytes are not "PERFILE2" in either byte order.
    BadMagic,
    /// The file header's `size` field is neither 104, 72 (legacy) nor 16 (pipe).
    BadHeaderSize(u64),
    /// A structure ends past the end of the input.
    Truncated {
        what: &'static str,
        needed: u64,
        available: u64,
    },
    /// A header section (attrs, data, features) lies outside the file.
    SectionOutOfBounds {
        what: &'static str,
        offset: u64,
        size: u64,
        file_size: u64,
    },
    /// `attr_size` cannot hold a `perf_event_attr` plus its ids section.
    BadAttrSize(u64),
    /// `perf_event_attr.size` is below the 64 bytes of the first ABI version.
    BadAttrStructSize(u32),
    /// There are no event attributes at all.
    NoAttrs,
    /// A record header's size is below 8 bytes.
    RecordTooSmall { size: u16 },
    /// A SAMPLE record is shorter than its `sample_type` requires.
    SampleTooShort {
        field: &'static str,
        record_size: usize,
    },
    /// A sample or side-band record names an event id that no attr declares.
    UnknownEventId(u64),
    /// Several events whose samples cannot be told apart (no common id position).
    AmbiguousEvents,
    /// A record's body is shorter than its fixed layout.
    RecordBodyTooShort { record_type: u32, size: usize },
    /// The zstd stream of COMPRESSED records could not be decoded.
    Zstd(Cause),
    /// COMPRESSED2's declared payload does not fit its record.
    BadCompressed2 { data_size: u64, record_size: u16 },
    /// The stream ended in the middle of a record.
    PartialRecord { have: u64, need: u64 },
    /// Reading the input failed.
    Io(Cause),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub offset: Offset,
    pub kind: ErrorKind,
}

impl Error {
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

pub type Result<T> = std::result::Result<T, Error>;
