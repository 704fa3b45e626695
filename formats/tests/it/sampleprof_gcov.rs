//! GCC AutoFDO gcov: our reader on the corpus gcov file against llvm-profdata-19; our `407*`
//! output read by llvm-profdata-19 and by autofdo's dump_gcov; v1/v2/v3 round trips.

use std::process::Command;

use crate::sampleprof_common::*;
use formats::sampleprof::gcov::{self, Version};
use formats::sampleprof::{self as sp, text, Profile};
use testsupport::{
    first_difference, have_tool, run, sorted_lines, LLVM_PROFDATA_19 as LLVM_PROFDATA,
};

fn to_text(p: &Profile) -> Vec<u8> {
    let mut out = Vec::new();
    text::write(p, &mut out).unwrap();
    out
}

fn to_gcov(p: &Profile, v: Version) -> Vec<u8> {
    let mut out = Vec::new();
    gcov::write(p, v, &mut out).unwrap();
    out
}

fn dump_gcov(path: &std::path::Path) -> Vec<String> {
    let o = run(Command::new("dump_gcov").arg(path));
    assert!(
        o.status.success(),
        "dump_gcov {}: {}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    sorted_lines(&o.stdout)
}

/// Sample profiles of the corpus that llvm-profdata accepts and gcov can hold (no contexts).
fn corpus_profiles(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Profile)> {
    corpus_files()
        .into_iter()
        .filter(|f| llvm_merge(f, &["--text"], &dir.join("probe.txt")).is_ok())
        .filter_map(|f| {
            let p = sp::read(&std::fs::read(&f).unwrap()).ok()?;
            (!p.kind.cs).then_some((f, p))
        })
        .collect()
}

#[test]
fn corpus_gcov_reads_like_llvm_profdata() {
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for f in corpus_files() {
        let data = std::fs::read(&f).unwrap();
        if gcov::detect(&data).is_none() {
            continue;
        }
        seen += 1;
        let ours = to_text(&gcov::read(&data).unwrap());
        let theirs = llvm_merge(&f, &["--text"], &dir.path().join("t.txt")).unwrap();
        assert!(
            ours == theirs,
            "{}: {}",
            f.display(),
            first_difference(&ours, &theirs)
        );
    }
    if corpus_dir().is_some() {
        assert!(seen >= 1);
    }
}

#[test]
fn our_407_output_reads_back_in_llvm_profdata_and_dump_gcov() {
    if !have_tool(LLVM_PROFDATA) || !have_tool("dump_gcov") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut n = 0;
    for (f, p) in corpus_profiles(dir.path()) {
        // Pseudo-probe checksums have no place in gcov; line counts must still carry over.
        let mut bytes = Vec::new();
        if let Err(e) = gcov::write(&p, Version::V407, &mut bytes) {
            // Discriminators above 16 bits (FS-AFDO) do not fit gcov's location word.
            assert!(
                matches!(e, sp::Error::UnsupportedForWriting(_)),
                "{}: {e}",
                f.display()
            );
            continue;
        }
        let path = dir.path().join("ours.afdo");
        std::fs::write(&path, &bytes).unwrap();
        let back = gcov::read(&bytes).unwrap();
        let theirs = llvm_merge(&path, &["--text"], &dir.path().join("t.txt"))
            .unwrap_or_else(|e| panic!("{}: llvm-profdata refuses our gcov: {e}", f.display()));
        let ours = to_text(&back);
        assert!(
            ours == theirs,
            "{}: {}",
            f.display(),
            first_difference(&ours, &theirs)
        );
        // dump_gcov prints the same instances for our file as for the gcov llvm-profdata
        // sees; at least it must parse it and list every top-level function.
        let dumped = dump_gcov(&path);
        // (dump_gcov leaves out functions without samples.)
        for (ctx, _) in back.functions.iter().filter(|(_, fs)| fs.total > 0) {
            let head = format!("{} total:", ctx.function());
            assert!(
                dumped.iter().any(|l| l.starts_with(&head)),
                "{}: dump_gcov lacks {head}",
                f.display()
            );
        }
        n += 1;
    }
    if corpus_dir().is_some() {
        assert!(n >= 20, "only {n} profiles");
    }
}

#[test]
fn dump_gcov_agrees_on_the_corpus_gcov_rewritten() {
    if !have_tool("dump_gcov") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for f in corpus_files() {
        let data = std::fs::read(&f).unwrap();
        if gcov::detect(&data) != Some(Version::V407) {
            continue;
        }
        let path = dir.path().join("ours.afdo");
        std::fs::write(&path, to_gcov(&gcov::read(&data).unwrap(), Version::V407)).unwrap();
        assert_eq!(dump_gcov(&path), dump_gcov(&f), "{}", f.display());
    }
}

#[test]
fn every_version_round_trips() {
    let p = text::read(
        b"main:1000:10\n 1: 10\n 2.3: 20 bar:15 foo:5\n 3: inl:300\n  1: 100\n  2.1: 200 tgt:200\n   7: deep:3\n    1: 3\n_Z3foov:500:7\n 0: 250\n 1: 250\n",
    )
    .unwrap();
    // gcov recomputes totals, so compare against the 407 reading.
    let reference = gcov::read(&to_gcov(&p, Version::V407)).unwrap();
    for v in [Version::V1, Version::V2, Version::V3] {
        let bytes = to_gcov(&p, v);
        assert_eq!(gcov::detect(&bytes), Some(v));
        assert_eq!(gcov::read(&bytes).unwrap(), reference, "{v:?}");
        // Truncations fail cleanly.
        for len in 0..bytes.len() - 3 * 4 - 128 * 12 - 8 {
            assert!(gcov::read(&bytes[..len]).is_err(), "{v:?} cut at {len}");
        }
    }
    // v3 keeps source files and timestamps.
    let mut p3 = reference.clone();
    let main = sp::FunctionId::name(b"main");
    p3.source_files
        .insert(main.clone(), std::sync::Arc::from(&b"src/main.c"[..]));
    p3.timestamps.insert(main, 42);
    assert_eq!(gcov::read(&to_gcov(&p3, Version::V3)).unwrap(), p3);
    // v2 strings are byte-counted: "main" takes 4 + 5 bytes.
    let v2 = to_gcov(&p, Version::V2);
    assert!(v2.windows(9).any(|w| w == b"\x05\0\0\0main\0"));
}

#[test]
fn malformed_gcov_errors() {
    let p = text::read(b"f:10:1\n 1: 10 g:3\n").unwrap();
    let mut b = to_gcov(&p, Version::V2);
    // The histogram type of the only target.
    let hist = b
        .windows(12)
        .position(|w| w == b"\x07\0\0\0\x02\0\0\0\0\0\0\0")
        .unwrap();
    b[hist] = 9;
    let e = gcov::read(&b).unwrap_err().to_string();
    assert!(e.contains("histogram type 9"), "{e}");
    assert!(gcov::read(b"adcg\x09\0\0\0\0\0\0\0").is_err());
}

/// A gcov file cut inside its 12-byte header is reported where it ends.
#[test]
fn a_cut_header_is_reported_where_the_file_ends() {
    let mut out = Vec::new();
    formats::sampleprof::gcov::write(
        &formats::sampleprof::Profile::default(),
        formats::sampleprof::gcov::Version::V407,
        &mut out,
    )
    .unwrap();
    let err = formats::sampleprof::read(&out[..8])
        .unwrap_err()
        .to_string();
    assert_eq!(err, "byte offset 8: truncated header (12 bytes)");
}
