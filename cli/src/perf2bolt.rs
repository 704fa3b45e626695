//! `profmill perf2bolt BINARY -p INPUT -o OUT [--pa] [--ba] [--ignore-build-id] [--pid N]`:
//! a drop-in for LLVM's perf2bolt, also reached through a link named `perf2bolt`. Options are
//! spelled as LLVM's command-line library spells them (`-o x`, `-o=x`, `--o=x`, `-pa`, `--pa`).

use std::borrow::Cow;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use engine::bolt::Dialect;
use engine::perf::aggregate::{aggregate, BinaryProfile, KernelEntries, Request};
use engine::perf::binary::BinaryInfo;
use engine::perf::capture::Input;
use engine::perf::mapping::Rules;
use engine::perf::TraceOrder;

use crate::llvm_cl::{Opt, Tool};

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Options {
    pub binary: PathBuf,
    pub input: PathBuf,
    pub output: PathBuf,
    pub pre_aggregated: bool,
    pub basic: bool,
    pub ignore_build_id: bool,
    pub allow_stripped: bool,
    pub pid: Option<u32>,
    /// `--profile-format=yaml`: `-o` gets BOLT's YAML profile instead of fdata.
    pub yaml: bool,
    /// `-w FILE`: the YAML profile, written besides `-o`.
    pub save_profile: Option<PathBuf>,
    /// `--profile-use-dfs`: YAML blocks in depth-first order.
    pub use_dfs: bool,
}

/// perf2bolt's options (LLVM 22's `perf2bolt --help-hidden`, and `-nl` of LLVM 19).
const OPTIONS: &[Opt] = &[
    Opt::boolean(
        &["ba", "basic-events"],
        "aggregate basic events (without brstack info)",
    ),
    Opt::value(&["perfdata", "p"], "<string>", "<data file>"),
    Opt::value(&["o"], "<string>", "<output file>"),
    Opt::boolean(
        &["pa"],
        "skip perf and read data from a pre-aggregated file format",
    ),
    Opt::boolean(
        &["ignore-build-id"],
        "continue even if build-ids in input binary and perf.data mismatch",
    ),
    Opt::boolean(&["allow-stripped"], "allow processing of stripped binaries"),
    Opt::value(
        &["pid"],
        "<ulong>",
        "only use samples from process with specified PID",
    ),
    Opt::boolean(&["nl"], "deprecated spelling of --ba (LLVM 19)"),
    Opt::boolean(
        &["ignore-interrupt-lbr"],
        "ignore kernel interrupt LBR that happens asynchronously",
    )
    .default("true")
    .refused(),
    Opt::value(
        &["profile-format"],
        "<value>",
        "format to dump profile output in",
    )
    .choices(&[
        ("fdata", "offset-based plaintext format"),
        ("yaml", "dense YAML representation"),
    ])
    .default("fdata"),
    Opt::value(&["w"], "<string>", "save recorded profile to a file"),
    Opt::boolean(&["profile-use-dfs"], "use DFS order for YAML profile"),
    Opt::value(
        &["itrace"],
        "<string>",
        "Generate brstack info with perf itrace argument",
    )
    .refused(),
    Opt::boolean(&["spe"], "Enable Arm SPE mode.").refused(),
    Opt::value(&["heatmap"], "<string>", "print a heatmap to the file").refused(),
    Opt::value(
        &["max-samples"],
        "<ulong>",
        "maximum number of samples to read from LBR profile",
    )
    .refused(),
    Opt::value(
        &["v"],
        "<uint>",
        "set verbosity level for diagnostic output",
    )
    .default("0")
    .ignored("has no effect here"),
    Opt::boolean(&["time-aggr"], "time BOLT aggregator").ignored("has no effect here"),
    Opt::boolean(&["time-rewrite"], "print time spent in rewriting passes")
        .ignored("has no effect here"),
    Opt::value(&["thread-count"], "<uint>", "number of threads")
        .ignored("has no effect here (profmill uses every core)"),
    Opt::boolean(&["show-density"], "show profile density details").ignored("has no effect here"),
    Opt::boolean(
        &["aggregate-only"],
        "exit after writing aggregated data file",
    )
    .ignored("has no effect here (perf2bolt always stops there)"),
];

const TOOL: Tool = Tool {
    name: "perf2bolt",
    overview: "perf2bolt - BOLT data aggregator (profmill drop-in)",
    usage: "<executable>",
    options: &[OPTIONS],
    comma_positionals: false,
};

/// The options of a command line, or `None` when it asked for `--help` or `--version`
/// (printed here).
pub fn parse(args: &[OsString]) -> Result<Option<Options>, String> {
    let args = crate::response_files::expand(args.to_vec())?;
    let Some(args) = TOOL.parse_and_print(&args)? else {
        return Ok(None);
    };
    let mut o = Options::default();
    for opt in &args.options {
        match opt.name {
            "perfdata" => o.input = opt.text().into(),
            "o" => o.output = opt.text().into(),
            "pa" => o.pre_aggregated = opt.on(),
            "ba" => o.basic = opt.on(),
            "ignore-build-id" => o.ignore_build_id = opt.on(),
            "allow-stripped" => o.allow_stripped = opt.on(),
            "pid" => {
                let v = opt.text();
                o.pid = Some(
                    v.parse()
                        .map_err(|_| format!("-pid: not a process id: {v}"))?,
                );
            }
            "profile-format" => o.yaml = opt.text() == "yaml",
            "w" => o.save_profile = Some(opt.text().into()),
            "profile-use-dfs" => o.use_dfs = opt.on(),
            "nl" => {
                eprintln!("perf2bolt: warning: '-nl' is deprecated, please use '--ba' instead");
                o.basic = opt.on();
            }
            other => unreachable!("perf2bolt option {other} not applied"),
        }
    }
    match args.positionals.as_slice() {
        [binary] => o.binary = binary.into(),
        [] => return Err("no input binary given".into()),
        more => return Err(format!("expected one input binary, got {more:?}")),
    }
    if o.input.as_os_str().is_empty() {
        return Err("no profile given (-p FILE)".into());
    }
    if o.output.as_os_str().is_empty() {
        return Err("no output file given (-o FILE)".into());
    }
    Ok(Some(o))
}

pub fn run(args: &[OsString]) -> Result<(), Box<dyn std::error::Error>> {
    run_as(args, Dialect::Llvm22)
}

/// [`run`], writing YAML profiles with `dialect`'s rules (`perf2bolt-19`: LLVM 19's; fdata
/// follows LLVM 22 either way).
pub fn run_as(args: &[OsString], dialect: Dialect) -> Result<(), Box<dyn std::error::Error>> {
    let Some(o) = parse(args)? else {
        return Ok(());
    };
    let outputs = [Some(&o.output), o.save_profile.as_ref()];
    engine::io::output::refuse_overwriting_inputs(
        outputs.into_iter().flatten().map(PathBuf::as_path),
        [o.binary.as_path(), o.input.as_path()],
    )?;
    // The pre-aggregated text, read once (it may be a pipe) and kept only for the YAML view,
    // which reads it again.
    let wants_yaml = o.yaml || o.save_profile.is_some();
    let mut preagg_text = None;
    // The binary's functions are found while the profile is read: neither needs the other.
    let (binary, profile) = std::thread::scope(|scope| {
        let binary = scope
            .spawn(|| engine::bolt::loaded::LoadedBinary::load_with(&o.binary, o.allow_stripped));
        let profile = if o.pre_aggregated && crate::store::is_store(&o.input) {
            crate::store::profile_for(&o.input, &o.binary, o.ignore_build_id, TraceOrder::ByStart)
        } else if o.pre_aggregated {
            engine::io::input::read(&o.input)
                .map_err(engine::error::io_error(&o.input))
                .map_err(Box::from)
                .and_then(|data| {
                    let profile = engine::bolt::profile_from_preagg(&data)
                        .map_err(|e| format!("{}: {e}", o.input.display()).into());
                    preagg_text = wants_yaml.then_some(data);
                    profile
                })
        } else {
            read_capture(&o)
        };
        let binary = binary
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (binary, profile)
    });
    let profile = profile?;
    let binary = binary?;
    // A store says itself whether it holds IP samples only.
    let basic = o.basic || (profile.traces.is_empty() && !profile.ips.is_empty());
    // Pre-aggregated lines with a zero count add no mispredictions to inner branches in
    // perf2bolt's YAML: those branches come from the profile without them.
    let intra = match &preagg_text {
        Some(text) => Some(
            engine::bolt::profile_from_preagg_for_yaml(text)
                .map_err(|e| format!("{}: {e}", o.input.display()))?,
        ),
        None => None,
    };
    drop(preagg_text);
    // The last YAML written gets the profile itself, to drop once symbolized.
    let write_yaml = |profile: Cow<'_, BinaryProfile>, path: &Path| {
        let intra = intra.as_ref();
        let bar = crate::progress::Bar::phases("symbolizing and writing YAML");
        engine::bolt::loaded::write_yaml_with_intra(
            &binary, profile, intra, basic, o.use_dfs, dialect, path,
        )?;
        drop(bar);
        eprintln!("profmill: wrote {}", path.display());
        Ok::<_, engine::error::Error>(())
    };
    let write_fdata = |profile: Cow<'_, BinaryProfile>| {
        crate::aggregate::write_fdata_of(&binary, profile, basic, &o.output)?;
        eprintln!("profmill: wrote {}", o.output.display());
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    match (o.yaml, &o.save_profile) {
        (true, None) => write_yaml(Cow::Owned(profile), &o.output)?,
        (true, Some(w)) => {
            write_yaml(Cow::Borrowed(&profile), &o.output)?;
            write_yaml(Cow::Owned(profile), w)?;
        }
        (false, None) => write_fdata(Cow::Owned(profile))?,
        (false, Some(w)) => {
            write_fdata(Cow::Borrowed(&profile))?;
            write_yaml(Cow::Owned(profile), w)?;
        }
    }
    Ok(())
}

fn read_capture(
    o: &Options,
) -> Result<engine::perf::aggregate::BinaryProfile, Box<dyn std::error::Error>> {
    let request = Request {
        binaries: vec![BinaryInfo::load(&o.binary)?],
        discover: None,
        basic: o.basic,
        pid: o.pid,
        ignore_build_id: o.ignore_build_id,
        rules: Rules::Current,
        threads: crate::default_threads(None),
        stream: false,
        // Symbolization walks traces by their start.
        trace_order: engine::perf::aggregate::TraceOrder::ByStart,
        skylake_fix: true,
        kernel_entries: KernelEntries::Skip,
    };
    let input = if o.input == Path::new("-") {
        Input::stream("<stdin>", std::io::stdin())
    } else {
        Input::File(o.input.clone())
    };
    let bar =
        crate::progress::Bar::bytes(std::fs::metadata(&o.input).ok().map(|m| m.len()), "reading");
    let mut result = aggregate(&input, &request, &bar)?;
    if result.basic && !o.basic {
        eprintln!(
            "profmill: warning: the samples have no branch stacks; use --ba for a basic profile"
        );
        return Ok(engine::perf::aggregate::BinaryProfile::default());
    }
    Ok(result.profiles.swap_remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn llvm_spellings_agree() {
        let expected = Options {
            binary: "bin".into(),
            input: "p.data".into(),
            output: "out.fdata".into(),
            pre_aggregated: true,
            basic: false,
            ignore_build_id: true,
            allow_stripped: false,
            pid: Some(42),
            ..Options::default()
        };
        for spelling in [
            &[
                "bin",
                "-p",
                "p.data",
                "-o",
                "out.fdata",
                "-pa",
                "-ignore-build-id",
                "-pid",
                "42",
            ][..],
            &[
                "--pa",
                "bin",
                "--p=p.data",
                "--o=out.fdata",
                "--ignore-build-id",
                "--pid=42",
            ],
            &[
                "-o=out.fdata",
                "-perfdata=p.data",
                "--pa=1",
                "bin",
                "-ignore-build-id=true",
                "--pid",
                "42",
            ],
        ] {
            assert_eq!(
                parse(&args(spelling)).unwrap().as_ref(),
                Some(&expected),
                "{spelling:?}"
            );
        }
    }

    #[test]
    fn missing_and_unsupported_options_are_errors() {
        assert!(parse(&args(&["bin", "-o", "x"])).is_err());
        assert!(parse(&args(&["-p", "d", "-o", "x"])).is_err());
        let o = parse(&args(&["bin", "-p", "d", "-o", "x", "-w", "y.yaml"]))
            .unwrap()
            .unwrap();
        assert_eq!(o.save_profile, Some(PathBuf::from("y.yaml")));
        assert!(parse(&args(&["bin", "-p", "d", "-o"])).is_err());
        let o = parse(&args(&["bin", "-p", "d", "-o", "x", "--time-aggr", "-nl"]))
            .unwrap()
            .unwrap();
        assert!(o.basic);
    }

    #[test]
    fn bools_and_unknown_options_as_llvm_reads_them() {
        let base = ["bin", "-p", "d", "-o", "x"];
        let with = |extra: &[&str]| {
            let mut a: Vec<&str> = base.to_vec();
            a.extend_from_slice(extra);
            parse(&args(&a))
        };
        for (arg, pa) in [
            ("--pa=FALSE", false),
            ("--pa=False", false),
            ("-pa=0", false),
            ("--pa=True", true),
        ] {
            assert_eq!(with(&[arg]).unwrap().unwrap().pre_aggregated, pa, "{arg}");
        }
        let e = with(&["--pa=no"]).unwrap_err();
        assert!(
            e.contains("'no' is invalid value for boolean argument! Try 0 or 1"),
            "{e}"
        );
        let e = with(&["--bogus"]).unwrap_err();
        assert_eq!(
            e,
            "perf2bolt: Unknown command line argument '--bogus'.  Did you mean '--ba'?"
        );
        // `-v` takes a value: `-v 1` leaves one positional.
        assert_eq!(
            with(&["-v", "1"]).unwrap().unwrap().binary,
            PathBuf::from("bin")
        );
        assert!(with(&["--ignore-interrupt-lbr=false"]).is_err());
        assert!(with(&["--ignore-interrupt-lbr", "--profile-format=fdata"]).is_ok());
        assert!(with(&["--profile-format=yaml"]).unwrap().unwrap().yaml);
        assert!(with(&["--profile-format=xml"]).is_err());
    }
}
