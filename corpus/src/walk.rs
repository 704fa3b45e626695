//! Random walks over the control-flow model that produce LBR branch stacks.
//!
//! A walk runs forward in time from a random instruction, recording every
//! taken control transfer, so that between two consecutive entries the code
//! from `older.to` to `newer.from` is real straight-line code. That property
//! is what consumers such as BOLT and AutoFDO rely on when they turn LBR
//! stacks into fall-through ranges.

use crate::cfg::{BinaryCode, Flow};
use crate::rng::{mix64, Rng};
use crate::BranchEntry;

/// Smallest address treated as kernel text by the generator.
pub const KERNEL_TEXT_START: u64 = 0xffff_ffff_8100_0000;

/// Interrupt entry points and the `iret` site used for synthetic kernel entries
/// (plausible x86-64 `asm_sysvec_*` / `asm_common_interrupt` addresses).
const KERNEL_IRQ_ENTRIES: [u64; 4] = [
    0xffff_ffff_81c0_0a40,
    0xffff_ffff_81c0_0b80,
    0xffff_ffff_81c0_0d20,
    0xffff_ffff_81c0_1160,
];
const KERNEL_IRET: u64 = 0xffff_ffff_81c0_11e7;

/// Instructions one walk may execute before it is considered stuck (e.g. in a
/// branch-free region) and abandoned.
const MAX_STEPS: u32 = 200_000;
/// Walk attempts per stack before giving up on the binaries.
const MAX_ATTEMPTS: u32 = 10_000;

/// Percentage of indirect calls that leave for another binary.
const CROSS_DSO_INDIRECT_CALL_PERCENT: u32 = 20;
/// Percentage of PLT stub jumps that go to another binary (the rest resolve
/// inside the same one, as for a symbol interposed by the executable).
const CROSS_DSO_PLT_PERCENT: u32 = 90;
/// Percentage of lazy-binding PLT stub jumps that find their GOT slot unresolved: they go on
/// to the stub's `push` and from there into the PLT header (what a first call does).
const LAZY_PLT_PERCENT: u32 = 10;
/// Percentage of non-PLT indirect jumps modelled as jump tables (targets in
/// the same function); the rest are tail calls through a pointer.
const JUMP_TABLE_PERCENT: u32 = 70;
const MISPREDICT_PERCENT: u32 = 7;

/// A position in the code: binary index and instruction index.
#[derive(Clone, Copy, Debug)]
struct Loc {
    bin: usize,
    idx: u32,
}

pub(crate) struct Walker<'a> {
    bins: &'a [BinaryCode],
    /// Load bias per binary: process address = ELF vaddr + bias.
    bias: &'a [u64],
    rng: Rng,
}

impl<'a> Walker<'a> {
    pub fn new(bins: &'a [BinaryCode], bias: &'a [u64], rng: Rng) -> Self {
        Self { bins, bias, rng }
    }

    /// One complete stack of `depth` entries, newest first. With
    /// `with_kernel`, one or two of them are interrupt entries.
    pub fn stack(&mut self, depth: usize, with_kernel: bool) -> Option<Vec<BranchEntry>> {
        let kernel = if with_kernel {
            self.kernel_variant(depth)
        } else {
            KernelVariant::None
        };
        let user = self.user_walk(depth - kernel.entries())?;
        let mut entries = self.insert_kernel(user, kernel);
        for e in &mut entries {
            e.flags = self.entry_flags();
        }
        entries.reverse();
        Some(entries)
    }

    /// Retries walks from fresh starting points until one succeeds.
    fn user_walk(&mut self, n: usize) -> Option<Vec<BranchEntry>> {
        (0..MAX_ATTEMPTS).find_map(|_| self.try_walk(n))
    }

    /// A single walk attempt; `None` if it ran into code it cannot follow.
    fn try_walk(&mut self, n: usize) -> Option<Vec<BranchEntry>> {
        let mut at = self.random_start();
        let mut calls: Vec<(usize, u64)> = Vec::new();
        let mut out = Vec::with_capacity(n);
        let mut steps = 0;
        while out.len() < n {
            steps += 1;
            if steps > MAX_STEPS {
                return None;
            }
            let insn = self.bins[at.bin].insns[at.idx as usize];
            let dest = match insn.flow {
                Flow::Next => None,
                Flow::Cond(t) if self.cond_taken(insn.addr, t) => self.lookup(at.bin, t),
                Flow::Cond(_) => None,
                // A direct jump we cannot follow (e.g. into unsymbolized code)
                // would leave a gap in the fall-through chain: start over.
                Flow::Jump(t) => Some(self.lookup(at.bin, t)?),
                Flow::Call(t) => self
                    .lookup(at.bin, t)
                    .inspect(|_| calls.push((at.bin, insn.end()))),
                Flow::IndCall => {
                    calls.push((at.bin, insn.end()));
                    Some(self.indirect_call_target(at.bin))
                }
                Flow::IndJump => Some(self.indirect_jump_target(at)),
                Flow::Ret => Some(self.return_target(&mut calls, at.bin)),
                Flow::Stop => return None,
            };
            at = match dest {
                Some(to) => {
                    out.push(self.entry(at, insn.addr, to));
                    to
                }
                // Not taken (or a call into unknown code, treated as if it
                // returned at once): continue with the next instruction.
                None if self.bins[at.bin].falls_through(at.idx) => Loc {
                    idx: at.idx + 1,
                    ..at
                },
                None => return None,
            };
        }
        Some(out)
    }

    fn entry(&self, from: Loc, from_addr: u64, to: Loc) -> BranchEntry {
        BranchEntry {
            from: from_addr.wrapping_add(self.bias[from.bin]),
            to: self.addr(to),
            flags: 0,
        }
    }

    /// Process address of an instruction.
    fn addr(&self, at: Loc) -> u64 {
        self.bins[at.bin].insns[at.idx as usize]
            .addr
            .wrapping_add(self.bias[at.bin])
    }

    fn lookup(&self, bin: usize, addr: u64) -> Option<Loc> {
        self.bins[bin].insn_at(addr).map(|idx| Loc { bin, idx })
    }

    /// Hot binaries (the first one given) and hot functions are preferred.
    fn random_start(&mut self) -> Loc {
        let bin = self.rng.skewed(self.bins.len(), 2);
        let entry = self.function_entry(bin);
        let f = self.bins[bin].func_of(entry.idx);
        let idx = f.first + self.rng.below(u64::from(f.end - f.first)) as u32;
        Loc { bin, idx }
    }

    fn function_entry(&mut self, bin: usize) -> Loc {
        let code = &self.bins[bin];
        let f = code.hot[self.rng.skewed(code.hot.len(), 2)];
        Loc {
            bin,
            idx: code.funcs[f as usize].first,
        }
    }

    /// Each branch gets a fixed bias derived from its address, so the same
    /// branch behaves consistently across the pool; loops (backward branches)
    /// are mostly taken, as in real code.
    fn cond_taken(&mut self, addr: u64, target: u64) -> bool {
        const FORWARD_BIASES: [u32; 5] = [3, 20, 50, 80, 97];
        let h = mix64(addr);
        let percent = if target <= addr {
            80 + (h % 18) as u32
        } else {
            FORWARD_BIASES[(h % FORWARD_BIASES.len() as u64) as usize]
        };
        self.rng.percent(percent)
    }

    fn other_binary(&mut self, bin: usize) -> usize {
        let pick = self.rng.index(self.bins.len() - 1);
        if pick >= bin {
            pick + 1
        } else {
            pick
        }
    }

    fn indirect_call_target(&mut self, bin: usize) -> Loc {
        let multi = self.bins.len() > 1;
        let target_bin = if multi && self.rng.percent(CROSS_DSO_INDIRECT_CALL_PERCENT) {
            self.other_binary(bin)
        } else {
            bin
        };
        self.function_entry(target_bin)
    }

    fn indirect_jump_target(&mut self, at: Loc) -> Loc {
        let code = &self.bins[at.bin];
        let f = *code.func_of(at.idx);
        if f.plt {
            if code.lazy_stubs.binary_search(&at.idx).is_ok() && self.rng.percent(LAZY_PLT_PERCENT)
            {
                return Loc {
                    bin: at.bin,
                    idx: at.idx + 1,
                };
            }
            let bin = if self.bins.len() > 1 && self.rng.percent(CROSS_DSO_PLT_PERCENT) {
                self.other_binary(at.bin)
            } else {
                at.bin
            };
            return self.function_entry(bin);
        }
        if self.rng.percent(JUMP_TABLE_PERCENT) {
            let lo = code.jump_targets.partition_point(|&t| t < f.first);
            let hi = code.jump_targets.partition_point(|&t| t < f.end);
            if hi > lo {
                let idx = code.jump_targets[lo + self.rng.index(hi - lo)];
                return Loc { bin: at.bin, idx };
            }
        }
        self.function_entry(at.bin)
    }

    /// Returns to the innermost call made during this walk, or, when the walk
    /// started inside the function that is returning, to the continuation of
    /// some call site (what an unknown caller would look like).
    fn return_target(&mut self, calls: &mut Vec<(usize, u64)>, bin: usize) -> Loc {
        if let Some((b, addr)) = calls.pop() {
            if let Some(at) = self.lookup(b, addr) {
                return at;
            }
        }
        let b = if self.bins.len() > 1 && self.rng.percent(20) {
            self.other_binary(bin)
        } else {
            bin
        };
        let sites = &self.bins[b].call_returns;
        if sites.is_empty() {
            return self.function_entry(b);
        }
        Loc {
            bin: b,
            idx: sites[self.rng.index(sites.len())],
        }
    }

    /// Which interrupt shape to add; each needs enough user entries around it
    /// to be anchored to real code.
    fn kernel_variant(&mut self, depth: usize) -> KernelVariant {
        match (self.rng.below(4), depth) {
            (_, 0..=1) => KernelVariant::None,
            (0, _) => KernelVariant::InterruptAtNewest,
            (1, _) => KernelVariant::ReturnAtOldest,
            (_, 2..=3) => KernelVariant::InterruptAtNewest,
            _ => KernelVariant::RoundTrip,
        }
    }

    /// Adds kernel entries the way an interrupt shows up in an LBR that
    /// records both privilege levels: user `X` -> irq entry, then (after
    /// kernel branches that are not modelled) `iret` -> `X`.
    fn insert_kernel(
        &mut self,
        mut user: Vec<BranchEntry>,
        kernel: KernelVariant,
    ) -> Vec<BranchEntry> {
        let irq = KERNEL_IRQ_ENTRIES[self.rng.index(KERNEL_IRQ_ENTRIES.len())];
        let entry = |from, to| BranchEntry { from, to, flags: 0 };
        match kernel {
            KernelVariant::None => {}
            // The sample itself fired in the interrupt handler.
            KernelVariant::InterruptAtNewest => {
                let x = user.last().map_or(0, |e| e.to);
                user.push(entry(x, irq));
            }
            // The interrupt's entry has already aged out of the LBR.
            KernelVariant::ReturnAtOldest => {
                let x = user[0].from;
                user.insert(0, entry(KERNEL_IRET, x));
            }
            // Interrupted at the start of a straight-line run, or just before
            // the branch that ends it; execution resumes at the same place.
            KernelVariant::RoundTrip => {
                let j = 1 + self.rng.index(user.len() - 1);
                let x = if self.rng.percent(50) {
                    user[j - 1].to
                } else {
                    user[j].from
                };
                user.splice(j..j, [entry(x, irq), entry(KERNEL_IRET, x)]);
            }
        }
        user
    }

    /// Predicted/mispredicted bit plus a small, skewed cycle count.
    fn entry_flags(&mut self) -> u64 {
        let prediction = if self.rng.percent(MISPREDICT_PERCENT) {
            1
        } else {
            2
        };
        let cycles = 1 + self.rng.skewed(40, 2) as u64;
        prediction | (cycles << 4)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KernelVariant {
    None,
    InterruptAtNewest,
    ReturnAtOldest,
    RoundTrip,
}

impl KernelVariant {
    fn entries(self) -> usize {
        match self {
            KernelVariant::None => 0,
            KernelVariant::InterruptAtNewest | KernelVariant::ReturnAtOldest => 1,
            KernelVariant::RoundTrip => 2,
        }
    }
}
