//! The iteration order of LLVM 19's `StringMap` / `StringSet` (StringMap.cpp), which decides the
//! order of the vtable names an indexed profile stores: buckets hashed by the low 32 bits of
//! `xxh3_64bits(key)`, 16 buckets at first, quadratic probing, doubled when more than 3/4 full
//! (rehashed in bucket order), iterated in bucket order. Keys are never removed here.

use xxhash_rust::xxh3::xxh3_64;

/// `keys` (distinct, in insertion order) in the order a `StringSet` built from them iterates.
pub fn string_set_order<'k>(keys: &[&'k [u8]]) -> Vec<&'k [u8]> {
    // Each bucket: (full hash, key index) or empty.
    let mut buckets: Vec<Option<(u32, usize)>> = Vec::new();
    for (index, key) in keys.iter().enumerate() {
        if buckets.is_empty() {
            buckets = vec![None; 16];
        }
        let hash = xxh3_64(key) as u32;
        let slot = probe(&buckets, hash);
        buckets[slot] = Some((hash, index));
        let items = index + 1;
        if items * 4 > buckets.len() * 3 {
            buckets = rehash(&buckets, buckets.len() * 2);
        }
    }
    buckets.iter().flatten().map(|&(_, i)| keys[i]).collect()
}

/// The first empty bucket of `hash`'s probe sequence (keys are distinct: no match to find).
fn probe(buckets: &[Option<(u32, usize)>], hash: u32) -> usize {
    let mask = buckets.len() - 1;
    let mut slot = hash as usize & mask;
    let mut step = 1;
    while buckets[slot].is_some() {
        slot = (slot + step) & mask;
        step += 1;
    }
    slot
}

fn rehash(old: &[Option<(u32, usize)>], size: usize) -> Vec<Option<(u32, usize)>> {
    let mut new = vec![None; size];
    for &(hash, index) in old.iter().flatten() {
        let slot = probe(&new, hash);
        new[slot] = Some((hash, index));
    }
    new
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_once_whatever_the_growth() {
        let names: Vec<Vec<u8>> = (0..100).map(|i| format!("_ZTV{i}").into_bytes()).collect();
        let keys: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
        let mut order = string_set_order(&keys);
        assert_eq!(order.len(), 100);
        order.sort();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(order, sorted);
    }
}
