//! perf.data (LBR) → AutoFDO sample profiles: a binary's LBR traces (from
//! [`aggregate`](crate::perf::aggregate()) or a profile store) symbolized with its DWARF line
//! table and inline stacks into an LLVM sample [`Profile`], which
//! [`sampleprof::write`](crate::sampleprof::write) writes in any encoding.
//!
//! [`Style::Autofdo`] is `create_llvm_prof`'s conversion (AutoFDO 0.19, the Debian package):
//! every byte of a fall-through range counts, a line's count is the maximum over its bytes,
//! totals are sums over bytes, heads and call targets come from branches to a function's
//! first byte. What is exact and what is not is in docs/autofdo.md.

mod code;
mod dwarf;
mod flat;
mod ips;
mod profgen;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use formats::bolt::preagg::BR_ONLY;
use formats::sampleprof::model::{Context, FunctionId, FunctionSamples, LineLocation, Profile};
use hashbrown::HashMap;
use object::{Object, ObjectSection, ObjectSymbol};
use rayon::prelude::*;

pub use dwarf::{DebugInfo, Dwarf, DwarfSections, FrameRef, NO_NODE};

use crate::error::{Error, Result};
use crate::io::input::InputBytes;
use crate::perf::aggregate::BinaryProfile;
use crate::sampleprof::OutputFormat;
use profgen::Counted;

/// Whose conversion rules to follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Style {
    /// `create_llvm_prof` (google/autofdo 0.19).
    #[default]
    Autofdo,
    /// `llvm-profgen` (LLVM 19, line-number based): read the capture with
    /// [`KernelEntries::OutsideSkipped`](crate::perf::KernelEntries::OutsideSkipped).
    LlvmProfgen,
}

/// `create_llvm_prof`'s `--sample_threshold_frac` default.
const SAMPLE_THRESHOLD_FRAC: f64 = 0.000005;
/// `create_llvm_prof`'s smallest threshold.
const MIN_SAMPLES: i64 = 10;
/// autofdo drops fall-through ranges longer than this ("Bogus LBR data").
const MAX_RANGE: u64 = 1 << 20;

/// A binary loaded for symbolization: its function symbols and code; its DWARF is decoded
/// when a profile is made, only for the units the profile touches.
pub struct Binary {
    path: std::path::PathBuf,
    data: Arc<InputBytes>,
    /// start address → (name, size); the first symbol at an address names it.
    symbols: BTreeMap<u64, (Arc<str>, u64)>,
    /// first name at an address → the other names there.
    aliases: BTreeMap<Arc<str>, Vec<Arc<str>>>,
    /// The instructions, as llvm-profgen disassembles them.
    code: code::Code,
}

impl Binary {
    /// Maps the ELF file at `path` and reads its function symbols; fails when it has no
    /// function symbols or no DWARF line table.
    pub fn load(path: &Path) -> Result<Binary> {
        let data = Arc::new(InputBytes::open(path).map_err(crate::error::io_error(path))?);
        let bad = |message: String| Error::Binary {
            path: path.to_path_buf(),
            message,
        };
        let file =
            object::File::parse(&data[..]).map_err(|e| bad(format!("not an ELF file: {e}")))?;
        let mut symbols: BTreeMap<u64, (Arc<str>, u64)> = BTreeMap::new();
        let mut aliases: BTreeMap<Arc<str>, Vec<Arc<str>>> = BTreeMap::new();
        let table: Vec<_> = if file.symbol_table().is_some() {
            file.symbols().collect()
        } else {
            file.dynamic_symbols().collect()
        };
        for s in table {
            if s.kind() != object::SymbolKind::Text || s.is_undefined() || s.size() == 0 {
                continue;
            }
            let Ok(name) = s.name_bytes() else { continue };
            let name: Arc<str> = String::from_utf8_lossy(name).into();
            match symbols.entry(s.address()) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert((name, s.size()));
                }
                std::collections::btree_map::Entry::Occupied(o) => {
                    let first = o.get().0.clone();
                    if first != name {
                        aliases.entry(first).or_default().push(name);
                    }
                }
            }
        }
        if symbols.is_empty() {
            return Err(bad("no function symbols (is it stripped?)".into()));
        }
        // The DWARF's presence and unit headers are checked now, before the capture is read
        // to the end; the units themselves are decoded when a profile needs them.
        let sections = DwarfSections::load(&file, path).map_err(bad)?;
        Dwarf::new(&sections).map_err(bad)?;
        let code = code::Code::new(&file, data.clone());
        drop((sections, file));
        Ok(Binary {
            path: path.to_path_buf(),
            data,
            symbols,
            aliases,
            code,
        })
    }

    /// The ELF file.
    fn object(&self) -> Result<object::File<'_>> {
        object::File::parse(&self.data[..]).map_err(|e| self.error(format!("not an ELF file: {e}")))
    }

    /// Decodes `units` of `dwarf` into `debug`, a batch at a time, dropping the DWARF
    /// sections' pages from memory after each (`debug` holds copies of what it needs; the
    /// next batch faults in the pages it reads): the file's pages then never all count in
    /// the resident memory together with the decoded units.
    fn load_units(&self, debug: &mut DebugInfo, dwarf: &Dwarf<'_>, units: &[usize]) -> Result<()> {
        const BATCH: usize = 128;
        for batch in units.chunks(BATCH) {
            debug.load(dwarf, batch).map_err(|m| self.error(m))?;
            self.release_debug_sections();
        }
        Ok(())
    }

    /// [`Binary::load_units`] of the units meeting `intervals` (inclusive).
    fn load_meeting(
        &self,
        debug: &mut DebugInfo,
        dwarf: &Dwarf<'_>,
        intervals: impl IntoIterator<Item = (u64, u64)>,
    ) -> Result<()> {
        self.load_units(debug, dwarf, &dwarf.units_meeting(intervals))
    }

    /// Drops the pages of the DWARF sections from memory.
    fn release_debug_sections(&self) {
        let Ok(file) = self.object() else { return };
        for section in file.sections() {
            let debug = section.name().is_ok_and(|n| n.starts_with(".debug_"));
            if let (true, Some((offset, len))) = (debug, section.file_range()) {
                self.data.release(offset as usize..(offset + len) as usize);
            }
        }
    }

    /// An error about this binary.
    fn error(&self, message: String) -> Error {
        Error::Binary {
            path: self.path.clone(),
            message,
        }
    }

    /// The function containing `a`: (start, name, end).
    fn function_at(&self, a: u64) -> Option<(u64, &Arc<str>, u64)> {
        let (&start, (name, size)) = self.symbols.range(..=a).next_back()?;
        (a < start + size).then_some((start, name, start + size))
    }

    /// The addresses of the code symbols named as any of `names`.
    fn symbols_named<'n>(&self, names: impl Iterator<Item = &'n str>) -> Vec<u64> {
        let wanted: std::collections::HashSet<&str> = names.collect();
        self.code
            .symbols()
            .iter()
            .filter(|(_, n)| wanted.contains(&**n))
            .map(|&(a, _)| a)
            .collect()
    }
}

/// autofdo's `GetOriginalName`: the name up to its first '.'.
fn original_name(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// How line offsets carry discriminators: autofdo's `use_discriminator_encoding`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Discriminators {
    /// LLVM's encoding, decoded to the base discriminator (create_llvm_prof).
    Llvm,
    /// As the line table has them (create_gcov: GCC's discriminators are plain numbers).
    Raw,
}

/// autofdo's `SourceInfo::Offset`: `(line - start_line) << 16 | discriminator`, in 32 bits,
/// the discriminator decoded as `d` says.
fn offset(f: &FrameRef<'_>, d: Discriminators) -> u32 {
    let disc = match d {
        Discriminators::Llvm => base_discriminator(f.discriminator),
        Discriminators::Raw => f.discriminator,
    };
    (f.line.wrapping_sub(f.start_line) << 16) | disc
}

/// LLVM's `getUnsignedFromPrefixEncoding`: one component of an encoded discriminator.
fn prefix_decoded(u: u32) -> u32 {
    if u & 1 != 0 {
        return 0;
    }
    let u = u >> 1;
    if u & 0x20 != 0 {
        ((u >> 1) & 0xfe0) | (u & 0x1f)
    } else {
        u & 0x1f
    }
}

/// LLVM's `DILocation::getBaseDiscriminatorFromDiscriminator` (not FS-AFDO) without the
/// pseudo-probe case: the autofdo style's (create_llvm_prof 0.19 links LLVM 13; the tests
/// against it pass with this reading, none has a discriminator that tells the two apart).
fn base_discriminator(d: u32) -> u32 {
    prefix_decoded(d)
}

/// The same as LLVM 19 has it (llvm-profgen): a discriminator whose low three bits are all
/// set is read as a pseudo probe's (`isPseudoProbeDiscriminator`), whose base is the DWARF
/// base discriminator packed in bits 16–18 when bit 28 says so, else the probe index (bits
/// 3–18). GCC's plain discriminators 7, 15, 23… are read that way too: 15 is 1, not 0.
fn base_discriminator_llvm19(d: u32) -> u32 {
    const PROBE: u32 = 0x7;
    const DWARF_BASE_ENCODED: u32 = 1 << 28;
    match (d & PROBE == PROBE, d & DWARF_BASE_ENCODED != 0) {
        (true, true) => (d >> 16) & 0x7,
        (true, false) => (d >> 3) & 0xffff,
        (false, _) => prefix_decoded(d),
    }
}

/// LLVM's `DILocation::getDuplicationFactorFromDiscriminator`.
fn duplication_factor(d: u32) -> u64 {
    let next = if d & 1 == 0 {
        d >> if d & 0x40 != 0 { 14 } else { 7 }
    } else {
        d >> 1
    };
    u64::from(prefix_decoded(next).max(1))
}

#[derive(Clone, Debug, Default)]
struct Pos<'a> {
    count: u64,
    /// Call targets by name.
    targets: BTreeMap<&'a str, u64>,
}

/// autofdo's `Symbol`, names borrowed from the [`DebugInfo`] and the [`Binary`].
#[derive(Clone, Debug, Default)]
struct Symbol<'a> {
    total: u64,
    head: u64,
    pos: BTreeMap<u32, Pos<'a>>,
    /// Inlined callees by call-site offset and name id ([`FrameRef::name_id`]: comparing
    /// ids, not names, is most of the speed), with their names.
    callsites: BTreeMap<(u32, u32), (&'a str, Symbol<'a>)>,
}

impl<'a> Symbol<'a> {
    /// autofdo's `TraverseInlineStack`: the symbol of the innermost frame, adding `count` to
    /// every total on the way.
    fn traverse(
        &mut self,
        stack: &[FrameRef<'a>],
        count: u64,
        d: Discriminators,
    ) -> &mut Symbol<'a> {
        self.total += count;
        let mut s = self;
        for i in (1..stack.len()).rev() {
            let callee = &stack[i - 1];
            s = &mut s
                .callsites
                .entry((offset(&stack[i], d), callee.name_id))
                .or_insert_with(|| (callee.name, Symbol::default()))
                .1;
            s.total += count;
        }
        s
    }

    /// autofdo's `AddSourceCount` with `MAX`.
    fn add_source_count(&mut self, stack: &[FrameRef<'a>], count: u64, d: Discriminators) {
        // Lines before the function's declaration (line-0 rows) count too.
        if stack.is_empty() {
            return;
        }
        let s = self.traverse(stack, count, d);
        let p = s.pos.entry(offset(&stack[0], d)).or_default();
        p.count = p.count.max(count);
    }

    fn to_samples(&self, top: bool) -> FunctionSamples {
        let mut f = FunctionSamples {
            total: self.total,
            head: if top { self.head } else { 0 },
            ..Default::default()
        };
        let loc = |o: u32| LineLocation {
            line: o >> 16,
            disc: o & 0xffff,
        };
        for (&o, p) in &self.pos {
            let r = f.body.entry(loc(o)).or_default();
            r.count += p.count;
            for (t, &c) in &p.targets {
                *r.targets.entry(FunctionId::name(t.as_bytes())).or_default() += c;
            }
        }
        for (&(o, _), (name, s)) in &self.callsites {
            let callee = f.callee_mut(loc(o), FunctionId::name(name.as_bytes()));
            let inner = s.to_samples(false);
            callee.merge(&inner, 1).ok();
        }
        f
    }
}

/// What [`profile`] found, beside the profile.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Distinct fall-through ranges kept.
    pub ranges: usize,
    /// Distinct branches kept.
    pub branches: usize,
    /// Σ count × length of the kept ranges (autofdo's total count).
    pub total_count: u64,
    /// Functions whose profile passed the threshold.
    pub functions: usize,
}

/// One function's share of the capture: what autofdo's `ProfileMaps` holds. Functions are
/// keyed by name, as autofdo keys them: a second function of the same name adds its samples
/// here, and keeps only those within the first one's bytes.
struct FunctionMaps {
    name: Arc<str>,
    start: u64,
    end: u64,
    /// ((begin, end inclusive), count) sorted.
    ranges: Vec<Counted>,
    /// ((from, to), count) sorted.
    branches: Vec<Counted>,
    /// IP samples by address (captures without branch stacks), sorted.
    ips: Vec<(u64, u64)>,
}

/// The processed functions: their names, and the index of each by the addresses of the
/// symbols naming it.
struct Processed {
    names: Vec<Arc<str>>,
    at: HashMap<u64, u32>,
}

impl Processed {
    fn new(binary: &Binary, names: Vec<Arc<str>>) -> Processed {
        let at = {
            let index: HashMap<&str, u32> = names
                .iter()
                .enumerate()
                .map(|(i, n)| (&**n, i as u32))
                .collect();
            binary
                .symbols
                .iter()
                .filter_map(|(&a, (name, _))| Some((a, *index.get(&**name)?)))
                .collect()
        };
        Processed { names, at }
    }
}

/// Whether two inline stacks are equal (by [`FrameRef::same`]).
fn same_stack(a: &[FrameRef<'_>], b: &[FrameRef<'_>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y))
}

/// The sample profile of one processed function (`m`), without its head samples; its call
/// targets are the processed functions (`processed`).
///
/// autofdo walks every byte: its instruction map gives each byte's inline stack (each seen
/// with count 0), a byte's count goes to every frame's total and, as a maximum, to the leaf's
/// line. Here the function is cut into pieces with one stack each
/// ([`DebugInfo::frame_breaks`]): a piece adds its bytes' sum to the totals and their
/// maximum to the line, which is the same.
fn function_samples(
    debug: &DebugInfo,
    m: &FunctionMaps,
    processed: &Processed,
    (d, lines_from_ips): (Discriminators, bool),
) -> FunctionSamples {
    let mut sym = Symbol::default();
    let mut breaks = Vec::new();
    debug.frame_breaks(m.start, m.end, &mut breaks);
    let mut stacks: Vec<Vec<FrameRef<'_>>> = Vec::new();
    let mut piece_stack: Vec<u32> = Vec::with_capacity(breaks.len());
    let mut frames = Vec::new();
    for &b in &breaks {
        debug.frames_at(b, &mut frames);
        if !stacks.last().is_some_and(|s| same_stack(s, &frames)) {
            sym.add_source_count(&frames, 0, d);
            stacks.push(frames.clone());
        }
        piece_stack.push((stacks.len() - 1) as u32);
    }
    let stack_at = |a: u64| {
        let piece = breaks.partition_point(|&b| b <= a) - 1;
        &stacks[piece_stack[piece] as usize]
    };
    let counts = byte_counts(m, lines_from_ips);
    for (piece, &b) in breaks.iter().enumerate() {
        let s = &stacks[piece_stack[piece] as usize];
        let e = breaks.get(piece + 1).copied().unwrap_or(m.end);
        let bytes = &counts[(b - m.start) as usize..(e - m.start) as usize];
        let (sum, max) = bytes.iter().fold((0u64, 0u64), |(sum, max), &n| {
            (sum.wrapping_add(n), max.max(n))
        });
        if max > 0 && !s.is_empty() {
            let dup = duplication_factor(s[0].discriminator);
            let inner = sym.traverse(s, sum.wrapping_mul(dup), d);
            let p = inner.pos.entry(offset(&s[0], d)).or_default();
            p.count = p.count.max(max * dup);
        }
    }
    for &((from, to), n) in &m.branches {
        if from < m.start || from >= m.end {
            continue;
        }
        let Some(&callee) = processed.at.get(&to) else {
            continue;
        };
        let s = stack_at(from);
        if s.is_empty() {
            continue;
        }
        let inner = sym.traverse(s, 0, d);
        inner
            .pos
            .entry(offset(&s[0], d))
            .or_default()
            .targets
            .insert(original_name(&processed.names[callee as usize]), n);
    }
    sym.to_samples(true)
}

/// Each byte's count in `m`: the ranges over it, or the IP samples when the lines come from
/// them (create_llvm_prof --use_lbr=false reads the branch stacks only for heads and call
/// targets). Samples outside the function's bytes (those of a second function of its name)
/// are left out.
fn byte_counts(m: &FunctionMaps, lines_from_ips: bool) -> Vec<u64> {
    let len = (m.end - m.start) as usize;
    // Differences, summed once: ranges start and stop adding their count.
    let mut counts: Vec<u64> = vec![0; len + 1];
    if !lines_from_ips {
        for &((b, e), n) in &m.ranges {
            let (b, e) = (b.max(m.start), e.min(m.end - 1));
            if b <= e {
                counts[(b - m.start) as usize] = counts[(b - m.start) as usize].wrapping_add(n);
                counts[(e + 1 - m.start) as usize] =
                    counts[(e + 1 - m.start) as usize].wrapping_sub(n);
            }
        }
        let mut running = 0u64;
        for c in &mut counts {
            running = running.wrapping_add(*c);
            *c = running;
        }
    }
    counts.truncate(len);
    for &(a, n) in &m.ips {
        if (m.start..m.end).contains(&a) {
            counts[(a - m.start) as usize] += n;
        }
    }
    counts
}

/// A sample profile made by [`profile`] and its siblings, built into the nested model one
/// function at a time as it is written, so that a text profile never exists whole in memory.
pub struct SampleProfile(Made);

enum Made {
    /// llvm-profgen's conversion.
    Profgen(profgen::Made),
    /// create_llvm_prof's (and create_gcov's).
    Autofdo(AutofdoMade),
}

/// The number of top-level profiles, and a maker of the `i`th in the order LLVM's writers
/// sort them, callable from any thread.
type Functions = (
    usize,
    Box<dyn Fn(usize) -> (Context, FunctionSamples) + Sync>,
);

impl Made {
    fn into_functions(self) -> Functions {
        match self {
            Made::Profgen(m) => {
                let (n, function) = m.into_functions();
                (n, Box::new(function))
            }
            Made::Autofdo(m) => {
                let n = m.outputs.len();
                (n, Box::new(move |i| m.function(i)))
            }
        }
    }
}

impl SampleProfile {
    /// The whole profile.
    pub fn into_profile(self) -> Profile {
        let (n, function) = self.0.into_functions();
        let mut out = Profile::default();
        out.functions.extend((0..n).map(function));
        out
    }

    /// Writes the profile to `path` in `format`, atomically.
    pub fn write(self, format: OutputFormat, path: &Path) -> crate::sampleprof::Result<()> {
        match format {
            OutputFormat::Text => {
                let (n, function) = self.0.into_functions();
                crate::sampleprof::write_text_functions(n, function, path)
            }
            format => crate::sampleprof::write(&self.into_profile(), format, path),
        }
    }
}

/// The sample profile of `binary` from its LBR traces, or from its IP samples when the
/// capture had no branch stacks (as llvm-profgen `--leading-ip-only` and create_llvm_prof
/// `--use_lbr=false` make them), in `style`. Fails when no sample falls in the
/// binary. The traces are dropped as soon as their ranges and branches are summed.
pub fn profile(
    binary: &Binary,
    traces: BinaryProfile,
    style: Style,
) -> Result<(SampleProfile, Report)> {
    let (made, report) = match style {
        Style::LlvmProfgen => {
            let (made, report) = profgen::profile(binary, traces)?;
            (Made::Profgen(made), report)
        }
        Style::Autofdo => {
            let (made, report) = autofdo_profile(binary, traces, (Discriminators::Llvm, false))?;
            (Made::Autofdo(made), report)
        }
    };
    Ok((SampleProfile(made), report))
}

/// create_llvm_prof `--use_lbr=false` (and create_gcov's, for `gcc`) on a capture with branch
/// stacks: `traces` holds both its LBR traces and its sample IPs. Lines count the IP samples
/// (once each, at their addresses); heads and call targets come from the branch stacks, and
/// the threshold and the choice of functions from the ranges, as create_llvm_prof still reads
/// them.
pub fn ip_line_profile(
    binary: &Binary,
    traces: BinaryProfile,
    gcc: bool,
) -> Result<(SampleProfile, Report)> {
    let d = match gcc {
        true => Discriminators::Raw,
        false => Discriminators::Llvm,
    };
    let (made, report) = autofdo_profile(binary, traces, (d, true))?;
    Ok((SampleProfile(Made::Autofdo(made)), report))
}

/// The profile `create_gcov` (AutoFDO 0.19) makes for GCC's `-fauto-profile`: the
/// [`Style::Autofdo`] conversion with the line table's discriminators as they are (GCC's
/// are plain numbers; create_llvm_prof decodes LLVM's encoding instead).
pub fn gcc_profile(binary: &Binary, traces: BinaryProfile) -> Result<(SampleProfile, Report)> {
    let (made, report) = autofdo_profile(binary, traces, (Discriminators::Raw, false))?;
    Ok((SampleProfile(Made::Autofdo(made)), report))
}

/// autofdo's sample reader: the fall-through ranges `[to of entry i, from of entry i-1]`
/// and the branches of `traces`, each summed and sorted.
fn ranges_and_branches(traces: &BinaryProfile) -> (Vec<Counted>, Vec<Counted>) {
    let mut ranges = Vec::new();
    let mut branches = Vec::new();
    for &((branch, from, to), c) in &traces.traces {
        let n = c.taken;
        if n == 0 || from == 0 {
            continue;
        }
        if to == BR_ONLY {
            if branch != 0 {
                branches.push(((branch, from), n));
            }
            continue;
        }
        if to < from || to - from > MAX_RANGE {
            continue;
        }
        ranges.push(((from, to), n));
        if branch != 0 {
            branches.push(((branch, from), n));
        }
    }
    (profgen::summed(ranges), profgen::summed(branches))
}

/// The capture's ranges, branches and IP samples handed to the functions holding their
/// first address (autofdo's `GetProfileMaps`), by name.
fn function_maps(
    binary: &Binary,
    ranges: Vec<Counted>,
    branches: Vec<Counted>,
    ips: &[(u64, u64)],
) -> Vec<FunctionMaps> {
    let mut maps: Vec<FunctionMaps> = Vec::new();
    let mut by_name: HashMap<Arc<str>, usize> = HashMap::new();
    // The items come sorted: the last lookup's function usually holds the next one too.
    let mut last: Option<(u64, u64, usize)> = None;
    let mut index_of = |a: u64| -> Option<usize> {
        if let Some((from, to, i)) = last {
            if (from..to).contains(&a) {
                return Some(i);
            }
        }
        let (start, name, end) = binary.function_at(a)?;
        let i = *by_name.entry(name.clone()).or_insert_with(|| {
            maps.push(FunctionMaps {
                name: name.clone(),
                start,
                end,
                ranges: Vec::new(),
                branches: Vec::new(),
                ips: Vec::new(),
            });
            maps.len() - 1
        });
        // Valid up to the next symbol's start, which may name another function.
        let next = binary
            .symbols
            .range(start + 1..)
            .next()
            .map_or(u64::MAX, |s| *s.0);
        last = Some((start, end.min(next), i));
        Some(i)
    };
    let mut ranges_of = Vec::with_capacity(ranges.len());
    for r in ranges {
        ranges_of.push((index_of(r.0 .0), r));
    }
    let mut branches_of = Vec::with_capacity(branches.len());
    for b in branches {
        branches_of.push((index_of(b.0 .0), b));
    }
    let ips_of: Vec<_> = ips.iter().map(|&p| (index_of(p.0), p)).collect();
    for (i, r) in ranges_of {
        if let Some(i) = i {
            maps[i].ranges.push(r);
        }
    }
    for (i, b) in branches_of {
        if let Some(i) = i {
            maps[i].branches.push(b);
        }
    }
    for (i, p) in ips_of {
        if let Some(i) = i {
            maps[i].ips.push(p);
        }
    }
    maps
}

/// create_llvm_prof's profile, made one top-level profile at a time: the processed
/// functions' samples, DWARF and heads, and which of them make each top-level profile.
struct AutofdoMade {
    debug: DebugInfo,
    /// The processed functions, sorted by name.
    maps: Vec<FunctionMaps>,
    processed: Processed,
    /// Head samples by processed function.
    heads: Vec<u64>,
    /// The top-level profiles in the order LLVM's writers sort them: each one's context and
    /// the processed functions whose samples it sums (its own, its aliases', and those of
    /// `name.cold`, `name.part.0`…).
    outputs: Vec<(Context, Vec<u32>)>,
    lines: (Discriminators, bool),
}

impl AutofdoMade {
    /// The `i`th top-level profile.
    fn function(&self, i: usize) -> (Context, FunctionSamples) {
        let (context, members) = &self.outputs[i];
        let samples_of = |j: u32| {
            let j = j as usize;
            let mut f = function_samples(&self.debug, &self.maps[j], &self.processed, self.lines);
            f.head += self.heads[j];
            f
        };
        let f = match members[..] {
            [only] => samples_of(only),
            _ => {
                let mut sum = FunctionSamples::default();
                for &j in members {
                    sum.merge(&samples_of(j), 1).ok();
                }
                sum
            }
        };
        (context.clone(), f)
    }
}

/// The head samples of the processed functions (`maps`): the counts of the branches from
/// their bytes to a processed function's first byte, by callee.
fn heads(maps: &[FunctionMaps], processed: &Processed) -> Vec<u64> {
    let mut heads = vec![0u64; maps.len()];
    for m in maps {
        for &((from, to), n) in &m.branches {
            if (m.start..m.end).contains(&from) {
                if let Some(&callee) = processed.at.get(&to) {
                    heads[callee as usize] += n;
                }
            }
        }
    }
    heads
}

/// The total samples of `m`'s profile, without building it: each byte with a line adds its
/// count times its row's duplication factor (the total adds every piece's count, the
/// line's only its maximum).
fn top_total(debug: &DebugInfo, m: &FunctionMaps, lines_from_ips: bool) -> u64 {
    let counts = byte_counts(m, lines_from_ips);
    let mut total = 0u64;
    debug.rows_within(m.start, m.end, |from, to, discriminator| {
        let Some(d) = discriminator else { return };
        let bytes = &counts[(from - m.start) as usize..(to - m.start) as usize];
        let sum = bytes.iter().fold(0u64, |s, &n| s.wrapping_add(n));
        total = total.wrapping_add(sum.wrapping_mul(duplication_factor(d)));
    });
    total
}

/// create_llvm_prof's conversion of `traces` (create_gcov's with raw discriminators); with
/// `lines.1`, lines from the IP samples only.
fn autofdo_profile(
    binary: &Binary,
    traces: BinaryProfile,
    lines: (Discriminators, bool),
) -> Result<(AutofdoMade, Report)> {
    let (ranges, branches) = ranges_and_branches(&traces);
    if ranges.is_empty() && traces.ips.is_empty() {
        return Err(Error::Mismatch(
            "no sample falls in the binary (is it the profiled binary?)".into(),
        ));
    }
    // autofdo's total count: the ranges' (count × length) when there are any, else the IP
    // samples (a capture without branch stacks), each once, as create_llvm_prof
    // --use_lbr=false counts them.
    let total_count: u64 = match ranges.is_empty() {
        false => ranges.iter().map(|&((b, e), n)| n * (1 + e - b)).sum(),
        true => traces.ips.iter().map(|&(_, n)| n).sum(),
    };
    let threshold = ((total_count as f64 * SAMPLE_THRESHOLD_FRAC) as i64).max(MIN_SAMPLES) as u64;
    let (range_count, branch_count) = (ranges.len(), branches.len());
    // Each function's maps hold what follows; the traces are let go.
    let ips = traces.ips;
    drop(traces.traces);
    let maps = function_maps(binary, ranges, branches, &ips);
    drop(ips);
    // autofdo's sampled functions: those holding a range's start or an IP.
    let sampled: Vec<(u64, u64)> = maps
        .iter()
        .filter(|m| !m.ranges.is_empty() || !m.ips.is_empty())
        .map(|m| (m.start, m.end))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    // A function's aggregated count: its ranges' when it has any, else its IP samples'.
    let aggregated = |m: &FunctionMaps| -> u64 {
        match m.ranges.is_empty() {
            false => m.ranges.iter().map(|&((b, e), n)| n * (e - b)).sum(),
            true => m.ips.iter().map(|&(_, n)| n).sum(),
        }
    };
    // The functions to process, sorted by name.
    let mut maps: Vec<FunctionMaps> = maps
        .into_iter()
        .filter(|m| aggregated(m) > threshold)
        .collect();
    maps.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    let processed = Processed::new(binary, maps.iter().map(|m| m.name.clone()).collect());
    // The DWARF of the processed functions' units, nothing else.
    let file = binary.object()?;
    let sections = DwarfSections::load(&file, &binary.path).map_err(|m| binary.error(m))?;
    let dwarf = Dwarf::new(&sections).map_err(|m| binary.error(m))?;
    let mut debug = DebugInfo::default();
    binary.load_meeting(
        &mut debug,
        &dwarf,
        maps.iter().map(|m| (m.start, m.end - 1)),
    )?;
    // A function outside every unit takes the last row before it: load that row's unit.
    let before: Vec<usize> = maps
        .iter()
        .filter_map(|m| dwarf.unit_before(m.start))
        .collect();
    binary.load_units(&mut debug, &dwarf, &before)?;
    debug.keep_rows_within(&sampled);
    let totals: Vec<u64> = maps
        .par_iter()
        .map(|m| top_total(&debug, m, lines.1))
        .collect();
    let outputs = outputs(binary, &processed.names, &totals, threshold);
    if outputs.is_empty() {
        return Err(Error::Mismatch(format!(
            "no function of the binary has more than {threshold} samples, or none has line information"
        )));
    }
    let report = Report {
        ranges: range_count,
        branches: branch_count,
        total_count,
        functions: outputs.len(),
    };
    let made = AutofdoMade {
        heads: heads(&maps, &processed),
        debug,
        maps,
        processed,
        outputs,
        lines,
    };
    Ok((made, report))
}

/// The top-level profiles made of the processed functions (`names`, sorted, with their
/// `totals`) and the processed functions each sums, in the writers' order, as autofdo names
/// them: a function's aliases get a copy of its profile (a later name replacing an earlier
/// copy), `SymbolMap::Merge` adds `foo.cold`, `foo.part.0`… to `foo`, and only the profiles
/// with more than `threshold` samples are written.
fn outputs(
    binary: &Binary,
    names: &[Arc<str>],
    totals: &[u64],
    threshold: u64,
) -> Vec<(Context, Vec<u32>)> {
    let mut named: BTreeMap<&str, u32> = BTreeMap::new();
    for (j, name) in names.iter().enumerate() {
        for alias in binary.aliases.get(name).into_iter().flatten() {
            named.insert(alias, j as u32);
        }
        named.insert(name, j as u32);
    }
    let mut merged: BTreeMap<Context, (u64, Vec<u32>)> = BTreeMap::new();
    for (name, j) in named {
        let context = Context::Plain(FunctionId::name(original_name(name).as_bytes()));
        let (total, members) = merged.entry(context).or_default();
        *total = total.wrapping_add(totals[j as usize]);
        members.push(j);
    }
    let mut outputs: Vec<(u64, Context, Vec<u32>)> = merged
        .into_iter()
        .filter(|(_, (total, _))| *total > threshold)
        .map(|(context, (total, members))| (total, context, members))
        .collect();
    // As `Profile::sorted_functions`: by total, descending, ties in context order.
    outputs.sort_by_key(|o| std::cmp::Reverse(o.0));
    outputs.into_iter().map(|(_, c, m)| (c, m)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pieces of [`DebugInfo::frame_breaks`] and [`DebugInfo::rows_within`] checked
    /// against [`DebugInfo::frames_at`] at every byte of up to `limit` functions of the
    /// binary at `path` (spread over it), and [`top_total`] against the total of the profile
    /// [`function_samples`] builds from ranges over each. Returns the deepest inline stack
    /// seen, so that a caller can tell the binary had inlining to check.
    fn check_pieces(path: &Path, limit: usize) -> usize {
        let binary = Binary::load(path).unwrap();
        let step = (binary.symbols.len() / limit).max(1);
        let functions: Vec<(u64, u64)> = binary
            .symbols
            .iter()
            .step_by(step)
            .map(|(&a, &(_, size))| (a, a + size))
            .collect();
        let file = binary.object().unwrap();
        let sections = DwarfSections::load(&file, path).unwrap();
        let dwarf = Dwarf::new(&sections).unwrap();
        let mut debug = DebugInfo::default();
        let inclusive = functions.iter().map(|&(b, e)| (b, e - 1));
        binary.load_meeting(&mut debug, &dwarf, inclusive).unwrap();
        debug.seal();
        let (mut breaks, mut at_byte, mut at_piece) = (Vec::new(), Vec::new(), Vec::new());
        let mut deepest = 0;
        let none = Processed {
            names: Vec::new(),
            at: HashMap::new(),
        };
        for &(start, end) in &functions {
            debug.frame_breaks(start, end, &mut breaks);
            assert_eq!(breaks[0], start);
            assert!(breaks.windows(2).all(|w| w[0] < w[1]) && breaks.last() < Some(&end));
            for a in start..end {
                let piece = breaks[breaks.partition_point(|&b| b <= a) - 1];
                debug.frames_at(a, &mut at_byte);
                debug.frames_at(piece, &mut at_piece);
                assert_eq!(at_byte, at_piece, "{path:?} at {a:#x} (piece {piece:#x})");
                deepest = deepest.max(at_byte.len());
            }
            let mut covered = start;
            debug.rows_within(start, end, |from, to, discriminator| {
                assert_eq!(from, covered);
                covered = to;
                for a in from..to {
                    debug.frames_at(a, &mut at_byte);
                    assert_eq!(at_byte.first().map(|f| f.discriminator), discriminator);
                }
            });
            assert_eq!(covered, end);
            // Overlapping ranges with counts that differ byte by byte.
            let len = end - start;
            let ranges = (0..len.min(40))
                .map(|i| {
                    let b = start + i * 7 % len;
                    ((b, (b + i * 13 % 64).min(end - 1)), 1 + i * i)
                })
                .collect();
            let m = FunctionMaps {
                name: "f".into(),
                start,
                end,
                ranges: profgen::summed(ranges),
                branches: Vec::new(),
                ips: Vec::new(),
            };
            let built = function_samples(&debug, &m, &none, (Discriminators::Llvm, false));
            assert_eq!(
                top_total(&debug, &m, false),
                built.total,
                "{path:?} {start:#x}"
            );
        }
        deepest
    }

    /// GCC's plain discriminators as the two styles read them: those ending in three set bits
    /// are pseudo-probe discriminators to LLVM 19. On the issue's
    /// benchmark binary, mimalloc's GCC-built `for` lines have discriminator 15, which
    /// llvm-profgen 19 counts at `.1`: three lines of its profile.
    #[test]
    fn llvm19_reads_discriminators_ending_in_three_set_bits_as_probe_indices() {
        for (gcc, autofdo, llvm19) in [(2, 1, 1), (4, 2, 2), (7, 0, 0), (15, 0, 1), (23, 0, 2)] {
            assert_eq!(base_discriminator(gcc), autofdo, "{gcc}");
            assert_eq!(base_discriminator_llvm19(gcc), llvm19, "{gcc}");
        }
        // A probe with the DWARF base discriminator 5 packed in (bit 28, bits 16-18).
        let packed = (1 << 28) | (5 << 16) | (9 << 3) | 7;
        assert_eq!(base_discriminator_llvm19(packed), 5);
    }

    #[test]
    fn pieces_have_the_stacks_of_their_bytes_in_the_autofdo_test_binary() {
        let path = testsupport::shared_perf("autofdo-test.binary");
        assert!(
            check_pieces(&path, usize::MAX) >= 2,
            "no inlining in {path:?}"
        );
    }

    #[test]
    fn pieces_have_the_stacks_of_their_bytes_in_this_test_program() {
        // Rust's standard library is built optimized: inlining several levels deep.
        let path = std::env::current_exe().unwrap();
        assert!(
            check_pieces(&path, 400) >= 3,
            "no deep inlining in {path:?}"
        );
    }
}
