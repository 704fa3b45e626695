//! `profmill convert / merge --sample / show --sample` against llvm-profdata-19.

use std::path::{Path, PathBuf};
use std::process::Command;

const LLVM_PROFDATA: &str = "/usr/lib/llvm-19/bin/llvm-profdata";

fn profmill() -> Command {
    Command::new(env!("CARGO_BIN_EXE_profmill"))
}

fn have_llvm() -> bool {
    if std::env::var("PROFMILL_SKIP_EXTERNAL").as_deref() == Ok("1") {
        eprintln!("skipping: PROFMILL_SKIP_EXTERNAL=1");
        return false;
    }
    assert!(
        Path::new(LLVM_PROFDATA).exists(),
        "{LLVM_PROFDATA} is not installed; run .ci/run or set PROFMILL_SKIP_EXTERNAL=1"
    );
    true
}

fn corpus(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/corpus/llvm-profdata")
        .join(name);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("skipping: {} is missing", p.display());
        None
    }
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
