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
use object::{Object, ObjectSection, ObjectSymbol};
use rayon::prelude::*;

pub use dwarf::{DebugInfo, Dwarf, DwarfSections, FrameRef, NO_NODE};

use crate::error::{Error, Result};
use crate::io::input::InputBytes;
use crate::perf::aggregate::BinaryProfile;
use crate::sampleprof::OutputFormat;

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

/// LLVM's `DILocation::getBaseDiscriminatorFromDiscriminator` (not FS-AFDO).
fn base_discriminator(d: u32) -> u32 {
    prefix_decoded(d)
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
struct Pos {
    count: u64,
    targets: BTreeMap<String, u64>,
}

/// autofdo's `Symbol`; inlined callees are keyed by names borrowed from the [`DebugInfo`].
#[derive(Clone, Debug, Default)]
struct Symbol<'a> {
    total: u64,
    head: u64,
    pos: BTreeMap<u32, Pos>,
    callsites: BTreeMap<(u32, &'a str), Symbol<'a>>,
}

impl<'a> Symbol<'a> {
    fn merge(&mut self, other: &Symbol<'a>) {
        self.total += other.total;
        self.head += other.head;
        for (o, p) in &other.pos {
            let mine = self.pos.entry(*o).or_default();
            mine.count += p.count;
            for (t, c) in &p.targets {
                *mine.targets.entry(t.clone()).or_default() += c;
            }
        }
        for (k, s) in &other.callsites {
            self.callsites.entry(*k).or_default().merge(s);
        }
    }

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
            s = s
                .callsites
                .entry((offset(&stack[i], d), stack[i - 1].name))
                .or_default();
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
        for ((o, name), s) in &self.callsites {
            let callee = f.callee_mut(loc(*o), FunctionId::name(name.as_bytes()));
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

#[derive(Default)]
struct FunctionMaps {
    start: u64,
    end: u64,
    ranges: BTreeMap<(u64, u64), u64>,
    branches: BTreeMap<(u64, u64), u64>,
    /// IP samples by address (captures without branch stacks).
    ips: BTreeMap<u64, u64>,
}

/// Head samples given to functions by name.
type Heads = Vec<(Arc<str>, u64)>;

/// The symbol of one processed function (`m`) and the head samples its branches give to the
/// functions they call; `emitted` are the processed functions.
fn function_symbol<'a>(
    binary: &Binary,
    debug: &'a DebugInfo,
    m: &FunctionMaps,
    emitted: &BTreeMap<Arc<str>, Symbol<'a>>,
    (d, lines_from_ips): (Discriminators, bool),
) -> (Symbol<'a>, Heads) {
    let mut sym = Symbol::default();
    let mut heads = Vec::new();
    // The instruction map: every byte's inline stack, each seen with count 0. Neighbouring
    // bytes mostly share theirs: each distinct run's stack is kept once.
    let len = (m.end - m.start) as usize;
    let mut stacks: Vec<Vec<FrameRef<'a>>> = Vec::new();
    let mut stack_at: Vec<u32> = Vec::with_capacity(len);
    let mut frames = Vec::new();
    for a in m.start..m.end {
        debug.frames_at(a, &mut frames);
        if stacks.last() != Some(&frames) {
            sym.add_source_count(&frames, 0, d);
            stacks.push(frames.clone());
        }
        stack_at.push((stacks.len() - 1) as u32);
    }
    let stack = |a: u64| &stacks[stack_at[(a - m.start) as usize] as usize];
    // Each byte's count: the ranges over it (as differences, summed once), or the IP samples
    // when the lines come from them (create_llvm_prof --use_lbr=false reads the branch
    // stacks only for heads and call targets).
    let mut counts: Vec<i128> = vec![0; len + 1];
    if !lines_from_ips {
        for (&(b, e), &n) in &m.ranges {
            let (b, e) = (b.max(m.start), e.min(m.end - 1));
            if b <= e {
                counts[(b - m.start) as usize] += i128::from(n);
                counts[(e + 1 - m.start) as usize] -= i128::from(n);
            }
        }
        for i in 1..len {
            counts[i] += counts[i - 1];
        }
    }
    for (&a, &n) in &m.ips {
        counts[(a - m.start) as usize] += i128::from(n);
    }
    for (i, &n) in counts[..len].iter().enumerate() {
        let s = stack(m.start + i as u64);
        if n > 0 && !s.is_empty() {
            let n = n as u64;
            sym.add_source_count(s, n * duplication_factor(s[0].discriminator), d);
        }
    }
    for (&(from, to), &n) in &m.branches {
        if from < m.start || from >= m.end {
            continue;
        }
        let Some((callee, _)) = binary.symbols.get(&to) else {
            continue;
        };
        if !emitted.contains_key(callee) {
            continue;
        }
        heads.push((callee.clone(), n));
        let s = stack(from);
        if s.is_empty() {
            continue;
        }
        let inner = sym.traverse(s, 0, d);
        inner
            .pos
            .entry(offset(&s[0], d))
            .or_default()
            .targets
            .insert(original_name(callee).to_string(), n);
    }
    (sym, heads)
}

/// A sample profile made by [`profile`] and its siblings: whole, or (llvm-profgen's
/// conversion) built into the nested model one function at a time as it is written, so that
/// a text profile never exists whole in memory.
pub struct SampleProfile(Made);

enum Made {
    Whole(Profile),
    ByFunction(profgen::Made),
}

impl SampleProfile {
    /// The whole profile.
    pub fn into_profile(self) -> Profile {
        match self.0 {
            Made::Whole(p) => p,
            Made::ByFunction(m) => {
                let (n, function) = m.into_functions();
                let mut out = Profile::default();
                out.functions.extend((0..n).map(function));
                out
            }
        }
    }

    /// Writes the profile to `path` in `format`, atomically.
    pub fn write(self, format: OutputFormat, path: &Path) -> crate::sampleprof::Result<()> {
        match (self.0, format) {
            (Made::ByFunction(m), OutputFormat::Text) => {
                let (n, function) = m.into_functions();
                crate::sampleprof::write_text_functions(n, function, path)
            }
            (made, format) => {
                crate::sampleprof::write(&SampleProfile(made).into_profile(), format, path)
            }
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
            (Made::ByFunction(made), report)
        }
        Style::Autofdo => {
            let (whole, report) = autofdo_profile(binary, traces, Discriminators::Llvm)?;
            (Made::Whole(whole), report)
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
    let (whole, report) = autofdo_profile_with(binary, traces, (d, true))?;
    Ok((SampleProfile(Made::Whole(whole)), report))
}

/// The profile `create_gcov` (AutoFDO 0.19) makes for GCC's `-fauto-profile`: the
/// [`Style::Autofdo`] conversion with the line table's discriminators as they are (GCC's
/// are plain numbers; create_llvm_prof decodes LLVM's encoding instead).
pub fn gcc_profile(binary: &Binary, traces: BinaryProfile) -> Result<(SampleProfile, Report)> {
    let (whole, report) = autofdo_profile(binary, traces, Discriminators::Raw)?;
    Ok((SampleProfile(Made::Whole(whole)), report))
}

fn autofdo_profile(
    binary: &Binary,
    traces: BinaryProfile,
    d: Discriminators,
) -> Result<(Profile, Report)> {
    autofdo_profile_with(binary, traces, (d, false))
}

/// The conversion of [`autofdo_profile`]; with `lines.1`, lines from the IP samples only.
fn autofdo_profile_with(
    binary: &Binary,
    traces: BinaryProfile,
    lines: (Discriminators, bool),
) -> Result<(Profile, Report)> {
    // autofdo's sample reader: ranges [to of entry i, from of entry i-1], branches.
    let mut ranges: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    let mut branches: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for &((branch, from, to), c) in &traces.traces {
        let n = c.taken;
        if n == 0 || from == 0 {
            continue;
        }
        if to == BR_ONLY {
            if branch != 0 {
                *branches.entry((branch, from)).or_default() += n;
            }
            continue;
        }
        if to < from || to - from > MAX_RANGE {
            continue;
        }
        *ranges.entry((from, to)).or_default() += n;
        if branch != 0 {
            *branches.entry((branch, from)).or_default() += n;
        }
    }
    if ranges.is_empty() && traces.ips.is_empty() {
        return Err(Error::Mismatch(
            "no sample falls in the binary (is it the profiled binary?)".into(),
        ));
    }
    // autofdo's total count: the ranges' (count × length) when there are any, else the IP
    // samples (a capture without branch stacks), each once, as create_llvm_prof
    // --use_lbr=false counts them.
    let total_count: u64 = match ranges.is_empty() {
        false => ranges.iter().map(|(&(b, e), &n)| n * (1 + e - b)).sum(),
        true => traces.ips.iter().map(|&(_, n)| n).sum(),
    };
    let threshold = ((total_count as f64 * SAMPLE_THRESHOLD_FRAC) as i64).max(MIN_SAMPLES) as u64;

    let mut maps: BTreeMap<Arc<str>, FunctionMaps> = BTreeMap::new();
    fn maps_of<'m>(
        maps: &'m mut BTreeMap<Arc<str>, FunctionMaps>,
        binary: &Binary,
        a: u64,
    ) -> Option<&'m mut FunctionMaps> {
        let (start, name, end) = binary.function_at(a)?;
        Some(maps.entry(name.clone()).or_insert_with(|| FunctionMaps {
            start,
            end,
            ..Default::default()
        }))
    }
    for (&r, &n) in &ranges {
        if let Some(m) = maps_of(&mut maps, binary, r.0) {
            *m.ranges.entry(r).or_default() += n;
        }
    }
    for (&b, &n) in &branches {
        if let Some(m) = maps_of(&mut maps, binary, b.0) {
            *m.branches.entry(b).or_default() += n;
        }
    }
    for &(a, n) in &traces.ips {
        if let Some(m) = maps_of(&mut maps, binary, a) {
            *m.ips.entry(a).or_default() += n;
        }
    }
    // Each function's maps hold what follows; the traces and the sums over all are let go.
    let (range_count, branch_count) = (ranges.len(), branches.len());
    drop((traces, ranges, branches));
    // A function's aggregated count: its ranges' when it has any, else its IP samples'.
    let aggregated = |m: &FunctionMaps| -> u64 {
        match m.ranges.is_empty() {
            false => m.ranges.iter().map(|(&(b, e), &n)| n * (e - b)).sum(),
            true => m.ips.values().sum(),
        }
    };
    // The symbols to emit (aliases share them): name → symbol.
    let mut symbols: BTreeMap<Arc<str>, Symbol> = BTreeMap::new();
    for (name, m) in &maps {
        if aggregated(m) > threshold {
            symbols.insert(name.clone(), Symbol::default());
        }
    }
    let emitted: Vec<Arc<str>> = symbols.keys().cloned().collect();
    // The DWARF of the processed functions' units, nothing else.
    let file = binary.object()?;
    let sections = DwarfSections::load(&file, &binary.path).map_err(|m| binary.error(m))?;
    let dwarf = Dwarf::new(&sections).map_err(|m| binary.error(m))?;
    let mut debug = DebugInfo::default();
    binary.load_meeting(
        &mut debug,
        &dwarf,
        emitted
            .iter()
            .map(|name| (maps[name].start, maps[name].end - 1)),
    )?;
    // A function outside every unit takes the last row before it: load that row's unit.
    let before: Vec<usize> = emitted
        .iter()
        .filter_map(|name| dwarf.unit_before(maps[name].start))
        .collect();
    binary.load_units(&mut debug, &dwarf, &before)?;
    // autofdo's sampled functions: those holding a range's start or an IP.
    let sampled: Vec<(u64, u64)> = maps
        .values()
        .filter(|m| !m.ranges.is_empty() || !m.ips.is_empty())
        .map(|m| (m.start, m.end))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    debug.keep_rows_within(&sampled);
    let processed: Vec<(Symbol, Heads)> = emitted
        .par_iter()
        .map(|name| function_symbol(binary, &debug, &maps[name], &symbols, lines))
        .collect();
    let mut heads: BTreeMap<Arc<str>, u64> = BTreeMap::new();
    for (name, (sym, callees)) in emitted.iter().zip(processed) {
        for (callee, n) in callees {
            *heads.entry(callee).or_default() += n;
        }
        symbols.insert(name.clone(), sym);
    }
    for (name, h) in heads {
        if let Some(s) = symbols.get_mut(&name) {
            s.head += h;
        }
    }
    // Aliases share their symbol.
    let mut named: BTreeMap<Arc<str>, Symbol> = BTreeMap::new();
    for (name, sym) in symbols {
        for alias in binary.aliases.get(&name).into_iter().flatten() {
            named.insert(alias.clone(), sym.clone());
        }
        named.insert(name, sym);
    }
    // `SymbolMap::Merge`: `foo.cold`, `foo.part.0`… into `foo`.
    let dotted: Vec<Arc<str>> = named.keys().filter(|n| n.contains('.')).cloned().collect();
    for name in dotted {
        let sym = named.remove(&name).expect("present");
        let original: Arc<str> = original_name(&name).into();
        named.entry(original).or_default().merge(&sym);
    }
    let mut out = Profile::default();
    let mut functions = 0;
    // Each symbol is dropped once converted: the two models are never whole together.
    for (name, sym) in named {
        if sym.total <= threshold {
            continue;
        }
        functions += 1;
        out.functions.insert(
            Context::Plain(FunctionId::name(name.as_bytes())),
            sym.to_samples(true),
        );
    }
    if out.functions.is_empty() {
        return Err(Error::Mismatch(format!(
            "no function of the binary has more than {threshold} samples, or none has line information"
        )));
    }
    Ok((
        out,
        Report {
            ranges: range_count,
            branches: branch_count,
            total_count,
            functions,
        },
    ))
}
