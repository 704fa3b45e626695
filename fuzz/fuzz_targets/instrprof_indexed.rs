//! Feeds arbitrary bytes to the indexed `.profdata` reader: header, summaries, hash-table
//! payload, records, value data, binary ids and temporal traces. Any panic is a bug.
#![no_main]

use formats::instrprof::indexed::IndexedReader;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(reader) = IndexedReader::new(data) else { return };
    let mut records = 0usize;
    let _ = reader.read_records(&mut |_, r| records += r.counts.len());
    let _ = reader.binary_ids();
    let _ = reader.temporal_traces();
});
