//! A file-mode capture (written to a scratch file and mapped) through `profmill script` and
//! aggregation end to end, indexed and streamed (see `fuzz/harness/mod.rs`). Any panic is a bug.
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::capture(data, false);
});
