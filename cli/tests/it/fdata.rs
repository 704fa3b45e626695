//! `profmill aggregate --format fdata` equals `perf2bolt` (LLVM 22) line for line (sorted), and
//! LLVM 19 where it agrees with LLVM 22 (the two differences are named tests): a
//! public capture, generated LBR captures over programs built here with gcc and clang-19 (PIE,
//! non-PIE, switch jump tables, C++ exceptions, tail calls, `-ffunction-sections`, a shared
//! library, clashing `static` names), and basic samples of a real `perf record` capture.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use testsupport::*;

/// Two files with `static` functions of the same name (BOLT's `name/1`, `name/2`), a switch
/// dense enough for a jump table, tail calls and a cold path.
const A_C: &str = r#"
static int step(int x) { return x * 3 + 1; }
int dispatch(int op, int x) {
    switch (op & 15) {
    case 0: return x + 1; case 1: return x * 3; case 2: return x ^ 5; case 3: return x - 7;
    case 4: return x << 2; case 5: return x >> 1; case 6: return ~x; case 7: return x * x;
    case 8: return x / 3 + 1; case 9: return x % 7; case 10: return -x; case 11: return x | 9;
    default: return step(x);
    }
}
int a_work(int n) { int t = 0; for (int i = 0; i < n; i++) t += dispatch(i * 7, i); return step(t); }
"#;

const B_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
static int step(int x) { return x ^ (x >> 3); }
int dispatch(int op, int x);
int a_work(int n);
__attribute__((noinline)) int tail(int x) { return dispatch(x, x + 1); }
__attribute__((noinline)) int loop(int n) {
    int s = 0;
    for (int i = 0; i < n; i++) { s += step(i) & 7 ? tail(i) : i; if (s > 1000000) s -= 999999; }
    return s;
}
int main(int argc, char **argv) {
    if (argc > 5) abort();
    printf("%d %d\n", loop(argc * 50000), a_work(argc * 1000));
    return 0;
}
"#;

const EH_CPP: &str = r#"
#include <cstdio>
#include <stdexcept>
__attribute__((noinline)) int risky(int x) { if (x % 97 == 0) throw std::runtime_error("x"); return x * 2; }
__attribute__((noinline)) int guarded(int x) {
    try { return risky(x); } catch (const std::exception &) { return -1; }
}
int main(int argc, char **) { long s = 0; for (int i = 0; i < argc * 20000; i++) s += guarded(i); std::printf("%ld\n", s); }
"#;

const LIB_C: &str = r#"
int lib_pick(int x) {
    switch (x & 7) { case 0: return x + 1; case 1: return x * 3; case 2: return x ^ 5;
    case 3: return x - 7; case 4: return x << 2; default: return x; }
}
"#;

const APP_C: &str = r#"
#include <stdio.h>
int lib_pick(int x);
int main(int argc, char **argv) { int t = 0; for (int i = 0; i < argc * 100000; i++) t += lib_pick(i); printf("%d\n", t); return 0; }
"#;

fn build(dir: &Path, compiler: &str, out: &str, sources: &[&str], flags: &[&str]) -> PathBuf {
    let path = dir.join(out);
    run_ok(
        Command::new(compiler)
            .args(["-O2", "-Wl,--build-id"])
            .args(sources)
            .args(flags)
            .arg("-o")
            .arg(&path)
            .current_dir(dir),
    );
    path
}

fn write_sources(d: &Path) {
    for (name, text) in [
        ("a.c", A_C),
        ("b.c", B_C),
        ("eh.cpp", EH_CPP),
        ("lib.c", LIB_C),
        ("app.c", APP_C),
    ] {
        std::fs::write(d.join(name), text).unwrap();
    }
}

/// A generated capture of `binaries`, then the fdata comparison for `binaries[0]`.
fn check(d: &Path, name: &str, binaries: &[&Path], min_lines: usize) {
    let capture = d.join(format!("{name}.data"));
    generate_capture(&capture, binaries, 2, 2000, false, 11);
    let work = d.join(format!("{name}-work"));
    std::fs::create_dir_all(&work).unwrap();
    let lines = assert_fdata_matches_perf2bolt(binaries[0], &capture, false, &work);
    assert!(lines >= min_lines, "{name}: only {lines} fdata lines");
}

#[test]
fn gcc_programs_match_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool("gcc") || !have_tool("g++") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_sources(d);
    let c = ["a.c", "b.c"];
    let pie = build(d, "gcc", "gcc-pie", &c, &["-fPIE", "-pie"]);
    check(d, "gcc-pie", &[&pie], 20);
    let nopie = build(d, "gcc", "gcc-nopie", &c, &["-fno-pie", "-no-pie"]);
    check(d, "gcc-nopie", &[&nopie], 20);
    let sections = build(d, "gcc", "gcc-sections", &c, &["-ffunction-sections"]);
    check(d, "gcc-sections", &[&sections], 20);
    let eh = build(d, "g++", "gcc-eh", &["eh.cpp"], &[]);
    check(d, "gcc-eh", &[&eh], 20);
}

#[test]
fn clang_programs_match_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool("clang-19") || !have_tool("clang++-19") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_sources(d);
    let nopie = build(
        d,
        "clang-19",
        "clang-nopie",
        &["a.c", "b.c"],
        &["-fno-pie", "-no-pie"],
    );
    check(d, "clang-nopie", &[&nopie], 20);
}

/// Our lines for `binary` (asserted equal to perf2bolt 22's) and the lines that only we, or
/// only perf2bolt 19, have; `None` when perf2bolt 19 is not installed.
fn llvm19_difference(d: &Path, binary: &Path) -> Option<(Vec<String>, Vec<String>, Vec<String>)> {
    let capture = d.join("capture.data");
    generate_capture(&capture, &[binary], 2, 2000, false, 11);
    let ours = fdata_matching_perf2bolt_22(binary, &capture, false, d);
    let llvm19 = perf2bolt_19_fdata(binary, &capture, false, d)?;
    let only_ours = ours
        .iter()
        .filter(|l| !llvm19.contains(l))
        .cloned()
        .collect();
    let only_19 = llvm19
        .iter()
        .filter(|l| !ours.contains(l))
        .cloned()
        .collect();
    Some((ours, only_ours, only_19))
}

/// fdata fields: from-name, from-offset, to-name, to-offset, mispredictions.
fn fields(line: &str) -> (&str, &str, &str, &str, &str) {
    let f: Vec<&str> = line.split(' ').collect();
    (f[1], f[2], f[4], f[5], f[6])
}

/// A documented LLVM 19 difference. clang hoists the `lea` of a PIC jump table's base out of
/// the loop around `a_work`'s switch. perf2bolt 19 cannot pair it with the table load ("failed
/// to post-process indirect branches for a_work"), so `a_work` gets no CFG and none of its
/// fall-through lines; LLVM 22 (and we) search back for the base. All else is the same.
#[test]
fn llvm19_drops_fall_throughs_of_a_function_with_a_hoisted_jump_table_base() {
    if !have_tool(PERF2BOLT_22) || !have_tool("clang-19") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_sources(d);
    let pie = build(
        d,
        "clang-19",
        "clang-pie",
        &["a.c", "b.c"],
        &["-fPIE", "-pie"],
    );
    let Some((_, only_ours, only_19)) = llvm19_difference(d, &pie) else {
        return;
    };
    assert!(only_19.is_empty(), "lines only LLVM 19 has: {only_19:?}");
    assert!(!only_ours.is_empty(), "LLVM 19 now agrees: drop this test");
    for line in &only_ours {
        let (from, _, to, _, mispreds) = fields(line);
        assert!(
            from == "a_work" && to == "a_work" && mispreds == "0",
            "not an a_work fall-through: {line}"
        );
    }
}

/// An interpreter loop dispatching through a computed, unresolvable `goto`: BOLT cannot
/// classify the indirect jump and marks `interp` non-simple ("failed to post-process indirect
/// branches"), yet perf2bolt 22 keeps the CFG it built and writes the function's fall-throughs.
/// perf2bolt 19 drops them (a documented LLVM 19 difference).
const INTERP_C: &str = r#"
#include <stdio.h>
#include <stdint.h>
volatile uintptr_t scramble;
__attribute__((noinline)) int interp(const unsigned char *code, int n) {
    static void *const ops[] = { &&op_add, &&op_sub, &&op_end };
    int acc = 0, pc = 0;
again:;
    uintptr_t target = (uintptr_t)ops[code[pc++] % 3] ^ scramble;
    goto *(void *)target;
op_add: acc += n; if (acc > 1000) acc -= 999; goto again;
op_sub: acc -= 1; acc ^= pc; goto again;
op_end: return acc;
}
int main(int argc, char **argv) {
    unsigned char code[64];
    for (int i = 0; i < 63; i++) code[i] = (unsigned char)((i * 7 + argc) % 2);
    code[63] = 2;
    long s = 0;
    for (int i = 0; i < argc * 100000; i++) s += interp(code, i);
    printf("%ld\n", s);
    return 0;
}
"#;

#[test]
fn non_simple_function_keeps_its_fall_throughs() {
    if !have_tool(PERF2BOLT_22) || !have_tool("gcc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("interp.c"), INTERP_C).unwrap();
    let bin = build(d, "gcc", "interp", &["interp.c"], &[]);
    let capture = d.join("capture.data");
    generate_capture(&capture, &[&bin], 2, 2000, false, 11);
    let log = Command::new(PERF2BOLT_22)
        .arg(&bin)
        .arg("-p")
        .arg(&capture)
        .args(["-o", "/dev/null", "-v=1"])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&log.stdout) + String::from_utf8_lossy(&log.stderr);
    assert!(
        log.contains("failed to post-process indirect branches for interp"),
        "BOLT now analyses interp: this test no longer covers a non-simple function"
    );
    let ours = fdata_matching_perf2bolt_22(&bin, &capture, false, d);
    let inside = |l: &&String| {
        let (from, _, to, _, _) = fields(l);
        from == "interp" && to == "interp"
    };
    assert!(ours.iter().any(|l| inside(&l)), "no line inside interp");
    if let Some(llvm19) = perf2bolt_19_fdata(&bin, &capture, false, d) {
        let only_ours: Vec<_> = ours.iter().filter(|l| !llvm19.contains(l)).collect();
        assert!(
            !only_ours.is_empty(),
            "LLVM 19 now agrees: update this test"
        );
        assert!(only_ours.iter().all(inside), "{only_ours:?}");
        assert!(llvm19.iter().all(|l| ours.contains(l)));
    }
}

/// A documented LLVM 19 difference. The generator returns from every call, also from
/// `__cxa_throw`, whose continuation is a landing pad. For a trace that starts with a return,
/// LLVM 22 credits the call → continuation fall-through even there; LLVM 19 never treats a
/// landing pad as a call continuation. All else is the same.
#[test]
fn llvm19_does_not_continue_returns_into_landing_pads() {
    if !have_tool(PERF2BOLT_22) || !have_tool("clang++-19") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_sources(d);
    let eh = build(d, "clang++-19", "clang-eh", &["eh.cpp"], &[]);
    let Some((ours, only_ours, only_19)) = llvm19_difference(d, &eh) else {
        return;
    };
    assert!(only_19.is_empty(), "lines only LLVM 19 has: {only_19:?}");
    assert!(!only_ours.is_empty(), "LLVM 19 now agrees: drop this test");
    for line in &only_ours {
        let (from, offset, to, _, mispreds) = fields(line);
        assert!(
            from == "_Z5riskyi" && to == "_Z5riskyi" && mispreds == "0",
            "not a fall-through in risky: {line}"
        );
        let throws_here = ours.iter().any(|l| {
            let (f, o, t, _, _) = fields(l);
            f == from && o == offset && t == "__cxa_throw@PLT"
        });
        assert!(throws_here, "{line} does not start at the __cxa_throw call");
    }
}

/// A shared library and the program using it, both in every process of the capture: the
/// library's profile is compared.
#[test]
fn shared_library_matches_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool("gcc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_sources(d);
    let lib = build(d, "gcc", "libpick.so", &["lib.c"], &["-shared", "-fPIC"]);
    let app = build(d, "gcc", "app", &["app.c"], &["-L.", "-lpick"]);
    check(d, "lib", &[&lib, &app], 3);
}

#[test]
fn propeller_sample_1_matches_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // perf2bolt 19 maps nothing in this capture: see legacy.rs,
    // `llvm19_loses_pie_captures_that_our_legacy_output_keeps`.
    fdata_matching_perf2bolt_22(
        &shared_perf("autofdo-propeller_sample_1.bin"),
        &shared_perf("autofdo-propeller_sample_1.perf.data"),
        false,
        dir.path(),
    );
}

/// Basic (`no_lbr`) fdata from a real `perf record -e cpu-clock` capture.
#[test]
fn basic_samples_match_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool("perf") || !have_tool("gcc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_sources(d);
    let bin = build(d, "gcc", "basic", &["a.c", "b.c"], &["-fPIE", "-pie"]);
    let capture = d.join("basic.data");
    let out = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-c", "50000", "-o"])
        .arg(&capture)
        .arg(&bin)
        .args(["1", "2", "3", "4"])
        .output()
        .unwrap();
    if !out.status.success() {
        eprintln!(
            "skipping: perf record failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    assert_fdata_matches_perf2bolt(&bin, &capture, true, d);
}

/// perf2bolt cannot read this MMAP-only capture; we symbolize it.
#[test]
fn mmap_only_capture_gets_fdata() {
    let capture = shared_perf("autofdo-test.lbr.perf.data");
    let shared_binary = shared_perf("autofdo-test.binary");
    if !capture.exists() || !shared_binary.exists() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The capture mapped it as `/export/hda3/tmp/test.binary`.
    let binary = dir.path().join("test.binary");
    std::fs::copy(&shared_binary, &binary).unwrap();
    let out = dir.path().join("out.fdata");
    run_ok(
        profmill()
            .arg("aggregate")
            .arg(&capture)
            .arg("-b")
            .arg(&binary)
            .arg("-o")
            .arg(&out)
            .args(["--format", "fdata"]),
    );
    let lines = sorted_lines(&std::fs::read(&out).unwrap());
    assert!(lines.len() > 10, "only {} lines", lines.len());
    // gzip's hot loop, with a fall-through line (offsets 0x91 → 0x97) only the CFG gives.
    assert!(
        lines.contains(&"1 longest_match 91 1 longest_match 97 0 21124".to_string()),
        "{} lines, no longest_match fall-through",
        lines.len()
    );
}

/// perf 6.1 (and so perf2bolt, which runs `perf script`) refuses a capture whose
/// `perf_event_attr` is 136 bytes (VER8); we read it. The same capture written with the
/// 128-byte attr perf reads gives the reference.
#[test]
fn attr_size_136_capture_gets_perf2bolts_fdata() {
    if !have_tool(PERF2BOLT_22) || !have_tool("gcc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_sources(d);
    let bin = build(d, "gcc", "attr136", &["a.c", "b.c"], &["-fPIE", "-pie"]);
    let spec = capture_spec(&[&bin], 1, 1000, false, 17);
    let readable = d.join("attr128.data");
    write_capture(&readable, &spec);
    let newer = d.join("attr136.data");
    write_capture(
        &newer,
        &corpus::LbrCaptureSpec {
            attr_size: 136,
            ..spec
        },
    );
    let refused = Command::new(PERF2BOLT_22)
        .arg(&bin)
        .arg("-p")
        .arg(&newer)
        .arg("-o")
        .arg(d.join("refused.fdata"))
        .output()
        .unwrap();
    if refused.status.success() {
        eprintln!("note: this perf reads attr size 136; the test still compares fdata");
    }
    let reference = reference_fdata(PERF2BOLT_22, &bin, &readable, &[], d);
    let ours_path = d.join("ours.fdata");
    run_ok(
        profmill()
            .arg("perf2bolt")
            .arg(&bin)
            .arg("-p")
            .arg(&newer)
            .arg("-o")
            .arg(&ours_path),
    );
    let ours = sorted_lines(&std::fs::read(&ours_path).unwrap());
    assert_same_lines(
        &ours,
        &reference,
        "attr-136 fdata vs perf2bolt 22 on attr 128",
    );
    assert!(ours.len() >= 20, "only {} lines", ours.len());
}

/// Through a link named `perf2bolt`, with LLVM's option spelling: on the capture, and with
/// `--pa` on our pre-aggregated output in both dialects, as LLVM 22 perf2bolt reads them.
#[test]
fn perf2bolt_drop_in_matches_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool("gcc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_sources(d);
    // Fixed addresses: LLVM 19's mapping rules (preagg-legacy) map nothing in a PIE.
    let bin = build(
        d,
        "gcc",
        "drop-in",
        &["a.c", "b.c"],
        &["-fno-pie", "-no-pie"],
    );
    let capture = d.join("drop-in.data");
    generate_capture(&capture, &[&bin], 2, 2000, false, 13);
    let link = d.join("perf2bolt");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_profmill"), &link).unwrap();
    let ours = |input: &Path, extra: &[&str], out: &str| {
        let path = d.join(out);
        run_ok(
            Command::new(&link)
                .arg(&bin)
                .arg(format!("--p={}", input.display()))
                .args(["-o", path.to_str().unwrap()])
                .args(extra),
        );
        sorted_lines(&std::fs::read(&path).unwrap())
    };
    let reference = perf2bolt_fdata(PERF2BOLT_22, &bin, &capture, &[], &d.join("ref.fdata"));
    assert!(reference.len() > 20, "perf mode: {} lines", reference.len());
    assert_same_lines(&ours(&capture, &[], "a.fdata"), &reference, "perf mode");
    for format in ["preagg", "preagg-legacy"] {
        let preagg = d.join(format!("drop-in.{format}"));
        profmill_aggregate(&capture, &bin, format, &preagg);
        let reference = perf2bolt_fdata(
            PERF2BOLT_22,
            &bin,
            &preagg,
            &["--pa"],
            &d.join(format!("ref-{format}.fdata")),
        );
        assert!(reference.len() > 20, "{format}: {} lines", reference.len());
        let fdata = ours(&preagg, &["-pa"], &format!("ours-{format}.fdata"));
        assert_same_lines(&fdata, &reference, format);
    }
}
