//! Aggregates a small synthetic LBR capture of this example's own executable and prints the
//! first BOLT pre-aggregated records: `cargo run -p profmill-engine --example perf_aggregate`.

use std::path::{Path, PathBuf};

use engine::io::NoProgress;
use engine::perf::{
    aggregate, write_preagg, BinaryInfo, Input, KernelEntries, Request, Rules, TraceOrder,
};

/// Copies this executable into `dir` and writes a synthetic LBR capture that follows its
/// control flow (as `profmill demo` does); returns (binary, capture).
fn synthetic_capture(dir: &Path) -> Result<(PathBuf, PathBuf), Box<dyn std::error::Error>> {
    let binary = dir.join("app");
    std::fs::copy(std::env::current_exe()?, &binary)?;
    let capture = dir.join("perf.data");
    let spec = corpus::LbrCaptureSpec {
        binaries: vec![corpus::LbrBinary {
            path: binary.clone(),
            load_base: None,
        }],
        processes: 2,
        target_bytes: 1 << 20,
        lbr_depth: 32,
        distinct_stacks: 2_000,
        kernel_fraction_percent: 5,
        compress: false,
        attr_size: corpus::ATTR_SIZE,
        seed: 1,
        mem_loads: None,
    };
    let stats = corpus::write_lbr_capture(&spec, &mut std::fs::File::create(&capture)?)?;
    println!(
        "generated {} ({} samples, {} branch entries)",
        capture.display(),
        stats.samples,
        stats.branch_entries
    );
    Ok((binary, capture))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (binary, capture) = synthetic_capture(dir.path())?;
    let request = Request {
        binaries: vec![BinaryInfo::load(&binary)?],
        discover: None,

        skylake_fix: false,

        kernel_entries: KernelEntries::Skip,
        basic: false,
        pid: None,
        ignore_build_id: false,
        rules: Rules::Current,
        threads: 2,
        stream: false,
        trace_order: TraceOrder::ByBranch,
    };
    let result = aggregate(&Input::File(capture), &request, &NoProgress)?;
    let s = result.stats;
    println!(
        "{} samples ({} with branch stacks), {} LBR entries, {} dropped as kernel",
        s.samples, s.samples_with_branches, s.branch_entries, s.kernel_entries
    );
    let profile = &result.profiles[0];
    println!(
        "{}: {} distinct traces from {} processes",
        binary.display(),
        profile.traces.len(),
        profile.pids
    );
    let mut text = Vec::new();
    write_preagg(&mut text, profile)?;
    println!("first pre-aggregated records (LLVM >= 21):");
    for line in String::from_utf8(text)?.lines().take(8) {
        println!("  {line}");
    }
    Ok(())
}
