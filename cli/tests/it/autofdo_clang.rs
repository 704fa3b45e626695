//! `profmill autofdo` (llvm-profgen style) as clang-19 sees it: `-fprofile-sample-use` with our
//! profile builds without profile warnings and makes the same decisions as with llvm-profgen
//! 19's profile of the same capture.

use std::path::Path;
use std::process::Command;

use crate::autofdo::{clang_program, have_profgen_tools, llvm_profgen, ours_profgen, PROGRAM_C};
use crate::common::*;
use testsupport::*;

/// The flags of the profiled build, repeated when the profile is used.
const PROFILED_FLAGS: [&str; 2] = ["-g", "-fdebug-info-for-profiling"];

/// `clang-19 -O2 … -fprofile-sample-use=PROFILE -c prog.c` with the sample profile loader's
/// remarks (applied, missed, analysis) and every warning on: its stderr and the object file.
fn clang_with_profile(dir: &Path, profile: &Path, name: &str) -> (String, Vec<u8>) {
    let object = dir.join(format!("{name}.o"));
    let out = run_ok(
        Command::new(CLANG_19)
            .args(["-O2", "-c", "prog.c", "-Wall"])
            .args(PROFILED_FLAGS)
            .arg(format!("-fprofile-sample-use={}", profile.display()))
            .args([
                "-Rpass=sample-profile",
                "-Rpass-missed=sample-profile",
                "-Rpass-analysis=sample-profile",
                "-Rpass=inline",
                "-Rpass-missed=inline",
            ])
            .arg("-o")
            .arg(&object)
            .current_dir(dir),
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    (stderr, std::fs::read(&object).unwrap())
}

/// `profmill autofdo --format FORMAT` (default style).
fn ours_in(format: &str, binary: &Path, capture: &Path, out: &Path) {
    run_ok(
        profmill()
            .args(["autofdo", "--format", format, "-b"])
            .arg(binary)
            .arg("-p")
            .arg(capture)
            .arg("-o")
            .arg(out),
    );
}

/// The clang-19 test program and a generated LBR capture: with our profile, text and
/// extbinary, clang-19 `-fprofile-sample-use` warns about nothing and prints the same
/// sample-profile and inlining remarks (applied, missed, analysis) as with llvm-profgen 19's
/// profile in the same format, and writes the same object file.
#[test]
fn clang_uses_our_profile_as_llvm_profgens() {
    if !have_profgen_tools() || !have_tool(CLANG_19) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = clang_program(dir.path(), "prog", &PROFILED_FLAGS);
    assert!(std::fs::read_to_string(dir.path().join("prog.c")).unwrap() == PROGRAM_C);
    let capture = dir.path().join("prog.perf.data");
    generate_capture(&capture, &[&binary], 2, 5_000, false, 11);
    for format in ["text", "extbinary"] {
        let theirs = dir.path().join(format!("theirs.{format}"));
        let mine = dir.path().join(format!("ours.{format}"));
        if format == "text" {
            llvm_profgen(&binary, &capture, &theirs);
            ours_profgen(&binary, &capture, &mine);
        } else {
            run_ok(
                Command::new(LLVM_PROFGEN_19)
                    .arg(format!("--binary={}", binary.display()))
                    .arg(format!("--perfdata={}", capture.display()))
                    .arg(format!("--output={}", theirs.display()))
                    .arg(format!("--format={format}")),
            );
            ours_in(format, &binary, &capture, &mine);
        }
        let (their_remarks, their_object) =
            clang_with_profile(dir.path(), &theirs, &format!("theirs-{format}"));
        let (our_remarks, our_object) =
            clang_with_profile(dir.path(), &mine, &format!("ours-{format}"));
        assert!(!our_remarks.contains("warning"), "{format}: {our_remarks}");
        // The profile is applied ("Applied N samples from profile"), and it steers inlining.
        assert!(
            our_remarks.contains("remark: Applied "),
            "{format}: {our_remarks}"
        );
        assert!(
            our_remarks.contains("inlined into"),
            "{format}: {our_remarks}"
        );
        assert_eq!(our_remarks, their_remarks, "{format}");
        assert!(
            our_object == their_object,
            "{format}: the object files differ"
        );
    }
}
