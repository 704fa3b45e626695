//! Requests that cannot be met fail with a clear message and leave no output behind.

use crate::common::*;
use testsupport::*;

fn aggregate(
    dir: &std::path::Path,
    binary: &std::path::Path,
    extra: &[&str],
) -> (std::process::Output, std::path::PathBuf) {
    let out = dir.join("out.preagg");
    let output = profmill()
        .arg("aggregate")
        .arg(shared_perf("autofdo-propeller_sample_1.perf.data"))
        .arg("-b")
        .arg(binary)
        .arg("-o")
        .arg(&out)
        .args(extra)
        .output()
        .unwrap();
    (output, out)
}

#[test]
fn build_id_mismatch_is_refused_unless_ignored() {
    let dir = tempfile::tempdir().unwrap();
    // Another binary (with a different build-id) under the profiled binary's name.
    let impostor = dir.path().join("autofdo-propeller_sample_1.bin");
    std::fs::copy(shared_perf("autofdo-jump_table_test.binary"), &impostor).unwrap();
    let (output, out) = aggregate(dir.path(), &impostor, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("build-id 0749fbd66b32a07cdcfac4e9295b9856721cb89e is not in the capture"),
        "{stderr}"
    );
    assert!(stderr.contains("--ignore-build-id"), "{stderr}");
    assert!(!out.exists(), "a failed run left {}", out.display());
    // Ignoring the build-id gets past the check; the capture still names another file.
    let (output, _) = aggregate(dir.path(), &impostor, &["--ignore-build-id"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("no process in the capture maps"),
        "{stderr}"
    );
}

#[test]
fn pid_filter_keeps_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let binary = shared_perf("autofdo-propeller_sample_1.bin");
    let (all, all_out) = aggregate(dir.path(), &binary, &[]);
    assert!(all.status.success());
    let everything = std::fs::read(&all_out).unwrap();
    let (one, one_out) = aggregate(dir.path(), &binary, &["--pid", "5595"]);
    assert!(one.status.success());
    assert_eq!(
        std::fs::read(&one_out).unwrap(),
        everything,
        "the capture has one process"
    );
    std::fs::remove_file(&one_out).unwrap();
    let (none, none_out) = aggregate(dir.path(), &binary, &["--pid", "1"]);
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("(with pid 1)"));
    assert!(!none_out.exists());
}

#[test]
fn a_binary_that_is_not_elf_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let not_elf = dir.path().join("notes.txt");
    std::fs::write(&not_elf, "plain text").unwrap();
    let (output, out) = aggregate(dir.path(), &not_elf, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("notes.txt") && stderr.contains("ELF"),
        "{stderr}"
    );
    assert!(!out.exists());
}

/// A stripped binary has no function symbols for fdata: the error says so, and no output is
/// left behind.
#[test]
fn a_stripped_binary_is_refused_for_fdata() {
    if !have_tool("strip") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("autofdo-propeller_sample_1.bin");
    std::fs::copy(shared_perf("autofdo-propeller_sample_1.bin"), &binary).unwrap();
    run_ok(std::process::Command::new("strip").arg(&binary));
    let (output, out) = aggregate(dir.path(), &binary, &["--format", "fdata"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("no symbol table (stripped binary?)"),
        "{stderr}"
    );
    assert!(!out.exists(), "a failed run left {}", out.display());
}

/// A broken pre-aggregated line is reported with file, line and column by the perf2bolt
/// drop-in.
#[test]
fn a_broken_preaggregated_line_is_located() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.preagg");
    std::fs::write(&input, "B 10 20 1 0\nT 10 0x20 30 1\n").unwrap();
    let out = dir.path().join("out.fdata");
    let output = profmill()
        .arg("perf2bolt")
        .arg(shared_perf("autofdo-propeller_sample_1.bin"))
        .args(["-pa", "-p"])
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains(
            "bad.preagg: line 2, column 6 (byte offset 17): expected a hexadecimal location"
        ),
        "{stderr}"
    );
    assert!(!out.exists());
}

/// A pipe-mode capture whose first SAMPLE comes before any HEADER_ATTR (24 bytes: `PERFILE2`,
/// header size 16, a SAMPLE record header of 8 bytes) is refused with the file and the
/// record's offset by every command that reads captures, from a path and from stdin; nothing
/// panics and no output is written.
#[test]
fn a_pipe_sample_before_any_attr_is_located() {
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("early.data");
    let mut bytes = b"PERFILE2".to_vec();
    bytes.extend_from_slice(&16u64.to_le_bytes());
    bytes.extend_from_slice(&9u32.to_le_bytes());
    bytes.extend_from_slice(&0u16.to_le_bytes());
    bytes.extend_from_slice(&8u16.to_le_bytes());
    std::fs::write(&capture, &bytes).unwrap();
    let binary = shared_perf("autofdo-propeller_sample_1.bin");
    let out = dir.path().join("out");
    let expected = "byte offset 16: expected a HEADER_ATTR record before the first SAMPLE";
    let runs: [(&str, Vec<std::ffi::OsString>); 3] = [
        ("script", vec!["script".into(), capture.clone().into()]),
        (
            "aggregate",
            vec![
                "aggregate".into(),
                capture.clone().into(),
                "-b".into(),
                binary.clone().into(),
                "-o".into(),
                out.clone().into(),
            ],
        ),
        (
            "perf2bolt",
            vec![
                "perf2bolt".into(),
                binary.clone().into(),
                "-p".into(),
                capture.clone().into(),
                "-o".into(),
                out.clone().into(),
            ],
        ),
    ];
    for (what, args) in runs {
        let output = profmill().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{what}: {stderr}");
        assert!(
            stderr.contains(&format!("early.data: {expected}")),
            "{what}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        assert!(!out.exists(), "{what} left {}", out.display());
    }
    // The same bytes on stdin.
    let output = profmill()
        .args(["script", "-"])
        .stdin(std::fs::File::open(&capture).unwrap())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("<stdin>: {expected}")), "{stderr}");
}

/// A binary whose symbol table lies outside the file (`Invalid ELF symbol table data`) is
/// named by every command that reads binaries.
#[test]
fn a_corrupt_symbol_table_names_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let mut elf = std::fs::read(shared_perf("autofdo-propeller_sample_1.bin")).unwrap();
    // Section headers: e_shoff at 0x28, e_shentsize/e_shnum/e_shstrndx at 0x3a.
    let u64_at = |d: &[u8], at: usize| u64::from_le_bytes(d[at..at + 8].try_into().unwrap());
    let u16_at = |d: &[u8], at: usize| u16::from_le_bytes(d[at..at + 2].try_into().unwrap());
    let shoff = u64_at(&elf, 0x28) as usize;
    let (entsize, count) = (u16_at(&elf, 0x3a) as usize, u16_at(&elf, 0x3c) as usize);
    let names = u64_at(&elf, shoff + u16_at(&elf, 0x3e) as usize * entsize + 0x18) as usize;
    let symtab = (0..count)
        .map(|i| shoff + i * entsize)
        .find(|&h| {
            let name = names + u32::from_le_bytes(elf[h..h + 4].try_into().unwrap()) as usize;
            elf[name..].starts_with(b".symtab\0")
        })
        .expect("a .symtab section");
    let huge = (elf.len() as u64 * 4).to_le_bytes();
    elf[symtab + 0x20..symtab + 0x28].copy_from_slice(&huge);
    let binary = dir.path().join("badsym.bin");
    std::fs::write(&binary, &elf).unwrap();
    let capture = shared_perf("autofdo-propeller_sample_1.perf.data");
    let out = dir.path().join("out");
    for args in [
        vec!["aggregate".into(), capture.clone().into_os_string()],
        vec!["perf2bolt".into(), binary.clone().into_os_string()],
    ] {
        let mut cmd = profmill();
        cmd.args(&args);
        if args[0] == "aggregate" {
            cmd.arg("-b").arg(&binary).args(["--format", "fdata"]);
        } else {
            cmd.arg("-p").arg(&capture);
        }
        let output = cmd.arg("-o").arg(&out).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("badsym.bin: ") && stderr.contains("Invalid ELF symbol table data"),
            "{args:?}: {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(!out.exists());
    }
}

/// Sample profiles of different kinds (CS or not, probe-based or not) cannot be merged or
/// compared: the message names the file that differs and how.
#[test]
fn incompatible_sample_profiles_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.txt");
    std::fs::write(&plain, "main:10:1\n 1: 10\n").unwrap();
    let cs = dir.path().join("cs.txt");
    std::fs::write(&cs, "[main:1 @ foo]:10:1\n 1: 10\n").unwrap();
    let out = dir.path().join("merged.txt");
    std::fs::write(&out, "earlier\n").unwrap();
    let output = profmill()
        .args(["merge", "--sample"])
        .arg(&plain)
        .arg(&cs)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains(&format!(
            "{}: cannot merge CS profile with non-CS profile (this input is CS, the inputs before it non-CS)",
            cs.display()
        )) && stderr.lines().count() == 1,
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "earlier\n");
    let output = profmill()
        .args(["overlap", "--sample"])
        .arg(&cs)
        .arg(&plain)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains(&format!(
            "cannot compare CS profile with non-CS profile (base {} is CS, test {} is non-CS)",
            cs.display(),
            plain.display()
        )),
        "{stderr}"
    );
}

/// A file-mode attr that does not fit the others (here the second event loses
/// PERF_SAMPLE_IDENTIFIER, so its samples cannot be told apart) is reported at that attr's
/// offset, not at the header's.
#[test]
fn an_attr_error_gives_the_attrs_offset() {
    let dir = tempfile::tempdir().unwrap();
    let seed = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/seeds/capture_file/generated-mem-loads.perf.data");
    let mut data = std::fs::read(seed).unwrap();
    let u64_at = |d: &[u8], at: usize| u64::from_le_bytes(d[at..at + 8].try_into().unwrap());
    let (attr_size, attrs) = (u64_at(&data, 16) as usize, u64_at(&data, 24) as usize);
    assert_eq!(u64_at(&data, 32) as usize, 2 * attr_size, "two events");
    let second = attrs + attr_size;
    // perf_event_attr.sample_type is at +24; PERF_SAMPLE_IDENTIFIER is bit 16.
    let sample_type = u64_at(&data, second + 24) & !(1 << 16);
    data[second + 24..second + 32].copy_from_slice(&sample_type.to_le_bytes());
    let capture = dir.path().join("ambiguous.data");
    std::fs::write(&capture, &data).unwrap();
    let output = profmill().arg("script").arg(&capture).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "ambiguous.data: byte offset {second}: several events without a common sample id position"
        )),
        "{stderr}"
    );
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let capture = shared_perf("autofdo-propeller_sample_1.perf.data");
    assert_quiet_on_closed_pipe(profmill().arg("script").arg(&capture));
    assert_quiet_on_closed_pipe(
        profmill()
            .args(["script", "--show-mmap-events"])
            .arg(&capture),
    );
    let sample = shared_corpus("llvm-profdata/llvm-11/sample-profile.proftext");
    assert_quiet_on_closed_pipe(profmill().args(["show", "--sample"]).arg(&sample));
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.pms");
    run_ok(
        profmill()
            .arg("aggregate")
            .arg(&capture)
            .args(["--format", "store", "-o"])
            .arg(&store),
    );
    let binary = shared_perf("autofdo-propeller_sample_1.bin");
    assert_quiet_on_closed_pipe(profmill().arg("show").arg(&store));
    assert_quiet_on_closed_pipe(profmill().args(["show", "--json"]).arg(&store));
    assert_quiet_on_closed_pipe(profmill().arg("show").arg(&store).arg("-b").arg(&binary));
    let fdata = dir.path().join("a.fdata");
    std::fs::write(&fdata, "1 main 10 1 foo 0 0 3\n").unwrap();
    assert_quiet_on_closed_pipe(profmill().arg("merge-fdata").arg(&fdata));
    assert_quiet_on_closed_pipe(profmill().arg("merge-fdata").arg(&fdata).args(["-o", "-"]));
}

/// `-o -` is standard output (as in llvm-profdata), never a file named `-`; `out` is `-o FILE`.
fn assert_dash_is_stdout(args: &[&std::ffi::OsStr], dir: &std::path::Path) {
    let file = dir.join("out.file");
    let to_file = profmill()
        .args(args)
        .arg("-o")
        .arg(&file)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        to_file.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&to_file.stderr)
    );
    let to_stdout = profmill()
        .args(args)
        .args(["-o", "-"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        to_stdout.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&to_stdout.stderr)
    );
    assert!(!dir.join("-").exists(), "{args:?} wrote a file named -");
    let expected = std::fs::read(&file).unwrap();
    assert!(!expected.is_empty(), "{args:?}");
    assert_eq!(to_stdout.stdout, expected, "{args:?}");
}

#[test]
fn dash_output_is_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let sample = shared_corpus("llvm-profdata/llvm-11/sample-profile.proftext");
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    for to in ["text", "extbinary", "gcov-v4-text"] {
        assert_dash_is_stdout(
            &[os("convert"), sample.as_os_str(), os("--to"), os(to)],
            dir.path(),
        );
        assert_dash_is_stdout(
            &[
                os("merge"),
                os("--sample"),
                sample.as_os_str(),
                sample.as_os_str(),
                os("--to"),
                os(to),
            ],
            dir.path(),
        );
    }
    let capture = shared_perf("autofdo-propeller_sample_1.perf.data");
    let binary = shared_perf("autofdo-propeller_sample_1.bin");
    for format in ["preagg", "preagg-legacy", "fdata"] {
        assert_dash_is_stdout(
            &[
                os("aggregate"),
                capture.as_os_str(),
                os("-b"),
                binary.as_os_str(),
                os("--format"),
                os(format),
            ],
            dir.path(),
        );
    }
    // A store (binary, and possibly several files' worth) is refused on stdout, clearly.
    for args in [
        &[
            os("aggregate"),
            capture.as_os_str(),
            os("--format"),
            os("store"),
        ][..],
        &[os("merge"), os("x.pms")][..],
    ] {
        let out = profmill()
            .args(args)
            .args(["-o", "-"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains("-o -"), "{stderr}");
        assert!(!dir.path().join("-").exists());
    }
}

#[test]
fn script_refuses_fields_it_does_not_print() {
    let capture = shared_perf("autofdo-propeller_sample_1.perf.data");
    for fields in ["pid,sym", "ip,brstack,comm", "pid,"] {
        let out = profmill()
            .args(["script", "-F", fields])
            .arg(&capture)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && out.stdout.is_empty(), "{fields}");
        assert!(
            stderr.contains("pid,ip,brstack") && stderr.lines().count() == 1,
            "{fields}: {stderr}"
        );
    }
    for fields in ["pid", "ip", "pid,brstack", "brstack,ip,pid"] {
        run_ok(profmill().args(["script", "-F", fields]).arg(&capture));
    }
}

/// A merge without inputs points at the help as each command spells it: clap's `--help` for
/// profmill's own `merge`, LLVM's `-help` for the `llvm-profdata` drop-in.
#[test]
fn a_merge_without_inputs_points_at_the_help() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for (command, hint) in [
        (&["merge"][..], "See profmill merge --help"),
        (&["merge", "--sample"][..], "See profmill merge --help"),
        (
            &["llvm-profdata", "merge"][..],
            "See llvm-profdata merge -help",
        ),
    ] {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = command.iter().map(|a| a as _).collect();
        args.push(&"-o");
        args.push(&out);
        let stderr = profmill_error(&args);
        assert!(
            stderr.contains(hint) && !out.exists(),
            "{command:?}: {stderr}"
        );
    }
    run_ok(profmill().args(["merge", "--help"]));
}

/// `export --format store` is refused with the formats export writes, and writes nothing.
#[test]
fn export_names_the_formats_it_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.pms");
    run_ok(
        profmill()
            .arg("aggregate")
            .arg(shared_perf("autofdo-propeller_sample_1.perf.data"))
            .args(["--format", "store", "-o"])
            .arg(&store),
    );
    let out = dir.path().join("again.pms");
    let stderr = profmill_error(&[&"export", &store, &"--format", &"store", &"-o", &out]);
    assert!(
        stderr.contains("preagg, preagg-legacy, fdata, yaml or parquet") && !out.exists(),
        "{stderr}"
    );
}

/// A directory or a device where a capture or a binary belongs, and an empty or file-mode
/// capture on standard input, are named for what they are (not `No such device (os error 19)`
/// or `failed to fill whole buffer`).
#[test]
fn paths_that_are_not_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let capture = shared_perf("autofdo-propeller_sample_1.perf.data");
    let binary = shared_perf("autofdo-propeller_sample_1.bin");
    let out = dir.path().join("out");
    let d = dir.path().as_os_str();
    let null = std::ffi::OsStr::new("/dev/null");
    let fails_with = |cmd: &mut std::process::Command, expected: &[&str]| {
        let what = format!("{cmd:?}");
        let output = cmd.stdin(std::process::Stdio::null()).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{what}");
        assert_eq!(stderr.lines().count(), 1, "{what}: {stderr}");
        for e in expected {
            assert!(stderr.contains(e), "{what}: {stderr}");
        }
        assert!(!stderr.contains("os error"), "{what}: {stderr}");
        assert!(!out.exists(), "{what}");
    };
    for (path, is) in [(d, "is a directory"), (null, "is a character device")] {
        let name = path.to_string_lossy().into_owned();
        let as_capture = [name.as_str(), is, "perf.data capture"];
        fails_with(profmill().arg("script").arg(path), &as_capture);
        fails_with(
            profmill()
                .arg("aggregate")
                .arg(path)
                .arg("-b")
                .arg(&binary)
                .arg("-o")
                .arg(&out),
            &as_capture,
        );
        fails_with(
            profmill()
                .arg("perf2bolt")
                .arg(&binary)
                .arg("-p")
                .arg(path)
                .arg("-o")
                .arg(&out),
            &as_capture,
        );
        let as_binary = [name.as_str(), is, "ELF binary"];
        fails_with(
            profmill()
                .arg("aggregate")
                .arg(&capture)
                .arg("-b")
                .arg(path)
                .arg("-o")
                .arg(&out),
            &as_binary,
        );
        fails_with(
            profmill()
                .arg("perf2bolt")
                .arg(path)
                .arg("-p")
                .arg(&capture)
                .arg("-o")
                .arg(&out),
            &as_binary,
        );
    }
    // Empty standard input.
    fails_with(
        profmill().args(["script", "-"]),
        &["<stdin>", "empty", "pipe-mode"],
    );
    // A file-mode capture on standard input.
    let output = profmill()
        .args(["script", "-"])
        .stdin(std::fs::File::open(&capture).unwrap())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("file-mode") && stderr.contains("give its path"),
        "{stderr}"
    );
}

/// A capture that maps the binary (by name) only where its segments cannot be, as a
/// different build under the same name or a damaged record would: the error says so.
#[test]
fn a_mapping_that_does_not_fit_the_segments_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("prog");
    std::fs::copy(shared_perf("autofdo-test.binary"), &binary).unwrap();
    let capture = dir.path().join("perf.data");
    generate_capture(&capture, &[&binary], 1, 1_000, false, 3);
    // An ET_EXEC is mapped at its own addresses: a page higher fits none of its segments.
    let (_, (code_vaddr, _)) = first_and_code_segments(&binary);
    let moved = dir.path().join("moved.perf.data");
    assert!(mapping_raised(&capture, &binary, code_vaddr & !0xfff, 0x1000, &moved) > 0);
    let out = dir.path().join("out.preagg");
    let output = profmill()
        .args(["aggregate", "-o"])
        .arg(&out)
        .arg("-b")
        .arg(&binary)
        .arg(&moved)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("never at an address and file offset that fit its segments"),
        "{stderr}"
    );
    assert!(!out.exists(), "a failed run left {}", out.display());
}

/// `-o` naming an input (the capture, a binary, the store, a Parquet file) is refused before
/// anything is read, and the input is left as it was.
#[test]
fn an_output_never_replaces_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("capture.perf.data");
    let binary = dir.path().join("autofdo-propeller_sample_1.bin");
    std::fs::copy(
        shared_perf("autofdo-propeller_sample_1.perf.data"),
        &capture,
    )
    .unwrap();
    std::fs::copy(shared_perf("autofdo-propeller_sample_1.bin"), &binary).unwrap();
    let store = dir.path().join("s.pms");
    store_of_capture(&capture, &store);
    let parquet = dir.path().join("s.parquet");
    profmill_ok(&[&"export", &store, &"--format", &"parquet", &"-o", &parquet]);
    let originals: Vec<(std::path::PathBuf, Vec<u8>)> = [&capture, &binary, &store, &parquet]
        .iter()
        .map(|p| (p.to_path_buf(), std::fs::read(p).unwrap()))
        .collect();
    let (b, c, s, q) = (&binary, &capture, &store, &parquet);
    let refused: [(&[&dyn AsRef<std::ffi::OsStr>], &std::path::PathBuf); 8] = [
        (&[&"aggregate", c, &"-b", b, &"-o", c], c),
        (&[&"aggregate", c, &"-b", b, &"-o", b], b),
        (&[&"perf2bolt", b, &"-p", c, &"-o", b], b),
        (&[&"perf2bolt", b, &"-p", c, &"-o", c], c),
        (&[&"autofdo", &"-b", b, &"-p", c, &"-o", c], c),
        (&[&"export", s, &"-b", b, &"-o", s], s),
        (&[&"export", s, &"--format", &"parquet", &"-o", s], s),
        (&[&"import", q, &"-o", q], q),
    ];
    for (args, output) in refused {
        let stderr = profmill_error(args);
        let expected = format!("{}: is also an input", output.display());
        assert!(stderr.contains(&expected), "{stderr}");
    }
    for (path, bytes) in &originals {
        assert!(
            std::fs::read(path).unwrap() == *bytes,
            "{} changed",
            path.display()
        );
    }
}

/// With several binaries, `-o` is a directory: every binary is checked before it is made, two
/// binaries of one file name are refused, and a file in the way is named.
#[test]
fn several_binaries_are_checked_before_their_directory_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let capture = shared_perf("autofdo-propeller_sample_1.perf.data");
    let binary = shared_perf("autofdo-propeller_sample_1.bin");
    let store = dir.path().join("s.pms");
    store_of_capture(&capture, &store);
    // The second binary is not in the store: nothing is written, no directory made.
    let out = dir.path().join("out");
    let other = shared_perf("autofdo-jump_table_test.binary");
    let err = profmill_error(&[
        &"export", &store, &"-b", &binary, &"-b", &other, &"-o", &out,
    ]);
    assert!(err.contains("no binary with build-id"), "{err}");
    assert!(!out.exists(), "a failed export left {}", out.display());
    // Two binaries of one name.
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for d in [&a, &b] {
        std::fs::create_dir(d).unwrap();
        std::fs::copy(&binary, d.join("prog")).unwrap();
    }
    let (pa, pb) = (a.join("prog"), b.join("prog"));
    for command in [
        ["aggregate", capture.to_str().unwrap()],
        ["export", store.to_str().unwrap()],
    ] {
        let err = profmill_error(&[
            &command[0],
            &command[1],
            &"-b",
            &pa,
            &"-b",
            &pb,
            &"-o",
            &out,
        ]);
        assert!(err.contains("have the same file name"), "{err}");
        assert!(!out.exists());
    }
    // A file where the directory should be.
    std::fs::write(&out, "x").unwrap();
    let err = profmill_error(&[&"export", &store, &"-b", &binary, &"-b", &pa, &"-o", &out]);
    assert!(err.contains("-o names the directory"), "{err}");
    assert!(err.contains(out.to_str().unwrap()), "{err}");
}

/// A failed write to standard output names it.
#[test]
fn a_full_stdout_is_named() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("skipping: no /dev/full");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sample = shared_corpus("llvm-profdata/llvm-11/sample-profile.proftext");
    let capture = shared_perf("autofdo-propeller_sample_1.perf.data");
    let fdata = dir.path().join("a.fdata");
    std::fs::write(&fdata, "1 main 10 1 foo 0 0 3\n").unwrap();
    let commands: [&[&dyn AsRef<std::ffi::OsStr>]; 4] = [
        &[&"show", &sample],
        &[&"llvm-profdata", &"show", &"--sample", &sample],
        &[&"merge-fdata", &fdata],
        &[&"script", &capture],
    ];
    for args in commands {
        let mut cmd = profmill_with(args);
        let out = cmd.stdout(full.try_clone().unwrap()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{cmd:?}");
        assert!(
            stderr.contains("<stdout>: No space left on device"),
            "{cmd:?}: {stderr}"
        );
    }
}

/// Damaged records are described with numbers that make sense: a record cut short says it
/// has fewer bytes than it needs; a build-id entry too small for its layout says so.
#[test]
fn damaged_records_report_consistent_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let flipped = |name: &str, byte: usize, bit: u8| {
        let mut data = std::fs::read(shared_perf(name)).unwrap();
        data[byte] ^= 1 << bit;
        let path = dir.path().join(name);
        std::fs::write(&path, data).unwrap();
        profmill_error(&[&"script", &path])
    };
    // A flipped size inside the zstd stream of COMPRESSED records.
    let err = flipped("lpd-sleep.compressed.perf.data", 8325, 4);
    let numbers: Vec<u64> = err
        .split("input ends inside a record: ")
        .nth(1)
        .unwrap_or_else(|| panic!("{err}"))
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert!(numbers.len() >= 2 && numbers[0] < numbers[1], "{err}");
    // A flipped bit in the header's feature sections: the build-id entry read there declares
    // a size of 0 bytes (it used to say "expected 36 bytes, only 140 available").
    let err = flipped("pdc-callgraph_and_branch-3.4.perf.data", 611303, 2);
    assert!(
        err.contains("byte offset 612420: record of type 0 is only 0 bytes"),
        "{err}"
    );
}

/// `aggregate --format store` of a store says what to do with a store.
#[test]
fn aggregating_a_store_to_a_store_points_at_merge() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.pms");
    let capture = shared_perf("autofdo-propeller_sample_1.perf.data");
    store_of_capture(&capture, &store);
    let out = dir.path().join("again.pms");
    let err = profmill_error(&[&"aggregate", &store, &"--format", &"store", &"-o", &out]);
    assert!(
        err.contains("is a profile store already: `profmill merge` combines stores"),
        "{err}"
    );
    assert!(!out.exists());
}

/// A `--pid` that does not map the binary, where other processes do: the message names the
/// pid as the problem and lists the processes that map it, rather than suggesting a rename.
#[test]
fn a_wrong_pid_is_named_with_the_pids_that_map_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("test.binary");
    std::fs::copy(shared_perf("autofdo-test.binary"), &binary).unwrap();
    let capture = shared_perf("autofdo-test.lbr.perf.data");
    let out = dir.path().join("out.preagg");
    let err = profmill_error(&[
        &"aggregate",
        &capture,
        &"-b",
        &binary,
        &"--pid",
        &"999999",
        &"-o",
        &out,
    ]);
    assert!(
        err.contains("no process with pid 999999 maps \"test.binary\"; the processes that map it: 25532 (check --pid)"),
        "{err}"
    );
    assert!(!err.contains("rename the binary"), "{err}");
}

/// `export --format parquet -o DIR/` with no such directory says so.
#[test]
fn a_parquet_export_into_a_missing_directory_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.pms");
    let capture = shared_perf("autofdo-propeller_sample_1.perf.data");
    store_of_capture(&capture, &store);
    let missing = format!("{}/", dir.path().join("missing").display());
    let err = profmill_error(&[&"export", &store, &"--format", &"parquet", &"-o", &missing]);
    assert!(
        err.contains(&format!("{missing}: no such directory")),
        "{err}"
    );
}

/// merge-fdata with a malformed YAML profile as its only (first) input calls it malformed;
/// "not a YAML profile (the first input is one)" is for a later input.
#[test]
fn a_malformed_first_yaml_input_is_called_malformed() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("cut.yaml");
    std::fs::write(&yaml, "---\nheader").unwrap();
    let err = profmill_error(&[&"merge-fdata", &yaml]);
    assert!(err.contains("cut.yaml: malformed YAML profile"), "{err}");
    assert!(!err.contains("the first input is one"), "{err}");
}
