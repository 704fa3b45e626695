//! The iteration order of libstdc++'s `std::unordered_map<uint64_t, …>` (identity hash,
//! prime rehash policy, max load factor 1), which LLVM 19's `SampleProfileMap` is: some
//! llvm-profdata outputs list functions in that order, or break ties with it.
//!
//! Model: nodes form one singly-linked list; a node is inserted at the front of its bucket's
//! run, or at the very front of the list when its bucket is empty; a rehash relinks the list
//! in its current order into the new buckets the same way.

/// libstdc++'s `__prime_list` (shared/hashtable-aux.cc), the bucket counts a growing table
/// moves through, up to 2^32.
const PRIMES: &[u64] = &[
    2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97,
    103, 109, 113, 127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227, 241, 257, 277, 293, 313,
    337, 359, 383, 409, 439, 467, 503, 541, 577, 619, 661, 709, 761, 823, 887, 953, 1031, 1109,
    1193, 1289, 1381, 1493, 1613, 1741, 1879, 2029, 2179, 2357, 2549, 2753, 2971, 3209, 3469, 3739,
    4027, 4349, 4703, 5087, 5503, 5953, 6427, 6949, 7517, 8123, 8783, 9497, 10273, 11113, 12011,
    12983, 14033, 15173, 16411, 17749, 19183, 20753, 22447, 24281, 26267, 28411, 30727, 33223,
    35933, 38873, 42043, 45481, 49201, 53201, 57557, 62233, 67307, 72817, 78779, 85229, 92203,
    99733, 107897, 116731, 126271, 136607, 147793, 159871, 172933, 187091, 202409, 218971, 236897,
    256279, 277261, 299951, 324503, 351061, 379787, 410857, 444487, 480881, 520241, 562841, 608903,
    658753, 712697, 771049, 834181, 902483, 976369, 1056323, 1142821, 1236397, 1337629, 1447153,
    1565659, 1693859, 1832561, 1982627, 2144977, 2320627, 2510653, 2716249, 2938679, 3179303,
    3439651, 3721303, 4026031, 4355707, 4712381, 5098259, 5515729, 5967347, 6456007, 6984629,
    7556579, 8175383, 8844859, 9569143, 10352717, 11200489, 12117689, 13109983, 14183539, 15345007,
    16601593, 17961079, 19431899, 21023161, 22744717, 24607243, 26622317, 28802401, 31160981,
    33712729, 36473443, 39460231, 42691603, 46187573, 49969847, 54061849, 58488943, 63278561,
    68460391, 74066549, 80131819, 86693767, 93793069, 101473717, 109783337, 118773397, 128499677,
    139022417, 150406843, 162723577, 176048909, 190465427, 206062531, 222936881, 241193053,
    260944219, 282312799, 305431229, 330442829, 357502601, 386778277, 418451333, 452718089,
    489790921, 529899637, 573292817, 620239453, 671030513, 725980837, 785430967, 849749479,
    919334987, 994618837, 1076067617, 1164186217, 1259520799, 1362662261, 1474249943, 1594975441,
    1725587117, 1866894511, 2019773507, 2185171673, 2364114217, 2557710269, 2767159799, 2993761039,
    3238918481, 3504151727, 3791104843, 4101556399, 4294967291,
];

/// `_Prime_rehash_policy::_M_next_bkt`: the bucket count for at least `n` buckets, and the
/// element count that triggers the next growth.
fn next_bucket_count(n: u64) -> (u64, u64) {
    const FAST: [u64; 14] = [2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13];
    if n < FAST.len() as u64 {
        let b = FAST[n as usize];
        return (b, b);
    }
    let candidates = &PRIMES[6..PRIMES.len() - 1];
    let at = candidates.partition_point(|&p| p < n);
    match candidates.get(at) {
        Some(&b) => (b, b),
        None => (PRIMES[PRIMES.len() - 1], u64::MAX),
    }
}

const NIL: usize = usize::MAX;

/// Keys in the order an `std::unordered_map<uint64_t, T>` lists them after inserting them
/// (duplicates ignored) in the given order.
#[derive(Debug, Default)]
pub struct UnorderedMapOrder {
    keys: Vec<u64>,
    next: Vec<usize>,
    head: usize,
    /// Per bucket: the node before the bucket's first node (`NIL` = before-begin), if any.
    buckets: Vec<Option<usize>>,
    next_resize: u64,
    seen: hashbrown::HashSet<u64>,
}

impl UnorderedMapOrder {
    pub fn new() -> Self {
        UnorderedMapOrder {
            head: NIL,
            buckets: vec![None],
            ..Default::default()
        }
    }

    fn bucket(&self, key: u64) -> usize {
        (key % self.buckets.len() as u64) as usize
    }

    /// `_M_insert_unique_node` for a key not yet present.
    pub fn insert(&mut self, key: u64) {
        if !self.seen.insert(key) {
            return;
        }
        let n_elt = self.keys.len() as u64;
        if n_elt + 1 > self.next_resize {
            let floor = if self.next_resize == 0 { 11 } else { 0 };
            let min_buckets = (n_elt + 1).max(floor);
            let n_bkt = self.buckets.len() as u64;
            if min_buckets >= n_bkt {
                let (count, resize) = next_bucket_count((min_buckets + 1).max(n_bkt * 2));
                self.next_resize = resize;
                self.rehash(count as usize);
            } else {
                self.next_resize = n_bkt;
            }
        }
        let node = self.keys.len();
        self.keys.push(key);
        self.next.push(NIL);
        let b = self.bucket(key);
        self.insert_bucket_begin(b, node);
    }

    fn set_next(&mut self, before: usize, node: usize) {
        if before == NIL {
            self.head = node;
        } else {
            self.next[before] = node;
        }
    }

    fn get_next(&self, before: usize) -> usize {
        if before == NIL {
            self.head
        } else {
            self.next[before]
        }
    }

    fn insert_bucket_begin(&mut self, b: usize, node: usize) {
        match self.buckets[b] {
            Some(before) => {
                self.next[node] = self.get_next(before);
                self.set_next(before, node);
            }
            None => {
                self.next[node] = self.head;
                self.head = node;
                if self.next[node] != NIL {
                    let nb = self.bucket(self.keys[self.next[node]]);
                    self.buckets[nb] = Some(node);
                }
                self.buckets[b] = Some(NIL);
            }
        }
    }

    /// `_M_rehash_aux` for unique keys.
    fn rehash(&mut self, count: usize) {
        let mut p = self.head;
        self.buckets = vec![None; count];
        self.head = NIL;
        let mut bbegin = 0usize;
        while p != NIL {
            let next = self.next[p];
            let b = self.bucket(self.keys[p]);
            match self.buckets[b] {
                None => {
                    self.next[p] = self.head;
                    self.head = p;
                    self.buckets[b] = Some(NIL);
                    if self.next[p] != NIL {
                        self.buckets[bbegin] = Some(p);
                    }
                    bbegin = b;
                }
                Some(before) => {
                    self.next[p] = self.get_next(before);
                    self.set_next(before, p);
                }
            }
            p = next;
        }
    }

    /// The keys in iteration order.
    pub fn order(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.keys.len());
        let mut p = self.head;
        while p != NIL {
            out.push(self.keys[p]);
            p = self.next[p];
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_tables_list_newest_bucket_first() {
        let mut m = UnorderedMapOrder::new();
        for k in [1, 2, 14, 3] {
            m.insert(k);
        }
        // 13 buckets: 14 shares bucket 1 with 1 and goes before it; new buckets go in front.
        assert_eq!(m.order(), vec![3, 2, 14, 1]);
    }

    #[test]
    fn growth_relinks_every_key() {
        let mut m = UnorderedMapOrder::new();
        for k in 0..1000u64 {
            m.insert(k * 7919);
        }
        let mut o = m.order();
        assert_eq!(o.len(), 1000);
        o.sort_unstable();
        o.dedup();
        assert_eq!(o.len(), 1000);
    }
}
