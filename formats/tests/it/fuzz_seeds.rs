//! The fuzz targets' committed seeds and past crash inputs, replayed through the same checks
//! the targets run, so that a regression shows up without cargo-fuzz.

use std::path::Path;

fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/seeds")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect()
}

#[test]
fn store_seeds_replay() {
    let seeds = seeds("store");
    assert!(seeds.len() >= 3, "the store seeds are missing");
    for (name, data) in seeds {
        eprintln!("replaying {name}");
        formats::store::check_fuzz_input(&data);
        if let Some(fixed) = formats::store::with_fixed_checksums(&data) {
            formats::store::check_fuzz_input(&fixed);
        }
    }
}

#[test]
fn bat_seeds_replay() {
    let seeds = seeds("bat");
    assert!(seeds.len() >= 3, "the BAT seeds are missing");
    for (name, data) in seeds {
        eprintln!("replaying {name}");
        assert!(
            formats::bolt::bat::parse_note(&data, 0).is_ok(),
            "{name}: an LLVM section that no longer decodes"
        );
        formats::bolt::bat::check_fuzz_input(&data);
    }
}
