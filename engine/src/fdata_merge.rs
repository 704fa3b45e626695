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
//!   accepted (as llvm-bolt's reader accepts them); blank lines and trailing spaces are
//!   skipped; a line with extra or missing fields is an error (LLVM 22 keys it as whatever
//!   precedes its last two fields); empty inputs are ignored (LLVM 22 fails on them).
//!
//! Inputs are parsed in parallel (rayon); sums commute, and the order is fixed by the sort, so
//! the result does not depend on scheduling. When several inputs are broken, the error of the
//! first in input order is reported.

use std::collections::HashSet;
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use formats::bolt::fdata::{Entry, FdataError, FdataReader, Record};
use hashbrown::HashMap;
use rayon::prelude::*;

#[derive(Debug)]
pub enum MergeError {
    /// A path could not be opened, read or listed.
    Io { path: PathBuf, source: io::Error },
    /// A line of `path` is malformed.
    Parse { path: PathBuf, source: FdataError },
    /// `path` disagrees with `first` on a header (`boltedcollection` or `no_lbr`).
    Mix {
        path: PathBuf,
        first: PathBuf,
        header: &'static str,
        first_has_it: bool,
    },
    /// A YAML profile (starts with `---`); only fdata is merged.
    Yaml { path: PathBuf, mixed: bool },
    /// The inputs name no file.
    NoInputs,
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
            MergeError::NoInputs => write!(f, "no input files (directories were empty)"),
        }
    }
}

impl std::error::Error for MergeError {}

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

/// The inputs' bytes, mapped (regular files) or read (pipes, devices).
pub struct Sources {
    files: Vec<(PathBuf, Contents)>,
}

enum Contents {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl Contents {
    fn bytes(&self) -> &[u8] {
        match self {
            Contents::Mapped(m) => m,
            Contents::Read(v) => v,
        }
    }
}

impl Sources {
    pub fn open(paths: &[PathBuf]) -> Result<Self> {
        let files = paths
            .iter()
            .map(|p| Ok((p.clone(), open_contents(p).map_err(io_error(p))?)))
            .collect::<Result<_>>()?;
        Ok(Sources { files })
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

fn open_contents(path: &Path) -> io::Result<Contents> {
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() == 0 {
        return Ok(Contents::Read(std::fs::read(path)?));
    }
    // SAFETY: a read-only private mapping; another process truncating an input while we
    // read it is undefined, as for every mmap reader (see engine::capture).
    Ok(Contents::Mapped(unsafe { memmap2::Mmap::map(&file) }?))
}

/// Summed counts of one key. Wide so that no input order can overflow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sums {
    pub mispreds: i128,
    pub count: i128,
}

impl std::ops::AddAssign for Sums {
    fn add_assign(&mut self, o: Sums) {
        self.mispreds += o.mispreds;
        self.count += o.count;
    }
}

/// Which kind of line a key came from: it decides the count fields written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Branch,
    Sample,
    Memory,
}

/// The headers all inputs agreed on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergedHeader {
    pub bolted_collection: bool,
    /// `Some` for basic-sample profiles: the event names, first-seen order, each once.
    pub no_lbr: Option<Vec<Vec<u8>>>,
}

/// A merged profile; keys borrow from the [`Sources`].
pub struct Merged<'a> {
    pub header: MergedHeader,
    /// Sorted by key, keys unique.
    pub lines: Vec<(&'a [u8], Kind, Sums)>,
    pub files: usize,
}

type Table<'a> = HashMap<&'a [u8], (Kind, Sums)>;

/// Checks the inputs agree on their headers, then sums them in parallel.
pub fn merge(sources: &Sources) -> Result<Merged<'_>> {
    let header = merged_header(sources)?;
    let table = sum_in_parallel(sources)?;
    let mut lines: Vec<_> = table
        .into_iter()
        .map(|(key, (kind, sums))| (key, kind, sums))
        .collect();
    lines.par_sort_unstable_by(|a, b| a.0.cmp(b.0));
    Ok(Merged {
        header,
        lines,
        files: sources.len(),
    })
}

/// The header of the first input with any content; every other such input must match it.
fn merged_header(sources: &Sources) -> Result<MergedHeader> {
    let mut first: Option<(&Path, bool, bool)> = None;
    let mut merged = MergedHeader::default();
    for (path, contents) in &sources.files {
        let bytes = contents.bytes();
        check_not_yaml(path, bytes, first.is_some())?;
        let reader = FdataReader::new(bytes).map_err(|source| MergeError::Parse {
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
fn sum_in_parallel(sources: &Sources) -> Result<Table<'_>> {
    let first_broken = AtomicUsize::new(usize::MAX);
    let errors = Mutex::new(Vec::new());
    let table = sources
        .files
        .par_iter()
        .enumerate()
        .fold(Table::new, |mut table, (index, (path, contents))| {
            if index > first_broken.load(Ordering::Relaxed) {
                return table;
            }
            if let Err(source) = add_file(&mut table, contents.bytes()) {
                first_broken.fetch_min(index, Ordering::Relaxed);
                let error = MergeError::Parse {
                    path: path.clone(),
                    source,
                };
                errors
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((index, error));
            }
            table
        })
        .reduce(Table::new, add_tables);
    let errors = errors.into_inner().unwrap_or_else(|e| e.into_inner());
    match errors.into_iter().min_by_key(|(index, _)| *index) {
        Some((_, error)) => Err(error),
        None => Ok(table),
    }
}

fn add_file<'a>(table: &mut Table<'a>, bytes: &'a [u8]) -> std::result::Result<(), FdataError> {
    for entry in FdataReader::new(bytes)? {
        let entry = entry?;
        let (kind, sums) = kind_and_sums(&entry);
        // A key's tags and field count fix its kind, so the first one seen stands.
        table.entry(entry.key).or_insert((kind, Sums::default())).1 += sums;
    }
    Ok(())
}

fn kind_and_sums(entry: &Entry) -> (Kind, Sums) {
    match entry.record {
        Record::Branch {
            mispreds, count, ..
        } => (
            Kind::Branch,
            Sums {
                mispreds: mispreds.into(),
                count: count.into(),
            },
        ),
        Record::Sample { count, .. } => (Kind::Sample, Sums::counted(count)),
        Record::Memory { count, .. } => (Kind::Memory, Sums::counted(count)),
    }
}

impl Sums {
    fn counted(count: i64) -> Self {
        Sums {
            mispreds: 0,
            count: count.into(),
        }
    }
}

/// Adds the smaller table into the larger.
fn add_tables<'a>(a: Table<'a>, b: Table<'a>) -> Table<'a> {
    let (mut big, small) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    for (key, (kind, sums)) in small {
        big.entry(key).or_insert((kind, Sums::default())).1 += sums;
    }
    big
}

impl Merged<'_> {
    /// Writes the merged fdata; returns how many sums exceeded `i64` and were clamped to it
    /// (llvm-bolt reads counts as `int64_t`).
    pub fn write(&self, out: &mut dyn Write) -> io::Result<usize> {
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
        let mut clamped = 0;
        let mut number = |out: &mut dyn Write, v: i128| {
            let v64 = i64::try_from(v).unwrap_or_else(|_| {
                clamped += 1;
                if v < 0 {
                    i64::MIN
                } else {
                    i64::MAX
                }
            });
            out.write_all(b" ")?;
            out.write_all(itoa::Buffer::new().format(v64).as_bytes())
        };
        for &(key, kind, sums) in &self.lines {
            out.write_all(key)?;
            if kind == Kind::Branch {
                number(out, sums.mispreds)?;
            }
            number(out, sums.count)?;
            out.write_all(b"\n")?;
        }
        Ok(clamped)
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
            ("empty", ""),
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
    fn wide_sums_are_clamped_to_i64() {
        let line = format!("1 f 0 1 g 0 0 {}\n", i64::MAX);
        let sources = Sources {
            files: vec![
                (
                    PathBuf::from("a"),
                    Contents::Read(line.clone().into_bytes()),
                ),
                (PathBuf::from("b"), Contents::Read(line.into_bytes())),
            ],
        };
        let merged = merge(&sources).unwrap();
        assert_eq!(merged.lines[0].2.count, 2 * i128::from(i64::MAX));
        let mut out = Vec::new();
        assert_eq!(merged.write(&mut out).unwrap(), 1);
        assert_eq!(out, format!("1 f 0 1 g 0 0 {}\n", i64::MAX).into_bytes());
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
