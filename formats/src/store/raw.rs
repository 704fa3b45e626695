//! The store's fixed-size records, as laid out on disk (little-endian, unaligned).

use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// The first 32 bytes of a store.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct FileHeader {
    /// [`super::MAGIC`].
    pub magic: [u8; 8],
    /// The format version; readers refuse versions newer than [`super::VERSION`].
    pub version: U32,
    /// The header's size in bytes (32 in version 1); sections start after it.
    pub header_size: U32,
    /// Zero.
    pub reserved: [u8; 16],
}

/// One section's entry in the table of contents.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct TocEntry {
    /// A [`super::SectionKind`] code; unknown codes are skipped by readers.
    pub kind: U32,
    /// The binary a table block belongs to (index in the order of the binary sections), or
    /// `u32::MAX` for file-level sections.
    pub binary: U32,
    /// The section's file offset.
    pub offset: U64,
    /// The section's length in bytes.
    pub length: U64,
    /// Rows in a table block (0 for other sections).
    pub rows: U64,
    /// xxh3-64 of the section's bytes.
    pub checksum: U64,
    /// A table block's first row's two leading key columns, for seeking.
    pub first_key: [U64; 2],
}

/// The last 32 bytes of a store: where its table of contents is.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Trailer {
    /// File offset of the table of contents.
    pub toc_offset: U64,
    /// Number of entries in it.
    pub toc_entries: U64,
    /// xxh3-64 of the table of contents' bytes.
    pub toc_checksum: U64,
    /// [`super::END_MAGIC`].
    pub magic: [u8; 8],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_the_documented_ones() {
        assert_eq!(std::mem::size_of::<FileHeader>(), 32);
        assert_eq!(std::mem::size_of::<TocEntry>(), 56);
        assert_eq!(std::mem::size_of::<Trailer>(), 32);
    }
}
