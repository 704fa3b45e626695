//! LLVM raw binary and ExtBinary: our writers against `llvm-profdata-19 merge --sample`
//! (`--binary`, `--extbinary`, `--use-md5`, `--compress-all-sections`) byte for byte on every
//! sample profile of the corpus that llvm-profdata accepts, and our readers on llvm-profdata's
//! binary output of each of them.
//!
//! The one documented difference: LLVM orders the FuncMetadata section by its hash map; when
//! the bytes differ only there, both files must have the same size and read back (with our
//! reader and with llvm-profdata's text output) to the same profile.

use std::path::Path;

use crate::sampleprof_common::*;
use formats::sampleprof::binary::{self, ExtBinaryOptions};
use formats::sampleprof::{self as sp, text, Profile};
use testsupport::{first_difference, have_tool, LLVM_PROFDATA_19 as LLVM_PROFDATA};

fn write_with(p: &Profile, args: &[&str]) -> Result<Vec<u8>, sp::Error> {
    let mut out = Vec::new();
    match args.first().copied() {
        Some("--text") => text::write(p, &mut out)?,
        Some("--binary") => binary::write_raw(p, &mut out)?,
        _ => {
            let opts = ExtBinaryOptions {
                use_md5: args.contains(&"--use-md5"),
                compress_all: args.contains(&"--compress-all-sections"),
                partial: args.contains(&"--gen-partial-profile"),
                split_layout: false,
            };
            binary::write_ext(p, &opts, &mut out)?
        }
    }
    Ok(out)
}

/// Whether two ExtBinary files differ only in the order of FuncMetadata records (the last
/// section written; compressed, its size may differ too).
fn same_but_metadata_order(ours: &[u8], theirs: &[u8]) -> bool {
    let (Ok(a), Ok(b)) = (
        binary::read_section_table(ours),
        binary::read_section_table(theirs),
    ) else {
        return false;
    };
    let section = |f: &[u8], e: &binary::SectionEntry| {
        f[e.offset as usize..(e.offset + e.size) as usize].to_vec()
    };
    let others_equal = a.len() == b.len()
        && a.iter().zip(&b).all(|(x, y)| {
            x.kind == y.kind
                && x.flags == y.flags
                && (x.kind == binary::sec::FUNC_METADATA
                    || (x.offset == y.offset && section(ours, x) == section(theirs, y)))
        });
    let compressed = a.iter().any(|e| e.flags & binary::flag::COMPRESS != 0);
    others_equal
        && (compressed || ours.len() == theirs.len())
        && sp::read(ours).unwrap() == sp::read(theirs).unwrap()
}

const VARIANTS: &[&[&str]] = &[
    &["--text"],
    &["--binary"],
    &["--extbinary"],
    &["--extbinary", "--use-md5"],
    &["--extbinary", "--compress-all-sections"],
    &["--extbinary", "--use-md5", "--compress-all-sections"],
    &["--extbinary", "--gen-partial-profile"],
];

/// Our output for every variant equals llvm-profdata's; returns how many matched exactly.
fn check_all_variants(input: &Path, profile: &Profile, dir: &Path) -> usize {
    let mut exact = 0;
    for args in VARIANTS {
        let reference = llvm_merge(input, args, &dir.join("ref.out"));
        let ours = write_with(profile, args);
        match (ours, reference) {
            (Ok(o), Ok(r)) if o == r => exact += 1,
            (Ok(o), Ok(r)) => assert!(
                args[0] == "--extbinary" && same_but_metadata_order(&o, &r),
                "{} {args:?}: {} bytes vs llvm's {}",
                input.display(),
                o.len(),
                r.len()
            ),
            (Err(_), Err(_)) => {}
            (Ok(_), Err(r)) => panic!("{} {args:?}: llvm refuses ({r}), we write", input.display()),
            (Err(e), Ok(_)) => panic!("{} {args:?}: we refuse ({e}), llvm writes", input.display()),
        }
    }
    exact
}

#[test]
fn corpus_sample_profiles_all_encodings() {
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (mut accepted, mut exact) = (0, 0);
    for f in corpus_files() {
        if llvm_merge(&f, &["--text"], &dir.path().join("probe.txt")).is_err() {
            continue;
        }
        let data = std::fs::read(&f).unwrap();
        let Some(format) = sp::detect(&data) else {
            // GCC gcov inputs are read by the gcov module's tests.
            continue;
        };
        let profile =
            sp::read(&data).unwrap_or_else(|e| panic!("{} ({format:?}): {e}", f.display()));
        accepted += 1;
        exact += check_all_variants(&f, &profile, dir.path());

        // Our readers on llvm-profdata's binaries of the same profile.
        for args in [
            &["--binary"][..],
            &["--extbinary"],
            &["--extbinary", "--compress-all-sections"],
            &["--extbinary", "--use-md5"],
        ] {
            let bin = dir.path().join("llvm.bin");
            let Ok(bytes) = llvm_merge(&f, args, &bin) else {
                continue;
            };
            let back = sp::read(&bytes)
                .unwrap_or_else(|e| panic!("{} {args:?}: our reader: {e}", f.display()));
            let ours = write_with(&back, &["--text"]).unwrap();
            let theirs = llvm_merge(&bin, &["--text"], &dir.path().join("llvm.txt")).unwrap();
            assert!(
                ours == theirs,
                "{} {args:?} read back: {}",
                f.display(),
                first_difference(&ours, &theirs)
            );
        }
    }
    if corpus_dir().is_some() {
        assert!(accepted >= 30, "only {accepted} corpus sample profiles");
        eprintln!("{accepted} profiles, {exact} byte-identical outputs");
    }
}

#[test]
fn malformed_binaries_give_errors() {
    let mut good = Vec::new();
    let p = text::read(b"main:100:1\n 1: 50 foo:20\n 2: bar:50\n  1: 50\n").unwrap();
    binary::write_ext(&p, &ExtBinaryOptions::default(), &mut good).unwrap();
    assert_eq!(sp::read(&good).unwrap(), p);
    // Every truncation fails cleanly (or, cut inside trailing empty sections, still reads).
    for len in 0..good.len() {
        let _ = sp::read(&good[..len]);
    }
    let e = sp::read(&good[..good.len() - 3]).unwrap_err();
    assert!(e.to_string().contains("byte offset"), "{e}");
    // A name index past the table.
    let mut raw = Vec::new();
    binary::write_raw(&p, &mut raw).unwrap();
    let last = raw.len() - 1;
    let mut bad = raw.clone();
    bad[last] = 0x7f;
    let _ = sp::read(&bad);
    for i in 0..raw.len() {
        let mut b = raw.clone();
        b[i] ^= 0xff;
        let _ = sp::read(&b);
    }
}
