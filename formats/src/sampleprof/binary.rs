//! LLVM's binary sample profiles (LLVM 19): raw binary (`SPF_Binary`, magic "SPROF42\xff") and
//! extensible binary (`SPF_Ext_Binary`, magic "SPROF42\x04"), reader and writer.
//!
//! Writers reproduce `llvm-profdata-19 merge --sample --binary|--extbinary` byte for byte
//! with one documented exception: LLVM writes the FuncMetadata section (probe checksums and
//! attributes) in the iteration order of its `std::unordered_map` of profiles, which depends
//! on libstdc++'s hashing and bucket history. We write it in context order instead; the section
//! has the same size and reads back to the same profile (tests compare after reading back).
//! With one top-level profile, or without metadata, the output is byte-identical.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::error::{Error, Result};
use super::llvm_magic;
use super::model::{Context, ContextFrame, FunctionId, FunctionSamples, LineLocation, Profile};
use super::summary::{self, Summary};
use crate::bytes::{write_uleb128, Endian, Reader};

pub(crate) const VERSION: u64 = 103;

/// ExtBinary section types.
pub mod sec {
    /// `SecProfSummary`: the profile summary.
    pub const SUMMARY: u64 = 1;
    /// `SecNameTable`: the function name table (strings or MD5s).
    pub const NAME_TABLE: u64 = 2;
    /// `SecProfileSymbolList`: names of all functions in the binary.
    pub const SYMBOL_LIST: u64 = 3;
    /// `SecFuncOffsetTable`: where each function's profile starts in the LBR section.
    pub const FUNC_OFFSET: u64 = 4;
    /// `SecFuncMetadata`: per-function checksums and attributes.
    pub const FUNC_METADATA: u64 = 5;
    /// `SecCSNameTable`: the calling-context table of CS profiles.
    pub const CS_NAME_TABLE: u64 = 6;
    /// `SecLBRProfile` (`SecFuncProfileFirst`): the function profiles.
    pub const LBR_PROFILE: u64 = 32;
}

/// ExtBinary section flags: common ones in the low 32 bits, section-specific ones above.
pub mod flag {
    /// `SecFlagCompress` (all sections): the section is zlib-compressed.
    pub const COMPRESS: u64 = 1;
    /// `SecFlagFlat` (all sections): written flat, without nested profiles.
    pub const FLAT: u64 = 2;
    /// `SecFlagMD5Name` (NAME_TABLE): names are MD5 GUIDs.
    pub const MD5_NAME: u64 = 1 << 32;
    /// `SecFlagFixedLengthMD5` (NAME_TABLE): the GUIDs are fixed 8-byte little-endian words.
    pub const FIXED_LENGTH_MD5: u64 = 2 << 32;
    /// `SecFlagUniqSuffix` (NAME_TABLE): names carry `.__uniq.` suffixes.
    pub const UNIQ_SUFFIX: u64 = 4 << 32;
    /// `SecFlagPartial` (SUMMARY): a partial profile.
    pub const PARTIAL: u64 = 1 << 32;
    /// `SecFlagFullContext` (SUMMARY): a context-sensitive (CSSPGO) profile.
    pub const FULL_CONTEXT: u64 = 2 << 32;
    /// `SecFlagFSDiscriminator` (SUMMARY): flow-sensitive discriminators.
    pub const FS_DISCRIMINATOR: u64 = 4 << 32;
    /// `SecFlagIsPreInlined` (SUMMARY): some context should be inlined.
    pub const PRE_INLINED: u64 = 16 << 32;
    /// `SecFlagIsProbeBased` (FUNC_METADATA): pseudo-probe profile with checksums.
    pub const PROBE_BASED: u64 = 1 << 32;
    /// `SecFlagHasAttribute` (FUNC_METADATA): the section carries `!Attributes`.
    pub const HAS_ATTRIBUTE: u64 = 2 << 32;
    /// `SecFlagOrdered` (FUNC_OFFSET): the offset table is in profile order.
    pub const ORDERED: u64 = 1 << 32;
}

use super::MAX_NESTING;

// ---------------------------------------------------------------------------------------------
// Reading

/// The file's [`Reader`] (over the file, or a decompressed section reported against the
/// section's file offset), with errors that name the field being read.
struct Rd<'a> {
    r: Reader<'a>,
}

impl<'a> Rd<'a> {
    fn new(buf: &'a [u8], origin: u64) -> Self {
        Rd {
            r: Reader::at(buf, Endian::Little, origin),
        }
    }

    fn offset(&self) -> u64 {
        self.r.offset()
    }

    fn truncated(&self, what: &'static str) -> Error {
        Error::Truncated {
            offset: self.offset(),
            what,
        }
    }

    fn malformed(&self, what: impl Into<String>) -> Error {
        Error::Malformed {
            offset: self.offset(),
            what: what.into(),
        }
    }

    fn at_end(&self) -> bool {
        self.r.is_empty()
    }

    fn uleb(&mut self, what: &'static str) -> Result<u64> {
        self.r.uleb128().map_err(|e| Error::read(e, what))
    }

    /// LLVM `readNumber<uint32_t>`: a ULEB128 that must fit 32 bits.
    fn uleb32(&mut self, what: &'static str) -> Result<u32> {
        let start = self.r;
        let v = self.uleb(what)?;
        u32::try_from(v).map_err(|_| {
            self.r = start;
            self.malformed(format!("{what}: {v} does not fit 32 bits"))
        })
    }

    fn u64le(&mut self, what: &'static str) -> Result<u64> {
        self.r.u64().map_err(|e| Error::read(e, what))
    }

    fn c_string(&mut self, what: &'static str) -> Result<&'a [u8]> {
        self.r.c_str().map_err(|e| Error::read(e, what))
    }

    /// Consumes and returns the bytes left.
    fn take_rest(&mut self) -> &'a [u8] {
        let rest = self.r.rest();
        self.r.skip(rest.len()).unwrap_or_default();
        rest
    }
}

/// State shared while decoding one file.
#[derive(Default)]
struct Decoder {
    names: Vec<FunctionId>,
    contexts: Vec<Arc<[ContextFrame]>>,
    cs: bool,
    profile: Profile,
}

impl Decoder {
    fn name(&self, rd: &mut Rd<'_>) -> Result<FunctionId> {
        let at = rd.offset();
        let idx = rd.uleb("name index")?;
        self.names
            .get(idx as usize)
            .cloned()
            .ok_or_else(|| Error::Malformed {
                offset: at,
                what: format!(
                    "name index {idx} is outside the name table of {} entries (Truncated function name table)",
                    self.names.len()
                ),
            })
    }

    /// A top-level context: a CS name table index in CS profiles, else a name index.
    fn context(&self, rd: &mut Rd<'_>) -> Result<Context> {
        if !self.cs {
            return Ok(Context::Plain(self.name(rd)?));
        }
        let at = rd.offset();
        let idx = rd.uleb("context index")?;
        self.contexts
            .get(idx as usize)
            .map(|c| Context::Cs(c.clone()))
            .ok_or_else(|| Error::Malformed {
                offset: at,
                what: format!(
                    "context index {idx} is outside the CS name table of {} entries",
                    self.contexts.len()
                ),
            })
    }

    fn string_name_table(&mut self, rd: &mut Rd<'_>) -> Result<()> {
        let n = rd.uleb("name table size")?;
        self.names.clear();
        for _ in 0..n {
            let s = rd.c_string("name table string")?;
            self.names.push(FunctionId::name(s));
        }
        Ok(())
    }

    fn location(rd: &mut Rd<'_>, check_line: bool) -> Result<LineLocation> {
        let at = rd.offset();
        let line = rd.uleb("line offset")?;
        if check_line && line > 0xFFFF {
            return Err(Error::Malformed {
                offset: at,
                what: format!("line offset {line} exceeds 0xFFFF (Illegal line offset)"),
            });
        }
        let disc = rd.uleb("discriminator")?;
        // LLVM stores both in 32 bits (truncating); the line was checked above.
        Ok(LineLocation::new(line as u32, disc as u32))
    }

    /// `Body` of a function record (after its name): totals, records, inlined callees.
    fn body(&self, rd: &mut Rd<'_>, fs: &mut FunctionSamples, depth: usize) -> Result<()> {
        if depth > MAX_NESTING {
            return Err(rd.malformed(format!("inlining nested deeper than {MAX_NESTING}")));
        }
        let total = rd.uleb("total samples")?;
        fs.add_total(total, 1);
        let n_records = rd.uleb32("record count")?;
        for _ in 0..n_records {
            let loc = Self::location(rd, true)?;
            let count = rd.uleb("sample count")?;
            let n_targets = rd.uleb32("call target count")?;
            let rec = fs.body.entry(loc).or_default();
            for _ in 0..n_targets {
                let t = self.name(rd)?;
                let c = rd.uleb("call target count")?;
                rec.add_target(t, c, 1);
            }
            rec.add_count(count, 1);
        }
        let n_callsites = rd.uleb32("callsite count")?;
        for _ in 0..n_callsites {
            let loc = Self::location(rd, false)?;
            let callee = self.name(rd)?;
            let child = fs.callee_mut(loc, callee);
            self.body(rd, child, depth + 1)?;
        }
        Ok(())
    }

    /// One top-level record: head samples, context, body.
    fn function(&mut self, rd: &mut Rd<'_>) -> Result<()> {
        let head = rd.uleb("head samples")?;
        let ctx = self.context(rd)?;
        let mut fs = self.profile.functions.remove(&ctx).unwrap_or_default();
        fs.add_head(head, 1);
        let r = self.body(rd, &mut fs, 0);
        self.profile.functions.insert(ctx, fs);
        r
    }

    fn summary(rd: &mut Rd<'_>) -> Result<Summary> {
        let mut s = Summary {
            total_count: rd.uleb("summary total count")?,
            max_count: rd.uleb("summary max count")?,
            max_function_count: rd.uleb("summary max function count")?,
            num_counts: rd.uleb("summary count number")?,
            num_functions: rd.uleb("summary function number")?,
            entries: Vec::new(),
        };
        let n = rd.uleb("summary entry number")?;
        for _ in 0..n {
            let cutoff = rd.uleb("summary cutoff")?;
            let min_count = rd.uleb("summary min count")?;
            let num_counts = rd.uleb("summary count number")?;
            s.entries.push(summary::SummaryEntry {
                cutoff: cutoff as u32,
                min_count,
                num_counts,
            });
        }
        Ok(s)
    }

    fn magic(rd: &mut Rd<'_>, format_byte: u8) -> Result<()> {
        let m = rd.uleb("magic")?;
        if m != llvm_magic(format_byte) {
            return Err(Error::UnrecognizedFormat);
        }
        let at = rd.offset();
        let v = rd.uleb("version")?;
        if v != VERSION {
            return Err(Error::UnsupportedVersion {
                offset: at,
                version: v,
            });
        }
        Ok(())
    }
}

/// Reads a raw binary profile.
pub fn read_raw(data: &[u8]) -> Result<Profile> {
    let mut rd = Rd::new(data, 0);
    Decoder::magic(&mut rd, 0xFF)?;
    Decoder::summary(&mut rd)?;
    let mut d = Decoder::default();
    d.string_name_table(&mut rd)?;
    while !rd.at_end() {
        d.function(&mut rd)?;
    }
    Ok(d.profile)
}

/// One entry of the ExtBinary section header table (LLVM `SecHdrTableEntry`), four u64 little-endian words.
#[derive(Clone, Copy, Debug)]
pub struct SectionEntry {
    /// `Type`: a [`sec`] value.
    pub kind: u64,
    /// `Flags`: [`flag`] bits (section-specific ones shifted left by 32).
    pub flags: u64,
    /// `Offset`: the section's start, in bytes from the start of the file.
    pub offset: u64,
    /// `Size`: the section's length in bytes (compressed length if [`flag::COMPRESS`]).
    pub size: u64,
}

/// The section header table of an ExtBinary profile.
pub fn read_section_table(data: &[u8]) -> Result<Vec<SectionEntry>> {
    let mut rd = Rd::new(data, 0);
    Decoder::magic(&mut rd, 0x04)?;
    let n = rd.u64le("section count")?;
    if n > (data.len() / 32) as u64 {
        return Err(rd.truncated("section header table"));
    }
    (0..n)
        .map(|_| {
            Ok(SectionEntry {
                kind: rd.u64le("section type")?,
                flags: rd.u64le("section flags")?,
                offset: rd.u64le("section offset")?,
                size: rd.u64le("section size")?,
            })
        })
        .collect()
}

/// Inflates a compressed section: ULEB uncompressed size, ULEB compressed size, zlib stream.
fn inflate(section: &[u8], origin: u64) -> Result<Vec<u8>> {
    let mut rd = Rd::new(section, origin);
    let size = rd.uleb("uncompressed size")?;
    let csize = rd.uleb("compressed size")?;
    let stream = usize::try_from(csize)
        .ok()
        .and_then(|n| rd.r.rest().get(..n))
        .ok_or_else(|| rd.truncated("compressed section"))?;
    // Never trust the declared size for the allocation; inflate at most that many bytes.
    let mut out = Vec::with_capacity((size as usize).min(stream.len().saturating_mul(16)));
    let mut z = flate2::read::ZlibDecoder::new(stream);
    use std::io::Read;
    (&mut z)
        .take(size)
        .read_to_end(&mut out)
        .map_err(|e| Error::Zlib {
            offset: origin,
            message: e.to_string(),
            source: Some(e.into()),
        })?;
    if out.len() as u64 != size {
        return Err(Error::Zlib {
            offset: origin,
            message: format!("inflated {} bytes, header says {size}", out.len()),
            source: None,
        });
    }
    Ok(out)
}

/// Reads an ExtBinary profile, section by section in header order; empty and unknown
/// sections are skipped, as LLVM does.
pub fn read_ext(data: &[u8]) -> Result<Profile> {
    let table = read_section_table(data)?;
    let mut d = Decoder::default();
    for e in &table {
        if e.size == 0 {
            continue;
        }
        let section = usize::try_from(e.offset)
            .ok()
            .zip(usize::try_from(e.size).ok())
            .and_then(|(o, s)| data.get(o..o.checked_add(s)?))
            .ok_or(Error::Truncated {
                offset: e.offset,
                what: "section (offset + size past the end of the file)",
            })?;
        let inflated;
        let buf = if e.flags & flag::COMPRESS != 0 {
            inflated = inflate(section, e.offset)?;
            &inflated[..]
        } else {
            section
        };
        let mut rd = Rd::new(buf, e.offset);
        d.section(&mut rd, e)?;
        if !rd.at_end() {
            return Err(Error::Malformed {
                offset: e.offset,
                what: format!(
                    "section of type {} has {} bytes, {} were read (Malformed sample profile data)",
                    e.kind,
                    buf.len(),
                    buf.len() - rd.r.len()
                ),
            });
        }
    }
    Ok(d.profile)
}

impl Decoder {
    fn section(&mut self, rd: &mut Rd<'_>, e: &SectionEntry) -> Result<()> {
        match e.kind {
            sec::SUMMARY => {
                Self::summary(rd)?;
                let k = &mut self.profile.kind;
                self.profile.partial |= e.flags & flag::PARTIAL != 0;
                if e.flags & flag::FULL_CONTEXT != 0 {
                    k.cs = true;
                    self.cs = true;
                }
                k.preinlined |= e.flags & flag::PRE_INLINED != 0;
                k.fs |= e.flags & flag::FS_DISCRIMINATOR != 0;
            }
            sec::NAME_TABLE => self.name_table_section(rd, e.flags)?,
            sec::CS_NAME_TABLE => self.cs_name_table(rd)?,
            sec::LBR_PROFILE => {
                while !rd.at_end() {
                    self.function(rd)?;
                }
            }
            sec::FUNC_METADATA => {
                let probe = e.flags & flag::PROBE_BASED != 0;
                self.profile.kind.probe = probe;
                let attrs = e.flags & flag::HAS_ATTRIBUTE != 0;
                while !rd.at_end() {
                    let ctx = self.context(rd)?;
                    let mut top = self.profile.functions.remove(&ctx);
                    let r = self.metadata(rd, top.as_mut(), probe, attrs, 0);
                    if let Some(fs) = top {
                        self.profile.functions.insert(ctx, fs);
                    }
                    r?;
                }
            }
            sec::SYMBOL_LIST => {
                for s in rd.take_rest().split(|&b| b == 0) {
                    if !s.is_empty() {
                        self.profile.symbol_list.insert(Arc::from(s));
                    }
                }
            }
            // The offset table only serves lazy loading; like LLVM's tools, read everything.
            _ => {
                rd.take_rest();
            }
        }
        Ok(())
    }

    fn name_table_section(&mut self, rd: &mut Rd<'_>, flags: u64) -> Result<()> {
        if flags & flag::FIXED_LENGTH_MD5 != 0 {
            let n = rd.uleb("name table size")?;
            let bytes = n
                .checked_mul(8)
                .filter(|&b| b <= rd.r.len() as u64)
                .ok_or_else(|| rd.truncated("fixed-length MD5 name table"))?;
            self.names.clear();
            for _ in 0..bytes / 8 {
                self.names.push(FunctionId::Hash(rd.u64le("MD5 name")?));
            }
        } else if flags & flag::MD5_NAME != 0 {
            let n = rd.uleb("name table size")?;
            self.names.clear();
            for _ in 0..n {
                self.names.push(FunctionId::Hash(rd.uleb("MD5 name")?));
            }
        } else {
            self.string_name_table(rd)?;
        }
        Ok(())
    }

    fn cs_name_table(&mut self, rd: &mut Rd<'_>) -> Result<()> {
        let n = rd.uleb("CS name table size")?;
        self.contexts.clear();
        for _ in 0..n {
            let frames = rd.uleb32("context frame count")?;
            let mut v = Vec::with_capacity((frames as usize).min(1024));
            for _ in 0..frames {
                let func = self.name(rd)?;
                let loc = Self::location(rd, true)?;
                v.push(ContextFrame { func, loc });
            }
            if v.is_empty() {
                return Err(rd.malformed("empty calling context in the CS name table"));
            }
            self.contexts.push(Arc::from(v));
        }
        Ok(())
    }

    /// Per-function metadata; `fs` is `None` for a context without samples (then parsed and
    /// dropped, like LLVM).
    fn metadata(
        &self,
        rd: &mut Rd<'_>,
        mut fs: Option<&mut FunctionSamples>,
        probe: bool,
        attrs: bool,
        depth: usize,
    ) -> Result<()> {
        if rd.at_end() {
            return Ok(());
        }
        if depth > MAX_NESTING {
            return Err(rd.malformed(format!("metadata nested deeper than {MAX_NESTING}")));
        }
        if probe {
            let c = rd.uleb("CFG checksum")?;
            if let Some(f) = fs.as_deref_mut() {
                f.checksum = c;
            }
        }
        if attrs {
            let a = rd.uleb32("attributes")?;
            if let Some(f) = fs.as_deref_mut() {
                f.attributes = a;
            }
        }
        if !self.cs {
            let n = rd.uleb32("metadata callsite count")?;
            for _ in 0..n {
                let loc = Self::location(rd, false)?;
                let callee = self.name(rd)?;
                let child = fs.as_deref_mut().map(|f| f.callee_mut(loc, callee));
                self.metadata(rd, child, probe, attrs, depth + 1)?;
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Writing

/// `llvm-profdata merge --extbinary` options that change the bytes.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExtBinaryOptions {
    /// `--use-md5`: a fixed-length MD5 name table.
    pub use_md5: bool,
    /// `--compress-all-sections`.
    pub compress_all: bool,
    /// `--gen-partial-profile`.
    pub partial: bool,
    /// `--split-layout` (llvm-profdata 20+): functions with inlined callees and functions
    /// without them in two LBR sections (the second flagged flat), each with its own function
    /// offset table, and no CS name table. Not defined for context-sensitive profiles (LLVM 22
    /// writes an unreadable file there), so refused for them.
    pub split_layout: bool,
}

/// A fast hasher for name lookups (names are hashed once per occurrence while encoding).
type NameHasher = std::hash::BuildHasherDefault<xxhash_rust::xxh3::Xxh3>;
type NameIndex = hashbrown::HashMap<FunctionId, u64, NameHasher>;

/// Every name the name table must hold (LLVM `addContext` + `addNames`), sorted.
fn collect_names(profile: &Profile) -> Vec<FunctionId> {
    let mut names: hashbrown::HashSet<FunctionId, NameHasher> = Default::default();
    for (ctx, fs) in &profile.functions {
        match ctx {
            Context::Plain(f) => {
                names.insert(f.clone());
            }
            Context::Cs(frames) => {
                for fr in frames.iter() {
                    names.insert(fr.func.clone());
                }
            }
        }
        fs.visit_names(&mut |n| {
            if !names.contains(n) {
                names.insert(n.clone());
            }
        });
    }
    let mut sorted: Vec<FunctionId> = names.into_iter().collect();
    sorted.sort_unstable();
    sorted
}

struct Encoder {
    /// The name table, in order.
    table: Vec<FunctionId>,
    names: NameIndex,
    contexts: BTreeMap<Context, u64>,
}

impl Encoder {
    fn new(profile: &Profile) -> Self {
        let table = collect_names(profile);
        let names = table
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i as u64))
            .collect();
        let contexts = profile
            .functions
            .keys()
            .filter(|c| c.is_cs())
            .cloned()
            .enumerate()
            .map(|(i, c)| (c, i as u64))
            .collect();
        Encoder {
            table,
            names,
            contexts,
        }
    }

    fn name(&self, out: &mut Vec<u8>, f: &FunctionId) {
        write_uleb128(out, self.names[f]);
    }

    fn context(&self, out: &mut Vec<u8>, c: &Context) {
        match c {
            Context::Plain(f) => self.name(out, f),
            Context::Cs(_) => write_uleb128(out, self.contexts[c]),
        }
    }

    fn string_name_table(&self, out: &mut Vec<u8>) {
        write_uleb128(out, self.table.len() as u64);
        for n in &self.table {
            let _ = n.write_to(out);
            out.push(0);
        }
    }

    fn md5_name_table(&self, out: &mut Vec<u8>) {
        write_uleb128(out, self.table.len() as u64);
        for n in &self.table {
            out.extend_from_slice(&n.guid().to_le_bytes());
        }
    }

    fn body(&self, out: &mut Vec<u8>, ctx: &Context, fs: &FunctionSamples) {
        self.context(out, ctx);
        self.samples(out, fs);
    }

    fn samples(&self, out: &mut Vec<u8>, fs: &FunctionSamples) {
        write_uleb128(out, fs.total);
        write_uleb128(out, fs.body.len() as u64);
        for (loc, rec) in &fs.body {
            write_uleb128(out, loc.line.into());
            write_uleb128(out, loc.disc.into());
            write_uleb128(out, rec.count);
            write_uleb128(out, rec.targets.len() as u64);
            for (t, c) in rec.sorted_targets() {
                self.name(out, t);
                write_uleb128(out, c);
            }
        }
        self.callsites(out, fs, Self::samples);
    }

    /// The callee count, then each callee's location and name followed by what `callee`
    /// writes of it.
    fn callsites(
        &self,
        out: &mut Vec<u8>,
        fs: &FunctionSamples,
        mut callee: impl FnMut(&Self, &mut Vec<u8>, &FunctionSamples),
    ) {
        write_uleb128(out, fs.callsite_count() as u64);
        for (loc, callees) in &fs.callsites {
            for (name, fs) in callees {
                write_uleb128(out, loc.line.into());
                write_uleb128(out, loc.disc.into());
                self.name(out, name);
                callee(self, out, fs);
            }
        }
    }

    /// An LBR profile section holding `functions` in that order, and its function offset
    /// table (offsets relative to the section; sorted by context for CS profiles).
    fn lbr_section(
        &self,
        functions: &[(&Context, &FunctionSamples)],
        cs: bool,
    ) -> (Vec<u8>, Vec<u8>) {
        let mut lbr = Vec::new();
        let mut offsets: Vec<(&Context, u64)> = Vec::with_capacity(functions.len());
        for &(ctx, fs) in functions {
            offsets.push((ctx, lbr.len() as u64));
            write_uleb128(&mut lbr, fs.head);
            self.body(&mut lbr, ctx, fs);
        }
        if cs {
            offsets.sort_by(|a, b| a.0.cmp(b.0));
        }
        let mut table = Vec::new();
        write_uleb128(&mut table, offsets.len() as u64);
        for (ctx, off) in &offsets {
            self.context(&mut table, ctx);
            write_uleb128(&mut table, *off);
        }
        (lbr, table)
    }

    fn metadata(&self, out: &mut Vec<u8>, fs: &FunctionSamples, kind: &super::ProfileKind) {
        if kind.probe {
            write_uleb128(out, fs.checksum);
        }
        if kind.cs || kind.preinlined {
            write_uleb128(out, fs.attributes.into());
        }
        if !kind.cs {
            self.callsites(out, fs, |w, out, callee| w.metadata(out, callee, kind));
        }
    }
}

/// The summary section's payload.
pub fn write_summary(out: &mut Vec<u8>, s: &Summary) {
    for v in s.scalars().into_iter().chain([s.entries.len() as u64]) {
        write_uleb128(out, v);
    }
    for e in &s.entries {
        write_uleb128(out, e.cutoff.into());
        write_uleb128(out, e.min_count);
        write_uleb128(out, e.num_counts);
    }
}

/// Writes a raw binary profile like `llvm-profdata-19 merge --sample --binary`.
pub fn write_raw(profile: &Profile, out: &mut impl std::io::Write) -> Result<()> {
    if profile.kind.cs || profile.kind.probe {
        return Err(Error::UnsupportedForWriting(
            "the raw binary format holds neither context-sensitive nor pseudo-probe profiles",
        ));
    }
    let enc = Encoder::new(profile);
    let mut buf = Vec::new();
    write_uleb128(&mut buf, llvm_magic(0xFF));
    write_uleb128(&mut buf, VERSION);
    write_summary(&mut buf, &summary::compute(profile));
    enc.string_name_table(&mut buf);
    for (ctx, fs) in profile.sorted_functions() {
        write_uleb128(&mut buf, fs.head);
        enc.body(&mut buf, ctx, fs);
    }
    out.write_all(&buf)?;
    Ok(())
}

/// One ExtBinary section: type, flags, payload.
pub type Section = (u64, u64, Vec<u8>);

/// LLVM's zlib wrapper of a compressed section (level 9, as `compress2` with
/// `BestSizeCompression`). Empty sections stay empty.
fn compress(raw: Vec<u8>) -> Vec<u8> {
    if raw.is_empty() {
        return raw;
    }
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&raw).expect("writing to memory");
    let packed = z.finish().expect("writing to memory");
    let mut out = Vec::with_capacity(packed.len() + 20);
    write_uleb128(&mut out, raw.len() as u64);
    write_uleb128(&mut out, packed.len() as u64);
    out.extend_from_slice(&packed);
    out
}

/// Writes an ExtBinary profile like `llvm-profdata-19 merge --sample --extbinary` (default
/// section layout).
pub fn write_ext(
    profile: &Profile,
    opts: &ExtBinaryOptions,
    out: &mut impl std::io::Write,
) -> Result<()> {
    write_ext_in_order(profile, opts, None, out)
}

/// [`write_ext`], with the function metadata records (probe checksums, attributes) in
/// `map_order`: the order LLVM's `SampleProfileMap` (a hash map) lists the functions in,
/// which is the order llvm-profdata writes them. Context order when `None` or when the list
/// does not hold exactly the profile's functions.
pub fn write_ext_in_order(
    profile: &Profile,
    opts: &ExtBinaryOptions,
    map_order: Option<&[Context]>,
    out: &mut impl std::io::Write,
) -> Result<()> {
    let kind = &profile.kind;
    let enc = Encoder::new(profile);

    let mut summary_flags = 0;
    if opts.partial || profile.partial {
        summary_flags |= flag::PARTIAL;
    }
    if kind.cs {
        summary_flags |= flag::FULL_CONTEXT;
    }
    if kind.preinlined {
        summary_flags |= flag::PRE_INLINED;
    }
    if kind.fs {
        summary_flags |= flag::FS_DISCRIMINATOR;
    }
    let mut summary = Vec::new();
    write_summary(&mut summary, &summary::compute(profile));

    let mut name_flags = 0;
    let mut names = Vec::new();
    if opts.use_md5 {
        name_flags |= flag::MD5_NAME | flag::FIXED_LENGTH_MD5;
        enc.md5_name_table(&mut names);
    } else {
        let uniq = enc.names.keys().any(|n| {
            n.as_name()
                .is_some_and(|s| memchr::memmem::find(s, b".__uniq.").is_some())
        });
        if uniq {
            name_flags |= flag::UNIQ_SUFFIX;
        }
        enc.string_name_table(&mut names);
    }

    // Written (as a zero count) even for profiles without contexts.
    let mut cs_names = Vec::new();
    write_uleb128(&mut cs_names, enc.contexts.len() as u64);
    {
        for ctx in enc.contexts.keys() {
            let Context::Cs(frames) = ctx else { continue };
            write_uleb128(&mut cs_names, frames.len() as u64);
            for fr in frames.iter() {
                enc.name(&mut cs_names, &fr.func);
                write_uleb128(&mut cs_names, fr.loc.line.into());
                write_uleb128(&mut cs_names, fr.loc.disc.into());
            }
        }
    }

    let sorted = profile.sorted_functions();
    let offset_flags = if kind.cs { flag::ORDERED } else { 0 };

    let mut symbols = Vec::new();
    for s in &profile.symbol_list {
        symbols.extend_from_slice(s);
        symbols.push(0);
    }

    let mut meta_flags = 0;
    let mut metadata = Vec::new();
    if kind.probe {
        meta_flags |= flag::PROBE_BASED;
    }
    if kind.cs || kind.preinlined {
        meta_flags |= flag::HAS_ATTRIBUTE;
    }
    if kind.probe || kind.cs || kind.preinlined {
        let in_map_order: Option<Vec<(&Context, &FunctionSamples)>> = map_order
            .filter(|o| o.len() == profile.functions.len())
            .and_then(|o| {
                o.iter()
                    .map(|c| profile.functions.get_key_value(c))
                    .collect()
            });
        let functions = in_map_order.unwrap_or_else(|| profile.functions.iter().collect());
        for (ctx, fs) in functions {
            enc.context(&mut metadata, ctx);
            enc.metadata(&mut metadata, fs, kind);
        }
    }

    // Header order (what readers walk) and physical order (what LLVM writes first).
    let (layout, physical): (Vec<Section>, &[usize]) = if opts.split_layout {
        if kind.cs {
            return Err(Error::UnsupportedForWriting(
                "the split layout has no CS name table for context-sensitive profiles",
            ));
        }
        // LLVM's `splitProfileMapToTwo`: profiles with inlined callees first.
        let (nested, flat): (Vec<_>, Vec<_>) = sorted
            .into_iter()
            .partition(|(_, fs)| !fs.callsites.is_empty());
        let (nested_lbr, nested_offsets) = enc.lbr_section(&nested, false);
        let (flat_lbr, flat_offsets) = enc.lbr_section(&flat, false);
        let layout = vec![
            (sec::SUMMARY, summary_flags, summary),
            (sec::NAME_TABLE, name_flags, names),
            (sec::FUNC_OFFSET, offset_flags, nested_offsets),
            (sec::LBR_PROFILE, 0, nested_lbr),
            (sec::FUNC_OFFSET, offset_flags | flag::FLAT, flat_offsets),
            (sec::LBR_PROFILE, flag::FLAT, flat_lbr),
            (sec::SYMBOL_LIST, 0, symbols),
            (sec::FUNC_METADATA, meta_flags, metadata),
        ];
        (layout, &[0, 1, 3, 2, 5, 4, 6, 7])
    } else {
        let (lbr, func_offsets) = enc.lbr_section(&sorted, kind.cs);
        let layout = vec![
            (sec::SUMMARY, summary_flags, summary),
            (sec::NAME_TABLE, name_flags, names),
            (sec::CS_NAME_TABLE, 0, cs_names),
            (sec::FUNC_OFFSET, offset_flags, func_offsets),
            (sec::LBR_PROFILE, 0, lbr),
            (sec::SYMBOL_LIST, 0, symbols),
            (sec::FUNC_METADATA, meta_flags, metadata),
        ];
        (layout, &[0, 1, 2, 4, 5, 3, 6])
    };
    write_sections(layout, physical, opts.compress_all, out)
}

/// The magic, version and section header table of an ExtBinary file whose sections, in
/// header order, have the given (type, flags, size), laid out in `physical` order.
pub fn section_header(sections: &[(u64, u64, u64)], physical: &[usize]) -> Vec<u8> {
    let mut head = Vec::new();
    write_uleb128(&mut head, llvm_magic(0x04));
    write_uleb128(&mut head, VERSION);
    head.extend_from_slice(&(sections.len() as u64).to_le_bytes());
    let mut offsets = vec![0u64; sections.len()];
    let mut at = (head.len() + sections.len() * 32) as u64;
    for &i in physical {
        offsets[i] = at;
        at += sections[i].2;
    }
    for (i, (t, f, size)) in sections.iter().enumerate() {
        for v in [*t, *f, offsets[i], *size] {
            head.extend_from_slice(&v.to_le_bytes());
        }
    }
    head
}

/// Writes an ExtBinary file from its sections in header order (type, flags, payload):
/// compressed if asked, laid out in `physical` order (LLVM writes some sections before
/// others that precede them in the header).
pub fn write_sections(
    layout: Vec<Section>,
    physical: &[usize],
    compress_all: bool,
    out: &mut impl std::io::Write,
) -> Result<()> {
    let compress_flag = if compress_all { flag::COMPRESS } else { 0 };
    let sections: Vec<Section> = layout
        .into_iter()
        .map(|(t, f, b)| {
            let b = if compress_all { compress(b) } else { b };
            (t, f | compress_flag, b)
        })
        .collect();

    let sizes: Vec<(u64, u64, u64)> = sections
        .iter()
        .map(|(t, f, b)| (*t, *f, b.len() as u64))
        .collect();
    let head = section_header(&sizes, physical);
    out.write_all(&head)?;
    for &i in physical {
        out.write_all(&sections[i].2)?;
    }
    Ok(())
}
