//! `profmill llvm-profdata` against llvm-profdata-19 on command-line details: response files,
//! standard input in sample mode, `--sample` then `--instr`, options llvm-profdata reads and
//! ignores, and sample profiles known by name in one input and by MD5 in another.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use testsupport::{have_tool, shared_corpus, LLVM_PROFDATA_19 as LLVM_PROFDATA};

fn corpus(rel: &str) -> Option<PathBuf> {
    testsupport::existing(shared_corpus("llvm-profdata").join(rel))
}

/// Runs `tool` with `args` (`OUT` replaced by `out`) in `dir`, with `stdin` as standard input.
fn run(tool: &[&str], args: &[&str], out: &Path, dir: &Path, stdin: Option<&Path>) -> Output {
    let args = args.iter().map(|a| a.replace("OUT", out.to_str().unwrap()));
    let mut cmd = Command::new(tool[0]);
    cmd.args(&tool[1..]).args(args).current_dir(dir);
    cmd.stdin(match stdin {
        Some(f) => Stdio::from(std::fs::File::open(f).unwrap()),
        None => Stdio::null(),
    });
    cmd.output().unwrap()
}

/// Runs llvm-profdata and the drop-in on `args`; asserts the same exit status, the same
/// standard output and the same output file (when llvm-profdata writes one).
fn assert_same(dir: &Path, args: &[&str], stdin: Option<&Path>) -> (Output, Output) {
    let (ref_out, our_out) = (dir.join("ref.out"), dir.join("our.out"));
    let _ = std::fs::remove_file(&ref_out);
    let _ = std::fs::remove_file(&our_out);
    let r = run(&[LLVM_PROFDATA], args, &ref_out, dir, stdin);
    let o = run(
        &[env!("CARGO_BIN_EXE_profmill"), "llvm-profdata"],
        args,
        &our_out,
        dir,
        stdin,
    );
    let stderr = |o: &Output| String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        r.status.success(),
        o.status.success(),
        "{args:?}: llvm-profdata: {}\nprofmill: {}",
        stderr(&r),
        stderr(&o)
    );
    assert_eq!(
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&o.stdout),
        "{args:?}"
    );
    if ref_out.exists() {
        assert!(
            std::fs::read(&ref_out).unwrap() == std::fs::read(&our_out).unwrap(),
            "{args:?}: output files differ"
        );
    }
    (r, o)
}

#[test]
fn command_line_details_match_llvm_profdata() {
    let (Some(instr), Some(ir), Some(sample)) = (
        corpus("llvm-19/basic.proftext"),
        corpus("llvm-19/IR_profile.proftext"),
        corpus("llvm-11/sample-profile.proftext"),
    ) else {
        return;
    };
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let [instr, ir, sample] = [&instr, &ir, &sample].map(|p| p.to_str().unwrap());
    std::fs::write(dir.join("merge.rsp"), format!("--text '{instr}' -o OUT")).unwrap();
    std::fs::write(dir.join("nested.rsp"), "merge @merge.rsp").unwrap();
    std::fs::write(dir.join("show.rsp"), "--sample\n--all-functions\n").unwrap();
    let weighted = format!("--weighted-input=3,{ir}");
    let cases: &[&[&str]] = &[
        // The last of --sample and --instr decides.
        &["merge", "--sample", "--instr", instr, "--text", "-o", "OUT"],
        &["show", "--sample", "--instr", "--all-functions", instr],
        &["show", "--instr", "--sample", sample],
        // Response files, nested, relative to the working directory; a missing one stays
        // an argument (a file named `@missing.rsp` that does not exist).
        &["merge", "@merge.rsp"],
        &["@nested.rsp"],
        &["show", "@show.rsp", sample],
        &["merge", "@missing.rsp", "-o", "OUT"],
        // Options llvm-profdata reads and ignores for instrumentation profiles.
        &["merge", "--extbinary", instr, "-o", "OUT"],
        &["merge", "--dump-input-file-list", instr, &weighted],
        &[
            "show",
            "--hot-func-list",
            "--show-prof-sym-list",
            "--show-sec-info-only",
            ir,
        ],
        // Not a sample profile: an error, not a warning.
        &["show", "--sample", "--show-sec-info-only", instr],
    ];
    for args in cases {
        assert_same(dir, args, None);
    }
    // Standard input in sample mode.
    let stdin = Path::new(sample);
    assert_same(
        dir,
        &["merge", "--sample", "--text", "-", "-o", "OUT"],
        Some(stdin),
    );
    assert_same(dir, &["show", "--sample", "-"], Some(stdin));
    assert_same(dir, &["show", "--sample", "-", "-o", "OUT"], Some(stdin));
    // The warning for --function with --all-functions, in sample mode too.
    let (r, o) = assert_same(
        dir,
        &[
            "show",
            "--sample",
            "--all-functions",
            "--function=main",
            sample,
        ],
        None,
    );
    let warning = "warning: -function argument ignored: showing all functions";
    assert!(String::from_utf8_lossy(&r.stderr).contains(warning));
    assert!(String::from_utf8_lossy(&o.stderr).contains(warning));
}

/// llvm-profdata files merged sample profiles by the MD5 of their names: a function named in
/// one input and known by MD5 in another is one profile, spelled as the first input has it.
#[test]
fn named_and_md5_sample_profiles_merge_into_one() {
    let Some(sample) = corpus("llvm-11/sample-profile.proftext") else {
        return;
    };
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let md5 = dir.join("md5.extbinary");
    let made = Command::new(LLVM_PROFDATA)
        .args(["merge", "--sample", "--use-md5", "--extbinary"])
        .arg(&sample)
        .arg("-o")
        .arg(&md5)
        .status()
        .unwrap();
    assert!(made.success());
    let [sample, md5] = [&sample, &md5].map(|p| p.to_str().unwrap());
    for order in [[sample, md5], [md5, sample]] {
        for format in ["--text", "--binary", "--extbinary"] {
            let args = ["merge", "--sample", format, order[0], order[1], "-o", "OUT"];
            assert_same(dir, &args, None);
        }
        let args = [
            "merge",
            "--sample",
            "--extbinary",
            "--use-md5",
            order[0],
            order[1],
            "-o",
            "OUT",
        ];
        assert_same(dir, &args, None);
    }
    // The merged text has `main` once, with both inputs' samples.
    let args = ["merge", "--sample", "--text", sample, md5, "-o", "OUT"];
    assert_same(dir, &args, None);
    let text = std::fs::read_to_string(dir.join("our.out")).unwrap();
    let mains: Vec<&str> = text.lines().filter(|l| l.starts_with("main:")).collect();
    assert_eq!(mains, ["main:368038:0"]);
}

/// A sum that saturates is reported per function, in llvm-profdata's order, as it reports it.
#[test]
fn counter_overflow_warnings_match_llvm_profdata() {
    let (Some(overflow), Some(probe)) = (
        corpus("llvm-11/overflow-sample.proftext"),
        corpus("llvm-13/pseudo-probe-profile.proftext"),
    ) else {
        return;
    };
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let [overflow, probe] = [&overflow, &probe].map(|p| p.to_str().unwrap());
    let weighted = format!("--weighted-input=2,{overflow}");
    let cases: [&[&str]; 3] = [
        &[
            "merge", "--sample", "--text", overflow, overflow, "-o", "OUT",
        ],
        &["merge", "--sample", "--text", &weighted, "-o", "OUT"],
        &["merge", "--sample", "--text", probe, probe, "-o", "OUT"],
    ];
    for args in cases {
        let (r, o) = assert_same(d.path(), args, None);
        assert!(!r.stderr.is_empty(), "{args:?}: no warning to compare");
        assert_eq!(
            String::from_utf8_lossy(&r.stderr),
            String::from_utf8_lossy(&o.stderr),
            "{args:?}"
        );
    }
}

/// An instrumentation-only option given to a sample `show` is ignored with one warning (it
/// said "ignored" twice).
#[test]
fn an_instrumentation_option_in_sample_mode_is_ignored_once() {
    let Some(sample) = corpus("llvm-11/sample-profile.proftext") else {
        return;
    };
    let out = Command::new(env!("CARGO_BIN_EXE_profmill"))
        .args(["llvm-profdata", "show", "--sample", "--counts"])
        .arg(&sample)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("applies to instrumentation profiles only; ignored\n"),
        "{stderr}"
    );
    assert!(!stderr.contains("ignored; ignored"), "{stderr}");
}
