//! The `llvm-profgen` drop-in: LLVM 19's command line (`--binary=`, `--perfdata=`,
//! `--output=`, `--format=`) over `profmill autofdo --style llvm-profgen`.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::autofdo::{Args, StyleArg};
use crate::llvm_cl::{Opt, Tool};
use crate::sampleprof::SampleFormat;

const OPTIONS: &[Opt] = &[
    Opt::value(&["binary"], "<string>", "Path of profiled executable binary."),
    Opt::value(&["perfdata"], "<string>", "Path of raw perf data created by Linux perf tool (it should be profiled with -b)"),
    Opt::value(&["output", "o"], "<string>", "Output profile file"),
    Opt::value(&["format"], "<value>", "Format of output profile")
        .choices(&[
            ("binary", "Binary encoding"),
            ("extbinary", "Extensible binary encoding (default)"),
            ("text", "Text encoding"),
            ("gcc", "GCC encoding (only meaningful for -sample)"),
        ]),
    Opt::value(&["perfscript"], "<string>", "Path of perf-script trace created by Linux perf tool with `script` command(the raw perf.data should be profiled with -b)").refused(),
    Opt::value(&["unsymbolized-profile"], "<string>", "Path of the unsymbolized profile created by `llvm-profgen` with `--skip-symbolization`").refused(),
    Opt::boolean(&["skip-symbolization"], "Dump the unsymbolized profile to the output file. It will show unsymbolized contexts and the ranges and branch counts of each context.").refused(),
    Opt::value(&["pid"], "<string>", "Process ID for the input binary").refused(),
    Opt::boolean(&["update-total-samples"], "Update total samples by accumulating all its body samples.").refused(),
    Opt::boolean(&["trim-cold-profile"], "If the total count of the profile is smaller than threshold, it will be trimmed.").refused(),
    Opt::boolean(&["fill-zero-for-all-funcs"], "Attribute all functions' range with zero count even it's not hit by any samples.").refused(),
    Opt::boolean(&["leading-ip-only"], "Form a profile based only on sample IPs"),
    Opt::boolean(&["use-offset"], "Work with `--skip-symbolization` or `--unsymbolized-profile` to write/read the offset instead of virtual address.").default("true").ignored("has no effect here"),
    Opt::boolean(&["show-density"], "show profile density details").ignored("has no effect here"),
    Opt::boolean(&["ignore-stack-samples"], "Ignore call stack samples for hybrid samples and produce context-insensitive profile.").ignored("has no effect here (profiles are context-insensitive)"),
];

const TOOL: Tool = Tool {
    name: "llvm-profgen",
    overview: "llvm SPGO profile generator (profmill drop-in)",
    usage: "",
    options: &[OPTIONS],
    comma_positionals: false,
};

pub fn run(args: &[OsString]) -> Result<(), Box<dyn std::error::Error>> {
    let args = crate::response_files::expand(args.to_vec())?;
    let Some(parsed) = TOOL.parse_and_print(&args)? else {
        return Ok(());
    };
    let (mut binary, mut perfdata, mut output) = (PathBuf::new(), PathBuf::new(), PathBuf::new());
    // llvm-profgen's default output format is extbinary.
    let mut format = SampleFormat::Extbinary;
    let mut ip_samples = false;
    for opt in &parsed.options {
        match opt.name {
            "binary" => binary = opt.text().into(),
            "perfdata" => perfdata = opt.text().into(),
            "output" => output = opt.text().into(),
            "leading-ip-only" => ip_samples = opt.on(),
            "format" => {
                format = match opt.text() {
                    "text" => SampleFormat::Text,
                    "binary" => SampleFormat::Binary,
                    "extbinary" => SampleFormat::Extbinary,
                    "gcc" => SampleFormat::Gcov,
                    other => return Err(format!("llvm-profgen: unknown --format={other}").into()),
                }
            }
            other => unreachable!("llvm-profgen option {other} not applied"),
        }
    }
    if let Some(p) = parsed.positionals.first() {
        return Err(format!(
            "llvm-profgen: unexpected positional argument {}",
            p.to_string_lossy()
        )
        .into());
    }
    for (value, name) in [
        (&binary, "--binary"),
        (&perfdata, "--perfdata"),
        (&output, "--output"),
    ] {
        if value.as_os_str().is_empty() {
            return Err(format!(
                "llvm-profgen: for the {name} option: must be specified at least once!"
            )
            .into());
        }
    }
    crate::autofdo::run(Args {
        binary,
        profile: perfdata,
        output,
        format,
        style: StyleArg::LlvmProfgen,
        ignore_build_id: false,
        ip_samples,
    })
}
