//! AutoFDO GCOV v4: the proposal's own example, exact text → binary → compact → text round
//! trips, lossless v3 ↔ v4 conversion (corpus and generated profiles), forward compatibility
//! (unknown sections, location types and text sections), the choices the module docs record,
//! and malformed inputs.

use std::sync::Arc;

use crate::sampleprof_common::*;
use corpus::sampleprof::{sample_profile_text, SampleProfileSpec};
use formats::sampleprof::gcov::{self, Version};
use formats::sampleprof::gcov_v4::{self as v4, Document, Encoding, UnknownLocation};
use formats::sampleprof::model::LineLocation;
use formats::sampleprof::{self as sp, summary, text, Profile};
use testsupport::first_difference;

/// The textual example of the proposal's section 5.3, without the mail's 3-space indent.
fn proposal_example() -> Option<String> {
    let path = testsupport::shared_spec("autofdo-gcov-v4-proposal.txt");
    let Ok(spec) = std::fs::read_to_string(&path) else {
        eprintln!("skipping: {} is missing", path.display());
        return None;
    };
    let from = spec.find("5.3.  Example\n\n").expect("section 5.3");
    let start = from
        + spec[from..]
            .find("   filenames = {")
            .expect("example start");
    let end = start
        + spec[start..]
            .find("\n6.  Extensibility")
            .expect("section 6");
    let mut out = String::new();
    for line in spec[start..end].trim_end().lines() {
        out.push_str(line.strip_prefix("   ").unwrap_or(line));
        out.push('\n');
    }
    Some(out)
}

fn encode(doc: &Document, e: Encoding) -> Vec<u8> {
    let mut out = Vec::new();
    v4::write_document(doc, e, &mut out).unwrap();
    out
}

/// text → binary → compact → text must give back the same text; each binary reads back to
/// the same document.
fn assert_round_trips(doc: &Document, canonical_text: &[u8]) {
    let bin = encode(doc, Encoding::Binary);
    assert_eq!(v4::detect(&bin), Some(Encoding::Binary));
    let from_bin = v4::read_binary(&bin).unwrap();
    assert_eq!(&from_bin, doc);
    let compact = encode(&from_bin, Encoding::Compact);
    assert_eq!(v4::detect(&compact), Some(Encoding::Compact));
    let from_compact = v4::read_binary(&compact).unwrap();
    assert_eq!(&from_compact, doc);
    let back = encode(&from_compact, Encoding::Text);
    assert!(
        back == canonical_text,
        "{}",
        first_difference(&back, canonical_text)
    );
    // And the binaries are stable: rewriting what was read gives the same bytes.
    assert_eq!(encode(&from_bin, Encoding::Binary), bin);
    assert_eq!(encode(&from_compact, Encoding::Compact), compact);
    assert!(compact.len() < bin.len());
}

#[test]
fn proposal_example_round_trips_exactly() {
    let Some(example) = proposal_example() else {
        return;
    };
    assert_eq!(v4::detect(example.as_bytes()), Some(Encoding::Text));
    let doc = v4::read_text(example.as_bytes()).unwrap();
    // What the example says, read back.
    assert_eq!(doc.files.len(), 2);
    assert_eq!(doc.summary.total_count, 2194467);
    assert_eq!(doc.summary.entries.len(), 16);
    let bubble = &doc.symbols[&1];
    assert_eq!(&bubble.name[..], b"bubble_sort");
    let info = bubble.info.as_ref().unwrap();
    assert_eq!(info.body.counts.len(), 12);
    assert_eq!(info.body.counts[4], (LineLocation::new(4, 1), 659399));
    let printf = &doc.symbols[&2];
    assert_eq!((&printf.name[..], printf.file), (&b"printf"[..], Some(1)));
    assert!(printf.info.is_none());
    let sort = doc.symbols[&3].info.as_ref().unwrap();
    assert_eq!(sort.body.inlined[0].symbol, 2);
    // Our writer's layout is the example's.
    assert_round_trips(&doc, example.as_bytes());
    // The IDs are not contiguous per file (file 0 has 1 and 3): the ranges overlap.
    let bin = encode(&doc, Encoding::Binary);
    assert!(v4::read_binary(&bin).is_ok());
    // The profile it describes.
    let p = v4::to_profile(&doc);
    let mut llvm = Vec::new();
    text::write(&p, &mut llvm).unwrap();
    let llvm = String::from_utf8(llvm).unwrap();
    assert!(llvm.starts_with("bubble_sort:2194293:0\n"), "{llvm}");
    // The example's summary is LLVM's summary of its counts.
    assert_eq!(summary::compute(&p), doc.summary);
    assert!(llvm.contains(" 1: printf:0\n"), "{llvm}");
}

/// A hand-made profile with every feature: wide counts, discriminators, single and multiple
/// call targets, targets that are nothing else (→ `declared_symbols`), deep inlining,
/// source files, timestamps, an unknown-file symbol.
fn rich_profile() -> Profile {
    let mut p = text::read(
        b"main:0:7\n 1: 10\n 2.3: 20 bar:15 foo:5\n 4: 5000000000 only_a_target:3\n 5: 0\n 3: inl:0\n  1: 100\n  2.1: 200 tgt:200\n   7: deep:0\n    1: 3\n_Z3foov:0:0\n 0: 250\n 16777215.65535: 1\n",
    )
    .unwrap();
    p.source_files
        .insert(sp::FunctionId::name(b"main"), Arc::from(&b"src/main.c"[..]));
    p.source_files
        .insert(sp::FunctionId::name(b"inl"), Arc::from(&b"inc/inl.h"[..]));
    p.source_files
        .insert(sp::FunctionId::name(b"tgt"), Arc::from(&b"src/main.c"[..]));
    p.timestamps.insert(sp::FunctionId::name(b"main"), 42);
    // As v4 would recompute them.
    v4::to_profile(&v4::from_profile(&p).unwrap())
}

#[test]
fn rich_profile_round_trips_through_every_encoding() {
    let p = rich_profile();
    let doc = v4::from_profile(&p).unwrap();
    let txt = encode(&doc, Encoding::Text);
    let s = String::from_utf8(txt.clone()).unwrap();
    // Target-only symbols are kept by our extension section, in the grammar's declaration
    // form; symbols named in an inlined header are not repeated there.
    let start = s.find("declared_symbols = {\n").expect("declared_symbols") + 21;
    let block = &s[start..start + s[start..].find('}').unwrap()];
    let declared: Vec<&str> = block
        .lines()
        .map(|l| l.trim().split(':').next().unwrap())
        .collect();
    assert_eq!(
        declared,
        // By ID: TU by TU (files first), names sorted within a TU.
        ["\"tgt\"", "\"bar\"", "\"foo\"", "\"only_a_target\""],
        "{s}"
    );
    assert!(s.contains(" = \"deep\":-1("), "{s}");
    assert!(s.contains(" -> {"), "{s}");
    assert_eq!(v4::read_text(&txt).unwrap(), doc);
    assert_round_trips(&doc, &txt);
    for e in [Encoding::Binary, Encoding::Compact, Encoding::Text] {
        let mut out = Vec::new();
        v4::write(&p, e, &mut out).unwrap();
        assert_eq!(sp::read(&out).unwrap(), p, "{e:?}");
        assert_eq!(
            sp::detect(&out),
            Some(sp::Format::GcovV4(e)),
            "detection of {e:?}"
        );
    }
}

#[test]
fn wide_counts_and_discriminators_use_their_record_types() {
    let p = text::read(b"f:0:0\n 1: 4294967295\n 2: 4294967296\n 3.9: 0\n").unwrap();
    let doc = v4::from_profile(&p).unwrap();
    let bin = encode(&doc, Encoding::Binary);
    // NORMAL at line 1 with count 2^32-1, WIDE at line 2, ZERO with discriminator at 3.9.
    assert!(bin
        .windows(8)
        .any(|w| w == [0x02, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF]));
    assert!(bin
        .windows(12)
        .any(|w| w == [0x03, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0]));
    assert!(bin.windows(6).any(|w| w == [0x81, 0, 0, 3, 0, 9]));
    let compact = encode(&doc, Encoding::Compact);
    // Compact: WIDE, line 2 (varint 02), count 2^32 as a 5-byte varint.
    assert!(compact
        .windows(7)
        .any(|w| w == [0x03, 0x02, 0x80, 0x80, 0x80, 0x80, 0x10]));
    assert_eq!(v4::read_binary(&compact).unwrap(), doc);
    // Locations beyond the fields' widths cannot be written.
    let far = text::read(b"f:0:0\n 16777216.1: 1\n").unwrap();
    assert!(matches!(
        v4::from_profile(&far),
        Err(sp::Error::UnsupportedForWriting(_))
    ));
}

#[test]
fn header_layout_and_section_indices() {
    let doc = v4::from_profile(&rich_profile()).unwrap();
    let bin = encode(&doc, Encoding::Binary);
    assert_eq!(&bin[..8], b"gcov\0\0\0\x04");
    assert_eq!(bin[8], 0);
    // Three files (two named + the empty entry) → 2 × 3 TU sections; 3 top-level symbols.
    let n = u64::from_be_bytes([
        0, bin[9], bin[10], bin[11], bin[12], bin[13], bin[14], bin[15],
    ]);
    assert_eq!(n, 6 + 2);
    let header_len = 16 + 16 * (n as usize + 2);
    let entry = |i: usize| {
        let at = 16 + 16 * i;
        let off = u64::from_be_bytes(bin[at..at + 8].try_into().unwrap()) as usize;
        let size = u64::from_be_bytes(bin[at + 8..at + 16].try_into().unwrap()) as usize;
        (off, size)
    };
    // Sections back to back in index order, each starting with its type byte.
    let mut expected_offset = header_len;
    let kinds: Vec<u8> = (0..n as usize + 2)
        .map(|i| {
            let (off, size) = entry(i);
            assert_eq!(off, expected_offset, "section {i}");
            expected_offset += size;
            bin[off]
        })
        .collect();
    assert_eq!(expected_offset, bin.len());
    assert_eq!(kinds, [2, 3, 1, 4, 1, 4, 1, 4, 5, 5]);
    // The file names section: files in first-seen order over the sorted names ("inl" before
    // "main"), the empty entry last, names with their NUL.
    let (off, _) = entry(1);
    assert_eq!(&bin[off + 1..off + 5], &[0, 0, 0, 3]);
    assert_eq!(&bin[off + 5..off + 9], &[0, 0, 0, 10]);
    assert_eq!(&bin[off + 9..off + 19], b"inc/inl.h\0");
    // Compact header: bit 7 set, varint section count.
    let compact = encode(&doc, Encoding::Compact);
    assert_eq!(compact[8], 0x80);
    assert_eq!(compact[9], 8);
}

#[test]
fn trie_layout_and_edge_cases() {
    // Strings: "", "_ZN3foo", "_ZN3fooC1", "_ZN3bar": sorted → IDs by rank.
    let strings: Vec<&[u8]> = vec![b"", b"_ZN3bar", b"_ZN3foo", b"_ZN3fooC1"];
    let bytes = trie_bytes(&strings, false);
    #[rustfmt::skip]
    let expected: Vec<u8> = vec![
        0, 0, 0, 4,                      // GCOV_NUM_STRINGS
        0x81, 0, 0, 0, 0,                // root: terminal (""), 1 child
        0, 4, b'_', b'Z', b'N', b'3',    // "_ZN3"
        0x02,                            // 2 children
        0, 3, b'b', b'a', b'r', 0x80, 0, 0, 0, 1,
        0, 3, b'f', b'o', b'o', 0x81, 0, 0, 0, 2,
        0, 2, b'C', b'1', 0x80, 0, 0, 0, 3,
    ];
    assert_eq!(bytes, expected);
    assert_eq!(trie_strings(&bytes, false), strings);
    // Compact: lengths and IDs as varints, labels raw.
    let compact = trie_bytes(&strings, true);
    assert_eq!(&compact[..7], &[4, 0x81, 0, 4, b'_', b'Z', b'N']);
    assert_eq!(trie_strings(&compact, true), strings);
    // More than 127 children and labels longer than 65535 bytes.
    let mut wide: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b, b'x']).collect();
    wide.push(vec![b'q'; 70_000]);
    wide.push([vec![b'q'; 70_000], b"tail".to_vec()].concat());
    wide.sort();
    let refs: Vec<&[u8]> = wide.iter().map(|v| &v[..]).collect();
    for compact in [false, true] {
        let bytes = trie_bytes(&refs, compact);
        assert_eq!(trie_strings(&bytes, compact), refs);
    }
    // A deep trie (every prefix of a long string) reads and writes without recursion.
    let long = vec![b'a'; 5_000];
    let deep: Vec<&[u8]> = (0..=long.len()).map(|i| &long[..i]).collect();
    let bytes = trie_bytes(&deep, false);
    assert_eq!(trie_strings(&bytes, false).len(), deep.len());
}

fn trie_bytes(strings: &[&[u8]], compact: bool) -> Vec<u8> {
    // Through the public document API: one TU whose symbols have these names.
    let mut doc = Document::default();
    for (i, s) in strings.iter().enumerate() {
        doc.symbols.insert(
            i as u32,
            v4::Symbol {
                name: Arc::from(*s),
                file: None,
                info: None,
            },
        );
    }
    let bin = encode(
        &doc,
        if compact {
            Encoding::Compact
        } else {
            Encoding::Binary
        },
    );
    let (off, size) = section_span(&bin, 2);
    bin[off + 1..off + size].to_vec()
}

fn trie_strings(bytes: &[u8], compact: bool) -> Vec<Vec<u8>> {
    let table = v4::decode_string_table(bytes, compact).unwrap();
    table.iter().map(|s| s.to_vec()).collect()
}

/// Offset and size of section `i` of a binary file (normal or compact header).
fn section_span(bin: &[u8], i: usize) -> (usize, usize) {
    let compact = bin[8] & 0x80 != 0;
    let mut pos = 9;
    let mut field = |width: usize| -> u64 {
        if compact {
            let mut v = 0u64;
            let mut shift = 0;
            loop {
                let b = bin[pos];
                pos += 1;
                v |= u64::from(b & 0x7F) << shift;
                shift += 7;
                if b & 0x80 == 0 {
                    return v;
                }
            }
        } else {
            let v = bin[pos..pos + width]
                .iter()
                .fold(0u64, |a, &b| a << 8 | u64::from(b));
            pos += width;
            v
        }
    };
    field(7);
    let mut span = (0, 0);
    for k in 0..=i {
        let off = field(8) as usize;
        let size = field(8) as usize;
        if k == i {
            span = (off, size);
        }
    }
    span
}

#[test]
fn unknown_sections_and_location_types_are_skipped() {
    let p = rich_profile();
    let plain = v4::from_profile(&p).unwrap();
    let mut doc = plain.clone();
    doc.unknown_sections.push(v4::UnknownSection {
        kind: 0x7E,
        compact: false,
        payload: b"future data {with} bytes".to_vec(),
    });
    doc.unknown_sections.push(v4::UnknownSection {
        kind: 0x10,
        compact: true,
        payload: vec![0xFF; 3],
    });
    let main_id = *plain
        .symbols
        .iter()
        .find(|(_, s)| &s.name[..] == b"main")
        .unwrap()
        .0;
    let main = doc
        .symbols
        .get_mut(&main_id)
        .unwrap()
        .info
        .as_mut()
        .unwrap();
    main.body.unknown.push(UnknownLocation {
        kind: 0x40,
        loc: LineLocation::new(9, 2),
        payload: vec![1, 2, 3, 4, 5],
    });
    main.body.inlined[0].body.unknown.push(UnknownLocation {
        kind: 0x07,
        loc: LineLocation::new(1, 0),
        payload: Vec::new(),
    });
    for e in [Encoding::Binary, Encoding::Compact] {
        let bin = encode(&doc, e);
        // The unknown records are in the bytes: type 0x40 with a discriminator, line 9, disc 2,
        // trailing size 5.
        let record: &[u8] = if e == Encoding::Binary {
            &[0xC0, 0, 0, 9, 0, 2, 0, 0, 0, 5, 1, 2, 3, 4, 5]
        } else {
            &[0xC0, 9, 2, 5, 1, 2, 3, 4, 5]
        };
        assert!(bin.windows(record.len()).any(|w| w == record), "{e:?}");
        let read = v4::read_binary(&bin).unwrap();
        // Kept for binary → binary, and otherwise invisible.
        assert_eq!(read, doc, "{e:?}");
        assert_eq!(v4::to_profile(&read), p);
        let mut without = read.clone();
        without.unknown_sections.clear();
        let m = without
            .symbols
            .get_mut(&main_id)
            .unwrap()
            .info
            .as_mut()
            .unwrap();
        m.body.unknown.clear();
        m.body.inlined[0].body.unknown.clear();
        assert_eq!(without, plain);
        // Text has no place for them.
        assert_eq!(
            encode(&read, Encoding::Text),
            encode(&plain, Encoding::Text)
        );
    }
}

#[test]
fn mixed_compact_and_normal_sections_read() {
    // A normal-mode file whose summary section is re-encoded in compact mode.
    let doc = v4::from_profile(&rich_profile()).unwrap();
    let bin = encode(&doc, Encoding::Binary);
    let (off, size) = section_span(&bin, 0);
    let mut summary = vec![0x82];
    let fields: Vec<u64> = bin[off + 1..off + size]
        .chunks(8)
        .take(6)
        .map(|c| u64::from_be_bytes(c.try_into().unwrap()))
        .collect();
    for v in &fields {
        varint(&mut summary, *v);
    }
    let mut pos = off + 1 + 48;
    for _ in 0..fields[5] {
        let cutoff = u32::from_be_bytes(bin[pos..pos + 4].try_into().unwrap());
        varint(&mut summary, cutoff.into());
        for k in 0..2 {
            let at = pos + 4 + 8 * k;
            varint(
                &mut summary,
                u64::from_be_bytes(bin[at..at + 8].try_into().unwrap()),
            );
        }
        pos += 20;
    }
    // Put it at the end of the file and point the header at it.
    let mut mixed = bin.clone();
    let new_off = mixed.len() as u64;
    mixed.extend_from_slice(&summary);
    mixed[16..24].copy_from_slice(&new_off.to_be_bytes());
    mixed[24..32].copy_from_slice(&(summary.len() as u64).to_be_bytes());
    assert_eq!(v4::read_binary(&mixed).unwrap(), doc);
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[test]
fn unknown_text_sections_are_skipped() {
    let doc = v4::from_profile(&rich_profile()).unwrap();
    let txt = String::from_utf8(encode(&doc, Encoding::Text)).unwrap();
    // At top level, inside a symbol's section list and inside an inlined function.
    let extended = txt
        .replacen(
            "\nsummary = {",
            "\nfuture_top = { \"}}{\" { nested = { 1 } } }\nsummary = {",
            1,
        )
        .replacen(
            "  locations = {",
            "  branches = { 3 -> { \"x\" = 1 }, \"{\" },\n  locations = {",
            1,
        )
        .replacen(
            "      locations = {",
            "      vtables_2 = {},\n      locations = {",
            1,
        );
    assert_ne!(extended, txt);
    assert_eq!(v4::read_text(extended.as_bytes()).unwrap(), doc);
    let tail = format!("{txt}\nafter_symbols = {{ {{ }} }}\n");
    assert_eq!(v4::read_text(tail.as_bytes()).unwrap(), doc);
}

#[test]
fn v3_v4_lossless_on_corpus_and_generated_profiles() {
    let mut profiles: Vec<(String, Profile)> = Vec::new();
    for f in corpus_files() {
        let Ok(p) = sp::read(&std::fs::read(&f).unwrap()) else {
            continue;
        };
        profiles.push((f.display().to_string(), p));
    }
    for seed in 0..4 {
        let t = sample_profile_text(&SampleProfileSpec::new(seed, 300));
        profiles.push((format!("generated seed {seed}"), text::read(&t).unwrap()));
    }
    let mut checked = 0;
    for (what, p) in profiles {
        let mut first = Vec::new();
        if gcov::write(&p, Version::V3, &mut first).is_err() {
            continue; // contexts, or locations gcov cannot hold
        }
        // A v3 file as v3 itself reproduces it (the first write may hold a summary of
        // attributes v3 cannot keep).
        let mut v3 = Vec::new();
        gcov::write(&gcov::read(&first).unwrap(), Version::V3, &mut v3).unwrap();
        let from_v3 = gcov::read(&v3).unwrap();
        for e in [Encoding::Binary, Encoding::Compact, Encoding::Text] {
            let mut bytes = Vec::new();
            v4::write(&from_v3, e, &mut bytes).unwrap_or_else(|err| panic!("{what}: {err}"));
            let from_v4 = v4::read(&bytes).unwrap_or_else(|err| panic!("{what} {e:?}: {err}"));
            assert!(from_v4 == from_v3, "{what}: {e:?} differs from v3");
            let mut again = Vec::new();
            gcov::write(&from_v4, Version::V3, &mut again).unwrap();
            assert!(again == v3, "{what}: v3 → v4 {e:?} → v3 changed the bytes");
        }
        checked += 1;
    }
    assert!(checked >= 4, "{checked}");
    if corpus_dir().is_some() {
        assert!(checked >= 24, "only {checked} profiles");
    }
}

#[test]
fn generated_profiles_round_trip_exactly() {
    for seed in 10..13 {
        let p = text::read(&sample_profile_text(&SampleProfileSpec::new(seed, 200))).unwrap();
        let doc = v4::from_profile(&p).unwrap();
        let txt = encode(&doc, Encoding::Text);
        assert_eq!(v4::read_text(&txt).unwrap(), doc);
        assert_round_trips(&doc, &txt);
    }
}

fn text_error(t: &str) -> String {
    v4::read_text(t.as_bytes()).unwrap_err().to_string()
}

#[test]
fn malformed_text_errors_name_line_and_column() {
    let Some(example) = proposal_example() else {
        return;
    };
    let cases: &[(&str, &str, &str)] = &[
        (
            "\"bubble_sort\":0(1:0:0)",
            "\"bubble_sort\":7(1:0:0)",
            "file ID 7 is not below the 2 file names",
        ),
        (
            "4.1 = 659399",
            "4.1 = x",
            "expected a sample count, found 'x",
        ),
        (
            "4.1 = 659399",
            "4.70000 = 1",
            "a discriminator is larger than 65535",
        ),
        (
            "4.1 = 659399",
            "16777216 = 1",
            "a line offset is larger than 16777215",
        ),
        (
            "num_detailed_entries = 16",
            "num_detailed_entries = 15",
            "num_detailed_entries is 15, but 16 entries follow",
        ),
        (
            "\"printf\":1(2)",
            "\"printf\":1(1)",
            "symbol ID 1 was declared on line",
        ),
        (
            "\"sort_array\":0(3:0:0)",
            "\"sort_array\":0(1:0:0)",
            "symbol ID 1 was declared on line",
        ),
        (
            "        2 = 0\n",
            "        2 = 0,\n",
            "expected a line offset, found '}",
        ),
        (
            "locations = {\n    0 = 0,\n    1 = 0",
            "locations = {\n    0 = 0\n    1 = 0",
            "expected ',' or '}'",
        ),
    ];
    for (from, to, message) in cases {
        assert!(example.contains(from), "{from}");
        let bad = example.replacen(from, to, 1);
        let e = text_error(&bad);
        assert!(e.contains(message), "{from} → {to}: {e}");
        // line:column: prefix.
        let (line, rest) = e.split_once(':').unwrap();
        assert!(line.parse::<usize>().unwrap() >= 1, "{e}");
        assert!(
            rest.split_once(':').unwrap().0.parse::<usize>().is_ok(),
            "{e}"
        );
    }
    // The reported position is where the problem is.
    let bad = example.replacen("4.1 = 659399", "4.1 = x", 1);
    let line = bad.lines().position(|l| l.contains("4.1 = x")).unwrap() + 1;
    assert!(
        text_error(&bad).starts_with(&format!("{line}:11: ")),
        "{}",
        text_error(&bad)
    );
    // A call target that no header declares.
    let bad = example.replacen(
        "    13 = 31\n  }\n",
        "    13 = 31\n  },\n  callsites = {\n    5 -> {99 = 1}\n  }\n",
        1,
    );
    assert!(
        text_error(&bad).contains("symbol ID 99 is referenced but not declared"),
        "{}",
        text_error(&bad)
    );
    assert!(text_error("filenames = {}\n").contains("expected 'summary'"));
    assert!(text_error("filenames = {} summary = { total_count = 1 }").contains("expected ','"));
    let unterminated = format!("{example}\n\"oops");
    assert!(text_error(&unterminated).contains("unterminated quoted string"));
    let unbalanced = format!("{example}\nfuture = {{ {{ }}");
    assert!(text_error(&unbalanced).contains("unbalanced"));
}

#[test]
fn malformed_binary_errors() {
    let doc = v4::from_profile(&rich_profile()).unwrap();
    for e in [Encoding::Binary, Encoding::Compact] {
        let bin = encode(&doc, e);
        // Every truncation fails cleanly (no panic), with an offset.
        for len in 0..bin.len() {
            let err = v4::read_binary(&bin[..len]).unwrap_err().to_string();
            assert!(!err.is_empty());
        }
        // Every single-byte corruption either reads or fails cleanly.
        for i in 8..bin.len() {
            for x in [0x00, 0x7F, 0x80, 0xFF] {
                let mut b = bin.clone();
                b[i] ^= x;
                let _ = v4::read_binary(&b);
            }
        }
    }
    let bin = encode(&doc, Encoding::Binary);
    let msg = |b: &[u8]| v4::read_binary(b).unwrap_err().to_string();
    let mut b = bin.clone();
    b[7] = 5;
    assert_eq!(msg(&b), "byte offset 4: unsupported version 5");
    // A section past the end of the file.
    let mut b = bin.clone();
    b[16..24].copy_from_slice(&u64::MAX.to_be_bytes());
    assert!(
        msg(&b).contains("section 0 (offset 18446744073709551615"),
        "{}",
        msg(&b)
    );
    // The summary slot pointing at the file names section.
    let mut b = bin.clone();
    let fnames = b[32..40].to_vec();
    b[16..24].copy_from_slice(&fnames);
    assert!(
        msg(&b).contains("section 0 should be GCOV_SUMMARY_INFO (type 2), found type 3"),
        "{}",
        msg(&b)
    );
    // A section with trailing bytes.
    let mut b = bin.clone();
    let size = u64::from_be_bytes(b[24..32].try_into().unwrap());
    b[24..32].copy_from_slice(&(size + 1).to_be_bytes());
    assert!(
        msg(&b).contains("1 bytes left at the end of a GCOV_SUMMARY_INFO section"),
        "{}",
        msg(&b)
    );
    // A compact varint too large for its field: NUM_SECTIONS of 2^56.
    let mut c = encode(&doc, Encoding::Compact);
    c.splice(
        9..10,
        [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01],
    );
    assert!(
        msg(&c).contains("GCOV_NUM_SECTIONS 72057594037927936 does not fit its 7-byte field"),
        "{}",
        msg(&c)
    );
    // The empty-name file entry is required: drop it (it is the last entry, 21 bytes).
    let named_only: Document = {
        let mut d = doc.clone();
        for s in d.symbols.values_mut() {
            s.file.get_or_insert(0);
        }
        d
    };
    let mut b = encode(&named_only, Encoding::Binary);
    assert!(v4::read_binary(&b).is_ok());
    let (off, size) = section_span(&b, 1);
    assert_eq!(&b[off + size - 21..off + size - 16], &[0, 0, 0, 1, 0]);
    b[off + 4] -= 1;
    b[40..48].copy_from_slice(&(size as u64 - 21).to_be_bytes());
    assert!(
        msg(&b).contains("GCOV_FILE_NAMES lacks the entry with an empty name"),
        "{}",
        msg(&b)
    );
}

#[test]
fn conversions_refuse_what_v4_cannot_hold() {
    let cs = text::read(b"[main:1 @ foo]:10:0\n 1: 10\n").unwrap();
    assert!(matches!(
        v4::from_profile(&cs),
        Err(sp::Error::UnsupportedForWriting(_))
    ));
    let quoted = text::read(b"a\"b:10:0\n 1: 10\n").unwrap();
    let doc = v4::from_profile(&quoted).unwrap();
    assert!(encode(&doc, Encoding::Binary).len() > 8);
    let mut out = Vec::new();
    assert!(matches!(
        v4::write_text(&doc, &mut out),
        Err(sp::Error::UnsupportedForWriting(_))
    ));
}

/// The fuzz target's invariants (`fuzz/fuzz_targets/sampleprof_gcov_v4.rs`) on deterministic
/// mutations of valid inputs in the three encodings: no panic, and whatever reads writes and
/// reads back to the same document.
#[test]
fn mutated_inputs_keep_the_fuzz_invariants() {
    let doc = v4::from_profile(&rich_profile()).unwrap();
    let mut state = 0x1234_5678_9abc_def0u64;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut read_ok = 0;
    for e in [Encoding::Binary, Encoding::Compact, Encoding::Text] {
        let base = encode(&doc, e);
        for _ in 0..1500 {
            let mut m = base.clone();
            for _ in 0..1 + next(3) {
                let i = next(m.len());
                match next(3) {
                    0 => m[i] = next(256) as u8,
                    1 => {
                        m.remove(i);
                    }
                    _ => m.insert(i, b"{}\",-0123456789 "[next(16)]),
                }
            }
            let Ok(read) = v4::read_document(&m) else {
                continue;
            };
            read_ok += 1;
            for e in [Encoding::Binary, Encoding::Compact] {
                let bytes = encode(&read, e);
                assert_eq!(v4::read_binary(&bytes).unwrap(), read);
            }
            let mut txt = Vec::new();
            if v4::write_text(&read, &mut txt).is_ok() {
                let mut known = read.clone();
                known.unknown_sections.clear();
                let back = v4::read_text(&txt).unwrap();
                if known.symbols.values().all(|s| match &s.info {
                    Some(i) => no_unknown(&i.body),
                    None => true,
                }) {
                    assert_eq!(back, known);
                }
            }
            let _ = v4::to_profile(&read);
        }
    }
    assert!(read_ok > 100, "only {read_ok} mutants read");
}

fn no_unknown(body: &v4::Body) -> bool {
    body.unknown.is_empty() && body.inlined.iter().all(|i| no_unknown(&i.body))
}
