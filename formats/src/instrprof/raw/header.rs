//! The raw profile header (`INSTR_PROF_RAW_HEADER`): consecutive u64 fields in the file's byte
//! order, whose list depends on the raw version.

use crate::bytes::Bytes;

use super::super::error::{Error, ErrorKind, Result};
use super::super::kind::variant;

/// Raw versions this reader understands.
pub const SUPPORTED_VERSIONS: [u64; 6] = [5, 7, 8, 9, 10, 11];
/// The version clang-19 writes and llvm-profdata-19 accepts.
pub const LLVM19_VERSION: u64 = 10;
/// The version of LLVM 23 (uniform counters, offload wave size). No released llvm-profdata
/// this project compares with reads it, so a reader restricted to [`LLVM19_VERSION`] accepts
/// it too: it is the only way to merge such files with an LLVM-19-compatible output.
pub const LLVM23_VERSION: u64 = 11;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Magic,
    Version,
    BinaryIdsSize,
    NumData,
    PaddingBeforeCounters,
    NumCounters,
    PaddingAfterCounters,
    NumBitmapBytes,
    PaddingAfterBitmap,
    NumUniformCounters,
    PaddingAfterUniformCounters,
    UniformCountersDelta,
    NamesSize,
    CountersDelta,
    BitmapDelta,
    NamesDelta,
    NumVTables,
    VNamesSize,
    ValueKindLast,
}

use Field::*;

const V5: &[Field] = &[
    Magic,
    Version,
    NumData,
    PaddingBeforeCounters,
    NumCounters,
    PaddingAfterCounters,
    NamesSize,
    CountersDelta,
    NamesDelta,
    ValueKindLast,
];
const V7: &[Field] = &[
    Magic,
    Version,
    BinaryIdsSize,
    NumData,
    PaddingBeforeCounters,
    NumCounters,
    PaddingAfterCounters,
    NamesSize,
    CountersDelta,
    NamesDelta,
    ValueKindLast,
];
const V9: &[Field] = &[
    Magic,
    Version,
    BinaryIdsSize,
    NumData,
    PaddingBeforeCounters,
    NumCounters,
    PaddingAfterCounters,
    NumBitmapBytes,
    PaddingAfterBitmap,
    NamesSize,
    CountersDelta,
    BitmapDelta,
    NamesDelta,
    ValueKindLast,
];
const V10: &[Field] = &[
    Magic,
    Version,
    BinaryIdsSize,
    NumData,
    PaddingBeforeCounters,
    NumCounters,
    PaddingAfterCounters,
    NumBitmapBytes,
    PaddingAfterBitmap,
    NamesSize,
    CountersDelta,
    BitmapDelta,
    NamesDelta,
    NumVTables,
    VNamesSize,
    ValueKindLast,
];

/// LLVM 23 (`INSTR_PROF_RAW_HEADER` at raw version 11): the uniform-counter fields come
/// between the bitmap padding and `NamesSize`.
const V11: &[Field] = &[
    Magic,
    Version,
    BinaryIdsSize,
    NumData,
    PaddingBeforeCounters,
    NumCounters,
    PaddingAfterCounters,
    NumBitmapBytes,
    PaddingAfterBitmap,
    NumUniformCounters,
    PaddingAfterUniformCounters,
    UniformCountersDelta,
    NamesSize,
    CountersDelta,
    BitmapDelta,
    NamesDelta,
    NumVTables,
    VNamesSize,
    ValueKindLast,
];

fn fields_of(version: u64) -> Option<&'static [Field]> {
    match version {
        5 => Some(V5),
        7 | 8 => Some(V7),
        9 => Some(V9),
        10 => Some(V10),
        11 => Some(V11),
        _ => None,
    }
}

/// Whether a reader told to accept only `expected` reads `version`.
fn accepts(expected: u64, version: u64) -> bool {
    version == expected || (expected == LLVM19_VERSION && version == LLVM23_VERSION)
}

/// A decoded header. Fields a version lacks are 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawHeader {
    /// The whole version word: format version in the low 32 bits, variant flags above.
    pub version_word: u64,
    /// `BinaryIdsSize`: bytes of the binary-id section after the header (version ≥ 6).
    pub binary_ids_size: u64,
    /// `NumData`: number of `__llvm_profile_data` records.
    pub num_data: u64,
    /// `PaddingBytesBeforeCounters`: bytes between the data records and the counters.
    pub padding_before_counters: u64,
    /// `NumCounters`: number of counters (u64 each, or bytes with single-byte coverage).
    pub num_counters: u64,
    /// `PaddingBytesAfterCounters`.
    pub padding_after_counters: u64,
    /// `NumBitmapBytes`: bytes of the MC/DC bitmap section (version ≥ 9).
    pub num_bitmap_bytes: u64,
    /// `PaddingBytesAfterBitmapBytes` (version ≥ 9).
    pub padding_after_bitmap: u64,
    /// u64 counters in the uniform-counter section (v11).
    pub num_uniform_counters: u64,
    /// Padding after the uniform-counter section (v11).
    pub padding_after_uniform_counters: u64,
    /// start(uniform counters) - start(data), like `counters_delta` (v11).
    pub uniform_counters_delta: u64,
    /// `NamesSize`: bytes of the (possibly zlib-compressed) names section.
    pub names_size: u64,
    /// `CountersDelta`: start(counters) - start(data) in the instrumented process, used to
    /// turn each record's `CounterPtr` into a section offset.
    pub counters_delta: u64,
    /// `BitmapDelta`: start(bitmap) - start(data), for `BitmapPtr` (version ≥ 9).
    pub bitmap_delta: u64,
    /// `NamesDelta`: the names section's address in the instrumented process (0 when a
    /// binary supplies the names).
    pub names_delta: u64,
    /// `NumVTables`: number of `__llvm_prf_vtab` records (version ≥ 10).
    pub num_vtables: u64,
    /// `VNamesSize`: bytes of the vtable names section (version ≥ 10).
    pub vnames_size: u64,
    /// `ValueKindLast`: the last value kind the runtime knew (`IPVK_Last`).
    pub value_kind_last: u64,
    /// Bytes the header takes in the file.
    pub size: usize,
}

impl RawHeader {
    /// The format version without the variant bits (e.g. 10 for LLVM 19).
    pub fn version(&self) -> u64 {
        self.version_word & !variant::MASK_ALL
    }

    /// Parses the header at `off`. `only_version` makes any other version an error, as
    /// llvm-profdata-19 does (except that version 10 also lets version 11 in, see
    /// [`LLVM23_VERSION`]); the size check comes first there too (it reads a 128-byte header).
    pub fn parse(bytes: Bytes<'_>, off: usize, only_version: Option<u64>) -> Result<RawHeader> {
        let min_size = match only_version {
            Some(v) => fields_of(v).map_or(V5.len(), <[Field]>::len) * 8,
            None => V5.len() * 8,
        };
        if bytes.len().saturating_sub(off) < min_size {
            return Err(Error::at_byte(
                off,
                ErrorKind::BadHeader(format!("a raw profile header needs {min_size} bytes")),
            ));
        }
        let version_word = bytes.u64(off + 8).unwrap_or(0);
        let version = version_word & !variant::MASK_ALL;
        if let Some(expected) = only_version {
            if !accepts(expected, version) {
                return Err(Error::at_byte(
                    off + 8,
                    ErrorKind::RawVersionMismatch {
                        found: version,
                        expected,
                    },
                ));
            }
        }
        let fields = fields_of(version).ok_or_else(|| {
            Error::at_byte(
                off + 8,
                ErrorKind::UnsupportedVersion(format!(
                    "raw profile version {version} (supported: 5, 7, 8, 9, 10, 11)"
                )),
            )
        })?;
        let size = fields.len() * 8;
        if bytes.len() - off < size {
            return Err(Error::at_byte(
                off,
                ErrorKind::BadHeader(format!("a version {version} raw header needs {size} bytes")),
            ));
        }
        let mut h = RawHeader {
            size,
            ..RawHeader::default()
        };
        for (i, field) in fields.iter().enumerate() {
            let v = bytes.u64(off + 8 * i).unwrap_or(0);
            let slot = match field {
                Magic => continue,
                Version => &mut h.version_word,
                BinaryIdsSize => &mut h.binary_ids_size,
                NumData => &mut h.num_data,
                PaddingBeforeCounters => &mut h.padding_before_counters,
                NumCounters => &mut h.num_counters,
                PaddingAfterCounters => &mut h.padding_after_counters,
                NumBitmapBytes => &mut h.num_bitmap_bytes,
                PaddingAfterBitmap => &mut h.padding_after_bitmap,
                NumUniformCounters => &mut h.num_uniform_counters,
                PaddingAfterUniformCounters => &mut h.padding_after_uniform_counters,
                UniformCountersDelta => &mut h.uniform_counters_delta,
                NamesSize => &mut h.names_size,
                CountersDelta => &mut h.counters_delta,
                BitmapDelta => &mut h.bitmap_delta,
                NamesDelta => &mut h.names_delta,
                NumVTables => &mut h.num_vtables,
                VNamesSize => &mut h.vnames_size,
                ValueKindLast => &mut h.value_kind_last,
            };
            *slot = v;
        }
        Ok(h)
    }
}
