//! `profmill export`, `profmill merge` (of stores) and `profmill show` (of a store): the
//! profile store's commands.

use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};

use engine::io::inputs::{collect_weighted_inputs, SpecialFiles, Stdin};
use engine::perf::store::{merge_stores, StoreFile};
use engine::perf::{BinaryInfo, BinaryProfile, TraceOrder};
use formats::store::SectionKind;

use crate::aggregate::{output_paths, write_profile, Format};

type BoxError = Box<dyn std::error::Error>;

#[derive(clap::Args)]
pub struct ExportArgs {
    /// The profile store.
    store: PathBuf,
    /// A binary whose profile to export; repeat for several (then -o names a directory).
    /// Not with `--format parquet`, which writes every binary's rows.
    #[arg(short = 'b', long = "binary")]
    binaries: Vec<PathBuf>,
    /// Output file (or directory, with several binaries; with `--format parquet`, a directory
    /// gets `STORE-NAME.parquet`).
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    /// What to write.
    #[arg(long, value_enum, default_value = "preagg")]
    format: Format,
    /// Match the binary by file name when its build-id is not in the store.
    #[arg(long)]
    ignore_build_id: bool,
}

/// Writes each binary's profile from the store, as `aggregate` writes it from a capture.
pub fn export(args: ExportArgs) -> Result<(), BoxError> {
    export_binaries(
        &args.store,
        &args.binaries,
        args.format,
        &args.output,
        args.ignore_build_id,
    )
}

/// [`export`]'s work, also `aggregate`'s when its input is a store.
pub fn export_binaries(
    store: &Path,
    binaries: &[PathBuf],
    format: Format,
    output: &Path,
    ignore_build_id: bool,
) -> Result<(), BoxError> {
    if format == Format::Store {
        return Err(
            "export writes preagg, preagg-legacy, fdata, yaml or parquet; `merge` writes stores"
                .into(),
        );
    }
    crate::aggregate::refuse_overwriting(output, binaries, format.extension(), &[store])?;
    if format == Format::Parquet {
        if !binaries.is_empty() {
            return Err(
                "--format parquet writes every binary of the store; leave out --binary".into(),
            );
        }
        if output.as_os_str().to_string_lossy().ends_with('/') && !output.is_dir() {
            return Err(format!(
                "{}: no such directory (create it, or give the Parquet file's name)",
                output.display()
            )
            .into());
        }
        let output = match output.is_dir() {
            true => output.join(
                store
                    .with_extension("parquet")
                    .file_name()
                    .unwrap_or_default(),
            ),
            false => output.to_path_buf(),
        };
        engine::perf::parquet::export_parquet(store, &output)?;
        return Ok(());
    }
    if binaries.is_empty() {
        return Err("--binary is needed: the binary whose profile to export".into());
    }
    // Huge pages cost more to clear than they save here (see `without_huge_pages`).
    crate::without_huge_pages();
    let store = StoreFile::open(store)?;
    // Every binary is found in the store before any output is written.
    let found = binaries
        .iter()
        .map(|path| {
            let binary = BinaryInfo::load(path)?;
            let index = store.find(&binary, ignore_build_id)?;
            Ok((binary, index))
        })
        .collect::<Result<Vec<_>, BoxError>>()?;
    let outputs = output_paths(output, binaries, format.extension())?;
    let order = match format.is_symbolized() {
        true => TraceOrder::ByStart,
        false => TraceOrder::ByBranch,
    };
    for ((path, output), (binary, index)) in binaries.iter().zip(&outputs).zip(found) {
        let profile = store.profile(index, &binary, order)?;
        let basic = profile.traces.is_empty() && !profile.ips.is_empty();
        write_profile(format, path, Cow::Owned(profile), basic, output)?;
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct ImportArgs {
    /// Parquet files of profile rows (`export --format parquet`, or a Spark merge's output), or
    /// directories of them.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// The store to write.
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
}

/// Reads Parquet profile rows into a store (rows of the same key summed).
pub fn import(args: ImportArgs) -> Result<(), BoxError> {
    let inputs = args.inputs.iter().map(PathBuf::as_path);
    engine::io::output::refuse_overwriting_inputs([args.output.as_path()], inputs)?;
    let report = engine::perf::parquet::import_parquet(&args.inputs, &args.output)?;
    if report.saturated {
        eprintln!("profmill: warning: some summed counts passed 2^64 and were saturated");
    }
    eprintln!(
        "profmill: imported {} rows from {} ({}) into {}",
        report.rows,
        crate::counted(report.files as u64, "Parquet file", "Parquet files"),
        crate::counted(report.binaries as u64, "binary", "binaries"),
        args.output.display()
    );
    Ok(())
}

/// `binary`'s profile in the store at `store`, traces in `order` (`perf2bolt --pa STORE`).
pub fn profile_for(
    store: &Path,
    binary: &Path,
    ignore_build_id: bool,
    order: TraceOrder,
) -> Result<BinaryProfile, BoxError> {
    let store = StoreFile::open(store)?;
    let binary = BinaryInfo::load(binary)?;
    let index = store.find(&binary, ignore_build_id)?;
    Ok(store.profile(index, &binary, order)?)
}

/// The inputs and output of a store merge.
pub struct MergeRequest<'a> {
    /// Input stores (or directories of them).
    pub inputs: &'a [String],
    /// `W,FILE` inputs.
    pub weighted: &'a [String],
    /// A file listing inputs, one per line (`W,FILE` or `FILE`).
    pub list: Option<&'a str>,
    /// The merged store.
    pub output: &'a std::path::Path,
}

/// Merges stores into one.
pub fn merge(m: MergeRequest<'_>) -> Result<(), BoxError> {
    let inputs = collect_weighted_inputs(
        m.inputs,
        m.weighted,
        m.list,
        (
            Stdin::Refused("stores are read from files, not from standard input"),
            SpecialFiles::Refuse("stores are merged from regular files (they are read at offsets)"),
        ),
        "profmill merge --help",
    )?;
    crate::without_huge_pages();
    crate::keep_freed_memory();
    // Ahead of the merge, the bar's total is unknown: its inputs are opened first.
    let bar = crate::progress::Bar::bytes(None, "opening");
    let report = merge_stores(&inputs, m.output, &bar)?;
    if report.saturated {
        eprintln!("profmill: warning: some summed counts passed 2^64 and were saturated");
    }
    eprintln!(
        "profmill: merged {} ({}) into {}",
        crate::counted(inputs.len() as u64, "store", "stores"),
        crate::counted(report.binaries as u64, "binary", "binaries"),
        m.output.display()
    );
    Ok(())
}

/// Whether `path` is a profile store (by its magic). Only a regular file is looked at: a
/// pipe's first bytes, once read, would be missing for the reader of the other kinds (and a
/// store is read at offsets, so it is a regular file anyway).
pub fn is_store(path: &std::path::Path) -> bool {
    let mut magic = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| match f.metadata()?.is_file() {
            true => std::io::Read::read_exact(&mut f, &mut magic),
            false => Ok(()),
        })
        .is_ok_and(|()| magic == formats::store::MAGIC)
}

/// Prints what a store holds: binaries, build-ids, events, samples, rows and bytes per table;
/// as JSON with `json`.
pub fn show(path: &std::path::Path, json: bool) -> Result<(), BoxError> {
    let file = StoreFile::open(path)?;
    let store = file.store()?;
    let mut out = std::io::BufWriter::new(crate::stdout());
    let meta = store.meta();
    if json {
        write!(
            out,
            "{{\"captures\":{},\"hosts\":[{}],\"binaries\":[",
            meta.captures,
            meta.hosts
                .iter()
                .map(|h| json_string(h))
                .collect::<Vec<_>>()
                .join(",")
        )?;
    } else {
        writeln!(out, "captures: {}", meta.captures)?;
        let hosts = meta.hosts.join(", ");
        let hosts = if hosts.is_empty() { "(none)" } else { &hosts };
        writeln!(out, "hosts: {hosts}")?;
    }
    for (i, (m, layout)) in store.binaries().iter().enumerate() {
        let build_id: String = m.build_id.iter().map(|b| format!("{b:02x}")).collect();
        let name = String::from_utf8_lossy(&m.name);
        let tables: Vec<(SectionKind, u64, u64)> = SectionKind::TABLES
            .iter()
            .map(|&k| (k, layout.rows(k), layout.bytes(k)))
            .filter(|&(_, rows, _)| rows > 0)
            .collect();
        if json {
            if i > 0 {
                write!(out, ",")?;
            }
            write!(
                out,
                "{{\"name\":{},\"build_id\":\"{build_id}\",\"events\":[{}],\"samples\":{},\"processes\":{},\"tables\":{{",
                json_string(&name),
                m.events.iter().map(|e| json_string(e)).collect::<Vec<_>>().join(","),
                m.samples,
                m.processes
            )?;
            for (j, (k, rows, bytes)) in tables.iter().enumerate() {
                let sep = if j > 0 { "," } else { "" };
                write!(
                    out,
                    "{sep}\"{}\":{{\"rows\":{rows},\"bytes\":{bytes}}}",
                    k.name()
                )?;
            }
            write!(out, "}}}}")?;
        } else {
            writeln!(out, "binary {name}")?;
            writeln!(
                out,
                "  build-id: {}",
                if build_id.is_empty() {
                    "(none)"
                } else {
                    &build_id
                }
            )?;
            // Only IP-sample (basic) profiles name their events and count their samples: an
            // LBR profile's counts are its traces'.
            if m.events.is_empty() {
                writeln!(out, "  processes: {}", m.processes)?;
            } else {
                writeln!(out, "  events: {}", m.events.join(" "))?;
                writeln!(
                    out,
                    "  IP samples: {}, processes: {}",
                    m.samples, m.processes
                )?;
            }
            for (k, rows, bytes) in tables {
                writeln!(
                    out,
                    "  {}: {rows} rows, {bytes} bytes ({:.2} bytes per row)",
                    k.name(),
                    bytes as f64 / rows as f64
                )?;
            }
        }
    }
    if json {
        writeln!(out, "]}}")?;
    }
    out.flush()?;
    Ok(())
}

/// Prints `binary`'s `top` hottest functions in the store: by the taken branches whose source
/// lies in them, or by IP samples in them for a basic profile.
pub fn show_hottest(store: &Path, binary: &Path, top: usize) -> Result<(), BoxError> {
    let profile = profile_for(store, binary, false, TraceOrder::ByBranch)?;
    let data = engine::io::input::read(binary)?;
    let functions = engine::bolt::Functions::from_elf(binary, &data)?;
    let mut heat = vec![0u64; functions.len()];
    let mut add = |addr: u64, n: u64| {
        if let Some(f) = functions.index_containing(addr) {
            heat[f] = heat[f].saturating_add(n);
        }
    };
    if profile.traces.is_empty() {
        profile.ips.iter().for_each(|&(ip, n)| add(ip, n));
    } else {
        profile
            .traces
            .iter()
            .for_each(|&((branch, _, _), c)| add(branch, c.taken));
    }
    let mut hot: Vec<(u64, usize)> = heat
        .iter()
        .enumerate()
        .filter(|&(_, &n)| n > 0)
        .map(|(f, &n)| (n, f))
        .collect();
    hot.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let what = if profile.traces.is_empty() {
        "samples"
    } else {
        "taken branches"
    };
    let mut out = crate::stdout();
    writeln!(out, "hottest functions of {} ({what}):", binary.display())?;
    for (n, f) in hot.into_iter().take(top) {
        writeln!(out, "  {n:>12}  {}", functions.get(f).name)?;
    }
    Ok(())
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
