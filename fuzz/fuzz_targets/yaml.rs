//! The BOLT YAML profile reader must accept or refuse any bytes with an error, never panic;
//! whatever it accepts writes back (unwrapped and wrapped at merge-fdata's 70 columns) to text
//! that reads the same. Seeds: `fuzz/seeds/yaml` (also replayed by the normal tests,
//! `formats/tests/it/fuzz_seeds.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    formats::bolt::yaml::check_fuzz_input(data);
});
