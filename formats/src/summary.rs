//! The detailed part of LLVM's profile summaries (`ProfileSummaryBuilder::
//! computeDetailedSummary`), the same computation for instrumentation and sample profiles.

/// `ProfileSummaryBuilder::DefaultCutoffs`, in millionths.
pub(crate) const DEFAULT_CUTOFFS: [u32; 16] = [
    10000, 100000, 200000, 300000, 400000, 500000, 600000, 700000, 800000, 900000, 950000, 990000,
    999000, 999900, 999990, 999999,
];

/// One detailed entry: the cutoff, the smallest count among the largest counts that make up
/// that share of `total`, and how many counts that is.
pub(crate) struct Entry {
    pub cutoff: u32,
    pub min_count: u64,
    pub num_counts: u64,
}

/// The entry of every default cutoff, from the counts' `(count, frequency)` pairs in
/// descending count order. Sums wrap and frequencies are `u32`, as in LLVM.
pub(crate) fn detailed(
    total: u64,
    mut by_count_desc: impl Iterator<Item = (u64, u32)>,
) -> Vec<Entry> {
    let (mut seen, mut sum, mut count) = (0u32, 0u64, 0u64);
    DEFAULT_CUTOFFS
        .iter()
        .map(|&cutoff| {
            let desired = (u128::from(total) * u128::from(cutoff) / 1_000_000) as u64;
            while sum < desired {
                let Some((c, freq)) = by_count_desc.next() else {
                    break;
                };
                count = c;
                sum = sum.wrapping_add(c.wrapping_mul(u64::from(freq)));
                seen = seen.wrapping_add(freq);
            }
            Entry {
                cutoff,
                min_count: count,
                num_counts: u64::from(seen),
            }
        })
        .collect()
}
