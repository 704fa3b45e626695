//! The pre-aggregated text reader must return records or a positioned error, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for record in formats::bolt::preagg::parse(data) {
        if let Err(e) = record {
            assert!(e.offset <= data.len());
        }
    }
});
