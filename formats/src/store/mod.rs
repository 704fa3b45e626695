//! The profile store (`.pms`): profmill's own columnar, mergeable form of aggregated perf
//! profiles, in each binary's file-offset space so that no ELF is needed to write it. The layout
//! is specified in `docs/store.md`; in short:
//!
//! ```text
//! FileHeader (32 bytes) · sections … · table of contents (TocEntry × n) · Trailer (32 bytes)
//! ```
//!
//! Sections are a file-level [`StoreMeta`], one [`BinaryMeta`] per binary (in identity order),
//! and table blocks of at most [`ROWS_PER_BLOCK`] sorted rows ([`TraceRow`], [`BranchRow`],
//! [`IpRow`], [`MemRow`], [`ReturnRow`]), delta- and LEB128-encoded, each checksummed (xxh3-64)
//! and indexed by its first key in the table of contents. Everything in the file is a function
//! of the profile alone — no paths, times or input order — so equal profiles are equal bytes.

mod raw;
mod read;
mod rows;
mod write;

#[cfg(test)]
mod tests;

pub use raw::{FileHeader, TocEntry, Trailer};
pub use read::{
    block_parts, parse_binary_meta, parse_header, parse_meta, parse_toc, parse_trailer,
    zeroed_rows, BinaryLayout, BlockCursor, BlockRows, Layout, Section, Store, StoreIndex,
    TableRows,
};
pub use rows::{
    BlockUleb, BranchRow, IpRow, MemRow, ReturnRow, Row, TraceRow, Uleb, ROW_ROOM, ROW_WINDOW,
};
pub use write::{StoreWriter, TableWriter};

use std::fmt;

use crate::bytes::ReadErrorKind;

/// The first eight bytes of every store.
pub const MAGIC: [u8; 8] = *b"PMSTORE\0";
/// The last eight bytes of every store.
pub const END_MAGIC: [u8; 8] = *b"PMSTEND\0";
/// The version this crate writes and the newest it reads.
pub const VERSION: u32 = 2;
/// Rows per table block: small enough that a merge of a thousand inputs holds one block of
/// each in memory, large enough that the table of contents stays a small part of the file.
pub const ROWS_PER_BLOCK: usize = 4096;
/// The `binary` field of file-level sections.
pub const NO_BINARY: u32 = u32::MAX;

/// What a section holds. Readers skip codes they do not know (a newer writer's additions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum SectionKind {
    /// The file-level [`StoreMeta`].
    Meta,
    /// One binary's [`BinaryMeta`].
    Binary,
    /// A block of [`TraceRow`]s.
    Traces,
    /// A block of [`BranchRow`]s.
    Branches,
    /// A block of [`IpRow`]s.
    Ips,
    /// A block of [`MemRow`]s.
    Mem,
    /// A block of [`ReturnRow`]s.
    Returns,
}

impl SectionKind {
    /// The table kinds, in the order a binary's tables are written.
    pub const TABLES: [SectionKind; 5] = [
        SectionKind::Traces,
        SectionKind::Branches,
        SectionKind::Ips,
        SectionKind::Mem,
        SectionKind::Returns,
    ];

    /// The on-disk code.
    pub fn code(self) -> u32 {
        match self {
            SectionKind::Meta => 1,
            SectionKind::Binary => 2,
            SectionKind::Traces => 16,
            SectionKind::Branches => 17,
            SectionKind::Ips => 18,
            SectionKind::Mem => 19,
            SectionKind::Returns => 20,
        }
    }

    /// The kind of an on-disk code, if this version knows it.
    pub fn from_code(code: u32) -> Option<SectionKind> {
        Some(match code {
            1 => SectionKind::Meta,
            2 => SectionKind::Binary,
            16 => SectionKind::Traces,
            17 => SectionKind::Branches,
            18 => SectionKind::Ips,
            19 => SectionKind::Mem,
            20 => SectionKind::Returns,
            _ => return None,
        })
    }

    /// Position among [`SectionKind::TABLES`], for table kinds.
    pub fn table_index(self) -> Option<usize> {
        SectionKind::TABLES.iter().position(|&k| k == self)
    }

    /// The name used in messages.
    pub fn name(self) -> &'static str {
        match self {
            SectionKind::Meta => "meta",
            SectionKind::Binary => "binary",
            SectionKind::Traces => "traces",
            SectionKind::Branches => "branches",
            SectionKind::Ips => "ips",
            SectionKind::Mem => "mem",
            SectionKind::Returns => "returns",
        }
    }
}

/// What the whole store knows beyond its binaries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreMeta {
    /// Captures summed into the store.
    pub captures: u64,
    /// The capturing hosts' names (perf's `HEADER_HOSTNAME`), sorted, without duplicates.
    pub hosts: Vec<String>,
}

/// One binary's identity and summary. Binaries are identified by build-id when they have one,
/// else by file name; a store lists them in [`BinaryMeta::identity_cmp`] order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BinaryMeta {
    /// The GNU build-id (empty when the capture recorded none).
    pub build_id: Vec<u8>,
    /// The file name perf recorded (base name).
    pub name: Vec<u8>,
    /// The sampled events' names (as `perf script` prints them), sorted: the events whose
    /// samples the IP table sums. Empty for an LBR profile.
    pub events: Vec<String>,
    /// IP samples that fell in a process mapping this binary (0 for an LBR profile, whose
    /// counts are its traces').
    pub samples: u64,
    /// Processes that mapped it (summed over captures).
    pub processes: u64,
}

impl BinaryMeta {
    /// The order binaries are stored in: build-ids first (by bytes), then build-id-less
    /// binaries by name. Two binaries are the same when this says `Equal`.
    pub fn identity_cmp(&self, other: &BinaryMeta) -> std::cmp::Ordering {
        let key = |b: &BinaryMeta| -> (bool, Vec<u8>) {
            if b.build_id.is_empty() {
                (true, b.name.clone())
            } else {
                (false, b.build_id.clone())
            }
        };
        key(self).cmp(&key(other))
    }
}

/// A store that cannot be read: what is wrong, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError {
    /// File offset of the offending bytes.
    pub offset: u64,
    /// The section they belong to, when known: its kind, binary index and block number.
    pub section: Option<(SectionKind, u32, u32)>,
    /// What is wrong.
    pub kind: StoreErrorKind,
}

/// What is wrong with a store.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The file does not start with the store's magic.
    NotAStore,
    /// The file starts as a store but does not end with the store's trailer: it was cut
    /// short, or its writer has not finished it.
    NoTrailer,
    /// Written by a newer profmill.
    NewerVersion(u32),
    /// A version before the first release (its tables mean something else).
    PreReleaseVersion(u32),
    /// A section's bytes do not match its checksum.
    Checksum,
    /// The table of contents is inconsistent (the text says how).
    Toc(&'static str),
    /// A value could not be decoded.
    Read(ReadErrorKind),
    /// A block's bytes and its row count disagree.
    RowCount,
    /// Rows or blocks out of key order, or a repeated key.
    Unsorted,
    /// A string is not UTF-8.
    Utf8,
}

impl fmt::Display for StoreErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreErrorKind::NotAStore => f.write_str("not a profmill store (bad magic)"),
            StoreErrorKind::NoTrailer => f.write_str(
                "the store's trailer (`PMSTEND`) is missing: the file is truncated or was not completely written",
            ),
            StoreErrorKind::NewerVersion(v) => write!(
                f,
                "store format version {v} was written by a newer profmill; this one reads version {VERSION}"
            ),
            StoreErrorKind::PreReleaseVersion(v) => write!(
                f,
                "store format version {v} was written by a pre-release profmill (its memory rows lack a field); aggregate the captures again"
            ),
            StoreErrorKind::Checksum => f.write_str("checksum mismatch (the file is corrupt)"),
            StoreErrorKind::Toc(why) => write!(f, "bad table of contents: {why}"),
            StoreErrorKind::Read(k) => write!(f, "{k}"),
            StoreErrorKind::RowCount => {
                f.write_str("the block's length does not match its row count")
            }
            StoreErrorKind::Unsorted => f.write_str("rows out of key order"),
            StoreErrorKind::Utf8 => f.write_str("a name is not UTF-8"),
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte offset {}", self.offset)?;
        match self.section {
            Some((kind, binary, block)) if kind.table_index().is_some() => {
                write!(f, " ({} block {block} of binary {binary})", kind.name())?
            }
            Some((SectionKind::Binary, binary, _)) => write!(f, " (binary {binary})")?,
            Some((kind, _, _)) => write!(f, " ({} section)", kind.name())?,
            None => {}
        }
        write!(f, ": {}", self.kind)
    }
}

impl std::error::Error for StoreError {}

/// xxh3-64, the store's checksum.
pub fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// The fuzz target's property, also replayed on the committed seeds by the tests: parsing
/// `data` never panics, and a store it accepts writes back to bytes that parse and write back
/// to themselves. Panics when the property fails.
#[doc(hidden)]
pub fn check_fuzz_input(data: &[u8]) {
    let Ok(store) = Store::parse(data) else {
        return;
    };
    let readable = (0..store.binaries().len()).all(|b| {
        store.rows::<TraceRow>(b).all(|r| r.is_ok())
            && store.rows::<BranchRow>(b).all(|r| r.is_ok())
            && store.rows::<IpRow>(b).all(|r| r.is_ok())
            && store.rows::<MemRow>(b).all(|r| r.is_ok())
            && store.rows::<ReturnRow>(b).all(|r| r.is_ok())
    });
    for b in 0..store.binaries().len() {
        bulk_decoding_equals_row_by_row::<TraceRow>(&store, data, b);
        bulk_decoding_equals_row_by_row::<BranchRow>(&store, data, b);
        bulk_decoding_equals_row_by_row::<IpRow>(&store, data, b);
        bulk_decoding_equals_row_by_row::<MemRow>(&store, data, b);
        bulk_decoding_equals_row_by_row::<ReturnRow>(&store, data, b);
    }
    if !readable {
        return;
    }
    // Everything the reader accepts, the writer must write back.
    let bytes = store
        .rewrite()
        .expect("a store that reads whole writes back");
    let again = Store::parse(&bytes).expect("a rewritten store parses");
    assert_eq!(again.rewrite().expect("a rewritten store reads"), bytes);
}

/// A table's rows decoded block by block into one array by [`Store::block_rows_into`], the
/// last block first (a reader decoding blocks in parallel finishes them in any order), then
/// joined by [`Store::check_joined`].
pub(crate) fn rows_by_blocks<R: Row>(
    store: &Store<'_>,
    binary: usize,
) -> Result<Vec<R>, StoreError> {
    let blocks = store.binaries()[binary].1.blocks(R::KIND);
    let mut rows = zeroed_rows::<R>(blocks).unwrap();
    let mut scratch = Vec::new();
    let mut results: Vec<_> = blocks
        .iter()
        .zip(block_parts(blocks, &mut rows))
        .rev()
        .map(|(s, part)| store.block_rows_into(s, &mut scratch, part))
        .collect();
    results.reverse();
    store.check_joined(blocks, results, &rows)?;
    Ok(rows)
}

/// The bulk decoders — [`BlockCursor::rows_while`], which `merge` uses one key range after
/// another, and [`BlockCursor::next_rows`], a few rows at a time — read every block of binary
/// `b` of `store` (whose bytes are `data`) as the row-by-row decoder does: the same rows, and
/// the same error where that has one; and so does decoding the blocks apart into one array
/// ([`rows_by_blocks`], as `export` reads a table) for the whole table.
fn bulk_decoding_equals_row_by_row<R: Row>(store: &Store<'_>, data: &[u8], b: usize) {
    assert_eq!(rows_by_blocks::<R>(store, b), store.rows(b).collect());
    for s in store.binaries()[b].1.blocks(R::KIND) {
        let Some(bytes) = usize::try_from(s.offset)
            .ok()
            .and_then(|at| data.get(at..))
            .and_then(|d| d.get(..usize::try_from(s.length).ok()?))
        else {
            continue;
        };
        let one_by_one: Result<Vec<R>, StoreError> =
            BlockRows::new(bytes, s).and_then(|rows| rows.collect());
        let bulk = || -> Result<Vec<R>, StoreError> {
            let mut cursor = BlockCursor::new(bytes, s)?;
            let mut rows = Vec::new();
            while cursor.next_rows(bytes, &mut rows, 7)? {}
            Ok(rows)
        };
        assert_eq!(bulk(), one_by_one, "block at {}", s.offset);
        // Ranges that end at every third row's key, then one without an end.
        let ends: Vec<[u64; 3]> = one_by_one.as_ref().map_or(Vec::new(), |rows| {
            rows.iter().step_by(3).map(Row::packed_key).collect()
        });
        let by_ranges = || -> Result<Vec<R>, StoreError> {
            let mut rows = Vec::new();
            read_by_ranges(&mut BlockCursor::new(bytes, s)?, bytes, &ends, &mut rows)?;
            Ok(rows)
        };
        assert_eq!(by_ranges(), one_by_one, "block at {}", s.offset);
    }
}

/// Reads the rest of `cursor`'s block (whose bytes are `bytes`) into `rows` the merge's way:
/// [`BlockCursor::rows_while`] for one key range after another (ending at `ends`, then one
/// without an end), each call's first row past its range kept in order.
fn read_by_ranges<R: Row>(
    cursor: &mut BlockCursor<R>,
    bytes: &[u8],
    ends: &[[u64; 3]],
    rows: &mut Vec<R>,
) -> Result<(), StoreError> {
    for end in ends.iter().copied().map(Some).chain([None]) {
        let below = |r: &R| end.is_none_or(|e| r.packed_key() < e);
        match cursor.rows_while(bytes, below, |r| rows.push(r))? {
            // The first row past the range (the merge holds it for a later one).
            Some(row) => rows.push(row),
            None => break,
        }
    }
    Ok(())
}

/// `data` with every section checksum and the table of contents' checksum recomputed where the
/// trailer and the entries point inside it (so that fuzzed mutations reach the decoders).
#[doc(hidden)]
pub fn with_fixed_checksums(data: &[u8]) -> Option<Vec<u8>> {
    let u64_at = |d: &[u8], at: usize| -> Option<usize> {
        usize::try_from(u64::from_le_bytes(d.get(at..at + 8)?.try_into().ok()?)).ok()
    };
    let entry = std::mem::size_of::<TocEntry>();
    let mut out = data.to_vec();
    let trailer = out.len().checked_sub(32)?;
    let toc = u64_at(&out, trailer)?;
    let toc_end = toc.checked_add(u64_at(&out, trailer + 8)?.checked_mul(entry)?)?;
    if toc_end > trailer {
        return None;
    }
    for at in (toc..toc_end).step_by(entry) {
        let (offset, length) = (u64_at(&out, at + 8)?, u64_at(&out, at + 16)?);
        if let Some(section) = out.get(offset..offset.checked_add(length)?) {
            let sum = checksum(section);
            out[at + 32..at + 40].copy_from_slice(&sum.to_le_bytes());
        }
    }
    let sum = checksum(&out[toc..toc_end]);
    out[trailer + 16..trailer + 24].copy_from_slice(&sum.to_le_bytes());
    Some(out)
}
