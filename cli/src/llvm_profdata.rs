//! `profmill llvm-profdata merge …`: a drop-in for `llvm-profdata merge` on instrumentation
//! profiles, parsing LLVM's option spelling itself (`-o x`, `-o=x`, `--output=x`, single or
//! double dash). Options we do not implement are accepted with a warning, never misread.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use engine::instrprof::correlate::correlation_from_binary;
use engine::instrprof::name_filter::NameFilter;
use engine::instrprof::remap::Remapper;
use engine::instrprof::temporal::TemporalLimits;
use engine::instrprof::{merge, FailureMode, MergeOptions, WeightedInput};
use engine::io::output::write_atomically;

#[derive(clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    /// The llvm-profdata command line: `merge [options] <files…>`.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

type BoxError = Box<dyn std::error::Error>;

/// Options of `llvm-profdata merge` that take a value and that we accept but ignore.
const IGNORED_WITH_VALUE: &[&str] = &[
    "debuginfod",
    "correlate",
    "memprof-version",
    "supplement-instr-with-sample",
    "zero-counter-threshold",
    "suppl-min-size-threshold",
    "instr-prof-cold-threshold",
    "output-size-limit",
    "max-debug-info-correlation-warnings",
    "profiled-binary",
    "prof-sym-list",
    "compress-all-sections",
    "gen-partial-profile",
    "split-layout",
    "gen-cs-nested-profile",
    "sample-profile-use-md5",
];
/// Flags (no value) that we accept but ignore.
const IGNORED_FLAGS: &[&str] = &[
    "use-md5",
    "drop-profile-symbol-list",
    "convert-sample-profile-layout",
];

#[derive(Debug, Default)]
struct MergeArgs {
    output: Option<String>,
    positional: Vec<String>,
    weighted: Vec<String>,
    input_files: Option<String>,
    text: bool,
    sparse: bool,
    threads: usize,
    failure_mode: FailureMode,
    write_prev_version: bool,
    any_raw_version: bool,
    function: String,
    no_function: String,
    remapping_file: Option<String>,
    keep_vtable_symbols: bool,
    temporal_limits: TemporalLimits,
    binary_file: Option<String>,
    debug_info: Option<String>,
}

/// When the executable is invoked as `llvm-profdata` (a link or a copy), runs that tool on the
/// whole command line.
pub fn run_as_argv0() -> Option<Result<(), BoxError>> {
    let mut argv = std::env::args_os();
    let argv0 = PathBuf::from(argv.next()?);
    let stem = argv0.file_stem()?.to_str()?;
    if stem != "llvm-profdata" && !stem.starts_with("llvm-profdata-") {
        return None;
    }
    Some(run(Args {
        args: argv.collect(),
    }))
}

pub fn run(args: Args) -> Result<(), BoxError> {
    if let Some(result) = crate::llvm_profdata_sample::dispatch(&args.args) {
        return result;
    }
    let args: Vec<String> = args
        .args
        .into_iter()
        .map(|a| {
            a.into_string()
                .map_err(|a| format!("argument {a:?} is not UTF-8"))
        })
        .collect::<Result<_, _>>()?;
    match args.first().map(String::as_str) {
        Some("merge") => run_merge(parse_merge(&args[1..])?),
        Some("show") => run_show(&args[1..]),
        Some("overlap") => run_overlap(&args[1..]),
        Some(other) => Err(format!(
            "llvm-profdata subcommand '{other}' is not implemented by profmill (only 'merge', 'show' and 'overlap' are)"
        )
        .into()),
        None => Err("usage: profmill llvm-profdata merge|show|overlap [options] <files…>".into()),
    }
}

/// Splits `-name=value` / `--name=value` / `-name` / `--name` into (name, inline value).
fn split_option(arg: &str) -> Option<(&str, Option<&str>)> {
    let body = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-'))?;
    if body.is_empty() {
        return None;
    }
    Some(match body.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (body, None),
    })
}

/// An option's value: inline (`-o=x`) or the next argument (`-o x`), which is then consumed.
fn option_value(
    args: &[String],
    next: &mut usize,
    inline: Option<&str>,
    what: &str,
) -> Result<String, BoxError> {
    if let Some(v) = inline {
        return Ok(v.to_string());
    }
    let v = args
        .get(*next)
        .ok_or_else(|| format!("option --{what} needs a value"))?;
    *next += 1;
    Ok(v.clone())
}

fn parse_ulong(name: &str, v: &str) -> Result<u64, BoxError> {
    v.parse().map_err(|_| {
        format!("for the --{name} option: '{v}' value invalid for ulong argument!").into()
    })
}

fn parse_bool(name: &str, value: Option<&str>) -> Result<bool, BoxError> {
    match value {
        None | Some("true") | Some("TRUE") | Some("True") | Some("1") => Ok(true),
        Some("false") | Some("FALSE") | Some("False") | Some("0") => Ok(false),
        Some(v) => {
            Err(format!("'{v}' is not a valid value for the boolean option --{name}").into())
        }
    }
}

fn parse_merge(args: &[String]) -> Result<MergeArgs, BoxError> {
    let mut m = MergeArgs::default();
    let mut i = 0;
    let mut only_positional = false;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if only_positional || arg == "-" {
            m.positional.push(arg.clone());
            continue;
        }
        if arg == "--" {
            only_positional = true;
            continue;
        }
        let Some((name, inline)) = split_option(arg) else {
            m.positional.push(arg.clone());
            continue;
        };
        let mut value = |what: &str| option_value(args, &mut i, inline, what);
        match name {
            "o" | "output" => m.output = Some(value(name)?),
            "weighted-input" => m.weighted.push(value(name)?),
            "f" | "input-files" => m.input_files = Some(value(name)?),
            "text" => m.text = parse_bool(name, inline)?,
            "binary" => m.text = !parse_bool(name, inline)?,
            "instr" => {
                parse_bool(name, inline)?;
            }
            "sparse" => m.sparse = parse_bool(name, inline)?,
            "write-prev-version" => m.write_prev_version = parse_bool(name, inline)?,
            "function" => m.function = value(name)?,
            "no-function" => m.no_function = value(name)?,
            "r" | "remapping-file" => m.remapping_file = Some(value(name)?),
            "keep-vtable-symbols" => m.keep_vtable_symbols = parse_bool(name, inline)?,
            "binary-file" => m.binary_file = Some(value(name)?),
            "debug-info" => m.debug_info = Some(value(name)?),
            "temporal-profile-trace-reservoir-size" => {
                m.temporal_limits.reservoir_size = parse_ulong(name, &value(name)?)?
            }
            "temporal-profile-max-trace-length" => {
                m.temporal_limits.max_trace_length = parse_ulong(name, &value(name)?)?
            }
            "j" | "num-threads" => {
                let v = value(name)?;
                m.threads = v
                    .parse()
                    .map_err(|_| format!("'{v}' is not a valid thread count"))?;
            }
            "failure-mode" => {
                m.failure_mode = match value(name)?.as_str() {
                    "any" => FailureMode::Any,
                    "all" => FailureMode::All,
                    "warn" => FailureMode::Warn,
                    v => return Err(format!("unknown --failure-mode '{v}' (any, all, warn)").into()),
                }
            }
            // profmill's own: read raw versions 5–9 too (llvm-profdata-19 reads only 10).
            "profmill-any-raw-version" => m.any_raw_version = parse_bool(name, inline)?,
            "sample" | "extbinary" | "gcc" | "compbinary" => {
                return Err(format!(
                    "--{name}: sample profiles are not supported by profmill llvm-profdata (instrumentation profiles only)"
                )
                .into())
            }
            n if IGNORED_WITH_VALUE.contains(&n) => {
                let v = value(n)?;
                eprintln!("warning: profmill llvm-profdata: option --{n}={v} is not implemented and is ignored");
            }
            n if IGNORED_FLAGS.contains(&n) => {
                eprintln!("warning: profmill llvm-profdata: option --{n} is not implemented and is ignored");
            }
            _ => {
                return Err(format!(
                    "llvm-profdata merge: Unknown command line argument '{arg}'"
                )
                .into())
            }
        }
    }
    Ok(m)
}

fn parse_weighted(entry: &str) -> Result<(String, u64), BoxError> {
    let (w, file) = entry.split_once(',').unwrap_or((entry, ""));
    match formats::instrprof::text::parse_unsigned(w.as_bytes(), 10) {
        Some(w) if w >= 1 => Ok((file.to_string(), w)),
        _ => Err("input weight must be a positive integer".into()),
    }
}

/// `addWeightedInput`: files as given, directories expanded recursively in directory order;
/// `-` (standard input) only where the caller reads it.
fn add_input(
    inputs: &mut Vec<WeightedInput>,
    path: &Path,
    weight: u64,
    stdin: Stdin,
) -> Result<(), BoxError> {
    if path.as_os_str() == engine::instrprof::STDIN {
        if let Stdin::Refused(why) = stdin {
            return Err(why.into());
        }
        inputs.push(WeightedInput {
            path: path.to_path_buf(),
            weight,
        });
        return Ok(());
    }
    let meta = std::fs::metadata(path)
        .map_err(|_| format!("{}: No such file or directory", path.display()))?;
    if meta.is_file() {
        inputs.push(WeightedInput {
            path: path.to_path_buf(),
            weight,
        });
    } else if meta.is_dir() {
        add_directory(inputs, path, weight)?;
    }
    Ok(())
}

/// Whether an input named `-` is standard input.
#[derive(Clone, Copy)]
pub(crate) enum Stdin {
    Read,
    /// Refused with this message.
    Refused(&'static str),
}

fn add_directory(inputs: &mut Vec<WeightedInput>, dir: &Path, weight: u64) -> Result<(), BoxError> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => inputs.push(WeightedInput { path, weight }),
            Ok(m) if m.is_dir() => add_directory(inputs, &path, weight)?,
            _ => {}
        }
    }
    Ok(())
}

fn collect_inputs(m: &MergeArgs) -> Result<Vec<WeightedInput>, BoxError> {
    collect_weighted_inputs(
        &m.positional,
        &m.weighted,
        m.input_files.as_deref(),
        Stdin::Read,
    )
}

/// The inputs of `llvm-profdata merge` (instrumentation and sample profiles alike), in LLVM's
/// order, so that errors come in LLVM's order too: positional files, `--weighted-input`s,
/// then the lines of the `-f` list (`#` comments skipped, `W,FILE` or `FILE`).
pub(crate) fn collect_weighted_inputs(
    positional: &[String],
    weighted: &[String],
    input_files: Option<&str>,
    stdin: Stdin,
) -> Result<Vec<WeightedInput>, BoxError> {
    let mut inputs = Vec::new();
    let mut add = |file: &str, weight| add_input(&mut inputs, Path::new(file), weight, stdin);
    for p in positional {
        add(p, 1)?;
    }
    for w in weighted {
        let (file, weight) = parse_weighted(w)?;
        add(&file, weight)?;
    }
    if let Some(list) = input_files {
        let text = std::fs::read_to_string(list).map_err(|e| format!("{list}: {e}"))?;
        for line in text.split('\n').filter(|l| !l.is_empty()) {
            let entry = line.trim_matches([' ', '\t', '\x0b', '\x0c', '\r']);
            if entry.starts_with('#') {
                continue;
            }
            let (file, weight) = if entry.contains(',') {
                parse_weighted(entry)?
            } else {
                (entry.to_string(), 1)
            };
            add(&file, weight)?;
        }
    }
    if inputs.is_empty() {
        return Err("no input files specified. See llvm-profdata merge -help".into());
    }
    Ok(inputs)
}

fn run_merge(m: MergeArgs) -> Result<(), BoxError> {
    let inputs = collect_inputs(&m)?;
    let remapper = match &m.remapping_file {
        Some(file) => {
            let text = std::fs::read(file).map_err(|e| format!("{file}: {e}"))?;
            Some(std::sync::Arc::new(Remapper::parse(&text, file)?))
        }
        None => None,
    };
    let correlation = match (&m.binary_file, &m.debug_info) {
        (Some(_), Some(_)) => return Err("Expected only one of -debug-info, -binary-file".into()),
        (None, Some(_)) => {
            return Err(
                "--debug-info correlation is not implemented by profmill (--binary-file is)".into(),
            )
        }
        (Some(binary), None) => {
            let bytes = std::fs::read(binary).map_err(|e| format!("{binary}: {e}"))?;
            let correlation = correlation_from_binary(&bytes, &mut |w| eprintln!("warning: {w}"))
                .map_err(|e| format!("{binary}: {e}"))?;
            Some(std::sync::Arc::new(correlation))
        }
        (None, None) => None,
    };
    let options = MergeOptions {
        correlation,
        remapper,
        keep_vtable_symbols: m.keep_vtable_symbols,
        temporal_limits: m.temporal_limits,
        llvm_threads: m.threads,
        raw_version: if m.any_raw_version {
            None
        } else {
            MergeOptions::default().raw_version
        },
        failure_mode: m.failure_mode,
    };
    let outcome = merge(&inputs, &options)?;
    let mut stderr = std::io::stderr().lock();
    for note in &outcome.notes {
        let _ = writeln!(
            stderr,
            "{}: {}: {}",
            note.path.display(),
            note.function,
            note.warning.message()
        );
        if let (true, Some(hint)) = (note.first_of_kind, note.warning.hint()) {
            let _ = writeln!(stderr, "{hint}");
        }
    }
    for (path, error) in &outcome.errors {
        let _ = writeln!(stderr, "warning: {}: {error}", path.display());
    }
    drop(stderr);
    if outcome.failed {
        return Err("no profile can be merged".into());
    }
    let mut profile = outcome.profile;
    let filter = NameFilter::new(&m.function, &m.no_function)?;
    if filter.is_active() {
        let before = profile.retain_names(|name| filter.keeps(name));
        eprintln!(
            "{} of {before} functions in the original profile are filtered.",
            before - profile.num_names()
        );
    }
    let output = m.output.as_deref().unwrap_or("-");
    let profile = &profile;
    let version = if m.write_prev_version { 11 } else { 12 };
    let write = |w: &mut dyn Write| -> std::io::Result<()> {
        if m.text {
            profile.write_text(w, m.sparse)
        } else {
            w.write_all(&profile.to_indexed(m.sparse, version))
        }
    };
    if output == "-" {
        let mut out = std::io::stdout().lock();
        write(&mut out)?;
        out.flush()?;
    } else {
        write_atomically(&PathBuf::from(output), write)?;
    }
    Ok(())
}

/// `show` options that change what is printed and that we do not implement: refused rather
/// than ignored, since the output would silently differ.
const SHOW_UNSUPPORTED: &[&str] = &[
    "covered",
    "value-cutoff",
    "list-below-cutoff",
    "temporal-profile-traces",
    "show-vtables",
    "detailed-summary-cutoffs",
    "memory",
    "sample",
    "memop-sizes-cutoff",
    "show-format",
];

fn run_show(args: &[String]) -> Result<(), BoxError> {
    use engine::instrprof::show::{read_listing, show, ShowOptions};
    let mut o = ShowOptions::default();
    let mut output: Option<String> = None;
    let mut file: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let Some((name, inline)) = split_option(arg) else {
            if file.replace(arg.clone()).is_some() {
                return Err("llvm-profdata show takes one profile".into());
            }
            continue;
        };
        let mut value = |what: &str| option_value(args, &mut i, inline, what);
        match name {
            "o" | "output" => output = Some(value(name)?),
            "function" => o.function = Some(value(name)?),
            "topn" => {
                let v = value(name)?;
                o.topn = v
                    .parse()
                    .map_err(|_| format!("'{v}' is not a valid --topn"))?;
            }
            "all-functions" => o.all_functions = parse_bool(name, inline)?,
            "counts" => o.counts = parse_bool(name, inline)?,
            "text" => o.text = parse_bool(name, inline)?,
            "ic-targets" => o.ic_targets = parse_bool(name, inline)?,
            "memop-sizes" => o.memop_sizes = parse_bool(name, inline)?,
            "detailed-summary" => o.detailed_summary = parse_bool(name, inline)?,
            "binary-ids" => o.binary_ids = parse_bool(name, inline)?,
            "profile-version" => o.profile_version = parse_bool(name, inline)?,
            "showcs" => o.showcs = parse_bool(name, inline)?,
            "instr" => {
                parse_bool(name, inline)?;
            }
            n if SHOW_UNSUPPORTED.contains(&n) => {
                return Err(
                    format!("llvm-profdata show: --{n} is not implemented by profmill").into(),
                )
            }
            _ => {
                return Err(
                    format!("llvm-profdata show: Unknown command line argument '{arg}'").into(),
                )
            }
        }
    }
    let file = file.ok_or("llvm-profdata show: a profile file is required")?;
    if file == output.as_deref().unwrap_or("-") {
        return Err(
            "llvm-profdata show: Input file name cannot be the same as the output file name!"
                .into(),
        );
    }
    if o.all_functions && o.function.as_deref().is_some_and(|f| !f.is_empty()) {
        eprintln!("warning: -function argument ignored: showing all functions");
    }
    let data = read_file_or_stdin(&file).map_err(|e| format!("{file}: {e}"))?;
    let listing = read_listing(&data).map_err(|e| format!("{file}: {e}"))?;
    let mut rendered = Vec::new();
    show(&listing, &o, &mut rendered)?;
    match output.as_deref() {
        None | Some("-") => std::io::stdout().lock().write_all(&rendered)?,
        Some(path) => write_atomically(&PathBuf::from(path), |w| w.write_all(&rendered))?,
    }
    Ok(())
}

/// A file's bytes, or standard input's for `-` (as `MemoryBuffer::getFileOrSTDIN`).
fn read_file_or_stdin(file: &str) -> std::io::Result<Vec<u8>> {
    if file == "-" {
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut data)?;
        return Ok(data);
    }
    std::fs::read(file)
}

fn run_overlap(args: &[String]) -> Result<(), BoxError> {
    use engine::instrprof::overlap::{overlap, OverlapOptions};
    use engine::instrprof::show::read_listing_partial;
    let mut o = OverlapOptions::default();
    let mut output: Option<String> = None;
    let mut files: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let Some((name, inline)) = split_option(arg).filter(|_| arg != "-") else {
            files.push(arg.clone());
            continue;
        };
        let mut value = |what: &str| option_value(args, &mut i, inline, what);
        match name {
            "o" | "output" => output = Some(value(name)?),
            "function" => o.function = value(name)?,
            "value-cutoff" => {
                let v = value(name)?;
                o.value_cutoff = v
                    .parse()
                    .map_err(|_| format!("'{v}' value invalid for ulong argument!"))?;
            }
            "cs" => o.cs = parse_bool(name, inline)?,
            "instr" => {
                parse_bool(name, inline)?;
            }
            // Only read for sample profiles.
            "similarity-cutoff" => {
                value(name)?;
            }
            "sample" => {
                return Err(
                    "--sample: sample profiles are not supported by profmill llvm-profdata overlap"
                        .into(),
                )
            }
            _ => {
                return Err(
                    format!("llvm-profdata overlap: Unknown command line argument '{arg}'").into(),
                )
            }
        }
    }
    let [base_name, test_name] = &files[..] else {
        return Err(
            "llvm-profdata overlap: exactly two profiles are needed (base and test)".into(),
        );
    };
    // `OverlapStats::accumulateCounts` creates both readers first; reading stops silently at
    // a record error, as LLVM's reader iteration does. Standard input (`-`) is read once:
    // LLVM reads each file again to load the base and to iterate the test records, and gets
    // nothing from the consumed standard input then.
    let mut stdin_read = false;
    let mut read = |file: &str| -> Result<_, BoxError> {
        let data = if file == "-" && std::mem::replace(&mut stdin_read, true) {
            Vec::new()
        } else {
            read_file_or_stdin(file)
                .map_err(|e| format!("error in getting profile count sums: {file}: {e}"))?
        };
        let (listing, _stopped_at) = read_listing_partial(&data)
            .map_err(|e| format!("error in getting profile count sums: {file}: {e}"))?;
        Ok(listing)
    };
    let base = read(base_name)?;
    let test = read(test_name)?;
    o.base_read_once = base_name == "-";
    o.test_read_once = test_name == "-";
    let mut rendered = Vec::new();
    let complete = overlap(&base, &test, base_name, test_name, &o, &mut rendered)?;
    // When a profile sums to zero, llvm-profdata prints a note and calls exit(0), which drops
    // its buffered output stream: the note only shows on a terminal (unbuffered there).
    let to_terminal = output.as_deref().is_none_or(|o| o == "-")
        && std::io::IsTerminal::is_terminal(&std::io::stdout());
    if !complete && !to_terminal {
        rendered.clear();
    }
    match output.as_deref() {
        None | Some("-") => std::io::stdout().lock().write_all(&rendered)?,
        Some(path) => write_atomically(&PathBuf::from(path), |w| w.write_all(&rendered))?,
    }
    Ok(())
}
