//! LLVM 19's `merge-fdata` on fdata (`mergeLegacyProfiles`), which differs from LLVM 22's
//! ([`super::fdata_merge`]): a line's key is everything before its last space, so the
//! misprediction count of a branch line is part of the key. Equal branches with different
//! misprediction counts stay separate lines (`… 0 14 94` and `… 0 2 9`, where LLVM 22 prints
//! `… 0 16 103`), only the last field is summed (as `uint64_t`, wrapping), `no_lbr` headers are
//! "malformed" (their last field is not a number), and `boltedcollection` must be on all inputs
//! or none. LLVM prints in `StringMap` order; we print the lines sorted bytewise.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Why LLVM 19's merge-fdata refuses an input (its messages).
#[derive(Debug)]
pub enum Legacy19Error {
    /// The file cannot be read.
    Io(PathBuf, io::Error),
    /// A message LLVM 19 reports for the file.
    Refused(PathBuf, &'static str),
}

impl std::fmt::Display for Legacy19Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Legacy19Error::Io(path, e) => write!(f, "'{}': {e}.", path.display()),
            Legacy19Error::Refused(path, why) => write!(f, "'{}': {why}.", path.display()),
        }
    }
}

impl std::error::Error for Legacy19Error {}

/// The merged profile.
pub struct Legacy19 {
    bolted: bool,
    lines: BTreeMap<Vec<u8>, u64>,
}

/// Merges `files` as LLVM 19's merge-fdata does.
pub fn merge_legacy_19(files: &[PathBuf]) -> Result<Legacy19, Legacy19Error> {
    let mut merged = Legacy19 {
        bolted: false,
        lines: BTreeMap::new(),
    };
    for (i, path) in files.iter().enumerate() {
        let data = crate::io::input::read(path).map_err(|e| Legacy19Error::Io(path.clone(), e))?;
        merged.add(path, &data, i == 0)?;
    }
    Ok(merged)
}

impl Legacy19 {
    fn add(&mut self, path: &Path, data: &[u8], first: bool) -> Result<(), Legacy19Error> {
        let refuse = |why| Legacy19Error::Refused(path.to_path_buf(), why);
        if data.starts_with(b"---\n") {
            return Err(refuse("cannot mix YAML and legacy formats"));
        }
        let mixed = "cannot mix profile collected in BOLT and non-BOLT deployments";
        let body = match data.strip_prefix(b"boltedcollection\n") {
            Some(rest) => {
                if !first && !self.bolted {
                    return Err(refuse(mixed));
                }
                self.bolted = true;
                rest
            }
            None if self.bolted => return Err(refuse(mixed)),
            None => data,
        };
        // `SplitString` on '\n' skips empty pieces.
        for line in body.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let Some(space) = line.iter().rposition(|&b| b == b' ') else {
                return Err(refuse("Malformed / corrupted profile"));
            };
            let count = std::str::from_utf8(&line[space + 1..])
                .ok()
                .and_then(|c| c.parse::<u64>().ok())
                .ok_or_else(|| refuse("Malformed / corrupted profile counter"))?;
            let sum = self.lines.entry(line[..space].to_vec()).or_insert(0);
            *sum = sum.wrapping_add(count);
        }
        Ok(())
    }

    /// Writes the merged profile: `boltedcollection` if the inputs had it, then every key and
    /// its sum, sorted.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.bolted {
            out.write_all(b"boltedcollection\n")?;
        }
        for (key, count) in &self.lines {
            out.write_all(key)?;
            writeln!(out, " {count}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(inputs: &[&str]) -> Result<String, String> {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<PathBuf> = inputs
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let p = dir.path().join(format!("{i}.fdata"));
                std::fs::write(&p, text).unwrap();
                p
            })
            .collect();
        let m = merge_legacy_19(&files).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        m.write(&mut out).unwrap();
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn mispredictions_are_part_of_the_key() {
        assert_eq!(
            merged(&["1 a 1 1 b 0 14 94\n", "1 a 1 1 b 0 2 9\n1 a 1 1 b 0 14 6\n"]).unwrap(),
            "1 a 1 1 b 0 14 100\n1 a 1 1 b 0 2 9\n"
        );
    }

    #[test]
    fn headers_as_llvm_19_reads_them() {
        assert!(merged(&["no_lbr cycles:\n1 main 10 5\n"])
            .unwrap_err()
            .ends_with("Malformed / corrupted profile counter."));
        assert!(
            merged(&["1 a 1 1 b 0 0 1\n", "boltedcollection\n1 a 1 1 b 0 0 1\n"])
                .unwrap_err()
                .contains("cannot mix profile collected in BOLT and non-BOLT deployments")
        );
        assert_eq!(
            merged(&[
                "boltedcollection\n1 a 1 1 b 0 0 1\n",
                "boltedcollection\n1 a 1 1 b 0 0 2\n"
            ])
            .unwrap(),
            "boltedcollection\n1 a 1 1 b 0 0 3\n"
        );
    }
}
