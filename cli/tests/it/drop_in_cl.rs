//! The drop-ins' command lines, through the real binary: LLVM's `cl` conventions (booleans,
//! unknown options with a suggestion), `-help` and `--version` on every drop-in, and the
//! personality taken from a versioned link name.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::*;
use testsupport::*;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// perf2bolt on a broken pre-aggregated file with `pa_option`: the preagg reader's error
/// shows whether the option was read as true.
fn perf2bolt_on_preagg(dir: &Path, pa_option: &str) -> Output {
    let input = dir.join("bad.preagg");
    std::fs::write(&input, "B 10 20 1 0\nT 10 0x20 30 1\n").unwrap();
    profmill()
        .arg("perf2bolt")
        .arg(shared_perf("autofdo-propeller_sample_1.bin"))
        .arg(pa_option)
        .arg("-p")
        .arg(&input)
        .arg("-o")
        .arg(dir.join("out.fdata"))
        .output()
        .unwrap()
}

#[test]
fn perf2bolt_reads_booleans_as_llvm_does() {
    let dir = tempfile::tempdir().unwrap();
    let preagg_error = "bad.preagg: line 2, column 6";
    for on in ["--pa", "-pa=1", "--pa=TRUE", "--pa=True"] {
        let o = perf2bolt_on_preagg(dir.path(), on);
        assert!(!o.status.success());
        assert!(stderr(&o).contains(preagg_error), "{on}: {}", stderr(&o));
    }
    // Read as false, the file is taken for a perf.data capture (and refused as one).
    for off in ["--pa=FALSE", "--pa=False", "-pa=0", "--pa=false"] {
        let o = perf2bolt_on_preagg(dir.path(), off);
        assert!(!o.status.success());
        assert!(!stderr(&o).contains(preagg_error), "{off}: {}", stderr(&o));
    }
    let o = perf2bolt_on_preagg(dir.path(), "--pa=yes");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(
            "for the --pa option: 'yes' is invalid value for boolean argument! Try 0 or 1"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn unknown_options_fail_with_a_suggestion() {
    let o = profmill().args(["perf2bolt", "--bogus"]).output().unwrap();
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("Unknown command line argument '--bogus'.  Did you mean '--ba'?"),
        "{}",
        stderr(&o)
    );
    let o = profmill()
        .args(["llvm-profdata", "merge", "--outptu=x", "a.profraw"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        stderr(&o)
            .contains("Unknown command line argument '--outptu=x'.  Did you mean '--output=x'?"),
        "{}",
        stderr(&o)
    );
}

/// Every drop-in's command line, as `profmill` subcommands.
const DROP_INS: &[&[&str]] = &[
    &["perf2bolt"],
    &["merge-fdata"],
    &["llvm-profdata"],
    &["llvm-profdata", "merge"],
    &["llvm-profdata", "show"],
    &["llvm-profdata", "overlap"],
    &["llvm-profdata", "merge", "--sample"],
    &["llvm-profdata", "show", "--sample"],
    &["llvm-profdata", "overlap", "--sample"],
    &["overlap"],
];

#[test]
fn help_and_version_on_every_drop_in() {
    for drop_in in DROP_INS {
        for help in ["-help", "--help", "-h"] {
            let o = profmill().args(*drop_in).arg(help).output().unwrap();
            let text = stdout(&o);
            assert!(o.status.success(), "{drop_in:?} {help}: {}", stderr(&o));
            assert!(text.starts_with("OVERVIEW: "), "{drop_in:?} {help}: {text}");
            assert!(text.contains("\nUSAGE: "), "{drop_in:?} {help}: {text}");
            if drop_in.len() > 1 || drop_in[0] != "llvm-profdata" {
                assert!(text.contains("\nOPTIONS:\n"), "{drop_in:?} {help}: {text}");
                assert!(text.contains("  --help "), "{drop_in:?} {help}: {text}");
            }
        }
        let o = profmill().args(*drop_in).arg("--version").output().unwrap();
        assert!(o.status.success(), "{drop_in:?}: {}", stderr(&o));
        assert!(
            stdout(&o).starts_with(&format!("profmill {}", env!("CARGO_PKG_VERSION"))),
            "{drop_in:?}: {}",
            stdout(&o)
        );
    }
    // The options accepted without being implemented are listed, and marked.
    let o = profmill().args(["perf2bolt", "--help"]).output().unwrap();
    let text = stdout(&o);
    for line in [
        "-o <string>",
        "--pa ",
        "--perfdata=<string>",
        "--time-aggr ",
        "[profmill: accepted, ignored",
        "[profmill: not implemented, refused]",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
}

#[test]
fn versioned_link_names_switch_personality() {
    let dir = tempfile::tempdir().unwrap();
    let link = |name: &str| {
        let path = dir.path().join(name);
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_profmill"), &path).unwrap();
        path
    };
    for (name, tool) in [
        ("perf2bolt-22", "perf2bolt"),
        ("merge-fdata-19", "merge-fdata"),
        ("llvm-profdata-19", "llvm-profdata"),
    ] {
        let o = Command::new(link(name)).arg("--version").output().unwrap();
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert!(
            stdout(&o).contains(&format!("({tool} drop-in)")),
            "{name}: {}",
            stdout(&o)
        );
    }
    let o = Command::new(dir.path().join("perf2bolt-22"))
        .arg("--bogus")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("Did you mean '--ba'?"),
        "{}",
        stderr(&o)
    );
    let o = Command::new(dir.path().join("llvm-profdata-19"))
        .args(["merge", "--help"])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(
        stdout(&o).contains("USAGE: llvm-profdata merge [options]"),
        "{}",
        stdout(&o)
    );
}
