//! BOLT YAML profiles: `profmill perf2bolt --profile-format=yaml` (and `-w`) must write the
//! bytes perf2bolt 22 writes, on programs built here with clang-19 and gcc (PIE and non-PIE, a
//! switch jump table, C++ exceptions, tail calls, indirect calls, PLT calls, a shared
//! library), on generated LBR captures (layout and `--profile-use-dfs` order), on real
//! `perf record -e cpu-clock` captures (basic samples), and on the AutoFDO propeller sample.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use testsupport::*;

const PROGRAM_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int table[64];
__attribute__((noinline)) int classify(int x) {
  switch (x & 15) {
  case 0: return x * 3;
  case 1: return x ^ 0x55;
  case 2: return table[x & 63] + 1;
  case 3: return x >> 2;
  case 4: return -x;
  case 5: return x + 100;
  case 7: return x * x;
  case 9: return (int)strlen("abc") + x;
  default: return 0;
  }
}
__attribute__((noinline)) int shift(int x) { return classify(x + 1); }
__attribute__((noinline)) int twice(int x) { return x * 2 + (x & 3); }
int (*volatile pick)(int) = twice;
__attribute__((noinline)) long work(int n) {
  long s = 0;
  for (int i = 0; i < n; i++) {
    table[i & 63] += i;
    if (i % 7 == 3) s += shift(i);
    else if (i % 5 == 1) s += pick(i);
    else if (i & 1) s -= i;
    else s ^= (long)i << 3;
  }
  return s;
}
__attribute__((noinline)) void release(char *p) { free(p); }
int main(int argc, char **argv) {
  char *p = malloc(32);
  snprintf(p, 32, "%d", argc);
  long r = work(argc * 200000 + atoi(p));
  printf("%ld\n", r);
  release(p);
  return 0;
}
"#;

const LIB_C: &str = r#"
int lib_mix(int x) { int s = 0; for (int i = 0; i < (x & 63); i++) { if (i % 3) s += i * x; else s ^= x >> 1; } return s; }
int lib_pick(int x) { switch (x & 7) { case 0: return x + 1; case 1: return x * 3; case 2: return x ^ 5; case 3: return x - 7; case 4: return x << 2; default: return lib_mix(x); } }
"#;

const MAIN_DSO_C: &str = r#"
#include <stdio.h>
int lib_mix(int x);
int lib_pick(int x);
static int helper(int x) { return (x & 1) ? lib_pick(x) : lib_mix(x); }
__attribute__((noinline)) int walk(int n) { int t = 0; for (int i = 0; i < n; i++) { t += helper(i); if (t > 100000) t -= 99999; } return t; }
int main(int argc, char **argv) { printf("%d\n", walk(argc * 30000)); return 0; }
"#;

fn build(
    dir: &Path,
    compiler: &str,
    source: &str,
    ext: &str,
    flags: &[&str],
    name: &str,
) -> PathBuf {
    let src = dir.join(format!("{name}.{ext}"));
    std::fs::write(&src, source).unwrap();
    let out = dir.join(name);
    run_ok(
        Command::new(compiler)
            .args(["-O2", "-Wl,--build-id"])
            .arg(&src)
            // After the source, so that `-l` options resolve its references.
            .args(flags)
            .arg("-o")
            .arg(&out)
            .current_dir(dir),
    );
    out
}

/// The test programs: C with clang-19 and gcc, PIE and non-PIE, and without PLT; C++ with both
/// compilers.
fn programs(d: &Path) -> Vec<PathBuf> {
    let nopie: &[&str] = &["-fno-pie", "-no-pie"];
    let pie: &[&str] = &["-fpie", "-pie"];
    vec![
        build(d, CLANG_19, PROGRAM_C, "c", nopie, "c_clang_nopie"),
        build(d, CLANG_19, PROGRAM_C, "c", pie, "c_clang_pie"),
        build(d, GCC, PROGRAM_C, "c", nopie, "c_gcc_nopie"),
        build(d, GCC, PROGRAM_C, "c", pie, "c_gcc_pie"),
        // `release` tail-calls `free` through its GOT slot (`jmp *free@GOTPCREL(%rip)`).
        build(d, GCC, PROGRAM_C, "c", &["-fno-plt"], "c_gcc_noplt"),
        build(d, CLANGXX_19, EH_PROGRAM_CXX, "cpp", &[], "cxx_clang"),
        build(d, GXX, EH_PROGRAM_CXX, "cpp", &[], "cxx_gcc"),
    ]
}

/// Runs perf2bolt (LLVM 22) and ours with the same arguments on `binary`; returns both outputs.
pub(crate) fn both(
    binary: &Path,
    input: &Path,
    extra: &[&str],
    dir: &Path,
    tag: &str,
) -> (Vec<u8>, Vec<u8>) {
    let name = binary.file_name().unwrap().to_string_lossy();
    let theirs = dir.join(format!("{name}.{tag}.llvm.yaml"));
    let ours = dir.join(format!("{name}.{tag}.ours.yaml"));
    for (cmd, out) in [(Command::new(PERF2BOLT_22), &theirs), (profmill(), &ours)] {
        let mut cmd = cmd;
        if cmd.get_program() != PERF2BOLT_22 {
            cmd.arg("perf2bolt");
        }
        // perf2bolt writes the path it was given into `binary-name`: both get the same one.
        run_ok(
            cmd.arg(binary)
                .arg("-p")
                .arg(input)
                .arg("-o")
                .arg(out)
                .arg("--profile-format=yaml")
                .args(extra),
        );
    }
    (
        std::fs::read(&ours).unwrap(),
        std::fs::read(&theirs).unwrap(),
    )
}

fn assert_same_yaml(binary: &Path, input: &Path, extra: &[&str], dir: &Path, tag: &str) {
    let (ours, theirs) = both(binary, input, extra, dir, tag);
    assert!(
        theirs.len() > 200,
        "perf2bolt wrote little: {}",
        String::from_utf8_lossy(&theirs)
    );
    assert!(
        ours == theirs,
        "{} ({tag}): YAML differs from perf2bolt 22: {}",
        binary.display(),
        first_difference(&ours, &theirs)
    );
}

#[test]
fn lbr_yaml_equals_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool(CLANG_19) || !have_tool(GCC) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (n, binary) in programs(d).iter().enumerate() {
        let capture = d.join(format!("{n}.data"));
        generate_capture(&capture, &[binary], 2, 64, false, 3 + n as u64);
        assert_same_yaml(binary, &capture, &[], d, "layout");
        assert_same_yaml(binary, &capture, &["--profile-use-dfs"], d, "dfs");
        // A basic profile of the same capture (its samples' addresses).
        assert_same_yaml(binary, &capture, &["--ba"], d, "basic");
    }
}

#[test]
fn shared_library_yaml_equals_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool(GCC) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lib = build(d, GCC, LIB_C, "c", &["-shared", "-fPIC"], "libyaml.so");
    let main = build(
        d,
        GCC,
        MAIN_DSO_C,
        "c",
        &["-fPIE", "-pie", "-L.", "-lyaml"],
        "app_dyn",
    );
    let capture = d.join("dso.data");
    generate_capture(&capture, &[&main, &lib], 3, 3000, false, 7);
    for binary in [&main, &lib] {
        assert_same_yaml(binary, &capture, &[], d, "layout");
        assert_same_yaml(binary, &capture, &["--profile-use-dfs"], d, "dfs");
    }
}

/// Indirect jumps that BOLT rewrites as tail calls (`JMP32m`/`JMP32r` in the hashes) or keeps
/// (`JMP64m`/`JMP64r`), by `processIndirectBranch` while disassembling and by
/// `postProcessIndirectBranches`, which stops at the first jump it cannot explain: the cargo
/// benchmark's 55 function and 152 block hash differences came from these rules.
const INDIRECT_JUMPS_C: &str = r#"
#include <stdlib.h>
__asm__(
  ".text\n"
  /* An unknown jump (base register) in a block without an epilogue stops BOLT's check: the
     GOT jump after an epilogue later on stays `JMP64m`. */
  ".globl ij_unknown_first\n.type ij_unknown_first,@function\nij_unknown_first:\n"
  "  test %edi,%edi\n  je 1f\n  mov 8(%rsi),%rax\n  jmp *%rax\n"
  "1:\n  push %rbx\n  pop %rbx\n  jmp *free@GOTPCREL(%rip)\n"
  ".size ij_unknown_first, .-ij_unknown_first\n"
  /* The GOT jump after an epilogue comes first: a tail call; the unknown jump after it is
     kept. */
  ".globl ij_epilogue_first\n.type ij_epilogue_first,@function\nij_epilogue_first:\n"
  "  test %edi,%edi\n  je 1f\n  push %rbx\n  pop %rbx\n  jmp *free@GOTPCREL(%rip)\n"
  "1:\n  jmp *8(%rsi)\n"
  ".size ij_epilogue_first, .-ij_epilogue_first\n"
  /* A pointer in .bss: a tail call while disassembling, without any epilogue. */
  ".globl ij_bss_tail\n.type ij_bss_tail,@function\nij_bss_tail:\n"
  "  test %edi,%edi\n  je 1f\n  jmp *ij_slot(%rip)\n1:\n  xor %eax,%eax\n  ret\n"
  ".size ij_bss_tail, .-ij_bss_tail\n"
  /* A read-only pointer to another function: a tail call too. */
  ".globl ij_rodata_tail\n.type ij_rodata_tail,@function\nij_rodata_tail:\n"
  "  test %edi,%edi\n  je 1f\n  jmp *ij_ro(%rip)\n1:\n  xor %eax,%eax\n  ret\n"
  ".size ij_rodata_tail, .-ij_rodata_tail\n"
  /* An array of code pointers that is no jump table, loaded in the block before the jump: a
     tail call while disassembling, but the re-check over the jump's block fails and stops
     BOLT's check, so the jump after the epilogue stays `JMP64m`. */
  ".globl ij_split_load\n.type ij_split_load,@function\nij_split_load:\n"
  "  mov ij_ptrs(,%rdi,8),%rax\n  test %esi,%esi\n  je 1f\n  jmp *%rax\n"
  "1:\n  push %rbx\n  pop %rbx\n  jmp *8(%rdx)\n"
  ".size ij_split_load, .-ij_split_load\n"
  /* One block: its indirect jump is a tail call whatever it is. */
  ".globl ij_one_block\n.type ij_one_block,@function\nij_one_block:\n"
  "  mov 16(%rdi),%rax\n  jmp *%rax\n"
  ".size ij_one_block, .-ij_one_block\n"
  ".section .rodata\n.p2align 3\nij_ro: .quad abs\n"
  ".data\n.p2align 3\nij_ptrs: .quad abs, labs, free, malloc\n"
  ".local ij_slot\n.comm ij_slot,8,8\n"
  ".text\n");
int ij_unknown_first(int, void *);
int ij_epilogue_first(int, void *);
int ij_bss_tail(int);
int ij_rodata_tail(int);
int ij_split_load(long, int, void *);
int ij_one_block(void *);
int (*volatile keep[])() = {(int (*)())ij_unknown_first, (int (*)())ij_epilogue_first,
  (int (*)())ij_bss_tail, (int (*)())ij_rodata_tail, (int (*)())ij_split_load,
  (int (*)())ij_one_block};
int main(int argc, char **argv) { return ij_bss_tail(0) + ij_rodata_tail(0) + (argc > 5); }
"#;

#[test]
fn indirect_jumps_kept_or_made_tail_calls_as_perf2bolt_22_hashes_them() {
    if !have_tool(PERF2BOLT_22) || !have_tool(CLANG_19) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nopie: &[&str] = &["-fno-pie", "-no-pie"];
    let binary = build(d, CLANG_19, INDIRECT_JUMPS_C, "c", nopie, "indirect_jumps");
    let capture = d.join("ij.data");
    generate_capture(&capture, &[&binary], 1, 400, false, 21);
    let (ours, theirs) = both(&binary, &capture, &[], d, "layout");
    let text = String::from_utf8_lossy(&theirs);
    for name in [
        "ij_unknown_first",
        "ij_epilogue_first",
        "ij_bss_tail",
        "ij_split_load",
    ] {
        assert!(text.contains(name), "{name} has no profile: {text}");
    }
    assert!(
        ours == theirs,
        "YAML differs from perf2bolt 22: {}",
        first_difference(&ours, &theirs)
    );
}

#[test]
fn save_profile_writes_the_same_yaml_besides_the_fdata() {
    if !have_tool(PERF2BOLT_22) || !have_tool(CLANG_19) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let binary = build(d, CLANG_19, PROGRAM_C, "c", &[], "w_prog");
    let capture = d.join("w.data");
    generate_capture(&capture, &[&binary], 1, 64, false, 11);
    let (yaml, _) = both(&binary, &capture, &[], d, "o");
    for spelling in ["-w", "--w"] {
        let saved = d.join(format!("saved{spelling}.yaml"));
        let fdata = d.join("w.fdata");
        run_ok(
            profmill()
                .arg("perf2bolt")
                .arg(&binary)
                .arg("-p")
                .arg(&capture)
                .arg("-o")
                .arg(&fdata)
                .arg(spelling)
                .arg(&saved),
        );
        assert_eq!(std::fs::read(&saved).unwrap(), yaml, "{spelling}");
        let fdata = std::fs::read_to_string(&fdata).unwrap();
        assert!(
            fdata.starts_with("1 ") || fdata.starts_with("0 "),
            "{fdata:.80}"
        );
    }
}

#[test]
fn basic_cpu_clock_yaml_equals_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool(PERF) || !have_tool(CLANG_19) || !have_tool(GXX) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let all = programs(d);
    for binary in [&all[0], &all[3], &all[6]] {
        let capture = d.join(format!(
            "{}.cpu.data",
            binary.file_name().unwrap().to_string_lossy()
        ));
        // A sample every 20 µs: at perf's default rate a short run may leave no sample in
        // the binary, and perf2bolt then refuses the capture (seen once in CI).
        let recorded = Command::new(PERF)
            .args(["record", "-q", "-e", "cpu-clock", "-c", "20000", "-o"])
            .arg(&capture)
            .arg(binary)
            .arg("x")
            .output()
            .unwrap();
        if !recorded.status.success() {
            tool_missing("perf record -e cpu-clock (not permitted here)");
            return;
        }
        assert_same_yaml(binary, &capture, &["--ba"], d, "cpu-clock");
        assert_same_yaml(
            binary,
            &capture,
            &["--ba", "--profile-use-dfs"],
            d,
            "cpu-clock-dfs",
        );
    }
}

#[test]
fn propeller_sample_yaml_equals_perf2bolt_22() {
    let (Some(binary), Some(capture)) = (
        existing(shared_perf("autofdo-propeller_sample_1.bin")),
        existing(shared_perf("autofdo-propeller_sample_1.perf.data")),
    ) else {
        return;
    };
    if !have_tool(PERF2BOLT_22) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    assert_same_yaml(&binary, &capture, &[], dir.path(), "layout");
    assert_same_yaml(&binary, &capture, &["--profile-use-dfs"], dir.path(), "dfs");
}

#[test]
fn aggregate_and_export_write_perf2bolts_yaml() {
    if !have_tool(PERF2BOLT_22) || !have_tool(GCC) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let binary = build(d, GCC, EH_PROGRAM_CXX, "cpp", &["-lstdc++"], "agg_prog");
    let capture = d.join("agg.data");
    generate_capture(&capture, &[&binary], 2, 200, false, 5);
    let (_, theirs) = both(&binary, &capture, &[], d, "reference");
    let aggregated = d.join("aggregated.yaml");
    run_ok(
        profmill()
            .arg("aggregate")
            .arg(&capture)
            .arg("-b")
            .arg(&binary)
            .args(["--format", "yaml", "-o"])
            .arg(&aggregated),
    );
    let ours = std::fs::read(&aggregated).unwrap();
    assert!(
        ours == theirs,
        "aggregate: {}",
        first_difference(&ours, &theirs)
    );
    let store = d.join("agg.pms");
    profmill_aggregate(&capture, &binary, "store", &store);
    let exported = d.join("exported.yaml");
    run_ok(
        profmill()
            .arg("export")
            .arg(&store)
            .arg("-b")
            .arg(&binary)
            .args(["--format", "yaml", "-o"])
            .arg(&exported),
    );
    let ours = std::fs::read(&exported).unwrap();
    assert!(
        ours == theirs,
        "export: {}",
        first_difference(&ours, &theirs)
    );
}

/// perf2bolt 22's YAML of `binary` on a capture generated with `seed`.
fn llvm_yaml(binary: &Path, dir: &Path, seed: u64, extra: &[&str]) -> PathBuf {
    let capture = dir.join(format!("m{seed}.data"));
    generate_capture(&capture, &[binary], 1, 40 + seed as u32, false, seed);
    let out = dir.join(format!("m{seed}{}.yaml", extra.join("")));
    run_ok(
        Command::new(PERF2BOLT_22)
            .arg(binary)
            .arg("-p")
            .arg(&capture)
            .arg("-o")
            .arg(&out)
            .arg("--profile-format=yaml")
            .args(extra),
    );
    out
}

fn merge_fdata(tool: Option<&str>, inputs: &[&Path], out: &Path) -> std::process::Output {
    let mut cmd = match tool {
        Some(t) => Command::new(t),
        None => {
            let mut c = profmill();
            c.arg("merge-fdata");
            c
        }
    };
    cmd.args(inputs).arg("-o").arg(out).output().unwrap()
}

#[test]
fn merge_fdata_of_yaml_equals_llvm_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool(MERGE_FDATA_22) || !have_tool(CLANGXX_19) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cxx = build(d, CLANGXX_19, EH_PROGRAM_CXX, "cpp", &[], "merge_cxx");
    let c = build(d, GCC, PROGRAM_C, "c", &[], "merge_c");
    let a = llvm_yaml(&cxx, d, 21, &[]);
    let b = llvm_yaml(&cxx, d, 22, &[]);
    let e = llvm_yaml(&cxx, d, 23, &[]);
    let other = llvm_yaml(&c, d, 24, &[]);
    let cases: Vec<Vec<&Path>> = vec![
        vec![&a, &b, &e],
        vec![&e, &a],
        vec![&a],
        // Two binaries: the same names with other fids, which merge-fdata refuses.
        vec![&a, &other, &b],
    ];
    for inputs in cases {
        let theirs = d.join("theirs.yaml");
        let ours = d.join("ours.yaml");
        let t = merge_fdata(Some(MERGE_FDATA_22), &inputs, &theirs);
        let o = merge_fdata(None, &inputs, &ours);
        assert_eq!(t.status.success(), o.status.success(), "{inputs:?}: {o:?}");
        if !t.status.success() {
            let said = String::from_utf8_lossy(&o.stderr);
            assert!(said.contains("ID mismatch"), "{said}");
            continue;
        }
        let (t, o) = (
            std::fs::read(&theirs).unwrap(),
            std::fs::read(&ours).unwrap(),
        );
        assert!(t == o, "{inputs:?}: {}", first_difference(&o, &t));
    }
    // Mixing YAML with fdata fails either way round, as in merge-fdata.
    let fdata = d.join("one.fdata");
    std::fs::write(&fdata, "1 main 0 1 main 10 0 5\n").unwrap();
    for inputs in [vec![a.as_path(), &fdata], vec![&fdata, &a]] {
        let t = merge_fdata(Some(MERGE_FDATA_22), &inputs, &d.join("t.out"));
        let o = merge_fdata(None, &inputs, &d.join("o.out"));
        assert!(!t.status.success(), "{inputs:?}");
        assert!(!o.status.success(), "{inputs:?}");
        let message = String::from_utf8_lossy(&o.stderr);
        assert!(message.contains(&*inputs[1].to_string_lossy()), "{message}");
        assert!(!d.join("o.out").exists());
    }
}

/// A jump from one function into the middle of another (hand-written assembly, like OpenSSL's
/// `bn_mul4x_mont` entering `bn_mulx4x_mont`): BOLT makes the target a secondary entry point,
/// counts the jumps as that block's `exec` and always writes the block.
#[test]
fn a_jump_into_another_function_counts_on_its_entry_block_like_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool(CLANG_19) {
        return;
    }
    const SECONDARY: &str = r#"
#include <stdio.h>
int g(int), f(int);
__asm__(".text\n.globl g\n.type g,@function\ng:\n  test %edi,%edi\n  js 1f\n.Lg_inner:\n"
        "  lea 1(%rdi),%eax\n  cmp $100,%eax\n  jg 2f\n  add $3,%eax\n2:\n  ret\n1:\n"
        "  xor %eax,%eax\n  ret\n.size g,.-g\n"
        ".globl f\n.type f,@function\nf:\n  cmp $5,%edi\n  jne .Lg_inner\n  xor %eax,%eax\n"
        "  ret\n.size f,.-f\n");
int main(int argc, char **argv) {
  int t = 0;
  for (int i = 0; i < 1000 * argc; i++) t += f(i & 15) + g(i & 7);
  printf("%d\n", t);
  return 0;
}
"#;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let binary = build(d, CLANG_19, SECONDARY, "c", &[], "secondary");
    let capture = d.join("secondary.data");
    generate_capture(&capture, &[&binary], 1, 60, false, 4);
    let (ours, theirs) = both(&binary, &capture, &[], d, "secondary");
    let theirs_text = String::from_utf8_lossy(&theirs);
    // The case is there: g's second block (the jump's target) has an `exec` of its own.
    let g = &theirs_text[theirs_text.find("name:            g\n").unwrap()..];
    let second = &g[g.find("bid:             1\n").unwrap()..];
    assert!(second.lines().nth(3).unwrap().contains("exec:"), "{g}");
    assert!(ours == theirs, "{}", first_difference(&ours, &theirs));
}

/// A RIP-relative operand pointing past a function's last byte, into the padding that follows
/// it (seen in `sqlite3ResultStrAccum` of the cargo benchmark: `lea sqlite3VMPrintf+0x11f`):
/// no function contains that address and no data object does either, so BOLT names the address
/// itself (`DATAat…`) and hashes it into the block's instruction hash.
#[test]
fn a_reference_into_padding_after_a_function_hashes_like_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool(CLANG_19) {
        return;
    }
    const PADDING: &str = r#"
#include <stdio.h>
int h(int);
long k(int);
__asm__(".text\n.globl h\n.type h,@function\nh:\n  mov %edi,%eax\n  ret\n.size h,.-h\n"
        "  int3\n  int3\n  int3\n  int3\n"
        ".globl k\n.type k,@function\nk:\n  lea h+5(%rip),%rax\n  test %edi,%edi\n  js 1f\n"
        "  add $3,%rax\n1:\n  ret\n.size k,.-k\n");
int main(int argc, char **argv) {
  long t = 0;
  for (int i = 0; i < 1000 * argc; i++) t += k(i & 15) + h(i & 7);
  printf("%ld\n", t);
  return 0;
}
"#;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let binary = build(d, CLANG_19, PADDING, "c", &[], "padding");
    let capture = d.join("padding.data");
    generate_capture(&capture, &[&binary], 1, 60, false, 5);
    let (ours, theirs) = both(&binary, &capture, &[], d, "padding");
    assert!(
        String::from_utf8_lossy(&theirs).contains("name:            k\n"),
        "k has no profile"
    );
    assert!(ours == theirs, "{}", first_difference(&ours, &theirs));
}

/// A jump table followed by a datum that another function references RIP-relatively. Where
/// the datum read as one more entry lands inside the table's function but not at an
/// instruction (seen in the cargo benchmark: `lea 0x2bddf8(%rip)` in gix_features'
/// `write_inner`, 488 bytes into a jump table of gix_pack's `Entry::from_data_obj`),
/// `populateJumpTables` ends the table there: the datum is no table's, so BOLT names its
/// address (`DATAat…`) and hashes that into the referencing block's instruction hash. Where
/// it lands at the function's start, perf2bolt 22 keeps it as an entry (an edge to block 0;
/// older sources stop there), and a reference inside a table hashes as nothing, as one at its
/// start does (`getJumpTableContainingAddress`).
#[test]
fn a_jump_table_ends_at_an_entry_off_the_instructions_like_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool(CLANG_19) {
        return;
    }
    for (what, datum) in [("mid-instruction", ".Ls1+3"), ("function start", "s")] {
        let program = TABLE_THEN_DATUM.replace("DATUM", datum);
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let binary = build(d, CLANG_19, &program, "c", &[], "table");
        let capture = d.join("table.data");
        generate_capture(&capture, &[&binary], 1, 60, false, 7);
        let (ours, theirs) = both(&binary, &capture, &[], d, "table");
        let theirs_text = String::from_utf8_lossy(&theirs);
        assert!(
            theirs_text.contains("name:            g\n"),
            "{what}: g has no profile"
        );
        assert!(
            ours == theirs,
            "{what}: {}",
            first_difference(&ours, &theirs)
        );
    }
}

/// `s` dispatches through a table of three entries; the datum after it (`DATUM` − table, as
/// a fourth entry would be) is what `g` references.
const TABLE_THEN_DATUM: &str = r#"
#include <stdio.h>
int s(int);
long g(int);
__asm__(".text\n.globl s\n.type s,@function\ns:\n  cmp $2,%edi\n  ja .Lout\n  mov %edi,%edi\n"
        "  lea .Ltab(%rip),%rcx\n  movslq (%rcx,%rdi,4),%rax\n  add %rcx,%rax\n  jmp *%rax\n"
        ".Ls0:\n  mov $1,%eax\n  ret\n"
        ".Ls1:\n  movabs $0x1122334455667788,%rax\n  ret\n"
        ".Ls2:\n  mov $3,%eax\n  ret\n"
        ".Lout:\n  xor %eax,%eax\n  ret\n.size s,.-s\n"
        ".globl g\n.type g,@function\ng:\n  lea .Ldatum(%rip),%rax\n  test %edi,%edi\n  js 1f\n"
        "  add $3,%rax\n1:\n  ret\n.size g,.-g\n"
        ".section .rodata\n.p2align 2\n.Ltab:\n  .long .Ls0-.Ltab\n  .long .Ls1-.Ltab\n"
        "  .long .Ls2-.Ltab\n.Ldatum:\n  .long DATUM-.Ltab\n.text\n");
int main(int argc, char **argv) {
  long t = 0;
  for (int i = 0; i < 1000 * argc; i++) t += s(i % 3) + g(i & 15);
  printf("%ld\n", t);
  return 0;
}
"#;

/// A function holding an instruction LLVM cannot disassemble but iced can (VIA PadLock's
/// `xsha512`, as in OpenSSL's `padlock_sha512_blocks`): BOLT cannot disassemble it, so its
/// record has no blocks, as perf2bolt 22 writes it. (Compiled only: the capture is generated.)
#[test]
fn a_function_with_an_instruction_llvm_cannot_decode_has_no_blocks_like_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool(CLANG_19) {
        return;
    }
    const PADLOCK: &str = r#"
#include <stdio.h>
int p(int);
__asm__(".text\n.globl p\n.type p,@function\np:\n  test %edi,%edi\n  js 1f\n"
        "  lea 1(%rdi),%eax\n  ret\n1:\n  .byte 0xf3,0x0f,0xa6,0xe0\n  xor %eax,%eax\n  ret\n"
        ".size p,.-p\n");
int main(int argc, char **argv) {
  int t = 0;
  for (int i = 0; i < 1000 * argc; i++) t += p(i & 15);
  printf("%d\n", t);
  return 0;
}
"#;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let binary = build(d, CLANG_19, PADLOCK, "c", &[], "padlock");
    let capture = d.join("padlock.data");
    generate_capture(&capture, &[&binary], 1, 60, false, 6);
    let (ours, theirs) = both(&binary, &capture, &[], d, "padlock");
    let theirs_text = String::from_utf8_lossy(&theirs);
    let p = &theirs_text[theirs_text
        .find("name:            p\n")
        .expect("p has a profile")..];
    assert!(p.contains("nblocks:         0\n"), "{p}");
    assert!(ours == theirs, "{}", first_difference(&ours, &theirs));
}

/// AVX-512 code with masking (`{%k1}`, `{%k1}{z}`), embedded broadcast (`{1to4}`) and
/// rounding (`{rz-sae}`): LLVM names each variant apart (`VPSUBQZ256rmk`, `…rmbkz`,
/// `VADDPDZrrb`) and hashes the mask operand; and AMD's XOP (`vprotd`, OpenSSL's `*_xop`
/// functions). The hashes equal perf2bolt 22's. (Compiled only: the capture is generated, so
/// the host needs neither.)
#[test]
fn avx512_masked_and_broadcast_forms_hash_like_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool(CLANG_19) {
        return;
    }
    const AVX512: &str = r#"
#include <x86intrin.h>
#include <stdio.h>
__attribute__((noinline, target("xop")))
void rotate(unsigned *a, int n) {
  for (int i = 0; i + 4 <= n; i += 4)
    _mm_storeu_si128((__m128i *)(a + i), _mm_roti_epi32(_mm_loadu_si128((__m128i *)(a + i)), 7));
}
__attribute__((noinline, target("avx512f,avx512vl")))
void kernel(long long *a, const long long *b, int n, unsigned char m) {
  for (int i = 0; i + 4 <= n; i += 4) {
    __m256i x = _mm256_loadu_si256((const __m256i *)(a + i));
    __m256i y = _mm256_mask_sub_epi64(x, m, x, _mm256_set1_epi64x(b[0]));
    y = _mm256_maskz_add_epi64(m ^ 5, y, _mm256_loadu_si256((const __m256i *)(b + i)));
    if (_mm256_cmpgt_epi64_mask(y, x)) y = _mm256_sub_epi64(y, x);
    _mm256_storeu_si256((__m256i *)(a + i), y);
  }
}
__attribute__((noinline, target("avx512f")))
double round_sum(const double *a, int n) {
  __m512d s = _mm512_setzero_pd();
  for (int i = 0; i + 8 <= n; i += 8)
    s = _mm512_add_round_pd(s, _mm512_loadu_pd(a + i), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  return _mm512_reduce_add_pd(s);
}
int main(int argc, char **argv) {
  long long a[64], b[64]; double d[64]; unsigned u[64];
  for (int i = 0; i < 64; i++) { a[i] = i * argc; b[i] = i; d[i] = i; u[i] = i; }
  if (argc > 5) { kernel(a, b, 64, (unsigned char)argc); printf("%f\n", round_sum(d, 64)); }
  if (argc > 6) { rotate(u, 64); printf("%u\n", u[5]); }
  printf("%lld\n", a[3]);
  return 0;
}
"#;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let binary = build(d, CLANG_19, AVX512, "c", &[], "avx512");
    let text =
        String::from_utf8(run_ok(Command::new("objdump").arg("-d").arg(&binary)).stdout).unwrap();
    for form in ["{%k", "{z}", "{1to", "{rz-sae}", "vprotd"] {
        assert!(text.contains(form), "the program has no {form} instruction");
    }
    let capture = d.join("avx512.data");
    generate_capture(&capture, &[&binary], 1, 80, false, 9);
    assert_same_yaml(&binary, &capture, &[], d, "avx512");
}

/// Pre-aggregated input (`--pa`) as `profmill aggregate --format preagg` writes it: the taken
/// counts in `T` lines and the mispredictions in `B FROM TO 0 N` lines. perf2bolt's YAML gives
/// a never-taken line's mispredictions to calls but not to inner branches (each line's inner
/// branch is recorded on its own); ours equals it, `-w` and both LLVM versions' readers alike.
#[test]
fn pre_aggregated_zero_count_lines_equal_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool(CLANGXX_19) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cxx = build(d, CLANGXX_19, EH_PROGRAM_CXX, "cpp", &[], "preagg_cxx");
    let capture = d.join("preagg.data");
    generate_capture(&capture, &[&cxx], 1, 60, false, 5);
    let preagg = d.join("cxx.preagg");
    run_ok(
        profmill()
            .arg("aggregate")
            .arg(&capture)
            .arg("-b")
            .arg(&cxx)
            .args(["--format", "preagg", "-o"])
            .arg(&preagg),
    );
    let text = std::fs::read_to_string(&preagg).unwrap();
    let zero_count_mispredicted = text.lines().filter(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        f[0] == "B" && f[3] == "0" && f[4] != "0"
    });
    assert!(
        zero_count_mispredicted.count() > 0,
        "the case is not exercised:\n{text}"
    );
    assert_same_yaml(&cxx, &preagg, &["--pa"], d, "preagg");
}

/// `-q` (no profile written, no `-o` file created) and `--print=exec|branches` (the function
/// list on stderr) of YAML merges: stderr and outputs equal LLVM 22's merge-fdata's.
#[test]
fn merge_fdata_quiet_and_print_of_yaml_equal_llvm_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool(MERGE_FDATA_22) || !have_tool(CLANGXX_19) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cxx = build(d, CLANGXX_19, EH_PROGRAM_CXX, "cpp", &[], "print_cxx");
    let a = llvm_yaml(&cxx, d, 31, &[]);
    let b = llvm_yaml(&cxx, d, 32, &[]);
    let run = |tool: Option<&str>, extra: &[&str], out: &Path| {
        let mut cmd = match tool {
            Some(t) => Command::new(t),
            None => {
                let mut c = profmill();
                c.arg("merge-fdata");
                c
            }
        };
        cmd.args([&a, &b])
            .args(extra)
            .arg("-o")
            .arg(out)
            .output()
            .unwrap()
    };
    for extra in [
        &["-q"][..],
        &["--print=exec"],
        &["-print", "branches"],
        &["-q", "--print=exec"],
    ] {
        let (theirs, ours) = (d.join("t.yaml"), d.join("o.yaml"));
        let _ = std::fs::remove_file(&theirs);
        let _ = std::fs::remove_file(&ours);
        let t = run(Some(MERGE_FDATA_22), extra, &theirs);
        let o = run(None, extra, &ours);
        assert!(t.status.success() && o.status.success(), "{extra:?}: {o:?}");
        // The inputs' paths are the same in both: stderr compares whole.
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&t.stderr),
            "{extra:?}"
        );
        assert_eq!(theirs.exists(), ours.exists(), "{extra:?}");
        if theirs.exists() {
            assert!(std::fs::read(&theirs).unwrap() == std::fs::read(&ours).unwrap());
        }
        if extra.iter().any(|e| e.contains("print")) {
            let said = String::from_utf8_lossy(&o.stderr);
            assert!(
                said.contains("Functions sorted by") && said.contains(" : "),
                "{said}"
            );
        }
    }
}

/// The bytes of `.text` of an ELF file.
fn text_section(path: &Path) -> Vec<u8> {
    use object::{Object, ObjectSection};
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    file.section_by_name(".text")
        .unwrap()
        .data()
        .unwrap()
        .to_vec()
}

#[test]
fn llvm_bolt_optimizes_alike_with_our_yaml_and_reads_back_its_own() {
    if !have_tool(PERF2BOLT_22) || !have_tool(LLVM_BOLT_22) || !have_tool(MERGE_FDATA_22) {
        return;
    }
    if !have_tool(CLANG_19) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let binary = build(
        d,
        CLANG_19,
        PROGRAM_C,
        "c",
        &["-Wl,--emit-relocs"],
        "bolt_c",
    );
    let capture = d.join("bolt.data");
    generate_capture(&capture, &[&binary], 2, 200, false, 9);
    let (_, _) = both(&binary, &capture, &[], d, "bolt");
    let name = binary.file_name().unwrap().to_string_lossy().into_owned();
    let ours = d.join(format!("{name}.bolt.ours.yaml"));
    let theirs = d.join(format!("{name}.bolt.llvm.yaml"));
    let bolt = |profile: &Path, out: &Path, saved: &Path| {
        run_ok(
            Command::new(LLVM_BOLT_22)
                .arg(&binary)
                .arg("-o")
                .arg(out)
                .arg("--data")
                .arg(profile)
                .args(["--reorder-blocks=ext-tsp", "--reorder-functions=cdsort"])
                .arg("-w")
                .arg(saved),
        );
    };
    let (ours_out, theirs_out) = (d.join("bolted.ours"), d.join("bolted.llvm"));
    let (ours_w, theirs_w) = (d.join("w.ours.yaml"), d.join("w.llvm.yaml"));
    bolt(&ours, &ours_out, &ours_w);
    bolt(&theirs, &theirs_out, &theirs_w);
    assert_eq!(text_section(&ours_out), text_section(&theirs_out));
    // What llvm-bolt -w writes, our reader reads: merge-fdata of it equals LLVM's.
    let t = merge_fdata(Some(MERGE_FDATA_22), &[&ours_w, &ours], &d.join("t.yaml"));
    let o = merge_fdata(None, &[&ours_w, &ours], &d.join("o.yaml"));
    assert_eq!(t.status.success(), o.status.success(), "{o:?} / {t:?}");
    if t.status.success() {
        assert_eq!(
            std::fs::read(d.join("t.yaml")).unwrap(),
            std::fs::read(d.join("o.yaml")).unwrap()
        );
    }
    let t = merge_fdata(Some(MERGE_FDATA_22), &[&ours_w], &d.join("t1.yaml"));
    let o = merge_fdata(None, &[&ours_w], &d.join("o1.yaml"));
    assert!(t.status.success() && o.status.success(), "{o:?}");
    assert_eq!(
        std::fs::read(d.join("t1.yaml")).unwrap(),
        std::fs::read(d.join("o1.yaml")).unwrap()
    );
}

/// llvm-bolt's stale-profile report lines (`--infer-stale-profile`).
fn stale_matching(binary: &Path, profile: &Path, out: &Path) -> Vec<String> {
    let output = run_ok(
        Command::new(LLVM_BOLT_22)
            .arg(binary)
            .arg("-o")
            .arg(out)
            .arg("--data")
            .arg(profile)
            .args(["--infer-stale-profile", "--reorder-blocks=ext-tsp"]),
    );
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    text.lines()
        .filter(|l| l.contains("stale") || l.contains("inferred profile"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn stale_profile_inference_matches_as_many_blocks_with_our_yaml() {
    if !have_tool(PERF2BOLT_22) || !have_tool(LLVM_BOLT_22) || !have_tool(CLANG_19) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let old = build(d, CLANG_19, PROGRAM_C, "c", &[], "stale_old");
    let changed = PROGRAM_C.replace("s -= i;", "s -= i + 1;");
    let new = build(d, CLANG_19, &changed, "c", &[], "stale_new");
    let capture = d.join("stale.data");
    generate_capture(&capture, &[&old], 2, 200, false, 9);
    let (_, _) = both(&old, &capture, &[], d, "stale");
    let ours = stale_matching(&new, &d.join("stale_old.stale.ours.yaml"), &d.join("n1"));
    let theirs = stale_matching(&new, &d.join("stale_old.stale.llvm.yaml"), &d.join("n2"));
    assert!(
        ours.iter().any(|l| l.contains("exact match")),
        "no stale matching happened: {ours:?}"
    );
    assert_eq!(ours, theirs);
    assert_eq!(text_section(&d.join("n1")), text_section(&d.join("n2")));
}

/// `perf2bolt-19` (a link to profmill under LLVM 19's tool name) writes what perf2bolt 19
/// writes. Its YAML differs from LLVM 22's in the counts of fall-throughs: traces through a
/// function that `postProcessIndirectBranches` left non-simple are invalid (the indirect-jump
/// program), and a range entering a landing pad never continues the call before it (the C++
/// program's `__cxa_throw` block). Same programs and captures as the LLVM 22 tests.
#[test]
fn perf2bolt_19_yaml_equals_perf2bolt_19() {
    if !have_tool(PERF2BOLT_19) || !have_tool(CLANG_19) || !have_tool(GCC) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let link = d.join("perf2bolt-19");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_profmill"), &link).unwrap();
    let nopie: &[&str] = &["-fno-pie", "-no-pie"];
    let mut binaries = programs(d);
    binaries.push(build(
        d,
        CLANG_19,
        INDIRECT_JUMPS_C,
        "c",
        nopie,
        "indirect_jumps",
    ));
    let mut differs_from_22 = 0;
    for (n, binary) in binaries.iter().enumerate() {
        let capture = d.join(format!("{n}.data"));
        generate_capture(&capture, &[binary], 2, 64, false, 5);
        for extra in [&[][..], &["--profile-use-dfs"]] {
            let mut outputs = Vec::new();
            for (tool, tag) in [(PERF2BOLT_19, "llvm19"), (PERF2BOLT_22, "llvm22")] {
                let out = d.join(format!("{n}.{tag}.{}.yaml", extra.len()));
                run_ok(
                    Command::new(tool)
                        .arg(binary)
                        .arg("-p")
                        .arg(&capture)
                        .arg("-o")
                        .arg(&out)
                        .arg("--profile-format=yaml")
                        .args(extra),
                );
                outputs.push(std::fs::read(&out).unwrap());
            }
            let ours = d.join(format!("{n}.ours19.{}.yaml", extra.len()));
            run_ok(
                Command::new(&link)
                    .arg(binary)
                    .arg("-p")
                    .arg(&capture)
                    .arg("-o")
                    .arg(&ours)
                    .arg("--profile-format=yaml")
                    .args(extra),
            );
            let ours = std::fs::read(&ours).unwrap();
            differs_from_22 += usize::from(outputs[0] != outputs[1]);
            assert!(
                ours == outputs[0],
                "{} {extra:?}: YAML differs from perf2bolt 19: {}",
                binary.display(),
                first_difference(&ours, &outputs[0])
            );
        }
    }
    assert!(
        differs_from_22 > 0,
        "no program shows LLVM 19's differences"
    );
}
