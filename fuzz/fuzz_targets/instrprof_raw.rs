//! Feeds arbitrary bytes to the raw `.profraw` reader (every version, pointer size and byte
//! order it accepts, concatenated profiles, names, value data). Any panic is a bug.
#![no_main]

use formats::instrprof::raw::{RawOptions, RawReader};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = RawReader::new(data, RawOptions { only_version: None }) else { return };
    let mut records = 0usize;
    let _ = reader.read_records(&mut |_, r| records += r.counts.len());
    let _ = reader.temporal_traces(1);
});
