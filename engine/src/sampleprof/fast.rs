//! The fast conversion path for the common case: a context-less, line-based profile in LLVM
//! text or uncompressed ExtBinary, converted to text or ExtBinary.
//!
//! Names stay borrowed from the input (no per-name allocation), functions live in
//! per-chunk arenas of plain vectors, text is parsed and both encodings are written in
//! parallel (top-level functions are independent), and names are compared by bytes only
//! when sorting the name table once.
//!
//! The path accepts a strict subset of what LLVM reads and returns `None` for anything
//! else — comments, metadata lines, contexts, a function or call site or call target
//! listed twice (LLVM merges those), compressed or MD5 sections, unknown sections, symbol
//! lists — so the general reader, with its exact LLVM semantics and error messages, handles
//! every such file. Its output is byte-identical to the general writers' (tested).

use hashbrown::{HashMap, HashSet};
use rayon::prelude::*;

use formats::bytes::{write_uleb128 as write_uleb, Endian, Reader};
use formats::sampleprof::binary::{self, flag, sec, ExtBinaryOptions, Section};
use formats::sampleprof::summary;
use formats::sampleprof::{detect, model::md5_guid, Format};

type Hasher = std::hash::BuildHasherDefault<NameHasher>;

/// A multiply-rotate hash over 8-byte words: names are hashed once per occurrence while
/// parsing, where a general-purpose streaming hash costs more than the parse itself.
#[derive(Default)]
pub struct NameHasher(u64);

impl NameHasher {
    const K: u64 = 0x517c_c1b7_2722_0a95;

    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }
}

impl std::hash::Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.mix(u64::from_le_bytes(w.try_into().expect("8-byte chunk")));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.mix(u64::from_le_bytes(last));
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.mix(n as u64);
    }

    fn finish(&self) -> u64 {
        // hashbrown takes its control bits from the top 7 bits: fold the low ones in.
        self.0 ^ (self.0 >> 29)
    }
}
type Loc = (u32, u32);

/// A name: an index into the arena's names while parsing, into the sorted name table after
/// [`finish`] (so that comparing ids compares names).
type Name = u32;

#[derive(Clone, Copy)]
struct Line {
    node: u32,
    loc: Loc,
    count: u64,
    /// Call targets: `targets[start..start + len]`, by count descending then name.
    targets: (u32, u32),
}

#[derive(Clone, Copy)]
struct Call {
    parent: u32,
    loc: Loc,
    callee: Name,
    node: u32,
}

#[derive(Clone, Copy, Default)]
struct Node {
    name: Name,
    total: u64,
    head: u64,
    /// `lines[..]` and `calls[..]` ranges, filled by [`Arena::group`].
    lines: (u32, u32),
    calls: (u32, u32),
}

/// The functions decoded from one piece of the input, in flat vectors.
#[derive(Default)]
struct Arena<'a> {
    names: Vec<&'a [u8]>,
    nodes: Vec<Node>,
    lines: Vec<Line>,
    targets: Vec<(Name, u64)>,
    calls: Vec<Call>,
    tops: Vec<u32>,
}

/// Interns names of one piece (hashing each occurrence once).
#[derive(Default)]
struct Interner<'a> {
    ids: HashMap<&'a [u8], Name, Hasher>,
}

impl<'a> Interner<'a> {
    fn id(&mut self, names: &mut Vec<&'a [u8]>, name: &'a [u8]) -> Name {
        *self.ids.entry(name).or_insert_with(|| {
            names.push(name);
            (names.len() - 1) as Name
        })
    }
}

impl Arena<'_> {
    /// Renames every id through `map` (arena ids to name-table ids).
    fn rename(&mut self, map: &[Name]) {
        for n in &mut self.nodes {
            n.name = map[n.name as usize];
        }
        for t in &mut self.targets {
            t.0 = map[t.0 as usize];
        }
        for c in &mut self.calls {
            c.callee = map[c.callee as usize];
        }
    }

    /// Groups lines and call sites per function in LLVM's order (names compared by id);
    /// `None` when a line, call site or call target appears twice (LLVM merges those).
    fn group(&mut self) -> Option<()> {
        for l in &mut self.lines {
            let ts = &mut self.targets[l.targets.0 as usize..(l.targets.0 + l.targets.1) as usize];
            if ts.len() > 1 {
                ts.sort_unstable_by_key(|t| t.0);
                if ts.windows(2).any(|w| w[0].0 == w[1].0) {
                    return None;
                }
                ts.sort_unstable_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            }
        }
        let line_key = |l: &Line| (l.node, l.loc);
        if !self.lines.is_sorted_by_key(line_key) {
            self.lines.sort_unstable_by_key(line_key);
        }
        if self
            .lines
            .windows(2)
            .any(|w| line_key(&w[0]) == line_key(&w[1]))
        {
            return None;
        }
        let call_key = |c: &Call| (c.parent, c.loc, c.callee);
        if !self.calls.is_sorted_by_key(call_key) {
            self.calls.sort_unstable_by_key(call_key);
        }
        if self
            .calls
            .windows(2)
            .any(|w| call_key(&w[0]) == call_key(&w[1]))
        {
            return None;
        }
        for (i, l) in self.lines.iter().enumerate().rev() {
            let r = &mut self.nodes[l.node as usize].lines;
            *r = (i as u32, r.1 + 1);
        }
        for (i, c) in self.calls.iter().enumerate().rev() {
            let r = &mut self.nodes[c.parent as usize].calls;
            *r = (i as u32, r.1 + 1);
        }
        Some(())
    }

    fn lines_of(&self, n: &Node) -> &[Line] {
        &self.lines[n.lines.0 as usize..(n.lines.0 + n.lines.1) as usize]
    }

    fn calls_of(&self, n: &Node) -> &[Call] {
        &self.calls[n.calls.0 as usize..(n.calls.0 + n.calls.1) as usize]
    }

    fn targets_of(&self, l: &Line) -> &[(Name, u64)] {
        &self.targets[l.targets.0 as usize..(l.targets.0 + l.targets.1) as usize]
    }
}

/// A profile on the fast path: arenas, the sorted name table, and the top-level functions
/// in LLVM's write order.
pub struct FastProfile<'a> {
    arenas: Vec<Arena<'a>>,
    table: Vec<&'a [u8]>,
    /// (arena, node) of each top-level function, hottest first, ties by name.
    order: Vec<(u32, u32)>,
    /// The input carries what only the general path writes back to ExtBinary (a symbol
    /// list, summary flags).
    ext_extras: bool,
    /// The input has a profile symbol list (which llvm-profdata warns about losing in text).
    symbols: bool,
}

/// The encodings the fast path writes.
#[derive(Clone, Copy, Debug)]
pub enum FastOutput {
    Text,
    ExtBinary(ExtBinaryOptions),
}

/// Converts `data` to `output` on the fast path, or `None` when the input (or the requested
/// encoding) needs the general path. The output comes in pieces to be written in order.
pub fn convert(data: &[u8], output: FastOutput) -> Option<Vec<Vec<u8>>> {
    if let FastOutput::ExtBinary(o) = output {
        if o.split_layout {
            return None;
        }
    }
    let profile = match detect(data)? {
        Format::Text => read_text(data)?,
        Format::ExtBinary => read_ext(data)?,
        _ => return None,
    };
    match output {
        FastOutput::Text if profile.symbols => None,
        FastOutput::Text => Some(profile.write_text()),
        FastOutput::ExtBinary(_) if profile.ext_extras => None,
        FastOutput::ExtBinary(o) => profile.write_ext(&o),
    }
}

// ---------------------------------------------------------------------------------------------
// Reading text

/// `StringRef::getAsInteger(10)` into a u64: digits only, no overflow.
fn decimal(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    s.iter().try_fold(0u64, |acc, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

fn location(s: &[u8]) -> Option<Loc> {
    let (line, disc) = match memchr::memchr(b'.', s) {
        Some(dot) => (decimal(&s[..dot])?, decimal(&s[dot + 1..])?),
        None => (decimal(s)?, 0),
    };
    // LLVM refuses larger line offsets in some spellings only; leave those to it.
    (line <= 0xFFFF && disc <= u32::MAX as u64).then_some((line as u32, disc as u32))
}

/// Starts of the pieces the text is parsed in: line starts that begin a top-level header.
fn text_pieces(data: &[u8], pieces: usize) -> Vec<usize> {
    let mut starts = vec![0];
    for k in 1..pieces {
        let mut at = data.len() * k / pieces;
        if at <= *starts.last().unwrap() {
            continue;
        }
        // The next line start that is not indented.
        loop {
            match memchr::memchr(b'\n', &data[at..]) {
                Some(nl) => {
                    at += nl + 1;
                    if at >= data.len() {
                        break;
                    }
                    if data[at] != b' ' && data[at] != b'\n' {
                        starts.push(at);
                        break;
                    }
                }
                None => {
                    at = data.len();
                    break;
                }
            }
        }
        if at >= data.len() {
            break;
        }
    }
    starts
}

fn parse_text_piece(piece: &[u8]) -> Option<Arena<'_>> {
    let mut a = Arena::default();
    // Rough shape of generated and real profiles: ~25 bytes a line.
    a.lines.reserve(piece.len() / 24);
    a.targets.reserve(piece.len() / 64);
    a.nodes.reserve(piece.len() / 256);
    a.calls.reserve(piece.len() / 256);
    let mut interner = Interner::default();
    interner.ids.reserve((piece.len() / 512).min(1 << 20));
    let mut stack: Vec<u32> = Vec::new();
    let mut at = 0;
    while at < piece.len() {
        let end = memchr::memchr(b'\n', &piece[at..]).map_or(piece.len(), |i| at + i);
        let line = &piece[at..end];
        at = end + 1;
        if line.is_empty() {
            continue;
        }
        if line[0] != b' ' {
            if matches!(line[0], b'#' | b'[' | b'\t' | b'\r') || line.ends_with(b"\r") {
                return None;
            }
            let n2 = memchr::memrchr(b':', line)?;
            let n1 = memchr::memrchr(b':', &line[..n2])?;
            if n1 == 0 {
                return None;
            }
            let idx = a.nodes.len() as u32;
            let name = interner.id(&mut a.names, &line[..n1]);
            a.nodes.push(Node {
                name,
                total: decimal(&line[n1 + 1..n2])?,
                head: decimal(&line[n2 + 1..])?,
                ..Node::default()
            });
            a.tops.push(idx);
            stack.clear();
            stack.push(idx);
            continue;
        }
        let depth = line.iter().position(|&b| b != b' ')?;
        let rest = &line[depth..];
        stack.truncate(depth);
        let parent = *stack.last()?;
        let colon = memchr::memchr(b':', rest)?;
        let loc = location(&rest[..colon])?;
        if rest.get(colon + 1) != Some(&b' ') {
            return None;
        }
        let body = &rest[colon + 2..];
        let first = *body.first()?;
        if first.is_ascii_digit() {
            let mut tokens = body.split(|&b| b == b' ');
            let count = decimal(tokens.next()?)?;
            let start = a.targets.len() as u32;
            for t in tokens {
                let c = memchr::memrchr(b':', t)?;
                if c == 0 {
                    return None;
                }
                let name = interner.id(&mut a.names, &t[..c]);
                a.targets.push((name, decimal(&t[c + 1..])?));
            }
            a.lines.push(Line {
                node: parent,
                loc,
                count,
                targets: (start, a.targets.len() as u32 - start),
            });
        } else {
            if first == b'!' {
                return None;
            }
            let c = memchr::memrchr(b':', body)?;
            if c == 0 {
                return None;
            }
            let idx = a.nodes.len() as u32;
            let callee = interner.id(&mut a.names, &body[..c]);
            a.nodes.push(Node {
                name: callee,
                total: decimal(&body[c + 1..])?,
                ..Node::default()
            });
            a.calls.push(Call {
                parent,
                loc,
                callee,
                node: idx,
            });
            stack.push(idx);
        }
    }
    Some(a)
}

/// Builds the sorted name table of all arenas, renames every arena to it, groups and checks
/// the functions, and orders the top-level ones as LLVM writes them.
fn finish<'a>(mut arenas: Vec<Arena<'a>>, table: Option<Vec<&'a [u8]>>) -> Option<FastProfile<'a>> {
    let table = match table {
        Some(t) => t,
        None => {
            let mut all: HashSet<&'a [u8], Hasher> = HashSet::default();
            for a in &arenas {
                all.extend(a.names.iter().copied());
            }
            let mut t: Vec<&[u8]> = all.into_iter().collect();
            t.par_sort_unstable();
            let ids: HashMap<&[u8], Name, Hasher> =
                t.iter().enumerate().map(|(i, n)| (*n, i as Name)).collect();
            arenas.par_iter_mut().for_each(|a| {
                let map: Vec<Name> = a.names.iter().map(|n| ids[n]).collect();
                a.rename(&map);
            });
            t
        }
    };
    arenas
        .par_iter_mut()
        .map(Arena::group)
        .collect::<Option<Vec<()>>>()?;
    let mut order: Vec<(u32, u32)> = arenas
        .iter()
        .enumerate()
        .flat_map(|(i, a)| a.tops.iter().map(move |&t| (i as u32, t)))
        .collect();
    let node = |&(a, n): &(u32, u32)| &arenas[a as usize].nodes[n as usize];
    // A function listed twice is merged by LLVM: not for this path.
    let mut listed = vec![false; table.len()];
    for t in &order {
        let seen = listed.get_mut(node(t).name as usize)?;
        if std::mem::replace(seen, true) {
            return None;
        }
    }
    order.par_sort_unstable_by(|x, y| {
        let (a, b) = (node(x), node(y));
        b.total.cmp(&a.total).then(a.name.cmp(&b.name))
    });
    Some(FastProfile {
        arenas,
        table,
        order,
        ext_extras: false,
        symbols: false,
    })
}

fn read_text(data: &[u8]) -> Option<FastProfile<'_>> {
    // Few pieces: every piece interns the names it meets, and most names (call targets,
    // inlinees) occur all over the file.
    let pieces = rayon::current_num_threads() * 2;
    let starts = text_pieces(data, pieces);
    let arenas = (0..starts.len())
        .into_par_iter()
        .map(|i| {
            let end = starts.get(i + 1).copied().unwrap_or(data.len());
            parse_text_piece(&data[starts[i]..end])
        })
        .collect::<Option<Vec<_>>>()?;
    finish(arenas, None)
}

// ---------------------------------------------------------------------------------------------
// Reading ExtBinary

/// The shared byte reader, failures as `None` (the fast path then gives way).
struct Rd<'a>(Reader<'a>);

impl<'a> Rd<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Rd(Reader::new(buf, Endian::Little))
    }

    fn uleb(&mut self) -> Option<u64> {
        self.0.uleb128().ok()
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.uleb()?).ok()
    }
}

fn read_ext(data: &[u8]) -> Option<FastProfile<'_>> {
    let table = binary::read_section_table(data).ok()?;
    let mut names: Option<Vec<&[u8]>> = None;
    let mut lbr: Option<&[u8]> = None;
    let mut offsets: Option<&[u8]> = None;
    let mut extras = false;
    let mut symbols = false;
    for e in &table {
        let start = usize::try_from(e.offset).ok()?;
        let payload = data.get(start..start.checked_add(usize::try_from(e.size).ok()?)?)?;
        if e.flags & (flag::COMPRESS | flag::FLAT) != 0 {
            return None;
        }
        match e.kind {
            sec::SUMMARY => extras |= e.flags != 0,
            sec::FUNC_OFFSET if offsets.is_none() => offsets = Some(payload),
            sec::NAME_TABLE if names.is_none() && e.flags & !flag::UNIQ_SUFFIX == 0 => {
                names = Some(read_names(payload)?);
            }
            sec::LBR_PROFILE if lbr.is_none() => lbr = Some(payload),
            // Empty CS name table, symbol list (text drops it) and metadata are fine.
            sec::CS_NAME_TABLE if payload == [0] || payload.is_empty() => {}
            sec::SYMBOL_LIST => symbols |= !payload.is_empty(),
            sec::FUNC_METADATA if payload.is_empty() => {}
            _ => return None,
        }
    }
    let (names, lbr) = (names?, lbr?);
    // Function starts from the offset table split the records into pieces decoded in
    // parallel; each piece must end exactly where the next begins.
    let mut starts: Vec<usize> = match offsets {
        Some(table) => function_starts(table, lbr.len())?,
        None => vec![0],
    };
    let pieces = rayon::current_num_threads() * 8;
    let step = starts.len().div_ceil(pieces).max(1);
    starts = starts.into_iter().step_by(step).collect();
    if starts.first() != Some(&0) {
        return None;
    }
    let arenas = (0..starts.len())
        .into_par_iter()
        .map(|i| {
            let end = starts.get(i + 1).copied().unwrap_or(lbr.len());
            decode_records(&lbr[..end], starts[i], names.len())
        })
        .collect::<Option<Vec<_>>>()?;
    let mut p = finish(arenas, Some(names))?;
    p.ext_extras = extras || symbols;
    p.symbols = symbols;
    Some(p)
}

/// Sorted, distinct start offsets of the top-level records from a function offset table.
fn function_starts(table: &[u8], lbr_len: usize) -> Option<Vec<usize>> {
    let mut rd = Rd::new(table);
    let n = usize::try_from(rd.uleb()?).ok()?;
    if n > table.len() {
        return None;
    }
    let mut starts = Vec::with_capacity(n + 1);
    starts.push(0);
    for _ in 0..n {
        rd.uleb()?;
        let off = usize::try_from(rd.uleb()?).ok()?;
        if off >= lbr_len {
            return None;
        }
        starts.push(off);
    }
    starts.sort_unstable();
    starts.dedup();
    Some(starts)
}

/// The top-level records in `lbr[start..]`, which must end exactly at the slice's end.
fn decode_records(lbr: &[u8], start: usize, n_names: usize) -> Option<Arena<'_>> {
    let mut a = Arena::default();
    let mut rd = Rd::new(lbr);
    rd.0.skip(start).ok()?;
    while !rd.0.is_empty() {
        let head = rd.uleb()?;
        let name = rd.u32()?;
        if name as usize >= n_names {
            return None;
        }
        let idx = decode_samples(&mut rd, n_names, &mut a, name)?;
        a.nodes[idx as usize].head = head;
        a.tops.push(idx);
    }
    Some(a)
}

/// A name table of NUL-terminated names that is strictly sorted (LLVM writes it so), so that
/// table indices compare as names do.
fn read_names(payload: &[u8]) -> Option<Vec<&[u8]>> {
    let mut rd = Rd::new(payload);
    let n = usize::try_from(rd.uleb()?).ok()?;
    if n > payload.len() {
        return None;
    }
    let mut names = Vec::with_capacity(n);
    for _ in 0..n {
        let name = rd.0.c_str().ok()?;
        if name.is_empty() || names.last().is_some_and(|p: &&[u8]| *p >= name) {
            return None;
        }
        names.push(name);
    }
    rd.0.is_empty().then_some(names)
}

fn decode_samples(rd: &mut Rd, n_names: usize, a: &mut Arena, name: Name) -> Option<u32> {
    let idx = a.nodes.len() as u32;
    a.nodes.push(Node {
        name,
        total: rd.uleb()?,
        ..Node::default()
    });
    let n_lines = rd.u32()?;
    for _ in 0..n_lines {
        let loc = (rd.u32()?, rd.u32()?);
        if loc.0 > 0xFFFF {
            return None;
        }
        let count = rd.uleb()?;
        let n_targets = rd.u32()?;
        let start = a.targets.len() as u32;
        for _ in 0..n_targets {
            let t = rd.u32()?;
            if t as usize >= n_names {
                return None;
            }
            a.targets.push((t, rd.uleb()?));
        }
        a.lines.push(Line {
            node: idx,
            loc,
            count,
            targets: (start, n_targets),
        });
    }
    let n_calls = rd.u32()?;
    for _ in 0..n_calls {
        let loc = (rd.u32()?, rd.u32()?);
        let callee = rd.u32()?;
        if callee as usize >= n_names {
            return None;
        }
        let node = decode_samples(rd, n_names, a, callee)?;
        a.calls.push(Call {
            parent: idx,
            loc,
            callee,
            node,
        });
    }
    Some(idx)
}

// ---------------------------------------------------------------------------------------------
// Writing

/// Top-level functions per parallel work item when encoding.
const BATCH: usize = 512;

impl FastProfile<'_> {
    /// LLVM's text form, top-level functions hottest first.
    pub fn write_text(&self) -> Vec<Vec<u8>> {
        self.order
            .par_chunks(BATCH)
            .map(|batch| {
                let mut out = Vec::with_capacity(batch.len() * 1024);
                let mut num = itoa::Buffer::new();
                for &(a, n) in batch {
                    let arena = &self.arenas[a as usize];
                    self.text_function(&mut out, &mut num, arena, &arena.nodes[n as usize], 0);
                }
                out
            })
            .collect()
    }

    fn text_function(
        &self,
        out: &mut Vec<u8>,
        num: &mut itoa::Buffer,
        arena: &Arena,
        node: &Node,
        indent: usize,
    ) {
        out.extend_from_slice(self.table[node.name as usize]);
        out.push(b':');
        out.extend_from_slice(num.format(node.total).as_bytes());
        if indent == 0 {
            out.push(b':');
            out.extend_from_slice(num.format(node.head).as_bytes());
        }
        out.push(b'\n');
        for l in arena.lines_of(node) {
            out.resize(out.len() + indent + 1, b' ');
            text_location(out, num, l.loc);
            out.extend_from_slice(b": ");
            out.extend_from_slice(num.format(l.count).as_bytes());
            for (t, c) in arena.targets_of(l) {
                out.push(b' ');
                out.extend_from_slice(self.table[*t as usize]);
                out.push(b':');
                out.extend_from_slice(num.format(*c).as_bytes());
            }
            out.push(b'\n');
        }
        for c in arena.calls_of(node) {
            out.resize(out.len() + indent + 1, b' ');
            text_location(out, num, c.loc);
            out.extend_from_slice(b": ");
            self.text_function(out, num, arena, &arena.nodes[c.node as usize], indent + 1);
        }
    }

    fn summary(&self) -> summary::Summary {
        let mut counts: Vec<u64> = self
            .arenas
            .par_iter()
            .flat_map_iter(|a| a.lines.iter().map(|l| l.count))
            .collect();
        // Sorted here in parallel; `from_counts` then finds them in order.
        counts.par_sort_unstable_by(|a, b| b.cmp(a));
        let max_head = self
            .order
            .iter()
            .map(|&(a, n)| self.arenas[a as usize].nodes[n as usize].head)
            .max()
            .unwrap_or(0);
        summary::from_counts(counts, max_head, self.order.len() as u64)
    }

    /// ExtBinary in LLVM 19's default layout; `None` for options this path leaves to the
    /// general writer (a numeric name under `--use-md5`, where LLVM reads the number as a
    /// GUID).
    pub fn write_ext(&self, opts: &ExtBinaryOptions) -> Option<Vec<Vec<u8>>> {
        let table = &self.table;
        if opts.use_md5 && table.iter().any(|n| n.iter().all(u8::is_ascii_digit)) {
            return None;
        }
        let mut summary_section = Vec::new();
        binary::write_summary(&mut summary_section, &self.summary());
        let summary_flags = if opts.partial { flag::PARTIAL } else { 0 };

        let mut names = Vec::new();
        let mut name_flags = 0;
        write_uleb(&mut names, table.len() as u64);
        if opts.use_md5 {
            name_flags |= flag::MD5_NAME | flag::FIXED_LENGTH_MD5;
            for n in table {
                names.extend_from_slice(&md5_guid(n).to_le_bytes());
            }
        } else {
            for n in table {
                names.extend_from_slice(n);
                names.push(0);
            }
            if table
                .iter()
                .any(|n| memchr::memmem::find(n, b".__uniq.").is_some())
            {
                name_flags |= flag::UNIQ_SUFFIX;
            }
        }

        let batches: Vec<(Vec<u8>, Vec<u32>)> = self
            .order
            .par_chunks(BATCH)
            .map(|batch| {
                let mut out = Vec::with_capacity(batch.len() * 512);
                let mut starts = Vec::with_capacity(batch.len());
                for &(a, n) in batch {
                    starts.push(out.len() as u32);
                    let arena = &self.arenas[a as usize];
                    let node = &arena.nodes[n as usize];
                    write_uleb(&mut out, node.head);
                    write_uleb(&mut out, node.name.into());
                    encode_samples(&mut out, arena, node);
                }
                (out, starts)
            })
            .collect();
        let mut offsets = Vec::with_capacity(self.order.len() * 6);
        write_uleb(&mut offsets, self.order.len() as u64);
        let mut base = 0u64;
        let mut k = 0;
        for (bytes, starts) in &batches {
            for s in starts {
                let (a, n) = self.order[k];
                k += 1;
                write_uleb(
                    &mut offsets,
                    self.arenas[a as usize].nodes[n as usize].name.into(),
                );
                write_uleb(&mut offsets, base + u64::from(*s));
            }
            base += bytes.len() as u64;
        }
        let lbr: Vec<Vec<u8>> = batches.into_iter().map(|b| b.0).collect();

        let mut layout: Vec<Section> = vec![
            (sec::SUMMARY, summary_flags, summary_section),
            (sec::NAME_TABLE, name_flags, names),
            (sec::CS_NAME_TABLE, 0, vec![0]),
            (sec::FUNC_OFFSET, 0, offsets),
            (sec::LBR_PROFILE, 0, Vec::new()),
            (sec::SYMBOL_LIST, 0, Vec::new()),
            (sec::FUNC_METADATA, 0, Vec::new()),
        ];
        let physical = [0, 1, 2, 4, 5, 3, 6];
        if opts.compress_all {
            layout[4].2 = lbr.concat();
            let mut out = Vec::new();
            binary::write_sections(layout, &physical, true, &mut out).ok()?;
            return Some(vec![out]);
        }
        // Uncompressed: the header and the sections before the function records, then the
        // records as encoded, then the rest — without copying the records into one buffer.
        let lbr_len: usize = lbr.iter().map(Vec::len).sum();
        let sizes: Vec<(u64, u64, u64)> = layout
            .iter()
            .enumerate()
            .map(|(i, (t, f, b))| (*t, *f, if i == 4 { lbr_len } else { b.len() } as u64))
            .collect();
        let mut pieces = vec![binary::section_header(&sizes, &physical)];
        let mut layout: Vec<Option<Section>> = layout.into_iter().map(Some).collect();
        let mut lbr = Some(lbr);
        for &i in &physical {
            if i == 4 {
                pieces.extend(lbr.take()?);
            } else {
                pieces.push(layout[i].take()?.2);
            }
        }
        Some(pieces)
    }
}

fn encode_samples(out: &mut Vec<u8>, arena: &Arena, node: &Node) {
    write_uleb(out, node.total);
    write_uleb(out, node.lines.1.into());
    for l in arena.lines_of(node) {
        write_uleb(out, l.loc.0.into());
        write_uleb(out, l.loc.1.into());
        write_uleb(out, l.count);
        write_uleb(out, l.targets.1.into());
        for (t, c) in arena.targets_of(l) {
            write_uleb(out, (*t).into());
            write_uleb(out, *c);
        }
    }
    write_uleb(out, node.calls.1.into());
    for c in arena.calls_of(node) {
        write_uleb(out, c.loc.0.into());
        write_uleb(out, c.loc.1.into());
        write_uleb(out, c.callee.into());
        encode_samples(out, arena, &arena.nodes[c.node as usize]);
    }
}

fn text_location(out: &mut Vec<u8>, num: &mut itoa::Buffer, loc: Loc) {
    out.extend_from_slice(num.format(loc.0).as_bytes());
    if loc.1 != 0 {
        out.push(b'.');
        out.extend_from_slice(num.format(loc.1).as_bytes());
    }
}
