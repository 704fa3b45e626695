//! The profile summary stored in indexed profiles (`InstrProfSummaryBuilder`,
//! `ProfileSummaryBuilder::computeDetailedSummary`).

use std::collections::BTreeMap;

/// `ProfileSummaryBuilder::DefaultCutoffs`, scaled by 1e6.
pub const DEFAULT_CUTOFFS: [u64; 16] = [
    10000, 100000, 200000, 300000, 400000, 500000, 600000, 700000, 800000, 900000, 950000, 990000,
    999000, 999900, 999990, 999999,
];
const SCALE: u128 = 1_000_000;

/// `{Cutoff, MinBlockCount, NumBlocks}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SummaryEntry {
    pub cutoff: u64,
    pub min_count: u64,
    pub num_counts: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub total_num_functions: u64,
    pub total_num_blocks: u64,
    pub max_function_count: u64,
    pub max_block_count: u64,
    pub max_internal_block_count: u64,
    pub total_block_count: u64,
    pub entries: Vec<SummaryEntry>,
}

/// Accumulates counts the way LLVM does (u64 wrapping totals, u32 block counts).
#[derive(Clone, Debug, Default)]
pub struct SummaryBuilder {
    total_count: u64,
    max_count: u64,
    max_function_count: u64,
    max_internal_count: u64,
    num_counts: u32,
    num_functions: u32,
    /// count → frequency.
    frequencies: BTreeMap<u64, u32>,
}

impl SummaryBuilder {
    /// Adds one record's counters; records whose first counter is a pseudo count (−1, −2) are
    /// skipped.
    pub fn add_record(&mut self, counts: &[u64]) {
        let Some((&entry, rest)) = counts.split_first() else {
            return;
        };
        if entry == u64::MAX || entry == u64::MAX - 1 {
            return;
        }
        self.add_count(entry);
        self.num_functions = self.num_functions.wrapping_add(1);
        self.max_function_count = self.max_function_count.max(entry);
        for &c in rest {
            self.add_count(c);
            self.max_internal_count = self.max_internal_count.max(c);
        }
    }

    fn add_count(&mut self, count: u64) {
        self.total_count = self.total_count.wrapping_add(count);
        self.max_count = self.max_count.max(count);
        self.num_counts = self.num_counts.wrapping_add(1);
        let f = self.frequencies.entry(count).or_insert(0);
        *f = f.wrapping_add(1);
    }

    pub fn finish(&self) -> Summary {
        let mut entries = Vec::with_capacity(DEFAULT_CUTOFFS.len());
        let mut iter = self.frequencies.iter().rev().peekable();
        let (mut seen, mut sum, mut count) = (0u32, 0u64, 0u64);
        for cutoff in DEFAULT_CUTOFFS {
            let desired = (u128::from(self.total_count) * u128::from(cutoff) / SCALE) as u64;
            while sum < desired {
                let Some((&c, &freq)) = iter.next() else {
                    break;
                };
                count = c;
                sum = sum.wrapping_add(c.wrapping_mul(u64::from(freq)));
                seen = seen.wrapping_add(freq);
            }
            entries.push(SummaryEntry {
                cutoff,
                min_count: count,
                num_counts: u64::from(seen),
            });
        }
        Summary {
            total_num_functions: u64::from(self.num_functions),
            total_num_blocks: u64::from(self.num_counts),
            max_function_count: self.max_function_count,
            max_block_count: self.max_count,
            max_internal_block_count: self.max_internal_count,
            total_block_count: self.total_count,
            entries,
        }
    }
}

impl Summary {
    /// Bytes of the indexed encoding: 2 + 6 fields + 3 per entry, all u64.
    pub fn encoded_size(num_entries: usize) -> usize {
        8 * (2 + 6 + 3 * num_entries)
    }

    pub fn write_le(&self, out: &mut Vec<u8>) {
        let fields = [
            6,
            self.entries.len() as u64,
            self.total_num_functions,
            self.total_num_blocks,
            self.max_function_count,
            self.max_block_count,
            self.max_internal_block_count,
            self.total_block_count,
        ];
        for v in fields {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for e in &self.entries {
            for v in [e.cutoff, e.min_count, e.num_counts] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
}
