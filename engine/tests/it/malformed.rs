//! Truncated and corrupted captures give an error naming the file and byte offset — never a
//! panic, never a silent success on a cut-off data section.

use std::path::Path;

use engine::perf::aggregate::Tables;
use engine::perf::capture::{read_capture, Input, ReadOptions};
use testsupport::shared_perf as shared;

fn read(path: &Path) -> Result<u64, String> {
    let bar = engine::io::progress::NoProgress;
    let options = ReadOptions {
        threads: 2,
        ..Default::default()
    };
    read_capture(
        &Input::File(path.to_path_buf()),
        options,
        |_| Tables::default(),
        &bar,
    )
    .map(|(side, _)| side.records)
    .map_err(|e| e.to_string())
}

/// A tiny deterministic generator for corruption positions.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[test]
fn truncated_captures_report_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "autofdo-propeller_sample_1.perf.data",
        "lpd-sleep.compressed.perf.data",
        "lpd-sleep.compressed.pipe.perf.data",
    ] {
        let data = std::fs::read(shared(name)).unwrap();
        let cut_path = dir.path().join(name);
        for cut in [
            0,
            7,
            12,
            60,
            103,
            200,
            data.len() / 3,
            data.len() / 2,
            data.len() - 1,
        ] {
            std::fs::write(&cut_path, &data[..cut]).unwrap();
            let err = read(&cut_path).expect_err(&format!("{name} cut at {cut} was accepted"));
            assert!(err.contains(&cut_path.display().to_string()), "{err}");
            assert!(err.contains("byte"), "no offset in {err:?}");
        }
    }
}

#[test]
fn corrupted_captures_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut state = 42;
    for name in [
        "autofdo-propeller_sample_1.perf.data",
        "lpd-sleep.compressed.perf.data",
        "lpd-sleep.compressed.pipe.perf.data",
        "pdc-intel_pt-4.14.perf.data",
    ] {
        let data = std::fs::read(shared(name)).unwrap();
        let path = dir.path().join(name);
        for _ in 0..40 {
            let mut bad = data.clone();
            for _ in 0..1 + splitmix(&mut state) % 8 {
                let at = (splitmix(&mut state) % bad.len() as u64) as usize;
                bad[at] = splitmix(&mut state) as u8;
            }
            std::fs::write(&path, &bad).unwrap();
            // Either outcome is fine; a panic fails the test.
            let _ = read(&path);
        }
    }
}

#[test]
fn bad_magic_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("not-perf.data");
    std::fs::write(&path, b"this is not a perf.data file at all").unwrap();
    let err = read(&path).unwrap_err();
    assert!(
        err.contains("byte offset 0") && err.contains("PERFILE2"),
        "{err}"
    );
}
