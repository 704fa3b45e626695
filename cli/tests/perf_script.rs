//! Our decoder renders every sample, branch stack and mmap event exactly as perf 6.1's
//! `perf script` does, on every public capture in ../shared/corpus/perf that perf 6.1 reads.

mod common;

use std::process::Command;

use common::*;

/// (capture, perf script -F fields). Captures with call chains print them under `ip`, so only
/// `pid,brstack` is compared there.
const CAPTURES: &[(&str, &str)] = &[
    ("autofdo-propeller_sample_1.perf.data", "pid,ip,brstack"),
    ("autofdo-ro_sample.perf.data", "pid,ip,brstack"),
    ("autofdo-test.lbr.perf.data", "pid,ip,brstack"),
    ("lpd-sleep.compressed.pipe.perf.data", "pid,ip,brstack"),
    ("pdc-branch-4.14.perf.data", "pid,ip,brstack"),
    ("pdc-branch_stack_hw_index.perf.data", "pid,ip,brstack"),
    ("pdc-callgraph_and_branch-3.4.perf.data", "pid,brstack"),
    ("pdc-intel_pt-4.14.perf.data", "pid,ip,brstack"),
];

fn perf_script(capture: &std::path::Path, args: &[&str]) -> Vec<String> {
    let out = run_ok(
        Command::new("perf")
            .args(["script", "--no-itrace", "-i"])
            .arg(capture)
            .args(args),
    );
    sorted_lines(&out.stdout)
}

fn ours(capture: &std::path::Path, args: &[&str]) -> Vec<String> {
    let out = run_ok(profmill().arg("script").arg(capture).args(args));
    sorted_lines(&out.stdout)
}

#[test]
fn samples_and_branch_stacks_match_perf_script() {
    if !have_tool("perf") {
        return;
    }
    for (name, fields) in CAPTURES {
        let capture = shared_perf(name);
        let theirs = perf_script(&capture, &["-F", fields]);
        assert!(!theirs.is_empty(), "perf printed nothing for {name}");
        assert_same_lines(&ours(&capture, &["-F", fields]), &theirs, name);
    }
}

#[test]
fn mmap_events_match_perf_script() {
    if !have_tool("perf") {
        return;
    }
    for (name, _) in CAPTURES {
        let capture = shared_perf(name);
        let only_mmaps = |lines: Vec<String>| {
            lines
                .into_iter()
                .filter(|l| l.contains("PERF_RECORD_MMAP"))
                .collect::<Vec<_>>()
        };
        let theirs = only_mmaps(perf_script(&capture, &["-F", "pid", "--show-mmap-events"]));
        assert!(!theirs.is_empty(), "perf printed no mmap events for {name}");
        assert_same_lines(
            &only_mmaps(ours(&capture, &["-F", "pid", "--show-mmap-events"])),
            &theirs,
            name,
        );
    }
}

#[test]
fn pipe_mode_from_stdin_equals_reading_the_file() {
    let capture = shared_perf("lpd-sleep.compressed.pipe.perf.data");
    let from_file = run_ok(
        profmill()
            .arg("script")
            .arg(&capture)
            .arg("--show-mmap-events"),
    )
    .stdout;
    let from_stdin = run_ok(
        profmill()
            .args(["script", "-", "--show-mmap-events"])
            .stdin(std::fs::File::open(&capture).unwrap()),
    )
    .stdout;
    assert!(from_file.len() > 1000);
    assert_eq!(from_file, from_stdin);
}

/// perf 6.1 refuses these (perf_event_attr of 136 bytes); we read them. Their samples come from
/// the same kernel function in every recording, which pins the decode down.
#[test]
fn newer_abi_captures_decode() {
    for name in [
        "lpd-sleep.perf.data",
        "lpd-sleep.compressed.perf.data",
        "lpd-sleep.compressed2.perf.data",
    ] {
        let out = run_ok(
            profmill()
                .arg("script")
                .arg(shared_perf(name))
                .arg("--show-mmap-events"),
        )
        .stdout;
        let text = String::from_utf8(out).unwrap();
        let samples: Vec<_> = text
            .lines()
            .filter(|l| !l.contains("PERF_RECORD"))
            .collect();
        assert!(samples.len() >= 7, "{name}: {} samples", samples.len());
        assert!(text.contains("PERF_RECORD_MMAP"), "{name}: no mmap events");
        for s in samples {
            let mut f = s.split_whitespace();
            let (pid, ip) = (f.next().unwrap(), f.next().unwrap());
            assert!(
                pid.parse::<u32>().is_ok() && u64::from_str_radix(ip, 16).is_ok(),
                "{name}: bad sample line {s:?}"
            );
        }
    }
}
