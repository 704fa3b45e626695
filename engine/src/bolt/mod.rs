//! perf2bolt's symbolization: traces and basic samples of one binary, in the binary's address
//! space, become fdata records (`function + offset` pairs), with the fall-through edges that
//! BOLT derives from its CFG. LLVM 22 semantics (`DataAggregator::processBranchEvents`):
//!
//! * for each trace `(branch, from, to)`: unless the instruction at `branch` is a return, the
//!   branch `branch → from` is recorded (ends outside every function become `[unknown] 0`;
//!   within one function it is an intra-function branch unless it lands on offset 0);
//! * unless `to` is the branch-only marker, the fall-through `from → to` is walked block by
//!   block in the function's CFG, each step recorded as an edge from the block's last
//!   instruction to the next block; a trace entered from outside the function at a call's
//!   continuation starts at the call's block (BOLT's call-continuation rule).
//!
//! Entry points: [`LoadedBinary::load`] then [`write_fdata`] (symbolize a
//! [`crate::perf::BinaryProfile`] and write it as perf2bolt does), or
//! [`symbolize`] and [`Fdata::write`] for a writer of your own; [`merge_fdata`] (with
//! [`expand_inputs`] and [`Sources`]) for `merge-fdata`; [`write_preagg_legacy`] for LLVM ≤ 20's
//! pre-aggregated dialect; [`profile_from_preagg`] reads pre-aggregated text as a profile.
//!
//! ```
//! use engine::bolt::{expand_inputs, merge_fdata, Sources};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("a.fdata"), "1 main 10 1 foo 0 1 5\n")?;
//! std::fs::write(dir.path().join("b.fdata"), "1 main 10 1 foo 0 2 7\n1 main 20 1 main 30 0 4\n")?;
//!
//! // A directory stands for the files in it, as for merge-fdata.
//! let files = expand_inputs(&[dir.path().to_path_buf()])?;
//! let merged = merge_fdata(&Sources::open(&files)?)?;
//! assert_eq!((merged.files, merged.len()), (2, 2));
//! let mut out = Vec::new();
//! merged.write(&mut out)?;
//! assert_eq!(String::from_utf8(out)?, "1 main 10 1 foo 0 3 12\n1 main 20 1 main 30 0 4\n");
//! # Ok(())
//! # }
//! ```

pub mod bat;
pub mod cfg;
pub(crate) mod eh;
pub mod fdata_merge;
pub mod fdata_merge_19;
pub mod functions;
pub mod hash;
pub mod indirect;
pub mod loaded;
pub(crate) mod memory;
pub mod preagg_legacy;
mod start_index;
pub mod x86;
pub mod yaml;
pub mod yaml_merge;

pub use fdata_merge::{expand_inputs, merge as merge_fdata, MergeError, Merged, Sources};
pub use functions::{Function, Functions};
pub use loaded::{write_fdata, FdataReport, LoadedBinary};
pub use preagg_legacy::write_preagg_legacy;

use std::io::Write;

use hashbrown::{HashMap, HashSet};

use formats::bolt::fdata::{FdataWriter, Location};
use formats::bolt::preagg::BR_ONLY;
use iced_x86::{Decoder, DecoderOptions, FlowControl};
use rayon::prelude::*;

use crate::perf::aggregate::BinaryProfile;

/// BOLT's trace sentinels, found in the branch position of a [`BinaryProfile`]'s traces (read
/// by [`profile_from_preagg`]): a fall-through with no known branch (`F`), entered from outside
/// the function (`f`), or after a return from outside (`r`). `FT_ONLY` equals `BR_ONLY`.
pub const FT_ONLY: u64 = u64::MAX;
/// The branch of a fall-through entered from outside the function (pre-aggregated `f`); see
/// [`FT_ONLY`].
pub const FT_EXTERNAL_ORIGIN: u64 = u64::MAX - 1;
/// The branch of a fall-through after a return from outside the function (pre-aggregated `r`);
/// see [`FT_ONLY`].
pub const FT_EXTERNAL_RETURN: u64 = u64::MAX - 2;
use cfg::{Body, Cfg};

/// A location in fdata terms: a function (by index) and offset, or an unknown address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Loc {
    func: Option<u32>,
    offset: u64,
}

impl Loc {
    const UNKNOWN: Loc = Loc {
        func: None,
        offset: 0,
    };
}

/// A branch or fall-through line and its counts.
type CountedLine = ((Loc, Loc), Branch);

#[derive(Clone, Copy, Debug, Default)]
struct Branch {
    mispreds: u64,
    count: u64,
}

/// Diagnostics perf2bolt prints, counted the same way.
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceStats {
    /// Fall-through ranges walked (each counted as many times as it was taken).
    pub traces: u64,
    /// Fall-through ranges that do not match the disassembled code.
    pub invalid: u64,
    /// Fall-through ranges with an end outside every function.
    pub out_of_range: u64,
}

impl TraceStats {
    fn add(&mut self, other: TraceStats) {
        self.traces = self.traces.wrapping_add(other.traces);
        self.invalid = self.invalid.wrapping_add(other.invalid);
        self.out_of_range = self.out_of_range.wrapping_add(other.out_of_range);
    }
}

/// One binary's symbolized profile.
pub struct Fdata<'f> {
    functions: &'f Functions,
    /// A BOLTed binary's profile through its translation tables: `boltedcollection` first, and
    /// locals by their `name/file/N` names.
    bolted: bool,
    /// Every chunk's counts, a list per chunk: a key can appear in more than one chunk, and
    /// the writer sums such lines after sorting (cheaper than merging the chunks' maps).
    parts: Vec<Vec<CountedLine>>,
    samples: HashMap<(u32, u64), u64>,
    /// `Some(events)` for a basic (`no_lbr`) profile.
    basic_events: Option<Vec<String>>,
    /// perf2bolt's fall-through diagnostics (zero for a basic profile).
    pub stats: TraceStats,
    /// Basic samples outside every function.
    pub out_of_range_samples: u64,
    /// Fall-through steps of translated functions that end at input offset 0, by key: such a
    /// line reads like a recursive call in fdata, but perf2bolt recorded it as an inner
    /// branch, which enters nothing (BAT YAML counts no entry for it).
    zero_fallthroughs: HashMap<(Loc, Loc), u64>,
    /// The functions the profile touches, as symbolizing analysed them, when asked for.
    touched: Option<Touched>,
}

/// The functions a profile touches (those perf2bolt's lite mode disassembles) as
/// [`analyse_touched`] analyses them.
pub(crate) struct Touched {
    /// Their indices, ascending.
    pub(crate) indices: Vec<u32>,
    /// The CFGs (or why none) of those holding a trace's start.
    pub(crate) bodies: HashMap<u32, Body>,
    /// The first phase of the others' (no trace starts in them).
    pub(crate) unfinished: Vec<(u32, Result<cfg::Disassembled, Body>)>,
    /// The jump tables' starts.
    pub(crate) tables: cfg::TableStarts,
    /// Their secondary entry points (offsets, ascending).
    pub(crate) entries: HashMap<u32, Vec<u64>>,
    /// What the data objects need of them (their jump-table patterns and RIP-relative
    /// operands), so as not to disassemble them again.
    pub(crate) known: memory::Known,
}

/// The branch and fall-through counts of one chunk of traces, summed in a table.
struct ChunkWalk<'f> {
    functions: &'f Functions,
    bat: Option<&'f BatIndex<'f>>,
    dialect: Dialect,
    branches: HashMap<(Loc, Loc), Branch>,
    stats: TraceStats,
    zero_fallthroughs: HashMap<(Loc, Loc), u64>,
}

/// A BOLTed binary's translation tables and, for each function that is a cold fragment in
/// them, the function of its parent.
pub struct BatIndex<'t> {
    translation: &'t bat::Translation,
    parents: HashMap<u32, u32>,
}

impl<'t> BatIndex<'t> {
    /// Indexes `translation` by `functions` of the BOLTed binary.
    pub fn new(translation: &'t bat::Translation, functions: &Functions) -> BatIndex<'t> {
        let parents = translation
            .tables
            .cold
            .iter()
            .filter_map(|c| {
                let hot = translation.tables.hot.get(c.hot_index as usize)?;
                let f = functions.index_containing(c.address)?;
                let p = functions.index_containing(hot.address)?;
                Some((f as u32, p as u32))
            })
            .collect();
        BatIndex {
            translation,
            parents,
        }
    }

    /// perf2bolt's `getBATParentFunction`, or the function itself.
    fn parent(&self, f: u32) -> u32 {
        self.parents.get(&f).copied().unwrap_or(f)
    }
}

/// Symbolizes a profile; the functions its traces touch are disassembled in parallel, then
/// the traces are symbolized in parallel chunks whose counts are concatenated (the writer sums
/// the keys that more than one chunk counted).
pub fn symbolize<'f>(profile: &BinaryProfile, functions: &'f Functions, basic: bool) -> Fdata<'f> {
    symbolize_bolted(profile, functions, basic, None)
}

/// [`symbolize`] of a BOLTed binary's profile through its translation tables (perf2bolt's BAT
/// mode, LLVM 22): addresses become offsets in the input binary's functions, cold fragments
/// count for their parent, and fall-throughs in translated functions follow the tables
/// instead of a CFG.
pub fn symbolize_bolted<'f>(
    profile: &BinaryProfile,
    functions: &'f Functions,
    basic: bool,
    bat: Option<&'f BatIndex<'f>>,
) -> Fdata<'f> {
    symbolize_as(profile, functions, basic, bat, Dialect::Llvm22)
}

/// Which perf2bolt's rules to follow where its releases differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dialect {
    /// LLVM 22 (the default).
    #[default]
    Llvm22,
    /// LLVM 19: a trace in a function that is not simple is invalid, and a range that starts
    /// at an entry point or a landing pad never continues a call in the block before.
    Llvm19,
}

/// [`symbolize_bolted`] with `dialect`'s rules.
pub fn symbolize_as<'f>(
    profile: &BinaryProfile,
    functions: &'f Functions,
    basic: bool,
    bat: Option<&'f BatIndex<'f>>,
    dialect: Dialect,
) -> Fdata<'f> {
    symbolize_keeping(profile, functions, basic, bat, dialect, false)
}

/// [`symbolize_as`]; with `keep_touched`, the result keeps the disassembly of the functions
/// the profile touches ([`Fdata::touched`]) for the YAML writer, which needs their CFGs too.
pub(crate) fn symbolize_keeping<'f>(
    profile: &BinaryProfile,
    functions: &'f Functions,
    basic: bool,
    bat: Option<&'f BatIndex<'f>>,
    dialect: Dialect,
    keep_touched: bool,
) -> Fdata<'f> {
    let mut fdata = Fdata::new(functions, basic.then(|| profile.events.clone()));
    fdata.bolted = bat.is_some();
    if basic {
        fdata.add_samples(&profile.ips, bat);
        return fdata;
    }
    let touched = analyse_touched(profile, functions, bat, keep_touched);
    let bodies = &touched.bodies;
    let returns = find_returns(profile, functions);
    // In address order, consecutive traces share their function and its CFG, which then stay
    // in cache: hash order costs a cache miss per lookup.
    let by_start = |t: &((u64, u64, u64), crate::perf::table::Counts)| t.0 .1;
    let traces: std::borrow::Cow<[_]> = if profile.traces.is_sorted_by_key(by_start) {
        std::borrow::Cow::Borrowed(&profile.traces)
    } else {
        let mut traces = profile.traces.clone();
        traces.par_sort_unstable_by_key(by_start);
        std::borrow::Cow::Owned(traces)
    };
    type ChunkCounts = (Vec<CountedLine>, TraceStats, HashMap<(Loc, Loc), u64>);
    let parts: Vec<ChunkCounts> = traces
        .par_chunks(TRACES_PER_CHUNK)
        .map(|chunk| {
            let mut walk = ChunkWalk {
                functions,
                bat,
                dialect,
                branches: HashMap::new(),
                stats: TraceStats::default(),
                zero_fallthroughs: HashMap::new(),
            };
            walk.add_traces(bodies, &returns, chunk);
            (
                walk.branches.into_iter().collect(),
                walk.stats,
                walk.zero_fallthroughs,
            )
        })
        .collect();
    if keep_touched {
        fdata.touched = Some(touched);
    }
    for (lines, stats, zero) in parts {
        fdata.parts.push(lines);
        fdata.stats.add(stats);
        for (key, count) in zero {
            let n = fdata.zero_fallthroughs.entry(key).or_default();
            *n = n.wrapping_add(count);
        }
    }
    fdata
}

/// Enough traces per chunk that a chunk's table work outweighs merging it.
const TRACES_PER_CHUNK: usize = 1 << 15;

impl<'f> Fdata<'f> {
    /// What [`symbolize_keeping`] kept of the functions the profile touches, taken out.
    pub(crate) fn take_touched(&mut self) -> Option<Touched> {
        self.touched.take()
    }

    fn new(functions: &'f Functions, basic_events: Option<Vec<String>>) -> Self {
        Fdata {
            functions,
            bolted: false,
            parts: Vec::new(),
            samples: HashMap::new(),
            basic_events,
            stats: TraceStats::default(),
            out_of_range_samples: 0,
            zero_fallthroughs: HashMap::new(),
            touched: None,
        }
    }
}

/// CFGs of every function the profile touches (but those whose fall-throughs a BOLTed binary's
/// translation tables give). The functions it touches are what BOLT's lite mode disassembles
/// (functions holding a branch's source or target); their references to one another, and
/// those of the other functions into them (which BOLT scans without disassembling them), decide
/// the secondary entry points (see [`entry_points`] and [`scanned_references`]).
///
/// With `keep_all`, the result also holds the first phase of the touched functions without a
/// trace start and every touched function's jump-table patterns (the YAML path's needs).
fn analyse_touched(
    profile: &BinaryProfile,
    functions: &Functions,
    bat: Option<&BatIndex<'_>>,
    keep_all: bool,
) -> Touched {
    let translated =
        |i: usize| bat.is_some_and(|b| b.translation.fragment(functions.get(i).address).is_some());
    let (starts, touched) = touched_functions(profile, functions, &translated);
    let mut phase_one: Vec<(u32, Result<cfg::Disassembled, Body>)> = touched
        .par_iter()
        .copied()
        .map(|i| (i, cfg::disassemble(functions, functions.get(i as usize))))
        .collect();
    let scanned = match bat {
        None => scanned_references(functions, &touched),
        Some(_) => Vec::new(),
    };
    let EntryPoints { entries, ignored } = entry_points(functions, &phase_one, &scanned);
    let known = match keep_all {
        true => (phase_one.par_iter_mut())
            .map(|(i, d)| {
                let f = functions.get(*i as usize);
                (*i, memory::KnownFunction::taken_from(functions, f, d))
            })
            .collect::<Vec<_>>()
            .into_iter()
            .collect(),
        false => HashMap::new(),
    };
    for (i, d) in phase_one.iter_mut() {
        if let (Some(why), true) = (ignored.get(i), d.is_ok()) {
            *d = Err(Body::NoCfg(why.clone()));
        }
    }
    let tables = cfg::TableStarts::of(phase_one.iter().map(|(_, d)| d));
    let (started, mut unfinished): (Vec<_>, Vec<_>) = phase_one
        .into_iter()
        .partition(|(i, _)| starts.binary_search(i).is_ok());
    if !keep_all {
        unfinished = Vec::new();
    }
    let bodies = finish_bodies(functions, started, &tables, &entries)
        .into_iter()
        .collect();
    Touched {
        indices: touched,
        bodies,
        unfinished,
        tables,
        entries,
        known,
    }
}

/// The functions that need a CFG (holding a range's start, but those `translated`) and those
/// the profile touches (holding any branch's source or target, whose references count too,
/// translated or not: perf2bolt disassembles a translated function as well, and its jump into
/// another function's middle makes a secondary entry there, as OpenSSL's assembly in a BOLTed
/// binary does). Both ascending. Marked in two bit sets per thread: a list of every trace's
/// functions to sort would be three entries per trace.
fn touched_functions(
    profile: &BinaryProfile,
    functions: &Functions,
    translated: &(impl Fn(usize) -> bool + Sync),
) -> (Vec<u32>, Vec<u32>) {
    let words = functions.len().div_ceil(64);
    let empty = || (vec![0u64; words], vec![0u64; words]);
    let mark = |set: &mut [u64], i: usize| set[i / 64] |= 1 << (i % 64);
    // Large pieces: each starts with its own pair of sets.
    let (starts, touched) = (profile.traces.par_iter().with_min_len(1 << 14))
        .fold(
            empty,
            |(mut starts, mut touched), &((branch, from, to), _)| {
                let to = (to != BR_ONLY).then_some(to);
                let from_function = functions.index_containing(from);
                if let (Some(i), Some(_)) = (from_function, to) {
                    if !translated(i) {
                        mark(&mut starts, i);
                    }
                }
                let others = [functions.index_containing(branch), from_function];
                let to_function = to.and_then(|to| functions.index_containing(to));
                for i in others.into_iter().chain([to_function]).flatten() {
                    mark(&mut touched, i);
                }
                (starts, touched)
            },
        )
        .reduce(empty, |(mut s, mut t), (s2, t2)| {
            s.iter_mut().zip(s2).for_each(|(a, b)| *a |= b);
            t.iter_mut().zip(t2).for_each(|(a, b)| *a |= b);
            (s, t)
        });
    (members(&starts), members(&touched))
}

/// The indices of a bit set's members, ascending.
fn members(set: &[u64]) -> Vec<u32> {
    let mut out = Vec::new();
    for (w, &word) in set.iter().enumerate() {
        let mut rest = word;
        while rest != 0 {
            out.push((w * 64) as u32 + rest.trailing_zeros());
            rest &= rest - 1;
        }
    }
    out
}

/// The second phase of `phase_one`'s functions, in parallel: each CFG finished with the jump
/// tables known in the binary and its secondary entry points; the others keep their body.
fn finish_bodies(
    functions: &Functions,
    phase_one: Vec<(u32, Result<cfg::Disassembled, Body>)>,
    tables: &cfg::TableStarts,
    entries: &HashMap<u32, Vec<u64>>,
) -> Vec<(u32, Body)> {
    phase_one
        .into_par_iter()
        .map(|(i, d)| {
            let body = match d {
                Ok(d) => {
                    let e = entries.get(&i).map_or(&[][..], Vec::as_slice);
                    cfg::finish(functions, functions.get(i as usize), d, tables, e)
                }
                Err(body) => body,
            };
            (i, body)
        })
        .collect()
}

/// The references of the functions perf2bolt does not disassemble (all but the `touched`
/// ones, in lite mode) into the body of a touched function, as (function, offset): BOLT scans
/// those functions (`scanExternalRefs`) and each such reference makes a secondary entry point.
/// A stripped library's `.cold` parts, which are functions of their own there, jump back into
/// their parents that way.
fn scanned_references(functions: &Functions, touched: &[u32]) -> Vec<(u32, u64)> {
    (0..functions.len() as u32)
        .into_par_iter()
        .filter(|i| touched.binary_search(i).is_err())
        .flat_map_iter(|i| {
            let mut found = Vec::new();
            cfg::external_references(functions, functions.get(i as usize), |target| {
                let Some(t) = functions.index_containing(target) else {
                    return;
                };
                let f = functions.get(t);
                let t = t as u32;
                if f.contains(target) && target != f.address && touched.binary_search(&t).is_ok() {
                    found.push((t, target - f.address));
                }
            });
            found
        })
        .collect()
}

/// The secondary entry points of the disassembled functions (offsets, ascending) and the
/// functions BOLT ignores, with why, as `disassembleFunctions` and
/// `processInterproceduralReferences` decide them: a function's symbols and its own escaping
/// addresses mark entries; a function with an unsupported instruction is ignored, as is the
/// function that instruction jumps into; then, in address order, each reference of a function
/// not ignored into another function at a non-zero offset is an entry point of that function,
/// unless it lands inside one of the (disassembled) target's instructions: BOLT then reports
/// "corrupted control flow" and ignores both functions (and validates no further reference of
/// the source).
fn entry_points(
    functions: &Functions,
    disassembled: &[(u32, Result<cfg::Disassembled, Body>)],
    scanned: &[(u32, u64)],
) -> EntryPoints {
    let mut entries: HashMap<u32, Vec<u64>> = HashMap::new();
    let mut ignored: HashMap<u32, String> = HashMap::new();
    let containing = |addr: u64| {
        functions
            .index_containing(addr)
            .filter(|&i| functions.get(i).contains(addr))
            .map(|i| i as u32)
    };
    let index_of = |i: u32| disassembled.binary_search_by_key(&i, |(j, _)| *j).ok();
    // Functions BOLT ignores while disassembling: never in its disassembled state, so
    // references into them are not validated.
    let mut undisassembled: std::collections::HashSet<u32> = std::collections::HashSet::new();
    for (i, d) in disassembled {
        let f = functions.get(*i as usize);
        let Ok(d) = d else { continue };
        if !f.entries.is_empty() || !d.own_entries.is_empty() {
            let e = entries.entry(*i).or_default();
            e.extend(&f.entries);
            e.extend(&d.own_entries);
        }
        if d.unsupported {
            ignored.insert(*i, cfg::UNSUPPORTED.into());
            undisassembled.insert(*i);
            for t in d.unsupported_targets.iter().filter_map(|&a| containing(a)) {
                ignored.insert(t, cfg::UNSUPPORTED.into());
                undisassembled.insert(t);
            }
        }
    }
    for (i, d) in disassembled {
        let Ok(d) = d else { continue };
        let mut validate = true;
        for &addr in &d.references {
            if ignored.contains_key(i) {
                break;
            }
            let Some(t) = containing(addr).filter(|t| t != i) else {
                continue;
            };
            let target = functions.get(t as usize);
            let offset = addr - target.address;
            let target_code = index_of(t)
                .filter(|_| !undisassembled.contains(&t))
                .and_then(|k| disassembled[k].1.as_ref().ok());
            if let (true, Some(code)) = (validate, target_code) {
                if !code.has_instruction_at(offset) {
                    let why = format!(
                        "{} jumps into an instruction of {} at offset {offset:#x}",
                        functions.get(*i as usize).name,
                        target.name
                    );
                    ignored.insert(*i, why.clone());
                    ignored.insert(t, why);
                    validate = false;
                    continue;
                }
            }
            if offset != 0 {
                entries.entry(t).or_default().push(offset);
            }
        }
    }
    for &(t, offset) in scanned {
        entries.entry(t).or_default().push(offset);
    }
    for e in entries.values_mut() {
        e.sort_unstable();
        e.dedup();
    }
    EntryPoints { entries, ignored }
}

/// What [`entry_points`] decides.
struct EntryPoints {
    /// Secondary entry points by function index: offsets, ascending.
    entries: HashMap<u32, Vec<u64>>,
    /// The functions BOLT ignores, with why.
    ignored: HashMap<u32, String>,
}

/// The branch sources of the profile's traces that are returns: those the input marks as
/// such, and those whose instruction is one. Each distinct source is decoded once, in parallel
/// and in address order (the function lookups then stay in cache).
fn find_returns(profile: &BinaryProfile, functions: &Functions) -> HashSet<u64> {
    let mut branches: Vec<u64> = profile.traces.par_iter().map(|t| t.0 .0).collect();
    branches.par_sort_unstable();
    branches.dedup();
    let decoded: Vec<u64> = branches
        .into_par_iter()
        .filter(|&b| is_return_at(functions, b))
        .collect();
    let known = std::iter::once(FT_EXTERNAL_RETURN).chain(profile.returns.iter().copied());
    decoded.into_iter().chain(known).collect()
}

/// perf2bolt's `checkReturn`: is the instruction at `addr` (inside a function) a return?
fn is_return_at(functions: &Functions, addr: u64) -> bool {
    if functions.index_containing(addr).is_none() {
        return false;
    }
    let Some(bytes) = functions.data_at(addr) else {
        return false;
    };
    let ins = Decoder::with_ip(
        64,
        &bytes[..bytes.len().min(15)],
        addr,
        DecoderOptions::NONE,
    )
    .decode();
    !ins.is_invalid() && ins.flow_control() == FlowControl::Return
}

impl ChunkWalk<'_> {
    /// Branch records and fall-throughs of `traces`, given the branch sources that are
    /// returns ([`find_returns`]).
    fn add_traces(
        &mut self,
        bodies: &HashMap<u32, Body>,
        returns: &HashSet<u64>,
        traces: &[((u64, u64, u64), crate::perf::table::Counts)],
    ) {
        let mut steps = Vec::new();
        for &((branch, from, to), c) in traces {
            let is_return = returns.contains(&branch);
            if !is_return && branch != FT_ONLY && branch != FT_EXTERNAL_ORIGIN {
                self.add_branch(branch, from, c.taken, c.mispred);
            }
            if to != BR_ONLY {
                self.add_trace(bodies, (branch, from, to), c.taken, is_return, &mut steps);
            }
        }
    }

    /// `doBranch`.
    fn add_branch(&mut self, from: u64, to: u64, count: u64, mispreds: u64) {
        let from = self.locate_end(from, true);
        let to = self.locate_end(to, false);
        if from.func.is_none() && to.func.is_none() {
            return;
        }
        // Inter-function transfers (and recursive calls to offset 0) are recorded twice by
        // BOLT, as a call of the source and an entry of the target; fdata prints the entry
        // only when its source is unknown, which is exactly this one key.
        let b = self.branches.entry((from, to)).or_default();
        b.count = b.count.wrapping_add(count);
        b.mispreds = b.mispreds.wrapping_add(mispreds);
    }

    /// A branch end as `function + offset`, or `[unknown] 0` (`doBranch`'s `handleAddress`):
    /// in a BOLTed binary, translated to the input function (a source to its block's or
    /// branch's input offset) and counted for the parent of a cold fragment.
    fn locate_end(&self, addr: u64, is_source: bool) -> Loc {
        let Some(i) = self.functions.index_containing(addr) else {
            return Loc::UNKNOWN;
        };
        let start = self.functions.get(i).address;
        let offset = addr - start;
        match self.bat {
            None => Loc {
                func: Some(i as u32),
                offset,
            },
            Some(b) => Loc {
                func: Some(b.parent(i as u32)),
                offset: b.translation.translate(start, offset, is_source),
            },
        }
    }

    /// `doTrace`.
    fn add_trace(
        &mut self,
        bodies: &HashMap<u32, Body>,
        (branch, from, to): (u64, u64, u64),
        count: u64,
        is_return: bool,
        steps: &mut Vec<(u64, u64)>,
    ) {
        // Counts read from pre-aggregated text are any 64-bit values (negative ones wrapped,
        // as `profile_from_preagg` sums them): sums wrap too, never panic.
        self.stats.traces = self.stats.traces.wrapping_add(count);
        let (Some(f), Some(g)) = (
            self.functions.index_containing(from),
            self.functions.index_containing(to),
        ) else {
            self.stats.out_of_range = self.stats.out_of_range.wrapping_add(count);
            return;
        };
        if f != g {
            self.stats.invalid = self.stats.invalid.wrapping_add(count);
            return;
        }
        let func = self.functions.get(f);
        let base = func.address;
        steps.clear();
        if let Some(b) = self.bat.filter(|b| b.translation.fragment(base).is_some()) {
            // The tables' blocks, from the block of the branch's target (one byte back
            // after a return, as perf2bolt does) to the block of the range's end.
            let Some(pairs) = b
                .translation
                .fallthroughs(base, from - u64::from(is_return), to)
            else {
                self.stats.invalid += count;
                return;
            };
            let parent = b.parent(f as u32);
            for (a, c) in pairs {
                let at = |offset| Loc {
                    func: Some(parent),
                    offset,
                };
                let b = self.branches.entry((at(a), at(c))).or_default();
                b.count = b.count.wrapping_add(count);
                if c == 0 {
                    let n = self.zero_fallthroughs.entry((at(a), at(c))).or_default();
                    *n = n.wrapping_add(count);
                }
            }
            return;
        }
        let valid = match bodies.get(&(f as u32)) {
            Some(Body::Pseudo) => from <= to,
            Some(Body::Cfg(cfg)) if self.dialect == Dialect::Llvm19 && !cfg.simple => false,
            Some(Body::Cfg(cfg)) => fall_throughs(
                cfg,
                self.dialect,
                branch == FT_ONLY || func.contains(branch),
                from - base,
                to.wrapping_sub(base),
                is_return,
                steps,
            ),
            _ => false,
        };
        if !valid {
            self.stats.invalid = self.stats.invalid.wrapping_add(count);
            return;
        }
        for &(a, b) in steps.iter() {
            let key = (
                Loc {
                    func: Some(f as u32),
                    offset: a,
                },
                Loc {
                    func: Some(f as u32),
                    offset: b,
                },
            );
            let b = self.branches.entry(key).or_default();
            b.count = b.count.wrapping_add(count);
        }
    }
}

impl Fdata<'_> {
    /// `doBasicSample` for each IP: in a BOLTed binary the sample counts for the parent of a
    /// cold fragment, at its offset from the parent translated by the parent's table (what
    /// perf2bolt computes, however far the fragment lies from its parent).
    fn add_samples(&mut self, ips: &[(u64, u64)], bat: Option<&BatIndex<'_>>) {
        for &(pc, hits) in ips {
            if pc == 0 {
                continue;
            }
            let Some(i) = self.functions.index_containing(pc) else {
                self.out_of_range_samples = self.out_of_range_samples.wrapping_add(hits);
                continue;
            };
            let (f, offset) = match bat {
                None => (i as u32, pc - self.functions.get(i).address),
                Some(b) => {
                    let parent = b.parent(i as u32);
                    let start = self.functions.get(parent as usize).address;
                    let offset = pc.wrapping_sub(start);
                    (parent, b.translation.translate(start, offset, false))
                }
            };
            let n = self.samples.entry((f, offset)).or_default();
            *n = n.wrapping_add(hits);
        }
    }

    /// Writes fdata in perf2bolt's order: functions by name; in each, its branches sorted by
    /// (source, target), then the entries from unknown sources.
    pub fn write(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let mut w = FdataWriter::new(out);
        if self.bolted {
            w.bolted_collection()?;
        }
        if let Some(events) = &self.basic_events {
            w.no_lbr(events)?;
            let mut samples: Vec<_> = self.samples.iter().collect();
            samples.sort_by_key(|&(&(f, off), _)| (self.name(Some(f)), off));
            for (&(f, off), &hits) in samples {
                w.sample(&Location::symbol(self.printed_name(f), off), hits as i64)?;
            }
            return Ok(());
        }
        let names = PrintedNames::new(self.functions, self.bolted);
        let mut lines = gather(&self.parts, |&((from, to), b)| {
            (names.sort_key(from, to), (from, to), b)
        });
        lines.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // Keys split between chunks are now adjacent (a key identifies its two locations).
        lines.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.2.count = kept.2.count.wrapping_add(later.2.count);
                kept.2.mispreds = kept.2.mispreds.wrapping_add(later.2.mispreds);
            }
            same
        });
        let out = w.into_inner();
        crate::io::output::write_formatted(out, &lines, |chunk, text| {
            format_branches(&names, chunk, text)
        })
    }

    fn name(&self, func: Option<u32>) -> &str {
        func.map_or("", |f| self.functions.get(f as usize).name.as_str())
    }

    /// The name perf2bolt prints for a function (`getLocationName`).
    fn printed_name(&self, f: u32) -> &str {
        printed_name(self.functions.get(f as usize), self.bolted)
    }
}

/// perf2bolt's `getLocationName`: `getOneName()`, or for a BOLTed binary the `name/file/N`
/// alternative of a local function when it has one.
fn printed_name(f: &Function, bolted: bool) -> &str {
    match (&f.file_name, bolted) {
        (Some(alternative), true) => alternative,
        _ => &f.name,
    }
}

/// `map` of every item of `parts`, in order, computed in parallel straight into one vector
/// (no concatenated copy first).
fn gather<T: Sync, U: Send>(parts: &[Vec<T>], map: impl Fn(&T) -> U + Sync) -> Vec<U> {
    let starts: Vec<usize> = (parts.iter())
        .scan(0, |start, part| {
            let this = *start;
            *start += part.len();
            Some(this)
        })
        .collect();
    let total = parts.iter().map(Vec::len).sum();
    let mut out = Vec::new();
    (0..total)
        .into_par_iter()
        .map(|i| {
            // The last part starting at or before `i`: empty parts share the next one's start.
            let part = starts.partition_point(|&start| start <= i) - 1;
            map(&parts[part][i - starts[part]])
        })
        .collect_into_vec(&mut out);
    out
}

/// Branch lines' order key: the owning function's name, unknown sources last, then BOLT's
/// `Location::operator<` on source and target (unknown before symbols, then name, then
/// offset); function indices break ties between equal names.
type LineKey = (
    u32,
    bool,
    (bool, u32, u64),
    (bool, u32, u64),
    Option<u32>,
    Option<u32>,
);

/// Each function's rank in name order and its printed location prefix (`1 <escaped name> `),
/// computed once rather than per line. Functions are listed by `getOneName()`, their lines
/// sorted by the printed names; the two differ only for a BOLTed binary.
struct PrintedNames {
    rank: Vec<u32>,
    printed_rank: Vec<u32>,
    text: Vec<u8>,
    spans: Vec<(u32, u32)>,
    unknown: Vec<u8>,
}

impl PrintedNames {
    fn new(functions: &Functions, bolted: bool) -> PrintedNames {
        let name = |i: u32| functions.get(i as usize).name.as_str();
        let printed = |i: u32| printed_name(functions.get(i as usize), bolted);
        let rank = ranks(functions.len(), name);
        let printed_rank = if bolted {
            ranks(functions.len(), printed)
        } else {
            rank.clone()
        };
        let mut text = Vec::new();
        let spans = (0..functions.len() as u32)
            .map(|i| {
                let start = text.len() as u32;
                formats::bolt::fdata::location_prefix(&mut text, true, printed(i));
                (start, text.len() as u32)
            })
            .collect();
        let mut unknown = Vec::new();
        formats::bolt::fdata::location_prefix(&mut unknown, false, "");
        PrintedNames {
            rank,
            printed_rank,
            text,
            spans,
            unknown,
        }
    }

    fn sort_key(&self, from: Loc, to: Loc) -> LineKey {
        let owner = from.func.or(to.func).map_or(0, |f| self.rank[f as usize]);
        let key = |l: Loc| match l.func {
            Some(f) => (true, self.printed_rank[f as usize], l.offset),
            None => (false, 0, l.offset),
        };
        (
            owner,
            from.func.is_none(),
            key(from),
            key(to),
            from.func,
            to.func,
        )
    }

    fn prefix(&self, loc: Loc) -> (&[u8], u64) {
        let text = match loc.func {
            Some(f) => {
                let (start, end) = self.spans[f as usize];
                &self.text[start as usize..end as usize]
            }
            None => &self.unknown[..],
        };
        (text, loc.offset)
    }
}

/// Each of `n` items' rank in the order of `name` (equal names share a rank).
fn ranks<'a>(n: usize, name: impl Fn(u32) -> &'a str + Sync) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.par_sort_unstable_by(|&a, &b| name(a).cmp(name(b)));
    let mut rank = vec![0u32; n];
    let mut r = 0u32;
    for (k, &i) in order.iter().enumerate() {
        if k > 0 && name(i) != name(order[k - 1]) {
            r += 1;
        }
        rank[i as usize] = r;
    }
    rank
}

/// Formats `batch` in parallel chunks into `texts`; returns how many chunks it filled.
/// Formats `lines` into `text`.
fn format_branches(
    names: &PrintedNames,
    lines: &[(LineKey, (Loc, Loc), Branch)],
    text: &mut Vec<u8>,
) -> std::io::Result<()> {
    let mut w = FdataWriter::new(text);
    for &(_, (from, to), b) in lines {
        w.branch_with_prefixes(
            names.prefix(from),
            names.prefix(to),
            b.mispreds as i64,
            b.count as i64,
        )?;
    }
    Ok(())
}

/// `getFallthroughsInTrace`: the (last instruction, next block) edges from the block of `from`
/// to the block of `to` (appended to `steps`), or `false` if the range does not follow the CFG.
fn fall_throughs(
    cfg: &Cfg,
    dialect: Dialect,
    branch_inside: bool,
    from: u64,
    to: u64,
    is_return: bool,
    steps: &mut Vec<(u64, u64)>,
) -> bool {
    if from > to {
        return false;
    }
    let (Some(mut b), Some(end)) = (cfg.block_containing(from), cfg.block_containing(to)) else {
        return false;
    };
    let block = &cfg.blocks[b];
    let entered_at_start = !branch_inside && from == block.offset;
    let may_be_continuation = if is_return && dialect == Dialect::Llvm22 {
        from != 0
    } else {
        // Entry points and landing pads are never call continuations.
        !(block.is_entry || block.is_landing_pad)
    };
    if entered_at_start && may_be_continuation && b > 0 {
        let prev = &cfg.blocks[b - 1];
        if prev.successors.contains(&b) && prev.ends_in_call {
            b -= 1;
        }
    }
    while b != end {
        let next = b + 1;
        if next >= cfg.blocks.len() || !cfg.blocks[b].successors.contains(&next) {
            return false;
        }
        let block = &cfg.blocks[b];
        steps.push((block.last.unwrap_or(block.offset), cfg.blocks[next].offset));
        b = next;
    }
    true
}

/// A pre-aggregated file (`perf2bolt --pa` input) as a profile, with LLVM 22's meaning of each
/// record: `B` is a branch-only trace, `F`/`f`/`r` fall-throughs with the matching sentinel
/// branch, `R` a trace whose branch is a return, `S`/`E` basic samples and event names.
pub fn profile_from_preagg(
    data: &[u8],
) -> Result<BinaryProfile, formats::bolt::preagg::ParseError> {
    read_preagg(data, false)
}

/// [`profile_from_preagg`] without the records whose count is zero: the profile whose inner
/// branches perf2bolt (19 and 22) puts in a YAML profile. It records each line's inner branch
/// in the CFG on its own, and a branch never taken adds no mispredictions there, while its
/// fdata, calls and entries sum the lines first and keep them. `profmill aggregate --format
/// preagg` writes such lines (`B FROM TO 0 MISPREDS`: the taken count is in the `T` lines),
/// so `perf2bolt --pa --profile-format=yaml` of them has a `cnt` without `mis` for inner
/// branches (found on the `cargo` benchmark's pre-aggregated profile).
pub fn profile_from_preagg_for_yaml(
    data: &[u8],
) -> Result<BinaryProfile, formats::bolt::preagg::ParseError> {
    read_preagg(data, true)
}

fn read_preagg(
    data: &[u8],
    skip_zero_counts: bool,
) -> Result<BinaryProfile, formats::bolt::preagg::ParseError> {
    use crate::perf::table::Counts;
    use formats::bolt::preagg::{parse, Record};
    let mut traces: HashMap<(u64, u64, u64), Counts> = HashMap::new();
    let mut ips: HashMap<u64, u64> = HashMap::new();
    let mut profile = BinaryProfile::default();
    let mut add = |key: (u64, u64, u64), count: i64, mispreds: i64| {
        if skip_zero_counts && count == 0 {
            return;
        }
        let c = traces.entry(key).or_default();
        c.taken = c.taken.wrapping_add(count as u64);
        c.mispred = c.mispred.wrapping_add(mispreds as u64);
    };
    for record in parse(data) {
        match record? {
            Record::Event(name) => {
                if !profile.events.iter().any(|e| e == name) {
                    profile.events.push(name.to_owned());
                }
            }
            Record::Sample { addr, count } => {
                let n = ips.entry(addr).or_default();
                *n = n.wrapping_add(count as u64);
            }
            Record::Trace {
                branch,
                from,
                to,
                count,
            } => add((branch, from, to), count, 0),
            Record::Return {
                branch,
                from,
                to,
                count,
            } => {
                let branch = if branch == 0 {
                    FT_EXTERNAL_RETURN
                } else {
                    profile.returns.push(branch);
                    branch
                };
                add((branch, from, to), count, 0)
            }
            Record::Branch {
                from,
                to,
                count,
                mispreds,
            } => add((from, to, BR_ONLY), count, mispreds),
            Record::FallThrough {
                origin,
                from,
                to,
                count,
            } => {
                let branch = match origin {
                    b'F' => FT_ONLY,
                    b'f' => FT_EXTERNAL_ORIGIN,
                    _ => FT_EXTERNAL_RETURN,
                };
                add((branch, from, to), count, 0)
            }
        }
    }
    profile.traces = traces.into_iter().collect();
    profile.traces.sort_unstable_by_key(|&(k, _)| k);
    profile.ips = ips.into_iter().collect();
    profile.ips.sort_unstable();
    profile.returns.sort_unstable();
    profile.returns.dedup();
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The touched functions marked in bit sets equal the sorted, deduplicated lists of every
    /// trace's functions (the way they were listed before), on a real binary with traces at
    /// random addresses in and around its code, `BR_ONLY` ends and translated functions.
    #[test]
    fn touched_functions_equal_the_listed_ones() {
        let path = testsupport::shared_perf("autofdo-jump_table_test.binary");
        let data = std::fs::read(&path).unwrap();
        let functions = Functions::from_elf(&path, &data).unwrap();
        let first = functions.get(0).address;
        let last = functions.get(functions.len() - 1).max_end;
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (first - 64) + (state >> 33) % (last - first + 128)
        };
        let traces = (0..20_000u32)
            .map(|n| {
                let to = if n.is_multiple_of(7) { BR_ONLY } else { next() };
                ((next(), next(), to), crate::perf::table::Counts::default())
            })
            .collect();
        let profile = BinaryProfile {
            traces,
            ..Default::default()
        };
        let translated = |i: usize| i.is_multiple_of(3);
        let starts = listed(
            &profile,
            &functions,
            |&(_, from, to)| if to == BR_ONLY { vec![] } else { vec![from] },
            |i| !translated(i),
        );
        let touched = listed(
            &profile,
            &functions,
            |&(branch, from, to)| {
                [branch, from]
                    .into_iter()
                    .chain((to != BR_ONLY).then_some(to))
                    .collect()
            },
            |_| true,
        );
        assert!(
            starts.len() > 10 && touched.len() > starts.len(),
            "{starts:?} {touched:?}"
        );
        assert_eq!(
            touched_functions(&profile, &functions, &translated),
            (starts, touched)
        );
    }

    /// The functions holding each trace's `addresses`, kept if `keep`: sorted and deduplicated.
    fn listed(
        profile: &BinaryProfile,
        functions: &Functions,
        addresses: impl Fn(&(u64, u64, u64)) -> Vec<u64>,
        keep: impl Fn(usize) -> bool,
    ) -> Vec<u32> {
        let mut out: Vec<u32> = (profile.traces.iter())
            .flat_map(|(t, _)| addresses(t))
            .filter_map(|a| functions.index_containing(a))
            .filter(|&i| keep(i))
            .map(|i| i as u32)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    proptest! {
        /// A bit set's members are the indices marked, ascending and once each.
        #[test]
        fn members_are_the_marked_indices(marked in prop::collection::vec(0usize..300, 0..80)) {
            let mut set = vec![0u64; 5];
            for &i in &marked {
                set[i / 64] |= 1 << (i % 64);
            }
            let mut expected: Vec<u32> = marked.iter().map(|&i| i as u32).collect();
            expected.sort_unstable();
            expected.dedup();
            prop_assert_eq!(members(&set), expected);
        }

        /// Gathering the chunks' lists equals mapping their concatenation, empty lists included.
        #[test]
        fn gather_equals_concatenation(parts in prop::collection::vec(prop::collection::vec(any::<u32>(), 0..40), 0..12)) {
            let gathered = gather(&parts, |&x| u64::from(x) * 3);
            let expected: Vec<u64> = parts.concat().iter().map(|&x| u64::from(x) * 3).collect();
            prop_assert_eq!(gathered, expected);
        }
    }
}
