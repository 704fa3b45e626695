//! `profmill merge-fdata FILE|DIR… [-o OUT]`: LLVM's `merge-fdata`, with its command line.
//!
//! The options are parsed the way LLVM's `cl` library parses merge-fdata's (checked against
//! `merge-fdata --help-hidden` of LLVM 22): one or two dashes, values after `=` or in the
//! next argument (`-o x`, `-o=x`, `--o=x`; `-ox` is an error there too), positionals split
//! at commas (`cl::CommaSeparated`), `--` ends the options (read by [`crate::llvm_cl`]).
//! `-q` and `--print=…` only act on YAML profiles in merge-fdata, so for fdata they are
//! accepted with a warning and the merged profile is still printed, as merge-fdata does.
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
    Opt::boolean(&["q"], "do not print merge summary (YAML profiles)").ignored(
        "only applies to YAML profiles (as in merge-fdata); the merged fdata is still printed",
    ),
    Opt::value(
        &["print"],
        "<value>",
        "print function statistics (YAML profiles)",
    )
    .choices(&[
        ("none", "do not print"),
        ("exec", "print functions sorted by execution count"),
        ("branches", "print functions sorted by total branch count"),
    ])
    .default("none")
    .ignored("only applies to YAML profiles (as in merge-fdata)"),
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
    if engine::bolt::yaml_merge::first_is_yaml(&files)? {
        return merge_yaml_and_write(options, &files);
    }
    let sources = Sources::open(&files)?;
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
    files: &[PathBuf],
) -> Result<(), Box<dyn std::error::Error>> {
    for f in files {
        eprintln!("Merging data from {}...", f.display());
    }
    let merged = engine::bolt::yaml_merge::merge(files)?;
    for warning in &merged.warnings {
        eprintln!("WARNING: {warning}");
    }
    // merge-fdata writes with `yaml::Output`'s default wrap column.
    let text = formats::bolt::yaml::write_wrapped(&merged.profile, 70);
    match options.output.as_deref() {
        Some(path) if path.as_os_str() != "-" => {
            engine::io::output::write_atomically(path, |w| w.write_all(text.as_bytes()))?
        }
        _ => {
            let mut out = io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
                other => other?,
            }
        }
    }
    eprintln!(
        "Data for {} unique objects successfully merged.",
        merged.profile.functions.len()
    );
    Ok(())
}

/// LLVM 19's merge (the misprediction count is part of a line's key).
fn merge_and_write_19(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let files = expand_inputs(&options.inputs)?;
    eprintln!("Using legacy profile format.");
    let merged = engine::bolt::fdata_merge_19::merge_legacy_19(&files)?;
    match options.output.as_deref() {
        Some(path) if path.as_os_str() != "-" => {
            engine::io::output::write_atomically(path, |w| merged.write(w))?
        }
        _ => {
            let stdout = io::stdout();
            let mut out = io::BufWriter::with_capacity(1 << 20, stdout.lock());
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
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 20, stdout.lock());
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
    fn yaml_only_options_warn() {
        let o = options(&["-q", "--print=exec", "a", "-print", "branches", "--q=false"]);
        assert_eq!(o.inputs, [PathBuf::from("a")]);
        assert_eq!(o.warnings.len(), 3, "{:?}", o.warnings);
        assert!(options(&["--print=none", "a"]).warnings.is_empty());
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
