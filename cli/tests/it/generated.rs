//! Generated LBR captures over programs built here (PIE, non-PIE, a shared library; plain and
//! zstd-compressed): perf2bolt 22 `--pa` on our output equals perf2bolt 22 on the capture.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use testsupport::*;

const LIB_C: &str = r#"
int lib_mix(int x) { int s = 0; for (int i = 0; i < (x & 63); i++) { if (i % 3) s += i * x; else s ^= x >> 1; } return s; }
int lib_pick(int x) { switch (x & 7) { case 0: return x + 1; case 1: return x * 3; case 2: return x ^ 5; case 3: return x - 7; case 4: return x << 2; default: return lib_mix(x); } }
"#;

const MAIN_C: &str = r#"
#include <stdio.h>
int lib_mix(int x);
int lib_pick(int x);
static int helper(int x) { return (x & 1) ? lib_pick(x) : lib_mix(x); }
__attribute__((noinline)) int walk(int n) { int t = 0; for (int i = 0; i < n; i++) { t += helper(i); if (t > 100000) t -= 99999; } return t; }
int main(int argc, char **argv) { printf("%d\n", walk(argc * 100000)); return 0; }
"#;

fn cc(dir: &Path, out: &str, args: &[&str]) -> PathBuf {
    let path = dir.join(out);
    run_ok(
        Command::new("cc")
            .args(["-O2", "-Wl,--build-id"])
            .args(args)
            .arg("-o")
            .arg(&path)
            .current_dir(dir),
    );
    path
}

/// Writes the test program's sources and builds the shared library and the program linked to it.
fn build_library_and_program(d: &Path) -> (PathBuf, PathBuf) {
    std::fs::write(d.join("lib.c"), LIB_C).unwrap();
    std::fs::write(d.join("main.c"), MAIN_C).unwrap();
    let lib = cc(d, "libgen.so", &["-shared", "-fPIC", "lib.c"]);
    let main = cc(d, "app-dyn", &["-fPIE", "-pie", "main.c", "-L.", "-lgen"]);
    (lib, main)
}

fn generate(dir: &Path, name: &str, binaries: &[&Path], compress: bool) -> PathBuf {
    let path = dir.join(name);
    generate_capture(&path, binaries, 3, 3000, compress, 7);
    path
}

#[test]
fn generated_captures_match_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool("cc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (lib, dyn_main) = build_library_and_program(d);
    let pie = cc(d, "app-pie", &["-fPIE", "-pie", "main.c", "lib.c"]);
    let nopie = cc(d, "app-nopie", &["-fno-pie", "-no-pie", "main.c", "lib.c"]);
    let cases: [(&str, Vec<&Path>, bool); 5] = [
        ("pie.data", vec![&pie], false),
        ("pie-z.data", vec![&pie], true),
        ("nopie.data", vec![&nopie], false),
        ("nopie-z.data", vec![&nopie], true),
        ("dso.data", vec![&dyn_main, &lib], false),
    ];
    for (name, binaries, compress) in cases {
        let capture = generate(d, name, &binaries, compress);
        for binary in &binaries {
            let work = d.join(format!(
                "{name}-{}",
                binary.file_name().unwrap().to_string_lossy()
            ));
            std::fs::create_dir_all(&work).unwrap();
            assert_preagg_equivalent(PERF2BOLT_22, binary, &capture, &[], &work);
        }
    }
}

/// Several `--binary` in one pass give the same profiles as one pass per binary.
#[test]
fn several_binaries_in_one_pass() {
    if !have_tool("cc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (lib, main) = build_library_and_program(d);
    let capture = generate(d, "dso.data", &[&main, &lib], true);
    let out = d.join("both");
    run_ok(
        profmill()
            .arg("aggregate")
            .arg(&capture)
            .arg("-b")
            .arg(&main)
            .arg("-b")
            .arg(&lib)
            .arg("-o")
            .arg(&out),
    );
    for (binary, file) in [(&main, "app-dyn.preagg"), (&lib, "libgen.so.preagg")] {
        let single = d.join(format!("single-{file}"));
        run_ok(
            profmill()
                .arg("aggregate")
                .arg(&capture)
                .arg("-b")
                .arg(binary)
                .arg("-o")
                .arg(&single),
        );
        let together = std::fs::read(out.join(file)).unwrap();
        assert!(together.len() > 100, "{file} is nearly empty");
        assert_eq!(together, std::fs::read(&single).unwrap(), "{file}");
    }
}

/// The decoder agrees with perf script on generated captures too, compressed or not.
#[test]
fn generated_captures_match_perf_script() {
    if !have_tool("perf") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = shared_perf("autofdo-propeller_sample_1.bin");
    for compress in [false, true] {
        let capture = generate(dir.path(), &format!("g{compress}.data"), &[&bin], compress);
        for args in [
            &["-F", "pid,ip,brstack"][..],
            &["-F", "pid", "--show-mmap-events"][..],
        ] {
            let theirs = run_ok(
                Command::new("perf")
                    .args(["script", "-i"])
                    .arg(&capture)
                    .args(args),
            )
            .stdout;
            let ours = run_ok(profmill().arg("script").arg(&capture).args(args)).stdout;
            assert_same_lines(
                &sorted_lines(&ours),
                &sorted_lines(&theirs),
                "generated capture",
            );
        }
    }
}
