//! A pipe-mode capture (read as a stream) through `profmill script` and aggregation end to end
//! (see `fuzz/harness/mod.rs`). Any panic is a bug.
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::capture(data, true);
});
