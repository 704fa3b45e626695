//! `profmill merge-fdata FILE|DIR… [-o OUT]`: LLVM's `merge-fdata`, with its command line.
//!
//! The options are parsed the way LLVM's `cl` library parses merge-fdata's (checked against
//! `merge-fdata --help-hidden` of LLVM 22): one or two dashes, values after `=` or in the
//! next argument (`-o x`, `-o=x`, `--o=x`; `-ox` is an error there too), positionals split
//! at commas (`cl::CommaSeparated`), `--` ends the options (read by [`crate::llvm_cl`]).
//! `-q` and `--print=…` only act on YAML profiles in merge-fdata, so for fdata they are
//! accepted with a warning and the merged profile is still printed, as merge-fdata does;
//! for YAML, `-q` writes no profile at all and `--print` lists the functions on stderr.
//! An unknown option is an error.

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use engine::bolt::fdata_merge::{expand_inputs, merge, Merged, Sources};

use crate::llvm_cl::{self, Opt, Tool};

/// The raw arguments after `profmill merge-fdata`; parsed by [`parse`], not by clap.
#[derive(clap::Args)]
#[command(disable_help_flag = true, disable_version_flag = true)]
pub struct RawArgs {
    /// FILE|DIR… [-o OUT] (see `profmill merge-fdata --help`)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    args: Vec<OsString>,
}

pub fn run_subcommand(args: RawArgs) -> ExitCode {
    main(args.args, "profmill merge-fdata", false)
}

/// Runs merge-fdata on `args` (without the program name); `tool` names it in `--help`. With
/// `llvm19` (the binary linked as `merge-fdata-19`), LLVM 19's merge: see
/// [`engine::bolt::fdata_merge_19`].
pub fn main(args: Vec<OsString>, tool: &str, llvm19: bool) -> ExitCode {
    let options = match parse(args) {
        Ok(Parsed::Run(options)) => options,
        Ok(Parsed::Help) => {
            print!("{}", help(tool));
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Version) => {
            print!("{}", llvm_cl::version("merge-fdata"));
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::FAILURE;
        }
    };
    for warning in &options.warnings {
        eprintln!("merge-fdata: warning: {warning}");
    }
    let merged = if llvm19 {
        merge_and_write_19(&options)
    } else {
        merge_and_write(&options)
    };
    match merged {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("merge-fdata: error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Options {
    pub inputs: Vec<PathBuf>,
    /// `None` or `-`: standard output.
    pub output: Option<PathBuf>,
    /// Accepted options we do not act on, as messages.
    pub warnings: Vec<String>,
    /// `-q`: no merged profile (YAML inputs only).
    pub quiet: bool,
    /// `--print=exec|branches`: the function list on stderr (YAML inputs only).
    pub print: Option<FunctionList>,
}

/// What `--print` sorts the merged functions by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionList {
    /// `exec`: the function's execution count.
    ExecCount,
    /// `branches`: the sum of its blocks' successor counts.
    TotalBranches,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    Run(Options),
    Help,
    Version,
}

/// merge-fdata's options (LLVM 22's `merge-fdata --help-hidden`).
const OPTIONS: &[Opt] = &[
    Opt::value(
        &["o"],
        "<string>",
        "output file (default or '-': standard output)",
    ),
    Opt::boolean(
        &["q"],
        "do not print merged data to stdout (YAML profiles; fdata is still printed)",
    ),
    Opt::value(
        &["print"],
        "<value>",
        "print the list of objects with count to stderr (YAML profiles)",
    )
    .choices(&[
        ("none", "do not print objects/functions"),
        ("exec", "print functions sorted by execution count"),
        ("branches", "print functions sorted by total branch count"),
    ])
    .default("none"),
];

const TOOL: Tool = Tool {
    name: "merge-fdata",
    overview: "merge multiple fdata into a single file (profmill, LLVM merge-fdata compatible). \
Inputs may be files or directories (searched recursively); lists may be comma separated. \
Counts and mispredictions are summed per location pair; the output is sorted.",
    usage: "<fdata1> [<fdata2>]...",
    options: &[OPTIONS],
    comma_positionals: true,
};

pub fn parse(args: Vec<OsString>) -> Result<Parsed, String> {
    let args = crate::response_files::expand(args)?;
    let args = match TOOL.parse(&args)? {
        llvm_cl::Parsed::Run(args) => args,
        llvm_cl::Parsed::Help => return Ok(Parsed::Help),
        llvm_cl::Parsed::Version => return Ok(Parsed::Version),
    };
    let mut options = Options {
        warnings: args.warnings,
        ..Options::default()
    };
    for opt in &args.options {
        match opt.name {
            "o" => options.output = Some(PathBuf::from(opt.text())),
            "q" => options.quiet = opt.on(),
            "print" => {
                options.print = match opt.text() {
                    "exec" => Some(FunctionList::ExecCount),
                    "branches" => Some(FunctionList::TotalBranches),
                    _ => None,
                }
            }
            other => unreachable!("merge-fdata option {other} not applied"),
        }
    }
    options.inputs = args.positionals.into_iter().map(PathBuf::from).collect();
    if options.inputs.is_empty() {
        return Err("merge-fdata: Not enough positional command line arguments specified! Must specify at least 1 positional argument".into());
    }
    Ok(Parsed::Run(options))
}

/// The help text, with `tool` as the program name.
fn help(tool: &str) -> String {
    TOOL.help()
        .replacen("USAGE: merge-fdata ", &format!("USAGE: {tool} "), 1)
}

fn merge_and_write(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let files = expand_inputs(&options.inputs)?;
    // Opened first: a pipe is read once, and then both kinds see its first bytes.
    let sources = Sources::open(&files)?;
    if sources.first_is_yaml()? {
        return merge_yaml_and_write(options, &sources);
    }
    warn_yaml_only_options(options);
    let merged = merge(&sources)?;
    match options.output.as_deref() {
        Some(path) if path.as_os_str() != "-" => {
            engine::io::output::write_atomically(path, |w| merged.write(w))?
        }
        _ => {
            if !write_stdout(&merged)? {
                // A reader that closed the pipe (`| head`): end quietly.
                return Ok(());
            }
        }
    }
    // merge-fdata's closing line, for scripts that look for it.
    eprintln!("Profile from {} files merged.", merged.files);
    Ok(())
}

/// YAML profiles, merged as LLVM 22's merge-fdata merges them (the first input is YAML).
fn merge_yaml_and_write(
    options: &Options,
    sources: &Sources,
) -> Result<(), Box<dyn std::error::Error>> {
    for i in 0..sources.len() {
        eprintln!("Merging data from {}...", sources.path(i).display());
    }
    let merged = engine::bolt::yaml_merge::merge(sources)?;
    for warning in &merged.warnings {
        eprintln!("WARNING: {warning}");
    }
    // `-q`: merge-fdata opens no output at all (an `-o` file is not created).
    if !options.quiet {
        // merge-fdata writes with `yaml::Output`'s default wrap column.
        let text = formats::bolt::yaml::write_wrapped(&merged.profile, 70);
        match options.output.as_deref() {
            Some(path) if path.as_os_str() != "-" => {
                engine::io::output::write_atomically(path, |w| w.write_all(text.as_bytes()))?
            }
            _ => {
                let mut out = crate::stdout();
                match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                    Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
                    other => other?,
                }
            }
        }
    }
    eprintln!(
        "Data for {} unique objects successfully merged.",
        merged.profile.functions.len()
    );
    if let Some(list) = options.print {
        eprint!("{}", function_list(&merged.profile, list));
    }
    Ok(())
}

/// merge-fdata's `--print` list: one `name : count` line per function, by count and then by
/// name, both descending (it stable-sorts the reversed list of (count, name) pairs, and names
/// are unique, so the order is total).
fn function_list(profile: &formats::bolt::yaml::Profile, list: FunctionList) -> String {
    let count = |f: &formats::bolt::yaml::Function| match list {
        FunctionList::ExecCount => f.exec,
        FunctionList::TotalBranches => f
            .blocks
            .iter()
            .flat_map(|b| &b.succ)
            .fold(0u64, |sum, s| sum.wrapping_add(s.count)),
    };
    let mut rows: Vec<(u64, &str)> = profile
        .functions
        .iter()
        .map(|f| (count(f), f.name.as_str()))
        .collect();
    rows.sort_unstable_by(|a, b| b.cmp(a));
    let by = match list {
        FunctionList::ExecCount => "execution",
        FunctionList::TotalBranches => "total branch",
    };
    let mut text = format!("Functions sorted by {by} count:\n");
    for (count, name) in rows {
        text.push_str(&format!("{name} : {count}\n"));
    }
    text
}

/// `-q` and `--print` act on YAML profiles only; merge-fdata ignores them for fdata silently,
/// we say so.
fn warn_yaml_only_options(options: &Options) {
    if options.quiet {
        eprintln!("merge-fdata: warning: -q only applies to YAML profiles (as in merge-fdata); the merged fdata is still printed; ignored");
    }
    if let Some(list) = options.print {
        let value = match list {
            FunctionList::ExecCount => "exec",
            FunctionList::TotalBranches => "branches",
        };
        eprintln!("merge-fdata: warning: --print={value} only applies to YAML profiles (as in merge-fdata); ignored");
    }
}

/// LLVM 19's merge (the misprediction count is part of a line's key).
fn merge_and_write_19(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let files = expand_inputs(&options.inputs)?;
    warn_yaml_only_options(options);
    eprintln!("Using legacy profile format.");
    let merged = engine::bolt::fdata_merge_19::merge_legacy_19(&files)?;
    match options.output.as_deref() {
        Some(path) if path.as_os_str() != "-" => {
            engine::io::output::write_atomically(path, |w| merged.write(w))?
        }
        _ => {
            let mut out = io::BufWriter::with_capacity(1 << 20, crate::stdout());
            match merged.write(&mut out).and_then(|()| out.flush()) {
                // A reader that closed the pipe (`| head`): end quietly.
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
                other => other?,
            }
        }
    }
    eprintln!("Profile from {} files merged.", files.len());
    Ok(())
}

/// Writes to standard output; a closed pipe (`| head`) ends the output quietly. Whether the
/// whole profile was written (false: the reader closed the pipe).
fn write_stdout(merged: &Merged) -> io::Result<bool> {
    let mut out = io::BufWriter::with_capacity(1 << 20, crate::stdout());
    match merged.write(&mut out).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Parsed, String> {
        parse(args.iter().map(OsString::from).collect())
    }

    fn options(args: &[&str]) -> Options {
        match run(args) {
            Ok(Parsed::Run(o)) => o,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn accepts_llvm_spellings_of_the_output() {
        for args in [
            &["-o", "out", "a"][..],
            &["-o=out", "a"],
            &["--o=out", "a"],
            &["--o", "out", "a"],
            &["a", "-o", "out"],
            &["-o", "first", "a", "-o=out"],
        ] {
            let o = options(args);
            assert_eq!(o.output, Some(PathBuf::from("out")), "{args:?}");
            assert_eq!(o.inputs, [PathBuf::from("a")], "{args:?}");
        }
    }

    #[test]
    fn positionals_split_at_commas_and_after_double_dash() {
        let o = options(&["a,b", "-", "--", "-o", "c"]);
        assert_eq!(o.output, None);
        assert_eq!(
            o.inputs,
            ["a", "b", "-", "-o", "c"].map(PathBuf::from).to_vec()
        );
    }

    #[test]
    fn yaml_only_options_are_parsed_last_one_winning() {
        let o = options(&["-q", "--print=exec", "a", "-print", "branches", "--q=false"]);
        assert_eq!(o.inputs, [PathBuf::from("a")]);
        assert!(o.warnings.is_empty(), "{:?}", o.warnings);
        assert!(!o.quiet);
        assert_eq!(o.print, Some(FunctionList::TotalBranches));
        let o = options(&["-q", "--print=exec", "--print=none", "a"]);
        assert!(o.quiet);
        assert_eq!(o.print, None);
    }

    #[test]
    fn the_function_list_sorts_by_count_then_name_descending() {
        use formats::bolt::yaml::{Block, Function, Profile, Succ};
        let f = |name: &str, exec, branches: &[u64]| Function {
            name: name.into(),
            exec,
            blocks: vec![Block {
                succ: branches
                    .iter()
                    .map(|&count| Succ {
                        count,
                        ..Succ::default()
                    })
                    .collect(),
                ..Block::default()
            }],
            ..Function::default()
        };
        let profile = Profile {
            functions: vec![f("b", 5, &[1, 1]), f("a", 5, &[7]), f("c", 9, &[])],
            ..Profile::default()
        };
        assert_eq!(
            function_list(&profile, FunctionList::ExecCount),
            "Functions sorted by execution count:\nc : 9\nb : 5\na : 5\n"
        );
        assert_eq!(
            function_list(&profile, FunctionList::TotalBranches),
            "Functions sorted by total branch count:\na : 7\nb : 2\nc : 0\n"
        );
    }

    #[test]
    fn rejects_what_merge_fdata_rejects() {
        for (args, message) in [
            (&["-oout", "a"][..], "Unknown command line argument '-oout'"),
            (&["--bogus", "a"], "Unknown command line argument '--bogus'"),
            (
                &["--output=x", "a"],
                "Unknown command line argument '--output=x'",
            ),
            (&["a", "-o"], "for the -o option: requires a value"),
            (&["--print=all", "a"], "Cannot find option named 'all'"),
            (&["-q=maybe", "a"], "invalid value for boolean"),
            (&[], "Not enough positional command line arguments"),
            (&["-o", "x"], "Not enough positional command line arguments"),
        ] {
            let e = run(args).unwrap_err();
            assert!(e.contains(message), "{args:?}: {e}");
        }
    }

    #[test]
    fn help_and_version() {
        assert_eq!(run(&["--help", "a"]), Ok(Parsed::Help));
        assert_eq!(run(&["-h"]), Ok(Parsed::Help));
        assert_eq!(run(&["-help-hidden"]), Ok(Parsed::Help));
        assert_eq!(run(&["--version"]), Ok(Parsed::Version));
    }
}
