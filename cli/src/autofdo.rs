//! `profmill autofdo`: a perf.data capture (or a profile store) and the profiled ELF binary
//! to an AutoFDO sample profile, a thin wrapper over `engine::autofdo`.

use std::path::PathBuf;

use clap::{Args as ClapArgs, ValueEnum};
use engine::autofdo::{self, Style};
use engine::perf::{aggregate, BinaryInfo, Input, KernelEntries, Request, Rules, TraceOrder};
use engine::sampleprof::{self, OutputFormat};
use formats::sampleprof::binary::ExtBinaryOptions;
use formats::sampleprof::gcov::Version;

type BoxError = Box<dyn std::error::Error>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Extbinary,
    Binary,
    /// GCC AutoFDO gcov, the `407*` flavour LLVM reads (what create_gcov writes by default).
    Gcov,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StyleArg {
    /// llvm-profgen's conversion (LLVM 19, line-number based).
    LlvmProfgen,
    /// create_llvm_prof's conversion (AutoFDO 0.19).
    Autofdo,
}

#[derive(ClapArgs)]
pub struct Args {
    /// The profiled ELF binary, with debug information.
    #[arg(short, long)]
    pub(crate) binary: PathBuf,
    /// A perf.data capture recorded with branch stacks (`perf record -b`), or a profile store.
    #[arg(short, long)]
    pub(crate) profile: PathBuf,
    /// The sample profile to write.
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    /// Output encoding.
    #[arg(long, value_enum, default_value = "extbinary")]
    pub(crate) format: Format,
    /// Whose conversion rules to follow.
    #[arg(long, value_enum, default_value = "llvm-profgen")]
    pub(crate) style: StyleArg,
    /// Match the binary by file name even when the capture or store names another build-id.
    #[arg(long)]
    pub(crate) ignore_build_id: bool,
}

pub fn run(args: Args) -> Result<(), BoxError> {
    let style = match args.style {
        StyleArg::Autofdo => Style::Autofdo,
        StyleArg::LlvmProfgen => Style::LlvmProfgen,
    };
    let (binary, traces) = std::thread::scope(|scope| {
        let binary = scope.spawn(|| autofdo::Binary::load(&args.binary));
        let traces = read_traces(&args, style);
        let binary = binary
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (binary, traces)
    });
    let (binary, traces) = (binary?, traces?);
    let (profile, report) = autofdo::profile(&binary, traces, style)
        .map_err(|e| format!("{}: {e}", args.binary.display()))?;
    eprintln!(
        "profmill: {} ranges ({} samples × bytes), {} branches, {} functions",
        report.ranges, report.total_count, report.branches, report.functions
    );
    let format = match args.format {
        Format::Text => OutputFormat::Text,
        Format::Binary => OutputFormat::Binary,
        Format::Extbinary => OutputFormat::ExtBinary(ExtBinaryOptions::default()),
        Format::Gcov => OutputFormat::Gcov(Version::V407),
    };
    sampleprof::write(&profile, format, &args.output)?;
    Ok(())
}

/// The binary's LBR traces, from a store or a capture.
fn read_traces(
    args: &Args,
    style: Style,
) -> Result<engine::perf::aggregate::BinaryProfile, BoxError> {
    if crate::store::is_store(&args.profile) {
        let p = crate::store::profile_for(
            &args.profile,
            &args.binary,
            args.ignore_build_id,
            TraceOrder::default(),
        )?;
        if p.traces.is_empty() {
            return Err(no_branches(args));
        }
        return Ok(p);
    }
    let request = Request {
        binaries: vec![BinaryInfo::load(&args.binary)?],
        discover: None,
        basic: false,
        pid: None,
        ignore_build_id: args.ignore_build_id,
        rules: Rules::Current,
        threads: crate::default_threads(None),
        stream: false,
        trace_order: TraceOrder::default(),
        skylake_fix: false,
        kernel_entries: match style {
            Style::Autofdo => KernelEntries::Quipper,
            Style::LlvmProfgen => KernelEntries::OutsideSkipped,
        },
    };
    let total = std::fs::metadata(&args.profile).ok().map(|m| m.len());
    let bar = crate::progress::Bar::bytes(total, "reading");
    let mut result = aggregate(&Input::File(args.profile.clone()), &request, &bar)?;
    if result.basic {
        return Err(no_branches(args));
    }
    Ok(result.profiles.swap_remove(0))
}

fn no_branches(args: &Args) -> BoxError {
    format!(
        "{}: no branch stacks for {} (record with `perf record -b`; profiles from IP samples are not implemented yet)",
        args.profile.display(),
        args.binary.display()
    )
    .into()
}
