//! `profmill demo`: the main job on a built-in input. Generates a synthetic LBR capture of
//! profmill's own executable (real control flow, see `corpus`), then aggregates it.

use std::path::PathBuf;

use corpus::{LbrBinary, LbrCaptureSpec};

#[derive(clap::Args)]
pub struct Args {
    /// Where to put the capture and the profile.
    #[arg(long, default_value = "target/profmill-demo")]
    dir: PathBuf,
    /// Capture size in MiB.
    #[arg(long, default_value_t = 64)]
    size_mib: u64,
}

pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(&args.dir)?;
    let binary = args.dir.join("profmill-demo-binary");
    std::fs::copy(std::env::current_exe()?, &binary)?;
    let capture = args.dir.join("demo.perf.data");
    let spec = LbrCaptureSpec {
        binaries: vec![LbrBinary {
            path: binary.clone(),
            load_base: None,
        }],
        processes: 2,
        target_bytes: args.size_mib << 20,
        lbr_depth: 32,
        distinct_stacks: 20_000,
        kernel_fraction_percent: 5,
        compress: false,
        attr_size: corpus::ATTR_SIZE,
        seed: 1,
        mem_loads: None,
    };
    let stats = corpus::write_lbr_capture(
        &spec,
        &mut std::io::BufWriter::new(std::fs::File::create(&capture)?),
    )?;
    eprintln!(
        "profmill demo: generated {} ({} samples, {} MB)",
        capture.display(),
        stats.samples,
        stats.bytes / 1_000_000
    );
    let output = args.dir.join("demo.preagg");
    crate::aggregate::run_paths(&capture, &[binary], &output)?;
    let text = std::fs::read_to_string(&output)?;
    println!("first records of {}:", output.display());
    for line in text.lines().take(5) {
        println!("  {line}");
    }
    Ok(())
}
