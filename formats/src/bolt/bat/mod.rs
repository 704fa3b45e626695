//! BOLT Address Translation: the `.note.bolt_bat` section that `llvm-bolt --enable-bat` adds to
//! an optimized binary, mapping its code back to the input binary's functions and blocks.
//!
//! The encoding is LLVM ≥ 19's (`BoltAddressTranslation::writeMaps`): a table of hot
//! fragments, then one of cold fragments; every output address is a ULEB128 delta against one
//! running address that continues through function starts, entries, and from the hot table into
//! the cold one. The format has no version field and LLVM 18 wrote another; a section that does
//! not decode to exactly its size is refused with [`BatErrorKind::Trailing`] or a read error
//! rather than half-read (see `docs/bat.md` for the layout).
//!
//! [`parse_note`] reads a section, [`write_note`] writes one; for tables decoded from LLVM's
//! section, the written bytes are LLVM's.

mod read;
mod write;

pub use read::{parse_note, parse_tables};
pub use write::{write_note, write_tables};

use std::fmt;

use crate::bytes::ReadErrorKind;

/// The section's name.
pub const SECTION_NAME: &str = ".note.bolt_bat";
/// The note type (`BinarySection::NT_BOLT_BAT`).
pub const NT_BOLT_BAT: u32 = 1;
/// The note's name, as written (the reader checks only that it starts with `BOLT`).
pub const NOTE_NAME: &[u8] = b"BOLT\0";

/// The low bit of an entry's input value: the entry is a branch or call source, not a block
/// start (`BRANCHENTRY`).
pub const BRANCH_ENTRY: u32 = 1;

/// A whole translation table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bat {
    /// Hot (main) fragments, by ascending output address.
    pub hot: Vec<HotFragment>,
    /// Cold (split) fragments, by ascending output address.
    pub cold: Vec<ColdFragment>,
}

/// A function's main fragment in the optimized binary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HotFragment {
    /// Its address in the optimized binary.
    pub address: u64,
    /// The input function's hash (BOLT's function hash over the input CFG).
    pub hash: u64,
    /// Basic blocks of the input function.
    pub blocks: u64,
    /// The fragment's map, by output offset.
    pub entries: Vec<Entry>,
    /// Offsets of the input function's secondary entry points, ascending.
    pub secondary_entry_points: Vec<u32>,
}

/// A split-off (cold) fragment of a function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColdFragment {
    /// Its address in the optimized binary.
    pub address: u64,
    /// Index of its function's hot fragment in [`Bat::hot`].
    pub hot_index: u64,
    /// What the fragment's leading equal entries add to their output offsets to give input
    /// offsets (LLVM writes the first entry's input offset).
    pub input_skew: u64,
    /// The fragment's map, by output offset.
    pub entries: Vec<Entry>,
}

/// One row of a fragment's map: an output offset and the input offset it came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// Offset in the output fragment.
    pub output_offset: u32,
    /// Offset in the input function, shifted left by one, with [`BRANCH_ENTRY`] in the low
    /// bit (LLVM's map value).
    pub input: u32,
    /// For a block start: the input block's hash and index (0 and 0 when the input offset is
    /// not a block of the input function).
    pub block: Option<BlockId>,
}

/// An input basic block's identity, as BAT records it for block-start entries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockId {
    /// BOLT's block hash.
    pub hash: u64,
    /// The block's index in the input function's layout.
    pub index: u64,
}

impl Entry {
    /// Offset in the input function.
    pub fn input_offset(&self) -> u32 {
        self.input >> 1
    }

    /// Whether the entry is a branch or call source rather than a block start.
    pub fn is_branch(&self) -> bool {
        self.input & BRANCH_ENTRY != 0
    }
}

/// A section that cannot be read: where (the absolute file offset, when the caller gave the
/// section's) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatError {
    /// File offset where reading stopped.
    pub offset: u64,
    /// What was wrong.
    pub kind: BatErrorKind,
}

/// What was wrong with a BAT section.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BatErrorKind {
    /// The ELF note header is malformed (what is wrong with it).
    NoteHeader(&'static str),
    /// A field could not be read.
    Field {
        /// The field.
        field: &'static str,
        /// Why.
        error: ReadErrorKind,
    },
    /// A cold fragment names a hot fragment that does not exist.
    HotIndex {
        /// The index read.
        index: u64,
        /// Hot fragments in the table.
        hot: usize,
    },
    /// The tables end before the descriptor does.
    Trailing {
        /// Bytes of the descriptor decoded.
        consumed: u64,
        /// The descriptor's size.
        size: u64,
    },
}

/// What a reader says when a section does not decode in LLVM ≥ 19's encoding.
const NOT_LLVM_19: &str =
    "not a BAT table in LLVM 19+'s encoding (the format has no version field; LLVM 18 wrote another)";

impl fmt::Display for BatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte offset {} of {SECTION_NAME}: ", self.offset)?;
        match &self.kind {
            BatErrorKind::NoteHeader(why) => write!(f, "bad note header: {why}"),
            BatErrorKind::Field { field, error } => {
                write!(f, "cannot read the {field}: {error}; {NOT_LLVM_19}")
            }
            BatErrorKind::HotIndex { index, hot } => write!(
                f,
                "a cold fragment names hot fragment {index} of {hot}; {NOT_LLVM_19}"
            ),
            BatErrorKind::Trailing { consumed, size } => write!(
                f,
                "the tables end after {consumed} of the descriptor's {size} bytes; {NOT_LLVM_19}"
            ),
        }
    }
}

impl std::error::Error for BatError {}

/// The checks the fuzz target runs on `data` (a whole section, and the same bytes as a bare
/// descriptor): decoding never panics, and what decodes writes back to bytes that decode the
/// same. Public only for the fuzz target and the seed replay test.
#[doc(hidden)]
pub fn check_fuzz_input(data: &[u8]) {
    if let Ok(bat) = parse_note(data, 0) {
        assert_eq!(parse_note(&write_note(&bat), 0).as_ref(), Ok(&bat));
    }
    if let Ok(bat) = parse_tables(data, 0) {
        assert_eq!(parse_tables(&write_tables(&bat), 0).as_ref(), Ok(&bat));
    }
}

#[cfg(test)]
mod tests;
