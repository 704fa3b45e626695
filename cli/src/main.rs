//! The `profmill` command line: thin wrappers over `engine`.

mod aggregate;
mod demo;
mod llvm_cl;
mod llvm_profdata;
mod llvm_profdata_sample;
mod merge_fdata;
mod perf2bolt;
mod sampleprof;
mod script;

use std::process::ExitCode;

/// mimalloc rather than glibc's malloc: the engine allocates and frees tables and text buffers
/// of many megabytes, which glibc serves with fresh mappings (a page fault per 4 KiB each time).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "profmill",
    version,
    about = "One fast engine for compiler-feedback profiles"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Aggregate a perf.data capture into per-binary BOLT profiles.
    Aggregate(aggregate::Args),
    /// Generate a synthetic capture of this executable and aggregate it (a quick tour).
    Demo(demo::Args),
    /// Print a capture's samples and mmap events like `perf script -F pid,ip,brstack`.
    Script(script::Args),
    /// Convert a sample profile between LLVM text/binary/ExtBinary and GCC gcov.
    Convert(sampleprof::ConvertArgs),
    /// Merge sample profiles (`--sample`), with weights.
    Merge(sampleprof::MergeArgs),
    /// Print a sample profile (`--sample`) as LLVM text.
    Show(sampleprof::ShowArgs),
    /// Overlap of two sample profiles (`--sample`), as `llvm-profdata overlap --sample` prints it.
    #[command(disable_help_flag = true)]
    Overlap {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// A drop-in for `llvm-profdata merge` on instrumentation profiles (LLVM option spelling).
    LlvmProfdata(llvm_profdata::Args),
    /// Drop-in for LLVM's perf2bolt: `perf2bolt BINARY -p CAPTURE -o OUT.fdata [--pa] [--ba]`.
    #[command(disable_help_flag = true)]
    Perf2bolt {
        /// perf2bolt's arguments, in LLVM's spelling.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Merge fdata profiles like LLVM's merge-fdata (also runs as a link named `merge-fdata`).
    MergeFdata(merge_fdata::RawArgs),
}

/// The drop-in tool this binary runs as when invoked through a link of that name.
fn personality() -> Option<&'static str> {
    let argv0 = std::env::args_os().next()?;
    match std::path::Path::new(&argv0).file_name()?.to_str()? {
        "perf2bolt" => Some("perf2bolt"),
        "merge-fdata" => Some("merge-fdata"),
        _ => None,
    }
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    // Installed as (or linked to) `llvm-profdata`, profmill behaves as that tool.
    if let Some(result) = llvm_profdata::run_as_argv0() {
        return finish(result);
    }
    let cli = match personality() {
        Some("perf2bolt") => return finish(perf2bolt::run(&args)),
        Some("merge-fdata") => return merge_fdata::main(args, "merge-fdata"),
        _ => Cli::parse(),
    };
    let result = match cli.command {
        Command::Aggregate(args) => aggregate::run(args),
        Command::Script(args) => script::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Perf2bolt { args } => perf2bolt::run(&args),
        Command::MergeFdata(args) => return merge_fdata::run_subcommand(args),
        Command::LlvmProfdata(args) => llvm_profdata::run(args),
        Command::Convert(args) => sampleprof::convert(args),
        Command::Merge(args) => sampleprof::merge(args),
        Command::Show(args) => sampleprof::show(args),
        Command::Overlap { args } => llvm_profdata_sample::run_overlap(&args),
    };
    finish(result)
}

fn finish(result: Result<(), Box<dyn std::error::Error>>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("profmill: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Worker threads: `--threads`, else every core.
fn default_threads(requested: Option<usize>) -> usize {
    requested.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}
