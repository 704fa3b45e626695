//! Merging fdata profiles, like LLVM's `merge-fdata` (bolt/tools/merge-fdata).
//!
//! What LLVM 22 does, and what we do:
//! * Inputs: files, and directories walked recursively for regular files (symbolic links
//!   followed). We visit directory entries in name order (LLVM: `readdir` order; the order
//!   does not change the sums) and guard against symlink cycles. A named FIFO or device given
//!   directly is read too (LLVM silently skips it).
//! * Key: a line's locations exactly as written (the line minus its count fields); counts and
//!   mispredictions are summed per key. Memory lines (tags 3–5) have one count, summed per
//!   `<pc> <address>` key, in LBR and no_lbr profiles alike.
//! * Headers: all inputs must agree on `boltedcollection` and on `no_lbr`, otherwise the merge
//!   is refused ("cannot mix profile with and without …", naming the first input that
//!   disagrees with the first one). LLVM 22 writes a bare `no_lbr`; we keep the event names:
//!   the union over the inputs, in input order.
//! * Output order: LLVM 22 prints branch (or sample) lines, then memory lines, each in
//!   `StringMap` iteration order: xxh3 hash-bucket order, which also depends on the table's
//!   growth and on which thread parsed which file, so it is neither sorted nor reproducible.
//!   We print every line in bytewise order of its key, which is the order of `LC_ALL=C sort`
//!   over the output (a key that is a prefix of another can only end in a shorter offset,
//!   whose following space sorts before any digit); memory lines still come last.
//! * Differences on input LLVM 22 rejects or garbles, documented by tests: negative counts are
//!   accepted (as llvm-bolt's reader accepts them); a line with extra or missing fields is an
//!   error (LLVM 22 keys it as whatever precedes its last two fields). A sum that does not
//!   fit `int64_t` (what llvm-bolt reads) is an error; LLVM 22 wraps `uint64_t`.
//! * Refused as LLVM 22 refuses them: an empty input or one with only header lines, a blank
//!   line and a line ending in whitespace (LLVM 22 reads the empty line's type, or the
//!   trailing field's count, and fails; merge-fdata after LLVM 22 trims lines and skips blank
//!   ones, and llvm-bolt's reader stops at a blank line).
//!
//! Inputs are parsed in parallel (rayon), each worker summing into its own hash-partitioned
//! table (see "Partitioned aggregation" below); sums commute, and the order is fixed by the
//! sort, so the result does not depend on scheduling. When several inputs are broken, the
//! error of the first in input order is reported.

use std::collections::HashSet;
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use formats::bolt::fdata::{Entry, FdataError, FdataReader, Record};
use rayon::prelude::*;

use crate::io::InputBytes;

/// Why fdata profiles could not be merged (see [`crate::error`] for the convention).
#[derive(Debug)]
#[non_exhaustive]
pub enum MergeError {
    /// A path could not be opened, read or listed.
    Io {
        /// The path.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// A line of `path` is malformed.
    Parse {
        /// The profile.
        path: PathBuf,
        /// What is wrong, and on which line.
        source: FdataError,
    },
    /// `path` disagrees with `first` on a header (`boltedcollection` or `no_lbr`).
    Mix {
        /// The input that disagrees.
        path: PathBuf,
        /// The first input with content, whose headers the others must match.
        first: PathBuf,
        /// The header's name.
        header: &'static str,
        /// Whether `first` has the header (and `path` lacks it), or the other way round.
        first_has_it: bool,
    },
    /// A YAML profile (starts with `---`); only fdata is merged.
    Yaml {
        /// The YAML profile.
        path: PathBuf,
        /// Whether an fdata input came before it (merge-fdata then reports a mix).
        mixed: bool,
    },
    /// `path` is empty or has a blank line or a line ending in whitespace, which LLVM 22's
    /// merge-fdata refuses ("Malformed / corrupted entry type" or "… execution count").
    Blank {
        /// The profile.
        path: PathBuf,
        /// 1-based line number (one past the last line for an input without profile lines).
        line: u64,
        /// Byte offset of that line's start.
        offset: u64,
        /// What was found there.
        found: &'static str,
    },
    /// The inputs name no file.
    NoInputs,
    /// A summed count does not fit a signed 64-bit integer (llvm-bolt reads `int64_t`).
    Overflow {
        /// The line's key (everything but the counts), as written.
        key: String,
        /// The input whose line made the sum overflow (after the inputs before it), when it
        /// could be found again.
        path: Option<PathBuf>,
    },
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            MergeError::Parse { path, source } => write!(f, "{}: {source}", path.display()),
            MergeError::Mix {
                path,
                first,
                header,
                first_has_it,
            } => write!(
                f,
                "{}: cannot mix profile with and without {header} (the first input, {}, {})",
                path.display(),
                first.display(),
                if *first_has_it { "has it" } else { "does not" }
            ),
            MergeError::Yaml { path, mixed: true } => write!(
                f,
                "{}: cannot mix YAML and legacy (fdata) formats",
                path.display()
            ),
            MergeError::Yaml { path, mixed: false } => write!(
                f,
                "{}: a YAML profile; profmill merge-fdata merges fdata profiles only",
                path.display()
            ),
            MergeError::Blank {
                path,
                line,
                offset,
                found,
            } => write!(
                f,
                "{}: line {line} (byte offset {offset}): expected a profile line, found {found} \
                 (LLVM 22's merge-fdata refuses it too)",
                path.display()
            ),
            MergeError::NoInputs => write!(f, "no input files (directories were empty)"),
            MergeError::Overflow { key, path } => {
                if let Some(path) = path {
                    write!(f, "{}: ", path.display())?;
                }
                write!(
                    f,
                    "the summed counts of `{}` do not fit a signed 64-bit integer",
                    formats::error::excerpt(key.as_bytes())
                )?;
                if path.is_some() {
                    write!(f, " (added to the inputs before it)")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for MergeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MergeError::Io { source, .. } => Some(source),
            MergeError::Parse { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The fdata merge's result.
pub type Result<T> = std::result::Result<T, MergeError>;

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> MergeError + '_ {
    move |source| MergeError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The files named by `args`: files as given, directories walked recursively.
pub fn expand_inputs(args: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for arg in args {
        let meta = std::fs::metadata(arg).map_err(io_error(arg))?;
        if meta.is_dir() {
            let mut visited = HashSet::new();
            walk(arg, &mut visited, &mut files)?;
        } else {
            files.push(arg.clone());
        }
    }
    if files.is_empty() {
        return Err(MergeError::NoInputs);
    }
    Ok(files)
}

/// Appends the regular files under `dir`, in name order, following symbolic links once.
fn walk(dir: &Path, visited: &mut HashSet<PathBuf>, files: &mut Vec<PathBuf>) -> Result<()> {
    let real = std::fs::canonicalize(dir).map_err(io_error(dir))?;
    if !visited.insert(real) {
        return Ok(());
    }
    let mut entries = std::fs::read_dir(dir)
        .map_err(io_error(dir))?
        .map(|e| e.map(|e| e.path()))
        .collect::<io::Result<Vec<_>>>()
        .map_err(io_error(dir))?;
    entries.sort();
    for path in entries {
        // Follows links; a dangling link is skipped, as LLVM's is_regular_file skips it.
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            walk(&path, visited, files)?;
        } else if meta.is_file() {
            files.push(path);
        }
    }
    Ok(())
}

/// The inputs: regular files are mapped when their turn comes (and unmapped after), other
/// files (pipes, devices) are read up front since they cannot be read twice.
pub struct Sources {
    files: Vec<(PathBuf, Contents)>,
}

enum Contents {
    File,
    Read(Vec<u8>),
}

/// One input's bytes while it is being read.
pub enum Bytes<'a> {
    /// A regular file's, mapped or read.
    File(InputBytes),
    /// A pipe's, read when the inputs were opened.
    Borrowed(&'a [u8]),
}

impl std::ops::Deref for Bytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::File(f) => f,
            Bytes::Borrowed(b) => b,
        }
    }
}

impl Sources {
    /// Checks that every path can be opened (files are mapped later, one at a time, while
    /// merging) and reads the ones that are not regular files. `paths` are files, as
    /// [`expand_inputs`] lists them.
    pub fn open(paths: &[PathBuf]) -> Result<Self> {
        let files = paths
            .iter()
            .map(|p| Ok((p.clone(), open_contents(p).map_err(io_error(p))?)))
            .collect::<Result<_>>()?;
        Ok(Sources { files })
    }

    /// The number of inputs.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether there is no input.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The path of input `index`.
    pub fn path(&self, index: usize) -> &Path {
        &self.files[index].0
    }

    /// The bytes of input `index` (a regular file is mapped again on each call; a pipe's were
    /// read once, by [`Sources::open`]).
    pub fn read(&self, index: usize) -> io::Result<Bytes<'_>> {
        let (path, contents) = &self.files[index];
        match contents {
            Contents::Read(v) => Ok(Bytes::Borrowed(v)),
            Contents::File => InputBytes::open(path).map(Bytes::File),
        }
    }

    fn bytes(&self, index: usize) -> Result<Bytes<'_>> {
        self.read(index).map_err(io_error(self.path(index)))
    }

    /// Whether the first input is a YAML profile (`merge-fdata` decides by the first one).
    pub fn first_is_yaml(&self) -> Result<bool> {
        match self.is_empty() {
            true => Ok(false),
            false => Ok(crate::bolt::yaml_merge::is_yaml(&self.bytes(0)?)),
        }
    }
}

fn open_contents(path: &Path) -> io::Result<Contents> {
    let meta = std::fs::metadata(path)?;
    if meta.is_file() {
        std::fs::File::open(path)?; // fail early on unreadable inputs
        Ok(Contents::File)
    } else {
        Ok(Contents::Read(crate::io::input::read(path)?))
    }
}

/// Summed counts of one key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sums {
    /// Summed mispredictions (0 for sample and memory lines).
    pub mispreds: i64,
    /// Summed counts (branch counts, samples or memory accesses).
    pub count: i64,
}

/// Which kind of line a key came from: it decides the count fields written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A branch line (`0`/`1`/`2` endpoints): mispredictions and count.
    Branch,
    /// A basic-sample line (`no_lbr` profiles): a count.
    Sample,
    /// A memory line (`3` endpoints, from perf2bolt's memory events): a count.
    Memory,
}

/// The headers all inputs agreed on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergedHeader {
    /// The inputs start with `boltedcollection` (profiles of a BOLT-instrumented binary).
    pub bolted_collection: bool,
    /// `Some` for basic-sample profiles: the event names, first-seen order, each once.
    pub no_lbr: Option<Vec<Vec<u8>>>,
}

/// A merged profile: its lines in key order, keys stored one after another.
pub struct Merged {
    /// The headers the inputs agreed on; written first.
    pub header: MergedHeader,
    keys: Vec<u8>,
    lines: Vec<Line>,
    /// How many inputs were merged (merge-fdata reports it).
    pub files: usize,
}

#[derive(Clone, Copy, Debug)]
struct Line {
    start: usize,
    len: usize,
    kind: Kind,
    sums: Sums,
}

impl Merged {
    /// The lines, in bytewise key order: (key as written, kind, sums).
    pub fn lines(&self) -> impl Iterator<Item = (&[u8], Kind, Sums)> + '_ {
        self.lines
            .iter()
            .map(|l| (&self.keys[l.start..l.start + l.len], l.kind, l.sums))
    }

    /// The number of distinct lines.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether the merged profile has no line.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// Checks the inputs agree on their headers, then sums them in parallel.
pub fn merge(sources: &Sources) -> Result<Merged> {
    let header = merged_header(sources)?;
    let table = sum_in_parallel(sources)?;
    table
        .into_merged(header, sources.len())
        .map_err(|e| match e {
            MergeError::Overflow { key, path: None } => MergeError::Overflow {
                path: overflowing_input(sources, key.as_bytes()),
                key,
            },
            e => e,
        })
}

/// The first input at which the sums of the line `key` (as [`MergeError::Overflow`] shows
/// it) leave `i64`, reading the inputs again in order; only run once a merge overflowed.
fn overflowing_input(sources: &Sources, key: &[u8]) -> Option<PathBuf> {
    let (mut mispreds, mut count) = (0i64, 0i64);
    for (index, (path, _)) in sources.files.iter().enumerate() {
        let Ok(bytes) = sources.bytes(index) else {
            continue;
        };
        let Ok(reader) = FdataReader::new(&bytes) else {
            continue;
        };
        for entry in reader.flatten() {
            if String::from_utf8_lossy(entry.key).as_bytes() != key {
                continue;
            }
            let (_, sums) = kind_and_sums(&entry);
            match (
                mispreds.checked_add(sums.mispreds),
                count.checked_add(sums.count),
            ) {
                (Some(m), Some(c)) => (mispreds, count) = (m, c),
                _ => return Some(path.clone()),
            }
        }
    }
    None
}

/// The header of the first input with any content; every other such input must match it.
fn merged_header(sources: &Sources) -> Result<MergedHeader> {
    let mut first: Option<(&Path, bool, bool)> = None;
    let mut merged = MergedHeader::default();
    for (index, (path, _)) in sources.files.iter().enumerate() {
        let bytes = sources.bytes(index)?;
        check_not_yaml(path, &bytes, first.is_some())?;
        let reader = FdataReader::new(&bytes).map_err(|source| MergeError::Parse {
            path: path.clone(),
            source,
        })?;
        let header = reader.header();
        let has_data = reader.clone().next().is_some();
        if !has_data && header == Default::default() {
            continue; // an empty file: neither LBR nor no_lbr
        }
        let (bolted, no_lbr) = (header.bolted_collection, header.no_lbr.is_some());
        let Some((first_path, first_bolted, first_no_lbr)) = first else {
            first = Some((path, bolted, no_lbr));
            merged.bolted_collection = bolted;
            merged.no_lbr = no_lbr.then(Vec::new);
            add_events(&mut merged, header.no_lbr.iter().flat_map(|e| e.iter()));
            continue;
        };
        for (header_name, theirs, ours) in [
            ("boltedcollection", first_bolted, bolted),
            ("no_lbr", first_no_lbr, no_lbr),
        ] {
            if theirs != ours {
                return Err(MergeError::Mix {
                    path: path.clone(),
                    first: first_path.to_owned(),
                    header: header_name,
                    first_has_it: theirs,
                });
            }
        }
        add_events(&mut merged, header.no_lbr.iter().flat_map(|e| e.iter()));
    }
    Ok(merged)
}

fn check_not_yaml(path: &Path, bytes: &[u8], after_fdata: bool) -> Result<()> {
    if bytes.starts_with(b"---\n") {
        return Err(MergeError::Yaml {
            path: path.to_owned(),
            mixed: after_fdata,
        });
    }
    Ok(())
}

fn add_events<'a>(merged: &mut MergedHeader, events: impl Iterator<Item = &'a [u8]>) {
    let Some(list) = merged.no_lbr.as_mut() else {
        return;
    };
    for event in events {
        if !list.iter().any(|e| e == event) {
            list.push(event.to_vec());
        }
    }
}

/// Parses every input into per-worker tables and adds them up. Inputs after the first
/// broken one (in input order) are skipped; the first broken one's error is returned.
fn sum_in_parallel(sources: &Sources) -> Result<Table> {
    let first_broken = AtomicUsize::new(usize::MAX);
    let errors = Mutex::new(Vec::new());
    // Few, large work pieces: every piece costs a table and a merge of it.
    let pieces = 2 * rayon::current_num_threads();
    let table = (0..sources.len())
        .into_par_iter()
        .with_min_len(sources.len().div_ceil(pieces).max(1))
        .fold(Table::new, |mut table, index| {
            if index > first_broken.load(Ordering::Relaxed) {
                return table;
            }
            if let Err(error) = add_input(&mut table, sources, index) {
                first_broken.fetch_min(index, Ordering::Relaxed);
                errors
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((index, error));
            }
            table
        })
        .reduce(Table::new, Table::add);
    let errors = errors.into_inner().unwrap_or_else(|e| e.into_inner());
    match errors.into_iter().min_by_key(|(index, _)| *index) {
        Some((_, error)) => Err(error),
        None => Ok(table),
    }
}

fn add_input(table: &mut Table, sources: &Sources, index: usize) -> Result<()> {
    let bytes = sources.bytes(index)?;
    let path = &sources.files[index].0;
    let parse_error = |source| MergeError::Parse {
        path: path.clone(),
        source,
    };
    check_no_blank_lines(path, &bytes)?;
    for entry in FdataReader::new(&bytes).map_err(parse_error)? {
        let entry = entry.map_err(parse_error)?;
        let (kind, sums) = kind_and_sums(&entry);
        table.push(entry.key, kind, sums);
    }
    Ok(())
}

/// Refuses what LLVM 22's merge-fdata refuses before our parser sees it: after the header
/// lines (`boltedcollection`, then `no_lbr`, each only where merge-fdata looks for it), at
/// least one line, none of them empty or ending in whitespace.
fn check_no_blank_lines(path: &Path, bytes: &[u8]) -> Result<()> {
    let blank = |line: u64, offset: usize, found: &'static str| MergeError::Blank {
        path: path.to_owned(),
        line,
        offset: offset as u64,
        found,
    };
    let mut start = 0;
    let mut line = 1;
    for header in [&b"boltedcollection"[..], b"no_lbr"] {
        if bytes[start..].starts_with(header) {
            start = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |n| start + n + 1);
            line += 1;
        }
    }
    if start >= bytes.len() {
        return Err(blank(line, start, "the end of the file"));
    }
    while start < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |n| start + n);
        let text = &bytes[start..end];
        match text.last() {
            None => return Err(blank(line, start, "an empty line")),
            Some(c) if c.is_ascii_whitespace() => {
                return Err(blank(line, start, "a line ending in whitespace"))
            }
            Some(_) => {}
        }
        start = end + 1;
        line += 1;
    }
    Ok(())
}

fn kind_and_sums(entry: &Entry) -> (Kind, Sums) {
    match entry.record {
        Record::Branch {
            mispreds, count, ..
        } => (Kind::Branch, Sums { mispreds, count }),
        Record::Sample { count, .. } => (Kind::Sample, Sums { mispreds: 0, count }),
        Record::Memory { count, .. } => (Kind::Memory, Sums { mispreds: 0, count }),
    }
}

// Partitioned aggregation. A table over all distinct keys (hundreds of thousands of them)
// does not fit in cache, so inserting line by line costs a few cache misses per line. Lines
// are first appended, key bytes and all, to one of a few hundred pending batches by a few
// hash bits; a full batch (more lines than its partition has keys) goes into its partition's
// table in one go, while that small table stays in cache. Keys are copied, so inputs can be
// unmapped as soon as they are read.
const PARTITION_BITS: u32 = 8;
const PARTITIONS: usize = 1 << PARTITION_BITS;
const BATCH: usize = 1024;

fn partition_of(hash: u64) -> usize {
    // Middle bits: hashbrown uses the low bits for the bucket and the top 7 as a tag.
    (hash >> 32) as usize & (PARTITIONS - 1)
}

/// 40 bytes: batches are written at memory speed, so they are kept small.
struct Pending {
    hash: u64,
    start: u32,
    len: u32,
    kind: Kind,
    sums: Sums,
}

/// Longer keys skip the batches (so that batch offsets fit `u32`).
const MAX_BATCHED_KEY: usize = 1 << 16;

/// Lines waiting to go into one partition, with their keys.
#[derive(Default)]
struct Batch {
    keys: Vec<u8>,
    lines: Vec<Pending>,
}

impl Batch {
    fn push(&mut self, hash: u64, key: &[u8], kind: Kind, sums: Sums) {
        if self.lines.capacity() == 0 {
            self.lines.reserve_exact(BATCH);
            self.keys.reserve(BATCH * 48);
        }
        // Both fit: a batch holds at most BATCH keys of at most MAX_BATCHED_KEY bytes.
        self.lines.push(Pending {
            hash,
            start: self.keys.len() as u32,
            len: key.len() as u32,
            kind,
            sums,
        });
        self.keys.extend_from_slice(key);
    }

    fn drain_into(&mut self, partition: &mut Partition) {
        for p in &self.lines {
            let start = p.start as usize;
            let key = &self.keys[start..start + p.len as usize];
            partition.add(p.hash, key, p.kind, p.sums, false);
        }
        self.lines.clear();
        self.keys.clear();
    }
}

#[derive(Clone, Copy)]
struct Slot {
    hash: u64,
    start: usize,
    len: usize,
    kind: Kind,
    overflowed: bool,
    sums: Sums,
}

#[derive(Default)]
struct Partition {
    keys: Vec<u8>,
    slots: hashbrown::HashTable<Slot>,
}

impl Partition {
    fn add(&mut self, hash: u64, key: &[u8], kind: Kind, sums: Sums, overflowed: bool) {
        let keys = &self.keys;
        let found = self.slots.find_mut(hash, |s| {
            s.hash == hash && &keys[s.start..s.start + s.len] == key
        });
        match found {
            Some(slot) => {
                let mispreds = slot.sums.mispreds.checked_add(sums.mispreds);
                let count = slot.sums.count.checked_add(sums.count);
                slot.overflowed |= overflowed || mispreds.is_none() || count.is_none();
                slot.sums = Sums {
                    mispreds: mispreds.unwrap_or(slot.sums.mispreds.wrapping_add(sums.mispreds)),
                    count: count.unwrap_or(slot.sums.count.wrapping_add(sums.count)),
                };
            }
            None => {
                let slot = Slot {
                    hash,
                    start: self.keys.len(),
                    len: key.len(),
                    kind,
                    overflowed,
                    sums,
                };
                self.keys.extend_from_slice(key);
                self.slots.insert_unique(hash, slot, |s| s.hash);
            }
        }
    }

    fn key(&self, slot: &Slot) -> &[u8] {
        &self.keys[slot.start..slot.start + slot.len]
    }
}

/// One worker's sums, split into hash partitions, and the lines not yet added.
struct Table {
    partitions: Vec<Partition>,
    pending: Vec<Batch>,
}

impl Table {
    fn new() -> Self {
        Table {
            partitions: (0..PARTITIONS).map(|_| Partition::default()).collect(),
            pending: (0..PARTITIONS).map(|_| Batch::default()).collect(),
        }
    }

    fn push(&mut self, key: &[u8], kind: Kind, sums: Sums) {
        let hash = xxhash_rust::xxh3::xxh3_64(key);
        let p = partition_of(hash);
        if key.len() > MAX_BATCHED_KEY {
            self.partitions[p].add(hash, key, kind, sums, false);
            return;
        }
        let batch = &mut self.pending[p];
        batch.push(hash, key, kind, sums);
        if batch.lines.len() == BATCH {
            batch.drain_into(&mut self.partitions[p]);
        }
    }

    /// Adds every pending line and frees the batches (a flushed table is only merged).
    fn flush(&mut self) {
        for (batch, partition) in self.pending.iter_mut().zip(&mut self.partitions) {
            batch.drain_into(partition);
            *batch = Batch::default();
        }
    }

    /// Adds `other` into `self`, partition by partition (each pair stays in cache).
    fn add(mut self, mut other: Table) -> Table {
        self.flush();
        other.flush();
        for (mine, theirs) in self.partitions.iter_mut().zip(other.partitions) {
            if mine.slots.len() < theirs.slots.len() {
                let smaller = std::mem::replace(mine, theirs);
                mine.add_partition(&smaller);
            } else {
                mine.add_partition(&theirs);
            }
        }
        self
    }

    fn into_merged(mut self, header: MergedHeader, files: usize) -> Result<Merged> {
        self.flush();
        let mut order: Vec<(&[u8], &Slot)> = self
            .partitions
            .iter()
            .flat_map(|p| p.slots.iter().map(move |s| (p.key(s), s)))
            .collect();
        order.par_sort_unstable_by(|a, b| a.0.cmp(b.0));
        if let Some((key, _)) = order.iter().find(|(_, s)| s.overflowed) {
            return Err(MergeError::Overflow {
                key: String::from_utf8_lossy(key).into_owned(),
                path: None,
            });
        }
        let mut keys = Vec::with_capacity(order.iter().map(|(k, _)| k.len()).sum());
        let lines = order
            .iter()
            .map(|(key, slot)| {
                let start = keys.len();
                keys.extend_from_slice(key);
                Line {
                    start,
                    len: key.len(),
                    kind: slot.kind,
                    sums: slot.sums,
                }
            })
            .collect();
        Ok(Merged {
            header,
            keys,
            lines,
            files,
        })
    }
}

impl Partition {
    fn add_partition(&mut self, other: &Partition) {
        for slot in other.slots.iter() {
            self.add(
                slot.hash,
                other.key(slot),
                slot.kind,
                slot.sums,
                slot.overflowed,
            );
        }
    }
}

impl Merged {
    /// Writes the merged fdata.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.header.bolted_collection {
            out.write_all(b"boltedcollection\n")?;
        }
        if let Some(events) = &self.header.no_lbr {
            out.write_all(b"no_lbr")?;
            for event in events {
                out.write_all(b" ")?;
                out.write_all(event)?;
            }
            out.write_all(b"\n")?;
        }
        let mut number = itoa::Buffer::new();
        for (key, kind, sums) in self.lines() {
            out.write_all(key)?;
            out.write_all(b" ")?;
            if kind == Kind::Branch {
                out.write_all(number.format(sums.mispreds).as_bytes())?;
                out.write_all(b" ")?;
            }
            out.write_all(number.format(sums.count).as_bytes())?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Merges in-memory inputs given as (name, text).
    fn merged(inputs: &[(&str, &str)]) -> Result<(MergedHeader, String)> {
        let sources = Sources {
            files: inputs
                .iter()
                .map(|(name, text)| {
                    (
                        PathBuf::from(name),
                        Contents::Read(text.as_bytes().to_vec()),
                    )
                })
                .collect(),
        };
        let merged = merge(&sources)?;
        let mut out = Vec::new();
        merged.write(&mut out).unwrap();
        Ok((merged.header, String::from_utf8(out).unwrap()))
    }

    #[test]
    fn sums_counts_and_mispredictions_per_key() {
        let (header, text) = merged(&[
            ("a", "1 main 10 1 foo 0 2 5\n1 main 10 1 foo 0 1 3\n0 [unknown] 7f 1 a\\ b 4 0 1\n4 f 4 3 [unknown] 100 1\n"),
            ("b", "1 main 10 1 foo 0 0 7\n4 f 4 3 [unknown] 100 2\n1 main 10 1 bar 0 -1 -4\n"),
        ])
        .unwrap();
        assert_eq!(header, MergedHeader::default());
        assert_eq!(
            text,
            "0 [unknown] 7f 1 a\\ b 4 0 1\n\
             1 main 10 1 bar 0 -1 -4\n\
             1 main 10 1 foo 0 3 15\n\
             4 f 4 3 [unknown] 100 3\n"
        );
    }

    #[test]
    fn keeps_headers_and_no_lbr_events() {
        let (header, text) = merged(&[
            ("a", "boltedcollection\nno_lbr cycles:u:\n1 main 10 5\n"),
            (
                "b",
                "no_lbr instructions: cycles:u:\nboltedcollection\n1 main 10 5\n1 main 11 1\n",
            ),
        ])
        .unwrap();
        assert!(header.bolted_collection);
        assert_eq!(
            text,
            "boltedcollection\nno_lbr cycles:u: instructions:\n1 main 10 10\n1 main 11 1\n"
        );
    }

    #[test]
    fn refuses_to_mix_modes_naming_the_file() {
        let lbr = "1 main 10 1 foo 0 2 5\n";
        let e = merged(&[("a", lbr), ("b", lbr), ("c", "no_lbr\n1 main 10 5\n")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "c: cannot mix profile with and without no_lbr (the first input, a, does not)"
        );
        let e = merged(&[("a", "boltedcollection\n1 f 0 1 g 0 0 1\n"), ("b", lbr)]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "b: cannot mix profile with and without boltedcollection (the first input, a, has it)"
        );
        let e = merged(&[("a", lbr), ("y", "---\nheader:\n")]).unwrap_err();
        assert!(e.to_string().contains("cannot mix YAML and legacy"), "{e}");
    }

    #[test]
    fn reports_the_first_broken_input_in_input_order() {
        let good = "1 main 10 1 foo 0 2 5\n".repeat(50);
        let mut inputs: Vec<(String, String)> =
            (0..64).map(|i| (format!("f{i}"), good.clone())).collect();
        inputs[40].1.push_str("1 main 10 1 foo 0 2\n");
        inputs[17].1.push_str("1 main zz 1 foo 0 2 5\n");
        inputs[60].1.push_str("x\n");
        let refs: Vec<(&str, &str)> = inputs
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        for _ in 0..5 {
            let e = merged(&refs).unwrap_err();
            assert_eq!(
                e.to_string(),
                "f17: line 51, column 8 (byte offset 1107): expected a hexadecimal offset (at most 64 bits), found \"zz\""
            );
        }
    }

    #[test]
    fn sums_beyond_i64_are_refused() {
        let line = format!("1 f 0 1 g 0 0 {}\n", i64::MAX);
        let small = "1 f 0 1 g 0 0 1\n";
        let e = merged(&[("a", small), ("b", small), ("c", &line), ("d", &line)]).unwrap_err();
        // The input that made the sum overflow is named.
        assert_eq!(
            e.to_string(),
            "c: the summed counts of `1 f 0 1 g 0` do not fit a signed 64-bit integer (added to the inputs before it)"
        );
        let negative = format!("1 f 0 1 g 0 0 {}\n", i64::MIN + 1);
        let (_, text) = merged(&[("a", &line), ("b", &negative)]).unwrap();
        assert_eq!(text, "1 f 0 1 g 0 0 0\n");
    }

    #[test]
    fn many_keys_across_partitions_and_workers() {
        // Enough distinct keys to fill every partition's batches several times over.
        let files: Vec<(String, String)> = (0..16)
            .map(|f| {
                let text: String = (0..4000)
                    .map(|i| format!("1 fn{} {:x} 1 g 0 {} 2\n", (i * 7 + f) % 3000, i % 5, f % 2))
                    .collect();
                (format!("f{f}"), text)
            })
            .collect();
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let (_, text) = merged(&refs).unwrap();
        let mut expected = std::collections::BTreeMap::<String, (i64, i64)>::new();
        for (_, t) in &files {
            for line in t.lines() {
                let (key, counts) = line.rsplit_once(' ').unwrap();
                let (key, mispreds) = key.rsplit_once(' ').unwrap();
                let e = expected.entry(key.to_owned()).or_default();
                e.0 += mispreds.parse::<i64>().unwrap();
                e.1 += counts.parse::<i64>().unwrap();
            }
        }
        let expected: String = expected
            .iter()
            .map(|(k, (m, c))| format!("{k} {m} {c}\n"))
            .collect();
        assert_eq!(text, expected);
    }

    #[test]
    fn directories_are_walked_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        for p in [
            dir.path().join("b.fdata"),
            sub.join("a.fdata"),
            dir.path().join("a"),
        ] {
            std::fs::write(p, "1 f 0 1 g 0 0 1\n").unwrap();
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path(), sub.join("loop")).unwrap();
        let files = expand_inputs(&[dir.path().to_owned()]).unwrap();
        let names: Vec<_> = files
            .iter()
            .map(|p| p.strip_prefix(dir.path()).unwrap().to_owned())
            .collect();
        assert_eq!(
            names,
            [PathBuf::from("a"), "b.fdata".into(), "sub/a.fdata".into()]
        );
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            expand_inputs(&[empty.path().to_owned()]),
            Err(MergeError::NoInputs)
        ));
        assert!(matches!(
            expand_inputs(&[dir.path().join("missing")]),
            Err(MergeError::Io { .. })
        ));
    }
}
