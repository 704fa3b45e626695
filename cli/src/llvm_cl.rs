//! LLVM's `cl` command-line conventions, for the drop-in personalities (perf2bolt,
//! merge-fdata, llvm-profdata): each drop-in declares a table of its options and this module
//! reads the command line as LLVM's `cl` library reads it, prints `--help` in LLVM's layout,
//! and applies one policy to what profmill does not implement.
//!
//! What is read as LLVM reads it (checked against `llvm/lib/Support/CommandLine.cpp` and the
//! LLVM 19 and 22 tools):
//! * `-x`, `--x`, `-x=v`, `--x=v`, and for options that need a value `-x v`, `--x v` (the next
//!   argument is taken whatever it looks like);
//! * booleans: a bare flag is true, `=true|TRUE|True|1` and `=false|FALSE|False|0` are read,
//!   anything else is "'X' is invalid value for boolean argument! Try 0 or 1"; `-x 0` is the
//!   flag and a positional `0`, as in LLVM;
//! * flags that take no value (LLVM's enum-valued flags like `--sample`): `--x=v` is an error;
//! * lists (`cl::CommaSeparated`): every occurrence adds its comma-separated items;
//! * `--` ends the options; `-` alone is a positional (standard input);
//! * an option not in the table: `Unknown command line argument '--bogus'.  Did you mean
//!   '--ba'?`, naming the nearest option by edit distance, as LLVM does.
//!
//! Not modelled: option grouping and prefix options (no drop-in declares any; `-ofile` is an
//! unknown argument in the LLVM tools too). Response files (`@file`) are expanded before
//! this module reads the arguments, by [`crate::response_files`].
//!
//! The policy, per option: implemented; accepted and ignored with a warning (it changes
//! nothing profmill writes); or refused (it would change the output, so it is never silently
//! dropped). An ignored or refused option given at its default value changes nothing and is
//! accepted quietly.

use std::ffi::OsString;
use std::fmt::Write as _;

/// How an option takes its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// No value allowed (`--sample`; `--sample=1` is an error).
    Flag,
    /// `cl::opt<bool>`: bare is true, or `=true/false/1/0/…`.
    Bool,
    /// Needs a value: `-x v`, `-x=v`.
    Value,
    /// A value split at commas; repeatable (`cl::list` with `cl::CommaSeparated`).
    List,
}

/// What profmill does with an option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Implemented,
    /// Accepted with a warning; the text says why it changes nothing.
    Ignored(&'static str),
    /// Not implemented and it would change the output: an error unless at its default.
    Refused,
}

/// One option of a drop-in's table.
#[derive(Debug)]
pub struct Opt {
    /// The name and its aliases, without dashes; the first is the one shown.
    pub names: &'static [&'static str],
    pub kind: Kind,
    /// Shown in the help (`<string>`); `<uint>`, `<ulong>` and `<number>` values are checked.
    pub value_name: &'static str,
    pub help: &'static str,
    pub policy: Policy,
    /// The value at which an ignored or refused option changes nothing (`false` for bools).
    pub default: Option<&'static str>,
    /// The allowed values and their help, when the option is an enumeration.
    pub choices: &'static [(&'static str, &'static str)],
}

impl Opt {
    const fn new(names: &'static [&'static str], kind: Kind, value_name: &'static str) -> Opt {
        Opt {
            names,
            kind,
            value_name,
            help: "",
            policy: Policy::Implemented,
            default: None,
            choices: &[],
        }
    }
    pub const fn flag(names: &'static [&'static str], help: &'static str) -> Opt {
        Opt::new(names, Kind::Flag, "").help(help)
    }
    pub const fn boolean(names: &'static [&'static str], help: &'static str) -> Opt {
        Opt::new(names, Kind::Bool, "").help(help)
    }
    pub const fn value(
        names: &'static [&'static str],
        value_name: &'static str,
        help: &'static str,
    ) -> Opt {
        Opt::new(names, Kind::Value, value_name).help(help)
    }
    pub const fn list(
        names: &'static [&'static str],
        value_name: &'static str,
        help: &'static str,
    ) -> Opt {
        Opt::new(names, Kind::List, value_name).help(help)
    }
    const fn help(mut self, help: &'static str) -> Opt {
        self.help = help;
        self
    }
    /// Accepted with a warning: `why` completes "--name …" (e.g. "has no effect here").
    pub const fn ignored(mut self, why: &'static str) -> Opt {
        self.policy = Policy::Ignored(why);
        self
    }
    pub const fn refused(mut self) -> Opt {
        self.policy = Policy::Refused;
        self
    }
    pub const fn default(mut self, value: &'static str) -> Opt {
        self.default = Some(value);
        self
    }
    pub const fn choices(mut self, choices: &'static [(&'static str, &'static str)]) -> Opt {
        self.choices = choices;
        self
    }

    pub fn name(&self) -> &'static str {
        self.names[0]
    }

    /// Whether `value` leaves the option at its default (and so changes nothing).
    fn at_default(&self, value: &Value) -> bool {
        match value {
            Value::Bool(b) => self.default.map_or(!b, |d| parse_bool(d) == Some(*b)),
            Value::Text(v) => self.default == Some(v.as_str()),
            Value::Flag => false,
        }
    }
}

/// `-x` for one-letter names, `--name` otherwise (LLVM's `PrintArg`).
pub fn dashed(name: &str) -> String {
    if name.chars().count() == 1 {
        format!("-{name}")
    } else {
        format!("--{name}")
    }
}

/// A drop-in's command line.
pub struct Tool {
    /// As messages and the help name it: `perf2bolt`, `llvm-profdata merge`.
    pub name: &'static str,
    pub overview: &'static str,
    /// What follows `[options]` in the usage line.
    pub usage: &'static str,
    /// The option tables (several, so that tables can share common parts).
    pub options: &'static [&'static [Opt]],
    /// Positionals are split at commas (`cl::CommaSeparated` on the positional list).
    pub comma_positionals: bool,
}

/// Generic options every drop-in has.
const HELP_NAMES: &[&str] = &["help", "h", "help-hidden", "help-list", "help-list-hidden"];
const GENERIC: &[Opt] = &[
    Opt::flag(&["help"], "Display available options"),
    Opt::flag(&["version"], "Display the version of this program"),
    Opt::boolean(
        &["print-options"],
        "Print non-default options after command line parsing",
    )
    .ignored("is not implemented"),
    Opt::boolean(
        &["print-all-options"],
        "Print all option values after command line parsing",
    )
    .ignored("is not implemented"),
];

impl Tool {
    fn all(&self) -> impl Iterator<Item = &'static Opt> + '_ {
        self.options.iter().flat_map(|t| t.iter()).chain(GENERIC)
    }

    fn find(&self, name: &str) -> Option<&'static Opt> {
        self.all().find(|o| o.names.contains(&name))
    }

    /// LLVM's `LookupNearestOption`: the option name nearest `arg` (without its dashes) by
    /// edit distance; with `=value` kept when the option takes a value.
    fn nearest(&self, arg: &str) -> Option<String> {
        let (lhs, rhs) = arg.split_once('=').unwrap_or((arg, ""));
        let mut best: Option<(usize, String)> = None;
        for opt in self.all() {
            let takes_value = opt.kind != Kind::Flag;
            let flag = if takes_value { lhs } else { arg };
            for name in opt.names.iter().chain(if opt.name() == "help" {
                HELP_NAMES
            } else {
                &[]
            }) {
                let d = edit_distance(flag, name);
                if best.as_ref().is_none_or(|(b, _)| d < *b) {
                    let shown = if rhs.is_empty() || !takes_value {
                        dashed(name)
                    } else {
                        format!("{}={rhs}", dashed(name))
                    };
                    best = Some((d, shown));
                }
            }
        }
        best.map(|(_, s)| s)
    }

    /// The `--help` text, in LLVM's layout.
    pub fn help(&self) -> String {
        let mut lines: Vec<(String, String)> = Vec::new();
        let mut opts: Vec<&Opt> = self.options.iter().flat_map(|t| t.iter()).collect();
        opts.sort_by_key(|o| o.name());
        for opt in opts {
            let mut text = opt.help.to_string();
            match opt.policy {
                Policy::Implemented => {}
                Policy::Ignored(why) => {
                    let _ = write!(text, " [profmill: accepted, ignored: {why}]");
                }
                Policy::Refused => match opt.default {
                    Some(d) => {
                        let _ = write!(
                            text,
                            " [profmill: only {}={d} is implemented]",
                            dashed(opt.name())
                        );
                    }
                    None => text.push_str(" [profmill: not implemented, refused]"),
                },
            }
            lines.push((spelled_with_value(opt.name(), opt), text));
            for (value, help) in opt.choices {
                lines.push((format!("  ={value}"), format!("  {help}")));
            }
            for alias in &opt.names[1..] {
                lines.push((
                    spelled_with_value(alias, opt),
                    format!("Alias for {}", dashed(opt.name())),
                ));
            }
        }
        let generic: Vec<(String, String)> = GENERIC
            .iter()
            .map(|o| {
                let mut text = o.help.to_string();
                if let Policy::Ignored(why) = o.policy {
                    let _ = write!(text, " [profmill: accepted, ignored: {why}]");
                }
                (dashed(o.name()), text)
            })
            .collect();
        let width = lines
            .iter()
            .chain(&generic)
            .map(|(l, _)| l.len())
            .max()
            .unwrap_or(0);
        let mut out = format!(
            "OVERVIEW: {}\n\nUSAGE: {} [options] {}\n\nOPTIONS:\n\n",
            self.overview, self.name, self.usage
        );
        let section = |out: &mut String, title: &str, lines: &[(String, String)]| {
            let _ = writeln!(out, "{title}:\n");
            for (left, right) in lines {
                let _ = writeln!(out, "  {left:width$} - {right}");
            }
            out.push('\n');
        };
        section(&mut out, "General options", &lines);
        section(&mut out, "Generic Options", &generic);
        out.pop();
        out
    }

    /// Reads `args` (without the program name).
    pub fn parse(&self, args: &[OsString]) -> Result<Parsed, String> {
        self.parse_inner(args)
            .map_err(|e| format!("{}: {e}", self.name))
    }

    /// [`Tool::parse`], with `--help` and `--version` printed (then `None`) and the warnings
    /// of ignored options printed.
    pub fn parse_and_print(&self, args: &[OsString]) -> Result<Option<Args>, String> {
        match self.parse(args)? {
            Parsed::Help => {
                print!("{}", self.help());
                Ok(None)
            }
            Parsed::Version => {
                print!("{}", version(self.name));
                Ok(None)
            }
            Parsed::Run(args) => {
                for w in &args.warnings {
                    eprintln!("{}: warning: {w}", self.name);
                }
                Ok(Some(args))
            }
        }
    }

    fn parse_inner(&self, args: &[OsString]) -> Result<Parsed, String> {
        let mut out = Args::default();
        let mut i = 0;
        let mut only_positionals = false;
        while i < args.len() {
            let raw = &args[i];
            i += 1;
            let text = raw.to_string_lossy();
            if only_positionals || !text.starts_with('-') || text == "-" {
                self.positional(&mut out, raw);
                continue;
            }
            if text == "--" {
                only_positionals = true;
                continue;
            }
            let body = text
                .strip_prefix("--")
                .unwrap_or_else(|| &text[1..])
                .to_string();
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (body.clone(), None),
            };
            if HELP_NAMES.contains(&name.as_str()) {
                return Ok(Parsed::Help);
            }
            if name == "version" {
                return Ok(Parsed::Version);
            }
            let Some(opt) = self.find(&name) else {
                let mut message = format!("Unknown command line argument '{text}'.");
                if let Some(near) = self.nearest(&body) {
                    let _ = write!(message, "  Did you mean '{near}'?");
                }
                return Err(message);
            };
            let shown = dashed(&name);
            let mut values = Vec::new();
            match opt.kind {
                Kind::Flag => {
                    if let Some(v) = inline {
                        return Err(format!(
                            "for the {shown} option: does not allow a value! '{v}' specified."
                        ));
                    }
                    values.push(Value::Flag);
                }
                Kind::Bool => {
                    let b = match inline.as_deref() {
                        None => true,
                        Some(v) => parse_bool(v).ok_or_else(|| {
                            format!(
                                "for the {shown} option: '{v}' is invalid value for boolean argument! Try 0 or 1"
                            )
                        })?,
                    };
                    values.push(Value::Bool(b));
                }
                Kind::Value | Kind::List => {
                    let v = match inline {
                        Some(v) => v,
                        None => {
                            let next = args.get(i).ok_or_else(|| {
                                format!("for the {shown} option: requires a value!")
                            })?;
                            i += 1;
                            next.to_string_lossy().into_owned()
                        }
                    };
                    let items: Vec<&str> = if opt.kind == Kind::List {
                        v.split(',').collect()
                    } else {
                        vec![v.as_str()]
                    };
                    for item in items {
                        check_value(opt, &shown, item)?;
                        values.push(Value::Text(item.to_string()));
                    }
                }
            }
            for value in values {
                let spelled = match &value {
                    Value::Text(v) => format!("{shown}={v}"),
                    Value::Bool(false) => format!("{shown}=false"),
                    _ => shown.clone(),
                };
                match opt.policy {
                    Policy::Implemented => out.options.push(Occurrence {
                        name: opt.name(),
                        value,
                    }),
                    _ if opt.at_default(&value) => {}
                    Policy::Ignored(why) => out.warnings.push(format!("{spelled} {why}; ignored")),
                    Policy::Refused => {
                        return Err(format!(
                            "{spelled} is not implemented by profmill (it would change the output)"
                        ))
                    }
                }
            }
        }
        Ok(Parsed::Run(out))
    }

    fn positional(&self, out: &mut Args, raw: &OsString) {
        match raw.to_str() {
            Some(text) if self.comma_positionals => {
                out.positionals.extend(text.split(',').map(OsString::from))
            }
            _ => out.positionals.push(raw.clone()),
        }
    }
}

/// `-o <string>` for one-letter names, `--name=<string>` otherwise; bare for flags.
fn spelled_with_value(name: &str, opt: &Opt) -> String {
    let value_name = match (opt.kind, opt.choices.is_empty()) {
        (Kind::Flag | Kind::Bool, _) => return dashed(name),
        (_, false) => "<value>",
        _ => opt.value_name,
    };
    if name.chars().count() == 1 {
        format!("-{name} {value_name}")
    } else {
        format!("--{name}={value_name}")
    }
}

/// Enumerations and numbers, checked as LLVM's parsers check them.
fn check_value(opt: &Opt, shown: &str, v: &str) -> Result<(), String> {
    if !opt.choices.is_empty() && !opt.choices.iter().any(|(c, _)| *c == v) {
        return Err(format!(
            "for the {shown} option: Cannot find option named '{v}'!"
        ));
    }
    let numeric = match opt.value_name {
        "<uint>" => v.parse::<u32>().is_ok(),
        "<ulong>" => v.parse::<u64>().is_ok(),
        "<number>" => v.parse::<f64>().is_ok() || v.parse::<u64>().is_ok(),
        _ => true,
    };
    if !numeric {
        let ty = opt.value_name.trim_matches(['<', '>']);
        return Err(format!(
            "for the {shown} option: '{v}' value invalid for {ty} argument!"
        ));
    }
    Ok(())
}

/// LLVM's `parser<bool>`.
pub fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "true" | "TRUE" | "True" | "1" => Some(true),
        "false" | "FALSE" | "False" | "0" => Some(false),
        _ => None,
    }
}

/// Levenshtein distance (insertions, deletions, replacements), as `StringRef::edit_distance`.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// An option's value on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Flag,
    Bool(bool),
    Text(String),
}

/// One implemented option as given, in command-line order (the last one given wins, as in
/// LLVM, when the drop-in applies them in order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Occurrence {
    /// The option's first name, whichever alias was given.
    pub name: &'static str,
    pub value: Value,
}

impl Occurrence {
    /// The boolean value (a flag is true).
    pub fn on(&self) -> bool {
        !matches!(self.value, Value::Bool(false))
    }
    /// The text value (empty for flags and bools).
    pub fn text(&self) -> &str {
        match &self.value {
            Value::Text(v) => v,
            _ => "",
        }
    }
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Args {
    pub options: Vec<Occurrence>,
    pub positionals: Vec<OsString>,
    /// Accepted options that change nothing, as messages ("--x=1 is …; ignored").
    pub warnings: Vec<String>,
}

impl Args {
    /// The positionals as UTF-8 (lossy).
    pub fn positional_strings(&self) -> Vec<String> {
        self.positionals
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect()
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    Run(Args),
    Help,
    Version,
}

/// `--version`'s text for a drop-in.
pub fn version(tool: &str) -> String {
    format!("profmill {} ({tool} drop-in)\n", env!("CARGO_PKG_VERSION"))
}

/// The arguments as `OsString`s, for [`Tool::parse`].
pub fn os_args(args: &[String]) -> Vec<std::ffi::OsString> {
    args.iter().map(std::ffi::OsString::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPTS: &[Opt] = &[
        Opt::boolean(&["ba", "basic-events"], "basic events"),
        Opt::value(&["o", "output"], "<file>", "Output file"),
        Opt::boolean(&["pa"], "pre-aggregated"),
        Opt::flag(&["sample"], "Sample profile"),
        Opt::list(&["cutoffs"], "<list>", "cutoffs"),
        Opt::value(&["n"], "<uint>", "a number"),
        Opt::value(&["print"], "<value>", "what to print")
            .choices(&[("none", "nothing"), ("exec", "execs")])
            .default("none")
            .ignored("only applies to YAML"),
        Opt::boolean(&["quiet"], "quiet").ignored("has no effect here"),
        Opt::boolean(&["trim"], "trim").refused(),
        Opt::value(&["limit"], "<ulong>", "limit")
            .default("0")
            .refused(),
    ];
    const TOOL: Tool = Tool {
        name: "tool",
        overview: "a test tool",
        usage: "<file>",
        options: &[OPTS],
        comma_positionals: false,
    };

    fn parse(args: &[&str]) -> Result<Args, String> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        match TOOL.parse(&args)? {
            Parsed::Run(a) => Ok(a),
            other => panic!("{other:?}"),
        }
    }

    fn occ(name: &'static str, value: Value) -> Occurrence {
        Occurrence { name, value }
    }

    #[test]
    fn every_spelling_of_a_value() {
        for spelling in [
            &["-o", "x"][..],
            &["--o", "x"],
            &["-o=x"],
            &["--o=x"],
            &["-output", "x"],
            &["--output=x"],
        ] {
            let a = parse(spelling).unwrap();
            assert_eq!(
                a.options,
                [occ("o", Value::Text("x".into()))],
                "{spelling:?}"
            );
            assert!(a.positionals.is_empty());
        }
        // The next argument is the value whatever it looks like; `=` keeps the rest.
        assert_eq!(parse(&["-o", "-x"]).unwrap().options[0].text(), "-x");
        assert_eq!(parse(&["-o=a=b"]).unwrap().options[0].text(), "a=b");
        assert_eq!(parse(&["-o="]).unwrap().options[0].text(), "");
    }

    #[test]
    fn bools_as_llvm_reads_them() {
        for (arg, expected) in [
            ("--pa", true),
            ("-pa", true),
            ("--pa=true", true),
            ("--pa=TRUE", true),
            ("--pa=True", true),
            ("--pa=1", true),
            ("--pa=false", false),
            ("--pa=FALSE", false),
            ("-pa=False", false),
            ("--pa=0", false),
        ] {
            assert_eq!(
                parse(&[arg]).unwrap().options,
                [occ("pa", Value::Bool(expected))],
                "{arg}"
            );
        }
        for bad in ["--pa=yes", "--pa=", "--pa=2", "--pa=false "] {
            let e = parse(&[bad]).unwrap_err();
            let v = bad.split_once('=').unwrap().1;
            assert_eq!(
                e,
                format!("tool: for the --pa option: '{v}' is invalid value for boolean argument! Try 0 or 1")
            );
        }
        // `-pa 0`: the flag, then a positional (bools never take the next argument).
        let a = parse(&["-pa", "0"]).unwrap();
        assert_eq!(a.options, [occ("pa", Value::Bool(true))]);
        assert_eq!(a.positionals, ["0"]);
        // Aliases report the option's first name.
        assert_eq!(parse(&["--basic-events"]).unwrap().options[0].name, "ba");
    }

    #[test]
    fn flags_take_no_value() {
        assert_eq!(
            parse(&["-sample"]).unwrap().options,
            [occ("sample", Value::Flag)]
        );
        assert_eq!(
            parse(&["--sample=1"]).unwrap_err(),
            "tool: for the --sample option: does not allow a value! '1' specified."
        );
    }

    #[test]
    fn lists_split_at_commas_and_repeat() {
        let a = parse(&["--cutoffs=1,2", "--cutoffs", "3"]).unwrap();
        let values: Vec<&str> = a.options.iter().map(Occurrence::text).collect();
        assert_eq!(values, ["1", "2", "3"]);
        let tool = Tool {
            comma_positionals: true,
            ..TOOL
        };
        let a = tool
            .parse(&["a,b".into(), "c".into()])
            .map(|p| match p {
                Parsed::Run(a) => a.positionals,
                _ => unreachable!(),
            })
            .unwrap();
        assert_eq!(a, ["a", "b", "c"]);
    }

    #[test]
    fn double_dash_and_stdin() {
        let a = parse(&["-", "--pa", "--", "-o", "--", "x"]).unwrap();
        assert_eq!(a.positionals, ["-", "-o", "--", "x"]);
        assert_eq!(a.options, [occ("pa", Value::Bool(true))]);
    }

    #[test]
    fn unknown_options_name_the_nearest() {
        assert_eq!(
            parse(&["--bogus"]).unwrap_err(),
            "tool: Unknown command line argument '--bogus'.  Did you mean '--ba'?"
        );
        assert_eq!(
            parse(&["-outptu=x"]).unwrap_err(),
            "tool: Unknown command line argument '-outptu=x'.  Did you mean '--output=x'?"
        );
        // A flag's suggestion does not carry the value.
        assert!(parse(&["--sampel=1"])
            .unwrap_err()
            .ends_with("Did you mean '--sample'?"));
        // No prefix matching or grouping: `-ox` is unknown.
        assert!(parse(&["-ox"])
            .unwrap_err()
            .contains("Unknown command line argument '-ox'"));
    }

    #[test]
    fn missing_values_and_bad_numbers() {
        assert_eq!(
            parse(&["x", "-o"]).unwrap_err(),
            "tool: for the -o option: requires a value!"
        );
        assert_eq!(
            parse(&["--output"]).unwrap_err(),
            "tool: for the --output option: requires a value!"
        );
        assert_eq!(
            parse(&["-n=x"]).unwrap_err(),
            "tool: for the -n option: 'x' value invalid for uint argument!"
        );
        assert_eq!(
            parse(&["--print=all"]).unwrap_err(),
            "tool: for the --print option: Cannot find option named 'all'!"
        );
    }

    #[test]
    fn ignored_options_warn_unless_at_their_default() {
        let a = parse(&[
            "--quiet",
            "--print=exec",
            "--quiet=0",
            "--print",
            "none",
            "f",
        ])
        .unwrap();
        assert!(a.options.is_empty());
        assert_eq!(a.positionals, ["f"]);
        assert_eq!(
            a.warnings,
            [
                "--quiet has no effect here; ignored",
                "--print=exec only applies to YAML; ignored"
            ]
        );
    }

    #[test]
    fn refused_options_are_errors_unless_at_their_default() {
        assert_eq!(
            parse(&["--trim"]).unwrap_err(),
            "tool: --trim is not implemented by profmill (it would change the output)"
        );
        assert!(parse(&["--limit=5"])
            .unwrap_err()
            .contains("--limit=5 is not implemented"));
        let a = parse(&["--trim=false", "--limit", "0"]).unwrap();
        assert!(a.options.is_empty() && a.warnings.is_empty());
    }

    #[test]
    fn help_and_version() {
        for arg in ["-help", "--help", "-h", "--help-hidden", "--help-list"] {
            assert_eq!(TOOL.parse(&[arg.into()]), Ok(Parsed::Help), "{arg}");
        }
        assert_eq!(TOOL.parse(&["--version".into()]), Ok(Parsed::Version));
        // After `--`, they are positionals.
        assert!(matches!(
            TOOL.parse(&["--".into(), "--help".into()]),
            Ok(Parsed::Run(_))
        ));
        let help = TOOL.help();
        assert!(
            help.starts_with("OVERVIEW: a test tool\n\nUSAGE: tool [options] <file>\n\nOPTIONS:\n")
        );
        let squeezed: Vec<String> = help
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        for line in [
            "-o <file> - Output file",
            "--output=<file> - Alias for -o",
            "--print=<value> - what to print [profmill: accepted, ignored: only applies to YAML]",
            "=exec - execs",
            "--trim - trim [profmill: not implemented, refused]",
            "--version - Display the version of this program",
        ] {
            assert!(squeezed.iter().any(|l| l == line), "{line}\n{help}");
        }
        // One column for every description, as LLVM aligns them.
        let columns: std::collections::HashSet<usize> = help
            .lines()
            .filter(|l| l.starts_with("  -"))
            .map(|l| l.find(" - ").unwrap())
            .collect();
        assert_eq!(columns.len(), 1, "{help}");
    }

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("bogus", "ba"), 4);
        assert_eq!(edit_distance("", "ab"), 2);
        assert_eq!(edit_distance("outptu", "output"), 2);
        assert_eq!(edit_distance("same", "same"), 0);
    }
}
