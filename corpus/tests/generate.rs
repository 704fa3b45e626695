//! End-to-end checks of the synthetic LBR capture generator: the files are
//! read back by an independent minimal reader here, by perf 6.1
//! (`perf script`), and by `perf2bolt` when installed.
//!
//! perf and perf2bolt are required: without them these tests fail, unless
//! PROFMILL_SKIP_EXTERNAL=1 is set, in which case the external checks are
//! skipped with a note (the policy of `testsupport::have_tool`).

use std::io::Cursor;
use std::path::PathBuf;
use std::process::Command;

use corpus::{
    perf_script_brstack, prepare_capture, write_lbr_capture, BranchEntry, LbrBinary,
    LbrCaptureSpec, PreparedCapture, KERNEL_TEXT_START,
};
use testsupport::{have_tool, PERF, PERF2BOLT_19, PERF2BOLT_22};

const PIE: &str = "autofdo-propeller_sample_1.bin";
const NON_PIE: &str = "autofdo-test.binary";
const DSO: &str = "autofdo-libro_sample.so";

fn corpus_file(name: &str) -> PathBuf {
    testsupport::shared_perf(name)
}

fn spec(binaries: &[&str], compress: bool) -> LbrCaptureSpec {
    LbrCaptureSpec {
        binaries: binaries
            .iter()
            .map(|b| LbrBinary {
                path: corpus_file(b),
                load_base: None,
            })
            .collect(),
        processes: 3,
        target_bytes: 1_500_000,
        lbr_depth: 32,
        distinct_stacks: 400,
        kernel_fraction_percent: 10,
        compress,
        attr_size: corpus::ATTR_SIZE,
        seed: 42,
        mem_loads: None,
    }
}

fn generate(spec: &LbrCaptureSpec) -> (Vec<u8>, corpus::CaptureStats) {
    let mut out = Cursor::new(Vec::new());
    let stats = write_lbr_capture(spec, &mut out).expect("generate capture");
    (out.into_inner(), stats)
}

// ---------------------------------------------------------------------------
// A deliberately tiny, independent perf.data reader for self-checks.

struct Parsed {
    data: Vec<u8>,
    records: Vec<(u32, Vec<u8>)>,
    features: Vec<u32>,
    compressed_records: usize,
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes(b[o..o + 2].try_into().unwrap())
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

/// Parses the header and the record stream, decompressing COMPRESSED
/// records the way perf 6.1 does (one stream; each record must yield data).
fn parse(file: &[u8]) -> Parsed {
    assert_eq!(&file[..8], b"PERFILE2");
    assert_eq!(u64_at(file, 8), 104);
    assert_eq!(u64_at(file, 16), 144, "attr_size = attr.size + 16");
    assert_eq!(
        u32_at(file, u64_at(file, 24) as usize + 4),
        128,
        "attr.size"
    );
    let (data_off, data_size) = (u64_at(file, 40) as usize, u64_at(file, 48) as usize);
    let features = (0..256)
        .filter(|&b| u64_at(file, 72 + 8 * (b / 64) as usize) >> (b % 64) & 1 == 1)
        .collect();
    let data = &file[data_off..data_off + data_size];
    let mut records = Vec::new();
    let mut decoder = zstd::stream::raw::Decoder::new().unwrap();
    let mut decompressed = Vec::new();
    let mut compressed_records = 0;
    let mut pos = 0;
    while pos < data.len() {
        let (kind, size) = (u32_at(data, pos), u16_at(data, pos + 6) as usize);
        assert!(size >= 8, "record size {size} at {pos}");
        let body = &data[pos..pos + size];
        if kind == 81 {
            compressed_records += 1;
            let before = decompressed.len();
            inflate(&mut decoder, &body[8..], &mut decompressed);
            assert!(
                decompressed.len() > before,
                "a COMPRESSED record decoded to nothing"
            );
            assert!(
                decompressed.len() - before <= 128 * 1024,
                "exceeds advertised mmap_len"
            );
        } else {
            records.push((kind, body.to_vec()));
        }
        pos += size;
    }
    assert_eq!(pos, data.len(), "records must end exactly at data.size");
    let mut pos = 0;
    while pos < decompressed.len() {
        let size = u16_at(&decompressed, pos + 6) as usize;
        records.push((
            u32_at(&decompressed, pos),
            decompressed[pos..pos + size].to_vec(),
        ));
        pos += size;
    }
    Parsed {
        data: data.to_vec(),
        records,
        features,
        compressed_records,
    }
}

fn inflate(decoder: &mut zstd::stream::raw::Decoder<'_>, mut input: &[u8], out: &mut Vec<u8>) {
    use zstd::stream::raw::Operation;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let status = decoder
            .run_on_buffers(input, &mut buf)
            .expect("zstd stream");
        out.extend_from_slice(&buf[..status.bytes_written]);
        input = &input[status.bytes_read..];
        if input.is_empty() && status.bytes_written < buf.len() {
            return;
        }
    }
}

/// The branch stack of a SAMPLE record (sample_type IP|TID|TIME|PERIOD|BRANCH_STACK).
fn sample_stack(record: &[u8]) -> (u32, u64, Vec<BranchEntry>) {
    let nr = u64_at(record, 40) as usize;
    assert_eq!(record.len(), 48 + 24 * nr);
    let entries = (0..nr)
        .map(|i| BranchEntry {
            from: u64_at(record, 48 + 24 * i),
            to: u64_at(record, 56 + 24 * i),
            flags: u64_at(record, 64 + 24 * i),
        })
        .collect();
    (u32_at(record, 16), u64_at(record, 8), entries)
}

/// Checks every record against what the generator says it emitted.
fn check_contents(
    prepared: &PreparedCapture,
    spec: &LbrCaptureSpec,
    parsed: &Parsed,
    samples: u64,
) {
    let mut schedule = prepared.schedule();
    let mut seen_samples = 0;
    let mut last_time = 0;
    for (kind, rec) in &parsed.records {
        match kind {
            9 => {
                let draw = schedule.next().unwrap();
                let (pid, ip, entries) = sample_stack(rec);
                assert_eq!(pid, draw.pid);
                assert_eq!(entries, prepared.stacks()[draw.stack]);
                assert_eq!(ip, entries[0].to);
                assert!(u64_at(rec, 24) > last_time, "timestamps increase");
                last_time = u64_at(rec, 24);
                seen_samples += 1;
            }
            3 | 10 => assert_eq!(seen_samples, 0, "side-band records come first"),
            68 => {}
            other => panic!("unexpected record type {other}"),
        }
    }
    assert_eq!(seen_samples, samples);
    let sideband = parsed
        .records
        .iter()
        .filter(|(k, _)| *k == 3 || *k == 10)
        .count();
    assert_eq!(sideband % spec.processes as usize, 0);
}

// ---------------------------------------------------------------------------

#[test]
fn same_spec_gives_identical_bytes() {
    let s = spec(&[PIE, DSO], true);
    assert_eq!(generate(&s).0, generate(&s).0);
    let s = spec(&[NON_PIE], false);
    let (a, stats) = generate(&s);
    assert_eq!(a, generate(&s).0);
    assert_eq!(stats.bytes, a.len() as u64);
    let other = LbrCaptureSpec { seed: 43, ..s };
    assert_ne!(a, generate(&other).0, "the seed must matter");
}

#[test]
fn file_structure_matches_the_generator_uncompressed_and_compressed() {
    for compress in [false, true] {
        for bins in [&[PIE][..], &[NON_PIE], &[PIE, DSO]] {
            let s = spec(bins, compress);
            let prepared = prepare_capture(&s).unwrap();
            let (file, stats) = generate(&s);
            let parsed = parse(&file);
            assert!(parsed.data.len() as u64 >= s.target_bytes);
            assert_eq!(parsed.compressed_records > 0, compress);
            let mut expected_features = vec![2, 15];
            if compress {
                expected_features.push(27);
            }
            assert_eq!(parsed.features, expected_features);
            check_contents(&prepared, &s, &parsed, stats.samples);
            assert_eq!(stats.branch_entries, stats.samples * 32);
        }
    }
}

/// Between two consecutive entries the code from `older.to` to `newer.from`
/// is straight-line code, so it can never run backwards; kernel entries
/// appear in exactly the kernel part of the pool.
#[test]
fn stacks_describe_plausible_control_flow() {
    for depth in [32, 16, 8] {
        let s = LbrCaptureSpec {
            lbr_depth: depth,
            distinct_stacks: 300,
            kernel_fraction_percent: 20,
            ..spec(&[PIE, DSO], false)
        };
        let prepared = prepare_capture(&s).unwrap();
        let kernel = prepared.kernel_stacks();
        assert_eq!(kernel.len(), 60);
        for (i, stack) in prepared.stacks().iter().enumerate() {
            assert_eq!(stack.len(), depth as usize);
            let is_kernel =
                |e: &BranchEntry| e.from >= KERNEL_TEXT_START || e.to >= KERNEL_TEXT_START;
            let kernel_entries = stack.iter().filter(|e| is_kernel(e)).count();
            assert_eq!(kernel_entries > 0, kernel.contains(&i), "stack {i}");
            assert!(kernel_entries <= 2);
            for pair in stack.windows(2) {
                let (newer, older) = (pair[0], pair[1]);
                if is_kernel(&newer) || is_kernel(&older) {
                    continue;
                }
                let run = newer.from.checked_sub(older.to);
                assert!(
                    run.is_some_and(|r| r < 64 * 1024),
                    "stack {i}: {older:x?} then {newer:x?}"
                );
            }
        }
        let mispredicted = prepared
            .stacks()
            .iter()
            .flatten()
            .filter(|e| e.mispredicted())
            .count();
        let total = prepared.stacks().len() * depth as usize;
        assert!(
            (total / 50..total / 6).contains(&mispredicted),
            "{mispredicted} of {total}"
        );
    }
}

#[test]
fn pie_is_relocated_and_non_pie_is_not() {
    let pie = prepare_capture(&spec(&[PIE, DSO], false)).unwrap();
    assert_eq!(pie.load_biases(), vec![0x5555_5555_0000, 0x5555_6555_0000]);
    let fixed = LbrCaptureSpec {
        binaries: vec![LbrBinary {
            path: corpus_file(NON_PIE),
            load_base: Some(0x7000_0000_0000),
        }],
        ..spec(&[], false)
    };
    let non_pie = prepare_capture(&fixed).unwrap();
    assert_eq!(non_pie.load_biases(), vec![0]);
    assert!(non_pie
        .stacks()
        .iter()
        .flatten()
        .any(|e| (0x40_0000..0x41_0000).contains(&e.to)));
}

#[test]
fn invalid_specs_are_rejected() {
    let bad = [
        LbrCaptureSpec {
            lbr_depth: 0,
            ..spec(&[PIE], false)
        },
        LbrCaptureSpec {
            processes: 0,
            ..spec(&[PIE], false)
        },
        LbrCaptureSpec {
            kernel_fraction_percent: 101,
            ..spec(&[PIE], false)
        },
        spec(&[], false),
        LbrCaptureSpec {
            binaries: vec![LbrBinary {
                path: corpus_file(PIE),
                load_base: Some(0x1234),
            }],
            ..spec(&[], false)
        },
    ];
    for s in bad {
        let err = prepare_capture(&s).err().expect("must be rejected");
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{s:?}");
    }
    let missing = spec(&["no-such-binary"], false);
    assert!(prepare_capture(&missing).is_err());
}

#[test]
fn build_id_helper_reads_gnu_notes() {
    let pie = std::fs::read(corpus_file(PIE)).unwrap();
    assert_eq!(
        corpus::build_id_of(&pie),
        Some(vec![0x57, 0x2a, 0xc7, 0x24, 0x87, 0xae, 0x19, 0x66])
    );
    let non_pie = std::fs::read(corpus_file(NON_PIE)).unwrap();
    assert_eq!(corpus::build_id_of(&non_pie), None);
}

// ---------------------------------------------------------------------------
// External oracles.

/// `perf script -F pid,ip,brstack` must print one line per sample, each
/// matching the pool stack the schedule chose, in perf's brstack text format.
#[test]
fn perf_script_reads_the_captures() {
    if !have_tool(PERF) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (bins, compress) in [
        (&[PIE][..], false),
        (&[PIE], true),
        (&[NON_PIE], false),
        (&[NON_PIE], true),
        (&[PIE, DSO], true),
    ] {
        let s = spec(bins, compress);
        let prepared = prepare_capture(&s).unwrap();
        let path = dir
            .path()
            .join(format!("{}-{compress}.perf.data", bins.len()));
        let mut file = std::fs::File::create(&path).unwrap();
        let stats = prepared.write(&mut file).unwrap();
        drop(file);

        let out = Command::new(PERF)
            .args(["script", "-F", "pid,ip,brstack", "-i"])
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "perf script failed for {bins:?} compress={compress}: {stderr}"
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(
            lines.len() as u64,
            stats.samples,
            "{bins:?} compress={compress}: {stderr}"
        );
        for (line, draw) in lines.iter().zip(prepared.schedule()) {
            let stack = &prepared.stacks()[draw.stack];
            let expected = format!(
                "{:>5}  {:>16x}{}",
                draw.pid,
                stack[0].to,
                perf_script_brstack(stack)
            );
            assert_eq!(*line, expected, "{bins:?} compress={compress}");
        }

        let mmaps = Command::new(PERF)
            .args(["script", "--show-mmap-events", "-i"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(mmaps.status.success());
        let text = String::from_utf8_lossy(&mmaps.stdout);
        let mmap_lines = text
            .lines()
            .filter(|l| l.contains("PERF_RECORD_MMAP2"))
            .count();
        assert_eq!(
            mmap_lines,
            bins.len() * s.processes as usize,
            "{text:.2000}"
        );
        assert!(text.contains(corpus_file(bins[0]).file_name().unwrap().to_str().unwrap()));
    }
}

/// perf2bolt (LLVM 22, and LLVM 19 where it can cope) aggregates the captures
/// into a non-empty fdata with no trace contradicting the disassembly.
#[test]
fn perf2bolt_aggregates_the_captures() {
    if !have_tool(PERF2BOLT_22) || !have_tool(PERF) {
        return;
    }
    let bolt22 = PathBuf::from(PERF2BOLT_22);
    let mut runs = vec![
        (bolt22.clone(), PIE, false),
        (bolt22.clone(), PIE, true),
        (bolt22, NON_PIE, false),
    ];
    // LLVM 19 derives a wrong base address for this PIE (its first PT_LOAD is
    // not executable) and finds nothing in range, just as with the real
    // capture of the same binary; it handles the non-PIE binary.
    if have_tool(PERF2BOLT_19) {
        runs.push((PathBuf::from(PERF2BOLT_19), NON_PIE, false));
    }
    let dir = tempfile::tempdir().unwrap();
    for (i, (bolt, bin, compress)) in runs.into_iter().enumerate() {
        let s = spec(&[bin], compress);
        let data = dir.path().join(format!("{i}.perf.data"));
        let fdata = dir.path().join(format!("{i}.fdata"));
        write_lbr_capture(&s, &mut std::fs::File::create(&data).unwrap()).unwrap();
        let out = Command::new(&bolt)
            .arg(corpus_file(bin))
            .arg("-p")
            .arg(&data)
            .arg("-o")
            .arg(&fdata)
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{} on {bin}: {log}", bolt.display());
        let written = std::fs::read_to_string(&fdata).unwrap_or_default();
        assert!(
            !written.trim().is_empty(),
            "{} wrote an empty fdata for {bin}: {log}",
            bolt.display()
        );
        assert!(
            log.contains("traces mismatching disassembled function contents: 0 "),
            "{log}"
        );
    }
}

/// `write_ip_samples`: the same bytes for the same spec, and perf reads every sample, each
/// with no branch stack and an IP that is a branch end of the pool's stacks.
#[test]
fn ip_captures_have_one_pool_address_per_sample() {
    let s = spec(&[NON_PIE], false);
    let prepared = prepare_capture(&s).unwrap();
    let write = || {
        let mut out = Cursor::new(Vec::new());
        let stats = prepared.write_ip_samples(&mut out).unwrap();
        (out.into_inner(), stats)
    };
    let (bytes, stats) = write();
    assert_eq!(write().0, bytes);
    assert!(
        stats.samples > 1000 && stats.branch_entries == 0,
        "{stats:?}"
    );
    if !have_tool(PERF) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ip.perf.data");
    std::fs::write(&path, &bytes).unwrap();
    let out = Command::new(PERF)
        .args(["script", "-F", "ip", "-i"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ends: std::collections::HashSet<u64> = prepared
        .stacks()
        .iter()
        .flatten()
        .flat_map(|e| [e.from, e.to])
        .collect();
    let ips: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| u64::from_str_radix(l.trim(), 16).unwrap())
        .collect();
    assert_eq!(ips.len() as u64, stats.samples);
    assert!(ips.iter().all(|ip| ends.contains(ip)));
}
