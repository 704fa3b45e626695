//! The engine fuzz targets' committed seeds and past crash inputs (`fuzz/seeds/<target>`),
//! replayed through the same harness the targets run (`fuzz/harness/mod.rs`), so that a
//! regression shows up in the normal test run without cargo-fuzz.

#[path = "../../../fuzz/harness/mod.rs"]
mod harness;

use testsupport::fuzz_seeds as seeds;

/// Replays every seed of `target`; returns how many `run` reported as read through.
fn replay(target: &str, run: impl Fn(&[u8]) -> bool) -> usize {
    let seeds = seeds(target);
    assert!(!seeds.is_empty(), "the {target} seeds are missing");
    let mut through = 0;
    for (name, data) in seeds {
        eprintln!("replaying {name}");
        through += usize::from(run(&data));
    }
    through
}

/// Without the shared corpus's binary the harness cannot aggregate; the replays still run.
fn have_binary() -> bool {
    harness::binary_path().exists()
}

#[test]
fn capture_pipe_seeds_replay() {
    let through = replay("capture_pipe", |d| {
        let (samples, aggregated) = harness::capture(d, true);
        samples > 0 && aggregated > 0
    });
    assert!(
        through >= 1 || !have_binary(),
        "no pipe seed was aggregated"
    );
}

#[test]
fn capture_file_seeds_replay() {
    let through = replay("capture_file", |d| {
        let (samples, aggregated) = harness::capture(d, false);
        samples > 0 && aggregated > 0
    });
    assert!(
        through >= 1 || !have_binary(),
        "no file seed was aggregated"
    );
}

#[test]
fn preagg_fdata_seeds_replay() {
    let through = replay("preagg_fdata", harness::preagg_fdata);
    assert!(
        through >= 2 || !have_binary(),
        "the pre-aggregated seeds were not read"
    );
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_seeds_replay() {
    let scratch = tempfile::tempdir().unwrap();
    let imported = replay("parquet", |d| {
        engine::perf::parquet::check_fuzz_input(d, scratch.path());
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("seed.parquet");
        std::fs::write(&input, d).unwrap();
        engine::perf::parquet::import_parquet(&[input], &dir.path().join("s.pms")).is_ok()
    });
    assert!(imported >= 1, "no Parquet seed imports");
}
