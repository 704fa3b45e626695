//! Indexed `.profdata` writer, byte-identical to `InstrProfWriter::writeImpl` of LLVM 19
//! (version 12, or 11 as `--write-prev-version`).

use super::super::kind::ProfileKind;
use super::super::md5_guid;
use super::super::names::encode_names_zlib;
use super::super::record::Record;
use super::super::summary::{Summary, SummaryBuilder};
use super::super::value_prof::{serialize_le, serialized_size};
use super::super::TemporalTraces;
use super::hash_table::ChainedHashTable;
use super::string_map::string_set_order;
use super::MAGIC;

/// One key of the index: a function name and its records (one per function hash), in the order
/// they are to be written.
pub struct NameEntry<'r> {
    /// The function name (the hash table key; its MD5 is the key hash).
    pub name: &'r [u8],
    /// The records under this name, one per function hash.
    pub records: Vec<&'r Record>,
}

/// Everything an indexed profile holds, borrowed from the merged records, ready to write.
pub struct IndexedProfile<'r> {
    /// The `InstrProfKind` bits, written as the version word's variant bits.
    pub kind: ProfileKind,
    /// Sorted bytewise by name; names already filtered (`--sparse`).
    pub entries: Vec<NameEntry<'r>>,
    /// Sorted and deduplicated.
    pub binary_ids: Vec<Vec<u8>>,
    /// Temporal traces (written only when `kind` has [`ProfileKind::TEMPORAL`]).
    pub temporal: TemporalTraces,
    /// Vtable names kept by `--keep-vtable-symbols`, distinct, in insertion order.
    pub vtable_names: Vec<&'r [u8]>,
}

fn put(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn patch(out: &mut [u8], at: usize, v: u64) {
    out[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn data_len(records: &[&Record]) -> usize {
    records
        .iter()
        .map(|r| 8 * (3 + r.counts.len() + r.bitmap.len()) + serialized_size(r))
        .sum()
}

/// `writeVTableNames`: the names in `StringSet` order, one zlib chunk, padded to 8.
fn write_vtable_names(out: &mut Vec<u8>, names: &[&[u8]]) {
    let mut section = Vec::new();
    if !names.is_empty() {
        encode_names_zlib(&string_set_order(names), &mut section);
    }
    put(out, section.len() as u64);
    out.extend_from_slice(&section);
    out.resize(out.len().next_multiple_of(8), 0);
}

/// Encodes `profile` as an indexed profile of `version` (11 or 12).
pub fn write_indexed(profile: &IndexedProfile<'_>, version: u64) -> Vec<u8> {
    let cs = profile.kind.has(ProfileKind::CONTEXT_SENSITIVE);
    let mut out = Vec::new();
    put(&mut out, MAGIC);
    put(&mut out, version | profile.kind.indexed_variant_bits());
    put(&mut out, 0); // Unused
    put(&mut out, 0); // HashType: MD5
    let hash_offset_field = out.len();
    put(&mut out, 0);
    put(&mut out, 0); // MemProfOffset
    let binary_id_field = out.len();
    put(&mut out, 0);
    let temporal_field = out.len();
    put(&mut out, 0);
    let vtable_field = out.len();
    if version >= 12 {
        put(&mut out, 0);
    }
    let summary_at = out.len();
    let summary_size = Summary::encoded_size();
    out.resize(out.len() + summary_size * if cs { 2 } else { 1 }, 0);

    let (mut summary, mut cs_summary) = (SummaryBuilder::default(), SummaryBuilder::default());
    let mut table = ChainedHashTable::new();
    let hashes: Vec<u64> = profile.entries.iter().map(|e| md5_guid(e.name)).collect();
    for &h in &hashes {
        table.insert(h);
    }
    let buckets = table.finish();
    let mut offsets = Vec::with_capacity(buckets.len());
    for bucket in &buckets {
        if bucket.is_empty() {
            offsets.push(0);
            continue;
        }
        offsets.push(out.len() as u64);
        out.extend_from_slice(&(bucket.len() as u16).to_le_bytes());
        for &item in bucket {
            let entry = &profile.entries[item as usize];
            put(&mut out, hashes[item as usize]);
            put(&mut out, entry.name.len() as u64);
            put(&mut out, data_len(&entry.records) as u64);
            out.extend_from_slice(entry.name);
            for r in &entry.records {
                // LLVM sends records with bit 60 of the hash to the CS summary, in every profile.
                let builder = if r.is_context_sensitive() {
                    &mut cs_summary
                } else {
                    &mut summary
                };
                builder.add_record(&r.counts);
                write_record(&mut out, r);
            }
        }
    }
    out.resize(out.len().next_multiple_of(8), 0);
    let hash_offset = out.len();
    put(&mut out, buckets.len() as u64);
    put(&mut out, profile.entries.len() as u64);
    for off in offsets {
        put(&mut out, off);
    }

    let binary_ids_at = out.len();
    write_binary_ids(&mut out, &profile.binary_ids);
    let vtable_names_at = out.len();
    if version >= 12 {
        write_vtable_names(&mut out, &profile.vtable_names);
    }
    let temporal_at = out.len();
    let temporal = profile.kind.has(ProfileKind::TEMPORAL);
    if temporal {
        write_temporal(&mut out, &profile.temporal);
    }

    patch(&mut out, hash_offset_field, hash_offset as u64);
    patch(&mut out, binary_id_field, binary_ids_at as u64);
    if temporal {
        patch(&mut out, temporal_field, temporal_at as u64);
    }
    if version >= 12 {
        patch(&mut out, vtable_field, vtable_names_at as u64);
    }
    let mut encoded = Vec::with_capacity(2 * summary_size);
    summary.finish().write_le(&mut encoded);
    if cs {
        cs_summary.finish().write_le(&mut encoded);
    }
    out[summary_at..summary_at + encoded.len()].copy_from_slice(&encoded);
    out
}

fn write_record(out: &mut Vec<u8>, r: &Record) {
    put(out, r.hash);
    put(out, r.counts.len() as u64);
    for &c in &r.counts {
        put(out, c);
    }
    put(out, r.bitmap.len() as u64);
    for &b in &r.bitmap {
        put(out, u64::from(b));
    }
    serialize_le(r, out);
}

fn write_binary_ids(out: &mut Vec<u8>, ids: &[Vec<u8>]) {
    let size: usize = ids.iter().map(|id| 8 + id.len().next_multiple_of(8)).sum();
    put(out, size as u64);
    for id in ids {
        put(out, id.len() as u64);
        out.extend_from_slice(id);
        out.resize(out.len() + (id.len().next_multiple_of(8) - id.len()), 0);
    }
}

fn write_temporal(out: &mut Vec<u8>, t: &TemporalTraces) {
    put(out, t.traces.len() as u64);
    put(out, t.stream_size);
    for trace in &t.traces {
        put(out, trace.weight);
        put(out, trace.names.len() as u64);
        for &n in &trace.names {
            put(out, n);
        }
    }
}
