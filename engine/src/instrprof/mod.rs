//! Merging LLVM instrumentation profiles with llvm-profdata's semantics: inputs are decoded in
//! parallel, then merged in the order llvm-profdata's writer contexts would merge them, so the
//! output depends only on the inputs and LLVM's context count, never on our thread count.
//!
//! The entry point is [`merge`]; the [`ProfileWriter`] it returns writes the merged profile as
//! an indexed (`.profdata`) or text profile. [`show`](show::show) and
//! [`overlap`](overlap::overlap) implement `llvm-profdata show` and `overlap`.
//!
//! ```
//! use engine::instrprof::{merge, MergeOptions, WeightedInput};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Two runs of one (synthetic) program, as clang-19 instrumentation writes them.
//! let dir = tempfile::tempdir()?;
//! let mut inputs = Vec::new();
//! for seed in [1, 2] {
//!     let path = dir.path().join(format!("run{seed}.profraw"));
//!     let spec = corpus::instrprof::RawProfileSpec { functions: 12, seed, functions_per_unit: 4 };
//!     let mut bytes = Vec::new();
//!     corpus::instrprof::write_raw_profile(&spec, &mut bytes)?;
//!     std::fs::write(&path, bytes)?;
//!     inputs.push(WeightedInput { path, weight: 1 });
//! }
//!
//! let outcome = merge(&inputs, &MergeOptions::default())?;
//! assert!(!outcome.failed && outcome.errors.is_empty());
//! assert_eq!(outcome.profile.num_names(), 12);
//! let indexed = outcome.profile.to_indexed(false, 12);
//! assert_eq!(&indexed[..8], &0x8169_666f_7270_6cffu64.to_le_bytes());
//! # Ok(())
//! # }
//! ```

pub mod correlate;
pub mod hash_order;
pub mod name_filter;
pub mod overlap;
pub mod remap;
pub mod show;
pub mod temporal;
pub mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hashbrown::HashMap;

use rayon::prelude::*;

use formats::instrprof::indexed::IndexedReader;
use formats::instrprof::raw::{NameTable, NameTableCache, RawOptions, RawReader};
use formats::instrprof::text::TextReader;
use formats::instrprof::{
    detect_format, Error as FormatError, Format, ProfileKind, Record, TemporalTraces,
};

use remap::Remapper;

use crate::io::InputBytes;
pub(crate) use writer::RecordParts;
pub use writer::{MergeWarning, ProfileWriter, MAX_COUNT};

pub use crate::io::inputs::WeightedInput;

/// Why an input could not be (fully) merged: the entries llvm-profdata collects per context.
#[derive(Debug)]
#[non_exhaustive]
pub enum InputError {
    /// The input could not be read.
    Io(std::io::Error),
    /// The input is malformed.
    Format(FormatError),
    /// No reader recognizes the input.
    UnrecognizedFormat,
    /// The input's profile kind cannot be merged with the others' (LLVM's message).
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

impl std::error::Error for InputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InputError::Io(e) => Some(e),
            InputError::Format(e) => Some(e),
            InputError::UnrecognizedFormat | InputError::KindConflict(_) => None,
        }
    }
}

/// Why a merge failed as a whole (failures of single inputs are [`InputError`]s in the
/// [`MergeOutcome`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum MergeError {
    /// Two writer contexts hold profiles of kinds that cannot be merged (fatal in LLVM too).
    KindConflict(&'static str),
    /// A merging thread panicked.
    Panicked,
}

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MergeError::KindConflict(m) => f.write_str(m),
            MergeError::Panicked => f.write_str("the merging thread panicked"),
        }
    }
}

impl std::error::Error for MergeError {}

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

/// How to merge: llvm-profdata's `merge` options. `MergeOptions::default()` behaves like
/// `llvm-profdata-19 merge` with no options.
#[derive(Clone, Debug)]
pub struct MergeOptions {
    /// llvm-profdata's thread count, which decides how its writer contexts split the inputs
    /// (`-j`; 0 = its default, min(cores, (inputs + 1) / 2)).
    pub llvm_threads: usize,
    /// Raw versions to accept: `Some(10)` behaves like llvm-profdata-19.
    pub raw_version: Option<u64>,
    /// `--failure-mode`: when invalid inputs fail the merge.
    pub failure_mode: FailureMode,
    /// `--remapping-file`: record names are mapped as they are read.
    pub remapper: Option<Arc<remap::Remapper>>,
    /// `--keep-vtable-symbols`: the inputs' vtable names go into the indexed output.
    pub keep_vtable_symbols: bool,
    /// The temporal trace reservoir of each writer context.
    pub temporal_limits: temporal::TemporalLimits,
    /// `--binary-file`: data records and names for raw profiles that have none.
    pub correlation: Option<Arc<formats::instrprof::raw::Correlation>>,
}

impl Default for MergeOptions {
    fn default() -> Self {
        MergeOptions {
            llvm_threads: 0,
            raw_version: Some(formats::instrprof::raw::LLVM19_VERSION),
            failure_mode: FailureMode::Any,
            remapper: None,
            keep_vtable_symbols: false,
            temporal_limits: temporal::TemporalLimits::default(),
            correlation: None,
        }
    }
}

/// A message llvm-profdata would print to stderr while merging (not an error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeNote {
    /// The input being merged.
    pub path: PathBuf,
    /// The function whose record triggered the warning.
    pub function: String,
    /// What went wrong.
    pub warning: MergeWarning,
    /// The first time this warning kind was seen in the context (when LLVM adds the hint).
    pub first_of_kind: bool,
}

/// The result of [`merge`]: the merged profile, ready to be written, and what llvm-profdata
/// would have printed on the way.
pub struct MergeOutcome {
    /// The merged profile; write it with [`ProfileWriter::to_indexed`] or
    /// [`ProfileWriter::write_text`].
    pub profile: ProfileWriter,
    /// Input errors, in context order (each one printed as a warning by llvm-profdata).
    pub errors: Vec<(PathBuf, InputError)>,
    /// Warnings about individual records, in the order llvm-profdata prints them.
    pub notes: Vec<MergeNote>,
    /// Whether `--failure-mode` turns the errors into a failed merge.
    pub failed: bool,
}

/// Where a decoded record's name lives.
#[derive(Clone, Copy)]
enum NameRef {
    /// Entry `index` of the input's name table `table`.
    Table { table: u32, index: u32 },
    /// Bytes in the input's name arena (text and indexed inputs, and unknown raw names).
    Arena { start: u32, len: u32 },
}

/// One record of a decoded input, its counters and bitmap in the input's arenas.
struct CompactRecord {
    name: NameRef,
    hash: u64,
    counts: (u32, u32),
    bitmap: (u32, u32),
    values: Option<Box<[Vec<formats::instrprof::ValueSite>; formats::instrprof::NUM_VALUE_KINDS]>>,
    /// Whether the record states its bitmap (only text records can leave it unstated).
    bitmap_stated: bool,
}

/// An input decoded into compact records (names, counters and bitmaps in arenas).
#[derive(Default)]
struct Decoded {
    kind: Option<Result<ProfileKind, InputError>>,
    tables: Vec<Arc<NameTable>>,
    names: Vec<u8>,
    counts: Vec<u64>,
    bitmaps: Vec<u8>,
    records: Vec<CompactRecord>,
    /// Warnings the reader raised (errors for llvm-profdata), then its final error if any.
    errors: Vec<InputError>,
    /// Only when reading finished without error.
    binary_ids: Option<Vec<Vec<u8>>>,
    temporal: TemporalTraces,
    empty: bool,
    /// The reader's vtable names (only collected for `--keep-vtable-symbols`).
    vtable_names: Vec<Vec<u8>>,
}

impl Decoded {
    fn failed(kind: InputError) -> Decoded {
        Decoded {
            kind: Some(Err(kind)),
            ..Decoded::default()
        }
    }

    /// Empties the buffers for reuse (their capacity stays).
    fn reset(&mut self) {
        self.kind = None;
        self.tables.clear();
        self.names.clear();
        self.counts.clear();
        self.bitmaps.clear();
        self.records.clear();
        self.errors.clear();
        self.binary_ids = None;
        self.temporal = TemporalTraces::default();
        self.empty = false;
        self.vtable_names.clear();
    }

    fn push(&mut self, name: NameRef, record: &mut Record, bitmap_stated: bool) {
        let counts = (self.counts.len() as u32, record.counts.len() as u32);
        self.counts.extend_from_slice(&record.counts);
        let bitmap = (self.bitmaps.len() as u32, record.bitmap.len() as u32);
        self.bitmaps.extend_from_slice(&record.bitmap);
        let values = record
            .values
            .iter()
            .any(|s| !s.is_empty())
            .then(|| Box::new(std::mem::take(&mut record.values)));
        self.records.push(CompactRecord {
            name,
            hash: record.hash,
            counts,
            bitmap,
            values,
            bitmap_stated,
        });
    }

    fn push_named(&mut self, name: &[u8], mut record: Record, bitmap_stated: bool) {
        let name_ref = NameRef::Arena {
            start: self.names.len() as u32,
            len: name.len() as u32,
        };
        self.names.extend_from_slice(name);
        self.push(name_ref, &mut record, bitmap_stated);
    }

    fn name(&self, name: NameRef) -> &[u8] {
        match name {
            NameRef::Table { table, index } => self.tables[table as usize].name(index),
            NameRef::Arena { start, len } => &self.names[start as usize..(start + len) as usize],
        }
    }
}

pub use crate::io::inputs::STDIN;

fn load(path: &Path) -> std::io::Result<InputBytes> {
    if path.as_os_str() == STDIN {
        // llvm-profdata-19 accepts `-` but first probes it for the memprof format, which
        // consumes standard input: its profile reader then sees an empty input, skipped
        // silently. `-` is an empty input here too; consuming standard input is the
        // caller's part (the library never reads it).
        return Ok(InputBytes::Read(Vec::new()));
    }
    InputBytes::open(path)
}

/// Decodes one input the way `loadInput` consumes a reader.
fn decode(
    path: &Path,
    weight: u64,
    options: &MergeOptions,
    cache: &NameTableCache,
    pool: &Pool,
) -> Decoded {
    match load(path) {
        Ok(data) => decode_data(&data, weight, options, cache, pool),
        Err(e) => Decoded::failed(InputError::Io(e)),
    }
}

/// A raw reader for `data` with the merge's version limit and correlation.
fn open_raw<'d>(data: &'d [u8], options: &MergeOptions) -> Result<RawReader<'d>, FormatError> {
    let raw_options = RawOptions {
        only_version: options.raw_version,
    };
    let mut reader = RawReader::new(data, raw_options)?;
    if let Some(c) = &options.correlation {
        reader.set_correlation(c.clone())?;
    }
    Ok(reader)
}

/// Decodes one loaded input.
fn decode_data(
    data: &[u8],
    weight: u64,
    options: &MergeOptions,
    cache: &NameTableCache,
    pool: &Pool,
) -> Decoded {
    if data.is_empty() {
        let mut d = Decoded::failed(InputError::UnrecognizedFormat);
        d.empty = true;
        return d;
    }
    let mut out = pool.take();
    let (kind, result, binary_ids, temporal, warnings) = match detect_format(data) {
        None => return Decoded::failed(InputError::UnrecognizedFormat),
        Some(Format::Raw) => {
            let mut reader = match open_raw(data, options) {
                Ok(r) => r,
                Err(e) => return Decoded::failed(InputError::Format(e)),
            };
            let result = reader.read_records_in_place(Some(cache), &mut |table, index, record| {
                let name = match index {
                    Some(index) => {
                        if !out.tables.last().is_some_and(|t| Arc::ptr_eq(t, table)) {
                            out.tables.push(table.clone());
                        }
                        NameRef::Table {
                            table: out.tables.len() as u32 - 1,
                            index,
                        }
                    }
                    None => NameRef::Arena { start: 0, len: 0 },
                };
                out.push(name, record, true);
            });
            let temporal = reader.temporal_traces(weight);
            if options.keep_vtable_symbols {
                out.vtable_names = reader.vtable_names();
            }
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
            let reader = match IndexedReader::new(data) {
                Ok(r) => r,
                Err(e) => return Decoded::failed(InputError::Format(e)),
            };
            let result = reader.read_records(&mut |n, r| out.push_named(n, r, true));
            if options.keep_vtable_symbols {
                out.vtable_names = reader.vtable_names().unwrap_or_default();
            }
            // Only raw traces take the input's weight: the others keep their own
            // (`getTemporalProfTraces`).
            let temporal = reader.temporal_traces().unwrap_or_default();
            (
                reader.kind(),
                result,
                reader.binary_ids(),
                temporal,
                Vec::new(),
            )
        }
        Some(Format::Text) => {
            let mut reader = match TextReader::new(data) {
                Ok(r) => r,
                Err(e) => return Decoded::failed(InputError::Format(e)),
            };
            let result = reader
                .read_records_noting_bitmaps(&mut |n, r, stated| out.push_named(n, r, stated));
            if options.keep_vtable_symbols {
                out.vtable_names = std::mem::take(&mut reader.vtable_names);
            }
            let temporal = std::mem::take(&mut reader.temporal);
            (reader.kind(), result, Ok(Vec::new()), temporal, Vec::new())
        }
    };
    out.kind = Some(Ok(kind));
    out.temporal = temporal;
    out.errors = warnings.into_iter().map(InputError::Format).collect();
    match result.and(binary_ids) {
        Ok(ids) => out.binary_ids = Some(ids),
        Err(e) => out.errors.push(InputError::Format(e)),
    }
    out
}

/// Decoded inputs' buffers, returned by the merger for the decoders to reuse: allocating and
/// freeing megabytes per input costs page faults.
#[derive(Default)]
struct Pool {
    free: std::sync::Mutex<Vec<Decoded>>,
}

impl Pool {
    fn take(&self) -> Decoded {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.pop().unwrap_or_default()
    }

    fn give(&self, mut d: Decoded, keep: usize) {
        d.reset();
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if free.len() < keep {
            free.push(d);
        }
    }
}

/// One of llvm-profdata's `WriterContext`s.
#[derive(Default)]
struct Context {
    writer: ProfileWriter,
    errors: Vec<(PathBuf, InputError)>,
    notes: Vec<MergeNote>,
    seen_warnings: Vec<MergeWarning>,
    /// Writer slots of each name table's names, so that raw inputs of one binary resolve
    /// every name once.
    slots: Vec<(Arc<NameTable>, Vec<u32>)>,
    /// Where each table's entry is in `slots`, by table address.
    slot_index: HashMap<usize, usize>,
    /// The entry of the table used last: consecutive records share their table.
    last_slots: usize,
}

/// The end of one input, as [`Context::finish_input`] takes it.
struct InputEnding<'a> {
    vtable_names: &'a [Vec<u8>],
    temporal: TemporalTraces,
    final_error: Option<InputError>,
    /// `None` when reading failed.
    binary_ids: Option<Vec<Vec<u8>>>,
}

fn bitmap_of<'d>(decoded: &'d Decoded, record: &CompactRecord) -> &'d [u8] {
    let (start, len) = record.bitmap;
    &decoded.bitmaps[start as usize..(start + len) as usize]
}

const NO_SLOT: u32 = u32::MAX;

impl Context {
    fn with_limits(limits: temporal::TemporalLimits) -> Context {
        let mut context = Context::default();
        context.writer.temporal = temporal::TraceReservoir::new(limits);
        context
    }

    fn slot(&mut self, decoded: &Decoded, name: NameRef, remapper: Option<&Remapper>) -> u32 {
        match name {
            NameRef::Table { table, index } => {
                self.table_slot(&decoded.tables[table as usize], index, remapper)
            }
            NameRef::Arena { .. } => self.named_slot(decoded.name(name), remapper),
        }
    }

    fn named_slot(&mut self, name: &[u8], remapper: Option<&Remapper>) -> u32 {
        match remapper {
            None => self.writer.slot(name),
            Some(r) => self.writer.slot(r.map(name)),
        }
    }

    /// The writer slot of a name table entry, resolved once per table.
    fn table_slot(
        &mut self,
        table: &Arc<NameTable>,
        index: u32,
        remapper: Option<&Remapper>,
    ) -> u32 {
        let entry = self.table_entry(table);
        let slot = self.slots[entry].1[index as usize];
        if slot != NO_SLOT {
            return slot;
        }
        let slot = self.named_slot(table.name(index), remapper);
        self.slots[entry].1[index as usize] = slot;
        slot
    }

    /// The `slots` entry of `table`, made on first use.
    fn table_entry(&mut self, table: &Arc<NameTable>) -> usize {
        if self
            .slots
            .get(self.last_slots)
            .is_some_and(|(t, _)| Arc::ptr_eq(t, table))
        {
            return self.last_slots;
        }
        let key = Arc::as_ptr(table) as usize;
        let entry = *self.slot_index.entry(key).or_insert_with(|| {
            self.slots.push((table.clone(), vec![NO_SLOT; table.len()]));
            self.slots.len() - 1
        });
        self.last_slots = entry;
        entry
    }

    /// Loads and merges one input. Raw profiles, the common case, go from the reader straight
    /// into the writer; the other formats through [`decode_data`] and [`Context::add`].
    fn load_and_add(
        &mut self,
        input: &WeightedInput,
        options: &MergeOptions,
        cache: &NameTableCache,
        pool: &Pool,
    ) {
        let data = match load(&input.path) {
            Ok(d) => d,
            Err(e) => {
                self.errors.push((input.path.clone(), InputError::Io(e)));
                return;
            }
        };
        if !data.is_empty() && detect_format(&data) == Some(Format::Raw) {
            return self.add_raw(input, &data, options, cache);
        }
        let mut d = decode_data(&data, input.weight, options, cache, pool);
        self.add(input, &mut d, options.remapper.as_deref());
        pool.give(d, 1);
    }

    /// [`decode_data`] then [`Context::add`] for a raw profile, without the intermediate copy.
    fn add_raw(
        &mut self,
        input: &WeightedInput,
        data: &[u8],
        options: &MergeOptions,
        cache: &NameTableCache,
    ) {
        let path = &input.path;
        let mut reader = match open_raw(data, options) {
            Ok(r) => r,
            Err(e) => return self.errors.push((path.clone(), InputError::Format(e))),
        };
        if let Err(conflict) = self.writer.merge_kind(reader.kind()) {
            let error = InputError::KindConflict(conflict.0);
            return self.errors.push((path.clone(), error));
        }
        let remapper = options.remapper.as_deref();
        let result = reader.read_records_in_place(Some(cache), &mut |table, index, record| {
            let slot = match index {
                Some(index) => self.table_slot(table, index, remapper),
                None => self.named_slot(b"", remapper),
            };
            let has_values = record.values.iter().any(|s| !s.is_empty());
            let parts = RecordParts {
                hash: record.hash,
                counts: &record.counts,
                bitmap: &record.bitmap,
                values: has_values.then_some(&mut record.values),
            };
            self.add_record(path, slot, parts, input.weight);
        });
        for warning in std::mem::take(&mut reader.warnings) {
            self.errors
                .push((path.clone(), InputError::Format(warning)));
        }
        let vtable_names = if options.keep_vtable_symbols {
            reader.vtable_names()
        } else {
            Vec::new()
        };
        let ending = InputEnding {
            vtable_names: &vtable_names,
            temporal: reader.temporal_traces(input.weight),
            binary_ids: result
                .is_ok()
                .then(|| std::mem::take(&mut reader.binary_ids)),
            final_error: result.err().map(InputError::Format),
        };
        self.finish_input(path, ending);
    }

    fn add(&mut self, input: &WeightedInput, decoded: &mut Decoded, remapper: Option<&Remapper>) {
        let path = &input.path;
        let kind = match decoded.kind.take() {
            Some(Ok(k)) => k,
            Some(Err(e)) => {
                if !decoded.empty {
                    self.errors.push((path.clone(), e));
                }
                return;
            }
            None => return,
        };
        if let Err(conflict) = self.writer.merge_kind(kind) {
            self.errors
                .push((path.clone(), InputError::KindConflict(conflict.0)));
            return;
        }
        let mut errors = std::mem::take(&mut decoded.errors).into_iter();
        // Reader warnings come before a final reader error.
        let final_error = if decoded.binary_ids.is_none() {
            errors.next_back()
        } else {
            None
        };
        for e in errors {
            self.errors.push((path.clone(), e));
        }
        let mut records = std::mem::take(&mut decoded.records);
        // LLVM's text reader reuses one record: a record without a `$` line keeps the bitmap
        // the reused record still holds, which is empty once a record was moved into the
        // writer (new) and the last one read when it was merged into an existing one.
        let mut leftover_bitmap: Vec<u8> = Vec::new();
        for record in records.iter_mut() {
            let slot = self.slot(decoded, record.name, remapper);
            let (start, len) = record.counts;
            let counts = &decoded.counts[start as usize..(start + len) as usize];
            let stated;
            let bitmap = if record.bitmap_stated {
                let (start, len) = record.bitmap;
                stated = &decoded.bitmaps[start as usize..(start + len) as usize];
                stated
            } else {
                &leftover_bitmap[..]
            };
            let parts = RecordParts {
                hash: record.hash,
                counts,
                bitmap,
                values: record.values.as_deref_mut(),
            };
            let new = self.add_record(path, slot, parts, input.weight);
            if new {
                leftover_bitmap.clear();
            } else if record.bitmap_stated {
                leftover_bitmap.clear();
                leftover_bitmap.extend_from_slice(bitmap_of(decoded, record));
            }
        }
        records.clear();
        decoded.records = records;
        let ending = InputEnding {
            vtable_names: &decoded.vtable_names,
            temporal: std::mem::take(&mut decoded.temporal),
            final_error,
            binary_ids: decoded.binary_ids.take(),
        };
        self.finish_input(path, ending);
    }

    /// Merges one record into the writer, noting LLVM's warning for it; true if it is new.
    fn add_record(&mut self, path: &Path, slot: u32, parts: RecordParts<'_>, weight: u64) -> bool {
        let mut reported: Option<MergeWarning> = None;
        let new = self.writer.add_parts(slot, parts, weight, &mut |w| {
            reported.get_or_insert(w);
        });
        if let Some(w) = reported {
            let first = !self.seen_warnings.contains(&w);
            if first {
                self.seen_warnings.push(w);
            }
            self.notes.push(MergeNote {
                path: path.to_path_buf(),
                function: String::from_utf8_lossy(self.writer.name_of(slot)).into_owned(),
                warning: w,
                first_of_kind: first,
            });
        }
        new
    }

    /// What `loadInput` does after an input's records: vtable names, temporal traces, then the
    /// reader's final error or its binary ids.
    fn finish_input(&mut self, path: &Path, ending: InputEnding<'_>) {
        // The names come from the reader's symtab, itself a `StringSet`: in its order.
        let mut seen = hashbrown::HashSet::new();
        let distinct: Vec<&[u8]> = ending
            .vtable_names
            .iter()
            .map(Vec::as_slice)
            .filter(|n| seen.insert(*n))
            .collect();
        for name in formats::instrprof::indexed::string_map::string_set_order(&distinct) {
            self.writer.add_vtable_name(name);
        }
        if !ending.temporal.traces.is_empty() {
            self.writer.add_temporal_traces(ending.temporal);
        }
        if let Some(e) = ending.final_error {
            self.errors.push((path.to_path_buf(), e));
            return;
        }
        if let Some(ids) = ending.binary_ids {
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
pub fn merge(inputs: &[WeightedInput], options: &MergeOptions) -> Result<MergeOutcome, MergeError> {
    let threads = llvm_thread_count(options.llvm_threads, inputs.len());
    let num_contexts = if threads <= 1 { 1 } else { threads };
    let cache = NameTableCache::new();
    let contexts = if num_contexts >= rayon::current_num_threads() {
        merge_per_context(inputs, options, num_contexts, &cache)
    } else {
        merge_pipelined(inputs, options, num_contexts, &cache).map_err(|_| MergeError::Panicked)?
    };
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

/// As many contexts as threads: each thread decodes and merges its own inputs (i mod N), in
/// input order, the way llvm-profdata's threads do; no hand-off between threads.
fn merge_per_context(
    inputs: &[WeightedInput],
    options: &MergeOptions,
    num_contexts: usize,
    cache: &NameTableCache,
) -> Vec<Context> {
    (0..num_contexts)
        .into_par_iter()
        .map(|k| {
            let pool = Pool::default();
            let mut context = Context::with_limits(options.temporal_limits);
            for input in inputs.iter().skip(k).step_by(num_contexts) {
                context.load_and_add(input, options, cache, &pool);
            }
            context
        })
        .collect()
}

/// Fewer contexts than threads: inputs are decoded in parallel, a window at a time, while one
/// thread merges the previous window in input order into context i mod N.
fn merge_pipelined(
    inputs: &[WeightedInput],
    options: &MergeOptions,
    num_contexts: usize,
    cache: &NameTableCache,
) -> std::thread::Result<Vec<Context>> {
    let pool = &Pool::default();
    let window = 2 * rayon::current_num_threads().max(1);
    let remapper = options.remapper.as_deref();
    std::thread::scope(|scope| {
        let (send, receive) = std::sync::mpsc::sync_channel::<(usize, Vec<Decoded>)>(1);
        let merger = scope.spawn(move || {
            let mut contexts: Vec<Context> = (0..num_contexts)
                .map(|_| Context::with_limits(options.temporal_limits))
                .collect();
            for (first, decoded) in receive {
                for (offset, mut d) in decoded.into_iter().enumerate() {
                    let i = first + offset;
                    contexts[i % num_contexts].add(&inputs[i], &mut d, remapper);
                    pool.give(d, 2 * window);
                }
            }
            contexts
        });
        for (chunk_index, chunk) in inputs.chunks(window).enumerate() {
            let decoded: Vec<Decoded> = chunk
                .par_iter()
                .map(|input| decode(&input.path, input.weight, options, cache, pool))
                .collect();
            if send.send((chunk_index * window, decoded)).is_err() {
                break;
            }
        }
        drop(send);
        merger.join()
    })
}

/// The tree reduction of `mergeInstrProfile`: context i absorbs context i + mid, the odd one out
/// goes into context 0, halving until one is left.
fn reduce_contexts(mut contexts: Vec<Context>) -> Result<Context, MergeError> {
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
            .collect::<Result<Vec<Context>, &'static str>>()
            .map_err(MergeError::KindConflict)?;
        if end & 1 == 1 {
            if let Some(odd) = leftover {
                merged[0].absorb(odd).map_err(MergeError::KindConflict)?;
            }
        }
        contexts = merged;
        end = mid;
        mid /= 2;
    }
    // There is always at least one context; an empty list would merge nothing.
    Ok(contexts
        .pop()
        .unwrap_or_else(|| Context::with_limits(Default::default())))
}
