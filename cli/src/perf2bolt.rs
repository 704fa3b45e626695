//! `profmill perf2bolt BINARY -p INPUT -o OUT [--pa] [--ba] [--ignore-build-id] [--pid N]`:
//! a drop-in for LLVM's perf2bolt, also reached through a link named `perf2bolt`. Options are
//! spelled as LLVM's command-line library spells them (`-o x`, `-o=x`, `--o=x`, `-pa`, `--pa`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use engine::perf::aggregate::{aggregate, Request};
use engine::perf::binary::BinaryInfo;
use engine::perf::capture::Input;
use engine::perf::mapping::Rules;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Options {
    pub binary: PathBuf,
    pub input: PathBuf,
    pub output: PathBuf,
    pub pre_aggregated: bool,
    pub basic: bool,
    pub ignore_build_id: bool,
    pub pid: Option<u32>,
}

/// Options that take a value, by every name LLVM accepts for them.
const VALUED: &[&str] = &["p", "perfdata", "o", "pid", "profile-format", "w"];
/// Options that change nothing we compute: accepted with a warning.
const IGNORED: &[&str] = &["v", "time-aggr", "time-rewrite", "j", "thread-count", "nl"];

pub fn parse(args: &[OsString]) -> Result<Options, String> {
    let mut o = Options::default();
    let mut positional: Vec<PathBuf> = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let text = arg.to_string_lossy();
        let Some(flag) = text.strip_prefix("--").or_else(|| text.strip_prefix('-')) else {
            positional.push(PathBuf::from(arg));
            continue;
        };
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (flag, None),
        };
        let value = if VALUED.contains(&name) {
            match inline {
                Some(v) => Some(v),
                None => Some(
                    it.next()
                        .ok_or_else(|| format!("option -{name} needs a value"))?
                        .to_string_lossy()
                        .into_owned(),
                ),
            }
        } else {
            inline
        };
        apply(&mut o, name, value)?;
    }
    match positional.as_slice() {
        [binary] => o.binary = binary.clone(),
        [] => return Err("no input binary given".into()),
        more => return Err(format!("expected one input binary, got {more:?}")),
    }
    if o.input.as_os_str().is_empty() {
        return Err("no profile given (-p FILE)".into());
    }
    if o.output.as_os_str().is_empty() {
        return Err("no output file given (-o FILE)".into());
    }
    Ok(o)
}

fn apply(o: &mut Options, name: &str, value: Option<String>) -> Result<(), String> {
    let boolean = |v: &Option<String>| !matches!(v.as_deref(), Some("0" | "false"));
    match name {
        "p" | "perfdata" => o.input = value.unwrap_or_default().into(),
        "o" => o.output = value.unwrap_or_default().into(),
        "pa" => o.pre_aggregated = boolean(&value),
        "ba" | "basic-events" => o.basic = boolean(&value),
        "ignore-build-id" => o.ignore_build_id = boolean(&value),
        "pid" => {
            let v = value.unwrap_or_default();
            o.pid = Some(
                v.parse()
                    .map_err(|_| format!("-pid: not a process id: {v}"))?,
            );
        }
        "profile-format" if value.as_deref() == Some("fdata") => {}
        "profile-format" | "w" => return Err("YAML profiles are not implemented yet".into()),
        "itrace" | "spe" | "heatmap" => {
            return Err(format!("-{name} is not implemented"));
        }
        "nl" => {
            eprintln!("profmill: warning: '-nl' is deprecated, please use '--ba' instead");
            o.basic = boolean(&value);
        }
        "ignore-interrupt-lbr" if boolean(&value) => {}
        _ if IGNORED.contains(&name) => {
            eprintln!("profmill: warning: ignoring option -{name} (no effect here)");
        }
        _ => eprintln!("profmill: warning: ignoring unknown option -{name}"),
    }
    Ok(())
}

pub fn run(args: &[OsString]) -> Result<(), Box<dyn std::error::Error>> {
    let o = parse(args)?;
    // The binary's functions are found while the profile is read: neither needs the other.
    let (binary, profile) = std::thread::scope(|scope| {
        let binary = scope.spawn(|| engine::bolt::loaded::LoadedBinary::load(&o.binary));
        let profile = if o.pre_aggregated {
            std::fs::read(&o.input)
                .map_err(engine::error::io_error(&o.input))
                .map_err(Box::from)
                .and_then(|data| {
                    engine::bolt::profile_from_preagg(&data)
                        .map_err(|e| format!("{}: {e}", o.input.display()).into())
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
    crate::aggregate::write_fdata_of(&binary, &profile, o.basic, &o.output)?;
    eprintln!("profmill: wrote {}", o.output.display());
    Ok(())
}

fn read_capture(
    o: &Options,
) -> Result<engine::perf::aggregate::BinaryProfile, Box<dyn std::error::Error>> {
    let request = Request {
        binaries: vec![BinaryInfo::load(&o.binary)?],
        basic: o.basic,
        pid: o.pid,
        ignore_build_id: o.ignore_build_id,
        rules: Rules::Current,
        threads: crate::default_threads(None),
        stream: false,
        // Symbolization walks traces by their start.
        trace_order: engine::perf::aggregate::TraceOrder::ByStart,
    };
    let input = if o.input == Path::new("-") {
        Input::Stdin
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
            pid: Some(42),
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
            assert_eq!(parse(&args(spelling)).unwrap(), expected, "{spelling:?}");
        }
    }

    #[test]
    fn missing_and_unsupported_options_are_errors() {
        assert!(parse(&args(&["bin", "-o", "x"])).is_err());
        assert!(parse(&args(&["-p", "d", "-o", "x"])).is_err());
        assert!(parse(&args(&["bin", "-p", "d", "-o", "x", "-w", "y.yaml"])).is_err());
        assert!(parse(&args(&["bin", "-p", "d", "-o"])).is_err());
        let o = parse(&args(&["bin", "-p", "d", "-o", "x", "--time-aggr", "-nl"])).unwrap();
        assert!(o.basic);
    }
}
