//! Memory-load samples, as `perf record -e cycles -j any -e cpu/mem-loads,ldlat=30/P`
//! (or `perf mem record`) interleaves them with the LBR samples: each fires at a real load
//! instruction of a binary and carries the data address it read.
//!
//! The data addresses are drawn from a mix that exercises every rule of perf2bolt's
//! memory-event path: inside the binaries' data objects (at and after their start), anywhere
//! in their data sections (gaps between objects included), in function code, in other
//! mappings (heap/stack-like addresses), and tiny addresses below the mapping size (which
//! perf2bolt turns into "unknown" for relocatable binaries). A few samples come from a
//! process that maps nothing, and a few fire outside any code.

use std::io;
use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol, SectionKind};

use crate::cfg::BinaryCode;
use crate::rng::Rng;

/// The EVENT_DESC name `perf record` gives the Intel load-latency event.
pub const MEM_LOADS_EVENT: &str = "cpu/mem-loads,ldlat=30/P";
/// perf's raw-PMU `config` of `mem-loads` on Intel (event 0xcd, umask 0x01).
pub const MEM_LOADS_CONFIG: u64 = 0x1cd;
/// A process that has no mapping in the capture.
pub const UNMAPPED_PID: u32 = 4242;

/// What to add to an LBR capture: a second event, `mem-loads`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemLoadSpec {
    /// One mem-loads sample follows every `interval` LBR samples (1 = after each).
    pub interval: u32,
    /// Size of the pool of distinct (pc, address, process kind) draws.
    pub distinct: u32,
    /// Whether the events record ADDR (`perf record -d`, which applies to every
    /// event). Without it perf2bolt's `perf script -F pid,event,addr,ip` job
    /// fails with "do not have ADDR attribute set", which perf2bolt tolerates.
    pub with_addr: bool,
    /// The event's name (EVENT_DESC); perf2bolt uses events whose name contains
    /// `mem-loads`.
    pub event_name: String,
}

impl Default for MemLoadSpec {
    fn default() -> Self {
        MemLoadSpec {
            interval: 2,
            distinct: 400,
            with_addr: true,
            event_name: MEM_LOADS_EVENT.to_string(),
        }
    }
}

/// One drawn memory sample: process addresses, and whether its process maps nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemDraw {
    /// The sampled instruction.
    pub pc: u64,
    /// The data address it touched.
    pub addr: u64,
    /// Whether the sample comes from a process that maps no binary.
    pub unmapped_pid: bool,
}

/// The data side of one binary, in ELF addresses.
#[derive(Debug, Default)]
pub(crate) struct DataLayout {
    /// (address, size) of every defined symbol outside executable sections.
    objects: Vec<(u64, u64)>,
    /// Allocated, non-executable sections (with and without file contents).
    sections: Vec<(u64, u64)>,
    /// Function symbols (address, size).
    functions: Vec<(u64, u64)>,
}

impl DataLayout {
    pub(crate) fn load(path: &Path) -> io::Result<DataLayout> {
        let data = std::fs::read(path)?;
        let file = object::File::parse(&*data)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        let mut layout = DataLayout::default();
        for s in file.sections() {
            let alloc = matches!(s.flags(), object::SectionFlags::Elf { sh_flags } if sh_flags & u64::from(object::elf::SHF_ALLOC) != 0);
            if alloc && s.address() != 0 && s.size() != 0 && s.kind() != SectionKind::Text {
                layout.sections.push((s.address(), s.size()));
            }
        }
        for sym in file.symbols() {
            if sym.is_undefined() || sym.address() == 0 {
                continue;
            }
            match sym.kind() {
                object::SymbolKind::Text if sym.size() > 0 => {
                    layout.functions.push((sym.address(), sym.size()))
                }
                object::SymbolKind::Data | object::SymbolKind::Unknown => {
                    let in_data = layout
                        .sections
                        .iter()
                        .any(|&(a, n)| sym.address() >= a && sym.address() < a + n);
                    if in_data {
                        layout.objects.push((sym.address(), sym.size()));
                    }
                }
                _ => {}
            }
        }
        layout.objects.sort_unstable();
        Ok(layout)
    }
}

/// Draws the pool of memory samples over the binaries (`biases`: process minus ELF address).
pub(crate) fn draw_pool(
    spec: &MemLoadSpec,
    codes: &[BinaryCode],
    layouts: &[DataLayout],
    biases: &[u64],
    rng: &mut Rng,
) -> io::Result<Vec<MemDraw>> {
    if codes.iter().all(|c| c.loads.is_empty()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no load instructions in the binaries: cannot place mem-loads samples",
        ));
    }
    let with_loads: Vec<usize> = (0..codes.len())
        .filter(|&b| !codes[b].loads.is_empty())
        .collect();
    Ok((0..spec.distinct.max(1))
        .map(|_| {
            let b = with_loads[rng.index(with_loads.len())];
            let pc = if rng.percent(5) {
                0x7f3a_1000_0000 + rng.below(1 << 16) // code no binary maps
            } else {
                codes[b].loads[rng.index(codes[b].loads.len())] + biases[b]
            };
            let d = rng.index(layouts.len());
            let addr = data_address(&layouts[d], biases[d], rng);
            MemDraw {
                pc,
                addr,
                unmapped_pid: rng.percent(5),
            }
        })
        .collect())
}

/// A data address of one of the kinds listed in the module comment.
fn data_address(layout: &DataLayout, bias: u64, rng: &mut Rng) -> u64 {
    let pick = |v: &[(u64, u64)], rng: &mut Rng| (!v.is_empty()).then(|| v[rng.index(v.len())]);
    let kind = rng.below(100);
    let elf = match kind {
        0..=54 => pick(&layout.objects, rng).map(|(a, n)| a + rng.below(n.max(1))),
        55..=64 => pick(&layout.objects, rng).map(|(a, _)| a),
        65..=79 => pick(&layout.sections, rng).map(|(a, n)| a + rng.below(n + 16)),
        80..=84 => pick(&layout.functions, rng).map(|(a, n)| a + rng.below(n)),
        _ => None,
    };
    match (elf, kind) {
        (Some(a), _) => a + bias,
        (None, 85..=89) => rng.below(0x4000), // below any mapping's size
        (None, _) => 0x7ffd_5000_0000 + rng.below(1 << 20) * 8, // a stack-like address
    }
}

/// perf 6.1 `perf script -F pid,event,addr,ip` line of a sample: the event
/// name is right-aligned to the longest event name of the capture (`width`).
pub fn perf_script_mem_line(pid: u32, event: &str, width: usize, addr: u64, ip: u64) -> String {
    format!("{pid:>5} {event:>width$}: {addr:>16x} {ip:>16x}")
}
