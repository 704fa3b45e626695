//! `profmill autofdo`: a perf.data capture (or a profile store) and the profiled ELF binary
//! to an AutoFDO sample profile, a thin wrapper over `engine::autofdo`.

use std::path::PathBuf;

use clap::{Args as ClapArgs, ValueEnum};
use engine::autofdo::{self, Style};
use engine::perf::{aggregate, BinaryInfo, Input, KernelEntries, Request, Rules, TraceOrder};
use formats::sampleprof::binary::ExtBinaryOptions;

use crate::sampleprof::SampleFormat;

type BoxError = Box<dyn std::error::Error>;

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
    /// A perf.data capture (with branch stacks, `perf record -b`, or IP samples only), or a
    /// profile store.
    #[arg(short, long)]
    pub(crate) profile: PathBuf,
    /// The sample profile to write.
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    /// Output encoding.
    #[arg(long, value_enum, default_value = "extbinary")]
    pub(crate) format: SampleFormat,
    /// Whose conversion rules to follow.
    #[arg(long, value_enum, default_value = "llvm-profgen")]
    pub(crate) style: StyleArg,
    /// Match the binary by file name even when the capture or store names another build-id.
    #[arg(long)]
    pub(crate) ignore_build_id: bool,
    /// Make the profile from the samples' IPs even when the capture has branch stacks
    /// (llvm-profgen's `--leading-ip-only`; with `--style autofdo`, create_llvm_prof's
    /// `--use_lbr=false`, whose heads and call targets still come from the branch stacks);
    /// captures without branch stacks always are.
    #[arg(long)]
    pub(crate) ip_samples: bool,
}

pub fn run(args: Args) -> Result<(), BoxError> {
    let style = match args.style {
        StyleArg::Autofdo => Style::Autofdo,
        StyleArg::LlvmProfgen => Style::LlvmProfgen,
    };
    // create_llvm_prof --use_lbr=false on an LBR capture counts lines from the sample IPs but
    // heads and call targets from the branch stacks, and its threshold from the ranges: it
    // needs both.
    let ip_lines = args.ip_samples && style == Style::Autofdo;
    engine::io::output::refuse_overwriting_inputs(
        [args.output.as_path()],
        [args.binary.as_path(), args.profile.as_path()],
    )?;
    let (binary, traces) = std::thread::scope(|scope| {
        let binary = scope.spawn(|| autofdo::Binary::load(&args.binary));
        let traces = match ip_lines {
            false => read_traces(&args, style, args.ip_samples),
            true => read_traces(&args, style, false).and_then(|mut lbr| {
                lbr.ips = read_traces(&args, style, true)?.ips;
                Ok(lbr)
            }),
        };
        let binary = binary
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (binary, traces)
    });
    let (binary, traces) = (binary?, traces?);
    // GCC's formats get create_gcov's conversion (GCC's discriminators as they are).
    let gcc = style == Style::Autofdo && args.format.is_gcc();
    let made = match (ip_lines, gcc) {
        (true, gcc) => autofdo::ip_line_profile(&binary, traces, gcc),
        (false, true) => autofdo::gcc_profile(&binary, traces),
        (false, false) => autofdo::profile(&binary, traces, style),
    };
    let (profile, report) = made.map_err(|e| {
        format!(
            "{} with {}: {e}",
            args.profile.display(),
            args.binary.display()
        )
    })?;
    eprintln!(
        "profmill: {} ranges ({} samples × bytes), {} branches, {} functions",
        report.ranges, report.total_count, report.branches, report.functions
    );
    profile.write(
        args.format.output(ExtBinaryOptions::default()),
        &args.output,
    )?;
    Ok(())
}

/// The binary's LBR traces, from a store or a capture; with `ips`, its sample IPs instead.
fn read_traces(
    args: &Args,
    style: Style,
    ips: bool,
) -> Result<engine::perf::aggregate::BinaryProfile, BoxError> {
    if crate::store::is_store(&args.profile) {
        let p = crate::store::profile_for(
            &args.profile,
            &args.binary,
            args.ignore_build_id,
            TraceOrder::default(),
        )?;
        if p.traces.is_empty() && p.ips.is_empty() {
            return Err(no_sample(args));
        }
        if ips && p.ips.is_empty() {
            return Err(format!(
                "{}: the store holds branch traces, not IP samples (--ip-samples needs the capture)",
                args.profile.display()
            )
            .into());
        }
        return Ok(p);
    }
    let request = Request {
        binaries: vec![BinaryInfo::load(&args.binary)?],
        discover: None,
        basic: ips,
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
    // A capture without branch stacks gives IP samples (`result.basic`), which both styles
    // turn into a profile as their tools do without LBR (engine::autofdo::ips).
    // Mismatches (the binary not mapped, its build-id not listed) name the binary: name
    // the capture too.
    let mut result =
        aggregate(&Input::File(args.profile.clone()), &request, &bar).map_err(|e| match e {
            engine::Error::Mismatch(m) => format!("{}: {m}", args.profile.display()).into(),
            e => BoxError::from(e),
        })?;
    let p = result.profiles.swap_remove(0);
    if p.traces.is_empty() && p.ips.is_empty() {
        return Err(no_sample(args));
    }
    Ok(p)
}

fn no_sample(args: &Args) -> BoxError {
    format!(
        "{}: no sample falls in {} (is it the profiled binary?)",
        args.profile.display(),
        args.binary.display()
    )
    .into()
}
