//! A lookup table over sorted start addresses: for every aligned block of the address span,
//! how many starts lie at or before the block's first address. Finding the last start at or
//! before an address then searches only the starts inside one block, not the whole list:
//! symbolizing looks up three addresses per trace, and a binary search over a large binary's
//! functions misses the cache at nearly every step.

/// The partition points of a sorted list of starts at each block boundary.
#[derive(Clone, Debug, Default)]
pub(crate) struct StartIndex {
    /// The first start; the first block begins there.
    base: u64,
    /// log2 of the block size.
    shift: u32,
    /// `bounds[b]`: the number of starts at or before `base + (b << shift)`, for every block
    /// up to the one holding the last start, and one more (the number of starts).
    bounds: Vec<u32>,
}

/// About this many starts per block: the search inside a block is then a step or two.
const STARTS_PER_BLOCK: u64 = 2;

impl StartIndex {
    /// The index of `starts`, which must be sorted (equal starts allowed).
    pub(crate) fn new(starts: impl ExactSizeIterator<Item = u64> + Clone) -> StartIndex {
        let count = starts.len();
        let (Some(base), Some(last)) = (starts.clone().next(), starts.clone().last()) else {
            return StartIndex::default();
        };
        let span = last - base;
        let wanted_blocks = (count as u64).div_ceil(STARTS_PER_BLOCK).max(1);
        // The smallest block size that keeps the table near `wanted_blocks` entries.
        let shift = ((span / wanted_blocks).max(1).ilog2() + 1).min(63);
        let blocks = (span >> shift) as usize + 1;
        let mut bounds = Vec::with_capacity(blocks + 1);
        let mut at_or_before = 0usize;
        let mut pending = starts.peekable();
        for block in 0..blocks as u64 {
            let first_address = base + (block << shift);
            while pending.next_if(|&s| s <= first_address).is_some() {
                at_or_before += 1;
            }
            bounds.push(at_or_before as u32);
        }
        bounds.push(count as u32);
        StartIndex {
            base,
            shift,
            bounds,
        }
    }

    /// `starts.partition_point(|&s| s <= addr)` for the `starts` the index was built from.
    #[inline]
    pub(crate) fn partition_point(&self, starts: impl Fn(usize) -> u64, addr: u64) -> usize {
        let Some(offset) = addr.checked_sub(self.base) else {
            return 0;
        };
        let block = (offset >> self.shift) as usize;
        if block >= self.bounds.len().saturating_sub(1) {
            // At or after the last block's first address: only the last block's starts can
            // follow `addr`, and none in it when `addr` is past the span.
            return self.bounds.last().map_or(0, |&n| n as usize);
        }
        let (mut low, mut high) = (self.bounds[block] as usize, self.bounds[block + 1] as usize);
        // Every start before `low` is at or before the block's first address (and so at or
        // before `addr`); every start from `high` on is after the next block's first address.
        while low < high {
            let middle = low + (high - low) / 2;
            if starts(middle) <= addr {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(mut starts: Vec<u64>, probes: &[u64]) -> Result<(), TestCaseError> {
        starts.sort_unstable();
        let index = StartIndex::new(starts.iter().copied());
        let extra = [0, u64::MAX, starts.first().copied().unwrap_or(0)];
        let near_starts = starts
            .iter()
            .flat_map(|&s| [s.wrapping_sub(1), s, s.wrapping_add(1)]);
        for addr in probes.iter().copied().chain(extra).chain(near_starts) {
            let expected = starts.partition_point(|&s| s <= addr);
            prop_assert_eq!(
                index.partition_point(|i| starts[i], addr),
                expected,
                "{:#x}",
                addr
            );
        }
        Ok(())
    }

    proptest! {
        /// The index's partition point equals a binary search over all starts: dense and
        /// sparse starts, repeated ones, and addresses before, between and after them.
        #[test]
        fn partition_point_equals_a_search_of_all_starts(
            starts in prop::collection::vec(0x40_0000u64..0x40_4000, 0..60),
            far in prop::collection::vec(any::<u64>(), 0..8),
            probes in prop::collection::vec(0x3f_f000u64..0x40_5000, 0..60),
        ) {
            let all: Vec<u64> = starts.into_iter().chain(far).collect();
            check(all, &probes)?;
        }
    }

    #[test]
    fn one_start_and_none() {
        check(vec![0x1000], &[0xfff, 0x1000, 0x1001]).unwrap();
        check(vec![], &[0, 5]).unwrap();
        check(vec![7, 7, 7], &[6, 7, 8]).unwrap();
        check(vec![0, u64::MAX], &[1, u64::MAX - 1]).unwrap();
    }
}
