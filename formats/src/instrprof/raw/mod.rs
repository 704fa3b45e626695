//! Reader for raw `.profraw` files, following `RawInstrProfReader` (InstrProfReader.cpp): 32- and
//! 64-bit, either byte order, versions 5, 7, 8, 9, 10 and 11, several profiles back to back.
//!
//! Version 11 (LLVM 23) has no released llvm-profdata to compare with. Its layout comes from
//! llvm/llvm-project main: the `INSTR_PROF_RAW_HEADER` and `INSTR_PROF_DATA` lists as the
//! runtime writes them (three header fields `NumUniformCounters`,
//! `PaddingBytesAfterUniformCounters`, `UniformCountersDelta` before `NamesSize`; record fields
//! `UniformCounterPtr` after `CounterPtr` and u16 `OffloadDeviceWaveSize` after
//! `NumValueSites`), `RawInstrProfReader` in `InstrProfReader.h` (`UniformCountersDelta`
//! decremented per record like `CountersDelta`, `readRawUniformCounters`), the offload runtime's
//! comment that uniform counters are u64s located through `UniformCounterPtr` exactly like the
//! counters, and `llvm/test/tools/llvm-profdata/malformed-uniform-counter-array.test` (a v11
//! file whose uniform-counter section follows the bitmap padding and whose three error messages
//! the checks below reproduce; a record has `NumCounters` uniform counters).
//!
//! What LLVM main does with uniform counters once read (the indexed format that stores them is
//! newer than the version 12 this project writes) could not be read in the sources available,
//! so a profile with uniform counters is refused with a message rather than merged without
//! them; its pointers are still checked first, as LLVM does. Profiles with
//! `NumUniformCounters == 0` (every host profile) are read as version 10 ones, the
//! `OffloadDeviceWaveSize` being ignored.

mod correlate;
mod data;
pub mod header;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex};

use crate::bytes::{Bytes, Endian};

use super::error::{Error, ErrorKind, Result};
use super::kind::{variant, ProfileKind};
use super::names::{decode_names, NameList};
use super::record::{Record, IPVK_INDIRECT_CALL_TARGET, IPVK_VTABLE_TARGET};
use super::value_prof::parse_block;
use super::{md5_guid, TemporalTrace, TemporalTraces};
pub use correlate::{BinarySections, Correlation};
use data::{read_vtable, vtable_record_size, DataLayout, ProfileData};
pub use header::{RawHeader, LLVM19_VERSION, SUPPORTED_VERSIONS};

/// `INSTR_PROF_RAW_MAGIC_64` (InstrProfData.inc): `\xfflprofr\x81` as a u64, 64-bit pointers.
pub const MAGIC_64: u64 = 0xff6c_7072_6f66_7281;
/// `INSTR_PROF_RAW_MAGIC_32`: `\xfflprofR\x81` as a u64, 32-bit pointers.
pub const MAGIC_32: u64 = 0xff6c_7072_6f66_5281;

/// Counters above this make LLVM warn "excessively large counter value".
pub(crate) const MAX_COUNTER_VALUE: u64 = 1 << 56;

/// (pointer size is 64 bits, byte order) from the first 8 bytes, if they are a raw magic.
pub fn detect(data: &[u8]) -> Option<(bool, Endian)> {
    let word = u64::from_le_bytes(data.get(..8)?.try_into().ok()?);
    [(MAGIC_64, true), (MAGIC_32, false)]
        .into_iter()
        .find_map(|(magic, ptr64)| {
            if word == magic {
                Some((ptr64, Endian::Little))
            } else if word == magic.swap_bytes() {
                Some((ptr64, Endian::Big))
            } else {
                None
            }
        })
}

pub(crate) fn has_format(data: &[u8]) -> bool {
    detect(data).is_some()
}

/// How to read raw profiles.
#[derive(Clone, Copy, Debug, Default)]
pub struct RawOptions {
    /// Accept only this raw version (llvm-profdata-19 accepts only 10); `None` accepts all
    /// supported versions.
    pub only_version: Option<u64>,
}

/// A raw file being read: the first header is decoded by [`RawReader::new`], every profile's
/// records by [`RawReader::read_records`].
pub struct RawReader<'a> {
    bytes: Bytes<'a>,
    ptr64: bool,
    options: RawOptions,
    first: RawHeader,
    /// Build ids of every profile read so far, in file order (`BinaryIdsSize` sections).
    pub binary_ids: Vec<Vec<u8>>,
    /// Counter values LLVM warns about (llvm-profdata counts each as an input error).
    pub warnings: Vec<Error>,
    /// (timestamp, NameRef) of functions with a temporal timestamp.
    timestamps: Vec<(u64, u64)>,
    /// The symtab of the last profile read (LLVM's reader keeps only that one).
    last_table: Option<Arc<NameTable>>,
    /// Data records and names from a binary (`--binary-file`).
    correlation: Option<Arc<Correlation>>,
}

/// Byte positions of one profile's sections.
struct Sections {
    data: usize,
    counters: usize,
    counters_end: usize,
    bitmap: usize,
    bitmap_end: usize,
    uniform_counters: usize,
    uniform_counters_end: usize,
    names: usize,
    names_end: usize,
    vtables: usize,
    vnames: usize,
    vnames_end: usize,
    value_data: usize,
}

/// A profile read with a correlation must leave the data and names to it.
fn check_correlatable(h: &RawHeader, start: usize) -> Result<()> {
    if h.num_data != 0 || h.names_size != 0 || h.counters_delta != 0 || h.names_delta != 0 {
        return Err(Error::at_byte(start, ErrorKind::UnexpectedCorrelationInfo));
    }
    Ok(())
}

fn padding_to_8(n: u64) -> u64 {
    (8 - n % 8) % 8
}

impl<'a> RawReader<'a> {
    /// Detects pointer size and byte order from the magic and decodes the first header.
    pub fn new(data: &'a [u8], options: RawOptions) -> Result<RawReader<'a>> {
        let (ptr64, endian) = detect(data).ok_or(Error::at_byte(0, ErrorKind::BadMagic))?;
        let bytes = Bytes::new(data, endian);
        let first = RawHeader::parse(bytes, 0, options.only_version)?;
        Ok(RawReader {
            bytes,
            ptr64,
            options,
            first,
            binary_ids: Vec::new(),
            warnings: Vec::new(),
            timestamps: Vec::new(),
            last_table: None,
            correlation: None,
        })
    }

    /// Reads the data records and names from `correlation` instead of the file, whose
    /// profiles must then have none: checked here for the first profile (LLVM fails to create
    /// the reader), when read for the others.
    pub fn set_correlation(&mut self, correlation: Arc<Correlation>) -> Result<()> {
        check_correlatable(&self.first, 0)?;
        self.correlation = Some(correlation);
        Ok(())
    }

    /// The first profile's header.
    pub fn header(&self) -> &RawHeader {
        &self.first
    }

    /// The file's byte order (from the magic).
    pub fn endian(&self) -> Endian {
        self.bytes.endian
    }

    /// Whether the profile was written with 64-bit pointers ([`MAGIC_64`]).
    pub fn is_64_bit(&self) -> bool {
        self.ptr64
    }

    /// The kind of the first profile (what llvm-profdata merges before reading records).
    pub fn kind(&self) -> ProfileKind {
        ProfileKind::from_raw_version(self.first.version_word)
    }

    /// The vtable names of the last profile read (`getSymtab().getVTableNames()`).
    pub fn vtable_names(&self) -> Vec<Vec<u8>> {
        self.last_table
            .as_ref()
            .map(|t| t.vtable_names().map(<[u8]>::to_vec).collect())
            .unwrap_or_default()
    }

    /// The temporal trace of this file: functions ordered by timestamp, with `weight`.
    pub fn temporal_traces(&mut self, weight: u64) -> TemporalTraces {
        if self.timestamps.is_empty() {
            return TemporalTraces::default();
        }
        self.timestamps.sort_unstable();
        TemporalTraces {
            traces: vec![TemporalTrace {
                weight,
                names: self.timestamps.iter().map(|&(_, n)| n).collect(),
            }],
            stream_size: 1,
        }
    }

    /// Checks what LLVM's `RawInstrProfReader::readHeader` checks when the reader is created:
    /// that the first profile's sections lie inside the file and its binary ids are well
    /// formed. [`RawReader::read_records`] checks the same again; callers that, like
    /// `llvm-profdata overlap`, treat a failed reader creation differently from a record error
    /// call this first.
    pub fn check_first_header(&mut self) -> Result<()> {
        let h = self.first;
        self.sections(&h, 0)?;
        let before = self.binary_ids.len();
        let checked = self.read_binary_ids(h.size, h.size + h.binary_ids_size as usize);
        self.binary_ids.truncate(before);
        checked
    }

    /// Reads every record of every profile in the file, handing each to `sink` with its name.
    /// On error, the records already handed out stay handed out (as in LLVM).
    pub fn read_records(&mut self, sink: &mut dyn FnMut(&[u8], Record)) -> Result<()> {
        self.read_records_in_place(None, &mut |table, name, record| {
            sink(table.name_or_empty(name), record.clone())
        })
    }

    /// Reads every record without allocating per record: `sink` gets the profile's name table,
    /// the record's name index in it (`None` when the symtab lacks the NameRef, which LLVM
    /// reads as an empty name) and a scratch record it may take values from. Name tables of
    /// profiles whose name sections are byte-identical are shared through `cache`.
    pub fn read_records_in_place(
        &mut self,
        cache: Option<&NameTableCache>,
        sink: &mut RecordSink<'_>,
    ) -> Result<()> {
        let mut header = self.first;
        let mut start = 0usize;
        loop {
            let next = self.read_profile(&header, start, cache, sink)?;
            match self.next_header_pos(next)? {
                None => return Ok(()),
                Some(pos) => {
                    header = RawHeader::parse(self.bytes, pos, self.options.only_version)?;
                    start = pos;
                }
            }
        }
    }

    /// Where the next concatenated profile starts, skipping zero padding (`readNextHeader`).
    fn next_header_pos(&self, mut pos: usize) -> Result<Option<usize>> {
        let data = self.bytes.data;
        while pos < data.len() && data[pos] == 0 {
            pos += 1;
        }
        if pos >= data.len() {
            return Ok(None);
        }
        if data.len() - pos < self.first.size {
            return Err(Error::malformed(pos, "not enough space for another header"));
        }
        if !pos.is_multiple_of(8) {
            return Err(Error::malformed(pos, "insufficient padding"));
        }
        let magic = if self.ptr64 { MAGIC_64 } else { MAGIC_32 };
        if self.bytes.u64(pos) != Some(magic) {
            return Err(Error::at_byte(pos, ErrorKind::BadMagic));
        }
        Ok(Some(pos))
    }

    fn sections(&self, h: &RawHeader, start: usize) -> Result<Sections> {
        let bad = |why: String| Error::at_byte(start, ErrorKind::BadHeader(why));
        let layout = DataLayout::new(h.version(), self.ptr64);
        let counter_size: u64 = if h.version_word & variant::BYTE_COVERAGE != 0 {
            1
        } else {
            8
        };
        if !h.binary_ids_size.is_multiple_of(8) {
            return Err(bad(format!(
                "binary ids size {} is not a multiple of 8",
                h.binary_ids_size
            )));
        }
        // Offsets as LLVM computes them, in 128-bit arithmetic so that no field can wrap.
        let start_u = start as u128;
        let data = start_u + h.size as u128 + u128::from(h.binary_ids_size);
        let binary_ids_end = data;
        let counters = data
            + u128::from(h.num_data) * layout.size as u128
            + u128::from(h.padding_before_counters);
        let counters_size = u128::from(h.num_counters) * u128::from(counter_size);
        let bitmap = counters + counters_size + u128::from(h.padding_after_counters);
        let uniform_counters =
            bitmap + u128::from(h.num_bitmap_bytes) + u128::from(h.padding_after_bitmap);
        // v11: u64 uniform counters whatever the counter size (0 in earlier versions).
        let uniform_counters_size = u128::from(h.num_uniform_counters) * 8;
        let names =
            uniform_counters + uniform_counters_size + u128::from(h.padding_after_uniform_counters);
        let vtables = names + u128::from(h.names_size) + u128::from(padding_to_8(h.names_size));
        let vtables_size = u128::from(h.num_vtables) * vtable_record_size(self.ptr64) as u128;
        let vnames = vtables + vtables_size + u128::from(padding_to_8(vtables_size as u64));
        let value_data =
            vnames + u128::from(h.vnames_size) + u128::from(padding_to_8(h.vnames_size));
        let len = self.bytes.len() as u128;
        if binary_ids_end > len || value_data > len {
            return Err(bad(format!(
                "the sections end at byte {value_data}, past the end of the {len}-byte file"
            )));
        }
        let u = |v: u128| v as usize;
        Ok(Sections {
            data: u(data),
            counters: u(counters),
            counters_end: u(counters + counters_size),
            bitmap: u(bitmap),
            bitmap_end: u(bitmap + u128::from(h.num_bitmap_bytes)),
            uniform_counters: u(uniform_counters),
            uniform_counters_end: u(uniform_counters + uniform_counters_size),
            names: u(names),
            names_end: u(names + u128::from(h.names_size)),
            vtables: u(vtables),
            vnames: u(vnames),
            vnames_end: u(vnames + u128::from(h.vnames_size)),
            value_data: u(value_data),
        })
    }

    fn read_binary_ids(&mut self, start: usize, end: usize) -> Result<()> {
        let mut pos = start;
        while pos < end {
            if end - pos < 8 {
                return Err(Error::malformed(
                    pos,
                    "not enough data to read binary id length",
                ));
            }
            let len = self.bytes.u64(pos).unwrap_or(0);
            pos += 8;
            if len == 0 {
                return Err(Error::malformed(pos - 8, "binary id length is 0"));
            }
            let padded = len.checked_next_multiple_of(8).unwrap_or(u64::MAX);
            if ((end - pos) as u64) < padded {
                return Err(Error::malformed(
                    pos - 8,
                    "not enough data to read binary id data",
                ));
            }
            self.binary_ids
                .push(self.bytes.data[pos..pos + len as usize].to_vec());
            pos += padded as usize;
        }
        Ok(())
    }

    /// Reads one profile starting at `start`; returns where its value data ends.
    fn read_profile(
        &mut self,
        h: &RawHeader,
        start: usize,
        cache: Option<&NameTableCache>,
        sink: &mut RecordSink<'_>,
    ) -> Result<usize> {
        let s = self.sections(h, start)?;
        self.read_binary_ids(start + h.size, start + h.size + h.binary_ids_size as usize)?;
        let layout = DataLayout::new(h.version(), self.ptr64);
        let correlation = self.correlation.clone();
        if correlation.is_some() {
            check_correlatable(h, start)?;
        }
        let (names, names_at) = match &correlation {
            Some(c) => (&c.names[..], 0),
            None => (&self.bytes.data[s.names..s.names_end], s.names),
        };
        let vnames = &self.bytes.data[s.vnames..s.vnames_end];
        let build = || NameTable::decode(names, names_at, vnames, s.vnames);
        let table = match cache {
            Some(c) => c.get_or_build(names, vnames, build)?,
            None => Arc::new(build()?),
        };
        self.last_table = Some(table.clone());
        let num_data = correlation
            .as_ref()
            .map_or(h.num_data as usize, |c| c.records.len());
        let bytes = self.bytes;
        let record_at = |i: usize| match &correlation {
            Some(c) => c.records[i],
            None => layout.read(&bytes, s.data + i * layout.size),
        };
        // Addresses only matter for value data, which most profiles lack: the map is built
        // when the first record with value sites needs it (no extra pass over the records).
        let vtables = self.vtables(h, &s);
        let build_addresses = || AddressMap::new((0..num_data).map(record_at), vtables.clone());
        let addresses = LazyAddressMap {
            map: std::cell::OnceCell::new(),
            build: &build_addresses,
        };
        let mut ctx = ProfileCursor {
            // Correlated counter pointers are offsets into the counters section already.
            relative_pointers: uses_relative_pointers(h) && correlation.is_none(),
            byte_coverage: h.version_word & variant::BYTE_COVERAGE != 0,
            temporal: h.version_word & variant::TEMPORAL_PROF != 0,
            counters_delta: h.counters_delta,
            bitmap_delta: h.bitmap_delta,
            uniform_counters_delta: h.uniform_counters_delta,
            value_data: s.value_data,
            value_kind_last: if h.version() >= 10 { 2 } else { 1 },
        };
        let hint = table.order_hint();
        let mut resolved = Vec::new();
        if hint.is_none() {
            resolved.reserve(num_data);
        }
        let mut scratch = Record::default();
        for i in 0..num_data {
            let d = &record_at(i);
            let at = if correlation.is_some() {
                s.data
            } else {
                s.data + i * layout.size
            };
            let name = match hint.as_deref().and_then(|h| h.get(i)) {
                Some(&(name_ref, index)) if name_ref == d.name_ref => {
                    (index != u32::MAX).then_some(index)
                }
                _ => table.find(d.name_ref),
            };
            if hint.is_none() {
                resolved.push((d.name_ref, name.unwrap_or(u32::MAX)));
            }
            self.read_record(
                &mut ctx,
                d,
                at,
                &s,
                table.name_or_empty(name),
                &addresses,
                &mut scratch,
            )?;
            sink(&table, name, &mut scratch);
            // advanceData(): v8+ counter and bitmap pointers are relative to their own record.
            if ctx.relative_pointers {
                ctx.counters_delta = ctx.counters_delta.wrapping_sub(layout.size as u64);
                ctx.bitmap_delta = ctx.bitmap_delta.wrapping_sub(layout.size as u64);
                ctx.uniform_counters_delta =
                    ctx.uniform_counters_delta.wrapping_sub(layout.size as u64);
            }
        }
        if hint.is_none() {
            table.set_order_hint(resolved);
        }
        Ok(ctx.value_data)
    }

    fn vtables(&self, h: &RawHeader, s: &Sections) -> Vec<(u64, u64, u64)> {
        let size = vtable_record_size(self.ptr64);
        (0..h.num_vtables as usize)
            .map(|i| read_vtable(&self.bytes, s.vtables + i * size, self.ptr64))
            .map(|v| {
                (
                    v.pointer,
                    v.pointer.wrapping_add(u64::from(v.size)),
                    v.name_hash,
                )
            })
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn read_record(
        &mut self,
        ctx: &mut ProfileCursor,
        d: &ProfileData,
        at: usize,
        s: &Sections,
        name: &[u8],
        addresses: &LazyAddressMap<'_>,
        record: &mut Record,
    ) -> Result<()> {
        record.hash = d.func_hash;
        self.read_counts(ctx, d, at, s, name, &mut record.counts)?;
        self.read_bitmap(ctx, d, at, s, &mut record.bitmap)?;
        check_uniform_counters(ctx, d, at, s)?;
        for sites in record.values.iter_mut().filter(|s| !s.is_empty()) {
            sites.clear();
        }
        if d.num_value_sites.iter().any(|&n| n != 0) {
            let block = parse_block(self.bytes, ctx.value_data, ctx.value_kind_last)?;
            for (kind, mut sites) in block.kinds {
                if kind == IPVK_INDIRECT_CALL_TARGET || kind == IPVK_VTABLE_TARGET {
                    for v in sites.iter_mut().flatten() {
                        v.value = addresses.get().remap(kind, v.value);
                    }
                }
                record.values[kind].extend(sites);
            }
            ctx.value_data += block.total_size as usize;
        }
        Ok(())
    }

    fn read_counts(
        &mut self,
        ctx: &ProfileCursor,
        d: &ProfileData,
        at: usize,
        s: &Sections,
        name: &[u8],
        counts: &mut Vec<u64>,
    ) -> Result<()> {
        counts.clear();
        let counter_size = if ctx.byte_coverage { 1 } else { 8 };
        if d.num_counters == 0 {
            return Err(Error::malformed(at, "number of counters is zero"));
        }
        let offset = d.counter_ptr.wrapping_sub(ctx.counters_delta) as i64;
        let section_len = (s.counters_end - s.counters) as i64;
        let extent = Extent {
            what: "counter",
            items: "counters",
            item_size: counter_size as u64,
        };
        let offset = extent.check(at, offset, section_len, u64::from(d.num_counters))?;
        let base = s.counters + offset;
        counts.reserve(d.num_counters as usize);
        if !ctx.temporal && !ctx.byte_coverage {
            return self.read_u64_counts(base, d.num_counters as usize, name, counts);
        }
        let mut i = 0usize;
        while i < d.num_counters as usize {
            let p = base + i * counter_size;
            if i == 0 && ctx.temporal {
                let ts = self.bytes.u64(p).unwrap_or(0);
                if ts != 0 && ts != u64::MAX {
                    self.timestamps.push((ts, d.name_ref));
                }
                // The timestamp is 8 bytes even when the other counters are single bytes.
                i += if ctx.byte_coverage { 8 } else { 1 };
                continue;
            }
            if ctx.byte_coverage {
                counts.push(u64::from(self.bytes.data.get(p) == Some(&0)));
            } else {
                let v = self.bytes.u64(p).unwrap_or(0);
                if v > MAX_COUNTER_VALUE {
                    self.warnings.push(Error::at_byte(
                        p,
                        ErrorKind::CounterValueTooLarge {
                            function: String::from_utf8_lossy(name).into_owned(),
                            value: v,
                        },
                    ));
                }
                counts.push(v);
            }
            i += 1;
        }
        Ok(())
    }

    /// The common case: 8-byte counters and no timestamp, decoded in one pass.
    fn read_u64_counts(
        &mut self,
        base: usize,
        n: usize,
        name: &[u8],
        counts: &mut Vec<u64>,
    ) -> Result<()> {
        // The caller checked that the counters lie inside the counters section.
        let bytes = &self.bytes.data[base..base + 8 * n];
        let endian = self.bytes.endian;
        counts.extend(
            bytes
                .chunks_exact(8)
                .map(|c| endian.u64(c.try_into().unwrap_or_default())),
        );
        if counts.iter().any(|&v| v > MAX_COUNTER_VALUE) {
            for (i, &v) in counts
                .iter()
                .enumerate()
                .filter(|(_, &v)| v > MAX_COUNTER_VALUE)
            {
                self.warnings.push(Error::at_byte(
                    base + 8 * i,
                    ErrorKind::CounterValueTooLarge {
                        function: String::from_utf8_lossy(name).into_owned(),
                        value: v,
                    },
                ));
            }
        }
        Ok(())
    }

    fn read_bitmap(
        &self,
        ctx: &ProfileCursor,
        d: &ProfileData,
        at: usize,
        s: &Sections,
        bitmap: &mut Vec<u8>,
    ) -> Result<()> {
        bitmap.clear();
        if d.num_bitmap_bytes == 0 {
            return Ok(());
        }
        let offset = d.bitmap_ptr.wrapping_sub(ctx.bitmap_delta) as i64;
        let section_len = (s.bitmap_end - s.bitmap) as i64;
        let extent = Extent {
            what: "bitmap",
            items: "bitmap bytes",
            item_size: 1,
        };
        let offset = extent.check(at, offset, section_len, u64::from(d.num_bitmap_bytes))?;
        let base = s.bitmap + offset;
        bitmap.extend_from_slice(&self.bytes.data[base..base + d.num_bitmap_bytes as usize]);
        Ok(())
    }
}

/// Where a record's items lie in one of the profile's sections, for LLVM's checks and messages:
/// `what` names the offset ("counter offset …"), `items` the count ("number of counters …").
struct Extent {
    what: &'static str,
    items: &'static str,
    item_size: u64,
}

impl Extent {
    /// Checks that `count` items at `offset` (the record's pointer less the section's delta)
    /// lie inside a section of `section_len` bytes; returns the offset.
    fn check(&self, at: usize, offset: i64, section_len: i64, count: u64) -> Result<usize> {
        let what = self.what;
        if offset < 0 {
            return Err(Error::malformed(
                at,
                format!("{what} offset {offset} is negative"),
            ));
        }
        if offset >= section_len {
            return Err(Error::malformed(
                at,
                format!(
                    "{what} offset {offset} is greater than the maximum {what} offset {}",
                    section_len - 1
                ),
            ));
        }
        let max = (section_len - offset) as u64 / self.item_size;
        if count > max {
            let items = self.items;
            return Err(Error::malformed(
                at,
                format!(
                    "number of {items} {count} is greater than the maximum number of {items} {max}"
                ),
            ));
        }
        Ok(offset as usize)
    }
}

/// v11: checks a record's uniform counters as LLVM main does (`NumCounters` u64s at
/// `UniformCounterPtr`, inside the uniform-counter section, same messages), then refuses them:
/// see the module documentation. A profile without a uniform-counter section has nothing to check.
fn check_uniform_counters(
    ctx: &ProfileCursor,
    d: &ProfileData,
    at: usize,
    s: &Sections,
) -> Result<()> {
    let section_len = (s.uniform_counters_end - s.uniform_counters) as i64;
    if section_len == 0 {
        return Ok(());
    }
    let offset = d
        .uniform_counter_ptr
        .wrapping_sub(ctx.uniform_counters_delta) as i64;
    let extent = Extent {
        what: "uniform counter",
        items: "uniform counters",
        item_size: 8,
    };
    extent.check(at, offset, section_len, u64::from(d.num_counters))?;
    Err(Error::at_byte(
        at,
        ErrorKind::UnsupportedFeature(format!(
            "raw version 11 uniform counters ({} in this profile, wave size {}): LLVM stores them \
             in an indexed version newer than 12, which profmill does not write; refusing \
             rather than dropping them",
            (s.uniform_counters_end - s.uniform_counters) / 8,
            d.offload_device_wave_size
        )),
    ))
}

/// Whether counter and bitmap pointers are relative to their data record (and so shift by one
/// record size per record). They are from v8 on and absolute in v5. Version 7 files exist in
/// both forms (LLVM 13's own test inputs include one of each): absolute files hold addresses in
/// both deltas, close to each other, while a relative CountersDelta is a small section distance.
fn uses_relative_pointers(h: &RawHeader) -> bool {
    match h.version() {
        0..=6 => false,
        7 => {
            let counters = h.counters_delta as i64;
            let to_names = counters.wrapping_sub(h.names_delta as i64).unsigned_abs();
            to_names >= counters.unsigned_abs()
        }
        _ => true,
    }
}

/// Per-profile reading state that advances record by record.
struct ProfileCursor {
    relative_pointers: bool,
    byte_coverage: bool,
    temporal: bool,
    counters_delta: u64,
    bitmap_delta: u64,
    uniform_counters_delta: u64,
    value_data: usize,
    value_kind_last: usize,
}

/// Receives each record read in place: the profile's name table, the record's name index in it
/// and the (reused) record.
pub(crate) type RecordSink<'s> = dyn FnMut(&Arc<NameTable>, Option<u32>, &mut Record) + 's;

/// (NameRef, name index) of each data record, in file order.
type OrderHint = Arc<[(u64, u32)]>;

/// A cached table and the name-section bytes it was decoded from.
type CachedTable = (Box<[u8]>, Arc<NameTable>);

/// NameRef → name over a profile's function and vtable names (`InstrProfSymtab`).
#[derive(Debug)]
pub struct NameTable {
    /// NameRefs of the data records of the first profile read with this table and their name
    /// indices: profiles of one binary list their records in the same order, so later ones
    /// resolve names by a sequential comparison instead of a hash lookup.
    order_hint: Mutex<Option<OrderHint>>,
    names: NameList,
    /// Names from this index on come from the vtable names section.
    first_vtable_name: usize,
    /// MD5 → index in `names`; the first name wins a hash.
    by_hash: HashMap<u64, u32, BuildHasherDefault<Md5Hasher>>,
}

/// MD5 values are uniformly distributed already: hashing them again only costs time.
#[derive(Default)]
struct Md5Hasher(u64);

impl Hasher for Md5Hasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

impl NameTable {
    /// Decodes a profile's names and vtable names sections (at file offsets `at`, `vat`).
    pub fn decode(names: &[u8], at: usize, vnames: &[u8], vat: usize) -> Result<NameTable> {
        let mut list = decode_names(names, at)?;
        let first_vtable_name = list.len();
        list.append(decode_names(vnames, vat)?);
        let mut by_hash = HashMap::with_capacity_and_hasher(list.len(), Default::default());
        for (i, n) in list.iter().enumerate() {
            by_hash.entry(md5_guid(n)).or_insert(i as u32);
        }
        Ok(NameTable {
            order_hint: Mutex::new(None),
            names: list,
            first_vtable_name,
            by_hash,
        })
    }

    /// The names of the vtable names section.
    pub fn vtable_names(&self) -> impl Iterator<Item = &[u8]> {
        self.names.iter().skip(self.first_vtable_name)
    }

    fn order_hint(&self) -> Option<OrderHint> {
        self.order_hint
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_order_hint(&self, order: Vec<(u64, u32)>) {
        let mut hint = self.order_hint.lock().unwrap_or_else(|e| e.into_inner());
        if hint.is_none() {
            *hint = Some(order.into());
        }
    }

    /// The index of the name whose MD5 is `hash`.
    pub fn find(&self, hash: u64) -> Option<u32> {
        self.by_hash.get(&hash).copied()
    }

    /// Name `index` (decode order); empty past the end.
    pub fn name(&self, index: u32) -> &[u8] {
        self.names.get(index as usize).unwrap_or_default()
    }

    /// The name, or the empty name LLVM reads for an unknown NameRef.
    pub(crate) fn name_or_empty(&self, index: Option<u32>) -> &[u8] {
        index.map_or(&[], |i| self.name(i))
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether the table has no names.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// Shares decoded name tables between raw profiles of the same binary: their name sections
/// are byte-identical, so decompressing and hashing them once is enough.
#[derive(Default)]
pub struct NameTableCache {
    tables: Mutex<HashMap<u64, Vec<CachedTable>>>,
}

/// Distinct binaries remembered; beyond that, tables are decoded per file.
const MAX_CACHED_TABLES: usize = 64;

impl NameTableCache {
    /// An empty cache.
    pub fn new() -> NameTableCache {
        NameTableCache::default()
    }

    fn key(names: &[u8], vnames: &[u8]) -> Box<[u8]> {
        let mut key = Vec::with_capacity(8 + names.len() + vnames.len());
        key.extend_from_slice(&(names.len() as u64).to_le_bytes());
        key.extend_from_slice(names);
        key.extend_from_slice(vnames);
        key.into_boxed_slice()
    }

    pub(crate) fn get_or_build(
        &self,
        names: &[u8],
        vnames: &[u8],
        build: impl FnOnce() -> Result<NameTable>,
    ) -> Result<Arc<NameTable>> {
        let key = Self::key(names, vnames);
        let hash = xxhash_rust::xxh3::xxh3_64(&key);
        let lock = || self.tables.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(bucket) = lock().get(&hash) {
            if let Some((_, table)) = bucket.iter().find(|(k, _)| **k == *key) {
                return Ok(table.clone());
            }
        }
        let table = Arc::new(build()?);
        let mut tables = lock();
        if tables.values().map(Vec::len).sum::<usize>() < MAX_CACHED_TABLES {
            tables.entry(hash).or_default().push((key, table.clone()));
        }
        Ok(table)
    }
}

/// Function address → NameRef, and vtable address range → vtable name hash, for value remapping.
#[derive(Default)]
struct AddressMap {
    functions: Vec<(u64, u64)>,
    /// (start, end inclusive, name hash), sorted by start.
    vtables: Vec<(u64, u64, u64)>,
}

/// The address map of one profile, built on first use.
struct LazyAddressMap<'f> {
    map: std::cell::OnceCell<AddressMap>,
    build: &'f dyn Fn() -> AddressMap,
}

impl LazyAddressMap<'_> {
    fn get(&self) -> &AddressMap {
        self.map.get_or_init(self.build)
    }
}

impl AddressMap {
    fn new(
        records: impl Iterator<Item = ProfileData>,
        mut vtables: Vec<(u64, u64, u64)>,
    ) -> AddressMap {
        let mut functions: Vec<(u64, u64)> = records
            .filter(|d| d.function_pointer != 0)
            .map(|d| (d.function_pointer, d.name_ref))
            .collect();
        functions.sort_unstable();
        functions.dedup();
        vtables.sort_unstable();
        AddressMap { functions, vtables }
    }

    /// The value LLVM stores: the callee's NameRef (0 for an unknown address), or the vtable's
    /// name hash.
    fn remap(&self, kind: usize, address: u64) -> u64 {
        if kind == IPVK_INDIRECT_CALL_TARGET {
            let i = self.functions.partition_point(|&(a, _)| a < address);
            match self.functions.get(i) {
                Some(&(a, name)) if a == address => name,
                _ => 0,
            }
        } else {
            let i = self
                .vtables
                .partition_point(|&(start, _, _)| start <= address);
            match i.checked_sub(1).map(|i| self.vtables[i]) {
                Some((_, end, hash)) if address <= end => hash,
                _ => 0,
            }
        }
    }
}
