//! `profmill llvm-profdata overlap` against llvm-profdata-19: the same output (stdout and exit
//! status) on corpus inputs and on profiles made here by clang-19, including indirect-call,
//! memop and vtable value profiles, context-sensitive profiles and every filter option.

use std::path::Path;
use std::process::{Command, Output};

use testsupport::{
    have_tool, llvm_profdata_corpus as corpus, run_ok, LLVM_PROFDATA_19 as LLVM_PROFDATA,
};

fn run(program: &str, prefix: &[&str], args: &[String]) -> Output {
    Command::new(program)
        .args(prefix)
        .arg("overlap")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

/// Runs both tools; asserts the same exit status and the same stdout. Returns llvm-profdata's
/// stdout.
fn assert_same_overlap(args: &[String], what: &str) -> String {
    let theirs = run(LLVM_PROFDATA, &[], args);
    let ours = run(env!("CARGO_BIN_EXE_profmill"), &["llvm-profdata"], args);
    assert_eq!(
        ours.status.success(),
        theirs.status.success(),
        "{what}: exit status differs\nllvm-profdata: {}\nprofmill: {}",
        String::from_utf8_lossy(&theirs.stderr),
        String::from_utf8_lossy(&ours.stderr),
    );
    let (theirs_out, ours_out) = (
        String::from_utf8_lossy(&theirs.stdout),
        String::from_utf8_lossy(&ours.stdout),
    );
    assert_eq!(ours_out, theirs_out, "{what}: output differs");
    if !theirs.status.success() {
        assert!(
            String::from_utf8_lossy(&ours.stderr).contains("error"),
            "{what}: rejected without a clear message"
        );
    }
    theirs_out.into_owned()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
fn corpus_inputs_overlap_like_llvm_profdata() {
    let Some(dir) = corpus() else { return };
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let release = dir.join("llvm-19");
    let file = |name: &str| release.join(name).display().to_string();
    let mut files: Vec<String> = std::fs::read_dir(&release)
        .unwrap()
        .chain(std::fs::read_dir(dir.join("misc")).unwrap())
        .map(|e| e.unwrap().path().display().to_string())
        .collect();
    files.sort();
    // Every input against itself and against a text profile, both ways round.
    let other = file("overlap_2.proftext");
    let mut reports = 0;
    for f in &files {
        for pair in [[f, f], [f, &other], [&other, f]] {
            let args = vec![pair[0].clone(), pair[1].clone(), "--value-cutoff=1".into()];
            if !assert_same_overlap(&args, &format!("{pair:?}")).is_empty() {
                reports += 1;
            }
        }
    }
    assert!(reports > 100, "only {reports} overlaps printed anything");
    // LLVM's own overlap test inputs, with each filter.
    for (base, test) in [
        ("overlap_1.proftext", "overlap_2.proftext"),
        ("overlap_1_vp.proftext", "overlap_2_vp.proftext"),
        ("overlap_1_cs.proftext", "overlap_2_cs.proftext"),
        ("overlap_2.proftext", "overlap_1.proftext"),
    ] {
        for options in [
            &[][..],
            &["--value-cutoff=0"],
            &["--function=ba"],
            &["--function", "main", "--cs"],
            &["--cs", "--value-cutoff=15000"],
        ] {
            let mut args = vec![file(base), file(test)];
            args.extend(strings(options));
            assert_same_overlap(&args, &format!("{base} {test} {options:?}"));
        }
    }
    let vp = assert_same_overlap(
        &[file("overlap_1_vp.proftext"), file("overlap_2_vp.proftext")],
        "value profiles",
    );
    assert!(vp.contains("IndirectCall profile overlap") && vp.contains("MemOP profile overlap"));
}

#[test]
fn output_file_wrong_arguments_and_zero_sums() {
    let Some(dir) = corpus() else { return };
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let base = dir.join("llvm-19/overlap_1.proftext").display().to_string();
    let test = dir.join("llvm-19/overlap_2.proftext").display().to_string();
    let zero = tmp.path().join("zero.proftext");
    std::fs::write(&zero, "foo\n1\n1\n0\n").unwrap();
    let zero = zero.display().to_string();
    let missing = tmp.path().join("missing").display().to_string();
    for args in [
        vec![base.clone()],
        vec![base.clone(), missing.clone()],
        vec![missing, test.clone()],
        vec![base.clone(), test.clone(), "--bogus".into()],
        // A zero sum: llvm-profdata's note is lost in its buffer unless on a terminal.
        vec![zero.clone(), test.clone()],
        vec![base.clone(), zero.clone()],
    ] {
        assert_same_overlap(&args, &format!("{args:?}"));
    }
    for (i, program) in [LLVM_PROFDATA, env!("CARGO_BIN_EXE_profmill")]
        .into_iter()
        .enumerate()
    {
        let prefix: &[&str] = if i == 0 { &[] } else { &["llvm-profdata"] };
        let out = tmp.path().join(format!("out{i}.txt"));
        let args = vec![
            base.clone(),
            test.clone(),
            "-o".into(),
            out.display().to_string(),
        ];
        assert!(run(program, prefix, &args).status.success());
    }
    let read = |i: usize| std::fs::read(tmp.path().join(format!("out{i}.txt"))).unwrap();
    assert!(!read(0).is_empty());
    assert_eq!(read(1), read(0), "-o output differs");
}

/// Indirect calls whose targets shift with the argument, memcpy sizes likewise, so that two
/// runs overlap partially in every kind.
const PROGRAM: &str = r#"
#include <stdlib.h>
#include <string.h>
typedef int (*fn)(int);
static int sq(int x) { return x * x; }
static int inc(int x) { return x + 1; }
static int neg(int x) { return -x; }
static int dbl(int x) { return 2 * x; }
int callit(fn f, int x) { return f(x); }
static char buf[8192];
void cp(int n) { memcpy(buf, buf + 4000, n); }
int only_late(int x) { return x * 3; }
int main(int argc, char **argv) {
  int n = atoi(argv[1]), shift = atoi(argv[2]);
  fn table[4] = {sq, inc, neg, dbl};
  int s = 0;
  for (int i = 0; i < n; i++) {
    s += callit(table[(i + shift) % (2 + shift % 3)], i);
    cp(((i + shift) * 37) % (64 << (shift % 4)));
    if (shift > 2 && i % 5 == 0) s += only_late(i);
  }
  return s == 12345;
}
"#;

const CXX_PROGRAM: &str = r#"
#include <cstdlib>
struct Base { virtual int f(int) = 0; virtual ~Base() {} };
struct A : Base { int f(int x) override { return x + 1; } };
struct B : Base { int f(int x) override { return x * 3; } };
struct C : Base { int f(int x) override { return x - 7; } };
int run(Base *b, int x) { return b->f(x); }
int main(int argc, char **argv) {
  int n = atoi(argv[1]), shift = atoi(argv[2]);
  A a; B b; C c; Base *all[3] = {&a, &b, &c};
  int s = 0;
  for (int i = 0; i < n; i++) s += run(all[(i * shift) % 3], i);
  return s == 12345;
}
"#;

/// Builds `source` with `flags` and runs it once per (n, shift), each run writing a raw profile.
fn profile_runs(
    dir: &Path,
    compiler: &str,
    source: (&str, &str),
    flags: &[&str],
    runs: &[(u32, u32)],
) -> Vec<String> {
    let src = dir.join(source.0);
    std::fs::write(&src, source.1).unwrap();
    let exe = dir.join(format!("{}.exe", source.0));
    run_ok(
        Command::new(compiler)
            .args(flags)
            .arg(&src)
            .arg("-o")
            .arg(&exe),
    );
    runs.iter()
        .enumerate()
        .map(|(i, (n, shift))| {
            let raw = dir.join(format!("{}-{i}.profraw", source.0));
            run_ok(
                Command::new(&exe)
                    .arg(n.to_string())
                    .arg(shift.to_string())
                    .env("LLVM_PROFILE_FILE", &raw),
            );
            raw.display().to_string()
        })
        .collect()
}

fn llvm_merge(inputs: &[String], out: &Path, options: &[&str]) -> String {
    let mut cmd = Command::new(LLVM_PROFDATA);
    cmd.arg("merge")
        .args(inputs)
        .arg("-o")
        .arg(out)
        .args(options);
    run_ok(&mut cmd);
    out.display().to_string()
}

/// Every ordered pair of `files`, with no filter, a value cutoff, a name filter and `--cs`.
fn assert_all_pairs(files: &[String], what: &str) -> Vec<String> {
    let mut outputs = Vec::new();
    for base in files {
        for test in files {
            for options in [
                &[][..],
                &["--value-cutoff=20"],
                &["--function=callit"],
                &["--cs", "--value-cutoff=0"],
            ] {
                let mut args = vec![base.clone(), test.clone()];
                args.extend(strings(options));
                outputs.push(assert_same_overlap(
                    &args,
                    &format!("{what}: {base} {test} {options:?}"),
                ));
            }
        }
    }
    outputs
}

#[test]
fn clang_19_profiles_with_value_profiles() {
    if !have_tool(LLVM_PROFDATA) || !have_tool("clang-19") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ir = profile_runs(
        dir,
        "clang-19",
        ("t.c", PROGRAM),
        &["-O1", "-fprofile-generate"],
        &[(300, 0), (500, 3), (70, 5)],
    );
    let indexed = llvm_merge(&ir[..2], &dir.join("ir.profdata"), &[]);
    let text = llvm_merge(&ir[1..], &dir.join("ir.proftext"), &["--text"]);
    // Without the functions run 0 never called, so they are "only in test_profile".
    let sparse = llvm_merge(&ir[..1], &dir.join("sparse.profdata"), &["--sparse"]);
    let mut files = ir.clone();
    files.extend([indexed.clone(), text, sparse]);
    let outputs = assert_all_pairs(&files, "IR");
    let kinds = outputs.concat();
    for line in [
        "IndirectCall profile overlap",
        "MemOP profile overlap",
        "# of functions only in test_profile",
        "Function level:",
    ] {
        assert!(kinds.contains(line), "no '{line}' in any output");
    }

    // Front-end profiles with value profiling.
    let fe = profile_runs(
        dir,
        "clang-19",
        ("fe.c", PROGRAM),
        &[
            "-O1",
            "-fprofile-instr-generate",
            "-mllvm",
            "-enable-value-profiling",
        ],
        &[(200, 1), (90, 4)],
    );
    assert_all_pairs(&fe, "FE");
    // Same names, other hashes: every function mismatches.
    let mixed = assert_all_pairs(&[ir[0].clone(), fe[0].clone()], "IR and FE");
    assert!(mixed.iter().any(|o| o.contains("# of functions mismatch")));

    // Context-sensitive records next to the IR ones (`--cs` picks them).
    let use_flag = format!("-fprofile-use={indexed}");
    let cs = profile_runs(
        dir,
        "clang-19",
        ("cs.c", PROGRAM),
        &["-O1", "-fcs-profile-generate", &use_flag],
        &[(250, 2), (120, 6)],
    );
    let cs_and_ir = llvm_merge(&[cs[0].clone(), indexed], &dir.join("csir.profdata"), &[]);
    let outputs = assert_all_pairs(&[cs[0].clone(), cs[1].clone(), cs_and_ir], "CS");
    assert!(outputs.iter().any(|o| o.contains("Function level:")));
}

#[test]
fn clang_19_vtable_value_profiles() {
    if !have_tool(LLVM_PROFDATA) || !have_tool("clang++-19") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let raws = profile_runs(
        tmp.path(),
        "clang++-19",
        ("vt.cpp", CXX_PROGRAM),
        &[
            "-O1",
            "-fprofile-generate",
            "-mllvm",
            "-enable-vtable-value-profiling",
        ],
        &[(100, 1), (60, 2)],
    );
    let outputs = assert_all_pairs(&raws, "vtable");
    assert!(outputs.iter().any(|o| o.contains("VTable profile overlap")));
}

/// A truncated raw or indexed profile fails reader creation in llvm-profdata-19 (`error in
/// getting profile count sums: …`, status 1) whichever side it is on; so it does here, and an
/// existing `-o` file is left as it was (llvm-profdata truncates it).
#[test]
fn truncated_profiles_fail_and_keep_the_output() {
    let Some(dir) = corpus() else { return };
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let good = dir.join("llvm-19/c-general.profraw").display().to_string();
    let mut cases = Vec::new();
    for (source, lengths) in [
        ("llvm-19/c-general.profraw", &[8usize, 677, 1016, 2031][..]),
        ("llvm-19/compat.profdata.v10", &[8, 100, 856, 871][..]),
    ] {
        let bytes = std::fs::read(dir.join(source)).unwrap();
        for &n in lengths {
            let name = source.replace('/', "-");
            let cut = tmp.path().join(format!("{n}-{name}"));
            std::fs::write(&cut, &bytes[..n]).unwrap();
            cases.push(cut.display().to_string());
        }
    }
    for cut in &cases {
        for pair in [[&good, cut], [cut, &good]] {
            let args = vec![pair[0].clone(), pair[1].clone()];
            let theirs = run(LLVM_PROFDATA, &[], &args);
            assert_eq!(theirs.status.code(), Some(1), "llvm-profdata {args:?}");
            assert_same_overlap(&args, &format!("{args:?}"));
            let out = tmp.path().join("existing.txt");
            std::fs::write(&out, "an earlier overlap\n").unwrap();
            let mut with_out = args.clone();
            with_out.extend(["-o".to_string(), out.display().to_string()]);
            let ours = run(
                env!("CARGO_BIN_EXE_profmill"),
                &["llvm-profdata"],
                &with_out,
            );
            let stderr = String::from_utf8_lossy(&ours.stderr);
            assert_eq!(ours.status.code(), Some(1), "{with_out:?}: {stderr}");
            assert!(
                stderr.contains("error in getting profile count sums: ")
                    && stderr.contains(cut.as_str())
                    && stderr.lines().count() == 1,
                "{stderr}"
            );
            assert_eq!(
                std::fs::read_to_string(&out).unwrap(),
                "an earlier overlap\n",
                "{with_out:?} touched the existing output"
            );
        }
    }
}
