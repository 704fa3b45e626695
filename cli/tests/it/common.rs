//! Helpers for tests that run the real `profmill` binary against reference tools (what needs
//! `CARGO_BIN_EXE_profmill` or the corpus generator); the rest is in `testsupport`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use testsupport::{
    assert_same_lines, have_tool, run_ok, sorted_lines, CLANG_19, PERF2BOLT_19, PERF2BOLT_22,
};

/// The `profmill` binary under test.
pub fn profmill() -> Command {
    Command::new(env!("CARGO_BIN_EXE_profmill"))
}

/// Sorted fdata lines of `perf2bolt BINARY -p INPUT [--pa] EXTRA… -o OUT`.
pub fn perf2bolt_fdata(
    perf2bolt: &str,
    binary: &Path,
    input: &Path,
    extra: &[&str],
    out: &Path,
) -> Vec<String> {
    run_ok(
        Command::new(perf2bolt)
            .arg(binary)
            .arg("-p")
            .arg(input)
            .arg("-o")
            .arg(out)
            .args(extra),
    );
    sorted_lines(&std::fs::read(out).unwrap())
}

/// Our `aggregate` output for one binary, in the given `--format`.
pub fn profmill_aggregate(capture: &Path, binary: &Path, format: &str, out: &Path) {
    run_ok(
        profmill()
            .arg("aggregate")
            .arg(capture)
            .arg("--binary")
            .arg(binary)
            .arg("-o")
            .arg(out)
            .args(["--format", format]),
    );
}

/// perf2bolt on a capture, and perf2bolt --pa on our pre-aggregated output of the same
/// capture: the sorted fdata must be identical.
pub fn assert_preagg_equivalent(
    perf2bolt: &str,
    binary: &Path,
    capture: &Path,
    extra: &[&str],
    dir: &Path,
) {
    let reference = reference_fdata(perf2bolt, binary, capture, extra, dir);
    let preagg = dir.join("ours.preagg");
    profmill_aggregate(capture, binary, "preagg", &preagg);
    let pa: Vec<&str> = ["--pa"].iter().chain(extra).copied().collect();
    let ours = perf2bolt_fdata(perf2bolt, binary, &preagg, &pa, &dir.join("ours.fdata"));
    assert_same_lines(
        &ours,
        &reference,
        "fdata via --pa vs perf2bolt on the capture",
    );
}

/// A generated 32-entry LBR capture of `binaries` (all mapped in every process).
pub fn generate_capture(
    path: &Path,
    binaries: &[&Path],
    mib: u64,
    distinct_stacks: u32,
    compress: bool,
    seed: u64,
) {
    let spec = capture_spec(binaries, mib, distinct_stacks, compress, seed);
    write_capture(path, &spec);
}

pub fn write_capture(path: &Path, spec: &corpus::LbrCaptureSpec) {
    corpus::write_lbr_capture(spec, &mut std::fs::File::create(path).unwrap()).unwrap();
}

/// The spec [`generate_capture`] writes: 3 processes, 5% kernel entries, attr size 128.
pub fn capture_spec(
    binaries: &[&Path],
    mib: u64,
    distinct_stacks: u32,
    compress: bool,
    seed: u64,
) -> corpus::LbrCaptureSpec {
    corpus::LbrCaptureSpec {
        binaries: binaries
            .iter()
            .map(|b| corpus::LbrBinary {
                path: b.to_path_buf(),
                load_base: None,
            })
            .collect(),
        processes: 3,
        target_bytes: mib << 20,
        lbr_depth: 32,
        distinct_stacks,
        kernel_fraction_percent: 5,
        compress,
        attr_size: corpus::ATTR_SIZE,
        seed,
        mem_loads: None,
    }
}

/// perf2bolt (LLVM 22) and `profmill aggregate --format fdata` on the same capture must write
/// the same sorted fdata lines; so must perf2bolt 19 when installed (LLVM 19 and 22 agree on
/// these inputs; the inputs where they don't have named tests). Returns the line count.
pub fn assert_fdata_matches_perf2bolt(
    binary: &Path,
    capture: &Path,
    basic: bool,
    dir: &Path,
) -> usize {
    let ours = fdata_matching_perf2bolt_22(binary, capture, basic, dir);
    if let Some(llvm19) = perf2bolt_19_fdata(binary, capture, basic, dir) {
        assert_same_lines(&ours, &llvm19, "fdata vs perf2bolt 19");
    }
    ours.len()
}

/// Our sorted fdata lines for `binary` in `capture`, asserted equal to perf2bolt 22's.
pub fn fdata_matching_perf2bolt_22(
    binary: &Path,
    capture: &Path,
    basic: bool,
    dir: &Path,
) -> Vec<String> {
    let extra: &[&str] = if basic { &["--ba"] } else { &[] };
    let reference = reference_fdata(PERF2BOLT_22, binary, capture, extra, dir);
    let ours_path = dir.join("ours.fdata");
    let mut cmd = profmill();
    cmd.arg("aggregate")
        .arg(capture)
        .arg("--binary")
        .arg(binary)
        .arg("-o")
        .arg(&ours_path)
        .args(["--format", "fdata"]);
    if basic {
        cmd.arg("--basic");
    }
    run_ok(&mut cmd);
    let ours = sorted_lines(&std::fs::read(&ours_path).unwrap());
    assert_same_lines(&ours, &reference, "fdata vs perf2bolt 22");
    ours
}

/// perf2bolt 19's sorted fdata for the capture, or `None` when it is not installed. (LLVM 19
/// spells basic mode `-nl`; LLVM 22 calls it `--ba`.)
pub fn perf2bolt_19_fdata(
    binary: &Path,
    capture: &Path,
    basic: bool,
    dir: &Path,
) -> Option<Vec<String>> {
    if !have_tool(PERF2BOLT_19) {
        return None;
    }
    let extra: &[&str] = if basic { &["-nl"] } else { &[] };
    Some(perf2bolt_fdata(
        PERF2BOLT_19,
        binary,
        capture,
        extra,
        &dir.join("llvm19.fdata"),
    ))
}

/// perf2bolt's sorted fdata for a capture (in `dir/reference.fdata`); it must not be empty.
pub fn reference_fdata(
    perf2bolt: &str,
    binary: &Path,
    capture: &Path,
    extra: &[&str],
    dir: &Path,
) -> Vec<String> {
    let reference = perf2bolt_fdata(
        perf2bolt,
        binary,
        capture,
        extra,
        &dir.join("reference.fdata"),
    );
    assert!(
        !reference.is_empty(),
        "perf2bolt wrote an empty profile for {}",
        capture.display()
    );
    reference
}

/// Runs `cmd` with its standard output a pipe whose reading end is closed at once (as `| head`
/// leaves it once it has its lines): the output of a run that ends quietly, as ripgrep does.
pub fn run_into_closed_pipe(cmd: &mut Command) -> std::process::Output {
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

/// Asserts that `cmd`, writing into a closed pipe, exits 0 and prints nothing on stderr.
pub fn assert_quiet_on_closed_pipe(cmd: &mut Command) {
    let what = format!("{cmd:?}");
    let output = run_into_closed_pipe(cmd);
    assert!(
        output.status.success() && output.stderr.is_empty(),
        "{what}: {:?}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The `(p_vaddr, p_offset)` of the first `PT_LOAD` of the ELF file at `path` and of its
/// executable one.
pub fn first_and_code_segments(path: &Path) -> ((u64, u64), (u64, u64)) {
    use object::read::elf::{ElfFile64, ProgramHeader};
    let bytes = std::fs::read(path).unwrap();
    let elf = ElfFile64::<object::Endianness>::parse(&bytes[..]).unwrap();
    let e = elf.endian();
    let loads: Vec<_> = elf
        .elf_program_headers()
        .iter()
        .filter(|h| h.p_type(e) == object::elf::PT_LOAD)
        .map(|h| (h.p_vaddr(e), h.p_offset(e), h.p_flags(e)))
        .collect();
    let code = loads.iter().find(|h| h.2 & object::elf::PF_X != 0).unwrap();
    ((loads[0].0, loads[0].1), (code.0, code.1))
}

/// `capture` with the start of every MMAP2 record of `binary` whose start is `start` raised
/// by `skew` bytes, written to `out`: each sample address then lies `skew` bytes lower in
/// the file.
pub fn mapping_raised(capture: &Path, binary: &Path, start: u64, skew: u64, out: &Path) -> usize {
    let mut bytes = std::fs::read(capture).unwrap();
    let name = binary.as_os_str().as_encoded_bytes();
    // MMAP2: header, pid, tid, then start, len, pgoff, maj, min, ino, ino_generation, prot,
    // flags, filename.
    let at: Vec<usize> = (0..bytes.len().saturating_sub(56 + name.len()))
        .filter(|&i| bytes[i..i + 8] == start.to_le_bytes() && bytes[i + 56..].starts_with(name))
        .collect();
    for &i in &at {
        bytes[i..i + 8].copy_from_slice(&(start + skew).to_le_bytes());
    }
    std::fs::write(out, bytes).unwrap();
    at.len()
}

/// The C `program` linked with the C `library`, built by clang-19 with `flags` into
/// `dir/name`: the library as `lib<name>.so` beside it (found through the rpath) when
/// `shared`, else linked in.
pub fn clang_program_with_library(
    dir: &Path,
    name: &str,
    (program, library): (&str, &str),
    flags: &[&str],
    shared: bool,
) -> PathBuf {
    let src = dir.join("t.c");
    std::fs::write(&src, program).unwrap();
    let lib = dir.join("lib.c");
    std::fs::write(&lib, library).unwrap();
    let exe = dir.join(name);
    let mut cc = Command::new(CLANG_19);
    cc.args(flags).arg(&src).arg("-o").arg(&exe);
    if shared {
        let so = dir.join(format!("lib{name}.so"));
        run_ok(
            Command::new(CLANG_19)
                .args(flags)
                .args(["-fPIC", "-shared"])
                .arg(&lib)
                .arg("-o")
                .arg(&so),
        );
        cc.arg(&so).arg(format!("-Wl,-rpath,{}", dir.display()));
    } else {
        cc.arg(&lib);
    }
    run_ok(&mut cc);
    exe
}

/// Runs the instrumented `exe` once per argument, run `i` writing its raw profile beside it
/// as `<exe's name>-<i>.profraw`.
pub fn raw_profiles_of_runs(exe: &Path, args: &[&str]) -> Vec<PathBuf> {
    let name = exe.file_name().unwrap().to_string_lossy();
    (args.iter().enumerate())
        .map(|(i, arg)| {
            let raw = exe.with_file_name(format!("{name}-{i}.profraw"));
            run_ok(Command::new(exe).arg(arg).env("LLVM_PROFILE_FILE", &raw));
            raw
        })
        .collect()
}

/// Runs profmill with `args`, which must succeed.
pub fn profmill_ok(args: &[&dyn AsRef<std::ffi::OsStr>]) -> std::process::Output {
    run_ok(&mut profmill_with(args))
}

/// Runs profmill with `args`, which must fail; returns what it said on stderr.
pub fn profmill_error(args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let failed = profmill_with(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&failed.stderr).into_owned();
    assert!(!failed.status.success(), "succeeded: {stderr}");
    stderr
}

/// `profmill ARGS`, not yet run.
pub fn profmill_with(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Command {
    let mut cmd = profmill();
    for a in args {
        cmd.arg(a);
    }
    cmd
}

/// `aggregate CAPTURE --format store -o OUT`: every binary the capture maps.
pub fn store_of_capture(capture: &Path, out: &Path) {
    profmill_ok(&[&"aggregate", &capture, &"--format", &"store", &"-o", &out]);
}
