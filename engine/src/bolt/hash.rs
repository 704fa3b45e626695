//! BOLT's function and block hashes (`BinaryFunction::computeHash` and `computeBlockHashes`,
//! xxh3 flavour), which YAML profiles and BAT carry so that a profile can be matched to a
//! changed binary. Both hash strings made of LLVM MC opcode names (see [`super::x86`]):
//!
//! * function hash: xxh3 of the blocks' strings in layout order, each the opcode names of the
//!   block's instructions, unconditional jumps left out (they follow the layout), conditional
//!   branches under their short opcode (`JCC_1`) whatever their encoding;
//! * block hash: `offset[0:16] | opcodes[16:32] | instructions[32:48] | predecessors[48:56] |
//!   successors[56:64]`, where `opcodes` hashes the sorted set of the block's mnemonics as
//!   LLVM's `getMnemonic` gives them (`callq*`, not the printed `callq`; no-ops and
//!   unconditional jumps left out, conditional branches all "JMP"),
//!   `instructions` the opcode names with their operands (registers as LLVM numbers them,
//!   immediates, data addresses; not code addresses nor jump tables; an immediate that a
//!   static relocation covers as its symbol), and the neighbours fold their `opcodes` hash
//!   with LLVM's `hash_16_bytes`, in BOLT's edge order (taken branches sorted by source and
//!   target offset, deduplicated, then the fall-through).
//!
//! Tested equal to perf2bolt 22's YAML and to the BAT sections of llvm-bolt 19 and 22 on every
//! block of the test programs (`engine/tests/it/bolt_hashes.rs`).

use std::collections::BTreeMap;

use iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction, OpKind, Register};
use xxhash_rust::xxh3::xxh3_64;

use super::cfg::{Cfg, TableStarts};
use super::functions::{Function, Functions};
use super::memory::DataObjects;
use super::x86::{self, AsmName, Llvm, McOp};

/// What the operand hashes need to know of the binary: where data objects are, and which
/// addresses are jump tables (BOLT leaves both function and jump-table references out).
pub struct Context<'a> {
    /// The binary's functions.
    pub functions: &'a Functions,
    /// BOLT's data objects.
    pub objects: &'a DataObjects,
    /// Start addresses of the jump tables found.
    pub(crate) jump_tables: &'a TableStarts,
    /// The static relocations of code sections (binaries linked with `--emit-relocs`, which
    /// llvm-bolt rewrites in relocation mode), by the address of the field they patch.
    pub relocations: &'a BTreeMap<u64, Relocation>,
}

impl Context<'_> {
    /// Whether a jump table starts at `addr`.
    fn is_jump_table(&self, addr: u64) -> bool {
        self.jump_tables.contains(addr)
    }
}

/// A static relocation, as far as the hashes need it.
#[derive(Clone, Copy, Debug)]
pub struct Relocation {
    /// The address of the symbol it refers to; `None` for an undefined symbol.
    pub symbol: Option<u64>,
    /// The relocation's addend.
    pub addend: i64,
}

/// The static relocations of the executable sections of the ELF file `data`.
pub fn relocations(data: &[u8]) -> BTreeMap<u64, Relocation> {
    use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget, SectionKind};
    let mut out = BTreeMap::new();
    let Ok(file) = object::File::parse(data) else {
        return out;
    };
    for section in file.sections() {
        if section.kind() != SectionKind::Text {
            continue;
        }
        for (offset, r) in section.relocations() {
            let symbol = match r.target() {
                RelocationTarget::Symbol(i) => match file.symbol_by_index(i) {
                    Ok(sym) if !sym.is_undefined() => Some(sym.address()),
                    _ => None,
                },
                _ => continue,
            };
            // In an executable, `r_offset` is already the address.
            out.insert(
                offset,
                Relocation {
                    symbol,
                    addend: r.addend(),
                },
            );
        }
    }
    out
}

/// A function's hashes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hashes {
    /// `BinaryFunction::computeHash` over the blocks in layout order.
    pub function: u64,
    /// The blended hash of each block, in layout order.
    pub blocks: Vec<u64>,
}

/// LLVM's `hashing::detail::hash_16_bytes` (a Murmur-style mix of two words).
pub fn hash_16_bytes(low: u64, high: u64) -> u64 {
    const K: u64 = 0x9ddf_ea08_eb38_2d69;
    let mut a = (low ^ high).wrapping_mul(K);
    a ^= a >> 47;
    let mut b = (high ^ a).wrapping_mul(K);
    b ^= b >> 47;
    b.wrapping_mul(K)
}

/// BOLT's `hashInteger`: the value's little-endian bytes without the high zeros (one zero byte
/// for 0).
fn push_integer(out: &mut Vec<u8>, mut v: u64) {
    if v == 0 {
        out.push(0);
    }
    while v != 0 {
        out.push(v as u8);
        v >>= 8;
    }
}

/// How BOLT sees one instruction for hashing.
struct Hashed<'t> {
    /// Opcode name, after BOLT's rewrites (tail calls, short conditional branches).
    name: &'static str,
    mnemonic: AsmName,
    ops: &'static [McOp],
    ins: &'t Instruction,
    /// Left out of both strings (an unconditional jump inside the function).
    skipped: bool,
    conditional: bool,
}

/// The blocks' strings, built block after block as the function is decoded in address order:
/// the opcode names of all blocks in one buffer, and each block's other two strings hashed as
/// soon as the block ends (no buffer per block: a YAML profile hashes every profiled function).
/// One value can serve function after function ([`block_strings_into`]), its buffers kept.
#[derive(Default)]
pub(crate) struct BlockStrings {
    /// Every block's opcode names, block after block.
    names: Vec<u8>,
    /// Where each block's names start and end in `names`.
    name_ranges: Vec<(usize, usize)>,
    /// xxh3 of each block's opcode names with their operands.
    full_hashes: Vec<u64>,
    /// xxh3 of each block's sorted, distinct mnemonics.
    opcode_hashes: Vec<u64>,
    /// The block being decoded, and its two strings so far.
    current: Option<usize>,
    full: Vec<u8>,
    mnemonics: Vec<AsmName>,
    joined: Vec<u8>,
}

impl BlockStrings {
    /// Empties the strings for a function of `blocks` blocks.
    fn reset(&mut self, blocks: usize) {
        let empty = xxh3_64(b"");
        self.names.clear();
        self.name_ranges.clear();
        self.name_ranges.resize(blocks, (0, 0));
        self.full_hashes.clear();
        self.full_hashes.resize(blocks, empty);
        self.opcode_hashes.clear();
        self.opcode_hashes.resize(blocks, empty);
        self.current = None;
        self.full.clear();
        self.mnemonics.clear();
    }

    /// Sorts the current block's mnemonics and removes repeated ones.
    fn finish_mnemonics(&mut self) {
        // Mnemonics of at most 16 bytes (all but a few, such as `sha256rnds2%xmm0,` and the
        // `{sae}` forms of AVX-512 conversions) sort by their keys alone.
        if self.mnemonics.iter().all(|m| m.text.len() <= 16) {
            self.mnemonics.sort_unstable_by_key(|m| m.key);
            self.mnemonics.dedup_by_key(|m| m.key);
        } else {
            self.mnemonics.sort_unstable_by(AsmName::order);
            self.mnemonics.dedup_by(|a, b| a.order(b).is_eq());
        }
    }

    /// Adds a mnemonic to the current block's set.
    fn add_mnemonic(&mut self, m: AsmName) {
        self.mnemonics.push(m);
    }

    /// Moves on to block `b` (never backwards), hashing the strings of the block it leaves.
    fn enter(&mut self, b: usize) {
        if self.current == Some(b) {
            return;
        }
        self.finish();
        self.current = Some(b);
        self.name_ranges[b] = (self.names.len(), self.names.len());
    }

    /// Hashes the current block's strings.
    fn finish(&mut self) {
        let Some(b) = self.current.take() else {
            return;
        };
        self.name_ranges[b].1 = self.names.len();
        self.full_hashes[b] = xxh3_64(&self.full);
        self.full.clear();
        self.finish_mnemonics();
        self.joined.clear();
        for m in &self.mnemonics {
            self.joined.extend_from_slice(m.text.as_bytes());
        }
        self.opcode_hashes[b] = xxh3_64(&self.joined);
        self.mnemonics.clear();
    }

    fn block_names(&self, b: usize) -> &[u8] {
        let (start, end) = self.name_ranges[b];
        &self.names[start..end]
    }

    /// The function's hashes, its hash taken over the blocks in `order` (layout order if
    /// `None`).
    pub(crate) fn hashes(&self, cfg: &Cfg, order: Option<&[usize]>) -> Hashes {
        let mut all = xxhash_rust::xxh3::Xxh3::new();
        match order {
            Some(order) => order.iter().for_each(|&b| all.update(self.block_names(b))),
            None => (0..cfg.blocks.len()).for_each(|b| all.update(self.block_names(b))),
        }
        let opcode_hashes = &self.opcode_hashes;
        // Each block's neighbours' opcode hashes folded in BOLT's order: predecessors by taken
        // edges in block order, then by fall-throughs in block order; successors as listed.
        let mut pred = vec![0u64; cfg.blocks.len()];
        for (i, b) in cfg.blocks.iter().enumerate() {
            let taken = b.successors.len() - usize::from(b.falls_through);
            for &s in &b.successors[..taken] {
                pred[s] = hash_16_bytes(pred[s], opcode_hashes[i]);
            }
        }
        for (i, b) in cfg.blocks.iter().enumerate() {
            if let (true, Some(&s)) = (b.falls_through, b.successors.last()) {
                pred[s] = hash_16_bytes(pred[s], opcode_hashes[i]);
            }
        }
        let blocks = cfg
            .blocks
            .iter()
            .enumerate()
            .map(|(i, block)| {
                let offset = block.offset & 0xffff;
                let opcode = opcode_hashes[i] & 0xffff;
                let instr = self.full_hashes[i] & 0xffff;
                let succ = block
                    .successors
                    .iter()
                    .fold(0u64, |acc, &n| hash_16_bytes(acc, opcode_hashes[n]))
                    & 0xff;
                offset | opcode << 16 | instr << 32 | (pred[i] & 0xff) << 48 | succ << 56
            })
            .collect();
        Hashes {
            function: all.digest(),
            blocks,
        }
    }
}

/// Hashes of `f` given its CFG; an error if an instruction is not in the table.
pub fn hashes(ctx: &Context, f: &Function, cfg: &Cfg, v: Llvm) -> Result<Hashes, String> {
    hashes_in_order(ctx, f, cfg, v, None)
}

/// [`hashes`], with the function hash taken over the blocks in `order` (BOLT's
/// `computeHash(UseDFS)` with the blocks in depth-first order) instead of layout order.
pub fn hashes_in_order(
    ctx: &Context,
    f: &Function,
    cfg: &Cfg,
    v: Llvm,
    order: Option<&[usize]>,
) -> Result<Hashes, String> {
    let mut strings = BlockStrings::default();
    block_strings_into(ctx, f, cfg, v, |_| {}, &mut strings)?;
    Ok(strings.hashes(cfg, order))
}

/// Decodes `f` once, block by block, into the strings BOLT hashes, and hands every decoded
/// instruction to `each` (all of them, also those after the hashing had to stop: a caller
/// that counts on instructions needs the whole function, and a second decode costs more
/// than the hashing). The strings go to `strings`, whatever it held before. An error if an
/// instruction is not in the table.
pub(crate) fn block_strings_into(
    ctx: &Context,
    f: &Function,
    cfg: &Cfg,
    v: Llvm,
    mut each: impl FnMut(&Instruction),
    strings: &mut BlockStrings,
) -> Result<(), String> {
    let code = ctx.functions.function_code(f);
    let mut decoder = Decoder::with_ip(64, code, f.address, DecoderOptions::NONE);
    strings.reset(cfg.blocks.len());
    // Instructions come in address order: each one's block is found moving on from the
    // previous one's, not searched for.
    let mut block = 0;
    // Most binaries have no relocation in most functions: their instructions need no search.
    let end = f.address.saturating_add(f.size);
    let relocated = ctx.relocations.range(f.address..end).next().is_some();
    // `Ok(false)` once an instruction lies in no block: the hashed part has ended.
    let mut hashing: Result<bool, String> = Ok(true);
    let mut ins = Instruction::default();
    while decoder.can_decode() {
        decoder.decode_out(&mut ins);
        if ins.is_invalid() {
            break;
        }
        each(&ins);
        if matches!(hashing, Ok(true)) {
            let offset = ins.ip() - f.address;
            hashing = match cfg.block_containing_from(offset, block) {
                Some(b) => {
                    block = b;
                    let lock = code.get(offset as usize) == Some(&0xf0);
                    let decoded = (&decoder, &ins, lock, relocated);
                    add_instruction(ctx, f, cfg, v, decoded, (b, strings)).map(|()| true)
                }
                // The hashed part of the function ends at the first instruction in no block.
                None => Ok(false),
            };
        }
    }
    hashing?;
    strings.finish();
    Ok(())
}

/// Adds one instruction of block `b` to the block's strings (`decoder` has just decoded
/// `ins`, which starts with a `lock` prefix if `lock`; `relocated` if the function holds a
/// relocation).
fn add_instruction(
    ctx: &Context,
    f: &Function,
    cfg: &Cfg,
    v: Llvm,
    (decoder, ins, lock, relocated): (&Decoder, &Instruction, bool, bool),
    (b, strings): (usize, &mut BlockStrings),
) -> Result<(), String> {
    strings.enter(b);
    if lock {
        // LLVM's disassembler returns a `lock` prefix as an instruction of its own.
        strings.names.extend_from_slice(b"LOCK_PREFIX");
        strings.full.extend_from_slice(b"LOCK_PREFIX");
        strings.add_mnemonic(const { AsmName::new("lock") });
    }
    let h = classify(f, cfg, ins, v)?;
    if h.skipped {
        return Ok(());
    }
    strings.names.extend_from_slice(h.name.as_bytes());
    strings.full.extend_from_slice(h.name.as_bytes());
    // Only immediates: a PC-relative displacement hashes as without relocations (the
    // BAT test checks both against llvm-bolt in relocation mode).
    let reloc = relocated
        .then(|| decoder.get_constant_offsets(ins))
        .filter(|offsets| offsets.has_immediate())
        .and_then(|offsets| {
            let at = ins.ip() + offsets.immediate_offset() as u64;
            ctx.relocations.get(&at)
        });
    for op in h.ops {
        operand(ctx, h.ins, *op, v, reloc, &mut strings.full);
    }
    if h.conditional {
        strings.add_mnemonic(const { AsmName::new("JMP") });
    } else if !h.name.starts_with("NOOP") {
        strings.add_mnemonic(h.mnemonic);
    }
    Ok(())
}

fn classify<'t>(
    f: &Function,
    cfg: &Cfg,
    ins: &'t Instruction,
    v: Llvm,
) -> Result<Hashed<'t>, String> {
    let form = x86::form(ins).ok_or_else(|| format!("{:?} is not in the table", ins.code()))?;
    let (mut name, ops, mut mnemonic) = form.of(v);
    let mut skipped = false;
    let mut conditional = false;
    match ins.flow_control() {
        FlowControl::ConditionalBranch => {
            conditional = true;
            if name.starts_with("JCC_") {
                name = "JCC_1";
            }
        }
        FlowControl::UnconditionalBranch => {
            let internal = matches!(ins.op0_kind(), OpKind::NearBranch64)
                && f.contains(ins.near_branch_target());
            if internal {
                skipped = true;
            } else {
                // A tail call: BOLT rewrites it to the 4-byte form and keeps it.
                name = "JMP_4";
                mnemonic = const { AsmName::new("jmp") };
            }
        }
        FlowControl::IndirectBranch
            if cfg
                .tail_calls
                .binary_search(&(ins.ip() - f.address))
                .is_ok() =>
        {
            // An indirect tail call: BOLT rewrites it to the 32-bit forms' opcodes (whose
            // asm string is `jmp{l}\t{*}$dst`); other indirect jumps keep theirs.
            name = if form.mem { "JMP32m" } else { "JMP32r" };
            mnemonic = const { AsmName::new("jmpl*") };
        }
        _ => {}
    }
    Ok(Hashed {
        name,
        mnemonic,
        ops,
        ins,
        skipped,
        conditional,
    })
}

fn operand(
    ctx: &Context,
    ins: &Instruction,
    op: McOp,
    v: Llvm,
    imm_reloc: Option<&Relocation>,
    out: &mut Vec<u8>,
) {
    let reg = |r: Register| u64::from(x86::register_number(r, v));
    match op {
        McOp::Imm(_) | McOp::ImmSext(..) if let Some(r) = imm_reloc => relocated(ctx, r, out),
        McOp::Reg(i) => push_integer(out, reg(ins.op_register(i))),
        McOp::Fixed(r) => push_integer(out, reg(r)),
        McOp::NoReg => push_integer(out, 0),
        McOp::Imm(i) => push_integer(out, ins.immediate(i)),
        McOp::ImmSext(i, bits) => {
            let x = ins.immediate(i);
            let s = ((x << (64 - bits)) as i64) >> (64 - bits);
            push_integer(out, s as u64)
        }
        McOp::Const(c) => push_integer(out, c as u64),
        McOp::MemBase => push_integer(out, reg(ins.memory_base())),
        McOp::MemScale => push_integer(out, u64::from(ins.memory_index_scale())),
        McOp::MemIndex => push_integer(out, reg(ins.memory_index())),
        McOp::MemDisp if ins.is_ip_rel_memory_operand() => {
            data_reference(ctx, ins.ip_rel_memory_address(), out)
        }
        // An absolute jump-table address: BOLT puts the table's label there.
        McOp::MemDisp if ctx.is_jump_table(ins.memory_displacement64()) => {}
        McOp::MemDisp => push_integer(out, ins.memory_displacement64()),
        McOp::MemSeg => push_integer(out, reg(ins.segment_prefix())),
        McOp::Mask => push_integer(out, reg(ins.op_mask())),
        McOp::Rounding => push_integer(out, rounding_immediate(ins.rounding_control())),
        McOp::Target | McOp::Unknown => {}
    }
}

/// LLVM's immediate for an EVEX rounding mode (`X86::STATIC_ROUNDING`: `TO_NEAREST_INT` 0,
/// `TO_NEG_INF` 1, `TO_POS_INF` 2, `TO_ZERO` 3).
fn rounding_immediate(r: iced_x86::RoundingControl) -> u64 {
    use iced_x86::RoundingControl as R;
    match r {
        R::None | R::RoundToNearest => 0,
        R::RoundDown => 1,
        R::RoundUp => 2,
        R::RoundTowardZero => 3,
    }
}

/// An immediate a relocation covers: BOLT (in relocation mode) makes it `symbol + addend`, and
/// a function's symbol hashes as nothing (`mov $main, %rdi` in `_start`, with
/// `--emit-relocs`). An undefined symbol has no value and hashes as nothing too.
fn relocated(ctx: &Context, r: &Relocation, out: &mut Vec<u8>) {
    let Some(symbol) = r.symbol else {
        return;
    };
    if ctx.functions.index_containing(symbol).is_some() || ctx.is_jump_table(symbol) {
        return;
    }
    push_integer(out, symbol);
    if r.addend != 0 {
        push_integer(out, 0);
        push_integer(out, r.addend as u64);
    }
}

/// A PC-relative reference as BOLT symbolizes it: nothing for a function's code and for
/// jump tables (anywhere inside one); the address itself for other code (the padding after a function's last byte, which
/// no function contains: BOLT makes a `DATAat` symbol there); else the containing data
/// object's address and the addend (`sym + addend` hashes the `Add` opcode, 0).
fn data_reference(ctx: &Context, address: u64, out: &mut Vec<u8>) {
    let functions = ctx.functions;
    let in_function = functions
        .index_containing(address)
        .is_some_and(|i| functions.get(i).contains(address));
    if in_function || ctx.is_jump_table(address) {
        return;
    }
    if functions.is_code(address) {
        return push_integer(out, address);
    }
    match ctx.objects.containing(address) {
        // Inside a jump table (`getJumpTableContainingAddress`): nothing, as at its start.
        Some((name, offset))
            if name.starts_with("JUMP_TABLE/") || ctx.is_jump_table(address - offset) => {}
        Some((_, 0)) | None => push_integer(out, address),
        Some((_, offset)) => {
            push_integer(out, address - offset);
            push_integer(out, 0);
            push_integer(out, offset);
        }
    }
}

/// One function's hashes, by [`binary`].
#[derive(Debug)]
pub struct FunctionHashes {
    /// The function's symbol name.
    pub name: String,
    /// Its address.
    pub address: u64,
    /// Block offsets in layout order.
    pub offsets: Vec<u64>,
    /// The hashes, or why there are none (no CFG, an instruction outside the table).
    pub hashes: Result<Hashes, String>,
}

/// The hashes of every function of a binary that gets a CFG, as BOLT computes them for `v`.
pub fn binary(data: &[u8], functions: &Functions, v: Llvm) -> Vec<FunctionHashes> {
    use super::cfg::{self, Body};
    use rayon::prelude::*;
    let phase_one: Vec<_> = functions
        .iter()
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|f| (f, cfg::disassemble(functions, f)))
        .collect();
    let jump_tables = cfg::TableStarts::of(phase_one.iter().map(|(_, d)| d));
    let objects = DataObjects::from_elf(data, functions);
    let relocations = relocations(data);
    let ctx = Context {
        functions,
        objects: &objects,
        jump_tables: &jump_tables,
        relocations: &relocations,
    };
    phase_one
        .into_par_iter()
        .filter(|(f, _)| !f.is_plt)
        .map(|(f, d)| {
            let body = match d {
                // Secondary entry points are not modelled here yet (issue 18 covers fdata).
                Ok(d) => cfg::finish(functions, f, d, &jump_tables, &[]),
                Err(body) => body,
            };
            let (offsets, hashes) = match body {
                Body::Cfg(cfg) => (
                    cfg.blocks.iter().map(|b| b.offset).collect(),
                    hashes(&ctx, f, &cfg, v),
                ),
                Body::NoCfg(why) => (Vec::new(), Err(why)),
                Body::Pseudo => (Vec::new(), Err("pseudo".into())),
            };
            FunctionHashes {
                name: f.name.clone(),
                address: f.address,
                offsets,
                hashes,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_little_endian_without_high_zeros() {
        let mut v = Vec::new();
        push_integer(&mut v, 0);
        push_integer(&mut v, 0x1234);
        assert_eq!(v, [0, 0x34, 0x12]);
    }

    #[test]
    fn hash_16_bytes_mixes_both_words() {
        assert_eq!(hash_16_bytes(0, 0), 0);
        assert_ne!(hash_16_bytes(1, 2), hash_16_bytes(2, 1));
    }

    proptest::proptest! {
        /// The keyed sort and dedup of a block's mnemonics give what sorting the strings
        /// gives, also for mnemonics longer than a key and sharing its 16 bytes.
        #[test]
        fn mnemonics_sort_by_key_as_strings_sort(
            picks in proptest::collection::vec(0usize..10, 0..40)
        ) {
            const MNEMONICS: [&str; 10] = [
                "mov", "movq", "movabsq", "lock", "JMP", "jmpl*", "vcvtneps2bf16",
                "vpternlogq", "abcdefghijklmnopq", "abcdefghijklmnopr",
            ];
            let chosen: Vec<&'static str> = picks.iter().map(|&i| MNEMONICS[i]).collect();
            let mut strings = BlockStrings::default();
            chosen.iter().for_each(|m| strings.add_mnemonic(AsmName::new(m)));
            strings.finish_mnemonics();
            let keyed: Vec<&str> = strings.mnemonics.iter().map(|m| m.text).collect();
            let mut expected = chosen;
            expected.sort_unstable();
            expected.dedup();
            proptest::prop_assert_eq!(keyed, expected);
        }
    }
}
