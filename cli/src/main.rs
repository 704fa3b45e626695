//! The `profmill` command line: thin wrappers over `engine`.

mod aggregate;
mod demo;
mod sampleprof;
mod script;

use std::process::ExitCode;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Aggregate(args) => aggregate::run(args),
        Command::Script(args) => script::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Convert(args) => sampleprof::convert(args),
        Command::Merge(args) => sampleprof::merge(args),
        Command::Show(args) => sampleprof::show(args),
    };
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
