use proptest::prelude::*;

use super::*;

fn entry(output_offset: u32, input_offset: u32, branch: bool, block: u64) -> Entry {
    Entry {
        output_offset,
        input: input_offset << 1 | u32::from(branch),
        block: (!branch).then_some(BlockId {
            hash: block.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            index: block,
        }),
    }
}

fn sample() -> Bat {
    Bat {
        hot: vec![
            HotFragment {
                address: 0x40_1000,
                hash: 0x1234_5678_9abc_def0,
                blocks: 5,
                // Two equal leading entries (one a branch), then moved code.
                entries: vec![
                    entry(0, 0, false, 0),
                    entry(4, 4, true, 0),
                    entry(9, 0x20, false, 3),
                    entry(0x10, 0x11, false, 1),
                ],
                secondary_entry_points: vec![0x11, 0x30],
            },
            HotFragment {
                address: 0x40_1100,
                hash: 7,
                blocks: 1,
                entries: vec![entry(0, 0, false, 0)],
                secondary_entry_points: vec![],
            },
        ],
        cold: vec![ColdFragment {
            address: 0x60_0000,
            hot_index: 0,
            input_skew: 0x40,
            entries: vec![entry(0, 0x40, false, 4), entry(2, 0x42, true, 0)],
        }],
    }
}

#[test]
fn a_table_round_trips_through_its_note() {
    let bat = sample();
    let note = write_note(&bat);
    let desc = write_tables(&bat).len();
    assert_eq!(&note[..12], &[5, 0, 0, 0, desc as u8, 0, 0, 0, 1, 0, 0, 0]);
    assert_eq!(note.len(), 20 + desc.next_multiple_of(4));
    assert_eq!(&note[12..20], b"BOLT\0\0\0\0");
    assert_eq!(parse_note(&note, 0), Ok(bat));
}

#[test]
fn equal_offsets_are_not_written() {
    let bat = sample();
    let mut shifted = bat.clone();
    shifted.hot[0].entries[1] = entry(4, 5, true, 0);
    // One entry fewer is equal, so its input offset costs a byte more.
    assert_eq!(write_tables(&shifted).len(), write_tables(&bat).len() + 1);
}

#[test]
fn bad_sections_say_where_and_why() {
    let note = write_note(&sample());
    let e = parse_note(&note[..8], 100).unwrap_err();
    assert_eq!(
        e.to_string(),
        "byte offset 100 of .note.bolt_bat: bad note header: shorter than a note header (12 bytes)"
    );
    let mut wrong_type = note.clone();
    wrong_type[8] = 2;
    assert_eq!(
        parse_note(&wrong_type, 0).unwrap_err().kind,
        BatErrorKind::NoteHeader("the note type is not NT_BOLT_BAT (1)")
    );
    // A truncated descriptor: every cut is an error, never a panic or a shorter table.
    let desc = write_tables(&sample());
    for cut in 0..desc.len() {
        assert!(parse_tables(&desc[..cut], 0).is_err(), "cut at {cut}");
    }
    // Bytes after the tables: the encoding is not the one we read.
    let mut longer = desc.clone();
    longer.push(0);
    let e = parse_tables(&longer, 20).unwrap_err();
    assert_eq!(
        e.kind,
        BatErrorKind::Trailing {
            consumed: desc.len() as u64,
            size: desc.len() as u64 + 1
        }
    );
    assert!(e.to_string().contains("LLVM 18 wrote another"), "{e}");
}

fn arb_entries() -> impl Strategy<Value = Vec<Entry>> {
    prop::collection::vec((0u32..0x1000, 0u32..0x1000, any::<bool>(), 0u64..50), 0..12).prop_map(
        |mut rows| {
            rows.sort_by_key(|r| r.0);
            rows.into_iter()
                .map(|(o, i, branch, b)| entry(o, i, branch, b))
                .collect()
        },
    )
}

proptest! {
    #[test]
    fn written_tables_read_back(
        hot in prop::collection::vec((1u64..0x1000, any::<u64>(), 0u64..100, arb_entries(), prop::collection::vec(0u32..0x1000, 0..4)), 1..6),
        cold in prop::collection::vec((1u64..0x1000, 0usize..6, 0u64..0x100, arb_entries()), 0..4),
    ) {
        let mut address = 0x40_0000;
        let hot: Vec<HotFragment> = hot.into_iter().map(|(gap, hash, blocks, entries, mut secondary)| {
            address += gap;
            secondary.sort_unstable();
            HotFragment { address, hash, blocks, entries, secondary_entry_points: secondary }
        }).collect();
        let mut cold: Vec<ColdFragment> = cold.into_iter().map(|(gap, index, input_skew, entries)| {
            address += gap;
            ColdFragment { address, hot_index: (index % hot.len()) as u64, input_skew, entries }
        }).collect();
        // LLVM writes cold fragments in address order, and their hot indices as deltas.
        cold.sort_by_key(|c| c.hot_index);
        let bat = Bat { hot, cold };
        prop_assert_eq!(parse_note(&write_note(&bat), 0), Ok(bat));
    }

    #[test]
    fn any_bytes_read_or_fail_cleanly(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(bat) = parse_tables(&bytes, 0) {
            // What reads, writes back to bytes that read the same.
            prop_assert_eq!(parse_tables(&write_tables(&bat), 0), Ok(bat));
        }
    }
}
