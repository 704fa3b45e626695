//! `profmill import` must accept or refuse any bytes as a Parquet file with an error, never
//! panic and never leave an output behind; a store it accepts round-trips through our own
//! Parquet to the same bytes. Files go to /dev/shm when it exists (the reader takes paths).
//! Seeds: `fuzz/seeds/parquet` (also replayed by the normal tests, engine/tests/it/fuzz_seeds.rs).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let shm = Path::new("/dev/shm");
    let scratch = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
    engine::perf::parquet::check_fuzz_input(data, &scratch);
});
