//! The perf domain: perf.data captures decoded in parallel shards into per-thread aggregation
//! tables, mapped to each binary's addresses, and written as BOLT pre-aggregated profiles.
//!
//! The entry point is [`aggregate()`]: describe the binaries in a [`Request`] (each a
//! [`BinaryInfo`]), name the capture with an [`Input`], and get an [`Aggregation`] holding one
//! [`BinaryProfile`] per binary, in the binary's own addresses. [`write_preagg`] writes a
//! profile as BOLT pre-aggregated text (LLVM ≥ 21); the `bolt` domain symbolizes it into fdata.
//! [`read_capture`] is the lower-level walk over a capture's samples with your own [`Sink`].
//!
//! ```
//! use engine::io::progress::NoProgress;
//! use engine::perf::{aggregate, BinaryInfo, Input, KernelEntries, Request, Rules, TraceOrder};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A small synthetic LBR capture of this very executable.
//! let dir = tempfile::tempdir()?;
//! let binary = dir.path().join("app");
//! std::fs::copy(std::env::current_exe()?, &binary)?;
//! let capture = dir.path().join("perf.data");
//! let spec = corpus::LbrCaptureSpec {
//!     binaries: vec![corpus::LbrBinary { path: binary.clone(), load_base: None }],
//!     processes: 1,
//!     target_bytes: 64 << 10,
//!     lbr_depth: 16,
//!     distinct_stacks: 200,
//!     kernel_fraction_percent: 0,
//!     compress: false,
//!     attr_size: corpus::ATTR_SIZE,
//!     seed: 1,
//!     mem_loads: None,
//! };
//! corpus::write_lbr_capture(&spec, &mut std::fs::File::create(&capture)?)?;
//!
//! let request = Request {
//!     binaries: vec![BinaryInfo::load(&binary)?],
//!     discover: None,

//!     skylake_fix: false,
//!     kernel_entries: KernelEntries::Skip,
//!     basic: false,
//!     pid: None,
//!     ignore_build_id: false,
//!     rules: Rules::Current,
//!     threads: 2,
//!     stream: false,
//!     trace_order: TraceOrder::ByBranch,
//! };
//! let result = aggregate(&Input::File(capture), &request, &NoProgress)?;
//! let profile = &result.profiles[0];
//! assert!(!result.basic && !profile.traces.is_empty());
//! // Traces are sorted as requested: by (branch, fall-through start, fall-through end).
//! assert!(profile.traces.windows(2).all(|w| w[0].0 < w[1].0));
//! # Ok(())
//! # }
//! ```

pub mod aggregate;
pub mod binary;
pub mod capture;
mod discover;
mod hint;
pub mod mapping;
#[cfg(feature = "parquet")]
pub mod parquet;
pub mod preagg;
pub mod store;
/// The per-thread aggregation tables. Not API: the module is public (and hidden) only so that
/// the criterion benchmarks in benches/decode.rs can time [`table::TraceTable`] directly; use
/// [`Counts`] and [`TraceOrder`] from here.
#[doc(hidden)]
pub mod table;

pub use aggregate::{
    aggregate, Aggregation, BinaryProfile, KernelEntries, MemSample, Request, SampleStats, Tables,
};
pub use binary::BinaryInfo;
pub use capture::{read_capture, Input, ReadOptions, SideBand, Sink};
pub use mapping::Rules;
pub use preagg::write_preagg;
pub use table::{Counts, TraceOrder};
