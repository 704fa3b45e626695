//! Merges two generated raw instrumentation profiles (two runs of one synthetic program) as
//! `llvm-profdata merge` does, and prints a summary:
//! `cargo run -p profmill-engine --example instrprof_merge`.

use engine::instrprof::{merge, MergeOptions, WeightedInput};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut inputs = Vec::new();
    for (seed, weight) in [(1, 1), (2, 3)] {
        let path = dir.path().join(format!("run{seed}.profraw"));
        let spec = corpus::instrprof::RawProfileSpec {
            functions: 200,
            seed,
            functions_per_unit: 20,
        };
        let mut bytes = Vec::new();
        corpus::instrprof::write_raw_profile(&spec, &mut bytes)?;
        std::fs::write(&path, &bytes)?;
        println!("{}: {} bytes, weight {weight}", path.display(), bytes.len());
        inputs.push(WeightedInput { path, weight });
    }

    let outcome = merge(&inputs, &MergeOptions::default())?;
    for (path, error) in &outcome.errors {
        println!("warning: {}: {error}", path.display());
    }
    if outcome.failed {
        return Err("no profile can be merged".into());
    }
    let profile = &outcome.profile;
    println!(
        "merged {} functions ({} notes); indexed profile: {} bytes",
        profile.num_names(),
        outcome.notes.len(),
        profile.to_indexed(false, 12).len()
    );
    let mut text = Vec::new();
    profile.write_text(&mut text, false)?;
    println!("the text profile starts:");
    for line in String::from_utf8(text)?.lines().take(12) {
        println!("  {line}");
    }
    Ok(())
}
