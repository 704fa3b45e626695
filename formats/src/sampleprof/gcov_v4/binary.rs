//! The binary encodings of GCOV v4 (normal: fixed-width big-endian; compact: varints).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::trie::{read_trie, write_trie};
use super::{
    Body, Document, Inlined, Symbol, SymbolInfo, UnknownLocation, UnknownSection, MAGIC,
    MAX_NESTING, VERSION,
};
use crate::bytes::{write_uleb128, Endian, ReadError, ReadErrorKind, Reader as ByteReader};
use crate::sampleprof::error::{Error, Result};
use crate::sampleprof::model::LineLocation;
use crate::sampleprof::summary::{Summary, SummaryEntry};

const COMPACT: u8 = 0x80;
const TYPE_MASK: u8 = 0x7F;

const SECTION_STRING_TABLE: u8 = 0x01;
const SECTION_SUMMARY: u8 = 0x02;
const SECTION_FILE_NAMES: u8 = 0x03;
const SECTION_SYMBOL_NAMES: u8 = 0x04;
const SECTION_SYMBOL_INFO: u8 = 0x05;

const HAS_DISCRIMINATOR: u8 = 0x80;
const LOCATION_ZERO: u8 = 0x01;
const LOCATION_NORMAL: u8 = 0x02;
const LOCATION_WIDE: u8 = 0x03;
const LOCATION_CALLED_FN: u8 = 0x04;
const LOCATION_CALLED_FNS: u8 = 0x05;
const LOCATION_INLINED_FN: u8 = 0x06;

/// `SYMBOL_INFO_SECTION_INDEX` of a symbol without a top-level instance.
const NO_SYMBOL_INFO: u32 = 0xFFFF_FFFF;

fn section_name(kind: u8) -> &'static str {
    match kind {
        SECTION_STRING_TABLE => "GCOV_STRING_TABLE",
        SECTION_SUMMARY => "GCOV_SUMMARY_INFO",
        SECTION_FILE_NAMES => "GCOV_FILE_NAMES",
        SECTION_SYMBOL_NAMES => "GCOV_SYMBOL_NAMES",
        SECTION_SYMBOL_INFO => "GCOV_SYMBOL_INFO",
        _ => "unknown",
    }
}

/// Whether `data` starts like a v4 binary profile; `Some(compact)` if so.
pub fn detect_binary(data: &[u8]) -> Option<bool> {
    let magic = u32::from_be_bytes(data.get(..4)?.try_into().ok()?);
    let version = u32::from_be_bytes(data.get(4..8)?.try_into().ok()?);
    (magic == MAGIC && version == VERSION).then(|| data.get(8).is_some_and(|b| b & COMPACT != 0))
}

// ---------------------------------------------------------------------------------------------
// Reading

/// The file's big-endian [`ByteReader`] over one section, reading fixed-width fields or (compact)
/// varints, with errors that name the field.
pub struct Input<'a> {
    r: ByteReader<'a>,
    compact: bool,
}

impl<'a> Input<'a> {
    /// `data[pos..end]`, reported at its offsets in `data`.
    fn new(data: &'a [u8], pos: usize, end: usize, compact: bool) -> Self {
        let bytes = data.get(pos..end).unwrap_or_default();
        Input {
            r: ByteReader::at(bytes, Endian::Big, pos as u64),
            compact,
        }
    }

    /// File offset of the next byte.
    pub fn pos(&self) -> usize {
        self.r.offset() as usize
    }

    pub fn remaining(&self) -> usize {
        self.r.len()
    }

    fn truncated(&self, e: ReadError, what: &'static str) -> Error {
        Error::Truncated {
            offset: e.offset,
            what,
        }
    }

    pub fn malformed(&self, at: usize, what: String) -> Error {
        Error::Malformed {
            offset: at as u64,
            what,
        }
    }

    pub fn byte(&mut self, what: &'static str) -> Result<u8> {
        self.r.u8().map_err(|e| self.truncated(e, what))
    }

    pub fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        self.r.take(n).map_err(|e| self.truncated(e, what))
    }

    /// A field of `width` bytes: fixed-width big-endian, or a varint that must fit the width.
    pub fn uint(&mut self, width: u32, what: &'static str) -> Result<u64> {
        let at = self.pos();
        let v = if self.compact {
            self.varint(what)?
        } else {
            self.r
                .uint(width as usize)
                .map_err(|e| self.truncated(e, what))?
        };
        if width < 8 && v >> (8 * width) != 0 {
            return Err(self.malformed(
                at,
                format!("{what} {v} does not fit its {width}-byte field"),
            ));
        }
        Ok(v)
    }

    fn u32(&mut self, what: &'static str) -> Result<u32> {
        Ok(self.uint(4, what)? as u32)
    }

    fn varint(&mut self, what: &'static str) -> Result<u64> {
        self.r.uleb128().map_err(|e| match e.kind {
            // Every byte left continues the varint: the missing one is at the end.
            ReadErrorKind::UnexpectedEof => Error::Truncated {
                offset: e.offset + self.r.len() as u64,
                what,
            },
            _ => self.malformed(
                e.offset as usize,
                format!("{what}: varint longer than 64 bits"),
            ),
        })
    }

    /// A count of records of at least `min_size` bytes each, checked against the bytes left
    /// (so that a corrupt count cannot ask for a huge allocation).
    fn count(&mut self, width: u32, min_size: usize, what: &'static str) -> Result<usize> {
        let at = self.pos();
        let n = self.uint(width, what)?;
        if n > (self.remaining() / min_size.max(1)) as u64 {
            return Err(self.malformed(
                at,
                format!(
                    "{what} {n} is more than the {} bytes left can hold",
                    self.remaining()
                ),
            ));
        }
        Ok(n as usize)
    }
}

/// Where a section lies and what it is.
#[derive(Clone, Copy)]
struct SectionRef {
    offset: usize,
    size: usize,
    kind: u8,
    compact: bool,
}

struct Reader<'a> {
    data: &'a [u8],
    sections: Vec<SectionRef>,
    string_tables: HashMap<usize, Arc<Vec<Arc<[u8]>>>>,
}

impl<'a> Reader<'a> {
    /// The data of section `index` (after its bitmask), checked to be of type `kind`.
    fn open(&self, index: u64, kind: u8, at: usize) -> Result<Input<'a>> {
        let s = self
            .sections
            .get(index as usize)
            .ok_or_else(|| Error::Malformed {
                offset: at as u64,
                what: format!(
                    "section index {index} is not below the {} sections",
                    self.sections.len()
                ),
            })?;
        if s.kind != kind {
            return Err(Error::Malformed {
                offset: at as u64,
                what: format!(
                    "section {index} should be {} (type {kind}), found type {}",
                    section_name(kind),
                    s.kind
                ),
            });
        }
        Ok(Input::new(
            self.data,
            s.offset + 1,
            s.offset + s.size,
            s.compact,
        ))
    }

    fn summary(&self) -> Result<Summary> {
        let mut r = self.open(0, SECTION_SUMMARY, 0)?;
        let mut s = Summary {
            total_count: r.uint(8, "SUMMARY_TOTAL_COUNT")?,
            max_count: r.uint(8, "SUMMARY_MAX_COUNT")?,
            max_function_count: r.uint(8, "SUMMARY_MAX_FN_COUNT")?,
            num_counts: r.uint(8, "SUMMARY_NUM_COUNTS")?,
            num_functions: r.uint(8, "SUMMARY_NUM_FUNCTIONS")?,
            entries: Vec::new(),
        };
        let n = r.count(8, 3, "SUMMARY_NUM_DETAILED_ENTRIES")?;
        for _ in 0..n {
            s.entries.push(SummaryEntry {
                cutoff: r.u32("ENTRY_CUTOFF")?,
                min_count: r.uint(8, "ENTRY_MIN_COUNT")?,
                num_counts: r.uint(8, "ENTRY_NUM_COUNTS")?,
            });
        }
        finish(&r, "GCOV_SUMMARY_INFO")?;
        Ok(s)
    }

    fn string_table(&mut self, index: u64, at: usize) -> Result<Arc<Vec<Arc<[u8]>>>> {
        if let Some(t) = self.string_tables.get(&(index as usize)) {
            return Ok(t.clone());
        }
        let mut r = self.open(index, SECTION_STRING_TABLE, at)?;
        let limit = (64 << 20) + 256 * self.data.len();
        let table = Arc::new(read_trie(&mut r, limit)?);
        finish(&r, "GCOV_STRING_TABLE")?;
        self.string_tables.insert(index as usize, table.clone());
        Ok(table)
    }

    fn document(&mut self) -> Result<Document> {
        let mut doc = Document {
            summary: self.summary()?,
            ..Document::default()
        };
        let mut r = self.open(1, SECTION_FILE_NAMES, 0)?;
        let n = r.count(4, 5, "GCOV_NUM_FILE_NAMES")?;
        let mut empty_entry = None;
        let mut info_of: BTreeMap<u32, (u64, usize)> = BTreeMap::new();
        for i in 0..n {
            let at = r.pos();
            let len = r.uint(4, "FILE_NAME_STRING_LENGTH")? as usize;
            let name = r.bytes(len, "FILE_NAME_STRING_CONTENT")?;
            let name = match name.split_last() {
                Some((0, s)) if memchr::memchr(0, s).is_none() => s,
                _ => {
                    return Err(r.malformed(
                        at,
                        "a file name must end with its only NUL byte".to_string(),
                    ))
                }
            };
            let file = if name.is_empty() {
                if empty_entry.replace(i).is_some() {
                    return Err(
                        r.malformed(at, "two file names entries have an empty name".to_string())
                    );
                }
                None
            } else {
                doc.files.push(Arc::from(name));
                Some(doc.files.len() as u32 - 1)
            };
            let at = r.pos();
            let strings = r.uint(4, "STRING_TABLE_SECTION_INDEX")?;
            let strings = self.string_table(strings, at)?;
            let at = r.pos();
            let names = r.uint(4, "SYMBOL_NAMES_SECTION_INDEX")?;
            let start = r.u32("SYMBOL_ID_START")?;
            let end = r.u32("SYMBOL_ID_END")?;
            let mut s = self.open(names, SECTION_SYMBOL_NAMES, at)?;
            let count = s.count(4, 3, "GCOV_NUM_SYMBOL_NAMES")?;
            for _ in 0..count {
                let at = s.pos();
                let idx = s.u32("SYMBOL_NAME_STRING_INDEX")?;
                let name = strings.get(idx as usize).ok_or_else(|| {
                    s.malformed(
                        at,
                        format!(
                            "string index {idx} is not below the {} strings of the TU",
                            strings.len()
                        ),
                    )
                })?;
                let at = s.pos();
                let id = s.u32("SYMBOL_ID")?;
                if !(start..end).contains(&id) {
                    return Err(s.malformed(
                        at,
                        format!("symbol ID {id} is outside its TU's range [{start}, {end})"),
                    ));
                }
                let info_at = s.pos();
                let info = s.u32("SYMBOL_INFO_SECTION_INDEX")?;
                let sym = Symbol {
                    name: name.clone(),
                    file,
                    info: None,
                };
                if doc.symbols.insert(id, sym).is_some() {
                    return Err(s.malformed(at, format!("symbol ID {id} is declared twice")));
                }
                if info != NO_SYMBOL_INFO {
                    info_of.insert(id, (info.into(), info_at));
                }
            }
            finish(&s, "GCOV_SYMBOL_NAMES")?;
        }
        finish(&r, "GCOV_FILE_NAMES")?;
        if empty_entry.is_none() {
            return Err(Error::Malformed {
                offset: self.sections[1].offset as u64,
                what: "GCOV_FILE_NAMES lacks the entry with an empty name".to_string(),
            });
        }
        for (id, (index, at)) in info_of {
            let mut s = self.open(index, SECTION_SYMBOL_INFO, at)?;
            let head = s.uint(8, "SYMBOL_HEAD_COUNT")?;
            let timestamp = s.uint(8, "SYMBOL_TIMESTAMP")?;
            let body = read_body(&mut s, 0)?;
            finish(&s, "GCOV_SYMBOL_INFO")?;
            doc.symbols.get_mut(&id).expect("declared above").info = Some(SymbolInfo {
                head,
                timestamp,
                body,
            });
        }
        for s in &self.sections {
            if !(SECTION_STRING_TABLE..=SECTION_SYMBOL_INFO).contains(&s.kind) {
                doc.unknown_sections.push(UnknownSection {
                    kind: s.kind,
                    compact: s.compact,
                    payload: self.data[s.offset + 1..s.offset + s.size].to_vec(),
                });
            }
        }
        doc.validate()?;
        Ok(doc)
    }
}

fn finish(r: &Input<'_>, section: &'static str) -> Result<()> {
    if r.remaining() != 0 {
        return Err(r.malformed(
            r.pos(),
            format!(
                "{} bytes left at the end of a {section} section",
                r.remaining()
            ),
        ));
    }
    Ok(())
}

/// `SYMBOL_NUM_LOCATIONS` and the location records that follow.
fn read_body(r: &mut Input<'_>, depth: usize) -> Result<Body> {
    if depth > MAX_NESTING {
        return Err(r.malformed(
            r.pos(),
            format!("inlining nested deeper than {MAX_NESTING}"),
        ));
    }
    let n = r.count(4, 2, "SYMBOL_NUM_LOCATIONS")?;
    let mut body = Body::default();
    for _ in 0..n {
        read_location(r, &mut body, depth)?;
    }
    Ok(body)
}

fn read_location(r: &mut Input<'_>, body: &mut Body, depth: usize) -> Result<()> {
    let at = r.pos();
    let bits = r.byte("LOCATION_BITMASK")?;
    let line = r.uint(3, "LOCATION_LINE_OFFSET")? as u32;
    let disc = if bits & HAS_DISCRIMINATOR != 0 {
        r.uint(2, "LOCATION_DISCRIMINATOR")? as u32
    } else {
        0
    };
    let loc = LineLocation::new(line, disc);
    match bits & TYPE_MASK {
        LOCATION_ZERO => body.counts.push((loc, 0)),
        LOCATION_NORMAL => body.counts.push((loc, r.uint(4, "LOCATION_COUNT")?)),
        LOCATION_WIDE => body.counts.push((loc, r.uint(8, "LOCATION_COUNT")?)),
        LOCATION_CALLED_FN => {
            let id = r.u32("LOCATION_CALLED_FN_INDEX")?;
            let count = r.uint(8, "LOCATION_CALLED_FN_COUNT")?;
            body.calls.push((loc, vec![(id, count)]));
        }
        LOCATION_CALLED_FNS => {
            let n = r.count(4, 2, "LOCATION_CALLED_TARGETS")?;
            let mut targets = Vec::with_capacity(n);
            for _ in 0..n {
                let id = r.u32("LOCATION_CALLED_FN_INDEX")?;
                targets.push((id, r.uint(8, "LOCATION_CALLED_FN_COUNT")?));
            }
            if !targets.is_empty() {
                body.calls.push((loc, targets));
            }
        }
        LOCATION_INLINED_FN => {
            let symbol = r.u32("INLINED_SYMBOL_ID")?;
            let nested = read_body(r, depth + 1)?;
            body.inlined.push(Inlined {
                loc,
                symbol,
                body: nested,
            });
        }
        0 => {
            return Err(r.malformed(at, "location type 0 is not defined".to_string()));
        }
        kind => {
            let size = r.uint(4, "LOCATION_TRAILING_SIZE")? as usize;
            let payload = r.bytes(size, "trailing data of an unknown location type")?;
            body.unknown.push(UnknownLocation {
                kind,
                loc,
                payload: payload.to_vec(),
            });
        }
    }
    Ok(())
}

/// Decodes the data of a `GCOV_STRING_TABLE` section (after its bitmask byte): the strings
/// by ID.
pub fn decode_string_table(data: &[u8], compact: bool) -> Result<Vec<Arc<[u8]>>> {
    let mut r = Input::new(data, 0, data.len(), compact);
    let table = read_trie(&mut r, (64 << 20) + 256 * data.len())?;
    finish(&r, "GCOV_STRING_TABLE")?;
    Ok(table)
}

/// Reads a v4 binary profile (normal or compact).
pub fn read_binary(data: &[u8]) -> Result<Document> {
    if data.len() < 8 {
        return Err(Error::Truncated {
            offset: data.len() as u64,
            what: "GCOV v4 header",
        });
    }
    if u32::from_be_bytes(data[..4].try_into().expect("4 bytes")) != MAGIC {
        return Err(Error::UnrecognizedFormat);
    }
    let version = u32::from_be_bytes(data[4..8].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(Error::UnsupportedVersion {
            offset: 4,
            version: version.into(),
        });
    }
    let mut h = Input::new(data, 8, data.len(), false);
    h.compact = h.byte("GCOV_HEADER_BITMASK")? & COMPACT != 0;
    let n = h.count(7, 2, "GCOV_NUM_SECTIONS")?;
    let mut spans = Vec::with_capacity(n + 2);
    for _ in 0..n + 2 {
        let at = h.pos();
        let offset = h.uint(8, "GCOV_SECTION_OFFSET")?;
        let size = h.uint(8, "GCOV_SECTION_SIZE")?;
        spans.push((at, offset, size));
    }
    let mut sections = Vec::with_capacity(spans.len());
    for (i, (at, offset, size)) in spans.into_iter().enumerate() {
        let end = offset.checked_add(size).filter(|&e| e <= data.len() as u64);
        if end.is_none() || size == 0 {
            return Err(Error::Malformed {
                offset: at as u64,
                what: format!(
                    "section {i} (offset {offset}, size {size}) does not lie within the {} bytes of the file",
                    data.len()
                ),
            });
        }
        let bits = data[offset as usize];
        sections.push(SectionRef {
            offset: offset as usize,
            size: size as usize,
            kind: bits & TYPE_MASK,
            compact: bits & COMPACT != 0,
        });
    }
    Reader {
        data,
        sections,
        string_tables: HashMap::new(),
    }
    .document()
}

// ---------------------------------------------------------------------------------------------
// Writing

/// Builds fields in normal or compact encoding.
pub struct Output {
    pub buf: Vec<u8>,
    compact: bool,
}

impl Output {
    fn new(compact: bool) -> Self {
        Output {
            buf: Vec::new(),
            compact,
        }
    }

    pub fn byte(&mut self, b: u8) {
        self.buf.push(b);
    }

    pub fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    /// A `width`-byte field; the value must fit (checked by the callers' validation).
    pub fn uint(&mut self, v: u64, width: u32) {
        debug_assert!(width == 8 || v >> (8 * width) == 0, "{v} in {width} bytes");
        if self.compact {
            write_uleb128(&mut self.buf, v);
        } else {
            self.buf
                .extend_from_slice(&v.to_be_bytes()[8 - width as usize..]);
        }
    }
}

fn write_location_header(o: &mut Output, kind: u8, loc: LineLocation) {
    let disc = if loc.disc != 0 { HAS_DISCRIMINATOR } else { 0 };
    o.byte(kind | disc);
    o.uint(loc.line.into(), 3);
    if loc.disc != 0 {
        o.uint(loc.disc.into(), 2);
    }
}

fn write_body(o: &mut Output, body: &Body) {
    let n = body.counts.len() + body.calls.len() + body.inlined.len() + body.unknown.len();
    o.uint(n as u64, 4);
    for &(loc, count) in &body.counts {
        match count {
            0 => write_location_header(o, LOCATION_ZERO, loc),
            c if c <= u64::from(u32::MAX) => {
                write_location_header(o, LOCATION_NORMAL, loc);
                o.uint(c, 4);
            }
            c => {
                write_location_header(o, LOCATION_WIDE, loc);
                o.uint(c, 8);
            }
        }
    }
    for (loc, targets) in &body.calls {
        if let [(id, count)] = targets.as_slice() {
            write_location_header(o, LOCATION_CALLED_FN, *loc);
            o.uint((*id).into(), 4);
            o.uint(*count, 8);
        } else {
            write_location_header(o, LOCATION_CALLED_FNS, *loc);
            o.uint(targets.len() as u64, 4);
            for &(id, count) in targets {
                o.uint(id.into(), 4);
                o.uint(count, 8);
            }
        }
    }
    for inl in &body.inlined {
        write_location_header(o, LOCATION_INLINED_FN, inl.loc);
        o.uint(inl.symbol.into(), 4);
        write_body(o, &inl.body);
    }
    for u in &body.unknown {
        write_location_header(o, u.kind, u.loc);
        o.uint(u.payload.len() as u64, 4);
        o.bytes(&u.payload);
    }
}

fn section(kind: u8, compact: bool, fill: impl FnOnce(&mut Output)) -> Vec<u8> {
    let mut o = Output::new(compact);
    o.byte(kind | if compact { COMPACT } else { 0 });
    fill(&mut o);
    o.buf
}

/// A file-table entry's name and its symbols by ID.
type Tu<'a> = (&'a [u8], Vec<(u32, &'a Symbol)>);

/// The TUs of `doc` in file-table order: each named file, then the empty entry.
fn tus(doc: &Document) -> Vec<Tu<'_>> {
    let mut tus: Vec<Tu<'_>> = doc
        .files
        .iter()
        .map(|f| (&f[..], Vec::new()))
        .chain(std::iter::once((&b""[..], Vec::new())))
        .collect();
    let unknown = doc.files.len();
    for (&id, sym) in &doc.symbols {
        tus[sym.file.map_or(unknown, |f| f as usize)]
            .1
            .push((id, sym));
    }
    tus
}

/// Writes `doc` as a v4 binary profile, in compact mode if `compact`. Layout: header, summary,
/// file names, then per TU its string table and symbol names, then one symbol info section
/// per top-level symbol (by ID), then the preserved unknown sections.
pub fn write_binary(doc: &Document, compact: bool, out: &mut impl std::io::Write) -> Result<()> {
    doc.validate()?;
    if let Some(f) = doc.files.iter().find(|f| f.is_empty() || f.contains(&0)) {
        return Err(Error::UnsupportedForWriting(if f.is_empty() {
            "a named file entry cannot have an empty name"
        } else {
            "a file name cannot contain a NUL byte"
        }));
    }
    let tus = tus(doc);
    let mut sections: Vec<Vec<u8>> = Vec::new();
    sections.push(section(SECTION_SUMMARY, compact, |o| {
        let s = &doc.summary;
        for v in s.scalars().into_iter().chain([s.entries.len() as u64]) {
            o.uint(v, 8);
        }
        for e in &s.entries {
            o.uint(e.cutoff.into(), 4);
            o.uint(e.min_count, 8);
            o.uint(e.num_counts, 8);
        }
    }));
    sections.push(Vec::new()); // file names, once the indices are known
    let first_info = 2 + 2 * tus.len();
    let mut info_index: BTreeMap<u32, usize> = BTreeMap::new();
    for (&id, sym) in &doc.symbols {
        if sym.info.is_some() {
            info_index.insert(id, first_info + info_index.len());
        }
    }
    let mut file_entries = Vec::new();
    for (name, symbols) in &tus {
        let mut strings: Vec<&[u8]> = symbols.iter().map(|(_, s)| &s.name[..]).collect();
        strings.sort_unstable();
        strings.dedup();
        let string_index = sections.len();
        sections.push(section(SECTION_STRING_TABLE, compact, |o| {
            write_trie(&strings, o)
        }));
        let names_index = sections.len();
        sections.push(section(SECTION_SYMBOL_NAMES, compact, |o| {
            o.uint(symbols.len() as u64, 4);
            for (id, sym) in symbols {
                let s = strings.binary_search(&&sym.name[..]).expect("listed above");
                o.uint(s as u64, 4);
                o.uint((*id).into(), 4);
                let info = info_index.get(id).map_or(NO_SYMBOL_INFO, |&i| i as u32);
                o.uint(info.into(), 4);
            }
        }));
        let (start, end) = match (symbols.first(), symbols.last()) {
            (Some(a), Some(b)) => (a.0, b.0 + 1),
            _ => (0, 0),
        };
        file_entries.push((*name, string_index, names_index, start, end));
    }
    sections[1] = section(SECTION_FILE_NAMES, compact, |o| {
        o.uint(file_entries.len() as u64, 4);
        for &(name, strings, names, start, end) in &file_entries {
            o.uint(name.len() as u64 + 1, 4);
            o.bytes(name);
            o.byte(0);
            o.uint(strings as u64, 4);
            o.uint(names as u64, 4);
            o.uint(start.into(), 4);
            o.uint(end.into(), 4);
        }
    });
    for sym in doc.symbols.values() {
        if let Some(info) = &sym.info {
            sections.push(section(SECTION_SYMBOL_INFO, compact, |o| {
                o.uint(info.head, 8);
                o.uint(info.timestamp, 8);
                write_body(o, &info.body);
            }));
        }
    }
    for u in &doc.unknown_sections {
        sections.push(section(u.kind, u.compact, |o| o.bytes(&u.payload)));
    }
    if sections.len() > u32::MAX as usize {
        return Err(Error::UnsupportedForWriting("more than 2^32 sections"));
    }
    let header = header(&sections, compact);
    out.write_all(&header)?;
    for s in &sections {
        out.write_all(s)?;
    }
    Ok(())
}

/// The header for `sections` placed back to back after it. In compact mode the header's
/// length depends on the offsets it holds, so it is recomputed until it stops growing.
fn header(sections: &[Vec<u8>], compact: bool) -> Vec<u8> {
    let mut len = 0usize;
    loop {
        let mut o = Output::new(compact);
        o.bytes(&MAGIC.to_be_bytes());
        o.bytes(&VERSION.to_be_bytes());
        let mut h = Output::new(compact);
        h.uint(sections.len() as u64 - 2, 7);
        let mut offset = len;
        for s in sections {
            h.uint(offset as u64, 8);
            h.uint(s.len() as u64, 8);
            offset += s.len();
        }
        o.byte(if compact { COMPACT } else { 0 });
        o.bytes(&h.buf);
        if o.buf.len() == len {
            return o.buf;
        }
        len = o.buf.len();
    }
}
