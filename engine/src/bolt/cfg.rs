//! Basic blocks of a function as BOLT builds them (`BinaryFunction::disassemble` and
//! `buildCFG`), which is what decides perf2bolt's fall-through lines:
//!
//! * the function's symbol range is disassembled linearly; an undecodable instruction (other
//!   than zero padding at the end) makes the function non-simple: no CFG, no fall-throughs;
//! * blocks start at offset 0, at every internal direct branch target, jump-table entry,
//!   exception landing pad, secondary entry point and target of a call into the function's own
//!   body, and
//!   at the first instruction after a terminator (jumps, returns, `ud2`); an unconditional jump
//!   right after a conditional branch stays in the conditional branch's block;
//! * a secondary entry point off the instructions makes the function non-simple; one with
//!   `jrcxz`, `jecxz` or `loop*` is ignored (BOLT does not support them);
//! * no-ops stay in their blocks (perf2bolt runs no passes, so none removes them): a block's
//!   last instruction may be alignment padding, and fall-through edges then start there;
//! * successors: internal branch targets, jump-table entries, and the next block when the
//!   block can fall through (it has no successor and does not end in a terminator, or ends in a
//!   conditional tail call, or its only successor comes from a conditional branch);
//! * functions split by the compiler (`foo` and its `foo.cold` fragment) get no CFG;
//! * indirect jumps are classified as BOLT does (see `indirect`): jump tables give successors;
//!   a pattern that spans blocks, or an unknown jump in a block without an epilogue, makes the
//!   function non-simple.

use std::collections::BTreeMap;

use iced_x86::{Code, Decoder, DecoderOptions, FlowControl, Instruction, Mnemonic, OpKind};

use super::functions::{Function, Functions};
use super::indirect::{self, Classified, Indirect};

/// What BOLT knows about one function when it turns traces into fall-through edges.
#[derive(Debug)]
pub enum Body {
    /// A PLT stub: traces through it are valid but yield nothing.
    Pseudo,
    /// Not simple (could not be disassembled or analysed): traces through it are invalid.
    NoCfg(String),
    /// A simple function: its control-flow graph.
    Cfg(Cfg),
}

/// A function's control-flow graph as BOLT builds it, offsets relative to the function's start.
#[derive(Debug, Default)]
pub struct Cfg {
    /// Blocks in layout (= address) order.
    pub blocks: Vec<Block>,
    /// The function's size; the last block ends there.
    pub size: u64,
    /// Each block's offset, apart from the blocks so the lookup of every trace end stays in
    /// cache.
    offsets: Vec<u64>,
    /// Offsets of the indirect jumps BOLT rewrites as tail calls (ascending): their opcodes
    /// change, and so do the hashes.
    pub tail_calls: Vec<u64>,
    /// Whether `postProcessIndirectBranches` accepted every indirect jump. perf2bolt 22 walks
    /// fall-throughs in the CFG either way; perf2bolt 19 takes traces in a function that is
    /// not simple for invalid.
    pub simple: bool,
}

/// A basic block: a run of instructions entered only at its start.
#[derive(Debug, Default, Clone)]
pub struct Block {
    /// Offset of the first instruction from the function's start.
    pub offset: u64,
    /// Offset of the last instruction, if any.
    pub last: Option<u64>,
    /// Whether the last instruction is a call (its successor is the call's continuation).
    pub ends_in_call: bool,
    /// Indices of successor blocks. Nearly every block has at most two, held inline: a
    /// vector each was a million allocations for the YAML benchmark's CFGs.
    pub successors: smallvec::SmallVec<[usize; 2]>,
    /// Whether the block is an exception landing pad (reached from the unwinder).
    pub is_landing_pad: bool,
    /// Whether the last successor is the fall-through edge (BOLT adds it after the taken
    /// ones, which decides the predecessors' order).
    pub falls_through: bool,
    /// Whether the block starts at an entry point: offset 0 or a secondary entry.
    pub is_entry: bool,
}

impl Cfg {
    /// A CFG of `blocks` (in address order) for a function of `size` bytes.
    pub(crate) fn new(blocks: Vec<Block>, size: u64) -> Cfg {
        let offsets = blocks.iter().map(|b| b.offset).collect();
        Cfg {
            blocks,
            size,
            offsets,
            tail_calls: Vec::new(),
            simple: true,
        }
    }

    /// BOLT's `getBasicBlockContainingOffset`.
    pub(crate) fn block_containing(&self, offset: u64) -> Option<usize> {
        if offset >= self.size {
            return None;
        }
        self.offsets
            .partition_point(|&o| o <= offset)
            .checked_sub(1)
    }

    /// [`Cfg::block_containing`] for an offset known not to lie before block `from`'s start
    /// (instructions walked in address order): found by moving on from `from`, which is
    /// cheaper than a search when blocks hold a few instructions each.
    pub(crate) fn block_containing_from(&self, offset: u64, from: usize) -> Option<usize> {
        if offset >= self.size || self.offsets.get(from).is_none_or(|&o| o > offset) {
            return None;
        }
        let ahead = self.offsets[from + 1..]
            .iter()
            .take_while(|&&o| o <= offset);
        Some(from + ahead.count())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Other,
    Call,
    /// Conditional branch; `Some(offset)` if the target is inside the function.
    CondBranch(Option<u64>),
    /// Unconditional direct jump; `None` is a tail call.
    Jump(Option<u64>),
    /// Indirect jump: an index into the function's jump tables, or how else BOLT saw it.
    IndirectJump(Dispatch),
    Return,
    Trap,
}

/// Where an indirect jump goes: through a resolved jump table, or out of the function's CFG.
///
/// BOLT calls an unresolved indirect jump a tail call in a one-block function or in a block
/// with an epilogue (`pop`/`leave`); anywhere else it marks the function non-simple
/// (`postProcessIndirectBranches`) but keeps the CFG it built, and perf2bolt still walks
/// fall-throughs in it (found on cargo's 24 MB of code: 136 lines of one such function). In
/// both cases the jump has no successors, so the two need no distinction here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dispatch {
    Table(usize),
    Elsewhere,
}

struct Insn {
    offset: u64,
    kind: Kind,
    epilogue: bool,
}

/// Builds the body of `f` as BOLT would, with the entry points its own symbols and references
/// mark (not those that other functions' references create).
pub fn analyse(functions: &Functions, f: &Function) -> Body {
    match disassemble(functions, f) {
        Ok(d) => {
            if d.unsupported {
                return Body::NoCfg(UNSUPPORTED.into());
            }
            let mut entries = f.entries.clone();
            entries.extend(&d.own_entries);
            entries.sort_unstable();
            entries.dedup();
            finish(functions, f, d, &TableStarts::default(), &entries)
        }
        Err(body) => body,
    }
}

/// Why BOLT ignores a function with `jrcxz`, `jecxz` or `loop*` (or one they jump into).
pub(crate) const UNSUPPORTED: &str = "jrcxz, jecxz or loop, which BOLT does not support";

/// The start addresses of jump tables, ascending and each once: the CFGs bound each table by
/// the next one, and the hashes ask of every memory operand whether a table starts there.
#[derive(Clone, Debug, Default)]
pub(crate) struct TableStarts(Vec<u64>);

impl TableStarts {
    /// The starts among `addresses`.
    pub(crate) fn from_addresses(addresses: impl IntoIterator<Item = u64>) -> TableStarts {
        let mut starts: Vec<u64> = addresses.into_iter().collect();
        starts.sort_unstable();
        starts.dedup();
        TableStarts(starts)
    }

    /// The tables that the disassembled functions among `phase_one` dispatch through.
    pub(crate) fn of<'a, E: 'a>(
        phase_one: impl IntoIterator<Item = &'a Result<Disassembled, E>>,
    ) -> TableStarts {
        Self::from_addresses(
            (phase_one.into_iter())
                .filter_map(|d| d.as_ref().ok())
                .flat_map(|d| d.table_addresses()),
        )
    }

    /// Whether a table starts at `addr`. Most memory operands' displacements (stack offsets)
    /// lie below the first table: those pay two compares.
    pub(crate) fn contains(&self, addr: u64) -> bool {
        match (self.0.first(), self.0.last()) {
            (Some(&first), Some(&last)) if (first..=last).contains(&addr) => {
                self.0.binary_search(&addr).is_ok()
            }
            _ => false,
        }
    }

    /// The first table starting after `address`.
    pub(crate) fn next_after(&self, address: u64) -> Option<u64> {
        self.0
            .get(self.0.partition_point(|&t| t <= address))
            .copied()
    }
}

/// A function decoded, with its indirect jumps classified: the first of two phases, so that
/// jump tables can be bounded by the tables of every function analysed (BOLT bounds each table
/// by the next one it knows of in the whole binary).
pub(crate) struct Disassembled {
    decoded: Vec<Decoded>,
    dispatches: Vec<(usize, Classified)>,
    /// Addresses outside the function that its direct branches and calls and its RIP-relative
    /// operands in code refer to, in instruction order (BOLT's interprocedural references),
    /// but those of functions' starts.
    pub(crate) references: Vec<u64>,
    /// Offsets inside the function that its own RIP-relative operands refer to: BOLT makes
    /// each an entry point, since the address may escape.
    pub(crate) own_entries: Vec<u64>,
    /// Whether it has an instruction BOLT does not support (then BOLT ignores it).
    pub(crate) unsupported: bool,
    /// Targets of those instructions: BOLT ignores the functions holding them too.
    pub(crate) unsupported_targets: Vec<u64>,
    /// The address every RIP-relative operand refers to, in instruction order: the data
    /// objects take them from here instead of decoding the function once more.
    pub(crate) rip_targets: Vec<u64>,
}

/// What phase two needs of an instruction: 12 bytes instead of iced's 40, since the
/// instructions of every touched function are held between the phases (on a binary with 24 MB
/// of code, zeroing the fresh memory for them cost more than decoding them).
#[derive(Clone, Copy, Debug)]
struct Decoded {
    offset: u32,
    /// A direct branch's target as an offset in the function, or `NO_TARGET`.
    target: u32,
    flow: Flow,
    locked: bool,
    /// A `pop` or `leave`: an unknown indirect jump in a block with one is a tail call.
    epilogue: bool,
}

const NO_TARGET: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Other,
    Call,
    CondBranch,
    Jump,
    IndirectJump,
    Return,
    Trap,
}

impl Decoded {
    fn new(ins: &Instruction, f: &Function, code: &[u8]) -> Decoded {
        let offset = ins.ip() - f.address;
        let internal = |target: u64| match f.contains(target) {
            true => (target - f.address) as u32,
            false => NO_TARGET,
        };
        let (flow, target) = match ins.flow_control() {
            FlowControl::ConditionalBranch => {
                (Flow::CondBranch, internal(ins.near_branch_target()))
            }
            FlowControl::UnconditionalBranch if is_near_branch(ins) => {
                (Flow::Jump, internal(ins.near_branch_target()))
            }
            FlowControl::UnconditionalBranch => (Flow::Jump, NO_TARGET),
            FlowControl::IndirectBranch => (Flow::IndirectJump, NO_TARGET),
            FlowControl::Return => (Flow::Return, NO_TARGET),
            // A call into the function's own body gets a label (a block starts there) but no
            // edge (hand-written assembly calls local helpers this way).
            FlowControl::Call if is_near_branch(ins) => {
                (Flow::Call, internal(ins.near_branch_target()))
            }
            FlowControl::Call | FlowControl::IndirectCall => (Flow::Call, NO_TARGET),
            _ if ins.code() == Code::Ud2 => (Flow::Trap, NO_TARGET),
            _ => (Flow::Other, NO_TARGET),
        };
        Decoded {
            offset: offset as u32,
            target,
            flow,
            locked: code.get(offset as usize) == Some(&LOCK),
            epilogue: matches!(ins.mnemonic(), Mnemonic::Pop | Mnemonic::Leave),
        }
    }

    /// BOLT's view of the instruction, given where an indirect jump dispatches to.
    fn kind(&self, dispatch: Dispatch) -> Kind {
        let target = (self.target != NO_TARGET).then_some(u64::from(self.target));
        match self.flow {
            Flow::Other => Kind::Other,
            Flow::Call => Kind::Call,
            Flow::CondBranch => Kind::CondBranch(target),
            Flow::Jump => Kind::Jump(target),
            Flow::IndirectJump => Kind::IndirectJump(dispatch),
            Flow::Return => Kind::Return,
            Flow::Trap => Kind::Trap,
        }
    }
}

impl Disassembled {
    /// The jump tables this function dispatches through, in instruction order.
    pub(crate) fn table_patterns(&self) -> impl Iterator<Item = indirect::Pattern> + '_ {
        self.dispatches.iter().filter_map(|(_, d)| match d.what {
            Indirect::Table(p) => Some(p),
            _ => None,
        })
    }

    /// [`Disassembled::table_patterns`], each with the entries it has before one lands off
    /// the function's instructions (`populateJumpTables` stops a table there once its
    /// function is disassembled; the next table bounds it too, which the caller knows).
    pub(crate) fn sized_table_patterns(
        &self,
        functions: &Functions,
        f: &Function,
    ) -> Vec<(indirect::Pattern, usize)> {
        // Most functions have no jump table: no list of their instruction starts either.
        if self.table_patterns().next().is_none() {
            return Vec::new();
        }
        let starts = self.instruction_starts();
        self.table_patterns()
            .map(|p| {
                (
                    p,
                    indirect::entries(functions, f, p, u64::MAX, Some(&starts)).len(),
                )
            })
            .collect()
    }

    /// Offsets of the instructions as LLVM's disassembler sees them (a leading `lock` is an
    /// instruction of its own), ascending.
    fn instruction_starts(&self) -> Vec<u64> {
        let mut starts: Vec<u64> = Vec::with_capacity(self.decoded.len());
        for ins in &self.decoded {
            starts.push(u64::from(ins.offset));
            if ins.locked {
                starts.push(u64::from(ins.offset) + 1);
            }
        }
        starts
    }

    /// Whether an instruction starts at `offset` (LLVM's disassembler counts a leading `lock`
    /// as an instruction of its own).
    pub(crate) fn has_instruction_at(&self, offset: u64) -> bool {
        let Ok(offset) = u32::try_from(offset) else {
            return false;
        };
        let i = self.decoded.partition_point(|d| d.offset < offset);
        let at = |k: usize| self.decoded.get(k);
        at(i).is_some_and(|d| d.offset == offset)
            || i.checked_sub(1)
                .and_then(at)
                .is_some_and(|d| d.locked && d.offset + 1 == offset)
    }

    /// Start addresses of the jump tables this function dispatches through.
    pub(crate) fn table_addresses(&self) -> impl Iterator<Item = u64> + '_ {
        self.dispatches.iter().filter_map(|(_, d)| match d.what {
            Indirect::Table(p) => Some(p.address),
            _ => None,
        })
    }
}

/// Phase one; `Err` is the final body of functions BOLT gives no CFG.
pub(crate) fn disassemble(functions: &Functions, f: &Function) -> Result<Disassembled, Body> {
    if f.is_plt {
        return Err(Body::Pseudo);
    }
    if f.split {
        // BOLT does not build CFGs for split functions in non-relocation mode.
        return Err(Body::NoCfg("split into fragments (.cold)".into()));
    }
    let code = functions.function_code(f);
    if (code.len() as u64) < f.size {
        return Err(Body::NoCfg("no file data".into()));
    }
    if f.size >= u64::from(NO_TARGET) {
        return Err(Body::NoCfg("larger than 4 GiB".into()));
    }
    INSTRUCTIONS.with_borrow_mut(|instructions| {
        decode(f, code, instructions).map_err(Body::NoCfg)?;
        Ok(disassembled(functions, f, code, instructions))
    })
}

thread_local! {
    /// A function's iced instructions, reused by the thread's next function: they are held
    /// only while the function is disassembled, and growing a fresh vector for each function
    /// was most of the memory this phase allocated.
    static INSTRUCTIONS: std::cell::RefCell<Vec<Instruction>> = std::cell::RefCell::default();
}

/// What phase two needs of `f`'s `instructions`.
fn disassembled(
    functions: &Functions,
    f: &Function,
    code: &[u8],
    instructions: &[Instruction],
) -> Disassembled {
    let dispatches = instructions
        .iter()
        .enumerate()
        .filter(|(_, ins)| ins.flow_control() == FlowControl::IndirectBranch)
        .map(|(i, ins)| (i, indirect::classify(functions, f, &instructions[..i], ins)))
        .collect();
    let decoded = instructions
        .iter()
        .map(|ins| Decoded::new(ins, f, code))
        .collect();
    let mut d = Disassembled {
        decoded,
        dispatches,
        references: Vec::new(),
        own_entries: Vec::new(),
        unsupported: false,
        unsupported_targets: Vec::new(),
        rip_targets: Vec::new(),
    };
    find_references(functions, f, instructions, &mut d);
    d
}

/// BOLT's `disassemble` view of what an instruction refers to: a direct branch or call to an
/// address outside the function (but a jump to its end inside its padding, which BOLT takes
/// for `__builtin_unreachable`), or a RIP-relative operand in code (`handleAddressRef`).
fn find_references(
    functions: &Functions,
    f: &Function,
    instructions: &[Instruction],
    d: &mut Disassembled,
) {
    let end = f.address + f.size;
    // A reference to a function's start creates no entry point, and a function's first
    // instruction is at its start: only references into a body need the serial pass.
    let into_a_body = |target: u64| {
        functions
            .index_containing(target)
            .is_some_and(|i| functions.get(i).address != target)
    };
    for ins in instructions {
        if ins.is_ip_rel_memory_operand() {
            d.rip_targets.push(ins.ip_rel_memory_address());
        }
        if is_unsupported(ins) {
            d.unsupported = true;
            d.unsupported_targets.push(ins.near_branch_target());
        }
        let direct = matches!(
            ins.flow_control(),
            FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch | FlowControl::Call
        ) && is_near_branch(ins);
        if direct {
            let target = ins.near_branch_target();
            let unreachable = target == end && target < f.max_end;
            if !f.contains(target) && !unreachable && into_a_body(target) {
                d.references.push(target);
            }
        } else if ins.is_ip_rel_memory_operand() {
            let target = ins.ip_rel_memory_address();
            if !functions.is_code(target) {
                continue;
            }
            if !f.contains(target) {
                if into_a_body(target) {
                    d.references.push(target);
                }
            } else if target != f.address {
                d.own_entries.push(target - f.address);
            }
        }
    }
}

/// BOLT's `scanExternalRefs` of a function it does not disassemble (lite mode skips the
/// functions without profile): the target of every direct branch or call and of every
/// RIP-relative operand outside the function, up to the first instruction that does not
/// decode. BOLT makes each one that lands inside another function, at a non-zero offset, a
/// secondary entry point of that function, whether or not an instruction starts there.
pub(crate) fn external_references(functions: &Functions, f: &Function, mut found: impl FnMut(u64)) {
    if f.is_plt {
        return;
    }
    let code = functions.function_code(f);
    let mut decoder = Decoder::with_ip(64, code, f.address, DecoderOptions::NONE);
    let mut ins = Instruction::default();
    while decoder.can_decode() {
        decoder.decode_out(&mut ins);
        if !llvm_decodes(&ins) {
            break;
        }
        let target = if ins.is_ip_rel_memory_operand() {
            ins.ip_rel_memory_address()
        } else if matches!(
            ins.flow_control(),
            FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch | FlowControl::Call
        ) && is_near_branch(&ins)
        {
            ins.near_branch_target()
        } else {
            continue;
        };
        if !f.contains(target) {
            found(target);
        }
    }
}

/// `X86MCPlusBuilder::isUnsupportedInstruction`: the short-displacement branches BOLT gives up
/// on.
fn is_unsupported(ins: &Instruction) -> bool {
    use iced_x86::Mnemonic::*;
    matches!(ins.mnemonic(), Jrcxz | Jecxz | Jcxz | Loop | Loope | Loopne)
}

/// Phase two: blocks and edges, each jump table bounded by the next of `known_tables` (and of
/// the function's own tables); `entries` are the offsets of the secondary entry points,
/// ascending.
pub(crate) fn finish(
    functions: &Functions,
    f: &Function,
    d: Disassembled,
    known_tables: &TableStarts,
    entries: &[u64],
) -> Body {
    let (insns, tables) = lay_out(functions, f, &d, known_tables);
    let call_targets: Vec<u64> = d
        .decoded
        .iter()
        .filter(|ins| ins.flow == Flow::Call && ins.target != NO_TARGET)
        .map(|ins| u64::from(ins.target))
        .collect();
    let sites: Vec<Site> = d
        .dispatches
        .iter()
        .map(|&(i, c)| Site {
            offset: u64::from(d.decoded[i].offset),
            what: c.what,
            reach: c.reach.map(|r| u64::from(d.decoded[r].offset)),
        })
        .collect();
    match build(f, &insns, &tables, entries, &call_targets) {
        Ok(mut cfg) => {
            (cfg.tail_calls, cfg.simple) = tail_calls(&cfg, &insns, &sites);
            Body::Cfg(cfg)
        }
        Err(why) => Body::NoCfg(why),
    }
}

/// An indirect jump as BOLT classified it while disassembling.
struct Site {
    offset: u64,
    what: Indirect,
    /// The offset of the first instruction its pattern uses.
    reach: Option<u64>,
}

/// The indirect jumps BOLT rewrites as tail calls: those it took for tail calls while
/// disassembling, then what `postProcessIndirectBranches` (without `--strict`) decides over
/// the blocks in layout order: in a one-block function, the first indirect jump; else an
/// unknown jump in a block with a `pop` or `leave`. It stops at the first unknown jump in a
/// block without one, or at the first table or tail call whose pattern starts before its block
/// (the function is then not simple): jumps after that stay as they are (seen on cargo:
/// `jmp *free@GOTPCREL(%rip)` after an epilogue keeps `JMP64m` behind such a jump). Also says
/// whether the function stays simple.
fn tail_calls(cfg: &Cfg, insns: &[Insn], sites: &[Site]) -> (Vec<u64>, bool) {
    let mut simple = true;
    let mut out: Vec<u64> = sites
        .iter()
        .filter(|s| s.what == Indirect::TailCall)
        .map(|s| s.offset)
        .collect();
    if cfg.blocks.len() == 1 {
        out.extend(sites.first().map(|s| s.offset));
    } else {
        let mut epilogue = vec![false; cfg.blocks.len()];
        for insn in insns.iter().filter(|i| i.epilogue) {
            if let Some(b) = cfg.block_containing(insn.offset) {
                epilogue[b] = true;
            }
        }
        for site in sites {
            let Some(b) = cfg.block_containing(site.offset) else {
                break;
            };
            let in_block = |r: Option<u64>| r.is_some_and(|r| r >= cfg.blocks[b].offset);
            match site.what {
                Indirect::TailCall | Indirect::Table(_) if in_block(site.reach) => {}
                Indirect::Unknown if epilogue[b] => out.push(site.offset),
                _ => {
                    simple = false;
                    break;
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    (out, simple)
}

const LOCK: u8 = 0xf0;

/// Linear disassembly; an error says why the function is not simple.
fn decode(f: &Function, code: &[u8], decoded: &mut Vec<Instruction>) -> Result<(), String> {
    let mut decoder = Decoder::with_ip(64, code, f.address, DecoderOptions::NONE);
    decoded.clear();
    while decoder.can_decode() {
        let pos = decoder.position();
        let ins = decoder.decode();
        if !llvm_decodes(&ins) {
            // Assembly functions may end in zero padding.
            if code[pos..].iter().all(|&b| b == 0) {
                break;
            }
            return Err(format!("cannot decode the instruction at offset {pos:#x}"));
        }
        decoded.push(ins);
    }
    Ok(())
}

/// Whether LLVM's disassembler (BOLT's) decodes `ins`: iced also knows a few VIA PadLock and
/// Zhaoxin instructions that LLVM does not (`xsha512`, as in OpenSSL's
/// `padlock_sha512_blocks`, and its `_alt` form, `xstore_alt`, the GMI `ccs_hash` and
/// `ccs_encrypt`); BOLT cannot disassemble a function holding one.
fn llvm_decodes(ins: &Instruction) -> bool {
    use iced_x86::Mnemonic::*;
    !ins.is_invalid()
        && !matches!(
            ins.mnemonic(),
            Xsha512 | Xsha512_alt | Xstore_alt | Ccs_hash | Ccs_encrypt
        )
}

/// Instructions with BOLT's offsets and kinds, and the entries of each jump table.
fn lay_out(
    functions: &Functions,
    f: &Function,
    d: &Disassembled,
    known_tables: &TableStarts,
) -> (Vec<Insn>, Vec<Vec<u64>>) {
    let (decoded, dispatches) = (&d.decoded, &d.dispatches);
    let starts = d.instruction_starts();
    let (table_of, tables) = read_tables(functions, f, dispatches, &starts, known_tables);
    let mut insns = Vec::with_capacity(decoded.len());
    for (i, ins) in decoded.iter().enumerate() {
        let mut offset = u64::from(ins.offset);
        if ins.locked {
            // LLVM's disassembler returns a leading `lock` as an instruction of its own.
            insns.push(Insn {
                offset,
                kind: Kind::Other,
                epilogue: false,
            });
            offset += 1;
        }
        let dispatch = table_of
            .get(&i)
            .map_or(Dispatch::Elsewhere, |&t| Dispatch::Table(t));
        insns.push(Insn {
            offset,
            kind: ins.kind(dispatch),
            epilogue: ins.epilogue,
        });
    }
    (insns, tables)
}

/// Entries of every recognised table, each bounded by the next table of the function.
fn read_tables(
    functions: &Functions,
    f: &Function,
    dispatches: &[(usize, Classified)],
    starts: &[u64],
    known_tables: &TableStarts,
) -> (BTreeMap<usize, usize>, Vec<Vec<u64>>) {
    let patterns: Vec<(usize, indirect::Pattern)> = dispatches
        .iter()
        .filter_map(|&(i, d)| match d.what {
            Indirect::Table(p) => Some((i, p)),
            _ => None,
        })
        .collect();
    let own = TableStarts::from_addresses(patterns.iter().map(|(_, p)| p.address));
    // The next table after `address`, of this function or of any other one.
    let next_table = |address: u64| {
        (own.next_after(address).into_iter())
            .chain(known_tables.next_after(address))
            .min()
            .unwrap_or(u64::MAX)
    };
    let mut table_of = BTreeMap::new();
    let mut tables = Vec::new();
    for (i, p) in patterns {
        let limit = next_table(p.address);
        let entries = indirect::entries(functions, f, p, limit, Some(starts));
        if !entries.is_empty() {
            table_of.insert(i, tables.len());
            tables.push(entries);
        }
    }
    (table_of, tables)
}

fn is_near_branch(ins: &Instruction) -> bool {
    matches!(
        ins.op0_kind(),
        OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
    )
}

/// Blocks and edges from the instruction list; an error if a branch or an entry point lands
/// mid-instruction.
fn build(
    f: &Function,
    insns: &[Insn],
    tables: &[Vec<u64>],
    entries: &[u64],
    call_targets: &[u64],
) -> Result<Cfg, String> {
    let is_start = |offset: u64| insns.binary_search_by_key(&offset, |i| i.offset).is_ok();
    // `postProcessEntryPoints`: an entry point off the instructions (or past them) makes the
    // function non-simple.
    if let Some(e) = entries.iter().find(|&&e| e != 0 && !is_start(e)) {
        return Err(format!("entry point {e:#x} is not at an instruction"));
    }
    let mut labels: Vec<u64> = vec![0];
    labels.extend(f.landing_pads.iter().copied());
    labels.extend(entries.iter().copied());
    labels.extend(call_targets.iter().copied());
    for insn in insns {
        match insn.kind {
            Kind::CondBranch(Some(t)) | Kind::Jump(Some(t)) => labels.push(t),
            Kind::IndirectJump(Dispatch::Table(table)) => labels.extend(&tables[table]),
            _ => {}
        }
    }
    labels.sort_unstable();
    labels.dedup();
    // Entries at the function's end (`__builtin_unreachable`) have no block.
    labels.retain(|&l| l < f.size);
    if let Some(l) = labels.iter().find(|&&l| !is_start(l)) {
        return Err(format!("branch target {l:#x} is inside an instruction"));
    }
    // Every label is an instruction's start (checked above): walking both lists in order
    // meets each one, without a search per instruction.
    let mut labels_ahead = labels.iter().peekable();
    let mut blocks: Vec<Block> = Vec::new();
    // Per block: the kind of its last instruction, and its instructions' range in `insns`.
    let mut last_kind: Vec<Option<Kind>> = Vec::new();
    let mut members: Vec<std::ops::Range<usize>> = Vec::new();
    let mut open = false;
    for (n, insn) in insns.iter().enumerate() {
        if labels_ahead.next_if_eq(&&insn.offset).is_some() {
            blocks.push(Block::at(insn.offset));
            last_kind.push(None);
            members.push(n..n);
            open = true;
        }
        if !open {
            let joins_previous = matches!(insn.kind, Kind::Jump(Some(_)))
                && matches!(last_kind.last(), Some(Some(Kind::CondBranch(Some(_)))));
            if !joins_previous {
                blocks.push(Block::at(insn.offset));
                last_kind.push(None);
                members.push(n..n);
            }
            open = true;
        }
        let b = blocks.len() - 1;
        blocks[b].last = Some(insn.offset);
        blocks[b].ends_in_call = insn.kind == Kind::Call;
        last_kind[b] = Some(insn.kind);
        members[b].end = n + 1;
        if is_terminator(insn.kind) {
            open = false;
        }
    }
    add_edges(&mut blocks, &last_kind, &members, insns, tables);
    for b in blocks.iter_mut() {
        b.is_landing_pad = f.landing_pads.binary_search(&b.offset).is_ok();
        b.is_entry = b.offset == 0 || entries.binary_search(&b.offset).is_ok();
    }
    Ok(Cfg::new(blocks, f.size))
}

impl Block {
    fn at(offset: u64) -> Block {
        Block {
            offset,
            ..Block::default()
        }
    }
}

fn is_terminator(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::CondBranch(_) | Kind::Jump(_) | Kind::IndirectJump(_) | Kind::Return | Kind::Trap
    )
}

/// Taken edges from every branch in a block, then BOLT's fall-through rule.
fn add_edges(
    blocks: &mut [Block],
    last_kind: &[Option<Kind>],
    members: &[std::ops::Range<usize>],
    insns: &[Insn],
    tables: &[Vec<u64>],
) {
    // Blocks are in ascending offset order.
    let offsets: Vec<u64> = blocks.iter().map(|b| b.offset).collect();
    let block_at = |offset: u64| offsets.binary_search(&offset).ok();
    // One branch's target blocks; reused (a vector per branch was a million allocations on
    // the YAML benchmark).
    let mut to: Vec<usize> = Vec::new();
    for (b, range) in members.iter().enumerate() {
        for insn in &insns[range.clone()] {
            let targets: &[u64] = match &insn.kind {
                Kind::CondBranch(Some(t)) | Kind::Jump(Some(t)) => std::slice::from_ref(t),
                Kind::IndirectJump(Dispatch::Table(table)) => &tables[*table],
                _ => continue,
            };
            // BOLT sorts and dedups its (branch offset, target offset) pairs before adding the
            // edges: a jump table's targets come in offset order, each once.
            to.clear();
            to.extend(targets.iter().filter_map(|&t| block_at(t)));
            to.sort_unstable();
            to.dedup();
            blocks[b].successors.extend_from_slice(&to);
        }
    }
    for b in 0..blocks.len() {
        let falls_through = match last_kind[b] {
            None => true,
            Some(kind) => match blocks[b].successors.len() {
                0 => !is_terminator(kind) || kind == Kind::CondBranch(None),
                1 => matches!(kind, Kind::CondBranch(_)),
                _ => false,
            },
        };
        if falls_through && b + 1 < blocks.len() {
            blocks[b].successors.push(b + 1);
            blocks[b].falls_through = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Walking offsets in ascending order, moving on from the last block found finds what
        /// the search finds, until the first offset in no block.
        #[test]
        fn moving_on_from_the_last_block_finds_what_the_search_finds(
            mut starts in proptest::collection::btree_set(0u64..200, 1..12),
            offsets in proptest::collection::btree_set(0u64..240, 0..60),
        ) {
            starts.insert(3);
            let blocks = starts.iter().map(|&offset| Block { offset, ..Block::default() });
            let cfg = Cfg::new(blocks.collect(), 220);
            let mut from = 0;
            for offset in offsets {
                let searched = cfg.block_containing(offset);
                let walked = cfg.block_containing_from(offset, from);
                if searched.is_none() || walked.is_none() {
                    // The walk ends at the first offset in no block, as the hashes' walk does.
                    proptest::prop_assert_eq!(walked, searched);
                    break;
                }
                proptest::prop_assert_eq!(walked, searched);
                from = walked.unwrap();
            }
        }
    }
}
