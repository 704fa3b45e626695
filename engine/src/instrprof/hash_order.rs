//! The records of one function name, kept in the order LLVM 19's
//! `SmallDenseMap<uint64_t, InstrProfRecord>` iterates them: the indexed and text writers emit a
//! name's records in that order, so byte-identical output needs the same bucket placement.
//!
//! Almost every name has one record, so the first lives inline (no pointer to chase while
//! merging) and the bucket simulation only starts with the second.

use formats::instrprof::Record;

const EMPTY: u32 = u32::MAX;
const INLINE_BUCKETS: usize = 4;

/// `DenseMapInfo<uint64_t>::getHashValue` in LLVM 19 (`densemap::detail::mix`), as unsigned.
fn bucket_hash(key: u64) -> u32 {
    let x = key.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    (x ^ (x >> 31)) as u32
}

#[derive(Clone, Debug, Default)]
pub struct HashOrder {
    /// Record 0 (valid when `len > 0`).
    first: Record,
    /// Records 1…, in insertion order.
    rest: Vec<Record>,
    /// The simulated buckets (record index or `EMPTY`), once there are two records or more.
    buckets: Vec<u32>,
    len: u32,
}

enum Slot {
    Found(usize),
    Vacant(usize),
}

impl HashOrder {
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, i: usize) -> &Record {
        if i == 0 {
            &self.first
        } else {
            &self.rest[i - 1]
        }
    }

    pub fn get_mut(&mut self, i: usize) -> &mut Record {
        if i == 0 {
            &mut self.first
        } else {
            &mut self.rest[i - 1]
        }
    }

    fn lookup(&self, hash: u64) -> Slot {
        let mask = self.buckets.len() - 1;
        let mut bucket = bucket_hash(hash) as usize & mask;
        let mut probe = 1;
        loop {
            match self.buckets[bucket] {
                EMPTY => return Slot::Vacant(bucket),
                i if self.get(i as usize).hash == hash => return Slot::Found(i as usize),
                _ => {
                    bucket = (bucket + probe) & mask;
                    probe += 1;
                }
            }
        }
    }

    /// The index of the record with `hash`, inserting an empty one (with that hash) if there
    /// is none; and whether it was inserted.
    pub fn entry(&mut self, hash: u64) -> (usize, bool) {
        match self.len {
            0 => {
                self.first.hash = hash;
                self.len = 1;
                return (0, true);
            }
            1 if self.first.hash == hash => return (0, false),
            1 => {
                // Two records: start simulating the map as LLVM filled it.
                self.buckets = vec![EMPTY; INLINE_BUCKETS];
                self.place(0);
            }
            _ => {
                if let Slot::Found(i) = self.lookup(hash) {
                    return (i, false);
                }
            }
        }
        let index = self.len as usize;
        self.rest.push(Record {
            hash,
            ..Record::default()
        });
        self.len += 1;
        self.place(index);
        (index, true)
    }

    /// `InsertIntoBucket` for record `index` (not yet in the buckets), growing first as
    /// `DenseMap` does.
    fn place(&mut self, index: usize) {
        let n = self.buckets.len();
        let new_entries = index + 1;
        if new_entries * 4 >= n * 3 {
            self.grow(n * 2);
        } else if n - new_entries <= n / 8 {
            self.grow(n);
        }
        if let Slot::Vacant(b) = self.lookup(self.get(index).hash) {
            self.buckets[b] = index as u32;
        }
    }

    fn grow(&mut self, at_least: usize) {
        let size = if at_least > INLINE_BUCKETS {
            at_least.next_power_of_two().max(64)
        } else {
            INLINE_BUCKETS
        };
        let old = std::mem::replace(&mut self.buckets, vec![EMPTY; size]);
        for i in old.into_iter().filter(|&i| i != EMPTY) {
            if let Slot::Vacant(b) = self.lookup(self.get(i as usize).hash) {
                self.buckets[b] = i;
            }
        }
    }

    fn order(&self) -> Vec<usize> {
        if self.len <= 1 {
            return (0..self.len as usize).collect();
        }
        self.buckets
            .iter()
            .filter(|&&i| i != EMPTY)
            .map(|&i| i as usize)
            .collect()
    }

    /// Records in iteration (bucket) order.
    pub fn iter(&self) -> impl Iterator<Item = &Record> {
        self.order().into_iter().map(|i| self.get(i))
    }

    /// Takes the records out in iteration order.
    pub fn into_ordered(mut self) -> Vec<Record> {
        let order = self.order();
        order
            .into_iter()
            .map(|i| std::mem::take(self.get_mut(i)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(hashes: &[u64]) -> Vec<u64> {
        let mut map = HashOrder::default();
        for &h in hashes {
            map.entry(h);
        }
        map.iter().map(|r| r.hash).collect()
    }

    #[test]
    fn matches_the_order_llvm_profdata_19_writes() {
        // Observed with llvm-profdata-19 (notes §2.6): eight hashes under one name.
        assert_eq!(
            order(&[5, 1, 9, 3, 1000, 7, 2, 123456789]),
            [2, 123456789, 1000, 5, 1, 3, 9, 7]
        );
    }

    #[test]
    fn repeated_hashes_are_found_not_added() {
        assert_eq!(order(&[4, 4, 9, 4, 9]), order(&[4, 9]));
        assert_eq!(order(&[4]), [4]);
    }
}
