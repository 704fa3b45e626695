//! AutoFDO GCOV version 4, as proposed on gcc@ in April 2026
//! (`../shared/specs/autofdo-gcov-v4-proposal.txt`, the only source: no implementation exists).
//!
//! Three encodings of one [`Document`]: the binary format in normal mode (fixed-width
//! big-endian integers), the same in compact mode (protobuf varints), and the textual format.
//! [`Document`] mirrors the format (symbol IDs, file list, stored summary, location lists) so
//! that conversions between the three encodings are exact; [`from_profile`] / [`to_profile`]
//! map it to and from the common [`Profile`] model.
//!
//! # Choices where the proposal is ambiguous
//!
//! Each of these is tested in `formats/tests/it/sampleprof_gcov_v4.rs`.
//!
//! * **Section indices** count the sections in *header* order: the summary is 0, the file names
//!   section 1, section-table entry `k` is `k + 2`. Our writer also places the sections in the
//!   file in that order, so the proposal's "order they are placed within the file" agrees.
//! * **Section sizes** cover the whole section from its offset, the bitmask byte included. A
//!   section of a known type must be consumed exactly (trailing bytes are an error: existing
//!   sections "cannot be modified"); a section of an unknown type is kept as raw bytes.
//! * **Header widths.** `GCOV_NUM_SECTIONS` is a 7-byte big-endian integer so that the bitmask
//!   and it fill 8 bytes. Reserved header bits are ignored.
//! * **Compact mode** replaces *every* integer wider than one byte by a varint — counts, IDs,
//!   indices, lengths, line offsets, discriminators, trailing sizes — and nothing else (bitmask
//!   bytes, edge-label and file-name bytes stay raw). A varint must fit the width of the field
//!   it replaces (a line offset ≤ 2^24−1, …); longer-than-minimal varints are accepted. The header
//!   flag governs only the header fields; each section follows its own flag, so a file may mix
//!   compact and normal sections. Our compact writer sets every flag.
//! * **Trie.** Children are written in byte order of their labels, the terminal ID of a string
//!   is its rank in byte order (= pre-order DFS rank), and the root is terminal only for the
//!   empty string. Readers accept any order and any IDs as long as they are below
//!   `GCOV_NUM_STRINGS` and each is used once. Labels longer than 65535 bytes continue through
//!   a chain of one-child, non-terminal nodes; a node with more than 127 children keeps 126 and
//!   sends the rest through a 127th child with an empty label (decoding is plain
//!   concatenation, so both stay valid tries).
//! * **File names.** The empty-name entry (unknown source file) is written last, so that in
//!   text the file ID of every named file is its index in the binary file table and `-1` is the
//!   empty entry. Exactly one empty entry is required when reading. The name is stored with its
//!   NUL (length = bytes + 1); a name without its final NUL or with an embedded NUL is an error.
//! * **Symbol IDs** need not be contiguous: the proposal's own textual example gives file 0 the
//!   IDs 1 and 3 and file 1 the ID 2. A TU's `[SYMBOL_ID_START, SYMBOL_ID_END)` is written as
//!   the smallest range covering its IDs (ranges of different TUs may then overlap); readers
//!   check that each symbol lies inside its TU's range and that IDs are unique. Symbols of an
//!   empty TU get the range `[0, 0)`. [`from_profile`] numbers symbols contiguously, TU by TU,
//!   by name within a TU.
//! * **Locations.** A sample count is `LOCATION_ZERO` when 0, `LOCATION_NORMAL` when it fits 32
//!   bits, `LOCATION_WIDE` otherwise (in compact mode too; a varint standing for a 4-byte count
//!   must fit 32 bits). The discriminator bit is set exactly when the discriminator is non-zero.
//!   A call site with one target is `LOCATION_CALLED_FN`, with more `LOCATION_CALLED_FNS`
//!   (zero targets is read as no targets). Within a body our writer emits counts, then call
//!   sites, then inlined functions, then preserved unknown records, each in document order —
//!   the order of the text's `locations`, `callsites`, `inlined` sections.
//! * **Unknown location types**: `LOCATION_TRAILING_SIZE` counts the bytes *after* itself.
//!   Unknown records and unknown sections are kept in the [`Document`] and written back by the
//!   binary writers (so a binary → binary conversion preserves extensions); the textual format
//!   cannot carry them and drops them.
//! * **Text: symbols without a top-level instance** (call targets that are neither top-level
//!   nor inlined anywhere) have no place in the grammar, so their names would be lost. The text
//!   writer lists exactly those in an extension top-level section (allowed by section 6.2),
//!   after `summary`: `declared_symbols = { "name":FILE(ID), … }`. Readers that do not know it
//!   skip it like any unknown section.
//! * **Text details.** Whitespace (space, tab, CR, LF) may appear between any two tokens;
//!   there are no comments and no escapes (a name containing `"` cannot be written). An empty
//!   file list is written `filenames = {}` (the grammar asks for at least one name).
//!   `num_detailed_entries` must equal the number of entries. Numbers are unsigned decimal and
//!   must fit their binary field (line offsets 24 bits, discriminators 16 bits, IDs and file
//!   IDs 32 bits, counts 64 bits). A name/file given for one symbol ID in several headers must
//!   agree. Unknown sections (keyword `= { … }`, braces balanced, quoted strings opaque) are
//!   skipped at top level and in any section list.
//! * **Totals.** Like every gcov version, v4 stores no totals: [`to_profile`] recomputes them
//!   as LLVM's gcov reader does (a function's line counts plus its inlinees' totals; call-target
//!   counts are not added). Two symbols with the same name (e.g. statics of two TUs) are merged.

mod binary;
mod text;
mod trie;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

pub use binary::{decode_string_table, detect_binary, read_binary, write_binary};
pub use text::{is_text, read_text, write_text};

use super::error::{Error, Result};
use super::model::{Context, FunctionId, FunctionSamples, LineLocation, Profile};
use super::summary::{self, Summary};

/// `GCOV_MAGIC`, ASCII "gcov" in big-endian order.
pub const MAGIC: u32 = 0x6763_6F76;
/// `GCOV_VERSION` of the proposal: 4.
pub(crate) const VERSION: u32 = 4;
/// Largest line offset (`LOCATION_LINE_OFFSET` is 3 bytes).
pub(crate) const MAX_LINE_OFFSET: u32 = 0xFF_FFFF;
/// Largest discriminator (`LOCATION_DISCRIMINATOR` is 2 bytes).
pub(crate) const MAX_DISCRIMINATOR: u32 = 0xFFFF;
pub(crate) use super::MAX_NESTING;

/// One of the three encodings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Normal mode: fixed-width big-endian integers.
    Binary,
    /// Compact mode: the binary format with protobuf-style varints (header bitmask bit 7).
    Compact,
    /// The textual format.
    Text,
}

/// A v4 profile as the format holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Document {
    /// Source files with a name, in file-table order (the empty entry is implicit).
    pub files: Vec<Arc<[u8]>>,
    /// The summary as stored (not recomputed).
    pub summary: Summary,
    /// Every symbol, by ID.
    pub symbols: BTreeMap<u32, Symbol>,
    /// Sections of types this reader does not know, kept for binary → binary conversions.
    pub unknown_sections: Vec<UnknownSection>,
}

/// One entry of the symbol table (`GCOV_SYMBOL_TABLE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// The symbol's name.
    pub name: Arc<[u8]>,
    /// Index into [`Document::files`]; `None` for an unknown source file.
    pub file: Option<u32>,
    /// The top-level instance, if the symbol has one.
    pub info: Option<SymbolInfo>,
}

/// A top-level instance (`GCOV_SYMBOL_INFO` section).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SymbolInfo {
    /// `SYMBOL_HEAD_COUNT`: entry count of the function.
    pub head: u64,
    /// `SYMBOL_TIMESTAMP`: first-execution timestamp, 0 if unavailable.
    pub timestamp: u64,
    /// The location records.
    pub body: Body,
}

/// The location records of a function body, grouped by kind (see the module docs for the
/// order they are written in).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Body {
    /// `LOCATION_ZERO` / `LOCATION_NORMAL` / `LOCATION_WIDE`.
    pub counts: Vec<(LineLocation, u64)>,
    /// `LOCATION_CALLED_FN(S)`: (callee symbol ID, call count) per target.
    pub calls: Vec<(LineLocation, Vec<(u32, u64)>)>,
    /// `LOCATION_INLINED_FN` records: inlined callees.
    pub inlined: Vec<Inlined>,
    /// Location records of unknown types, kept for binary → binary conversions.
    pub unknown: Vec<UnknownLocation>,
}

/// `LOCATION_INLINED_FN`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inlined {
    /// Call-site location in the caller.
    pub loc: LineLocation,
    /// `SYMBOL_ID` of the inlined callee.
    pub symbol: u32,
    /// The callee's location records.
    pub body: Body,
}

/// A location record of a type this reader does not know: its header and trailing bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownLocation {
    /// The record's type (`LOCATION_BITMASK` bits 0-6).
    pub kind: u8,
    /// The record's location.
    pub loc: LineLocation,
    /// The bytes after `LOCATION_TRAILING_SIZE`.
    pub payload: Vec<u8>,
}

/// A section of a type this reader does not know: its type, compact flag and data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownSection {
    /// The section type (section bitmask bits 0-6).
    pub kind: u8,
    /// The section's compact flag (section bitmask bit 7).
    pub compact: bool,
    /// The section's bytes after its bitmask.
    pub payload: Vec<u8>,
}

impl Body {
    /// Every symbol ID the body refers to (call targets and inlined functions, recursively).
    pub fn visit_symbols(&self, f: &mut impl FnMut(u32)) {
        for (_, targets) in &self.calls {
            for &(id, _) in targets {
                f(id);
            }
        }
        for inl in &self.inlined {
            f(inl.symbol);
            inl.body.visit_symbols(f);
        }
    }
}

impl Document {
    /// Checks what both encodings require: referenced symbols exist, file IDs are in range,
    /// locations fit their fields.
    pub fn validate(&self) -> Result<()> {
        if self.symbols.contains_key(&u32::MAX) {
            return Err(invalid(
                "symbol ID 4294967295 cannot be stored (SYMBOL_ID_END is exclusive)".to_string(),
            ));
        }
        for (&id, sym) in &self.symbols {
            if let Some(f) = sym.file {
                if f as usize >= self.files.len() {
                    return Err(invalid(format!(
                        "symbol {id} names file {f}, but there are {} files",
                        self.files.len()
                    )));
                }
            }
            if let Some(info) = &sym.info {
                self.validate_body(&info.body, 0)?;
            }
        }
        Ok(())
    }

    fn validate_body(&self, body: &Body, depth: usize) -> Result<()> {
        if depth > MAX_NESTING {
            return Err(invalid(format!(
                "inlining nested deeper than {MAX_NESTING}"
            )));
        }
        let locs = body
            .counts
            .iter()
            .map(|c| c.0)
            .chain(body.calls.iter().map(|c| c.0))
            .chain(body.inlined.iter().map(|i| i.loc))
            .chain(body.unknown.iter().map(|u| u.loc));
        for loc in locs {
            check_location(loc)?;
        }
        let mut missing = None;
        body.visit_symbols(&mut |id| {
            if missing.is_none() && !self.symbols.contains_key(&id) {
                missing = Some(id);
            }
        });
        if let Some(id) = missing {
            return Err(invalid(format!(
                "symbol ID {id} is referenced but not declared"
            )));
        }
        for inl in &body.inlined {
            self.validate_body(&inl.body, depth + 1)?;
        }
        Ok(())
    }
}

fn invalid(what: String) -> Error {
    Error::Invalid(what)
}

fn check_location(loc: LineLocation) -> Result<()> {
    if loc.line > MAX_LINE_OFFSET || loc.disc > MAX_DISCRIMINATOR {
        return Err(Error::UnsupportedForWriting(
            "a GCOV v4 location holds a 24-bit line offset and a 16-bit discriminator",
        ));
    }
    Ok(())
}

/// The encoding of `data`, if it is a v4 profile.
pub fn detect(data: &[u8]) -> Option<Encoding> {
    if let Some(compact) = detect_binary(data) {
        return Some(if compact {
            Encoding::Compact
        } else {
            Encoding::Binary
        });
    }
    is_text(data).then_some(Encoding::Text)
}

/// Reads a v4 document in any of its encodings.
pub fn read_document(data: &[u8]) -> Result<Document> {
    match detect(data) {
        Some(Encoding::Text) => read_text(data),
        Some(_) => read_binary(data),
        None => Err(Error::UnrecognizedFormat),
    }
}

/// Writes `doc` in `encoding`.
pub fn write_document(
    doc: &Document,
    encoding: Encoding,
    out: &mut impl std::io::Write,
) -> Result<()> {
    match encoding {
        Encoding::Binary => write_binary(doc, false, out),
        Encoding::Compact => write_binary(doc, true, out),
        Encoding::Text => write_text(doc, out),
    }
}

/// Reads a v4 profile (any encoding) into the common model.
pub fn read(data: &[u8]) -> Result<Profile> {
    Ok(to_profile(&read_document(data)?))
}

/// Writes `profile` as v4 in `encoding`.
pub fn write(profile: &Profile, encoding: Encoding, out: &mut impl std::io::Write) -> Result<()> {
    write_document(&from_profile(profile)?, encoding, out)
}

// ---------------------------------------------------------------------------------------------
// Profile ↔ Document

/// The v4 document of `profile`: symbols numbered TU by TU (files in first-seen order over
/// the byte-sorted names, the unknown-file TU last), by name within a TU; the summary computed
/// as LLVM does. Context-sensitive profiles have no v4 form.
pub fn from_profile(profile: &Profile) -> Result<Document> {
    if profile.kind.cs {
        return Err(Error::UnsupportedForWriting(
            "GCOV v4 has no calling contexts; flatten the profile first",
        ));
    }
    let mut names: BTreeSet<Vec<u8>> = BTreeSet::new();
    for (ctx, fs) in &profile.functions {
        names.insert(ctx.function().to_bytes());
        fs.visit_names(&mut |n| {
            names.insert(n.to_bytes());
        });
    }
    // An empty file name means "unknown" in v4.
    let file_of = |name: &[u8]| {
        profile
            .source_files
            .get(&FunctionId::name(name))
            .filter(|f| !f.is_empty())
    };
    let mut files: Vec<Arc<[u8]>> = Vec::new();
    for name in &names {
        if let Some(f) = file_of(name) {
            if !files.contains(f) {
                files.push(f.clone());
            }
        }
    }
    // TU of each name: its file index, or files.len() for the unknown-file TU (written last).
    let tu_of = |name: &[u8]| {
        file_of(name)
            .and_then(|f| files.iter().position(|x| x == f))
            .unwrap_or(files.len())
    };
    let mut by_tu: Vec<Vec<&Vec<u8>>> = vec![Vec::new(); files.len() + 1];
    for name in &names {
        by_tu[tu_of(name)].push(name);
    }
    let mut ids: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
    let mut doc = Document {
        summary: summary::compute(profile),
        ..Document::default()
    };
    for (tu, tu_names) in by_tu.iter().enumerate() {
        for &name in tu_names {
            let id = u32::try_from(ids.len()).map_err(|_| {
                Error::UnsupportedForWriting("more than 2^32 symbols in one profile")
            })?;
            ids.insert(name.clone(), id);
            doc.symbols.insert(
                id,
                Symbol {
                    name: Arc::from(name.as_slice()),
                    file: (tu < files.len()).then_some(tu as u32),
                    info: None,
                },
            );
        }
    }
    for (ctx, fs) in &profile.functions {
        let name = ctx.function().to_bytes();
        let id = ids[&name];
        let info = SymbolInfo {
            head: fs.head,
            timestamp: profile.timestamps.get(ctx.function()).copied().unwrap_or(0),
            body: body_of(fs, &ids)?,
        };
        doc.symbols.get_mut(&id).expect("every name has an ID").info = Some(info);
    }
    doc.files = files;
    Ok(doc)
}

fn body_of(fs: &FunctionSamples, ids: &BTreeMap<Vec<u8>, u32>) -> Result<Body> {
    let mut body = Body::default();
    for (&loc, rec) in &fs.body {
        check_location(loc)?;
        body.counts.push((loc, rec.count));
        if !rec.targets.is_empty() {
            let mut targets: Vec<(u32, u64)> = rec
                .targets
                .iter()
                .map(|(t, &c)| (ids[&t.to_bytes()], c))
                .collect();
            targets.sort_unstable();
            body.calls.push((loc, targets));
        }
    }
    for (&loc, callees) in &fs.callsites {
        check_location(loc)?;
        for (name, callee) in callees {
            body.inlined.push(Inlined {
                loc,
                symbol: ids[&name.to_bytes()],
                body: body_of(callee, ids)?,
            });
        }
    }
    Ok(body)
}

/// The common model of `doc`: totals recomputed (see the module docs), source files and
/// non-zero timestamps kept; the summary, IDs and unknown records are dropped.
pub fn to_profile(doc: &Document) -> Profile {
    let mut profile = Profile::default();
    let name_of = |id: u32| {
        doc.symbols.get(&id).map_or_else(
            || FunctionId::name(b""),
            |s| FunctionId::Name(s.name.clone()),
        )
    };
    for sym in doc.symbols.values() {
        let name = FunctionId::Name(sym.name.clone());
        if let Some(f) = sym.file.and_then(|f| doc.files.get(f as usize)) {
            profile.source_files.insert(name.clone(), f.clone());
        }
        let Some(info) = &sym.info else {
            continue;
        };
        if info.timestamp != 0 {
            let t = profile
                .timestamps
                .entry(name.clone())
                .or_insert(info.timestamp);
            *t = (*t).min(info.timestamp);
        }
        let fs = profile.functions.entry(Context::Plain(name)).or_default();
        fs.add_head(info.head, 1);
        add_body(fs, &info.body, &name_of);
    }
    profile
}

/// Adds `body` into `fs`; returns the samples it adds to every enclosing total.
fn add_body(fs: &mut FunctionSamples, body: &Body, name_of: &impl Fn(u32) -> FunctionId) -> u64 {
    let mut subtotal = 0u64;
    for &(loc, count) in &body.counts {
        fs.add_total(count, 1);
        subtotal = subtotal.saturating_add(count);
        fs.body.entry(loc).or_default().add_count(count, 1);
    }
    for (loc, targets) in &body.calls {
        let rec = fs.body.entry(*loc).or_default();
        for &(id, count) in targets {
            rec.add_target(name_of(id), count, 1);
        }
    }
    for inl in &body.inlined {
        let callee = fs.callee_mut(inl.loc, name_of(inl.symbol));
        let added = add_body(callee, &inl.body, name_of);
        fs.add_total(added, 1);
        subtotal = subtotal.saturating_add(added);
    }
    subtotal
}
