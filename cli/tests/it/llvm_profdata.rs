//! `profmill llvm-profdata merge` against llvm-profdata-19: byte-identical output for every
//! corpus input it accepts (alone and merged), for profiles made here by clang-19, and for raw
//! files in every pointer size and byte order; the same inputs rejected.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{clang_program_with_library, raw_profiles_of_runs};
use testsupport::{
    have_tool, llvm_profdata_corpus as corpus, run_ok, CLANG_19, LLVM_PROFDATA_19 as LLVM_PROFDATA,
};

struct Run {
    output: Output,
    bytes: Option<Vec<u8>>,
}

fn run_merge(program: &str, prefix: &[&str], args: &[String], out: &Path) -> Run {
    let _ = std::fs::remove_file(out);
    let output = Command::new(program)
        .args(prefix)
        .arg("merge")
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    Run {
        bytes: std::fs::read(out).ok(),
        output,
    }
}

/// Runs both tools on `args`; asserts the same verdict and, on success, the same bytes.
/// Returns whether llvm-profdata accepted the inputs.
fn assert_same_merge(args: &[String], dir: &Path, what: &str) -> bool {
    let theirs = run_merge(LLVM_PROFDATA, &[], args, &dir.join("theirs.out"));
    let ours = run_merge(
        env!("CARGO_BIN_EXE_profmill"),
        &["llvm-profdata"],
        args,
        &dir.join("ours.out"),
    );
    let accepted = theirs.output.status.success();
    assert_eq!(
        ours.output.status.success(),
        accepted,
        "{what}: llvm-profdata {} but profmill {}\nllvm-profdata: {}\nprofmill: {}",
        if accepted { "accepted" } else { "rejected" },
        if accepted { "rejected" } else { "accepted" },
        String::from_utf8_lossy(&theirs.output.stderr),
        String::from_utf8_lossy(&ours.output.stderr),
    );
    if accepted {
        // llvm-profdata-19 with several threads is itself nondeterministic: its loader tasks
        // can take a writer context's lock out of input order (seen in ~1% of runs of the
        // corpus merge). Accept any output it produces within a few runs.
        let mut theirs = theirs;
        for _ in 0..8 {
            if ours.bytes == theirs.bytes {
                break;
            }
            theirs = run_merge(LLVM_PROFDATA, &[], args, &dir.join("theirs.out"));
        }
        assert!(
            ours.bytes == theirs.bytes,
            "{what}: output differs from llvm-profdata-19's ({:?} vs {:?} bytes)",
            ours.bytes.as_ref().map(Vec::len),
            theirs.bytes.as_ref().map(Vec::len)
        );
    } else {
        let stderr = String::from_utf8_lossy(&ours.output.stderr);
        assert!(
            stderr.contains("error"),
            "{what}: rejected without a clear message: {stderr}"
        );
        assert!(
            ours.bytes.is_none(),
            "{what}: a rejected merge left an output"
        );
    }
    accepted
}

fn corpus_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for release in std::fs::read_dir(dir).unwrap() {
        let release = release.unwrap().path();
        for f in std::fs::read_dir(&release).unwrap() {
            let f = f.unwrap().path();
            if f.is_file() {
                files.push(f);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_corpus_input_alone_binary_and_text() {
    let Some(dir) = corpus() else { return };
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (mut accepted, mut rejected) = (0, 0);
    for f in corpus_files(&dir) {
        let path = f.display().to_string();
        if assert_same_merge(std::slice::from_ref(&path), tmp.path(), &path) {
            accepted += 1;
            assert_same_merge(
                &[path.clone(), "--text".into()],
                tmp.path(),
                &format!("{path} --text"),
            );
        } else {
            rejected += 1;
        }
    }
    // The corpus holds both kinds (instrumentation and sample profiles, old raw versions).
    assert!(
        accepted > 100 && rejected > 100,
        "{accepted} accepted, {rejected} rejected"
    );
}

#[test]
fn corpus_inputs_merged_together() {
    let Some(dir) = corpus() else { return };
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for release in ["llvm-11", "llvm-14", "llvm-19", "misc"] {
        // The instrumentation inputs llvm-profdata-19 accepts alone.
        let accepted: Vec<String> = corpus_files(&dir)
            .into_iter()
            .filter(|f| {
                f.parent()
                    .and_then(Path::file_name)
                    .is_some_and(|n| n == release)
            })
            .map(|f| f.display().to_string())
            .filter(|f| {
                Command::new(LLVM_PROFDATA)
                    .args(["merge", f, "-o", "/dev/null"])
                    .output()
                    .is_ok_and(|o| o.status.success())
            })
            .collect();
        assert!(accepted.len() >= 2, "{release}: {accepted:?}");
        let list = tmp.path().join("inputs.txt");
        std::fs::write(&list, accepted.join("\n")).unwrap();
        for extra in [
            vec!["--failure-mode=warn"],
            vec!["--failure-mode=warn", "-j", "1"],
            vec![],
            vec!["--sparse", "--failure-mode=all"],
        ] {
            let mut args: Vec<String> = vec!["-f".into(), list.display().to_string()];
            args.extend(extra.iter().map(|s| s.to_string()));
            assert_same_merge(&args, tmp.path(), &format!("{release} together {extra:?}"));
        }
    }
}

/// A test program with indirect calls, variable-size memcpy and an MC/DC condition.
const PROGRAM: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef int (*fn)(int);
static int sq(int x) { return x * x; }
static int inc(int x) { return x + 1; }
static int neg(int x) { return -x; }
int callit(fn f, int x) { return f(x); }
static char buf[4096];
void cp(char *dst, const char *src, int n) { memcpy(dst, src, n); }
int decide(int a, int b, int c) { if ((a && b) || c) return 1; return 0; }
int libf(int);
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 10;
  fn table[3] = {sq, inc, neg};
  int s = 0;
  for (int i = 0; i < n; i++) {
    s += callit(table[(i * i) % 3], i);
    cp(buf, buf + 100, (i * 7) % 300);
    s += decide(i & 1, i & 2, i & 4);
    s += libf(i);
  }
  printf("%d\n", s);
  return 0;
}
"#;
const LIBRARY: &str = "int libf(int x) { return x % 3 == 0 ? x * 2 : x - 1; }\n";
const CXX_PROGRAM: &str = r#"
#include <cstdio>
#include <cstdlib>
struct Base { virtual int f(int) = 0; virtual ~Base() {} };
struct A : Base { int f(int x) override { return x + 1; } };
struct B : Base { int f(int x) override { return x * 3; } };
int run(Base *b, int x) { return b->f(x); }
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 10;
  A a; B b; int s = 0;
  for (int i = 0; i < n; i++) s += run(i % 3 ? (Base *)&a : (Base *)&b, i);
  std::printf("%d\n", s);
}
"#;

/// Builds the program with `flags` (the library is linked in statically unless `shared`) and
/// runs it once per argument, each run writing its own raw profile.
fn profile_runs(
    dir: &Path,
    name: &str,
    flags: &[&str],
    runs: &[&str],
    shared: bool,
) -> Vec<String> {
    let exe = clang_program_with_library(dir, name, (PROGRAM, LIBRARY), flags, shared);
    let raws = raw_profiles_of_runs(&exe, runs);
    raws.iter().map(|raw| raw.display().to_string()).collect()
}

/// Merges the runs alone, together, weighted, as text and with one LLVM thread.
fn assert_all_merges(raws: &[String], dir: &Path, what: &str) {
    for raw in raws {
        assert!(
            assert_same_merge(std::slice::from_ref(raw), dir, what),
            "{what}: llvm-profdata rejected {raw}"
        );
    }
    let mut together = raws.to_vec();
    assert_same_merge(&together, dir, &format!("{what}: together"));
    together.push("--text".into());
    assert_same_merge(&together, dir, &format!("{what}: together, text"));
    let weighted: Vec<String> = raws
        .iter()
        .enumerate()
        .map(|(i, r)| format!("--weighted-input={},{r}", 3 + 2 * i))
        .chain(["--num-threads=1".to_string()])
        .collect();
    assert_same_merge(&weighted, dir, &format!("{what}: weighted"));
}

#[test]
fn clang_19_profiles_of_every_kind() {
    if !have_tool(LLVM_PROFDATA) || !have_tool(CLANG_19) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let variants: &[(&str, &[&str])] = &[
        ("ir", &["-O1", "-fprofile-generate"]),
        ("fe", &["-O1", "-fprofile-instr-generate"]),
        (
            "fe-vp",
            &[
                "-O1",
                "-fprofile-instr-generate",
                "-mllvm",
                "-enable-value-profiling",
            ],
        ),
        (
            "mcdc",
            &[
                "-fprofile-instr-generate",
                "-fcoverage-mapping",
                "-fcoverage-mcdc",
            ],
        ),
        (
            "fe-byte-coverage",
            &[
                "-fprofile-instr-generate",
                "-fcoverage-mapping",
                "-mllvm",
                "-enable-single-byte-coverage=true",
            ],
        ),
        (
            "ir-block-coverage",
            &["-O1", "-fprofile-generate", "-mllvm", "-pgo-block-coverage"],
        ),
        (
            "ir-entry-coverage",
            &[
                "-O1",
                "-fprofile-generate",
                "-mllvm",
                "-pgo-function-entry-coverage",
            ],
        ),
        (
            "ir-entry-first",
            &[
                "-O1",
                "-fprofile-generate",
                "-mllvm",
                "-pgo-instrument-entry",
            ],
        ),
        (
            "temporal",
            &[
                "-O1",
                "-fprofile-generate",
                "-mllvm",
                "-pgo-temporal-instrumentation",
            ],
        ),
    ];
    let mut all_ir = Vec::new();
    for (name, flags) in variants {
        let raws = profile_runs(dir, name, flags, &["7", "40", "3"], false);
        assert_all_merges(&raws, dir, name);
        if *name == "ir" {
            all_ir = raws;
        }
    }
    // An executable and an instrumented shared library writing one file (two profiles in it).
    let raws = profile_runs(
        dir,
        "shared",
        &["-O1", "-fprofile-instr-generate"],
        &["9", "2"],
        true,
    );
    assert_all_merges(&raws, dir, "exe + shared library");

    // Context-sensitive profiles need an IR profile to build against.
    let ir_profdata = dir.join("ir.profdata");
    run_ok(
        Command::new(LLVM_PROFDATA)
            .arg("merge")
            .args(&all_ir)
            .arg("-o")
            .arg(&ir_profdata),
    );
    let use_flag = format!("-fprofile-use={}", ir_profdata.display());
    let cs = profile_runs(
        dir,
        "cs",
        &["-O1", "-fcs-profile-generate", &use_flag],
        &["5", "30"],
        false,
    );
    assert_all_merges(&cs, dir, "context-sensitive");
    // Mixed encodings: raw CS with the indexed IR profile and its text form.
    let ir_text = dir.join("ir.proftext");
    run_ok(
        Command::new(LLVM_PROFDATA)
            .arg("merge")
            .arg("--text")
            .args(&all_ir)
            .arg("-o")
            .arg(&ir_text),
    );
    let mixed = vec![
        cs[0].clone(),
        ir_profdata.display().to_string(),
        ir_text.display().to_string(),
    ];
    assert_same_merge(&mixed, dir, "raw + indexed + text");
}

#[test]
fn clang_19_vtable_value_profiles() {
    if !have_tool(LLVM_PROFDATA) || !have_tool("clang++-19") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let src = dir.join("t.cpp");
    std::fs::write(&src, CXX_PROGRAM).unwrap();
    let exe = dir.join("vt");
    run_ok(
        Command::new("clang++-19")
            .args([
                "-O1",
                "-fprofile-generate",
                "-mllvm",
                "-enable-vtable-value-profiling",
            ])
            .arg(&src)
            .arg("-o")
            .arg(&exe),
    );
    let raws: Vec<String> = ["4", "25"]
        .iter()
        .enumerate()
        .map(|(i, arg)| {
            let raw = dir.join(format!("vt-{i}.profraw"));
            run_ok(Command::new(&exe).arg(arg).env("LLVM_PROFILE_FILE", &raw));
            raw.display().to_string()
        })
        .collect();
    assert_all_merges(&raws, dir, "vtable values");
}

#[test]
fn llvm_option_spellings_inputs_lists_and_directories() {
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let inputs = dir.join("in");
    std::fs::create_dir_all(inputs.join("sub")).unwrap();
    let a = inputs.join("a.proftext");
    let b = inputs.join("sub/b.proftext");
    std::fs::write(&a, ":ir\nf\n1\n2\n5\n6\n\ng\n2\n1\n9\n\n").unwrap();
    std::fs::write(&b, ":ir\nf\n1\n2\n1\n1\n\nh\n3\n1\n4\n\n").unwrap();
    let list = dir.join("list.txt");
    std::fs::write(
        &list,
        format!("# a comment\n\n  3,{}\r\n{}\n", a.display(), b.display()),
    )
    .unwrap();
    let s = |p: &Path| p.display().to_string();
    let cases: Vec<Vec<String>> = vec![
        vec![s(&a), s(&b)],
        vec![s(&inputs)],
        vec!["-f".into(), s(&list)],
        vec![format!("--input-files={}", s(&list)), "--text".into()],
        vec![
            format!("-weighted-input=2,{}", s(&a)),
            s(&b),
            "--sparse=true".into(),
        ],
        vec![
            s(&a),
            "--binary".into(),
            "-num-threads=1".into(),
            "--".into(),
            s(&b),
        ],
    ];
    for args in &cases {
        assert_same_merge(args, dir, &format!("{args:?}"));
    }
    // The output option in all its spellings.
    let reference = run_merge(LLVM_PROFDATA, &[], &[s(&a)], &dir.join("ref"));
    let reference = reference.bytes.unwrap();
    for spelling in [vec!["-o"], vec!["--output"], vec!["-output"]] {
        let out = dir.join("spelled");
        let _ = std::fs::remove_file(&out);
        let mut args: Vec<String> = vec!["llvm-profdata".into(), "merge".into(), s(&a)];
        args.extend(spelling.iter().map(|o| o.to_string()));
        args.push(s(&out));
        run_ok(Command::new(env!("CARGO_BIN_EXE_profmill")).args(&args));
        assert_eq!(std::fs::read(&out).unwrap(), reference, "{spelling:?}");
        for joined in ["-o=", "--output="] {
            let _ = std::fs::remove_file(&out);
            run_ok(Command::new(env!("CARGO_BIN_EXE_profmill")).args([
                "llvm-profdata",
                "merge",
                &s(&a),
                &format!("{joined}{}", s(&out)),
            ]));
            assert_eq!(std::fs::read(&out).unwrap(), reference, "{joined}");
        }
    }
    // Unknown options are errors, unimplemented ones warnings.
    let unknown = Command::new(env!("CARGO_BIN_EXE_profmill"))
        .args([
            "llvm-profdata",
            "merge",
            "--frobnicate",
            &s(&a),
            "-o",
            &s(&dir.join("x")),
        ])
        .output()
        .unwrap();
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr)
        .contains("Unknown command line argument '--frobnicate'"));
    let ignored = run_ok(Command::new(env!("CARGO_BIN_EXE_profmill")).args([
        "llvm-profdata",
        "merge",
        "--use-md5",
        "--output-size-limit",
        "1000000",
        &s(&a),
        "-o",
        &s(&dir.join("x")),
    ]));
    let stderr = String::from_utf8_lossy(&ignored.stderr);
    assert!(stderr.contains("--use-md5 is not implemented"), "{stderr}");
    assert!(
        stderr.contains("--output-size-limit=1000000 is not implemented"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(dir.join("x")).unwrap(), reference);
}

/// `show` with `options` on `file`: the same verdict and the same stdout as llvm-profdata-19.
fn assert_same_show(file: &Path, options: &[&str], what: &str) {
    let theirs = Command::new(LLVM_PROFDATA)
        .arg("show")
        .args(options)
        .arg(file)
        .output()
        .unwrap();
    let ours = Command::new(env!("CARGO_BIN_EXE_profmill"))
        .args(["llvm-profdata", "show"])
        .args(options)
        .arg(file)
        .output()
        .unwrap();
    assert_eq!(
        ours.status.success(),
        theirs.status.success(),
        "{what}: verdicts differ\nllvm-profdata: {}\nprofmill: {}",
        String::from_utf8_lossy(&theirs.stderr),
        String::from_utf8_lossy(&ours.stderr)
    );
    if theirs.status.success() {
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&theirs.stdout),
            "{what}"
        );
    }
}

const SHOW_OPTIONS: &[&[&str]] = &[
    &[],
    &["--all-functions", "--counts"],
    &[
        "--all-functions",
        "--ic-targets",
        "--memop-sizes",
        "--detailed-summary",
        "--binary-ids",
        "--profile-version",
        "--topn=3",
    ],
    &["--text", "--all-functions"],
    &["--showcs", "--all-functions", "--counts", "--function=main"],
];

#[test]
fn show_matches_llvm_profdata() {
    if !have_tool(LLVM_PROFDATA) || !have_tool(CLANG_19) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut files: Vec<PathBuf> = Vec::new();
    if let Some(corpus) = corpus() {
        for release in ["llvm-19", "misc"] {
            files.extend(corpus_files(&corpus).into_iter().filter(|f| {
                f.parent()
                    .and_then(Path::file_name)
                    .is_some_and(|n| n == release)
            }));
        }
    }
    // Profiles with value data, their indexed form and a context-sensitive one.
    let raws = profile_runs(
        dir,
        "show-ir",
        &["-O1", "-fprofile-generate"],
        &["12"],
        false,
    );
    let indexed = dir.join("show-ir.profdata");
    run_ok(
        Command::new(LLVM_PROFDATA)
            .arg("merge")
            .args(&raws)
            .arg("-o")
            .arg(&indexed),
    );
    let use_flag = format!("-fprofile-use={}", indexed.display());
    let cs = profile_runs(
        dir,
        "show-cs",
        &["-O1", "-fcs-profile-generate", &use_flag],
        &["6"],
        false,
    );
    let fe = profile_runs(
        dir,
        "show-fe",
        &["-O1", "-fprofile-instr-generate"],
        &["6"],
        false,
    );
    files.extend([&raws[0], &cs[0], &fe[0]].map(PathBuf::from));
    files.push(indexed);
    for file in &files {
        for options in SHOW_OPTIONS {
            assert_same_show(
                file,
                options,
                &format!("show {options:?} {}", file.display()),
            );
        }
    }
}

#[test]
fn invoked_as_llvm_profdata_through_a_link() {
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let link = tmp.path().join("llvm-profdata");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_profmill"), &link).unwrap();
    let input = tmp.path().join("a.proftext");
    std::fs::write(&input, ":ir\nf\n1\n2\n5\n6\n\n").unwrap();
    let theirs = run_merge(
        LLVM_PROFDATA,
        &[],
        &[input.display().to_string()],
        &tmp.path().join("theirs"),
    );
    let ours = run_merge(
        link.to_str().unwrap(),
        &[],
        &[input.display().to_string()],
        &tmp.path().join("ours"),
    );
    assert!(
        ours.output.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.output.stderr)
    );
    assert_eq!(ours.bytes, theirs.bytes);
}
