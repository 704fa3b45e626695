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

/// A trace key in the binary's addresses: (branch, fall-through start, fall-through end).
pub type Trace = [u64; 3];

/// 32 bytes, two to a cache line: counts are 32-bit here, and what a slot cannot hold goes to
/// the table's overflow map (a trace taken 2^32 times needs a capture of hundreds of GB).
#[derive(Clone, Copy, Default, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(C)]
struct Slot {
    key: Trace,
    /// 0 marks an empty slot: every stored trace was taken at least once.
    taken: u32,
    mispred: u32,
}

/// An open-addressing table of trace counts built for the decode loop: a whole branch stack is
/// hashed first and its slots prefetched, so the cache misses of up to 64 inserts overlap
/// instead of being paid one after another (the table rarely fits in cache).
pub struct TraceTable {
    slots: Slots,
    len: usize,
    mask: usize,
    /// Counts beyond what a slot's 32-bit fields hold, added to the slot's own.
    overflow: HashMap<Trace, Counts>,
}

impl Default for TraceTable {
    fn default() -> Self {
        TraceTable::with_capacity_pow2(1 << 12)
    }
}

#[inline(always)]
fn hash_trace(k: &Trace) -> u64 {
    let h = k[0].wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ k[1].rotate_left(23).wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
        ^ k[2].rotate_left(47).wrapping_mul(0x1656_67b1_9e37_79f9);
    h ^ (h >> 31)
}

#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A table's zeroed slots: small ones on the heap; large ones in an anonymous mapping backed by
/// transparent huge pages where the kernel allows, since the tables are touched at random and
/// one fault per 4 KiB page cost more system time than the decoding itself.
enum Slots {
    Heap(Vec<Slot>),
    Mapped(memmap2::MmapMut),
}

/// Tables from this size up are mapped (one huge page).
const MAPPED_BYTES: usize = 2 << 20;

impl Slots {
    fn zeroed(count: usize) -> Slots {
        let bytes = count * std::mem::size_of::<Slot>();
        if bytes >= MAPPED_BYTES {
            if let Ok(map) = memmap2::MmapMut::map_anon(bytes) {
                #[cfg(target_os = "linux")]
                let _ = map.advise(memmap2::Advice::HugePage);
                return Slots::Mapped(map);
            }
        }
        Slots::Heap(bytemuck::zeroed_vec(count))
    }
}

impl std::ops::Deref for Slots {
    type Target = [Slot];
    fn deref(&self) -> &[Slot] {
        match self {
            Slots::Heap(v) => v,
            // A mapping is page-aligned and a whole number of slots long.
            Slots::Mapped(m) => bytemuck::cast_slice(m),
        }
    }
}

impl std::ops::DerefMut for Slots {
    fn deref_mut(&mut self) -> &mut [Slot] {
        match self {
            Slots::Heap(v) => v,
            Slots::Mapped(m) => bytemuck::cast_slice_mut(m),
        }
    }
}

/// The largest batch [`TraceTable::add_batch`] prefetches at once.
pub const BATCH: usize = 64;

impl TraceTable {
    fn with_capacity_pow2(cap: usize) -> Self {
        TraceTable {
            slots: Slots::zeroed(cap),
            len: 0,
            mask: cap - 1,
            overflow: HashMap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `taken` and `mispred` to `key`'s counts (`taken` must be at least 1).
    #[inline(always)]
    pub fn add(&mut self, key: Trace, taken: u64, mispred: u64) {
        self.add_hashed(key, hash_trace(&key), taken, mispred);
    }

    /// Adds one taken count (and the misprediction) for every trace of a batch.
    #[inline]
    pub fn add_batch(&mut self, batch: &[(Trace, bool)]) {
        // Grow first so the prefetched slots stay valid for the whole batch.
        if (self.len + batch.len()) * 2 > self.slots.len() {
            self.grow();
        }
        let mut hashes = [0u64; BATCH];
        for (h, (key, _)) in hashes.iter_mut().zip(batch) {
            *h = hash_trace(key);
            prefetch(&self.slots[*h as usize & self.mask]);
        }
        for (&h, &(key, mispred)) in hashes.iter().zip(batch) {
            self.add_hashed(key, h, 1, mispred as u64);
        }
    }

    #[inline(always)]
    fn add_hashed(&mut self, key: Trace, hash: u64, taken: u64, mispred: u64) {
        let mut i = hash as usize & self.mask;
        loop {
            let slot = &mut self.slots[i];
            if slot.taken == 0 {
                slot.key = key;
                slot.taken = 1;
                self.add_counts(i, taken - 1, mispred);
                self.len += 1;
                if self.len * 2 > self.slots.len() {
                    self.grow();
                }
                return;
            }
            if slot.key == key {
                self.add_counts(i, taken, mispred);
                return;
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Adds to slot `i`'s counts, or to the overflow map what would not fit.
    #[inline(always)]
    fn add_counts(&mut self, i: usize, taken: u64, mispred: u64) {
        let slot = &mut self.slots[i];
        let t = u64::from(slot.taken) + taken;
        let m = u64::from(slot.mispred) + mispred;
        match (u32::try_from(t), u32::try_from(m)) {
            (Ok(t), Ok(m)) => {
                slot.taken = t;
                slot.mispred = m;
            }
            _ => self
                .overflow
                .entry(slot.key)
                .or_default()
                .add(Counts { taken, mispred }),
        }
    }

    fn grow(&mut self) {
        let mut old = std::mem::replace(self, TraceTable::with_capacity_pow2(self.slots.len() * 2));
        self.overflow = std::mem::take(&mut old.overflow);
        for s in old.slots.iter().filter(|s| s.taken != 0) {
            self.add(s.key, u64::from(s.taken), u64::from(s.mispred));
        }
    }

    /// Adds every entry of `other`.
    pub fn merge(&mut self, other: TraceTable) {
        for (key, c) in other.iter() {
            self.add(key, c.taken, c.mispred);
        }
    }

    /// All entries, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (Trace, Counts)> + '_ {
        self.slots.iter().filter(|s| s.taken != 0).map(|s| {
            let mut counts = Counts {
                taken: u64::from(s.taken),
                mispred: u64::from(s.mispred),
            };
            if !self.overflow.is_empty() {
                if let Some(&more) = self.overflow.get(&s.key) {
                    counts.add(more);
                }
            }
            (s.key, counts)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The prefetching table counts exactly what a plain HashMap counts.
        #[test]
        fn trace_table_equals_hashmap(keys in prop::collection::vec((0u64..50, 0u64..50, prop::sample::select(vec![0u64, 7, u64::MAX]), any::<bool>()), 0..600), batch in 1usize..BATCH) {
            let mut table = TraceTable::with_capacity_pow2(4);
            let mut reference: HashMap<Trace, Counts> = HashMap::new();
            let items: Vec<(Trace, bool)> = keys.iter().map(|&(a, b, c, m)| ([a, b, c], m)).collect();
            for chunk in items.chunks(batch) {
                table.add_batch(chunk);
            }
            for &(k, m) in &items {
                let c = reference.entry(k).or_default();
                c.taken += 1;
                c.mispred += m as u64;
            }
            let ours: HashMap<Trace, Counts> = table.iter().collect();
            prop_assert_eq!(table.len(), reference.len());
            prop_assert_eq!(ours, reference);
        }
    }

    /// Counts past 32 bits go to the overflow map and come back added, through growth and
    /// merges.
    #[test]
    fn counts_beyond_32_bits_are_kept() {
        let big = u64::from(u32::MAX);
        let mut a = TraceTable::with_capacity_pow2(4);
        a.add([1, 2, 3], big, 7);
        a.add([1, 2, 3], 5, big);
        a.add([4, 5, 6], 1, 0);
        for k in 10..40 {
            a.add([k, k, k], 1, 1); // several growths
        }
        let mut b = TraceTable::with_capacity_pow2(4);
        b.add([1, 2, 3], big + 2, 1);
        b.merge(a);
        let counts: HashMap<Trace, Counts> = b.iter().collect();
        let expected = Counts {
            taken: 2 * big + 7,
            mispred: big + 8,
        };
        assert_eq!(counts[&[1, 2, 3]], expected);
        assert_eq!(
            counts[&[4, 5, 6]],
            Counts {
                taken: 1,
                mispred: 0
            }
        );
        assert_eq!(b.len(), 32);
    }

    /// Growing into mapped (huge-page) storage, then merging two such tables, loses nothing.
    #[test]
    fn large_tables_in_mapped_storage_count_exactly() {
        let distinct = 3 * MAPPED_BYTES / std::mem::size_of::<Slot>();
        let keys: Vec<(Trace, bool)> = (0..distinct as u64)
            .map(|i| ([i * 7919, i ^ 0x5555, i % 13], i % 3 == 0))
            .collect();
        let (mut a, mut b) = (TraceTable::default(), TraceTable::default());
        for chunk in keys.chunks(BATCH) {
            a.add_batch(chunk);
            b.add_batch(&chunk[..chunk.len() / 2]);
        }
        assert!(matches!(a.slots, Slots::Mapped(_)));
        let half: usize = keys.chunks(BATCH).map(|c| c.len() / 2).sum();
        assert_eq!(b.len(), half);
        a.merge(b);
        assert_eq!(a.len(), distinct);
        let counts: HashMap<Trace, Counts> = a.iter().collect();
        for chunk in keys.chunks(BATCH) {
            for (n, &(key, mispred)) in chunk.iter().enumerate() {
                let times = if n < chunk.len() / 2 { 2 } else { 1 };
                let expected = Counts {
                    taken: times,
                    mispred: times * mispred as u64,
                };
                assert_eq!(counts[&key], expected, "{key:?}");
            }
        }
    }
}
