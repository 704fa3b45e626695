//! perf.data → per-binary branch traces and IP sample counts.

use hashbrown::HashMap;

use formats::bolt::preagg::BR_ONLY;
use formats::perf::Sample;

use crate::binary::BinaryInfo;
use crate::capture::{self, Input, SideBand, Sink};
use crate::error::{Error, Result};
use crate::mapping::{binary_maps, BinaryMaps, Rules};
use crate::table::{merge_into, Counts, IpKey, TraceKey};

/// perf2bolt's `--ignore-interrupt-lbr` (on by default): entries touching the kernel are dropped
/// before traces are chained, so their neighbours become adjacent.
pub const KERNEL_BASE: u64 = 0xffff_8000_0000_0000;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleStats {
    pub samples: u64,
    pub samples_with_branches: u64,
    pub branch_entries: u64,
    pub kernel_entries: u64,
}

impl SampleStats {
    fn add(&mut self, o: SampleStats) {
        self.samples += o.samples;
        self.samples_with_branches += o.samples_with_branches;
        self.branch_entries += o.branch_entries;
        self.kernel_entries += o.kernel_entries;
    }
}

/// One thread's tables.
#[derive(Default)]
pub struct Tables {
    pub traces: HashMap<TraceKey, Counts>,
    pub ips: HashMap<IpKey, u64>,
    pub stats: SampleStats,
    pub basic: bool,
}

impl Sink for Tables {
    #[inline]
    fn sample(&mut self, event: usize, s: &Sample<'_>) {
        self.stats.samples += 1;
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
        let Some(stack) = s.branch_stack.filter(|b| !b.is_empty()) else {
            return;
        };
        self.stats.samples_with_branches += 1;
        self.stats.branch_entries += stack.len() as u64;
        let mut next_source = BR_ONLY;
        for e in stack.iter() {
            if e.from >= KERNEL_BASE || e.to >= KERNEL_BASE {
                self.stats.kernel_entries += 1;
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
    fn merge(mut all: Vec<Tables>) -> Tables {
        all.sort_by_key(|t| std::cmp::Reverse(t.traces.len() + t.ips.len()));
        let mut iter = all.into_iter();
        let mut total = iter.next().unwrap_or_default();
        for t in iter {
            merge_into(&mut total.traces, t.traces, |a, b| a.add(b));
            merge_into(&mut total.ips, t.ips, |a, b| *a += b);
            total.stats.add(t.stats);
        }
        total
    }
}

/// What to aggregate.
#[derive(Clone, Debug)]
pub struct Request {
    pub binaries: Vec<BinaryInfo>,
    /// Count IP samples instead of branch stacks (forced when the capture has no branch stacks).
    pub basic: bool,
    pub pid: Option<u32>,
    pub ignore_build_id: bool,
    pub rules: Rules,
    pub threads: usize,
}

/// One binary's profile, in the binary's own addresses.
#[derive(Clone, Debug, Default)]
pub struct BinaryProfile {
    /// (branch, ft_start, ft_end) → counts; 0 marks an address outside the binary.
    pub traces: Vec<((u64, u64, u64), Counts)>,
    /// Event names (as `perf script` prints them, with the trailing colon) and address counts.
    pub events: Vec<String>,
    pub ips: Vec<(u64, u64)>,
    pub samples: u64,
    pub pids: usize,
}

/// The whole result.
pub struct Aggregation {
    pub side: SideBand,
    pub stats: SampleStats,
    pub basic: bool,
    pub profiles: Vec<BinaryProfile>,
}

/// Reads the capture once and builds a profile for every requested binary.
pub fn aggregate(
    input: &Input,
    req: &Request,
    progress: &indicatif::ProgressBar,
) -> Result<Aggregation> {
    let basic_flag = req.basic;
    let (side, tables) = capture::read_capture(
        input,
        capture::ReadOptions {
            threads: req.threads,
            ..Default::default()
        },
        || Tables {
            basic: basic_flag,
            ..Default::default()
        },
        progress,
    )?;
    let has_branch_stacks = side
        .events
        .layouts
        .iter()
        .any(|l| l.sample_type & formats::perf::attr::sample_type::BRANCH_STACK != 0);
    let mut tables = Tables::merge(tables);
    let basic = req.basic || !has_branch_stacks;
    if basic && !req.basic {
        // The capture has no branch stacks: re-read counting IPs (cheap next to the LBR case).
        let (_, t) = capture::read_capture(
            input,
            capture::ReadOptions {
                threads: req.threads,
                ..Default::default()
            },
            || Tables {
                basic: true,
                ..Default::default()
            },
            progress,
        )?;
        tables = Tables::merge(t);
    }
    let mut profiles = Vec::new();
    for binary in &req.binaries {
        let name = match_name(binary, &side, req.ignore_build_id)?;
        let mut maps = binary_maps(binary, &side, &name, req.rules);
        if let Some(pid) = req.pid {
            maps.by_pid.retain(|&p, _| p == pid);
        }
        if maps.by_pid.is_empty() {
            return Err(Error::Mismatch(format!(
                "{}: no process in the capture maps a file named {:?}{}",
                binary.path.display(),
                String::from_utf8_lossy(&name),
                req.pid
                    .map(|p| format!(" (with pid {p})"))
                    .unwrap_or_default()
            )));
        }
        profiles.push(if basic {
            ip_profile(&tables, &side, binary, &maps)
        } else {
            trace_profile(&tables, binary, &maps)
        });
    }
    Ok(Aggregation {
        side,
        stats: tables.stats,
        basic,
        profiles,
    })
}

/// Checks the binary's build-id against the capture's and returns the file name to match mmaps
/// with (perf2bolt uses the capture's name for a build-id match under another name).
fn match_name(binary: &BinaryInfo, side: &SideBand, ignore: bool) -> Result<Vec<u8>> {
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
        crate::binary::hex(id),
        ids.iter().map(|e| format!("{} {}", crate::binary::hex(&e.build_id), String::from_utf8_lossy(&e.filename))).collect::<Vec<_>>().join(", ")
    )))
}

/// A runtime address as a location in the pre-aggregated profile: perf2bolt's adjusted address
/// when it can lie in the binary (or is the all-ones marker), 0 ("external") otherwise.
#[inline]
fn location(
    binary: &BinaryInfo,
    maps: &BinaryMaps,
    map: &crate::mapping::ProcessMap,
    addr: u64,
) -> u64 {
    if addr == BR_ONLY {
        return BR_ONLY;
    }
    let a = map.adjust(addr, maps.fixed_load_address);
    if a == BR_ONLY || binary.contains(a) {
        a
    } else {
        0
    }
}

fn trace_profile(tables: &Tables, binary: &BinaryInfo, maps: &BinaryMaps) -> BinaryProfile {
    let mut out: HashMap<(u64, u64, u64), Counts> = HashMap::new();
    let mut samples_pids = hashbrown::HashSet::new();
    for (k, c) in &tables.traces {
        let Some(map) = maps.by_pid.get(&k.pid) else {
            continue;
        };
        samples_pids.insert(k.pid);
        let key = (
            location(binary, maps, map, k.branch),
            location(binary, maps, map, k.from),
            location(binary, maps, map, k.to),
        );
        out.entry(key).or_default().add(*c);
    }
    let mut traces: Vec<_> = out.into_iter().collect();
    traces.sort_unstable_by_key(|(k, _)| *k);
    BinaryProfile {
        traces,
        pids: samples_pids.len(),
        ..Default::default()
    }
}

fn ip_profile(
    tables: &Tables,
    side: &SideBand,
    binary: &BinaryInfo,
    maps: &BinaryMaps,
) -> BinaryProfile {
    let mut out: HashMap<u64, u64> = HashMap::new();
    let mut events = std::collections::BTreeSet::new();
    let mut samples = 0;
    let mut pids = hashbrown::HashSet::new();
    for (k, &n) in &tables.ips {
        let Some(map) = maps.by_pid.get(&k.pid) else {
            continue;
        };
        let a = location(binary, maps, map, k.ip);
        pids.insert(k.pid);
        events.insert(k.event);
        samples += n;
        if a != 0 && a != BR_ONLY {
            *out.entry(a).or_insert(0) += n;
        }
    }
    let mut ips: Vec<_> = out.into_iter().collect();
    ips.sort_unstable();
    let events = events
        .into_iter()
        .map(|e| format!("{}:", event_name(side, e as usize)))
        .collect();
    BinaryProfile {
        ips,
        events,
        samples,
        pids: pids.len(),
        ..Default::default()
    }
}

/// The event's name as perf prints it: from EVENT_DESC, else from its type and config.
pub fn event_name(side: &SideBand, event: usize) -> String {
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
