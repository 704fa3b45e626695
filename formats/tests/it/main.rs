//! The formats crate's integration tests, linked into one test binary (one module per area).

mod fuzz_seeds;
mod instrprof_malformed;
mod instrprof_raw_v11;
mod instrprof_roundtrip;
mod sampleprof_binary;
mod sampleprof_common;
mod sampleprof_gcov;
mod sampleprof_gcov_v4;
mod sampleprof_generated;
mod sampleprof_text;
