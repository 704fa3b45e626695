//! Merging LLVM instrumentation profiles with llvm-profdata's semantics: inputs are decoded in
//! parallel, then merged in the order llvm-profdata's writer contexts would merge them, so the
//! output depends only on the inputs and LLVM's context count, never on our thread count.

pub mod hash_order;
pub mod writer;

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use formats::instrprof::indexed::IndexedReader;
use formats::instrprof::raw::{RawOptions, RawReader};
use formats::instrprof::text::TextReader;
use formats::instrprof::{
    detect_format, Error as FormatError, Format, ProfileKind, Record, TemporalTraces,
};

pub use writer::{MergeWarning, ProfileWriter, MAX_COUNT};

/// One input file and its weight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightedInput {
    pub path: PathBuf,
    pub weight: u64,
}

/// Why an input could not be (fully) merged: the entries llvm-profdata collects per context.
#[derive(Debug)]
pub enum InputError {
    Io(std::io::Error),
    Format(FormatError),
    UnrecognizedFormat,
    KindConflict(&'static str),
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::Io(e) => write!(f, "{e}"),
            InputError::Format(e) => write!(f, "{e}"),
            InputError::UnrecognizedFormat => {
                f.write_str("unrecognized instrumentation profile encoding format")
            }
            InputError::KindConflict(m) => f.write_str(m),
        }
    }
}

/// `--failure-mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailureMode {
    /// Fail if any input is invalid (the default).
    #[default]
    Any,
    /// Fail only if every input is invalid.
    All,
    /// Never fail.
    Warn,
}

#[derive(Clone, Debug)]
pub struct MergeOptions {
    /// llvm-profdata's thread count, which decides how its writer contexts split the inputs
    /// (`-j`; 0 = its default, min(cores, (inputs + 1) / 2)).
    pub llvm_threads: usize,
    /// Raw versions to accept: `Some(10)` behaves like llvm-profdata-19.
    pub raw_version: Option<u64>,
    pub failure_mode: FailureMode,
}

impl Default for MergeOptions {
    fn default() -> Self {
        MergeOptions {
            llvm_threads: 0,
            raw_version: Some(formats::instrprof::raw::LLVM19_VERSION),
            failure_mode: FailureMode::Any,
        }
    }
}

/// A message llvm-profdata would print to stderr while merging (not an error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeNote {
    pub path: PathBuf,
    pub function: String,
    pub warning: MergeWarning,
    /// The first time this warning kind was seen in the context (when LLVM adds the hint).
    pub first_of_kind: bool,
}

pub struct MergeOutcome {
    pub profile: ProfileWriter,
    /// Input errors, in context order (each one printed as a warning by llvm-profdata).
    pub errors: Vec<(PathBuf, InputError)>,
    pub notes: Vec<MergeNote>,
    /// Whether `--failure-mode` turns the errors into a failed merge.
    pub failed: bool,
}

/// An input decoded into owned records (names in one arena).
struct Decoded {
    kind: Result<ProfileKind, InputError>,
    names: Vec<u8>,
    /// (name start, name length, record, whether the record states its bitmap). Only text
    /// records can leave the bitmap unstated.
    records: Vec<(u32, u32, Record, bool)>,
    /// Warnings the reader raised (errors for llvm-profdata), then its final error if any.
    errors: Vec<InputError>,
    /// Only when reading finished without error.
    binary_ids: Option<Vec<Vec<u8>>>,
    temporal: TemporalTraces,
    empty: bool,
}

impl Decoded {
    fn failed(kind: InputError) -> Decoded {
        Decoded {
            kind: Err(kind),
            names: Vec::new(),
            records: Vec::new(),
            errors: Vec::new(),
            binary_ids: None,
            temporal: TemporalTraces::default(),
            empty: false,
        }
    }
}

fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    std::fs::read(path)
}

/// Decodes one input the way `loadInput` consumes a reader.
fn decode(path: &Path, weight: u64, options: &MergeOptions) -> Decoded {
    let data = match read_file(path) {
        Ok(d) => d,
        Err(e) => return Decoded::failed(InputError::Io(e)),
    };
    if data.is_empty() {
        let mut d = Decoded::failed(InputError::UnrecognizedFormat);
        d.empty = true;
        return d;
    }
    let mut out = Decoded {
        kind: Ok(ProfileKind::UNKNOWN),
        names: Vec::new(),
        records: Vec::new(),
        errors: Vec::new(),
        binary_ids: None,
        temporal: TemporalTraces::default(),
        empty: false,
    };
    let mut sink_noting = |name: &[u8], r: Record, bitmap_stated: bool| {
        let start = out.names.len() as u32;
        out.names.extend_from_slice(name);
        out.records
            .push((start, name.len() as u32, r, bitmap_stated));
    };
    let (kind, result, binary_ids, temporal, warnings) = match detect_format(&data) {
        None => return Decoded::failed(InputError::UnrecognizedFormat),
        Some(Format::Raw) => {
            let raw_options = RawOptions {
                only_version: options.raw_version,
            };
            let mut reader = match RawReader::new(&data, raw_options) {
                Ok(r) => r,
                Err(e) => return Decoded::failed(InputError::Format(e)),
            };
            let result = reader.read_records(&mut |n, r| sink_noting(n, r, true));
            let temporal = reader.temporal_traces(weight);
            let warnings = std::mem::take(&mut reader.warnings);
            (
                reader.kind(),
                result,
                Ok(std::mem::take(&mut reader.binary_ids)),
                temporal,
                warnings,
            )
        }
        Some(Format::Indexed) => {
            let reader = match IndexedReader::new(&data) {
                Ok(r) => r,
                Err(e) => return Decoded::failed(InputError::Format(e)),
            };
            let result = reader.read_records(&mut |n, r| sink_noting(n, r, true));
            let mut temporal = reader.temporal_traces().unwrap_or_default();
            for t in &mut temporal.traces {
                t.weight = weight;
            }
            (
                reader.kind(),
                result,
                reader.binary_ids(),
                temporal,
                Vec::new(),
            )
        }
        Some(Format::Text) => {
            let mut reader = match TextReader::new(&data) {
                Ok(r) => r,
                Err(e) => return Decoded::failed(InputError::Format(e)),
            };
            let result = reader.read_records_noting_bitmaps(&mut sink_noting);
            let mut temporal = std::mem::take(&mut reader.temporal);
            for t in &mut temporal.traces {
                t.weight = weight;
            }
            (reader.kind(), result, Ok(Vec::new()), temporal, Vec::new())
        }
    };
    out.kind = Ok(kind);
    out.temporal = temporal;
    out.errors = warnings.into_iter().map(InputError::Format).collect();
    match result.and(binary_ids) {
        Ok(ids) => out.binary_ids = Some(ids),
        Err(e) => out.errors.push(InputError::Format(e)),
    }
    out
}

/// One of llvm-profdata's `WriterContext`s.
#[derive(Default)]
struct Context {
    writer: ProfileWriter,
    errors: Vec<(PathBuf, InputError)>,
    notes: Vec<MergeNote>,
    seen_warnings: Vec<MergeWarning>,
}

impl Context {
    fn add(&mut self, input: &WeightedInput, decoded: Decoded) {
        let path = &input.path;
        let kind = match decoded.kind {
            Ok(k) => k,
            Err(e) => {
                if !decoded.empty {
                    self.errors.push((path.clone(), e));
                }
                return;
            }
        };
        if let Err(conflict) = self.writer.merge_kind(kind) {
            self.errors
                .push((path.clone(), InputError::KindConflict(conflict.0)));
            return;
        }
        let mut errors = decoded.errors.into_iter();
        // Reader warnings come before a final reader error; LLVM records them as they happen,
        // which for our purposes is before the end-of-input checks.
        let final_error = if decoded.binary_ids.is_none() {
            errors.next_back()
        } else {
            None
        };
        for e in errors {
            self.errors.push((path.clone(), e));
        }
        // LLVM's text reader reuses one record: a record without a `$` line keeps the bitmap
        // the reused record still holds, which is empty once a record was moved into the
        // writer (new) and the last one read when it was merged into an existing one.
        let mut leftover_bitmap: Vec<u8> = Vec::new();
        for (start, len, mut record, bitmap_stated) in decoded.records {
            let name = &decoded.names[start as usize..(start + len) as usize];
            if !bitmap_stated {
                record.bitmap.clone_from(&leftover_bitmap);
            }
            let bitmap = record.bitmap.clone();
            let mut reported: Option<MergeWarning> = None;
            let new = self
                .writer
                .add_record(name, record, input.weight, &mut |w| {
                    reported.get_or_insert(w);
                });
            leftover_bitmap = if new { Vec::new() } else { bitmap };
            if let Some(w) = reported {
                let first = !self.seen_warnings.contains(&w);
                if first {
                    self.seen_warnings.push(w);
                }
                self.notes.push(MergeNote {
                    path: path.clone(),
                    function: String::from_utf8_lossy(name).into_owned(),
                    warning: w,
                    first_of_kind: first,
                });
            }
        }
        if !decoded.temporal.traces.is_empty() {
            self.writer.add_temporal_traces(decoded.temporal);
        }
        if let Some(e) = final_error {
            self.errors.push((path.clone(), e));
            return;
        }
        if let Some(ids) = decoded.binary_ids {
            self.writer.add_binary_ids(ids);
        }
    }

    fn absorb(&mut self, other: Context) -> Result<(), &'static str> {
        self.errors.extend(other.errors);
        self.notes.extend(other.notes);
        self.writer.merge_kind(other.writer.kind).map_err(|c| c.0)?;
        let notes = &mut self.notes;
        self.writer.merge_from(other.writer, &mut |name, w| {
            notes.push(MergeNote {
                path: PathBuf::new(),
                function: String::from_utf8_lossy(name).into_owned(),
                warning: w,
                first_of_kind: false,
            })
        });
        Ok(())
    }
}

/// llvm-profdata's thread count for `n` inputs.
pub fn llvm_thread_count(requested: usize, n: usize) -> usize {
    if requested != 0 {
        return requested;
    }
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    cores.min(n.div_ceil(2).max(1)).max(1)
}

/// Merges `inputs` like `llvm-profdata merge`. A kind conflict between LLVM's writer contexts is
/// fatal in LLVM too (`Err`).
pub fn merge(inputs: &[WeightedInput], options: &MergeOptions) -> Result<MergeOutcome, String> {
    let threads = llvm_thread_count(options.llvm_threads, inputs.len());
    let num_contexts = if threads <= 1 { 1 } else { threads };
    let mut contexts: Vec<Context> = (0..num_contexts).map(|_| Context::default()).collect();
    // Decode a window of inputs in parallel, then merge them in input order; input i belongs to
    // context i mod N, as llvm-profdata assigns them.
    let window = 4 * rayon::current_num_threads().max(1);
    for (chunk_index, chunk) in inputs.chunks(window).enumerate() {
        let decoded: Vec<Decoded> = chunk
            .par_iter()
            .map(|input| decode(&input.path, input.weight, options))
            .collect();
        for (offset, d) in decoded.into_iter().enumerate() {
            let i = chunk_index * window + offset;
            contexts[i % num_contexts].add(&inputs[i], d);
        }
    }
    let merged = reduce_contexts(contexts)?;
    let num_errors = merged.errors.len();
    let failed = match options.failure_mode {
        FailureMode::Any => num_errors > 0,
        FailureMode::All => num_errors == inputs.len(),
        FailureMode::Warn => false,
    };
    Ok(MergeOutcome {
        profile: merged.writer,
        errors: merged.errors,
        notes: merged.notes,
        failed,
    })
}

/// The tree reduction of `mergeInstrProfile`: context i absorbs context i + mid, the odd one out
/// goes into context 0, halving until one is left.
fn reduce_contexts(mut contexts: Vec<Context>) -> Result<Context, String> {
    let mut end = contexts.len();
    let mut mid = end / 2;
    while mid > 0 {
        let upper: Vec<Context> = contexts.drain(mid..end).collect();
        let mut upper = upper.into_iter();
        let pairs: Vec<(Context, Context)> = contexts.drain(..mid).zip(upper.by_ref()).collect();
        let leftover = upper.next();
        let mut merged = pairs
            .into_par_iter()
            .map(|(mut a, b)| a.absorb(b).map(|_| a))
            .collect::<Result<Vec<Context>, &'static str>>()?;
        if end & 1 == 1 {
            if let Some(odd) = leftover {
                merged[0].absorb(odd)?;
            }
        }
        contexts = merged;
        end = mid;
        mid /= 2;
    }
    contexts
        .pop()
        .ok_or_else(|| "no writer context".to_string())
}
