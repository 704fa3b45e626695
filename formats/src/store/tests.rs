//! Round trips and corruption of whole stores.

use proptest::prelude::*;

use super::*;

/// One binary's tables, as plain vectors.
type Tables = (BinaryMeta, Vec<TraceRow>, Vec<IpRow>, Vec<MemRow>);

/// A store's content, as plain vectors.
#[derive(Clone, Debug, Default, PartialEq)]
struct Content {
    meta: StoreMeta,
    binaries: Vec<Tables>,
}

fn write(c: &Content) -> Vec<u8> {
    let mut w = StoreWriter::new(Vec::new()).unwrap();
    w.meta(&c.meta).unwrap();
    for (meta, traces, ips, mem) in &c.binaries {
        let b = w.binary(meta).unwrap();
        let mut t = w.table::<TraceRow>(b).unwrap();
        traces.iter().try_for_each(|r| t.push(r)).unwrap();
        t.finish().unwrap();
        let mut t = w.table::<IpRow>(b).unwrap();
        ips.iter().try_for_each(|r| t.push(r)).unwrap();
        t.finish().unwrap();
        let mut t = w.table::<MemRow>(b).unwrap();
        mem.iter().try_for_each(|r| t.push(r)).unwrap();
        t.finish().unwrap();
    }
    w.finish().unwrap()
}

fn read(bytes: &[u8]) -> Result<Content, StoreError> {
    let store = Store::parse(bytes)?;
    let mut c = Content {
        meta: store.meta().clone(),
        ..Default::default()
    };
    for (i, (meta, _)) in store.binaries().iter().enumerate() {
        c.binaries.push((
            meta.clone(),
            store.rows::<TraceRow>(i).collect::<Result<_, _>>()?,
            store.rows::<IpRow>(i).collect::<Result<_, _>>()?,
            store.rows::<MemRow>(i).collect::<Result<_, _>>()?,
        ));
    }
    Ok(c)
}

fn sorted_unique<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v.dedup();
    v
}

fn content() -> impl Strategy<Value = Content> {
    let trace = (
        0u64..5000,
        0u64..5000,
        prop_oneof![Just(u64::MAX), 0u64..6000],
        1u64..1000,
        0u64..3,
    )
        .prop_map(|(branch, from, to, count, mispreds)| TraceRow {
            branch,
            from,
            to,
            count,
            mispreds,
        });
    let binary = (
        proptest::collection::vec(any::<u8>(), 0..3),
        "[a-z]{1,6}",
        proptest::collection::vec(trace, 0..5000),
        proptest::collection::vec((any::<u64>(), 1u64..9), 0..50),
        proptest::collection::vec((any::<u64>(), any::<u64>(), 1u64..9), 0..20),
    )
        .prop_map(|(build_id, name, traces, ips, mem)| {
            let mut traces = traces;
            traces.sort_by(|a, b| a.key_cmp(b));
            traces.dedup_by(|a, b| a.key_cmp(b).is_eq());
            let ips: Vec<IpRow> = sorted_unique(ips)
                .into_iter()
                .map(|(ip, count)| IpRow { ip, count })
                .collect::<Vec<_>>();
            let mut ips = ips;
            ips.dedup_by(|a, b| a.key_cmp(b).is_eq());
            let mut mem: Vec<MemRow> = sorted_unique(mem)
                .into_iter()
                .map(|(pc, addr, count)| MemRow {
                    pc,
                    addr,
                    // Some of each, deterministically.
                    in_binary: count % 2 == 0,
                    count,
                })
                .collect();
            mem.dedup_by(|a, b| a.key_cmp(b).is_eq());
            let meta = BinaryMeta {
                build_id,
                name: name.into_bytes(),
                events: vec!["cycles:u".into(), "mem-loads".into()],
                samples: 7,
                processes: 2,
            };
            (meta, traces, ips, mem)
        });
    (
        0u64..10,
        proptest::collection::vec("[a-z]{1,4}", 0..3),
        proptest::collection::vec(binary, 0..3),
    )
        .prop_map(|(captures, hosts, binaries)| {
            let mut binaries = binaries;
            binaries.sort_by(|a, b| a.0.identity_cmp(&b.0));
            binaries.dedup_by(|a, b| a.0.identity_cmp(&b.0).is_eq());
            Content {
                meta: StoreMeta {
                    captures,
                    hosts: sorted_unique(hosts),
                },
                binaries,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn stores_round_trip(c in content()) {
        let bytes = write(&c);
        prop_assert_eq!(read(&bytes).unwrap(), c.clone());
        // The bytes are a function of the content alone.
        prop_assert_eq!(write(&read(&bytes).unwrap()), bytes);
    }

    #[test]
    fn a_flipped_bit_anywhere_is_an_error(c in content(), at in any::<prop::sample::Index>(), bit in 0u8..8) {
        let mut bytes = write(&c);
        let i = at.index(bytes.len());
        bytes[i] ^= 1 << bit;
        prop_assert!(read(&bytes).is_err(), "flipping bit {} of byte {} went unnoticed", bit, i);
    }

    #[test]
    fn a_truncated_store_is_an_error(c in content(), at in any::<prop::sample::Index>()) {
        let bytes = write(&c);
        let cut = at.index(bytes.len());
        let err = read(&bytes[..cut]).unwrap_err();
        // A cut header is no store; a whole header without the end is a cut store, found
        // missing at or before the cut (never past the end of what is there).
        let expected = if cut < std::mem::size_of::<FileHeader>() {
            StoreErrorKind::NotAStore
        } else {
            StoreErrorKind::NoTrailer
        };
        let not_a_store = expected == StoreErrorKind::NotAStore;
        prop_assert_eq!(err.kind, expected, "cut at {} of {}", cut, bytes.len());
        prop_assert!(err.offset <= cut as u64, "offset {} past the cut at {}", err.offset, cut);
        prop_assert!(err.offset > 0 || not_a_store, "offset 0 for a cut at {}", cut);
    }
}

#[test]
fn errors_say_where() {
    let c = Content {
        meta: StoreMeta::default(),
        binaries: vec![(
            BinaryMeta {
                name: b"app".to_vec(),
                ..Default::default()
            },
            (0..10_000)
                .map(|i| TraceRow {
                    branch: i,
                    from: i + 1,
                    to: i + 2,
                    count: 1,
                    mispreds: 0,
                })
                .collect(),
            Vec::new(),
            Vec::new(),
        )],
    };
    let mut bytes = write(&c);
    let store = Store::parse(&bytes).unwrap();
    let second = store.binaries()[0].1.blocks(SectionKind::Traces)[1];
    bytes[second.offset as usize + 3] ^= 4;
    let e = read(&bytes).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "byte offset {} (traces block 1 of binary 0): checksum mismatch (the file is corrupt)",
            second.offset
        )
    );
    let mut newer = write(&c);
    newer[8] = 3;
    assert_eq!(
        read(&newer).unwrap_err().to_string(),
        "byte offset 8: store format version 3 was written by a newer profmill; this one reads version 2"
    );
    let mut older = write(&c);
    older[8] = 1;
    assert_eq!(
        read(&older).unwrap_err().to_string(),
        "byte offset 8: store format version 1 was written by a pre-release profmill (its memory rows lack a field); aggregate the captures again"
    );
    assert_eq!(
        read(b"PERFILE2 and more than sixty-four bytes of something that is not a store")
            .unwrap_err()
            .kind,
        StoreErrorKind::NotAStore
    );
}

#[test]
fn unsorted_rows_and_binaries_are_refused_by_the_writer() {
    let mut w = StoreWriter::new(Vec::new()).unwrap();
    let b = w
        .binary(&BinaryMeta {
            name: b"b".to_vec(),
            ..Default::default()
        })
        .unwrap();
    assert!(w
        .binary(&BinaryMeta {
            name: b"a".to_vec(),
            ..Default::default()
        })
        .is_err());
    let mut t = w.table::<TraceRow>(b).unwrap();
    let row = TraceRow {
        branch: 5,
        ..Default::default()
    };
    t.push(&row).unwrap();
    assert!(t.push(&row).is_err());
}

#[test]
fn unknown_sections_are_skipped() {
    // A store whose table of contents lists a section of a kind this version does not know.
    let mut w = StoreWriter::new(Vec::new()).unwrap();
    w.meta(&StoreMeta {
        captures: 3,
        hosts: vec!["h".into()],
    })
    .unwrap();
    let mut bytes = w.finish().unwrap();
    // The meta section's TOC entry is the first; give it an unknown kind and fix the checksum.
    let trailer_at = bytes.len() - 32;
    let toc_at = u64::from_le_bytes(bytes[trailer_at..trailer_at + 8].try_into().unwrap()) as usize;
    bytes[toc_at..toc_at + 4].copy_from_slice(&99u32.to_le_bytes());
    let sum = checksum(&bytes[toc_at..trailer_at]);
    bytes[trailer_at + 16..trailer_at + 24].copy_from_slice(&sum.to_le_bytes());
    let store = Store::parse(&bytes).unwrap();
    assert_eq!(store.meta(), &StoreMeta::default());
}

/// Recomputes the section and table-of-contents checksums of a hand-edited store.
fn fix_checksums(bytes: &mut [u8]) {
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let trailer = bytes.len() - 32;
    let (toc, entries) = (
        u64_at(bytes, trailer) as usize,
        u64_at(bytes, trailer + 8) as usize,
    );
    for e in 0..entries {
        let at = toc + e * std::mem::size_of::<TocEntry>();
        let (offset, length) = (
            u64_at(bytes, at + 8) as usize,
            u64_at(bytes, at + 16) as usize,
        );
        let sum = checksum(&bytes[offset..offset + length]);
        bytes[at + 32..at + 40].copy_from_slice(&sum.to_le_bytes());
    }
    let sum = checksum(&bytes[toc..trailer]);
    bytes[trailer + 16..trailer + 24].copy_from_slice(&sum.to_le_bytes());
}

/// Found by the fuzz target: a meta section with hosts out of order was read, and its store
/// could not be written back. The reader now refuses it as the writer does.
#[test]
fn unsorted_hosts_are_refused_by_the_reader() {
    let mut w = StoreWriter::new(Vec::new()).unwrap();
    w.meta(&StoreMeta {
        captures: 1,
        hosts: vec!["a".into(), "b".into()],
    })
    .unwrap();
    let mut bytes = w.finish().unwrap();
    // The meta section follows the 32-byte header: captures, count, then "a" and "b".
    assert_eq!(&bytes[32..38], b"\x01\x02\x01a\x01b");
    bytes.swap(35, 37);
    fix_checksums(&mut bytes);
    let e = Store::parse(&bytes)
        .err()
        .expect("unsorted hosts are refused");
    assert_eq!(e.kind, StoreErrorKind::Unsorted);
    assert_eq!(e.section.map(|s| s.0), Some(SectionKind::Meta));
}

/// Everything [`BlockCursor::next_row`] reads from `bytes` (a block's, whatever they hold):
/// the rows, then the error or the end.
fn rows_one_by_one(bytes: &[u8], s: &Section) -> (Vec<TraceRow>, Option<StoreError>) {
    let mut cursor = BlockCursor::<TraceRow>::new_unchecked(s);
    let mut rows = Vec::new();
    loop {
        match cursor.next_row(bytes) {
            Ok(Some(row)) => rows.push(row),
            Ok(None) => return (rows, None),
            Err(e) => return (rows, Some(e)),
        }
    }
}

/// The same through [`BlockCursor::rows_while`], called for one key range after another (the
/// merge's way), each call's stopping row kept; the first row read by `next_row` first if
/// `first_alone` (as the merge reads it).
fn rows_by_ranges(
    bytes: &[u8],
    s: &Section,
    ends: &[[u64; 3]],
    first_alone: bool,
) -> (Vec<TraceRow>, Option<StoreError>) {
    let mut cursor = BlockCursor::<TraceRow>::new_unchecked(s);
    let mut rows = Vec::new();
    if first_alone {
        match cursor.next_row(bytes) {
            Ok(Some(row)) => rows.push(row),
            Ok(None) => return (rows, None),
            Err(e) => return (rows, Some(e)),
        }
    }
    let error = read_by_ranges(&mut cursor, bytes, ends, &mut rows).err();
    (rows, error)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The merge's bulk decoder reads what the row-by-row one reads, from intact blocks and
    /// from blocks with a damaged byte (past the checksum, which the merge checks first):
    /// the same rows, and then the same error, at the same offset.
    #[test]
    fn decoding_by_ranges_equals_decoding_row_by_row(
        c in content(),
        ends in proptest::collection::vec((0u64..5000, 0u64..5000, 0u64..64), 0..6),
        damage in proptest::option::of((any::<prop::sample::Index>(), any::<u8>())),
    ) {
        let bytes = write(&c);
        let store = Store::parse(&bytes).unwrap();
        let mut ends: Vec<[u64; 3]> = ends.into_iter().map(|(a, b, c)| [a, b, c]).collect();
        ends.sort();
        for (_, layout) in store.binaries() {
            for s in layout.blocks(SectionKind::Traces) {
                let mut block = bytes[s.offset as usize..(s.offset + s.length) as usize].to_vec();
                if let Some((at, byte)) = damage {
                    let i = at.index(block.len());
                    block[i] = byte;
                }
                let expected = rows_one_by_one(&block, s);
                prop_assert_eq!(rows_by_ranges(&block, s, &ends, false), expected.clone());
                prop_assert_eq!(rows_by_ranges(&block, s, &ends, true), expected);
            }
        }
    }
}

/// Every table of `bytes` read both ways: block by block ([`rows_by_blocks`]) and row by row
/// ([`Store::rows`]).
#[allow(clippy::type_complexity)]
fn tables_both_ways(
    bytes: &[u8],
) -> Vec<(
    Result<Vec<TraceRow>, StoreError>,
    Result<Vec<TraceRow>, StoreError>,
    Result<Vec<MemRow>, StoreError>,
    Result<Vec<MemRow>, StoreError>,
)> {
    let Ok(store) = Store::parse(bytes) else {
        return Vec::new();
    };
    (0..store.binaries().len())
        .map(|i| {
            (
                rows_by_blocks::<TraceRow>(&store, i),
                store.rows::<TraceRow>(i).collect(),
                rows_by_blocks::<MemRow>(&store, i),
                store.rows::<MemRow>(i).collect(),
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Blocks decoded apart and joined read what reading row by row reads, from intact
    /// stores and from stores with a damaged byte in a table block, checksums left wrong or
    /// made right again (so that the damage reaches the decoder): the same rows, or the same
    /// first error.
    #[test]
    fn decoding_blocks_apart_equals_reading_row_by_row(
        c in content(),
        damage in proptest::option::of((any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<u8>())),
        fix in any::<bool>(),
    ) {
        let mut bytes = write(&c);
        if let Some((block, at, byte)) = damage {
            let store = Store::parse(&bytes).unwrap();
            let blocks: Vec<Section> = store
                .binaries()
                .iter()
                .flat_map(|(_, l)| [SectionKind::Traces, SectionKind::Mem].map(|k| l.blocks(k)))
                .flatten()
                .copied()
                .collect();
            if !blocks.is_empty() {
                let s = blocks[block.index(blocks.len())];
                bytes[s.offset as usize + at.index(s.length as usize)] = byte;
                if fix {
                    fix_checksums(&mut bytes);
                }
            }
        }
        for (by_blocks, by_rows, mem_by_blocks, mem_by_rows) in tables_both_ways(&bytes) {
            prop_assert_eq!(by_blocks, by_rows);
            prop_assert_eq!(mem_by_blocks, mem_by_rows);
        }
    }
}

/// A second block whose first row does not follow the first block's last: both ways of
/// reading name it, at the same place.
#[test]
fn blocks_out_of_order_are_found_where_they_join() {
    let traces: Vec<TraceRow> = (0..ROWS_PER_BLOCK as u64 + 10)
        .map(|i| TraceRow {
            branch: 100 + i,
            from: 7,
            to: 9,
            count: 1,
            mispreds: 0,
        })
        .collect();
    let c = Content {
        binaries: vec![(BinaryMeta::default(), traces, Vec::new(), Vec::new())],
        ..Default::default()
    };
    let mut bytes = write(&c);
    let second = Store::parse(&bytes).unwrap().binaries()[0]
        .1
        .blocks(SectionKind::Traces)[1];
    // The block's first row starts from an all-zero row: its first value is the branch
    // itself, now 0, below the first block's.
    bytes[second.offset as usize] = 0;
    fix_checksums(&mut bytes);
    let [(by_blocks, by_rows, _, _)] = tables_both_ways(&bytes).try_into().unwrap();
    let e = by_blocks.unwrap_err();
    assert_eq!(e.kind, StoreErrorKind::Unsorted);
    assert_eq!(e.section, Some((SectionKind::Traces, 0, 1)));
    assert_eq!(Err(e), by_rows);
}

/// Rows of the longest encodings fill whole blocks, and every table after the first reuses
/// the block buffer of the one before: several binaries' tables of such rows, each over
/// several blocks, read back as written.
#[test]
fn long_rows_over_many_blocks_and_tables_round_trip() {
    let n = 2 * ROWS_PER_BLOCK as u64 + 3;
    // Each row: a 1-byte branch delta, then the target, fall-through and counts as far from
    // their bases as values go (about 40 bytes).
    let traces: Vec<TraceRow> = (0..n)
        .map(|i| TraceRow {
            branch: i + 1,
            from: (i + 1).wrapping_add(1 << 62),
            to: (i + 1).wrapping_add(1 << 62).wrapping_add(1 << 62),
            count: u64::MAX - i,
            mispreds: u64::MAX / 3 + i,
        })
        .collect();
    let ips: Vec<IpRow> = (0..n)
        .map(|i| IpRow {
            ip: i * (1 << 50),
            count: u64::MAX - i,
        })
        .collect();
    let c = Content {
        binaries: (0..3u8)
            .map(|b| {
                let meta = BinaryMeta {
                    name: vec![b'a' + b],
                    ..BinaryMeta::default()
                };
                (meta, traces.clone(), ips.clone(), Vec::new())
            })
            .collect(),
        ..Default::default()
    };
    let bytes = write(&c);
    assert_eq!(read(&bytes).unwrap(), c);
    let store = Store::parse(&bytes).unwrap();
    let blocks = store.binaries()[2].1.blocks(SectionKind::Traces);
    assert_eq!(blocks.len(), 3);
    // Blocks of long rows: about 40 bytes each.
    assert!(
        blocks[0].length > 35 * ROWS_PER_BLOCK as u64,
        "{}",
        blocks[0].length
    );
}
