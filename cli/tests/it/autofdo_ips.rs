//! `profmill autofdo` on captures without branch stacks (IP samples, `perf record -e
//! cpu-clock`): equal to llvm-profgen 19 `--leading-ip-only` (default style) and to
//! create_llvm_prof 0.19 `--use_lbr=false` (`--style autofdo`), after `llvm-profdata-19 merge
//! --sample --text` of both.
//!
//! llvm-profgen 19 refuses `--perfdata` of such a capture ("Invalid perf script input!": it
//! detects its input type from a sample line with a branch record), so its reference is
//! made from `perf script` output with a dummy branch record after each IP, which
//! `--leading-ip-only` ignores.

use std::path::Path;
use std::process::Command;

use crate::autofdo::{
    assert_equal_but_garbled, clang_program, create_llvm_prof_with, have_profgen_tools, have_tools,
    normalized, test_lbr_in, ungarble_for,
};
use crate::common::*;
use testsupport::*;

/// The pids of `capture` that map `binary` (llvm-profgen's first `perf script` pass).
fn pids_mapping(binary: &Path, capture: &Path) -> Vec<String> {
    let name = binary.file_name().unwrap().to_string_lossy().into_owned();
    let out = run_ok(
        Command::new(PERF)
            .args(["script", "--show-mmap-events", "-F", "comm,pid", "-i"])
            .arg(capture),
    );
    let mut pids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.ends_with(&format!("/{name}")))
        .filter_map(|l| {
            let at = l.find("PERF_RECORD_MMAP")?;
            let pid = l[at..].split_whitespace().nth(1)?.split('/').next()?;
            Some(pid.to_string())
        })
        .collect();
    pids.sort();
    pids.dedup();
    pids
}

/// llvm-profgen 19 `--leading-ip-only --format=text` on `capture`'s IP samples of the
/// processes that map `binary`.
pub(crate) fn llvm_profgen_ips(binary: &Path, capture: &Path, out: &Path) {
    let pids = pids_mapping(binary, capture);
    assert!(!pids.is_empty(), "no process maps {}", binary.display());
    let script = run_ok(
        Command::new(PERF)
            .args(["script", "--show-mmap-events", "-F", "ip", "--pid"])
            .arg(pids.join(","))
            .arg("-i")
            .arg(capture),
    );
    let mut text = String::new();
    for line in String::from_utf8_lossy(&script.stdout).lines() {
        text.push_str(line);
        let t = line.trim();
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_hexdigit()) {
            text.push_str(" 0x0/0x0/P/-/-/0");
        }
        text.push('\n');
    }
    let script_path = out.with_extension("script");
    std::fs::write(&script_path, text).unwrap();
    run_ok(
        Command::new(LLVM_PROFGEN_19)
            .arg(format!("--binary={}", binary.display()))
            .arg(format!("--perfscript={}", script_path.display()))
            .arg(format!("--output={}", out.display()))
            .args(["--format=text", "--leading-ip-only"]),
    );
}

/// `profmill autofdo --style STYLE --format text`.
fn ours(style: &str, binary: &Path, capture: &Path, out: &Path) {
    run_ok(
        profmill()
            .args(["autofdo", "--format", "text", "--style", style, "-b"])
            .arg(binary)
            .arg("-p")
            .arg(capture)
            .arg("-o")
            .arg(out),
    );
}

/// Both styles on `capture` against their tools; returns our llvm-profgen-style profile,
/// normalized.
fn assert_equal_to_both_tools(binary: &Path, capture: &Path, dir: &Path, what: &str) -> String {
    let (theirs, mine) = (dir.join("pg-theirs.txt"), dir.join("pg-ours.txt"));
    llvm_profgen_ips(binary, capture, &theirs);
    ours("llvm-profgen", binary, capture, &mine);
    let (o, t) = (normalized(&mine), normalized(&theirs));
    assert!(o.contains("walk:"), "{what}: {o}");
    assert_eq!(o, t, "{what}: llvm-profgen style");

    let (theirs, mine) = (dir.join("cl-theirs.txt"), dir.join("cl-ours.txt"));
    create_llvm_prof_with(binary, capture, &theirs, &["--use_lbr=false"]);
    ours("autofdo", binary, capture, &mine);
    let (clean, _) = ungarble_for(&std::fs::read(&theirs).unwrap(), binary);
    let clean_path = dir.join("cl-theirs-clean.txt");
    std::fs::write(&clean_path, clean).unwrap();
    let (a, c) = (normalized(&mine), normalized(&clean_path));
    assert!(a.contains("walk:"), "{what}: {a}");
    assert_equal_but_garbled(&a, &c, binary);
    o
}

fn have_all_tools() -> bool {
    have_tools() && have_profgen_tools() && have_tool(CLANG_19)
}

/// A generated capture without branch stacks (cpu-clock, 3 processes, some kernel IPs) of
/// the clang-19 program (DWARF 4, which create_llvm_prof 0.19 reads).
#[test]
fn generated_ip_capture_equals_both_tools() {
    if !have_all_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let binary = clang_program(
        d,
        "prog",
        &["-g", "-gdwarf-4", "-fdebug-info-for-profiling"],
    );
    let capture = d.join("ip.data");
    let spec = capture_spec(&[&binary], 1, 3_000, false, 11);
    corpus::write_ip_capture(&spec, &mut std::fs::File::create(&capture).unwrap()).unwrap();
    assert_equal_to_both_tools(&binary, &capture, d, "generated");
}

/// A real `perf record -e cpu-clock` capture of the program (skipped where perf cannot
/// record).
#[test]
fn real_cpu_clock_capture_equals_both_tools() {
    if !have_all_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let binary = clang_program(
        d,
        "prog",
        &["-g", "-gdwarf-4", "-fdebug-info-for-profiling"],
    );
    let Some(capture) = record_cpu_clock(&binary, d) else {
        return;
    };
    assert_equal_to_both_tools(&binary, &capture, d, "perf record");
}

/// `perf record -e cpu-clock` of `binary` run with eight arguments (a longer run); `None`
/// (and a note) where perf cannot record.
pub(crate) fn record_cpu_clock(binary: &Path, dir: &Path) -> Option<std::path::PathBuf> {
    if !have_tool(PERF) {
        return None;
    }
    let capture = dir.join("cpu-clock.data");
    let out = Command::new(PERF)
        .args(["record", "-q", "-e", "cpu-clock", "-c", "20000", "-o"])
        .arg(&capture)
        .arg(binary)
        .args(["1", "2", "3", "4", "5", "6", "7", "8"])
        .output()
        .unwrap();
    if !out.status.success() {
        eprintln!(
            "skipping: perf record failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some(capture)
}

/// A capture where the binary is mapped but no sample falls in it (a shared library the
/// program loads and never calls): a clear error naming the capture and the binary, in both
/// styles, and no output file. perf lists the build-ids of the files sampled only, so
/// without `--ignore-build-id` the error is that the build-id is not in the capture.
#[test]
fn capture_without_samples_in_the_binary_is_a_clear_error() {
    if !have_tool(CLANG_19) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("idle.c"), "int idle(void) { return 1; }\n").unwrap();
    run_ok(
        Command::new(CLANG_19)
            // No start files: no `_init` or `frame_dummy` the loader would run.
            .args([
                "-O2",
                "-g",
                "-fPIC",
                "-shared",
                "-nostartfiles",
                "-Wl,--build-id",
            ])
            .arg("idle.c")
            .args(["-o", "libidle.so"])
            .current_dir(d),
    );
    let binary = clang_program(
        d,
        "prog",
        &[
            "-g",
            "-L.",
            "-Wl,--no-as-needed",
            "-lidle",
            "-Wl,-rpath,$ORIGIN",
        ],
    );
    let Some(capture) = record_cpu_clock(&binary, d) else {
        return;
    };
    let out = d.join("out.txt");
    for (style, ignore, says) in [
        ("llvm-profgen", false, "is not in the capture"),
        ("llvm-profgen", true, "no sample falls in"),
        ("autofdo", true, "no sample falls in"),
    ] {
        let mut cmd = profmill();
        cmd.args(["autofdo", "--style", style, "-b"])
            .arg(d.join("libidle.so"))
            .arg("-p")
            .arg(&capture)
            .arg("-o")
            .arg(&out);
        if ignore {
            cmd.arg("--ignore-build-id");
        }
        let o = run(&mut cmd);
        assert!(!o.status.success(), "{style}");
        assert!(!out.exists(), "{style}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.contains("cpu-clock.data") && e.contains("libidle.so") && e.contains(says),
            "{style}: {e}"
        );
    }
}

/// `--ip-samples` (and the drop-in's `--leading-ip-only`) on an LBR capture, autofdo's
/// test.lbr: equal to llvm-profgen 19 `--leading-ip-only`; with `--style autofdo`, equal to
/// create_llvm_prof `--use_lbr=false`, which counts lines from the sample IPs but still takes
/// heads and call targets from the branch stacks, and its threshold from the ranges.
#[test]
fn ip_samples_of_an_lbr_capture_equal_llvm_profgen_leading_ip_only() {
    if !have_profgen_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (binary, capture) = test_lbr_in(d);
    let theirs = d.join("theirs.txt");
    run_ok(
        Command::new(LLVM_PROFGEN_19)
            .arg(format!("--binary={}", binary.display()))
            .arg(format!("--perfdata={}", capture.display()))
            .arg(format!("--output={}", theirs.display()))
            .args(["--format=text", "--leading-ip-only"]),
    );
    let t = normalized(&theirs);
    let mine = d.join("ours.txt");
    run_ok(
        profmill()
            .args(["autofdo", "--ip-samples", "--format", "text", "-b"])
            .arg(&binary)
            .arg("-p")
            .arg(&capture)
            .arg("-o")
            .arg(&mine),
    );
    assert!(t.starts_with("longest_match:"), "{t}");
    assert_eq!(normalized(&mine), t);
    let link = d.join("llvm-profgen");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_profmill"), &link).unwrap();
    let drop_in = d.join("drop-in.txt");
    run_ok(
        Command::new(&link)
            .arg(format!("--binary={}", binary.display()))
            .arg(format!("--perfdata={}", capture.display()))
            .arg(format!("--output={}", drop_in.display()))
            .args(["--format=text", "--leading-ip-only"]),
    );
    assert_eq!(normalized(&drop_in), t, "drop-in");
    if !have_tools() {
        return;
    }
    let theirs = d.join("cl-theirs.txt");
    create_llvm_prof_with(&binary, &capture, &theirs, &["--use_lbr=false"]);
    let (clean, _) = ungarble_for(&std::fs::read(&theirs).unwrap(), &binary);
    let clean_path = d.join("cl-theirs-clean.txt");
    std::fs::write(&clean_path, clean).unwrap();
    let autofdo = |extra: &[&str], out: &Path| {
        run_ok(
            profmill()
                .args(["autofdo", "--style", "autofdo", "--format", "text", "-b"])
                .arg(&binary)
                .arg("-p")
                .arg(&capture)
                .args(extra)
                .arg("-o")
                .arg(out),
        );
        normalized(out)
    };
    let a = autofdo(&["--ip-samples"], &d.join("cl-ours.txt"));
    assert!(a.starts_with("longest_match:"), "{a}");
    assert_equal_but_garbled(&a, &normalized(&clean_path), &binary);
    // Neither the branch stacks' lines nor a profile without heads: both inputs count.
    let lbr = autofdo(&[], &d.join("cl-lbr.txt"));
    assert_ne!(a, lbr);
    assert!(a.lines().next().is_some_and(|l| !l.ends_with(":0")), "{a}");
}
