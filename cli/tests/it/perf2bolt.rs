//! perf2bolt --pa on our pre-aggregated output produces the same fdata as perf2bolt on the
//! capture itself.

use std::process::Command;

use crate::common::*;
use testsupport::*;

#[test]
fn propeller_sample_1_matches_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    assert_preagg_equivalent(
        PERF2BOLT_22,
        &shared_perf("autofdo-propeller_sample_1.bin"),
        &shared_perf("autofdo-propeller_sample_1.perf.data"),
        &[],
        dir.path(),
    );
}

/// A real `perf record -e cpu-clock` capture of a program built here: `E`/`S` records through
/// `--pa --ba` equal `perf2bolt --ba` on the capture.
#[test]
fn basic_samples_match_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool("perf") || !have_tool("cc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("spin.c"), SPIN_C).unwrap();
    for (name, flags) in [
        ("spin-pie", &["-fPIE", "-pie"][..]),
        ("spin-nopie", &["-fno-pie", "-no-pie"][..]),
    ] {
        let bin = d.join(name);
        run_ok(
            Command::new("cc")
                .args(["-O2", "-Wl,--build-id"])
                .args(flags)
                .arg(d.join("spin.c"))
                .arg("-o")
                .arg(&bin),
        );
        let capture = d.join(format!("{name}.data"));
        let out = Command::new("perf")
            .args(["record", "-q", "-e", "cpu-clock", "-c", "100000", "-o"])
            .arg(&capture)
            .arg(&bin)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "perf record failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let work = d.join(name.to_string() + "-work");
        std::fs::create_dir_all(&work).unwrap();
        assert_preagg_equivalent(PERF2BOLT_22, &bin, &capture, &["--ba"], &work);
    }
}

const SPIN_C: &str = r#"
#include <stdio.h>
static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
__attribute__((noinline)) long work(long n) {
    long s = 0;
    for (long i = 0; i < n; i++) { s += (i * 7) % 13; if (s % 5 == 0) s ^= i; }
    return s;
}
int main(void) {
    static int a[20000];
    long t = 0;
    for (int r = 0; r < 40; r++) {
        for (int i = 0; i < 20000; i++) a[i] = (int)((i * 2654435761u) % 100003);
        qsort(a, 20000, sizeof a[0], cmp);
        t += work(200000);
    }
    printf("%ld\n", t);
    return 0;
}
"#;
