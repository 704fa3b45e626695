//! Helpers for the sample-profile differential tests: the llvm-profdata corpus, one file per
//! distinct content, and llvm-profdata-19's merge. Tool paths and the skip policy are in
//! `testsupport`.
#![allow(dead_code)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use testsupport::{run, LLVM_PROFDATA_19};

/// `../shared/corpus/llvm-profdata`, or `None` (with a note) where it is missing.
pub fn corpus_dir() -> Option<PathBuf> {
    testsupport::llvm_profdata_corpus()
}

/// Every corpus file (all LLVM releases), one per distinct content, in path order.
pub fn corpus_files() -> Vec<PathBuf> {
    let Some(dir) = corpus_dir() else {
        return Vec::new();
    };
    let mut files = Vec::new();
    for release in std::fs::read_dir(&dir).unwrap() {
        let release = release.unwrap().path();
        if !release.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&release).unwrap() {
            let p = f.unwrap().path();
            if p.is_file() {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut seen = HashSet::new();
    files.retain(|p| seen.insert(std::fs::read(p).unwrap()));
    files
}

/// `llvm-profdata-19 merge --sample ARGS INPUT -o OUT`: the output bytes, or stderr on failure.
pub fn llvm_merge(input: &Path, args: &[&str], out: &Path) -> Result<Vec<u8>, String> {
    let o = run(Command::new(LLVM_PROFDATA_19)
        .args(["merge", "--sample"])
        .args(args)
        .arg(input)
        .arg("-o")
        .arg(out));
    if o.status.success() {
        Ok(std::fs::read(out).unwrap())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}
