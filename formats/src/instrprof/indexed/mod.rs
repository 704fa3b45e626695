//! Indexed `.profdata` files: reader for versions 1–12 (`IndexedInstrProfReader`) and writer
//! for versions 11 and 12 ([`writer`]). Every number is little-endian.

pub mod hash_table;
pub mod string_map;
pub mod writer;

use crate::bytes::{Bytes, Endian};

use super::error::{Error, ErrorKind, Result};
use super::kind::{variant, ProfileKind};
use super::record::Record;
use super::summary::{Summary, SummaryEntry};
use super::value_prof::parse_block;
use super::{TemporalTrace, TemporalTraces};

/// `IndexedInstrProf::Magic`: the bytes `\xfflprofi` read as a little-endian u64.
pub(crate) const MAGIC: u64 = 0x8169_666f_7270_6cff;
/// The newest indexed version (LLVM 19).
pub const CURRENT_VERSION: u64 = 12;

pub(crate) fn has_format(data: &[u8]) -> bool {
    data.get(..8)
        .is_some_and(|m| u64::from_le_bytes(m.try_into().unwrap_or_default()) == MAGIC)
}

/// `IndexedInstrProf::Header`; offsets a version lacks are 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexedHeader {
    /// `Header::Version`: the version number in the low 32 bits, [`variant`] bits above.
    pub version_word: u64,
    /// `Header::Unused` (always 0 as LLVM writes it).
    pub unused: u64,
    /// `Header::HashType`: the key hash of the on-disk hash table; 0 = MD5, the only one LLVM has.
    pub hash_type: u64,
    /// `Header::HashOffset`: byte offset of the on-disk hash table of records.
    pub hash_offset: u64,
    /// `Header::MemProfOffset` (version ≥ 8; 0 otherwise): byte offset of the memprof section.
    pub memprof_offset: u64,
    /// `Header::BinaryIdOffset` (version ≥ 9): byte offset of the binary ids section.
    pub binary_id_offset: u64,
    /// `Header::TemporalProfTracesOffset` (version ≥ 10): byte offset of the temporal traces.
    pub temporal_offset: u64,
    /// `Header::VTableNamesOffset` (version ≥ 12): byte offset of the vtable names section.
    pub vtable_names_offset: u64,
    /// Size in bytes of the header as this version lays it out (where the summary starts).
    pub size: usize,
}

impl IndexedHeader {
    /// The version number without the variant bits (e.g. 12).
    pub fn version(&self) -> u64 {
        self.version_word & !variant::MASK_ALL
    }

    /// Parses the header at the start of the file (little-endian, as every indexed profile is).
    pub fn parse(bytes: Bytes<'_>) -> Result<IndexedHeader> {
        if bytes.len() < 24 {
            return Err(Error::truncated(
                0,
                "an indexed header needs at least 24 bytes",
            ));
        }
        if bytes.u64(0) != Some(MAGIC) {
            return Err(Error::at_byte(0, ErrorKind::BadMagic));
        }
        let version_word = bytes.u64(8).unwrap_or(0);
        let version = version_word & !variant::MASK_ALL;
        if version > CURRENT_VERSION {
            return Err(Error::at_byte(
                8,
                ErrorKind::UnsupportedVersion(format!(
                    "indexed version {version} is newer than {CURRENT_VERSION}"
                )),
            ));
        }
        let fields = match version {
            0..=7 => 5,
            8 => 6,
            9 => 7,
            10 | 11 => 8,
            _ => 9,
        };
        let size = fields * 8;
        let field = |i: usize| -> Result<u64> {
            bytes
                .u64(8 * i)
                .ok_or_else(|| Error::truncated(8 * i, "the indexed header"))
        };
        let opt = |i: usize| -> Result<u64> {
            if i < fields {
                field(i)
            } else {
                Ok(0)
            }
        };
        Ok(IndexedHeader {
            version_word,
            unused: field(2)?,
            hash_type: field(3)?,
            hash_offset: field(4)?,
            memprof_offset: opt(5)?,
            binary_id_offset: opt(6)?,
            temporal_offset: opt(7)?,
            vtable_names_offset: opt(8)?,
            size,
        })
    }
}

/// An indexed profile over its bytes; records are decoded on iteration.
pub struct IndexedReader<'a> {
    bytes: Bytes<'a>,
    /// The file header.
    pub header: IndexedHeader,
    /// The profile summary (version ≥ 4).
    pub summary: Option<Summary>,
    /// The context-sensitive summary (version ≥ 4, with `VARIANT_MASK_CSIR_PROF`).
    pub cs_summary: Option<Summary>,
    payload: usize,
    num_entries: u64,
}

impl<'a> IndexedReader<'a> {
    /// Parses the header and summaries of an indexed profile; records are decoded by iteration.
    pub fn new(data: &'a [u8]) -> Result<IndexedReader<'a>> {
        let bytes = Bytes::new(data, Endian::Little);
        let header = IndexedHeader::parse(bytes)?;
        let mut pos = header.size;
        let mut summary = None;
        let mut cs_summary = None;
        if header.version() >= 4 {
            let (s, next) = read_summary(bytes, pos)?;
            summary = Some(s);
            pos = next;
            if header.version_word & variant::CSIR_PROF != 0 {
                let (s, next) = read_summary(bytes, pos)?;
                cs_summary = Some(s);
                pos = next;
            }
        }
        if header.hash_type > 0 {
            return Err(Error::at_byte(
                24,
                ErrorKind::UnsupportedHashType(header.hash_type),
            ));
        }
        let table = usize::try_from(header.hash_offset).unwrap_or(usize::MAX);
        let num_entries = bytes
            .u64(table.saturating_add(8))
            .ok_or_else(|| Error::truncated(32, "the hash table offset points past the end"))?;
        Ok(IndexedReader {
            bytes,
            header,
            summary,
            cs_summary,
            payload: pos,
            num_entries,
        })
    }

    /// The `InstrProfKind` the version word's variant bits imply.
    pub fn kind(&self) -> ProfileKind {
        ProfileKind::from_indexed_version(self.header.version_word)
    }

    /// Every record in payload order (the order `show` lists them in).
    pub fn read_records(&self, sink: &mut dyn FnMut(&[u8], Record)) -> Result<()> {
        let mut pos = self.payload;
        let mut left_in_bucket = 0u16;
        for _ in 0..self.num_entries {
            if left_in_bucket == 0 {
                left_in_bucket = self
                    .bytes
                    .u16(pos)
                    .ok_or_else(|| Error::truncated(pos, "a hash table bucket"))?;
                pos += 2;
            }
            left_in_bucket = left_in_bucket.wrapping_sub(1);
            let key_len = self.bytes.u64(pos + 8);
            let data_len = self.bytes.u64(pos + 16);
            let (Some(key_len), Some(data_len)) = (key_len, data_len) else {
                return Err(Error::truncated(pos, "a hash table entry"));
            };
            let key_at = pos + 24;
            let data_at = usize::try_from(key_len)
                .ok()
                .and_then(|k| key_at.checked_add(k));
            let end = data_at.and_then(|d| d.checked_add(usize::try_from(data_len).ok()?));
            let (Some(data_at), Some(end)) = (data_at, end) else {
                return Err(Error::truncated(pos, "a hash table entry"));
            };
            if end > self.bytes.len() {
                return Err(Error::truncated(pos, "a hash table entry"));
            }
            let name = &self.bytes.data[key_at..data_at];
            let records = self
                .read_data(data_at, end)
                .ok_or_else(|| Error::malformed(data_at, "profile data is empty"))?;
            for r in records {
                sink(name, r);
            }
            pos = end;
        }
        Ok(())
    }

    /// `InstrProfLookupTrait::ReadData`: `None` for data LLVM treats as corrupt.
    fn read_data(&self, start: usize, end: usize) -> Option<Vec<Record>> {
        let version = self.header.version();
        let n = end - start;
        if !n.is_multiple_of(8) {
            return None;
        }
        let b = Bytes::new(&self.bytes.data[..end], Endian::Little);
        let mut pos = start;
        let mut records = Vec::new();
        while pos < end {
            if pos + 8 >= end {
                return None;
            }
            let hash = b.u64(pos)?;
            pos += 8;
            let mut num_counts = (n / 8 - 1) as u64;
            if version != 1 {
                num_counts = b.u64(pos)?;
                pos += 8;
            }
            if num_counts > ((end - pos) / 8) as u64 {
                return None;
            }
            let counts: Vec<u64> = (0..num_counts as usize)
                .map(|i| b.u64(pos + 8 * i).unwrap_or(0))
                .collect();
            pos += 8 * counts.len();
            let mut bitmap = Vec::new();
            if version > 10 {
                let num_bytes = b.u64(pos)?;
                pos += 8;
                if num_bytes > ((end - pos) / 8) as u64 {
                    return None;
                }
                bitmap = (0..num_bytes as usize)
                    .map(|i| b.u64(pos + 8 * i).unwrap_or(0) as u8)
                    .collect();
                pos += 8 * bitmap.len();
            }
            let mut record = Record {
                hash,
                counts,
                bitmap,
                ..Record::default()
            };
            if version > 2 {
                let block = parse_block(b, pos, 2).ok()?;
                for (kind, sites) in block.kinds {
                    record.values[kind].extend(sites);
                }
                pos += block.total_size as usize;
            }
            records.push(record);
        }
        if records.is_empty() {
            return None;
        }
        Some(records)
    }

    /// Build ids (versions 9 and later).
    pub fn binary_ids(&self) -> Result<Vec<Vec<u8>>> {
        if self.header.version() < 9 {
            return Ok(Vec::new());
        }
        let at = usize::try_from(self.header.binary_id_offset).unwrap_or(usize::MAX);
        let size = self
            .bytes
            .u64(at)
            .ok_or_else(|| Error::malformed(48, "corrupted binary ids"))?;
        if size % 8 != 0 {
            return Err(Error::at_byte(
                at,
                ErrorKind::BadHeader("binary ids size is not a multiple of 8".into()),
            ));
        }
        let start = at + 8;
        let end = usize::try_from(size)
            .ok()
            .and_then(|s| start.checked_add(s))
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| Error::malformed(at, "corrupted binary ids"))?;
        let mut ids = Vec::new();
        let mut pos = start;
        while pos < end {
            let len = self.bytes.u64(pos).unwrap_or(0);
            if len == 0 {
                return Err(Error::malformed(pos, "binary id length is 0"));
            }
            let padded = len.checked_next_multiple_of(8).unwrap_or(u64::MAX);
            if ((end - pos - 8) as u64) < padded {
                return Err(Error::malformed(
                    pos,
                    "not enough data to read binary id data",
                ));
            }
            ids.push(self.bytes.data[pos + 8..pos + 8 + len as usize].to_vec());
            pos += 8 + padded as usize;
        }
        Ok(ids)
    }

    /// The vtable names section (version 12 and later; empty unless written with
    /// `--keep-vtable-symbols`).
    pub fn vtable_names(&self) -> Result<Vec<Vec<u8>>> {
        if self.header.version() < 12 || self.header.vtable_names_offset == 0 {
            return Ok(Vec::new());
        }
        let at = usize::try_from(self.header.vtable_names_offset).unwrap_or(usize::MAX);
        let len = self
            .bytes
            .u64(at)
            .ok_or_else(|| Error::malformed(64, "the vtable names offset points past the end"))?;
        let section = usize::try_from(len)
            .ok()
            .and_then(|l| self.bytes.data.get(at + 8..(at + 8).checked_add(l)?))
            .ok_or_else(|| Error::malformed(at, "the vtable names run past the end"))?;
        let names = crate::instrprof::names::decode_names(section, at + 8)?;
        Ok(names.iter().map(<[u8]>::to_vec).collect())
    }

    /// Temporal traces (version 10 and later, with the temporal flag).
    pub fn temporal_traces(&self) -> Result<TemporalTraces> {
        if self.header.version() < 10 || self.header.version_word & variant::TEMPORAL_PROF == 0 {
            return Ok(TemporalTraces::default());
        }
        let mut pos = usize::try_from(self.header.temporal_offset).unwrap_or(usize::MAX);
        let mut next = |what: &'static str| -> Result<u64> {
            let v = self
                .bytes
                .u64(pos)
                .ok_or_else(|| Error::truncated(pos, what))?;
            pos += 8;
            Ok(v)
        };
        let num = next("temporal traces")?;
        let stream_size = next("temporal traces")?;
        let mut traces = Vec::new();
        for _ in 0..num {
            let weight = next("a temporal trace")?;
            let len = next("a temporal trace")?;
            let mut names = Vec::new();
            for _ in 0..len {
                names.push(next("a temporal trace")?);
            }
            traces.push(TemporalTrace { weight, names });
        }
        Ok(TemporalTraces {
            traces,
            stream_size,
        })
    }
}

fn read_summary(bytes: Bytes<'_>, pos: usize) -> Result<(Summary, usize)> {
    let trunc = || Error::truncated(pos, "the profile summary");
    let num_fields = bytes.u64(pos).ok_or_else(trunc)?;
    let num_entries = bytes.u64(pos + 8).ok_or_else(trunc)?;
    let size = num_fields
        .checked_add(2)
        .and_then(|words| words.checked_mul(8))
        .and_then(|s| s.checked_add(24u64.checked_mul(num_entries)?))
        .filter(|&s| s <= (bytes.len() - pos) as u64)
        .ok_or_else(trunc)? as usize;
    let field = |i: u64| {
        if i < num_fields {
            bytes.u64(pos + 16 + 8 * i as usize).unwrap_or(0)
        } else {
            0
        }
    };
    let entries_at = pos + 16 + 8 * num_fields as usize;
    let entries = (0..num_entries as usize)
        .map(|i| {
            let at = entries_at + 24 * i;
            SummaryEntry {
                cutoff: bytes.u64(at).unwrap_or(0),
                min_count: bytes.u64(at + 8).unwrap_or(0),
                num_counts: bytes.u64(at + 16).unwrap_or(0),
            }
        })
        .collect();
    let summary = Summary {
        total_num_functions: field(0),
        total_num_blocks: field(1),
        max_function_count: field(2),
        max_block_count: field(3),
        max_internal_block_count: field(4),
        total_block_count: field(5),
        entries,
    };
    Ok((summary, pos + size))
}

/// The `instrprof_indexed` fuzz target's body, also replayed on the committed seeds by the
/// tests: reading every part of `data` never panics.
#[doc(hidden)]
pub fn check_fuzz_input(data: &[u8]) {
    let Ok(reader) = IndexedReader::new(data) else {
        return;
    };
    let mut records = 0usize;
    let _ = reader.read_records(&mut |_, r| records += r.counts.len());
    let _ = reader.binary_ids();
    let _ = reader.temporal_traces();
}
