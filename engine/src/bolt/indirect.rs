//! Indirect jumps as BOLT classifies them (`X86MCPlusBuilder::analyzeIndirectBranch`,
//! `BinaryFunction::processIndirectBranch`, `BinaryContext::analyzeMemoryAt`): a jump table
//! (absolute 8-byte entries or PIC 4-byte entries relative to the table), an indirect tail
//! call, or unknown.
//!
//! The register pattern is searched backwards from the jump over the instructions given: the
//! whole function so far while disassembling, only the jump's block when BOLT re-checks it
//! after building the CFG (a table base loaded in another block then makes the function
//! non-simple).

use iced_x86::{Instruction, Mnemonic, OpKind, Register};

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
    /// A jump through memory that is not such a table: an indirect tail call.
    TailCall,
    /// A jump whose target register could not be traced to a load.
    Unknown,
}

/// What the backwards search finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// The target is loaded from memory (by the jump or a `mov`); `table` when the operand has
    /// the shape of an absolute table: no base (or RIP), an index scaled by 8.
    Memory { address: u64, table: bool },
    /// The PIC table sequence.
    Pic { address: u64 },
}

/// `analyzeIndirectBranch`: where the jump's target comes from; `None` is BOLT's UNKNOWN (no
/// definition of the register, or one that is neither a load nor the PIC `add`).
fn source(before: &[Instruction], jmp: &Instruction) -> Option<Source> {
    if jmp.op0_kind() == OpKind::Memory {
        return Some(memory_source(jmp));
    }
    let r1 = jmp.op0_register().full_register();
    let (pos, def) = before
        .iter()
        .enumerate()
        .rev()
        .find(|(_, i)| defines(i, r1))?;
    if is_load(def) {
        return Some(memory_source(def));
    }
    let is_add64 = def.mnemonic() == Mnemonic::Add
        && def.op0_kind() == OpKind::Register
        && def.op1_kind() == OpKind::Register
        && def.op0_register().size() == 8;
    if is_add64 && def.op1_register().full_register() != r1 {
        let r2 = def.op1_register().full_register();
        return pic_table(&before[..pos], r1, r2).map(|address| Source::Pic { address });
    }
    None
}

fn memory_source(ins: &Instruction) -> Source {
    let plain_base = matches!(ins.memory_base(), Register::None | Register::RIP);
    Source::Memory {
        // iced resolves RIP-relative displacements to absolute addresses.
        address: ins.memory_displacement64(),
        table: plain_base
            && ins.segment_prefix() == Register::None
            && ins.memory_index() != Register::None
            && ins.memory_index_scale() == 8,
    }
}

/// `analyzePICJumpTable`: going back from the `add`, the first definition of either register
/// must be a `movslq` from memory; the table is the first `lea` before it that sets the load's
/// base register, which must be RIP-relative. Other definitions of the base in between are
/// skipped, as BOLT skips them (they sit on other paths, like an early return's `pop`).
fn pic_table(before: &[Instruction], r1: Register, r2: Register) -> Option<u64> {
    let mut rest = before.iter().rev();
    let load = rest.find(|i| defines(i, r1) || defines(i, r2))?;
    if load.mnemonic() != Mnemonic::Movsxd || load.op1_kind() != OpKind::Memory {
        return None;
    }
    let base = load.memory_base().full_register();
    let lea = rest.find(|i| i.mnemonic() == Mnemonic::Lea && defines(i, base))?;
    (lea.memory_base() == Register::RIP && lea.memory_index() == Register::None)
        .then(|| lea.memory_displacement64())
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
/// anywhere else is an indirect tail call.
pub fn classify(
    functions: &Functions,
    f: &Function,
    before: &[Instruction],
    jmp: &Instruction,
) -> Indirect {
    match source(before, jmp) {
        None => Indirect::Unknown,
        Some(Source::Pic { address }) => match table_kind(functions, f, address) {
            Some(true) => Indirect::Table(Pattern { address, pic: true }),
            _ => Indirect::Unknown,
        },
        Some(Source::Memory {
            address,
            table: true,
        }) => match table_kind(functions, f, address) {
            Some(true) => Indirect::Unknown,
            Some(false) => Indirect::Table(Pattern {
                address,
                pic: false,
            }),
            None => Indirect::TailCall,
        },
        Some(Source::Memory { .. }) => Indirect::TailCall,
    }
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
