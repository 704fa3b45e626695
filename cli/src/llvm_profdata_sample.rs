//! `profmill llvm-profdata merge|show|overlap --sample …`: the sample-profile side of the
//! llvm-profdata drop-in, with llvm-profdata-19's option spelling and output.
//!
//! Options are parsed as LLVM's `cl` parser accepts them (`-o x`, `-o=x`, `--output=x`,
//! single or double dash). Options llvm-profdata-19 ignores for sample profiles (`-j`,
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

use crate::llvm_profdata::{collect_weighted_inputs, Stdin};
use formats::sampleprof::binary::ExtBinaryOptions;
use formats::sampleprof::{Context, FunctionId, Profile};

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
        "merge" => parse_merge(&rest).and_then(run_merge),
        "show" => parse_show(&rest).and_then(run_show),
        _ => run_overlap(&rest),
    })
}

/// Whether the last profile-kind switch before `--` is `--sample` (LLVM's `cl::opt` keeps the
/// last one given).
fn selects_sample(args: &[String]) -> bool {
    let mut sample = false;
    for a in args {
        if a == "--" {
            break;
        }
        match split_option(a) {
            Some(("sample", v)) => sample = parse_bool("sample", v).unwrap_or(false),
            Some(("instr" | "memory", _)) => sample = false,
            _ => {}
        }
    }
    sample
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

fn parse_bool(name: &str, value: Option<&str>) -> Result<bool, BoxError> {
    match value {
        None | Some("true" | "TRUE" | "True" | "1") => Ok(true),
        Some("false" | "FALSE" | "False" | "0") => Ok(false),
        Some(v) => {
            Err(format!("'{v}' is not a valid value for the boolean option --{name}").into())
        }
    }
}

fn parse_number<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, BoxError> {
    v.parse()
        .map_err(|_| format!("'{v}' value invalid for option --{name}").into())
}

/// One command line walked option by option, LLVM style.
struct Walker<'a> {
    args: &'a [String],
    next: usize,
    only_positional: bool,
}

enum Item<'a> {
    Positional(&'a str),
    Option {
        arg: &'a str,
        name: &'a str,
        inline: Option<&'a str>,
    },
}

impl<'a> Walker<'a> {
    fn new(args: &'a [String]) -> Self {
        Walker {
            args,
            next: 0,
            only_positional: false,
        }
    }

    fn next_item(&mut self) -> Option<Item<'a>> {
        loop {
            let arg = self.args.get(self.next)?.as_str();
            self.next += 1;
            if self.only_positional || arg == "-" {
                return Some(Item::Positional(arg));
            }
            if arg == "--" {
                self.only_positional = true;
                continue;
            }
            return Some(match split_option(arg) {
                Some((name, inline)) => Item::Option { arg, name, inline },
                None => Item::Positional(arg),
            });
        }
    }

    /// The option's value: inline (`-o=x`) or the next argument (`-o x`).
    fn value(&mut self, name: &str, inline: Option<&str>) -> Result<String, BoxError> {
        if let Some(v) = inline {
            return Ok(v.to_string());
        }
        let v = self
            .args
            .get(self.next)
            .ok_or_else(|| format!("option --{name} needs a value"))?;
        self.next += 1;
        Ok(v.clone())
    }
}

fn ignored(name: &str, what: &str) {
    eprintln!("warning: profmill llvm-profdata: --{name} {what}; ignored for sample profiles");
}

fn not_implemented(sub: &str, name: &str) -> BoxError {
    format!("llvm-profdata {sub} --sample: --{name} is not implemented by profmill").into()
}

fn unknown(arg: &str) -> BoxError {
    format!("llvm-profdata: Unknown command line argument '{arg}'").into()
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

/// `llvm-profdata merge` options that take a value and do not apply to sample profiles.
const MERGE_INSTR_ONLY_VALUES: &[&str] = &[
    "j",
    "num-threads",
    "debug-info",
    "binary-file",
    "debuginfod",
    "correlate",
    "profiled-binary",
    "temporal-profile-trace-reservoir-size",
    "temporal-profile-max-trace-length",
    "max-debug-info-correlation-warnings",
    "memprof-version",
    "zero-counter-threshold",
    "suppl-min-size-threshold",
    "instr-prof-cold-threshold",
];
const MERGE_INSTR_ONLY_FLAGS: &[&str] = &["sparse", "keep-vtable-symbols", "memprof-full-schema"];

fn parse_merge(args: &[String]) -> Result<MergeArgs, BoxError> {
    let mut m = MergeArgs::default();
    let mut w = Walker::new(args);
    while let Some(item) = w.next_item() {
        let (arg, name, inline) = match item {
            Item::Positional(p) => {
                m.positional.push(p.to_string());
                continue;
            }
            Item::Option { arg, name, inline } => (arg, name, inline),
        };
        match name {
            "sample" | "instr" => {}
            "o" | "output" => m.output = Some(w.value(name, inline)?),
            "weighted-input" => m.weighted.push(w.value(name, inline)?),
            "f" | "input-files" => m.input_files = Some(w.value(name, inline)?),
            "r" | "remapping-file" => m.remapping_file = Some(w.value(name, inline)?),
            "prof-sym-list" => m.prof_sym_list = Some(w.value(name, inline)?),
            "text" => m.format = WriteFormat::Text,
            "binary" => m.format = WriteFormat::Binary,
            "extbinary" => m.format = WriteFormat::ExtBinary,
            "gcc" => m.format = WriteFormat::Gcc,
            "use-md5" => m.use_md5 = parse_bool(name, inline)?,
            "compress-all-sections" => m.compress_all = parse_bool(name, inline)?,
            "gen-partial-profile" => m.gen_partial = parse_bool(name, inline)?,
            // Not an option of llvm-profdata-19 (LLVM 20 added it); accepted as LLVM 20+ does.
            "split-layout" => m.split_layout = parse_bool(name, inline)?,
            "drop-profile-symbol-list" => m.drop_symbol_list = parse_bool(name, inline)?,
            "dump-input-file-list" => m.dump_input_file_list = parse_bool(name, inline)?,
            "failure-mode" => {
                m.skip_unreadable = match w.value(name, inline)?.as_str() {
                    "any" => false,
                    "all" | "warn" => true,
                    v => {
                        return Err(format!("unknown --failure-mode '{v}' (any, all, warn)").into())
                    }
                }
            }
            "convert-sample-profile-layout" => match w.value(name, inline)?.as_str() {
                "flat" => m.flatten = true,
                "nest" => {
                    return Err(not_implemented(
                        "merge",
                        "convert-sample-profile-layout=nest",
                    ))
                }
                v => {
                    return Err(format!(
                    "'{v}' is not a valid value for --convert-sample-profile-layout (nest, flat)"
                )
                    .into())
                }
            },
            "output-size-limit" => {
                let v = w.value(name, inline)?;
                if parse_number::<u64>(name, &v)? != 0 {
                    return Err(not_implemented("merge", name));
                }
            }
            "sample-frame-depth-for-cold-context" => {
                let v = w.value(name, inline)?;
                parse_number::<u32>(name, &v)?;
            }
            "sample-merge-cold-context" | "sample-trim-cold-context" => {
                if parse_bool(name, inline)? {
                    return Err(not_implemented("merge", name));
                }
            }
            "function" | "no-function" | "fs-discriminator-pass" => {
                w.value(name, inline)?;
                return Err(not_implemented("merge", name));
            }
            "generate-merged-base-profiles" | "profile-isfs" => {
                if parse_bool(name, inline)? {
                    return Err(not_implemented("merge", name));
                }
            }
            "supplement-instr-with-sample" => {
                w.value(name, inline)?;
                return Err("-supplement-instr-with-sample can only work with -instr. ".into());
            }
            n if MERGE_INSTR_ONLY_VALUES.contains(&n) => {
                let v = w.value(n, inline)?;
                ignored(&format!("{n}={v}"), "applies to instrumentation profiles");
            }
            n if MERGE_INSTR_ONLY_FLAGS.contains(&n) => {
                parse_bool(n, inline)?;
                ignored(n, "applies to instrumentation profiles");
            }
            _ => return Err(unknown(arg)),
        }
    }
    Ok(m)
}

fn collect_inputs(m: &MergeArgs) -> Result<Vec<Input>, BoxError> {
    let stdin = Stdin::Refused("reading a profile from standard input is not supported");
    let inputs =
        collect_weighted_inputs(&m.positional, &m.weighted, m.input_files.as_deref(), stdin)?;
    Ok(inputs
        .into_iter()
        .map(|i| Input {
            path: i.path,
            weight: i.weight,
        })
        .collect())
}

fn read_remapper(path: &str) -> Result<transform::Remapper, BoxError> {
    let text = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
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
    let text = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
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
        let mut out = std::io::stdout().lock();
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
        let mut out = std::io::stdout().lock();
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

const SHOW_INSTR_ONLY_FLAGS: &[&str] = &[
    "counts",
    "ic-targets",
    "memop-sizes",
    "text",
    "binary-ids",
    "covered",
    "profile-version",
    "showcs",
    "list-below-cutoff",
    "temporal-profile-traces",
    "show-vtables",
];
const SHOW_INSTR_ONLY_VALUES: &[&str] = &[
    "value-cutoff",
    "detailed-summary-cutoffs",
    "debug-info",
    "profiled-binary",
    "max-debug-info-correlation-warnings",
    "memop-sizes-cutoff",
];

fn parse_show(args: &[String]) -> Result<ShowArgs, BoxError> {
    let mut s = ShowArgs::default();
    let mut w = Walker::new(args);
    while let Some(item) = w.next_item() {
        let (arg, name, inline) = match item {
            Item::Positional(p) => {
                if s.file.replace(p.to_string()).is_some() {
                    return Err("llvm-profdata show takes one profile".into());
                }
                continue;
            }
            Item::Option { arg, name, inline } => (arg, name, inline),
        };
        match name {
            "sample" | "instr" => {}
            "o" | "output" => s.output = Some(w.value(name, inline)?),
            "function" => s.function = Some(w.value(name, inline)?),
            "topn" => s.topn = parse_number(name, &w.value(name, inline)?)?,
            "all-functions" => s.all_functions = parse_bool(name, inline)?,
            "show-prof-sym-list" => s.show_prof_sym_list = parse_bool(name, inline)?,
            "show-sec-info-only" => s.sec_info_only = parse_bool(name, inline)?,
            "detailed-summary" => s.detailed_summary = parse_bool(name, inline)?,
            "hot-func-list" => s.hot_func_list = parse_bool(name, inline)?,
            "show-format" => match w.value(name, inline)?.as_str() {
                "text" => {}
                "json" | "yaml" => return Err(not_implemented("show", arg)),
                v => return Err(format!("'{v}' is not a valid --show-format").into()),
            },
            "json" => {
                if parse_bool(name, inline)? {
                    return Err(not_implemented("show", name));
                }
            }
            "fs-discriminator-pass" => {
                w.value(name, inline)?;
                return Err(not_implemented("show", name));
            }
            "profile-isfs" => {
                if parse_bool(name, inline)? {
                    return Err(not_implemented("show", name));
                }
            }
            n if SHOW_INSTR_ONLY_FLAGS.contains(&n) => {
                parse_bool(n, inline)?;
                ignored(n, "applies to instrumentation profiles");
            }
            n if SHOW_INSTR_ONLY_VALUES.contains(&n) => {
                let v = w.value(n, inline)?;
                ignored(&format!("{n}={v}"), "applies to instrumentation profiles");
            }
            _ => return Err(unknown(arg)),
        }
    }
    Ok(s)
}

/// `SampleProfileReaderExtBinaryBase::dumpSectionInfo`.
fn section_info(out: &mut Vec<u8>, data: &[u8]) -> Result<(), BoxError> {
    use formats::sampleprof::binary::{flag, read_section_table, sec};
    let table = read_section_table(data)?;
    let mut total = 0u64;
    for e in &table {
        let name = match e.kind {
            sec::SUMMARY => "ProfileSummarySection",
            sec::NAME_TABLE => "NameTableSection",
            sec::SYMBOL_LIST => "ProfileSymbolListSection",
            sec::FUNC_OFFSET => "FuncOffsetTableSection",
            sec::FUNC_METADATA => "FunctionMetadata",
            sec::CS_NAME_TABLE => "CSNameTableSection",
            sec::LBR_PROFILE => "LBRProfileSection",
            _ => "UnknownSection",
        };
        let has = |f: u64| e.flags & f == f;
        let mut flags: Vec<&str> = Vec::new();
        if has(flag::COMPRESS) {
            flags.push("compressed");
        }
        if has(flag::FLAT) {
            flags.push("flat");
        }
        match e.kind {
            sec::NAME_TABLE => {
                if has(flag::FIXED_LENGTH_MD5) {
                    flags.push("fixlenmd5");
                } else if has(flag::MD5_NAME) {
                    flags.push("md5");
                }
                if has(flag::UNIQ_SUFFIX) {
                    flags.push("uniq");
                }
            }
            sec::SUMMARY => {
                for (f, n) in [
                    (flag::PARTIAL, "partial"),
                    (flag::FULL_CONTEXT, "context"),
                    (flag::PRE_INLINED, "preInlined"),
                    (flag::FS_DISCRIMINATOR, "fs-discriminator"),
                ] {
                    if has(f) {
                        flags.push(n);
                    }
                }
            }
            sec::FUNC_OFFSET if has(flag::ORDERED) => flags.push("ordered"),
            sec::FUNC_METADATA => {
                if has(flag::PROBE_BASED) {
                    flags.push("probe");
                }
                if has(flag::HAS_ATTRIBUTE) {
                    flags.push("attr");
                }
            }
            _ => {}
        }
        writeln!(
            out,
            "{name} - Offset: {}, Size: {}, Flags: {{{}}}",
            e.offset,
            e.size,
            flags.join(",")
        )?;
        total = total.wrapping_add(e.size);
    }
    let header = table.first().map_or(0, |e| e.offset);
    writeln!(out, "Header Size: {header}")?;
    writeln!(out, "Total Sections Size: {total}")?;
    writeln!(out, "File Size: {}", data.len())?;
    Ok(())
}

/// `SampleProfileReader::getSamplesFor(name)`: the plain context of that name (or of its
/// MD5 when the profile has hashed names).
fn samples_for<'p>(
    profile: &'p Profile,
    name: &str,
) -> Option<(&'p Context, &'p formats::sampleprof::FunctionSamples)> {
    let by_name = Context::Plain(FunctionId::name(name.as_bytes()));
    let by_hash = Context::Plain(FunctionId::Hash(formats::sampleprof::model::md5_guid(
        name.as_bytes(),
    )));
    profile
        .functions
        .get_key_value(&by_name)
        .or_else(|| profile.functions.get_key_value(&by_hash))
}

fn run_show(s: ShowArgs) -> Result<(), BoxError> {
    let file = s
        .file
        .ok_or("llvm-profdata show: Not enough positional command line arguments specified!")?;
    let data = std::fs::read(&file).map_err(|e| format!("{file}: {e}"))?;
    let mut out = Vec::new();
    if s.sec_info_only {
        if formats::sampleprof::detect(&data) == Some(formats::sampleprof::Format::ExtBinary) {
            section_info(&mut out, &data).map_err(|e| format!("{file}: {e}"))?;
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
        Some(name) => match samples_for(&profile, name) {
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

/// `llvm-profdata overlap --sample BASE TEST`.
pub fn run_overlap(args: &[String]) -> Result<(), BoxError> {
    use engine::sampleprof::overlap::{
        insertion_order, load_order, overlap, OverlapInput, OverlapOptions,
    };
    let mut opts = OverlapOptions::default();
    let mut files = Vec::new();
    let mut output: Option<String> = None;
    let mut w = Walker::new(args);
    while let Some(item) = w.next_item() {
        let (arg, name, inline) = match item {
            Item::Positional(p) => {
                files.push(p.to_string());
                continue;
            }
            Item::Option { arg, name, inline } => (arg, name, inline),
        };
        match name {
            "sample" | "instr" => {}
            "o" | "output" => output = Some(w.value(name, inline)?),
            "function" => opts.function = w.value(name, inline)?,
            "value-cutoff" => opts.value_cutoff = parse_number(name, &w.value(name, inline)?)?,
            "similarity-cutoff" => {
                opts.similarity_cutoff = parse_number(name, &w.value(name, inline)?)?
            }
            "cs" => {
                parse_bool(name, inline)?;
                ignored(name, "applies to instrumentation profiles");
            }
            "fs-discriminator-pass" => {
                w.value(name, inline)?;
                return Err(not_implemented("overlap", name));
            }
            _ => return Err(unknown(arg)),
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
        let data = std::fs::read(f).map_err(|e| format!("{f}: {e}"))?;
        let p = formats::sampleprof::read(&data).map_err(|e| e.located(f))?;
        Ok((data, p))
    };
    let (bdata, bprof) = load(base)?;
    let (tdata, tprof) = load(test)?;
    if bprof.kind.probe != tprof.kind.probe {
        return Err("cannot compare probe-based profile with non-probe-based profile".into());
    }
    if bprof.kind.cs != tprof.kind.cs {
        return Err("cannot compare CS profile with non-CS profile".into());
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
