//! BOLT Address Translation: programs built here are optimized by `llvm-bolt --enable-bat`
//! (LLVM 19 and 22, with function splitting); `profmill bat dump` reads every table that
//! llvm-bolt says it wrote, and our encoder rewrites LLVM's section byte for byte.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use crate::yaml::both;
use testsupport::*;

const PROGRAM_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) int cold_path(int x) { if (x < 0) { fprintf(stderr, "neg %d\n", x); abort(); } return x * 7; }
__attribute__((noinline)) int work(int n) {
  int s = 0;
  for (int i = 0; i < n; i++) {
    if (i % 1000 == 999) s += cold_path(i);
    else if (i & 1) s += i;
    else s ^= i;
    if (s == -12345) { fprintf(stderr, "unlikely %d\n", i); s = cold_path(-i); }
  }
  return s;
}
int main(int argc, char **argv) { int *p = malloc(4); *p = work(argc * 3000); printf("%d\n", *p); free(p); return 0; }
"#;

const PROGRAM_CXX: &str = r#"
#include <cstdio>
#include <stdexcept>
#include <vector>
__attribute__((noinline)) int check(int x) { if (x == 77777) throw std::runtime_error("rare"); return x & 3; }
__attribute__((noinline)) int run(int n) {
  int s = 0;
  for (int i = 0; i < n; i++) {
    try { s += check(i); } catch (const std::exception &e) { std::fprintf(stderr, "%s\n", e.what()); s = -1; }
  }
  return s;
}
int main(int argc, char **) { std::vector<int> v(argc, 3); std::printf("%d\n", run(v.size() * 5000)); }
"#;

/// Compiles `source` with clang-19 `-O2 -Wl,--emit-relocs` and `flags`.
fn build(dir: &Path, source: &str, name: &str, cxx: bool, flags: &[&str]) -> PathBuf {
    let src = dir.join(if cxx { "prog.cpp" } else { "prog.c" });
    std::fs::write(&src, source).unwrap();
    let out = dir.join(name);
    run_ok(
        Command::new(if cxx { CLANGXX_19 } else { CLANG_19 })
            .args(["-O2", "-Wl,--emit-relocs"])
            .args(flags)
            .arg(&src)
            .arg("-o")
            .arg(&out),
    );
    out
}

/// The llvm-bolt versions installed (19 and 22).
fn installed_bolts() -> Vec<&'static str> {
    [LLVM_BOLT_19, LLVM_BOLT_22]
        .into_iter()
        .filter(|b| have_tool(b))
        .collect()
}

/// The test programs: C non-PIE and PIE, C++ with exceptions (PIE).
fn programs(d: &Path) -> [PathBuf; 3] {
    [
        build(d, PROGRAM_C, "c-nopie", false, &["-fno-pie", "-no-pie"]),
        build(d, PROGRAM_C, "c-pie", false, &["-fPIE", "-pie"]),
        build(d, PROGRAM_CXX, "cxx-pie", true, &["-fPIE", "-pie"]),
    ]
}

/// A profile that touches few blocks (so that BOLT splits the rest off as cold): perf2bolt 22
/// on a generated capture of a handful of distinct stacks.
fn sparse_profile(dir: &Path, binary: &Path) -> PathBuf {
    let capture = dir.join("sparse.data");
    generate_capture(&capture, &[binary], 1, 3, false, 7);
    let fdata = dir.join("sparse.fdata");
    run_ok(
        Command::new(PERF2BOLT_22)
            .arg(binary)
            .arg("-p")
            .arg(&capture)
            .arg("-o")
            .arg(&fdata),
    );
    fdata
}

/// `profmill perf2bolt BINARY -p INPUT -o OUT EXTRA…`, as sorted lines.
/// Asserts that `profmill perf2bolt` and perf2bolt 22 write the same fdata lines from `input`
/// with `extra` options (files named after `tag` in `d`); returns perf2bolt's, sorted.
fn same_fdata_as_perf2bolt_22(
    d: &Path,
    binary: &Path,
    input: &Path,
    extra: &[&str],
    tag: &str,
    what: &str,
) -> Vec<String> {
    let reference = perf2bolt_fdata(
        PERF2BOLT_22,
        binary,
        input,
        extra,
        &d.join(format!("{tag}.fdata")),
    );
    let ours = our_fdata(binary, input, extra, &d.join(format!("ours-{tag}.fdata")));
    assert_same_lines(&ours, &reference, what);
    reference
}

fn our_fdata(binary: &Path, input: &Path, extra: &[&str], out: &Path) -> Vec<String> {
    let mut cmd = profmill();
    cmd.arg("perf2bolt")
        .arg(binary)
        .arg("-p")
        .arg(input)
        .arg("-o")
        .arg(out)
        .args(extra);
    run_ok(&mut cmd);
    sorted_lines(&std::fs::read(out).unwrap())
}

/// What llvm-bolt says it wrote: (maps, section size).
fn reported(stdout: &str) -> (usize, u64) {
    let number = |prefix: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("llvm-bolt printed no {prefix:?}:\n{stdout}"))
    };
    (
        number("BOLT-INFO: Wrote ") as usize,
        number("BOLT-INFO: BAT section size (bytes): "),
    )
}

fn json_number(json: &str, key: &str) -> u64 {
    let at = json.find(&format!("\"{key}\":")).unwrap() + key.len() + 3;
    json[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// `binary` optimized by `bolt` with BAT and splitting; llvm-bolt's standard output.
fn bolt_it(
    bolt: &str,
    binary: &Path,
    profile: &Path,
    extra: &[&str],
    bolted: &Path,
) -> std::process::Output {
    run_ok(
        Command::new(bolt)
            .arg(binary)
            .arg("-o")
            .arg(bolted)
            .arg("--data")
            .arg(profile)
            .args([
                "--enable-bat",
                "--reorder-blocks=ext-tsp",
                "--split-functions",
                "--split-all-cold",
            ])
            .args(extra),
    )
}

/// BOLTs `binary` with `bolt` and checks our reading of its BAT section; returns the number of
/// cold fragments.
fn check_bolted(dir: &Path, bolt: &str, binary: &Path, profile: &Path, extra: &[&str]) -> u64 {
    let bolted = dir.join(format!(
        "{}.bolt",
        binary.file_name().unwrap().to_string_lossy()
    ));
    let out = bolt_it(bolt, binary, profile, extra, &bolted);
    let (maps, size) = reported(&String::from_utf8_lossy(&out.stdout));
    let json =
        String::from_utf8(run_ok(profmill().args(["bat", "dump", "--json"]).arg(&bolted)).stdout)
            .unwrap();
    let what = format!("{bolt} {extra:?} on {}", binary.display());
    assert_eq!(json_number(&json, "maps") as usize, maps, "{what}");
    assert_eq!(json_number(&json, "section_size"), size, "{what}");
    // Our encoder gives back LLVM's bytes.
    let section = dir.join("bat.bin");
    run_ok(
        Command::new(LLVM_OBJCOPY_19)
            .arg(format!(
                "--dump-section=.note.bolt_bat={}",
                section.display()
            ))
            .arg(&bolted)
            .arg(dir.join("discard.o")),
    );
    let bytes = std::fs::read(&section).unwrap();
    let tables = formats::bolt::bat::parse_note(&bytes, 0).unwrap();
    assert_eq!(formats::bolt::bat::write_note(&tables), bytes, "{what}");
    // The text dump lists every map.
    let text =
        String::from_utf8(run_ok(profmill().args(["bat", "dump"]).arg(&bolted)).stdout).unwrap();
    assert!(
        text.starts_with(&format!("BAT tables for {maps} functions:\n")),
        "{text}"
    );
    assert_eq!(text.matches("Function Address: ").count(), maps);
    // Translation: a hot fragment starts where its input function starts; a cold fragment's
    // addresses belong to its parent.
    for (kind, marker) in [
        ("hot", "+0x0; as a branch source: "),
        ("cold", " (from cold fragment "),
    ] {
        let pattern = format!(",\"kind\":\"{kind}\"");
        for (at, _) in json.match_indices(&pattern) {
            let start = json[..at].rfind(':').unwrap() + 1;
            let address: u64 = json[start..at].parse().unwrap();
            let out = run_ok(
                profmill()
                    .args(["bat", "translate"])
                    .arg(&bolted)
                    .arg(format!("{address:x}")),
            );
            let line = String::from_utf8(out.stdout).unwrap();
            assert!(line.contains(marker), "{what}: {kind} {address:#x}: {line}");
        }
    }
    json_number(&json, "cold")
}

#[test]
fn bat_sections_of_llvm_19_and_22_read_and_rewrite_exactly() {
    if !have_tool(CLANG_19) || !have_tool(PERF2BOLT_22) || !have_tool(LLVM_OBJCOPY_19) {
        return;
    }
    let bolts = installed_bolts();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let programs = programs(d);
    let mut cold = 0;
    for binary in &programs {
        let profile = sparse_profile(d, binary);
        for bolt in &bolts {
            cold += check_bolted(d, bolt, binary, &profile, &[]);
        }
        for bolt in &bolts {
            check_bolted(d, bolt, binary, &profile, &["--reorder-functions=hfsort"]);
        }
    }
    assert!(
        cold > 0,
        "no function was split: the cold tables went untested"
    );
}

#[test]
fn a_binary_without_bat_is_refused_clearly() {
    if !have_tool(CLANG_19) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = build(dir.path(), PROGRAM_C, "plain", false, &[]);
    let out = profmill()
        .args(["bat", "dump"])
        .arg(&binary)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("plain: no .note.bolt_bat section"),
        "{stderr}"
    );
}

/// Profiles of BOLTed binaries map back to the input binary as perf2bolt 22 maps them: from a
/// generated LBR capture (perf2bolt's Skylake workaround included), from our pre-aggregated
/// output (`perf2bolt --pa`), through a profile store written without the binary, and from a
/// real `perf record -e cpu-clock` capture (`-nl`), for binaries BOLTed by LLVM 19 and 22.
#[test]
fn profiles_of_bolted_binaries_equal_perf2bolt() {
    if !have_tool(CLANG_19) || !have_tool(PERF2BOLT_22) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let compared = for_each_bolted_capture(d, |bolted, capture, what| {
        // Straight from the capture.
        let reference = same_fdata_as_perf2bolt_22(d, bolted, capture, &[], "capture", what);
        assert!(reference.iter().any(|l| l == "boltedcollection"), "{what}");
        // Through our pre-aggregated text, read by perf2bolt 22 and by us.
        let preagg = d.join("bolted.preagg");
        profmill_aggregate(capture, bolted, "preagg", &preagg);
        let reference_pa = same_fdata_as_perf2bolt_22(d, bolted, &preagg, &["--pa"], "pa", what);
        // Through a store aggregated without the binary.
        let exported = exported_from_store_without_binary(d, capture, bolted, "fdata");
        assert_same_lines(
            &sorted_lines(&std::fs::read(&exported).unwrap()),
            &reference_pa,
            what,
        );
        basic_capture_equals_perf2bolt(d, bolted, what);
    });
    assert!(compared > 0);
}

/// Each of the test programs BOLTed by each installed BOLT, and a capture generated of the
/// BOLTed binary (`d/bolted.data`): `check(bolted, capture, what)` for each; how many there were.
fn for_each_bolted_capture(d: &Path, mut check: impl FnMut(&Path, &Path, &str)) -> usize {
    let bolts = installed_bolts();
    let mut checked = 0;
    for binary in &programs(d) {
        let profile = sparse_profile(d, binary);
        for (v, bolt) in bolts.iter().enumerate() {
            let name = binary.file_name().unwrap().to_string_lossy();
            let bolted = d.join(format!("{name}.bolted{v}"));
            bolt_it(bolt, binary, &profile, &[], &bolted);
            let what = format!("{} BOLTed by {bolt}", binary.display());
            let capture = d.join("bolted.data");
            generate_capture(&capture, &[&bolted], 1, 400, false, 3);
            check(&bolted, &capture, &what);
            checked += 1;
        }
    }
    checked
}

/// `capture` aggregated into a store without any binary, as a fleet host does, then exported
/// for `bolted` in `format` (`d/exported.<format>`).
fn exported_from_store_without_binary(
    d: &Path,
    capture: &Path,
    bolted: &Path,
    format: &str,
) -> PathBuf {
    let store = d.join("bolted.pms");
    run_ok(
        profmill()
            .arg("aggregate")
            .arg(capture)
            .args(["--format", "store", "-o"])
            .arg(&store),
    );
    let exported = d.join(format!("exported.{format}"));
    run_ok(
        profmill()
            .arg("export")
            .arg(&store)
            .arg("-b")
            .arg(bolted)
            .args(["--format", format, "-o"])
            .arg(&exported),
    );
    exported
}

/// `perf record -e cpu-clock` of a run of `bolted` into `d/basic.data`; `None` where perf
/// cannot record here (an error unless external tools are skipped).
///
/// A capture whose build-id list lacks `bolted` is recorded again: perf2bolt refuses it ("failed
/// to match build-id"), which CI saw twice (never here, in dozens of runs, with the same perf)
/// although the binary ran for milliseconds. perf's own messages of each failed try are printed,
/// and a third failure fails the test with them.
fn record_basic(d: &Path, bolted: &Path) -> Option<PathBuf> {
    let capture = d.join("basic.data");
    let mut failures = Vec::new();
    for _ in 0..3 {
        // The programs loop over a multiple of their argument count: a thousand arguments make
        // a run milliseconds long, hundreds of samples in the binary.
        let recorded = Command::new(PERF)
            .args(["record", "-e", "cpu-clock", "-c", "5000", "-o"])
            .arg(&capture)
            .arg(bolted)
            .args((0..1000).map(|i| i.to_string()))
            .output()
            .unwrap();
        if !recorded.status.success() {
            tool_missing("perf record -e cpu-clock (not permitted here)");
            return None;
        }
        let listed = Command::new(PERF)
            .args(["buildid-list", "-i"])
            .arg(&capture)
            .output()
            .unwrap();
        let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
        if listed
            .lines()
            .any(|l| l.ends_with(&*bolted.to_string_lossy()))
        {
            return Some(capture);
        }
        let failure = format!(
            "perf record: {}\nperf buildid-list: {listed}",
            String::from_utf8_lossy(&recorded.stderr)
        );
        eprintln!(
            "{}: no build-id in the capture, recording again; {failure}",
            bolted.display()
        );
        failures.push(failure);
    }
    panic!(
        "{}: never in the capture's build-ids: {failures:#?}",
        bolted.display()
    );
}

/// A real `perf record -e cpu-clock` run of a BOLTed binary, read with `-nl`.
fn basic_capture_equals_perf2bolt(d: &Path, bolted: &Path, what: &str) {
    if !have_tool(PERF) {
        return;
    }
    let Some(capture) = record_basic(d, bolted) else {
        return;
    };
    same_fdata_as_perf2bolt_22(d, bolted, &capture, &["-nl"], "nl", what);
}

/// perf2bolt 19 on a BOLTed binary omits fall-throughs that perf2bolt 22, and we, find by walking
/// the CFG of a function without a BAT table (seen: `cold_path 4 → 6` on this program). Every
/// other line agrees: the only lines perf2bolt 19 lacks are intra-function fall-throughs, and it
/// has none we lack.
#[test]
fn perf2bolt_19_differs_only_in_fall_throughs_of_functions_without_a_table() {
    if !have_tool(CLANG_19) || !have_tool(PERF2BOLT_22) || !have_tool(PERF2BOLT_19) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let binary = build(d, PROGRAM_C, "c-nopie", false, &["-fno-pie", "-no-pie"]);
    let profile = sparse_profile(d, &binary);
    let mut differing = 0;
    for bolt in [LLVM_BOLT_19, LLVM_BOLT_22]
        .into_iter()
        .filter(|b| have_tool(b))
    {
        let bolted = d.join("bolted");
        bolt_it(bolt, &binary, &profile, &[], &bolted);
        let capture = d.join("bolted.data");
        generate_capture(&capture, &[&bolted], 1, 400, false, 3);
        let theirs = perf2bolt_fdata(PERF2BOLT_19, &bolted, &capture, &[], &d.join("19.fdata"));
        let ours = our_fdata(&bolted, &capture, &[], &d.join("ours.fdata"));
        let only_theirs: Vec<&String> = theirs.iter().filter(|l| !ours.contains(l)).collect();
        assert!(only_theirs.is_empty(), "{bolt}: {only_theirs:#?}");
        for line in ours.iter().filter(|l| !theirs.contains(l)) {
            let f: Vec<&str> = line.split(' ').collect();
            let fall_through = f.len() == 8 && f[1] == f[4] && f[6] == "0";
            assert!(fall_through, "{bolt}: not a fall-through: {line}");
            differing += 1;
        }
    }
    assert!(
        differing > 0,
        "perf2bolt 19 now writes these fall-throughs: make this an equality"
    );
}

/// `bat dump` and `bat translate` into a closed pipe (`| head`) end quietly with status 0.
#[test]
fn bat_output_into_a_closed_pipe_ends_quietly() {
    if !have_tool(CLANG_19) || !have_tool(PERF2BOLT_22) || !have_tool(LLVM_BOLT_22) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let binary = build(d, PROGRAM_C, "c-pie", false, &["-fPIE", "-pie"]);
    let profile = sparse_profile(d, &binary);
    let bolted = d.join("bolted");
    bolt_it(LLVM_BOLT_22, &binary, &profile, &[], &bolted);
    assert_quiet_on_closed_pipe(profmill().args(["bat", "dump"]).arg(&bolted));
    assert_quiet_on_closed_pipe(profmill().args(["bat", "dump", "--json"]).arg(&bolted));
    assert_quiet_on_closed_pipe(
        profmill()
            .args(["bat", "translate"])
            .arg(&bolted)
            .arg("0x1000"),
    );
}

fn assert_same_yaml(ours: &[u8], theirs: &[u8], what: &str) {
    assert!(
        ours == theirs,
        "{what}: YAML differs from perf2bolt 22: {}",
        first_difference(ours, theirs)
    );
}

/// YAML profiles of BOLTed binaries (perf2bolt's `writeBATYAML`) equal perf2bolt 22's byte for
/// byte (its functions come in a fixed order: name order for the translated ones, a
/// `std::map`), for the three programs (C++ with exceptions among them) BOLTed by LLVM 19 and
/// 22 with function splitting, so that cold fragments count for their parents: from a
/// generated LBR capture (perf2bolt and `aggregate --format yaml`, and `-w` beside fdata),
/// from our pre-aggregated output (`--pa`), through a store aggregated without the binary, and
/// from a real `perf record -e cpu-clock` capture (`-nl`: perf2bolt 22 writes no function).
#[test]
fn bat_yaml_equals_perf2bolt_22() {
    if !have_tool(CLANG_19) || !have_tool(PERF2BOLT_22) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let compared = for_each_bolted_capture(d, |bolted, capture, what| {
        let (ours, theirs) = both(bolted, capture, &[], d, "bat");
        assert!(
            String::from_utf8_lossy(&theirs).contains("nblocks:"),
            "{what}: perf2bolt wrote no function"
        );
        assert_same_yaml(&ours, &theirs, what);
        // `-w` beside the fdata, and `aggregate --format yaml`.
        let saved = d.join("saved.yaml");
        run_ok(
            profmill()
                .arg("perf2bolt")
                .arg(bolted)
                .arg("-p")
                .arg(capture)
                .arg("-o")
                .arg(d.join("beside.fdata"))
                .arg("-w")
                .arg(&saved),
        );
        assert_same_yaml(&std::fs::read(&saved).unwrap(), &theirs, what);
        let aggregated = d.join("aggregated.yaml");
        run_ok(
            profmill()
                .arg("aggregate")
                .arg(capture)
                .arg("-b")
                .arg(bolted)
                .args(["--format", "yaml", "-o"])
                .arg(&aggregated),
        );
        assert_same_yaml(&std::fs::read(&aggregated).unwrap(), &theirs, what);
        // Through our pre-aggregated text, and through a store.
        let preagg = d.join("bolted.preagg");
        profmill_aggregate(capture, bolted, "preagg", &preagg);
        let (ours_pa, theirs_pa) = both(bolted, &preagg, &["--pa"], d, "bat-pa");
        assert_same_yaml(&ours_pa, &theirs_pa, &format!("{what} (--pa)"));
        let exported = exported_from_store_without_binary(d, capture, bolted, "yaml");
        assert_same_yaml(
            &std::fs::read(&exported).unwrap(),
            &theirs_pa,
            &format!("{what} (store)"),
        );
        basic_capture_yaml_equals_perf2bolt(d, bolted, what);
    });
    assert!(compared > 0);
}

/// A real `perf record -e cpu-clock` run of a BOLTed binary as YAML with `-nl`.
fn basic_capture_yaml_equals_perf2bolt(d: &Path, bolted: &Path, what: &str) {
    if !have_tool(PERF) {
        return;
    }
    let Some(capture) = record_basic(d, bolted) else {
        return;
    };
    let (ours, theirs) = both(bolted, &capture, &["-nl"], d, "bat-nl");
    assert_same_yaml(&ours, &theirs, &format!("{what} (-nl)"));
}
