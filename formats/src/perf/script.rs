//! Renders decoded records the way perf 6.1's `perf script` prints them (fields `pid`, `ip`,
//! `brstack`, and `--show-mmap-events`), so our decoder can be checked line by line against
//! perf itself.

use std::io::{self, Write};

use super::record::{Mmap, Mmap2Extra};
use super::sample::{BranchEntry, Sample};

/// Which sample fields to print, as `perf script -F`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields {
    /// `-F ip`: print the sample's instruction pointer.
    pub ip: bool,
    /// `-F brstack`: print the branch stack entries.
    pub brstack: bool,
}

/// `%5d ` pid, ` %16x` ip, then ` 0xFROM/0xTO/P/-/-/CYCLES/TYPE ` per branch entry.
pub fn write_sample(out: &mut impl Write, s: &Sample<'_>, fields: Fields) -> io::Result<()> {
    write!(out, "{:5} ", s.pid as i32)?;
    if fields.ip {
        write!(out, " {:16x}", s.ip)?;
    }
    if fields.brstack {
        if let Some(stack) = &s.branch_stack {
            for e in stack.iter() {
                write_branch(out, &e)?;
            }
        }
    }
    out.write_all(b"\n")
}

fn write_branch(out: &mut impl Write, e: &BranchEntry) -> io::Result<()> {
    let f = e.flags;
    let pred = if f.predicted() {
        'P'
    } else if f.mispred() {
        'M'
    } else {
        '-'
    };
    let tx = if f.in_tx() { 'X' } else { '-' };
    let abort = if f.abort() { 'A' } else { '-' };
    write!(
        out,
        " {:#x}/{:#x}/{pred}/{tx}/{abort}/{}/{} ",
        e.from,
        e.to,
        f.cycles(),
        branch_type_name(f.branch_type())
    )
}

/// perf's `branch_type_name` (empty for UNKNOWN).
fn branch_type_name(t: u8) -> &'static str {
    const NAMES: [&str; 16] = [
        "",
        "COND",
        "UNCOND",
        "IND",
        "CALL",
        "IND_CALL",
        "RET",
        "SYSCALL",
        "SYSRET",
        "COND_CALL",
        "COND_RET",
        "ERET",
        "IRQ",
        "SERROR",
        "NO_TX",
        "",
    ];
    NAMES[(t & 15) as usize]
}

/// `%5d PERF_RECORD_MMAP2 pid/tid: [0xaddr(0xlen) @ 0xpgoff maj:min ino gen]: r-xp name`.
pub fn write_mmap(
    out: &mut impl Write,
    sample_pid: u32,
    m: &Mmap<'_>,
    misc_bits: u16,
) -> io::Result<()> {
    write!(out, "{:5} ", sample_pid as i32)?;
    let (pid, tid) = (m.pid as i32, m.tid as i32);
    let name = String::from_utf8_lossy(m.filename);
    match &m.mmap2 {
        None => {
            let kind = if misc_bits & (1 << 13) != 0 { 'r' } else { 'x' };
            writeln!(
                out,
                "PERF_RECORD_MMAP {pid}/{tid}: [{}({}) @ {}]: {kind} {name}",
                hex(m.addr),
                hex(m.len),
                hex(m.pgoff)
            )
        }
        Some(extra) => {
            let (detail, prot) = match extra {
                Mmap2Extra::Inode {
                    maj,
                    min,
                    ino,
                    ino_generation,
                    prot,
                    ..
                } => (format!("{maj:02x}:{min:02x} {ino} {ino_generation}"), *prot),
                Mmap2Extra::BuildId { build_id, prot, .. } => {
                    let hex: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
                    (hex, *prot)
                }
            };
            let flags = match extra {
                Mmap2Extra::Inode { flags, .. } | Mmap2Extra::BuildId { flags, .. } => *flags,
            };
            writeln!(
                out,
                "PERF_RECORD_MMAP2 {pid}/{tid}: [{}({}) @ {} {detail}]: {}{}{}{} {name}",
                hex(m.addr),
                hex(m.len),
                hex(m.pgoff),
                if prot & 1 != 0 { 'r' } else { '-' },
                if prot & 2 != 0 { 'w' } else { '-' },
                if prot & 4 != 0 { 'x' } else { '-' },
                if flags & 1 != 0 { 's' } else { 'p' },
            )
        }
    }
}

/// C's `%#lx`: `0` for zero, `0x…` otherwise.
fn hex(v: u64) -> String {
    if v == 0 {
        "0".to_string()
    } else {
        format!("{v:#x}")
    }
}
