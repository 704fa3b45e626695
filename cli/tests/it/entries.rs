//! Secondary entry points in hand-written assembly, the last difference between our fdata and
//! perf2bolt's on a binary with OpenSSL's assembly (issue 18): a program of our own x86-64
//! assembly, each function one of the cases BOLT treats specially, built here with gcc, and a
//! generated capture of it. Our fdata must equal perf2bolt 22's; perf2bolt 19 differs in two
//! named ways, pinned below.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::common::*;
use testsupport::*;

/// The cases, one function (or pair) each:
/// 1. `jump_in` jumps to `jumped_into+3`: an entry point there (`processInterproceduralReferences`);
/// 2. `call_in` calls `called_into+4`: the same for a call;
/// 3. a plain label (and a global alias of it) inside `labelled`: an entry point
///    (`adjustFunctionBoundaries`);
/// 4. `escaped` loads the address of its own middle: an entry point (`handleAddressRef`);
/// 5. `take_into` loads the address of the middle of an instruction of `taken_into`,
/// 6. `split_source` jumps into the middle of an instruction of the earlier `split_target`,
/// 7. `fwd_source` into one of the later `fwd_target`: "corrupted control flow", BOLT ignores
///    both functions of each pair;
/// 8. `uses_jrcxz`: an instruction BOLT does not support, so it ignores the function;
/// 9. a label inside an instruction of `label_mid`: not simple;
/// 10. a label in the padding after `pad_label`'s size: no entry point;
/// 11. `calls_own_body` calls a label in its own body: a block starts there (no entry point).
const ASM: &str = r#"# Secondary entry points, as perf2bolt creates them.
        .text

# (1) Entered at 0 by calls and at +3 by jump_in's jump.
        .globl  jumped_into
        .type   jumped_into,@function
jumped_into:
        mov     %rdi, %rax
        add     $1, %rax
        imul    $3, %rax, %rax
        test    $1, %al
        jz      1f
        add     $7, %rax
1:      ret
        .size   jumped_into, .-jumped_into

        .globl  jump_in
        .type   jump_in,@function
jump_in:
        mov     %rdi, %rax
        test    $2, %dil
        jnz     jumped_into+3
        sub     $1, %rax
        jmp     jumped_into+3
        .size   jump_in, .-jump_in

# (2) Called at +4 by call_in.
        .globl  called_into
        .type   called_into,@function
called_into:
        lea     1(%rdi), %rax
        xor     %edx, %edx
        add     %rdi, %rdx
        imul    %rdx, %rax
        ret
        .size   called_into, .-called_into

        .globl  call_in
        .type   call_in,@function
call_in:
        push    %rbx
        mov     %rdi, %rbx
        call    called_into+4
        add     %rbx, %rax
        pop     %rbx
        ret
        .size   call_in, .-call_in

# (3) A plain label in a function's body, called from main.
        .globl  labelled
        .type   labelled,@function
labelled:
        mov     %rdi, %rax
        add     $5, %rax
labelled_inner:
        imul    $5, %rax, %rax
        add     $9, %rax
        ret
        .size   labelled, .-labelled
        .globl  labelled_inner_global
labelled_inner_global = labelled_inner

# (4) Its address taken by lea inside its own body (an escaped internal address).
        .globl  escaped
        .type   escaped,@function
escaped:
        mov     %rdi, %rax
        lea     .Lescaped_mid(%rip), %rdx
        add     $2, %rax
.Lescaped_mid:
        add     %rdx, %rax
        ret
        .size   escaped, .-escaped

# (5) Its address taken by lea in another function.
        .globl  taken_into
        .type   taken_into,@function
taken_into:
        mov     %rdi, %rax
        add     $11, %rax
        xor     $3, %rax
        ret
        .size   taken_into, .-taken_into

        .globl  take_into
        .type   take_into,@function
take_into:
        lea     taken_into+4(%rip), %rax
        ret
        .size   take_into, .-take_into

# (6) A jump into the middle of an instruction of another function.
        .globl  split_target
        .type   split_target,@function
split_target:
        mov     %rdi, %rax
        movabs  $0xc390909090909090, %rdx
        add     %rdx, %rax
        test    $1, %al
        jz      2f
        add     $3, %rax
2:      ret
        .size   split_target, .-split_target

        .globl  split_source
        .type   split_source,@function
split_source:
        mov     %rdi, %rax
        test    %rdi, %rdi
        js      split_target+5
        add     $4, %rax
        test    $1, %al
        jz      3f
        add     $1, %rax
3:      ret
        .size   split_source, .-split_source

# (7) A jump into the middle of an instruction of a later function.
        .globl  fwd_source
        .type   fwd_source,@function
fwd_source:
        mov     %rdi, %rax
        test    $4, %dil
        jnz     fwd_target+5
        add     $6, %rax
        ret
        .size   fwd_source, .-fwd_source

        .globl  fwd_target
        .type   fwd_target,@function
fwd_target:
        mov     %rdi, %rax
        movabs  $0xc390909090909090, %rdx
        add     %rdx, %rax
        test    $1, %al
        jz      4f
        add     $3, %rax
4:      ret
        .size   fwd_target, .-fwd_target

# (8) jrcxz, which BOLT does not support.
        .globl  uses_jrcxz
        .type   uses_jrcxz,@function
uses_jrcxz:
        mov     %rdi, %rcx
        mov     %rdi, %rax
        and     $3, %rcx
        jrcxz   5f
        add     $1, %rax
        add     %rcx, %rax
5:      imul    $3, %rax, %rax
        test    $1, %al
        jz      6f
        add     $2, %rax
6:      ret
        .size   uses_jrcxz, .-uses_jrcxz

# (9) A label in the middle of an instruction.
        .globl  label_mid
        .type   label_mid,@function
label_mid:
        mov     %rdi, %rax
        .byte   0x48, 0xba
label_mid_inner:
        .quad   0x1234
        add     %rdx, %rax
        test    $1, %al
        jz      7f
        add     $3, %rax
7:      ret
        .size   label_mid, .-label_mid

# (10) A plain label in the padding after a function's symbol size.
        .globl  pad_label
        .type   pad_label,@function
pad_label:
        mov     %rdi, %rax
        test    $1, %al
        jz      8f
        add     $3, %rax
8:      ret
        .size   pad_label, .-pad_label
pad_label_after:
        .byte   0xcc, 0xcc, 0xcc, 0xcc

# (11) A call into its own body (a local helper), which the code before it also falls into.
        .globl  calls_own_body
        .type   calls_own_body,@function
calls_own_body:
        mov     %rdi, %rax
        test    $1, %al
        jz      11f
        call    12f
        add     $1, %rax
11:     add     $2, %rax
12:     imul    $3, %rax, %rax
        ret
        .size   calls_own_body, .-calls_own_body
        .section .note.GNU-stack,"",@progbits
"#;

const MAIN: &str = r#"#include <stdio.h>
long jumped_into(long), jump_in(long), called_into(long), call_in(long), labelled(long),
    labelled_inner_global(long), escaped(long), taken_into(long), split_target(long),
    split_source(long), fwd_source(long), fwd_target(long), uses_jrcxz(long), label_mid(long), pad_label(long), calls_own_body(long);
void *take_into(void);
int main(int argc, char **argv) {
  long t = 0;
  for (long i = 0; i < 1000 * argc; i++) {
    t += jumped_into(i) + jump_in(i) + called_into(i) + call_in(i) + labelled(i) +
         labelled_inner_global(i) + escaped(i) + taken_into(i) + split_target(i) +
         split_source(i) + fwd_source(i) + fwd_target(i) + uses_jrcxz(i) + label_mid(i) + pad_label(i) + calls_own_body(i);
    t += (long)take_into() & 1;
  }
  printf("%ld\n", t);
  return 0;
}
"#;

/// The program (`entries`) built in `dir`.
fn build(dir: &Path) -> std::path::PathBuf {
    std::fs::write(dir.join("entries.s"), ASM).unwrap();
    std::fs::write(dir.join("main.c"), MAIN).unwrap();
    let bin = dir.join("entries");
    run_ok(
        Command::new(GCC)
            .args(["-O1", "-Wl,--build-id", "main.c", "entries.s", "-o"])
            .arg(&bin)
            .current_dir(dir),
    );
    bin
}

/// The function named by both ends of an fdata line when they are the same.
fn function_of(line: &str) -> Option<&str> {
    let f: Vec<&str> = line.split(' ').collect();
    (f.len() == 8 && f[1] == f[4]).then_some(f[1])
}

#[test]
fn secondary_entry_points_match_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool(GCC) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bin = build(d);
    let capture = d.join("entries.data");
    generate_capture(&capture, &[&bin], 2, 3000, false, 5);
    let ours = fdata_matching_perf2bolt_22(&bin, &capture, false, d);
    // The fall-throughs each kind of entry point (and the local call) creates, which a model
    // without them would not write.
    for edge in [
        "1 jumped_into 0 1 jumped_into 3 0 ",
        "1 called_into 0 1 called_into 4 0 ",
        "1 labelled 3 1 labelled 7 0 ",
        "1 escaped a 1 escaped e 0 ",
        "1 calls_own_body 10 1 calls_own_body 14 0 ",
    ] {
        assert!(
            ours.iter().any(|l| l.starts_with(edge)),
            "no fall-through `{edge}`"
        );
    }
    if !have_tool(PERF2BOLT_19) {
        return;
    }
    // LLVM 19 makes every function with a secondary entry point non-simple in perf2bolt (no
    // fall-throughs in it); LLVM 22 keeps their CFGs in aggregation. And LLVM 19 validates no
    // jump into another function's instruction: it only makes the target non-simple, so the
    // sources keep their fall-throughs.
    let llvm19 = perf2bolt_fdata(PERF2BOLT_19, &bin, &capture, &[], &d.join("llvm19.fdata"));
    let (ours_set, theirs): (BTreeSet<&String>, BTreeSet<&String>) =
        (ours.iter().collect(), llvm19.iter().collect());
    let only = |a: &BTreeSet<&String>, b: &BTreeSet<&String>| -> BTreeSet<String> {
        a.difference(b)
            .map(|l| function_of(l).unwrap_or(l).to_owned())
            .collect()
    };
    let named =
        |names: &[&str]| -> BTreeSet<String> { names.iter().map(|n| n.to_string()).collect() };
    assert_eq!(
        only(&ours_set, &theirs),
        named(&["called_into", "escaped", "jumped_into", "labelled"]),
        "functions with fall-throughs only LLVM 22 writes"
    );
    assert_eq!(
        only(&theirs, &ours_set),
        named(&["fwd_source", "split_source"]),
        "functions with fall-throughs only LLVM 19 writes"
    );
}
