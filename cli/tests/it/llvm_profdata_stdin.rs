//! `-` (standard input) as an input of `profmill llvm-profdata merge|show|overlap`, against
//! llvm-profdata-19. `show` reads it; `merge` accepts it but, like LLVM 19 (whose memprof-format
//! probe consumes standard input first), merges nothing from it; `overlap` sums it but finds it
//! empty when reading it again.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use testsupport::{existing, have_tool, shared_corpus, LLVM_PROFDATA_19 as LLVM_PROFDATA};

fn corpus(name: &str) -> Option<PathBuf> {
    existing(shared_corpus("llvm-profdata/llvm-19").join(name))
}

/// Runs a tool with `stdin` as standard input; returns (success, stdout, the output file).
fn run(
    program: &str,
    prefix: &[&str],
    args: &[String],
    stdin: &Path,
    out: &Path,
) -> (bool, Vec<u8>, Option<Vec<u8>>) {
    let _ = std::fs::remove_file(out);
    let output = Command::new(program)
        .args(prefix)
        .args(args)
        .stdin(Stdio::from(std::fs::File::open(stdin).unwrap()))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    (
        output.status.success(),
        output.stdout,
        std::fs::read(out).ok(),
    )
}

fn assert_same(args: &[&str], stdin: &Path, dir: &Path) -> bool {
    let out = dir.join("out");
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("OUT", &out.display().to_string()))
        .collect();
    let theirs = run(LLVM_PROFDATA, &[], &args, stdin, &out);
    let ours = run(
        env!("CARGO_BIN_EXE_profmill"),
        &["llvm-profdata"],
        &args,
        stdin,
        &out,
    );
    assert_eq!(ours, theirs, "{args:?} < {}", stdin.display());
    theirs.0
}

#[test]
fn standard_input_as_llvm_profdata_19_reads_it() {
    let (Some(raw), Some(base), Some(test)) = (
        corpus("c-general.profraw"),
        corpus("overlap_1.proftext"),
        corpus("overlap_2.proftext"),
    ) else {
        return;
    };
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let list = dir.join("list.txt");
    std::fs::write(&list, "-\n").unwrap();
    let list = list.display().to_string();
    let (raw_s, base_s, test_s) = (
        raw.display().to_string(),
        base.display().to_string(),
        test.display().to_string(),
    );
    let empty = dir.join("empty");
    std::fs::write(&empty, b"").unwrap();
    for (args, stdin) in [
        (vec!["merge", "-", "-o", "OUT"], &raw),
        (vec!["merge", "-", &raw_s, "-o", "OUT"], &raw),
        (vec!["merge", "--text", "-", "-o", "-"], &base),
        (vec!["merge", "-f", &list, "-o", "OUT"], &raw),
        (
            vec![
                "merge",
                "--weighted-input=2,-",
                "--failure-mode=all",
                "-o",
                "OUT",
            ],
            &empty,
        ),
        (vec!["show", "-", "-o", "OUT"], &raw),
        (
            vec!["show", "--all-functions", "--counts", "-o", "OUT", "-"],
            &base,
        ),
        (vec!["show", "-"], &raw),
        (vec!["overlap", &base_s, "-"], &test),
        (vec!["overlap", "-", &test_s, "--value-cutoff=0"], &base),
        (vec!["overlap", "-", "-"], &base),
    ] {
        assert_same(&args, stdin, dir);
    }
    // `show` really reads standard input.
    assert!(assert_same(&["show", "-", "-o", "OUT"], &raw, dir));
    let shown = std::fs::read_to_string(dir.join("out")).unwrap();
    assert!(shown.contains("Total functions: 12"), "{shown}");
}
