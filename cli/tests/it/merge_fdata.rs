//! `profmill merge-fdata` against LLVM 22's `merge-fdata`, over generated fdata files.
//!
//! merge-fdata prints lines in hash-table order, so outputs are compared as sorted lines;
//! ours must also already be sorted. Differences on inputs LLVM 22 rejects or garbles are
//! named tests below.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use corpus::fdata::{write_fdata_files, FdataSpec};
use testsupport::{have_tool, MERGE_FDATA_22};

fn profmill_merge() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_profmill"));
    c.arg("merge-fdata");
    c
}

fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn run_ok(cmd: &mut Command) -> Vec<u8> {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8(bytes.to_vec())
        .expect("fdata output is UTF-8 here")
        .lines()
        .map(str::to_owned)
        .collect()
}

fn sorted(mut lines: Vec<String>) -> Vec<String> {
    lines.sort();
    lines
}

/// Our output's lines (checked to be in sorted order already) and LLVM's, sorted.
fn assert_same_merge(ours: &[u8], theirs: &[u8], what: &str) {
    let ours = lines(ours);
    // After the headers, bytewise order of the lines = `LC_ALL=C sort`.
    let body = ours
        .iter()
        .skip_while(|l| *l == "boltedcollection" || l.starts_with("no_lbr"));
    if let Some(pair) = body.clone().zip(body.skip(1)).find(|(a, b)| a >= b) {
        panic!("{what}: our output is not sorted: {pair:?}");
    }
    let ours = sorted(ours);
    let theirs = sorted(lines(theirs));
    assert!(theirs.len() > 1, "{what}: LLVM merged almost nothing");
    if ours != theirs {
        let only_ours: Vec<_> = ours
            .iter()
            .filter(|l| !theirs.contains(l))
            .take(5)
            .collect();
        let only_theirs: Vec<_> = theirs
            .iter()
            .filter(|l| !ours.contains(l))
            .take(5)
            .collect();
        panic!(
            "{what}: {} lines vs {} from merge-fdata\nonly ours: {only_ours:#?}\nonly merge-fdata: {only_theirs:#?}",
            ours.len(),
            theirs.len()
        );
    }
}

fn generate(dir: &Path, spec: &FdataSpec) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    write_fdata_files(dir, spec).unwrap()
}

#[test]
fn equals_merge_fdata_over_hundreds_of_files() {
    if !have_tool(MERGE_FDATA_22) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let spec = FdataSpec {
        seed: 22,
        files: 300,
        lines_per_file: 150,
        functions: 60,
        distinct_keys: 2000,
        memory_percent: 5,
        ..FdataSpec::default()
    };
    let files = generate(tmp.path(), &spec);
    let theirs = run_ok(Command::new(MERGE_FDATA_22).args(&files));
    let out = tmp.path().join("merged.fdata");
    let stdout = run_ok(profmill_merge().args(&files).arg("-o").arg(&out));
    assert!(stdout.is_empty(), "-o still printed to stdout");
    let ours = std::fs::read(&out).unwrap();
    assert_same_merge(&ours, &theirs, "300 generated LBR files");
    // Escaped names, locals, tag 2 and memory lines all made it through.
    let text = String::from_utf8_lossy(&ours);
    for needle in ["back\\\\slash\\ name", "\n2 ", "\n4 ", "[unknown]", "/1 "] {
        assert!(text.contains(needle), "no {needle:?} in the merged output");
    }
}

#[test]
fn directory_argument_through_a_merge_fdata_link() {
    if !have_tool(MERGE_FDATA_22) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    for (i, sub) in ["", "host-a", "host-b/deep"].iter().enumerate() {
        let spec = FdataSpec {
            seed: 100 + i as u64,
            files: 40,
            ..FdataSpec::default()
        };
        generate(&data.join(sub), &spec);
    }
    let link_dir = tmp.path().join("bin");
    std::fs::create_dir(&link_dir).unwrap();
    let link = link_dir.join("merge-fdata");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_profmill"), &link).unwrap();

    let theirs = run_ok(Command::new(MERGE_FDATA_22).arg(&data));
    let ours = run_ok(Command::new(&link).arg(&data));
    assert_same_merge(&ours, &theirs, "a directory tree, via the link");

    // LLVM's option spellings, through the link as well.
    for spelling in ["-o=", "--o="] {
        let out = tmp.path().join(format!("out{spelling}fdata"));
        let mut arg = std::ffi::OsString::from(spelling);
        arg.push(&out);
        run_ok(Command::new(&link).arg(&arg).arg(&data));
        assert_same_merge(&std::fs::read(&out).unwrap(), &theirs, spelling);
    }
}

#[test]
fn comma_separated_inputs_and_yaml_only_options() {
    if !have_tool(MERGE_FDATA_22) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let files = generate(tmp.path(), &FdataSpec::default());
    let list = files
        .iter()
        .map(|p| p.to_str().unwrap())
        .collect::<Vec<_>>()
        .join(",");
    let args = ["-q", "--print=exec", &list];
    let theirs = run_ok(Command::new(MERGE_FDATA_22).args(args));
    let out = run(profmill_merge().args(args));
    assert!(out.status.success());
    assert_same_merge(&out.stdout, &theirs, "comma list with -q --print=exec");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: -q") && stderr.contains("warning: --print=exec"),
        "{stderr}"
    );
}

#[test]
fn bolted_collection_profiles() {
    if !have_tool(MERGE_FDATA_22) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let spec = FdataSpec {
        seed: 7,
        files: 60,
        bolted: true,
        ..FdataSpec::default()
    };
    let files = generate(tmp.path(), &spec);
    let theirs = run_ok(Command::new(MERGE_FDATA_22).args(&files));
    let ours = run_ok(profmill_merge().args(&files));
    assert!(ours.starts_with(b"boltedcollection\n"));
    assert!(theirs.starts_with(b"boltedcollection\n"));
    assert_same_merge(&ours, &theirs, "boltedcollection profiles");
}

/// LLVM 22 writes a bare `no_lbr` header, dropping the event names; we keep their union
/// (what newer upstream merge-fdata does). The sample and memory lines are the same.
#[test]
fn no_lbr_profiles_keep_their_events() {
    if !have_tool(MERGE_FDATA_22) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (seed, events) in [
        (1, vec!["cycles:u:"]),
        (2, vec!["cycles:u:", "instructions:u:"]),
    ] {
        let spec = FdataSpec {
            seed,
            files: 30,
            no_lbr: Some(events.into_iter().map(String::from).collect()),
            ..FdataSpec::default()
        };
        files.extend(generate(&tmp.path().join(seed.to_string()), &spec));
    }
    let theirs = run_ok(Command::new(MERGE_FDATA_22).args(&files));
    let ours = run_ok(profmill_merge().args(&files));
    let (our_header, our_body) = split_first_line(&ours);
    let (their_header, their_body) = split_first_line(&theirs);
    assert_eq!(their_header, "no_lbr", "LLVM 22 changed its no_lbr header");
    assert_eq!(our_header, "no_lbr cycles:u: instructions:u:");
    assert_same_merge(our_body, their_body, "no_lbr sample lines");
}

fn split_first_line(bytes: &[u8]) -> (&str, &[u8]) {
    let end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .expect("a header line");
    (
        std::str::from_utf8(&bytes[..end]).unwrap(),
        &bytes[end + 1..],
    )
}

/// Both tools refuse to merge LBR with no_lbr, or BOLTed with non-BOLTed, profiles.
#[test]
fn refuses_mixed_profiles_like_merge_fdata() {
    if !have_tool(MERGE_FDATA_22) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let make = |name: &str, spec: FdataSpec| generate(&tmp.path().join(name), &spec);
    let lbr = make(
        "lbr",
        FdataSpec {
            files: 2,
            ..FdataSpec::default()
        },
    );
    let basic = make(
        "basic",
        FdataSpec {
            files: 1,
            no_lbr: Some(vec![]),
            ..FdataSpec::default()
        },
    );
    let bolted = make(
        "bolted",
        FdataSpec {
            files: 1,
            bolted: true,
            ..FdataSpec::default()
        },
    );
    for (mix, header, odd) in [
        ([&lbr[0], &lbr[1], &basic[0]], "no_lbr", &basic[0]),
        ([&basic[0], &lbr[0], &lbr[1]], "no_lbr", &lbr[0]),
        (
            [&lbr[0], &bolted[0], &lbr[1]],
            "boltedcollection",
            &bolted[0],
        ),
    ] {
        let theirs = run(Command::new(MERGE_FDATA_22).args(mix));
        assert!(!theirs.status.success(), "merge-fdata accepted {mix:?}");
        let their_err = String::from_utf8_lossy(&theirs.stderr);
        assert!(their_err.contains(&format!("cannot mix profile with and without {header}")));
        let out = tmp.path().join("mixed.fdata");
        let ours = run(profmill_merge().args(mix).arg("-o").arg(&out));
        assert!(!ours.status.success(), "we accepted {mix:?}");
        assert!(!out.exists(), "a refused merge left an output");
        let our_err = String::from_utf8_lossy(&ours.stderr);
        let expected = format!(
            "{}: cannot mix profile with and without {header}",
            odd.display()
        );
        assert!(our_err.contains(&expected), "{our_err}");
    }
}

/// A broken line: both tools fail; ours names the file, the line and what was expected.
#[test]
fn broken_lines_fail_naming_file_and_line() {
    if !have_tool(MERGE_FDATA_22) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let files = generate(
        tmp.path(),
        &FdataSpec {
            files: 3,
            ..FdataSpec::default()
        },
    );
    let broken = tmp.path().join("broken.fdata");
    let good_lines = 200; // FdataSpec::default().lines_per_file
    let mut text = std::fs::read(&files[0]).unwrap();
    assert_eq!(lines(&text).len(), good_lines);
    text.extend_from_slice(b"1 main 1f 1 work 0 0 12x\n");
    std::fs::write(&broken, text).unwrap();
    let args = [&files[1], &broken, &files[2]];
    let theirs = run(Command::new(MERGE_FDATA_22).args(args));
    assert!(!theirs.status.success());
    let ours = run(profmill_merge().args(args));
    assert!(!ours.status.success());
    let err = String::from_utf8_lossy(&ours.stderr);
    let expected = format!(
        "{}: line {}, column 22 (byte offset ",
        broken.display(),
        good_lines + 1
    );
    assert!(err.contains(&expected), "{err}");
    assert!(err.contains("expected a decimal branch count"), "{err}");
    assert!(err.contains("found \"12x\""), "{err}");
    assert!(ours.stdout.is_empty(), "output written despite the error");
}

/// Missing inputs and unknown options fail in both tools.
#[test]
fn bad_command_lines_fail_like_merge_fdata() {
    if !have_tool(MERGE_FDATA_22) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let files = generate(
        tmp.path(),
        &FdataSpec {
            files: 1,
            ..FdataSpec::default()
        },
    );
    let missing = tmp.path().join("missing.fdata");
    let cases: [Vec<&OsStr>; 4] = [
        vec![missing.as_os_str()],
        vec![OsStr::new("--bogus"), files[0].as_os_str()],
        vec![OsStr::new("-oout"), files[0].as_os_str()],
        vec![],
    ];
    for args in cases {
        let theirs = run(Command::new(MERGE_FDATA_22).args(&args));
        let ours = run(profmill_merge().args(&args));
        assert!(!theirs.status.success(), "merge-fdata accepted {args:?}");
        assert!(!ours.status.success(), "we accepted {args:?}");
        assert!(!ours.stderr.is_empty());
    }
}

/// Named difference: LLVM 22 rejects negative counts ("Malformed / corrupted execution
/// count"; it reads them as `uint64_t`) while llvm-bolt's reader accepts them (`int64_t`),
/// and perf2bolt can write them from pre-aggregated input. We accept and sum them.
#[test]
fn difference_negative_counts_are_summed() {
    if !have_tool(MERGE_FDATA_22) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a.fdata");
    let b = tmp.path().join("b.fdata");
    std::fs::write(&a, "1 main 10 1 work 0 0 -5\n").unwrap();
    std::fs::write(&b, "1 main 10 1 work 0 1 7\n").unwrap();
    let theirs = run(Command::new(MERGE_FDATA_22).args([&a, &b]));
    assert!(
        !theirs.status.success(),
        "LLVM 22 now accepts negative counts"
    );
    assert!(String::from_utf8_lossy(&theirs.stderr).contains("Malformed"));
    let ours = run_ok(profmill_merge().args([&a, &b]));
    assert_eq!(ours, b"1 main 10 1 work 0 1 2\n");
}

/// LLVM 22 fails on empty files, files with only headers, blank lines and trailing spaces;
/// so do we, naming the line (merge-fdata after LLVM 22 trims lines and skips blank ones).
#[test]
fn empty_inputs_and_blank_lines_fail_like_merge_fdata() {
    if !have_tool(MERGE_FDATA_22) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good.fdata");
    std::fs::write(&good, "1 main 10 1 work 0 0 5\n").unwrap();
    let cases = [
        (
            "",
            "line 1 (byte offset 0): expected a profile line, found the end of the file",
        ),
        (
            "\n",
            "line 1 (byte offset 0): expected a profile line, found an empty line",
        ),
        (
            "no_lbr\n",
            "line 2 (byte offset 7): expected a profile line, found the end",
        ),
        (
            "boltedcollection\n",
            "line 2 (byte offset 17): expected a profile line, found the end",
        ),
        (
            "1 main 10 1 work 0 0 5\n\n",
            "line 2 (byte offset 23): expected a profile line, found an empty line",
        ),
        (
            "1 main 10 1 work 0 0 5 \n",
            "line 1 (byte offset 0): expected a profile line, found a line ending in whitespace",
        ),
    ];
    for (text, expected) in cases {
        let bad = tmp.path().join("bad.fdata");
        std::fs::write(&bad, text).unwrap();
        let out = tmp.path().join("out.fdata");
        std::fs::write(&out, "old").unwrap();
        // A header-only input would first fail as a mix with `good`.
        let orders: Vec<Vec<&PathBuf>> = if text.starts_with('1') || text.starts_with('\n') {
            vec![vec![&good, &bad], vec![&bad, &good]]
        } else {
            vec![vec![&bad]]
        };
        for args in orders {
            let theirs = run(Command::new(MERGE_FDATA_22).args(&args));
            assert!(!theirs.status.success(), "LLVM 22 now accepts {text:?}");
            let ours = run(profmill_merge().args(&args).arg("-o").arg(&out));
            assert!(!ours.status.success(), "we accepted {text:?}");
            let err = String::from_utf8_lossy(&ours.stderr);
            assert!(
                err.contains(&format!("{}: {expected}", bad.display())),
                "{text:?}: {err}"
            );
            assert_eq!(std::fs::read(&out).unwrap(), b"old", "output replaced");
        }
    }
}

/// Named difference: LLVM 22 does not count fields; a branch line with an extra field is
/// keyed as whatever precedes its last two fields (so `… 2 5 7` becomes key `… 2`,
/// mispredictions 5, count 7). We refuse such a line.
#[test]
fn difference_lines_with_extra_fields_are_refused() {
    if !have_tool(MERGE_FDATA_22) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a.fdata");
    std::fs::write(&a, "1 main 10 1 work 0 2 5 7\n").unwrap();
    let theirs = run_ok(Command::new(MERGE_FDATA_22).arg(&a));
    assert_eq!(theirs, b"1 main 10 1 work 0 2 5 7\n");
    let ours = run(profmill_merge().arg(&a));
    assert!(!ours.status.success());
    let err = String::from_utf8_lossy(&ours.stderr);
    assert!(err.contains("line 1, column 24"), "{err}");
    assert!(err.contains("another field \"7\""), "{err}");
}

/// Linked as `merge-fdata-19`, we merge as LLVM 19's merge-fdata does: a branch line's
/// misprediction count is part of its key, so equal branches with different misprediction
/// counts stay apart (LLVM 22, and `profmill merge-fdata`, sum them).
#[test]
fn linked_as_merge_fdata_19_it_merges_like_llvm_19() {
    if !have_tool(testsupport::MERGE_FDATA_19) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let spec = FdataSpec {
        seed: 19,
        files: 40,
        lines_per_file: 200,
        functions: 20,
        distinct_keys: 300,
        memory_percent: 5,
        ..FdataSpec::default()
    };
    let files = generate(tmp.path(), &spec);
    let link = tmp.path().join("merge-fdata-19");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_profmill"), &link).unwrap();
    let theirs = sorted(lines(&run_ok(
        Command::new(testsupport::MERGE_FDATA_19).args(&files),
    )));
    let ours = lines(&run_ok(Command::new(&link).args(&files)));
    assert_eq!(ours, sorted(ours.clone()), "our output is sorted");
    assert_eq!(ours, theirs);
    // The point of the personality: LLVM 22's merge gives fewer lines here.
    let summed = lines(&run_ok(profmill_merge().args(&files)));
    assert!(
        summed.len() < ours.len(),
        "no branch with two misprediction counts was generated"
    );
}
