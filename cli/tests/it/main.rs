//! The `profmill` binary's integration tests, linked into one test binary (one module per
//! area) so that `cargo test` links once instead of once per file.

mod autofdo;
mod autofdo_clang;
mod autofdo_gcc;
mod autofdo_ips;
mod bat;
mod common;
mod drop_in_cl;
mod entries;
mod errors;
mod fdata;
mod fdata_mem;
mod generated;
mod legacy;
mod llvm_profdata;
mod llvm_profdata_cl;
mod llvm_profdata_correlate;
mod llvm_profdata_merge_options;
mod llvm_profdata_overlap;
mod llvm_profdata_raw;
mod llvm_profdata_raw_v11;
mod llvm_profdata_sample;
mod llvm_profdata_stdin;
mod llvm_profdata_temporal;
mod merge_fdata;
mod parquet;
mod perf2bolt;
mod perf_script;
mod pipes;
mod plt;
mod sampleprof;
mod sampleprof_gcc;
mod startup;
mod store;
mod yaml;
