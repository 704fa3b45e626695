//! Converts a small text sample profile to LLVM's ExtBinary encoding and back, checking that
//! nothing is lost: `cargo run -p profmill-engine --example sampleprof_convert`.

use engine::sampleprof::{self, OutputFormat};
use formats::sampleprof::binary::ExtBinaryOptions;

const PROFILE: &str = "\
main:5000:10
 1: 10
 2: 4000 work:3900 helper:100
 3: 990
 4: work:1000
  1: 800
  2: 200
work:4200:3900
 1: 4200
";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let text = dir.path().join("in.prof");
    std::fs::write(&text, PROFILE)?;

    let ext = dir.path().join("out.extbinary");
    let options = ExtBinaryOptions::default();
    sampleprof::convert(&text, OutputFormat::ExtBinary(options), &ext)?;
    let back = dir.path().join("back.prof");
    sampleprof::convert(&ext, OutputFormat::Text, &back)?;

    let original = sampleprof::read(&text)?;
    let round_trip = sampleprof::read(&back)?;
    println!(
        "text {} bytes -> ExtBinary {} bytes -> text {} bytes",
        PROFILE.len(),
        std::fs::metadata(&ext)?.len(),
        std::fs::metadata(&back)?.len()
    );
    for (context, samples) in original.sorted_functions() {
        println!(
            "  {context}: {} samples, {} at entry",
            samples.total, samples.head
        );
    }
    assert_eq!(original.functions, round_trip.functions);
    println!("round trip kept every function's samples");
    print!("{}", std::fs::read_to_string(&back)?);
    Ok(())
}
