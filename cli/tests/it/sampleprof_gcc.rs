//! GCC 12 reads profmill's AutoFDO gcov version 2 output (`-fauto-profile`): a small C
//! program compiled in the test, a profile naming its functions and lines, converted from
//! LLVM text by `profmill convert --to gcov-v2`.

use std::path::Path;
use std::process::{Command, Output};

const PROGRAM: &str = r#"#include <stdio.h>
#include <stdlib.h>

static int __attribute__((noinline)) work(int n) {
  int s = 0;
  for (int i = 0; i < n; i++) {
    if (i % 3 == 0)
      s += i * 2;
    else
      s -= i;
  }
  return s;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  long total = 0;
  for (int r = 0; r < 100; r++)
    total += work(n + r);
  printf("%ld\n", total);
  return 0;
}
"#;

/// Line offsets from each function's first line: `work` starts on line 4, so its
/// `s += i * 2` (line 8) is offset 4 and `s -= i` (line 10) offset 6.
const PROFILE: &str = "main:50000:1
 2: 1
 3: 100
 4: 100 work:100
 5: 1
work:900000:100
 1: 100
 2: 100000
 3: 100000
 4: 33017
 6: 66983
 8: 100
";

/// `gcc-12`, or `gcc` if that is GCC 12; `None` (under the skip policy) when neither is.
fn gcc_12() -> Option<&'static str> {
    for cc in ["gcc-12", "gcc"] {
        let v = Command::new(cc).arg("-dumpversion").output();
        if let Ok(v) = v {
            if v.status.success() && String::from_utf8_lossy(&v.stdout).trim().starts_with("12") {
                return Some(cc);
            }
        }
    }
    testsupport::tool_missing("gcc 12 (gcc-12, or gcc of version 12)");
    None
}

fn compile(cc: &str, dir: &Path, profile: &Path) -> Output {
    Command::new(cc)
        .current_dir(dir)
        .args(["-O2", "-fdump-ipa-afdo"])
        .arg(format!("-fauto-profile={}", profile.display()))
        .args(["prog.c", "-o", "prog"])
        .output()
        .unwrap()
}

#[test]
fn gcc_12_accepts_and_uses_our_gcov_v2_profile() {
    let Some(cc) = gcc_12() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("prog.c"), PROGRAM).unwrap();
    std::fs::write(d.join("prof.txt"), PROFILE).unwrap();
    let convert = |to: &str, out: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_profmill"))
            .arg("convert")
            .arg(d.join("prof.txt"))
            .args(["--to", to, "-o"])
            .arg(d.join(out))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    convert("gcov-v2", "ours.afdo");

    // Accepted without a word.
    let o = compile(cc, d, &d.join("ours.afdo"));
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "gcc: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // And used: the AutoFDO pass annotates `work`'s two branches with our line counts.
    let dump = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".afdo") && p.to_string_lossy().contains("prog.c"))
        .expect("gcc wrote no afdo dump");
    let dump = std::fs::read_to_string(dump).unwrap();
    for count in ["[count: 33017]", "[count: 66983]", "[count: 100000]"] {
        assert!(
            dump.contains(count),
            "{count} missing from gcc's afdo dump:\n{dump}"
        );
    }

    // The test can fail: a wrong version word is refused by gcc 12 ...
    let mut bad = std::fs::read(d.join("ours.afdo")).unwrap();
    bad[4] = 1;
    std::fs::write(d.join("bad.afdo"), &bad).unwrap();
    let o = compile(cc, d, &d.join("bad.afdo"));
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("AutoFDO profile version 1 does not match 2")
    );
    // ... and so is our version 1 output (GCC 5-11's format).
    convert("gcov-v1", "v1.afdo");
    let o = compile(cc, d, &d.join("v1.afdo"));
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not match 2"));
}
