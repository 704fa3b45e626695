//! The LLVM raw binary and ExtBinary readers must never panic, nor the writer on what they
//! read.
#![no_main]

use formats::sampleprof::binary::{self, ExtBinaryOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for profile in [binary::read_raw(data), binary::read_ext(data)]
        .into_iter()
        .flatten()
    {
        let mut out = Vec::new();
        binary::write_ext(&profile, &ExtBinaryOptions::default(), &mut out).unwrap();
        let _ = binary::read_ext(&out);
    }
});
