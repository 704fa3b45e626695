//! A simulation of LLVM's `OnDiskChainedHashTableGenerator` (OnDiskHashTable.h), which decides
//! the order of the records in an indexed profile: items are prepended to their bucket, every
//! resize walks the old buckets in order (reversing chains), and `Emit` shrinks the table first.

/// Bucket layout: each bucket lists item indices with the chain head *last*, so that a prepend
/// is a push.
pub(crate) struct ChainedHashTable {
    buckets: Vec<Vec<u32>>,
    hashes: Vec<u64>,
    num_entries: usize,
}

impl Default for ChainedHashTable {
    fn default() -> Self {
        Self::new()
    }
}

impl ChainedHashTable {
    pub fn new() -> ChainedHashTable {
        ChainedHashTable {
            buckets: vec![Vec::new(); 64],
            hashes: Vec::new(),
            num_entries: 0,
        }
    }

    /// Inserts the next item (items are numbered 0, 1, … in insertion order).
    pub fn insert(&mut self, hash: u64) {
        self.num_entries += 1;
        if 4 * self.num_entries >= 3 * self.buckets.len() {
            self.resize(self.buckets.len() * 2);
        }
        let item = self.hashes.len() as u32;
        self.hashes.push(hash);
        let mask = self.buckets.len() as u64 - 1;
        self.buckets[(hash & mask) as usize].push(item);
    }

    fn resize(&mut self, new_size: usize) {
        let mut fresh = vec![Vec::new(); new_size];
        let mask = new_size as u64 - 1;
        for bucket in &self.buckets {
            for &item in bucket.iter().rev() {
                fresh[(self.hashes[item as usize] & mask) as usize].push(item);
            }
        }
        self.buckets = fresh;
    }

    /// Applies `Emit`'s final resize and returns the buckets, each listing its items from the
    /// chain head to the tail (the order they are written in).
    pub fn finish(mut self) -> Vec<Vec<u32>> {
        let target = if self.num_entries <= 2 {
            1
        } else {
            (self.num_entries * 4 / 3 + 1).next_power_of_two()
        };
        if target != self.buckets.len() {
            self.resize(target);
        }
        for bucket in &mut self.buckets {
            bucket.reverse();
        }
        self.buckets
    }
}
