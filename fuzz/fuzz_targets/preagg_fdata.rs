//! Pre-aggregated text symbolized to fdata for a small binary, as `perf2bolt --pa` does (see
//! `fuzz/harness/mod.rs`). Any panic is a bug.
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::preagg_fdata(data);
});
