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
pub use indexed::writer::{write_indexed, IndexedProfile, NameEntry};
pub use indexed::IndexedReader;
pub use kind::ProfileKind;
pub use raw::{RawOptions, RawReader};
pub use record::{Record, ValueData, ValueSite, NUM_VALUE_KINDS};
pub use text::{write_text, TextReader};

pub use crate::md5_guid;

/// The three encodings, told apart the way `InstrProfReader::create` does: indexed, then raw
/// (64- then 32-bit, either byte order), then text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Indexed profile (`.profdata`), magic `\xfflprofi`.
    Indexed,
    /// Raw profile (`.profraw`) written by the runtime, 64- or 32-bit, either byte order.
    Raw,
    /// The text format of `llvm-profdata merge --text`.
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
    /// Which `InstrProfKind` bits the profile has (from the version word or text header).
    pub kind: ProfileKind,
    /// Build ids, in file order (the indexed writer sorts and deduplicates them).
    pub binary_ids: Vec<Vec<u8>>,
    /// Temporal traces (only when `kind` has the temporal flag).
    pub temporal: TemporalTraces,
}

/// Temporal profile traces: sequences of function-name MD5s, each with a weight.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TemporalTraces {
    /// The kept traces (a reservoir sample of at most the stream's size limit).
    pub traces: Vec<TemporalTrace>,
    /// How many traces the stream has seen (more than `traces.len()` once sampled).
    pub stream_size: u64,
}

/// One temporal trace (LLVM `TemporalProfTraceTy`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemporalTrace {
    /// `Weight`: how many runs this trace stands for.
    pub weight: u64,
    /// `FunctionNameRefs`: MD5 GUIDs of the functions in first-execution order.
    pub names: Vec<u64>,
}
