//! Aggregation tables. Each decoding thread fills its own; they are summed at the end.
//! Keys carry the pid because a sample can only be placed in a binary once every mmap event of
//! its process is known, which for streams is only at the end.

use hashbrown::HashMap;

/// BOLT's `Trace`: a taken branch `branch → from` followed by straight-line execution from
/// `from` to `to` (the source of the next newer branch; `BR_ONLY` for the newest entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TraceKey {
    pub pid: u32,
    pub branch: u64,
    pub from: u64,
    pub to: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub taken: u64,
    pub mispred: u64,
}

impl Counts {
    #[inline(always)]
    pub fn add(&mut self, other: Counts) {
        self.taken += other.taken;
        self.mispred += other.mispred;
    }
}

/// A basic (IP) sample key: which event, which process, which address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IpKey {
    pub event: u32,
    pub pid: u32,
    pub ip: u64,
}

/// Adds every entry of `other` into `into`.
pub fn merge_into<K: std::hash::Hash + Eq, V>(
    into: &mut HashMap<K, V>,
    other: HashMap<K, V>,
    mut add: impl FnMut(&mut V, V),
) {
    into.reserve(other.len());
    for (k, v) in other {
        match into.entry(k) {
            hashbrown::hash_map::Entry::Occupied(mut e) => add(e.get_mut(), v),
            hashbrown::hash_map::Entry::Vacant(e) => {
                e.insert(v);
            }
        }
    }
}
