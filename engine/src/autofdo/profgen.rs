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

use std::collections::BTreeMap;

use formats::bolt::preagg::BR_ONLY;
use formats::sampleprof::model::{Context, FunctionId, FunctionSamples, LineLocation};
use hashbrown::HashMap;
use rayon::prelude::*;

use super::code::Code;
use super::dwarf::{DebugInfo, Dwarf, DwarfSections, FrameRef, NO_NODE};
use super::flat::{Chain, FlatProfile, LineCount};
use super::{base_discriminator_llvm19, duplication_factor, Binary, Report};
use crate::error::{Error, Result};
use crate::perf::aggregate::BinaryProfile;

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
        for (a, sym) in code.symbols() {
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

/// `findDisjointRanges` of `ranges` (sorted by key, keys distinct), as (begin, end, count).
/// Sorted arrays, not maps: on a large profile the maps of the boundaries and of the result
/// were the run's peak of memory.
fn disjoint(ranges: &[Counted]) -> Vec<(u64, u64, u64)> {
    // Boundaries: (address, summed count, whether any range of count 0 is among them).
    fn grouped(mut v: Vec<(u64, u64, bool)>) -> Vec<(u64, u64, bool)> {
        v.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 += later.1;
                kept.2 |= later.2;
            }
            same
        });
        v
    }
    let begins = grouped(ranges.iter().map(|&((b, _), n)| (b, n, n == 0)).collect());
    let mut ends: Vec<(u64, u64, bool)> =
        ranges.iter().map(|&((_, e), n)| (e, n, n == 0)).collect();
    ends.sort_unstable_by_key(|x| x.0);
    let ends = grouped(ends);
    let mut out = Vec::new();
    let mut begin: Option<u64> = None;
    let mut depth = 0i64;
    let mut count = 0u64;
    let (mut i, mut j) = (0, 0);
    while i < begins.len() || j < ends.len() {
        // At one address, the ranges beginning there are taken before those ending there.
        let a = match (begins.get(i), ends.get(j)) {
            (Some(b), Some(e)) => b.0.min(e.0),
            (Some(b), None) => b.0,
            (None, Some(e)) => e.0,
            (None, None) => unreachable!(),
        };
        if let Some(&(_, n, zero)) = begins.get(i).filter(|x| x.0 == a) {
            i += 1;
            if let Some(b) = begin {
                out.push((b, a - 1, count));
            }
            count += n;
            begin = Some(a);
            depth += i64::from(zero);
        }
        if let Some(&(_, n, zero)) = ends.get(j).filter(|x| x.0 == a) {
            j += 1;
            if let Some(b) = begin {
                out.push((b, a, count));
            }
            count -= n;
            begin = Some(a + 1);
            depth -= i64::from(zero);
            if count == 0 && depth == 0 {
                begin = None;
            }
        }
    }
    // `DisjointRanges[{B, E}] = Count` is a map: a later equal key replaces an earlier one.
    out.sort_by_key(|x| (x.0, x.1));
    let mut kept: Vec<(u64, u64, u64)> = Vec::with_capacity(out.len());
    for x in out {
        match kept.last_mut() {
            Some(last) if (last.0, last.1) == (x.0, x.1) => *last = x,
            _ => kept.push(x),
        }
    }
    kept
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

/// The ranges and branches llvm-profgen keeps of `traces`, each summed over its traces.
fn ranges_and_branches(code: &Code, traces: &BinaryProfile) -> (Vec<Counted>, Vec<Counted>) {
    let addresses = traces
        .traces
        .par_iter()
        .flat_map_iter(|&((_, target, next), _)| [target, next])
        .filter(|&a| a != BR_ONLY);
    code.decode_at(addresses);
    // Summed per chunk of traces as they are found, never as one list of every trace's copy
    // (which took 260 MB on a 629 MB capture): ranges in a hash table per chunk, branches as
    // runs, since the traces come sorted by branch.
    let chunk = traces
        .traces
        .len()
        .div_ceil(rayon::current_num_threads() * 4)
        .max(1);
    type Part = (HashMap<(u64, u64), u64>, Vec<Counted>);
    let parts: Vec<Part> = traces
        .traces
        .par_chunks(chunk)
        .map(|chunk| {
            let mut ranges: HashMap<(u64, u64), u64> = HashMap::new();
            let mut branches: Vec<Counted> = Vec::new();
            for &((source, target, next), c) in chunk {
                if c.taken == 0 || !code.starts_instruction(target) {
                    continue;
                }
                if next != BR_ONLY
                    && code.starts_instruction(next)
                    && target <= next
                    && !code.crosses_jump(target, next)
                {
                    *ranges.entry((target, next)).or_insert(0) += c.taken;
                }
                match branches.last_mut() {
                    Some(last) if last.0 == (source, target) => last.1 += c.taken,
                    _ => branches.push(((source, target), c.taken)),
                }
            }
            (ranges, branches)
        })
        .collect();
    let mut ranges: Vec<Counted> = Vec::new();
    let mut branches: Vec<Counted> = Vec::new();
    for (r, b) in parts {
        ranges.extend(r);
        branches.extend(b);
    }
    // Adjacent equal keys where chunks meet; `summed` sorts them anyway if the traces were
    // not in branch order.
    (summed(ranges), summed(branches))
}

/// A key (a range or a branch) and its count.
pub(super) type Counted = ((u64, u64), u64);

/// `v` sorted by key, equal keys summed (in place).
pub(super) fn summed(mut v: Vec<Counted>) -> Vec<Counted> {
    if !v.is_sorted_by_key(|x| x.0) {
        v.par_sort_unstable_by_key(|x| x.0);
    }
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
pub(crate) fn profile(binary: &Binary, traces: BinaryProfile) -> Result<(Made, Report)> {
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
    binary.load_meeting(&mut debug, &dwarf, touched)?;
    let namesakes = binary.symbols_named(debug.subprograms().map(|(_, name, _)| name));
    binary.load_meeting(&mut debug, &dwarf, namesakes.into_iter().map(|a| (a, a)))?;
    let all = joined_ranges(&ranges, &Functions::new(&debug, code));
    let dis = disjoint(&all);
    // Only the disjoint ranges are symbolized.
    drop((all, ranges));
    binary.load_meeting(&mut debug, &dwarf, dis.iter().map(|&(b, e, _)| (b, e)))?;
    debug.seal();
    let functions = Functions::new(&debug, code);
    let names = Names::new(&debug);
    // Each block's partial profile is merged into this one as soon as it is built: at most
    // one partial per thread is alive.
    let how = match sum {
        true => LineCount::Sum,
        false => LineCount::Max,
    };
    let merged = std::sync::Mutex::new(FlatProfile::default());
    let merge_in = |partial: FlatProfile| {
        merged.lock().expect("a merge panicked").merge(partial, how);
    };
    // Only calls count among the branches; the others are let go before the profile grows.
    let mut branches = branches;
    branches.retain(|&((_, target), _)| functions.callee_at(target).is_some());
    branches.shrink_to_fit();
    let block = branches
        .len()
        .div_ceil(rayon::current_num_threads() * 8)
        .max(1);
    branches
        .par_chunks(block)
        .map(|block| {
            let mut p = FlatProfile::default();
            let (mut stack, mut fr, mut chain) = (Vec::new(), Vec::new(), Chain::default());
            for &((source, target), n) in block {
                let Some(callee) = functions.callee_at(target) else {
                    continue;
                };
                let callee = names.of_node[callee as usize];
                debug.frames_at(source, &mut stack);
                frames(&stack, &names, &mut fr);
                if let Some(&(_, last)) = fr.last() {
                    let leaf = chain.leaf(&mut p, &fr, 0, base_discriminator_llvm19);
                    let loc = LineLocation::new(last.line, base_discriminator_llvm19(last.disc));
                    p.add_target(leaf, loc, callee, n);
                }
                let top = p.top(callee);
                p.add_head(top, n);
            }
            p
        })
        .for_each(merge_in);
    drop(branches);
    // Contiguous blocks of ranges per task: a function's profile is then built in one or two
    // tasks, not copied into every task's partial profile.
    let block = dis.len().div_ceil(rayon::current_num_threads() * 8).max(1);
    dis.par_chunks(block)
        .map(|block| {
            let mut p = FlatProfile::default();
            let (mut stack, mut fr, mut chain) = (Vec::new(), Vec::new(), Chain::default());
            for &(b, e, n) in block {
                for (a, size) in code.insts_in(b, e) {
                    debug.frames_at(a, &mut stack);
                    frames(&stack, &names, &mut fr);
                    let Some(&(_, last)) = fr.last() else {
                        continue;
                    };
                    let leaf =
                        chain.leaf(&mut p, &fr, n * u64::from(size), base_discriminator_llvm19);
                    let loc = LineLocation::new(last.line, base_discriminator_llvm19(last.disc));
                    let n = match how {
                        LineCount::Sum => n,
                        LineCount::Max => n * duplication_factor(last.disc),
                    };
                    p.add_line(leaf, loc, n, how);
                }
            }
            p
        })
        .for_each(merge_in);
    drop(dis);
    let profile = merged.into_inner().expect("a merge panicked");
    let ambiguous: Vec<bool> = names
        .ids
        .iter()
        .map(|name| match name {
            FunctionId::Name(n) => ambiguous(&String::from_utf8_lossy(n)),
            FunctionId::Hash(_) => false,
        })
        .collect();
    let report = Report {
        functions: profile
            .top_names()
            .filter(|&n| !ambiguous[n as usize])
            .count(),
        ..report
    };
    let made = Made {
        profile,
        names: names.ids,
        ambiguous,
    };
    Ok((made, report))
}

/// An llvm-profgen profile as [`profile`] makes it: flat, built into the nested model one
/// function at a time as it is written (the DWARF is gone by then).
pub(crate) struct Made {
    profile: FlatProfile,
    names: Vec<FunctionId>,
    /// By name id: names llvm-profgen leaves out of the profile.
    ambiguous: Vec<bool>,
}

impl Made {
    /// The number of top-level profiles, and the `i`th in the order LLVM's writers sort
    /// them, built on demand from any thread.
    pub(crate) fn into_functions(
        self,
    ) -> (usize, impl Fn(usize) -> (Context, FunctionSamples) + Sync) {
        let ambiguous = self.ambiguous;
        let functions = self
            .profile
            .into_functions(self.names, move |name| !ambiguous[name as usize]);
        let n = functions.len();
        let get = move |i| {
            let (context, mut f) = functions.get(i);
            update_callsite_samples(&mut f);
            (context, f)
        };
        (n, get)
    }
}

/// `preprocessRangeCounter`: the ranges, and with count 0 the ranges of the functions the
/// ranges start in; sorted by key, keys distinct.
fn joined_ranges(ranges: &[Counted], functions: &Functions<'_>) -> Vec<Counted> {
    let mut all: Vec<Counted> = ranges.to_vec();
    for &((b, _), _) in ranges {
        for &(fb, fe) in functions.ranges_at(b) {
            all.push(((fb, fe - 1), 0));
        }
    }
    // Adding the zeros is keeping the range's own count.
    summed(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `findDisjointRanges` as LLVM writes it, with maps: the reference for [`disjoint`].
    fn disjoint_with_maps(ranges: &[Counted]) -> Vec<(u64, u64, u64)> {
        #[derive(Default)]
        struct Point {
            begin: Option<u64>,
            end: Option<u64>,
            zero_begin: bool,
            zero_end: bool,
        }
        let mut points: BTreeMap<u64, Point> = BTreeMap::new();
        for &((b, e), n) in ranges {
            let p = points.entry(b).or_default();
            *p.begin.get_or_insert(0) += n;
            p.zero_begin |= n == 0;
            let p = points.entry(e).or_default();
            *p.end.get_or_insert(0) += n;
            p.zero_end |= n == 0;
        }
        let mut map: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        let mut begin: Option<u64> = None;
        let (mut depth, mut count) = (0i64, 0u64);
        for (&a, p) in &points {
            if let Some(n) = p.begin {
                if let Some(b) = begin {
                    map.insert((b, a - 1), count);
                }
                count += n;
                begin = Some(a);
                depth += i64::from(p.zero_begin);
            }
            if let Some(n) = p.end {
                if let Some(b) = begin {
                    map.insert((b, a), count);
                }
                count -= n;
                begin = Some(a + 1);
                depth -= i64::from(p.zero_end);
                if count == 0 && depth == 0 {
                    begin = None;
                }
            }
        }
        map.into_iter().map(|((b, e), n)| (b, e, n)).collect()
    }

    proptest! {
        #[test]
        fn disjoint_equals_llvms_map_based_split(
            raw in prop::collection::vec((1u64..60, 0u64..12, 0u64..4), 0..40)
        ) {
            // Small addresses so that ranges share boundaries and nest; counts of 0 included.
            let ranges = summed(raw.iter().map(|&(b, len, n)| ((b, b + len), n)).collect());
            prop_assert_eq!(disjoint(&ranges), disjoint_with_maps(&ranges));
        }
    }
}
