//! Aggregation tables. Each decoding thread fills its own; they are summed at the end.
//! Keys carry the pid because a sample can only be placed in a binary once every mmap event of
//! its process is known, which for streams is only at the end.

use bytemuck::Zeroable;
use hashbrown::HashMap;
use rayon::prelude::*;

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

/// A key of a [`CountTable`]: a few addresses, packed.
pub trait TableKey: Copy + Eq + std::hash::Hash + bytemuck::Zeroable + Send + Sync {
    /// The key's hash under `seed`.
    fn hash64(&self, seed: u64) -> u64;
}

/// A multiply whose 128-bit product is folded back to 64 bits: every input bit reaches the low
/// bits the table indexes with.
#[inline(always)]
fn fold_multiply(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

const HASH_SEEDS: [u64; 3] = [
    0x9e37_79b9_7f4a_7c15,
    0xc2b2_ae3d_27d4_eb4f,
    0x1656_67b1_9e37_79f9,
];

impl<T, const N: usize> TableKey for [T; N]
where
    T: Copy + Eq + std::hash::Hash + Into<u64> + Send + Sync,
    [T; N]: bytemuck::Zeroable,
{
    #[inline(always)]
    fn hash64(&self, seed: u64) -> u64 {
        let mut h = seed;
        for (i, &x) in self.iter().enumerate() {
            h = fold_multiply(h ^ x.into(), HASH_SEEDS[i % HASH_SEEDS.len()]);
        }
        h
    }
}

/// A slot: `count == 0` marks it empty (every stored key was counted at least once).
#[derive(Clone, Copy)]
#[repr(C)]
struct Slot<K> {
    key: K,
    count: u32,
}

// SAFETY: `Slot` is `repr(C)` and its fields are `Zeroable`; all zeroes is an empty slot.
unsafe impl<K: bytemuck::Zeroable> bytemuck::Zeroable for Slot<K> {}

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
struct Slots<K> {
    heap: Vec<Slot<K>>,
    mapped: Option<memmap2::MmapMut>,
    len: usize,
}

/// Tables from this size up are mapped (one huge page).
const MAPPED_BYTES: usize = 2 << 20;

impl<K: bytemuck::Zeroable> Slots<K> {
    fn zeroed(count: usize) -> Slots<K> {
        let bytes = count * std::mem::size_of::<Slot<K>>();
        if bytes >= MAPPED_BYTES {
            if let Ok(map) = memmap2::MmapMut::map_anon(bytes) {
                #[cfg(target_os = "linux")]
                let _ = map.advise(memmap2::Advice::HugePage);
                return Slots {
                    heap: Vec::new(),
                    mapped: Some(map),
                    len: count,
                };
            }
        }
        Slots {
            heap: bytemuck::zeroed_vec(count),
            mapped: None,
            len: count,
        }
    }
}

impl<K> std::ops::Deref for Slots<K> {
    type Target = [Slot<K>];
    fn deref(&self) -> &[Slot<K>] {
        match &self.mapped {
            // SAFETY: the mapping is page-aligned (more than `Slot`'s alignment), exactly
            // `len` slots long, zero-filled when made (all zeroes is a valid `Slot`), and only
            // ever written through `&mut self`.
            Some(m) => unsafe { std::slice::from_raw_parts(m.as_ptr().cast(), self.len) },
            None => &self.heap,
        }
    }
}

impl<K> std::ops::DerefMut for Slots<K> {
    fn deref_mut(&mut self) -> &mut [Slot<K>] {
        match &mut self.mapped {
            // SAFETY: as in `deref`; `&mut self` makes the access exclusive.
            Some(m) => unsafe { std::slice::from_raw_parts_mut(m.as_mut_ptr().cast(), self.len) },
            None => &mut self.heap,
        }
    }
}

/// The largest batch [`CountTable::add_batch`] prefetches at once.
pub const BATCH: usize = 64;

/// An open-addressing table of counts built for the decode loop: a whole batch of keys is
/// hashed first and its slots prefetched, so the cache misses of up to 64 inserts overlap
/// instead of being paid one after another (the table rarely fits in cache). Counts are 32-bit
/// in the slots; what a slot cannot hold goes to the overflow map (a key counted 2^32 times
/// needs a capture of hundreds of GB).
pub struct CountTable<K> {
    slots: Slots<K>,
    len: usize,
    mask: usize,
    overflow: HashMap<K, u64>,
    /// Each table hashes with its own seed. With one hash for all, merging a table walks it in
    /// the other's home-slot order, and where the two hold mostly different keys the inserts
    /// pile into one ever-longer probe run: quadratic (1.2 s instead of tens of ms for two
    /// threads' tables of 0.5 M disjoint traces each).
    seed: u64,
}

impl<K: TableKey> Default for CountTable<K> {
    fn default() -> Self {
        CountTable::with_capacity_pow2(1 << 10, next_seed())
    }
}

/// A fresh, well-mixed hash seed per table.
fn next_seed() -> u64 {
    static TABLES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = TABLES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    fold_multiply(n ^ 0x243f_6a88_85a3_08d3, 0x9e37_79b9_7f4a_7c15) | 1
}

impl<K: TableKey> CountTable<K> {
    fn with_capacity_pow2(cap: usize, seed: u64) -> Self {
        CountTable {
            slots: Slots::zeroed(cap),
            len: 0,
            mask: cap - 1,
            overflow: HashMap::new(),
            seed,
        }
    }

    /// The slot `key` is looked for first.
    #[inline(always)]
    fn home(&self, key: &K) -> usize {
        key.hash64(self.seed) as usize & self.mask
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `extra` more keys would take the table past its load limit (3/4: linear probing
    /// stays short, and the slots are what the decode loop's cache misses are made of).
    #[inline(always)]
    fn over_limit(&self, extra: usize) -> bool {
        (self.len + extra) * 4 > self.slots.len() * 3
    }

    /// Adds `n` (at least 1) to `key`'s count.
    #[inline(always)]
    pub fn add(&mut self, key: K, n: u64) {
        self.add_hashed(key, key.hash64(self.seed), n);
    }

    /// Adds one to the count of every key of a batch (at most [`BATCH`] keys).
    #[inline]
    pub fn add_batch(&mut self, batch: &[K]) {
        self.add_prefetched(batch, |_| 1);
    }

    /// Adds `count(i)` to the count of `batch[i]`, hashing the whole batch and prefetching its
    /// slots before the first insert.
    #[inline(always)]
    fn add_prefetched(&mut self, batch: &[K], count: impl Fn(usize) -> u64) {
        // Grow first so the prefetched slots stay valid for the whole batch.
        if self.over_limit(batch.len()) {
            self.grow();
        }
        let mut hashes = [0u64; BATCH];
        for (h, key) in hashes.iter_mut().zip(batch) {
            *h = key.hash64(self.seed);
            prefetch(&self.slots[*h as usize & self.mask]);
        }
        for (i, (&h, &key)) in hashes.iter().zip(batch).enumerate() {
            self.add_hashed(key, h, count(i));
        }
    }

    #[inline(always)]
    fn add_hashed(&mut self, key: K, hash: u64, n: u64) {
        let mut i = hash as usize & self.mask;
        loop {
            let slot = &mut self.slots[i];
            if slot.count == 0 {
                slot.key = key;
                slot.count = 1;
                self.add_count(i, n - 1);
                self.len += 1;
                if self.over_limit(0) {
                    self.grow();
                }
                return;
            }
            if slot.key == key {
                self.add_count(i, n);
                return;
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Adds to slot `i`'s count, or to the overflow map what would not fit.
    #[inline(always)]
    fn add_count(&mut self, i: usize, n: u64) {
        let slot = &mut self.slots[i];
        match u32::try_from(u64::from(slot.count) + n) {
            Ok(c) => slot.count = c,
            Err(_) => *self.overflow.entry(slot.key).or_default() += n,
        }
    }

    fn grow(&mut self) {
        // Same seed: the old slots' order then spreads evenly over the doubled table.
        let bigger = CountTable::with_capacity_pow2(self.slots.len() * 2, self.seed);
        let mut old = std::mem::replace(self, bigger);
        self.overflow = std::mem::take(&mut old.overflow);
        for s in old.slots.iter().filter(|s| s.count != 0) {
            self.add(s.key, u64::from(s.count));
        }
    }

    /// Adds every entry of `other`, a prefetched batch at a time (the two tables hash
    /// differently, so `other`'s keys land all over this one).
    pub fn merge(&mut self, other: CountTable<K>) {
        let mut keys = [K::zeroed(); BATCH];
        let mut counts = [0u64; BATCH];
        let mut n = 0;
        for (key, count) in other.iter() {
            (keys[n], counts[n]) = (key, count);
            n += 1;
            if n == BATCH {
                self.add_prefetched(&keys, |i| counts[i]);
                n = 0;
            }
        }
        self.add_prefetched(&keys[..n], |i| counts[i]);
    }

    /// The entries sorted by `order`, in the table's own storage: the occupied slots are moved
    /// to the front and sorted there, so finishing a table allocates nothing.
    pub fn into_sorted<O: Ord>(mut self, order: impl Fn(&K) -> O + Sync) -> SortedCounts<K> {
        let slots = &mut self.slots[..];
        let mut len = 0;
        for i in 0..slots.len() {
            if slots[i].count != 0 {
                slots[len] = slots[i];
                len += 1;
            }
        }
        slots[..len].par_sort_unstable_by_key(|s| order(&s.key));
        SortedCounts {
            slots: self.slots,
            len,
            overflow: self.overflow,
        }
    }

    /// `key`'s count (0 if it was never counted).
    pub fn get(&self, key: &K) -> u64 {
        let mut i = self.home(key);
        loop {
            let slot = &self.slots[i];
            if slot.count == 0 {
                return 0;
            }
            if slot.key == *key {
                return total(&self.overflow, slot);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// All entries, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (K, u64)> + '_ {
        let occupied = self.slots.iter().filter(|s| s.count != 0);
        occupied.map(|s| (s.key, total(&self.overflow, s)))
    }
}

/// A slot's whole count: its own plus what overflowed it.
#[inline(always)]
fn total<K: TableKey>(overflow: &HashMap<K, u64>, s: &Slot<K>) -> u64 {
    let more = match overflow.is_empty() {
        true => 0,
        false => overflow.get(&s.key).copied().unwrap_or(0),
    };
    u64::from(s.count) + more
}

/// A finished [`CountTable`]: its entries in order.
pub struct SortedCounts<K> {
    slots: Slots<K>,
    len: usize,
    overflow: HashMap<K, u64>,
}

impl<K: TableKey> SortedCounts<K> {
    /// The occupied slots, in order.
    fn sorted(&self) -> &[Slot<K>] {
        &self.slots[..self.len]
    }

    #[cfg(test)]
    fn iter(&self) -> impl Iterator<Item = (K, u64)> + '_ {
        self.sorted()
            .iter()
            .map(|s| (s.key, total(&self.overflow, s)))
    }
}

/// The order of a profile's traces: both are total orders on the same keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TraceOrder {
    /// By (branch, fall-through start, fall-through end): the pre-aggregated output order.
    #[default]
    ByBranch,
    /// By (fall-through start, branch, fall-through end): the order symbolization walks.
    ByStart,
}

impl TraceOrder {
    /// The sort key of a trace in this order.
    #[inline(always)]
    fn key<T: Copy>(self, [b, f, t]: [T; 3]) -> [T; 3] {
        match self {
            TraceOrder::ByBranch => [b, f, t],
            TraceOrder::ByStart => [f, b, t],
        }
    }
}

/// How a [`TraceTable`] packs addresses. A binary's locations are 0 (outside it), all-ones (no
/// address) or an address inside it: when the binary spans less than 4 GiB they fit 32 bits as
/// offsets from its lowest address, which halves the slots the decode loop misses the cache on.
/// The packing keeps the order of the addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packing {
    base: u64,
}

impl Packing {
    /// The packing for a binary spanning `[start, end)`, if its locations fit 32 bits.
    pub fn for_span(start: u64, end: u64) -> Option<Packing> {
        let base = start.max(1);
        (end.saturating_sub(base) < u64::from(u32::MAX) - 1).then_some(Packing { base })
    }

    /// `addr` must be 0, all-ones or inside the span.
    #[inline(always)]
    pub fn pack(self, addr: u64) -> u32 {
        match addr {
            0 => 0,
            u64::MAX => u32::MAX,
            a => (a - self.base + 1) as u32,
        }
    }

    #[inline(always)]
    pub fn unpack(self, p: u32) -> u64 {
        match p {
            0 => 0,
            u32::MAX => u64::MAX,
            p => u64::from(p) - 1 + self.base,
        }
    }
}

/// Counts a batch of traces in `traces` and their mispredictions in `mispreds`, both batched
/// (mispredictions are rarer, but their table is no likelier to be in cache).
#[inline(always)]
fn add_batch_to<T: Copy + Into<u64>>(
    traces: &mut CountTable<[T; 3]>,
    mispreds: &mut CountTable<[T; 2]>,
    batch: &[(Trace, bool)],
    pack: impl Fn(Trace) -> [T; 3],
) where
    [T; 3]: TableKey,
    [T; 2]: TableKey,
{
    let mut keys = [<[T; 3]>::zeroed(); BATCH];
    let mut mispredicted = [<[T; 2]>::zeroed(); BATCH];
    let mut m = 0;
    for (k, &(trace, mispred)) in keys.iter_mut().zip(batch) {
        *k = pack(trace);
        mispredicted[m] = [k[0], k[1]];
        m += mispred as usize;
    }
    traces.add_batch(&keys[..batch.len()]);
    if m > 0 {
        mispreds.add_batch(&mispredicted[..m]);
    }
}

/// A binary's trace counts, and its mispredictions per branch (all any output needs of them:
/// BOLT keeps mispredictions per branch, not per trace).
pub enum TraceTable {
    Packed {
        packing: Packing,
        traces: CountTable<[u32; 3]>,
        mispreds: CountTable<[u32; 2]>,
    },
    Wide {
        traces: CountTable<[u64; 3]>,
        mispreds: CountTable<[u64; 2]>,
    },
}

impl Default for TraceTable {
    fn default() -> Self {
        TraceTable::Wide {
            traces: CountTable::default(),
            mispreds: CountTable::default(),
        }
    }
}

impl TraceTable {
    /// A table for a binary spanning `[start, end)`.
    pub fn for_span(start: u64, end: u64) -> TraceTable {
        match Packing::for_span(start, end) {
            Some(packing) => TraceTable::Packed {
                packing,
                traces: CountTable::default(),
                mispreds: CountTable::default(),
            },
            None => TraceTable::default(),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            TraceTable::Packed { traces, .. } => traces.len(),
            TraceTable::Wide { traces, .. } => traces.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `taken` (at least 1) and `mispred` to `trace`'s counts. Its addresses must be
    /// locations in the table's binary (see [`Packing`]).
    pub fn add(&mut self, trace: Trace, taken: u64, mispred: u64) {
        match self {
            TraceTable::Packed {
                packing: p, traces, ..
            } => traces.add(trace.map(|a| p.pack(a)), taken),
            TraceTable::Wide { traces, .. } => traces.add(trace, taken),
        }
        if mispred != 0 {
            self.add_mispreds([trace[0], trace[1]], mispred);
        }
    }

    /// Counts every trace of a batch once, and its misprediction.
    #[inline]
    pub fn add_batch(&mut self, batch: &[(Trace, bool)]) {
        match self {
            TraceTable::Packed {
                packing: p,
                traces,
                mispreds,
            } => {
                add_batch_to(traces, mispreds, batch, |t| t.map(|a| p.pack(a)));
            }
            TraceTable::Wide { traces, mispreds } => {
                add_batch_to(traces, mispreds, batch, |t| t);
            }
        }
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: TraceTable) {
        match (self, other) {
            (
                TraceTable::Packed {
                    packing,
                    traces,
                    mispreds,
                },
                TraceTable::Packed {
                    packing: q,
                    traces: t,
                    mispreds: m,
                },
            ) if *packing == q => {
                traces.merge(t);
                mispreds.merge(m);
            }
            (
                TraceTable::Wide { traces, mispreds },
                TraceTable::Wide {
                    traces: t,
                    mispreds: m,
                },
            ) => {
                traces.merge(t);
                mispreds.merge(m);
            }
            (this, other) => {
                for (trace, taken) in other.traces() {
                    this.add(trace, taken, 0);
                }
                for ([b, f], m) in other.mispreds() {
                    // Every mispredicted branch was counted with one of its traces.
                    this.add_mispreds([b, f], m);
                }
            }
        }
    }

    fn add_mispreds(&mut self, [b, f]: [u64; 2], n: u64) {
        match self {
            TraceTable::Packed {
                packing: p,
                mispreds,
                ..
            } => mispreds.add([p.pack(b), p.pack(f)], n),
            TraceTable::Wide { mispreds, .. } => mispreds.add([b, f], n),
        }
    }

    /// The traces sorted in `order`, each branch's mispredictions given to the first of its
    /// traces (a branch's traces are adjacent in either order).
    pub fn into_sorted(self, order: TraceOrder) -> Vec<((u64, u64, u64), Counts)> {
        match self {
            TraceTable::Packed {
                packing: p,
                traces,
                mispreds,
            } => {
                // One 128-bit comparison per step instead of three.
                let sorted = traces.into_sorted(|&k| {
                    let [a, b, c] = order.key(k).map(u128::from);
                    a << 64 | b << 32 | c
                });
                expand(&sorted, &mispreds, |a| p.unpack(a))
            }
            TraceTable::Wide { traces, mispreds } => {
                let sorted = traces.into_sorted(|&k| order.key(k));
                expand(&sorted, &mispreds, |a| a)
            }
        }
    }

    /// Every trace and how often it was taken, in no particular order.
    pub fn traces(&self) -> Box<dyn Iterator<Item = (Trace, u64)> + '_> {
        match self {
            TraceTable::Packed {
                packing: p, traces, ..
            } => Box::new(
                traces
                    .iter()
                    .map(|([b, f, t], n)| ([p.unpack(b), p.unpack(f), p.unpack(t)], n)),
            ),
            TraceTable::Wide { traces, .. } => Box::new(traces.iter()),
        }
    }

    /// Mispredictions per branch (source, target), in no particular order.
    pub fn mispreds(&self) -> Box<dyn Iterator<Item = ([u64; 2], u64)> + '_> {
        match self {
            TraceTable::Packed {
                packing: p,
                mispreds,
                ..
            } => Box::new(
                mispreds
                    .iter()
                    .map(|([b, f], n)| ([p.unpack(b), p.unpack(f)], n)),
            ),
            TraceTable::Wide { mispreds, .. } => Box::new(mispreds.iter()),
        }
    }
}

/// Sorted traces with their counts, built in parallel.
fn expand<T: Copy + Eq + Send + Sync>(
    traces: &SortedCounts<[T; 3]>,
    mispreds: &CountTable<[T; 2]>,
    unpack: impl Fn(T) -> u64 + Sync,
) -> Vec<((u64, u64, u64), Counts)>
where
    [T; 3]: TableKey,
    [T; 2]: TableKey,
{
    let slots = traces.sorted();
    let mut out = Vec::new();
    (0..slots.len())
        .into_par_iter()
        .map(|i| {
            let [b, f, t] = slots[i].key;
            let first_of_branch = i == 0 || slots[i - 1].key[..2] != [b, f];
            let mispred = match first_of_branch {
                true => mispreds.get(&[b, f]),
                false => 0,
            };
            let counts = Counts {
                taken: total(&traces.overflow, &slots[i]),
                mispred,
            };
            ((unpack(b), unpack(f), unpack(t)), counts)
        })
        .collect_into_vec(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Locations of a binary spanning [0x1000, 0x1040), with the two markers.
    fn location() -> impl Strategy<Value = u64> {
        prop_oneof![Just(0u64), Just(u64::MAX), 0x1000u64..0x1040]
    }

    /// Per-trace taken counts and per-branch mispredictions, as a plain map counts them.
    fn reference(items: &[(Trace, bool)]) -> (HashMap<Trace, u64>, HashMap<[u64; 2], u64>) {
        let (mut taken, mut mispreds) = (HashMap::new(), HashMap::new());
        for &([b, f, t], m) in items {
            *taken.entry([b, f, t]).or_insert(0) += 1;
            if m {
                *mispreds.entry([b, f]).or_insert(0) += 1;
            }
        }
        (taken, mispreds)
    }

    proptest! {
        /// Both storages count exactly what a plain HashMap counts, whatever the batch size,
        /// and `expand` lists every trace once, in order, with each branch's mispredictions
        /// on its first trace.
        #[test]
        fn trace_table_equals_hashmap(
            keys in prop::collection::vec((location(), location(), location(), any::<bool>()), 0..600),
            batch in 1usize..BATCH,
            by_start: bool,
        ) {
            let items: Vec<(Trace, bool)> = keys.iter().map(|&(a, b, c, m)| ([a, b, c], m)).collect();
            let (taken, mispreds) = reference(&items);
            let order = if by_start { TraceOrder::ByStart } else { TraceOrder::ByBranch };
            for mut table in [TraceTable::for_span(0x1000, 0x1040), TraceTable::default()] {
                for chunk in items.chunks(batch) {
                    table.add_batch(chunk);
                }
                prop_assert_eq!(table.len(), taken.len());
                prop_assert_eq!(&table.traces().collect::<HashMap<_, _>>(), &taken);
                prop_assert_eq!(&table.mispreds().collect::<HashMap<_, _>>(), &mispreds);
                let expanded = table.into_sorted(order);
                let mut expected: Vec<_> = taken.iter().map(|(&[b, f, t], &n)| ((b, f, t), n)).collect();
                expected.sort_by_key(|&((b, f, t), _)| order.key([b, f, t]));
                let got: Vec<_> = expanded.iter().map(|&(k, c)| (k, c.taken)).collect();
                prop_assert_eq!(got, expected);
                let mut seen = HashMap::new();
                for &((b, f, _), c) in &expanded {
                    let first = seen.insert([b, f], ()).is_none();
                    let want = if first { mispreds.get(&[b, f]).copied().unwrap_or(0) } else { 0 };
                    prop_assert_eq!(c.mispred, want);
                }
            }
        }

        /// Two tables filled with the two halves of a stream and merged count what one table
        /// filled with the whole stream counts (merges go a prefetched batch at a time).
        #[test]
        fn merged_tables_equal_hashmap(
            keys in prop::collection::vec((location(), location(), location(), any::<bool>()), 0..600),
            cut in any::<prop::sample::Index>(),
        ) {
            let items: Vec<(Trace, bool)> = keys.iter().map(|&(a, b, c, m)| ([a, b, c], m)).collect();
            let (taken, mispreds) = reference(&items);
            let (first, second) = items.split_at(cut.index(items.len() + 1));
            let fill = |part: &[(Trace, bool)], mut table: TraceTable| {
                part.chunks(BATCH).for_each(|c| table.add_batch(c));
                table
            };
            for make in [|| TraceTable::for_span(0x1000, 0x1040), TraceTable::default] {
                let mut table = fill(first, make());
                table.merge(fill(second, make()));
                prop_assert_eq!(table.len(), taken.len());
                prop_assert_eq!(&table.traces().collect::<HashMap<_, _>>(), &taken);
                prop_assert_eq!(&table.mispreds().collect::<HashMap<_, _>>(), &mispreds);
            }
        }

        /// Packing keeps the order of locations and loses nothing.
        #[test]
        fn packing_round_trips_in_order(start in 0u64..1 << 40, len in 1u64..1 << 31, x in any::<u64>(), y in any::<u64>()) {
            let p = Packing::for_span(start, start + len).unwrap();
            let place = |v: u64| match v % 4 { 0 => 0, 1 => u64::MAX, _ => start + v % len };
            let (a, b) = (place(x), place(y));
            prop_assert_eq!(p.unpack(p.pack(a)), a);
            prop_assert_eq!(a.cmp(&b), p.pack(a).cmp(&p.pack(b)));
        }
    }

    #[test]
    fn spans_of_4_gib_and_more_are_not_packed() {
        assert!(Packing::for_span(0x1000, 0x1000 + (1 << 32)).is_none());
        assert!(Packing::for_span(0, u64::MAX).is_none());
        assert!(Packing::for_span(0x40_0000, 0x50_0000).is_some());
        assert!(matches!(
            TraceTable::for_span(0, 1 << 33),
            TraceTable::Wide { .. }
        ));
    }

    /// Tables of different storage merge through their addresses.
    #[test]
    fn packed_and_wide_tables_merge() {
        let items = [
            ([0x1000, 0x1010, u64::MAX], true),
            ([0, 0x1020, 0x1030], false),
        ];
        let mut packed = TraceTable::for_span(0x1000, 0x1040);
        packed.add_batch(&items);
        let mut wide = TraceTable::default();
        wide.add_batch(&items[..1]);
        packed.merge(wide);
        let traces: HashMap<_, _> = packed.traces().collect();
        assert_eq!(traces[&[0x1000, 0x1010, u64::MAX]], 2);
        assert_eq!(traces[&[0, 0x1020, 0x1030]], 1);
        let mispreds: HashMap<_, _> = packed.mispreds().collect();
        assert_eq!(mispreds, HashMap::from([([0x1000, 0x1010], 2)]));
    }

    /// Counts past 32 bits go to the overflow map and come back added, through growth, merges
    /// and sorting.
    #[test]
    fn counts_beyond_32_bits_are_kept() {
        let big = u64::from(u32::MAX);
        let mut a: CountTable<[u64; 3]> = CountTable::with_capacity_pow2(4, next_seed());
        a.add([1, 2, 3], big);
        a.add([1, 2, 3], 5);
        a.add([4, 5, 6], 1);
        for k in 10..40 {
            a.add([k, k, k], 1); // several growths
        }
        let mut b = CountTable::with_capacity_pow2(4, next_seed());
        b.add([1, 2, 3], big + 2);
        b.merge(a);
        let counts: HashMap<_, _> = b.iter().collect();
        assert_eq!(counts[&[1, 2, 3]], 2 * big + 7);
        assert_eq!(counts[&[4, 5, 6]], 1);
        assert_eq!(b.len(), 32);
        let sorted: Vec<_> = b.into_sorted(|&k| k).iter().collect();
        assert_eq!(sorted[0], ([1, 2, 3], 2 * big + 7));
        assert_eq!(sorted.len(), 32);
        assert!(sorted.windows(2).all(|w| w[0].0 < w[1].0));
    }

    /// Growing into mapped (huge-page) storage, then merging two such tables, loses nothing.
    #[test]
    fn large_tables_in_mapped_storage_count_exactly() {
        let distinct = 3 * MAPPED_BYTES / std::mem::size_of::<Slot<[u32; 3]>>();
        let keys: Vec<[u32; 3]> = (0..distinct as u32)
            .map(|i| [i.wrapping_mul(7919), i ^ 0x5555, i % 13])
            .collect();
        let (mut a, mut b) = (CountTable::default(), CountTable::default());
        for chunk in keys.chunks(BATCH) {
            a.add_batch(chunk);
            b.add_batch(&chunk[..chunk.len() / 2]);
        }
        assert!(a.slots.mapped.is_some());
        let half: usize = keys.chunks(BATCH).map(|c| c.len() / 2).sum();
        assert_eq!(b.len(), half);
        a.merge(b);
        assert_eq!(a.len(), distinct);
        let counts: HashMap<_, _> = a.iter().collect();
        for chunk in keys.chunks(BATCH) {
            for (n, key) in chunk.iter().enumerate() {
                let times = if n < chunk.len() / 2 { 2 } else { 1 };
                assert_eq!(counts[key], times, "{key:?}");
            }
        }
    }
}
