//! perf.data → per-binary branch traces and IP sample counts.

use std::sync::Arc;

use hashbrown::HashMap;

use formats::bolt::preagg::BR_ONLY;
use formats::perf::Sample;

use crate::error::{Error, Result};
use crate::io::progress::Progress;
use crate::perf::binary::BinaryInfo;
use crate::perf::capture::{self, Input, SideBand, Sink};
use crate::perf::discover;
use crate::perf::mapping::{binary_maps, BinaryMaps, ProcessMap, Rules};
pub use crate::perf::table::TraceOrder;
use crate::perf::table::{merge_into, Counts, IpKey, Locate, StackBatch, TraceKey, TraceTable};

/// perf2bolt's `--ignore-interrupt-lbr` (on by default): entries touching the kernel are dropped
/// before traces are chained, so their neighbours become adjacent.
pub const KERNEL_BASE: u64 = 0xffff_8000_0000_0000;

/// What the decoder saw in the whole capture, over every process and binary (the figures
/// perf2bolt reports; `profmill aggregate` prints them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleStats {
    /// SAMPLE records decoded.
    pub samples: u64,
    /// Samples with a non-empty branch stack.
    pub samples_with_branches: u64,
    /// LBR entries in those stacks.
    pub branch_entries: u64,
    /// Entries dropped because an end is in the kernel (at or above [`KERNEL_BASE`]).
    pub kernel_entries: u64,
    /// Samples with exactly 32 entries outside the kernel (what turns on perf2bolt's Skylake
    /// workaround for a BOLTed binary, see [`Request::skylake_fix`]).
    pub full_stacks: u64,
}

impl SampleStats {
    fn add(&mut self, o: SampleStats) {
        self.samples += o.samples;
        self.samples_with_branches += o.samples_with_branches;
        self.branch_entries += o.branch_entries;
        self.kernel_entries += o.kernel_entries;
        self.full_stacks += o.full_stacks;
    }
}

/// One binary's table, keyed by locations in the binary's own addresses.
#[derive(Default)]
pub(crate) struct BinaryTable {
    traces: TraceTable,
    ips: HashMap<u64, u64>,
    events: std::collections::BTreeSet<u32>,
    samples: u64,
    pids: hashbrown::HashSet<u32>,
    last_pid: Option<u32>,
}

impl BinaryTable {
    /// A table whose trace table starts sized for `traces` traces, within `max_bytes`.
    fn for_binary(binary: &BinaryInfo, traces: usize, max_bytes: usize) -> BinaryTable {
        let (start, end) = binary.span();
        BinaryTable {
            traces: TraceTable::for_span_sized(start, end, traces, max_bytes),
            ..Default::default()
        }
    }

    #[inline]
    fn note_pid(&mut self, pid: u32) {
        if self.last_pid != Some(pid) {
            self.pids.insert(pid);
            self.last_pid = Some(pid);
        }
    }

    fn merge(&mut self, other: BinaryTable) {
        self.traces.merge(other.traces);
        merge_into(&mut self.ips, other.ips, |a, b| *a += b);
        self.events.extend(other.events);
        self.samples += other.samples;
        self.pids.extend(other.pids);
    }
}

/// Every binary's mapping in every process, known before decoding starts (file-mode captures).
pub(crate) struct Resolver {
    binaries: Vec<BinaryInfo>,
    maps: Vec<BinaryMaps>,
    /// pid → (binary index, placement) for every binary the process maps.
    by_pid: HashMap<u32, Vec<(usize, Placement)>>,
}

impl Resolver {
    fn new(binaries: &[BinaryInfo], maps: Vec<BinaryMaps>) -> Resolver {
        let mut by_pid: HashMap<u32, Vec<(usize, Placement)>> = HashMap::new();
        for (i, m) in maps.iter().enumerate() {
            for (&pid, &pm) in &m.by_pid {
                let placement = Placement::new(&binaries[i], m, pm);
                by_pid.entry(pid).or_default().push((i, placement));
            }
        }
        Resolver {
            binaries: binaries.to_vec(),
            maps,
            by_pid,
        }
    }
}

/// One thread's tables: pid-keyed raw tables while streaming, per-binary tables once the
/// mappings are known.
///
/// Public as a ready-made [`Sink`] for [`capture::read_capture`]: `Tables::default()` counts
/// every sample's branch stack by process (what [`aggregate`] does before the mappings are
/// known), which is enough to walk a whole capture, e.g. to validate it. Its contents are
/// internal; use [`aggregate`] for profiles.
#[derive(Default)]
pub struct Tables {
    traces: HashMap<TraceKey, Counts>,
    ips: HashMap<IpKey, u64>,
    resolver: Option<Arc<Resolver>>,
    per_binary: Vec<BinaryTable>,
    stats: SampleStats,
    basic: bool,
    /// Apply perf2bolt's Skylake workaround to the binaries that have translation tables (and,
    /// before the binaries are known, to every stack).
    skylake_fix: bool,
    /// See [`Request::kernel_entries`]. Once the side band is known, [`KernelEntries::Quipper`]
    /// is [`KernelEntries::Keep`] when the capture maps the kernel and means "the stack ends
    /// before its first kernel entry" otherwise.
    kernel_entries: KernelEntries,
    /// Memory samples (raw pid, pc and data address) of the events `mem_events` flags
    /// (all events when their names are not known yet).
    mem: HashMap<MemKey, u64>,
    mem_events: Option<Arc<Vec<bool>>>,
    /// The decode loop's batch of traces for the table they go to.
    batch: StackBatch,
}

/// A memory sample as `perf script -F pid,event,addr,ip` prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct MemKey {
    event: u32,
    pid: u32,
    pc: u64,
    addr: u64,
}

/// A Skylake LBR's depth: perf2bolt's workaround starts at the first sample of this many
/// entries (after the kernel's are dropped).
const FULL_STACK: usize = 32;
/// Entries perf2bolt's Skylake workaround drops from each sample (the newest).
const SKYLAKE_DROPPED: u32 = 2;

/// perf2bolt reads memory samples of the events whose name contains this.
const MEM_EVENT_MARK: &str = "mem-loads";

impl Sink for Tables {
    #[inline]
    fn sample(&mut self, event: usize, s: &Sample<'_>) {
        self.stats.samples += 1;
        // Address 0 can never name a data object, so samples without one are not kept.
        if s.addr != 0
            && self
                .mem_events
                .as_ref()
                .is_none_or(|m| m.get(event).copied().unwrap_or(false))
        {
            let key = MemKey {
                event: event as u32,
                pid: s.pid,
                pc: s.ip,
                addr: s.addr,
            };
            *self.mem.entry(key).or_insert(0) += 1;
        }
        // Taken out and put back rather than cloned: no atomic reference counting per sample.
        if let Some(resolver) = self.resolver.take() {
            self.resolved_sample(&resolver, event, s);
            self.resolver = Some(resolver);
            return;
        }
        if self.basic {
            *self
                .ips
                .entry(IpKey {
                    event: event as u32,
                    pid: s.pid,
                    ip: s.ip,
                })
                .or_insert(0) += 1;
            return;
        }
        let Some(stack) = self.count_stack(s, true) else {
            return;
        };
        let mut next_source = BR_ONLY;
        let mut kept = 0;
        for e in stack.iter() {
            if is_kernel(&e) {
                continue;
            }
            kept += 1;
            if self.skylake_fix && kept <= SKYLAKE_DROPPED {
                continue;
            }
            let key = TraceKey {
                pid: s.pid,
                branch: e.from,
                from: e.to,
                to: next_source,
            };
            let c = self.traces.entry(key).or_default();
            c.taken += 1;
            c.mispred += e.flags.mispred() as u64;
            next_source = e.from;
        }
    }
}

impl Tables {
    /// Counts a sample's branch stack in the statistics; `None` if it has none. Its kernel
    /// entries are counted here only with `count_kernel` (the decode loop counts them itself).
    #[inline]
    fn count_stack<'a>(
        &mut self,
        s: &Sample<'a>,
        count_kernel: bool,
    ) -> Option<formats::perf::BranchStack<'a>> {
        let stack = s.branch_stack.filter(|b| !b.is_empty())?;
        self.stats.samples_with_branches += 1;
        self.stats.branch_entries += stack.len() as u64;
        if count_kernel {
            let kernel = stack.iter().filter(is_kernel).count();
            self.stats.kernel_entries += kernel as u64;
            self.stats.full_stacks += u64::from(stack.len() - kernel == FULL_STACK);
        }
        Some(stack)
    }

    /// Places a sample in every binary its process maps, at perf2bolt's addresses.
    #[inline]
    fn resolved_sample(&mut self, r: &Resolver, event: usize, s: &Sample<'_>) {
        let Some(mapped) = r.by_pid.get(&s.pid) else {
            let _ = self.count_stack(s, true);
            return;
        };
        if self.basic {
            for &(b, place) in mapped {
                let table = &mut self.per_binary[b];
                table.note_pid(s.pid);
                table.events.insert(event as u32);
                table.samples += 1;
                let a = place.locate(&r.binaries[b], &r.maps[b], s.ip).0;
                if a != 0 && a != BR_ONLY {
                    *table.ips.entry(a).or_insert(0) += 1;
                }
            }
            return;
        }
        let Some(stack) = self.count_stack(s, false) else {
            return;
        };
        let mut kernel_entries = 0;
        for (i, &(b, place)) in mapped.iter().enumerate() {
            let table = &mut self.per_binary[b];
            table.note_pid(s.pid);
            let binary = &r.binaries[b];
            let at = PlacedIn {
                place,
                binary,
                maps: &r.maps[b],
            };
            let kernel = if self.skylake_fix && binary.has_bat {
                // perf2bolt's Skylake workaround: the two newest entries are dropped.
                let (kernel, kept) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
                let skip = |e: &formats::perf::BranchEntry| {
                    if is_kernel(e) {
                        kernel.set(kernel.get() + 1);
                        return true;
                    }
                    kept.set(kept.get() + 1);
                    kept.get() <= SKYLAKE_DROPPED
                };
                table.traces.add_stack(&stack, skip, &at, &mut self.batch);
                kernel.get()
            } else if self.kernel_entries == KernelEntries::Keep {
                table
                    .traces
                    .add_stack(&stack, |_| false, &at, &mut self.batch);
                stack.iter().filter(is_kernel).count() as u64
            } else if self.kernel_entries == KernelEntries::OutsideSkipped {
                let outside =
                    |e: &formats::perf::BranchEntry| !at.locate(e.from).1 && !at.locate(e.to).1;
                table
                    .traces
                    .add_stack(&stack, outside, &at, &mut self.batch);
                stack.iter().filter(is_kernel).count() as u64
            } else if self.kernel_entries == KernelEntries::Quipper {
                let kept = stack.iter().take_while(|e| !is_kernel(e)).count();
                let newest = formats::perf::BranchStack {
                    entries: formats::bytes::Bytes {
                        data: &stack.entries.data[..kept * formats::perf::BranchEntry::SIZE],
                        endian: stack.entries.endian,
                    },
                    hw_index: stack.hw_index,
                };
                table
                    .traces
                    .add_stack(&newest, |_| false, &at, &mut self.batch);
                stack.iter().filter(is_kernel).count() as u64
            } else {
                table
                    .traces
                    .add_stack(&stack, is_kernel, &at, &mut self.batch)
            };
            if i == 0 {
                kernel_entries = kernel;
            }
        }
        self.stats.kernel_entries += kernel_entries;
        self.stats.full_stacks +=
            u64::from(stack.len() as u64 - kernel_entries == FULL_STACK as u64);
    }

    fn merge(mut all: Vec<Tables>) -> Tables {
        all.sort_by_key(|t| {
            std::cmp::Reverse(
                t.traces.len()
                    + t.ips.len()
                    + t.per_binary.iter().map(|b| b.traces.len()).sum::<usize>(),
            )
        });
        let mut iter = all.into_iter();
        let mut total = iter.next().unwrap_or_default();
        for t in iter {
            merge_into(&mut total.traces, t.traces, |a, b| a.add(b));
            merge_into(&mut total.ips, t.ips, |a, b| *a += b);
            for (into, from) in total.per_binary.iter_mut().zip(t.per_binary) {
                into.merge(from);
            }
            merge_into(&mut total.mem, t.mem, |a, b| *a += b);
            total.stats.add(t.stats);
        }
        total
    }
}

/// perf2bolt's `--ignore-interrupt-lbr` test.
#[inline(always)]
pub(crate) fn is_kernel(e: &formats::perf::BranchEntry) -> bool {
    e.from >= KERNEL_BASE || e.to >= KERNEL_BASE
}

/// What to aggregate: which binaries to build profiles for, and how.
#[derive(Clone, Debug)]
pub struct Request {
    /// The binaries to profile; [`Aggregation::profiles`] has one profile per binary, in this
    /// order. Each is matched to the capture's mmap events by build-id, else by file name.
    pub binaries: Vec<BinaryInfo>,
    /// `Some`: ignore [`Request::binaries`] and profile every file the capture maps executable
    /// (kernel excluded), without its ELF, in its file-offset space (see
    /// [`store`](crate::perf::store)); only those that an entry names (full path, file name, or
    /// build-id of at least 8 hex digits) when the list is not empty. Processes excluded by
    /// [`Request::pid`] do not count.
    pub discover: Option<Vec<String>>,
    /// Count IP samples instead of branch stacks (forced when the capture has no branch stacks).
    pub basic: bool,
    /// Only samples of this process (perf2bolt's `--pid`); `None` for every process.
    pub pid: Option<u32>,
    /// Match binaries by file name even when the capture records a different build-id
    /// (perf2bolt's `--ignore-build-id`).
    pub ignore_build_id: bool,
    /// Which LLVM release's rules map runtime addresses to the binary's addresses.
    pub rules: Rules,
    /// Decoding threads (at least 1 is used).
    pub threads: usize,
    /// See [`capture::ReadOptions::stream`].
    pub stream: bool,
    /// How [`BinaryProfile::traces`] is sorted.
    pub trace_order: TraceOrder,
    /// perf2bolt's Skylake workaround for BOLTed binaries (those with translation tables):
    /// when a sample has exactly 32 entries outside the kernel, perf2bolt drops the two newest
    /// entries of that and every later sample (Skylake's LBR sometimes repeats its last entry,
    /// and BAT mode cannot tell). We drop them from every sample of a capture that has such a
    /// sample (a capture without one is read again without the workaround); perf2bolt starts
    /// at the first one, which differs only when samples of fewer entries come first.
    pub skylake_fix: bool,
    /// What a branch entry of the kernel does to the chain of a sample's traces.
    pub kernel_entries: KernelEntries,
}

/// What a branch entry with a kernel address does to the chain of a sample's traces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KernelEntries {
    /// Left out, its neighbours paired (perf2bolt's `--ignore-interrupt-lbr`).
    #[default]
    Skip,
    /// Kept in the chain as addresses outside the binary (0): no trace pairs a user entry
    /// with the next user entry across it.
    Keep,
    /// As `create_llvm_prof`'s reader (quipper) does: [`KernelEntries::Keep`] when the capture
    /// maps the kernel (an MMAP of pid −1), else the sample's stack ends before its first
    /// kernel entry (quipper stops mapping a branch stack at the first address no mmap
    /// covers, and the older entries stay unmapped).
    Quipper,
    /// As `llvm-profgen` does: an entry with neither end in the binary (the kernel's, another
    /// DSO's) is left out and its neighbours paired; an entry with one end in the binary stays
    /// in the chain, its other end as an address outside the binary (0).
    OutsideSkipped,
}

/// One binary's profile, in the binary's own addresses.
#[derive(Clone, Debug, Default)]
pub struct BinaryProfile {
    /// (branch, ft_start, ft_end) → counts; 0 marks an address outside the binary.
    pub traces: Vec<((u64, u64, u64), Counts)>,
    /// Event names (as `perf script` prints them, with the trailing colon) and address counts.
    pub events: Vec<String>,
    /// IP samples (basic profiles only): (address in the binary, samples), sorted by address.
    pub ips: Vec<(u64, u64)>,
    /// Branch addresses known to be returns (pre-aggregated `R` records).
    pub returns: Vec<u64>,
    /// Memory samples as perf2bolt sees them, sorted.
    pub mem: Vec<MemSample>,
    /// Samples that fell in this binary.
    pub samples: u64,
    /// Distinct processes whose samples fell in this binary.
    pub pids: usize,
}

/// A memory sample as perf2bolt reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MemSample {
    /// The instruction's address as recorded (perf2bolt does not adjust it).
    pub pc: u64,
    /// The data address, adjusted like a branch address.
    pub addr: u64,
    /// Whether the data address lay in the process's mapping of the binary (adjusted, or for
    /// a fixed-address binary, in one of its segments): then it is one of the binary's
    /// addresses, which the profile store keeps as a file offset.
    pub in_binary: bool,
    /// Samples.
    pub count: u64,
}

/// The whole result of [`aggregate`].
pub struct Aggregation {
    /// The capture's side-band records (mmaps, tasks, event attributes, header features).
    pub side: SideBand,
    /// Decoder statistics over the whole capture.
    pub stats: SampleStats,
    /// Whether the profiles count IP samples (requested, or forced by a capture without
    /// branch stacks) rather than traces.
    pub basic: bool,
    /// The binaries profiled: [`Request::binaries`], or those found with
    /// [`Request::discover`].
    pub binaries: Vec<BinaryInfo>,
    /// One profile per [`Aggregation::binaries`] entry, in the same order.
    pub profiles: Vec<BinaryProfile>,
}

/// Reads the capture once and builds a profile for every requested binary.
///
/// The capture is decoded by `req.threads` threads; each sample's addresses are mapped to
/// every requested binary its process maps (perf2bolt's rules, [`Request::rules`]). `progress`
/// hears of bytes read. Fails if the capture cannot be read or a binary is not mapped by it.
pub fn aggregate(input: &Input, req: &Request, progress: &dyn Progress) -> Result<Aggregation> {
    let options = capture::ReadOptions {
        threads: req.threads,
        stream: req.stream,
        ..Default::default()
    };
    let resolver = std::sync::OnceLock::new();
    // Before the binaries are known (a stream), stacks are counted once for all of them.
    let skylake_for_all =
        req.skylake_fix && !req.binaries.is_empty() && req.binaries.iter().all(|b| b.has_bat);
    let make_sink = |side: Option<&SideBand>| {
        let Some(side) = side else {
            return Tables {
                basic: req.basic,
                skylake_fix: skylake_for_all,
                kernel_entries: req.kernel_entries,
                ..Default::default()
            };
        };
        let basic = req.basic || !has_branch_stacks(side);
        let mem_events = Some(Arc::new(mem_events(side)));
        match resolver.get_or_init(|| build_resolver(req, side).ok().map(Arc::new)) {
            Some(r) => Tables {
                basic,
                mem_events,
                skylake_fix: req.skylake_fix,
                kernel_entries: match req.kernel_entries {
                    KernelEntries::Quipper if side.mmaps.iter().any(|m| m.pid == u32::MAX) => {
                        KernelEntries::Keep
                    }
                    k => k,
                },
                per_binary: presized_tables(&r.binaries, req.threads, side, basic),
                resolver: Some(r.clone()),
                ..Default::default()
            },
            None => Tables {
                basic,
                mem_events,
                skylake_fix: skylake_for_all,
                kernel_entries: req.kernel_entries,
                ..Default::default()
            },
        }
    };
    let (side, tables) = capture::read_capture(input, options, make_sink, progress)?;
    let mut tables = Tables::merge(tables);
    let fixed = req.skylake_fix && req.binaries.iter().any(|b| b.has_bat);
    if fixed && tables.stats.full_stacks == 0 && !input.is_stream() {
        // No sample would have turned the workaround on: read the capture again without it.
        let again = Request {
            skylake_fix: false,
            ..req.clone()
        };
        return aggregate(input, &again, progress);
    }
    let basic = req.basic || !has_branch_stacks(&side);
    if basic && !tables.basic {
        if input.is_stream() {
            return Err(Error::Mismatch(
                "the capture on stdin has no branch stacks and cannot be read twice: pass --basic"
                    .into(),
            ));
        }
        // A stream without branch stacks: read it again counting IPs.
        let (_, t) = capture::read_capture(
            input,
            options,
            |_| Tables {
                basic: true,
                ..Default::default()
            },
            progress,
        )?;
        tables = Tables::merge(t);
    }
    let (binaries, all_maps) = match resolver.get() {
        Some(Some(r)) => (r.binaries.clone(), r.maps.clone()),
        _ => binaries_and_maps(req, &side)?,
    };
    let mut profiles = Vec::new();
    for (i, (binary, maps)) in binaries.iter().zip(&all_maps).enumerate() {
        check_mapped(binary, maps, req, &side)?;
        let table = match tables.per_binary.get_mut(i) {
            Some(table) => std::mem::take(table),
            None => place_raw(&tables, binary, maps),
        };
        let mut profile = finish(table, &side, basic, req.trace_order);
        profile.mem = place_mem(&tables.mem, &side, binary, maps);
        profiles.push(profile);
    }
    Ok(Aggregation {
        side,
        stats: tables.stats,
        basic,
        binaries,
        profiles,
    })
}

/// The most memory one thread's trace tables start with, shared among the binaries. 64 MiB
/// (4 Mi packed slots) keeps a million-trace table under a third full, where probes rarely
/// leave their home slot: with 32 MiB (about 60 % full) the 2 GB benchmark capture ran 3.5 %
/// slower and the 6.3 GB one 7 %, for 64 MB less peak memory.
const PRESIZED_BYTES: usize = 64 << 20;

/// One thread's tables, each starting at the size the thread's share of the capture could fill
/// if every branch entry were a distinct trace, but within [`PRESIZED_BYTES`] for all binaries
/// together: a bound on what a table can need, so memory still follows the distinct traces
/// once the capture is large and no table starts larger than its input could make it.
///
/// When counting IP samples, no trace table is filled: the tables start at the default size.
fn presized_tables(
    binaries: &[BinaryInfo],
    threads: usize,
    side: &SideBand,
    basic: bool,
) -> Vec<BinaryTable> {
    let share = side.bytes as usize / threads.max(1);
    let entries = if basic {
        0
    } else {
        share / formats::perf::BranchEntry::SIZE
    };
    let max_bytes = PRESIZED_BYTES / binaries.len().max(1);
    let table = |b| BinaryTable::for_binary(b, entries, max_bytes);
    binaries.iter().map(table).collect()
}

/// Which events perf2bolt reads memory samples from.
fn mem_events(side: &SideBand) -> Vec<bool> {
    (0..side.events.attrs.len())
        .map(|e| event_name(side, e).contains(MEM_EVENT_MARK))
        .collect()
}

/// One binary's memory samples. perf2bolt's `perf script -F pid,event,addr,ip` job fails (and
/// perf2bolt then reads no memory samples) unless every event records ADDR. The data address
/// is adjusted like a branch address; the PC is kept as recorded (perf2bolt does not adjust
/// it, so a relocatable binary's PCs rarely land in a function).
fn place_mem(
    mem: &HashMap<MemKey, u64>,
    side: &SideBand,
    binary: &BinaryInfo,
    maps: &BinaryMaps,
) -> Vec<MemSample> {
    let all_have_addr = side
        .events
        .layouts
        .iter()
        .all(|l| l.sample_type & formats::perf::attr::sample_type::ADDR != 0);
    if !all_have_addr {
        return Vec::new();
    }
    let is_mem = mem_events(side);
    let mut placed: HashMap<(u64, u64, bool), u64> = HashMap::new();
    for (k, &n) in mem {
        if !is_mem.get(k.event as usize).copied().unwrap_or(false) {
            continue;
        }
        let Some(map) = maps.by_pid.get(&k.pid) else {
            continue;
        };
        let addr = map.adjust(k.addr, maps.fixed_load_address);
        let in_binary = if maps.fixed_load_address {
            binary.contains(addr)
        } else {
            map.in_mapping(k.addr)
        };
        *placed.entry((k.pc, addr, in_binary)).or_insert(0) += n;
    }
    let mut out: Vec<_> = placed
        .into_iter()
        .map(|((pc, addr, in_binary), count)| MemSample {
            pc,
            addr,
            in_binary,
            count,
        })
        .collect();
    out.sort_unstable();
    out
}

fn has_branch_stacks(side: &SideBand) -> bool {
    side.events
        .layouts
        .iter()
        .any(|l| l.sample_type & formats::perf::attr::sample_type::BRANCH_STACK != 0)
}

fn maps_for(req: &Request, side: &SideBand, binary: &BinaryInfo) -> Result<BinaryMaps> {
    let name = match_name(binary, side, req.ignore_build_id)?;
    let mut maps = binary_maps(binary, side, &name, req.rules);
    if let Some(pid) = req.pid {
        maps.by_pid.retain(|&p, _| p == pid);
    }
    Ok(maps)
}

fn build_resolver(req: &Request, side: &SideBand) -> Result<Resolver> {
    let (binaries, maps) = binaries_and_maps(req, side)?;
    Ok(Resolver::new(&binaries, maps))
}

/// The binaries to profile and their mappings: the requested ones, or those the capture maps
/// (when discovering, those that no process left after [`Request::pid`] maps are dropped).
fn binaries_and_maps(req: &Request, side: &SideBand) -> Result<(Vec<BinaryInfo>, Vec<BinaryMaps>)> {
    let Some(only) = &req.discover else {
        let maps = req
            .binaries
            .iter()
            .map(|b| maps_for(req, side, b))
            .collect::<Result<Vec<_>>>()?;
        return Ok((req.binaries.clone(), maps));
    };
    let mut binaries = Vec::new();
    let mut all_maps = Vec::new();
    for binary in discover::mapped_binaries(side, only)? {
        let maps = maps_for(req, side, &binary)?;
        if !maps.by_pid.is_empty() {
            binaries.push(binary);
            all_maps.push(maps);
        }
    }
    Ok((binaries, all_maps))
}

fn check_mapped(
    binary: &BinaryInfo,
    maps: &BinaryMaps,
    req: &Request,
    side: &SideBand,
) -> Result<()> {
    if !maps.by_pid.is_empty() {
        return Ok(());
    }
    // (With a pid filter the ignored mappings may be other processes': the general message.)
    if maps.ignored_mappings > 0 && req.pid.is_none() {
        return Err(Error::Mismatch(format!(
            "{}: the capture maps {:?} {} time(s), never at an address and file offset that fit its segments (is it the binary that was profiled?)",
            binary.path.display(),
            String::from_utf8_lossy(&binary.file_name),
            maps.ignored_mappings
        )));
    }
    if let Some(pid) = req.pid {
        // Mapped, but by other processes: the pid is what is wrong, not the name.
        let mut pids: Vec<u32> = side
            .mmaps
            .iter()
            .filter(|m| {
                crate::perf::mapping::mapped_file_name(&m.filename) == Some(&binary.file_name[..])
            })
            .map(|m| m.pid)
            .collect();
        pids.sort_unstable();
        pids.dedup();
        if !pids.is_empty() {
            let listed: Vec<String> = pids.iter().take(20).map(u32::to_string).collect();
            let more = if pids.len() > 20 { ", …" } else { "" };
            return Err(Error::Mismatch(format!(
                "{}: no process with pid {pid} maps {:?}; the processes that map it: {}{more} (check --pid)",
                binary.path.display(),
                String::from_utf8_lossy(&binary.file_name),
                listed.join(", ")
            )));
        }
    }
    let mapped = discover::mapped_binaries(side, &[]).unwrap_or_default();
    Err(Error::Mismatch(format!(
        "{}: no process in the capture maps a file named {:?}{} (it maps: {}); rename the binary to the mapped name, or pass --ignore-build-id if only its build-id differs",
        binary.path.display(),
        String::from_utf8_lossy(&binary.file_name),
        req.pid
            .map(|p| format!(" (with pid {p})"))
            .unwrap_or_default(),
        discover::describe(&mapped)
    )))
}

/// Sorts a resolved table into a profile.
fn finish(table: BinaryTable, side: &SideBand, basic: bool, order: TraceOrder) -> BinaryProfile {
    let pids = table.pids.len();
    if basic {
        let mut ips: Vec<_> = table.ips.into_iter().collect();
        ips.sort_unstable();
        let events = table
            .events
            .iter()
            .map(|&e| format!("{}:", event_name(side, e as usize)))
            .collect();
        return BinaryProfile {
            ips,
            events,
            samples: table.samples,
            pids,
            ..Default::default()
        };
    }
    let traces = table.traces.into_sorted(order);
    BinaryProfile {
        traces,
        pids,
        ..Default::default()
    }
}

/// Checks the binary's build-id against the capture's and returns the file name to match mmaps
/// with (perf2bolt uses the capture's name for a build-id match under another name).
fn match_name(binary: &BinaryInfo, side: &SideBand, ignore: bool) -> Result<Vec<u8>> {
    if binary.mapped_path.is_some() {
        // Found in the capture's own mappings: nothing to check.
        return Ok(binary.file_name.clone());
    }
    let Some(id) = binary.build_id.as_deref().filter(|id| !id.is_empty()) else {
        return Ok(binary.file_name.clone());
    };
    let ids = &side.features.build_ids;
    if ids.is_empty() {
        return Ok(binary.file_name.clone());
    }
    if let Some(entry) = ids
        .iter()
        .find(|e| !e.build_id.is_empty() && e.build_id.starts_with(id))
    {
        let name = entry
            .filename
            .rsplit(|&b| b == b'/')
            .next()
            .unwrap_or(&entry.filename);
        return Ok(name.to_vec());
    }
    if ignore {
        return Ok(binary.file_name.clone());
    }
    Err(Error::Mismatch(format!(
        "{}: build-id {} is not in the capture (it lists {}); use --ignore-build-id to aggregate anyway",
        binary.path.display(),
        crate::perf::binary::hex(id),
        ids.iter().map(|e| format!("{} {}", crate::perf::binary::hex(&e.build_id), String::from_utf8_lossy(&e.filename))).collect::<Vec<_>>().join(", ")
    )))
}

/// A runtime address as a location in the pre-aggregated profile, and whether it lies in the
/// binary: perf2bolt's adjusted address when it can lie in the binary (or is the all-ones
/// marker), 0 ("external") otherwise.
#[inline(always)]
fn location(binary: &BinaryInfo, maps: &BinaryMaps, map: &ProcessMap, addr: u64) -> (u64, bool) {
    if addr == BR_ONLY {
        return (BR_ONLY, false);
    }
    let a = map.adjust(addr, maps.fixed_load_address);
    if binary.contains(a) {
        (a, true)
    } else if a == BR_ONLY {
        (a, false)
    } else {
        (0, false)
    }
}

/// [`location`] for one process and binary, with a shortcut: the runtime addresses of the
/// binary's largest segment (its code, in practice), where most branch addresses are, map by
/// one subtraction.
#[derive(Clone, Copy, Debug)]
struct Placement {
    map: ProcessMap,
    window_start: u64,
    window_len: u64,
    delta: u64,
}

impl Placement {
    fn new(binary: &BinaryInfo, maps: &BinaryMaps, map: ProcessMap) -> Placement {
        let delta = if maps.fixed_load_address {
            0
        } else {
            map.base_address
        };
        let largest = binary.segments.iter().max_by_key(|s| s.size);
        let window = largest.and_then(|s| {
            let start = s.address.checked_add(delta)?;
            let end = start.checked_add(s.size)?;
            if maps.fixed_load_address {
                return Some((start, end));
            }
            // Inside the mapping, where perf2bolt's adjustment is the subtraction.
            let mapped_end = map.mmap_address.checked_add(map.size)?;
            Some((start.max(map.mmap_address), end.min(mapped_end)))
        });
        let (window_start, window_end) = window
            .filter(|&(start, end)| start < end && end < BR_ONLY)
            .unwrap_or((0, 0));
        Placement {
            map,
            window_start,
            window_len: window_end - window_start,
            delta,
        }
    }

    #[inline(always)]
    fn locate(&self, binary: &BinaryInfo, maps: &BinaryMaps, addr: u64) -> (u64, bool) {
        if addr.wrapping_sub(self.window_start) < self.window_len {
            (addr - self.delta, true)
        } else {
            location(binary, maps, &self.map, addr)
        }
    }
}

/// A process's placement in one binary, as the decode loop asks for it.
struct PlacedIn<'a> {
    place: Placement,
    binary: &'a BinaryInfo,
    maps: &'a BinaryMaps,
}

impl Locate for PlacedIn<'_> {
    #[inline(always)]
    fn window(&self) -> (u64, u64, u64) {
        let p = &self.place;
        (p.window_start, p.window_len, p.delta)
    }

    #[inline(always)]
    fn locate(&self, address: u64) -> (u64, bool) {
        location(self.binary, self.maps, &self.place.map, address)
    }
}

/// Places the pid-keyed tables of a streamed capture in one binary, exactly as the decode loop
/// does for indexed captures.
fn place_raw(tables: &Tables, binary: &BinaryInfo, maps: &BinaryMaps) -> BinaryTable {
    let mut table = BinaryTable::for_binary(binary, 0, 0);
    for (k, c) in &tables.traces {
        let Some(map) = maps.by_pid.get(&k.pid) else {
            continue;
        };
        table.note_pid(k.pid);
        let (branch, in0) = location(binary, maps, map, k.branch);
        let (from, in1) = location(binary, maps, map, k.from);
        let (to, in2) = location(binary, maps, map, k.to);
        if in0 || in1 || in2 {
            table.traces.add([branch, from, to], c.taken, c.mispred);
        }
    }
    for (k, &n) in &tables.ips {
        let Some(map) = maps.by_pid.get(&k.pid) else {
            continue;
        };
        table.note_pid(k.pid);
        table.events.insert(k.event);
        table.samples += n;
        let a = location(binary, maps, map, k.ip).0;
        if a != 0 && a != BR_ONLY {
            *table.ips.entry(a).or_insert(0) += n;
        }
    }
    table
}

/// The event's name as perf prints it: from EVENT_DESC, else from its type and config.
pub(crate) fn event_name(side: &SideBand, event: usize) -> String {
    let Some(entry) = side.events.attrs.get(event) else {
        return "unknown".into();
    };
    if let Some(name) = &entry.name {
        return name.clone();
    }
    let a = &entry.attr;
    let hw = [
        "cycles",
        "instructions",
        "cache-references",
        "cache-misses",
        "branches",
        "branch-misses",
        "bus-cycles",
        "stalled-cycles-frontend",
        "stalled-cycles-backend",
        "ref-cycles",
    ];
    let sw = [
        "cpu-clock",
        "task-clock",
        "page-faults",
        "context-switches",
        "cpu-migrations",
        "minor-faults",
        "major-faults",
        "alignment-faults",
        "emulation-faults",
        "dummy",
    ];
    let table: &[&str] = match a.type_ {
        0 => &hw,
        1 => &sw,
        _ => &[],
    };
    table
        .get(a.config as usize)
        .map(|s| s.to_string())
        .unwrap_or_else(|| format!("raw 0x{:x}", a.config))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::perf::binary::Segment;
    use proptest::prelude::*;

    fn segment(address: u64, size: u64, executable: bool) -> Segment {
        Segment {
            address,
            size,
            file_offset: address & 0xfff,
            align: 0x1000,
            executable,
        }
    }

    proptest! {
        /// The placement shortcut gives exactly what `location` gives, at and around every
        /// boundary of the segments and the mapping.
        #[test]
        fn placement_equals_location(
            fixed: bool,
            text_size in 1u64..0x10_0000,
            data_gap in 0u64..0x2000,
            mmap_address in 0x5555_0000_0000u64..0x5555_0010_0000,
            size in 1u64..0x20_0000,
            base_address in 0x5554_0000_0000u64..0x5555_0010_0000,
            probes in prop::collection::vec((0usize..8, -4i64..4, any::<u64>()), 1..64),
        ) {
            let text = segment(0x40_1000, text_size, true);
            let data = segment(0x40_1000 + text_size + data_gap, 0x800, false);
            let binary = BinaryInfo::from_segments(Path::new("app"), fixed, vec![text.clone(), data.clone()]);
            let maps = BinaryMaps { fixed_load_address: fixed, ..Default::default() };
            let map = ProcessMap { mmap_address, size, base_address, forked: false };
            let place = Placement::new(&binary, &maps, map);
            let delta = if fixed { 0 } else { base_address };
            let edges = [
                text.address + delta,
                text.address + text.size + delta,
                data.address + delta,
                data.address + data.size + delta,
                mmap_address,
                mmap_address.wrapping_add(size),
                size,
                BR_ONLY,
            ];
            for (edge, offset, random) in probes {
                for addr in [edges[edge].wrapping_add(offset as u64), random] {
                    prop_assert_eq!(place.locate(&binary, &maps, addr), location(&binary, &maps, &map, addr), "{:#x}", addr);
                }
            }
        }
    }
}
