//! Criterion benchmarks of the aggregation hot loop: decoding LBR samples into trace tables.
//! The input is a synthetic capture of this benchmark executable's own code (real control
//! flow), generated once per run.

use std::path::Path;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use engine::perf::aggregate::{aggregate, KernelEntries, Request};
use engine::perf::binary::BinaryInfo;
use engine::perf::capture::Input;
use engine::perf::mapping::Rules;
use engine::perf::table::{Counts, Trace, TraceTable};
use formats::store::{
    BinaryMeta, BlockCursor, Row, Section, Store, StoreMeta, StoreWriter, TraceRow,
};

fn capture(dir: &Path, mib: u64) -> (std::path::PathBuf, std::path::PathBuf) {
    let binary = dir.join("bench-binary");
    std::fs::copy(std::env::current_exe().unwrap(), &binary).unwrap();
    let spec = corpus::LbrCaptureSpec {
        binaries: vec![corpus::LbrBinary {
            path: binary.clone(),
            load_base: None,
        }],
        processes: 2,
        target_bytes: mib << 20,
        lbr_depth: 32,
        distinct_stacks: 20_000,
        kernel_fraction_percent: 5,
        compress: false,
        attr_size: corpus::ATTR_SIZE,
        seed: 3,
        mem_loads: None,
    };
    let path = dir.join("bench.perf.data");
    corpus::write_lbr_capture(&spec, &mut std::fs::File::create(&path).unwrap()).unwrap();
    (path, binary)
}

fn aggregate_capture(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (path, binary) = capture(dir.path(), 64);
    let size = std::fs::metadata(&path).unwrap().len();
    let mut group = c.benchmark_group("aggregate");
    group.throughput(Throughput::Bytes(size));
    group.sample_size(10);
    for threads in [1, 2] {
        let request = Request {
            binaries: vec![BinaryInfo::load(&binary).unwrap()],
            discover: None,

            skylake_fix: false,

            kernel_entries: KernelEntries::Skip,
            basic: false,
            pid: None,
            ignore_build_id: false,
            rules: Rules::Current,
            threads,
            stream: false,
            trace_order: Default::default(),
        };
        let input = Input::File(path.clone());
        group.bench_with_input(
            BenchmarkId::new("lbr32_threads", threads),
            &request,
            |b, req| {
                b.iter(|| {
                    aggregate(&input, req, &engine::io::progress::NoProgress)
                        .unwrap()
                        .profiles
                        .len()
                })
            },
        );
    }
    group.finish();
}

/// The prefetching trace table against a plain hashbrown map on the same key stream.
fn trace_tables(c: &mut Criterion) {
    let mut state = 1u64;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    let keys: Vec<(Trace, bool)> = (0..1 << 20)
        .map(|_| {
            let k = next() % 400_000;
            ([0x1000 + k * 16, 0x2000 + k * 8, 0x3000 + k], k % 11 == 0)
        })
        .collect();
    let mut group = c.benchmark_group("trace_table");
    group.throughput(Throughput::Elements(keys.len() as u64));
    group.bench_function("prefetching_batches_of_32", |b| {
        b.iter(|| {
            let mut t = TraceTable::default();
            for chunk in keys.chunks(32) {
                t.add_batch(chunk);
            }
            t.len()
        })
    });
    group.bench_function("hashbrown", |b| {
        b.iter(|| {
            let mut t: hashbrown::HashMap<Trace, Counts> = hashbrown::HashMap::new();
            for &(k, m) in &keys {
                let c = t.entry(k).or_default();
                c.taken += 1;
                c.mispred += m as u64;
            }
            t.len()
        })
    });
    group.finish();
}

/// Merging two threads' tables whose keys barely overlap (threads that decoded different phases
/// of a program): with one hash for every table this went quadratic (the second table is walked
/// in the first's home-slot order); each table now has its own seed.
fn merge_disjoint_tables(c: &mut Criterion) {
    let half = |odd: u64| {
        let mut t = TraceTable::for_span(0x1000, 0x1000 + (1 << 30));
        let keys: Vec<(Trace, bool)> = (0..540_000u64)
            .map(|i| {
                let k = 2 * i + odd;
                (
                    [0x1000 + k, 0x1000 + (k * 7919) % (1 << 29), 0x2000 + k],
                    false,
                )
            })
            .collect();
        for chunk in keys.chunks(32) {
            t.add_batch(chunk);
        }
        t
    };
    let mut group = c.benchmark_group("trace_table");
    group.sample_size(10);
    group.bench_function("merge_disjoint_540k", |b| {
        b.iter_batched(
            || (half(0), half(1)),
            |(mut a, b)| {
                a.merge(b);
                a.len()
            },
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

/// Trace rows shaped like a partial store's (a generated capture's): sources a few bytes
/// apart, about a third repeating the previous row's; targets up to a few hundred KiB from
/// their source; fall-throughs near their start; small counts. Sorted, distinct keys.
fn store_like_traces(n: usize) -> Vec<TraceRow> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut rows = Vec::with_capacity(n);
    let mut branch = 0x1000u64;
    while rows.len() < n {
        branch += 1 + next() % 48;
        for _ in 0..1 + next() % 3 {
            let reach = 1u64 << (4 + next() % 16);
            let from = (branch + next() % reach).saturating_sub(reach / 2);
            let to = from + next() % 160;
            let count = 1 + next() % 3;
            rows.push(TraceRow {
                branch,
                from,
                to,
                count,
                mispreds: 0,
            });
        }
    }
    rows.sort_by(|a, b| a.key_cmp(b));
    rows.dedup_by(|a, b| a.key_cmp(b).is_eq());
    rows
}

/// Decoding a store's trace blocks, the inner loop of `profmill merge` (each input's rows
/// are decoded straight into the sums): rows per second of `BlockCursor::rows_while`.
fn store_block_decode(c: &mut Criterion) {
    let rows = store_like_traces(1 << 18);
    let mut w = StoreWriter::new(Vec::new()).expect("in memory");
    w.meta(&StoreMeta::default()).expect("in memory");
    let meta = BinaryMeta {
        name: b"bench".to_vec(),
        ..BinaryMeta::default()
    };
    let b = w.binary(&meta).expect("in memory");
    let mut table = w.table::<TraceRow>(b).expect("in memory");
    for r in &rows {
        table.push(r).expect("in memory");
    }
    table.finish().expect("in memory");
    let bytes = w.finish().expect("in memory");
    let store = Store::parse(&bytes).expect("just written");
    let blocks: Vec<(&[u8], Section)> = store.binaries()[0]
        .1
        .blocks(TraceRow::KIND)
        .iter()
        .map(|s| {
            (
                &bytes[s.offset as usize..(s.offset + s.length) as usize],
                *s,
            )
        })
        .collect();
    let mut group = c.benchmark_group("store");
    group.throughput(Throughput::Elements(rows.len() as u64));
    group.bench_function("decode_trace_blocks", |b| {
        b.iter(|| {
            let mut sum = 0u64;
            for (block, section) in &blocks {
                let mut cursor = BlockCursor::<TraceRow>::new(block, section).expect("valid");
                let stop =
                    cursor.rows_while(block, |_| true, |r| sum = sum.wrapping_add(r.to ^ r.count));
                assert!(stop.expect("valid").is_none());
            }
            sum
        })
    });
    group.finish();
}

/// Writing a store's trace table, as the merge writes its output: rows per second of
/// `TableWriter::push` (encoding, order check, blocks and their checksums) into memory.
fn store_table_write(c: &mut Criterion) {
    let rows = store_like_traces(1 << 18);
    let meta = BinaryMeta {
        name: b"bench".to_vec(),
        ..BinaryMeta::default()
    };
    let mut group = c.benchmark_group("store");
    group.throughput(Throughput::Elements(rows.len() as u64));
    group.bench_function("write_trace_table", |b| {
        let mut out = Vec::with_capacity(8 << 20);
        b.iter(|| {
            out.clear();
            let mut w = StoreWriter::new(&mut out).expect("in memory");
            w.meta(&StoreMeta::default()).expect("in memory");
            let binary = w.binary(&meta).expect("in memory");
            let mut table = w.table::<TraceRow>(binary).expect("in memory");
            for r in &rows {
                table.push(r).expect("in memory");
            }
            table.finish().expect("in memory");
            w.finish().expect("in memory");
            out.len()
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    aggregate_capture,
    trace_tables,
    merge_disjoint_tables,
    store_block_decode,
    store_table_write
);
criterion_main!(benches);
