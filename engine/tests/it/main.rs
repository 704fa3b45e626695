//! The engine crate's integration tests, linked into one test binary (one module per area).

mod fuzz_seeds;
mod instrprof_merge;
mod malformed;
mod paths;
mod sampleprof_fast;
