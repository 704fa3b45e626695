//! The fast conversion path writes exactly what the general reader and writers write, and
//! hands every input it does not fully understand to them.

use corpus::sampleprof::{sample_profile_text, SampleProfileSpec};
use engine::sampleprof::{fast_convert, write_to, OutputFormat};
use formats::sampleprof::binary::ExtBinaryOptions;

fn outputs() -> Vec<OutputFormat> {
    let ext = |use_md5, compress_all, partial| {
        OutputFormat::ExtBinary(ExtBinaryOptions {
            use_md5,
            compress_all,
            partial,
            split_layout: false,
        })
    };
    vec![
        OutputFormat::Text,
        ext(false, false, false),
        ext(true, false, false),
        ext(false, true, true),
    ]
}

/// The general path's bytes for `data` in `format`, or `None` when it refuses the input.
fn general(data: &[u8], format: OutputFormat) -> Option<Vec<u8>> {
    let profile = formats::sampleprof::read(data).ok()?;
    let mut out = Vec::new();
    write_to(&profile, format, &mut out).ok()?;
    Some(out)
}

/// Compares both paths on `data`; returns how many outputs took the fast path.
fn check(data: &[u8], what: &str) -> usize {
    let mut fast_taken = 0;
    for format in outputs() {
        let Some(pieces) = fast_convert(data, format) else {
            continue;
        };
        fast_taken += 1;
        let expected = general(data, format)
            .unwrap_or_else(|| panic!("{what}: the fast path accepts what the general refuses"));
        assert!(
            pieces.concat() == expected,
            "{what} {format:?}: fast path differs"
        );
    }
    fast_taken
}

#[test]
fn generated_profiles_take_the_fast_path_and_match() {
    for seed in 1..4 {
        let text = sample_profile_text(&SampleProfileSpec::of_size(seed, 300_000));
        assert_eq!(check(&text, "generated text"), 4, "seed {seed}");
        // The same profile as ExtBinary, read back on the fast path too.
        let ext = general(&text, outputs()[1]).unwrap();
        assert_eq!(check(&ext, "generated ExtBinary"), 4, "seed {seed}");
    }
}

#[test]
fn corpus_profiles_match_or_fall_back() {
    let Some(dir) = testsupport::llvm_profdata_corpus() else {
        return;
    };
    let mut taken = 0;
    for release in std::fs::read_dir(&dir).unwrap() {
        for f in std::fs::read_dir(release.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            if !p.is_file() {
                continue;
            }
            let data = std::fs::read(&p).unwrap();
            taken += check(&data, &p.display().to_string());
        }
    }
    assert!(taken > 50, "the fast path ran only {taken} times");
}

#[test]
fn unusual_inputs_fall_back_to_the_general_path() {
    for text in [
        // A function listed twice: LLVM merges the two.
        "f:10:1\n 1: 5\nf:20:2\n 1: 7\n",
        // A line, a call site, a call target listed twice.
        "f:10:1\n 1: 5\n 1: 6\n",
        "f:10:1\n 2: g:5\n  1: 5\n 2: g:6\n  1: 6\n",
        "f:10:1\n 1: 5 g:1 g:2\n",
        // Comments, metadata, contexts, line offsets LLVM treats specially.
        "# c\nf:10:1\n 1: 5\n",
        "f:10:1\n 1: 5\n !CFGChecksum: 12\n",
        "[main:1 @ f]:10:1\n 1: 5\n",
        "f:10:1\n 70000.1: 5\n",
        // Malformed: the general path reports LLVM's error.
        "f:10:1\n 1:5\n",
        "f:10\n",
    ] {
        for format in outputs() {
            assert!(fast_convert(text.as_bytes(), format).is_none(), "{text:?}");
        }
    }
    // A numeric name is a GUID to LLVM under --use-md5.
    let numeric = "f:10:1\n 1: 5 123:5\n";
    assert!(fast_convert(numeric.as_bytes(), outputs()[2]).is_none());
    assert!(fast_convert(numeric.as_bytes(), outputs()[1]).is_some());
}
