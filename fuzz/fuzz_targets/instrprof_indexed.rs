//! Feeds arbitrary bytes to the indexed `.profdata` reader: header, summaries, hash-table
//! payload, records, value data, binary ids and temporal traces. Any panic is a bug.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    formats::instrprof::indexed::check_fuzz_input(data);
});
