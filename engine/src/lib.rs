#![warn(missing_docs)]

//! The profmill engine: sharded decoding, per-thread aggregation tables, address mapping and
//! the conversions between profile formats. Readers and writers of the on-disk formats live in
//! the `formats` crate; the `profmill` binary is a thin layer over this crate.
//!
//! # Map
//!
//! The engine is split by domain; each domain is a cargo feature (all on by default), so a
//! user of one does not build the others' heavy decoders. docs/architecture.md (in the
//! repository) describes the data flow of each domain and why the modules are cut this way.
//!
//! | module | feature | what it does | entry points |
//! |---|---|---|---|
//! | [`perf`] | `perf` | perf.data (LBR or IP samples) → per-binary traces in the binary's own addresses; BOLT pre-aggregated text | [`perf::aggregate()`], [`perf::write_preagg`] |
//! | [`bolt`] | `bolt` | perf2bolt's symbolization into fdata; merge-fdata; the legacy pre-aggregated dialect | [`bolt::write_fdata`], [`bolt::symbolize`], [`bolt::merge_fdata`] |
//! | [`instrprof`] | `instrprof` | `llvm-profdata merge/show/overlap` of instrumentation profiles | [`instrprof::merge`] |
//! | [`sampleprof`] | `sampleprof` | `llvm-profdata merge/show/overlap --sample`, conversion between encodings | [`sampleprof::read`], [`sampleprof::merge`], [`sampleprof::write`], [`sampleprof::convert`] |
//! | [`autofdo`] | `autofdo` | perf.data / store LBR traces + DWARF → AutoFDO sample profiles (`create_llvm_prof`'s rules) | [`autofdo::profile`] |
//! | [`io`] | always | inputs as bytes, atomic outputs, progress reporting | [`io::write_atomically`], [`io::progress::Progress`] |
//! | [`error`] | always | the perf and BOLT domains' [`Error`] | [`Error`], [`Result`] |
//!
//! The instrprof and sampleprof domains have their own error types
//! ([`instrprof::MergeError`], [`sampleprof::Error`]), following the convention described in
//! [`error`].
//!
//! Each domain has a runnable example in `engine/examples/` (`perf_aggregate`, `bolt_fdata`,
//! `instrprof_merge`, `sampleprof_convert`).

pub mod error;
#[cfg(any(feature = "bolt", feature = "sampleprof"))]
pub(crate) mod hash_order;
pub mod io;

#[cfg(feature = "autofdo")]
pub mod autofdo;
#[cfg(feature = "bolt")]
pub mod bolt;
#[cfg(feature = "instrprof")]
pub mod instrprof;
#[cfg(feature = "perf")]
pub mod perf;
#[cfg(feature = "sampleprof")]
pub mod sampleprof;

pub use error::{Error, Result};
