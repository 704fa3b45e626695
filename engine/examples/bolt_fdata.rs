//! Symbolizes a small synthetic LBR capture of this example's own executable into BOLT's fdata,
//! as perf2bolt does: `cargo run -p profmill-engine --example bolt_fdata`.

use engine::bolt::{write_fdata, LoadedBinary};
use engine::io::NoProgress;
use engine::perf::{aggregate, BinaryInfo, Input, KernelEntries, Request, Rules, TraceOrder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let binary = dir.path().join("app");
    std::fs::copy(std::env::current_exe()?, &binary)?;
    let capture = dir.path().join("perf.data");
    let spec = corpus::LbrCaptureSpec {
        binaries: vec![corpus::LbrBinary {
            path: binary.clone(),
            load_base: None,
        }],
        processes: 1,
        target_bytes: 1 << 20,
        lbr_depth: 32,
        distinct_stacks: 2_000,
        kernel_fraction_percent: 0,
        compress: false,
        attr_size: corpus::ATTR_SIZE,
        seed: 7,
        mem_loads: None,
    };
    corpus::write_lbr_capture(&spec, &mut std::fs::File::create(&capture)?)?;

    // Aggregate in the order symbolization walks (by fall-through start): no re-sort needed.
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
        trace_order: TraceOrder::ByStart,
    };
    let result = aggregate(&Input::File(capture), &request, &NoProgress)?;
    let loaded = LoadedBinary::load(&binary)?;
    println!(
        "{}: {} functions",
        loaded.path().display(),
        loaded.functions().len()
    );

    let fdata = dir.path().join("app.fdata");
    let report = write_fdata(
        &loaded,
        std::borrow::Cow::Borrowed(&result.profiles[0]),
        result.basic,
        &fdata,
        &NoProgress,
    )?;
    let t = report.traces;
    println!(
        "{} fall-throughs walked, {} invalid, {} out of range; symbolized in {:.3} s",
        t.traces, t.invalid, t.out_of_range, report.symbolize_seconds
    );
    let text = std::fs::read_to_string(&fdata)?;
    println!("{} fdata lines; the first:", text.lines().count());
    for line in text.lines().take(8) {
        println!("  {line}");
    }
    Ok(())
}
