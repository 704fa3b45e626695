//! Deterministic generator of BOLT fdata profiles, for merge tests and benchmarks.
//!
//! Each file draws its lines from one shared pool of locations, so keys overlap heavily
//! across files and repeat within files. Names cover what real profiles contain: plain and
//! C++ symbols, local symbols `name/N`, PLT stubs `sym@PLT`, names with spaces and
//! backslashes (written escaped, `\ ` and `\\`), `[unknown]` and DSO paths with tag 0. The
//! text is formatted here, independently of `formats`' writer, so tests of the reader and of
//! the merge do not lean on our own writer.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::rng::Rng;

/// What the fdata generator writes: how many files of how many lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FdataSpec {
    /// Seed of every random choice.
    pub seed: u64,
    /// Number of files.
    pub files: usize,
    /// Data lines per file (before the headers).
    pub lines_per_file: usize,
    /// Distinct function names in the pool (the fixed special names come on top).
    pub functions: usize,
    /// Size of the pool of keys (location pairs, or single locations for `no_lbr`) that
    /// lines are drawn from, hot keys more often: bounds the distinct keys of the merge.
    pub distinct_keys: usize,
    /// Write a `boltedcollection` header.
    pub bolted: bool,
    /// `Some(events)`: a basic-sample (`no_lbr`) profile with these event names.
    pub no_lbr: Option<Vec<String>>,
    /// Percent of lines that are memory-access lines (tags 3/4).
    pub memory_percent: u32,
}

impl Default for FdataSpec {
    fn default() -> Self {
        FdataSpec {
            seed: 1,
            files: 8,
            lines_per_file: 200,
            functions: 40,
            distinct_keys: 300,
            bolted: false,
            no_lbr: None,
            memory_percent: 5,
        }
    }
}

/// Names every pool starts with (unescaped); `[unknown]` and the DSO are tag 0.
const SPECIAL_NAMES: &[&str] = &[
    "main",
    "cmp/1",
    "rarely/2",
    "qsort@PLT",
    "_ZN4core3fmt5write17h0123456789abcdefE",
    "operator new(unsigned long)",
    "back\\slash name",
    "frame_dummy/1",
];
const UNKNOWN: &str = "[unknown]";
const DSO: &str = "/lib/x86_64-linux-gnu/libc.so.6";

/// A location as (tag, escaped name, offset).
type Loc = (u8, String, u64);

struct Pool {
    names: Vec<String>,
    offsets: u64,
    keys: Vec<(Loc, Loc)>,
    memory_keys: Vec<(Loc, Loc)>,
}

impl Pool {
    fn new(spec: &FdataSpec, rng: &mut Rng) -> Self {
        let mut names: Vec<String> = SPECIAL_NAMES.iter().map(|n| escape(n)).collect();
        for i in 0..spec.functions {
            let name = match rng.below(4) {
                0 => format!("fn_{i}"),
                1 => format!("local_{i}/{}", 1 + rng.below(3)),
                2 => format!("_Z{}f{i}v", 2 + i.to_string().len()),
                _ => format!("helper{i}@PLT"),
            };
            names.push(name);
        }
        let mut pool = Pool {
            names,
            offsets: 64,
            keys: Vec::new(),
            memory_keys: Vec::new(),
        };
        let n = spec.distinct_keys.max(1);
        pool.keys = (0..n)
            .map(|_| (pool.location(rng, 0), pool.location(rng, 0)))
            .collect();
        pool.memory_keys = (0..n.div_ceil(10))
            .map(|_| (pool.location(rng, 3), pool.location(rng, 3)))
            .collect();
        pool
    }

    /// A branch-side location: mostly symbols (tag 1, sometimes 2), some tag-0 ends.
    fn location(&self, rng: &mut Rng, tag_base: u8) -> Loc {
        let roll = rng.below(100);
        if roll < 4 {
            return (
                tag_base,
                UNKNOWN.into(),
                self.offset(rng) * 0x1000 + 0x7f00_0000_0000,
            );
        }
        if roll < 6 {
            return (tag_base, DSO.into(), self.offset(rng) * 0x40);
        }
        let tag = tag_base + if roll < 10 { 2 } else { 1 };
        let name = self.names[rng.skewed(self.names.len(), 2)].clone();
        (tag, name, self.offset(rng) * 3)
    }

    fn offset(&self, rng: &mut Rng) -> u64 {
        rng.below(self.offsets)
    }
}

/// LLVM's `getEscapedName`: a backslash before each space and backslash.
fn escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    for c in name.chars() {
        if c == ' ' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn write_loc(out: &mut impl Write, (tag, name, offset): &Loc) -> io::Result<()> {
    write!(out, "{tag} {name} {offset:x}")
}

/// The contents of every file of `spec`, in order.
pub fn fdata_files(spec: &FdataSpec) -> Vec<Vec<u8>> {
    let mut rng = Rng::fork(spec.seed, 0xfda7a);
    let pool = Pool::new(spec, &mut rng);
    (0..spec.files)
        .map(|i| {
            let mut rng = Rng::fork(spec.seed, i as u64 + 1);
            let mut out = Vec::new();
            write_file(&mut out, spec, &pool, &mut rng).expect("writing to a Vec cannot fail");
            out
        })
        .collect()
}

/// Writes the files of `spec` into `dir` as `profile-NNNN.fdata`; returns their paths.
pub fn write_fdata_files(dir: &Path, spec: &FdataSpec) -> io::Result<Vec<PathBuf>> {
    fdata_files(spec)
        .into_iter()
        .enumerate()
        .map(|(i, bytes)| {
            let path = dir.join(format!("profile-{i:04}.fdata"));
            std::fs::write(&path, bytes)?;
            Ok(path)
        })
        .collect()
}

fn write_file(out: &mut Vec<u8>, spec: &FdataSpec, pool: &Pool, rng: &mut Rng) -> io::Result<()> {
    if spec.bolted {
        out.extend_from_slice(b"boltedcollection\n");
    }
    if let Some(events) = &spec.no_lbr {
        out.extend_from_slice(b"no_lbr");
        for event in events {
            write!(out, " {event}")?;
        }
        out.push(b'\n');
    }
    for _ in 0..spec.lines_per_file {
        let count = 1 + rng.below(1000) * rng.below(3);
        if rng.percent(spec.memory_percent) {
            let (pc, addr) = &pool.memory_keys[rng.skewed(pool.memory_keys.len(), 2)];
            write_loc(out, pc)?;
            out.push(b' ');
            write_loc(out, addr)?;
            writeln!(out, " {count}")?;
            continue;
        }
        let (from, to) = &pool.keys[rng.skewed(pool.keys.len(), 2)];
        write_loc(out, from)?;
        if spec.no_lbr.is_some() {
            writeln!(out, " {count}")?;
        } else {
            out.push(b' ');
            write_loc(out, to)?;
            let mispreds = rng.below(count + 1) / 4;
            writeln!(out, " {mispreds} {count}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_spec_same_bytes_and_keys_overlap() {
        let spec = FdataSpec::default();
        let a = fdata_files(&spec);
        assert_eq!(a, fdata_files(&spec));
        assert_ne!(a[0], a[1]);
        let keys = |bytes: &[u8]| -> std::collections::HashSet<String> {
            String::from_utf8_lossy(bytes)
                .lines()
                .map(|l| l.rsplitn(3, ' ').last().unwrap().to_owned())
                .collect()
        };
        let (k0, k1) = (keys(&a[0]), keys(&a[1]));
        assert!(k0.intersection(&k1).count() > 10, "files share few keys");
        let text = String::from_utf8_lossy(&a.concat()).into_owned();
        for needle in [
            "back\\\\slash\\ name",
            "operator\\ new",
            "[unknown]",
            "cmp/1",
            "@PLT",
            "\n2 ",
            "\n4 ",
        ] {
            assert!(
                text.contains(needle),
                "no {needle:?} in the generated files"
            );
        }
    }

    #[test]
    fn headers_follow_the_spec() {
        let spec = FdataSpec {
            bolted: true,
            no_lbr: Some(vec!["cycles:u:".into()]),
            files: 1,
            lines_per_file: 3,
            memory_percent: 0,
            ..FdataSpec::default()
        };
        let text = String::from_utf8(fdata_files(&spec).remove(0)).unwrap();
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(&lines[..2], ["boltedcollection", "no_lbr cycles:u:"]);
        let fields = |l: &str| {
            l.replace("\\\\", "_")
                .replace("\\ ", "_")
                .split(' ')
                .count()
        };
        assert_eq!(lines.len(), 5);
        assert!(lines[2..].iter().all(|l| fields(l) == 4), "{lines:?}");
    }
}
