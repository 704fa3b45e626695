//! Helpers for the sample-profile differential tests: locating llvm-profdata-19 and the
//! shared corpus, running the tool.
#![allow(dead_code)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub const LLVM_PROFDATA: &str = "/usr/lib/llvm-19/bin/llvm-profdata";

/// Whether a reference tool is installed. A missing tool fails the test (CI installs them all)
/// unless PROFMILL_SKIP_EXTERNAL=1 asks to skip such tests on a bare machine.
pub fn have_tool(path: &str) -> bool {
    if std::env::var("PROFMILL_SKIP_EXTERNAL").as_deref() == Ok("1") {
        eprintln!("skipping: external tools disabled (PROFMILL_SKIP_EXTERNAL=1)");
        return false;
    }
    let found = if path.contains('/') {
        Path::new(path).exists()
    } else {
        Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {path}"))
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    assert!(
        found,
        "reference tool {path} is not installed; run .ci/run, or set PROFMILL_SKIP_EXTERNAL=1 to skip"
    );
    true
}

pub fn corpus_dir() -> Option<PathBuf> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/corpus/llvm-profdata"
    ));
    if dir.is_dir() {
        Some(dir.to_path_buf())
    } else {
        eprintln!("skipping: {} is missing", dir.display());
        None
    }
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

pub fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// `llvm-profdata-19 merge --sample ARGS INPUT -o OUT`: the output bytes, or stderr on failure.
pub fn llvm_merge(input: &Path, args: &[&str], out: &Path) -> Result<Vec<u8>, String> {
    let o = run(Command::new(LLVM_PROFDATA)
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

/// Shows the first differing line of two texts.
pub fn first_difference(a: &[u8], b: &[u8]) -> String {
    let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}: ours {x:?} vs llvm {y:?}", i + 1);
        }
    }
    format!("{} lines vs {} lines", a.lines().count(), b.lines().count())
}
