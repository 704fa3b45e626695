//! Merge semantics against llvm-profdata-19: text profiles written here exercise weights,
//! saturation, value-profile merging (with LLVM's unscaled new values), bitmap OR and several
//! hashes under one name; our indexed and text outputs must equal llvm-profdata's bytes.

use std::path::{Path, PathBuf};
use std::process::Command;

use engine::instrprof::{merge, MergeOptions, WeightedInput, MAX_COUNT};
use testsupport::{have_tool, LLVM_PROFDATA_19 as LLVM_PROFDATA};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// llvm-profdata-19's output for `args` (merge subcommand, `-o` added).
fn reference(args: &[String], out: &Path) -> Vec<u8> {
    let status = Command::new(LLVM_PROFDATA)
        .arg("merge")
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    std::fs::read(out).unwrap()
}

fn ours(inputs: &[WeightedInput], threads: usize) -> engine::instrprof::ProfileWriter {
    let options = MergeOptions {
        llvm_threads: threads,
        ..MergeOptions::default()
    };
    let outcome = merge(inputs, &options).unwrap();
    assert!(!outcome.failed, "{:?}", outcome.errors);
    outcome.profile
}

fn weighted(path: &Path, weight: u64) -> WeightedInput {
    WeightedInput {
        path: path.to_path_buf(),
        weight,
    }
}

const A: &str = ":ir
main
0x1234
3
10
0
18446744073709551610
$2
0x1
0x80
2
0
1
2
callee1:5
callee2:7
1
2
1
8:100
0

callee1
11
1
4

callee2
22
1
9

";

const B: &str = ":ir
main
0x1234
3
1
2
18446744073709551610
$2
0x2
0x80
2
0
1
3
callee2:1
callee3:9
callee1:2
1
2
1
8:1
1
16:4

callee1
11
1
1

callee1
12
1
7

callee1
13
2
7
8

callee1
0x1000000000000000
1
5

";

#[test]
fn merge_with_weights_matches_llvm_profdata() {
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.proftext", A);
    let b = write(dir.path(), "b.proftext", B);
    for (wa, wb) in [(1, 1), (3, 1), (1, 3), (2, 5)] {
        for threads in [1, 2] {
            let args = vec![
                format!("--weighted-input={wa},{}", a.display()),
                format!("--weighted-input={wb},{}", b.display()),
                format!("--num-threads={threads}"),
            ];
            let inputs = [weighted(&a, wa), weighted(&b, wb)];
            let profile = ours(&inputs, threads);
            let expected = reference(&args, &dir.path().join("ref.profdata"));
            assert_eq!(
                profile.to_indexed(false, 12),
                expected,
                "weights {wa},{wb} -j{threads}"
            );
            let mut text_args = args.clone();
            text_args.push("--text".into());
            let expected_text = reference(&text_args, &dir.path().join("ref.proftext"));
            let mut text = Vec::new();
            profile.write_text(&mut text, false).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&text),
                String::from_utf8_lossy(&expected_text),
                "text, weights {wa},{wb} -j{threads}"
            );
        }
    }
}

#[test]
fn counts_saturate_at_the_largest_non_pseudo_count() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.proftext", A);
    let profile = ours(&[weighted(&a, 2), weighted(&a, 1)], 1);
    let main = profile.records_of(b"main").unwrap().get(0);
    assert_eq!(main.counts, [30, 0, MAX_COUNT]);
    // The bitmap is ORed, not added.
    assert_eq!(main.bitmap, [0x1, 0x80]);
    // Value counts are scaled on first sight and added with the weight afterwards.
    assert_eq!(
        main.values[0][0],
        [engine_value(b"callee2", 21), engine_value(b"callee1", 15)]
    );
}

#[test]
fn several_hashes_under_one_name_match_llvm_order() {
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from(":ir\n");
    for h in [5u64, 1, 9, 3, 1000, 7, 2, 123456789, 77, 0x1000000000000005] {
        text.push_str(&format!("f\n{h}\n1\n{}\n\n", h % 13));
    }
    let p = write(dir.path(), "many.proftext", &text);
    let expected = reference(&[p.display().to_string()], &dir.path().join("ref.profdata"));
    assert_eq!(ours(&[weighted(&p, 1)], 1).to_indexed(false, 12), expected);
    let prev = reference(
        &[p.display().to_string(), "--write-prev-version".into()],
        &dir.path().join("ref11.profdata"),
    );
    assert_eq!(ours(&[weighted(&p, 1)], 1).to_indexed(false, 11), prev);
}

#[test]
fn sparse_drops_all_zero_names() {
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "z.proftext",
        ":ir\nzero\n1\n2\n0\n0\n\nlive\n2\n1\n3\n\nzerobits\n3\n1\n0\n$1\n0x4\n\n",
    );
    let expected = reference(
        &[p.display().to_string(), "--sparse".into()],
        &dir.path().join("ref.profdata"),
    );
    let profile = ours(&[weighted(&p, 1)], 1);
    assert_eq!(profile.to_indexed(true, 12), expected);
    assert_ne!(profile.to_indexed(false, 12), expected);
}

fn engine_value(name: &[u8], count: u64) -> formats::instrprof::ValueData {
    formats::instrprof::ValueData {
        value: formats::instrprof::md5_guid(name),
        count,
    }
}

#[test]
fn output_does_not_depend_on_our_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.proftext", A);
    let b = write(dir.path(), "b.proftext", B);
    let inputs: Vec<WeightedInput> = (0..9)
        .map(|i| weighted(if i % 3 == 0 { &a } else { &b }, 1 + i % 4))
        .collect();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| ours(&inputs, 3).to_indexed(false, 12))
    };
    let one = run(1);
    assert_eq!(run(2), one);
    assert_eq!(run(5), one);
}

#[test]
fn hashes_equal_to_llvm_dense_map_sentinels() {
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        // 2^64-1 is dropped; a name left without records is still written (LLVM then cannot
        // read its own output back: "profile data is empty").
        ":ir\nf\n18446744073709551615\n1\n5\n\nf\n3\n1\n7\n\ng\n18446744073709551615\n1\n8\n\n",
        // 2^64-2 is stored out of sight, then overwritten by a later key.
        ":ir\nf\n18446744073709551614\n1\n5\n\nf\n3\n1\n7\n\nf\n18446744073709551614\n1\n9\n\nf\n4\n1\n1\n\nf\n5\n1\n1\n\n",
        ":ir\nf\n1\n1\n1\n\nf\n18446744073709551614\n1\n2\n\nf\n2\n1\n1\n\nf\n3\n1\n1\n\nf\n4\n1\n1\n\n",
    ];
    for (i, text) in cases.iter().enumerate() {
        let p = write(dir.path(), &format!("edge{i}.proftext"), text);
        let expected = reference(&[p.display().to_string()], &dir.path().join("ref.profdata"));
        assert_eq!(
            ours(&[weighted(&p, 1)], 1).to_indexed(false, 12),
            expected,
            "case {i}"
        );
    }
}
