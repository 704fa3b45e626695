//! The textual GCOV v4 format (proposal section 5). The writer's layout is the proposal's
//! example byte for byte: two-space indents, one entry per line, detailed entries and call
//! targets on one line, a blank line between top-level blocks.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::Arc;

use super::{
    Body, Document, Inlined, Symbol, SymbolInfo, MAX_DISCRIMINATOR, MAX_LINE_OFFSET, MAX_NESTING,
};
use crate::sampleprof::error::{Error, Result};
use crate::sampleprof::model::LineLocation;
use crate::sampleprof::summary::{Summary, SummaryEntry};

/// Our extension section naming symbols that the grammar has no other place for.
const DECLARED_SYMBOLS: &[u8] = b"declared_symbols";

/// Whether `data` looks like a v4 text profile: its first token is `filenames` then `=`.
pub fn is_text(data: &[u8]) -> bool {
    let mut p = Parser { s: data, pos: 0 };
    p.ws();
    if !p.rest().starts_with(b"filenames") {
        return false;
    }
    p.pos += b"filenames".len();
    p.ws();
    p.rest().first() == Some(&b'=')
}

// ---------------------------------------------------------------------------------------------
// Reading

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

/// What a header says about a symbol, and where it said it first.
struct Declaration {
    name: Arc<[u8]>,
    file: Option<u32>,
    at: usize,
}

struct Reader<'a> {
    p: Parser<'a>,
    files: usize,
    declared: BTreeMap<u32, Declaration>,
    infos: BTreeMap<u32, SymbolInfo>,
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a [u8] {
        &self.s[self.pos..]
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.s.get(self.pos) {
            self.pos += 1;
        }
    }

    /// The next non-blank byte, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.pos).copied()
    }

    fn error(&self, at: usize, message: String) -> Error {
        let before = &self.s[..at.min(self.s.len())];
        let line = 1 + memchr::memchr_iter(b'\n', before).count();
        let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
        Error::V4Text {
            line,
            column: 1 + at - line_start,
            message,
        }
    }

    fn found(&self) -> String {
        match self.s.get(self.pos) {
            None => "end of input".to_string(),
            Some(_) => {
                let end = (self.pos + 20).min(self.s.len());
                let shown = String::from_utf8_lossy(&self.s[self.pos..end]);
                format!("'{}'", shown.split('\n').next().unwrap_or(""))
            }
        }
    }

    fn expected(&mut self, what: &str) -> Error {
        self.ws();
        self.error(self.pos, format!("expected {what}, found {}", self.found()))
    }

    fn eat(&mut self, token: &[u8]) -> bool {
        self.ws();
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, token: &str) -> Result<()> {
        if self.eat(token.as_bytes()) {
            Ok(())
        } else {
            Err(self.expected(&format!("'{token}'")))
        }
    }

    /// A section keyword, `[a-z][a-z0-9_]*`.
    fn keyword(&mut self) -> Result<&'a [u8]> {
        self.ws();
        let start = self.pos;
        if !self.s.get(start).is_some_and(u8::is_ascii_lowercase) {
            return Err(self.expected("a section keyword"));
        }
        let len = self.rest()[1..]
            .iter()
            .take_while(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || **b == b'_')
            .count();
        self.pos += 1 + len;
        Ok(&self.s[start..self.pos])
    }

    fn number(&mut self, max: u64, what: &str) -> Result<u64> {
        self.ws();
        let start = self.pos;
        let digits = self
            .rest()
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits == 0 {
            return Err(self.expected(what));
        }
        self.pos += digits;
        let value = self.s[start..self.pos]
            .iter()
            .try_fold(0u64, |acc, &b| {
                acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
            })
            .filter(|&v| v <= max);
        value.ok_or_else(|| self.error(start, format!("{what} is larger than {max}")))
    }

    fn quoted(&mut self) -> Result<&'a [u8]> {
        if !self.eat(b"\"") {
            return Err(self.expected("a quoted string"));
        }
        let start = self.pos;
        let len = memchr::memchr(b'"', self.rest())
            .ok_or_else(|| self.error(start - 1, "unterminated quoted string".to_string()))?;
        self.pos += len + 1;
        Ok(&self.s[start..start + len])
    }

    /// `{ … }` of an unknown section: braces balanced, quoted strings opaque.
    fn skip_braced(&mut self) -> Result<()> {
        self.expect("{")?;
        let open = self.pos - 1;
        let mut depth = 1usize;
        while depth > 0 {
            let Some(&b) = self.s.get(self.pos) else {
                return Err(self.error(open, "unbalanced '{' of an unknown section".to_string()));
            };
            self.pos += 1;
            match b {
                b'{' => depth += 1,
                b'}' => depth -= 1,
                b'"' => {
                    let len = memchr::memchr(b'"', self.rest()).ok_or_else(|| {
                        self.error(self.pos - 1, "unterminated quoted string".to_string())
                    })?;
                    self.pos += len + 1;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// `{ item (, item)* }` or `{}`.
    fn list(&mut self, mut item: impl FnMut(&mut Self) -> Result<()>) -> Result<()> {
        self.expect("{")?;
        if self.eat(b"}") {
            return Ok(());
        }
        loop {
            item(self)?;
            if self.eat(b"}") {
                return Ok(());
            }
            if !self.eat(b",") {
                return Err(self.expected("',' or '}'"));
            }
        }
    }

    fn field(&mut self, name: &str) -> Result<u64> {
        self.expect(name)?;
        self.expect("=")?;
        self.number(u64::MAX, name)
    }

    /// A symbol ID; 2^32-1 cannot be one (`SYMBOL_ID_END` is exclusive and 4 bytes wide).
    fn symbol_id(&mut self) -> Result<u32> {
        Ok(self.number(u64::from(u32::MAX - 1), "a symbol ID")? as u32)
    }

    fn location(&mut self) -> Result<LineLocation> {
        let line = self.number(MAX_LINE_OFFSET.into(), "a line offset")? as u32;
        let disc = if self.eat(b".") {
            self.number(MAX_DISCRIMINATOR.into(), "a discriminator")? as u32
        } else {
            0
        };
        Ok(LineLocation::new(line, disc))
    }
}

impl<'a> Reader<'a> {
    fn file_id(&mut self) -> Result<Option<u32>> {
        if self.p.eat(b"-1") {
            return Ok(None);
        }
        let at = self.p.pos;
        let f = self.p.number(u32::MAX.into(), "a file ID")? as usize;
        if f >= self.files {
            return Err(self.p.error(
                at,
                format!("file ID {f} is not below the {} file names", self.files),
            ));
        }
        Ok(Some(f as u32))
    }

    /// Records that `id` is `name` in `file`; repeated headers must agree.
    fn declare(&mut self, id: u32, name: &[u8], file: Option<u32>, at: usize) -> Result<()> {
        if let Some(d) = self.declared.get(&id) {
            if &d.name[..] != name || d.file != file {
                let (line, _) = self.line_col(d.at);
                return Err(self.p.error(
                    at,
                    format!("symbol ID {id} was declared on line {line} with another name or file"),
                ));
            }
            return Ok(());
        }
        self.declared.insert(
            id,
            Declaration {
                name: Arc::from(name),
                file,
                at,
            },
        );
        Ok(())
    }

    fn line_col(&self, at: usize) -> (usize, usize) {
        match self.p.error(at, String::new()) {
            Error::V4Text { line, column, .. } => (line, column),
            _ => (0, 0),
        }
    }

    fn symbol_id(&mut self) -> Result<u32> {
        self.p.symbol_id()
    }

    /// `"name":FILE(ID:HEAD:TIMESTAMP) = { sections }`
    fn symbol(&mut self) -> Result<()> {
        let (at, name, file, id) = self.symbol_start()?;
        self.p.expect(":")?;
        let head = self.p.number(u64::MAX, "a head count")?;
        self.p.expect(":")?;
        let timestamp = self.p.number(u64::MAX, "a timestamp")?;
        self.p.expect(")")?;
        self.p.expect("=")?;
        self.declare(id, name, file, at)?;
        let body = self.sections(0)?;
        if self.infos.contains_key(&id) {
            return Err(self
                .p
                .error(at, format!("symbol ID {id} has two top-level instances")));
        }
        self.infos.insert(
            id,
            SymbolInfo {
                head,
                timestamp,
                body,
            },
        );
        Ok(())
    }

    /// `{ section (, section)* }` of a symbol or inlined function.
    fn sections(&mut self, depth: usize) -> Result<Body> {
        if depth > MAX_NESTING {
            return Err(self.p.error(
                self.p.pos,
                format!("inlining nested deeper than {MAX_NESTING}"),
            ));
        }
        let mut body = Body::default();
        self.p.expect("{")?;
        if self.p.eat(b"}") {
            return Ok(body);
        }
        loop {
            let keyword = self.p.keyword()?;
            self.p.expect("=")?;
            match keyword {
                b"locations" => self.p.list(|p| {
                    let loc = p.location()?;
                    p.expect("=")?;
                    body.counts
                        .push((loc, p.number(u64::MAX, "a sample count")?));
                    Ok(())
                })?,
                b"callsites" => self.p.list(|p| {
                    let loc = p.location()?;
                    p.expect("->")?;
                    let mut targets = Vec::new();
                    p.list(|p| {
                        let id = p.symbol_id()?;
                        p.expect("=")?;
                        targets.push((id, p.number(u64::MAX, "a call count")?));
                        Ok(())
                    })?;
                    if !targets.is_empty() {
                        body.calls.push((loc, targets));
                    }
                    Ok(())
                })?,
                b"inlined" => {
                    self.p.expect("{")?;
                    if !self.p.eat(b"}") {
                        loop {
                            let inl = self.inlined(depth)?;
                            body.inlined.push(inl);
                            if self.p.eat(b"}") {
                                break;
                            }
                            if !self.p.eat(b",") {
                                return Err(self.p.expected("',' or '}'"));
                            }
                        }
                    }
                }
                _ => self.p.skip_braced()?,
            }
            if self.p.eat(b"}") {
                return Ok(body);
            }
            if !self.p.eat(b",") {
                return Err(self.p.expected("',' or '}'"));
            }
        }
    }

    /// `LOC = "name":FILE(ID) = { sections }`
    fn inlined(&mut self, depth: usize) -> Result<Inlined> {
        let loc = self.p.location()?;
        self.p.expect("=")?;
        let (id, _) = self.declaration()?;
        self.p.expect("=")?;
        let body = self.sections(depth + 1)?;
        Ok(Inlined {
            loc,
            symbol: id,
            body,
        })
    }

    /// `"name":FILE(ID`, common to declarations and top-level instances: the offset where it
    /// starts, name, file and ID.
    fn symbol_start(&mut self) -> Result<(usize, &'a [u8], Option<u32>, u32)> {
        self.p.ws();
        let at = self.p.pos;
        let name = self.p.quoted()?;
        self.p.expect(":")?;
        let file = self.file_id()?;
        self.p.expect("(")?;
        let id = self.symbol_id()?;
        Ok((at, name, file, id))
    }

    /// `"name":FILE(ID)`
    fn declaration(&mut self) -> Result<(u32, usize)> {
        let (at, name, file, id) = self.symbol_start()?;
        self.p.expect(")")?;
        self.declare(id, name, file, at)?;
        Ok((id, at))
    }

    fn summary(&mut self) -> Result<Summary> {
        let p = &mut self.p;
        p.expect("{")?;
        let mut s = Summary::default();
        for (name, slot) in [
            ("total_count", &mut s.total_count),
            ("max_count", &mut s.max_count),
            ("max_fn_count", &mut s.max_function_count),
            ("num_counts", &mut s.num_counts),
            ("num_functions", &mut s.num_functions),
        ] {
            *slot = p.field(name)?;
            p.expect(",")?;
        }
        let n = p.field("num_detailed_entries")?;
        p.expect(",")?;
        p.expect("detailed_entries")?;
        p.expect("=")?;
        let at = p.pos;
        p.list(|p| {
            p.expect("{")?;
            let cutoff = p.field("cutoff")?;
            let cutoff = u32::try_from(cutoff)
                .map_err(|_| p.error(p.pos, format!("cutoff {cutoff} is larger than 2^32-1")))?;
            p.expect(",")?;
            let min_count = p.field("min_count")?;
            p.expect(",")?;
            let num_counts = p.field("num_counts")?;
            p.expect("}")?;
            s.entries.push(SummaryEntry {
                cutoff,
                min_count,
                num_counts,
            });
            Ok(())
        })?;
        if n != s.entries.len() as u64 {
            return Err(p.error(
                at,
                format!(
                    "num_detailed_entries is {n}, but {} entries follow",
                    s.entries.len()
                ),
            ));
        }
        p.expect("}")?;
        Ok(s)
    }

    fn document(mut self) -> Result<Document> {
        let mut doc = Document::default();
        self.p.expect("filenames")?;
        self.p.expect("=")?;
        let mut files = Vec::new();
        self.p.list(|p| {
            p.ws();
            let at = p.pos;
            let name = p.quoted()?;
            if name.is_empty() || name.contains(&0) {
                return Err(p.error(
                    at,
                    "a file name must be non-empty and without NUL bytes (file ID -1 stands for an unknown file)".to_string(),
                ));
            }
            files.push(Arc::<[u8]>::from(name));
            Ok(())
        })?;
        self.files = files.len();
        doc.files = files;
        let mut summary = None;
        loop {
            match self.p.peek() {
                None => break,
                Some(b'"') => {
                    if summary.is_none() {
                        return Err(self.p.expected("the summary before the symbols"));
                    }
                    self.symbol()?;
                }
                Some(_) => {
                    self.p.ws();
                    let at = self.p.pos;
                    let keyword = self.p.keyword()?;
                    self.p.expect("=")?;
                    match keyword {
                        b"summary" if summary.is_none() => summary = Some(self.summary()?),
                        b"summary" | b"filenames" => {
                            return Err(self.p.error(
                                at,
                                format!("a second '{}' section", String::from_utf8_lossy(keyword)),
                            ))
                        }
                        DECLARED_SYMBOLS => {
                            let mut ids = Vec::new();
                            self.p.expect("{")?;
                            if !self.p.eat(b"}") {
                                loop {
                                    ids.push(self.declaration()?);
                                    if self.p.eat(b"}") {
                                        break;
                                    }
                                    if !self.p.eat(b",") {
                                        return Err(self.p.expected("',' or '}'"));
                                    }
                                }
                            }
                        }
                        _ => self.p.skip_braced()?,
                    }
                }
            }
        }
        doc.summary = summary.ok_or_else(|| self.p.expected("'summary'"))?;
        for (id, d) in std::mem::take(&mut self.declared) {
            doc.symbols.insert(
                id,
                Symbol {
                    name: d.name,
                    file: d.file,
                    info: self.infos.remove(&id),
                },
            );
        }
        doc.validate()?;
        Ok(doc)
    }
}

/// Reads a v4 text profile.
pub fn read_text(data: &[u8]) -> Result<Document> {
    Reader {
        p: Parser { s: data, pos: 0 },
        files: 0,
        declared: BTreeMap::new(),
        infos: BTreeMap::new(),
    }
    .document()
}

// ---------------------------------------------------------------------------------------------
// Writing

struct Writer<'a, W: Write> {
    out: W,
    doc: &'a Document,
    num: itoa::Buffer,
}

impl<W: Write> Writer<'_, W> {
    fn s(&mut self, s: &[u8]) -> std::io::Result<()> {
        self.out.write_all(s)
    }

    fn n(&mut self, v: impl itoa::Integer) -> std::io::Result<()> {
        self.out.write_all(self.num.format(v).as_bytes())
    }

    fn indent(&mut self, level: usize) -> std::io::Result<()> {
        for _ in 0..level {
            self.out.write_all(b"  ")?;
        }
        Ok(())
    }

    fn quoted(&mut self, s: &[u8]) -> std::io::Result<()> {
        self.s(b"\"")?;
        self.s(s)?;
        self.s(b"\"")
    }

    fn file_id(&mut self, file: Option<u32>) -> std::io::Result<()> {
        match file {
            Some(f) => self.n(f),
            None => self.s(b"-1"),
        }
    }

    fn location(&mut self, loc: LineLocation) -> std::io::Result<()> {
        self.n(loc.line)?;
        if loc.disc != 0 {
            self.s(b".")?;
            self.n(loc.disc)?;
        }
        Ok(())
    }

    /// `"name":FILE(ID` of symbol `id` (the caller closes the parenthesis).
    fn header(&mut self, id: u32) -> std::io::Result<()> {
        let sym = &self.doc.symbols[&id];
        self.quoted(&sym.name)?;
        self.s(b":")?;
        self.file_id(sym.file)?;
        self.s(b"(")?;
        self.n(id)
    }

    /// Items of a `{ … }` list, one per line at `level + 1`, then the closing brace.
    fn lines<T>(
        &mut self,
        items: &[T],
        level: usize,
        mut item: impl FnMut(&mut Self, &T) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        self.s(b"{\n")?;
        for (i, x) in items.iter().enumerate() {
            self.indent(level + 1)?;
            item(self, x)?;
            self.s(if i + 1 < items.len() { b",\n" } else { b"\n" })?;
        }
        self.indent(level)?;
        self.s(b"}")
    }

    /// `name = ` opening a section of a body at `level`; `first` tells whether a separator
    /// from the previous section is needed.
    fn section_start(&mut self, name: &[u8], level: usize, first: bool) -> std::io::Result<()> {
        self.s(if first { b"\n" } else { b",\n" })?;
        self.indent(level + 1)?;
        self.s(name)?;
        self.s(b" = ")
    }

    fn body(&mut self, body: &Body, level: usize) -> std::io::Result<()> {
        if body.counts.is_empty() && body.calls.is_empty() && body.inlined.is_empty() {
            return self.s(b"{}");
        }
        self.s(b"{")?;
        let mut first = true;
        if !body.counts.is_empty() {
            self.section_start(b"locations", level, first)?;
            first = false;
            self.lines(&body.counts, level + 1, |w, &(loc, count)| {
                w.location(loc)?;
                w.s(b" = ")?;
                w.n(count)
            })?;
        }
        if !body.calls.is_empty() {
            self.section_start(b"callsites", level, first)?;
            first = false;
            self.lines(&body.calls, level + 1, |w, (loc, targets)| {
                w.location(*loc)?;
                w.s(b" -> {")?;
                for (i, &(id, count)) in targets.iter().enumerate() {
                    if i > 0 {
                        w.s(b", ")?;
                    }
                    w.n(id)?;
                    w.s(b" = ")?;
                    w.n(count)?;
                }
                w.s(b"}")
            })?;
        }
        if !body.inlined.is_empty() {
            self.section_start(b"inlined", level, first)?;
            self.lines(&body.inlined, level + 1, |w, inl| {
                w.location(inl.loc)?;
                w.s(b" = ")?;
                w.header(inl.symbol)?;
                w.s(b") = ")?;
                w.body(&inl.body, level + 2)
            })?;
        }
        self.s(b"\n")?;
        self.indent(level)?;
        self.s(b"}")
    }

    fn summary(&mut self, s: &Summary) -> std::io::Result<()> {
        self.s(b"summary = {\n")?;
        for (name, v) in [
            (&b"total_count"[..], s.total_count),
            (b"max_count", s.max_count),
            (b"max_fn_count", s.max_function_count),
            (b"num_counts", s.num_counts),
            (b"num_functions", s.num_functions),
            (b"num_detailed_entries", s.entries.len() as u64),
        ] {
            self.s(b"  ")?;
            self.s(name)?;
            self.s(b" = ")?;
            self.n(v)?;
            self.s(b",\n")?;
        }
        self.s(b"  detailed_entries = ")?;
        if s.entries.is_empty() {
            self.s(b"{}")?;
        } else {
            self.lines(&s.entries, 1, |w, e| {
                w.s(b"{cutoff = ")?;
                w.n(e.cutoff)?;
                w.s(b", min_count = ")?;
                w.n(e.min_count)?;
                w.s(b", num_counts = ")?;
                w.n(e.num_counts)?;
                w.s(b"}")
            })?;
        }
        self.s(b"\n}\n")
    }
}

/// IDs of the symbols that appear in an inlined-function header somewhere.
fn inlined_ids(doc: &Document) -> BTreeSet<u32> {
    fn walk(body: &Body, ids: &mut BTreeSet<u32>) {
        for inl in &body.inlined {
            ids.insert(inl.symbol);
            walk(&inl.body, ids);
        }
    }
    let mut ids = BTreeSet::new();
    for sym in doc.symbols.values() {
        if let Some(info) = &sym.info {
            walk(&info.body, &mut ids);
        }
    }
    ids
}

/// Writes `doc` as v4 text. Unknown sections and locations have no text form and are left
/// out.
pub fn write_text(doc: &Document, out: &mut impl Write) -> Result<()> {
    doc.validate()?;
    let names = doc
        .files
        .iter()
        .chain(doc.symbols.values().map(|s| &s.name));
    if names.into_iter().any(|n| n.contains(&b'"')) {
        return Err(Error::UnsupportedForWriting(
            "a name containing '\"' has no GCOV v4 text form",
        ));
    }
    let mut w = Writer {
        out: std::io::BufWriter::new(out),
        doc,
        num: itoa::Buffer::new(),
    };
    w.s(b"filenames = ")?;
    if doc.files.is_empty() {
        w.s(b"{}")?;
    } else {
        w.lines(&doc.files, 0, |w, f| w.quoted(f))?;
    }
    w.s(b"\n\n")?;
    w.summary(&doc.summary)?;
    let inlined = inlined_ids(doc);
    let undeclared: Vec<u32> = doc
        .symbols
        .iter()
        .filter(|(id, s)| s.info.is_none() && !inlined.contains(id))
        .map(|(&id, _)| id)
        .collect();
    if !undeclared.is_empty() {
        w.s(b"\n")?;
        w.s(DECLARED_SYMBOLS)?;
        w.s(b" = ")?;
        w.lines(&undeclared, 0, |w, &id| {
            w.header(id)?;
            w.s(b")")
        })?;
        w.s(b"\n")?;
    }
    for (&id, sym) in &doc.symbols {
        let Some(info) = &sym.info else {
            continue;
        };
        w.s(b"\n")?;
        w.header(id)?;
        w.s(b":")?;
        w.n(info.head)?;
        w.s(b":")?;
        w.n(info.timestamp)?;
        w.s(b") = ")?;
        w.body(&info.body, 0)?;
        w.s(b"\n")?;
    }
    w.out.flush()?;
    Ok(())
}
