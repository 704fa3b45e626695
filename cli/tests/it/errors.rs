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
