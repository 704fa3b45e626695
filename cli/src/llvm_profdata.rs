//! `profmill llvm-profdata merge …`: a drop-in for `llvm-profdata merge` on instrumentation
//! profiles, with LLVM's option spelling (`-o x`, `-o=x`, `--output=x`, single or double
//! dash) read by [`crate::llvm_cl`] from the tables here. Options that change nothing we
//! write are accepted with a warning; options that would change the output are refused.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use engine::instrprof::correlate::correlation_from_binary;
use engine::instrprof::name_filter::NameFilter;
use engine::instrprof::remap::Remapper;
use engine::instrprof::temporal::TemporalLimits;
use engine::instrprof::{merge, FailureMode, MergeOptions, WeightedInput};
use engine::io::inputs::{collect_weighted_inputs, SpecialFiles, Stdin};
use engine::io::output::write_atomically;

use crate::llvm_cl::{self, Opt, Tool};

#[derive(clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    /// The llvm-profdata command line: `merge [options] <files…>`.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

type BoxError = Box<dyn std::error::Error>;

/// Why options of sample profiles are ignored on instrumentation profiles.
const SAMPLE_ONLY: &str = "is not implemented (it only applies to sample profiles)";
/// Why the remaining ignored options are.
const NOT_IMPLEMENTED: &str = "is not implemented";

const FAILURE_MODES: &[(&str, &str)] = &[
    ("warn", "Do not fail and just print warnings."),
    ("any", "Fail if any profile is invalid."),
    ("all", "Fail only if all profiles are invalid."),
];

/// `llvm-profdata merge` on instrumentation profiles (llvm-profdata-19's options).
const MERGE_OPTIONS: &[Opt] = &[
    Opt::value(&["output", "o"], "<output>", "Output file"),
    Opt::value(&["weighted-input"], "<string>", "<weight>,<filename>"),
    Opt::value(
        &["input-files", "f"],
        "<string>",
        "Path to file containing newline-separated [<weight>,]<filename> entries",
    ),
    Opt::flag(&["instr"], "Instrumentation profile (default)"),
    Opt::flag(&["text"], "Text encoding"),
    Opt::flag(&["binary"], "Binary encoding"),
    // llvm-profdata writes an indexed profile for `-extbinary` of instrumentation profiles.
    Opt::flag(&["extbinary"], "Extensible binary encoding"),
    Opt::flag(&["gcc"], "GCC encoding (only meaningful for -sample)").refused(),
    Opt::flag(&["sample"], "Sample profile"),
    Opt::boolean(&["sparse"], "Generate a sparse profile (only meaningful for -instr)"),
    Opt::boolean(&["write-prev-version"], "Write the previous version of the indexed format"),
    Opt::boolean(&["dump-input-file-list"], "Dump the list of input files and their weights, then exit"),
    Opt::value(&["function"], "<string>", "Only keep functions matching the filter"),
    Opt::value(&["no-function"], "<string>", "Exclude functions matching the filter"),
    Opt::value(&["remapping-file", "r"], "<file>", "Symbol remapping file"),
    Opt::boolean(&["keep-vtable-symbols"], "If true, keep the vtable symbols in indexed profiles"),
    Opt::value(
        &["binary-file"],
        "<string>",
        "Use the provided unstripped binary to correlate the raw profile",
    ),
    Opt::value(&["debug-info"], "<string>", "Use the provided debug info to correlate the raw profile"),
    Opt::value(
        &["temporal-profile-trace-reservoir-size"],
        "<ulong>",
        "The maximum number of stored temporal profile traces (default: 100)",
    ),
    Opt::value(
        &["temporal-profile-max-trace-length"],
        "<ulong>",
        "The maximum length of a single temporal profile trace (default: 10000)",
    ),
    Opt::value(&["num-threads", "j"], "<uint>", "Number of merge threads to use (default: autodetect)"),
    Opt::value(&["failure-mode"], "<value>", "Failure mode:").choices(FAILURE_MODES),
    Opt::boolean(
        &["profmill-any-raw-version"],
        "profmill's own: read raw profile versions 5-9 too (llvm-profdata-19 reads only 10)",
    ),
    Opt::value(
        &["supplement-instr-with-sample"],
        "<string>",
        "Supplement an instr profile with sample profile",
    )
    .refused(),
    Opt::boolean(&["debuginfod"], "Use debuginfod to correlate profiles").ignored(NOT_IMPLEMENTED),
    Opt::value(&["correlate"], "<value>", "Use debug info or binary file to correlate profiles")
        .ignored(NOT_IMPLEMENTED),
    Opt::value(&["memprof-version"], "<value>", "Specify the version of the memprof format to use")
        .ignored(NOT_IMPLEMENTED),
    Opt::value(
        &["zero-counter-threshold"],
        "<number>",
        "For the function which is cold in instr profile but hot in sample profile, ...",
    )
    .ignored(NOT_IMPLEMENTED),
    Opt::value(
        &["suppl-min-size-threshold"],
        "<uint>",
        "If the size of a function is smaller than the threshold, assume it can be inlined ...",
    )
    .ignored(NOT_IMPLEMENTED),
    Opt::value(
        &["instr-prof-cold-threshold"],
        "<uint>",
        "User specified cold threshold for instr profile which will override the cold threshold got from profile summary.",
    )
    .ignored(NOT_IMPLEMENTED),
    Opt::value(
        &["max-debug-info-correlation-warnings"],
        "<uint>",
        "The maximum number of warnings to emit when correlating profile from debug info (0 = no limit)",
    )
    .ignored(NOT_IMPLEMENTED),
    Opt::value(&["profiled-binary"], "<string>", "Path to binary from which the profile was collected.")
        .ignored(NOT_IMPLEMENTED),
    Opt::value(&["output-size-limit"], "<ulong>", "Trim cold functions until profile size is below specified limit")
        .ignored(SAMPLE_ONLY),
    Opt::value(
        &["prof-sym-list"],
        "<string>",
        "Path to file containing the list of function symbols used to populate profile symbol list",
    )
    .ignored(SAMPLE_ONLY),
    Opt::boolean(&["compress-all-sections"], "Compress all sections when writing the profile (only meaningful for -extbinary)")
        .ignored(SAMPLE_ONLY),
    Opt::boolean(&["gen-partial-profile"], "Generate a partial profile (only meaningful for -extbinary)")
        .ignored(SAMPLE_ONLY),
    Opt::boolean(&["split-layout"], "Split the profile to two sections (LLVM 20+; -extbinary)")
        .ignored(SAMPLE_ONLY),
    Opt::boolean(&["gen-cs-nested-profile"], "Generate nested function profiles for CSSPGO")
        .ignored(SAMPLE_ONLY),
    Opt::boolean(&["sample-profile-use-md5"], "Use MD5 names in sample profiles").ignored(SAMPLE_ONLY),
    Opt::boolean(&["use-md5"], "Choose to use MD5 to represent string in name table (only meaningful for -extbinary)")
        .ignored(SAMPLE_ONLY),
    Opt::boolean(&["drop-profile-symbol-list"], "Drop the profile symbol list when merging AutoFDO profiles (only meaningful for -sample)")
        .ignored(SAMPLE_ONLY),
    Opt::value(
        &["convert-sample-profile-layout"],
        "<value>",
        "Convert the generated profile to a profile with a new layout",
    )
    .choices(&[
        ("nest", "Nested profile, the input should be CS flat profile"),
        ("flat", "Profile with nested inlinee flatten out"),
    ])
    .ignored(SAMPLE_ONLY),
];

const MERGE: Tool = Tool {
    name: "llvm-profdata merge",
    overview: "LLVM profile data (profmill drop-in)\n\nSUBCOMMAND 'merge': Takes several profiles and merge them together.",
    usage: "<filename...>",
    options: &[MERGE_OPTIONS],
    comma_positionals: false,
};

/// `show` options that change what is printed and that we do not implement: refused rather
/// than ignored, since the output would silently differ.
const SHOW_OPTIONS: &[Opt] = &[
    Opt::value(&["output", "o"], "<output>", "Output file"),
    Opt::value(&["function"], "<string>", "Details for matching functions"),
    Opt::value(&["topn"], "<uint>", "Show the list of functions with the largest internal counts"),
    Opt::boolean(&["all-functions"], "Details for each and every function"),
    Opt::boolean(&["counts"], "Show counter values for shown functions"),
    Opt::boolean(&["text"], "Show instr profile data in text dump format"),
    Opt::boolean(&["ic-targets"], "Show indirect call site target values for shown functions"),
    Opt::boolean(&["memop-sizes"], "Show the profiled sizes of the memory intrinsic calls for shown functions"),
    Opt::boolean(&["detailed-summary"], "Show detailed profile summary"),
    Opt::boolean(&["binary-ids"], "Show binary ids in the profile."),
    Opt::boolean(&["profile-version"], "Show profile version."),
    Opt::boolean(&["showcs"], "Show context sensitive counts"),
    // Options of sample or memory profiles that llvm-profdata reads and ignores for
    // instrumentation profiles.
    Opt::boolean(&["hot-func-list"], "Show profile summary of a list of hot functions"),
    Opt::boolean(&["show-prof-sym-list"], "Show profile symbol list if it exists in the profile. "),
    Opt::boolean(&["show-sec-info-only"], "Show the information of each section in the sample profile. The flag is only usable when the sample profile is in extbinary format"),
    Opt::value(&["profiled-binary"], "<string>", "Path to binary from which the profile was collected."),
    Opt::value(&["max-debug-info-correlation-warnings"], "<uint>", "The maximum number of warnings to emit when correlating profile from debug info (0 = no limit)"),
    Opt::flag(&["instr"], "Instrumentation profile (default)"),
    Opt::flag(&["sample"], "Sample profile"),
    Opt::flag(&["memory"], "MemProf memory access profile").refused(),
    Opt::boolean(&["covered"], "Show only the functions that have been executed.").refused(),
    Opt::value(&["value-cutoff"], "<uint>", "Set the count value cutoff. Functions with the maximum count less than this value will not be printed out. (Default is 0)")
        .default("0")
        .refused(),
    Opt::boolean(&["list-below-cutoff"], "Only output names of functions whose max count values are below the cutoff value").refused(),
    Opt::boolean(&["temporal-profile-traces"], "Show temporal profile traces in the profile.").refused(),
    Opt::boolean(&["show-vtables"], "Show vtable names for shown functions").refused(),
    Opt::list(&["detailed-summary-cutoffs"], "<800000,901000,999999>", "Cutoff percentages (times 10000) for generating detailed summary").refused(),
    Opt::value(&["memop-sizes-cutoff"], "<uint>", "Cutoff of memop sizes").refused(),
    Opt::value(&["show-format"], "<value>", "Emit output in the selected format if supported by the provided profile type.")
        .choices(&[("text", "emit normal text output (default)"), ("json", "emit JSON"), ("yaml", "emit YAML")])
        .default("text")
        .refused(),
];

const SHOW: Tool = Tool {
    name: "llvm-profdata show",
    overview: "LLVM profile data (profmill drop-in)\n\nSUBCOMMAND 'show': Takes a profile data file and displays the profiles.",
    usage: "<profdata-file>",
    options: &[SHOW_OPTIONS],
    comma_positionals: false,
};

const OVERLAP_OPTIONS: &[Opt] = &[
    Opt::value(&["output", "o"], "<output>", "Output file"),
    Opt::value(&["function"], "<string>", "Function level overlap information for matching functions."),
    Opt::value(&["value-cutoff"], "<ulong>", "Function level overlap information for every function (with calling context for csspgo) in test profile with max count value greater than the parameter value"),
    Opt::boolean(&["cs"], "For context sensitive PGO counts. Does not work with CSSPGO."),
    Opt::flag(&["instr"], "Instrumentation profile (default)"),
    Opt::flag(&["sample"], "Sample profile"),
    // Only read for sample profiles, silently, as llvm-profdata does.
    Opt::value(&["similarity-cutoff"], "<ulong>", "For sample profiles, list function names (with calling context for csspgo) for overlapped functions with similarities below the cutoff (percentage times 10000)."),
];

const OVERLAP: Tool = Tool {
    name: "llvm-profdata overlap",
    overview: "LLVM profile data (profmill drop-in)\n\nSUBCOMMAND 'overlap': Computes and displays the overlap between two profiles.",
    usage: "<base profile file> <test profile file>",
    options: &[OVERLAP_OPTIONS],
    comma_positionals: false,
};

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
    dump_input_file_list: bool,
}

pub fn run(args: Args) -> Result<(), BoxError> {
    run_args(args.args)
}

/// llvm-profdata on `args` (without the program name).
pub fn run_args(args: Vec<OsString>) -> Result<(), BoxError> {
    let args = crate::response_files::expand(args)?;
    if let Some(result) = crate::llvm_profdata_sample::dispatch(&args) {
        return result;
    }
    let args: Vec<String> = args
        .into_iter()
        .map(|a| {
            a.into_string()
                .map_err(|a| format!("argument {a:?} is not UTF-8"))
        })
        .collect::<Result<_, _>>()?;
    match args.first().map(String::as_str) {
        Some("merge") => match parse_merge(&args[1..])? {
            Some(m) => run_merge(m),
            None => Ok(()),
        },
        Some("show") => run_show(&args[1..]),
        Some("overlap") => run_overlap(&args[1..]),
        Some("-h" | "-help" | "--help" | "--help-hidden" | "-help-hidden") => {
            print!("{TOP_HELP}");
            Ok(())
        }
        Some("-version" | "--version") => {
            print!("{}", llvm_cl::version("llvm-profdata"));
            Ok(())
        }
        Some(other) => Err(format!(
            "llvm-profdata subcommand '{other}' is not implemented by profmill (only 'merge', 'show' and 'overlap' are)"
        )
        .into()),
        None => Err("usage: profmill llvm-profdata merge|show|overlap [options] <files…>".into()),
    }
}

/// `llvm-profdata --help`.
const TOP_HELP: &str = "OVERVIEW: LLVM profile data (profmill drop-in)

USAGE: llvm-profdata <merge|show|overlap> [args...]

SUBCOMMANDS:

  merge   - Takes several profiles and merge them together.
  overlap - Computes and displays the overlap between two profiles.
  show    - Takes a profile data file and displays the profiles.

  Type \"llvm-profdata <subcommand> --help\" to get more help on a specific subcommand
  (with --sample for the options of sample profiles).
";

fn parse_ulong(name: &str, v: &str) -> Result<u64, BoxError> {
    v.parse().map_err(|_| {
        format!("for the --{name} option: '{v}' value invalid for ulong argument!").into()
    })
}

fn parse_merge(args: &[String]) -> Result<Option<MergeArgs>, BoxError> {
    let Some(args) = MERGE.parse_and_print(&crate::llvm_cl::os_args(args))? else {
        return Ok(None);
    };
    let mut m = MergeArgs {
        positional: args.positional_strings(),
        ..MergeArgs::default()
    };
    for opt in &args.options {
        let v = opt.text();
        match opt.name {
            "output" => m.output = Some(v.to_string()),
            "weighted-input" => m.weighted.push(v.to_string()),
            "input-files" => m.input_files = Some(v.to_string()),
            "text" => m.text = true,
            "binary" | "extbinary" => m.text = false,
            "instr" | "sample" => {}
            "dump-input-file-list" => m.dump_input_file_list = opt.on(),
            "sparse" => m.sparse = opt.on(),
            "write-prev-version" => m.write_prev_version = opt.on(),
            "function" => m.function = v.to_string(),
            "no-function" => m.no_function = v.to_string(),
            "remapping-file" => m.remapping_file = Some(v.to_string()),
            "keep-vtable-symbols" => m.keep_vtable_symbols = opt.on(),
            "binary-file" => m.binary_file = Some(v.to_string()),
            "debug-info" => m.debug_info = Some(v.to_string()),
            "temporal-profile-trace-reservoir-size" => {
                m.temporal_limits.reservoir_size = parse_ulong(opt.name, v)?
            }
            "temporal-profile-max-trace-length" => {
                m.temporal_limits.max_trace_length = parse_ulong(opt.name, v)?
            }
            "num-threads" => {
                m.threads = v
                    .parse()
                    .map_err(|_| format!("'{v}' is not a valid thread count"))?;
            }
            "failure-mode" => {
                m.failure_mode = match v {
                    "any" => FailureMode::Any,
                    "all" => FailureMode::All,
                    _ => FailureMode::Warn,
                }
            }
            // profmill's own: read raw versions 5–9 too (llvm-profdata-19 reads only 10).
            "profmill-any-raw-version" => m.any_raw_version = opt.on(),
            other => unreachable!("llvm-profdata merge option {other} not applied"),
        }
    }
    Ok(Some(m))
}

fn collect_inputs(m: &MergeArgs) -> Result<Vec<WeightedInput>, BoxError> {
    Ok(collect_weighted_inputs(
        &m.positional,
        &m.weighted,
        m.input_files.as_deref(),
        (Stdin::Read, SpecialFiles::Skip),
        "llvm-profdata merge -help",
    )?)
}

fn run_merge(m: MergeArgs) -> Result<(), BoxError> {
    let inputs = collect_inputs(&m)?;
    if m.dump_input_file_list {
        let mut out = crate::stdout();
        for i in &inputs {
            writeln!(out, "{},{}", i.weight, i.path.display())?;
        }
        return Ok(());
    }
    if inputs
        .iter()
        .any(|i| i.path.as_os_str() == engine::io::inputs::STDIN)
    {
        // llvm-profdata consumes standard input probing it for the memprof format, then
        // merges `-` as an empty input (which the engine does).
        std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink())?;
    }
    let remapper = match &m.remapping_file {
        Some(file) => {
            let text = engine::io::input::read(file).map_err(|e| format!("{file}: {e}"))?;
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
            let bytes = engine::io::input::read(binary).map_err(|e| format!("{binary}: {e}"))?;
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
        let mut out = crate::stdout();
        write(&mut out)?;
        out.flush()?;
    } else {
        write_atomically(&PathBuf::from(output), |w| write(w))?;
    }
    Ok(())
}

fn run_show(args: &[String]) -> Result<(), BoxError> {
    use engine::instrprof::show::{read_listing, show, ShowOptions};
    let Some(args) = SHOW.parse_and_print(&crate::llvm_cl::os_args(args))? else {
        return Ok(());
    };
    let mut o = ShowOptions::default();
    let mut output: Option<String> = None;
    let file = match args.positional_strings().as_slice() {
        [] => None,
        [file] => Some(file.clone()),
        _ => return Err("llvm-profdata show takes one profile".into()),
    };
    for opt in &args.options {
        let v = opt.text();
        match opt.name {
            "output" => output = Some(v.to_string()),
            "function" => o.function = Some(v.to_string()),
            "topn" => {
                o.topn = v
                    .parse()
                    .map_err(|_| format!("'{v}' is not a valid --topn"))?;
            }
            "all-functions" => o.all_functions = opt.on(),
            "counts" => o.counts = opt.on(),
            "text" => o.text = opt.on(),
            "ic-targets" => o.ic_targets = opt.on(),
            "memop-sizes" => o.memop_sizes = opt.on(),
            "detailed-summary" => o.detailed_summary = opt.on(),
            "binary-ids" => o.binary_ids = opt.on(),
            "profile-version" => o.profile_version = opt.on(),
            "showcs" => o.showcs = opt.on(),
            "instr"
            | "sample"
            | "hot-func-list"
            | "show-prof-sym-list"
            | "show-sec-info-only"
            | "profiled-binary"
            | "max-debug-info-correlation-warnings" => {}
            other => unreachable!("llvm-profdata show option {other} not applied"),
        }
    }
    let file = file.ok_or("llvm-profdata show: a profile file is required")?;
    check_show(
        &file,
        output.as_deref(),
        o.all_functions,
        o.function.as_deref(),
    )?;
    let data = engine::io::input::read_or_stdin(&file).map_err(|e| format!("{file}: {e}"))?;
    let listing = read_listing(&data).map_err(|e| format!("{file}: {e}"))?;
    let mut rendered = Vec::new();
    show(&listing, &o, &mut rendered)?;
    match output.as_deref() {
        None | Some("-") => crate::stdout().write_all(&rendered)?,
        Some(path) => write_atomically(&PathBuf::from(path), |w| w.write_all(&rendered))?,
    }
    Ok(())
}

/// What `show_main` checks before it reads the profile, for both kinds: the input is not the
/// output, and `--function` with `--all-functions` is ignored with a warning.
pub(crate) fn check_show(
    file: &str,
    output: Option<&str>,
    all_functions: bool,
    function: Option<&str>,
) -> Result<(), BoxError> {
    if file == output.unwrap_or("-") {
        return Err(
            "llvm-profdata show: Input file name cannot be the same as the output file name!"
                .into(),
        );
    }
    if all_functions && function.is_some_and(|f| !f.is_empty()) {
        eprintln!("warning: -function argument ignored: showing all functions");
    }
    Ok(())
}

fn run_overlap(args: &[String]) -> Result<(), BoxError> {
    use engine::instrprof::overlap::{overlap, OverlapOptions};
    use engine::instrprof::show::read_listing_partial;
    let Some(args) = OVERLAP.parse_and_print(&crate::llvm_cl::os_args(args))? else {
        return Ok(());
    };
    let mut o = OverlapOptions::default();
    let mut output: Option<String> = None;
    let files = args.positional_strings();
    for opt in &args.options {
        let v = opt.text();
        match opt.name {
            "output" => output = Some(v.to_string()),
            "function" => o.function = v.to_string(),
            "value-cutoff" => {
                o.value_cutoff = v
                    .parse()
                    .map_err(|_| format!("'{v}' value invalid for ulong argument!"))?;
            }
            "cs" => o.cs = opt.on(),
            // Only read for sample profiles.
            "instr" | "sample" | "similarity-cutoff" => {}
            other => unreachable!("llvm-profdata overlap option {other} not applied"),
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
            engine::io::input::read_or_stdin(file)
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
        None | Some("-") => crate::stdout().write_all(&rendered)?,
        Some(path) => write_atomically(&PathBuf::from(path), |w| w.write_all(&rendered))?,
    }
    Ok(())
}
