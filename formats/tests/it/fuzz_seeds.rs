//! The fuzz targets' committed seeds and past crash inputs, replayed through the same checks
//! the targets run, so that a regression shows up without cargo-fuzz.

use testsupport::fuzz_seeds as seeds;

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

#[test]
fn yaml_seeds_replay() {
    let seeds = seeds("yaml");
    assert!(seeds.len() >= 2, "the YAML seeds are missing");
    for (name, data) in seeds {
        eprintln!("replaying {name}");
        assert!(
            formats::bolt::yaml::read(&data).is_ok(),
            "{name}: a profile that no longer reads"
        );
        formats::bolt::yaml::check_fuzz_input(&data);
    }
}

#[test]
fn instrprof_indexed_seeds_replay() {
    let seeds = seeds("instrprof_indexed");
    assert!(!seeds.is_empty(), "the instrprof_indexed seeds are missing");
    for (name, data) in seeds {
        eprintln!("replaying {name}");
        formats::instrprof::indexed::check_fuzz_input(&data);
    }
}
