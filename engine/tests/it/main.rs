//! The engine crate's integration tests, linked into one test binary (one module per area).

mod bolt_hashes;
mod fuzz_seeds;
mod instrprof_merge;
mod malformed;
mod paths;
mod sampleprof_fast;
mod x86_names;
