//! `--format preagg-legacy` (LLVM ≤ 20: `B`/`F`/`f`): perf2bolt 19 `--pa` on our output equals
//! perf2bolt 19 on the capture.

use std::path::Path;
use std::process::Command;

use crate::common::*;
use testsupport::*;

const PROGRAM_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
__attribute__((noinline)) int helper(int x) { int s = 0; for (int i = 0; i < (x & 63); i++) { if (i % 3) s += i * x; else s ^= x >> 1; } return s; }
__attribute__((noinline)) int pick(int x) { switch (x & 7) { case 0: return x + 1; case 1: return x * 3; case 2: return x ^ 5; case 3: return x - 7; default: return helper(x); } }
int main(int argc, char **argv) { int a[64]; int t = 0; for (int i = 0; i < argc * 100000; i++) { a[i & 63] = (i & 1) ? pick(i) : helper(i); if ((i & 1023) == 0) qsort(a, 64, sizeof a[0], cmp); t += a[i & 63]; } printf("%d\n", t); return 0; }
"#;

fn legacy_fdata(binary: &Path, capture: &Path, dir: &Path) -> Vec<String> {
    let preagg = dir.join("legacy.preagg");
    profmill_aggregate(capture, binary, "preagg-legacy", &preagg);
    perf2bolt_fdata(
        PERF2BOLT_19,
        binary,
        &preagg,
        &["--pa"],
        &dir.join("legacy.fdata"),
    )
}

fn perf_mode_fdata(perf2bolt: &str, binary: &Path, capture: &Path, dir: &Path) -> Vec<String> {
    perf2bolt_fdata(
        perf2bolt,
        binary,
        capture,
        &[],
        &dir.join("reference.fdata"),
    )
}

#[test]
fn legacy_matches_perf2bolt_19_on_fixed_address_binaries() {
    if !have_tool(PERF2BOLT_19) || !have_tool("cc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("p.c"), PROGRAM_C).unwrap();
    let built = d.join("prog-nopie");
    run_ok(
        Command::new("cc")
            .args(["-O2", "-fno-pie", "-no-pie", "-Wl,--build-id"])
            .arg(d.join("p.c"))
            .arg("-o")
            .arg(&built),
    );
    for binary in [built, shared_perf("autofdo-test.binary")] {
        let capture = d.join("capture.data");
        generate_capture(&capture, &[&binary], 4, 4000, false, 11);
        let reference = perf_mode_fdata(PERF2BOLT_19, &binary, &capture, d);
        assert!(
            reference.len() > 20,
            "perf2bolt 19 found little in {}",
            binary.display()
        );
        assert_same_lines(
            &legacy_fdata(&binary, &capture, d),
            &reference,
            &binary.display().to_string(),
        );
    }
}

/// A documented difference: perf2bolt 19 attributes nothing in this PIE capture (every trace
/// "out of range": it does not map the PIE's addresses), so its fdata is empty. Our legacy
/// output, read by that same perf2bolt 19, gives exactly what perf2bolt 22 finds in the capture.
#[test]
fn llvm19_loses_pie_captures_that_our_legacy_output_keeps() {
    if !have_tool(PERF2BOLT_19) || !have_tool(PERF2BOLT_22) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (binary, capture) = (
        shared_perf("autofdo-propeller_sample_1.bin"),
        shared_perf("autofdo-propeller_sample_1.perf.data"),
    );
    assert!(perf_mode_fdata(PERF2BOLT_19, &binary, &capture, dir.path()).is_empty());
    let llvm22 = perf_mode_fdata(PERF2BOLT_22, &binary, &capture, dir.path());
    assert!(!llvm22.is_empty());
    assert_same_lines(
        &legacy_fdata(&binary, &capture, dir.path()),
        &llvm22,
        "legacy via LLVM 19 vs LLVM 22 perf mode",
    );
}
