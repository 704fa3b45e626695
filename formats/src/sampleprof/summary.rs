//! LLVM's profile summary of a sample profile (`SampleProfileSummaryBuilder`), written into
//! the binary formats and into GCOV v3/v4 summaries.

use std::collections::BTreeMap;

use super::model::{attr, Context, FunctionSamples, Profile};

/// One row of the detailed summary (LLVM `ProfileSummaryEntry`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SummaryEntry {
    /// `Cutoff`: the percentile, in parts per million (e.g. 990000 = 99%).
    pub cutoff: u32,
    /// `MinCount`: the smallest count among the hottest counts that make up `cutoff` of the total.
    pub min_count: u64,
    /// `NumCounts`: how many counts reach `min_count`.
    pub num_counts: u64,
}

/// LLVM's `ProfileSummary` of kind `PSK_Sample`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// `TotalCount`: the sum of all body sample counts.
    pub total_count: u64,
    /// `MaxCount`: the largest single body sample count.
    pub max_count: u64,
    /// `MaxFunctionCount`: the largest head count of a top-level function.
    pub max_function_count: u64,
    /// `NumCounts`: the number of body sample records counted.
    pub num_counts: u64,
    /// `NumFunctions`: the number of top-level profiles.
    pub num_functions: u64,
    /// `DetailedSummary`: one entry per cutoff of `ProfileSummaryBuilder::DefaultCutoffs`, ascending.
    pub entries: Vec<SummaryEntry>,
}

impl Summary {
    /// The scalar fields in the order every encoding stores them.
    pub(crate) fn scalars(&self) -> [u64; 5] {
        [
            self.total_count,
            self.max_count,
            self.max_function_count,
            self.num_counts,
            self.num_functions,
        ]
    }
}

#[derive(Default)]
struct Builder {
    s: Summary,
    /// Every count seen; sorted and grouped at the end (LLVM keeps a count → frequency map).
    counts: Vec<u64>,
}

impl Builder {
    fn add_count(&mut self, count: u64) {
        self.counts.push(count);
    }

    fn add_record(&mut self, fs: &FunctionSamples, is_callsite: bool) {
        if !is_callsite {
            self.s.num_functions += 1;
            self.s.max_function_count = self.s.max_function_count.max(fs.head);
        } else if fs.attributes & attr::DUPLICATED_INTO_BASE != 0 {
            // Already counted in the base profile it was duplicated into.
            return;
        }
        for rec in fs.body.values() {
            self.add_count(rec.count);
        }
        for callees in fs.callsites.values() {
            for callee in callees.values() {
                self.add_record(callee, true);
            }
        }
    }

    fn finish(self) -> Summary {
        from_counts(self.counts, self.s.max_function_count, self.s.num_functions)
    }
}

/// The summary of a profile whose line counts (every top-level and inlined body sample) are
/// `counts`, in any order.
pub fn from_counts(mut counts: Vec<u64>, max_function_count: u64, num_functions: u64) -> Summary {
    let mut s = Summary {
        max_function_count,
        num_functions,
        num_counts: counts.len() as u64,
        ..Summary::default()
    };
    for &c in &counts {
        // LLVM adds with plain (wrapping) 64-bit arithmetic.
        s.total_count = s.total_count.wrapping_add(c);
        s.max_count = s.max_count.max(c);
    }
    counts.sort_unstable_by(|a, b| b.cmp(a));
    // (count, frequency) from the largest count down. LLVM's frequency is a u32.
    let by_count = counts
        .chunk_by(|a, b| a == b)
        .map(|run| (run[0], run.len() as u32));
    s.entries = crate::summary::detailed(s.total_count, by_count)
        .into_iter()
        .map(|e| SummaryEntry {
            cutoff: e.cutoff,
            min_count: e.min_count,
            num_counts: e.num_counts,
        })
        .collect();
    s
}

/// The summary llvm-profdata writes for `profile`. Context-sensitive profiles are summarised
/// on their context-less flattening, as LLVM does by default.
pub fn compute(profile: &Profile) -> Summary {
    let mut b = Builder::default();
    if profile.kind.cs {
        for fs in flatten_contexts(profile).values() {
            b.add_record(fs, false);
        }
    } else {
        for fs in profile.functions.values() {
            b.add_record(fs, false);
        }
    }
    b.finish()
}

/// LLVM `ProfileConverter::flattenProfile(..., ProfileIsCS=true)`: all contexts of a function
/// merged into one context-less profile.
pub(crate) fn flatten_contexts(profile: &Profile) -> BTreeMap<Context, FunctionSamples> {
    let mut out: BTreeMap<Context, FunctionSamples> = BTreeMap::new();
    for (ctx, fs) in &profile.functions {
        let key = Context::Plain(ctx.function().clone());
        // A checksum mismatch drops the context, as LLVM's merge does.
        let _ = out.entry(key).or_default().merge(fs, 1);
    }
    out
}
