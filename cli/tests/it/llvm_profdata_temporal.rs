//! Temporal profile traces beyond the reservoir (100 by default): llvm-profdata-19 samples them
//! with a default-seeded std::mt19937 and libstdc++'s uniform_int_distribution; profmill's
//! output must be byte-identical, for clang-19 raw profiles and for text inputs whose streams
//! are already sampled, with every thread count and both temporal options.

use std::path::Path;
use std::process::Command;

use testsupport::{have_tool, LLVM_PROFDATA_19 as LLVM_PROFDATA};

fn merge(program: &str, prefix: &[&str], args: &[String], out: &Path) -> Option<Vec<u8>> {
    let _ = std::fs::remove_file(out);
    let status = Command::new(program)
        .args(prefix)
        .arg("merge")
        .args(args)
        .arg("-o")
        .arg(out)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(status.success(), "{program} merge {args:?} failed");
    std::fs::read(out).ok()
}

fn assert_same(args: &[String], dir: &Path, what: &str) {
    let ours = merge(
        env!("CARGO_BIN_EXE_profmill"),
        &["llvm-profdata"],
        args,
        &dir.join("ours"),
    );
    // With several threads llvm-profdata-19 is itself nondeterministic: a loader task can take
    // a writer context's lock out of input order, which reorders that context's random draws
    // (seen in about 2 of 12 runs, more often on a loaded machine: a full parallel `cargo test`
    // once missed it in 10). profmill gives the in-order result; accept it within 40 runs of
    // llvm-profdata (each takes milliseconds).
    for _ in 0..40 {
        if merge(LLVM_PROFDATA, &[], args, &dir.join("theirs")) == ours {
            return;
        }
    }
    panic!("{what}: outputs differ");
}

/// A small deterministic generator (xorshift) for the synthesized traces.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A text profile with `traces` traces over 30 functions, claiming a stream of `stream_size`.
fn text_profile(dir: &Path, name: &str, traces: u64, stream_size: u64, seed: u64) -> String {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut text = format!(":ir\n:temporal_prof_traces\n{traces}\n{stream_size}\n");
    for _ in 0..traces {
        let weight = 1 + rng.below(5);
        let len = 1 + rng.below(8);
        let names: Vec<String> = (0..len).map(|_| format!("f{},", rng.below(30))).collect();
        text.push_str(&format!("{weight}\n{}\n", names.concat()));
    }
    for f in 0..30 {
        text.push_str(&format!("f{f}\n1\n1\n{}\n\n", rng.below(10)));
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn sampled_text_streams() {
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let t50 = text_profile(dir, "t50.proftext", 50, 50, 1);
    let t80 = text_profile(dir, "t80.proftext", 80, 80, 2);
    let t150 = text_profile(dir, "t150.proftext", 150, 150, 3);
    let s300 = text_profile(dir, "s300.proftext", 100, 300, 4);
    let s250 = text_profile(dir, "s250.proftext", 100, 250, 5);
    let cases: &[(&[&String], &[&str])] = &[
        (&[&t150], &[]),
        (&[&t50, &t80], &[]),
        (&[&t50, &t80, &t150], &["-j", "1"]),
        (&[&s300, &t50], &[]),
        (&[&t50, &s300], &[]),
        (&[&s300, &s250], &["-j", "1"]),
        (&[&t80, &t80, &t80], &["-j", "2"]),
        (&[&t150, &s250, &t50, &t80], &["-j", "3"]),
        (&[&t150], &["--temporal-profile-trace-reservoir-size=10"]),
        (
            &[&t150, &t80],
            &[
                "--temporal-profile-max-trace-length=3",
                "--temporal-profile-trace-reservoir-size",
                "7",
            ],
        ),
        (&[&t50, &t80, &s300], &["--text"]),
    ];
    for (files, extra) in cases {
        let mut args: Vec<String> = files.iter().map(|f| f.to_string()).collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        assert_same(&args, dir, &format!("{args:?}"));
    }
}

/// Which functions run first depends on the argument, so every run has its own trace.
const PROGRAM: &str = r#"
#include <stdlib.h>
static volatile int sink;
__attribute__((noinline)) void f0(void) { sink += 1; }
__attribute__((noinline)) void f1(void) { sink += 2; }
__attribute__((noinline)) void f2(void) { sink += 3; }
__attribute__((noinline)) void f3(void) { sink += 4; }
__attribute__((noinline)) void f4(void) { sink += 5; }
__attribute__((noinline)) void f5(void) { sink += 6; }
typedef void (*fn)(void);
int main(int argc, char **argv) {
  fn all[6] = {f0, f1, f2, f3, f4, f5};
  unsigned seed = (unsigned)atoi(argv[1]);
  for (int i = 0; i < 6; i++) {
    seed = seed * 1103515245u + 12345u;
    if ((seed >> 16) % 3) all[(seed >> 8) % 6]();
  }
  return 0;
}
"#;

#[test]
fn clang_19_temporal_profiles_beyond_the_reservoir() {
    if !have_tool(LLVM_PROFDATA) || !have_tool("clang-19") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let src = dir.join("t.c");
    std::fs::write(&src, PROGRAM).unwrap();
    let exe = dir.join("t");
    let built = Command::new("clang-19")
        .args([
            "-O1",
            "-fprofile-generate",
            "-mllvm",
            "-pgo-temporal-instrumentation",
        ])
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(built.success());
    let raws = dir.join("raws");
    std::fs::create_dir(&raws).unwrap();
    let mut files = Vec::new();
    for run in 0..140 {
        let raw = raws.join(format!("{run:03}.profraw"));
        let ran = Command::new(&exe)
            .arg(run.to_string())
            .env("LLVM_PROFILE_FILE", &raw)
            .status()
            .unwrap();
        assert!(ran.success());
        files.push(raw.display().to_string());
    }
    for extra in [&[][..], &["-j", "1"], &["-j", "3"], &["--text"]] {
        let mut args = files.clone();
        args.extend(extra.iter().map(|s| s.to_string()));
        assert_same(&args, dir, &format!("140 raw profiles {extra:?}"));
    }
    // Weighted inputs, then the merged (sampled) profile merged with more traces.
    let mut weighted: Vec<String> = files[..120]
        .iter()
        .enumerate()
        .map(|(i, f)| format!("--weighted-input={},{f}", 1 + i % 4))
        .collect();
    weighted.push("--temporal-profile-trace-reservoir-size=50".into());
    assert_same(&weighted, dir, "weighted, reservoir 50");
    let sampled = dir.join("sampled.profdata");
    merge(LLVM_PROFDATA, &[], &files[..130], &sampled);
    let mut again = vec![sampled.display().to_string()];
    again.extend(files[100..].iter().cloned());
    assert_same(&again, dir, "a sampled indexed profile with 40 more traces");
}
