//! Indirect jumps as BOLT classifies them (`X86MCPlusBuilder::analyzeIndirectBranch`,
//! `BinaryFunction::processIndirectBranch`, `BinaryContext::analyzeMemoryAt`): a jump table
//! (absolute 8-byte entries or PIC 4-byte entries relative to the table), an indirect tail
//! call, or unknown.
//!
//! The register pattern is searched backwards from the jump over the instructions given: the
//! whole function so far while disassembling, only the jump's block when BOLT re-checks it
//! after building the CFG (a table base loaded in another block then makes the function
//! non-simple).

use iced_x86::{Code, Instruction, Mnemonic, OpKind, Register};

use super::functions::{Function, Functions};

/// Where a dispatch reads its target from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// The jump table's address (in the binary's own addresses).
    pub address: u64,
    /// `lea TABLE(%rip); movslq (base,idx,4); add; jmp`: 4-byte entries relative to the table.
    pub pic: bool,
}

/// The outcome of BOLT's analysis while disassembling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Indirect {
    /// A jump table whose entries land in the function.
    Table(Pattern),
    /// A jump through memory that holds no table (or lies in no section, or in `.bss`, or is a
    /// read-only pointer out of the function): BOLT rewrites it as an indirect tail call while
    /// disassembling.
    TailCall,
    /// Anything else (`analyzeIndirectBranch` finds no memory location, or the location is a
    /// writable pointer such as a GOT slot): left as it is until `postProcessIndirectBranches`.
    Unknown,
}

/// An indirect jump as classified, with how far back its pattern reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classified {
    /// BOLT's classification.
    pub what: Indirect,
    /// The index (among the instructions given) of the first instruction the pattern uses, or
    /// `None` if none is found. `postProcessIndirectBranches` analyses a tail call's or a
    /// table's jump again over its block alone: the function stays simple only if this
    /// instruction is in the jump's block.
    pub reach: Option<usize>,
}

/// What the backwards search finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// `jmp *ADDR(%rip)` (or an absolute address) without an index: `POSSIBLE_FIXED_BRANCH`.
    Fixed { address: u64 },
    /// A load (by the jump or a `mov`) without a base other than RIP and with an index scaled
    /// by 8: an array of code pointers, a table or not.
    Memory { address: u64 },
    /// The PIC table sequence.
    Pic { address: u64 },
}

/// `analyzeIndirectBranch`: where the jump's target comes from, and the index of the first
/// instruction used; `None` is BOLT's UNKNOWN without a memory location (no definition of the
/// register, one that is neither a load nor the PIC `add`, a base register, a segment, a scale
/// other than 8).
fn source(before: &[Instruction], jmp: &Instruction) -> Option<(Source, usize)> {
    if jmp.op0_kind() == OpKind::Memory {
        return memory_source(jmp, true).map(|s| (s, before.len()));
    }
    let r1 = jmp.op0_register().full_register();
    let (pos, def) = before
        .iter()
        .enumerate()
        .rev()
        .find(|(_, i)| defines(i, r1))?;
    if is_load(def) {
        return memory_source(def, false).map(|s| (s, pos));
    }
    let is_add64 = def.mnemonic() == Mnemonic::Add
        && def.op0_kind() == OpKind::Register
        && def.op1_kind() == OpKind::Register
        && def.op0_register().size() == 8;
    if is_add64 && def.op1_register().full_register() != r1 {
        let r2 = def.op1_register().full_register();
        return pic_table(&before[..pos], r1, r2)
            .map(|(address, lea)| (Source::Pic { address }, lea));
    }
    None
}

/// The memory operand of the jump itself (`is_jump`) or of the load that defines its register.
fn memory_source(ins: &Instruction, is_jump: bool) -> Option<Source> {
    let plain_base = matches!(ins.memory_base(), Register::None | Register::RIP);
    if !plain_base || ins.segment_prefix() != Register::None {
        return None;
    }
    // iced resolves RIP-relative displacements to absolute addresses.
    let address = ins.memory_displacement64();
    if is_jump && ins.memory_index() == Register::None {
        return Some(Source::Fixed { address });
    }
    (ins.memory_index_scale() == 8).then_some(Source::Memory { address })
}

/// `analyzePICJumpTable`: going back from the `add %r2,%r1`, the first definition of either
/// register must be `movslq (%base,%index,4),%dst` (no displacement) with `dst` one of the two
/// and `base` the other; the next definition of `base` further back must be
/// `lea TABLE(%rip),%base` (definitions of `dst` in between do not matter, any other
/// definition of `base` ends the match: cargo's `mov %rbx,%r12` before such a dispatch makes
/// it unknown). Returns the table and the index of the `lea`.
fn pic_table(before: &[Instruction], r1: Register, r2: Register) -> Option<(u64, usize)> {
    let mut rest = before.iter().enumerate().rev();
    let (_, load) = rest.find(|(_, i)| defines(i, r1) || defines(i, r2))?;
    if load.code() != Code::Movsxd_r64_rm32 || load.op1_kind() != OpKind::Memory {
        return None;
    }
    let dst = load.op0_register();
    let base = if dst == r2 { r1 } else { r2 };
    let indexed = load.memory_index() != Register::None
        && load.memory_base() == base
        && load.memory_index_scale() == 4
        && load.memory_displacement64() == 0
        && load.segment_prefix() == Register::None;
    if !indexed {
        return None;
    }
    let (at, lea) = rest.find(|(_, i)| defines(i, base))?;
    let rip_relative = lea.code() == Code::Lea_r64_m
        && lea.op0_register() == base
        && lea.memory_base() == Register::RIP
        && lea.memory_index() == Register::None
        && lea.segment_prefix() == Register::None;
    rip_relative.then(|| (lea.memory_displacement64(), at))
}

fn is_load(ins: &Instruction) -> bool {
    ins.mnemonic() == Mnemonic::Mov
        && ins.op0_kind() == OpKind::Register
        && ins.op1_kind() == OpKind::Memory
        && ins.op0_register().size() == 8
}

fn defines(ins: &Instruction, reg: Register) -> bool {
    ins.op_count() > 0
        && ins.op0_kind() == OpKind::Register
        && ins.op0_register().full_register() == reg
        && !matches!(
            ins.mnemonic(),
            Mnemonic::Cmp | Mnemonic::Test | Mnemonic::Push
        )
}

/// `processIndirectBranch` with `analyzeMemoryAt`: the pattern must agree with what the
/// memory holds (at least two entries landing in the function, PIC tried first); a load from
/// anywhere else is an indirect tail call, but a fixed branch through a writable pointer stays
/// unknown.
pub fn classify(
    functions: &Functions,
    f: &Function,
    before: &[Instruction],
    jmp: &Instruction,
) -> Classified {
    let Some((source, reach)) = source(before, jmp) else {
        return Classified {
            what: Indirect::Unknown,
            reach: None,
        };
    };
    let what = match source {
        Source::Pic { address } => match table_kind(functions, f, address) {
            Some(true) => Indirect::Table(Pattern { address, pic: true }),
            _ => Indirect::Unknown,
        },
        Source::Fixed { address } => fixed_branch(functions, f, address),
        Source::Memory { address } => match table_kind(functions, f, address) {
            Some(true) => Indirect::Unknown,
            Some(false) => Indirect::Table(Pattern {
                address,
                pic: false,
            }),
            None => Indirect::TailCall,
        },
    };
    Classified {
        what,
        reach: Some(reach),
    }
}

/// `POSSIBLE_FIXED_BRANCH`: a pointer in no section (or in `.bss`) is a tail call; one in a
/// writable section (a GOT slot) or unreadable is unknown; a read-only one is a tail call to
/// its value, or (pointing into the function) a direct jump, which has no successor here and
/// is left unknown.
fn fixed_branch(functions: &Functions, f: &Function, address: u64) -> Indirect {
    let Some((bytes, writable)) = functions.data_and_writable(address) else {
        return Indirect::TailCall;
    };
    let Some(pointer) = bytes.get(..8) else {
        return Indirect::Unknown;
    };
    let target = u64::from_le_bytes(pointer.try_into().unwrap_or_default());
    if writable || f.contains(target) {
        return Indirect::Unknown;
    }
    Indirect::TailCall
}

/// What the memory at `address` looks like: `Some(true)` a PIC table, `Some(false)` an
/// absolute one, `None` neither (or not in a data section with contents).
fn table_kind(functions: &Functions, f: &Function, address: u64) -> Option<bool> {
    if !functions.is_data(address) {
        return None;
    }
    for pic in [true, false] {
        let t = Pattern { address, pic };
        if entries(functions, f, t, u64::MAX, None).len() >= 2 {
            return Some(pic);
        }
    }
    None
}

/// A table's entries (offsets in `f`) while they land in the function (or exactly at its
/// end, the `__builtin_unreachable` case), stopping before `limit` and, when instruction
/// starts are known (ascending), at the first entry that is not one.
pub(crate) fn entries(
    functions: &Functions,
    f: &Function,
    t: Pattern,
    limit: u64,
    starts: Option<&[u64]>,
) -> Vec<u64> {
    let Some(data) = functions.data_at(t.address) else {
        return Vec::new();
    };
    let width: usize = if t.pic { 4 } else { 8 };
    let mut out = Vec::new();
    for (i, chunk) in data.chunks_exact(width).enumerate() {
        if t.address + ((i + 1) * width) as u64 > limit {
            break;
        }
        let target = if t.pic {
            let rel = i32::from_le_bytes(chunk.try_into().unwrap_or_default());
            t.address.wrapping_add(rel as i64 as u64)
        } else {
            u64::from_le_bytes(chunk.try_into().unwrap_or_default())
        };
        let at_end = target == f.address + f.size;
        let inside = f.contains(target)
            && starts.is_none_or(|s| s.binary_search(&(target - f.address)).is_ok());
        if !(inside || at_end) {
            break;
        }
        out.push(target - f.address);
    }
    out
}
