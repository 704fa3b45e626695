//! Readers never panic on damaged input: valid profiles with bytes flipped or cut short must
//! give records or an error, nothing else (a stand-in for the fuzz targets on stable Rust).

use formats::instrprof::indexed::writer::{write_indexed, IndexedProfile, NameEntry};
use formats::instrprof::indexed::IndexedReader;
use formats::instrprof::raw::{RawOptions, RawReader};
use formats::instrprof::text::TextReader;
use formats::instrprof::{ProfileKind, Record, TemporalTraces, ValueData};
use proptest::prelude::*;

fn sample_indexed() -> Vec<u8> {
    let record = Record {
        hash: 7,
        counts: vec![1, 2, 3],
        bitmap: vec![0x81],
        values: [
            vec![vec![ValueData { value: 5, count: 9 }]],
            vec![vec![]],
            vec![],
        ],
    };
    let other = Record {
        hash: 8,
        counts: vec![4],
        ..Record::default()
    };
    let profile = IndexedProfile {
        kind: ProfileKind::IR,
        entries: vec![
            NameEntry {
                name: b"f",
                records: vec![&record, &other],
            },
            NameEntry {
                name: b"g",
                records: vec![&other],
            },
        ],
        binary_ids: vec![vec![1, 2, 3]],
        temporal: TemporalTraces::default(),
        vtable_names: Vec::new(),
    };
    write_indexed(&profile, 12)
}

const TEXT: &[u8] = b":ir\n:temporal_prof_traces\n1\n1\n3\nf,g,\nf\n0x7\n3\n1\n2\n3\n$1\n0x81\n2\n0\n1\n1\ng:9\n1\n1\n2\n8:1\n16:2\n\ng\n8\n1\n4\n";

fn raw_sample() -> Option<Vec<u8>> {
    std::fs::read(testsupport::shared_corpus(
        "llvm-profdata/llvm-19/c-general.profraw",
    ))
    .ok()
}

fn damage(mut data: Vec<u8>, flips: &[(usize, u8)], cut: usize) -> Vec<u8> {
    if data.is_empty() {
        return data;
    }
    for &(at, byte) in flips {
        let i = at % data.len();
        data[i] = byte;
    }
    data.truncate(data.len() - cut % data.len());
    data
}

fn read_all(data: &[u8]) {
    if let Ok(mut r) = RawReader::new(data, RawOptions { only_version: None }) {
        let _ = r.read_records(&mut |_, _| {});
    }
    if let Ok(r) = IndexedReader::new(data) {
        let _ = r.read_records(&mut |_, _| {});
        let _ = r.binary_ids();
        let _ = r.temporal_traces();
    }
    if let Ok(mut r) = TextReader::new(data) {
        let _ = r.read_records(&mut |_, _| {});
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn damaged_profiles_never_panic(flips in prop::collection::vec((any::<usize>(), any::<u8>()), 0..6), cut in any::<usize>()) {
        read_all(&damage(sample_indexed(), &flips, cut));
        read_all(&damage(TEXT.to_vec(), &flips, cut));
        if let Some(raw) = raw_sample() {
            read_all(&damage(raw, &flips, cut));
        }
    }
}

#[test]
fn samples_are_valid_before_damage() {
    let mut n = 0;
    IndexedReader::new(&sample_indexed())
        .unwrap()
        .read_records(&mut |_, _| n += 1)
        .unwrap();
    TextReader::new(TEXT)
        .unwrap()
        .read_records(&mut |_, _| n += 1)
        .unwrap();
    assert_eq!(n, 5);
}
