//! `profmill autofdo --style autofdo`: perf.data (LBR) or a store + the ELF binary → an LLVM
//! sample profile equal to `create_llvm_prof`'s (AutoFDO 0.19) after both go through
//! `llvm-profdata-19 merge --sample --text`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use testsupport::*;

/// `llvm-profdata-19 merge --sample --text IN -o OUT`, read back.
pub(crate) fn normalized(input: &Path) -> String {
    let out = input.with_extension("norm.txt");
    run_ok(
        Command::new(LLVM_PROFDATA_19)
            .args(["merge", "--sample", "--text"])
            .arg(input)
            .arg("-o")
            .arg(&out),
    );
    String::from_utf8(std::fs::read(&out).unwrap()).unwrap()
}

/// autofdo's test.lbr in `dir`: the binary copied there (the tools write beside it), and the
/// capture.
pub(crate) fn test_lbr_in(dir: &Path) -> (PathBuf, PathBuf) {
    let binary = dir.join("test.binary");
    std::fs::copy(shared_perf("autofdo-test.binary"), &binary).unwrap();
    (binary, shared_perf("autofdo-test.lbr.perf.data"))
}

/// The placeholder for an inlined callee name that create_llvm_prof 0.19 printed as garbage.
const GARBLED: &str = "@garbled@";

/// create_llvm_prof 0.19 (Debian) prints some inlined callees' names from freed memory: a
/// callsite line ` LOC: NAME:TOTAL` whose NAME has bytes outside printable ASCII, or is
/// printable but one word with a byte no symbol name has (`p]`) or a leading digit (`08m`),
/// gets [`GARBLED`] instead.
/// Returns the cleaned text and how many names were replaced.
pub(crate) fn ungarble(bytes: &[u8]) -> (Vec<u8>, usize) {
    ungarble_with(bytes, |_| true)
}

/// [`ungarble`], where a callee name that `binary` does not hold as a NUL-terminated string
/// (every DWARF or symbol name is one) is garbled too: freed memory can look like any word.
pub(crate) fn ungarble_for(bytes: &[u8], binary: &Path) -> (Vec<u8>, usize) {
    let image = std::fs::read(binary).unwrap();
    ungarble_with(bytes, |name| {
        let needle = [name, b"\0"].concat();
        image.windows(needle.len()).any(|w| w == needle)
    })
}

/// [`ungarble`], with `held` saying which one-word callee names are real.
fn ungarble_with(bytes: &[u8], held: impl Fn(&[u8]) -> bool) -> (Vec<u8>, usize) {
    let mut out = Vec::with_capacity(bytes.len());
    let mut replaced = 0;
    for line in whole_lines(bytes) {
        let line = &line[..];
        let printable = line.iter().all(|&b| (0x20..0x7f).contains(&b));
        let indent = line.iter().take_while(|&&b| b == b' ').count();
        let colon = line.iter().position(|&b| b == b':');
        let last = line.iter().rposition(|&b| b == b':');
        let odd_word = |c: usize, l: usize| {
            let name = &line[c + 2..l];
            // No symbol name starts with a digit (and llvm-profdata cannot read one that does).
            !name.contains(&b' ')
                && (name.first().is_some_and(u8::is_ascii_digit)
                    || !name
                        .iter()
                        .all(|&b| b.is_ascii_alphanumeric() || b"_.$".contains(&b))
                    || !held(name))
        };
        match (printable, colon, last) {
            (p, Some(c), Some(l)) if indent > 0 && c + 2 < l && (!p || odd_word(c, l)) => {
                out.extend_from_slice(&line[..c + 2]);
                out.extend_from_slice(GARBLED.as_bytes());
                out.extend_from_slice(&line[l..]);
                replaced += 1;
            }
            _ => out.extend_from_slice(line),
        }
        out.push(b'\n');
    }
    out.pop();
    (out, replaced)
}

/// The text's lines, where a line that does not end in a digit (every line of the text
/// format ends in a count) is joined with the next ones until one does: a garbled name can
/// hold a newline byte.
fn whole_lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut open = false;
    for piece in bytes.split(|&b| b == b'\n') {
        match lines.last_mut() {
            Some(last) if open => {
                last.push(b'\n');
                last.extend_from_slice(piece);
            }
            _ => lines.push(piece.to_vec()),
        }
        let last = lines.last().expect("just pushed");
        open = !last.is_empty() && !last.last().is_some_and(u8::is_ascii_digit);
    }
    lines
}

/// Line by line equality, where a [`GARBLED`] name of create_llvm_prof (or a callee name
/// `binary` does not hold) matches any name.
pub(crate) fn assert_equal_but_garbled(ours: &str, theirs: &str, binary: &Path) {
    let theirs = unknown_callees_garbled(theirs, binary);
    let (o, t): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    assert_eq!(
        o.len(),
        t.len(),
        "line counts differ:\n{}",
        diff_hint(&o, &t)
    );
    for (i, (a, b)) in o.iter().zip(&t).enumerate() {
        let same = a == b
            || b.split_once(GARBLED).is_some_and(|(head, tail)| {
                a.starts_with(head) && a.ends_with(tail) && a.len() > head.len() + tail.len()
            });
        assert!(same, "line {}: ours `{a}`, create_llvm_prof `{b}`", i + 1);
    }
}

fn diff_hint(o: &[&str], t: &[&str]) -> String {
    let i = o
        .iter()
        .zip(t)
        .position(|(a, b)| a != b)
        .unwrap_or(o.len().min(t.len()));
    format!(
        "first difference at line {}: ours {:?}, create_llvm_prof {:?}",
        i + 1,
        o.get(i),
        t.get(i)
    )
}

pub(crate) fn have_tools() -> bool {
    have_tool(CREATE_LLVM_PROF) && have_tool(LLVM_PROFDATA_19)
}

/// `create_llvm_prof --format=text`.
pub(crate) fn create_llvm_prof(binary: &Path, profile: &Path, out: &Path) {
    create_llvm_prof_with(binary, profile, out, &[]);
}

/// `create_llvm_prof --format=text` with `extra` options.
pub(crate) fn create_llvm_prof_with(binary: &Path, profile: &Path, out: &Path, extra: &[&str]) {
    run_ok(
        Command::new(CREATE_LLVM_PROF)
            .args(extra)
            .arg("--format=text")
            .arg(format!("--binary={}", binary.display()))
            .arg(format!("--profile={}", profile.display()))
            .arg(format!("--out={}", out.display()))
            .arg("--logtostderr"),
    );
}

/// `profmill autofdo --style autofdo --format text`.
pub(crate) fn ours(binary: &Path, profile: &Path, out: &Path) {
    run_ok(
        profmill()
            .args(["autofdo", "--style", "autofdo", "--format", "text", "-b"])
            .arg(binary)
            .arg("-p")
            .arg(profile)
            .arg("-o")
            .arg(out),
    );
}

/// autofdo's test.lbr: equal to create_llvm_prof 0.19 line for line, counts, heads, totals
/// and call targets included. The one difference, named: create_llvm_prof prints the names
/// of the five inlined callees of this profile from freed memory (binary garbage), where we
/// print the DWARF names (`deflate_fast`, `gen_bitlen`, …).
#[test]
fn test_lbr_equals_create_llvm_prof_but_its_garbled_inline_names() {
    if !have_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The capture mapped its binary as `/export/hda3/tmp/test.binary`.
    let (binary, capture) = test_lbr_in(dir.path());
    let theirs = dir.path().join("theirs.txt");
    create_llvm_prof(&binary, &capture, &theirs);
    let (clean, garbled) = ungarble_for(&std::fs::read(&theirs).unwrap(), &binary);
    // Freed memory: how many of the five inline names come out garbled varies from run to run.
    assert!(garbled <= 5, "{garbled} garbled names");
    let clean_path = dir.path().join("theirs-clean.txt");
    std::fs::write(&clean_path, clean).unwrap();
    let mine = dir.path().join("ours.txt");
    ours(&binary, &capture, &mine);
    let (o, t) = (normalized(&mine), normalized(&clean_path));
    assert!(
        o.starts_with("longest_match:1751414:1548\n"),
        "{}",
        &o[..80]
    );
    assert_equal_but_garbled(&o, &t, &binary);

    // The same through a profile store, but for one range. Named difference: a store keeps
    // perf2bolt's traces, which skip kernel entries (--ignore-interrupt-lbr), while from a
    // capture we break the chain at a kernel entry as create_llvm_prof does; test.lbr has one
    // sample where this makes a 4-byte range in longest_match.
    assert_store_input_differs_only_in(
        dir.path(),
        (&capture, &binary),
        ours,
        &o,
        &[
            ("longest_match:1751410:1548", "longest_match:1751414:1548"),
            (" 82: 22414", " 82: 22415"),
        ],
    );
}

/// The sample profile that `write` makes from a store of `capture` (aggregated for `binary`),
/// normalized, against `expected`, the same profile made from the capture: line for line the
/// same but for the `named` pairs (the store's line, then the capture's).
fn assert_store_input_differs_only_in(
    dir: &Path,
    (capture, binary): (&Path, &Path),
    write: fn(&Path, &Path, &Path),
    expected: &str,
    named: &[(&str, &str)],
) {
    let store = dir.join("p.pms");
    profmill_aggregate(capture, binary, "store", &store);
    let from_store = dir.join("store.txt");
    write(binary, &store, &from_store);
    let s = normalized(&from_store);
    assert_eq!(s.lines().count(), expected.lines().count(), "store input");
    let differing: Vec<(&str, &str)> = (s.lines().zip(expected.lines()))
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(differing, named, "store input");
}

pub(crate) const PROGRAM_C: &str = r#"
#include <stdio.h>
static inline int sq(int x) { return x * x; }
static inline int mix(int x) { int s = 0; for (int i = 0; i < (x & 31); i++) s += (i & 1) ? sq(i) : i ^ x; return s; }
__attribute__((noinline)) int pick(int x) { switch (x & 7) { case 0: return x + 1; case 1: return x * 3; case 2: return mix(x); case 3: return x - 7; default: return sq(x); } }
__attribute__((noinline)) int walk(int n) { int t = 0; for (int i = 0; i < n; i++) { t += pick(i) + mix(i); if (t > 100000) t -= 99999; } return t; }
int main(int argc, char **argv) { printf("%d\n", walk(argc * 300000)); return 0; }
"#;

/// The test program built by clang-19 with `extra` flags.
pub(crate) fn clang_program(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    std::fs::write(dir.join("prog.c"), PROGRAM_C).unwrap();
    let out = dir.join(name);
    run_ok(
        Command::new(CLANG_19)
            .args([
                "-O2",
                "-Wl,--build-id",
                "-fno-pie",
                "-no-pie",
                "prog.c",
                "-o",
            ])
            .arg(&out)
            .args(extra)
            .current_dir(dir),
    );
    out
}

/// A clang-19 `-O2 -g -fdebug-info-for-profiling` program (inlined callees, loops with
/// discriminators, a switch) and a generated LBR capture of it: equal to create_llvm_prof
/// 0.19 line for line but its garbled inline names. What this needed beyond test.lbr:
/// * the capture maps no kernel, so quipper cannot map the kernel entries and drops the rest
///   of such a sample's stack (test.lbr maps the kernel: there a kernel entry only breaks the
///   chain);
/// * clang's line-0 rows count, at line offset `0 - decl_line` (e.g. `65531` in `pick`);
/// * a function is processed when Σ count × (end − begin) passes the threshold, without the
///   `+ 1`: `_dl_relocate_static_pie` (one byte, only 1-byte ranges) is not, so the branches
///   to it are no call targets.
///
/// With DWARF 5 create_llvm_prof 0.19 writes an empty profile ("mangled .debug_info
/// section"); the same program built with DWARF 5 (the same code) gives us the same profile.
#[test]
fn clang_program_equals_create_llvm_prof_but_its_garbled_inline_names() {
    if !have_tools() || !have_tool(CLANG_19) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = clang_program(
        dir.path(),
        "prog",
        &["-g", "-gdwarf-4", "-fdebug-info-for-profiling"],
    );
    let capture = dir.path().join("perf.data");
    generate_capture(&capture, &[&binary], 2, 20_000, false, 7);
    let theirs = dir.path().join("theirs.txt");
    create_llvm_prof(&binary, &capture, &theirs);
    let mine = dir.path().join("ours.txt");
    ours(&binary, &capture, &mine);
    let (clean, _) = ungarble_for(&std::fs::read(&theirs).unwrap(), &binary);
    let clean_path = dir.path().join("theirs-clean.txt");
    std::fs::write(&clean_path, clean).unwrap();
    let (o, t) = (normalized(&mine), normalized(&clean_path));
    assert!(o.starts_with("pick:"), "{o}");
    // Line-0 rows are in the profile.
    assert!(o.lines().any(|l| l.starts_with(" 655")), "{o}");
    assert_equal_but_garbled(&o, &t, &binary);

    let binary5 = clang_program(
        dir.path(),
        "prog5",
        &["-g", "-gdwarf-5", "-fdebug-info-for-profiling"],
    );
    let capture5 = dir.path().join("perf5.data");
    generate_capture(&capture5, &[&binary5], 2, 20_000, false, 7);
    let theirs5 = dir.path().join("theirs5.txt");
    create_llvm_prof(&binary5, &capture5, &theirs5);
    assert_eq!(
        std::fs::metadata(&theirs5).unwrap().len(),
        0,
        "create_llvm_prof reads DWARF 5 now"
    );
    let mine5 = dir.path().join("ours5.txt");
    ours(&binary5, &capture5, &mine5);
    assert_eq!(normalized(&mine5), o, "DWARF 5");
}

/// The inlined callee of a callsite line (`  LOC: NAME:TOTAL`) of a text profile.
fn callee_of(line: &str) -> Option<&str> {
    let (_, rest) = line.trim_start().split_once(": ")?;
    let (name, total) = rest.rsplit_once(':')?;
    let numeric = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    (!numeric(rest.split(' ').next()?) && numeric(total)).then_some(name)
}

/// `theirs` with [`GARBLED`] for each inlined callee name that `binary` does not hold as a
/// NUL-terminated string (every DWARF or symbol name is one): some of create_llvm_prof's
/// names from freed memory are plain words (`pW`, `pE`) that [`ungarble`] keeps. Decided by
/// the binary, not by our profile, so that a wrong name of ours still fails.
fn unknown_callees_garbled(theirs: &str, binary: &Path) -> String {
    let image = std::fs::read(binary).unwrap();
    let held = |name: &str| {
        let needle = [name.as_bytes(), b"\0"].concat();
        image.windows(needle.len()).any(|w| w == needle)
    };
    let mut out = String::new();
    for line in theirs.lines() {
        match callee_of(line) {
            Some(name) if !name.contains(GARBLED) && !held(name) => {
                let (head, tail) = line.split_at(line.find(name).unwrap());
                out.push_str(head);
                out.push_str(GARBLED);
                out.push_str(&tail[name.len()..]);
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// lld places the code segment one page further in memory than in the file (`p_vaddr` =
/// `p_offset` + 0x1000 here), which GNU ld never does. create_llvm_prof 0.19 turns a
/// sample's file offset into an address by adding the *first* `PT_LOAD`'s `p_vaddr`
/// (`SymbolMap::base_addr`), not by the segment that holds it (google/autofdo #171): on
/// such a binary every sample lands 0x1000 bytes low, in another function or in none. We
/// map through the segment, as perf and llvm-profgen do, and do not copy the shift: named
/// here, create_llvm_prof's profile is exactly ours of the same capture with the mapping
/// raised by that page (so that every address is read 0x1000 bytes lower).
#[test]
fn create_llvm_prof_reads_lld_programs_a_page_low() {
    if !have_tools() || !have_tool(CLANG_19) || !have_tool("ld.lld-19") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A PIE (whose mapping sets the addresses; an ET_EXEC's are its own), with page-aligned
    // functions: a sample read a page low lands in the function before.
    let flags = [
        "-g",
        "-gdwarf-4",
        "-fdebug-info-for-profiling",
        "-fuse-ld=lld",
        "-fpie",
        "-pie",
        "-falign-functions=4096",
    ];
    let binary = clang_program(dir.path(), "prog-lld", &flags);
    let ((first_vaddr, _), (code_vaddr, code_offset)) = first_and_code_segments(&binary);
    let skew = code_vaddr - code_offset - first_vaddr;
    assert_eq!(skew, 0x1000, "lld's layout changed");
    const BASE: u64 = 0x5555_5555_0000;
    let mut spec = capture_spec(&[&binary], 2, 20_000, false, 7);
    spec.binaries[0].load_base = Some(BASE);
    let capture = dir.path().join("perf.data");
    write_capture(&capture, &spec);
    let theirs = dir.path().join("theirs.txt");
    create_llvm_prof(&binary, &capture, &theirs);
    let (clean, _) = ungarble_for(&std::fs::read(&theirs).unwrap(), &binary);
    let clean_path = dir.path().join("theirs-clean.txt");
    std::fs::write(&clean_path, clean).unwrap();
    let t = normalized(&clean_path);

    let mine = dir.path().join("ours.txt");
    ours(&binary, &capture, &mine);
    let o = normalized(&mine);
    assert!(o.lines().any(|l| l.starts_with("pick:")), "{o}");
    assert_ne!(o, t, "create_llvm_prof maps lld's code right now");

    // The capture as create_llvm_prof reads it: the code's mapping a page higher.
    let start = BASE + (code_vaddr & !0xfff);
    let low = dir.path().join("low.perf.data");
    assert!(mapping_raised(&capture, &binary, start, skew, &low) > 0);
    let shifted = dir.path().join("ours-low.txt");
    ours(&binary, &low, &shifted);
    assert!(!t.is_empty(), "create_llvm_prof wrote an empty profile");
    let o = normalized(&shifted);
    assert_equal_but_garbled(&o, &t, &binary);
}

/// `llvm-profgen --format=text` of LLVM 19 (it runs `perf script`).
pub(crate) fn llvm_profgen(binary: &Path, capture: &Path, out: &Path) {
    run_ok(
        Command::new(LLVM_PROFGEN_19)
            .arg(format!("--binary={}", binary.display()))
            .arg(format!("--perfdata={}", capture.display()))
            .arg(format!("--output={}", out.display()))
            .arg("--format=text"),
    );
}

/// `profmill autofdo --format text` in the default style (llvm-profgen's).
pub(crate) fn ours_profgen(binary: &Path, profile: &Path, out: &Path) {
    run_ok(
        profmill()
            .args(["autofdo", "--format", "text", "-b"])
            .arg(binary)
            .arg("-p")
            .arg(profile)
            .arg("-o")
            .arg(out),
    );
}

pub(crate) fn have_profgen_tools() -> bool {
    have_tool(LLVM_PROFGEN_19) && have_tool(PERF) && have_tool(LLVM_PROFDATA_19)
}

/// The default style on autofdo's test.lbr (GCC 4.6, DWARF 2, a capture that maps the
/// kernel): equal to llvm-profgen 19, counts, heads, totals and call targets. Among what this
/// checks: lines inside inlinees are not raised to their call targets' sum (LLVM 19's
/// `updateCallsiteSamples` only looks at the function's own body): `21: 471 longest_match:501`.
#[test]
fn test_lbr_equals_llvm_profgen() {
    if !have_profgen_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (binary, capture) = test_lbr_in(dir.path());
    let (theirs, mine) = (dir.path().join("theirs.txt"), dir.path().join("ours.txt"));
    llvm_profgen(&binary, &capture, &theirs);
    ours_profgen(&binary, &capture, &mine);
    let (o, t) = (normalized(&mine), normalized(&theirs));
    assert!(o.contains("\n  21: 471 longest_match:501\n"), "{o}");
    assert_eq!(o, t);

    // The drop-in: invoked as `llvm-profgen-19`, with llvm-profgen's spellings.
    let link = dir.path().join("llvm-profgen-19");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_profmill"), &link).unwrap();
    let drop_in = dir.path().join("drop-in.txt");
    let args = [
        format!("--binary={}", binary.display()),
        format!("--perfdata={}", capture.display()),
        format!("--output={}", drop_in.display()),
        "--format=text".to_string(),
    ];
    run_ok(Command::new(&link).args(&args));
    assert_eq!(normalized(&drop_in), t, "drop-in");
    // The default format, extbinary: byte for byte llvm-profgen's.
    let (ext_ours, ext_theirs) = (dir.path().join("ours.ext"), dir.path().join("theirs.ext"));
    for (tool, out) in [
        (link.as_os_str(), &ext_ours),
        (LLVM_PROFGEN_19.as_ref(), &ext_theirs),
    ] {
        run_ok(
            Command::new(tool)
                .args(&args[..2])
                .arg(format!("--output={}", out.display())),
        );
    }
    assert!(
        std::fs::read(&ext_ours).unwrap() == std::fs::read(&ext_theirs).unwrap(),
        "extbinary differs"
    );
    let refused = run(Command::new(&link)
        .args(&args)
        .arg("--update-total-samples"));
    assert!(!refused.status.success());
    let e = String::from_utf8_lossy(&refused.stderr);
    assert!(e.contains("--update-total-samples"), "{e}");

    // Named difference, as in the create_llvm_prof style: a store keeps perf2bolt's traces,
    // which skip every entry with a kernel end, where llvm-profgen keeps an entry with one end
    // in the binary (a range then ends where the interrupt hit).
    assert_store_input_differs_only_in(
        dir.path(),
        (&capture, &binary),
        ours_profgen,
        &o,
        &[
            ("longest_match:1798786:1548", "longest_match:1798791:1548"),
            (" 82: 22414", " 82: 22415"),
        ],
    );
}

/// The default style on the clang-19 `-O2 -g -fdebug-info-for-profiling` program (DWARF 5, and
/// DWARF 4) with generated LBR captures (kernel entries, several processes, no kernel mmap):
/// equal to llvm-profgen 19.
#[test]
fn clang_program_equals_llvm_profgen() {
    if !have_profgen_tools() || !have_tool(CLANG_19) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, flags, seed) in [
        ("prog5", &["-g", "-fdebug-info-for-profiling"][..], 7),
        (
            "prog4",
            &["-g", "-gdwarf-4", "-fdebug-info-for-profiling"][..],
            23,
        ),
    ] {
        let binary = clang_program(dir.path(), name, flags);
        let capture = dir.path().join(format!("{name}.perf.data"));
        generate_capture(&capture, &[&binary], 2, 5_000, false, seed);
        let theirs = dir.path().join(format!("{name}.theirs.txt"));
        let mine = dir.path().join(format!("{name}.ours.txt"));
        llvm_profgen(&binary, &capture, &theirs);
        ours_profgen(&binary, &capture, &mine);
        let (o, t) = (normalized(&mine), normalized(&theirs));
        assert!(o.starts_with("pick:"), "{o}");
        assert_eq!(o, t, "{name}");
    }
}

/// Clear errors: no debug information (in both styles), a capture of another binary, a
/// binary of the capture's file name but another build (build-id mismatch).
#[test]
fn errors_are_clear() {
    if !have_tool(CLANG_19) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plain = clang_program(dir.path(), "plain", &[]);
    let capture = dir.path().join("perf.data");
    generate_capture(&capture, &[&plain], 1, 1000, false, 3);
    let out = dir.path().join("out.txt");
    let fail = |args: &[&dyn AsRef<std::ffi::OsStr>]| {
        let mut cmd = profmill();
        cmd.arg("autofdo");
        for a in args {
            cmd.arg(a);
        }
        let o = run(&mut cmd);
        assert!(!o.status.success());
        assert!(!out.exists());
        String::from_utf8(o.stderr).unwrap()
    };
    let e = fail(&[
        &"--style", &"autofdo", &"-b", &plain, &"-p", &capture, &"-o", &out,
    ]);
    assert!(e.contains("no debug information"), "{e}");
    let e = fail(&[
        &"--style",
        &"llvm-profgen",
        &"-b",
        &plain,
        &"-p",
        &capture,
        &"-o",
        &out,
    ]);
    assert!(e.contains("no debug information"), "{e}");
    let e = fail(&[&"-b", &plain, &"-p", &capture, &"-o", &out]);
    assert!(e.contains("no debug information"), "{e}");
    let other = clang_program(dir.path(), "other", &["-g", "-DOTHER=1"]);
    let e = fail(&[
        &"--style", &"autofdo", &"-b", &other, &"-p", &capture, &"-o", &out,
    ]);
    assert!(e.contains("other"), "{e}");
    let e = fail(&[&"-b", &other, &"-p", &capture, &"-o", &out]);
    assert!(e.contains("other"), "{e}");
    // The same file name, another build: the build-ids differ.
    let sub = dir.path().join("rebuilt");
    std::fs::create_dir(&sub).unwrap();
    let rebuilt = clang_program(&sub, "plain", &["-g", "-DOTHER=1"]);
    for style in ["autofdo", "llvm-profgen"] {
        let e = fail(&[
            &"--style", &style, &"-b", &rebuilt, &"-p", &capture, &"-o", &out,
        ]);
        assert!(
            e.contains("build-id") && e.contains("--ignore-build-id"),
            "{style}: {e}"
        );
    }
}

/// create_llvm_prof's freed-memory names may hold any byte, a newline included, or start with
/// a digit.
#[test]
fn ungarble_joins_a_name_split_by_a_newline() {
    let text = b"f:10:1\n 1: 5\n 11: \xff\"X\nZ:7\n  1: 3\n 0.7: 08m:4\n  1: 4\n";
    let (clean, replaced) = ungarble(text);
    assert_eq!(replaced, 2);
    assert_eq!(
        String::from_utf8(clean).unwrap(),
        format!("f:10:1\n 1: 5\n 11: {GARBLED}:7\n  1: 3\n 0.7: {GARBLED}:4\n  1: 4\n")
    );
}

/// A plain-word callee name the binary does not hold (`pE`, from freed memory) matches any
/// name; one it holds (`sq`) must match exactly.
#[test]
fn callee_names_the_binary_lacks_count_as_garbled() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("image");
    std::fs::write(&binary, b"\x7fELF\0main\0sq\0").unwrap();
    let theirs = "main:20:1\n 1: 5\n 2: pE:6\n  1: 6\n 3: sq:4\n  1: 4\n";
    assert_eq!(
        unknown_callees_garbled(theirs, &binary),
        format!("main:20:1\n 1: 5\n 2: {GARBLED}:6\n  1: 6\n 3: sq:4\n  1: 4\n")
    );
    let ours = "main:20:1\n 1: 5\n 2: sq:6\n  1: 6\n 3: sq:4\n  1: 4\n";
    assert_equal_but_garbled(ours, theirs, &binary);
    let wrong = std::panic::catch_unwind(|| {
        assert_equal_but_garbled(&ours.replace("3: sq", "3: xx"), theirs, &binary)
    });
    assert!(
        wrong.is_err(),
        "a wrong callee name the binary holds passed"
    );
    // Before llvm-profdata reads the text too (it cannot read some garbage at all).
    let (clean, replaced) = ungarble_for(theirs.as_bytes(), &binary);
    assert_eq!(replaced, 1);
    assert_eq!(
        String::from_utf8(clean).unwrap(),
        unknown_callees_garbled(theirs, &binary)
    );
}
