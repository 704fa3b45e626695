//! Aggregation tables. Each decoding thread fills its own; they are summed at the end.
//! Keys carry the pid because a sample can only be placed in a binary once every mmap event of
//! its process is known, which for streams is only at the end.

use bytemuck::Zeroable;
use hashbrown::HashMap;
use rayon::prelude::*;

use crate::perf::hint::prefetch;

/// BOLT's `Trace`: a taken branch `branch → from` followed by straight-line execution from
/// `from` to `to` (the source of the next newer branch; `BR_ONLY` for the newest entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct TraceKey {
    pub(crate) pid: u32,
    pub(crate) branch: u64,
    pub(crate) from: u64,
    pub(crate) to: u64,
}

/// How often a trace was taken, and how many of those times its branch was mispredicted
/// (both in samples, not scaled). In a finished [`BinaryProfile`](crate::perf::BinaryProfile)
/// a branch's mispredictions are summed on the first of its traces, so `mispred` may exceed
/// `taken` there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Times the trace was taken.
    pub taken: u64,
    /// Times its branch was mispredicted.
    pub mispred: u64,
}

impl Counts {
    /// Adds `other`'s counts to these (the same as `+=`), wrapping: counts read from
    /// pre-aggregated text are any 64-bit values (negative ones wrapped), and their sums must
    /// not panic (a fuzz finding, `fuzz/seeds/preagg_fdata/crash-*`).
    #[inline(always)]
    pub fn add(&mut self, other: Counts) {
        self.taken = self.taken.wrapping_add(other.taken);
        self.mispred = self.mispred.wrapping_add(other.mispred);
    }
}

impl std::ops::AddAssign for Counts {
    #[inline(always)]
    fn add_assign(&mut self, other: Counts) {
        self.add(other);
    }
}

/// A basic (IP) sample key: which event, which process, which address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct IpKey {
    pub(crate) event: u32,
    pub(crate) pid: u32,
    pub(crate) ip: u64,
}

/// Adds every entry of `other` into `into`.
pub(crate) fn merge_into<K: std::hash::Hash + Eq, V>(
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
pub(crate) trait TableKey:
    Copy + Eq + std::hash::Hash + bytemuck::Zeroable + Send + Sync
{
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
        if std::mem::size_of::<T>() <= 4 {
            // Two 32-bit words per multiply: a packed trace hashes in two steps, not three.
            for (i, pair) in self.chunks(2).enumerate() {
                let high = pair.get(1).map_or(0, |&y| y.into() << 32);
                h = fold_multiply(h ^ pair[0].into() ^ high, HASH_SEEDS[i % HASH_SEEDS.len()]);
            }
            return h;
        }
        for (i, &x) in self.iter().enumerate() {
            h = fold_multiply(h ^ x.into(), HASH_SEEDS[i % HASH_SEEDS.len()]);
        }
        h
    }
}

/// What a slot counts, packed into its 32-bit count word. A count that would not fit is
/// spilled into the table's overflow map.
pub(crate) trait Tally: Copy + bytemuck::Zeroable + Send + Sync {
    /// A whole count, as the table's users see it.
    type Total: Copy + Default + std::ops::AddAssign + Send + Sync;
    /// Whether this is the all-zero word of an empty slot.
    fn is_empty(self) -> bool;
    /// `self + n`, if it fits (`n` is never nothing: the result is not empty).
    fn checked_add(self, n: Self::Total) -> Option<Self>;
    /// When `self + n` does not fit: what the slot keeps (not empty) and what goes to the
    /// overflow map, together `self + n`. Spilling everything but a minimum, rather than only
    /// `n`, keeps a saturated hot key from taking the overflow map on every later insert.
    fn spill(self, n: Self::Total) -> (Self, Self::Total);
    /// The whole count this word holds (without what went to the overflow map).
    fn total(self) -> Self::Total;
}

/// A plain count (the tables of the tests that exercise the table itself).
#[cfg(test)]
impl Tally for u32 {
    type Total = u64;

    #[inline(always)]
    fn is_empty(self) -> bool {
        self == 0
    }

    #[inline(always)]
    fn checked_add(self, n: u64) -> Option<u32> {
        u32::try_from(u64::from(self) + n).ok()
    }

    fn spill(self, n: u64) -> (u32, u64) {
        (1, u64::from(self) + n - 1)
    }

    #[inline(always)]
    fn total(self) -> u64 {
        u64::from(self)
    }
}

/// A trace's count (low 24 bits) and how many of those times its branch was mispredicted (high
/// 8 bits) in one word: a trace and its mispredictions then cost one cache miss, not two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct TraceTally(u32);

// SAFETY: a `u32` in a transparent wrapper; all zeroes is the empty tally.
unsafe impl bytemuck::Zeroable for TraceTally {}

const TAKEN_BITS: u32 = 24;
const TAKEN_MAX: u64 = (1 << TAKEN_BITS) - 1;
const MISPRED_MAX: u64 = (1 << (32 - TAKEN_BITS)) - 1;

impl TraceTally {
    fn parts(self) -> (u64, u64) {
        (
            u64::from(self.0) & TAKEN_MAX,
            u64::from(self.0 >> TAKEN_BITS),
        )
    }
}

impl Tally for TraceTally {
    type Total = Counts;

    #[inline(always)]
    fn is_empty(self) -> bool {
        self.0 == 0
    }

    #[inline(always)]
    fn checked_add(self, n: Counts) -> Option<TraceTally> {
        let (taken, mispred) = self.parts();
        let (taken, mispred) = (taken + n.taken, mispred + n.mispred);
        (taken <= TAKEN_MAX && mispred <= MISPRED_MAX)
            .then_some(TraceTally(taken as u32 | (mispred as u32) << TAKEN_BITS))
    }

    fn spill(self, n: Counts) -> (TraceTally, Counts) {
        let (taken, mispred) = self.parts();
        let rest = Counts {
            taken: taken + n.taken - 1,
            mispred: mispred + n.mispred,
        };
        (TraceTally(1), rest)
    }

    #[inline(always)]
    fn total(self) -> Counts {
        let (taken, mispred) = self.parts();
        Counts { taken, mispred }
    }
}

/// A slot: an empty count marks it empty (every stored key was counted at least once).
#[derive(Clone, Copy)]
#[repr(C)]
struct Slot<K, C> {
    key: K,
    count: C,
}

// SAFETY: `Slot` is `repr(C)` and its fields are `Zeroable`; all zeroes is an empty slot.
unsafe impl<K: bytemuck::Zeroable, C: bytemuck::Zeroable> bytemuck::Zeroable for Slot<K, C> {}

/// A table's slots, allocated zeroed. Large tables come from the global allocator rather than
/// a mapping of their own: a program that keeps freed memory (`perf2bolt`) then reuses the
/// capture's tables for the phases after the read instead of faulting in fresh pages for
/// them (on the YAML benchmark, 6 % less wall time in one series of eight rounds, within
/// noise in the next; PERF.md, seventh session).
type Slots<K, C> = Vec<Slot<K, C>>;

/// The largest batch [`TraceTable::add_batch`] prefetches at once.
pub(crate) const BATCH: usize = 64;

/// An open-addressing table of counts built for the decode loop: a whole batch of keys is
/// hashed first and its slots prefetched, so the cache misses of up to 64 inserts overlap
/// instead of being paid one after another (the table rarely fits in cache). Counts are 32-bit
/// words in the slots ([`Tally`]); what a slot cannot hold goes to the overflow map.
pub(crate) struct CountTable<K, C: Tally> {
    slots: Slots<K, C>,
    len: usize,
    mask: usize,
    overflow: HashMap<K, C::Total>,
    /// Each table hashes with its own seed. With one hash for all, merging a table walks it in
    /// the other's home-slot order, and where the two hold mostly different keys the inserts
    /// pile into one ever-longer probe run: quadratic (1.2 s instead of tens of ms for two
    /// threads' tables of 0.5 M disjoint traces each).
    seed: u64,
}

impl<K: TableKey, C: Tally> Default for CountTable<K, C> {
    fn default() -> Self {
        CountTable::with_capacity_pow2(1 << 10, next_seed())
    }
}

/// The largest power of two not above `n`, which must be at least 1.
const fn floor_pow2(n: usize) -> usize {
    1 << (usize::BITS - 1 - n.leading_zeros())
}

/// A fresh, well-mixed hash seed per table.
fn next_seed() -> u64 {
    static TABLES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = TABLES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    fold_multiply(n ^ 0x243f_6a88_85a3_08d3, 0x9e37_79b9_7f4a_7c15) | 1
}

impl<K: TableKey, C: Tally> CountTable<K, C> {
    /// A table that holds `keys` keys without growing, but starts with no more than
    /// `max_bytes` of slots (and no fewer than the default's).
    fn for_keys(keys: usize, max_bytes: usize) -> Self {
        let wanted = keys.saturating_mul(4).div_ceil(3);
        let most = floor_pow2((max_bytes / std::mem::size_of::<Slot<K, C>>()).max(1));
        let slots = wanted.checked_next_power_of_two().unwrap_or(most);
        CountTable::with_capacity_pow2(slots.min(most).max(1 << 10), next_seed())
    }

    fn with_capacity_pow2(cap: usize, seed: u64) -> Self {
        CountTable {
            slots: bytemuck::zeroed_vec(cap),
            len: 0,
            mask: cap - 1,
            overflow: HashMap::new(),
            seed,
        }
    }

    /// The number of distinct keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether `extra` more keys would take the table past its load limit (3/4: linear probing
    /// stays short, and the slots are what the decode loop's cache misses are made of).
    #[inline(always)]
    fn over_limit(&self, extra: usize) -> bool {
        (self.len + extra) * 4 > self.slots.len() * 3
    }

    /// Adds `n` (not nothing) to `key`'s count.
    #[inline(always)]
    pub fn add(&mut self, key: K, n: C::Total) {
        let before = self.len;
        self.add_from(key, key.hash64(self.seed) as usize & self.mask, n);
        if self.len > before && self.over_limit(0) {
            self.grow();
        }
    }

    /// Adds `count(i)` (not nothing) to the count of `batch[i]`, hashing the whole batch (at
    /// most [`BATCH`] keys) and prefetching its slots before the first insert.
    #[inline(always)]
    fn add_prefetched(&mut self, batch: &[K], count: impl Fn(usize) -> C::Total) {
        // Grow first, until the whole batch fits: prefetched and deferred slots must stay
        // valid for the whole batch, so nothing in it grows the table.
        while self.over_limit(batch.len()) {
            self.grow();
        }
        let mut homes = [0usize; BATCH];
        for (home, key) in homes.iter_mut().zip(batch) {
            *home = key.hash64(self.seed) as usize & self.mask;
            prefetch(&self.slots[*home]);
        }
        // Keys whose probe runs off the end of their home's cache line, with the slot it
        // goes on from: that line is prefetched and the key added after the rest of the batch,
        // instead of the probe stalling on an unrequested line.
        let mut later = [(0usize, 0usize); BATCH];
        let mut deferred = 0;
        for (i, (&home, &key)) in homes.iter().zip(batch).enumerate() {
            if let Err(next) = self.add_within_line(key, home, count(i)) {
                prefetch(&self.slots[next]);
                later[deferred] = (i, next);
                deferred += 1;
            }
        }
        for &(i, next) in &later[..deferred] {
            self.add_from(batch[i], next, count(i));
        }
    }

    /// Slots per cache line (a power of two): a probe crossing a line boundary is a new cache
    /// miss.
    const LINE_SLOTS: usize = {
        let per_line = 64 / std::mem::size_of::<Slot<K, C>>();
        if per_line == 0 {
            1
        } else {
            // Slots of 16 or 32 bytes fill a line exactly.
            floor_pow2(per_line)
        }
    };

    /// Adds `n` to `key` if its probe from slot `from` ends within `from`'s cache line (the key
    /// or an empty slot is found there); otherwise returns the slot the probe goes on from.
    /// The table has room for the key (no growing here: deferred probes hold slot indices).
    #[inline(always)]
    fn add_within_line(&mut self, key: K, from: usize, n: C::Total) -> Result<(), usize> {
        let mut i = from;
        loop {
            let slot = &mut self.slots[i];
            if slot.count.is_empty() {
                slot.key = key;
                self.add_count(i, n);
                debug_assert!(!self.slots[i].count.is_empty(), "a key counted nothing");
                self.len += 1;
                return Ok(());
            }
            if slot.key == key {
                self.add_count(i, n);
                return Ok(());
            }
            i = (i + 1) & self.mask;
            if i & (Self::LINE_SLOTS - 1) == 0 {
                return Err(i);
            }
        }
    }

    /// Adds `n` to `key`, probing from slot `from` (its home, or a slot its probe reached).
    #[inline(always)]
    fn add_from(&mut self, key: K, mut from: usize, n: C::Total) {
        while let Err(next) = self.add_within_line(key, from, n) {
            from = next;
        }
    }

    /// Adds to slot `i`'s count, or to the overflow map what would not fit.
    #[inline(always)]
    fn add_count(&mut self, i: usize, n: C::Total) {
        let slot = &mut self.slots[i];
        match slot.count.checked_add(n) {
            Some(c) => slot.count = c,
            None => {
                let (kept, rest) = slot.count.spill(n);
                slot.count = kept;
                *self.overflow.entry(slot.key).or_default() += rest;
            }
        }
    }

    fn grow(&mut self) {
        // Same seed: the old slots' order then spreads evenly over the doubled table.
        let bigger = CountTable::with_capacity_pow2(self.slots.len() * 2, self.seed);
        let mut old = std::mem::replace(self, bigger);
        self.overflow = std::mem::take(&mut old.overflow);
        for s in old.slots.iter().filter(|s| !s.count.is_empty()) {
            self.add(s.key, s.count.total());
        }
    }

    /// Adds every entry of `other`: large tables on two threads (see
    /// `merge_in_halves`), small ones here.
    pub fn merge(&mut self, other: CountTable<K, C>) {
        if other.len() >= PARALLEL_MERGE && rayon::current_num_threads() >= 2 {
            self.merge_in_halves(other);
        } else {
            self.merge_serially(other);
        }
    }

    /// Adds every entry of `other`, a prefetched batch at a time (the two tables hash
    /// differently, so `other`'s keys land all over this one).
    fn merge_serially(&mut self, other: CountTable<K, C>) {
        let mut keys = [K::zeroed(); BATCH];
        let mut counts = [C::Total::default(); BATCH];
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

    /// [`Self::merge_serially`] on two threads: the merge is as bound by cache misses as the
    /// decode loop, and one thread alone leaves the other core idle. Each thread owns one half
    /// of this table's slots and takes the keys of `other` whose home lies in it. A key whose
    /// probe would leave its half (its run crosses the middle, or wraps around the end), would
    /// take the table past its load limit, or whose count would spill is set aside and added
    /// afterwards, as is `other`'s overflow map. The halves hold disjoint slots, so no key is
    /// in both: a key stored past the middle with its home before it has a full run up to the
    /// middle, so the owner of its home can neither find it nor place it again.
    fn merge_in_halves(&mut self, other: CountTable<K, C>) {
        let limit = self.slots.len() * 3 / 4;
        let budget = limit.saturating_sub(self.len) / 2;
        let (mask, seed, middle) = (self.mask, self.seed, self.slots.len() / 2);
        let (low, high) = self.slots.split_at_mut(middle);
        let theirs = &other.slots[..];
        let part = |slots: &mut [Slot<K, C>], start: usize| {
            merge_into_part(slots, start, mask, seed, theirs, budget)
        };
        let ((added_low, mut later), (added_high, more)) =
            rayon::join(|| part(low, 0), || part(high, middle));
        self.len += added_low + added_high;
        later.extend(more);
        later.extend(other.overflow);
        for (key, n) in later {
            self.add(key, n);
        }
    }

    /// The entries sorted by `order`, in the table's own storage: the occupied slots are moved
    /// to the front and sorted there, so finishing a table allocates nothing.
    pub fn into_sorted<O: Ord>(mut self, order: impl Fn(&K) -> O + Sync) -> SortedCounts<K, C> {
        let slots = &mut self.slots[..];
        let mut len = 0;
        for i in 0..slots.len() {
            if !slots[i].count.is_empty() {
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

    /// All entries, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (K, C::Total)> + '_ {
        let occupied = self.slots.iter().filter(|s| !s.count.is_empty());
        occupied.map(|s| (s.key, total(&self.overflow, s)))
    }
}

/// Tables from this many entries up are merged on two threads.
const PARALLEL_MERGE: usize = 1 << 16;

/// One thread's part of [`CountTable::merge_in_halves`]: adds the entries of `theirs` whose home
/// (under `mask` and `seed`) lies in `slots`, the part of the table from slot `start`, placing
/// at most `budget` new keys. Returns how many keys it placed and the entries it set aside.
fn merge_into_part<K: TableKey, C: Tally>(
    slots: &mut [Slot<K, C>],
    start: usize,
    mask: usize,
    seed: u64,
    theirs: &[Slot<K, C>],
    mut budget: usize,
) -> (usize, Vec<(K, C::Total)>) {
    let (mut placed, mut later) = (0, Vec::new());
    let mut batch = [(0usize, Slot::<K, C>::zeroed()); BATCH];
    let mut n = 0;
    let len = slots.len();
    let mine = theirs
        .iter()
        .filter(|s| !s.count.is_empty())
        .filter_map(|s| {
            let home = (s.key.hash64(seed) as usize & mask).wrapping_sub(start);
            (home < len).then_some((home, *s))
        });
    let mut insert = |batch: &[(usize, Slot<K, C>)], slots: &mut [Slot<K, C>]| {
        for &(home, theirs) in batch {
            match find_in_part(slots, home, &theirs.key) {
                Some(i) if slots[i].count.is_empty() && budget > 0 => {
                    slots[i] = theirs;
                    budget -= 1;
                    placed += 1;
                }
                Some(i) if !slots[i].count.is_empty() => {
                    match slots[i].count.checked_add(theirs.count.total()) {
                        Some(c) => slots[i].count = c,
                        None => later.push((theirs.key, theirs.count.total())),
                    }
                }
                _ => later.push((theirs.key, theirs.count.total())),
            }
        }
    };
    for entry in mine {
        prefetch(&slots[entry.0]);
        batch[n] = entry;
        n += 1;
        if n == BATCH {
            insert(&batch, slots);
            n = 0;
        }
    }
    insert(&batch[..n], slots);
    (placed, later)
}

/// The slot of `part` holding `key`, or the empty slot where it belongs, probing from `home`
/// without leaving the part (`None` if the probe would).
#[inline(always)]
fn find_in_part<K: TableKey, C: Tally>(part: &[Slot<K, C>], home: usize, key: &K) -> Option<usize> {
    (home..part.len()).find(|&i| part[i].count.is_empty() || part[i].key == *key)
}

#[cfg(test)]
impl<K: TableKey> CountTable<K, u32> {
    /// Adds one to the count of every key of a batch (at most [`BATCH`] keys).
    #[inline]
    pub fn add_batch(&mut self, batch: &[K]) {
        self.add_prefetched(batch, |_| 1);
    }
}

/// A slot's whole count: its own plus what overflowed it.
#[inline(always)]
fn total<K: TableKey, C: Tally>(overflow: &HashMap<K, C::Total>, s: &Slot<K, C>) -> C::Total {
    let mut all = s.count.total();
    if !overflow.is_empty() {
        all += overflow.get(&s.key).copied().unwrap_or_default();
    }
    all
}

/// A finished [`CountTable`]: its entries in order.
pub(crate) struct SortedCounts<K, C: Tally> {
    slots: Slots<K, C>,
    len: usize,
    overflow: HashMap<K, C::Total>,
}

impl<K: TableKey, C: Tally> SortedCounts<K, C> {
    /// The occupied slots, in order.
    fn sorted(&self) -> &[Slot<K, C>] {
        &self.slots[..self.len]
    }

    #[cfg(test)]
    fn iter(&self) -> impl Iterator<Item = (K, C::Total)> + '_ {
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
pub(crate) struct Packing {
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

/// A trace table's slots: a trace's count and mispredictions share one word.
type TraceCounts<K> = CountTable<K, TraceTally>;

/// Counts every trace of a batch once, and its misprediction.
#[inline(always)]
fn add_batch_to<T: Copy + Into<u64>>(
    traces: &mut TraceCounts<[T; 3]>,
    batch: &[(Trace, bool)],
    pack: impl Fn(Trace) -> [T; 3],
) where
    [T; 3]: TableKey,
{
    let mut keys = [<[T; 3]>::zeroed(); BATCH];
    for (k, &(trace, _)) in keys.iter_mut().zip(batch) {
        *k = pack(trace);
    }
    let counts = |i: usize| Counts {
        taken: 1,
        mispred: u64::from(batch[i].1),
    };
    traces.add_prefetched(&keys[..batch.len()], counts);
}

/// Where the decode loop finds a runtime address in a binary, for one process.
pub(crate) trait Locate {
    /// Runtime addresses in `[start, start + len)` are at `address - delta` in the binary: the
    /// code segment, where nearly every branch address is. Returns `(start, len, delta)`.
    fn window(&self) -> (u64, u64, u64);
    /// Any runtime address: its location (0 outside the binary, all-ones kept) and whether it
    /// lies in the binary.
    fn locate(&self, address: u64) -> (u64, bool);
}

/// The decode loop's batch of traces, kept between samples: a fresh one per stack meant zeroing
/// its arrays for every sample.
pub(crate) struct StackBatch {
    packed: Vec<[u32; 3]>,
    wide: Vec<[u64; 3]>,
    mispred: Vec<bool>,
}

impl Default for StackBatch {
    fn default() -> Self {
        StackBatch {
            packed: vec![[0; 3]; BATCH],
            wide: vec![[0; 3]; BATCH],
            mispred: vec![false; BATCH],
        }
    }
}

/// Counts the traces of one LBR stack (newest entry first): entry `i` and the source of entry
/// `i - 1` make a trace, the newest entry's trace is branch-only. Entries `skip` says to drop
/// (perf2bolt's kernel filter) are left out before chaining and counted in the result. Traces
/// wholly outside the binary are dropped, as perf2bolt does.
#[inline(always)]
fn add_stack_to<T: Copy + Into<u64>>(
    traces: &mut TraceCounts<[T; 3]>,
    (keys, mispred): (&mut [[T; 3]], &mut [bool]),
    entries: impl Iterator<Item = formats::perf::BranchEntry>,
    skip: impl Fn(&formats::perf::BranchEntry) -> bool,
    no_address: T,
    locate: impl Fn(u64) -> (T, bool),
) -> u64
where
    [T; 3]: TableKey,
{
    let (keys, mispred) = (&mut keys[..BATCH], &mut mispred[..BATCH]);
    let mut skipped = 0;
    let mut n = 0;
    let mut newer_source = (no_address, false);
    for e in entries {
        if skip(&e) {
            skipped += 1;
            continue;
        }
        let (branch, in0) = locate(e.from);
        let (from, in1) = locate(e.to);
        let (to, in2) = newer_source;
        newer_source = (branch, in0);
        // Written unconditionally, kept only when the trace touches the binary: no branch.
        keys[n] = [branch, from, to];
        mispred[n] = e.flags.mispred();
        n += usize::from(in0 | in1 | in2);
        if n == BATCH {
            traces.add_prefetched(keys, taken_once(mispred));
            n = 0;
        }
    }
    traces.add_prefetched(&keys[..n], taken_once(mispred));
    skipped
}

/// Trace `i` of a batch counted once, with its misprediction.
#[inline(always)]
fn taken_once(mispred: &[bool]) -> impl Fn(usize) -> Counts + '_ {
    |i| Counts {
        taken: 1,
        mispred: u64::from(mispred[i]),
    }
}

/// A binary's trace counts, with how often each trace's branch was mispredicted.
///
/// Not API: public (and hidden, like this module) only so that benches/decode.rs can time it;
/// its variants hold crate-private table types, hence the `allow`.
#[allow(private_interfaces)]
pub enum TraceTable {
    /// The binary spans less than 4 GiB: addresses stored as 32-bit offsets.
    Packed {
        /// How addresses are packed.
        packing: Packing,
        /// The counts, keyed by packed traces.
        traces: TraceCounts<[u32; 3]>,
    },
    /// Addresses stored whole.
    Wide {
        /// The counts, keyed by traces in the binary's addresses.
        traces: TraceCounts<[u64; 3]>,
    },
}

impl Default for TraceTable {
    fn default() -> Self {
        TraceTable::Wide {
            traces: CountTable::default(),
        }
    }
}

impl TraceTable {
    /// A table for a binary spanning `[start, end)`.
    pub fn for_span(start: u64, end: u64) -> TraceTable {
        TraceTable::for_span_sized(start, end, 0, 0)
    }

    /// A table for a binary spanning `[start, end)` that starts large enough for `traces`
    /// traces, or `max_bytes` of slots if that is less. Each doubling on the way up from the
    /// default size re-inserts every trace and zeroes a new table: 12 % of the 629 MB
    /// benchmark run's CPU (fresh pages are expensive on its virtual machine).
    pub(crate) fn for_span_sized(
        start: u64,
        end: u64,
        traces: usize,
        max_bytes: usize,
    ) -> TraceTable {
        match Packing::for_span(start, end) {
            Some(packing) => TraceTable::Packed {
                packing,
                traces: CountTable::for_keys(traces, max_bytes),
            },
            None => TraceTable::Wide {
                traces: CountTable::for_keys(traces, max_bytes),
            },
        }
    }

    /// The number of distinct traces.
    pub fn len(&self) -> usize {
        match self {
            TraceTable::Packed { traces, .. } => traces.len(),
            TraceTable::Wide { traces } => traces.len(),
        }
    }

    /// Whether no trace was counted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `taken` (at least 1) and `mispred` to `trace`'s counts. Its addresses must be
    /// locations in the table's binary (see [`Packing`]).
    pub(crate) fn add(&mut self, trace: Trace, taken: u64, mispred: u64) {
        let counts = Counts { taken, mispred };
        match self {
            TraceTable::Packed { packing: p, traces } => {
                traces.add(trace.map(|a| p.pack(a)), counts)
            }
            TraceTable::Wide { traces } => traces.add(trace, counts),
        }
    }

    /// Counts every trace of a batch once, and its misprediction.
    #[inline]
    pub fn add_batch(&mut self, batch: &[(Trace, bool)]) {
        match self {
            TraceTable::Packed { packing: p, traces } => {
                add_batch_to(traces, batch, |t| t.map(|a| p.pack(a)));
            }
            TraceTable::Wide { traces } => add_batch_to(traces, batch, |t| t),
        }
    }

    /// Counts the traces of an LBR stack of a process `at` places in this table's binary;
    /// returns how many entries `skip` dropped.
    #[inline]
    pub(crate) fn add_stack(
        &mut self,
        stack: &formats::perf::BranchStack<'_>,
        skip: impl Fn(&formats::perf::BranchEntry) -> bool,
        at: &impl Locate,
        batch: &mut StackBatch,
    ) -> u64 {
        let (start, len, delta) = at.window();
        let in_window = move |a: u64| a.wrapping_sub(start) < len;
        let mispred = &mut batch.mispred[..];
        match self {
            TraceTable::Packed { packing: p, traces } => {
                let p = *p;
                // Inside the window the location is inside the binary, neither 0 nor all-ones,
                // so packing it is one more subtraction: a - delta - base + 1.
                let shift = delta.wrapping_add(p.base).wrapping_sub(1);
                let locate = |a: u64| match in_window(a) {
                    true => (a.wrapping_sub(shift) as u32, true),
                    false => {
                        let (location, inside) = at.locate(a);
                        (p.pack(location), inside)
                    }
                };
                let (keys, none) = ((&mut batch.packed[..], mispred), p.pack(u64::MAX));
                match stack.iter_little_endian() {
                    Some(e) => add_stack_to(traces, keys, e, skip, none, locate),
                    None => add_stack_to(traces, keys, stack.iter(), skip, none, locate),
                }
            }
            TraceTable::Wide { traces } => {
                let locate = |a: u64| match in_window(a) {
                    true => (a - delta, true),
                    false => at.locate(a),
                };
                let keys = (&mut batch.wide[..], mispred);
                match stack.iter_little_endian() {
                    Some(e) => add_stack_to(traces, keys, e, skip, u64::MAX, locate),
                    None => add_stack_to(traces, keys, stack.iter(), skip, u64::MAX, locate),
                }
            }
        }
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: TraceTable) {
        match (self, other) {
            (
                TraceTable::Packed { packing, traces },
                TraceTable::Packed {
                    packing: q,
                    traces: t,
                },
            ) if *packing == q => traces.merge(t),
            (TraceTable::Wide { traces }, TraceTable::Wide { traces: t }) => traces.merge(t),
            (this, other) => {
                for (trace, c) in other.entries() {
                    this.add(trace, c.taken, c.mispred);
                }
            }
        }
    }

    /// The traces sorted in `order`, each branch's mispredictions summed on the first of its
    /// traces (a branch's traces are adjacent in either order).
    pub(crate) fn into_sorted(self, order: TraceOrder) -> Vec<((u64, u64, u64), Counts)> {
        match self {
            TraceTable::Packed { packing: p, traces } => {
                // One 128-bit comparison per step instead of three.
                let sorted = traces.into_sorted(|&k| {
                    let [a, b, c] = order.key(k).map(u128::from);
                    a << 64 | b << 32 | c
                });
                expand(&sorted, |a| p.unpack(a))
            }
            TraceTable::Wide { traces } => {
                let sorted = traces.into_sorted(|&k| order.key(k));
                expand(&sorted, |a| a)
            }
        }
    }

    /// Every trace with its counts, in no particular order.
    pub(crate) fn entries(&self) -> Box<dyn Iterator<Item = (Trace, Counts)> + '_> {
        match self {
            TraceTable::Packed { packing: p, traces } => Box::new(
                traces
                    .iter()
                    .map(|([b, f, t], c)| ([p.unpack(b), p.unpack(f), p.unpack(t)], c)),
            ),
            TraceTable::Wide { traces } => Box::new(traces.iter()),
        }
    }
}

/// Sorted traces with their counts, built in parallel.
fn expand<T: Copy + Eq + Send + Sync>(
    traces: &SortedCounts<[T; 3], TraceTally>,
    unpack: impl Fn(T) -> u64 + Sync,
) -> Vec<((u64, u64, u64), Counts)>
where
    [T; 3]: TableKey,
{
    let slots = traces.sorted();
    let branch = |i: usize| &slots[i].key[..2];
    let mut out = Vec::new();
    (0..slots.len())
        .into_par_iter()
        .map(|i| {
            let [b, f, t] = slots[i].key;
            let taken = total(&traces.overflow, &slots[i]).taken;
            let first_of_branch = i == 0 || branch(i - 1) != [b, f];
            let mispred = match first_of_branch {
                true => (i..slots.len())
                    .take_while(|&j| branch(j) == [b, f])
                    .map(|j| total(&traces.overflow, &slots[j]).mispred)
                    .sum(),
                false => 0,
            };
            ((unpack(b), unpack(f), unpack(t)), Counts { taken, mispred })
        })
        .collect_into_vec(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::aggregate::{is_kernel, KERNEL_BASE};
    use formats::bytes::{Bytes, Endian};
    use proptest::prelude::*;

    /// Locations of a binary spanning [0x1000, 0x1040), with the two markers.
    fn location() -> impl Strategy<Value = u64> {
        prop_oneof![Just(0u64), Just(u64::MAX), 0x1000u64..0x1040]
    }

    /// Where the test binary (locations [0x1000, 0x1100)) is loaded.
    const LOAD_DELTA: u64 = 0x5555_0000_0000;

    /// A process with the test binary at `LOAD_DELTA`, its window on the first half of it.
    struct TestPlacement;

    impl Locate for TestPlacement {
        fn window(&self) -> (u64, u64, u64) {
            (0x1000 + LOAD_DELTA, 0x80, LOAD_DELTA)
        }

        fn locate(&self, address: u64) -> (u64, bool) {
            let a = address.wrapping_sub(LOAD_DELTA);
            match a {
                0x1000..0x1100 => (a, true),
                _ if address == u64::MAX => (u64::MAX, false),
                _ => (0, false),
            }
        }
    }

    /// Runtime addresses: in the window, in the rest of the binary, just outside it, kernel
    /// ones, and the two markers.
    fn runtime_address() -> impl Strategy<Value = u64> {
        prop_oneof![
            (0x1000u64..0x1080).prop_map(|a| a + LOAD_DELTA),
            (0x1080u64..0x1100).prop_map(|a| a + LOAD_DELTA),
            (0xff0u64..0x1000).prop_map(|a| a + LOAD_DELTA),
            (0x1100u64..0x1110).prop_map(|a| a + LOAD_DELTA),
            (0u64..0x20).prop_map(|a| a + KERNEL_BASE),
            Just(0u64),
            Just(u64::MAX),
        ]
    }

    /// `perf_branch_entry` records in `endian` (a big-endian writer mirrors the flag bits:
    /// mispredicted is the top bit).
    fn encode_stack(entries: &[(u64, u64, bool)], endian: Endian) -> Vec<u8> {
        let word = |v: u64| match endian {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        };
        let flag = |m: bool| match endian {
            Endian::Little => u64::from(m),
            Endian::Big => u64::from(m) << 63,
        };
        let mut out = Vec::new();
        for &(from, to, m) in entries {
            out.extend(word(from));
            out.extend(word(to));
            out.extend(word(flag(m)));
        }
        out
    }

    /// Per-trace counts and per-branch mispredictions, as plain maps count them.
    fn reference(items: &[(Trace, bool)]) -> (HashMap<Trace, Counts>, HashMap<[u64; 2], u64>) {
        let (mut traces, mut mispreds) = (HashMap::new(), HashMap::new());
        for &([b, f, t], m) in items {
            let mispred = u64::from(m);
            *traces.entry([b, f, t]).or_default() += Counts { taken: 1, mispred };
            *mispreds.entry([b, f]).or_insert(0) += mispred;
        }
        (traces, mispreds)
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
            let (traces, mispreds) = reference(&items);
            let order = if by_start { TraceOrder::ByStart } else { TraceOrder::ByBranch };
            for mut table in [TraceTable::for_span(0x1000, 0x1040), TraceTable::default()] {
                for chunk in items.chunks(batch) {
                    table.add_batch(chunk);
                }
                prop_assert_eq!(table.len(), traces.len());
                prop_assert_eq!(&table.entries().collect::<HashMap<_, _>>(), &traces);
                let expanded = table.into_sorted(order);
                let mut expected: Vec<_> = traces.iter().map(|(&[b, f, t], c)| ((b, f, t), c.taken)).collect();
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

        /// The decode loop's stack path (byte order decided per stack, addresses in the code
        /// window placed and packed by subtraction, kernel entries dropped before chaining,
        /// traces wholly outside dropped, batches flushed at 64) counts what chaining each
        /// stack entry by entry through the general placement counts, in both storages and
        /// both byte orders.
        #[test]
        fn stacks_count_like_entry_by_entry_chaining(
            stacks in prop::collection::vec(
                prop::collection::vec((runtime_address(), runtime_address(), any::<bool>()), 0..100),
                0..12,
            ),
            big_endian: bool,
        ) {
            let at = TestPlacement;
            let (mut expected, mut expected_kernel) = (HashMap::new(), 0);
            for stack in &stacks {
                let mut newer = (u64::MAX, false);
                for &(from, to, m) in stack {
                    if from >= KERNEL_BASE || to >= KERNEL_BASE {
                        expected_kernel += 1;
                        continue;
                    }
                    let (branch, in0) = at.locate(from);
                    let (target, in1) = at.locate(to);
                    let (end, in2) = newer;
                    newer = (branch, in0);
                    if in0 || in1 || in2 {
                        *expected.entry([branch, target, end]).or_default() +=
                            Counts { taken: 1, mispred: u64::from(m) };
                    }
                }
            }
            let endian = if big_endian { Endian::Big } else { Endian::Little };
            let encoded: Vec<Vec<u8>> = stacks.iter().map(|s| encode_stack(s, endian)).collect();
            for mut table in [TraceTable::for_span(0x1000, 0x1100), TraceTable::default()] {
                let (mut batch, mut kernel) = (StackBatch::default(), 0);
                for bytes in &encoded {
                    let stack = formats::perf::BranchStack {
                        entries: Bytes::new(bytes, endian),
                        hw_index: None,
                    };
                    kernel += table.add_stack(&stack, is_kernel, &at, &mut batch);
                }
                prop_assert_eq!(kernel, expected_kernel);
                prop_assert_eq!(&table.entries().collect::<HashMap<_, _>>(), &expected);
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
            let (traces, _) = reference(&items);
            let (first, second) = items.split_at(cut.index(items.len() + 1));
            let fill = |part: &[(Trace, bool)], mut table: TraceTable| {
                part.chunks(BATCH).for_each(|c| table.add_batch(c));
                table
            };
            for make in [|| TraceTable::for_span(0x1000, 0x1040), TraceTable::default] {
                let mut table = fill(first, make());
                table.merge(fill(second, make()));
                prop_assert_eq!(table.len(), traces.len());
                prop_assert_eq!(&table.entries().collect::<HashMap<_, _>>(), &traces);
            }
        }

        /// Counts past a slot's 24 bits of taken and 8 bits of mispredictions spill to the
        /// overflow map and come back exactly, through batches, growth, merges and sorting.
        #[test]
        fn trace_counts_beyond_the_slot_are_kept(
            adds in prop::collection::vec((0u64..4, 1u64..1 << 26, 0u64..1 << 10, 0usize..700), 1..40),
            by_start: bool,
        ) {
            let trace = |k: u64| [0x1000 + k, 0x1010 + k, 0x1020 + k];
            let mut expected: HashMap<Trace, Counts> = HashMap::new();
            let (mut a, mut b) = (TraceTable::for_span(0x1000, 0x1040), TraceTable::default());
            for (i, &(k, taken, mispred, repeats)) in adds.iter().enumerate() {
                let table = if i % 2 == 0 { &mut a } else { &mut b };
                table.add(trace(k), taken, mispred);
                // The same trace, mispredicted, many times over in batches: the 8-bit field
                // overflows from the decode loop's path too.
                let batch = vec![(trace(k), true); repeats];
                batch.chunks(BATCH).for_each(|c| table.add_batch(c));
                *expected.entry(trace(k)).or_default() += Counts { taken, mispred };
                *expected.entry(trace(k)).or_default() += Counts { taken: repeats as u64, mispred: repeats as u64 };
            }
            for k in 10..40 {
                a.add(trace(k), 1, 0); // several growths
                *expected.entry(trace(k)).or_default() += Counts { taken: 1, mispred: 0 };
            }
            a.merge(b);
            prop_assert_eq!(&a.entries().collect::<HashMap<_, _>>(), &expected);
            let order = if by_start { TraceOrder::ByStart } else { TraceOrder::ByBranch };
            let sorted = a.into_sorted(order);
            // Each of these traces is its branch's only one.
            let got: HashMap<_, _> = sorted.iter().map(|&((b, f, t), c)| ([b, f, t], c)).collect();
            prop_assert_eq!(got, expected);
        }

        /// The two-thread merge counts what a plain map counts: small tables make probe runs
        /// cross the middle and wrap around the end, nearly full ones run out of room for new
        /// keys, and counts near 2^32 spill.
        #[test]
        fn merge_in_halves_equals_hashmap(
            a in prop::collection::vec((0u64..300, 1u64..4), 0..400),
            b in prop::collection::vec((0u64..300, 1u64..4), 0..400),
            huge in prop::collection::vec(0u64..300, 0..3),
        ) {
            let key = |k: u64| [k, k ^ 0x55, 7];
            let huge: Vec<(u64, u64)> = huge.iter().map(|&k| (k, u64::from(u32::MAX) - 1)).collect();
            let mut expected: HashMap<[u64; 3], u64> = HashMap::new();
            let mut fill = |items: &[(u64, u64)]| {
                let mut t: CountTable<[u64; 3], u32> = CountTable::with_capacity_pow2(2, next_seed());
                for &(k, n) in items.iter().chain(&huge) {
                    t.add(key(k), n);
                    *expected.entry(key(k)).or_default() += n;
                }
                t
            };
            let (mut ours, theirs) = (fill(&a), fill(&b));
            ours.merge_in_halves(theirs);
            prop_assert!(!ours.over_limit(0), "past the load limit");
            prop_assert_eq!(ours.len(), expected.len());
            prop_assert_eq!(ours.iter().collect::<HashMap<_, _>>(), expected);
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
    fn presized_tables_hold_their_keys_within_their_bytes() {
        type Table = CountTable<[u32; 3], TraceTally>;
        let slot = std::mem::size_of::<Slot<[u32; 3], TraceTally>>();
        for (keys, max_bytes, slots) in [
            (0, 0, 1 << 10),
            (700, 1 << 30, 1 << 10),
            (768, 1 << 30, 1 << 10),
            (769, 1 << 30, 1 << 11),
            (1_000_000, 1 << 30, 1 << 21),
            (1_000_000, 32 << 20, (32 << 20) / slot),
            (1_000_000, (32 << 20) - 1, (16 << 20) / slot),
            (usize::MAX, 32 << 20, (32 << 20) / slot),
        ] {
            let table = Table::for_keys(keys, max_bytes);
            assert_eq!(table.slots.len(), slots, "{keys} keys in {max_bytes} bytes");
            assert!(
                keys > slots * 3 / 4 || !table.over_limit(keys),
                "{keys} keys"
            );
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
        let traces: HashMap<_, _> = packed.entries().collect();
        let counts = |taken, mispred| Counts { taken, mispred };
        assert_eq!(traces[&[0x1000, 0x1010, u64::MAX]], counts(2, 2));
        assert_eq!(traces[&[0, 0x1020, 0x1030]], counts(1, 0));
        assert_eq!(traces.len(), 2);
    }

    /// Counts past 32 bits go to the overflow map and come back added, through growth, merges
    /// and sorting.
    #[test]
    fn counts_beyond_32_bits_are_kept() {
        let big = u64::from(u32::MAX);
        let mut a: CountTable<[u64; 3], u32> = CountTable::with_capacity_pow2(4, next_seed());
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

    /// A probe that runs off its home's cache line is finished after the rest of its batch,
    /// and a key deferred twice in one batch (the first time as a new key) is stored once.
    #[test]
    fn probes_past_a_full_line_are_deferred_and_count_once() {
        let mut table: CountTable<[u32; 3], u32> = CountTable::with_capacity_pow2(1 << 10, 7);
        let line = CountTable::<[u32; 3], u32>::LINE_SLOTS;
        assert_eq!(line, 4);
        // Keys whose home is the first slot of line 0: one fills each slot of the line, the
        // rest must go on to line 1.
        let homed: Vec<[u32; 3]> = (1..)
            .map(|i| [i, 0, 0])
            .filter(|k| k.hash64(table.seed) as usize & table.mask == 0)
            .take(line + 2)
            .collect();
        let (fill, past) = (&homed[..line], &homed[line..]);
        let mut batch = fill.to_vec();
        batch.extend([past[0], past[1], past[0], fill[2], past[0]]);
        table.add_batch(&batch);
        assert_eq!(table.len(), line + 2);
        let counts: HashMap<_, _> = table.iter().collect();
        assert_eq!(counts[&past[0]], 3);
        assert_eq!(counts[&past[1]], 1);
        assert_eq!(counts[&fill[2]], 2);
        let slot_of = |k: &[u32; 3]| table.slots.iter().position(|s| s.key == *k).unwrap();
        assert!(fill.iter().all(|k| slot_of(k) < line));
        assert!(past.iter().all(|k| (line..2 * line).contains(&slot_of(k))));
    }

    /// Growing through many doublings to megabytes of slots, then merging two such tables,
    /// loses nothing.
    #[test]
    fn large_tables_count_exactly() {
        let distinct = (6 << 20) / std::mem::size_of::<Slot<[u32; 3], u32>>();
        let keys: Vec<[u32; 3]> = (0..distinct as u32)
            .map(|i| [i.wrapping_mul(7919), i ^ 0x5555, i % 13])
            .collect();
        let (mut a, mut b) = (CountTable::default(), CountTable::default());
        for chunk in keys.chunks(BATCH) {
            a.add_batch(chunk);
            b.add_batch(&chunk[..chunk.len() / 2]);
        }
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
