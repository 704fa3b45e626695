//! Feeds arbitrary bytes to the `.proftext` reader (header directives, temporal traces,
//! records, bitmaps, value profiles). Any panic is a bug.
#![no_main]

use formats::instrprof::text::TextReader;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = TextReader::new(data) else { return };
    let mut records = 0usize;
    let _ = reader.read_records(&mut |_, r| records += r.counts.len());
});
