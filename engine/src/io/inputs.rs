//! Weighted input lists as llvm-profdata reads them: positional files, `W,FILE` weights, `-f`
//! list files, directories expanded recursively. Every `merge` (instrumentation, sample
//! profiles, profile stores) collects its inputs here.

use std::fmt;
use std::path::{Path, PathBuf};

/// One input and its weight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightedInput {
    /// The file (`-` is standard input where the caller allows it).
    pub path: PathBuf,
    /// Its counts are multiplied by this (at least 1).
    pub weight: u64,
}

/// The name that stands for standard input.
pub const STDIN: &str = "-";

/// Whether an input named `-` is standard input.
#[derive(Clone, Copy, Debug)]
pub enum Stdin {
    /// Accepted as an input.
    Read,
    /// Refused with this message.
    Refused(&'static str),
}

/// What to do with an input named on the command line (or in a list file) that is neither a
/// file nor a directory: a pipe (`<(…)`), a device. Inside directories such entries are
/// always skipped.
#[derive(Clone, Copy, Debug)]
pub enum SpecialFiles {
    /// Skipped without a word, as llvm-profdata's `addWeightedInput` skips them.
    Skip,
    /// Kept as inputs (for readers that read a pipe whole).
    Keep,
    /// Refused: the message says why.
    Refuse(&'static str),
}

/// Why the inputs could not be collected; the messages are llvm-profdata's.
#[derive(Debug)]
#[non_exhaustive]
pub enum InputsError {
    /// A weight that is not a positive integer.
    Weight,
    /// An input that does not exist.
    Missing(PathBuf),
    /// `-` where the caller refuses standard input (its message).
    Stdin(&'static str),
    /// A directory or list file that could not be read.
    Io {
        /// The directory or list file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Nothing to merge (the command line that shows the command's help, for the hint).
    NoInputs(&'static str),
    /// An input that is neither a file nor a directory, where the caller refuses those.
    Special {
        /// The input.
        path: PathBuf,
        /// What it is ("a pipe").
        kind: &'static str,
        /// Why the caller refuses it.
        why: &'static str,
    },
}

impl fmt::Display for InputsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputsError::Weight => f.write_str("input weight must be a positive integer"),
            InputsError::Missing(p) => write!(f, "{}: No such file or directory", p.display()),
            InputsError::Stdin(why) => f.write_str(why),
            InputsError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            InputsError::NoInputs(help) => write!(f, "no input files specified. See {help}"),
            InputsError::Special { path, kind, why } => {
                write!(
                    f,
                    "{}: is {kind}, not a regular file: {why}",
                    path.display()
                )
            }
        }
    }
}

impl std::error::Error for InputsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InputsError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// `W,FILE` (a missing file part is an empty name, as LLVM splits it).
fn parse_weighted(entry: &str) -> Result<(String, u64), InputsError> {
    let (w, file) = entry.split_once(',').unwrap_or((entry, ""));
    match formats::instrprof::text::parse_unsigned(w.as_bytes(), 10) {
        Some(w) if w >= 1 => Ok((file.to_string(), w)),
        _ => Err(InputsError::Weight),
    }
}

/// `addWeightedInput`: files as given, directories expanded recursively in directory order;
/// `-` (standard input) only where the caller reads it.
fn add_input(
    inputs: &mut Vec<WeightedInput>,
    path: &Path,
    weight: u64,
    (stdin, special): (Stdin, SpecialFiles),
) -> Result<(), InputsError> {
    if path.as_os_str() == STDIN {
        if let Stdin::Refused(why) = stdin {
            return Err(InputsError::Stdin(why));
        }
        inputs.push(WeightedInput {
            path: path.to_path_buf(),
            weight,
        });
        return Ok(());
    }
    let meta = std::fs::metadata(path).map_err(|_| InputsError::Missing(path.to_path_buf()))?;
    if meta.is_file() {
        inputs.push(WeightedInput {
            path: path.to_path_buf(),
            weight,
        });
    } else if meta.is_dir() {
        add_directory(inputs, path, weight)?;
    } else {
        match special {
            SpecialFiles::Skip => {}
            SpecialFiles::Keep => inputs.push(WeightedInput {
                path: path.to_path_buf(),
                weight,
            }),
            SpecialFiles::Refuse(why) => {
                return Err(InputsError::Special {
                    path: path.to_path_buf(),
                    kind: crate::io::input::special_kind(meta.file_type()),
                    why,
                })
            }
        }
    }
    Ok(())
}

fn add_directory(
    inputs: &mut Vec<WeightedInput>,
    dir: &Path,
    weight: u64,
) -> Result<(), InputsError> {
    let io = |source| InputsError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let path = entry.path();
        // The entry's own type comes with the directory listing (where the file system gives
        // none, std asks with an `lstat`); only a link costs a `stat`, which follows it. A merge
        // of a directory of 1,000 stores made 1,000 `stat` calls before opening any.
        let kind = match entry.file_type() {
            Ok(t) if !t.is_symlink() => Ok(t),
            _ => std::fs::metadata(&path).map(|m| m.file_type()),
        };
        match kind {
            Ok(t) if t.is_file() => inputs.push(WeightedInput { path, weight }),
            Ok(t) if t.is_dir() => add_directory(inputs, &path, weight)?,
            _ => {}
        }
    }
    Ok(())
}

/// The inputs of a merge in llvm-profdata's order, so that errors come in its order too:
/// positional files (weight 1), `weighted` `W,FILE` entries, then the lines of the `list`
/// file (`#` comments skipped, `W,FILE` or `FILE`). `help` is the command line that shows
/// the command's help, for the hint when nothing is left (`llvm-profdata merge -help` in
/// LLVM's message).
pub fn collect_weighted_inputs(
    positional: &[String],
    weighted: &[String],
    list: Option<&str>,
    (stdin, special): (Stdin, SpecialFiles),
    help: &'static str,
) -> Result<Vec<WeightedInput>, InputsError> {
    let mut inputs = Vec::new();
    let rules = (stdin, special);
    let mut add = |file: &str, weight| add_input(&mut inputs, Path::new(file), weight, rules);
    for p in positional {
        add(p, 1)?;
    }
    for w in weighted {
        let (file, weight) = parse_weighted(w)?;
        add(&file, weight)?;
    }
    if let Some(list) = list {
        let text = std::fs::read_to_string(list).map_err(|source| InputsError::Io {
            path: PathBuf::from(list),
            source,
        })?;
        for line in text.split('\n').filter(|l| !l.is_empty()) {
            let entry = line.trim_matches([' ', '\t', '\x0b', '\x0c', '\r']);
            if entry.starts_with('#') {
                continue;
            }
            let (file, weight) = if entry.contains(',') {
                parse_weighted(entry)?
            } else {
                (entry.to_string(), 1)
            };
            add(&file, weight)?;
        }
    }
    if inputs.is_empty() {
        return Err(InputsError::NoInputs(help));
    }
    Ok(inputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory expands to its files and its subdirectories' files, links followed to
    /// either (as llvm-profdata's `status`, which follows them); a dangling link is skipped.
    #[cfg(unix)]
    #[test]
    fn directories_expand_to_files_through_links() {
        use std::os::unix::fs::symlink;
        let d = tempfile::tempdir().unwrap();
        let (top, elsewhere) = (d.path().join("top"), d.path().join("elsewhere"));
        std::fs::create_dir_all(top.join("sub")).unwrap();
        std::fs::create_dir_all(elsewhere.join("linked")).unwrap();
        for f in [top.join("a"), top.join("sub/b")] {
            std::fs::write(f, "x").unwrap();
        }
        std::fs::write(elsewhere.join("c"), "x").unwrap();
        std::fs::write(elsewhere.join("linked/d"), "x").unwrap();
        symlink(elsewhere.join("c"), top.join("to-file")).unwrap();
        symlink(elsewhere.join("linked"), top.join("to-dir")).unwrap();
        symlink(d.path().join("nothing"), top.join("dangling")).unwrap();
        let top_name = top.to_str().unwrap().to_string();
        let inputs = collect_weighted_inputs(
            &[top_name],
            &[],
            None,
            (Stdin::Read, SpecialFiles::Skip),
            "test",
        )
        .unwrap();
        let mut got: Vec<_> = inputs
            .iter()
            .map(|i| i.path.strip_prefix(&top).unwrap().to_path_buf())
            .collect();
        got.sort();
        let want = ["a", "sub/b", "to-dir/d", "to-file"].map(PathBuf::from);
        assert_eq!(got, want);
    }
}
