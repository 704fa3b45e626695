//! Which processes had a binary mapped, and where: perf2bolt's `BinaryMMapInfo`, built the way
//! perf2bolt builds it from `perf script --show-mmap-events` and `--show-task-events`, so that
//! addresses become exactly the ones perf2bolt computes.

use hashbrown::HashMap;

use crate::perf::binary::BinaryInfo;
use crate::perf::capture::{MmapEvent, SideBand, TaskEvent};

/// Which perf2bolt's rules to follow where they changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rules {
    /// LLVM 19: only the first mapping of the binary per process counts.
    Llvm19,
    /// LLVM ≥ 21: every executable mapping extends the covered size.
    Current,
}

/// One process's mapping of the binary (perf2bolt's `MMapInfo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ProcessMap {
    pub(crate) mmap_address: u64,
    pub(crate) size: u64,
    pub(crate) base_address: u64,
    pub(crate) forked: bool,
}

/// All processes' mappings of one binary.
#[derive(Clone, Debug, Default)]
pub(crate) struct BinaryMaps {
    pub(crate) by_pid: HashMap<u32, ProcessMap>,
    pub(crate) fixed_load_address: bool,
    /// mmaps of the binary that had to be ignored (no matching segment), for diagnostics.
    pub(crate) ignored_mappings: usize,
}

/// The file name perf2bolt compares: the last space-separated token's base name (`None` for
/// the kernel, anonymous and deleted mappings).
pub(crate) fn mapped_file_name(filename: &[u8]) -> Option<&[u8]> {
    let token = filename.rsplit(|&b| b == b' ').next()?;
    if token.starts_with(b"//") || token.starts_with(b"[") || token == b"(deleted)" {
        return None;
    }
    Some(token.rsplit(|&b| b == b'/').next().unwrap_or(token))
}

/// Builds the per-process mappings of `binary`, matching mmaps by `match_name`.
///
/// perf2bolt reads only MMAP2 events; captures made before MMAP2 existed carry only MMAP
/// events, and for those we read MMAP events instead (perf2bolt fails on them).
pub(crate) fn binary_maps(
    binary: &BinaryInfo,
    side: &SideBand,
    match_name: &[u8],
    rules: Rules,
) -> BinaryMaps {
    let use_mmap2 = side.mmaps.iter().any(|m| m.is_mmap2);
    let mut maps = BinaryMaps {
        fixed_load_address: binary.fixed_load_address,
        ..Default::default()
    };
    let candidates = side
        .mmaps
        .iter()
        .filter(|m| m.is_mmap2 == use_mmap2 && m.pid != u32::MAX);
    let matches = |m: &&MmapEvent| match &binary.mapped_path {
        // Known only from the capture: its own executable mappings, by full path.
        Some(path) => m.executable && m.filename == *path,
        None => mapped_file_name(&m.filename) == Some(match_name),
    };
    for m in candidates.filter(matches) {
        add_mapping(&mut maps, binary, m, rules);
    }
    apply_tasks(&mut maps, &side.tasks);
    maps
}

fn add_mapping(maps: &mut BinaryMaps, binary: &BinaryInfo, m: &MmapEvent, rules: Rules) {
    let base_address = if binary.fixed_load_address {
        if !binary.mapping_matches_segment(m.addr) {
            maps.ignored_mappings += 1;
            return;
        }
        0
    } else {
        match binary.base_address_for_mapping(m.addr, m.pgoff) {
            Some(base) => base,
            None => {
                maps.ignored_mappings += 1;
                return;
            }
        }
    };
    let new = ProcessMap {
        mmap_address: m.addr,
        size: m.len,
        base_address,
        forked: false,
    };
    match rules {
        Rules::Llvm19 => {
            maps.by_pid.entry(m.pid).or_insert(new);
        }
        Rules::Current => {
            let entry = maps.by_pid.entry(m.pid).or_insert(new);
            let end = m.addr.wrapping_add(m.len).wrapping_sub(entry.base_address);
            entry.size = entry.size.max(end);
        }
    }
}

/// FORK copies the parent's mapping to the child unless it happened before recording started
/// (time 0, the child has its own mmaps); an exec drops such an inherited mapping.
fn apply_tasks(maps: &mut BinaryMaps, tasks: &[TaskEvent]) {
    for t in tasks {
        match *t {
            TaskEvent::Fork { pid, ppid, time } => {
                if pid == ppid || time == 0 {
                    continue;
                }
                if let Some(parent) = maps.by_pid.get(&ppid).copied() {
                    maps.by_pid.entry(pid).or_insert(ProcessMap {
                        forked: true,
                        ..parent
                    });
                }
            }
            TaskEvent::Exec { pid } => {
                if maps.by_pid.get(&pid).is_some_and(|m| m.forked) {
                    maps.by_pid.remove(&pid);
                }
            }
        }
    }
}

impl ProcessMap {
    /// Whether `addr` lies where [`ProcessMap::adjust`] subtracts the base: the mapping, as far
    /// as perf2bolt takes it to reach.
    #[inline(always)]
    pub(crate) fn in_mapping(&self, addr: u64) -> bool {
        addr >= self.mmap_address && addr < self.mmap_address.wrapping_add(self.size)
    }

    /// perf2bolt's `adjustAddress`: a runtime address to the binary's own address. Addresses
    /// below `size` outside the mapping become all-ones so they cannot alias the binary.
    #[inline(always)]
    pub(crate) fn adjust(&self, addr: u64, fixed_load_address: bool) -> u64 {
        if fixed_load_address {
            addr
        } else if self.in_mapping(addr) {
            addr.wrapping_sub(self.base_address)
        } else if addr < self.size {
            u64::MAX
        } else {
            addr
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_name_matching_follows_perf2bolt() {
        assert_eq!(mapped_file_name(b"/usr/bin/app"), Some(&b"app"[..]));
        assert_eq!(mapped_file_name(b"[vdso]"), None);
        assert_eq!(mapped_file_name(b"//anon"), None);
        assert_eq!(mapped_file_name(b"/tmp/app (deleted)"), None);
        assert_eq!(mapped_file_name(b"/tmp/my dir/app"), Some(&b"app"[..]));
    }

    #[test]
    fn adjust_outside_mapping() {
        let m = ProcessMap {
            mmap_address: 0x5555_0000_1000,
            size: 0x3000,
            base_address: 0x5555_0000_0000,
            forked: false,
        };
        assert_eq!(m.adjust(0x5555_0000_1234, false), 0x1234);
        assert_eq!(m.adjust(0x10, false), u64::MAX);
        assert_eq!(m.adjust(0x7fff_0000_0000, false), 0x7fff_0000_0000);
        assert_eq!(m.adjust(0x7fff_0000_0000, true), 0x7fff_0000_0000);
    }
}
