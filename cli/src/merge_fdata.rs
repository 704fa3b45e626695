//! `profmill merge-fdata FILE|DIR… [-o OUT]`: LLVM's `merge-fdata`, with its command line.
//!
//! The options are parsed the way LLVM's `cl` library parses merge-fdata's (checked against
//! `merge-fdata --help-hidden` of LLVM 22): one or two dashes, values after `=` or in the
//! next argument (`-o x`, `-o=x`, `--o=x`; `-ox` is an error there too), positionals split
//! at commas (`cl::CommaSeparated`), `--` ends the options. `-q` and `--print=…` only act on
//! YAML profiles in merge-fdata, so for fdata they are accepted with a warning and the
//! merged profile is still printed, as merge-fdata does. An unknown option is an error.

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use engine::bolt::fdata_merge::{expand_inputs, merge, Merged, Sources};

/// The raw arguments after `profmill merge-fdata`; parsed by [`parse`], not by clap.
#[derive(clap::Args)]
#[command(disable_help_flag = true, disable_version_flag = true)]
pub struct RawArgs {
    /// FILE|DIR… [-o OUT] (see `profmill merge-fdata --help`)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    args: Vec<OsString>,
}

pub fn run_subcommand(args: RawArgs) -> ExitCode {
    main(args.args, "profmill merge-fdata")
}

/// Runs merge-fdata on `args` (without the program name); `tool` prefixes messages.
pub fn main(args: Vec<OsString>, tool: &str) -> ExitCode {
    let options = match parse(args) {
        Ok(Parsed::Run(options)) => options,
        Ok(Parsed::Help) => {
            print!("{}", help(tool));
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Version) => {
            println!("profmill {} (merge-fdata)", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("{tool}: {message}.  Try: '{tool} --help'");
            return ExitCode::FAILURE;
        }
    };
    for warning in &options.warnings {
        eprintln!("{tool}: warning: {warning}");
    }
    match merge_and_write(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{tool}: error: {e}");
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

pub fn parse(args: Vec<OsString>) -> Result<Parsed, String> {
    let mut options = Options::default();
    let mut args = args.into_iter();
    let mut only_positionals = false;
    while let Some(arg) = args.next() {
        let option = arg
            .to_str()
            .filter(|a| !only_positionals && a.starts_with('-') && a.len() > 1);
        let Some(option) = option else {
            add_positional(&mut options, arg);
            continue;
        };
        if option == "--" {
            only_positionals = true;
            continue;
        }
        let body = option.strip_prefix("--").unwrap_or(&option[1..]);
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (body, None),
        };
        let mut value = |what: &str| {
            inline
                .clone()
                .or_else(|| args.next().map(|v| v.to_string_lossy().into_owned()))
                .ok_or_else(|| format!("for the -{name} option: requires a value ({what})"))
        };
        match name {
            "o" => options.output = Some(PathBuf::from(value("a file")?)),
            "q" => {
                if parse_bool(inline.as_deref()).ok_or_else(|| {
                    format!(
                        "for the -q option: '{}' is invalid value for boolean argument! Try 0 or 1",
                        inline.clone().unwrap_or_default()
                    )
                })? {
                    options.warnings.push(
                        "-q only applies to YAML profiles (as in merge-fdata); the merged fdata is still printed".into(),
                    );
                }
            }
            "print" => {
                let v = value("none, exec or branches")?;
                match v.as_str() {
                    "none" => {}
                    "exec" | "branches" => options.warnings.push(format!(
                        "--print={v} only applies to YAML profiles (as in merge-fdata); ignored"
                    )),
                    _ => {
                        return Err(format!(
                            "for the --print option: Cannot find option named '{v}'!"
                        ))
                    }
                }
            }
            "print-options" | "print-all-options" => options
                .warnings
                .push(format!("--{name} is not implemented; ignored")),
            "h" | "help" | "help-hidden" | "help-list" | "help-list-hidden" => {
                return Ok(Parsed::Help)
            }
            "version" => return Ok(Parsed::Version),
            _ => return Err(format!("Unknown command line argument '{option}'")),
        }
    }
    if options.inputs.is_empty() {
        return Err("Not enough positional command line arguments specified! Must specify at least 1 positional argument".into());
    }
    Ok(Parsed::Run(options))
}

/// A positional: split at commas like `cl::CommaSeparated` (only when it is valid UTF-8).
fn add_positional(options: &mut Options, arg: OsString) {
    match arg.to_str() {
        Some(text) => options.inputs.extend(text.split(',').map(PathBuf::from)),
        None => options.inputs.push(PathBuf::from(arg)),
    }
}

/// LLVM's boolean option values; a bare flag is true.
fn parse_bool(value: Option<&str>) -> Option<bool> {
    match value {
        None | Some("true" | "TRUE" | "True" | "1") => Some(true),
        Some("false" | "FALSE" | "False" | "0") => Some(false),
        Some(_) => None,
    }
}

fn help(tool: &str) -> String {
    format!(
        "OVERVIEW: merge multiple fdata into a single file (profmill, LLVM merge-fdata compatible)
USAGE: {tool} [options] <fdata1> [<fdata2>]...

Inputs may be files or directories (searched recursively); lists may be comma separated.
Counts and mispredictions are summed per location pair; the output is sorted.

OPTIONS:
  -o <file>         - Write output to <file> (default or '-': standard output)
  -q                - accepted for compatibility (YAML only in merge-fdata); ignored
  --print=<value>   - accepted for compatibility (YAML only in merge-fdata); ignored
  --help            - Display available options
  --version         - Display the version of this program
"
    )
}

fn merge_and_write(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let files = expand_inputs(&options.inputs)?;
    let sources = Sources::open(&files)?;
    let merged = merge(&sources)?;
    match options.output.as_deref() {
        Some(path) if path.as_os_str() != "-" => {
            engine::io::output::write_atomically(path, |w| merged.write(w))?
        }
        _ => write_stdout(&merged)?,
    }
    // merge-fdata's closing line, for scripts that look for it.
    eprintln!("Profile from {} files merged.", merged.files);
    Ok(())
}

/// Writes to standard output; a closed pipe (`| head`) ends the output quietly.
fn write_stdout(merged: &Merged) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 20, stdout.lock());
    match merged.write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
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
