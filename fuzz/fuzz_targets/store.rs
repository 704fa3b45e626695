//! The profile store reader must accept or refuse any bytes with an error, never panic, and
//! whatever it accepts must write back to bytes it reads the same again.
//!
//! Random bytes rarely pass the checksums, so each input is tried twice: as it is, and with
//! every checksum the table of contents can reach recomputed, which lets mutations reach the
//! section and row decoders. Seeds: `fuzz/seeds/store` (also replayed by the normal tests,
//! `formats/tests/it/fuzz_seeds.rs`).
#![no_main]

use formats::store::{check_fuzz_input, with_fixed_checksums};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    check_fuzz_input(data);
    if let Some(fixed) = with_fixed_checksums(data) {
        check_fuzz_input(&fixed);
    }
});
