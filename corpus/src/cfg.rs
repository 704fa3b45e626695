//! Static control-flow model of an x86-64 ELF binary: every instruction of
//! every sized function symbol (plus the PLT), classified by how it transfers
//! control. The random walk in `walk.rs` runs over this model so that the
//! generated LBR stacks describe paths the real code could take.

use std::io;
use std::path::Path;

use iced_x86::{Code, Decoder, DecoderOptions, FlowControl, Instruction, OpKind};
use object::{Object, ObjectKind, ObjectSection, ObjectSegment, ObjectSymbol, SectionKind};

use crate::rng::Rng;

/// How an instruction passes control on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Falls through to the next instruction.
    Next,
    /// Conditional direct branch to the target.
    Cond(u64),
    /// Unconditional direct jump.
    Jump(u64),
    /// Direct call.
    Call(u64),
    /// Indirect jump (jump table, tail call through a pointer, PLT stub).
    IndJump,
    /// Indirect call.
    IndCall,
    Ret,
    /// Execution cannot continue past here in a normal run (`ud2`, `int3`,
    /// `hlt`-like traps, far transfers): a walk that reaches it is abandoned.
    Stop,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Insn {
    pub addr: u64,
    pub len: u8,
    pub flow: Flow,
}

impl Insn {
    pub fn end(&self) -> u64 {
        self.addr + u64::from(self.len)
    }
}

/// A decoded code region: a function symbol, or a whole PLT section.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Func {
    /// Index of the first instruction in `BinaryCode::insns`.
    pub first: u32,
    /// One past the last instruction.
    pub end: u32,
    /// PLT stubs are not real functions: walks never start in them and their
    /// indirect jumps model the dynamic linker's redirection to other DSOs.
    pub plt: bool,
}

/// An executable PT_LOAD segment, in ELF virtual addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecSegment {
    pub vaddr: u64,
    pub memsz: u64,
    pub offset: u64,
}

/// Everything the generator needs to know about one binary.
#[derive(Debug)]
pub struct BinaryCode {
    /// ET_DYN (PIE or shared object): mapped at a load bias chosen by us.
    pub relocatable: bool,
    pub build_id: Option<Vec<u8>>,
    pub segments: Vec<ExecSegment>,
    pub(crate) insns: Vec<Insn>,
    /// Sorted by `first`; regions never overlap.
    pub(crate) funcs: Vec<Func>,
    /// Indices into `funcs` of the non-PLT functions, hottest first. The order
    /// is a deterministic shuffle so that hotness is unrelated to address.
    pub(crate) hot: Vec<u32>,
    /// Instruction indices directly following a call: places a `ret` may land
    /// on when the walk's own call stack is empty.
    pub(crate) call_returns: Vec<u32>,
    /// Sorted instruction indices that are targets of direct branches; a
    /// stand-in for jump-table destinations inside a function.
    pub(crate) jump_targets: Vec<u32>,
    /// Addresses of the instructions (outside the PLT) that read memory:
    /// where a `mem-loads` sample can fire.
    pub(crate) loads: Vec<u64>,
    /// Sorted indices of lazy-binding PLT stub jumps (`jmp *GOT` followed by `push $n`):
    /// before the first call resolves the slot, the jump lands on the `push`, and the stub
    /// then jumps into the PLT header.
    pub(crate) lazy_stubs: Vec<u32>,
}

/// Section names whose contents are PLT stubs (lazy, IBT and GOT-only flavours).
const PLT_SECTIONS: [&str; 4] = [".plt", ".plt.sec", ".plt.got", ".iplt"];

/// A region of code to decode, before decoding.
struct Region {
    start: u64,
    bytes_start: usize,
    bytes_end: usize,
    section: object::SectionIndex,
    plt: bool,
}

impl BinaryCode {
    /// Reads and models the binary at `path`. `rng` only decides the hotness
    /// order of functions.
    pub fn load(path: &Path, rng: &mut Rng) -> io::Result<Self> {
        let data = std::fs::read(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Self::parse(path, &data, rng)
    }

    fn parse(path: &Path, data: &[u8], rng: &mut Rng) -> io::Result<Self> {
        let bad = |msg: String| io::Error::new(io::ErrorKind::InvalidData, msg);
        let file = object::File::parse(data).map_err(|e| {
            bad(format!(
                "{}: not a readable object file: {e}",
                path.display()
            ))
        })?;
        if file.architecture() != object::Architecture::X86_64 {
            return Err(bad(format!(
                "{}: only x86-64 ELF is supported",
                path.display()
            )));
        }
        let mut code = BinaryCode {
            relocatable: file.kind() == ObjectKind::Dynamic,
            build_id: file.build_id().ok().flatten().map(<[u8]>::to_vec),
            segments: exec_segments(&file),
            insns: Vec::new(),
            funcs: Vec::new(),
            hot: Vec::new(),
            call_returns: Vec::new(),
            jump_targets: Vec::new(),
            loads: Vec::new(),
            lazy_stubs: Vec::new(),
        };
        if code.segments.is_empty() {
            return Err(bad(format!(
                "{}: no executable PT_LOAD segment",
                path.display()
            )));
        }
        for region in code_regions(&file) {
            let section = file
                .section_by_index(region.section)
                .map_err(|e| bad(e.to_string()))?;
            let bytes = section.data().map_err(|e| bad(e.to_string()))?;
            code.decode_region(&region, &bytes[region.bytes_start..region.bytes_end]);
        }
        if !code.funcs.iter().any(|f| !f.plt) {
            return Err(bad(format!(
                "{}: no decodable function symbols (is the binary stripped?)",
                path.display()
            )));
        }
        code.index_targets();
        code.hot = (0..code.funcs.len() as u32)
            .filter(|&f| !code.funcs[f as usize].plt)
            .collect();
        shuffle(&mut code.hot, rng);
        Ok(code)
    }

    /// Decodes one region and appends it as a function. Decoding stops at the
    /// first undecodable byte: what follows is data or padding.
    fn decode_region(&mut self, region: &Region, bytes: &[u8]) {
        let first = self.insns.len() as u32;
        let mut decoder = Decoder::with_ip(64, bytes, region.start, DecoderOptions::NONE);
        let mut ins = Instruction::default();
        let mut info = iced_x86::InstructionInfoFactory::new();
        while decoder.can_decode() {
            decoder.decode_out(&mut ins);
            if ins.is_invalid() {
                break;
            }
            if !region.plt && reads_memory(&ins, &mut info) {
                self.loads.push(ins.ip());
            }
            let idx = self.insns.len() as u32;
            if region.plt
                && ins.code() == Code::Pushq_imm32
                && idx > first
                && self.insns[idx as usize - 1].flow == Flow::IndJump
            {
                self.lazy_stubs.push(idx - 1);
            }
            self.insns.push(Insn {
                addr: ins.ip(),
                len: ins.len() as u8,
                flow: classify(&ins),
            });
        }
        let end = self.insns.len() as u32;
        if end > first {
            self.funcs.push(Func {
                first,
                end,
                plt: region.plt,
            });
        }
    }

    /// Fills `call_returns` and `jump_targets` once all code is decoded.
    fn index_targets(&mut self) {
        let mut targets = Vec::new();
        for (i, insn) in self.insns.iter().enumerate() {
            match insn.flow {
                Flow::Call(_) | Flow::IndCall if self.falls_through(i as u32) => {
                    self.call_returns.push(i as u32 + 1);
                }
                Flow::Cond(t) | Flow::Jump(t) => targets.extend(self.insn_at(t)),
                _ => {}
            }
        }
        targets.sort_unstable();
        targets.dedup();
        self.jump_targets = targets;
    }

    /// Index of the instruction starting exactly at `addr`.
    pub(crate) fn insn_at(&self, addr: u64) -> Option<u32> {
        self.insns
            .binary_search_by_key(&addr, |i| i.addr)
            .ok()
            .map(|i| i as u32)
    }

    /// Whether instruction `idx` is immediately followed by decoded code, so a
    /// sequential walk can continue past it.
    pub(crate) fn falls_through(&self, idx: u32) -> bool {
        let i = idx as usize;
        i + 1 < self.insns.len() && self.insns[i + 1].addr == self.insns[i].end()
    }

    /// The region containing instruction `idx`.
    pub(crate) fn func_of(&self, idx: u32) -> &Func {
        let pos = self.funcs.partition_point(|f| f.first <= idx);
        &self.funcs[pos - 1]
    }

    /// Number of decoded instructions (for diagnostics and tests).
    pub fn instruction_count(&self) -> usize {
        self.insns.len()
    }
}

/// Executable PT_LOAD segments, in file order.
fn exec_segments(file: &object::File) -> Vec<ExecSegment> {
    file.segments()
        .filter(|s| matches!(s.flags(), object::SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0))
        .map(|s| ExecSegment {
            vaddr: s.address(),
            memsz: s.size(),
            offset: s.file_range().0,
        })
        .collect()
}

/// Sized function symbols in text sections plus whole PLT sections, sorted by
/// address with overlaps (aliases, nested symbols) removed.
fn code_regions(file: &object::File) -> Vec<Region> {
    let mut regions: Vec<Region> = Vec::new();
    let mut symbols: Vec<_> = file.symbols().collect();
    if !symbols.iter().any(|s| s.kind() == object::SymbolKind::Text) {
        // A stripped binary still has its exported functions.
        symbols = file.dynamic_symbols().collect();
    }
    for sym in symbols {
        if sym.kind() != object::SymbolKind::Text || sym.size() == 0 {
            continue;
        }
        let Some(index) = sym.section_index() else {
            continue;
        };
        let Ok(section) = file.section_by_index(index) else {
            continue;
        };
        if section.kind() == SectionKind::Text {
            regions.extend(region_in(&section, sym.address(), sym.size(), false));
        }
    }
    for section in file.sections() {
        if PLT_SECTIONS.contains(&section.name().unwrap_or("")) {
            regions.extend(region_in(&section, section.address(), section.size(), true));
        }
    }
    regions.sort_by_key(|r| (r.start, std::cmp::Reverse(r.bytes_end - r.bytes_start)));
    let mut kept: Vec<Region> = Vec::with_capacity(regions.len());
    for r in regions {
        let overlaps = kept.last().is_some_and(|k| {
            (k.section == r.section && r.bytes_start < k.bytes_end) || k.start == r.start
        });
        if !overlaps {
            kept.push(r);
        }
    }
    kept
}

/// The byte range of `[start, start+size)` inside `section`'s file data, if
/// the section has file data covering at least its beginning.
fn region_in(section: &object::Section, start: u64, size: u64, plt: bool) -> Option<Region> {
    let data_len = section.data().ok()?.len() as u64;
    let offset = start.checked_sub(section.address())?;
    if offset >= data_len {
        return None;
    }
    Some(Region {
        start,
        bytes_start: offset as usize,
        bytes_end: (offset + size).min(data_len) as usize,
        section: section.index(),
        plt,
    })
}

fn classify(ins: &Instruction) -> Flow {
    let near = ins.op0_kind() == OpKind::NearBranch64;
    match ins.flow_control() {
        FlowControl::Next | FlowControl::XbeginXabortXend => Flow::Next,
        FlowControl::ConditionalBranch if near => Flow::Cond(ins.near_branch_target()),
        FlowControl::UnconditionalBranch if near => Flow::Jump(ins.near_branch_target()),
        FlowControl::Call if near => Flow::Call(ins.near_branch_target()),
        // SYSCALL/SYSENTER are "calls" to iced but return to the next
        // instruction; user-only LBR filtering hides the kernel part.
        FlowControl::Call => Flow::Next,
        FlowControl::IndirectBranch => Flow::IndJump,
        FlowControl::IndirectCall => Flow::IndCall,
        FlowControl::Return => Flow::Ret,
        // `int3` is padding after no-return calls; other `int n` return.
        FlowControl::Interrupt if ins.code() != Code::Int3 => Flow::Next,
        _ => Flow::Stop,
    }
}

/// A load from memory: an explicit memory operand that is not an address
/// computation (`lea`), a hint (`nop`, `prefetch`) or a plain store.
fn reads_memory(ins: &Instruction, factory: &mut iced_x86::InstructionInfoFactory) -> bool {
    use iced_x86::OpAccess;
    if !ins.op_kinds().any(|k| k == OpKind::Memory) {
        return false;
    }
    factory.info(ins).used_memory().iter().any(|m| {
        matches!(
            m.access(),
            OpAccess::Read | OpAccess::ReadWrite | OpAccess::CondRead | OpAccess::ReadCondWrite
        )
    })
}

/// Fisher-Yates with our own PRNG, for a reproducible order.
fn shuffle<T>(items: &mut [T], rng: &mut Rng) {
    for i in (1..items.len()).rev() {
        let j = rng.index(i + 1);
        items.swap(i, j);
    }
}

/// The GNU build-id of an ELF image, if it has a `.note.gnu.build-id`.
pub fn build_id_of(elf_bytes: &[u8]) -> Option<Vec<u8>> {
    let file = object::File::parse(elf_bytes).ok()?;
    file.build_id().ok().flatten().map(<[u8]>::to_vec)
}
