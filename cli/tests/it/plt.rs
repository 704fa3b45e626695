//! Branches into PLT entries of binaries linked here by GNU ld and lld, in every PLT flavour
//! (lazy `.plt` with its header, `-z now`, `.plt.sec` of `-z ibt`, `.plt.got` of functions
//! whose address is taken), and of distribution-built libraries: `profmill aggregate --format
//! fdata` names each stub `sym@PLT` and the lazy `.plt` header `__BOLT_PSEUDO_.plt` as
//! perf2bolt 22 and 19 do.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use testsupport::*;

/// A shared library of `n` exported functions calling each other through the PLT; every
/// fourth one also takes the address of the function it calls (through the GOT), which puts
/// that function's stub in `.plt.got`. Returns the source and the address-taken functions.
fn library_source(n: usize) -> (String, BTreeSet<String>) {
    let mut src = String::from("typedef int (*fp)(int);\nvolatile fp table[4];\n");
    for i in 0..n {
        writeln!(src, "int f{i}(int);").unwrap();
    }
    let mut taken = BTreeSet::new();
    for i in 0..n {
        let (a, b) = ((i * 7 + 1) % n, (i * 13 + 5) % n);
        if i % 4 == 0 {
            taken.insert(format!("f{a}"));
            writeln!(
                src,
                "int f{i}(int x) {{ if (x <= 0) return {i}; table[x & 3] = f{a}; \
                 return table[x & 3](x - 1) + f{a}(x - 2) + f{b}(x - 3); }}"
            )
            .unwrap();
        } else {
            writeln!(
                src,
                "int f{i}(int x) {{ if (x <= 0) return {i}; return f{a}(x - 1) ^ f{b}(x - 3); }}"
            )
            .unwrap();
        }
    }
    (src, taken)
}

/// A PIE program calling 40 of the library's functions, taking the address of half of them.
fn program_source() -> String {
    let mut src = String::from("#include <stdio.h>\ntypedef int (*fp)(int);\n");
    for i in 0..40 {
        writeln!(src, "int f{i}(int);").unwrap();
    }
    src.push_str("int main(int argc, char **argv) {\n  int t = 0;\n  volatile fp p;\n");
    for i in 0..40 {
        if i % 2 == 0 {
            writeln!(src, "  p = f{i}; t += p(argc) + f{i}(argc + {i});").unwrap();
        } else {
            writeln!(src, "  t += f{i}(argc * {i});").unwrap();
        }
    }
    src.push_str("  printf(\"%d\\n\", t);\n  return 0;\n}\n");
    src
}

/// `compiler -O1 SOURCE FLAGS -o OUT` in `dir`.
fn build(dir: &Path, compiler: &str, source: &str, out: &str, flags: &[&str]) -> PathBuf {
    let path = dir.join(out);
    run_ok(
        Command::new(compiler)
            .args(["-O1", "-Wl,--build-id"])
            .arg(source)
            .args(flags)
            .arg("-o")
            .arg(&path)
            .current_dir(dir),
    );
    path
}

/// The names of `binary`'s allocated sections.
fn section_names(binary: &Path) -> BTreeSet<String> {
    use object::{Object, ObjectSection};
    let data = std::fs::read(binary).unwrap();
    let file = object::File::parse(&*data).unwrap();
    file.sections()
        .filter_map(|s| s.name().ok().map(str::to_owned))
        .collect()
}

/// Our fdata for `binaries[0]` in a generated capture of `binaries`, checked against perf2bolt
/// 22 and 19; returns our sorted lines.
fn matching_fdata(d: &Path, name: &str, binaries: &[&Path], seed: u64) -> Vec<String> {
    let capture = d.join(format!("{name}.data"));
    generate_capture(&capture, binaries, 2, 3000, false, seed);
    let work = d.join(format!("{name}-work"));
    std::fs::create_dir_all(&work).unwrap();
    assert_fdata_matches_perf2bolt(binaries[0], &capture, false, &work);
    sorted_lines(&std::fs::read(work.join("ours.fdata")).unwrap())
}

/// Whether some fdata line has a branch end `1 NAME OFFSET` with `NAME` satisfying `pred`.
fn names_end(lines: &[String], pred: impl Fn(&str, &str) -> bool) -> bool {
    lines.iter().any(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        f.len() >= 6 && ((f[0] == "1" && pred(f[1], f[2])) || (f[3] == "1" && pred(f[4], f[5])))
    })
}

/// The library (1,200 functions), the program, and the fdata checks for one linker setup:
/// the library's and the program's fdata equal perf2bolt's, and name stubs of `.plt.got`
/// functions at offset 0 and (lazy binding) the `.plt` header.
fn check_linker_setup(d: &Path, name: &str, compiler: &str, flags: &[&str], sections: &[&str]) {
    let (lib_src, taken) = library_source(1200);
    std::fs::write(d.join("lib.c"), lib_src).unwrap();
    std::fs::write(d.join("app.c"), program_source()).unwrap();
    let lib_flags: Vec<&str> = ["-shared", "-fPIC"].iter().chain(flags).copied().collect();
    let lib = build(d, compiler, "lib.c", &format!("lib{name}.so"), &lib_flags);
    let link = format!("-l{name}");
    let app_flags: Vec<&str> = ["-fPIE", "-pie", "-L.", &link]
        .iter()
        .chain(flags)
        .copied()
        .collect();
    let app = build(d, compiler, "app.c", &format!("app-{name}"), &app_flags);
    let found = section_names(&lib);
    for s in sections {
        assert!(
            found.contains(*s),
            "{name}: the library has no {s}: {found:?}"
        );
    }

    let lib_lines = matching_fdata(d, &format!("{name}-lib"), &[&lib, &app], 5);
    assert!(
        names_end(&lib_lines, |n, _| n.ends_with("@PLT")),
        "{name}: no branch names a PLT stub"
    );
    if sections.contains(&".plt.got") {
        assert!(
            names_end(&lib_lines, |n, off| off == "0"
                && n.strip_suffix("@PLT").is_some_and(|f| taken.contains(f))),
            "{name}: no branch reaches a .plt.got stub"
        );
    }
    if !sections.contains(&".plt.sec") && found.contains(".plt") {
        // The generator takes the lazy path of a `.plt` stub now and then.
        assert!(
            names_end(&lib_lines, |n, _| n == "__BOLT_PSEUDO_.plt"),
            "{name}: no branch names the PLT header"
        );
    }
    let app_lines = matching_fdata(d, &format!("{name}-app"), &[&app, &lib], 6);
    assert!(
        names_end(&app_lines, |n, _| n.ends_with("@PLT")),
        "{name}: no branch of the program names a PLT stub"
    );
}

#[test]
fn gnu_ld_lazy_plt_matches_perf2bolt() {
    if !have_tool(PERF2BOLT_22) || !have_tool(GCC) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    check_linker_setup(
        dir.path(),
        "lazy",
        GCC,
        &["-Wl,-z,lazy"],
        &[".plt", ".plt.got"],
    );
}

#[test]
fn gnu_ld_bind_now_plt_matches_perf2bolt() {
    if !have_tool(PERF2BOLT_22) || !have_tool(GCC) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    check_linker_setup(
        dir.path(),
        "now",
        GCC,
        &["-Wl,-z,now"],
        &[".plt", ".plt.got"],
    );
}

/// `-z ibt`: `.plt.sec` stubs (`endbr64; bnd jmp *GOT`) and 16-byte `.plt.got` entries, which
/// BOLT recognises by the `endbr64` of the first.
#[test]
fn gnu_ld_ibt_plt_sec_matches_perf2bolt() {
    if !have_tool(PERF2BOLT_22) || !have_tool(GCC) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    check_linker_setup(
        dir.path(),
        "ibt",
        GCC,
        &["-fcf-protection", "-Wl,-z,ibt"],
        &[".plt", ".plt.sec", ".plt.got"],
    );
}

/// lld's layout: no `.plt.got` (address-taken functions keep their lazy `.plt` stub), every
/// stub in `.plt` after a 16-byte header.
#[test]
fn lld_plt_matches_perf2bolt() {
    if !have_tool(PERF2BOLT_22) || !have_tool(CLANG_19) || !have_tool("ld.lld-19") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    check_linker_setup(dir.path(), "lld", CLANG_19, &["-fuse-ld=lld"], &[".plt"]);
}

#[test]
fn lld_bind_now_plt_matches_perf2bolt() {
    if !have_tool(PERF2BOLT_22) || !have_tool(CLANG_19) || !have_tool("ld.lld-19") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    check_linker_setup(
        dir.path(),
        "lldnow",
        CLANG_19,
        &["-fuse-ld=lld", "-Wl,-z,now"],
        &[".plt"],
    );
}

/// lld's `-z force-ibt`: `.plt.sec` stubs, and `.plt` entries without an indirect jump, which
/// leave the whole `.plt` to its header.
#[test]
fn lld_ibt_plt_sec_matches_perf2bolt() {
    if !have_tool(PERF2BOLT_22) || !have_tool(CLANG_19) || !have_tool("ld.lld-19") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    check_linker_setup(
        dir.path(),
        "lldibt",
        CLANG_19,
        &["-fuse-ld=lld", "-fcf-protection", "-Wl,-z,force-ibt"],
        &[".plt", ".plt.sec"],
    );
}

/// LLVM 19's pre-aggregated dialect (`--format preagg-legacy`) read by perf2bolt 19 `--pa`
/// equals perf2bolt 19 on the capture of a fixed-address program whose stubs include the lazy
/// `.plt` header and `.plt.got` (`-fPIE` code linked `-no-pie`: GOT-relative address taking).
#[test]
fn legacy_preagg_of_plt_branches_matches_perf2bolt_19() {
    if !have_tool(PERF2BOLT_19) || !have_tool(GCC) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (lib_src, _) = library_source(200);
    std::fs::write(d.join("lib.c"), lib_src).unwrap();
    std::fs::write(d.join("app.c"), program_source()).unwrap();
    let lib = build(d, GCC, "lib.c", "libleg.so", &["-shared", "-fPIC"]);
    let app = build(
        d,
        GCC,
        "app.c",
        "app-leg",
        &["-fPIE", "-no-pie", "-L.", "-lleg", "-Wl,-z,lazy"],
    );
    assert!(section_names(&app).contains(".plt.got"));
    let capture = d.join("leg.data");
    generate_capture(&capture, &[&app, &lib], 2, 3000, false, 7);
    let reference = perf2bolt_fdata(
        PERF2BOLT_19,
        &app,
        &capture,
        &[],
        &d.join("reference.fdata"),
    );
    assert!(names_end(&reference, |n, _| n == "__BOLT_PSEUDO_.plt"));
    let preagg = d.join("legacy.preagg");
    profmill_aggregate(&capture, &app, "preagg-legacy", &preagg);
    let ours = perf2bolt_fdata(
        PERF2BOLT_19,
        &app,
        &preagg,
        &["--pa"],
        &d.join("ours.fdata"),
    );
    assert_same_lines(&ours, &reference, "perf2bolt 19 --pa on our legacy output");
}

/// Our sorted fdata (the perf2bolt drop-in with `--allow-stripped`) and perf2bolt 22's and
/// 19's for a generated capture of the stripped library `lib`.
fn stripped_library_fdata(d: &Path, lib: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let name = lib.file_name().unwrap().to_str().unwrap();
    let capture = d.join(format!("{name}.data"));
    generate_capture(&capture, &[lib], 2, 3000, false, 3);
    let stripped = ["--allow-stripped"];
    let ours_path = d.join(format!("{name}.ours.fdata"));
    run_ok(
        profmill()
            .arg("perf2bolt")
            .arg(lib)
            .arg("-p")
            .arg(&capture)
            .arg("-o")
            .arg(&ours_path)
            .args(stripped),
    );
    let ours = sorted_lines(&std::fs::read(&ours_path).unwrap());
    assert!(
        names_end(&ours, |n, _| n.ends_with("@PLT"))
            && names_end(&ours, |n, _| n.starts_with("__BOLT_FDE_FUNCat")),
        "{name}: no branch names a PLT stub or an FDE function"
    );
    let mut references = Vec::new();
    for (tool, tag) in [(PERF2BOLT_22, "22"), (PERF2BOLT_19, "19")] {
        if tag == "22" || have_tool(tool) {
            let out = d.join(format!("{name}.{tag}.fdata"));
            references.push(perf2bolt_fdata(tool, lib, &capture, &stripped, &out));
        }
    }
    (ours, references)
}

/// zlib as Debian ships it (stripped; zlib1g-dev, which CI installs, brings it), which we did
/// not build: with `--allow-stripped`, BOLT's functions are the PLT stubs and the `.eh_frame`
/// FDEs (`__BOLT_FDE_FUNCat<hex>`), and our fdata equals perf2bolt 22's and 19's.
#[test]
fn stripped_distribution_zlib_matches_perf2bolt() {
    if !have_tool(PERF2BOLT_22) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (ours, references) =
        stripped_library_fdata(dir.path(), Path::new("/usr/lib/x86_64-linux-gnu/libz.so.1"));
    for reference in &references {
        assert_same_lines(&ours, reference, "libz.so.1");
    }
}

/// Debian's libstdc++ (stripped, `-fcf-protection`), which we did not build: equal to
/// perf2bolt 22. Its `.cold` parts are functions of their own there (FDEs without symbols);
/// one that is never sampled is not disassembled in lite mode, but BOLT still scans it for
/// references (`scanExternalRefs`), and its jump back into its parent's body makes a
/// secondary entry point there, which splits a block after a call: the fall-through from the
/// call to its continuation then appears in the profile. (perf2bolt 19 is not compared: it
/// writes hundreds fewer fall-through lines than perf2bolt 22 in this library's FDE
/// functions.)
#[test]
fn stripped_distribution_libstdcxx_matches_perf2bolt_22() {
    if !have_tool(PERF2BOLT_22) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lib = Path::new("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
    let (ours, references) = stripped_library_fdata(dir.path(), lib);
    assert_same_lines(&ours, &references[0], "libstdc++.so.6");
}
