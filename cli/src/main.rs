//! The `profmill` command line: thin wrappers over `engine`.

mod aggregate;
mod autofdo;
mod bat;
mod demo;
mod llvm_cl;
mod llvm_profdata;
mod llvm_profdata_sample;
mod llvm_profgen;
mod merge_fdata;
mod perf2bolt;
mod progress;
mod response_files;
mod sampleprof;
mod script;
mod store;

use std::process::ExitCode;

/// mimalloc rather than glibc's malloc: the engine allocates and frees tables and text buffers
/// of many megabytes, which glibc serves with fresh mappings (a page fault per 4 KiB each time).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc v3's `mi_option_purge_delay`, `mi_option_page_reclaim_on_free`,
/// `mi_option_page_full_retain` and `mi_option_page_cross_thread_max_reclaim`: their indices
/// in `mi_option_e` of the vendored `mimalloc.h` (libmimalloc-sys names no constant for them).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
const MI_OPTION_PAGE_RECLAIM_ON_FREE: libmimalloc_sys::mi_option_t = 35;
const MI_OPTION_PAGE_FULL_RETAIN: libmimalloc_sys::mi_option_t = 36;
const MI_OPTION_PAGE_CROSS_THREAD_MAX_RECLAIM: libmimalloc_sys::mi_option_t = 42;

/// mimalloc v3 keeps freed memory resident for 1 s (its arenas' for 10 s) before returning it
/// to the system. The engine frees large tables between phases and then builds others (the
/// capture's traces, then the DWARF and the profile in `autofdo`), so those freed tables
/// counted in the peak resident memory (+100 MB on a 629 MB capture). 10 ms, mimalloc v2's
/// default, returns them in time at no measured cost in speed.
fn tune_allocator() {
    set_purge_delay(10);
}

/// For `perf2bolt`: freed memory is never returned to the system, so that each phase reuses
/// what the one before freed instead of faulting in fresh pages, which the kernel clears (and
/// which cost more still on a host that has just freed gigabytes, as after LLVM's perf2bolt).
/// On the 629 MB benchmark capture: 72 K page faults against 21 K, 3.5–8 % less wall time
/// for the YAML and 6 % for fdata, for 80–120 MB more peak memory (PERF.md, seventh session).
///
/// Also, pages of threads that have ended (the scoped threads that load the binary and read
/// the capture) are taken over by the thread that frees a block in them, whichever thread
/// that is, so that their free room is allocated again. mimalloc's defaults left them
/// abandoned: 410–440 MB committed for 265–300 MB live at the YAML benchmark's peak, each
/// MB a fresh page to clear. With both: 2.77 → 2.57 s (median of 8 alternated rounds), CPU
/// 5.39 → 5.01 s. And a page whose blocks are all free goes back to the arena at once, for
/// any thread and size class to take, instead of two per size class staying with their
/// thread: 2.61 → 2.45 s, CPU 5.00 → 4.75 s (10 rounds; PERF.md, eighth session).
///
/// The store merge uses it too: its memory is small and bounded, and the ends of its summing
/// threads, which returned their memory, took 43 ms of CPU in a traced merge of 1,000
/// partials (9 ms without; CPU 1.02 → 0.96 s, median of 11 alternated rounds; PERF.md, tenth
/// session).
pub fn keep_freed_memory() {
    set_purge_delay(-1);
    set_option(MI_OPTION_PAGE_RECLAIM_ON_FREE, 1);
    set_option(MI_OPTION_PAGE_CROSS_THREAD_MAX_RECLAIM, -1);
    set_option(MI_OPTION_PAGE_FULL_RETAIN, 0);
}

/// For the store merge and export: no transparent huge pages. The merge's memory is many small
/// buffers (a block of each input, the summing threads' runs) spread over mimalloc's arena,
/// which asks for huge pages: each first touch then clears a whole 2 MiB page. Merging 1,000
/// partials, peak RSS fell from 81 to 52 MB, and right after another process had freed 1.1 GB
/// (when this VM's fresh pages cost most) the merge took 0.61 instead of 0.72 s (PERF.md,
/// tenth session). Exporting fdata, right after merge-fdata had run: 0.35 → 0.16 s and 100 →
/// 57 MB for the fleet benchmark's store; for a 42 MB binary (cargo), without anything before,
/// 1.66 → 1.37 s and 313 → 267 MB (PERF.md, twelfth session).
pub fn without_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE sets a flag of the process, which the kernel reads when a
    // page is next faulted in; no memory is touched. A kernel that refuses it (an error
    // return, ignored) leaves the huge pages: slower, nothing else.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Lets the process end without giving its free memory back first: mimalloc's collection at
/// exit returns every free page to the system (`madvise`) unless purging is off, and the end
/// of the process does that anyway. Twenty `aggregate`s of small captures (the fleet
/// benchmark's): 0.156 → 0.143 s (PERF.md, twelfth session). Called when the command is done,
/// on the main thread; the engine's idle pool threads allocate nothing then.
fn keep_memory_at_exit() {
    set_purge_delay(-1);
}

fn set_purge_delay(milliseconds: std::ffi::c_long) {
    set_option(MI_OPTION_PURGE_DELAY, milliseconds);
}

fn set_option(option: libmimalloc_sys::mi_option_t, value: std::ffi::c_long) {
    // SAFETY: `mi_option_set` stores an integer option of the allocator, which reads it when
    // it next needs it; no memory is touched. It is not thread-safe: it is called on the main
    // thread before the engine starts any (in `main`, or by the store merge before it starts).
    unsafe { libmimalloc_sys::mi_option_set(option, value) };
}

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
    /// A perf.data capture (LBR) or store and its ELF binary to an AutoFDO sample profile.
    Autofdo(autofdo::Args),
    /// Generate a synthetic capture of this executable and aggregate it (a quick tour).
    Demo(demo::Args),
    /// Print a capture's samples and mmap events like `perf script -F pid,ip,brstack`.
    Script(script::Args),
    /// Convert a sample profile between LLVM text/binary/ExtBinary and GCC gcov.
    Convert(sampleprof::ConvertArgs),
    /// Merge profile stores, or sample profiles (`--sample`), with weights.
    Merge(sampleprof::MergeArgs),
    /// Summarize a profile store, or print a sample profile as LLVM text.
    Show(sampleprof::ShowArgs),
    /// Write binaries' profiles from a profile store as preagg, preagg-legacy, fdata or YAML, or
    /// the whole store as Parquet rows.
    Export(store::ExportArgs),
    /// Read Parquet profile rows (files or directories, e.g. a Spark merge's output) into a store.
    Import(store::ImportArgs),
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
    /// BOLT Address Translation tables of a BOLTed binary: dump them, translate addresses.
    Bat(bat::Args),
}

/// The drop-in tools this binary becomes when invoked through a link of their name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Personality {
    Perf2bolt,
    MergeFdata,
    LlvmProfdata,
    LlvmProfgen,
}

/// `n` and the noun in its number, for messages: "1 binary", "2 binaries".
pub(crate) fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The personality of a program name: its file name is `perf2bolt`, `merge-fdata`,
/// `llvm-profdata` or `llvm-profgen`, bare or versioned as distributions install them (`perf2bolt-22`,
/// `llvm-profdata-19`, `merge-fdata-19.1`), optionally with `.exe`.
fn personality(argv0: &std::ffi::OsStr) -> Option<Personality> {
    let name = std::path::Path::new(argv0).file_name()?.to_str()?;
    let name = name.strip_suffix(".exe").unwrap_or(name);
    [
        ("perf2bolt", Personality::Perf2bolt),
        ("merge-fdata", Personality::MergeFdata),
        ("llvm-profdata", Personality::LlvmProfdata),
        ("llvm-profgen", Personality::LlvmProfgen),
    ]
    .into_iter()
    .find_map(|(tool, personality)| {
        let rest = name.strip_prefix(tool)?;
        let versioned = rest.strip_prefix('-').is_some_and(|v| {
            v.starts_with(|c: char| c.is_ascii_digit())
                && v.chars().all(|c| c.is_ascii_digit() || c == '.')
        });
        (rest.is_empty() || versioned).then_some(personality)
    })
}

/// Whether the program was started as `name` (a link named after LLVM 19's tool).
fn is_llvm19(argv0: &std::ffi::OsStr, name: &str) -> bool {
    std::path::Path::new(argv0)
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(name))
}

fn main() -> ExitCode {
    tune_allocator();
    let mut argv = std::env::args_os();
    let argv0 = argv.next().unwrap_or_default();
    let args: Vec<std::ffi::OsString> = argv.collect();
    match personality(&argv0) {
        Some(Personality::Perf2bolt) => {
            keep_freed_memory();
            // `perf2bolt-19` writes YAML as perf2bolt 19 does.
            let dialect = if is_llvm19(&argv0, "perf2bolt-19") {
                engine::bolt::Dialect::Llvm19
            } else {
                engine::bolt::Dialect::Llvm22
            };
            return finish(perf2bolt::run_as(&args, dialect));
        }
        Some(Personality::MergeFdata) => {
            let llvm19 = is_llvm19(&argv0, "merge-fdata-19");
            return merge_fdata::main(args, "merge-fdata", llvm19);
        }
        Some(Personality::LlvmProfdata) => return finish(llvm_profdata::run_args(args)),
        Some(Personality::LlvmProfgen) => return finish(llvm_profgen::run(&args)),
        None => {}
    }
    let result = match Cli::parse().command {
        Command::Aggregate(args) => aggregate::run(args),
        Command::Autofdo(args) => autofdo::run(args),
        Command::Script(args) => script::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Perf2bolt { args } => {
            keep_freed_memory();
            perf2bolt::run(&args)
        }
        Command::MergeFdata(args) => return merge_fdata::run_subcommand(args),
        Command::LlvmProfdata(args) => llvm_profdata::run(args),
        Command::Convert(args) => sampleprof::convert(args),
        Command::Merge(args) => sampleprof::merge(args),
        Command::Show(args) => sampleprof::show(args),
        Command::Export(args) => store::export(args),
        Command::Import(args) => store::import(args),
        Command::Bat(args) => bat::run(args),
        Command::Overlap { args } => llvm_profdata_sample::run_overlap(&args),
    };
    finish(result)
}

/// Standard output, locked, whose write errors name it (`<stdout>: No space left on device`)
/// rather than an error that names no file.
pub fn stdout() -> NamedStdout {
    NamedStdout(std::io::stdout().lock())
}

/// See [`stdout`].
pub struct NamedStdout(std::io::StdoutLock<'static>);

impl std::io::Write for NamedStdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf).map_err(name_stdout)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.write_all(buf).map_err(name_stdout)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush().map_err(name_stdout)
    }
}

/// The error, its kind kept (a closed pipe is still recognised as one).
fn name_stdout(e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("<stdout>: {e}"))
}

fn finish(result: Result<(), Box<dyn std::error::Error>>) -> ExitCode {
    keep_memory_at_exit();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that closed our stdout (`| head`) has all it wants: end quietly, as
        // ripgrep does.
        Err(e) if is_broken_pipe(e.as_ref()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("profmill: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Whether `e`, or an error it wraps, is an I/O error for a closed pipe.
fn is_broken_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(e) = next {
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// Worker threads: `--threads`, else every core.
fn default_threads(requested: Option<usize>) -> usize {
    requested.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn personality_by_file_name() {
        for (argv0, expected) in [
            ("perf2bolt", Some(Personality::Perf2bolt)),
            ("/usr/bin/perf2bolt-22", Some(Personality::Perf2bolt)),
            ("merge-fdata", Some(Personality::MergeFdata)),
            ("./bin/merge-fdata-19", Some(Personality::MergeFdata)),
            ("merge-fdata-19.1.7", Some(Personality::MergeFdata)),
            ("llvm-profdata", Some(Personality::LlvmProfdata)),
            (
                "/opt/llvm/bin/llvm-profdata-19",
                Some(Personality::LlvmProfdata),
            ),
            ("llvm-profdata.exe", Some(Personality::LlvmProfdata)),
            ("/usr/bin/llvm-profgen-19", Some(Personality::LlvmProfgen)),
            ("perf2bolt-22.exe", Some(Personality::Perf2bolt)),
            ("profmill", None),
            ("/usr/lib/llvm-22/bin/profmill", None),
            ("perf2bolt-", None),
            ("perf2bolt-x", None),
            ("perf2bolt2", None),
            ("llvm-profdata-wrapper", None),
            ("/tmp/perf2bolt/profmill", None),
        ] {
            assert_eq!(
                personality(std::ffi::OsStr::new(argv0)),
                expected,
                "{argv0}"
            );
        }
    }
}

#[cfg(test)]
mod allocator_tests {
    use super::*;

    /// The store merge's process asks for no transparent huge pages.
    #[cfg(target_os = "linux")]
    #[test]
    fn without_huge_pages_disables_them_for_the_process() {
        // SAFETY: reads a flag of the process.
        let disabled = || unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
        if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
            assert_eq!(disabled(), 0);
        }
        without_huge_pages();
        assert_eq!(disabled(), 1);
    }

    #[test]
    fn the_tuned_allocator_options_are_the_ones_meant() {
        // SAFETY: reads an integer option.
        let get = |o| unsafe { libmimalloc_sys::mi_option_get(o) };
        // mimalloc v3's default purge delay (options.c): a shifted index would read another
        // option, none of which defaults to 1000.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(get(MI_OPTION_PURGE_DELAY), 1000);
        }
        tune_allocator();
        assert_eq!(get(MI_OPTION_PURGE_DELAY), 10);
        // The page options' defaults (options.c), read before anything sets them.
        if std::env::var_os("MIMALLOC_PAGE_RECLAIM_ON_FREE").is_none() {
            assert_eq!(get(MI_OPTION_PAGE_RECLAIM_ON_FREE), 0);
        }
        if std::env::var_os("MIMALLOC_PAGE_CROSS_THREAD_MAX_RECLAIM").is_none() {
            assert_eq!(get(MI_OPTION_PAGE_CROSS_THREAD_MAX_RECLAIM), 32);
        }
        if std::env::var_os("MIMALLOC_PAGE_FULL_RETAIN").is_none() {
            assert_eq!(get(MI_OPTION_PAGE_FULL_RETAIN), 2);
        }
        keep_freed_memory();
        assert_eq!(get(MI_OPTION_PURGE_DELAY), -1);
        assert_eq!(get(MI_OPTION_PAGE_RECLAIM_ON_FREE), 1);
        assert_eq!(get(MI_OPTION_PAGE_CROSS_THREAD_MAX_RECLAIM), -1);
        assert_eq!(get(MI_OPTION_PAGE_FULL_RETAIN), 0);
        tune_allocator();
        keep_memory_at_exit();
        assert_eq!(get(MI_OPTION_PURGE_DELAY), -1);
        tune_allocator();
    }
}
