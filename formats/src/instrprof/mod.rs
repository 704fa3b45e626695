//! LLVM instrumentation profiles (`-fprofile-generate` / `-fprofile-instr-generate`): the raw
//! `.profraw` files the compiler-rt runtime writes, the indexed `.profdata` files
//! `llvm-profdata merge` writes, and the `.proftext` text form.
//!
//! Readers hand out [`Record`]s with their function name; writers take records grouped by name.
//! Merging (weights, saturation, LLVM's record order) lives in `engine::instrprof`.

pub mod error;
pub mod indexed;
pub mod kind;
pub mod names;
pub mod raw;
pub mod record;
pub mod summary;
pub mod text;
pub mod value_prof;

pub use error::{Error, ErrorKind, Location};
pub use kind::ProfileKind;
pub use record::{Record, ValueData, ValueSite, NUM_VALUE_KINDS};

pub use crate::md5_guid;

/// The three encodings, told apart the way `InstrProfReader::create` does: indexed, then raw
/// (64- then 32-bit, either byte order), then text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Indexed,
    Raw,
    Text,
}

/// Detects the encoding of a non-empty input; `None` when it is none of the three.
pub fn detect_format(data: &[u8]) -> Option<Format> {
    if indexed::has_format(data) {
        Some(Format::Indexed)
    } else if raw::has_format(data) {
        Some(Format::Raw)
    } else if text::has_format(data) {
        Some(Format::Text)
    } else {
        None
    }
}

/// What a reader hands out besides records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProfileMeta {
    pub kind: ProfileKind,
    /// Build ids, in file order (the indexed writer sorts and deduplicates them).
    pub binary_ids: Vec<Vec<u8>>,
    /// Temporal traces (only when `kind` has the temporal flag).
    pub temporal: TemporalTraces,
}

/// Temporal profile traces: sequences of function-name MD5s, each with a weight.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TemporalTraces {
    pub traces: Vec<TemporalTrace>,
    /// How many traces the stream has seen (more than `traces.len()` once sampled).
    pub stream_size: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemporalTrace {
    pub weight: u64,
    pub names: Vec<u64>,
}
