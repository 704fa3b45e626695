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

/// `DenseMapInfo<uint64_t>`'s reserved keys. A record hash equal to one of them meets LLVM's
/// map as that sentinel: the empty key is "found" in the first empty bucket (the record merges
/// into nothing and is dropped), the tombstone key is stored but never iterated, and is
/// overwritten or lost as the map changes.
const EMPTY_KEY: u64 = u64::MAX;
const TOMBSTONE_KEY: u64 = u64::MAX - 1;

/// One function name's records, keyed by structural hash, in the order LLVM's
/// `SmallDenseMap<uint64_t, InstrProfRecord>` lists them (simulated bucket by bucket).
#[derive(Clone, Debug, Default)]
pub struct HashOrder {
    /// Record 0 (valid when `len > 0`).
    first: Record,
    /// Records 1…, in insertion order (some may have been dropped from the buckets).
    rest: Vec<Record>,
    /// The simulated buckets (record index or `EMPTY`), once the fast path (at most one
    /// ordinary record) no longer applies; empty before.
    buckets: Vec<u32>,
    len: u32,
    /// `DenseMap`'s NumEntries and NumTombstones (u32, wrapping as in LLVM).
    num_entries: u32,
    num_tombstones: u32,
}

impl HashOrder {
    /// Records stored, including ones LLVM's map no longer lists.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether no record is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Record `i` in insertion order (`i < len()`).
    pub fn get(&self, i: usize) -> &Record {
        if i == 0 {
            &self.first
        } else {
            &self.rest[i - 1]
        }
    }

    pub(crate) fn get_mut(&mut self, i: usize) -> &mut Record {
        if i == 0 {
            &mut self.first
        } else {
            &mut self.rest[i - 1]
        }
    }

    /// `LookupBucketFor`: (found, bucket), where a miss returns the first tombstone-key bucket
    /// probed, else the empty bucket that ended the probe.
    fn lookup(&self, hash: u64) -> (bool, usize) {
        let mask = self.buckets.len() - 1;
        let mut bucket = bucket_hash(hash) as usize & mask;
        let mut probe = 1;
        let mut tombstone = None;
        loop {
            match self.buckets[bucket] {
                EMPTY => return (false, tombstone.unwrap_or(bucket)),
                i => {
                    let key = self.get(i as usize).hash;
                    if key == hash {
                        return (true, bucket);
                    }
                    if key == TOMBSTONE_KEY && tombstone.is_none() {
                        tombstone = Some(bucket);
                    }
                }
            }
            bucket = (bucket + probe) & mask;
            probe += 1;
        }
    }

    /// The index of the record with `hash`, inserting an empty one (with that hash) if there
    /// is none, and whether it was inserted; `None` for the empty key, which LLVM "finds" in an
    /// empty bucket.
    pub(crate) fn entry(&mut self, hash: u64) -> Option<(usize, bool)> {
        if hash == EMPTY_KEY {
            return None;
        }
        if self.buckets.is_empty() {
            match self.len {
                0 if hash != TOMBSTONE_KEY => {
                    self.first.hash = hash;
                    self.len = 1;
                    self.num_entries = 1;
                    return Some((0, true));
                }
                1 if self.first.hash == hash => return Some((0, false)),
                _ => {
                    // Start simulating the map, replaying what it holds.
                    self.buckets = vec![EMPTY; INLINE_BUCKETS];
                    if self.len == 1 {
                        self.num_entries = 0;
                        let (_, bucket) = self.lookup(self.first.hash);
                        self.insert_at(bucket, 0);
                    }
                }
            }
        }
        let (found, bucket) = self.lookup(hash);
        if found {
            return Some((self.buckets[bucket] as usize, false));
        }
        let index = self.len as usize;
        let record = Record {
            hash,
            ..Record::default()
        };
        if index == 0 {
            self.first = record;
        } else {
            self.rest.push(record);
        }
        self.len += 1;
        let bucket = self.make_room(hash, bucket);
        self.insert_at(bucket, index);
        Some((index, true))
    }

    /// `InsertIntoBucketImpl`'s growth before an insert; returns the bucket to use.
    fn make_room(&mut self, hash: u64, bucket: usize) -> usize {
        let n = self.buckets.len() as u32;
        let new_entries = self.num_entries.wrapping_add(1);
        if new_entries.wrapping_mul(4) >= n.wrapping_mul(3) {
            self.grow(n as usize * 2);
        } else if n.wrapping_sub(new_entries.wrapping_add(self.num_tombstones)) <= n / 8 {
            self.grow(n as usize);
        } else {
            return bucket;
        }
        self.lookup(hash).1
    }

    fn insert_at(&mut self, bucket: usize, index: usize) {
        self.num_entries = self.num_entries.wrapping_add(1);
        if self.buckets[bucket] != EMPTY {
            // Writing over a tombstone-key record: LLVM decrements a count it never raised.
            self.num_tombstones = self.num_tombstones.wrapping_sub(1);
        }
        self.buckets[bucket] = index as u32;
    }

    /// `grow`: a fresh table, re-inserting live records in bucket order (tombstone-key records
    /// are dropped, as LLVM treats them as erased).
    fn grow(&mut self, at_least: usize) {
        let size = if at_least > INLINE_BUCKETS {
            at_least.next_power_of_two().max(64)
        } else {
            INLINE_BUCKETS
        };
        let old = std::mem::replace(&mut self.buckets, vec![EMPTY; size]);
        self.num_entries = 0;
        self.num_tombstones = 0;
        for i in old.into_iter().filter(|&i| i != EMPTY) {
            let hash = self.get(i as usize).hash;
            if hash == TOMBSTONE_KEY {
                continue;
            }
            let (_, bucket) = self.lookup(hash);
            self.buckets[bucket] = i;
            self.num_entries += 1;
        }
    }

    fn order(&self) -> Vec<usize> {
        if self.buckets.is_empty() {
            return (0..self.len as usize).collect();
        }
        self.buckets
            .iter()
            .filter(|&&i| i != EMPTY && self.get(i as usize).hash != TOMBSTONE_KEY)
            .map(|&i| i as usize)
            .collect()
    }

    /// Records in iteration (bucket) order.
    pub fn iter(&self) -> impl Iterator<Item = &Record> {
        self.order().into_iter().map(|i| self.get(i))
    }

    /// Takes the records out in iteration order.
    pub(crate) fn into_ordered(mut self) -> Vec<Record> {
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
            let _ = map.entry(h);
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
    fn reserved_keys_behave_like_llvm_19() {
        // Records hashed 2^64-1 are dropped, and 2^64-2 is kept out of sight (the indexed
        // output of llvm-profdata-19 for these inputs is compared in tests/it/instrprof_merge.rs).
        assert_eq!(order(&[u64::MAX, 3]), [3]);
        assert_eq!(order(&[u64::MAX - 1, 3, u64::MAX - 1, 4, 5]), [4, 5, 3]);
    }

    #[test]
    fn repeated_hashes_are_found_not_added() {
        assert_eq!(order(&[4, 4, 9, 4, 9]), order(&[4, 9]));
        assert_eq!(order(&[4]), [4]);
    }
}
