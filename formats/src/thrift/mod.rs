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
//! Decoders generated from an IDL also read each known field as the IDL's type, whatever type
//! the data declares; [`check_struct_as`] checks with such a schema ([`parquet`] has the
//! Parquet footer's) so that its walk and the decoder's stay in step.
//!
//! Skipping follows the decoder these checks protect (the `parquet` crate's `skip`): a
//! boolean element of a list that is skipped takes no byte there, though the protocol gives it
//! one; booleans in the schema's own lists take their byte.
//!
//! Layout (Apache Thrift, `doc/specs/thrift-compact-protocol.md`): a struct is a sequence of
//! field headers, each `delta << 4 | type` (a zero delta is followed by the field id as a
//! zigzag varint), then the value; a zero byte ends the struct. Booleans live in the field
//! header's type; in collections they take one byte each.

use std::fmt;

use crate::bytes::{Endian, ReadError, ReadErrorKind, Reader};

pub mod parquet;

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
    /// A known field (`Some(id)`) or a list element (`None`) declares another type than the
    /// one its decoder reads.
    WrongType {
        /// The field id, or `None` for a list's element type.
        field: Option<i16>,
        /// The declared type code.
        found: u8,
        /// The type code the decoder reads.
        expected: u8,
    },
    /// A field id delta that passes the largest field id.
    FieldIdOverflow,
    /// Lists holding more structs in all than the caller allows.
    TooManyStructs {
        /// The number allowed.
        limit: u64,
    },
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
            ThriftErrorKind::WrongType {
                field,
                found,
                expected,
            } => {
                let (found, expected) = (type_name(*found), type_name(*expected));
                let (a, b) = (article(found), article(expected));
                match field {
                    Some(id) => write!(f, "field {id} is {a} {found} where {b} {expected} belongs"),
                    None => write!(f, "a list of {found} where a list of {expected} belongs"),
                }
            }
            ThriftErrorKind::FieldIdOverflow => write!(f, "a field id past 32767"),
            ThriftErrorKind::TooManyStructs { limit } => {
                write!(f, "lists of more than {limit} structs in all")
            }
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

/// "a" or "an" before a type's name.
fn article(name: &str) -> &'static str {
    match name.as_bytes().first() {
        Some(b'a' | b'e' | b'i' | b'o' | b'u') => "an",
        _ => "a",
    }
}

/// The name of a compact protocol type code, for messages.
fn type_name(code: u8) -> &'static str {
    match code {
        BOOL_TRUE | BOOL_FALSE => "bool",
        BYTE => "byte",
        I16 => "i16",
        I32 => "i32",
        I64 => "i64",
        DOUBLE => "double",
        BINARY => "binary",
        LIST => "list",
        SET => "set",
        MAP => "map",
        STRUCT => "struct",
        UUID => "uuid",
        _ => "unknown type",
    }
}

/// What a decoder reads at one place of a struct: the type it expects there and, for lists
/// and structs, what it expects inside.
///
/// Decoders generated from a Thrift IDL read a known field by the type the IDL gives it and
/// do not look at the type the data declares (the `parquet` crate does exactly that), so data
/// whose declared type differs makes the decoder read the following bytes as something else:
/// a string's length becomes a list's element count that was never checked. Checking with
/// the decoder's schema keeps both readings in step.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// A bool (in a struct: the field header's type; in a list: one byte).
    Bool,
    /// An i8.
    Byte,
    /// A zigzag varint read as i16.
    I16,
    /// A zigzag varint read as i32 (also every enum).
    I32,
    /// A zigzag varint read as i64.
    I64,
    /// Eight bytes.
    Double,
    /// A length and that many bytes (strings too).
    Binary,
    /// A list of elements of one shape.
    List(&'static Shape),
    /// A struct or union with these known fields; others are skipped by their declared type.
    Struct(&'static [Field]),
}

impl Shape {
    /// The type code the data must declare for this shape.
    fn code(self) -> u8 {
        match self {
            Shape::Bool => BOOL_TRUE,
            Shape::Byte => BYTE,
            Shape::I16 => I16,
            Shape::I32 => I32,
            Shape::I64 => I64,
            Shape::Double => DOUBLE,
            Shape::Binary => BINARY,
            Shape::List(_) => LIST,
            Shape::Struct(_) => STRUCT,
        }
    }

    /// Whether the declared type `code` is this shape (bools come as true and as false).
    fn accepts(self, code: u8) -> bool {
        match self {
            Shape::Bool => code == BOOL_TRUE || code == BOOL_FALSE,
            _ => code == self.code(),
        }
    }
}

/// A field a decoder knows: its id and its [`Shape`].
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// The field id.
    pub id: i16,
    /// What the decoder reads for it.
    pub shape: Shape,
}

/// Checks the shape of the struct encoded at the start of `data`, whose first byte is at file
/// offset `offset`, knowing none of its fields; returns the number of bytes it takes.
pub fn check_struct(data: &[u8], offset: u64) -> Result<usize, ThriftError> {
    check_struct_as(data, offset, &[], u64::MAX)
}

/// Checks the struct at the start of `data` (file offset `offset`) as a decoder with the
/// schema `fields` will read it: every known field and list element must have the declared
/// type the decoder expects, and lists may hold at most `max_list_structs` structs in all
/// (decoders allocate each one at its in-memory size, many times its encoded size). Returns
/// the number of bytes the struct takes.
pub fn check_struct_as(
    data: &[u8],
    offset: u64,
    fields: &'static [Field],
    max_list_structs: u64,
) -> Result<usize, ThriftError> {
    let mut walk = Walk {
        r: Reader::at(data, Endian::Little, offset),
        list_structs_left: max_list_structs,
        max_list_structs,
    };
    walk.strukt(fields, 0)?;
    Ok(data.len() - walk.r.len())
}

/// [`check_struct_as`], also returning the value of the struct's own `i32` field `id` (the
/// last one, if it occurs more than once; `None` if it does not occur).
pub fn check_struct_field_i32(
    data: &[u8],
    offset: u64,
    fields: &'static [Field],
    max_list_structs: u64,
    id: i16,
) -> Result<(usize, Option<i32>), ThriftError> {
    let len = check_struct_as(data, offset, fields, max_list_structs)?;
    // Well formed: walk its top-level fields again for the value.
    let mut walk = Walk {
        r: Reader::at(&data[..len], Endian::Little, offset),
        list_structs_left: u64::MAX,
        max_list_structs: u64::MAX,
    };
    let mut value = None;
    let mut last_id = 0i16;
    loop {
        let at = walk.r.offset();
        let header = walk.r.u8()?;
        if header == 0 {
            return Ok((len, value));
        }
        let code = header & 0x0f;
        last_id = match header >> 4 {
            0 => zigzag(walk.r.uleb128()?) as i16,
            delta => last_id
                .checked_add(i16::from(delta))
                .ok_or_else(|| refuse(at, ThriftErrorKind::FieldIdOverflow))?,
        };
        match code {
            I32 if last_id == id => value = Some(zigzag(walk.r.uleb128()?) as i32),
            BOOL_TRUE | BOOL_FALSE => {}
            code => walk.any(code, at, 0)?,
        }
    }
}

/// A walk over encoded values.
struct Walk<'a> {
    r: Reader<'a>,
    /// How many more structs lists may hold.
    list_structs_left: u64,
    max_list_structs: u64,
}

impl Walk<'_> {
    fn deeper(&self, depth: usize) -> Result<usize, ThriftError> {
        if depth >= MAX_DEPTH {
            return Err(refuse(self.r.offset(), ThriftErrorKind::TooDeep));
        }
        Ok(depth + 1)
    }

    /// A struct's fields up to its stop byte; the field ids are computed as decoders do
    /// (header delta added to the previous id, else a zigzag i16).
    fn strukt(&mut self, fields: &'static [Field], depth: usize) -> Result<(), ThriftError> {
        let depth = self.deeper(depth)?;
        let mut last_id = 0i16;
        loop {
            let at = self.r.offset();
            let header = self.r.u8()?;
            if header == 0 {
                return Ok(());
            }
            let code = header & 0x0f;
            let id = match header >> 4 {
                0 => zigzag(self.r.uleb128()?) as i16,
                delta => last_id
                    .checked_add(i16::from(delta))
                    .ok_or_else(|| refuse(at, ThriftErrorKind::FieldIdOverflow))?,
            };
            last_id = id;
            match fields.iter().find(|f| f.id == id) {
                Some(field) if !field.shape.accepts(code) => {
                    let kind = ThriftErrorKind::WrongType {
                        field: Some(id),
                        found: code,
                        expected: field.shape.code(),
                    };
                    return Err(refuse(at, kind));
                }
                // A bool field's value is its header's type.
                Some(Field {
                    shape: Shape::Bool, ..
                }) => {}
                Some(field) => self.value_as(field.shape, depth)?,
                None if code == BOOL_TRUE || code == BOOL_FALSE => {}
                None => self.any(code, at, depth)?,
            }
        }
    }

    /// One value of a known shape (its type already checked).
    fn value_as(&mut self, shape: Shape, depth: usize) -> Result<(), ThriftError> {
        match shape {
            Shape::List(element) => self.list_as(element, depth),
            Shape::Struct(fields) => self.strukt(fields, depth),
            scalar => self.any(scalar.code(), self.r.offset(), depth),
        }
    }

    /// A list whose elements the decoder reads as `element`. A header byte of 0 is an empty
    /// list (some writers put no element type on empty lists; decoders accept it).
    fn list_as(&mut self, element: &'static Shape, depth: usize) -> Result<(), ThriftError> {
        let depth = self.deeper(depth)?;
        let at = self.r.offset();
        let (code, count) = self.list_header()?;
        if count == 0 {
            return Ok(());
        }
        if !element.accepts(code) {
            let kind = ThriftErrorKind::WrongType {
                field: None,
                found: code,
                expected: element.code(),
            };
            return Err(refuse(at, kind));
        }
        self.count_structs(code, count, at)?;
        for _ in 0..count {
            match element {
                Shape::Bool => self.r.skip(1)?,
                shape => self.value_as(*shape, depth)?,
            }
        }
        Ok(())
    }

    /// A list or set header: the element type and the count, checked against the bytes left.
    fn list_header(&mut self) -> Result<(u8, u64), ThriftError> {
        let at = self.r.offset();
        let header = self.r.u8()?;
        let count = match header >> 4 {
            15 => self.r.uleb128()?,
            short => u64::from(short),
        };
        check_count(count, 1, at, self.r.len())?;
        Ok((header & 0x0f, count))
    }

    /// Charges `count` list elements of type `code` to the structs budget.
    fn count_structs(&mut self, code: u8, count: u64, at: u64) -> Result<(), ThriftError> {
        if code != STRUCT {
            return Ok(());
        }
        match self.list_structs_left.checked_sub(count) {
            Some(left) => {
                self.list_structs_left = left;
                Ok(())
            }
            None => Err(refuse(
                at,
                ThriftErrorKind::TooManyStructs {
                    limit: self.max_list_structs,
                },
            )),
        }
    }

    /// Skips one value of declared type `code`; `at` is where its type was read (for errors).
    fn any(&mut self, code: u8, at: u64, depth: usize) -> Result<(), ThriftError> {
        let r = &mut self.r;
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
            LIST | SET => {
                let depth = self.deeper(depth)?;
                let at = self.r.offset();
                let (element, count) = self.list_header()?;
                self.count_structs(element, count, at)?;
                // The `parquet` crate skips a boolean as it skips a bool field, taking no byte,
                // also in a list (the protocol gives list booleans a byte each): its reading
                // and this walk must not part (fuzzing found the footer they parted on).
                if element != BOOL_TRUE && element != BOOL_FALSE {
                    for _ in 0..count {
                        self.any(element, at, depth)?;
                    }
                }
            }
            MAP => self.map(depth)?,
            STRUCT => self.strukt(&[], depth)?,
            code => return Err(refuse(at, ThriftErrorKind::UnknownType(code))),
        }
        Ok(())
    }

    fn map(&mut self, depth: usize) -> Result<(), ThriftError> {
        let depth = self.deeper(depth)?;
        let offset = self.r.offset();
        let count = self.r.uleb128()?;
        if count == 0 {
            return Ok(());
        }
        let types = self.r.u8()?;
        check_count(count, 2, offset, self.r.len())?;
        self.count_structs(types >> 4, count, offset)?;
        self.count_structs(types & 0x0f, count, offset)?;
        for _ in 0..count {
            self.any(types >> 4, offset, depth)?;
            self.any(types & 0x0f, offset, depth)?;
        }
        Ok(())
    }
}

fn zigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
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

    /// The schema of [`GOOD`] as a decoder would read it.
    const GOOD_SCHEMA: &[Field] = &[
        Field {
            id: 1,
            shape: Shape::List(&Shape::I32),
        },
        Field {
            id: 2,
            shape: Shape::Binary,
        },
        Field {
            id: 3,
            shape: Shape::Struct(&[Field {
                id: 1,
                shape: Shape::Bool,
            }]),
        },
    ];

    #[test]
    fn a_struct_read_with_its_schema_is_measured() {
        assert_eq!(
            check_struct_as(GOOD, 0, GOOD_SCHEMA, 0),
            Ok(GOOD.len()),
            "unknown field 4 (the map) is skipped by its declared type"
        );
    }

    #[test]
    fn a_known_field_of_another_type_is_refused_where_its_header_is() {
        // Field 2 declared as a set (of 10 elements of type 10) where the decoder reads a
        // binary: a decoder reading the IDL's type would take 0x0a as a length.
        let data = [0x2a, 0xaa, 0];
        let schema: &[Field] = &[Field {
            id: 2,
            shape: Shape::Binary,
        }];
        let e = check_struct_as(&data, 50, schema, u64::MAX).unwrap_err();
        assert_eq!(
            e,
            refuse(
                50,
                ThriftErrorKind::WrongType {
                    field: Some(2),
                    found: SET,
                    expected: BINARY
                }
            )
        );
        assert_eq!(
            e.to_string(),
            "byte offset 50: field 2 is a set where a binary belongs"
        );
        // Without the schema the same bytes are a well-formed set of 10 sets... that the data
        // cannot hold.
        assert!(check_struct(&data, 50).is_err());
    }

    #[test]
    fn field_ids_are_computed_as_decoders_do() {
        // Field 1 by delta, then field 3 by a full zigzag id (6 = 3), both i32 to the schema.
        let schema: &[Field] = &[
            Field {
                id: 1,
                shape: Shape::I32,
            },
            Field {
                id: 3,
                shape: Shape::I32,
            },
        ];
        assert_eq!(
            check_struct_as(&[0x15, 2, 0x05, 6, 4, 0], 0, schema, 0),
            Ok(6)
        );
        // The same with field 3 a binary: refused at its header (offset 2).
        assert!(matches!(
            check_struct_as(&[0x15, 2, 0x08, 6, 0, 0], 0, schema, 0),
            Err(ThriftError {
                offset: 2,
                kind: ThriftErrorKind::WrongType { field: Some(3), .. }
            })
        ));
        // A delta past i16::MAX.
        let mut far = vec![0x05, 0xfc, 0xff, 0x03, 0]; // field 32766 (zigzag 65532), i32 0
        far.extend([0x25, 0, 0]); // delta 2: 32768
        assert!(matches!(
            check_struct_as(&far, 0, &[], u64::MAX),
            Err(ThriftError {
                offset: 5,
                kind: ThriftErrorKind::FieldIdOverflow
            })
        ));
    }

    #[test]
    fn list_elements_must_be_what_the_decoder_reads() {
        let schema: &[Field] = &[Field {
            id: 1,
            shape: Shape::List(&Shape::I64),
        }];
        // list<i32> of 2 where list<i64> belongs.
        assert!(matches!(
            check_struct_as(&[0x19, 0x25, 2, 4, 0], 0, schema, 0),
            Err(ThriftError {
                offset: 1,
                kind: ThriftErrorKind::WrongType { field: None, .. }
            })
        ));
        // An empty list's element type does not matter, and a bare 0 header is empty too.
        assert_eq!(check_struct_as(&[0x19, 0x05, 0], 0, schema, 0), Ok(3));
        assert_eq!(check_struct_as(&[0x19, 0x00, 0], 0, schema, 0), Ok(3));
    }

    #[test]
    fn lists_may_hold_only_so_many_structs() {
        // list<struct> of 3 empty structs, in a known and in an unknown field.
        let schema: &[Field] = &[Field {
            id: 1,
            shape: Shape::List(&Shape::Struct(&[])),
        }];
        let data = [0x19, 0x3c, 0, 0, 0, 0];
        assert_eq!(check_struct_as(&data, 0, schema, 3), Ok(6));
        assert_eq!(check_struct_as(&data, 0, &[], 3), Ok(6));
        for schema in [schema, &[]] {
            assert_eq!(
                check_struct_as(&data, 0, schema, 2),
                Err(refuse(1, ThriftErrorKind::TooManyStructs { limit: 2 }))
            );
        }
    }

    #[test]
    fn booleans_of_a_skipped_list_take_no_byte_as_the_parquet_crate_skips_them() {
        // Field 1 (unknown): a list of 3 booleans, then field 2 (i32 to the schema) = 1. The
        // crate skips the list's header only, so the next byte is field 2's header.
        let schema: &[Field] = &[Field {
            id: 2,
            shape: Shape::I32,
        }];
        let data = [0x19, 0x31, 0x15, 2, 0];
        assert_eq!(check_struct_as(&data, 0, schema, 0), Ok(5));
        // Walked with a byte per boolean, field 2's header would be read as a boolean and the
        // walk would end elsewhere: here it is refused as the i32 it is not.
        let spec = [0x19, 0x31, 1, 1, 1, 0x15, 2, 0];
        assert!(check_struct_as(&spec, 0, schema, 0).is_err());
    }
}
