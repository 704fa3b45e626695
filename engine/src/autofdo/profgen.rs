//! [`Style::LlvmProfgen`](super::Style::LlvmProfgen): `llvm-profgen`'s conversion (LLVM 19;
//! line-number based, not context-sensitive, no pseudo probes).
//!
//! * The binary's code is what llvm-profgen disassembles: every executable section from each
//!   of its symbols to the next; an address is code when an instruction starts there.
//! * Per LBR entry, newest first, after the entries with neither end in the binary are left
//!   out: the branch counts when its target is code (its source may be outside: heads); the
//!   fall-through range from the entry's target to the newer entry's source counts when both
//!   are code, in order, and no direct unconditional jump starts inside it.
//! * Functions are DWARF subprograms (linkage name, else name); the ranges of every function a
//!   range starts in join with count 0; all ranges are split into disjoint ones; each
//!   instruction of a disjoint range adds count × its size to the totals of its inline stack
//!   and sets its line's count to the maximum (× duplication factor, base discriminator).
//! * A branch to the start of a function's entry range adds a call target at the source's
//!   location and head samples to the callee; a line of a function's own body (not of its
//!   inlinees) is raised to its call targets' sum.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use formats::bolt::preagg::BR_ONLY;
use formats::sampleprof::model::{Context, FunctionId, FunctionSamples, LineLocation, Profile};
use object::{Object, ObjectSection, ObjectSymbol};
use rayon::prelude::*;

use super::dwarf::{DebugInfo, Dwarf, DwarfSections, FrameRef, NO_NODE};
use super::{base_discriminator, duplication_factor, Binary, Report};
use crate::error::{Error, Result};
use crate::perf::aggregate::BinaryProfile;

/// The instructions llvm-profgen disassembles, decoded on first use one symbol's span at a
/// time (a profile touches a small part of a large binary's code).
#[derive(Debug, Default)]
pub(crate) struct Code {
    bitness: u32,
    /// The executable sections' bytes.
    sections: Vec<Vec<u8>>,
    /// Each span from a symbol to the next (or its section's end), sorted by start.
    chunks: Vec<Chunk>,
    /// The chunks' ends, searched apart from the chunks (a search over the chunks themselves
    /// missed the cache at every step).
    ends: Vec<u64>,
    /// Names of the ELF symbols in executable sections, by address.
    symbols: Vec<(u64, Arc<str>)>,
}

#[derive(Debug)]
struct Chunk {
    start: u64,
    end: u64,
    section: usize,
    /// Where the section starts.
    base: u64,
    decoded: OnceLock<Decoded>,
}

#[derive(Debug, Default)]
struct Decoded {
    /// Each instruction as its address << 4 | its size (at most 15), sorted: eight bytes
    /// where (address, size) took sixteen.
    insts: Vec<u64>,
    /// Addresses of direct unconditional jumps, sorted.
    jumps: Vec<u64>,
}

impl Code {
    /// The executable sections of `file`, split at their symbols (x86 only; other machines
    /// have no code). Nothing is disassembled yet.
    pub(crate) fn new(file: &object::File<'_>) -> Code {
        let mut code = Code::default();
        code.bitness = match file.architecture() {
            object::Architecture::X86_64 => 64,
            object::Architecture::I386 => 32,
            _ => return code,
        };
        let executable = |section: &object::Section<'_, '_>| {
            let object::SectionFlags::Elf { sh_flags } = section.flags() else {
                return false;
            };
            sh_flags & u64::from(object::elf::SHF_EXECINSTR) != 0
                && section.kind() != object::SectionKind::UninitializedData
        };
        let code_sections: Vec<_> = file.sections().filter(executable).collect();
        let mut starts_of: HashMap<object::SectionIndex, Vec<u64>> = HashMap::new();
        for s in file.symbols() {
            let Some(index) = s.section_index() else {
                continue;
            };
            if !code_sections.iter().any(|c| c.index() == index) {
                continue;
            }
            starts_of.entry(index).or_default().push(s.address());
            if let Ok(name) = s.name() {
                code.symbols.push((s.address(), name.into()));
            }
        }
        for section in code_sections {
            let Ok(data) = section.uncompressed_data() else {
                continue;
            };
            let (base, size) = (section.address(), section.size());
            let mut starts = starts_of.remove(&section.index()).unwrap_or_default();
            starts.sort_unstable();
            starts.dedup();
            for (i, &start) in starts.iter().enumerate() {
                let end = starts.get(i + 1).copied().unwrap_or(base + size);
                if start < base || end > base + size || start >= end {
                    continue;
                }
                code.chunks.push(Chunk {
                    start,
                    end,
                    section: code.sections.len(),
                    base,
                    decoded: OnceLock::new(),
                });
            }
            code.sections.push(data.into_owned());
        }
        code.symbols.sort();
        code.chunks.sort_unstable_by_key(|c| c.start);
        code.ends = code.chunks.iter().map(|c| c.end).collect();
        code
    }

    fn decoded<'c>(&self, chunk: &'c Chunk) -> &'c Decoded {
        chunk.decoded.get_or_init(|| {
            let data = &self.sections[chunk.section];
            let bytes =
                &data[(chunk.start - chunk.base) as usize..(chunk.end - chunk.base) as usize];
            let mut decoder = iced_x86::Decoder::with_ip(
                self.bitness,
                bytes,
                chunk.start,
                iced_x86::DecoderOptions::NONE,
            );
            let mut out = Decoded::default();
            let mut inst = iced_x86::Instruction::default();
            while decoder.can_decode() {
                decoder.decode_out(&mut inst);
                if inst.is_invalid() {
                    continue;
                }
                out.insts.push(inst.ip() << 4 | inst.len() as u64);
                if inst.flow_control() == iced_x86::FlowControl::UnconditionalBranch
                    && inst.is_jmp_short_or_near()
                {
                    out.jumps.push(inst.ip());
                }
            }
            out
        })
    }

    /// The ELF symbols of the executable sections: (address, name), sorted.
    pub(crate) fn symbols(&self) -> &[(u64, Arc<str>)] {
        &self.symbols
    }

    /// The chunks meeting `[b, e]`.
    fn chunks_meeting(&self, b: u64, e: u64) -> impl Iterator<Item = &Chunk> {
        let first = self.ends.partition_point(|&end| end <= b);
        self.chunks[first..]
            .iter()
            .take_while(move |c| c.start <= e)
    }

    /// llvm-profgen's `rangeCrossUncondBranch`: a direct unconditional jump in `[b, e)`.
    fn crosses_jump(&self, b: u64, e: u64) -> bool {
        if e <= b {
            return false;
        }
        self.chunks_meeting(b, e - 1).any(|c| {
            let jumps = &self.decoded(c).jumps;
            let i = jumps.partition_point(|&j| j < b);
            jumps.get(i).is_some_and(|&j| j < e)
        })
    }

    /// The instructions starting in `[b, e]`, in address order.
    fn insts_in(&self, b: u64, e: u64) -> impl Iterator<Item = (u64, u8)> + '_ {
        self.chunks_meeting(b, e).flat_map(move |c| {
            let insts = &self.decoded(c).insts;
            let i = insts.partition_point(|&x| x >> 4 < b);
            insts[i..]
                .iter()
                .map(|&x| (x >> 4, (x & 15) as u8))
                .take_while(move |x| x.0 <= e)
        })
    }
}

/// FunctionSamples::getCanonicalFnName with "selected": `.llvm.` and `.part.` suffixes cut
/// when they are the name's last dotted part (`.__uniq.` kept).
fn canonical(name: &str) -> &str {
    let mut cand = name;
    for suffix in [".llvm.", ".part."] {
        if let Some(at) = cand.rfind(suffix) {
            if cand.rfind('.') == Some(at + suffix.len() - 1) {
                cand = &cand[..at];
            }
        }
    }
    cand
}

/// llvm-profgen's functions: DWARF subprograms by name, and their ranges by start.
struct Functions<'a> {
    /// name → ranges.
    ranges: HashMap<&'a str, Vec<(u64, u64)>>,
    /// start → (end, name, is the function's entry, node); the first subprogram at a start
    /// wins.
    by_start: BTreeMap<u64, (u64, &'a str, bool, u32)>,
}

impl<'a> Functions<'a> {
    fn new(debug: &'a DebugInfo, code: &Code) -> Functions<'a> {
        let mut f = Functions {
            ranges: HashMap::new(),
            by_start: BTreeMap::new(),
        };
        for (node, name, ranges) in debug.subprograms() {
            if name.is_empty() {
                continue;
            }
            for &(b, e) in ranges {
                f.ranges.entry(name).or_default().push((b, e));
                f.by_start.entry(b).or_insert((e, name, false, node));
            }
        }
        // `setIsFuncEntry`: a range holding an ELF symbol is an entry when its function has
        // one range or the symbol bears the function's name.
        for (a, sym) in &code.symbols {
            let Some((&start, &(end, name, _, _))) = f.by_start.range(..=*a).next_back() else {
                continue;
            };
            if *a >= end {
                continue;
            }
            if f.ranges[name].len() == 1 || canonical(sym) == name {
                f.by_start.get_mut(&start).expect("present").2 = true;
            }
        }
        f
    }

    /// The ranges of the function containing `a`.
    fn ranges_at(&self, a: u64) -> &[(u64, u64)] {
        match self.by_start.range(..=a).next_back() {
            Some((_, &(end, name, _, _))) if a < end => &self.ranges[name],
            _ => &[],
        }
    }

    /// `getCalleeNameForAddress`: the node of the function whose entry range starts at `a`.
    fn callee_at(&self, a: u64) -> Option<u32> {
        match self.by_start.get(&a) {
            Some(&(_, _, true, node)) => Some(node),
            _ => None,
        }
    }
}

/// The canonical names of a [`DebugInfo`]'s nodes, each interned once: profiles are keyed
/// by small ids, and every callee record shares one copy of its name.
struct Names {
    /// node → id.
    of_node: Vec<u32>,
    /// id → name.
    ids: Vec<FunctionId>,
}

impl Names {
    fn new(debug: &DebugInfo) -> Names {
        let canon: Vec<&str> = debug
            .names()
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(canonical)
            .collect();
        let mut by_name: HashMap<&str, u32> = HashMap::with_capacity(canon.len());
        let mut ids = Vec::new();
        let of_node = canon
            .iter()
            .map(|&name| {
                *by_name.entry(name).or_insert_with(|| {
                    ids.push(FunctionId::name(name.as_bytes()));
                    (ids.len() - 1) as u32
                })
            })
            .collect();
        Names { of_node, ids }
    }
}

/// llvm-profgen's `symbolize`: outermost frame first, cut at the first frame without a name;
/// each with its name's id, line offset `(line − decl_line) & 0xffff` and raw discriminator.
fn frames(stack: &[FrameRef<'_>], names: &Names, out: &mut Vec<(u32, LineLocation)>) {
    out.clear();
    for f in stack.iter().rev() {
        if f.name.is_empty() || f.node == NO_NODE {
            break;
        }
        out.push((
            names.of_node[f.node as usize],
            LineLocation {
                line: f.line.wrapping_sub(f.start_line) & 0xffff,
                disc: f.discriminator,
            },
        ));
    }
}

/// Profiles by top-level name id, as the parallel folds build them.
type Profiles = HashMap<u32, FunctionSamples>;

/// `getLeafProfileAndAddTotalSamples`.
fn leaf<'p>(
    profiles: &'p mut Profiles,
    names: &Names,
    frames: &[(u32, LineLocation)],
    count: u64,
) -> &'p mut FunctionSamples {
    let mut f = profiles.entry(frames[0].0).or_default();
    f.total += count;
    for i in 1..frames.len() {
        let at = LineLocation {
            line: frames[i - 1].1.line,
            disc: base_discriminator(frames[i - 1].1.disc),
        };
        f = f.callee_mut(at, names.ids[frames[i].0 as usize].clone());
        f.total += count;
    }
    f
}

/// Two partial profiles of the same function as one: totals, heads and call targets add up,
/// a line's count is the larger (each instruction is counted in one part only, and a line's
/// count is the maximum over its instructions), or with `sum` (IP samples) the sum.
fn merge_max(into: &mut FunctionSamples, from: FunctionSamples, sum: bool) {
    into.total += from.total;
    into.head += from.head;
    for (loc, r) in from.body {
        let mine = into.body.entry(loc).or_default();
        mine.count = if sum {
            mine.count + r.count
        } else {
            mine.count.max(r.count)
        };
        for (t, n) in r.targets {
            *mine.targets.entry(t).or_default() += n;
        }
    }
    for (loc, callees) in from.callsites {
        let mine = into.callsites.entry(loc).or_default();
        for (name, f) in callees {
            merge_max(mine.entry(name).or_default(), f, sum);
        }
    }
}

/// `findDisjointRanges`.
fn disjoint(ranges: &BTreeMap<(u64, u64), u64>) -> Vec<(u64, u64, u64)> {
    #[derive(Default)]
    struct Point {
        begin: Option<u64>,
        end: Option<u64>,
        zero_begin: bool,
        zero_end: bool,
    }
    let mut points: BTreeMap<u64, Point> = BTreeMap::new();
    for (&(b, e), &n) in ranges {
        let p = points.entry(b).or_default();
        *p.begin.get_or_insert(0) += n;
        p.zero_begin |= n == 0;
        let p = points.entry(e).or_default();
        *p.end.get_or_insert(0) += n;
        p.zero_end |= n == 0;
    }
    let mut out = Vec::new();
    let mut begin: Option<u64> = None;
    let mut depth = 0i64;
    let mut count = 0u64;
    for (&a, p) in &points {
        if let Some(n) = p.begin {
            if let Some(b) = begin {
                out.push((b, a - 1, count));
            }
            count += n;
            begin = Some(a);
            depth += i64::from(p.zero_begin);
        }
        if let Some(n) = p.end {
            if let Some(b) = begin {
                out.push((b, a, count));
            }
            count -= n;
            begin = Some(a + 1);
            depth -= i64::from(p.zero_end);
            if count == 0 && depth == 0 {
                begin = None;
            }
        }
    }
    // `DisjointRanges[{B, E}] = Count` is a map: a later equal key replaces an earlier one.
    let mut map: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for (b, e, n) in out {
        map.insert((b, e), n);
    }
    map.into_iter().map(|((b, e), n)| (b, e, n)).collect()
}

/// LLVM 19's `FunctionSamples::updateCallsiteSamples`: raises every line's count to the sum
/// of its call targets, in the function's own body only (not in its inlinees': there a line
/// can stay below its call targets, as on test.lbr).
fn update_callsite_samples(f: &mut FunctionSamples) {
    for r in f.body.values_mut() {
        let sum: u64 = r.targets.values().sum();
        r.count = r.count.max(sum);
    }
}

/// llvm-profgen's `filterAmbiguousProfile`: names of compiler-made local initializers.
fn ambiguous(name: &str) -> bool {
    [
        "__cxx_global_var_init",
        "__cxx_global_array_dtor",
        "__tls_init",
        "__tls_wrapper",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// Which addresses start an instruction, for the chunks decoded so far: a bit per byte of
/// the code's span (a binary search per address missed the cache on every step).
pub(super) struct InstStarts {
    base: u64,
    bits: Vec<u64>,
}

impl InstStarts {
    /// Decodes (in parallel) the chunks holding any of `addresses` and marks their
    /// instructions. The addresses are not collected: a bit per chunk says which are touched.
    pub(super) fn new(code: &Code, addresses: impl ParallelIterator<Item = u64>) -> InstStarts {
        let words = code.chunks.len().div_ceil(64);
        let marked = addresses
            .fold(
                || vec![0u64; words],
                |mut bits, a| {
                    let i = code.ends.partition_point(|&end| end <= a);
                    if code.chunks.get(i).is_some_and(|c| c.start <= a) {
                        bits[i / 64] |= 1 << (i % 64);
                    }
                    bits
                },
            )
            .reduce(
                || vec![0u64; words],
                |mut a, b| {
                    a.iter_mut().zip(b).for_each(|(x, y)| *x |= y);
                    a
                },
            );
        let touched: Vec<usize> = (0..code.chunks.len())
            .filter(|&i| marked[i / 64] & (1 << (i % 64)) != 0)
            .collect();
        touched.par_iter().for_each(|&i| {
            code.decoded(&code.chunks[i]);
        });
        let (base, end) = match (code.chunks.first(), code.chunks.last()) {
            (Some(f), Some(l)) => (f.start, l.end),
            _ => (0, 0),
        };
        let mut bits = vec![0u64; ((end - base) as usize).div_ceil(64)];
        for &i in &touched {
            let chunk = &code.chunks[i];
            for &x in &code.decoded(chunk).insts {
                let bit = ((x >> 4) - base) as usize;
                bits[bit / 64] |= 1 << (bit % 64);
            }
        }
        InstStarts { base, bits }
    }

    pub(super) fn contains(&self, a: u64) -> bool {
        let Some(bit) = a.checked_sub(self.base) else {
            return false;
        };
        let bit = bit as usize;
        self.bits
            .get(bit / 64)
            .is_some_and(|w| w & (1 << (bit % 64)) != 0)
    }
}

/// The ranges and branches llvm-profgen keeps of `traces`, each summed over its traces.
fn ranges_and_branches(code: &Code, traces: &BinaryProfile) -> (Vec<Counted>, Vec<Counted>) {
    let addresses = traces
        .traces
        .par_iter()
        .flat_map_iter(|&((_, target, next), _)| [target, next])
        .filter(|&a| a != BR_ONLY);
    let starts = InstStarts::new(code, addresses);
    let (ranges, branches): (Vec<Counted>, Vec<Counted>) = traces
        .traces
        .par_iter()
        .filter(|(_, c)| c.taken != 0)
        .filter_map(|&((source, target, next), c)| {
            if !starts.contains(target) {
                return None;
            }
            let range = (next != BR_ONLY
                && starts.contains(next)
                && target <= next
                && !code.crosses_jump(target, next))
            .then_some(((target, next), c.taken));
            Some((range, ((source, target), c.taken)))
        })
        .fold(
            || (Vec::new(), Vec::new()),
            |(mut r, mut b), (range, branch)| {
                r.extend(range);
                b.push(branch);
                (r, b)
            },
        )
        .reduce(
            || (Vec::new(), Vec::new()),
            |(mut r1, mut b1), (r2, b2)| {
                r1.extend(r2);
                b1.extend(b2);
                (r1, b1)
            },
        );
    (summed(ranges), summed(branches))
}

/// A key (a range or a branch) and its count.
pub(super) type Counted = ((u64, u64), u64);

/// `v` sorted by key, equal keys summed (in place).
fn summed(mut v: Vec<Counted>) -> Vec<Counted> {
    v.par_sort_unstable_by_key(|x| x.0);
    v.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            kept.1 += later.1;
        }
        same
    });
    // The capacity held every trace's copy; the profile needs the memory more.
    v.shrink_to_fit();
    v
}

/// The llvm-profgen profile of `binary` from its LBR traces (read with
/// [`KernelEntries::OutsideSkipped`](crate::perf::KernelEntries::OutsideSkipped)). The
/// DWARF of the units the profile touches is decoded, nothing else.
pub(crate) fn profile(binary: &Binary, traces: BinaryProfile) -> Result<(Profile, Report)> {
    let code = &binary.code;
    // IP samples (`--leading-ip-only`): a line's count is the sum over its instructions, with
    // no duplication factor, where LBR ranges take the maximum.
    let sum = traces.traces.is_empty();
    let (ranges, branches) = if sum {
        (super::ips::profgen_ranges(code, &traces.ips), Vec::new())
    } else {
        ranges_and_branches(code, &traces)
    };
    drop(traces);
    if ranges.is_empty() && branches.is_empty() {
        return Err(Error::Mismatch(
            "no sample falls in the binary's code (is it the profiled binary?)".into(),
        ));
    }
    let report = Report {
        ranges: ranges.len(),
        branches: branches.len(),
        total_count: ranges.iter().map(|&((b, e), n)| n * (1 + e - b)).sum(),
        functions: 0,
    };
    let file = binary.object()?;
    let sections = DwarfSections::load(&file, &binary.path).map_err(|m| binary.error(m))?;
    let dwarf = Dwarf::new(&sections).map_err(|m| binary.error(m))?;
    let mut debug = DebugInfo::default();
    // The units of the ranges and branches, then those of other functions of the same names
    // (llvm-profgen joins a name's ranges), then those the joined ranges reach.
    let touched = ranges
        .iter()
        .map(|&(r, _)| r)
        .chain(branches.iter().flat_map(|&((s, t), _)| [(s, s), (t, t)]));
    debug
        .load_meeting(&dwarf, touched)
        .map_err(|m| binary.error(m))?;
    let namesakes = binary.symbols_named(debug.subprograms().map(|(_, name, _)| name));
    debug
        .load_meeting(&dwarf, namesakes.into_iter().map(|a| (a, a)))
        .map_err(|m| binary.error(m))?;
    let all = joined_ranges(&ranges, &Functions::new(&debug, code));
    let dis = disjoint(&all);
    debug
        .load_meeting(&dwarf, dis.iter().map(|&(b, e, _)| (b, e)))
        .map_err(|m| binary.error(m))?;
    debug.seal();
    let functions = Functions::new(&debug, code);
    let names = Names::new(&debug);
    // Contiguous blocks of ranges per task: a function's profile is then built in one or two
    // tasks, not copied into every task's partial profile.
    let block = dis.len().div_ceil(rayon::current_num_threads() * 8).max(1);
    // Each block's partial profile is merged into this one as soon as it is built: at most
    // one partial per thread is alive, where a reduction tree kept many (and the branches'
    // whole profile) next to the result.
    let merged = std::sync::Mutex::new(Profiles::new());
    let merge_in = |partial: Profiles| {
        let mut all = merged.lock().expect("a merge panicked");
        for (name, f) in partial {
            merge_max(all.entry(name).or_default(), f, sum);
        }
    };
    dis.par_chunks(block)
        .map(|block| {
            let mut profiles = Profiles::new();
            let (mut stack, mut fr) = (Vec::new(), Vec::new());
            for &(b, e, n) in block {
                for (a, size) in code.insts_in(b, e) {
                    debug.frames_at(a, &mut stack);
                    frames(&stack, &names, &mut fr);
                    if fr.is_empty() {
                        continue;
                    }
                    let f = leaf(&mut profiles, &names, &fr, n * u64::from(size));
                    let last = fr.last().expect("not empty").1;
                    let loc = LineLocation {
                        line: last.line,
                        disc: base_discriminator(last.disc),
                    };
                    let r = f.body.entry(loc).or_default();
                    if sum {
                        r.count += n;
                    } else {
                        r.count = r.count.max(n * duplication_factor(last.disc));
                    }
                }
            }
            profiles
        })
        .for_each(merge_in);
    let block = branches
        .len()
        .div_ceil(rayon::current_num_threads() * 8)
        .max(1);
    branches
        .par_chunks(block)
        .map(|block| {
            let mut profiles = Profiles::new();
            let (mut stack, mut fr) = (Vec::new(), Vec::new());
            for &((source, target), n) in block {
                let Some(callee) = functions.callee_at(target) else {
                    continue;
                };
                let callee = names.of_node[callee as usize];
                debug.frames_at(source, &mut stack);
                frames(&stack, &names, &mut fr);
                if !fr.is_empty() {
                    let f = leaf(&mut profiles, &names, &fr, 0);
                    let last = fr.last().expect("not empty").1;
                    let loc = LineLocation {
                        line: last.line,
                        disc: base_discriminator(last.disc),
                    };
                    *f.body
                        .entry(loc)
                        .or_default()
                        .targets
                        .entry(names.ids[callee as usize].clone())
                        .or_default() += n;
                }
                profiles.entry(callee).or_default().head += n;
            }
            profiles
        })
        .for_each(merge_in);
    let profiles = merged.into_inner().expect("a merge panicked");
    let mut out = Profile::default();
    for (id, mut f) in profiles {
        let name = &names.ids[id as usize];
        if let FunctionId::Name(n) = name {
            if ambiguous(&String::from_utf8_lossy(n)) {
                continue;
            }
        }
        update_callsite_samples(&mut f);
        out.functions.insert(Context::Plain(name.clone()), f);
    }
    let report = Report {
        functions: out.functions.len(),
        ..report
    };
    Ok((out, report))
}

/// `preprocessRangeCounter`: the ranges, and with count 0 the ranges of the functions the
/// ranges start in.
fn joined_ranges(ranges: &[Counted], functions: &Functions<'_>) -> BTreeMap<(u64, u64), u64> {
    let mut all: BTreeMap<(u64, u64), u64> = ranges.iter().copied().collect();
    for &((b, _), _) in ranges {
        for &(fb, fe) in functions.ranges_at(b) {
            all.entry((fb, fe - 1)).or_insert(0);
        }
    }
    all
}
