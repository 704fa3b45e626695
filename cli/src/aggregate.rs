//! `profmill aggregate`: perf.data → BOLT pre-aggregated profiles, one per binary.

use std::path::{Path, PathBuf};
use std::time::Instant;

use engine::bolt::functions::Functions;
use engine::bolt::loaded::LoadedBinary;
use engine::bolt::preagg_legacy::write_preagg_legacy;
use engine::io::output::write_atomically;
use engine::perf::aggregate::{aggregate, Aggregation, BinaryProfile, Request};
use engine::perf::binary::BinaryInfo;
use engine::perf::capture::Input;
use engine::perf::mapping::Rules;
use engine::perf::preagg::write_preagg;
use engine::perf::store::{stored_profile, write_store};
use formats::store::StoreMeta;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// BOLT pre-aggregated text for LLVM ≥ 21 (`T`/`B`/`E`/`S` records).
    Preagg,
    /// BOLT pre-aggregated text for LLVM ≤ 20 (`B`/`F`/`f` records; LLVM 19's mapping rules).
    PreaggLegacy,
    /// BOLT's symbolized profile, as `perf2bolt` (LLVM 22) writes it.
    Fdata,
    /// A profile store (`.pms`) holding every binary's profile (one file, whatever the number
    /// of binaries); `merge` sums stores, `export` writes the other formats from them.
    Store,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::Fdata => "fdata",
            Format::Preagg | Format::PreaggLegacy => "preagg",
            Format::Store => "pms",
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// The perf.data capture (`-` reads a pipe-mode capture from stdin), or a profile store.
    capture: PathBuf,
    /// A profiled ELF binary; repeat for several (then -o names a directory).
    #[arg(short = 'b', long = "binary", required = true)]
    binaries: Vec<PathBuf>,
    /// Output file (or directory, with several binaries).
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    #[arg(long, value_enum, default_value = "preagg")]
    format: Format,
    /// Count sample IPs (`E`/`S` records) instead of branch stacks.
    #[arg(long)]
    basic: bool,
    /// Only this process.
    #[arg(long)]
    pid: Option<u32>,
    /// Aggregate even if the binary's build-id is not in the capture.
    #[arg(long)]
    ignore_build_id: bool,
    /// Decoding threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
}

pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    if crate::store::is_store(&args.capture) {
        // A store holds aggregated profiles already: write them out as `export` does.
        return crate::store::export_binaries(
            &args.capture,
            &args.binaries,
            args.format,
            &args.output,
            args.ignore_build_id,
        );
    }
    let started = Instant::now();
    let binaries = args
        .binaries
        .iter()
        .map(|p| BinaryInfo::load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let input = if args.capture.as_os_str() == "-" {
        Input::stream("<stdin>", std::io::stdin())
    } else {
        Input::File(args.capture.clone())
    };
    let request = Request {
        binaries,
        basic: args.basic,
        pid: args.pid,
        ignore_build_id: args.ignore_build_id,
        rules: if args.format == Format::PreaggLegacy {
            Rules::Llvm19
        } else {
            Rules::Current
        },
        threads: crate::default_threads(args.threads),
        stream: false,
        trace_order: Default::default(),
    };
    let total = std::fs::metadata(&args.capture).ok().map(|m| m.len());
    let bar = crate::progress::Bar::bytes(total, "reading");
    let result = aggregate(&input, &request, &bar)?;
    if args.format == Format::Store {
        let profiles = request
            .binaries
            .iter()
            .zip(&result.profiles)
            .map(|(b, p)| stored_profile(b, p))
            .collect();
        let meta = StoreMeta {
            captures: 1,
            hosts: result
                .side
                .hostname()
                .map(str::to_owned)
                .into_iter()
                .collect(),
        };
        write_store(&args.output, &meta, profiles)?;
        let outputs = vec![args.output.clone(); args.binaries.len()];
        summarize(&result, &args.binaries, &outputs, started);
        return Ok(());
    }
    let outputs = output_paths(&args.output, &args.binaries, args.format.extension())?;
    for ((profile, path), binary) in result.profiles.iter().zip(&outputs).zip(&args.binaries) {
        write_profile(args.format, binary, profile, result.basic, path)?;
    }
    summarize(&result, &args.binaries, &outputs, started);
    Ok(())
}

/// Writes one binary's profile in `format` (not a store) to `path`.
pub fn write_profile(
    format: Format,
    binary: &Path,
    profile: &BinaryProfile,
    basic: bool,
    path: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    match format {
        Format::Preagg => write_atomically(path, |out| write_preagg(out, profile))?,
        Format::PreaggLegacy if basic => {
            return Err(
                "LLVM 19's pre-aggregated format has no basic (IP) samples; use --format preagg"
                    .into(),
            )
        }
        Format::PreaggLegacy => {
            let functions = Functions::from_elf(binary, &std::fs::read(binary)?)?;
            write_atomically(path, |out| write_preagg_legacy(out, profile, &functions))?
        }
        Format::Fdata => write_fdata(binary, profile, basic, path)?,
        Format::Store => return Err("a store holds every binary; see write_store".into()),
    }
    Ok(())
}

/// `profmill aggregate CAPTURE -b BIN… -o OUTPUT` with default options.
pub fn run_paths(
    capture: &Path,
    binaries: &[PathBuf],
    output: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    run(Args {
        capture: capture.to_path_buf(),
        binaries: binaries.to_vec(),
        output: output.to_path_buf(),
        format: Format::Preagg,
        basic: false,
        pid: None,
        ignore_build_id: false,
        threads: None,
    })
}

/// Symbolizes one binary's profile (disassembling the functions it touches) and writes fdata.
pub fn write_fdata(
    binary: &Path,
    profile: &BinaryProfile,
    basic: bool,
    path: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    write_fdata_of(&LoadedBinary::load(binary)?, profile, basic, path)
}

/// [`write_fdata`] for a binary already loaded, with perf2bolt's diagnostics on stderr.
pub fn write_fdata_of(
    loaded: &LoadedBinary,
    profile: &BinaryProfile,
    basic: bool,
    path: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let report = engine::bolt::loaded::write_fdata(loaded, profile, basic, path)?;
    let binary = loaded.path().display();
    eprintln!(
        "profmill: {binary}: functions {:.2} s, symbolized {:.2} s, written {:.2} s",
        report.load_seconds, report.symbolize_seconds, report.write_seconds
    );
    let s = report.traces;
    if basic {
        eprintln!(
            "profmill: {binary}: {} samples outside every function",
            report.out_of_range_samples
        );
    } else {
        eprintln!(
            "profmill: {binary}: fall-through ranges: {} invalid, {} out of range, of {}",
            s.invalid, s.out_of_range, s.traces
        );
    }
    Ok(())
}

/// One binary: `-o` is the file. Several: `-o` is a directory holding `<binary name>.<ext>`.
pub fn output_paths(
    output: &Path,
    binaries: &[PathBuf],
    ext: &str,
) -> std::io::Result<Vec<PathBuf>> {
    if binaries.len() == 1 {
        return Ok(vec![output.to_path_buf()]);
    }
    std::fs::create_dir_all(output)?;
    Ok(binaries
        .iter()
        .map(|b| {
            output.join(format!(
                "{}.{ext}",
                b.file_name().unwrap_or_default().to_string_lossy()
            ))
        })
        .collect())
}

fn summarize(r: &Aggregation, binaries: &[PathBuf], outputs: &[PathBuf], started: Instant) {
    let s = &r.stats;
    let mb = r.side.bytes as f64 / 1e6;
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "profmill: read {} samples ({} with branch stacks, {} entries, {} kernel entries dropped) from {:.1} MB in {:.2} s ({:.0} MB/s)",
        s.samples, s.samples_with_branches, s.branch_entries, s.kernel_entries, mb, secs, mb / secs.max(1e-9)
    );
    for ((p, b), o) in r.profiles.iter().zip(binaries).zip(outputs) {
        let what = if r.basic {
            format!("{} addresses, {} samples", p.ips.len(), p.samples)
        } else {
            format!("{} traces", p.traces.len())
        };
        eprintln!(
            "profmill: {}: {} processes, {} → {}",
            b.display(),
            p.pids,
            what,
            o.display()
        );
    }
}
