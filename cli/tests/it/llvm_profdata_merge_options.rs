//! `profmill llvm-profdata merge --function/--no-function/--remapping-file/--keep-vtable-symbols`
//! against llvm-profdata-19: the same verdict for every pattern (LLVM's POSIX regex errors
//! included), byte-identical output, and the same "N of M functions … are filtered." note.

use std::path::Path;
use std::process::{Command, Output};

use testsupport::{have_tool, llvm_profdata_corpus as corpus, LLVM_PROFDATA_19 as LLVM_PROFDATA};

fn merge(program: &str, prefix: &[&str], args: &[String], out: &Path) -> (Output, Option<Vec<u8>>) {
    let _ = std::fs::remove_file(out);
    let output = Command::new(program)
        .args(prefix)
        .arg("merge")
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    (output, std::fs::read(out).ok())
}

fn filtered_note(stderr: &[u8]) -> Option<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .find(|l| l.ends_with("functions in the original profile are filtered."))
        .map(str::to_string)
}

/// Both tools on `args`: same verdict, same bytes, same filter note. Returns whether
/// llvm-profdata accepted.
fn assert_same(args: &[String], dir: &Path, what: &str) -> bool {
    let (theirs, theirs_bytes) = merge(LLVM_PROFDATA, &[], args, &dir.join("theirs"));
    let (ours, ours_bytes) = merge(
        env!("CARGO_BIN_EXE_profmill"),
        &["llvm-profdata"],
        args,
        &dir.join("ours"),
    );
    let accepted = theirs.status.success();
    assert_eq!(
        ours.status.success(),
        accepted,
        "{what}: verdicts differ\nllvm-profdata: {}\nprofmill: {}",
        String::from_utf8_lossy(&theirs.stderr),
        String::from_utf8_lossy(&ours.stderr)
    );
    if accepted {
        assert!(ours_bytes == theirs_bytes, "{what}: outputs differ");
        assert_eq!(
            filtered_note(&ours.stderr),
            filtered_note(&theirs.stderr),
            "{what}: filter notes differ"
        );
    } else {
        assert!(String::from_utf8_lossy(&ours.stderr).contains("error"));
        assert!(
            ours_bytes.is_none(),
            "{what}: a failed merge left an output"
        );
    }
    accepted
}

/// Names that tell POSIX ERE apart from Perl-style syntax (no name may parse as an integer:
/// the text reader would take it for a value-kind count).
const NAMES: &[&str] = &[
    "main",
    "foo",
    "bar",
    "_Z3fooi",
    "_ZN1A1fEv",
    "a{b",
    "a.b",
    "x\\d",
    "d",
    "a]b",
    "a-b",
    "a[b",
    "?foo@@YAHXZ",
    "foo.cpp;static_fn",
    "fooi",
    "Foo",
    "abc123",
    "a b",
    "caf\u{e9}",
    "a*b",
    "a+b",
    "a|b",
    "(x)",
    "^x",
    "end$",
];

/// Accepted and rejected by LLVM's regcomp, with the dialect differences that matter.
const PATTERNS: &[&str] = &[
    "^ma",
    "o",
    r"\d",
    r"[\d]",
    "a{",
    "a{1}",
    "[[:digit:]]",
    "[]a]",
    "[a-]",
    "f(o|i)+$",
    "?foo@@Y",
    "a.b",
    "[^a-z]",
    r"\.",
    r"\[",
    r"a\{",
    "(a|b)c",
    "()",
    "^$",
    "[[.-.]]",
    "[[=a=]]b",
    "caf.",
    r"x\\",
    "a[",
    "(a",
    "a|",
    "*a",
    "a**",
    "a*?",
    "^*",
    "a{2,1}",
    r"\1",
    "[z-a]",
    "a{,2}",
    "[a[]",
    "a&&b",
    "[a&&b]",
    "[--a]",
    "(?i)foo",
    r"\w",
    r"\s",
    r"\b",
    "[[:alpha:]]{3}",
    "o{2}",
    "$a",
    "F",
    "[.]",
    r"\(x",
    r"a\|b",
    r"[\]]",
    "a}",
    "{a",
    "{1}",
    "a(|b)",
    "(a|)",
    "a||b",
    "[[:foo:]]",
    r"[a-\]",
    "[^]]",
    "ab{1,}c",
    "[[:upper:]]",
    r"\^x",
    r"end\$",
    "fo*",
    "a+b",
    r"a\+b",
    "[]-a]",
    "[-a]",
    "[^-a]",
    "[a-c-e]",
    "[[.a.]-c]",
    "[a-[.c.]]",
    "[]]",
    "[[:alpha:]-z]",
    "[a--]",
    "[!--]",
    "\u{e9}",
];

fn names_profile(dir: &Path) -> String {
    let mut text = String::from(":ir\n");
    for (i, name) in NAMES.iter().enumerate() {
        // Every other function has zero counts, for --sparse.
        text.push_str(&format!("{name}\n{}\n1\n{}\n\n", i + 1, (i % 2) * (i + 1)));
    }
    // Same hash as `main`: remapped onto it, the counts add up.
    text.push_str("main_copy\n1\n1\n5\n\n");
    let path = dir.join("names.proftext");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn function_filters_follow_llvm_regex_semantics() {
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let names = names_profile(dir);
    let mut accepted = 0;
    for pattern in PATTERNS {
        let args = vec![
            names.clone(),
            "--text".into(),
            format!("--function={pattern}"),
        ];
        if assert_same(&args, dir, &format!("--function={pattern}")) {
            accepted += 1;
        }
        let args = vec![names.clone(), "--no-function".into(), pattern.to_string()];
        assert_same(&args, dir, &format!("--no-function {pattern}"));
    }
    assert!(accepted > 40 && accepted < PATTERNS.len(), "{accepted}");
    // Both filters (the negative one wins), indexed output, --sparse after filtering.
    for extra in [&[][..], &["--sparse"], &["--text", "--sparse"]] {
        let mut args = vec![
            names.clone(),
            "--function=o".into(),
            "--no-function=^f".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        assert_same(&args, dir, &format!("both filters {extra:?}"));
    }
}

#[test]
fn filters_on_raw_and_indexed_corpus_inputs() {
    let Some(corpus) = corpus() else {
        eprintln!("skipping: the corpus is missing");
        return;
    };
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let inputs: Vec<String> = [
        "c-general.profraw",
        "compressed.profraw",
        "compat.profdata.v10",
    ]
    .iter()
    .map(|f| corpus.join("llvm-19").join(f).display().to_string())
    .collect();
    for filter in ["--function=^s", "--no-function=^s", "--function=main|big"] {
        let mut args = inputs[..2].to_vec();
        args.push(filter.into());
        assert_same(&args, tmp.path(), filter);
        let args = vec![inputs[2].clone(), filter.into()];
        assert_same(&args, tmp.path(), &format!("indexed {filter}"));
    }
}

#[test]
fn remapping_files_rename_and_merge_records() {
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let names = names_profile(dir);
    let remap = dir.join("remap.txt");
    let remap_arg = remap.display().to_string();
    for (i, content) in [
        // foo takes main's place: the two records with one name and hash 1 and 2 stay apart;
        // main_copy merges into main (same hash).
        "foo main\nbar baz\nmain_copy main\n",
        // Two names onto one new name, CRLF line ends, comments and blank lines.
        "# comment\r\n\r\nFoo merged\r\nfooi merged\r\n",
        "foo bar\nfoo baz\n",
        "d a.b\n",
        "foo\n",
        "foo bar baz\n",
        " foo bar\n",
    ]
    .iter()
    .enumerate()
    {
        std::fs::write(&remap, content).unwrap();
        for spelling in [
            vec!["-r".to_string(), remap_arg.clone()],
            vec![format!("--remapping-file={remap_arg}")],
        ] {
            let mut args = vec![names.clone(), "--text".into()];
            args.extend(spelling);
            assert_same(&args, dir, &format!("remapping file {i}: {content:?}"));
        }
        let args = vec![
            names.clone(),
            "-r".into(),
            remap_arg.clone(),
            "--function=^m".into(),
        ];
        assert_same(&args, dir, &format!("remapped then filtered, file {i}"));
    }
}

/// A text profile whose one function has a vtable value site with `names`.
fn vtable_profile(path: &Path, function: &str, names: &[String]) -> String {
    let mut text = format!(":ir\n{function}\n1\n1\n10\n1\n2\n1\n{}\n", names.len());
    for (i, name) in names.iter().enumerate() {
        text.push_str(&format!("{name}:{}\n", i + 1));
    }
    text.push('\n');
    std::fs::write(path, text).unwrap();
    path.display().to_string()
}

const CXX_PROGRAM: &str = r#"
#include <cstdlib>
struct Base { virtual int f(int) = 0; virtual ~Base() {} };
struct A : Base { int f(int x) override { return x + 1; } };
struct B : Base { int f(int x) override { return x * 3; } };
struct C : Base { int f(int x) override { return x - 7; } };
int run(Base *b, int x) { return b->f(x); }
int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  A a; B b; C c; Base *all[3] = {&a, &b, &c};
  int s = 0;
  for (int i = 0; i < n; i++) s += run(all[i % 3], i);
  return s == 12345;
}
"#;

#[test]
fn keep_vtable_symbols_in_string_set_order() {
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // 40 and 25 names: the StringSet grows twice, and its order depends on insertion order.
    let many: Vec<String> = (0..40).map(|i| format!("_ZTV{i}Class{}", i * 7)).collect();
    let others: Vec<String> = (0..25).map(|i| format!("_ZTVOther{i}")).collect();
    let v1 = vtable_profile(&dir.join("v1.proftext"), "f", &many);
    let v2 = vtable_profile(&dir.join("v2.proftext"), "g", &others);
    let mut inputs = vec![v1.clone(), v2.clone()];
    if have_tool("clang++-19") {
        let src = dir.join("vt.cpp");
        std::fs::write(&src, CXX_PROGRAM).unwrap();
        let exe = dir.join("vt");
        let built = Command::new("clang++-19")
            .args([
                "-O1",
                "-fprofile-generate",
                "-mllvm",
                "-enable-vtable-value-profiling",
            ])
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .status()
            .unwrap();
        assert!(built.success());
        let raw = dir.join("vt.profraw");
        let ran = Command::new(&exe)
            .arg("50")
            .env("LLVM_PROFILE_FILE", &raw)
            .status()
            .unwrap();
        assert!(ran.success());
        inputs.push(raw.display().to_string());
    }
    let with_names = dir.join("kept.profdata");
    let kept = Command::new(LLVM_PROFDATA)
        .arg("merge")
        .args(&inputs)
        .args(["--keep-vtable-symbols", "-o"])
        .arg(&with_names)
        .status()
        .unwrap();
    assert!(kept.success());
    inputs.push(with_names.display().to_string());
    let args_of = |files: &[&String], extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = files.iter().map(|f| f.to_string()).collect();
        args.push("--keep-vtable-symbols".into());
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    for file in &inputs {
        assert_same(&args_of(&[file], &[]), dir, &format!("{file} alone"));
    }
    for extra in [
        &[][..],
        &["-j", "1"],
        &["--write-prev-version"],
        &["--sparse"],
    ] {
        assert_same(
            &args_of(&[&v1, &v2], extra),
            dir,
            &format!("v1 v2 {extra:?}"),
        );
        assert_same(
            &args_of(&[&v2, &v1], extra),
            dir,
            &format!("v2 v1 {extra:?}"),
        );
    }
    // llvm-profdata's writer contexts do not pass vtable names on when they are merged: with
    // two contexts only the first one's names are written.
    assert_same(&args_of(&[&v1, &v2], &["-j", "2"]), dir, "two contexts");
    assert_same(
        &args_of(&[&v2, &v1, &v2], &["-j", "2"]),
        dir,
        "two contexts, 3 inputs",
    );
    let all: Vec<&String> = inputs.iter().collect();
    assert_same(&args_of(&all, &["-j", "1"]), dir, "every input");
    // Without the flag no names are written.
    assert_same(&[v1.clone(), v2.clone()], dir, "without the flag");
}
