//! GCC AutoFDO "gcov" profiles (`.afdo`): LLVM's readable `407*` flavour and versions 1, 2, 3.
//!
//! | version word | strings | extra |
//! |---|---|---|
//! | `0x3430372A` ("407*") | u32 word count, NUL-padded to 4 bytes | — (read by LLVM only) |
//! | 1 | as above | — (GCC 5–11) |
//! | 2 | u32 byte count incl. NUL, unpadded | — (GCC 12–15) |
//! | 3 | as v2 | summary, source file table, per-function timestamps (GCC 16) |
//!
//! Locations are `line_offset << 16 | discriminator`. The format has no totals: readers
//! recompute them from line counts (every count is added to each enclosing instance), as
//! LLVM's `SampleProfileReaderGCC` does; a top-level name seen again (an alias) only adds its
//! head count. Writers follow create_gcov's layout: a byte-sorted string table whose entry 0
//! is the empty string, functions in name order, positions by offset, targets by name; call
//! sites (hash order in create_gcov) by offset then name. Length words are computed as
//! create_gcov does; every reader ignores them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::error::{Error, Result};
use super::model::{Context, FunctionId, FunctionSamples, LineLocation, Profile};
use super::summary;
use crate::bytes::{Endian, Reader};

/// `GCOV_DATA_MAGIC`: "gcda" as a 32-bit word.
pub(crate) const MAGIC: u32 = 0x6763_6461;
/// The version word "407*" of gcc 4.7's gcov files, which LLVM's GCC reader expects.
pub(crate) const VERSION_407: u32 = 0x3430_372A;
const TAG_SUMMARY: u32 = 0xA800_0000;
const TAG_NAMES: u32 = 0xAA00_0000;
const TAG_FUNCTION: u32 = 0xAC00_0000;
const TAG_MODULE_GROUPING: u32 = 0xAE00_0000;
const TAG_WORKING_SET: u32 = 0xAF00_0000;
const HIST_TYPE_INDIR_CALL_TOPN: u32 = 7;
use super::MAX_NESTING;

/// Which gcov dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// `407*`: LLVM's reader, autofdo 0.19's default.
    V407,
    /// autofdo's version 1 (the version word is 1).
    V1,
    /// autofdo's version 2 (the version word is 2).
    V2,
    /// autofdo's version 3 (the version word is 3): adds source files and timestamps.
    V3,
}

impl Version {
    /// The version word as written after the magic.
    pub fn word(self) -> u32 {
        match self {
            Version::V407 => VERSION_407,
            Version::V1 => 1,
            Version::V2 => 2,
            Version::V3 => 3,
        }
    }

    fn from_word(w: u32) -> Option<Self> {
        Some(match w {
            VERSION_407 => Version::V407,
            1 => Version::V1,
            2 => Version::V2,
            3 => Version::V3,
            _ => return None,
        })
    }

    fn byte_strings(self) -> bool {
        matches!(self, Version::V2 | Version::V3)
    }
}

/// The version of a gcov profile, if `data` is one.
pub fn detect(data: &[u8]) -> Option<Version> {
    let magic = u32::from_le_bytes(data.get(..4)?.try_into().ok()?);
    let version = u32::from_le_bytes(data.get(4..8)?.try_into().ok()?);
    (magic == MAGIC)
        .then(|| Version::from_word(version))
        .flatten()
}

/// The file's little-endian [`Reader`], with errors that name the field being read.
struct Rd<'a> {
    r: Reader<'a>,
}

impl<'a> Rd<'a> {
    /// File offset of the next byte.
    fn pos(&self) -> usize {
        self.r.offset() as usize
    }

    fn truncated(&self, what: &'static str) -> Error {
        Error::Truncated {
            offset: self.r.offset(),
            what,
        }
    }

    fn malformed(&self, at: usize, what: String) -> Error {
        Error::Malformed {
            offset: at as u64,
            what,
        }
    }

    fn u32(&mut self, what: &'static str) -> Result<u32> {
        self.r.u32().map_err(|e| Error::read(e, what))
    }

    /// Two words, low first (so a file cut between them is reported at the second).
    fn u64(&mut self, what: &'static str) -> Result<u64> {
        let lo = self.u32(what)?;
        let hi = self.u32(what)?;
        Ok(u64::from(hi) << 32 | u64::from(lo))
    }

    fn string(&mut self, version: Version) -> Result<&'a [u8]> {
        let n = self.u32("string length")? as usize;
        let bytes = if version.byte_strings() {
            n
        } else {
            n.checked_mul(4).ok_or_else(|| self.truncated("string"))?
        };
        let s = self.r.take(bytes).map_err(|e| Error::read(e, "string"))?;
        // Up to the first NUL: padding (v1) and the terminator (v2) are not part of the name.
        Ok(&s[..memchr::memchr(0, s).unwrap_or(s.len())])
    }

    fn expect_tag(&mut self, tag: u32, what: &'static str) -> Result<()> {
        let at = self.pos();
        let t = self.u32(what)?;
        if t != tag {
            return Err(self.malformed(
                at,
                format!("expected {what} tag {tag:#010x}, found {t:#010x}"),
            ));
        }
        Ok(())
    }
}

struct Decoder<'a> {
    rd: Rd<'a>,
    names: Vec<FunctionId>,
}

impl Decoder<'_> {
    fn name(&mut self, idx: u64, at: usize) -> Result<FunctionId> {
        self.names.get(idx as usize).cloned().ok_or_else(|| {
            self.rd.malformed(
                at,
                format!(
                    "name index {idx} is outside the table of {} names",
                    self.names.len()
                ),
            )
        })
    }

    /// One instance. Returns the samples it adds to every enclosing instance's total (its
    /// own line counts and its callees'), as LLVM walks its inline stack.
    fn instance(&mut self, fs: &mut FunctionSamples, update: bool, depth: usize) -> Result<u64> {
        if depth > MAX_NESTING {
            return Err(self.rd.malformed(
                self.rd.pos(),
                format!("inlining nested deeper than {MAX_NESTING}"),
            ));
        }
        let n_pos = self.rd.u32("position count")?;
        let n_callsites = self.rd.u32("callsite count")?;
        let mut subtotal = 0u64;
        for _ in 0..n_pos {
            let offset = self.rd.u32("position offset")?;
            let n_targets = self.rd.u32("target count")?;
            let count = self.rd.u64("position count")?;
            let loc = LineLocation::new(offset >> 16, offset & 0xffff);
            if update {
                fs.add_total(count, 1);
                subtotal = subtotal.saturating_add(count);
                fs.body.entry(loc).or_default().add_count(count, 1);
            }
            for _ in 0..n_targets {
                let at = self.rd.pos();
                let hist = self.rd.u32("histogram type")?;
                if hist != HIST_TYPE_INDIR_CALL_TOPN {
                    return Err(self.rd.malformed(
                        at,
                        format!("histogram type {hist}, expected {HIST_TYPE_INDIR_CALL_TOPN} (indirect call top-n)"),
                    ));
                }
                let at = self.rd.pos();
                let idx = self.rd.u64("target name index")?;
                let target = self.name(idx, at)?;
                let c = self.rd.u64("target count")?;
                if update {
                    fs.body.entry(loc).or_default().add_target(target, c, 1);
                }
            }
        }
        for _ in 0..n_callsites {
            let offset = self.rd.u32("callsite offset")?;
            let at = self.rd.pos();
            let idx = self.rd.u32("callee name index")?;
            let callee = self.name(idx.into(), at)?;
            let loc = LineLocation::new(offset >> 16, offset & 0xffff);
            let added = self.instance(fs.callee_mut(loc, callee), update, depth + 1)?;
            fs.add_total(added, 1);
            subtotal = subtotal.saturating_add(added);
        }
        Ok(subtotal)
    }
}

/// Reads a gcov profile of any supported version.
pub fn read(data: &[u8]) -> Result<Profile> {
    let version = detect(data).ok_or(Error::UnrecognizedFormat)?;
    let mut r = Decoder {
        rd: Rd {
            r: Reader::at(data.get(12..).unwrap_or_default(), Endian::Little, 12),
        },
        names: Vec::new(),
    };
    if data.len() < 12 {
        // Where the file ends, not where the header would.
        return Err(Error::Truncated {
            offset: data.len() as u64,
            what: "header (12 bytes)",
        });
    }
    let mut profile = Profile::default();
    if version == Version::V3 {
        r.rd.expect_tag(TAG_SUMMARY, "summary")?;
        for _ in 0..5 {
            r.rd.u64("summary")?;
        }
        let n = r.rd.u64("summary entry count")?;
        for _ in 0..n {
            r.rd.u32("summary cutoff")?;
            r.rd.u64("summary min count")?;
            r.rd.u64("summary count number")?;
        }
    }
    r.rd.expect_tag(TAG_NAMES, "name table")?;
    r.rd.u32("name table length")?;
    let mut files = Vec::new();
    if version == Version::V3 {
        let n = r.rd.u32("file count")?;
        for _ in 0..n {
            files.push(Arc::<[u8]>::from(r.rd.string(version)?));
        }
    }
    let n = r.rd.u32("name count")?;
    for _ in 0..n {
        let name = FunctionId::name(r.rd.string(version)?);
        if version == Version::V3 {
            let at = r.rd.pos();
            let file = r.rd.u32("file index")?;
            if file != u32::MAX {
                let f = files.get(file as usize).ok_or_else(|| {
                    r.rd.malformed(
                        at,
                        format!(
                            "file index {file} is outside the table of {} files",
                            files.len()
                        ),
                    )
                })?;
                profile.source_files.insert(name.clone(), f.clone());
            }
        }
        r.names.push(name);
    }
    r.rd.expect_tag(TAG_FUNCTION, "function")?;
    r.rd.u32("function section length")?;
    let n = r.rd.u32("function count")?;
    for _ in 0..n {
        let head = r.rd.u64("head count")?;
        let timestamp = if version == Version::V3 {
            r.rd.u64("timestamp")?
        } else {
            0
        };
        let at = r.rd.pos();
        let idx = r.rd.u32("name index")?;
        let name = r.name(idx.into(), at)?;
        if timestamp != 0 {
            profile.timestamps.insert(name.clone(), timestamp);
        }
        let fs = profile.functions.entry(Context::Plain(name)).or_default();
        fs.add_head(head, 1);
        // An alias of a function already read repeats its body: count it once.
        let update = fs.total == 0;
        r.instance(fs, update, 0)?;
    }
    // Module grouping and working set follow; no reader uses them.
    Ok(profile)
}

// ---------------------------------------------------------------------------------------------

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    put_u32(out, v as u32);
    put_u32(out, (v >> 32) as u32);
}

fn put_string(out: &mut Vec<u8>, s: &[u8], version: Version) {
    if version.byte_strings() {
        put_u32(out, s.len() as u32 + 1);
        out.extend_from_slice(s);
        out.push(0);
    } else {
        let words = (s.len() + 4) / 4;
        put_u32(out, words as u32);
        out.extend_from_slice(s);
        out.resize(out.len() + words * 4 - s.len(), 0);
    }
}

fn offset_word(loc: LineLocation) -> Result<u32> {
    if loc.line > 0xFFFF || loc.disc > 0xFFFF {
        return Err(Error::UnsupportedForWriting(
            "a gcov location holds a 16-bit line offset and a 16-bit discriminator",
        ));
    }
    Ok(loc.line << 16 | loc.disc)
}

struct Writer {
    version: Version,
    index: BTreeMap<Vec<u8>, u32>,
    out: Vec<u8>,
}

impl Writer {
    fn idx(&self, f: &FunctionId) -> u32 {
        self.index[&f.to_bytes()]
    }

    fn instance(&mut self, name: &FunctionId, fs: &FunctionSamples) -> Result<()> {
        let idx = self.idx(name);
        put_u32(&mut self.out, idx);
        put_u32(&mut self.out, fs.body.len() as u32);
        put_u32(&mut self.out, fs.callsite_count() as u32);
        for (loc, rec) in &fs.body {
            put_u32(&mut self.out, offset_word(*loc)?);
            put_u32(&mut self.out, rec.targets.len() as u32);
            put_u64(&mut self.out, rec.count);
            // Name order: create_gcov walks its sorted map.
            let mut targets: Vec<_> = rec
                .targets
                .iter()
                .map(|(t, c)| (t.to_bytes(), *c))
                .collect();
            targets.sort();
            for (t, c) in targets {
                put_u32(&mut self.out, HIST_TYPE_INDIR_CALL_TOPN);
                put_u64(&mut self.out, self.index[&t].into());
                put_u64(&mut self.out, c);
            }
        }
        for (loc, callees) in &fs.callsites {
            for (callee_name, callee) in callees {
                put_u32(&mut self.out, offset_word(*loc)?);
                self.instance(callee_name, callee)?;
            }
        }
        Ok(())
    }
}

/// create_gcov's (ignored) length word of the function section.
fn function_words(fs: &FunctionSamples) -> u64 {
    let targets: u64 = fs.body.values().map(|r| r.targets.len() as u64).sum();
    let own = 3 + 4 * fs.body.len() as u64 + fs.callsite_count() as u64 + 5 * targets;
    own + fs
        .callsites
        .values()
        .flat_map(|m| m.values())
        .map(function_words)
        .sum::<u64>()
}

/// Writes `profile` as gcov `version`. Context-sensitive profiles cannot be written (gcov has
/// no contexts); names and locations must fit the format.
pub fn write(profile: &Profile, version: Version, out: &mut impl std::io::Write) -> Result<()> {
    if profile.kind.cs {
        return Err(Error::UnsupportedForWriting(
            "gcov has no calling contexts; flatten the profile first",
        ));
    }
    let mut names: BTreeSet<Vec<u8>> = BTreeSet::new();
    names.insert(Vec::new());
    for (ctx, fs) in &profile.functions {
        names.insert(ctx.function().to_bytes());
        fs.visit_names(&mut |n| {
            names.insert(n.to_bytes());
        });
    }
    let mut w = Writer {
        version,
        index: names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i as u32))
            .collect(),
        out: Vec::new(),
    };
    put_u32(&mut w.out, MAGIC);
    put_u32(&mut w.out, version.word());
    put_u32(&mut w.out, 0);
    if version == Version::V3 {
        let s = summary::compute(profile);
        put_u32(&mut w.out, TAG_SUMMARY);
        for v in s.scalars() {
            put_u64(&mut w.out, v);
        }
        put_u64(&mut w.out, s.entries.len() as u64);
        for e in &s.entries {
            put_u32(&mut w.out, e.cutoff);
            put_u64(&mut w.out, e.min_count);
            put_u64(&mut w.out, e.num_counts);
        }
    }
    put_u32(&mut w.out, TAG_NAMES);
    let length: u64 = names
        .iter()
        .map(|n| (n.len() as u64 + 4) / 4 + 1)
        .sum::<u64>()
        + 1;
    put_u32(&mut w.out, length as u32);
    if version == Version::V3 {
        // Source files in first-seen order over the sorted names.
        let mut files: Vec<&Arc<[u8]>> = Vec::new();
        for f in profile.source_files.values() {
            if !files.contains(&f) {
                files.push(f);
            }
        }
        put_u32(&mut w.out, files.len() as u32);
        for f in &files {
            put_string(&mut w.out, f, version);
        }
        put_u32(&mut w.out, names.len() as u32);
        for n in &names {
            put_string(&mut w.out, n, version);
            let file = profile
                .source_files
                .get(&FunctionId::name(n))
                .and_then(|f| files.iter().position(|x| *x == f))
                .map_or(u32::MAX, |i| i as u32);
            put_u32(&mut w.out, file);
        }
    } else {
        put_u32(&mut w.out, names.len() as u32);
        for n in &names {
            put_string(&mut w.out, n, version);
        }
    }
    // Top-level functions by name.
    let mut tops: Vec<(Vec<u8>, &Context, &FunctionSamples)> = profile
        .functions
        .iter()
        .map(|(c, f)| (c.function().to_bytes(), c, f))
        .collect();
    tops.sort_by(|a, b| a.0.cmp(&b.0));
    put_u32(&mut w.out, TAG_FUNCTION);
    let words: u64 =
        tops.iter().map(|t| function_words(t.2)).sum::<u64>() + 2 * tops.len() as u64 + 1;
    put_u32(&mut w.out, words as u32);
    put_u32(&mut w.out, tops.len() as u32);
    for (_, ctx, fs) in &tops {
        put_u64(&mut w.out, fs.head);
        if version == Version::V3 {
            put_u64(
                &mut w.out,
                profile.timestamps.get(ctx.function()).copied().unwrap_or(0),
            );
        }
        w.instance(ctx.function(), fs)?;
    }
    put_u32(&mut w.out, TAG_MODULE_GROUPING);
    put_u32(&mut w.out, 0);
    put_u32(&mut w.out, 0);
    put_u32(&mut w.out, TAG_WORKING_SET);
    put_u32(&mut w.out, 3 * 128);
    for _ in 0..128 {
        put_u32(&mut w.out, 0);
        put_u64(&mut w.out, 0);
    }
    let _ = w.version;
    out.write_all(&w.out)?;
    Ok(())
}
