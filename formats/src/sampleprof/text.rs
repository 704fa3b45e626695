//! LLVM's sample profile text format (`SampleProfileReaderText` / `SampleProfileWriterText`
//! of LLVM 19).
//!
//! The reader reproduces LLVM's parser including its odd corners, because profiles that
//! llvm-profdata accepts must be accepted here and vice versa: positions are computed with
//! `StringRef` semantics (out-of-range starts clamp, `npos` arithmetic wraps), numbers are
//! strict unsigned decimal, a line offset above 0xFFFF is refused only without a
//! discriminator, a metadata line resets the attributes it does not set, and call-target
//! names are split at ":NUM" anchors so they may contain ':' and spaces.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use super::error::{Error, Result, TextExpectation};
use super::model::{
    attr, Context, ContextFrame, FunctionId, FunctionSamples, LineLocation, Profile,
};

const NPOS: usize = usize::MAX;

/// `StringRef::substr(start, n)`.
fn substr(s: &[u8], start: usize, n: usize) -> &[u8] {
    let start = start.min(s.len());
    let n = n.min(s.len() - start);
    &s[start..start + n]
}

fn tail(s: &[u8], start: usize) -> &[u8] {
    substr(s, start, NPOS)
}

fn find(s: &[u8], c: u8) -> usize {
    memchr::memchr(c, s).unwrap_or(NPOS)
}

/// `StringRef::rfind(c, from)`: the last `c` strictly before `min(from, len)`.
fn rfind(s: &[u8], c: u8, from: usize) -> usize {
    memchr::memrchr(c, &s[..from.min(s.len())]).unwrap_or(NPOS)
}

fn find_first_not_space(s: &[u8]) -> usize {
    s.iter().position(|&b| b != b' ').unwrap_or(NPOS)
}

/// `StringRef::getAsInteger(10, u64)`: one or more ASCII digits, nothing else, no overflow.
pub(crate) fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u64, |acc, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

fn parse_u32(s: &[u8]) -> Option<u32> {
    parse_u64(s).and_then(|v| u32::try_from(v).ok())
}

/// `StringRef::getAsInteger(10, int)`: an optional '-' then digits, within `i32`.
fn parse_i32(s: &[u8]) -> Option<i32> {
    match s.split_first() {
        Some((b'-', rest)) => {
            let v = parse_u64(rest)?;
            i32::try_from(-(i64::try_from(v).ok()?)).ok()
        }
        _ => i32::try_from(parse_u64(s)?).ok(),
    }
}

/// `StringRef::trim()`: " \t\n\v\f\r" on both ends.
fn trim(s: &[u8]) -> &[u8] {
    let ws = |b: &u8| b" \t\n\x0b\x0c\r".contains(b);
    let start = s.iter().position(|b| !ws(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !ws(b)).map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// The parsed header `NAME:TOTAL:HEAD` (LLVM `ParseHead`).
fn parse_head(line: &[u8]) -> Option<(&[u8], u64, u64)> {
    if line.first() == Some(&b' ') {
        return None;
    }
    let n2 = rfind(line, b':', NPOS);
    let n1 = rfind(line, b':', n2.wrapping_sub(1));
    let name = substr(line, 0, n1);
    let total = parse_u64(substr(
        line,
        n1.wrapping_add(1),
        n2.wrapping_sub(n1).wrapping_sub(1),
    ))?;
    let head = parse_u64(tail(line, n2.wrapping_add(1)))?;
    Some((name, total, head))
}

enum Line<'a> {
    Body {
        loc: LineLocation,
        count: u64,
        targets: Vec<(&'a [u8], u64)>,
    },
    Callsite {
        loc: LineLocation,
        callee: &'a [u8],
        total: u64,
    },
    Metadata {
        checksum: u64,
        attributes: u32,
    },
}

/// `!CFGChecksum: N` or `!Attributes: N` (LLVM `parseMetadata`).
fn parse_metadata(s: &[u8]) -> Option<Line<'_>> {
    if let Some(rest) = s.strip_prefix(b"!CFGChecksum:") {
        return Some(Line::Metadata {
            checksum: parse_u64(trim(rest))?,
            attributes: 0,
        });
    }
    let rest = s.strip_prefix(b"!Attributes:")?;
    Some(Line::Metadata {
        checksum: 0,
        attributes: parse_u32(trim(rest))?,
    })
}

/// A body, call-site or metadata line at `depth` ≥ 1 leading spaces (LLVM `ParseLine`).
fn parse_line(input: &[u8], depth: usize) -> Option<Line<'_>> {
    if input[depth] == b'!' {
        return parse_metadata(&input[depth..]);
    }
    let n1 = find(input, b':');
    let loc_text = substr(input, depth, n1.wrapping_sub(depth));
    let loc = match find(loc_text, b'.') {
        NPOS => {
            let line = parse_u32(loc_text).filter(|&l| l <= 0xFFFF)?;
            LineLocation::new(line, 0)
        }
        dot => LineLocation::new(
            parse_u32(&loc_text[..dot])?,
            parse_u32(&loc_text[dot + 1..])?,
        ),
    };
    let rest = tail(input, n1.wrapping_add(2));
    if rest.first().is_some_and(u8::is_ascii_digit) {
        parse_body(rest, loc)
    } else {
        let n3 = memchr::memrchr(b':', rest).unwrap_or(NPOS);
        let callee = substr(rest, 0, n3);
        let total = parse_u64(tail(rest, n3.wrapping_add(1)))?;
        Some(Line::Callsite { loc, callee, total })
    }
}

/// `COUNT[ TARGET:COUNT]*`, targets found at ":NUM" anchors.
///
/// Linear in the line's length: the space that ends a candidate count is found once per
/// target and reused while the candidate colons stay before it (LLVM searches again for
/// every colon, quadratic in the colons of a target), and repeated targets are found through
/// a map once a line has more than a few.
fn parse_body(mut rest: &[u8], loc: LineLocation) -> Option<Line<'_>> {
    const FEW_TARGETS: usize = 8;
    let mut n3 = find(rest, b' ');
    let count = parse_u64(substr(rest, 0, n3))?;
    let mut targets: Vec<(&[u8], u64)> = Vec::new();
    let mut index: HashMap<&[u8], usize> = HashMap::new();
    while n3 != NPOS {
        n3 = n3.wrapping_add(find_first_not_space(tail(rest, n3)));
        rest = tail(rest, n3);
        n3 = find(rest, b':');
        if n3 == NPOS || n3 == 0 {
            return None;
        }
        // The first space after the candidate colon `n3` (or the end of the line).
        let mut space = 0;
        let (target, target_count, n4) = loop {
            if space <= n3 {
                space = match find(tail(rest, n3 + 1), b' ') {
                    NPOS => rest.len(),
                    n => n3 + n + 1,
                };
            }
            let n4 = space;
            if let Some(c) = parse_u64(substr(rest, n3 + 1, n4.wrapping_sub(n3).wrapping_sub(1))) {
                break (substr(rest, 0, n3), c, n4);
            }
            match find(tail(rest, n3 + 1), b':') {
                NPOS => return None,
                n5 => n3 += n5 + 1,
            }
        };
        // A target repeated on one line: the last count wins (LLVM's DenseMap assignment).
        if targets.len() < FEW_TARGETS {
            match targets.iter_mut().find(|(t, _)| *t == target) {
                Some(slot) => slot.1 = target_count,
                None => targets.push((target, target_count)),
            }
        } else {
            if index.is_empty() {
                index.extend(targets.iter().enumerate().map(|(i, (t, _))| (*t, i)));
            }
            match index.get(target) {
                Some(&i) => targets[i].1 = target_count,
                None => {
                    index.insert(target, targets.len());
                    targets.push((target, target_count));
                }
            }
        }
        if n4 == rest.len() {
            break;
        }
        n3 = n4;
    }
    Some(Line::Body {
        loc,
        count,
        targets,
    })
}

/// Lines as LLVM's `line_iterator(SkipBlanks=true, CommentMarker='#')` yields them: the
/// buffer ends at its first NUL, empty lines and lines starting with '#' are skipped, "\r\n"
/// ends a line, numbers are 1-based and count skipped lines.
fn lines(data: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut rest = &data[..memchr::memchr(0, data).unwrap_or(data.len())];
    let mut number = 0usize;
    std::iter::from_fn(move || loop {
        if rest.is_empty() {
            return None;
        }
        number += 1;
        let (mut line, terminated) = match memchr::memchr(b'\n', rest) {
            Some(end) => (&rest[..end], true),
            None => (rest, false),
        };
        rest = &rest[(line.len() + 1).min(rest.len())..];
        if terminated && line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        return Some((number, line));
    })
}

/// Whether `data` looks like a text profile (LLVM `hasFormat`): the first line that is
/// neither empty nor a column-0 comment parses as a function header.
pub(crate) fn is_text(data: &[u8]) -> bool {
    lines(data)
        .next()
        .is_some_and(|(_, l)| parse_head(l).is_some())
}

/// Interns names so that a name repeated across the profile is stored once.
#[derive(Default)]
pub(crate) struct Names<'a> {
    map: HashMap<&'a [u8], FunctionId>,
}

impl<'a> Names<'a> {
    pub(crate) fn get(&mut self, name: &'a [u8]) -> FunctionId {
        self.map
            .entry(name)
            .or_insert_with(|| FunctionId::name(name))
            .clone()
    }
}

/// Parses a CS context `[a:1 @ b:2.3 @ leaf]` (LLVM `createCtxVectorFromStr`).
fn parse_context<'a>(text: &'a [u8], names: &mut Names<'a>) -> Context {
    let inner = substr(text, 1, text.len().wrapping_sub(2));
    let mut frames = Vec::new();
    let mut remain = inner;
    while !remain.is_empty() {
        let (frame, next) = match memchr::memmem::find(remain, b" @ ") {
            Some(i) => (&remain[..i], &remain[i + 3..]),
            None => (remain, &remain[remain.len()..]),
        };
        remain = next;
        let (func, loc_text) = match memchr::memchr(b':', frame) {
            Some(i) => (&frame[..i], &frame[i + 1..]),
            None => (frame, &frame[frame.len()..]),
        };
        let mut loc = LineLocation::default();
        if !loc_text.is_empty() {
            let (line, disc) = match memchr::memchr(b'.', loc_text) {
                Some(i) => (&loc_text[..i], &loc_text[i + 1..]),
                None => (loc_text, &loc_text[loc_text.len()..]),
            };
            // LLVM parses the line as a signed int and keeps 0 when that fails.
            loc.line = parse_i32(line).unwrap_or(0) as u32;
            if !disc.is_empty() {
                loc.disc = parse_u32(disc).unwrap_or(0);
            }
        }
        frames.push(ContextFrame {
            func: names.get(func),
            loc,
        });
    }
    if frames.is_empty() {
        // "[]": LLVM would index an empty vector; treat it as a context of one empty name.
        frames.push(ContextFrame {
            func: FunctionId::name(b""),
            loc: LineLocation::default(),
        });
    }
    Context::Cs(Arc::from(frames))
}

fn text_error(line: usize, expected: TextExpectation, found: &[u8]) -> Error {
    Error::Text {
        line,
        expected,
        found: crate::error::excerpt(found),
    }
}

/// Reads a text profile. Counter overflow is reported after the whole input is read, like
/// LLVM; any syntax error stops at its line.
pub fn read(data: &[u8]) -> Result<Profile> {
    if !is_text(data) {
        return Err(Error::UnrecognizedFormat);
    }
    let mut profile = Profile::default();
    let mut names = Names::default();
    let mut overflow = false;
    // Path from the current top-level profile down to the innermost open callee:
    // (location, callee) steps; depth = len + 1.
    let mut stack: Vec<(LineLocation, FunctionId)> = Vec::new();
    // The profile being read is kept out of the map (one map lookup per header, not per
    // line); a repeated header takes the earlier one out again, so samples still add up.
    let mut current: Option<(Context, FunctionSamples)> = None;
    let mut depth_metadata = 0usize;
    let mut top_level_checksums = 0usize;

    for (number, line) in lines(data) {
        let depth = find_first_not_space(line);
        if depth == NPOS || line[depth] == b'#' {
            continue;
        }
        if depth == 0 {
            let (name, total, head) = parse_head(line)
                .ok_or_else(|| text_error(number, TextExpectation::Header, line))?;
            depth_metadata = 0;
            let ctx = if name.first() == Some(&b'[') {
                parse_context(name, &mut names)
            } else {
                Context::Plain(names.get(name))
            };
            if let Some((c, f)) = current.take() {
                profile.functions.insert(c, f);
            }
            let mut fs = profile.functions.remove(&ctx).unwrap_or_default();
            overflow |= fs.add_total(total, 1);
            overflow |= fs.add_head(head, 1);
            current = Some((ctx, fs));
            stack.clear();
            continue;
        }
        let parsed = parse_line(line, depth)
            .ok_or_else(|| text_error(number, TextExpectation::Body, line))?;
        let is_metadata = matches!(parsed, Line::Metadata { .. });
        if !is_metadata && depth == depth_metadata {
            return Err(text_error(number, TextExpectation::MetadataLast, line));
        }
        stack.truncate(depth - 1);
        let Some((_, top)) = &mut current else {
            // Unreachable: the first line is a header (checked by `is_text`).
            return Err(text_error(number, TextExpectation::Header, line));
        };
        let fs = descend(top, &stack);
        match parsed {
            Line::Callsite { loc, callee, total } => {
                if stack.len() >= super::MAX_NESTING {
                    let shown = line.trim_ascii_start();
                    return Err(text_error(number, TextExpectation::ShallowerNesting, shown));
                }
                let id = names.get(callee);
                overflow |= fs.callee_mut(loc, id.clone()).add_total(total, 1);
                stack.push((loc, id));
                depth_metadata = 0;
            }
            Line::Body {
                loc,
                count,
                targets,
            } => {
                let rec = fs.body.entry(loc).or_default();
                for (t, c) in targets {
                    overflow |= rec.add_target(names.get(t), c, 1);
                }
                overflow |= rec.add_count(count, 1);
            }
            Line::Metadata {
                checksum,
                attributes,
            } => {
                if checksum != 0 {
                    fs.checksum = checksum;
                    if depth == 1 {
                        top_level_checksums += 1;
                    }
                }
                fs.attributes = attributes;
                if attributes & attr::SHOULD_BE_INLINED != 0 {
                    profile.kind.preinlined = true;
                }
                depth_metadata = depth;
            }
        }
    }
    if let Some((c, f)) = current.take() {
        profile.functions.insert(c, f);
    }
    if overflow {
        return Err(Error::CounterOverflow);
    }
    profile.kind.cs = profile.functions.keys().any(Context::is_cs);
    profile.kind.probe = top_level_checksums > 0;
    Ok(profile)
}

fn descend<'p>(
    mut fs: &'p mut FunctionSamples,
    path: &[(LineLocation, FunctionId)],
) -> &'p mut FunctionSamples {
    for (loc, id) in path {
        fs = fs.callee_mut(*loc, id.clone());
    }
    fs
}

/// Writes `profile` exactly as `llvm-profdata-19 merge --sample --text` does.
pub fn write(profile: &Profile, out: &mut impl Write) -> std::io::Result<()> {
    let mut w = TextWriter {
        out,
        kind_cs: profile.kind.cs,
        probe: profile.kind.probe,
        num: itoa::Buffer::new(),
    };
    for (ctx, fs) in profile.sorted_functions() {
        w.function(Some(ctx), None, fs, 0)?;
    }
    Ok(())
}

/// Writes top-level profiles of a context-less profile without pseudo probes one at a time,
/// in the order given, as [`write()`] writes them: for a profile built one function at a time
/// as it is written. [`write()`] uses the order of [`Profile::sorted_functions`].
pub fn write_functions(
    functions: impl IntoIterator<Item = (Context, FunctionSamples)>,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let mut w = TextWriter {
        out,
        kind_cs: false,
        probe: false,
        num: itoa::Buffer::new(),
    };
    for (ctx, fs) in functions {
        w.function(Some(&ctx), None, &fs, 0)?;
    }
    Ok(())
}

struct TextWriter<'w, W: Write> {
    out: &'w mut W,
    kind_cs: bool,
    probe: bool,
    num: itoa::Buffer,
}

impl<W: Write> TextWriter<'_, W> {
    fn number(&mut self, n: u64) -> std::io::Result<()> {
        self.out.write_all(self.num.format(n).as_bytes())
    }

    fn indent(&mut self, n: usize) -> std::io::Result<()> {
        const SPACES: [u8; 64] = [b' '; 64];
        let mut left = n;
        while left > 0 {
            let k = left.min(SPACES.len());
            self.out.write_all(&SPACES[..k])?;
            left -= k;
        }
        Ok(())
    }

    fn location(&mut self, loc: LineLocation) -> std::io::Result<()> {
        self.number(loc.line.into())?;
        if loc.disc != 0 {
            self.out.write_all(b".")?;
            self.number(loc.disc.into())?;
        }
        Ok(())
    }

    /// One function profile: a top-level one (`ctx`) or a callee inlined under a call site
    /// (`callee`), at `indent`.
    fn function(
        &mut self,
        ctx: Option<&Context>,
        callee: Option<&FunctionId>,
        fs: &FunctionSamples,
        indent: usize,
    ) -> std::io::Result<()> {
        // In CS profiles LLVM brackets every header, nested callees included.
        if self.kind_cs {
            self.out.write_all(b"[")?;
        }
        match (ctx, callee) {
            (Some(c), _) => c.write_to(self.out)?,
            (None, Some(f)) => f.write_to(self.out)?,
            (None, None) => {}
        }
        if self.kind_cs {
            self.out.write_all(b"]")?;
        }
        self.out.write_all(b":")?;
        self.number(fs.total)?;
        if indent == 0 {
            self.out.write_all(b":")?;
            self.number(fs.head)?;
        }
        self.out.write_all(b"\n")?;

        for (loc, rec) in &fs.body {
            self.indent(indent + 1)?;
            self.location(*loc)?;
            self.out.write_all(b": ")?;
            self.number(rec.count)?;
            for (t, c) in rec.sorted_targets() {
                self.out.write_all(b" ")?;
                t.write_to(self.out)?;
                self.out.write_all(b":")?;
                self.number(c)?;
            }
            self.out.write_all(b"\n")?;
        }
        for (loc, callees) in &fs.callsites {
            for (name, callee) in callees {
                self.indent(indent + 1)?;
                self.location(*loc)?;
                self.out.write_all(b": ")?;
                self.function(None, Some(name), callee, indent + 1)?;
            }
        }
        if self.probe {
            self.indent(indent + 1)?;
            self.out.write_all(b"!CFGChecksum: ")?;
            self.number(fs.checksum)?;
            self.out.write_all(b"\n")?;
        }
        if fs.attributes != 0 {
            self.indent(indent + 1)?;
            self.out.write_all(b"!Attributes: ")?;
            self.number(fs.attributes.into())?;
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }
}
