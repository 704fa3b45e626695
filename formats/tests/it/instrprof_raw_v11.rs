//! Raw version 11 (LLVM 23). No released llvm-profdata reads it, so the references are: the
//! same profile in version 10 (read by us, and checked against llvm-profdata-19 elsewhere) must
//! give the same records in every pointer size and byte order; the corpus converter's output
//! must equal what this file builds field by field; and the malformed files of LLVM main's
//! `malformed-uniform-counter-array.test` (rebuilt here from their field values) must be
//! rejected with LLVM's messages.

use corpus::raw_v11::{raw_v10_to_v11, raw_v10_to_v11_with_uniform};
use formats::instrprof::error::ErrorKind;
use formats::instrprof::raw::{RawOptions, RawReader};
use formats::instrprof::Record;
use proptest::prelude::*;

const MAGIC_64: u64 = 0xff6c_7072_6f66_7281;
const MAGIC_32: u64 = 0xff6c_7072_6f66_5281;

struct Out {
    bytes: Vec<u8>,
    big: bool,
}

impl Out {
    fn put(&mut self, v: u64, len: usize) {
        let le = v.to_le_bytes();
        if self.big {
            self.bytes.extend(le[..len].iter().rev());
        } else {
            self.bytes.extend_from_slice(&le[..len]);
        }
    }
    fn pad8(&mut self) {
        self.bytes.resize(self.bytes.len().next_multiple_of(8), 0);
    }
}

/// (name, hash, counters) of the test profile.
const FUNCS: [(&str, u64, &[u64]); 3] = [("f", 1, &[1, 2, 3]), ("g", 2, &[4]), ("h", 3, &[0, 9])];

fn md5_low(name: &str) -> u64 {
    use md5::{Digest, Md5};
    u64::from_le_bytes(Md5::digest(name.as_bytes())[..8].try_into().unwrap())
}

/// The profile of [`FUNCS`] in raw `version` 10 or 11, built field by field with in-memory
/// distances equal to file distances; `uniform` adds `NumCounters` uniform counters per record
/// (v11 only).
fn build(version: u64, ptr64: bool, big: bool, uniform: bool) -> Vec<u8> {
    let mut o = Out {
        bytes: Vec::new(),
        big,
    };
    let p = if ptr64 { 8 } else { 4 };
    let record_size: u64 = match (version, ptr64) {
        (10, true) => 64,
        (10, false) => 48,
        (_, true) => 72,
        (_, false) => 56,
    };
    let n = FUNCS.len() as u64;
    let num_counters: u64 = FUNCS.iter().map(|f| f.2.len() as u64).sum();
    let names = b"\x05\x00f\x01g\x01h";
    let counters_delta = n * record_size;
    let uniform_delta = counters_delta + 8 * num_counters;
    let num_uniform = if uniform { num_counters } else { 0 };
    o.put(if ptr64 { MAGIC_64 } else { MAGIC_32 }, 8);
    let mut header = vec![version, 0, n, 0, num_counters, 0, 0, 0];
    if version >= 11 {
        let delta = if uniform { uniform_delta } else { 0 };
        header.extend([num_uniform, 0, delta]);
    }
    header.extend([
        names.len() as u64,
        counters_delta,
        uniform_delta,
        0,
        0,
        0,
        2,
    ]);
    for v in header {
        o.put(v, 8);
    }
    let mut counter_at = 0;
    for (i, (name, hash, counts)) in FUNCS.iter().enumerate() {
        let here = i as u64 * record_size;
        o.put(md5_low(name), 8);
        o.put(*hash, 8);
        o.put(counters_delta + counter_at - here, p);
        if version >= 11 {
            o.put(
                if uniform {
                    uniform_delta + counter_at - here
                } else {
                    0
                },
                p,
            );
        }
        o.put(uniform_delta - here, p); // BitmapPtr: no bitmap bytes.
        o.put(0, p);
        o.put(0, p);
        o.put(counts.len() as u64, 4);
        for _ in 0..3 {
            o.put(0, 2);
        }
        if version >= 11 {
            o.put(0, 2);
        }
        o.bytes.resize(o.bytes.len().next_multiple_of(4), 0);
        o.put(0, 4);
        o.pad8();
        counter_at += 8 * counts.len() as u64;
    }
    for (_, _, counts) in FUNCS {
        for &c in counts {
            o.put(c, 8);
        }
    }
    if uniform {
        for (i, (_, _, counts)) in FUNCS.iter().enumerate() {
            for c in 0..counts.len() {
                o.put(uniform_value(i, c), 8);
            }
        }
    }
    o.bytes.extend_from_slice(names);
    o.pad8();
    o.bytes
}

fn uniform_value(record: usize, counter: usize) -> u64 {
    100 * record as u64 + counter as u64
}

fn read(data: &[u8]) -> Result<Vec<(Vec<u8>, Record)>, formats::instrprof::error::Error> {
    let mut reader = RawReader::new(data, RawOptions { only_version: None })?;
    let mut records = Vec::new();
    reader.read_records(&mut |name, r| records.push((name.to_vec(), r)))?;
    Ok(records)
}

const FORMS: [(bool, bool); 4] = [(true, false), (true, true), (false, false), (false, true)];

#[test]
fn v11_reads_as_the_same_profile_in_v10_in_every_form() {
    for (ptr64, big) in FORMS {
        let v10 = build(10, ptr64, big, false);
        let v11 = build(11, ptr64, big, false);
        let expected = read(&v10).unwrap();
        assert_eq!(expected.len(), 3);
        assert_eq!(expected[0].1.counts, vec![1, 2, 3]);
        assert_eq!(expected[2].0, b"h");
        assert_eq!(read(&v11).unwrap(), expected, "ptr64={ptr64} big={big}");
        let reader = RawReader::new(&v11, RawOptions::default()).unwrap();
        assert_eq!(reader.header().version(), 11);
        assert_eq!(reader.header().size, 152);
    }
}

#[test]
fn the_converter_writes_what_the_field_by_field_builder_writes() {
    for (ptr64, big) in FORMS {
        let v10 = build(10, ptr64, big, false);
        assert_eq!(
            raw_v10_to_v11(&v10).unwrap(),
            build(11, ptr64, big, false),
            "ptr64={ptr64} big={big}"
        );
        assert_eq!(
            raw_v10_to_v11_with_uniform(&v10, &uniform_value).unwrap(),
            build(11, ptr64, big, true),
            "ptr64={ptr64} big={big}, with uniform counters"
        );
    }
}

#[test]
fn the_llvm19_drop_in_reader_accepts_v11_but_not_v9() {
    let only_10 = RawOptions {
        only_version: Some(10),
    };
    assert!(RawReader::new(&build(11, true, false, false), only_10).is_ok());
    let mut v9 = build(10, true, false, false);
    v9[8] = 9;
    let err = RawReader::new(&v9, only_10).err().unwrap();
    assert!(matches!(
        err.kind,
        ErrorKind::RawVersionMismatch {
            found: 9,
            expected: 10
        }
    ));
}

#[test]
fn uniform_counters_are_refused_after_their_pointers_are_checked() {
    for (ptr64, big) in FORMS {
        let err = read(&build(11, ptr64, big, true)).unwrap_err();
        match &err.kind {
            ErrorKind::UnsupportedFeature(why) => {
                assert!(why.contains("uniform counters (6 in this profile"), "{why}")
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        // The first record, right after the 152-byte header.
        assert!(err.to_string().ends_with("(at byte offset 152)"), "{err}");
    }
}

/// LLVM main's `malformed-uniform-counter-array.test`: one record (NameRef of "bar", hash 2,
/// 2 counters 55 and 65, 2 uniform counters 5 and 6), uniform counters 88 bytes after the data
/// record, the record's `UniformCounterPtr` being the only difference between the three files.
fn upstream_case(uniform_counter_ptr: u64) -> Vec<u8> {
    case_with_pointers(0x48, uniform_counter_ptr)
}

/// [`upstream_case`] with the record's `CounterPtr` too.
fn case_with_pointers(counter_ptr: u64, uniform_counter_ptr: u64) -> Vec<u8> {
    let mut o = Out {
        bytes: Vec::new(),
        big: false,
    };
    let header = [
        MAGIC_64, 11, 0, 1, 0, 2, 0, 0, 0, 2, 0, 0x58, 8, 0x48, 0x58, 0x68, 0, 0, 2,
    ];
    for v in header {
        o.put(v, 8);
    }
    let record = [
        md5_low("bar"),
        2,
        counter_ptr,
        uniform_counter_ptr,
        0x58,
        0,
        0,
        2, // NumCounters, NumValueSites[0..2]
        0, // NumValueSites[2], OffloadDeviceWaveSize, NumBitmapBytes
        55,
        65,
        5,
        6,
    ];
    for v in record {
        o.put(v, 8);
    }
    o.bytes.extend_from_slice(b"\x03\x00bar\x00\x00\x00");
    o.bytes
}

#[test]
fn the_upstream_malformed_uniform_counter_files_are_rejected_as_llvm_does() {
    assert_eq!(md5_low("bar"), 0xe413_754a_191d_b537, "the test's NameRef");
    let cases = [
        (0x57, "uniform counter offset -1 is negative"),
        (
            0x68,
            "uniform counter offset 16 is greater than the maximum uniform counter offset 15",
        ),
        (
            0x60,
            "number of uniform counters 2 is greater than the maximum number of uniform counters 1",
        ),
    ];
    for (ptr, message) in cases {
        let err = read(&upstream_case(ptr)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Malformed(message.into()));
        assert_eq!(
            err.to_string(),
            format!("malformed instrumentation profile data: {message} (at byte offset 152)")
        );
    }
    // The same checks of the counters, with their own words (LLVM's `readRawCounts`).
    let cases = [
        (0x47, "counter offset -1 is negative"),
        (
            0x58,
            "counter offset 16 is greater than the maximum counter offset 15",
        ),
        (
            0x50,
            "number of counters 2 is greater than the maximum number of counters 1",
        ),
    ];
    for (ptr, message) in cases {
        let err = read(&case_with_pointers(ptr, 0x58)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Malformed(message.into()), "{err}");
    }
    // The well-formed variant gets past the checks, to the refusal.
    let err = read(&upstream_case(0x58)).unwrap_err();
    assert!(
        matches!(err.kind, ErrorKind::UnsupportedFeature(_)),
        "{err}"
    );
}

fn read_never_panics(data: &[u8]) {
    if let Ok(mut r) = RawReader::new(data, RawOptions { only_version: None }) {
        let _ = r.read_records(&mut |_, _| {});
    }
}

fn samples() -> Vec<Vec<u8>> {
    let mut all = vec![upstream_case(0x58), upstream_case(0x57)];
    for (ptr64, big) in FORMS {
        all.push(build(11, ptr64, big, false));
        all.push(build(11, ptr64, big, true));
    }
    all
}

#[test]
fn every_truncation_of_the_samples_is_an_error_not_a_panic() {
    for sample in samples() {
        for len in 0..sample.len() {
            read_never_panics(&sample[..len]);
        }
    }
    let whole = build(11, true, false, false);
    assert!(read(&whole[..whole.len() - 1]).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn damaged_v11_profiles_never_panic(
        which in 0usize..10,
        flips in prop::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        cut in any::<usize>(),
    ) {
        let mut data = samples().swap_remove(which);
        for (at, byte) in flips {
            let i = at % data.len();
            data[i] = byte;
        }
        data.truncate(data.len() - cut % data.len());
        read_never_panics(&data);
    }
}
