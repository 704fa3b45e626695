//! `profmill aggregate`: perf.data → BOLT pre-aggregated profiles, one per binary.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::Instant;

use engine::bolt::functions::Functions;
use engine::bolt::loaded::LoadedBinary;
use engine::bolt::preagg_legacy::write_preagg_legacy;
use engine::io::output::write_atomically;
use engine::perf::aggregate::{aggregate, Aggregation, BinaryProfile, KernelEntries, Request};
use engine::perf::binary::BinaryInfo;
use engine::perf::capture::Input;
use engine::perf::mapping::Rules;
use engine::perf::preagg::write_preagg;
use engine::perf::store::{
    binary_profile, stored_profile, summed_profiles, write_store, StoredProfile,
};
use engine::perf::TraceOrder;
use formats::store::StoreMeta;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// BOLT pre-aggregated text for LLVM ≥ 21 (`T`/`B`/`E`/`S` records).
    Preagg,
    /// BOLT pre-aggregated text for LLVM ≤ 20 (`B`/`F`/`f` records; LLVM 19's mapping rules).
    PreaggLegacy,
    /// BOLT's symbolized profile, as `perf2bolt` (LLVM 22) writes it.
    Fdata,
    /// BOLT's YAML profile (CFG-level counts and hashes), as `perf2bolt
    /// --profile-format=yaml` (LLVM 22) writes it.
    Yaml,
    /// A profile store (`.pms`) holding every binary's profile (one file, whatever the number
    /// of binaries); `merge` sums stores, `export` writes the other formats from them.
    Store,
    /// The store's rows as Parquet (docs/store.md), for Spark and other engines; `import`
    /// turns it back into a store.
    Parquet,
}

impl Format {
    /// Whether the format is perf2bolt's symbolized output (fdata or YAML), which walks traces
    /// by their start and applies perf2bolt's capture fixes.
    pub fn is_symbolized(self) -> bool {
        matches!(self, Format::Fdata | Format::Yaml)
    }

    pub fn extension(self) -> &'static str {
        match self {
            Format::Fdata => "fdata",
            Format::Yaml => "yaml",
            Format::Preagg | Format::PreaggLegacy => "preagg",
            Format::Store => "pms",
            Format::Parquet => "parquet",
        }
    }

    /// Whether the output holds every binary (a store or its Parquet rows), not one binary's
    /// profile.
    pub fn is_whole_store(self) -> bool {
        matches!(self, Format::Store | Format::Parquet)
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// perf.data captures, summed into one profile (`-` reads a pipe-mode capture from stdin);
    /// or one profile store.
    #[arg(required = true)]
    captures: Vec<PathBuf>,
    /// A profiled ELF binary; repeat for several (then -o names a directory). Without any,
    /// `--format store` profiles every binary the captures map.
    #[arg(short = 'b', long = "binary")]
    binaries: Vec<PathBuf>,
    /// With `--format store` and no `--binary`: only the mapped binaries this names (a path, a
    /// file name, or a build-id of at least 8 hex digits); repeat for several.
    #[arg(long, value_name = "NAME|BUILD-ID")]
    only: Vec<String>,
    /// Output file (or directory, with several binaries); `-` for standard output.
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

type BoxError = Box<dyn std::error::Error>;

pub fn run(args: Args) -> Result<(), BoxError> {
    check_args(&args)?;
    let captures: Vec<&Path> = args.captures.iter().map(PathBuf::as_path).collect();
    refuse_overwriting(
        &args.output,
        &args.binaries,
        args.format.extension(),
        &captures,
    )?;
    if let [only] = &args.captures[..] {
        if crate::store::is_store(only) {
            // A store holds aggregated profiles already: write them out as `export` does.
            return crate::store::export_binaries(
                only,
                &args.binaries,
                args.format,
                &args.output,
                args.ignore_build_id,
            );
        }
    }
    let started = Instant::now();
    let request = request(&args)?;
    if args.format.is_whole_store() {
        return write_store_of_captures(&args, &request, started);
    }
    if let [capture] = &args.captures[..] {
        let mut result = aggregate_one(capture, &request)?;
        let outputs = output_paths(&args.output, &args.binaries, args.format.extension())?;
        let summary = Summary::of(&result, &outputs);
        // Each profile goes to its writer, which drops it once symbolized.
        let profiles = std::mem::take(&mut result.profiles);
        for ((profile, path), binary) in profiles.into_iter().zip(&outputs).zip(&args.binaries) {
            write_profile(args.format, binary, Cow::Owned(profile), result.basic, path)?;
        }
        summary.print(started);
        return Ok(());
    }
    write_sum_of_captures(&args, &request, started)
}

/// Refuses argument combinations that cannot mean anything.
fn check_args(args: &Args) -> Result<(), BoxError> {
    let stdin_captures = args
        .captures
        .iter()
        .filter(|c| c.as_os_str() == "-")
        .count();
    if stdin_captures > 1 {
        return Err("standard input (`-`) can be read only once".into());
    }
    if args.captures.len() > 1 {
        if let Some(store) = args.captures.iter().find(|c| crate::store::is_store(c)) {
            return Err(format!(
                "{}: a profile store cannot be summed with captures here; aggregate the captures to a store, then `profmill merge` the stores",
                store.display()
            )
            .into());
        }
    }
    if !args.only.is_empty() && !args.binaries.is_empty() {
        return Err("--only chooses among the binaries the capture maps; with --binary, name only the binaries you want".into());
    }
    let is_store_input = args.captures.len() == 1 && crate::store::is_store(&args.captures[0]);
    if is_store_input && args.format.is_whole_store() {
        return Err(format!(
            "{}: is a profile store already: `profmill merge` combines stores, `profmill export --format parquet` writes its rows",
            args.captures[0].display()
        )
        .into());
    }
    if args.binaries.is_empty() && (!args.format.is_whole_store() || is_store_input) {
        return Err(format!(
            "--binary is needed for --format {}; only --format store or parquet works without binaries (it profiles every binary the capture maps)",
            clap::ValueEnum::to_possible_value(&args.format).map(|v| v.get_name().to_owned()).unwrap_or_default()
        )
        .into());
    }
    if args.output.as_os_str() == "-" && (args.format.is_whole_store() || args.binaries.len() > 1) {
        return Err("-o - writes one binary's text profile to standard output; a profile store or several binaries need a path".into());
    }
    Ok(())
}

fn request(args: &Args) -> Result<Request, BoxError> {
    let binaries = args
        .binaries
        .iter()
        .map(|p| BinaryInfo::load(p))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Request {
        discover: binaries.is_empty().then(|| args.only.clone()),
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
        // fdata is perf2bolt's output; the other formats record the capture as it is.
        skylake_fix: args.format.is_symbolized(),
        kernel_entries: KernelEntries::Skip,
    })
}

/// Reads one capture (`-`: stdin) for `request`, with a progress bar.
fn aggregate_one(capture: &Path, request: &Request) -> Result<Aggregation, BoxError> {
    let input = if capture.as_os_str() == "-" {
        Input::stream("<stdin>", std::io::stdin())
    } else {
        Input::File(capture.to_path_buf())
    };
    let total = std::fs::metadata(capture).ok().map(|m| m.len());
    let bar = crate::progress::Bar::bytes(total, "reading");
    Ok(aggregate(&input, request, &bar)?)
}

/// Every capture's profiles in the store's terms, in capture order, and the hosts they came
/// from. The profiles of one binary are not summed yet.
fn stored_profiles_of_captures(
    args: &Args,
    request: &Request,
    started: Instant,
) -> Result<(Vec<StoredProfile>, Vec<String>, bool), BoxError> {
    let mut profiles = Vec::new();
    let mut hosts = Vec::new();
    let mut basic = None;
    for capture in &args.captures {
        let result = aggregate_one(capture, request)?;
        if *basic.get_or_insert(result.basic) != result.basic {
            return Err(format!(
                "{}: has {} branch stacks, unlike the captures before it; sum basic and LBR captures separately",
                capture.display(),
                if result.basic { "no" } else { "" }
            )
            .into());
        }
        profiles.extend(
            result
                .binaries
                .iter()
                .zip(&result.profiles)
                .map(|(b, p)| stored_profile(b, p)),
        );
        hosts.extend(result.side.hostname().map(str::to_owned));
        let outputs = vec![args.output.clone(); result.binaries.len()];
        Summary::of(&result, &outputs).print(started);
    }
    hosts.sort();
    hosts.dedup();
    Ok((profiles, hosts, basic.unwrap_or(false)))
}

/// `--format store` (or `parquet`): every capture's profiles, summed per binary, in one store
/// (or its Parquet rows).
fn write_store_of_captures(
    args: &Args,
    request: &Request,
    started: Instant,
) -> Result<(), BoxError> {
    let (profiles, hosts, _) = stored_profiles_of_captures(args, request, started)?;
    let meta = StoreMeta {
        captures: args.captures.len() as u64,
        hosts,
    };
    if args.format == Format::Parquet {
        engine::perf::parquet::write_parquet(&args.output, &meta, profiles)?;
    } else {
        write_store(&args.output, &meta, profiles)?;
    }
    Ok(())
}

/// Several captures in a text format: their sum, through the store's terms (file offsets), so
/// that the result equals aggregating them to a store and exporting it.
fn write_sum_of_captures(args: &Args, request: &Request, started: Instant) -> Result<(), BoxError> {
    let (profiles, _, basic) = stored_profiles_of_captures(args, request, started)?;
    let summed = summed_profiles(profiles);
    let outputs = output_paths(&args.output, &args.binaries, args.format.extension())?;
    let order = match args.format.is_symbolized() {
        true => TraceOrder::ByStart,
        false => TraceOrder::ByBranch,
    };
    for ((path, binary), output) in args.binaries.iter().zip(&request.binaries).zip(&outputs) {
        let meta = stored_profile(binary, &BinaryProfile::default()).meta;
        let stored = summed
            .iter()
            .find(|p| p.meta.identity_cmp(&meta) == std::cmp::Ordering::Equal);
        let profile = stored
            .map(|p| binary_profile(p.clone(), binary, order))
            .unwrap_or_default();
        write_profile(args.format, path, Cow::Owned(profile), basic, output)?;
    }
    Ok(())
}

/// Writes one binary's profile in `format` (not a store) to `path`; an owned profile is
/// dropped as soon as it is no longer needed.
pub fn write_profile(
    format: Format,
    binary: &Path,
    profile: Cow<'_, BinaryProfile>,
    basic: bool,
    path: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    match format {
        Format::Preagg => write_atomically(path, |out| write_preagg(out, &profile))?,
        Format::PreaggLegacy if basic => {
            return Err(
                "LLVM 19's pre-aggregated format has no basic (IP) samples; use --format preagg"
                    .into(),
            )
        }
        Format::PreaggLegacy => {
            let functions = Functions::from_elf(binary, &engine::io::input::read(binary)?)?;
            write_atomically(path, |out| write_preagg_legacy(out, &profile, &functions))?
        }
        Format::Fdata => write_fdata(binary, profile, basic, path)?,
        Format::Yaml => {
            // A BOLTed binary's profile is written for its input binary, as perf2bolt does.
            let bar = crate::progress::Bar::phases("loading the binary's functions");
            let loaded = LoadedBinary::load(binary)?;
            engine::io::progress::Progress::phase(&bar, "symbolizing and writing YAML");
            engine::bolt::loaded::write_yaml(
                &loaded,
                profile,
                basic,
                false,
                engine::bolt::Dialect::Llvm22,
                path,
            )?;
        }
        Format::Store | Format::Parquet => {
            return Err("a store holds every binary; see write_store".into())
        }
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
        captures: vec![capture.to_path_buf()],
        binaries: binaries.to_vec(),
        only: Vec::new(),
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
    profile: Cow<'_, BinaryProfile>,
    basic: bool,
    path: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let bar = crate::progress::Bar::phases("loading the binary's functions");
    write_fdata_with(&LoadedBinary::load(binary)?, profile, basic, path, bar)
}

/// [`write_fdata`] for a binary already loaded, with perf2bolt's diagnostics on stderr.
pub fn write_fdata_of(
    loaded: &LoadedBinary,
    profile: Cow<'_, BinaryProfile>,
    basic: bool,
    path: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let bar = crate::progress::Bar::phases("symbolizing");
    write_fdata_with(loaded, profile, basic, path, bar)
}

/// [`write_fdata_of`], its phases shown on `bar`.
fn write_fdata_with(
    loaded: &LoadedBinary,
    profile: Cow<'_, BinaryProfile>,
    basic: bool,
    path: &Path,
    bar: crate::progress::Bar,
) -> Result<(), Box<dyn std::error::Error>> {
    let report = engine::bolt::loaded::write_fdata(loaded, profile, basic, path, &bar);
    // Cleared before the diagnostics below are printed.
    drop(bar);
    let report = report?;
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

/// One binary: `-o` is the file. Several: `-o` is a directory holding `<binary name>.<ext>`,
/// created here. Two binaries of the same file name are refused: their outputs would be one.
pub fn output_paths(
    output: &Path,
    binaries: &[PathBuf],
    ext: &str,
) -> Result<Vec<PathBuf>, BoxError> {
    let paths = planned_outputs(output, binaries, ext);
    if binaries.len() == 1 {
        return Ok(paths);
    }
    for (i, path) in paths.iter().enumerate() {
        if let Some(j) = paths[..i].iter().position(|p| p == path) {
            return Err(format!(
                "{} and {} have the same file name: both profiles would be written to {}; give each binary its own name",
                binaries[j].display(),
                binaries[i].display(),
                path.display()
            )
            .into());
        }
    }
    std::fs::create_dir_all(output).map_err(|e| {
        format!(
            "{}: {e} (with several binaries, -o names the directory their profiles go to)",
            output.display()
        )
    })?;
    Ok(paths)
}

/// The files [`output_paths`] would write, without creating anything.
fn planned_outputs(output: &Path, binaries: &[PathBuf], ext: &str) -> Vec<PathBuf> {
    if binaries.len() <= 1 {
        return vec![output.to_path_buf()];
    }
    let name = |b: &PathBuf| {
        b.file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    };
    binaries
        .iter()
        .map(|b| output.join(format!("{}.{ext}", name(b))))
        .collect()
}

/// Refuses to write over an input: `-o` (or a file in its directory) that is the capture, a
/// binary or the store read.
pub fn refuse_overwriting(
    output: &Path,
    binaries: &[PathBuf],
    ext: &str,
    inputs: &[&Path],
) -> Result<(), BoxError> {
    let outputs = planned_outputs(output, binaries, ext);
    let all_inputs = inputs
        .iter()
        .copied()
        .chain(binaries.iter().map(PathBuf::as_path));
    engine::io::output::refuse_overwriting_inputs(
        outputs.iter().map(PathBuf::as_path),
        all_inputs,
    )?;
    Ok(())
}

/// What `aggregate` tells of a capture on stderr once its outputs are written: taken before
/// the profiles go to their writers.
struct Summary {
    stats: engine::perf::aggregate::SampleStats,
    bytes: u64,
    /// A line per binary: its processes, what its profile holds, and its output.
    binaries: Vec<String>,
}

impl Summary {
    fn of(r: &Aggregation, outputs: &[PathBuf]) -> Summary {
        let binaries = r.profiles.iter().zip(&r.binaries).zip(outputs);
        let binaries = binaries.map(|((p, b), o)| {
            let what = if r.basic {
                format!("{} addresses, {} samples", p.ips.len(), p.samples)
            } else {
                format!("{} traces", p.traces.len())
            };
            format!(
                "profmill: {}: {}, {what} → {}",
                b.path.display(),
                crate::counted(p.pids as u64, "process", "processes"),
                o.display()
            )
        });
        Summary {
            stats: r.stats,
            bytes: r.side.bytes,
            binaries: binaries.collect(),
        }
    }

    fn print(&self, started: Instant) {
        let s = &self.stats;
        let mb = self.bytes as f64 / 1e6;
        let secs = started.elapsed().as_secs_f64();
        eprintln!(
            "profmill: read {} samples ({} with branch stacks, {} entries, {} kernel entries dropped) from {:.1} MB in {:.2} s ({:.0} MB/s)",
            s.samples, s.samples_with_branches, s.branch_entries, s.kernel_entries, mb, secs, mb / secs.max(1e-9)
        );
        for line in &self.binaries {
            eprintln!("{line}");
        }
    }
}
