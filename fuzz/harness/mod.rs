//! What the engine-level fuzz targets run on one input, shared with the normal test suite
//! (`engine/tests/it/fuzz_seeds.rs` includes this file), so that every committed seed and
//! past crash input is replayed without cargo-fuzz.
//!
//! * [`capture`]: a perf.data capture, in file mode (mapped from a file) or pipe mode (a
//!   stream), decoded end to end as `profmill script` does (samples and mmap events rendered),
//!   then aggregated for a small binary as `profmill aggregate` does, in both file-mode read
//!   paths (indexed, streamed), and written as pre-aggregated text (both dialects) and
//!   symbolized fdata with memory lines.
//! * [`preagg_fdata`]: pre-aggregated text read as `perf2bolt --pa` reads it and symbolized
//!   to fdata for the same binary: the fdata symbolization path (functions, CFGs, traces).
//!
//! Errors are fine; a panic is a bug.

#![allow(dead_code)]

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use engine::bolt::loaded::{write_fdata, LoadedBinary};
use engine::io::progress::NoProgress;
use engine::perf::aggregate::{aggregate, BinaryProfile, Request, TraceOrder};
use engine::perf::binary::BinaryInfo;
use engine::perf::capture::{read_capture, Input, ReadOptions, Sink};
use engine::perf::mapping::Rules;
use formats::perf::script::{write_sample, Fields};
use formats::perf::Sample;

/// The binary the captures are aggregated for: a small x86-64 executable of the shared
/// corpus, the one the generated seed captures (`fuzz/run.sh`) follow.
pub fn binary_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/corpus/perf/autofdo-propeller_sample_1.bin")
}

struct Binary {
    info: BinaryInfo,
    loaded: LoadedBinary,
}

fn binary() -> Option<&'static Binary> {
    static BINARY: OnceLock<Option<Binary>> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            let path = binary_path();
            Some(Binary {
                info: BinaryInfo::load(&path).ok()?,
                loaded: LoadedBinary::load(&path).ok()?,
            })
        })
        .as_ref()
}

struct Lines(Vec<u8>);

impl Sink for Lines {
    fn sample(&mut self, _event: usize, s: &Sample<'_>) {
        let _ = write_sample(
            &mut self.0,
            s,
            Fields {
                ip: true,
                brstack: true,
            },
        );
    }
}

/// Where file-mode inputs are written (one file per process; tmpfs when there is one).
fn scratch_file(what: &str) -> PathBuf {
    let dir = Path::new("/dev/shm");
    let dir = if dir.is_dir() {
        dir.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    dir.join(format!("profmill-fuzz-{}.{what}", std::process::id()))
}

/// Runs `script` and aggregation over `data` as a capture, in pipe mode (`pipe`, read from a
/// stream) or file mode (written to a file and read from there). Returns how many samples
/// `script` decoded and how many aggregations succeeded (so that replays can check that the
/// seeds get through).
pub fn capture(data: &[u8], pipe: bool) -> (usize, usize) {
    let mut done = (0, 0);
    let file = scratch_file("data");
    let input = |data: &[u8]| {
        if pipe {
            Input::stream("<fuzz>", Cursor::new(data.to_vec()))
        } else {
            std::fs::write(&file, data).expect("scratch file");
            Input::File(file.clone())
        }
    };
    // `profmill script --show-mmap-events`, on two threads.
    let options = ReadOptions {
        threads: 2,
        render_mmap_events: true,
        ..Default::default()
    };
    if let Ok((_, sinks)) = read_capture(&input(data), options, |_| Lines(Vec::new()), &NoProgress)
    {
        done.0 = sinks
            .iter()
            .map(|s| s.0.split(|&b| b == b'\n').count() - 1)
            .sum();
    }
    if let Some(binary) = binary() {
        let streams: &[bool] = if pipe { &[false] } else { &[false, true] };
        for &stream in streams {
            for basic in [false, true] {
                let req = Request {
                    binaries: vec![binary.info.clone()],
                    basic,
                    pid: None,
                    ignore_build_id: true,
                    rules: Rules::Current,
                    threads: 2,
                    stream,
                    trace_order: TraceOrder::ByStart,
                    discover: None,
                    kernel_entries: Default::default(),
                    skylake_fix: true,
                };
                // The binary-free path too: every mapped file, in file offsets.
                let everything = Request {
                    binaries: Vec::new(),
                    discover: Some(Vec::new()),
                    ..req.clone()
                };
                let _ = aggregate(&input(data), &everything, &NoProgress);
                let Ok(aggregation) = aggregate(&input(data), &req, &NoProgress) else {
                    continue;
                };
                done.1 += 1;
                for profile in &aggregation.profiles {
                    write_profiles(binary, profile, aggregation.basic);
                }
            }
        }
    }
    if !pipe {
        let _ = std::fs::remove_file(&file);
    }
    done
}

/// Reads `data` as pre-aggregated text and symbolizes it to fdata, in branch and basic mode.
/// Returns whether the text was read.
pub fn preagg_fdata(data: &[u8]) -> bool {
    let Some(binary) = binary() else { return false };
    let Ok(profile) = engine::bolt::profile_from_preagg(data) else {
        return false;
    };
    for basic in [false, true] {
        write_profiles(binary, &profile, basic);
    }
    true
}

/// Every output `aggregate` and `perf2bolt` write from one profile (fdata through the real
/// output path, to a scratch file).
fn write_profiles(binary: &Binary, profile: &BinaryProfile, basic: bool) {
    let mut out = Vec::new();
    let _ = engine::perf::preagg::write_preagg(&mut out, profile);
    out.clear();
    let functions = binary.loaded.functions();
    let _ = engine::bolt::preagg_legacy::write_preagg_legacy(&mut out, profile, functions);
    let fdata = scratch_file("fdata");
    let _ = write_fdata(
        &binary.loaded,
        std::borrow::Cow::Borrowed(profile),
        basic,
        &fdata,
        &NoProgress,
    );
    let _ = std::fs::remove_file(&fdata);
}
