//! The Thrift compact protocol, checked for shape only: [`check_struct`] walks one encoded
//! struct (a Parquet file's footer is one `FileMetaData`) without building anything, and
//! refuses what a decoder would have to trust blindly: a list, set, map or binary longer than
//! the bytes left, nesting deeper than [`MAX_DEPTH`], an unknown type code.
//!
//! Why: decoders size their vectors from the encoded element counts before reading the
//! elements, so a 30-byte footer that claims 2^32 row groups makes them allocate tens of
//! gigabytes, and a failed allocation aborts the process. Every element takes at least one
//! byte (a map entry two), so a count larger than the bytes left can only be corrupt.
//!
//! Layout (Apache Thrift, `doc/specs/thrift-compact-protocol.md`): a struct is a sequence of
//! field headers, each `delta << 4 | type` (a zero delta is followed by the field id as a
//! zigzag varint), then the value; a zero byte ends the struct. Booleans live in the field
//! header's type; in collections they take one byte each.

use std::fmt;

use crate::bytes::{Endian, ReadError, ReadErrorKind, Reader};

/// The deepest nesting of structs and collections [`check_struct`] accepts. Parquet's
/// `FileMetaData` nests about eight levels (schema elements, row groups, column chunks,
/// statistics, encodings); deeper input is corrupt, and recursion must stay bounded.
pub const MAX_DEPTH: usize = 64;

/// Why [`check_struct`] refused its input, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThriftError {
    /// File offset of the value (or header) that was refused.
    pub offset: u64,
    /// What was wrong with it.
    pub kind: ThriftErrorKind,
}

/// What [`check_struct`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ThriftErrorKind {
    /// The data ends inside a value (or a varint is too long).
    Read(ReadErrorKind),
    /// A list, set or map claims more elements than the bytes left could hold.
    CountTooLarge {
        /// The claimed number of elements.
        count: u64,
        /// Bytes left after the header.
        left: usize,
    },
    /// A binary or string longer than the bytes left.
    LengthTooLarge {
        /// The claimed length.
        length: u64,
        /// Bytes left after the length.
        left: usize,
    },
    /// A type code the compact protocol does not have.
    UnknownType(u8),
    /// Structs and collections nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

impl fmt::Display for ThriftErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThriftErrorKind::Read(e) => write!(f, "{e}"),
            ThriftErrorKind::CountTooLarge { count, left } => {
                write!(f, "a collection of {count} elements in {left} bytes")
            }
            ThriftErrorKind::LengthTooLarge { length, left } => {
                write!(f, "a binary of {length} bytes with {left} bytes left")
            }
            ThriftErrorKind::UnknownType(code) => write!(f, "unknown Thrift compact type {code}"),
            ThriftErrorKind::TooDeep => write!(f, "values nested deeper than {MAX_DEPTH} levels"),
        }
    }
}

impl fmt::Display for ThriftError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte offset {}: {}", self.offset, self.kind)
    }
}

impl std::error::Error for ThriftError {}

impl From<ReadError> for ThriftError {
    fn from(e: ReadError) -> Self {
        ThriftError {
            offset: e.offset,
            kind: ThriftErrorKind::Read(e.kind),
        }
    }
}

fn refuse(offset: u64, kind: ThriftErrorKind) -> ThriftError {
    ThriftError { offset, kind }
}

/// Compact protocol type codes.
const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;
const UUID: u8 = 13;

/// Checks the shape of the struct encoded at the start of `data`, whose first byte is at file
/// offset `offset`; returns the number of bytes it takes.
pub fn check_struct(data: &[u8], offset: u64) -> Result<usize, ThriftError> {
    let mut r = Reader::at(data, Endian::Little, offset);
    skip_struct(&mut r, 0)?;
    Ok(data.len() - r.len())
}

fn skip_struct(r: &mut Reader<'_>, depth: usize) -> Result<(), ThriftError> {
    if depth >= MAX_DEPTH {
        return Err(refuse(r.offset(), ThriftErrorKind::TooDeep));
    }
    loop {
        let at = r.offset();
        let header = r.u8()?;
        if header == 0 {
            return Ok(());
        }
        if header >> 4 == 0 {
            r.uleb128()?; // the field id, zigzag: any value will do
        }
        match header & 0x0f {
            BOOL_TRUE | BOOL_FALSE => {}
            code => skip_value(r, code, at, depth + 1)?,
        }
    }
}

/// Skips one value of type `code`; `at` is where its type was read (for errors).
fn skip_value(r: &mut Reader<'_>, code: u8, at: u64, depth: usize) -> Result<(), ThriftError> {
    match code {
        BOOL_TRUE | BOOL_FALSE | BYTE => r.skip(1)?,
        I16 | I32 | I64 => {
            r.uleb128()?;
        }
        DOUBLE => r.skip(8)?,
        UUID => r.skip(16)?,
        BINARY => {
            let offset = r.offset();
            let length = r.uleb128()?;
            let left = r.len();
            match usize::try_from(length) {
                Ok(n) if n <= left => r.skip(n)?,
                _ => {
                    let kind = ThriftErrorKind::LengthTooLarge { length, left };
                    return Err(refuse(offset, kind));
                }
            }
        }
        LIST | SET => skip_list(r, depth)?,
        MAP => skip_map(r, depth)?,
        STRUCT => skip_struct(r, depth)?,
        code => return Err(refuse(at, ThriftErrorKind::UnknownType(code))),
    }
    Ok(())
}

fn skip_list(r: &mut Reader<'_>, depth: usize) -> Result<(), ThriftError> {
    if depth >= MAX_DEPTH {
        return Err(refuse(r.offset(), ThriftErrorKind::TooDeep));
    }
    let offset = r.offset();
    let header = r.u8()?;
    let element = header & 0x0f;
    let count = match header >> 4 {
        15 => r.uleb128()?,
        short => u64::from(short),
    };
    check_count(count, 1, offset, r.len())?;
    for _ in 0..count {
        skip_value(r, element, offset, depth + 1)?;
    }
    Ok(())
}

fn skip_map(r: &mut Reader<'_>, depth: usize) -> Result<(), ThriftError> {
    if depth >= MAX_DEPTH {
        return Err(refuse(r.offset(), ThriftErrorKind::TooDeep));
    }
    let offset = r.offset();
    let count = r.uleb128()?;
    if count == 0 {
        return Ok(());
    }
    let types = r.u8()?;
    check_count(count, 2, offset, r.len())?;
    for _ in 0..count {
        skip_value(r, types >> 4, offset, depth + 1)?;
        skip_value(r, types & 0x0f, offset, depth + 1)?;
    }
    Ok(())
}

/// Refuses `count` elements of at least `min_bytes` each in `left` bytes.
fn check_count(count: u64, min_bytes: u64, offset: u64, left: usize) -> Result<(), ThriftError> {
    if count.saturating_mul(min_bytes) > left as u64 {
        return Err(refuse(
            offset,
            ThriftErrorKind::CountTooLarge { count, left },
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// struct { 1: list<i32> [1, 2, 3], 2: string "ab", 3: struct { 1: true }, 4: map<i32,
    /// binary> {5: "x"} }
    const GOOD: &[u8] = &[
        0x19, 0x35, 2, 4, 6, // field 1, list of 3 i32 (zigzag 1, 2, 3)
        0x18, 2, b'a', b'b', // field 2, binary of 2
        0x1c, 0x11, 0, // field 3, struct { field 1: true }
        0x1b, 1, 0x58, 10, 1, b'x', // field 4, map of 1 (i32 → binary)
        0,    // stop
    ];

    #[test]
    fn a_well_formed_struct_is_measured() {
        let mut data = GOOD.to_vec();
        data.extend_from_slice(b"trailing");
        assert_eq!(check_struct(&data, 100), Ok(GOOD.len()));
    }

    #[test]
    fn every_truncation_is_refused() {
        for n in 0..GOOD.len() {
            assert!(check_struct(&GOOD[..n], 0).is_err(), "{n} bytes");
        }
    }

    #[test]
    fn a_list_longer_than_the_data_is_refused_before_its_elements() {
        // A list of 2^32 structs in a handful of bytes.
        let data = [0x19, 0xfc, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0];
        assert_eq!(
            check_struct(&data, 40),
            Err(refuse(
                41,
                ThriftErrorKind::CountTooLarge {
                    count: 1 << 32,
                    left: 2
                }
            ))
        );
    }

    #[test]
    fn long_binaries_and_maps_are_refused() {
        let binary = [0x18, 0x80, 0x01, b'a', 0];
        assert!(matches!(
            check_struct(&binary, 0),
            Err(ThriftError {
                kind: ThriftErrorKind::LengthTooLarge { length: 128, .. },
                ..
            })
        ));
        let map = [0x1b, 3, 0x55, 2, 4, 0];
        assert!(matches!(
            check_struct(&map, 0),
            Err(ThriftError {
                kind: ThriftErrorKind::CountTooLarge { count: 3, .. },
                ..
            })
        ));
    }

    #[test]
    fn deep_nesting_and_unknown_types_are_refused() {
        let mut deep = vec![0x1c; MAX_DEPTH + 1];
        deep.extend(vec![0; MAX_DEPTH + 2]);
        assert!(matches!(
            check_struct(&deep, 0),
            Err(ThriftError {
                kind: ThriftErrorKind::TooDeep,
                ..
            })
        ));
        assert_eq!(
            check_struct(&[0x1e, 0], 7),
            Err(refuse(7, ThriftErrorKind::UnknownType(14)))
        );
    }
}
