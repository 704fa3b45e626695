//! The records of one function name, kept in the order LLVM 19's
//! `SmallDenseMap<uint64_t, InstrProfRecord>` iterates them: the indexed and text writers emit a
//! name's records in that order, so byte-identical output needs the same bucket placement.

use formats::instrprof::Record;

const EMPTY: u32 = u32::MAX;
const INLINE_BUCKETS: usize = 4;

/// `DenseMapInfo<uint64_t>::getHashValue` in LLVM 19 (`densemap::detail::mix`), as unsigned.
fn bucket_hash(key: u64) -> u32 {
    let x = key.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    (x ^ (x >> 31)) as u32
}

#[derive(Clone, Debug)]
pub struct HashOrder {
    pub records: Vec<Record>,
    /// Index into `records`, or `EMPTY`.
    buckets: Vec<u32>,
}

impl Default for HashOrder {
    fn default() -> Self {
        HashOrder {
            records: Vec::new(),
            buckets: vec![EMPTY; INLINE_BUCKETS],
        }
    }
}

enum Slot {
    Found(usize),
    Vacant(usize),
}

impl HashOrder {
    fn lookup(&self, hash: u64) -> Slot {
        let mask = self.buckets.len() - 1;
        let mut bucket = bucket_hash(hash) as usize & mask;
        let mut probe = 1;
        loop {
            match self.buckets[bucket] {
                EMPTY => return Slot::Vacant(bucket),
                i if self.records[i as usize].hash == hash => return Slot::Found(i as usize),
                _ => {
                    bucket = (bucket + probe) & mask;
                    probe += 1;
                }
            }
        }
    }

    /// The record with `hash`, or `None` after storing `make()` as a new one. Returns the index
    /// and whether it was inserted.
    pub fn entry(&mut self, hash: u64) -> (usize, bool) {
        if let Slot::Found(i) = self.lookup(hash) {
            return (i, false);
        }
        let n = self.buckets.len();
        let new_entries = self.records.len() + 1;
        if new_entries * 4 >= n * 3 {
            self.grow(n * 2);
        } else if n - new_entries <= n / 8 {
            self.grow(n);
        }
        let Slot::Vacant(bucket) = self.lookup(hash) else {
            unreachable!("the key was absent before growing")
        };
        self.buckets[bucket] = self.records.len() as u32;
        self.records.push(Record {
            hash,
            ..Record::default()
        });
        (self.records.len() - 1, true)
    }

    fn grow(&mut self, at_least: usize) {
        let size = if at_least > INLINE_BUCKETS {
            at_least.next_power_of_two().max(64)
        } else {
            INLINE_BUCKETS
        };
        let old = std::mem::replace(&mut self.buckets, vec![EMPTY; size]);
        for i in old.into_iter().filter(|&i| i != EMPTY) {
            if let Slot::Vacant(b) = self.lookup(self.records[i as usize].hash) {
                self.buckets[b] = i;
            }
        }
    }

    /// Records in iteration (bucket) order.
    pub fn iter(&self) -> impl Iterator<Item = &Record> {
        self.buckets
            .iter()
            .filter(|&&i| i != EMPTY)
            .map(|&i| &self.records[i as usize])
    }

    /// Takes the records out in iteration order.
    pub fn into_ordered(self) -> Vec<Record> {
        let mut slots: Vec<Option<Record>> = self.records.into_iter().map(Some).collect();
        self.buckets
            .iter()
            .filter(|&&i| i != EMPTY)
            .filter_map(|&i| slots[i as usize].take())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
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
}
