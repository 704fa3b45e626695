//! `profmill llvm-profdata merge|show|overlap --sample …`: the sample-profile side of the
//! llvm-profdata drop-in, with llvm-profdata-19's option spelling and output.
//!
//! Options are read by [`crate::llvm_cl`] as LLVM's `cl` parser reads them (`-o x`, `-o=x`,
//! `--output=x`, single or double dash), from the tables here. Options llvm-profdata-19 ignores for sample profiles (`-j`,
//! `--sparse`, instrumentation-only settings) are accepted with a warning; options that would
//! change the output and that profmill does not implement are refused, never ignored;
//! unknown options are refused as LLVM refuses them.
//!
//! Differences from llvm-profdata-19, all documented here:
//! * ExtBinary written to standard output works (LLVM aborts with "Illegal seek" on a pipe).
//! * `show --show-prof-sym-list` on a profile without a symbol list prints the empty list
//!   (LLVM 19 dereferences a null list and crashes).
//! * ExtBinary function metadata (probe checksums, attributes) comes in LLVM's hash-map order
//!   for context-less profiles; for context-sensitive ones in context order (same profile
//!   when read back, other bytes).
//! * Orders LLVM takes from its `std::unordered_map` (ties of equal totals in
//!   `--hot-func-list`, of equal base weights in `overlap`'s function table) are reproduced
//!   for context-less profiles (see `engine::sampleprof::overlap`); for context-sensitive
//!   profiles ties may come out in another order.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use engine::io::output::write_atomically;
use engine::sampleprof::{self as sp, show, transform, Input, MergeOptions, OutputFormat};

use crate::llvm_cl::os_args;
use crate::llvm_cl::{Opt, Tool};
use engine::io::inputs::{collect_weighted_inputs, SpecialFiles, Stdin};
use formats::sampleprof::binary::ExtBinaryOptions;
use formats::sampleprof::Profile;

type BoxError = Box<dyn std::error::Error>;

/// Runs the sample-profile variant when the command line is `merge|show|overlap` with
/// `--sample`; `None` leaves it to the instrumentation-profile drop-in.
pub fn dispatch(args: &[OsString]) -> Option<Result<(), BoxError>> {
    let sub = args.first()?.to_str()?;
    if !matches!(sub, "merge" | "show" | "overlap") {
        return None;
    }
    let rest: Vec<String> = args[1..]
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if !selects_sample(&rest) {
        return None;
    }
    Some(match sub {
        "merge" => parse_merge(&rest).and_then(|m| m.map_or(Ok(()), run_merge)),
        "show" => parse_show(&rest).and_then(|s| s.map_or(Ok(()), run_show)),
        _ => run_overlap(&rest),
    })
}

/// Whether the last profile-kind switch before `--` is `--sample` (LLVM's `cl::opt` keeps the
/// last one given). `--sample=…` is left to the instrumentation side, which refuses the value
/// as LLVM does.
fn selects_sample(args: &[String]) -> bool {
    let mut sample = false;
    for a in args.iter().take_while(|a| *a != "--") {
        match a.trim_start_matches('-') {
            "sample" if a.starts_with('-') => sample = true,
            "instr" | "memory" if a.starts_with('-') => sample = false,
            _ => {}
        }
    }
    sample
}

/// Why options of instrumentation profiles are ignored here.
const INSTR_ONLY: &str = "applies to instrumentation profiles only";

/// Options all three subcommands share on sample profiles.
const COMMON: &[Opt] = &[
    Opt::flag(&["sample"], "Sample profile"),
    Opt::flag(
        &["instr"],
        "Instrumentation profile (the last of --instr/--sample counts)",
    ),
    Opt::value(&["output", "o"], "<output>", "Output file"),
];

fn parse_number<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, BoxError> {
    v.parse()
        .map_err(|_| format!("'{v}' value invalid for option --{name}").into())
}

fn not_implemented(sub: &str, name: &str) -> BoxError {
    format!("llvm-profdata {sub} --sample: --{name} is not implemented by profmill").into()
}

// ---------------------------------------------------------------------------------------------
// merge

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum WriteFormat {
    #[default]
    ExtBinary,
    Binary,
    Text,
    Gcc,
}

#[derive(Debug, Default)]
struct MergeArgs {
    output: Option<String>,
    positional: Vec<String>,
    weighted: Vec<String>,
    input_files: Option<String>,
    remapping_file: Option<String>,
    prof_sym_list: Option<String>,
    format: WriteFormat,
    use_md5: bool,
    compress_all: bool,
    gen_partial: bool,
    split_layout: bool,
    drop_symbol_list: bool,
    skip_unreadable: bool,
    flatten: bool,
    dump_input_file_list: bool,
}

/// `llvm-profdata merge --sample` (llvm-profdata-19's options, and `--split-layout` of 20+).
const MERGE_OPTIONS: &[Opt] = &[
    Opt::value(&["weighted-input"], "<string>", "<weight>,<filename>"),
    Opt::value(
        &["input-files", "f"],
        "<string>",
        "Path to file containing newline-separated [<weight>,]<filename> entries",
    ),
    Opt::value(&["remapping-file", "r"], "<file>", "Symbol remapping file"),
    Opt::value(
        &["prof-sym-list"],
        "<string>",
        "Path to file containing the list of function symbols used to populate profile symbol list",
    ),
    Opt::flag(&["text"], "Text encoding"),
    Opt::flag(&["binary"], "Binary encoding"),
    Opt::flag(&["extbinary"], "Extensible binary encoding (default)"),
    Opt::flag(&["gcc"], "GCC encoding (only meaningful for -sample)"),
    Opt::boolean(&["use-md5"], "Choose to use MD5 to represent string in name table (only meaningful for -extbinary)"),
    Opt::boolean(&["compress-all-sections"], "Compress all sections when writing the profile (only meaningful for -extbinary)"),
    Opt::boolean(&["gen-partial-profile"], "Generate a partial profile (only meaningful for -extbinary)"),
    // Not an option of llvm-profdata-19 (LLVM 20 added it); accepted as LLVM 20+ does.
    Opt::boolean(&["split-layout"], "Split the profile to two sections with one containing sample profiles with inlined functions and the other without (only meaningful for -extbinary)"),
    Opt::boolean(&["drop-profile-symbol-list"], "Drop the profile symbol list when merging AutoFDO profiles (only meaningful for -sample)"),
    Opt::boolean(&["dump-input-file-list"], "Dump the list of input files and their weights, then exit"),
    Opt::value(&["failure-mode"], "<value>", "Failure mode:").choices(&[
        ("warn", "Do not fail and just print warnings."),
        ("any", "Fail if any profile is invalid."),
        ("all", "Fail only if all profiles are invalid."),
    ]),
    Opt::value(
        &["convert-sample-profile-layout"],
        "<value>",
        "Convert the generated profile to a profile with a new layout (profmill: flat only)",
    )
    .choices(&[
        ("nest", "Nested profile, the input should be CS flat profile"),
        ("flat", "Profile with nested inlinee flatten out"),
    ]),
    Opt::value(&["supplement-instr-with-sample"], "<string>", "Supplement an instr profile with sample profile (-instr only)"),
    Opt::value(&["output-size-limit"], "<ulong>", "Trim cold functions until profile size is below specified limit in bytes")
        .default("0")
        .refused(),
    Opt::value(&["sample-frame-depth-for-cold-context"], "<uint>", "Keep the last K frames while merging cold profile. 1 means the context-less base profile")
        .default("1")
        .ignored("only applies with --sample-merge-cold-context"),
    Opt::boolean(&["sample-merge-cold-context"], "Merge context sample profiles whose count is below cold threshold").refused(),
    Opt::boolean(&["sample-trim-cold-context"], "Trim context sample profiles whose count is below cold threshold").refused(),
    Opt::value(&["function"], "<string>", "Only keep functions matching the filter").refused(),
    Opt::value(&["no-function"], "<string>", "Exclude functions matching the filter").refused(),
    Opt::value(&["fs-discriminator-pass"], "<value>", "Zero out the discriminator bits for the FS discrimiator pass beyond this value").refused(),
    Opt::boolean(&["generate-merged-base-profiles"], "When generating nested context-sensitive profiles, always generate extra base profile for function with all its context profiles merged into it.").refused(),
    Opt::boolean(&["profile-isfs"], "Profile uses flow sensitive discriminators").refused(),
    Opt::value(&["num-threads", "j"], "<uint>", "Number of merge threads to use (default: autodetect)").ignored(INSTR_ONLY),
    Opt::value(&["debug-info"], "<string>", "Use the provided debug info to correlate the raw profile").ignored(INSTR_ONLY),
    Opt::value(&["binary-file"], "<string>", "Use the provided unstripped binary to correlate the raw profile").ignored(INSTR_ONLY),
    Opt::value(&["debuginfod"], "<string>", "Use debuginfod to correlate profiles").ignored(INSTR_ONLY),
    Opt::value(&["correlate"], "<value>", "Use debug info or binary file to correlate profiles").ignored(INSTR_ONLY),
    Opt::value(&["profiled-binary"], "<string>", "Path to binary from which the profile was collected.").ignored(INSTR_ONLY),
    Opt::value(&["temporal-profile-trace-reservoir-size"], "<ulong>", "The maximum number of stored temporal profile traces (default: 100)").ignored(INSTR_ONLY),
    Opt::value(&["temporal-profile-max-trace-length"], "<ulong>", "The maximum length of a single temporal profile trace (default: 10000)").ignored(INSTR_ONLY),
    Opt::value(&["max-debug-info-correlation-warnings"], "<uint>", "The maximum number of warnings to emit when correlating profile from debug info (0 = no limit)").ignored(INSTR_ONLY),
    Opt::value(&["memprof-version"], "<value>", "Specify the version of the memprof format to use").ignored(INSTR_ONLY),
    Opt::value(&["zero-counter-threshold"], "<number>", "For the function which is cold in instr profile but hot in sample profile, if the ratio of the number of zero counters divided by the total number of counters is above the threshold, the profile of the function will be regarded as being harmful for performance and will be dropped.").ignored(INSTR_ONLY),
    Opt::value(&["suppl-min-size-threshold"], "<uint>", "If the size of a function is smaller than the threshold, assume it can be inlined by PGO early inliner and it won't be adjusted based on sample profile.").ignored(INSTR_ONLY),
    Opt::value(&["instr-prof-cold-threshold"], "<uint>", "User specified cold threshold for instr profile which will override the cold threshold got from profile summary.").ignored(INSTR_ONLY),
    Opt::boolean(&["sparse"], "Generate a sparse profile (only meaningful for -instr)").ignored(INSTR_ONLY),
    Opt::boolean(&["keep-vtable-symbols"], "If true, keep the vtable symbols in indexed profiles").ignored(INSTR_ONLY),
    Opt::boolean(&["memprof-full-schema"], "Use the full schema for serialization").ignored(INSTR_ONLY),
];

const MERGE: Tool = Tool {
    name: "llvm-profdata merge",
    overview: "LLVM profile data (profmill drop-in)\n\nSUBCOMMAND 'merge': Takes several profiles and merge them together (--sample: sample profiles).",
    usage: "--sample <filename...>",
    options: &[COMMON, MERGE_OPTIONS],
    comma_positionals: false,
};

fn parse_merge(args: &[String]) -> Result<Option<MergeArgs>, BoxError> {
    let Some(args) = MERGE.parse_and_print(&os_args(args))? else {
        return Ok(None);
    };
    let mut m = MergeArgs {
        positional: args.positional_strings(),
        ..MergeArgs::default()
    };
    for opt in &args.options {
        let (name, v) = (opt.name, opt.text());
        match name {
            "sample" | "instr" => {}
            "output" => m.output = Some(v.to_string()),
            "weighted-input" => m.weighted.push(v.to_string()),
            "input-files" => m.input_files = Some(v.to_string()),
            "remapping-file" => m.remapping_file = Some(v.to_string()),
            "prof-sym-list" => m.prof_sym_list = Some(v.to_string()),
            "text" => m.format = WriteFormat::Text,
            "binary" => m.format = WriteFormat::Binary,
            "extbinary" => m.format = WriteFormat::ExtBinary,
            "gcc" => m.format = WriteFormat::Gcc,
            "use-md5" => m.use_md5 = opt.on(),
            "compress-all-sections" => m.compress_all = opt.on(),
            "gen-partial-profile" => m.gen_partial = opt.on(),
            "split-layout" => m.split_layout = opt.on(),
            "drop-profile-symbol-list" => m.drop_symbol_list = opt.on(),
            "dump-input-file-list" => m.dump_input_file_list = opt.on(),
            "failure-mode" => m.skip_unreadable = v != "any",
            "convert-sample-profile-layout" => match v {
                "flat" => m.flatten = true,
                _ => {
                    return Err(not_implemented(
                        "merge",
                        "convert-sample-profile-layout=nest",
                    ))
                }
            },
            "supplement-instr-with-sample" => {
                return Err("-supplement-instr-with-sample can only work with -instr. ".into());
            }
            other => unreachable!("llvm-profdata merge --sample option {other} not applied"),
        }
    }
    Ok(Some(m))
}

fn collect_inputs(m: &MergeArgs) -> Result<Vec<Input>, BoxError> {
    let inputs = collect_weighted_inputs(
        &m.positional,
        &m.weighted,
        m.input_files.as_deref(),
        (Stdin::Read, SpecialFiles::Skip),
        "llvm-profdata merge -help",
    )?;
    Ok(inputs
        .into_iter()
        .map(|i| Input {
            path: i.path,
            weight: i.weight,
        })
        .collect())
}

fn read_remapper(path: &str) -> Result<transform::Remapper, BoxError> {
    let text = engine::io::input::read(path).map_err(|e| format!("{path}: {e}"))?;
    transform::Remapper::parse(&text).map_err(|bad| {
        format!(
            "{path}:{}: unexpected line in remapping file\nnote: expected 'old_symbol new_symbol'",
            bad.0
        )
        .into()
    })
}

/// `populateProfileSymbolList`: one symbol per non-empty line, trimmed.
fn read_symbol_list(path: &str, profile: &mut Profile) -> Result<(), BoxError> {
    let text = engine::io::input::read(path).map_err(|e| format!("{path}: {e}"))?;
    for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let ws = |b: &u8| b" \t\n\x0b\x0c\r".contains(b);
        let start = line.iter().position(|b| !ws(b)).unwrap_or(line.len());
        let end = line.iter().rposition(|b| !ws(b)).map_or(start, |e| e + 1);
        profile.symbol_list.insert(line[start..end].into());
    }
    Ok(())
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
    if let Some(pieces) = fast_single_input(&m, &inputs) {
        warn_non_ext_options(&m, false);
        let output = m.output.as_deref().unwrap_or("-");
        return write_output(output, &pieces.concat());
    }
    let options = MergeOptions {
        skip_unreadable: m.skip_unreadable,
        remapper: m.remapping_file.as_deref().map(read_remapper).transpose()?,
        drop_symbol_list: m.drop_symbol_list,
    };
    let merged = sp::merge(&inputs, &options)?;
    for e in &merged.skipped {
        eprintln!("warning: {e}");
    }
    for w in &merged.warnings {
        eprintln!("{w}");
    }
    let map_order = merged.map_order;
    let mut profile = merged.profile;
    if m.flatten {
        transform::flatten(&mut profile);
    }
    let output = m.output.as_deref().unwrap_or("-");
    let format = match m.format {
        WriteFormat::Gcc => {
            return Err(format!(
                "{output}: Profile encoding format unsupported for writing operations"
            )
            .into())
        }
        WriteFormat::Text => OutputFormat::Text,
        WriteFormat::Binary => OutputFormat::Binary,
        WriteFormat::ExtBinary => OutputFormat::ExtBinary(ExtBinaryOptions {
            use_md5: m.use_md5,
            compress_all: m.compress_all,
            partial: m.gen_partial,
            split_layout: m.split_layout,
        }),
    };
    if let Some(list) = &m.prof_sym_list {
        read_symbol_list(list, &mut profile)?;
    }
    warn_non_ext_options(&m, !profile.symbol_list.is_empty());
    let mut bytes = Vec::new();
    match format {
        // Function metadata in LLVM's map order (contexts hash differently: not modelled).
        OutputFormat::ExtBinary(o) if !profile.kind.cs && !m.flatten => {
            formats::sampleprof::binary::write_ext_in_order(
                &profile,
                &o,
                Some(&map_order),
                &mut bytes,
            )
        }
        _ => sp::write_to(&profile, format, &mut bytes),
    }
    .map_err(|e| format!("{output}: {e}"))?;
    write_output(output, &bytes)
}

/// llvm-profdata's warnings for ExtBinary-only options given with another output format.
fn warn_non_ext_options(m: &MergeArgs, has_symbols: bool) {
    if m.format == WriteFormat::ExtBinary {
        return;
    }
    if has_symbols {
        eprintln!("warning: Profile Symbol list is not empty but the output format is not ExtBinary format. The list will be lost in the output. ");
    }
    for (set, what) in [
        (m.compress_all, "-compress-all-section"),
        (m.use_md5, "-use-md5"),
        (m.gen_partial, "-gen-partial-profile"),
        (m.split_layout, "-split-layout"),
    ] {
        if set {
            eprintln!("warning: {what} is ignored. Specify -extbinary to enable it");
        }
    }
}

/// One input, weight 1, nothing to rewrite: a plain conversion, tried on the fast path.
fn fast_single_input(m: &MergeArgs, inputs: &[Input]) -> Option<Vec<Vec<u8>>> {
    let [input] = inputs else { return None };
    if input.weight != 1
        || m.remapping_file.is_some()
        || m.prof_sym_list.is_some()
        || m.flatten
        || m.drop_symbol_list
    {
        return None;
    }
    let format = match m.format {
        WriteFormat::Text => OutputFormat::Text,
        WriteFormat::ExtBinary => OutputFormat::ExtBinary(ExtBinaryOptions {
            use_md5: m.use_md5,
            compress_all: m.compress_all,
            partial: m.gen_partial,
            split_layout: m.split_layout,
        }),
        _ => return None,
    };
    let data = sp::load(&input.path).ok()?;
    sp::fast_convert(&data, format)
}

fn write_output(output: &str, bytes: &[u8]) -> Result<(), BoxError> {
    if output == "-" {
        let mut out = crate::stdout();
        out.write_all(bytes)?;
        out.flush()?;
    } else {
        write_atomically(&PathBuf::from(output), |w| w.write_all(bytes))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// show

#[derive(Debug, Default)]
struct ShowArgs {
    file: Option<String>,
    output: Option<String>,
    function: Option<String>,
    all_functions: bool,
    show_prof_sym_list: bool,
    sec_info_only: bool,
    detailed_summary: bool,
    hot_func_list: bool,
    topn: u32,
}

/// `llvm-profdata show --sample` (llvm-profdata-19's options).
const SHOW_OPTIONS: &[Opt] = &[
    Opt::value(&["function"], "<string>", "Details for matching functions"),
    Opt::value(&["topn"], "<uint>", "Show the list of functions with the largest internal counts"),
    Opt::boolean(&["all-functions"], "Details for each and every function"),
    Opt::boolean(&["show-prof-sym-list"], "Show profile symbol list if it exists in the profile. "),
    Opt::boolean(&["show-sec-info-only"], "Show the information of each section in the sample profile. The flag is only usable when the sample profile is in extbinary format"),
    Opt::boolean(&["detailed-summary"], "Show detailed profile summary"),
    Opt::boolean(&["hot-func-list"], "Show profile summary of a list of hot functions"),
    Opt::value(&["show-format"], "<value>", "Emit output in the selected format if supported by the provided profile type.")
        .choices(&[("text", "emit normal text output (default)"), ("json", "emit JSON"), ("yaml", "emit YAML")])
        .default("text")
        .refused(),
    Opt::boolean(&["json"], "Show sample profile data in the JSON format (deprecated, please use --show-format=json)").refused(),
    Opt::value(&["fs-discriminator-pass"], "<value>", "Zero out the discriminator bits for the FS discrimiator pass beyond this value").refused(),
    Opt::boolean(&["profile-isfs"], "Profile uses flow sensitive discriminators").refused(),
    Opt::boolean(&["counts"], "Show counter values for shown functions").ignored(INSTR_ONLY),
    Opt::boolean(&["ic-targets"], "Show indirect call site target values for shown functions").ignored(INSTR_ONLY),
    Opt::boolean(&["memop-sizes"], "Show the profiled sizes of the memory intrinsic calls for shown functions").ignored(INSTR_ONLY),
    Opt::boolean(&["text"], "Show instr profile data in text dump format").ignored(INSTR_ONLY),
    Opt::boolean(&["binary-ids"], "Show binary ids in the profile.").ignored(INSTR_ONLY),
    Opt::boolean(&["covered"], "Show only the functions that have been executed.").ignored(INSTR_ONLY),
    Opt::boolean(&["profile-version"], "Show profile version.").ignored(INSTR_ONLY),
    Opt::boolean(&["showcs"], "Show context sensitive counts").ignored(INSTR_ONLY),
    Opt::boolean(&["list-below-cutoff"], "Only output names of functions whose max count values are below the cutoff value").ignored(INSTR_ONLY),
    Opt::boolean(&["temporal-profile-traces"], "Show temporal profile traces in the profile.").ignored(INSTR_ONLY),
    Opt::boolean(&["show-vtables"], "Show vtable names for shown functions").ignored(INSTR_ONLY),
    Opt::value(&["value-cutoff"], "<uint>", "Set the count value cutoff. Functions with the maximum count less than this value will not be printed out. (Default is 0)").ignored(INSTR_ONLY),
    Opt::list(&["detailed-summary-cutoffs"], "<800000,901000,999999>", "Cutoff percentages (times 10000) for generating detailed summary").ignored(INSTR_ONLY),
    Opt::value(&["debug-info"], "<string>", "Read and extract profile metadata from debug info and show the functions it found.").ignored(INSTR_ONLY),
    Opt::value(&["profiled-binary"], "<string>", "Path to binary from which the profile was collected.").ignored(INSTR_ONLY),
    Opt::value(&["max-debug-info-correlation-warnings"], "<uint>", "The maximum number of warnings to emit when correlating profile from debug info (0 = no limit)").ignored(INSTR_ONLY),
    Opt::value(&["memop-sizes-cutoff"], "<uint>", "Cutoff of memop sizes").ignored(INSTR_ONLY),
];

const SHOW: Tool = Tool {
    name: "llvm-profdata show",
    overview: "LLVM profile data (profmill drop-in)\n\nSUBCOMMAND 'show': Takes a profile data file and displays the profiles (--sample: sample profiles).",
    usage: "--sample <profdata-file>",
    options: &[COMMON, SHOW_OPTIONS],
    comma_positionals: false,
};

fn parse_show(args: &[String]) -> Result<Option<ShowArgs>, BoxError> {
    let Some(args) = SHOW.parse_and_print(&os_args(args))? else {
        return Ok(None);
    };
    let mut s = ShowArgs::default();
    match args.positional_strings().as_slice() {
        [] => {}
        [file] => s.file = Some(file.clone()),
        _ => return Err("llvm-profdata show takes one profile".into()),
    }
    for opt in &args.options {
        let (name, v) = (opt.name, opt.text());
        match name {
            "sample" | "instr" => {}
            "output" => s.output = Some(v.to_string()),
            "function" => s.function = Some(v.to_string()),
            "topn" => s.topn = parse_number(name, v)?,
            "all-functions" => s.all_functions = opt.on(),
            "show-prof-sym-list" => s.show_prof_sym_list = opt.on(),
            "show-sec-info-only" => s.sec_info_only = opt.on(),
            "detailed-summary" => s.detailed_summary = opt.on(),
            "hot-func-list" => s.hot_func_list = opt.on(),
            other => unreachable!("llvm-profdata show --sample option {other} not applied"),
        }
    }
    Ok(Some(s))
}

fn run_show(s: ShowArgs) -> Result<(), BoxError> {
    let file = s
        .file
        .ok_or("llvm-profdata show: Not enough positional command line arguments specified!")?;
    crate::llvm_profdata::check_show(
        &file,
        s.output.as_deref(),
        s.all_functions,
        s.function.as_deref(),
    )?;
    let data = engine::io::input::read_or_stdin(&file).map_err(|e| format!("{file}: {e}"))?;
    let mut out = Vec::new();
    if s.sec_info_only {
        // LLVM opens the reader first: a file of no sample encoding is an error either way.
        let format = formats::sampleprof::detect(&data)
            .ok_or_else(|| formats::sampleprof::Error::UnrecognizedFormat.located(&file))?;
        if format == formats::sampleprof::Format::ExtBinary {
            show::section_info(&mut out, &data).map_err(|e| format!("{file}: {e}"))?;
        } else {
            eprintln!("warning: -show-sec-info-only is only supported for sample profile in extbinary format and is ignored for other formats.");
        }
        return write_output(s.output.as_deref().unwrap_or("-"), &out);
    }
    let profile = formats::sampleprof::read(&data).map_err(|e| e.located(&file))?;
    match s
        .function
        .as_deref()
        .filter(|f| !f.is_empty() && !s.all_functions)
    {
        None => show::dump(&mut out, &profile)?,
        Some(name) => match show::samples_for(&profile, name) {
            Some((ctx, fs)) => show::dump_function(&mut out, ctx, fs)?,
            None => {
                write!(out, "Function: : ")?;
                show::print_samples(&mut out, &Default::default(), 0)?;
            }
        },
    }
    if s.show_prof_sym_list {
        show::dump_symbol_list(&mut out, &profile)?;
    }
    if s.detailed_summary {
        let summary = formats::sampleprof::summary::compute(&profile);
        show::print_summary(&mut out, &summary)?;
        show::print_detailed_summary(&mut out, &summary)?;
    }
    if s.hot_func_list || s.topn > 0 {
        use engine::sampleprof::overlap::{insertion_order, load_order};
        let order = load_order(&profile, &insertion_order(&data, &profile));
        show::hot_function_list(&mut out, &profile, &order, s.topn)?;
    }
    write_output(s.output.as_deref().unwrap_or("-"), &out)
}

// ---------------------------------------------------------------------------------------------
// overlap

const OVERLAP_OPTIONS: &[Opt] = &[
    Opt::value(&["function"], "<string>", "Function level overlap information for matching functions."),
    Opt::value(&["value-cutoff"], "<ulong>", "Function level overlap information for every function (with calling context for csspgo) in test profile with max count value greater than the parameter value"),
    Opt::value(&["similarity-cutoff"], "<ulong>", "For sample profiles, list function names (with calling context for csspgo) for overlapped functions with similarities below the cutoff (percentage times 10000)."),
    Opt::boolean(&["cs"], "For context sensitive PGO counts. Does not work with CSSPGO.").ignored(INSTR_ONLY),
    Opt::value(&["fs-discriminator-pass"], "<value>", "Zero out the discriminator bits for the FS discrimiator pass beyond this value").refused(),
];

const OVERLAP: Tool = Tool {
    name: "llvm-profdata overlap",
    overview: "LLVM profile data (profmill drop-in)\n\nSUBCOMMAND 'overlap': Computes and displays the overlap between two profiles (--sample: sample profiles).",
    usage: "--sample <base profile file> <test profile file>",
    options: &[COMMON, OVERLAP_OPTIONS],
    comma_positionals: false,
};

/// `llvm-profdata overlap --sample BASE TEST`, also `profmill overlap`.
pub fn run_overlap(args: &[String]) -> Result<(), BoxError> {
    use engine::sampleprof::overlap::{
        insertion_order, load_order, overlap, OverlapInput, OverlapOptions,
    };
    let Some(args) = OVERLAP.parse_and_print(&os_args(args))? else {
        return Ok(());
    };
    let mut opts = OverlapOptions::default();
    let files = args.positional_strings();
    let mut output: Option<String> = None;
    for opt in &args.options {
        let (name, v) = (opt.name, opt.text());
        match name {
            "sample" | "instr" => {}
            "output" => output = Some(v.to_string()),
            "function" => opts.function = v.to_string(),
            "value-cutoff" => opts.value_cutoff = parse_number(name, v)?,
            "similarity-cutoff" => opts.similarity_cutoff = parse_number(name, v)?,
            other => unreachable!("llvm-profdata overlap --sample option {other} not applied"),
        }
    }
    let [base, test] = files.as_slice() else {
        return Err(format!(
            "llvm-profdata overlap: expected <base profile file> <test profile file>, got {} files",
            files.len()
        )
        .into());
    };
    let load = |f: &str| -> Result<(Vec<u8>, Profile), BoxError> {
        let data = engine::io::input::read_or_stdin(f).map_err(|e| format!("{f}: {e}"))?;
        let p = formats::sampleprof::read(&data).map_err(|e| e.located(f))?;
        Ok((data, p))
    };
    let (bdata, bprof) = load(base)?;
    let (tdata, tprof) = load(test)?;
    // LLVM's messages, with the files and which is which.
    let differ = |kind: &str, other: &str, base_is_kind: bool| -> BoxError {
        let (b, t) = if base_is_kind {
            (kind, other)
        } else {
            (other, kind)
        };
        format!(
            "cannot compare {kind} profile with {other} profile (base {base} is {b}, test {test} is {t})"
        )
        .into()
    };
    if bprof.kind.probe != tprof.kind.probe {
        return Err(differ("probe-based", "non-probe-based", bprof.kind.probe));
    }
    if bprof.kind.cs != tprof.kind.cs {
        return Err(differ("CS", "non-CS", bprof.kind.cs));
    }
    let (bins, tins) = (
        insertion_order(&bdata, &bprof),
        insertion_order(&tdata, &tprof),
    );
    let b = OverlapInput {
        name: base,
        profile: &bprof,
        order: load_order(&bprof, &bins),
    };
    let t = OverlapInput {
        name: test,
        profile: &tprof,
        order: load_order(&tprof, &tins),
    };
    let mut out = Vec::new();
    overlap(&b, &t, &opts, &mut out)?;
    write_output(output.as_deref().unwrap_or("-"), &out)
}
