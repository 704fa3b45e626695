//! The profile summary stored in indexed profiles (`InstrProfSummaryBuilder`,
//! `ProfileSummaryBuilder::computeDetailedSummary`).

use std::collections::BTreeMap;

/// `{Cutoff, MinBlockCount, NumBlocks}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SummaryEntry {
    /// `Cutoff`: the percentile, in parts per million (990000 = 99%).
    pub cutoff: u64,
    /// `MinBlockCount`: the smallest block count among the hottest blocks that reach `cutoff`.
    pub min_count: u64,
    /// `NumBlocks`: how many block counts reach `min_count`.
    pub num_counts: u64,
}

/// `IndexedInstrProf::Summary`: the fields of `SummaryFieldKind` plus the detailed entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// `TotalNumFunctions`: records counted.
    pub total_num_functions: u64,
    /// `TotalNumBlocks`: counters counted.
    pub total_num_blocks: u64,
    /// `MaxFunctionCount`: the largest entry (first) counter.
    pub max_function_count: u64,
    /// `MaxBlockCount`: the largest counter of all.
    pub max_block_count: u64,
    /// `MaxInternalBlockCount`: the largest non-entry counter.
    pub max_internal_block_count: u64,
    /// `TotalBlockCount`: the sum of all counters (wrapping, as LLVM's u64 sum).
    pub total_block_count: u64,
    /// The detailed summary, one entry per `ProfileSummaryBuilder::DefaultCutoffs` cutoff.
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

    /// The summary of the counts added so far.
    pub fn finish(&self) -> Summary {
        let by_count = self.frequencies.iter().rev().map(|(&c, &f)| (c, f));
        let entries = crate::summary::detailed(self.total_count, by_count)
            .into_iter()
            .map(|e| SummaryEntry {
                cutoff: e.cutoff.into(),
                min_count: e.min_count,
                num_counts: e.num_counts,
            })
            .collect();
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
    /// Bytes of the indexed encoding of a summary with the default cutoffs: 2 + 6 fields + 3
    /// per entry, all u64.
    pub(crate) fn encoded_size() -> usize {
        8 * (2 + 6 + 3 * crate::summary::DEFAULT_CUTOFFS.len())
    }

    pub(crate) fn write_le(&self, out: &mut Vec<u8>) {
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
