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
use std::sync::Arc;

use formats::bolt::preagg::BR_ONLY;
use formats::sampleprof::model::{Context, FunctionId, FunctionSamples, LineLocation, Profile};
use object::{Object, ObjectSection, ObjectSymbol};

use super::{base_discriminator, duplication_factor, Binary, Frame, Report};
use crate::error::{Error, Result};
use crate::perf::aggregate::BinaryProfile;

/// The instructions llvm-profgen disassembles.
#[derive(Debug, Default)]
pub(crate) struct Code {
    /// (address, size), sorted by address.
    insts: Vec<(u64, u8)>,
    /// Addresses of direct unconditional jumps, sorted.
    jumps: Vec<u64>,
    /// Names of the ELF symbols in executable sections, by address.
    symbols: Vec<(u64, Arc<str>)>,
}

impl Code {
    /// Decodes the executable sections of `file` from each symbol to the next (x86 only; other
    /// machines have no code).
    pub(crate) fn decode(file: &object::File<'_>) -> Code {
        let mut code = Code::default();
        let bitness = match file.architecture() {
            object::Architecture::X86_64 => 64,
            object::Architecture::I386 => 32,
            _ => return code,
        };
        for section in file.sections() {
            let object::SectionFlags::Elf { sh_flags } = section.flags() else {
                continue;
            };
            if sh_flags & u64::from(object::elf::SHF_EXECINSTR) == 0
                || section.kind() == object::SectionKind::UninitializedData
            {
                continue;
            }
            let Ok(data) = section.uncompressed_data() else {
                continue;
            };
            let (base, size) = (section.address(), section.size());
            let mut starts: Vec<u64> = Vec::new();
            for s in file.symbols() {
                if s.section_index() == Some(section.index()) {
                    starts.push(s.address());
                    if let Ok(name) = s.name() {
                        code.symbols.push((s.address(), name.into()));
                    }
                }
            }
            starts.sort_unstable();
            starts.dedup();
            for (i, &start) in starts.iter().enumerate() {
                let end = starts.get(i + 1).copied().unwrap_or(base + size);
                if start < base || end > base + size || start >= end {
                    continue;
                }
                let bytes = &data[(start - base) as usize..(end - base) as usize];
                let mut decoder = iced_x86::Decoder::with_ip(
                    bitness,
                    bytes,
                    start,
                    iced_x86::DecoderOptions::NONE,
                );
                let mut inst = iced_x86::Instruction::default();
                while decoder.can_decode() {
                    decoder.decode_out(&mut inst);
                    if inst.is_invalid() {
                        continue;
                    }
                    code.insts.push((inst.ip(), inst.len() as u8));
                    if inst.flow_control() == iced_x86::FlowControl::UnconditionalBranch
                        && inst.is_jmp_short_or_near()
                    {
                        code.jumps.push(inst.ip());
                    }
                }
            }
        }
        code.insts.sort_unstable();
        code.insts.dedup_by_key(|i| i.0);
        code.jumps.sort_unstable();
        code.symbols.sort();
        code
    }

    fn is_code(&self, a: u64) -> bool {
        self.insts.binary_search_by_key(&a, |i| i.0).is_ok()
    }

    /// llvm-profgen's `rangeCrossUncondBranch`: a direct unconditional jump in `[b, e)`.
    fn crosses_jump(&self, b: u64, e: u64) -> bool {
        let i = self.jumps.partition_point(|&j| j < b);
        self.jumps.get(i).is_some_and(|&j| j < e)
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
    /// start → (end, name, is the function's entry); the first subprogram at a start wins.
    by_start: BTreeMap<u64, (u64, &'a str, bool)>,
}

impl<'a> Functions<'a> {
    fn new(binary: &'a Binary) -> Functions<'a> {
        let mut f = Functions {
            ranges: HashMap::new(),
            by_start: BTreeMap::new(),
        };
        for (name, ranges) in binary.debug.subprograms() {
            if name.is_empty() {
                continue;
            }
            for &(b, e) in ranges {
                f.ranges.entry(name).or_default().push((b, e));
                f.by_start.entry(b).or_insert((e, name, false));
            }
        }
        // `setIsFuncEntry`: a range holding an ELF symbol is an entry when its function has
        // one range or the symbol bears the function's name.
        for (a, sym) in &binary.code.symbols {
            let Some((&start, &(end, name, _))) = f.by_start.range(..=*a).next_back() else {
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
            Some((_, &(end, name, _))) if a < end => &self.ranges[name],
            _ => &[],
        }
    }

    /// `getCalleeNameForAddress`: the function whose entry range starts at `a`.
    fn callee_at(&self, a: u64) -> Option<&'a str> {
        match self.by_start.get(&a) {
            Some(&(_, name, true)) => Some(canonical(name)),
            _ => None,
        }
    }
}

/// llvm-profgen's `symbolize`: outermost frame first, cut at the first frame without a name;
/// each with its line offset `(line − decl_line) & 0xffff` and raw discriminator.
fn frames(stack: &[Frame]) -> Vec<(&str, LineLocation)> {
    let mut out = Vec::with_capacity(stack.len());
    for f in stack.iter().rev() {
        if f.name.is_empty() {
            break;
        }
        out.push((
            canonical(&f.name),
            LineLocation {
                line: f.line.wrapping_sub(f.start_line) & 0xffff,
                disc: f.discriminator,
            },
        ));
    }
    out
}

/// `getLeafProfileAndAddTotalSamples`.
fn leaf<'p>(
    profiles: &'p mut BTreeMap<String, FunctionSamples>,
    frames: &[(&str, LineLocation)],
    count: u64,
) -> &'p mut FunctionSamples {
    let mut f = profiles.entry(frames[0].0.to_string()).or_default();
    f.total += count;
    for i in 1..frames.len() {
        let at = LineLocation {
            line: frames[i - 1].1.line,
            disc: base_discriminator(frames[i - 1].1.disc),
        };
        f = f.callee_mut(at, FunctionId::name(frames[i].0.as_bytes()));
        f.total += count;
    }
    f
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

/// The llvm-profgen profile of `binary` from its LBR traces (read with
/// [`KernelEntries::OutsideSkipped`](crate::perf::KernelEntries::OutsideSkipped)).
pub(crate) fn profile(binary: &Binary, traces: &BinaryProfile) -> Result<(Profile, Report)> {
    let code = &binary.code;
    let mut ranges: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    let mut branches: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for &((source, target, next), c) in &traces.traces {
        let n = c.taken;
        if n == 0 || !code.is_code(target) {
            continue;
        }
        *branches.entry((source, target)).or_default() += n;
        if next != BR_ONLY
            && code.is_code(next)
            && target <= next
            && !code.crosses_jump(target, next)
        {
            *ranges.entry((target, next)).or_default() += n;
        }
    }
    if ranges.is_empty() && branches.is_empty() {
        return Err(Error::Mismatch(
            "no LBR sample falls in the binary (is it the profiled binary, and was the capture recorded with -b?)".into(),
        ));
    }
    let report = Report {
        ranges: ranges.len(),
        branches: branches.len(),
        total_count: ranges.iter().map(|(&(b, e), &n)| n * (1 + e - b)).sum(),
        functions: 0,
    };
    let functions = Functions::new(binary);
    // `preprocessRangeCounter`: the ranges of the functions the ranges start in, with 0.
    let mut all = ranges.clone();
    for &(b, _) in ranges.keys() {
        for &(fb, fe) in functions.ranges_at(b) {
            all.entry((fb, fe - 1)).or_insert(0);
        }
    }
    let mut profiles: BTreeMap<String, FunctionSamples> = BTreeMap::new();
    for (b, e, n) in disjoint(&all) {
        let mut i = code.insts.partition_point(|x| x.0 < b);
        while let Some(&(a, size)) = code.insts.get(i) {
            if a > e {
                break;
            }
            i += 1;
            let stack = binary.debug.inline_stack(a);
            let fr = frames(&stack);
            if fr.is_empty() {
                continue;
            }
            let f = leaf(&mut profiles, &fr, n * u64::from(size));
            let last = fr.last().expect("not empty").1;
            let loc = LineLocation {
                line: last.line,
                disc: base_discriminator(last.disc),
            };
            let count = n * duplication_factor(last.disc);
            let r = f.body.entry(loc).or_default();
            r.count = r.count.max(count);
        }
    }
    for (&(source, target), &n) in &branches {
        let Some(callee) = functions.callee_at(target) else {
            continue;
        };
        let stack = binary.debug.inline_stack(source);
        let fr = frames(&stack);
        if !fr.is_empty() {
            let f = leaf(&mut profiles, &fr, 0);
            let last = fr.last().expect("not empty").1;
            let loc = LineLocation {
                line: last.line,
                disc: base_discriminator(last.disc),
            };
            *f.body
                .entry(loc)
                .or_default()
                .targets
                .entry(FunctionId::name(callee.as_bytes()))
                .or_default() += n;
        }
        profiles.entry(callee.to_string()).or_default().head += n;
    }
    let mut out = Profile::default();
    for (name, mut f) in profiles {
        if ambiguous(&name) {
            continue;
        }
        update_callsite_samples(&mut f);
        out.functions
            .insert(Context::Plain(FunctionId::name(name.as_bytes())), f);
    }
    let report = Report {
        functions: out.functions.len(),
        ..report
    };
    Ok((out, report))
}
