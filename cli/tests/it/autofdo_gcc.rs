//! `profmill autofdo` on GCC-built programs (`gcc -O2 -g`): equal to llvm-profgen 19 on a C++
//! program (inlining three levels deep, loops with discriminators, a jump-table switch,
//! indirect calls, templates, exceptions) and its shared library, with generated LBR
//! captures and a real `perf record -e cpu-clock` capture; the GCC formats equal to
//! create_gcov's (AutoFDO 0.19) and read and used by GCC 12's `-fauto-profile`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::autofdo::{have_profgen_tools, llvm_profgen, normalized, ours_profgen, test_lbr_in};
use crate::autofdo_ips::{llvm_profgen_ips, record_cpu_clock};
use crate::common::*;
use testsupport::*;

pub(crate) const PROGRAM_CC: &str = r#"#include <cstdio>
#include <stdexcept>
extern "C" int lib_work(int);

static inline int sq(int x) { return x * x; }
static inline int level3(int x) {
  int s = 0;
  for (int i = 0; i < (x & 15); i++)
    s += (i & 1) ? sq(i) : i ^ x;
  return s;
}
static inline int level2(int x) { return level3(x) + level3(x >> 1); }
static inline int level1(int x) { return level2(x) * 3 + 1; }

template <typename T> struct Acc {
  T v{};
  __attribute__((noinline)) void add(T x) {
    v += x;
    if (v > 1000000)
      v -= 999999;
  }
};

__attribute__((noinline)) int sw(int x) {
  switch (x % 12) {
  case 0: return x + 1;
  case 1: return x * 3;
  case 2: return level1(x);
  case 3: return x - 7;
  case 4: return x ^ 0x55;
  case 5: return x << 2;
  case 6: return x / 3;
  case 7: return -x;
  case 8: return x & 0xff;
  case 9: return x | 3;
  case 10: return x * x;
  default: return sq(x);
  }
}

typedef int (*fn_t)(int);
__attribute__((noinline)) int f_a(int x) { return x + 11; }
__attribute__((noinline)) int f_b(int x) { return level1(x); }
__attribute__((noinline)) int f_c(int x) { return x * 7; }
fn_t table[] = {f_a, f_b, f_c};

__attribute__((noinline)) int may_throw(int x) {
  if (x % 1000 == 999)
    throw std::runtime_error("x");
  return x;
}

int main(int argc, char **) {
  Acc<int> ai;
  Acc<long> al;
  int n = argc * 100000;
  for (int i = 0; i < n; i++) {
    ai.add(sw(i) + table[i % 3](i));
    al.add(level1(i));
    try {
      ai.add(may_throw(i));
    } catch (const std::exception &) {
      al.add(1);
    }
    if ((i & 63) == 0)
      ai.add(lib_work(i));
  }
  printf("%d %ld\n", ai.v, al.v);
  return 0;
}
"#;

pub(crate) const LIBRARY_C: &str = r#"static inline int step(int s, int i, int x) { return (i & 3) ? s + i * x : s ^ x; }
int lib_work(int x) {
  int s = 0;
  for (int i = 0; i < (x & 31); i++)
    s = step(s, i, x);
  return s;
}
"#;

/// The C++ program and its shared library, built by g++/gcc `-O2 -g` plus `extra`.
fn gcc_program(dir: &Path, extra: &[&str]) -> (PathBuf, PathBuf) {
    std::fs::write(dir.join("prog.cc"), PROGRAM_CC).unwrap();
    std::fs::write(dir.join("work.c"), LIBRARY_C).unwrap();
    let lib = dir.join("libwork.so");
    run_ok(
        Command::new(GCC)
            .args([
                "-O2",
                "-g",
                "-fPIC",
                "-shared",
                "-Wl,--build-id",
                "work.c",
                "-o",
            ])
            .arg(&lib)
            .args(extra)
            .current_dir(dir),
    );
    let prog = dir.join("prog");
    run_ok(
        Command::new(GXX)
            .args([
                "-O2",
                "-g",
                "-fno-pie",
                "-no-pie",
                "-Wl,--build-id",
                "prog.cc",
            ])
            .args(["-L.", "-lwork", "-Wl,-rpath,$ORIGIN", "-o"])
            .arg(&prog)
            .args(extra)
            .current_dir(dir),
    );
    (prog, lib)
}

fn have_gcc() -> bool {
    have_tool(GCC) && have_tool(GXX)
}

/// The default style against llvm-profgen 19 on the program and on its shared library (a
/// relocatable binary mapped at another address in the capture), with a generated LBR
/// capture (kernel entries, several processes); then the program from a real cpu-clock
/// capture (IP samples; see `autofdo_ips`).
#[test]
fn gcc_program_and_library_equal_llvm_profgen() {
    if !have_profgen_tools() || !have_gcc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (prog, lib) = gcc_program(d, &[]);
    let expected: [(&Path, &[&str]); 2] = [(&prog, &["_Z2swi:"]), (&lib, &["lib_work:"])];
    program_and_library_equal_llvm_profgen(d, &expected, 5);
}

/// The default style against llvm-profgen 19 on each of `binaries` (the program first, then
/// its library), each profile holding its listed names, with a generated LBR capture of all
/// of them (seed `seed`); then the program from a real cpu-clock capture.
pub(crate) fn program_and_library_equal_llvm_profgen(
    d: &Path,
    binaries: &[(&Path, &[&str])],
    seed: u64,
) {
    let capture = d.join("lbr.data");
    let paths: Vec<&Path> = binaries.iter().map(|&(b, _)| b).collect();
    generate_capture(&capture, &paths, 2, 5_000, false, seed);
    for &(binary, names) in binaries {
        let stem = binary.file_name().unwrap().to_string_lossy().into_owned();
        let theirs = d.join(format!("{stem}.theirs.txt"));
        let mine = d.join(format!("{stem}.ours.txt"));
        llvm_profgen(binary, &capture, &theirs);
        ours_profgen(binary, &capture, &mine);
        let (o, t) = (normalized(&mine), normalized(&theirs));
        for name in names {
            assert!(o.contains(name), "{stem}: {name} in {o}");
        }
        assert_eq!(o, t, "{stem}");
    }
    let prog = paths[0];
    let Some(real) = record_cpu_clock(prog, d) else {
        return;
    };
    let (theirs, mine) = (d.join("real.theirs.txt"), d.join("real.ours.txt"));
    llvm_profgen_ips(prog, &real, &theirs);
    ours_profgen(prog, &real, &mine);
    let (o, t) = (normalized(&mine), normalized(&theirs));
    assert!(o.contains("main:"), "{o}");
    assert_eq!(o, t, "real cpu-clock capture");
}

/// `create_gcov` (AutoFDO 0.19; its default output is the `407*` gcov LLVM reads).
fn create_gcov(binary: &Path, profile: &Path, out: &Path) {
    create_gcov_with(binary, profile, out, &[]);
}

/// [`create_gcov`] with `extra` options.
fn create_gcov_with(binary: &Path, profile: &Path, out: &Path, extra: &[&str]) {
    run_ok(
        Command::new(CREATE_GCOV)
            .arg(format!("--binary={}", binary.display()))
            .arg(format!("--profile={}", profile.display()))
            .arg(format!("--gcov={}", out.display()))
            .args(extra),
    );
}

/// `profmill autofdo --style autofdo --format FORMAT`.
fn ours_autofdo(binary: &Path, capture: &Path, format: &str, out: &Path) {
    ours_autofdo_with(binary, capture, format, out, &[]);
}

/// [`ours_autofdo`] with `extra` options.
fn ours_autofdo_with(binary: &Path, capture: &Path, format: &str, out: &Path, extra: &[&str]) {
    run_ok(
        profmill()
            .args(["autofdo", "--style", "autofdo", "--format", format, "-b"])
            .arg(binary)
            .arg("-p")
            .arg(capture)
            .args(extra)
            .arg("-o")
            .arg(out),
    );
}

fn have_gcov_tools() -> bool {
    have_tool(CREATE_GCOV) && have_tool(LLVM_PROFDATA_19)
}

/// autofdo's test.lbr: our gcov output equals create_gcov's after `llvm-profdata-19 merge
/// --sample --text` (GCC's discriminators kept, `8.1: 1418`, where create_llvm_prof decodes
/// them as LLVM's), and byte for byte up to the module grouping record. Named difference:
/// the trailing working set (no reader uses it) is zeros in ours, and create_gcov writes
/// the module grouping record's length as 1.
#[test]
fn test_lbr_gcov_equals_create_gcov() {
    if !have_gcov_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (binary, capture) = test_lbr_in(d);
    let (theirs, mine) = (d.join("theirs.afdo"), d.join("ours.afdo"));
    create_gcov(&binary, &capture, &theirs);
    ours_autofdo(&binary, &capture, "gcov", &mine);
    let (o, t) = (normalized(&mine), normalized(&theirs));
    assert!(o.contains("\n 8.1: 1418\n"), "{o}");
    assert_eq!(o, t);
    let (o, t) = (
        std::fs::read(&mine).unwrap(),
        std::fs::read(&theirs).unwrap(),
    );
    assert_eq!(o.len(), t.len());
    // The working set: tag, length, 128 × (u32, u64); before it the module grouping
    // record: tag, length, count.
    let grouping = o.len() - (8 + 128 * 12) - 12;
    assert_eq!(o[grouping..grouping + 4], 0xAE00_0000u32.to_le_bytes());
    assert!(
        o[..grouping + 4] == t[..grouping + 4],
        "{}",
        first_difference(&o, &t)
    );
}

/// `--ip-samples` on autofdo's test.lbr in a gcov format: equal to `create_gcov
/// --use_lbr=false` (lines from the sample IPs; heads, call targets and the threshold still
/// from the branch stacks), after `llvm-profdata-19 merge --sample --text`; not the LBR
/// profile.
#[test]
fn ip_samples_gcov_equal_create_gcov_without_lbr() {
    if !have_gcov_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (binary, capture) = test_lbr_in(d);
    let (theirs, mine) = (d.join("theirs.afdo"), d.join("ours.afdo"));
    create_gcov_with(&binary, &capture, &theirs, &["--use_lbr=false"]);
    ours_autofdo_with(&binary, &capture, "gcov", &mine, &["--ip-samples"]);
    let o = normalized(&mine);
    assert!(o.starts_with("longest_match:"), "{o}");
    assert_eq!(o, normalized(&theirs));
    let lbr = d.join("lbr.afdo");
    ours_autofdo(&binary, &capture, "gcov", &lbr);
    assert_ne!(o, normalized(&lbr));
}

/// The C++ program and its library built with `-gdwarf-4` (create_gcov 0.19 reads no DWARF
/// 5), a generated LBR capture of both: our gcov output equals create_gcov's for each after
/// normalization. `main` ends at `_start`'s first byte here, so `_start` has no line (autofdo
/// keeps the sequence end, which lies in a sampled function), unlike in the C program below.
#[test]
fn gcc_cxx_program_and_library_gcov_equal_create_gcov() {
    if !have_gcov_tools() || !have_gcc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (prog, lib) = gcc_program(d, &["-gdwarf-4"]);
    let capture = d.join("lbr.data");
    generate_capture(&capture, &[&prog, &lib], 2, 5_000, false, 5);
    for (binary, name) in [(&prog, "_Z2swi"), (&lib, "lib_work")] {
        let stem = binary.file_name().unwrap().to_string_lossy().into_owned();
        let (theirs, mine) = (
            d.join(format!("{stem}.t.afdo")),
            d.join(format!("{stem}.o.afdo")),
        );
        create_gcov(binary, &capture, &theirs);
        ours_autofdo(binary, &capture, "gcov", &mine);
        let (o, t) = (normalized(&mine), normalized(&theirs));
        assert!(o.contains(&format!("{name}:")), "{stem}: {o}");
        assert_eq!(o, t, "{stem}");
    }
    // GCC 12 compiles the program with our version 2 output without a word and annotates
    // the functions' entry blocks with our head counts (it raises an entry count to the
    // function's body when that is larger, e.g. `sw` with head 921 got entry 976 in a trial).
    let v2 = d.join("prog-v2.afdo");
    ours_autofdo(&prog, &capture, "gcov-v2", &v2);
    let Some(gcc12) = gcc_12() else {
        return;
    };
    let o = run(Command::new(gcc12)
        .current_dir(d)
        .args(["-O2", "-fdump-ipa-afdo", "-c", "prog.cc", "-o", "prog.o"])
        .arg(format!("-fauto-profile={}", v2.display())));
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "gcc: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let dump = afdo_dump(d, "prog.cc.");
    let heads = top_level_heads(&v2);
    let entries = heads
        .iter()
        .filter(|(_, h)| dump.contains(&format!("<bb 2> [count: {h}]")))
        .count();
    assert!(
        heads.len() >= 6 && entries + 2 >= heads.len(),
        "{entries} of {heads:?} are entry counts:\n{dump}"
    );
}

/// gcc's `-fdump-ipa-afdo` dump of the source named `source…` in `dir`.
fn afdo_dump(dir: &Path, source: &str) -> String {
    let dump = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(source) && p.to_string_lossy().ends_with("afdo"))
        .expect("gcc wrote no afdo dump");
    std::fs::read_to_string(dump).unwrap()
}

/// The top-level functions of a gcov profile with a nonzero head count: (name, head).
fn top_level_heads(profile: &Path) -> Vec<(String, u64)> {
    let text = profile.with_extension("heads.txt");
    run_ok(
        profmill()
            .arg("convert")
            .arg(profile)
            .args(["--to", "text", "-o"])
            .arg(&text),
    );
    std::fs::read_to_string(&text)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| {
            let name = l.split(':').next()?.to_string();
            let head: u64 = l.rsplit(':').next()?.parse().ok()?;
            (head != 0).then_some((name, head))
        })
        .collect()
}

const PROGRAM_C: &str = r#"#include <stdio.h>

static inline int sq(int x) { return x * x; }

static inline int mix(int x) {
  int s = 0;
  for (int i = 0; i < (x & 31); i++) s += (i & 1) ? sq(i) : i ^ x;
  return s;
}

__attribute__((noinline)) int pick(int x) {
  switch (x & 7) {
  case 0: return x + 1;
  case 1: return x * 3;
  case 2: return mix(x);
  case 3: return x - 7;
  default: return sq(x);
  }
}

__attribute__((noinline)) int walk(int n) {
  int t = 0;
  for (int i = 0; i < n; i++) {
    t += pick(i) + mix(i);
    if (t > 100000) t -= 99999;
  }
  return t;
}

int main(int argc, char **argv) {
  printf("%d\n", walk(argc * 300000));
  return 0;
}
"#;

/// A gcc `-O2 -g -gdwarf-4` C program (create_gcov 0.19 reads no DWARF 5) and a generated
/// LBR capture: our gcov output equals create_gcov's after normalization. What this needed:
/// GCC puts `main` in `.text.startup`, before `_start`, which has no line information;
/// autofdo's line map keeps only rows in sampled functions, so `main`'s sequence end (in the
/// padding before `_start`) is dropped, `_start`'s addresses take `main`'s last row and
/// `_start` gets a profile. Then GCC 12 reads our version 2 output without a word and
/// uses it: every function's entry block gets its head count.
#[test]
fn gcc_program_gcov_equals_create_gcov_and_gcc_uses_it() {
    if !have_gcov_tools() || !have_tool(GCC) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("prog.c"), PROGRAM_C).unwrap();
    let prog = d.join("prog");
    run_ok(
        Command::new(GCC)
            .args([
                "-O2",
                "-g",
                "-gdwarf-4",
                "-fno-pie",
                "-no-pie",
                "-Wl,--build-id",
            ])
            .args(["prog.c", "-o"])
            .arg(&prog)
            .current_dir(d),
    );
    let capture = d.join("lbr.data");
    generate_capture(&capture, &[&prog], 2, 5_000, false, 9);
    let (theirs, mine) = (d.join("theirs.afdo"), d.join("ours.afdo"));
    create_gcov(&prog, &capture, &theirs);
    ours_autofdo(&prog, &capture, "gcov", &mine);
    let (o, t) = (normalized(&mine), normalized(&theirs));
    assert!(o.contains("\n_start:"), "{o}");
    assert_eq!(o, t);

    // GCC 12 reads version 2 (create_gcov 0.19 cannot write it: its `--gcov_version=2`
    // keeps word-length strings); ours is the same profile.
    let v2 = d.join("ours-v2.afdo");
    ours_autofdo(&prog, &capture, "gcov-v2", &v2);
    let text = d.join("v2.txt");
    run_ok(
        profmill()
            .arg("convert")
            .arg(&v2)
            .args(["--to", "text", "-o"])
            .arg(&text),
    );
    let v2_text = std::fs::read_to_string(&text).unwrap();
    assert_eq!(normalized(&text), o);
    let Some(gcc12) = gcc_12() else {
        return;
    };
    let o = run(Command::new(gcc12)
        .current_dir(d)
        .args(["-O2", "-fdump-ipa-afdo"])
        .arg(format!("-fauto-profile={}", v2.display()))
        .args(["prog.c", "-o", "prog-fdo"]));
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "gcc: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let dump = afdo_dump(d, "prog.c.");
    let mut checked = 0;
    for (name, head) in top_level_heads(&v2) {
        if name == "_start" {
            continue;
        }
        assert!(
            dump.contains(&format!("<bb 2> [count: {head}]")),
            "{name}'s head {head} is not its entry count:\n{dump}"
        );
        checked += 1;
    }
    assert!(checked >= 2, "{v2_text}");
}

/// `gcc-12`, or `gcc` if that is GCC 12 (the version whose reader we write for).
fn gcc_12() -> Option<&'static str> {
    for cc in ["gcc-12", "gcc"] {
        let v = Command::new(cc).arg("-dumpversion").output();
        if let Ok(v) = v {
            if v.status.success() && String::from_utf8_lossy(&v.stdout).trim().starts_with("12") {
                return Some(cc);
            }
        }
    }
    tool_missing("gcc 12 (gcc-12, or gcc of version 12)");
    None
}

/// `--format gcov-v4|gcov-v4-compact|gcov-v4-text` (the AutoFDO GCOV v4 proposal; no tool
/// reads it yet): each converts back to the same profile as the gcov output, on test.lbr.
#[test]
fn gcov_v4_outputs_convert_back_to_the_gcov_profile() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (binary, capture) = test_lbr_in(d);
    let as_text = |format: &str| {
        let out = d.join(format!("ours.{format}"));
        ours_autofdo(&binary, &capture, format, &out);
        let text = d.join(format!("{format}.txt"));
        run_ok(
            profmill()
                .arg("convert")
                .arg(&out)
                .args(["--to", "text", "-o"])
                .arg(&text),
        );
        std::fs::read_to_string(&text).unwrap()
    };
    let gcov = as_text("gcov");
    assert!(gcov.starts_with("longest_match:"), "{gcov}");
    for format in ["gcov-v4", "gcov-v4-compact", "gcov-v4-text"] {
        assert_eq!(as_text(format), gcov, "{format}");
    }
}
