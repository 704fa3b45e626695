//! The AutoFDO gcov reader (407*, v1, v2, v3) must never panic, nor the writer on what it read.
#![no_main]

use formats::sampleprof::gcov;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let (Ok(profile), Some(version)) = (gcov::read(data), gcov::detect(data)) {
        let mut out = Vec::new();
        if gcov::write(&profile, version, &mut out).is_ok() {
            let _ = gcov::read(&out);
        }
    }
});
