//! `profmill llvm-profdata merge --binary-file` (binary correlation) against llvm-profdata-19,
//! on raw profiles of clang-19 `-mllvm -profile-correlate=binary` builds: byte-identical
//! output, and the same verdict on inputs that cannot be correlated.

use std::path::Path;
use std::process::Command;

use testsupport::{have_tool, LLVM_PROFDATA_19 as LLVM_PROFDATA};

fn have_tools() -> bool {
    have_tool("clang-19") && have_tool(LLVM_PROFDATA)
}

fn merge(program: &str, prefix: &[&str], args: &[String], out: &Path) -> (bool, Option<Vec<u8>>) {
    let _ = std::fs::remove_file(out);
    let status = Command::new(program)
        .args(prefix)
        .arg("merge")
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
        .status;
    (status.success(), std::fs::read(out).ok())
}

fn assert_same(args: &[String], dir: &Path) -> bool {
    let theirs = merge(LLVM_PROFDATA, &[], args, &dir.join("theirs"));
    let ours = merge(
        env!("CARGO_BIN_EXE_profmill"),
        &["llvm-profdata"],
        args,
        &dir.join("ours"),
    );
    assert_eq!(ours.0, theirs.0, "{args:?}: verdicts differ");
    assert!(ours.1 == theirs.1, "{args:?}: outputs differ");
    theirs.0
}

const PROGRAM: &str = r#"
#include <stdlib.h>
int sq(int x) { return x * x; }
int tw(int x) { return 2 * x; }
static int odd(int x) { return x % 3 ? sq(x) : tw(x); }
int main(int argc, char **argv) {
  int n = atoi(argv[1]), s = 0;
  for (int i = 0; i < n; i++) s += (i & 1) ? odd(i) : tw(i);
  return s == 7;
}
"#;

fn build_and_run(dir: &Path, name: &str, flags: &[&str], runs: &[&str]) -> (String, Vec<String>) {
    let src = dir.join("t.c");
    std::fs::write(&src, PROGRAM).unwrap();
    let exe = dir.join(name);
    let built = Command::new("clang-19")
        .args(flags)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(built.success());
    let raws = runs
        .iter()
        .enumerate()
        .map(|(i, arg)| {
            let raw = dir.join(format!("{name}-{i}.profraw"));
            let ran = Command::new(&exe)
                .arg(arg)
                .env("LLVM_PROFILE_FILE", &raw)
                .status()
                .unwrap();
            assert!(ran.success());
            raw.display().to_string()
        })
        .collect();
    (exe.display().to_string(), raws)
}

#[test]
fn binary_correlated_raw_profiles() {
    if !have_tools() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let correlate = ["-mllvm", "-profile-correlate=binary"];
    let (fe, fe_raws) = build_and_run(
        dir,
        "fe",
        &[&["-O1", "-fprofile-instr-generate"][..], &correlate].concat(),
        &["10", "33", "7"],
    );
    let (ir, ir_raws) = build_and_run(
        dir,
        "ir",
        &[&["-O1", "-fprofile-generate"][..], &correlate].concat(),
        &["12", "5"],
    );
    let (plain, plain_raws) = build_and_run(dir, "plain", &["-O1", "-fprofile-generate"], &["4"]);
    let with = |raws: &[String], binary: &str, extra: &[&str]| -> Vec<String> {
        let mut args = raws.to_vec();
        args.push(format!("--binary-file={binary}"));
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    assert!(assert_same(&with(&fe_raws, &fe, &[]), dir));
    assert!(assert_same(&with(&fe_raws[..1], &fe, &["--text"]), dir));
    assert!(assert_same(&with(&ir_raws, &ir, &["-j", "2"]), dir));
    let weighted = vec![
        format!("--weighted-input=5,{}", ir_raws[0]),
        ir_raws[1].clone(),
        format!("--binary-file={ir}"),
        "--text".into(),
    ];
    assert!(assert_same(&weighted, dir));
    // Without the binary the profiles hold no functions.
    assert!(assert_same(&fe_raws, dir));
    // Rejected: a binary without the sections, a non-object file, a profile with its own data.
    assert!(!assert_same(&with(&fe_raws, &plain, &[]), dir));
    assert!(!assert_same(
        &with(&fe_raws, &dir.join("t.c").display().to_string(), &[]),
        dir
    ));
    assert!(!assert_same(&with(&plain_raws, &ir, &[]), dir));
    assert!(assert_same(
        &with(&plain_raws, &ir, &["--failure-mode=warn"]),
        dir
    ));
}
