//! Property tests: the text and indexed writers' output reads back as the records written.

use std::collections::BTreeMap;

use formats::instrprof::indexed::writer::{write_indexed, IndexedProfile, NameEntry};
use formats::instrprof::indexed::IndexedReader;
use formats::instrprof::names::Symtab;
use formats::instrprof::text::{write_text, TextReader};
use formats::instrprof::{md5_guid, ProfileKind, Record, TemporalTraces, ValueData};
use proptest::prelude::*;

type Profile = BTreeMap<(String, u64), Record>;

fn site(names: Vec<String>, kind: usize) -> impl Strategy<Value = Vec<ValueData>> {
    let value = if kind == 1 {
        any::<u64>().boxed()
    } else {
        // Indirect-call and vtable targets must be names the profile knows (text stores names).
        prop::sample::select(names)
            .prop_map(|n| md5_guid(n.as_bytes()))
            .boxed()
    };
    prop::collection::vec((value, any::<u64>()), 0..4).prop_map(|v| {
        v.into_iter()
            .map(|(value, count)| ValueData { value, count })
            .collect()
    })
}

fn record(names: Vec<String>) -> impl Strategy<Value = Record> {
    (
        any::<u64>(),
        prop::collection::vec(any::<u64>(), 1..6),
        prop::collection::vec(any::<u8>(), 0..4),
        prop::collection::vec(site(names.clone(), 0), 0..3),
        prop::collection::vec(site(names.clone(), 1), 0..3),
        prop::collection::vec(site(names, 2), 0..2),
    )
        .prop_map(|(hash, counts, bitmap, icall, memop, vtable)| Record {
            hash,
            counts,
            bitmap,
            values: [icall, memop, vtable],
        })
}

fn profile() -> impl Strategy<Value = Profile> {
    prop::collection::btree_set("[a-z_][a-z0-9_.;:]{0,10}", 1..6).prop_flat_map(|names| {
        let names: Vec<String> = names.into_iter().collect();
        let per_name = names
            .iter()
            .map(|n| {
                (
                    Just(n.clone()),
                    prop::collection::vec(record(names.clone()), 1..4),
                )
            })
            .collect::<Vec<_>>();
        per_name.prop_map(|groups| {
            let mut p = Profile::new();
            for (name, records) in groups {
                for r in records {
                    p.insert((name.clone(), r.hash), r);
                }
            }
            p
        })
    })
}

fn read_back(
    read: impl FnOnce(&mut dyn FnMut(&[u8], Record)) -> formats::instrprof::error::Result<()>,
) -> Profile {
    let mut back = Profile::new();
    read(&mut |name, r| {
        back.insert((String::from_utf8(name.to_vec()).unwrap(), r.hash), r);
    })
    .unwrap();
    back
}

proptest! {
    #[test]
    fn text_round_trips(p in profile()) {
        let symtab = Symtab::from_names(p.keys().map(|(n, _)| n.as_bytes()));
        let records: Vec<(&[u8], &Record)> = p.iter().map(|((n, _), r)| (n.as_bytes(), r)).collect();
        let mut text = Vec::new();
        write_text(&mut text, ProfileKind::IR, &records, &symtab, &TemporalTraces::default()).unwrap();
        let mut reader = TextReader::new(&text).unwrap();
        prop_assert_eq!(reader.kind(), ProfileKind::IR);
        let back = read_back(|sink| reader.read_records(sink));
        prop_assert_eq!(back, p);
    }

    #[test]
    fn indexed_round_trips(p in profile(), cs in any::<bool>(), ids in prop::collection::vec(prop::collection::vec(any::<u8>(), 1..24), 0..3)) {
        let mut by_name: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
        for ((n, _), r) in &p {
            by_name.entry(n).or_default().push(r);
        }
        let kind = if cs { ProfileKind(ProfileKind::IR.0 | ProfileKind::CONTEXT_SENSITIVE.0) } else { ProfileKind::IR };
        let mut binary_ids = ids.clone();
        binary_ids.sort();
        binary_ids.dedup();
        let profile = IndexedProfile {
            kind,
            entries: by_name.into_iter().map(|(name, records)| NameEntry { name: name.as_bytes(), records }).collect(),
            binary_ids: binary_ids.clone(),
            temporal: TemporalTraces::default(),
            vtable_names: Vec::new(),
        };
        for version in [11, 12] {
            let bytes = write_indexed(&profile, version);
            let reader = IndexedReader::new(&bytes).unwrap();
            prop_assert_eq!(reader.header.version(), version);
            prop_assert_eq!(reader.kind(), kind);
            prop_assert_eq!(reader.cs_summary.is_some(), cs);
            prop_assert_eq!(reader.binary_ids().unwrap(), binary_ids.clone());
            let back = read_back(|sink| reader.read_records(sink));
            prop_assert_eq!(&back, &p);
        }
    }
}
