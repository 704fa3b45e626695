//! BOLT's YAML profile from a symbolized profile, as `perf2bolt --profile-format=yaml` (LLVM 22)
//! writes it: the aggregated branch lines are put on the functions' CFGs the way
//! `DataAggregator` does while it aggregates, then `YAMLProfileWriter::convert` turns each
//! profiled function into a record.
//!
//! * `recordBranch` for every intra-function line (branches and fall-throughs alike: a
//!   fall-through is always a valid edge, so the two agree on it): the count lands on the edge
//!   from the block holding the source to the block at the target, with BOLT's repairs (a
//!   target past the nops at a block's start, a branch to the block after a `jcc; jmp` pair
//!   counted on the fall-through block's edge, returns from tail calls ignored);
//! * `recordEntry` for lines entering a function (from another, from an unknown address, or a
//!   recursive call to offset 0): at offset 0 the function's and the entry block's `exec`;
//! * `convertBranchData` for lines leaving from calls: direct calls (tail calls included) add
//!   to the call's count, conditional tail calls to their taken and mispredicted counts, and
//!   indirect calls and jumps list each target;
//! * the writer keeps the entry block, blocks with call sites, and blocks with a counted edge
//!   in or out; call sites name callees by BOLT's function numbers.
//!
//! Basic (`no_lbr`) profiles have no edges: LLVM 22 writes each sampled function with
//! `sample` in the header flags and no blocks.
//!
//! Not modelled: secondary entry points, and the landing pads of `--profile-use-dfs` order
//! (BOLT pushes a block's landing pads before its successors).

mod bolted;

pub use bolted::{bat_profile, TableError};

use std::borrow::Cow;

use hashbrown::HashMap;
use iced_x86::{ConditionCode, FlowControl, Instruction, Mnemonic, OpKind};
use rayon::prelude::*;

use formats::bolt::yaml;

use super::cfg::{self, Body, Cfg, TableStarts};
use super::eh::CallSite;
use super::functions::{Function, Functions};
use super::hash;
use super::memory::DataObjects;
use super::x86::Llvm;
use super::{BatIndex, Branch, CountedLine, Fdata, Loc, Touched};

/// What the header says and how blocks are ordered.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `binary-name`: the binary's path as given to perf2bolt.
    pub binary_name: String,
    /// The binary's GNU build id in hex, if it has one.
    pub build_id: Option<String>,
    /// `--profile-use-dfs`: blocks numbered in BOLT's depth-first order (and the function hash
    /// taken in that order).
    pub use_dfs: bool,
}

/// How BOLT classifies one instruction, as far as the profile needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Other,
    Nop,
    /// A direct call or a direct jump out of the function (a tail call), with its target.
    Call(u64),
    /// A conditional jump out of the function (a conditional tail call).
    CondTailCall(u64),
    /// An indirect call or jump (through a jump table or not).
    Indirect,
    /// A conditional branch inside the function.
    CondBranch(ConditionCode),
    /// An unconditional jump inside the function.
    Jump,
    /// A return or a trap.
    End,
}

#[derive(Clone, Copy, Debug)]
struct Insn {
    offset: u64,
    kind: Kind,
}

/// A profiled function's counts on its CFG.
struct Counted<'c> {
    cfg: &'c Cfg,
    insns: &'c [Insn],
    /// Per block, per successor (in the CFG's order): (count, mispredictions).
    edges: Vec<(u64, u64)>,
    /// Where each block's successors' counts start in `edges` (one more entry than blocks).
    edge_starts: Vec<usize>,
    /// Where each block's instructions start in `insns` (one more entry than blocks).
    insn_starts: Vec<usize>,
    exec: Vec<u64>,
    function_exec: u64,
    /// Per instruction offset: the direct call's count, or the conditional tail call's
    /// (taken, mispredicted) counts.
    call_counts: HashMap<u64, (u64, u64)>,
    /// Per indirect call or jump offset: (target function, count, mispredictions) in line
    /// order.
    indirect: HashMap<u64, Vec<(Option<u32>, u64, u64)>>,
}

/// The lines of one function, split as BOLT files them.
#[derive(Clone, Default)]
struct Lines {
    /// Branches and fall-throughs inside the function (not to offset 0).
    intra: Vec<(u64, u64, Branch)>,
    /// Transfers leaving the function (or recursive calls): source offset, target.
    out: Vec<(u64, Loc, Branch)>,
    /// Transfers entering the function: target offset.
    entries: Vec<(u64, Branch)>,
}

/// Every line of `fdata`, summed, filed by function.
fn file_lines(fdata: &Fdata) -> HashMap<u32, Lines> {
    file_lines_of(fdata, Cow::Borrowed(&fdata.parts))
}

/// [`file_lines`], `parts` being `fdata`'s lines: owned ones are dropped once gathered, and
/// the lines filed then reuse their memory.
fn file_lines_of(fdata: &Fdata, parts: Cow<'_, [Vec<CountedLine>]>) -> HashMap<u32, Lines> {
    // Sorted by source function, then as BOLT keeps each function's lines: by (source,
    // target), which is also the order in which indirect targets are listed. A key split
    // between chunks is then adjacent to itself.
    let mut keys: Vec<CountedLine> = super::gather(&parts, |&line| line);
    drop(parts);
    keys.par_sort_unstable_by_key(|&((from, to), _)| {
        (
            from.func,
            from.offset,
            to.func.is_some(),
            to.func,
            to.offset,
        )
    });
    keys.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            kept.1.count = kept.1.count.wrapping_add(later.1.count);
            kept.1.mispreds = kept.1.mispreds.wrapping_add(later.1.mispreds);
        }
        same
    });
    // The source function's lines come in one run: each run's lines filed in parallel.
    let outgoing: Vec<(u32, Lines)> = keys
        .par_chunk_by(|a, b| a.0 .0.func == b.0 .0.func)
        .filter_map(|run| {
            let f = run[0].0 .0.func?;
            let is_intra = |to: Loc| to.func == Some(f) && to.offset != 0;
            // Sized once: grown by doubling, the lists took twice their memory, all fresh.
            let intra = run.iter().filter(|&&((_, to), _)| is_intra(to)).count();
            let mut lines = Lines {
                intra: Vec::with_capacity(intra),
                out: Vec::with_capacity(run.len() - intra),
                entries: Vec::new(),
            };
            for &((from, to), b) in run {
                if is_intra(to) {
                    lines.intra.push((from.offset, to.offset, b));
                } else {
                    lines.out.push((from.offset, to, b));
                }
            }
            Some((f, lines))
        })
        .collect();
    // Entries only add up, in any order.
    let mut entering: Vec<(u32, u64, Branch)> = keys
        .par_iter()
        .filter_map(|&((from, to), b)| {
            let g = to.func?;
            if from.func == Some(g) && to.offset != 0 {
                return None;
            }
            // A translated fall-through to offset 0 is an inner branch to perf2bolt, no entry.
            let mut b = b;
            if let Some(&n) = fdata.zero_fallthroughs.get(&(from, to)) {
                b.count = b.count.wrapping_sub(n);
            }
            Some((g, to.offset, b))
        })
        .collect();
    drop(keys);
    entering.par_sort_unstable_by_key(|e| e.0);
    let mut by_function: HashMap<u32, Lines> = outgoing.into_iter().collect();
    for run in entering.chunk_by(|a, b| a.0 == b.0) {
        let lines = by_function.entry(run[0].0).or_default();
        lines.entries = run.iter().map(|&(_, offset, b)| (offset, b)).collect();
    }
    by_function
}

/// Appends `ins` (an instruction of `f`, whose bytes are `code`) to BOLT's instruction list,
/// where a `lock` prefix is an instruction of its own.
fn push_instruction(out: &mut Vec<Insn>, f: &Function, code: &[u8], ins: &Instruction) {
    let mut offset = ins.ip() - f.address;
    if code.get(offset as usize) == Some(&0xf0) {
        out.push(Insn {
            offset,
            kind: Kind::Other,
        });
        offset += 1;
    }
    let direct = matches!(
        ins.op0_kind(),
        OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
    );
    let kind = match ins.flow_control() {
        FlowControl::Call if direct => Kind::Call(ins.near_branch_target()),
        FlowControl::Call | FlowControl::IndirectCall | FlowControl::IndirectBranch => {
            Kind::Indirect
        }
        FlowControl::UnconditionalBranch if direct => {
            if f.contains(ins.near_branch_target()) {
                Kind::Jump
            } else {
                Kind::Call(ins.near_branch_target())
            }
        }
        FlowControl::ConditionalBranch if direct => {
            if f.contains(ins.near_branch_target()) {
                Kind::CondBranch(ins.condition_code())
            } else {
                Kind::CondTailCall(ins.near_branch_target())
            }
        }
        FlowControl::Next if ins.mnemonic() == Mnemonic::Nop => Kind::Nop,
        FlowControl::Next => Kind::Other,
        _ => Kind::End,
    };
    out.push(Insn { offset, kind });
}

/// What a record is made from, kept from function to function on each thread: the profile
/// decodes every profiled function, and fresh buffers for each (fresh pages for the large ones)
/// cost more than the reuse.
#[derive(Default)]
struct Decoded {
    /// The function's instructions as BOLT lists them.
    insns: Vec<Insn>,
    /// Its block strings for the hashes, if it has hashes.
    strings: hash::BlockStrings,
    /// Whether it has hashes (none if an instruction is outside the table).
    hashed: bool,
}

thread_local! {
    static DECODED: std::cell::RefCell<Decoded> = std::cell::RefCell::default();
}

/// Gives `make` `f`'s instructions and block strings, from one decode. `make` must not start
/// parallel work: a record stolen onto this thread meanwhile would find the buffers borrowed.
fn with_decoded<R>(
    ctx: &hash::Context,
    f: &Function,
    cfg: &Cfg,
    make: impl FnOnce(&Decoded) -> R,
) -> R {
    DECODED.with_borrow_mut(|d| {
        let code = ctx.functions.function_code(f);
        let Decoded {
            insns,
            strings,
            hashed,
        } = d;
        insns.clear();
        let each = |ins: &Instruction| push_instruction(insns, f, code, ins);
        *hashed = hash::block_strings_into(ctx, f, cfg, Llvm::V22, each, strings).is_ok();
        make(d)
    })
}

impl Decoded {
    /// The function's hashes (see [`hash::BlockStrings::hashes`]), if it has any.
    fn hashes(&self, cfg: &Cfg, order: Option<&[usize]>) -> Option<hash::Hashes> {
        self.hashed.then(|| self.strings.hashes(cfg, order))
    }
}

impl<'c> Counted<'c> {
    /// `f`'s CFG with no counts yet, given its instructions.
    fn new(cfg: &'c Cfg, insns: &'c [Insn]) -> Counted<'c> {
        // All blocks' edges in one list rather than a list per block.
        let ends = cfg.blocks.iter().scan(0, |end, b| {
            *end += b.successors.len();
            Some(*end)
        });
        let edge_starts: Vec<usize> = std::iter::once(0).chain(ends).collect();
        // Each block's first instruction, and the end of the last block's, found in one walk.
        let bounds = (cfg.blocks.iter().map(|b| b.offset)).chain(std::iter::once(cfg.size));
        let mut first = 0;
        let insn_starts = bounds
            .map(|bound| {
                first += insns[first..]
                    .iter()
                    .take_while(|i| i.offset < bound)
                    .count();
                first
            })
            .collect();
        Counted {
            cfg,
            insns,
            edges: vec![(0, 0); edge_starts[cfg.blocks.len()]],
            edge_starts,
            insn_starts,
            exec: vec![0; cfg.blocks.len()],
            function_exec: 0,
            call_counts: HashMap::new(),
            indirect: HashMap::new(),
        }
    }

    fn insn_at(&self, offset: u64) -> Option<&Insn> {
        self.insns
            .binary_search_by_key(&offset, |i| i.offset)
            .ok()
            .map(|i| &self.insns[i])
    }

    /// The instructions of block `b`: from its start to the next block's (or the function's
    /// end).
    fn block_insns(&self, b: usize) -> &[Insn] {
        &self.insns[self.insn_starts[b]..self.insn_starts[b + 1]]
    }

    /// The (count, mispredictions) of block `b`'s successors, in the CFG's order.
    fn block_edges(&self, b: usize) -> &[(u64, u64)] {
        &self.edges[self.edge_starts[b]..self.edge_starts[b + 1]]
    }

    fn edge(&mut self, from: usize, to: usize) -> Option<&mut (u64, u64)> {
        let k = self.cfg.blocks[from]
            .successors
            .iter()
            .position(|&s| s == to)?;
        Some(&mut self.edges[self.edge_starts[from] + k])
    }

    /// `DataReader::recordBranch` (the count goes on the edge; false if it matches no edge).
    fn record_branch(&mut self, from: u64, to: u64, count: u64, mispreds: u64) -> bool {
        let cfg = self.cfg;
        let (Some(from_bb), Some(mut to_bb)) =
            (cfg.block_containing(from), cfg.block_containing(to))
        else {
            return false;
        };
        if from == to || cfg.blocks[from_bb].successors.is_empty() {
            return true;
        }
        let mut matches = to == cfg.blocks[to_bb].offset;
        if !matches {
            // Past the nops at the block's start (old fdata).
            let mut offset = cfg.blocks[to_bb].offset;
            let insns = self.block_insns(to_bb);
            for (n, i) in insns.iter().enumerate() {
                if i.kind != Kind::Nop {
                    break;
                }
                offset = insns.get(n + 1).map_or(offset, |next| next.offset);
            }
            matches = to == offset;
        }
        if !matches {
            if let Some(last) = self.block_insns(to_bb).last() {
                if to == last.offset && last.kind == Kind::Jump {
                    return true;
                }
                if to <= last.offset {
                    return false;
                }
            }
            if to_bb + 1 >= cfg.blocks.len() {
                return false;
            }
            to_bb += 1;
        }
        let Some(from_insn) = self.insn_at(from).copied() else {
            return false;
        };
        if !cfg.blocks[from_bb].successors.contains(&to_bb) {
            let is_call = matches!(from_insn.kind, Kind::Call(_) | Kind::Indirect);
            if is_call && to_bb == 0 {
                return true;
            }
            let block = &cfg.blocks[from_bb];
            let ft = (block.successors.len() == 2).then(|| block.successors[1]);
            match ft {
                Some(ft) if cfg.blocks[ft].successors[..] == [to_bb] => {
                    let e = self.edge(ft, to_bb).expect("checked");
                    e.0 = e.0.wrapping_add(count);
                    if count != 0 {
                        e.1 = e.1.wrapping_add(mispreds);
                    }
                    to_bb = ft;
                }
                _ => return false,
            }
        }
        let e = self.edge(from_bb, to_bb).expect("checked");
        e.0 = e.0.wrapping_add(count);
        if count != 0 {
            e.1 = e.1.wrapping_add(mispreds);
        }
        true
    }
}

/// The CFGs of `indices` (ascending: the profiled functions, those perf2bolt's lite mode
/// disassembles), their jump tables bounded by each other's as BOLT bounds them; with `scan`,
/// the other functions' references make secondary entry points too, as in the fdata path.
fn bodies(functions: &Functions, indices: &[u32], scan: bool) -> Bodies {
    let mut phase_one: Vec<(u32, Result<cfg::Disassembled, Body>)> = indices
        .par_iter()
        .map(|&i| (i, cfg::disassemble(functions, functions.get(i as usize))))
        .collect();
    // The same secondary entry points and ignored functions as the fdata path.
    let scanned = match scan {
        true => super::scanned_references(functions, indices),
        false => Vec::new(),
    };
    let super::EntryPoints { entries, ignored } =
        super::entry_points(functions, &phase_one, &scanned);
    for (i, d) in phase_one.iter_mut() {
        if let (Some(why), true) = (ignored.get(i), d.is_ok()) {
            *d = Err(Body::NoCfg(why.clone()));
        }
    }
    let tables = TableStarts::of(phase_one.iter().map(|(_, d)| d));
    let bodies = super::finish_bodies(functions, phase_one, &tables, &entries)
        .into_iter()
        .collect();
    Bodies {
        bodies,
        tables,
        entries,
    }
}

/// The CFGs of every function `touched` holds: those it finished and the rest.
fn finish_touched(functions: &Functions, touched: Touched) -> Bodies {
    let Touched {
        mut bodies,
        unfinished,
        tables,
        entries,
        ..
    } = touched;
    let finished = super::finish_bodies(functions, unfinished, &tables, &entries);
    bodies.extend(finished);
    Bodies {
        bodies,
        tables,
        entries,
    }
}

/// What [`bodies`] finds.
struct Bodies {
    /// The CFGs (or why none) of the functions asked for.
    bodies: HashMap<u32, Body>,
    /// The jump tables' starts.
    tables: TableStarts,
    /// The functions' secondary entry points (offsets, ascending).
    entries: HashMap<u32, Vec<u64>>,
}

/// `BinaryBasicBlock::landing_pads` of each block: the pads of its calls, in instruction
/// order, each once.
fn block_landing_pads(counted: &Counted, f: &Function, sites: &[CallSite]) -> Vec<Vec<usize>> {
    let cfg = counted.cfg;
    (0..cfg.blocks.len())
        .map(|b| {
            let mut pads: Vec<usize> = Vec::new();
            for insn in counted.block_insns(b) {
                if !matches!(insn.kind, Kind::Call(_) | Kind::Indirect) {
                    continue;
                }
                let address = f.address + insn.offset;
                let Some(site) = sites.iter().find(|s| s.start <= address && address < s.end)
                else {
                    continue;
                };
                let pad = site.pad.wrapping_sub(f.address);
                if let Ok(p) = cfg.blocks.binary_search_by_key(&pad, |b| b.offset) {
                    if !pads.contains(&p) {
                        pads.push(p);
                    }
                }
            }
            pads
        })
        .collect()
}

/// `BinaryFunction::dfs`: from the entry, a block's landing pads pushed first, then its
/// successors in order, but the two of a conditional branch pushed so that the taken one comes
/// first unless the condition is BOLT's canonical one.
fn dfs_order(counted: &Counted, pads: &[Vec<usize>]) -> Vec<usize> {
    let cfg = counted.cfg;
    let mut order = Vec::with_capacity(cfg.blocks.len());
    let mut seen = vec![false; cfg.blocks.len()];
    let mut stack = vec![0usize];
    while let Some(b) = stack.pop() {
        if std::mem::replace(&mut seen[b], true) {
            continue;
        }
        order.push(b);
        stack.extend(pads[b].iter().copied());
        let succ = &cfg.blocks[b].successors;
        let cond = counted
            .block_insns(b)
            .iter()
            .rev()
            .find_map(|i| match i.kind {
                Kind::CondBranch(cc) => Some(cc),
                _ => None,
            });
        match cond {
            Some(cc) if succ.len() == 2 => {
                if is_canonical(cc) {
                    stack.extend([succ[0], succ[1]]);
                } else {
                    stack.extend([succ[1], succ[0]]);
                }
            }
            _ => stack.extend(succ.iter().copied()),
        }
    }
    order
}

/// X86's `getCanonicalBranchCondCode(cc) == cc`.
fn is_canonical(cc: ConditionCode) -> bool {
    use ConditionCode as C;
    matches!(cc, C::e | C::l | C::g | C::b | C::a | C::s | C::p | C::o)
}

/// The YAML profile of `fdata` (symbolized from `data`, the binary's bytes) as perf2bolt 22
/// writes it.
pub fn profile(fdata: &Fdata, data: &[u8], options: &Options) -> yaml::Profile {
    profile_with_intra(fdata, None, data, options)
}

/// [`profile`], with the functions' inner branches taken from `intra` when given (the same
/// profile without its zero-count pre-aggregated lines: perf2bolt records each such line's
/// inner branch on its own, and a branch never taken adds no mispredictions there, while
/// calls and entries keep them).
pub fn profile_with_intra(
    fdata: &Fdata,
    intra: Option<&Fdata>,
    data: &[u8],
    options: &Options,
) -> yaml::Profile {
    with_records(
        fdata,
        Cow::Borrowed(&fdata.parts),
        None,
        intra,
        data,
        options,
        |header, profiled, record| yaml::Profile {
            header,
            functions: profiled.par_iter().map(|&i| record(i)).collect(),
        },
    )
}

/// [`profile_with_intra`] written to `out` as [`yaml::write`] prints it, each batch of records
/// made and formatted in parallel while the previous one is written (the whole profile is
/// never held). The CFGs come from `touched` (what symbolizing `fdata` analysed,
/// [`super::symbolize_keeping`]) when it covers every profiled function, instead of
/// disassembling them again: perf2bolt builds one set of CFGs, for the functions the profile
/// touches, and writes both its fdata and its YAML from them.
///
/// `fdata`'s lines are spent (dropped once filed).
pub(crate) fn write_reusing(
    out: &mut dyn std::io::Write,
    fdata: &mut Fdata,
    touched: Option<Touched>,
    intra: Option<&Fdata>,
    data: &[u8],
    options: &Options,
) -> std::io::Result<()> {
    let parts = std::mem::take(&mut fdata.parts);
    with_records(
        fdata,
        Cow::Owned(parts),
        touched,
        intra,
        data,
        options,
        |header, profiled, record| {
            write_document(out, &header, profiled, |&i, text| {
                yaml::write_function(text, &record(i), 0)
            })
        },
    )
}

/// Gives `consume` the profile's header, its profiled functions (ascending indices) and a
/// maker of their records (see [`write_reusing`]).
fn with_records<R>(
    fdata: &Fdata,
    parts: Cow<'_, [Vec<CountedLine>]>,
    touched: Option<Touched>,
    intra: Option<&Fdata>,
    data: &[u8],
    options: &Options,
    consume: impl FnOnce(yaml::Header, &[u32], &(dyn Fn(u32) -> yaml::Function + Sync)) -> R,
) -> R {
    let mut header = yaml::Header {
        binary_name: options.binary_name.clone(),
        build_id: Some(
            options
                .build_id
                .clone()
                .unwrap_or_else(|| "<unknown>".into()),
        ),
        flags: vec![],
        origin: "perf data aggregator".into(),
        events: String::new(),
        dfs_order: options.use_dfs,
        xxh3: true,
    };
    // A basic profile's functions: those sampled, with no counts (LLVM 22 gives their
    // blocks no counts in aggregation mode).
    let basic = fdata.basic_events.is_some();
    if let Some(events) = &fdata.basic_events {
        header.events = events.join(",");
    }
    let functions = fdata.functions;
    let mut touched = touched;
    let known = (touched.as_mut()).map_or_else(HashMap::new, |t| std::mem::take(&mut t.known));
    // The binary's facts depend on no line: found while the lines are filed (both phases
    // leave a core idle at times).
    let (lines, facts): (HashMap<u32, Lines>, _) = rayon::join(
        || {
            if basic {
                (fdata.samples.keys())
                    .map(|&(f, _)| (f, Lines::default()))
                    .collect()
            } else {
                with_intra(file_lines_of(fdata, parts), intra)
            }
        },
        || BinaryFacts::of(data, functions, &known),
    );
    let mut profiled: Vec<u32> = lines.keys().copied().collect();
    profiled.sort_unstable();
    let found = match touched {
        Some(t) if profiled.iter().all(|i| t.indices.binary_search(i).is_ok()) => {
            finish_touched(functions, t)
        }
        _ => bodies(functions, &profiled, true),
    };
    let maker = RecordMaker::new(fdata, (facts, found), &lines, options.use_dfs, None);
    // The flags of the functions with a profile and blocks (none: `[  ]`).
    let any = (profiled.iter())
        .any(|i| matches!(maker.found.bodies.get(i), Some(Body::Cfg(c)) if !c.blocks.is_empty()));
    header.flags = match (any, basic) {
        (false, _) => vec![],
        (true, true) => vec!["sample"],
        (true, false) => vec!["lbr"],
    };
    let consumed = consume(header, &profiled, &|i| maker.record(i));
    crate::io::drop_in_background((maker.into_parts(), lines, known));
    consumed
}

/// Writes `profile` as [`yaml::write`] prints it, the functions formatted in parallel.
pub(crate) fn write_profile(
    out: &mut dyn std::io::Write,
    profile: &yaml::Profile,
) -> std::io::Result<()> {
    write_document(out, &profile.header, &profile.functions, |f, text| {
        yaml::write_function(text, f, 0)
    })
}

/// The document of `header` and one function record per item, as `record` formats it, in
/// parallel batches (see [`crate::io::output::write_formatted`]).
fn write_document<T: Sync>(
    out: &mut dyn std::io::Write,
    header: &yaml::Header,
    items: &[T],
    record: impl Fn(&T, &mut Vec<u8>) + Sync,
) -> std::io::Result<()> {
    let mut text = Vec::new();
    yaml::write_header(&mut text, header, items.is_empty());
    out.write_all(&text)?;
    crate::io::output::write_formatted(out, items, |chunk, text| {
        chunk.iter().for_each(|item| record(item, text));
        Ok(())
    })?;
    out.write_all(yaml::END.as_bytes())
}

/// `lines` with each function's inner branches taken from `intra` when given (see
/// [`profile_with_intra`]).
fn with_intra(mut lines: HashMap<u32, Lines>, intra: Option<&Fdata>) -> HashMap<u32, Lines> {
    if let Some(intra) = intra {
        let mut inner = file_lines(intra);
        for (f, l) in lines.iter_mut() {
            l.intra = inner.remove(f).map(|l| l.intra).unwrap_or_default();
        }
        lines.retain(|_, l| !(l.intra.is_empty() && l.out.is_empty() && l.entries.is_empty()));
    }
    lines
}

/// The records of the `profiled` functions (ascending indices) that BOLT gives a CFG, as
/// `YAMLProfileWriter::convert` writes them; call destinations through `bat`'s tables when the
/// binary is BOLTed. `find` gives the CFGs of the functions BOLT disassembles (`profiled`
/// among them), while the binary's data objects are found. Also returns the CFGs found.
fn cfg_records(
    fdata: &Fdata,
    data: &[u8],
    profiled: &[u32],
    find: impl FnOnce() -> Bodies + Send,
    lines: &HashMap<u32, Lines>,
    use_dfs: bool,
    bat: Option<&BatIndex>,
) -> (Vec<yaml::Function>, Bodies) {
    // The data objects (a disassembly of every function) do not depend on the CFGs.
    let (found, facts) = rayon::join(find, || {
        BinaryFacts::of(data, fdata.functions, &HashMap::new())
    });
    let maker = RecordMaker::new(fdata, (facts, found), lines, use_dfs, bat);
    let records = profiled.par_iter().map(|&i| maker.record(i)).collect();
    (records, maker.found)
}

/// What the hashes and the landing pads need of the binary, whatever the profile: its data
/// objects, relocations and call sites.
struct BinaryFacts {
    objects: DataObjects,
    relocations: std::collections::BTreeMap<u64, hash::Relocation>,
    call_sites: HashMap<u64, Vec<CallSite>>,
}

impl BinaryFacts {
    /// The facts of the ELF file `data`, what they need of the functions already disassembled
    /// taken from `known`.
    fn of(data: &[u8], functions: &Functions, known: &super::memory::Known) -> BinaryFacts {
        BinaryFacts {
            objects: DataObjects::from_elf_knowing(data, functions, known),
            relocations: hash::relocations(data),
            call_sites: object::File::parse(data)
                .map(|file| super::eh::call_sites(&file))
                .unwrap_or_default(),
        }
    }
}

/// What making a function's record needs: the CFGs, the binary's facts, and BOLT's function
/// numbers.
struct RecordMaker<'a> {
    fdata: &'a Fdata<'a>,
    lines: &'a HashMap<u32, Lines>,
    numbers: Vec<u32>,
    found: Bodies,
    objects: DataObjects,
    relocations: std::collections::BTreeMap<u64, hash::Relocation>,
    call_sites: HashMap<u64, Vec<CallSite>>,
    use_dfs: bool,
    bat: Option<&'a BatIndex<'a>>,
}

impl<'a> RecordMaker<'a> {
    fn new(
        fdata: &'a Fdata<'a>,
        (facts, found): (BinaryFacts, Bodies),
        lines: &'a HashMap<u32, Lines>,
        use_dfs: bool,
        bat: Option<&'a BatIndex<'a>>,
    ) -> RecordMaker<'a> {
        let functions = fdata.functions;
        let BinaryFacts {
            objects,
            relocations,
            call_sites,
        } = facts;
        RecordMaker {
            fdata,
            lines,
            numbers: (0..functions.len()).map(|i| functions.number(i)).collect(),
            found,
            objects,
            relocations,
            call_sites,
            use_dfs,
            bat,
        }
    }

    /// What the maker owns, for dropping (see [`crate::io::drop_in_background`]).
    fn into_parts(self) -> impl Send + 'static {
        let RecordMaker {
            numbers,
            found,
            objects,
            relocations,
            call_sites,
            ..
        } = self;
        (numbers, found, objects, relocations, call_sites)
    }

    /// The record of function `i`.
    fn record(&self, i: u32) -> yaml::Function {
        let functions = self.fdata.functions;
        let ctx = hash::Context {
            functions,
            objects: &self.objects,
            jump_tables: &self.found.tables,
            relocations: &self.relocations,
        };
        let f = functions.get(i as usize);
        let l = &self.lines[&i];
        let mut record = yaml::Function {
            name: super::printed_name(f, self.fdata.bolted).to_string(),
            fid: self.numbers[i as usize],
            exec: l
                .entries
                .iter()
                .filter(|e| e.0 == 0)
                .fold(0u64, |a, e| a.wrapping_add(e.1.count)),
            ..yaml::Function::default()
        };
        let sites = (self.call_sites.get(&f.address)).map_or(&[][..], Vec::as_slice);
        let basic = self.fdata.basic_events.is_some();
        match self.found.bodies.get(&i) {
            Some(Body::Cfg(cfg)) if basic => {
                record.nblocks = cfg.blocks.len() as u32;
                record.hash = with_decoded(&ctx, f, cfg, |d| {
                    let order = self.use_dfs.then(|| {
                        let c = Counted::new(cfg, &d.insns);
                        dfs_order(&c, &block_landing_pads(&c, f, sites))
                    });
                    d.hashes(cfg, order.as_deref()).map_or(0, |h| h.function)
                });
            }
            Some(Body::Cfg(cfg)) => {
                let naming = Naming {
                    numbers: &self.numbers,
                    entries: &self.found.entries,
                    use_dfs: self.use_dfs,
                    bat: self.bat,
                };
                with_decoded(&ctx, f, cfg, |d| {
                    convert(&ctx, (i, f), (cfg, d), l, &naming, sites, &mut record)
                });
            }
            _ => {}
        }
        record
    }
}

/// What [`convert`] needs besides the function: callee numbers, secondary entry points, the
/// block order, and a BOLTed binary's tables (for call destinations).
struct Naming<'a> {
    numbers: &'a [u32],
    entries: &'a HashMap<u32, Vec<u64>>,
    use_dfs: bool,
    bat: Option<&'a BatIndex<'a>>,
}

/// `YAMLProfileWriter::convert` of one function with a CFG, `decoded` as [`with_decoded`]
/// gives it.
fn convert(
    ctx: &hash::Context,
    (i, f): (u32, &Function),
    (cfg, decoded): (&Cfg, &Decoded),
    l: &Lines,
    naming: &Naming,
    sites: &[CallSite],
    record: &mut yaml::Function,
) {
    let Naming {
        numbers,
        entries,
        use_dfs,
        bat,
    } = *naming;
    let functions = ctx.functions;
    let mut c = Counted::new(cfg, &decoded.insns);
    let secondary = entries.get(&i).map_or(&[][..], Vec::as_slice);
    for &(to, b) in &l.entries {
        if to > f.size {
            continue;
        }
        if to == 0 {
            c.function_exec = c.function_exec.wrapping_add(b.count);
            c.exec[0] = c.exec[0].wrapping_add(b.count);
            continue;
        }
        // `DataReader::readProfile`: an entry from outside counts on the block starting there
        // if that block is an entry point or a landing pad (another function's jump into
        // hand-written assembly: OpenSSL's `bn_mul4x_mont` into `bn_mulx4x_mont`).
        let Some(b_at) = cfg
            .block_containing(to)
            .filter(|&i| cfg.blocks[i].offset == to)
        else {
            continue;
        };
        if cfg.blocks[b_at].is_landing_pad || secondary.binary_search(&to).is_ok() {
            c.exec[b_at] = c.exec[b_at].wrapping_add(b.count);
        }
    }
    for &(from, to, b) in &l.intra {
        c.record_branch(from, to, b.count, b.mispreds);
    }
    for &(from, to, b) in &l.out {
        let Some(insn) = c.insn_at(from).copied() else {
            continue;
        };
        match insn.kind {
            Kind::Indirect => c
                .indirect
                .entry(from)
                .or_default()
                .push((to.func, b.count, b.mispreds)),
            Kind::Call(_) => {
                let e = c.call_counts.entry(from).or_default();
                e.0 = e.0.wrapping_add(b.count);
            }
            Kind::CondTailCall(_) => {
                let e = c.call_counts.entry(from).or_default();
                e.0 = e.0.wrapping_add(b.count);
                e.1 = e.1.wrapping_add(b.mispreds);
            }
            _ => {}
        }
    }
    let order: Vec<usize> = if use_dfs {
        dfs_order(&c, &block_landing_pads(&c, f, sites))
    } else {
        (0..cfg.blocks.len()).collect()
    };
    let hashes = decoded.hashes(cfg, Some(&order));
    let mut index = vec![0u32; cfg.blocks.len()];
    for (n, &b) in order.iter().enumerate() {
        index[b] = n as u32;
    }
    record.nblocks = cfg.blocks.len() as u32;
    record.exec = c.function_exec;
    record.hash = hashes.as_ref().map_or(0, |h| h.function);
    // `setCSIDestination`: a call to a secondary entry point names the callee and the entry's
    // rank among the callee's secondary entries (`getEntryIDForSymbol`, from 1).
    let fid_at = |target: u64| -> (u32, u32) {
        let Some(g) = functions.index_containing(target) else {
            return (0, 0);
        };
        if let Some(b) = bat {
            let output_offset = (target - functions.get(g).address) as u32;
            if let Some(found) = bolted::bat_destination(functions, b, numbers, g, output_offset, 0)
            {
                return found;
            }
        }
        let offset = target - functions.get(g).address;
        if offset == 0 {
            return (numbers[g], 0);
        }
        let rank = entries
            .get(&(g as u32))
            .and_then(|e| e.iter().filter(|&&o| o != 0).position(|&o| o == offset));
        rank.map_or((0, 0), |r| (numbers[g], r as u32 + 1))
    };
    let name_of =
        |fid_index: Option<usize>| fid_index.map_or("", |g| functions.get(g).name.as_str());
    // Incoming counts, for the rule that keeps blocks with counted edges.
    let mut incoming = vec![0u64; cfg.blocks.len()];
    for (b, block) in cfg.blocks.iter().enumerate() {
        for (k, &s) in block.successors.iter().enumerate() {
            incoming[s] = incoming[s].wrapping_add(c.block_edges(b)[k].0);
        }
    }
    for &b in &order {
        let block = &cfg.blocks[b];
        let mut out = yaml::Block {
            bid: index[b],
            insns: c.block_insns(b).len() as u32,
            hash: hashes.as_ref().map_or(0, |h| h.blocks[b]),
            exec: c.exec[b],
            ..yaml::Block::default()
        };
        for insn in c.block_insns(b) {
            let offset = (insn.offset - block.offset) as u32;
            match insn.kind {
                Kind::Indirect => {
                    let Some(targets) = c.indirect.get(&insn.offset) else {
                        continue;
                    };
                    let mut sites: Vec<(&str, yaml::Call)> = targets
                        .iter()
                        .map(|&(g, count, mispreds)| {
                            let g = g.map(|g| g as usize);
                            (
                                name_of(g),
                                yaml::Call {
                                    offset,
                                    fid: g.map_or(0, |g| numbers[g]),
                                    disc: 0,
                                    count,
                                    mispreds,
                                },
                            )
                        })
                        .collect();
                    sites.sort_by(|a, b| a.0.cmp(b.0));
                    out.calls.extend(sites.into_iter().map(|s| s.1));
                }
                Kind::Call(target) | Kind::CondTailCall(target) => {
                    let (count, mispreds) =
                        c.call_counts.get(&insn.offset).copied().unwrap_or_default();
                    let mispreds = if matches!(insn.kind, Kind::CondTailCall(_)) {
                        mispreds
                    } else {
                        0
                    };
                    if count != 0 {
                        let (fid, disc) = fid_at(target);
                        out.calls.push(yaml::Call {
                            offset,
                            fid,
                            disc,
                            count,
                            mispreds,
                        });
                    }
                }
                _ => {}
            }
        }
        let outgoing = c
            .block_edges(b)
            .iter()
            .fold(0u64, |a, e| a.wrapping_add(e.0));
        // `convert` writes every entry point, secondary ones too.
        let keep = !out.calls.is_empty()
            || b == 0
            || secondary.binary_search(&block.offset).is_ok()
            || (block.is_landing_pad && c.exec[b] != 0)
            || outgoing != 0
            || incoming[b] != 0;
        if !keep {
            continue;
        }
        out.succ = block
            .successors
            .iter()
            .zip(c.block_edges(b))
            .map(|(&s, &(count, mispreds))| yaml::Succ {
                bid: index[s],
                count,
                mispreds,
            })
            .collect();
        record.blocks.push(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bolt::{symbolize_keeping, Dialect};
    use crate::io::progress::NoProgress;
    use crate::perf::{aggregate, BinaryInfo, Input, KernelEntries, Request, Rules, TraceOrder};

    /// The YAML written from the fdata path's CFGs ([`write_reusing`]) equals the one written
    /// from a fresh disassembly of the profiled functions, in layout and DFS order; and the
    /// CFGs are indeed reused there (the touched functions cover the profiled ones).
    #[test]
    fn reusing_the_fdata_paths_cfgs_writes_what_a_fresh_disassembly_writes() {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("app");
        std::fs::copy(
            testsupport::shared_perf("autofdo-jump_table_test.binary"),
            &binary,
        )
        .unwrap();
        let capture = dir.path().join("perf.data");
        let spec = corpus::LbrCaptureSpec {
            binaries: vec![corpus::LbrBinary {
                path: binary.clone(),
                load_base: None,
            }],
            processes: 1,
            target_bytes: 256 << 10,
            lbr_depth: 16,
            distinct_stacks: 500,
            kernel_fraction_percent: 0,
            compress: false,
            attr_size: corpus::ATTR_SIZE,
            seed: 7,
            mem_loads: None,
        };
        corpus::write_lbr_capture(&spec, &mut std::fs::File::create(&capture).unwrap()).unwrap();
        let request = Request {
            binaries: vec![BinaryInfo::load(&binary).unwrap()],
            discover: None,
            skylake_fix: true,
            kernel_entries: KernelEntries::Skip,
            basic: false,
            pid: None,
            ignore_build_id: false,
            rules: Rules::Current,
            threads: 2,
            stream: false,
            trace_order: TraceOrder::ByStart,
        };
        let result = aggregate(&Input::File(capture), &request, &NoProgress).unwrap();
        let profile = &result.profiles[0];
        let data = std::fs::read(&binary).unwrap();
        let functions = Functions::from_elf_with(&binary, &data, false).unwrap();
        for use_dfs in [false, true] {
            let options = Options {
                binary_name: "app".into(),
                build_id: None,
                use_dfs,
            };
            let mut fdata =
                symbolize_keeping(profile, &functions, false, None, Dialect::Llvm22, true);
            let touched = fdata.take_touched().expect("kept");
            let lines = file_lines(&fdata);
            assert!(lines.len() > 5, "{} functions profiled", lines.len());
            assert!(lines
                .keys()
                .all(|i| touched.indices.binary_search(i).is_ok()));
            let mut fresh = Vec::new();
            write_profile(
                &mut fresh,
                &profile_with_intra(&fdata, None, &data, &options),
            )
            .unwrap();
            let mut reused = Vec::new();
            write_reusing(
                &mut reused,
                &mut fdata,
                Some(touched),
                None,
                &data,
                &options,
            )
            .unwrap();
            let text = String::from_utf8(reused).unwrap();
            assert!(text.contains("succ:"), "{text}");
            assert_eq!(text, String::from_utf8(fresh).unwrap(), "use_dfs {use_dfs}");
        }
    }
}
