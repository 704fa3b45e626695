//! The `profmill` command line: thin wrappers over `engine`.

mod aggregate;
mod demo;
mod llvm_profdata;
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
    /// A drop-in for `llvm-profdata merge` on instrumentation profiles (LLVM option spelling).
    LlvmProfdata(llvm_profdata::Args),
}

fn main() -> ExitCode {
    // Installed as (or linked to) `llvm-profdata`, profmill behaves as that tool.
    if let Some(result) = llvm_profdata::run_as_argv0() {
        return report(result);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Aggregate(args) => aggregate::run(args),
        Command::Script(args) => script::run(args),
        Command::Demo(args) => demo::run(args),
        Command::LlvmProfdata(args) => llvm_profdata::run(args),
    };
    report(result)
}

fn report(result: Result<(), Box<dyn std::error::Error>>) -> ExitCode {
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
