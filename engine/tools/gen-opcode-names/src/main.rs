//! Generates `engine/src/bolt/x86_names.rs`: for every 64-bit iced-x86 `Code` (in its register
//! and its memory form, and for EVEX codes in each masking, broadcast and rounding variant iced
//! can encode, which LLVM names apart: `…rmk`, `…rmkz`, `…rmb`, `…rrb`), the LLVM MC opcode name, the AT&T mnemonic and the layout of the
//! `MCInst` operands that LLVM's disassembler produces, plus LLVM 19's register numbers.
//!
//! Method: build one representative instruction per form with iced-x86 (distinct registers and
//! immediates per operand, so that each `MCOperand` can be traced back to an iced operand),
//! encode it, and disassemble all of them with `llvm-mc --disassemble --show-inst` of LLVM 19
//! and 22. LLVM 22 prints register names, LLVM 19 register numbers: the pair gives the numbers.
//!
//! The mnemonics come from LLVM itself: `mnemonic-probe.cpp`, compiled here with `clang++-19`
//! against each release's `libLLVM` (`llvm-config --cxxflags`), prints
//! `MCInstPrinter::getMnemonic`, which is what BOLT hashes and which differs from the printed
//! text (`callq*` for `call *%rax`, `shll%cl,` for `shl %cl, %eax`, `loop` for an
//! `addr32 loop`, …). It also lists each release's register numbers; the generator checks that
//! 19 and 22 number every register alike (they do: 386 registers), so one table serves both.
//!
//! Usage: `cargo run --manifest-path engine/tools/gen-opcode-names/Cargo.toml --release --
//! OUT.rs [LLVM19_MC LLVM22_MC]`. Also `--check N MC` re-derives (used by the tests through the
//! generated file's format, not through this binary).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};

use iced_x86::{
    Code, Encoder, EncodingKind, Instruction, OpCodeOperandKind as K, OpKind, Register,
    RoundingControl,
};

const MARKER_IMM: u64 = 0x7a7a_7a7a_7a7a_7a7a;
const IP: u64 = 0x1000;
const TARGET: u64 = 0x1040;
const DISP: u64 = 0x5678;
const SCALE: u32 = 4;

/// One representative instruction.
struct Sample {
    code: Code,
    mem: bool,
    /// The EVEX variant (`x86.rs`'s `VARIANT_*` bits): masking, broadcast, rounding/SAE.
    variant: u8,
    ins: Instruction,
    bytes: Vec<u8>,
}

/// `x86.rs`'s variant bits: LLVM names EVEX forms apart by them (`…rmk`, `…rmkz`, `…rmb`,
/// `…rrb`), and masking adds `MCOperand`s.
const VARIANT_MASK: u8 = 1;
const VARIANT_ZERO: u8 = 2;
const VARIANT_BROADCAST: u8 = 4;
const VARIANT_ROUNDING: u8 = 8;

/// The mask register of masked samples: no other operand of a sample uses it.
const MASK: Register = Register::K7;
/// The rounding of rounding samples: `{rz-sae}`, LLVM's immediate 3 (`X86::TO_ZERO`).
const ROUNDING: RoundingControl = RoundingControl::RoundTowardZero;
const ROUNDING_IMM: i64 = 3;

/// The EVEX variants of a form that iced can express: each a set of `VARIANT_*` bits.
fn variants(code: Code, mem: bool) -> Vec<u8> {
    let oc = code.op_code();
    if oc.encoding() != EncodingKind::EVEX {
        return vec![0];
    }
    let masks: Vec<u8> = if oc.require_op_mask_register() {
        vec![VARIANT_MASK]
    } else if oc.can_use_op_mask_register() {
        let mut m = vec![0, VARIANT_MASK];
        if oc.can_use_zeroing_masking() {
            m.push(VARIANT_MASK | VARIANT_ZERO);
        }
        m
    } else {
        vec![0]
    };
    let mut extra = vec![0];
    if mem && oc.can_broadcast() {
        extra.push(VARIANT_BROADCAST);
    }
    if !mem && (oc.can_use_rounding_control() || oc.can_suppress_all_exceptions()) {
        extra.push(VARIANT_ROUNDING);
    }
    let mut out = Vec::new();
    for &e in &extra {
        for &m in &masks {
            out.push(m | e);
        }
    }
    out
}

/// Sets `variant`'s masking, broadcast and rounding on a sample.
fn apply_variant(ins: &mut Instruction, variant: u8) {
    if variant & VARIANT_MASK != 0 {
        ins.set_op_mask(MASK);
        ins.set_zeroing_masking(variant & VARIANT_ZERO != 0);
    }
    if variant & VARIANT_BROADCAST != 0 {
        ins.set_is_broadcast(true);
    }
    if variant & VARIANT_ROUNDING != 0 {
        if ins.code().op_code().can_use_rounding_control() {
            ins.set_rounding_control(ROUNDING);
        } else {
            ins.set_suppress_all_exceptions(true);
        }
    }
}

#[derive(Clone, Debug)]
struct McInst {
    name: String,
    text: String,
    ops: Vec<McOp>,
}

#[derive(Clone, Debug, PartialEq)]
enum McOp {
    Reg(String),
    Imm(i64),
    Other(String),
}

fn gpr(kind: u8, i: usize) -> Register {
    use Register::*;
    let r64 = [RCX, RDX, RBX, R9, R10, R11];
    let r32 = [ECX, EDX, EBX, R9D, R10D, R11D];
    let r16 = [CX, DX, BX, R9W, R10W, R11W];
    let r8 = [CL, DL, BL, R9L, R10L, R11L];
    match kind {
        8 => r8[i],
        16 => r16[i],
        32 => r32[i],
        _ => r64[i],
    }
}

fn nth(base: Register, i: usize) -> Register {
    Register::values()
        .nth(base as usize + i)
        .expect("register in range")
}

/// The operand an iced operand kind gets in the sample; `None` if unsupported.
fn set_operand(ins: &mut Instruction, i: u32, kind: K, mem: bool) -> Option<()> {
    use Register::*;
    let n = i as usize;
    let reg = |ins: &mut Instruction, r: Register| {
        ins.set_op_kind(i, OpKind::Register);
        ins.set_op_register(i, r);
    };
    let memory = |ins: &mut Instruction, index: Register, scale: u32| {
        ins.set_op_kind(i, OpKind::Memory);
        ins.set_memory_base(RSI);
        ins.set_memory_index(index);
        ins.set_memory_index_scale(scale);
        ins.set_memory_displacement64(DISP);
        ins.set_memory_displ_size(8);
    };
    match kind {
        K::r8_or_mem
        | K::r16_or_mem
        | K::r32_or_mem
        | K::r64_or_mem
        | K::r32_or_mem_mpx
        | K::r64_or_mem_mpx
        | K::mm_or_mem
        | K::xmm_or_mem
        | K::ymm_or_mem
        | K::zmm_or_mem
        | K::bnd_or_mem_mpx
        | K::k_or_mem
            if mem =>
        {
            memory(ins, RDI, SCALE)
        }
        K::r8_or_mem | K::r8_reg | K::r8_opcode => reg(ins, gpr(8, n)),
        K::r16_or_mem | K::r16_reg | K::r16_reg_mem | K::r16_rm | K::r16_opcode => {
            reg(ins, gpr(16, n))
        }
        K::r32_or_mem
        | K::r32_or_mem_mpx
        | K::r32_reg
        | K::r32_reg_mem
        | K::r32_rm
        | K::r32_opcode
        | K::r32_vvvv => reg(ins, gpr(32, n)),
        K::r64_or_mem
        | K::r64_or_mem_mpx
        | K::r64_reg
        | K::r64_reg_mem
        | K::r64_rm
        | K::r64_opcode
        | K::r64_vvvv => reg(ins, gpr(64, n)),
        K::seg_reg => reg(ins, [FS, GS, ES][n.min(2)]),
        K::k_or_mem | K::k_reg | K::k_rm | K::k_vvvv => reg(ins, nth(K1, n)),
        K::kp1_reg => reg(ins, K2),
        K::mm_or_mem | K::mm_reg | K::mm_rm => reg(ins, nth(MM1, n)),
        K::xmm_or_mem | K::xmm_reg | K::xmm_rm | K::xmm_vvvv | K::xmm_is4 | K::xmm_is5 => {
            reg(ins, nth(XMM1, n))
        }
        K::xmmp3_vvvv => reg(ins, XMM4),
        K::ymm_or_mem | K::ymm_reg | K::ymm_rm | K::ymm_vvvv | K::ymm_is4 | K::ymm_is5 => {
            reg(ins, nth(YMM1, n))
        }
        K::zmm_or_mem | K::zmm_reg | K::zmm_rm | K::zmm_vvvv => reg(ins, nth(ZMM1, n)),
        K::zmmp3_vvvv => reg(ins, ZMM4),
        K::cr_reg => reg(ins, CR2),
        K::dr_reg => reg(ins, DR1),
        K::bnd_or_mem_mpx | K::bnd_reg => reg(ins, nth(BND1, n)),
        K::tmm_reg | K::tmm_rm | K::tmm_vvvv => reg(ins, nth(TMM1, n)),
        K::es => reg(ins, ES),
        K::cs => reg(ins, CS),
        K::ss => reg(ins, SS),
        K::ds => reg(ins, DS),
        K::fs => reg(ins, FS),
        K::gs => reg(ins, GS),
        K::al => reg(ins, AL),
        K::cl => reg(ins, CL),
        K::ax => reg(ins, AX),
        K::dx => reg(ins, DX),
        K::eax => reg(ins, EAX),
        K::rax => reg(ins, RAX),
        K::st0 => reg(ins, ST0),
        K::sti_opcode => reg(ins, ST2),
        K::mem | K::sibmem => memory(ins, RDI, SCALE),
        K::mem_mpx | K::mem_mib => memory(ins, RDI, 1),
        K::mem_vsib32x | K::mem_vsib64x => memory(ins, XMM7, SCALE),
        K::mem_vsib32y | K::mem_vsib64y => memory(ins, YMM7, SCALE),
        K::mem_vsib32z | K::mem_vsib64z => memory(ins, ZMM7, SCALE),
        K::mem_offs => {
            ins.set_op_kind(i, OpKind::Memory);
            ins.set_memory_displacement64(0x1234_5678_9abc);
            ins.set_memory_displ_size(8);
        }
        K::imm8 if i >= 1 && (1..i).any(|j| ins.op_kind(j) == OpKind::Immediate8) => {
            ins.set_op_kind(i, OpKind::Immediate8_2nd);
            ins.set_immediate8_2nd(0x3c);
        }
        K::imm8 => {
            ins.set_op_kind(i, OpKind::Immediate8);
            ins.set_immediate8(0x9a);
        }
        K::imm8_const_1 => {
            ins.set_op_kind(i, OpKind::Immediate8);
            ins.set_immediate8(1);
        }
        K::imm8sex16 => {
            ins.set_op_kind(i, OpKind::Immediate8to16);
            ins.set_immediate8to16(-0x66);
        }
        K::imm8sex32 => {
            ins.set_op_kind(i, OpKind::Immediate8to32);
            ins.set_immediate8to32(-0x66);
        }
        K::imm8sex64 => {
            ins.set_op_kind(i, OpKind::Immediate8to64);
            ins.set_immediate8to64(-0x66);
        }
        K::imm16 => {
            ins.set_op_kind(i, OpKind::Immediate16);
            ins.set_immediate16(0x9abc);
        }
        K::imm32 => {
            ins.set_op_kind(i, OpKind::Immediate32);
            ins.set_immediate32(0x9abc_def0);
        }
        K::imm32sex64 => {
            ins.set_op_kind(i, OpKind::Immediate32to64);
            ins.set_immediate32to64(-0x6543_2110);
        }
        K::imm64 => {
            ins.set_op_kind(i, OpKind::Immediate64);
            ins.set_immediate64(0x9abc_def0_1234_5678);
        }
        K::br64_1 | K::br64_4 | K::xbegin_4 => {
            ins.set_op_kind(i, OpKind::NearBranch64);
            ins.set_near_branch64(TARGET);
        }
        K::seg_rSI => {
            ins.set_op_kind(i, OpKind::MemorySegRSI);
            ins.set_memory_base(RSI);
        }
        K::es_rDI => {
            ins.set_op_kind(i, OpKind::MemoryESRDI);
            ins.set_memory_base(RDI);
        }
        K::seg_rDI => {
            ins.set_op_kind(i, OpKind::MemorySegRDI);
            ins.set_memory_base(RDI);
        }
        K::seg_rBX_al => {
            ins.set_op_kind(i, OpKind::Memory);
            ins.set_memory_base(RBX);
            ins.set_memory_index(AL);
            ins.set_memory_index_scale(1);
        }
        _ => return Option::None,
    }
    Some(())
}

fn is_rm(kind: K) -> bool {
    matches!(
        kind,
        K::r8_or_mem
            | K::r16_or_mem
            | K::r32_or_mem
            | K::r64_or_mem
            | K::r32_or_mem_mpx
            | K::r64_or_mem_mpx
            | K::mm_or_mem
            | K::xmm_or_mem
            | K::ymm_or_mem
            | K::zmm_or_mem
            | K::bnd_or_mem_mpx
            | K::k_or_mem
    )
}

fn has_mem(kind: K) -> bool {
    matches!(
        kind,
        K::mem
            | K::sibmem
            | K::mem_mpx
            | K::mem_mib
            | K::mem_offs
            | K::mem_vsib32x
            | K::mem_vsib64x
            | K::mem_vsib32y
            | K::mem_vsib64y
            | K::mem_vsib32z
            | K::mem_vsib64z
    )
}

fn encode(ins: &Instruction) -> Option<Vec<u8>> {
    let mut e = Encoder::new(64);
    if let Err(err) = e.encode(ins, IP) {
        if std::env::var_os("GEN_DEBUG").is_some() {
            eprintln!("{:?}: {err}", ins.code());
        }
        return None;
    }
    Some(e.take_buffer())
}

fn samples() -> (Vec<Sample>, Vec<Code>) {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for code in Code::values() {
        let oc = code.op_code();
        if !oc.is_instruction()
            || !oc.mode64()
            || matches!(
                oc.encoding(),
                EncodingKind::MVEX | EncodingKind::D3NOW
            )
        {
            continue;
        }
        let kinds: Vec<K> = (0..oc.op_count()).map(|i| oc.op_kind(i)).collect();
        let rm = kinds.iter().any(|&k| is_rm(k));
        let memory_only = kinds.iter().any(|&k| has_mem(k));
        let forms: &[bool] = if rm { &[false, true] } else { &[memory_only] };
        for &mem in forms {
            for variant in variants(code, mem) {
                let mut ins = Instruction::with(code);
                ins.set_ip(IP);
                let ok = kinds
                    .iter()
                    .enumerate()
                    .all(|(i, &k)| set_operand(&mut ins, i as u32, k, mem).is_some());
                apply_variant(&mut ins, variant);
                match ok.then(|| encode(&ins)).flatten() {
                    Some(bytes) => {
                        ins.set_len(bytes.len());
                        out.push(Sample {
                            code,
                            mem,
                            variant,
                            ins,
                            bytes,
                        })
                    }
                    // Variants iced cannot encode are left to the plain form's row.
                    None if variant != 0 => {}
                    None => skipped.push(code),
                }
            }
        }
    }
    (out, skipped)
}

/// Register probes: `mov reg, reg` (or the class's move) for every register BOLT may meet.
fn register_probes() -> Vec<(Register, Vec<u8>)> {
    let mut out = Vec::new();
    let mut add = |code: Code, a: Register, r: Register| {
        if let Ok(mut ins) = Instruction::with2(code, a, r) {
            ins.set_ip(IP);
            if let Some(b) = encode(&ins) {
                out.push((r, b));
            }
        }
    };
    for r in Register::values() {
        let code = if r.is_gpr64() {
            Code::Mov_rm64_r64
        } else if r.is_gpr32() {
            Code::Mov_rm32_r32
        } else if r.is_gpr16() {
            Code::Mov_rm16_r16
        } else if r.is_gpr8() {
            Code::Mov_rm8_r8
        } else if r.is_xmm() {
            Code::EVEX_Vmovaps_xmm_k1z_xmmm128
        } else if r.is_ymm() {
            Code::EVEX_Vmovaps_ymm_k1z_ymmm256
        } else if r.is_zmm() {
            Code::EVEX_Vmovaps_zmm_k1z_zmmm512
        } else if r.is_k() {
            Code::VEX_Kmovw_kr_km16
        } else if r.is_mm() {
            Code::Movq_mm_mmm64
        } else if r.is_st() {
            Code::Fxch_st0_sti
        } else if r.is_segment_register() {
            Code::Mov_r64m16_Sreg
        } else if r.is_cr() {
            Code::Mov_r64_cr
        } else if r.is_dr() {
            Code::Mov_r64_dr
        } else if r.is_bnd() {
            Code::Bndmov_bnd_bndm128
        } else {
            continue;
        };
        match code {
            Code::Fxch_st0_sti => add(code, Register::ST0, r),
            Code::Mov_r64m16_Sreg | Code::Mov_r64_cr | Code::Mov_r64_dr => {
                add(code, Register::RAX, r)
            }
            _ => add(code, r, r),
        }
    }
    out
}

fn marker() -> Vec<u8> {
    let ins = Instruction::with2(Code::Mov_r64_imm64, Register::R15, MARKER_IMM).unwrap();
    encode(&ins).unwrap()
}

/// Disassembles each byte string with `mc`; one entry per input, `None` where LLVM did not
/// decode exactly one instruction.
fn disassemble(mc: &str, inputs: &[&[u8]]) -> Vec<Option<McInst>> {
    let marker = marker();
    let mut text = String::new();
    for bytes in inputs {
        for chunk in [*bytes, &marker[..]] {
            text.push('[');
            for b in chunk {
                write!(text, "0x{b:02x} ").unwrap();
            }
            text.push_str("]\n");
        }
    }
    let mut child = Command::new(mc)
        .args([
            "--disassemble",
            "--show-inst",
            "-triple=x86_64-unknown-linux-gnu",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{mc}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let insts = parse(&String::from_utf8_lossy(&out.stdout));
    let is_marker =
        |m: &McInst| m.name == "MOV64ri" && m.ops.get(1) == Some(&McOp::Imm(MARKER_IMM as i64));
    let mut groups = vec![Vec::new()];
    for m in insts {
        if is_marker(&m) {
            groups.push(Vec::new());
        } else {
            groups.last_mut().unwrap().push(m);
        }
    }
    assert_eq!(groups.len(), inputs.len() + 1, "{mc}: lost sync");
    groups
        .into_iter()
        .take(inputs.len())
        .map(|mut g| (g.len() == 1).then(|| g.pop().unwrap()))
        .collect()
}

fn parse(out: &str) -> Vec<McInst> {
    let mut insts: Vec<McInst> = Vec::new();
    for line in out.lines() {
        if let Some(at) = line.find("<MCInst #") {
            let rest = &line[at + "<MCInst #".len()..];
            let rest = rest.split_once(' ').map(|(_, r)| r).unwrap_or("");
            let name = rest
                .trim_end_matches('>')
                .split(' ')
                .next()
                .unwrap()
                .to_string();
            let text = line[..at]
                .trim()
                .trim_end_matches('#')
                .trim()
                .replace('\t', " ");
            insts.push(McInst {
                name,
                text,
                ops: Vec::new(),
            });
        } else if let Some(at) = line.find("<MCOperand ") {
            let body = line[at + "<MCOperand ".len()..].trim_end_matches('>');
            let op = if let Some(r) = body.strip_prefix("Reg:") {
                McOp::Reg(r.to_string())
            } else if let Some(v) = body.strip_prefix("Imm:") {
                McOp::Imm(v.parse().unwrap())
            } else {
                McOp::Other(body.to_string())
            };
            insts.last_mut().unwrap().ops.push(op);
        }
    }
    insts
}

/// LLVM's name of an iced register.
fn llvm_name(r: Register) -> String {
    let name = format!("{r:?}").to_uppercase();
    // iced's `R8L` … `R15L` are LLVM's `R8B` … `R15B`.
    match name.strip_suffix('L') {
        Some(n) if n.starts_with('R') && n[1..].parse::<u8>().is_ok() => format!("{n}B"),
        _ => name,
    }
}

/// How each `MCOperand` is made from the iced instruction (see `x86.rs`'s `McOp`). A memory
/// operand is five `MCOperand`s from its base on: base, scale, index, displacement, segment.
fn infer_all(sample: &Sample, ops: &[McOp]) -> Vec<String> {
    let ins = &sample.ins;
    let has_mem = (0..ins.op_count()).any(|i| ins.op_kind(i) == OpKind::Memory);
    let mut out = Vec::new();
    let mut j = 0;
    while j < ops.len() {
        let is_base = |op: &McOp| match op {
            McOp::Reg(name) => {
                (ins.memory_base() != Register::None && llvm_name(ins.memory_base()) == *name)
                    || (ins.memory_base() == Register::None
                        && (name.is_empty() || name == "0")
                        && matches!(ops.get(j + 3), Some(McOp::Imm(v)) if *v as u64 == ins.memory_displacement64()))
            }
            _ => false,
        };
        if has_mem && is_base(&ops[j]) && j + 5 <= ops.len() {
            out.extend(
                [
                    "McOp::MemBase",
                    "McOp::MemScale",
                    "McOp::MemIndex",
                    "McOp::MemDisp",
                    "McOp::MemSeg",
                ]
                .map(String::from),
            );
            j += 5;
            continue;
        }
        out.push(infer(sample, &ops[j]));
        j += 1;
    }
    out
}

fn infer(sample: &Sample, op: &McOp) -> String {
    let ins = &sample.ins;
    match op {
        McOp::Reg(name) if name.is_empty() || name == "0" => "McOp::NoReg".into(),
        McOp::Reg(name) if ins.op_mask() != Register::None && llvm_name(ins.op_mask()) == *name => {
            "McOp::Mask".into()
        }
        McOp::Reg(name) => {
            for i in 0..ins.op_count() {
                if ins.op_kind(i) == OpKind::Register && llvm_name(ins.op_register(i)) == *name {
                    return format!("McOp::Reg({i})");
                }
            }
            format!(
                "McOp::Fixed({})",
                reg_path(name).unwrap_or_else(|| "Register::None".into())
            )
        }
        McOp::Imm(v) if ins.rounding_control() != RoundingControl::None && *v == ROUNDING_IMM => {
            "McOp::Rounding".into()
        }
        McOp::Imm(v) => {
            let v = *v;
            let has_mem = (0..ins.op_count()).any(|i| ins.op_kind(i) == OpKind::Memory);
            if has_mem && v as u64 == ins.memory_displacement64() {
                return "McOp::MemDisp".into();
            }
            for i in 0..ins.op_count() {
                let k = ins.op_kind(i);
                if k == OpKind::NearBranch64
                    && (IP + ins.len() as u64).wrapping_add(v as u64) == TARGET
                {
                    return "McOp::Target".into();
                }
                if let Ok(imm) = ins.try_immediate(i) {
                    if v as u64 == imm {
                        return format!("McOp::Imm({i})");
                    }
                    let bits = match k {
                        OpKind::Immediate8 | OpKind::Immediate8_2nd => 8,
                        OpKind::Immediate16 => 16,
                        OpKind::Immediate32 => 32,
                        _ => 64,
                    };
                    let sext = ((imm << (64 - bits)) as i64) >> (64 - bits);
                    if v == sext {
                        return format!("McOp::ImmSext({i}, {bits})");
                    }
                }
            }
            format!("McOp::Const({v})")
        }
        McOp::Other(what) => format!("McOp::Unknown /* {what} */"),
    }
}

fn reg_path(name: &str) -> Option<String> {
    Register::values()
        .find(|&r| llvm_name(r) == name)
        .map(|r| format!("Register::{r:?}"))
}

/// Builds `mnemonic-probe.cpp` against LLVM `version`'s library; returns the binary's path.
fn build_probe(version: u32) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = format!("/usr/lib/llvm-{version}/bin/llvm-config");
    let flags = Command::new(&config)
        .arg("--cxxflags")
        .output()
        .expect("llvm-config");
    let flags = String::from_utf8(flags.stdout).unwrap();
    let out = std::env::temp_dir().join(format!("gen-opcode-names-probe{version}"));
    let status = Command::new("clang++-19")
        .arg("-O1")
        .args(flags.split_whitespace())
        .arg(dir.join("mnemonic-probe.cpp"))
        .arg("-o")
        .arg(&out)
        .arg(format!("-L/usr/lib/llvm-{version}/lib"))
        .arg(format!("-lLLVM-{version}"))
        .arg(format!("-Wl,-rpath,/usr/lib/llvm-{version}/lib"))
        .status()
        .expect("clang++-19");
    assert!(status.success(), "building the LLVM {version} probe failed");
    out
}

/// (opcode name, `getMnemonic` without whitespace) of each input by `probe`; `None` if LLVM
/// did not decode it as one instruction.
fn probe_mnemonics(probe: &std::path::Path, inputs: &[&[u8]]) -> Vec<Option<(String, String)>> {
    let mut text = String::new();
    for bytes in inputs {
        for b in *bytes {
            write!(text, "{b:02x}").unwrap();
        }
        text.push('\n');
    }
    let mut child = Command::new(probe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let out = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<_> = out
        .lines()
        .map(|l| {
            let (name, m) = l.split_once('\t').unwrap();
            (name != "?").then(|| (name.to_string(), m.to_string()))
        })
        .collect();
    assert_eq!(rows.len(), inputs.len(), "probe lost sync");
    rows
}

/// Every register's (number, name) in LLVM `version`.
fn probe_registers(probe: &std::path::Path) -> Vec<(u32, String)> {
    let out = Command::new(probe).env("PROBE_REGS", "1").output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (n, name) = l.split_once('\t').unwrap();
            (n.parse().unwrap(), name.to_string())
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let out_path = args
        .get(1)
        .expect("usage: gen-opcode-names OUT.rs [MC19 MC22]");
    let mc19 = args
        .get(2)
        .map_or("/usr/lib/llvm-19/bin/llvm-mc", |s| s.as_str());
    let mc22 = args
        .get(3)
        .map_or("/usr/lib/llvm-22/bin/llvm-mc", |s| s.as_str());
    let (samples, skipped) = samples();
    let inputs: Vec<&[u8]> = samples.iter().map(|s| &s.bytes[..]).collect();
    let d19 = disassemble(mc19, &inputs);
    let d22 = disassemble(mc22, &inputs);
    let (probe19, probe22) = (build_probe(19), build_probe(22));
    assert_eq!(
        probe_registers(&probe19),
        probe_registers(&probe22),
        "LLVM 19 and 22 number registers differently: the table needs a column per release"
    );
    let m19 = probe_mnemonics(&probe19, &inputs);
    let m22 = probe_mnemonics(&probe22, &inputs);
    // LLVM's mnemonic of a row, checked to be of the opcode llvm-mc decoded.
    let mnemonic = |m: &McInst, probed: &Option<(String, String)>| -> Option<String> {
        let (name, mnemonic) = probed.as_ref()?;
        assert_eq!(name, &m.name, "llvm-mc and the probe disagree");
        Some(mnemonic.clone())
    };
    // Register numbers of LLVM 19 from the probes (22 names them, 19 numbers them).
    let probes = register_probes();
    let probe_inputs: Vec<&[u8]> = probes.iter().map(|(_, b)| &b[..]).collect();
    let p19 = disassemble(mc19, &probe_inputs);
    let p22 = disassemble(mc22, &probe_inputs);
    let mut numbers: BTreeMap<String, i64> = BTreeMap::new();
    let mut learn = |a: &McInst, b: &McInst| {
        if a.name == b.name && a.ops.len() == b.ops.len() {
            for (x, y) in a.ops.iter().zip(&b.ops) {
                if let (McOp::Reg(num), McOp::Reg(name)) = (x, y) {
                    if let Ok(n) = num.parse::<i64>() {
                        if !name.is_empty() && n != 0 {
                            numbers.insert(name.clone(), n);
                        }
                    }
                }
            }
        }
    };
    for (a, b) in p19.iter().zip(&p22).chain(d19.iter().zip(&d22)) {
        if let (Some(a), Some(b)) = (a, b) {
            learn(a, b);
        }
    }
    // Every register LLVM has (the probes above miss some, `RIP` among them).
    for (n, name) in probe_registers(&probe22) {
        let known = numbers.insert(name.clone(), i64::from(n));
        assert!(
            known.is_none_or(|k| k == i64::from(n)),
            "{name}: two numbers"
        );
    }
    let names: BTreeMap<i64, String> = numbers.iter().map(|(k, &v)| (v, k.clone())).collect();
    let mut rows = String::new();
    let mut differ = Vec::new();
    let mut undecoded = BTreeSet::new();
    let mut count = 0;
    for (i, ((s, a), b)) in samples.iter().zip(&d19).zip(&d22).enumerate() {
        let (Some(a), Some(b)) = (a, b) else {
            undecoded.insert(format!("{:?}", s.code));
            continue;
        };
        let (Some(mn19), Some(mn22)) = (mnemonic(a, &m19[i]), mnemonic(b, &m22[i])) else {
            // Decoded by llvm-mc only as part of a longer stream (a prefix LLVM returns as
            // an instruction of its own): no mnemonic of its own either.
            undecoded.insert(format!("{:?}", s.code));
            continue;
        };
        let ops = infer_all(s, &b.ops);
        // LLVM 19 numbers its registers; name them so that the same inference applies.
        let named19: Vec<McOp> = a
            .ops
            .iter()
            .map(|o| match o {
                McOp::Reg(n) => McOp::Reg(
                    names
                        .get(&n.parse::<i64>().unwrap_or(0))
                        .cloned()
                        .unwrap_or_default(),
                ),
                o => o.clone(),
            })
            .collect();
        let ops19 = infer_all(s, &named19);
        if a.name != b.name || mn19 != mn22 || ops != ops19 {
            differ.push(format!(
                "{:?}{}{}: 19 {} {:?}, 22 {} {:?}",
                s.code,
                if s.mem { " (memory)" } else { "" },
                if s.variant != 0 {
                    format!(" (variant {})", s.variant)
                } else {
                    String::new()
                },
                a.name,
                mn19,
                b.name,
                mn22
            ));
        }
        count += 1;
        // Positional, and LLVM 19's columns only where they differ: the table stays small.
        let same = |x: &str, y: &str| {
            if x == y {
                "None".to_string()
            } else {
                format!("Some({y:?})")
            }
        };
        let ops = ops.join(", ").replace("McOp::", "");
        let ops19 = ops19.join(", ").replace("McOp::", "");
        let ops19 = if ops19 == ops {
            "None".to_string()
        } else {
            format!("Some(&[{ops19}])")
        };
        writeln!(
            rows,
            "    f(Code::{:?}, {}, {}, {:?}, {}, {:?}, {}, &[{ops}], {ops19}, &{:?}),",
            s.code,
            s.mem,
            s.variant,
            b.name,
            same(&b.name, &a.name),
            mn22,
            same(&mn22, &mn19),
            s.bytes
        )
        .unwrap();
    }
    let mut regs = String::new();
    let mut reg_rows: Vec<(String, i64)> = numbers
        .iter()
        .filter_map(|(name, &n)| reg_path(name).map(|p| (p, n)))
        .collect();
    reg_rows.sort_by_key(|(_, n)| *n);
    for (path, n) in &reg_rows {
        writeln!(regs, "    ({path}, {n}),").unwrap();
    }
    let mut f = String::new();
    writeln!(
        f,
        "// @generated by engine/tools/gen-opcode-names from iced-x86 1.22, llvm-mc 19 and 22\n\
         // and LLVM 19 and 22 MCInstPrinter::getMnemonic (mnemonic-probe.cpp).\n\
         // Do not edit: rerun the generator (see its header). {count} forms; {} codes that iced\n\
         // could not encode here; {} forms llvm-mc did not decode as one instruction.\n\
         // Forms whose LLVM 19 and 22 opcode name or mnemonic differ: {}.",
        skipped.len(),
        undecoded.len(),
        differ.len()
    )
    .unwrap();
    for d in &differ {
        writeln!(f, "//   {d}").unwrap();
    }
    writeln!(
        f,
        "\nuse iced_x86::{{Code, Register}};\n\nuse super::McOp::*;\nuse super::{{row as f, Form}};\n\n\
         /// Every form, sorted by (code, mem, variant): code, mem, variant, LLVM 22's name, LLVM\n\
         /// 19's if it differs, the two mnemonics alike, the two operand lists alike, bytes.\n\
         pub(crate) static FORMS: &[Form] = &[\n{rows}];\n\n\
         /// LLVM's numbers of the registers (`X86::RAX` …), as `hashInstOperand` hashes them: the\n\
         /// generator checked that LLVM 19 and 22 number all registers alike.\n\
         pub(crate) static REGISTERS_19: &[(Register, u16)] = &[\n{regs}];"
    )
    .unwrap();
    std::fs::write(out_path, f).unwrap();
    eprintln!(
        "{count} forms, {} registers, {} skipped codes, {} undecoded forms, {} differ",
        reg_rows.len(),
        skipped.len(),
        undecoded.len(),
        differ.len()
    );
}
