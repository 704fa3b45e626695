//! Writes generated fdata profiles into a directory (see `corpus::fdata`).
//!
//! usage: gen_fdata DIR FILES LINES_PER_FILE DISTINCT_KEYS [--seed N] [--no-lbr] [--bolted]

use std::path::PathBuf;

use corpus::fdata::{write_fdata_files, FdataSpec};

fn main() -> std::io::Result<()> {
    let usage =
        "usage: gen_fdata DIR FILES LINES_PER_FILE DISTINCT_KEYS [--seed N] [--no-lbr] [--bolted]";
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().expect(usage));
    let mut number = |name: &str| -> usize {
        args.next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name}: {usage}"))
    };
    let mut spec = FdataSpec {
        files: number("FILES"),
        lines_per_file: number("LINES_PER_FILE"),
        distinct_keys: number("DISTINCT_KEYS"),
        functions: 2000,
        ..FdataSpec::default()
    };
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--seed" => spec.seed = args.next().and_then(|v| v.parse().ok()).expect(usage),
            "--no-lbr" => spec.no_lbr = Some(vec!["cycles:u:".into()]),
            "--bolted" => spec.bolted = true,
            _ => panic!("{usage}"),
        }
    }
    std::fs::create_dir_all(&dir)?;
    let files = write_fdata_files(&dir, &spec)?;
    let bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum();
    eprintln!(
        "{} files, {} MB in {}",
        files.len(),
        bytes >> 20,
        dir.display()
    );
    Ok(())
}
