//! Memory-event fdata lines (`4 F <pcoff> 4 <object> <off> <count>`) equal perf2bolt's: captures
//! generated with a second event, `cpu/mem-loads,ldlat=30/P`, over programs built here with
//! clang-19 and gcc (globals, `static` data named `name/N`, `.bss`, arrays read at inner
//! offsets, C++ globals, jump tables, GOT slots, gaps between objects; PIE and non-PIE).
//! perf2bolt 19 writes the same memory lines.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use testsupport::*;

/// Globals, statics (two `hidden` in two files: `hidden/1`, `hidden/2`), `.bss` arrays, a
/// struct array read at inner offsets and a table of string pointers in `.rodata`.
const MAIN_C: &str = r#"
#include <stdio.h>
int counter = 1;
long table[64] = {1, 2, 3};
static int hidden = 5;
static long scratch[128];
char buf[4096];
struct point { int x, y; double w; } pts[16] = {{1, 2, 3.0}};
static const char *names[] = {"a", "bb", "ccc"};
int get_hidden(int i);
__attribute__((noinline)) static int helper(int i) { static int calls; calls++; return table[i & 63] + hidden++ + calls; }
int work(int n) {
    long s = 0;
    for (int i = 0; i < n; i++) { s += helper(i) + pts[i & 15].x + buf[i & 4095] + get_hidden(i); scratch[i & 127] += s; }
    counter += s;
    return (int)s + names[n % 3][0];
}
int main(int argc, char **argv) { int r = 0; for (int i = 0; i < 1000; i++) r += work(argc + i); printf("%d\n", r); return 0; }
"#;

const OTHER_C: &str = r#"
static int hidden = 7;
int other_global[10];
int get_hidden(int i) { return hidden + other_global[i % 10]; }
"#;

const GLOBALS_CPP: &str = r#"
#include <cstdio>
#include <string>
#include <vector>
static std::vector<int> vec(100, 1);
std::string gs = "a string long enough to live on the heap, not in the object";
static int arr[3][17];
int sw(int i) {
    switch (i & 7) { case 0: return arr[0][i % 17]; case 1: return vec[i % 100]; case 2: return gs[i % 10];
    case 3: return arr[1][5]; case 4: return 9; case 5: return arr[2][3]; default: return -1; }
}
int main(int c, char **) { int r = 0; for (int i = 0; i < 100000; i++) r += sw(i + c); std::printf("%d\n", r); }
"#;

/// The two-file C program most tests profile.
fn build_app(dir: &Path, compiler: &str, flags: &[&str]) -> PathBuf {
    build(
        dir,
        compiler,
        "app",
        &[("m.c", MAIN_C), ("o.c", OTHER_C)],
        flags,
    )
}

fn build(
    dir: &Path,
    compiler: &str,
    out: &str,
    sources: &[(&str, &str)],
    flags: &[&str],
) -> PathBuf {
    for (name, text) in sources {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let path = dir.join(out);
    run_ok(
        Command::new(compiler)
            .args(["-O2", "-Wl,--build-id"])
            .args(sources.iter().map(|(n, _)| n))
            .args(flags)
            .arg("-o")
            .arg(&path)
            .current_dir(dir),
    );
    path
}

fn tools_present(compiler: &str) -> bool {
    have_tool(PERF2BOLT_22) && have_tool(compiler) && have_tool("perf")
}

/// A 32-entry LBR capture of `binary` with one mem-loads sample after every LBR sample.
fn mem_spec(binary: &Path, with_addr: bool, seed: u64) -> corpus::LbrCaptureSpec {
    corpus::LbrCaptureSpec {
        mem_loads: Some(corpus::MemLoadSpec {
            interval: 1,
            distinct: 1500,
            with_addr,
            ..Default::default()
        }),
        ..capture_spec(&[binary], 2, 300, false, seed)
    }
}

fn mem_lines(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l.starts_with("4 ") || l.starts_with("3 "))
        .cloned()
        .collect()
}

/// Our fdata (asserted equal to perf2bolt 22's) and perf2bolt 19's memory lines equal ours;
/// returns our memory lines.
fn assert_mem_matches(binary: &Path, spec: &corpus::LbrCaptureSpec, dir: &Path) -> Vec<String> {
    let capture = dir.join(format!(
        "{}.perf.data",
        binary.file_name().unwrap().to_string_lossy()
    ));
    write_capture(&capture, spec);
    let ours = fdata_matching_perf2bolt_22(binary, &capture, false, dir);
    if let Some(llvm19) = perf2bolt_19_fdata(binary, &capture, false, dir) {
        assert_same_lines(
            &mem_lines(&ours),
            &mem_lines(&llvm19),
            "memory lines vs perf2bolt 19",
        );
    }
    mem_lines(&ours)
}

#[test]
fn perf_script_prints_the_generated_mem_samples() {
    if !tools_present("clang-19") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = build_app(dir.path(), "clang-19", &["-no-pie"]);
    let spec = mem_spec(&bin, true, 3);
    let prepared = corpus::prepare_capture(&spec).unwrap();
    let capture = dir.path().join("c.perf.data");
    let stats = prepared
        .write(&mut std::fs::File::create(&capture).unwrap())
        .unwrap();
    assert!(stats.mem_samples > 100);
    let out = run_ok(
        Command::new("perf")
            .args(["script", "-F", "pid,event,addr,ip", "-f", "-i"])
            .arg(&capture),
    );
    let event = corpus::MEM_LOADS_EVENT;
    let printed: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(event))
        .map(str::to_owned)
        .collect();
    let expected: Vec<String> = prepared
        .mem_samples(stats.samples - stats.mem_samples)
        .into_iter()
        .map(|(pid, pc, addr)| corpus::perf_script_mem_line(pid, event, event.len(), addr, pc))
        .collect();
    assert_eq!(printed.len() as u64, stats.mem_samples);
    assert_eq!(printed, expected);
}

#[test]
fn clang_non_pie_globals_statics_bss_arrays() {
    if !tools_present("clang-19") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = build_app(dir.path(), "clang-19", &["-no-pie"]);
    let mem = assert_mem_matches(&bin, &mem_spec(&bin, true, 11), dir.path());
    // The mix must reach every kind of object, or the comparison proves little.
    for needle in [
        " 4 table ",
        " 4 buf ",
        " 4 scratch/1 ",
        " 4 HOLEat_",
        " 4 other_global ",
    ] {
        assert!(
            mem.iter().any(|l| l.contains(needle)),
            "no line with {needle:?}: {mem:#?}"
        );
    }
    assert!(mem.len() > 100, "only {} memory lines", mem.len());
}

#[test]
fn gcc_non_pie() {
    if !tools_present("gcc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = build_app(dir.path(), "gcc", &["-no-pie"]);
    let mem = assert_mem_matches(&bin, &mem_spec(&bin, true, 12), dir.path());
    assert!(mem.iter().any(|l| l.contains(" 4 hidden/")), "{mem:#?}");
    assert!(mem.len() > 100);
}

#[test]
fn cpp_globals_non_pie() {
    if !tools_present("clang++-19") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = build(
        dir.path(),
        "clang++-19",
        "app",
        &[("g.cc", GLOBALS_CPP)],
        &["-no-pie"],
    );
    let mem = assert_mem_matches(&bin, &mem_spec(&bin, true, 13), dir.path());
    // A switch's jump table and a PLT's GOT slot are data objects BOLT names itself.
    for needle in [" 4 JUMP_TABLE/_Z2swi.0 ", "@GOT "] {
        assert!(
            mem.iter().any(|l| l.contains(needle)),
            "no line with {needle:?}: {mem:#?}"
        );
    }
}

/// A relocation-mode link (`-Wl,-q`) keeps section symbols, which BOLT makes `.<section>/1`
/// objects (taking the gap after them), and `.L` labels, which it names `PG.L…/N`.
#[test]
fn emit_relocs_section_symbols_and_local_labels() {
    for compiler in ["clang-19", "gcc"] {
        if !tools_present(compiler) {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let flags = ["-no-pie", "-Wl,-q"];
        let bin = build(
            dir.path(),
            compiler,
            "app",
            &[("m.c", MAIN_C), ("o.c", OTHER_C)],
            &flags,
        );
        let mem = assert_mem_matches(&bin, &mem_spec(&bin, true, 17), dir.path());
        assert!(
            mem.iter()
                .any(|l| l.contains(" 4 .rodata/1 ") || l.contains(" 4 .eh_frame/1 ")),
            "{compiler}: {mem:#?}"
        );
    }
}

/// perf2bolt adjusts a relocatable binary's data addresses but not the PCs of memory samples,
/// so the PCs (runtime addresses) fall in no function and every sample is dropped. We do the
/// same; the branch lines still match.
#[test]
fn pie_memory_samples_are_dropped_because_the_pc_is_not_adjusted() {
    for compiler in ["clang-19", "gcc"] {
        if !tools_present(compiler) {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let bin = build_app(dir.path(), compiler, &["-pie", "-fpie"]);
        let mem = assert_mem_matches(&bin, &mem_spec(&bin, true, 14), dir.path());
        assert!(mem.is_empty(), "{compiler}: {mem:#?}");
    }
}

/// Without `perf record -d` no event has ADDR: perf2bolt's `perf script -F pid,event,addr,ip`
/// job fails with "do not have ADDR attribute set", which perf2bolt tolerates: no memory lines.
#[test]
fn mem_event_without_addr_is_tolerated() {
    if !tools_present("clang-19") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = build_app(dir.path(), "clang-19", &["-no-pie"]);
    let mem = assert_mem_matches(&bin, &mem_spec(&bin, false, 15), dir.path());
    assert!(mem.is_empty(), "{mem:#?}");
}

/// `profmill perf2bolt` (the drop-in command line) writes the same memory lines, and basic
/// mode writes none (perf2bolt writes memory lines only for branch profiles).
#[test]
fn perf2bolt_command_and_basic_mode() {
    if !tools_present("clang-19") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = build_app(dir.path(), "clang-19", &["-no-pie"]);
    let capture = dir.path().join("c.perf.data");
    write_capture(&capture, &mem_spec(&bin, true, 16));
    let reference = reference_fdata(PERF2BOLT_22, &bin, &capture, &[], dir.path());
    let out = dir.path().join("ours.fdata");
    run_ok(
        profmill()
            .arg("perf2bolt")
            .arg(&bin)
            .arg("-p")
            .arg(&capture)
            .arg("-o")
            .arg(&out),
    );
    let ours = sorted_lines(&std::fs::read(&out).unwrap());
    assert!(!mem_lines(&ours).is_empty());
    assert_same_lines(&ours, &reference, "profmill perf2bolt vs perf2bolt 22");
    let basic = fdata_matching_perf2bolt_22(&bin, &capture, true, dir.path());
    assert!(mem_lines(&basic).is_empty());
}

/// `profmill merge-fdata` over perf2bolt profiles with memory lines (the same lines in several
/// files, with different counts) equals LLVM 22 `merge-fdata`.
#[test]
fn merge_fdata_sums_memory_lines_like_merge_fdata() {
    if !tools_present("clang-19") || !have_tool(MERGE_FDATA_22) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = build_app(dir.path(), "clang-19", &["-no-pie"]);
    let profiles: Vec<PathBuf> = (0..3)
        .map(|i| {
            let capture = dir.path().join(format!("c{i}.perf.data"));
            write_capture(&capture, &mem_spec(&bin, true, 20 + i));
            let out = dir.path().join(format!("p{i}.fdata"));
            perf2bolt_fdata(PERF2BOLT_22, &bin, &capture, &[], &out);
            out
        })
        .collect();
    let theirs = dir.path().join("theirs.fdata");
    run_ok(
        Command::new(MERGE_FDATA_22)
            .args(&profiles)
            .arg("-o")
            .arg(&theirs),
    );
    let ours = dir.path().join("ours.fdata");
    run_ok(
        profmill()
            .arg("merge-fdata")
            .args(&profiles)
            .arg("-o")
            .arg(&ours),
    );
    let theirs = sorted_lines(&std::fs::read(&theirs).unwrap());
    let ours = sorted_lines(&std::fs::read(&ours).unwrap());
    assert!(mem_lines(&theirs).len() > 100);
    assert_same_lines(&ours, &theirs, "merge-fdata with memory lines");
}
