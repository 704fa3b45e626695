//! What profmill's test suites share: where the reference tools live, the one policy for a
//! missing tool, the paths of the shared read-only data (`../shared` from the workspace root),
//! and small helpers for running commands and comparing their output.
//!
//! The policy: tests compare profmill with real reference tools, and CI (`.ci/run`) installs
//! them all, so a missing tool fails the test ([`have_tool`] panics), unless
//! `PROFMILL_SKIP_EXTERNAL=1` is set, in which case the test skips itself with a note on
//! stderr. A test calls `if !have_tool(TOOL) { return; }` before using `TOOL`.
//!
//! Used only as a dev-dependency; it depends on no other workspace crate.

#![warn(missing_docs)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// perf2bolt from LLVM 19 (Debian package `bolt-19`).
pub const PERF2BOLT_19: &str = "/usr/lib/llvm-19/bin/perf2bolt";
/// perf2bolt from LLVM 22 (Debian package `bolt-22`).
pub const PERF2BOLT_22: &str = "/usr/lib/llvm-22/bin/perf2bolt";
/// merge-fdata from LLVM 19 (Debian package `bolt-19`).
pub const MERGE_FDATA_19: &str = "/usr/lib/llvm-19/bin/merge-fdata";
/// merge-fdata from LLVM 22 (Debian package `bolt-22`).
pub const MERGE_FDATA_22: &str = "/usr/lib/llvm-22/bin/merge-fdata";
/// llvm-bolt from LLVM 19 (Debian package `bolt-19`).
pub const LLVM_BOLT_19: &str = "/usr/lib/llvm-19/bin/llvm-bolt";
/// llvm-bolt from LLVM 22 (Debian package `bolt-22`).
pub const LLVM_BOLT_22: &str = "/usr/lib/llvm-22/bin/llvm-bolt";
/// llvm-objcopy from LLVM 19 (Debian package `llvm-19`).
pub const LLVM_OBJCOPY_19: &str = "/usr/lib/llvm-19/bin/llvm-objcopy";
/// llvm-profdata from LLVM 19 (Debian package `llvm-19`), the main byte-for-byte reference.
pub const LLVM_PROFDATA_19: &str = "/usr/lib/llvm-19/bin/llvm-profdata";
/// llvm-profdata from LLVM 22 (Debian package `llvm-22`), for options newer than LLVM 19.
pub const LLVM_PROFDATA_22: &str = "/usr/lib/llvm-22/bin/llvm-profdata";
/// llvm-profgen from LLVM 19 (Debian package `llvm-19`); `--perfdata` runs [`PERF`].
pub const LLVM_PROFGEN_19: &str = "/usr/lib/llvm-19/bin/llvm-profgen";
/// clang 19's C compiler, found on `PATH` (Debian package `clang-19`).
pub const CLANG_19: &str = "clang-19";
/// clang 19's C++ compiler, found on `PATH` (Debian package `clang-19`).
pub const CLANGXX_19: &str = "clang++-19";
/// The system C compiler, found on `PATH`.
pub const CC: &str = "cc";
/// GCC's C compiler, found on `PATH`.
pub const GCC: &str = "gcc";
/// GCC's C++ compiler, found on `PATH`.
pub const GXX: &str = "g++";
/// perf, found on `PATH` (Debian package `linux-perf`).
pub const PERF: &str = "perf";
/// AutoFDO's gcov profile dumper, found on `PATH` (Debian package `autofdo`).
pub const DUMP_GCOV: &str = "dump_gcov";
/// AutoFDO's perf.data to gcov converter, found on `PATH` (Debian package `autofdo`).
pub const CREATE_GCOV: &str = "create_gcov";
/// AutoFDO's perf.data to LLVM sample profile converter, found on `PATH` (Debian package `autofdo`).
pub const CREATE_LLVM_PROF: &str = "create_llvm_prof";

/// A C++ program with a rarely thrown exception (landing pads, a `.gcc_except_table`) and a
/// hot loop, for the BOLT tests that build it with clang++ and g++ and compare CFG-level
/// profiles and hashes with perf2bolt's.
pub const EH_PROGRAM_CXX: &str = r#"
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
int main(int argc, char **) { std::vector<int> v(argc, 3); std::printf("%d\n", run(v.size() * 100000)); }
"#;

/// The environment variable that turns a missing reference tool from a failure into a skip.
pub const SKIP_EXTERNAL: &str = "PROFMILL_SKIP_EXTERNAL";

/// Whether `PROFMILL_SKIP_EXTERNAL=1` is set.
pub fn skip_external() -> bool {
    std::env::var(SKIP_EXTERNAL).as_deref() == Ok("1")
}

/// Where `tool` is: itself when it names a path (contains `/`) to an existing file, else the
/// first executable file of that name in a `PATH` directory. No policy: `None` when missing.
pub fn find_tool(tool: &str) -> Option<PathBuf> {
    if tool.contains('/') {
        let p = Path::new(tool);
        return p.is_file().then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(tool))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether the reference tool `tool` (a path, or a name looked up on `PATH`) is installed,
/// under the skip policy: `true` if it is; if not, `false` with a note on stderr when
/// `PROFMILL_SKIP_EXTERNAL=1`, and a panic otherwise.
pub fn have_tool(tool: &str) -> bool {
    if find_tool(tool).is_some() {
        return true;
    }
    tool_missing(tool);
    false
}

/// The skip policy for a reference tool found missing (`what` names it, e.g. "gcc 12"): returns
/// after a note on stderr when `PROFMILL_SKIP_EXTERNAL=1` (the caller then skips its test),
/// panics otherwise.
pub fn tool_missing(what: &str) {
    if skip_external() {
        eprintln!("skipping: reference tool {what} is not installed ({SKIP_EXTERNAL}=1)");
        return;
    }
    panic!(
        "reference tool {what} is not installed; run .ci/run (which installs it), \
         or set {SKIP_EXTERNAL}=1 to skip the tests that need it"
    );
}

/// The workspace root (the directory holding the workspace's `Cargo.toml`).
pub fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("testsupport lives in the workspace root")
}

/// `../shared/REL` from the workspace root: the read-only corpus, notes and specs.
pub fn shared(rel: impl AsRef<Path>) -> PathBuf {
    workspace_root().join("../shared").join(rel)
}

/// `../shared/corpus/REL` from the workspace root.
pub fn shared_corpus(rel: impl AsRef<Path>) -> PathBuf {
    shared("corpus").join(rel)
}

/// `../shared/corpus/perf/NAME`: real captures and the binaries they profile.
pub fn shared_perf(name: impl AsRef<Path>) -> PathBuf {
    shared_corpus("perf").join(name)
}

/// `../shared/specs/NAME`: format specifications.
pub fn shared_spec(name: impl AsRef<Path>) -> PathBuf {
    shared("specs").join(name)
}

/// `path` if it exists; `None` with a "skipping" note on stderr where it is missing (the
/// shared data is optional, unlike the reference tools).
pub fn existing(path: PathBuf) -> Option<PathBuf> {
    if path.exists() {
        Some(path)
    } else {
        eprintln!("skipping: {} is missing", path.display());
        None
    }
}

/// `../shared/corpus/llvm-profdata` (one directory per LLVM release), or `None` with a note
/// where it is missing.
pub fn llvm_profdata_corpus() -> Option<PathBuf> {
    existing(shared_corpus("llvm-profdata")).filter(|p| p.is_dir())
}

/// Runs a command and returns its output, panicking only if it cannot be started.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// Runs a command, panicking with its stderr if it fails.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The lines of `bytes` (lossy UTF-8), sorted.
pub fn sorted_lines(bytes: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(bytes)
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// Asserts two sorted line lists are equal, showing the first lines only one side has.
pub fn assert_same_lines(ours: &[String], theirs: &[String], what: &str) {
    if ours == theirs {
        return;
    }
    let only_ours: Vec<_> = ours
        .iter()
        .filter(|l| theirs.binary_search(l).is_err())
        .take(5)
        .collect();
    let only_theirs: Vec<_> = theirs
        .iter()
        .filter(|l| ours.binary_search(l).is_err())
        .take(5)
        .collect();
    panic!(
        "{what}: {} lines vs {} reference lines\nonly ours: {only_ours:#?}\nonly reference: {only_theirs:#?}",
        ours.len(),
        theirs.len()
    );
}

/// The first differing line of two texts (ours, then the reference's), or their line counts.
pub fn first_difference(ours: &[u8], theirs: &[u8]) -> String {
    let (a, b) = (
        String::from_utf8_lossy(ours),
        String::from_utf8_lossy(theirs),
    );
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}: ours {x:?} vs llvm {y:?}", i + 1);
        }
    }
    format!("{} lines vs {} lines", a.lines().count(), b.lines().count())
}

/// The committed seeds and past crash inputs of fuzz target `target` (`fuzz/seeds/<target>`),
/// as (path, bytes), sorted by path: what the normal tests replay without cargo-fuzz.
pub fn fuzz_seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/seeds")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect()
}
