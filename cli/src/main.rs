//! The `profmill` command line: thin wrappers over `engine`.

mod aggregate;
mod demo;
mod perf2bolt;
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
    /// Drop-in for LLVM's perf2bolt: `perf2bolt BINARY -p CAPTURE -o OUT.fdata [--pa] [--ba]`.
    #[command(disable_help_flag = true)]
    Perf2bolt {
        /// perf2bolt's arguments, in LLVM's spelling.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

/// The drop-in a link to this binary stands for, from the name it was invoked by.
fn personality() -> Option<&'static str> {
    let arg0 = std::env::args_os().next()?;
    let name = std::path::Path::new(&arg0).file_name()?.to_str()?;
    match name {
        "perf2bolt" => Some("perf2bolt"),
        _ => None,
    }
}

fn main() -> ExitCode {
    if personality() == Some("perf2bolt") {
        let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
        return finish(perf2bolt::run(&args));
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Aggregate(args) => aggregate::run(args),
        Command::Script(args) => script::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Perf2bolt { args } => perf2bolt::run(&args),
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
