//! `profmill autofdo` (llvm-profgen style) as clang-19 sees it: `-fprofile-sample-use` with our
//! profile builds without profile warnings and makes the same decisions as with llvm-profgen
//! 19's profile of the same capture.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::autofdo::{
    clang_program, have_profgen_tools, llvm_profgen, normalized, ours_profgen, PROGRAM_C,
};
use crate::autofdo_gcc::{program_and_library_equal_llvm_profgen, LIBRARY_C, PROGRAM_CC};
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

/// llvm-dwp from LLVM 19 (Debian package `llvm-19`): packs `.dwo` files into a `.dwp`.
const LLVM_DWP_19: &str = "/usr/lib/llvm-19/bin/llvm-dwp";

/// The normalized text profile of `binary` (built from the test program) for a generated LBR
/// capture with seed 5: (ours, llvm-profgen 19's).
fn both_profiles(dir: &Path, binary: &Path) -> (String, String) {
    let name = binary.file_name().unwrap().to_str().unwrap();
    let capture = dir.join(format!("{name}.perf.data"));
    generate_capture(&capture, &[binary], 2, 5_000, false, 5);
    let theirs = dir.join(format!("{name}.theirs.txt"));
    let mine = dir.join(format!("{name}.ours.txt"));
    llvm_profgen(binary, &capture, &theirs);
    ours_profgen(binary, &capture, &mine);
    (normalized(&mine), normalized(&theirs))
}

/// Split DWARF and compressed debug sections: the test program built with `-gsplit-dwarf`
/// (DWARF 5 skeleton units and `.dwo` files; DWARF 4 with GNU's extension), its `.dwo` files
/// packed by llvm-dwp into `BINARY.dwp` (the `.dwo` files then removed), and built with
/// `-gz` (zlib) and `-gz=zstd`: the same profile as the plain `-g` build, and as
/// llvm-profgen 19's of each build.
#[test]
fn split_and_compressed_dwarf_give_the_plain_builds_profile() {
    if !have_profgen_tools() || !have_tool(CLANG_19) || !have_tool(LLVM_DWP_19) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plain = clang_program(dir.path(), "plain", &PROFILED_FLAGS);
    let (expected, theirs) = both_profiles(dir.path(), &plain);
    assert_eq!(expected, theirs, "plain");
    // Inlined frames come from the .dwo files: `mix` is inlined into `walk`.
    assert!(expected.contains(": mix:"), "{expected}");
    for (name, extra) in [
        ("split5", &["-gsplit-dwarf"][..]),
        ("split4", &["-gsplit-dwarf", "-gdwarf-4"][..]),
        ("packed5", &["-gsplit-dwarf"][..]),
        ("packed4", &["-gsplit-dwarf", "-gdwarf-4"][..]),
        ("zlib", &["-gz=zlib"][..]),
        ("zstd", &["-gz=zstd"][..]),
    ] {
        let flags: Vec<&str> = PROFILED_FLAGS.iter().chain(extra).copied().collect();
        let binary = clang_program(dir.path(), name, &flags);
        let dwo = dir.path().join(format!("{name}-prog.dwo"));
        assert_eq!(
            dwo.exists(),
            name.starts_with("split") || name.starts_with("packed")
        );
        if name.starts_with("packed") {
            let mut package = binary.clone().into_os_string();
            package.push(".dwp");
            run_ok(
                Command::new(LLVM_DWP_19)
                    .arg("-e")
                    .arg(&binary)
                    .arg("-o")
                    .arg(&package),
            );
            std::fs::remove_file(&dwo).unwrap();
        }
        let (ours, theirs) = both_profiles(dir.path(), &binary);
        assert_eq!(ours, expected, "{name}");
        assert_eq!(theirs, expected, "{name}: llvm-profgen");
        if name == "split5" {
            // Without its .dwo file: a clear error naming it, no output (llvm-profgen warns
            // and writes a profile without the unit's functions).
            std::fs::remove_file(&dwo).unwrap();
            let out = dir.path().join("missing.txt");
            let o = run(profmill()
                .args(["autofdo", "-b"])
                .arg(&binary)
                .arg("-p")
                .arg(dir.path().join("split5.perf.data"))
                .arg("-o")
                .arg(&out));
            let e = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success() && !out.exists(), "{e}");
            assert!(e.contains("split5-prog.dwo"), "{e}");
        }
    }
}

/// A program with a function `--gc-sections` discards: its DWARF stays, at address 0.
const GC_PROGRAM_C: &str = r#"
#include <stdio.h>
__attribute__((noinline)) int unused_helper(int x) { return x * 7 + 3; }
static inline int sq(int x) { return x * x; }
__attribute__((noinline)) int pick(int x) { switch (x & 3) { case 0: return x + 1; case 1: return sq(x); default: return x - 7; } }
__attribute__((noinline)) int walk(int n) { int t = 0; for (int i = 0; i < n; i++) t += pick(i); return t; }
int main(int argc, char **argv) { printf("%d\n", walk(argc * 300000)); return 0; }
"#;

/// Named difference, the one behind the benchmark's extra llvm-profgen function (a clap
/// closure of the debug profmill build with only ` 0: 85339 …` call targets): llvm-profgen 19
/// replaces an LBR address outside the binary by `ExternalAddr` (0) and symbolizes it, so a
/// branch from outside (the kernel, another object) to a function's entry adds its call
/// target to whatever the DWARF puts at address 0: a function `--gc-sections` discarded,
/// whose DWARF the linker left at 0. We give such a branch its callee's head samples only, as
/// llvm-profgen does for the callee, and no call target (the source is no code of this
/// binary). Everything else is equal.
#[test]
fn llvm_profgen_gives_external_calls_to_a_discarded_function_at_address_0() {
    if !have_profgen_tools() || !have_tool(CLANG_19) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gc.c"), GC_PROGRAM_C).unwrap();
    let binary = dir.path().join("gc");
    run_ok(
        Command::new(CLANG_19)
            .args([
                "-O2",
                "-ffunction-sections",
                "-Wl,--gc-sections",
                "-Wl,--build-id",
            ])
            .args(["-fno-pie", "-no-pie", "gc.c", "-o", "gc"])
            .args(PROFILED_FLAGS)
            .current_dir(dir.path()),
    );
    let (ours, theirs) = both_profiles(dir.path(), &binary);
    // llvm-profgen's one extra function, `unused_helper:0:0` with the external calls at its
    // line offset 0 (line 3 is its declaration line), is not ours.
    let mut extra = theirs.split("\nunused_helper:0:0\n");
    let (before, after) = (extra.next().unwrap(), extra.next().expect(&theirs));
    let (calls, rest) = after.split_once('\n').unwrap_or((after, ""));
    assert!(
        calls.starts_with(" 0: ") && calls.contains(" walk:"),
        "{calls}"
    );
    assert!(!ours.contains("unused_helper"), "{ours}");
    assert_eq!(ours, format!("{before}\n{rest}"));
}

/// The C++ program of `autofdo_gcc` (inlining three levels deep, loops with discriminators, a
/// jump-table switch, indirect calls through a table, templates, exceptions) and its shared
/// library, built by clang-19 `-O2 -g -fdebug-info-for-profiling`: a PIE and a library.
fn clang_cxx_program(dir: &Path) -> (PathBuf, PathBuf) {
    std::fs::write(dir.join("prog.cc"), PROGRAM_CC).unwrap();
    std::fs::write(dir.join("work.c"), LIBRARY_C).unwrap();
    let lib = dir.join("libwork.so");
    run_ok(
        Command::new(CLANG_19)
            .args(["-O2", "-fPIC", "-shared", "-Wl,--build-id", "work.c", "-o"])
            .arg(&lib)
            .args(PROFILED_FLAGS)
            .current_dir(dir),
    );
    let prog = dir.join("prog");
    run_ok(
        Command::new(CLANGXX_19)
            .args(["-O2", "-Wl,--build-id", "prog.cc"])
            .args(["-L.", "-lwork", "-Wl,-rpath,$ORIGIN", "-o"])
            .arg(&prog)
            .args(PROFILED_FLAGS)
            .current_dir(dir),
    );
    (prog, lib)
}

/// The default style against llvm-profgen 19 on the clang-19 C++ program (a PIE) and on its
/// shared library, with a generated LBR capture of both (kernel entries, several processes);
/// then the program from a real cpu-clock capture (IP samples; see `autofdo_ips`).
#[test]
fn clang_cxx_program_and_library_equal_llvm_profgen() {
    if !have_profgen_tools() || !have_tool(CLANGXX_19) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (prog, lib) = clang_cxx_program(d);
    // The switch, a template instance, the function that throws, an indirect callee; the
    // library's function.
    let expected: [(&Path, &[&str]); 2] = [
        (
            &prog,
            &["_Z2swi:", "_ZN3AccIiE3addEi:", "_Z9may_throwi:", "_Z3f_ci:"],
        ),
        (&lib, &["lib_work:"]),
    ];
    program_and_library_equal_llvm_profgen(d, &expected, 7);
}
