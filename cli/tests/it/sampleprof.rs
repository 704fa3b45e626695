//! `profmill convert / merge --sample / show --sample` against llvm-profdata-19.

use std::path::PathBuf;
use std::process::Command;

use crate::common::profmill;
use testsupport::{
    existing, have_tool, shared_corpus, shared_spec, LLVM_PROFDATA_19 as LLVM_PROFDATA,
};

fn have_llvm() -> bool {
    have_tool(LLVM_PROFDATA)
}

fn corpus(name: &str) -> Option<PathBuf> {
    existing(shared_corpus("llvm-profdata").join(name))
}

fn ok(cmd: &mut Command) -> Vec<u8> {
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

#[test]
fn convert_merge_show_match_llvm_profdata() {
    let (Some(foo), Some(bar), Some(gcc)) = (
        corpus("llvm-11/weight-sample-foo.proftext"),
        corpus("llvm-11/weight-sample-bar.proftext"),
        corpus("llvm-13/gcc-sample-profile.gcov"),
    ) else {
        return;
    };
    if !have_llvm() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // convert: text → ExtBinary (compressed, MD5), and gcov → text.
    ok(profmill()
        .arg("convert")
        .arg(&foo)
        .args([
            "--to",
            "extbinary",
            "--use-md5",
            "--compress-all-sections",
            "-o",
        ])
        .arg(d.join("ours.ext")));
    ok(Command::new(LLVM_PROFDATA)
        .args([
            "merge",
            "--sample",
            "--extbinary",
            "--use-md5",
            "--compress-all-sections",
        ])
        .arg(&foo)
        .arg("-o")
        .arg(d.join("ref.ext")));
    assert_eq!(
        std::fs::read(d.join("ours.ext")).unwrap(),
        std::fs::read(d.join("ref.ext")).unwrap()
    );
    ok(profmill()
        .arg("convert")
        .arg(&gcc)
        .args(["--to", "text", "-o"])
        .arg(d.join("gcc.txt")));
    let reference = ok(Command::new(LLVM_PROFDATA)
        .args(["merge", "--sample", "--text"])
        .arg(&gcc)
        .arg("-o")
        .arg(d.join("gcc.ref.txt")));
    let _ = reference;
    assert_eq!(
        std::fs::read(d.join("gcc.txt")).unwrap(),
        std::fs::read(d.join("gcc.ref.txt")).unwrap()
    );

    // merge with weights, output text.
    ok(profmill()
        .args(["merge", "--sample", "--to", "text"])
        .arg(&foo)
        .arg(format!("--weighted-input=3,{}", bar.display()))
        .arg("-o")
        .arg(d.join("merged.txt")));
    ok(Command::new(LLVM_PROFDATA)
        .args(["merge", "--sample", "--text"])
        .arg(&foo)
        .arg(format!("--weighted-input=3,{}", bar.display()))
        .arg("-o")
        .arg(d.join("merged.ref.txt")));
    assert_eq!(
        std::fs::read(d.join("merged.txt")).unwrap(),
        std::fs::read(d.join("merged.ref.txt")).unwrap()
    );

    // show prints the text form.
    let shown = ok(profmill()
        .args(["show", "--sample"])
        .arg(d.join("ours.ext")));
    let reference = ok(Command::new(LLVM_PROFDATA)
        .args(["merge", "--sample", "--text", "-o", "-"])
        .arg(d.join("ref.ext")));
    assert_eq!(shown, reference);
}

#[test]
fn bad_input_is_a_clear_error_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "f:1:1\n 1 5\n").unwrap();
    let out = dir.path().join("out.prof");
    let o = profmill()
        .arg("convert")
        .arg(&bad)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "{}:2: Expected 'NUM[.NUM]: NUM[ mangled_name:NUM]*', found  1 5",
            bad.display()
        )),
        "{err}"
    );
    assert!(!out.exists());
}

/// `--to gcov-v4|gcov-v4-compact|gcov-v4-text` and v4 detection: the corpus gcov profile goes
/// through all three v4 encodings and still shows what llvm-profdata-19 shows for the
/// original; v4 → v4 keeps the symbol IDs (the proposal's example survives exactly).
#[test]
fn convert_through_gcov_v4() {
    let Some(gcc) = corpus("llvm-13/gcc-sample-profile.gcov") else {
        return;
    };
    if !have_llvm() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut prev = gcc.clone();
    for (i, to) in ["gcov-v4", "gcov-v4-compact", "gcov-v4-text", "gcov-v4"]
        .iter()
        .enumerate()
    {
        let next = d.join(format!("step{i}"));
        ok(profmill()
            .arg("convert")
            .arg(&prev)
            .args(["--to", to, "-o"])
            .arg(&next));
        prev = next;
    }
    let text = std::fs::read(d.join("step2")).unwrap();
    assert!(text.starts_with(b"filenames = "));
    assert_eq!(
        &std::fs::read(d.join("step1")).unwrap()[..9],
        b"gcov\0\0\0\x04\x80"
    );
    let shown = ok(profmill().args(["show", "--sample"]).arg(&prev));
    let reference = ok(Command::new(LLVM_PROFDATA)
        .args(["merge", "--sample", "--text", "-o", "-"])
        .arg(&gcc));
    assert!(shown == reference, "{}", String::from_utf8_lossy(&shown));

    let spec = shared_spec("autofdo-gcov-v4-proposal.txt");
    let Ok(spec) = std::fs::read_to_string(&spec) else {
        eprintln!("skipping the example: {} is missing", spec.display());
        return;
    };
    let start = spec.find("   filenames = {").unwrap();
    let end = start + spec[start..].find("\n6.  Extensibility").unwrap();
    let example: String = spec[start..end]
        .trim_end()
        .lines()
        .map(|l| format!("{}\n", l.strip_prefix("   ").unwrap_or(l)))
        .collect();
    std::fs::write(d.join("example.txt"), &example).unwrap();
    ok(profmill()
        .arg("convert")
        .arg(d.join("example.txt"))
        .args(["--to", "gcov-v4-compact", "-o"])
        .arg(d.join("example.v4c")));
    ok(profmill()
        .arg("convert")
        .arg(d.join("example.v4c"))
        .args(["--to", "gcov-v4-text", "-o"])
        .arg(d.join("example.back.txt")));
    assert_eq!(
        std::fs::read_to_string(d.join("example.back.txt")).unwrap(),
        example
    );
    // A broken v4 text names the file, line and column.
    let bad = d.join("bad.txt");
    let broken = example.replacen("4.1 = 659399", "4.1 = x", 1);
    let line = 1 + broken.lines().position(|l| l.contains("4.1 = x")).unwrap();
    std::fs::write(&bad, &broken).unwrap();
    let o = profmill()
        .arg("convert")
        .arg(&bad)
        .args(["--to", "text", "-o"])
        .arg(d.join("never"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "{}:{line}:11: expected a sample count, found 'x",
            bad.display()
        )),
        "{err}"
    );
    assert!(!d.join("never").exists());
}
