//! Raw version 11 (LLVM 23) through `profmill llvm-profdata merge`. No released llvm-profdata
//! reads v11, so each v11 input is made from a clang-19 v10 profile (same records, v11 layout,
//! by `corpus::raw_v11`) and our merge of it must be byte-identical to llvm-profdata-19's merge
//! of the v10 original. Profiles with uniform counters are refused with a message.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use corpus::raw_v11::{raw_v10_to_v11, raw_v10_to_v11_with_uniform};

use crate::common::{clang_program_with_library, raw_profiles_of_runs};
use testsupport::{have_tool, run_ok, CLANG_19, LLVM_PROFDATA_19 as LLVM_PROFDATA};

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// Indirect calls and memcpy sizes give IR value profiles; `pick` a condition for MC/DC.
const PROGRAM: &str = r#"
#include <stdlib.h>
#include <string.h>
int lib_twice(int);
static int sq(int x) { return x * x; }
static int neg(int x) { return -x; }
int (*volatile table[2])(int) = {sq, neg};
int pick(int a, int b, int c) { return (a && b) || c; }
char dst[600], src[600];
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 5, s = 0;
    for (int i = 0; i < n; i++) {
        s += table[i % 2](i);
        s += pick(i & 1, i & 2, i & 4);
        memcpy(dst, src, (size_t)(i * 37) % 600);
    }
    return (lib_twice(s) & 1) ? 0 : 0;
}
"#;
const LIBRARY: &str = "int lib_twice(int x) { return x > 3 ? 2 * x : x; }\n";

/// Builds the program with `flags` (the library shared when `shared`, so that one file holds
/// two profiles) and returns one raw profile per run.
fn clang_profiles(dir: &Path, name: &str, flags: &[&str], shared: bool) -> Vec<PathBuf> {
    let exe = clang_program_with_library(dir, name, (PROGRAM, LIBRARY), flags, shared);
    raw_profiles_of_runs(&exe, &["7", "30"])
}

/// The v11 form of a v10 file, next to it.
fn to_v11(v10: &Path) -> PathBuf {
    let bytes = std::fs::read(v10).unwrap();
    let v11 = raw_v10_to_v11(&bytes).expect("a clang-19 raw v10 profile");
    assert_eq!(&v11[8..9], &[11]);
    let path = v10.with_extension("v11.profraw");
    std::fs::write(&path, v11).unwrap();
    path
}

fn merge(tool: &mut Command, inputs: &[PathBuf], extra: &[&str], out: &Path) -> Vec<u8> {
    run_ok(
        tool.arg("merge")
            .args(inputs)
            .args(extra)
            .arg("-o")
            .arg(out),
    );
    std::fs::read(out).unwrap()
}

fn profmill() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_profmill"));
    c.arg("llvm-profdata");
    c
}

#[test]
fn v11_from_clang_19_merges_as_llvm_profdata_19_merges_the_v10_original() {
    if !have_tool(LLVM_PROFDATA) || !have_tool(CLANG_19) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let variants: &[(&str, &[&str], bool)] = &[
        ("ir", &["-O1", "-fprofile-generate"], false),
        (
            "mcdc",
            &[
                "-fprofile-instr-generate",
                "-fcoverage-mapping",
                "-fcoverage-mcdc",
            ],
            false,
        ),
        ("shared", &["-O1", "-fprofile-instr-generate"], true),
        (
            "ir-block-coverage",
            &["-O1", "-fprofile-generate", "-mllvm", "-pgo-block-coverage"],
            false,
        ),
        (
            "temporal",
            &[
                "-O1",
                "-fprofile-generate",
                "-mllvm",
                "-pgo-temporal-instrumentation",
            ],
            false,
        ),
    ];
    for (name, flags, shared) in variants {
        let v10 = clang_profiles(dir, name, flags, *shared);
        let v11: Vec<PathBuf> = v10.iter().map(|p| to_v11(p)).collect();
        for extra in [&[][..], &["--text"][..]] {
            let reference = merge(
                &mut Command::new(LLVM_PROFDATA),
                &v10,
                extra,
                &dir.join("ref.out"),
            );
            let ours = merge(&mut profmill(), &v11, extra, &dir.join("ours.out"));
            assert!(!reference.is_empty());
            assert!(
                ours == reference,
                "{name} {extra:?}: v11 merge differs from llvm-profdata-19's v10 merge"
            );
        }
        // llvm-profdata-19 itself refuses the v11 file: the version is what it checks.
        let out = run(Command::new(LLVM_PROFDATA)
            .arg("merge")
            .arg(&v11[0])
            .arg("-o")
            .arg(dir.join("x")));
        assert!(!out.status.success(), "{name}: llvm-profdata-19 read v11");
    }
}

#[test]
fn v11_with_uniform_counters_is_refused_with_its_offset() {
    if !have_tool(CLANG_19) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let v10 = clang_profiles(dir, "fe", &["-O1", "-fprofile-instr-generate"], false);
    let bytes = std::fs::read(&v10[0]).unwrap();
    let with_uniform = raw_v10_to_v11_with_uniform(&bytes, &|r, c| (r * 10 + c) as u64).unwrap();
    let path = dir.join("uniform.profraw");
    std::fs::write(&path, with_uniform).unwrap();
    let out = run(profmill()
        .arg("merge")
        .arg(&path)
        .arg("-o")
        .arg(dir.join("u.profdata")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "merged: {stderr}");
    assert!(
        stderr.contains("uniform counters") && stderr.contains("byte offset"),
        "{stderr}"
    );
    assert!(!dir.join("u.profdata").exists());
}
