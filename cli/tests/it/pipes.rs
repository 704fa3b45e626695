//! Inputs that are not regular files: a pipe is read once and whole (the kind of profile is
//! decided from the same bytes that are then read), a device is refused with what it is, and
//! commands that need a regular file say so.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::*;
use testsupport::*;

/// `profmill ARGS` with the contents of `stdin` on a pipe as standard input (through `cat`:
/// given the file itself, `/dev/stdin` would open as that regular file).
fn through_pipe(stdin: &Path, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut cat = Command::new("cat")
        .arg(stdin)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut cmd = profmill();
    for a in args {
        cmd.arg(a);
    }
    let out = cmd.stdin(cat.stdout.take().unwrap()).output().unwrap();
    cat.wait().unwrap();
    out
}

fn from_file(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    profmill_with(args).stdin(Stdio::null()).output().unwrap()
}

fn ok(out: Output) -> Vec<u8> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn a_pipe_reads_as_the_file_would() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let capture = shared_perf("autofdo-propeller_sample_1.perf.data");
    let binary = shared_perf("autofdo-propeller_sample_1.bin");
    let sample = shared_corpus("llvm-profdata/llvm-11/sample-profile.proftext");
    let stdin = Path::new("/dev/stdin");
    // `show` looks for a store first: a pipe's first bytes must still reach the sample reader.
    assert_eq!(
        ok(through_pipe(&sample, &[&"show", &stdin])),
        ok(from_file(&[&"show", &sample]))
    );
    // perf2bolt --pa reads the text once for the fdata and for the YAML view.
    let preagg = dir.join("p.preagg");
    profmill_aggregate(&capture, &binary, "preagg", &preagg);
    let outputs = |tag: &str| {
        (
            dir.join(format!("{tag}.fdata")),
            dir.join(format!("{tag}.yaml")),
        )
    };
    let (file_fdata, file_yaml) = outputs("file");
    let (pipe_fdata, pipe_yaml) = outputs("pipe");
    ok(from_file(&[
        &"perf2bolt",
        &binary,
        &"--pa",
        &"-p",
        &preagg,
        &"-o",
        &file_fdata,
        &"-w",
        &file_yaml,
    ]));
    ok(through_pipe(
        &preagg,
        &[
            &"perf2bolt",
            &binary,
            &"--pa",
            &"-p",
            &stdin,
            &"-o",
            &pipe_fdata,
            &"-w",
            &pipe_yaml,
        ],
    ));
    assert_eq!(
        std::fs::read(&file_fdata).unwrap(),
        std::fs::read(&pipe_fdata).unwrap()
    );
    assert_eq!(
        std::fs::read(&file_yaml).unwrap(),
        std::fs::read(&pipe_yaml).unwrap()
    );
    // merge-fdata decides between fdata and YAML by the first input's first bytes.
    for input in [&file_fdata, &file_yaml] {
        assert_eq!(
            ok(through_pipe(input, &[&"merge-fdata", &stdin])),
            ok(from_file(&[&"merge-fdata", input]))
        );
    }
}

#[test]
fn devices_and_pipes_are_refused_where_they_cannot_be_read() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    let binary = shared_perf("autofdo-propeller_sample_1.bin");
    let zero = Path::new("/dev/zero");
    // Each would read /dev/zero to no end: `timeout` turns a regression into a failure, not a
    // test that never ends.
    let commands: &[&[&dyn AsRef<std::ffi::OsStr>]] = &[
        &[&"show", &zero],
        &[&"convert", &zero, &"-o", &out, &"--to", &"text"],
        &[&"merge-fdata", &zero],
        &[&"llvm-profdata", &"show", &zero],
        &[&"llvm-profdata", &"show", &"--sample", &zero],
        &[&"perf2bolt", &binary, &"--pa", &"-p", &zero, &"-o", &out],
        &[&"bat", &"dump", &zero],
    ];
    for args in commands {
        let mut cmd = Command::new("timeout");
        cmd.arg("20").arg(env!("CARGO_BIN_EXE_profmill"));
        for a in *args {
            cmd.arg(a);
        }
        let output = cmd.stdin(Stdio::null()).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{cmd:?}: {stderr}");
        assert!(
            stderr.contains("/dev/zero: is a character device, not a regular file"),
            "{cmd:?}: {stderr}"
        );
        assert!(!out.exists());
    }
    // A store merge reads its inputs at offsets: a pipe or a device is named, not skipped.
    let store = d.path().join("s.pms");
    let capture = shared_perf("autofdo-propeller_sample_1.perf.data");
    store_of_capture(&capture, &store);
    let piped = through_pipe(&store, &[&"merge", &"/dev/stdin", &"-o", &out]);
    let stderr = String::from_utf8_lossy(&piped.stderr);
    assert!(!piped.status.success());
    assert!(
        stderr.contains(
            "/dev/stdin: is a pipe, not a regular file: stores are merged from regular files"
        ),
        "{stderr}"
    );
    let null = profmill_error(&[&"merge", &store, &"/dev/null", &"-o", &out]);
    assert!(null.contains("/dev/null: is a character device"), "{null}");
    assert!(!out.exists());
}
