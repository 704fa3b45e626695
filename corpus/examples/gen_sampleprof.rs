//! Writes a generated LLVM text sample profile of about SIZE_MB megabytes.
//! usage: gen_sampleprof OUT SIZE_MB [SEED]

use std::io::{BufWriter, Write};

use corpus::sampleprof::{write_sample_profile_text, SampleProfileSpec};

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: gen_sampleprof OUT SIZE_MB [SEED]");
        std::process::exit(2);
    }
    let mb: u64 = args[2].parse().expect("SIZE_MB must be a number");
    let seed: u64 = args
        .get(3)
        .map_or(1, |s| s.parse().expect("SEED must be a number"));
    let spec = SampleProfileSpec::of_size(seed, mb << 20);
    let mut out = BufWriter::new(std::fs::File::create(&args[1])?);
    let n = write_sample_profile_text(&spec, &mut out)?;
    out.flush()?;
    eprintln!("{}: {n} bytes, {} functions", args[1], spec.functions);
    Ok(())
}
