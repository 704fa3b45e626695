//! The instructions llvm-profgen disassembles: every executable section from each of its
//! symbols to the next (a chunk), decoded on first use one chunk at a time (a profile touches
//! a small part of a large binary's code). Where instructions start and end is kept as two
//! bits per byte of code, not as a list of instructions: on a binary with 26 MB of code the
//! list took 72 MB, the bits take 6.5 MB, and walking a range's bits is cheaper than
//! searching a list.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use object::{Object, ObjectSection, ObjectSymbol};
use rayon::prelude::*;

use crate::io::input::InputBytes;

/// See the module comment.
pub(crate) struct Code {
    bitness: u32,
    /// The binary's bytes, where uncompressed sections are read in place.
    file: Arc<InputBytes>,
    sections: Vec<Section>,
    /// Each span from a symbol to the next (or its section's end), sorted by start.
    chunks: Vec<Chunk>,
    /// The chunks' ends, searched apart from the chunks (a search over the chunks themselves
    /// missed the cache at every step).
    ends: Vec<u64>,
    /// Names of the ELF symbols in executable sections, by address.
    symbols: Vec<(u64, Arc<str>)>,
}

#[derive(Debug)]
struct Section {
    address: u64,
    bytes: SectionBytes,
    /// A bit per byte of the section (and one past its end): an instruction of a decoded
    /// chunk starts there.
    starts: Vec<AtomicU64>,
    /// The same for where an instruction ends (the byte after its last).
    ends: Vec<AtomicU64>,
}

#[derive(Debug)]
enum SectionBytes {
    /// At this range of the file.
    InFile(Range<usize>),
    /// Decompressed.
    Owned(Vec<u8>),
}

#[derive(Debug)]
struct Chunk {
    start: u64,
    end: u64,
    section: usize,
    /// Addresses of the direct unconditional jumps, sorted; set once the chunk's instructions
    /// are marked in its section's bits.
    jumps: OnceLock<Vec<u64>>,
}

fn bits_for(bytes: u64) -> Vec<AtomicU64> {
    (0..(bytes as usize + 1).div_ceil(64))
        .map(|_| AtomicU64::new(0))
        .collect()
}

fn is_set(bits: &[AtomicU64], i: usize) -> bool {
    bits.get(i / 64)
        .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (i % 64)) != 0)
}

/// Sets bits in runs: one atomic `or` per word touched, not per bit.
struct BitWriter<'b> {
    bits: &'b [AtomicU64],
    word: usize,
    pending: u64,
}

impl<'b> BitWriter<'b> {
    fn new(bits: &'b [AtomicU64]) -> Self {
        BitWriter {
            bits,
            word: 0,
            pending: 0,
        }
    }

    fn set(&mut self, i: usize) {
        if i / 64 != self.word {
            self.flush();
            self.word = i / 64;
        }
        self.pending |= 1 << (i % 64);
    }

    fn flush(&mut self) {
        if self.pending != 0 {
            self.bits[self.word].fetch_or(self.pending, Ordering::Relaxed);
            self.pending = 0;
        }
    }
}

impl Drop for BitWriter<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

impl Code {
    /// The executable sections of `file` (whose bytes are `data`), split at their symbols
    /// (x86 only; other machines have no code). Nothing is disassembled yet.
    pub(crate) fn new(file: &object::File<'_>, data: Arc<InputBytes>) -> Code {
        let mut code = Code {
            bitness: 0,
            file: data,
            sections: Vec::new(),
            chunks: Vec::new(),
            ends: Vec::new(),
            symbols: Vec::new(),
        };
        code.bitness = match file.architecture() {
            object::Architecture::X86_64 => 64,
            object::Architecture::I386 => 32,
            _ => return code,
        };
        let executable = |section: &object::Section<'_, '_>| {
            let object::SectionFlags::Elf { sh_flags } = section.flags() else {
                return false;
            };
            sh_flags & u64::from(object::elf::SHF_EXECINSTR) != 0
                && section.kind() != object::SectionKind::UninitializedData
        };
        let code_sections: Vec<_> = file.sections().filter(executable).collect();
        let mut starts_of: hashbrown::HashMap<object::SectionIndex, Vec<u64>> =
            hashbrown::HashMap::new();
        for s in file.symbols() {
            let Some(index) = s.section_index() else {
                continue;
            };
            if !code_sections.iter().any(|c| c.index() == index) {
                continue;
            }
            starts_of.entry(index).or_default().push(s.address());
            if let Ok(name) = s.name() {
                code.symbols.push((s.address(), name.into()));
            }
        }
        for section in code_sections {
            let (address, size) = (section.address(), section.size());
            let bytes = match (section.compressed_file_range(), section.file_range()) {
                (Ok(c), Some((offset, len)))
                    if c.format == object::CompressionFormat::None && len == size =>
                {
                    SectionBytes::InFile(offset as usize..(offset + len) as usize)
                }
                _ => match section.uncompressed_data() {
                    Ok(data) if data.len() as u64 == size => SectionBytes::Owned(data.into_owned()),
                    _ => continue,
                },
            };
            let mut starts = starts_of.remove(&section.index()).unwrap_or_default();
            starts.sort_unstable();
            starts.dedup();
            for (i, &start) in starts.iter().enumerate() {
                let end = starts.get(i + 1).copied().unwrap_or(address + size);
                if start < address || end > address + size || start >= end {
                    continue;
                }
                code.chunks.push(Chunk {
                    start,
                    end,
                    section: code.sections.len(),
                    jumps: OnceLock::new(),
                });
            }
            code.sections.push(Section {
                address,
                bytes,
                starts: bits_for(size),
                ends: bits_for(size),
            });
        }
        code.symbols.sort();
        code.chunks.sort_unstable_by_key(|c| c.start);
        code.ends = code.chunks.iter().map(|c| c.end).collect();
        code
    }

    fn section_bytes<'a>(&'a self, section: &'a Section) -> &'a [u8] {
        match &section.bytes {
            SectionBytes::InFile(range) => &self.file[range.clone()],
            SectionBytes::Owned(bytes) => bytes,
        }
    }

    /// Decodes `chunk` once: marks its instructions in its section's bits and returns its
    /// direct unconditional jumps.
    fn decoded<'c>(&self, chunk: &'c Chunk) -> &'c [u64] {
        chunk.jumps.get_or_init(|| {
            let section = &self.sections[chunk.section];
            let from = (chunk.start - section.address) as usize;
            let bytes = &self.section_bytes(section)[from..(chunk.end - section.address) as usize];
            let mut decoder = iced_x86::Decoder::with_ip(
                self.bitness,
                bytes,
                chunk.start,
                iced_x86::DecoderOptions::NONE,
            );
            let (mut starts, mut ends) = (
                BitWriter::new(&section.starts),
                BitWriter::new(&section.ends),
            );
            let mut jumps = Vec::new();
            let mut inst = iced_x86::Instruction::default();
            while decoder.can_decode() {
                decoder.decode_out(&mut inst);
                if inst.is_invalid() {
                    continue;
                }
                let at = (inst.ip() - section.address) as usize;
                starts.set(at);
                ends.set(at + inst.len());
                if inst.flow_control() == iced_x86::FlowControl::UnconditionalBranch
                    && inst.is_jmp_short_or_near()
                {
                    jumps.push(inst.ip());
                }
            }
            jumps
        })
    }

    /// The ELF symbols of the executable sections: (address, name), sorted.
    pub(crate) fn symbols(&self) -> &[(u64, Arc<str>)] {
        &self.symbols
    }

    /// The chunks meeting `[b, e]`.
    fn chunks_meeting(&self, b: u64, e: u64) -> impl Iterator<Item = &Chunk> {
        let first = self.ends.partition_point(|&end| end <= b);
        self.chunks[first..]
            .iter()
            .take_while(move |c| c.start <= e)
    }

    /// Decodes (in parallel) the chunks holding any of `addresses`, after which
    /// [`Code::starts_instruction`] answers for each of them. The addresses are not
    /// collected: a bit per chunk says which are touched.
    pub(crate) fn decode_at(&self, addresses: impl ParallelIterator<Item = u64>) {
        let words = self.chunks.len().div_ceil(64);
        let marked = addresses
            .fold(
                || vec![0u64; words],
                |mut bits, a| {
                    let i = self.ends.partition_point(|&end| end <= a);
                    if self.chunks.get(i).is_some_and(|c| c.start <= a) {
                        bits[i / 64] |= 1 << (i % 64);
                    }
                    bits
                },
            )
            .reduce(
                || vec![0u64; words],
                |mut a, b| {
                    a.iter_mut().zip(b).for_each(|(x, y)| *x |= y);
                    a
                },
            );
        (0..self.chunks.len())
            .into_par_iter()
            .filter(|&i| marked[i / 64] & (1 << (i % 64)) != 0)
            .for_each(|i| {
                self.decoded(&self.chunks[i]);
            });
    }

    /// Whether an instruction of a decoded chunk starts at `a`.
    pub(crate) fn starts_instruction(&self, a: u64) -> bool {
        let i = self.ends.partition_point(|&end| end <= a);
        let Some(chunk) = self.chunks.get(i).filter(|c| c.start <= a) else {
            return false;
        };
        let section = &self.sections[chunk.section];
        is_set(&section.starts, (a - section.address) as usize)
    }

    /// llvm-profgen's `rangeCrossUncondBranch`: a direct unconditional jump in `[b, e)`.
    pub(crate) fn crosses_jump(&self, b: u64, e: u64) -> bool {
        if e <= b {
            return false;
        }
        self.chunks_meeting(b, e - 1).any(|c| {
            let jumps = self.decoded(c);
            let i = jumps.partition_point(|&j| j < b);
            jumps.get(i).is_some_and(|&j| j < e)
        })
    }

    /// The instructions starting in `[b, e]`, in address order: (address, size).
    pub(crate) fn insts_in(&self, b: u64, e: u64) -> impl Iterator<Item = (u64, u8)> + '_ {
        self.chunks_meeting(b, e).flat_map(move |c| {
            self.decoded(c);
            let section = &self.sections[c.section];
            let base = section.address;
            let from = (b.max(c.start) - base) as usize;
            let to = (e.min(c.end - 1) - base) as usize;
            set_bits(&section.starts, from, to).map(move |at| {
                // The instructions of a chunk do not overlap, and no other chunk's end
                // falls inside one: its end is the first end bit after its start.
                let size = (1..=15)
                    .find(|k| is_set(&section.ends, at + k))
                    .expect("a decoded instruction has an end");
                (base + at as u64, size as u8)
            })
        })
    }
}

/// The set bits of `bits` in `[from, to]`, in order.
fn set_bits(bits: &[AtomicU64], from: usize, to: usize) -> impl Iterator<Item = usize> + '_ {
    let words = from / 64..to / 64 + 1;
    words.flat_map(move |w| {
        let mut word = bits[w].load(Ordering::Relaxed);
        if w == from / 64 {
            word &= u64::MAX << (from % 64);
        }
        if w == to / 64 && to % 64 != 63 {
            word &= (1u64 << (to % 64 + 1)) - 1;
        }
        std::iter::from_fn(move || {
            (word != 0).then(|| {
                let bit = word.trailing_zeros() as usize;
                word &= word - 1;
                w * 64 + bit
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn set_bits_are_the_bits_set_in_the_range(
            set in prop::collection::btree_set(0usize..300, 0..80),
            a in 0usize..300,
            b in 0usize..300,
        ) {
            let (from, to) = (a.min(b), a.max(b));
            let bits = bits_for(300);
            let mut w = BitWriter::new(&bits);
            for &i in &set {
                w.set(i);
            }
            drop(w);
            let got: Vec<usize> = set_bits(&bits, from, to).collect();
            let expected: Vec<usize> = set.range(from..=to).copied().collect();
            prop_assert_eq!(got, expected);
        }
    }
}
