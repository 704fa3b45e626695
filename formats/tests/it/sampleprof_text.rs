//! LLVM sample text: our reader + writer against `llvm-profdata-19 merge --sample --text`,
//! byte for byte, on every text input of the corpus and on hand-made edge cases; errors
//! must match LLVM's messages and line numbers.

use std::path::Path;

use crate::sampleprof_common::*;
use formats::sampleprof::{text, Profile};
use testsupport::{first_difference, have_tool, LLVM_PROFDATA_19 as LLVM_PROFDATA};

fn ours(data: &[u8]) -> Result<Vec<u8>, formats::sampleprof::Error> {
    let p = text::read(data)?;
    let mut out = Vec::new();
    text::write(&p, &mut out).unwrap();
    Ok(out)
}

/// Compares our text output (or error) on `input` with llvm-profdata's.
fn check(input: &Path, dir: &Path) -> bool {
    let data = std::fs::read(input).unwrap();
    let reference = llvm_merge(input, &["--text"], &dir.join("ref.txt"));
    match (ours(&data), reference) {
        (Ok(o), Ok(r)) => {
            assert!(o == r, "{}: {}", input.display(), first_difference(&o, &r));
            true
        }
        (Err(e), Err(r)) => {
            let expected = format!("error: {}", e.located(&input.display().to_string()));
            // We echo at most 80 characters of the line, then `…`; LLVM the whole line.
            let expected = expected.strip_suffix('…').unwrap_or(&expected);
            assert!(
                r.contains(expected),
                "{}: llvm says {r:?}, we say {expected:?}",
                input.display()
            );
            false
        }
        (Ok(_), Err(r)) => panic!("{}: we accept, llvm rejects: {r}", input.display()),
        (Err(e), Ok(_)) => panic!("{}: llvm accepts, we reject: {e}", input.display()),
    }
}

#[test]
fn corpus_text_profiles_match_llvm_profdata() {
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut accepted = 0;
    for f in corpus_files() {
        let data = std::fs::read(&f).unwrap();
        // Only inputs that are text to either reader: binary inputs have their own tests.
        let name = f.to_string_lossy();
        let textual = !data.contains(&0) && !name.ends_with(".profraw");
        if !textual
            || matches!(formats::sampleprof::detect(&data), Some(f) if f != formats::sampleprof::Format::Text)
        {
            continue;
        }
        if check(&f, dir.path()) {
            accepted += 1;
        }
    }
    if corpus_dir().is_some() {
        assert!(
            accepted >= 25,
            "only {accepted} corpus text profiles accepted"
        );
    }
}

/// Hand-made inputs for the grammar's corners (each observed against llvm-profdata-19).
const CASES: &[&str] = &[
    "main:1000:10\n 1: 10\n 2.3: 20 bar:15 foo:5\n 65535: 5\n 3: inl:300\n  1: 100\n  2.1: 200 tgt:200\n_Z3foov:500:0\n 0: 250\n 1: 250\n",
    "a:b:10:1\n 1: 5 a:b:c:3 d:4\n",
    "f:1:1\n 1: 5 std::vector<int> >:3 x:3\n",
    "f:1:1\n 1: 5 x:3 x:4\n",
    "f:1:1\n 1: 5 x:3 \n",
    "f:1:1\n 70000: 5\n",
    "f:1:1\n 70000.1: 5\n",
    "f:1:1\n 1.4294967296: 5\n",
    "f:1:1\n 1: 18446744073709551615\n",
    "f:1:1\n 1: 18446744073709551616\n",
    "f:1:1\n 1:5\n",
    "f:1:1\n 1:x5\n",
    "f:1:1\n 5\n",
    "f:1:1\n\tx\n",
    "f:10:1\n  1: 5\n",
    "f:1:1\n !CFGChecksum: 3\n 1: 1\n",
    "f:1:1\n 1: 1\n !Attributes: 2\n !CFGChecksum: 9\n",
    "f:1:1\n 1: g:5\n  !Attributes: 1\n  2: 3\n",
    "f:1:1\n !Foo: 1\n",
    "f:1:1\n !Flat\n",
    "f:1:1\r\n 1: 2\r\n\r\n",
    " # c\nf:1:1\n",
    "# c\nf:1:1\n   \n #x\n 1: 2\n",
    "123\n",
    "f:1:1\nf:2:3\n 1: 4\n",
    "f:1:1\n 1: 18446744073709551615\n 1: 1\n",
    "[main:3 @ _Z5funcAi:1 @ _Z8funcLeafi]:1467299:11\n 0: 6\n 4: 287864 _Z3fibi:315608\n !CFGChecksum: 281479271677951\n !Attributes: 2\n[main]:154:0\n 2: 12\n !CFGChecksum: 563125815542069\n",
    "[a:1.2 @ b]:5:1\n 1: g:3\n  1: 3\n",
    "f:1:1\n 1: \n",
    "f:1:1\n 1:\n",
    ":1:1\n 1: 1\n",
    "f:1:1\n 1: :5\n",
    "f:1:1\n 1: 3 :5\n",
    "f:5:1\ng:5:1\ne:5:0\n",
    "f:1:1\n 2: 1\n 1: 1\n 1: g:1\n 1: a:1\n",
];

#[test]
fn edge_cases_match_llvm_profdata() {
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (i, case) in CASES.iter().enumerate() {
        let path = dir.path().join(format!("case{i}.txt"));
        std::fs::write(&path, case).unwrap();
        check(&path, dir.path());
    }
}

#[test]
fn errors_name_the_line() {
    let e = text::read(b"f:1:1\n 1: 5\n\n# c\n 2 5\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "5: Expected 'NUM[.NUM]: NUM[ mangled_name:NUM]*', found  2 5"
    );
    let e = text::read(b"# c\nfoo:1:1\nbar\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "3: Expected 'mangled_name:NUM:NUM', found bar"
    );
    assert_eq!(
        text::read(b"").unwrap_err(),
        formats::sampleprof::Error::UnrecognizedFormat
    );
}

/// Lines of about 1 MB with hundreds of thousands of `:` parse in linear time: one call target
/// whose name is mostly colons (each colon a candidate count anchor), and 120,000 distinct
/// targets on one line. Quadratic, either would take minutes in this debug build; the test
/// asserts no timing, it would time out the suite instead.
#[test]
fn megabyte_lines_parse_in_linear_time() {
    let colons = format!("f:9:1\n 1: 5 {}7\n", "a:".repeat(500_000));
    let p = text::read(colons.as_bytes()).unwrap();
    let mut out = Vec::new();
    text::write(&p, &mut out).unwrap();
    let expected = format!("f:9:1\n 1: 5 {}:7\n", "a:".repeat(499_999) + "a");
    assert!(
        out == expected.as_bytes(),
        "{}",
        first_difference(&out, expected.as_bytes())
    );

    let mut many = String::from("f:9:1\n 1: 5");
    for i in 0..120_000 {
        many.push_str(&format!(" t{i}:{}", i % 7 + 1));
    }
    // Repeated targets keep the last count.
    many.push_str(" t5:1000 t119999:2000\n");
    assert!(many.len() > 1_000_000);
    let p = text::read(many.as_bytes()).unwrap();
    let mut out = Vec::new();
    text::write(&p, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let body = text.lines().nth(1).unwrap();
    assert_eq!(body.matches(':').count(), 120_001, "{}", &body[..200]);
    assert!(body.contains(" t5:1000") && body.contains(" t119999:2000"));
}

/// The linear parser splits colon-heavy targets exactly as llvm-profdata does (on lines
/// short enough for its quadratic search).
#[test]
fn colon_heavy_targets_match_llvm_profdata() {
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        format!("f:9:1\n 1: 5 {}7\n", "a:".repeat(300)),
        format!(
            "f:9:1\n 1: 5 {}7 b:{}3\n",
            "1:".repeat(200),
            "x y:".repeat(50)
        ),
        format!(
            "f:9:1\n 1: 5 {}\n",
            (0..300)
                .map(|i| format!("t{}:{} ", i % 40, i + 1))
                .collect::<String>()
        ),
        format!("f:9:1\n 1: 5 a:b {}:x\n", "c:".repeat(100)),
    ];
    for (i, case) in cases.iter().enumerate() {
        let path = dir.path().join(format!("colons{i}.txt"));
        std::fs::write(&path, case).unwrap();
        check(&path, dir.path());
    }
}

/// A text profile whose `main` inlines a chain of `depth` callees.
fn nested(depth: usize) -> Vec<u8> {
    let mut t = b"main:100:10\n".to_vec();
    for d in 1..=depth {
        t.extend_from_slice(format!("{:d$}1: f{d}:10\n", "").as_bytes());
    }
    t.extend_from_slice(format!("{:w$}1: 5\n", "", w = depth + 1).as_bytes());
    t
}

/// Every reader refuses inlining deeper than `MAX_NESTING` (the text reader with the line),
/// and a profile at the limit goes through every writer and reads back the same: no writer
/// or reader of a readable profile runs out of stack.
#[test]
fn inlining_at_the_nesting_limit_round_trips_and_deeper_is_refused() {
    // The tests run unoptimized, whose frames are several times a release build's: a test
    // thread's 2 MiB would not hold what the release binary's threads hold.
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(nesting_limit_round_trip)
        .unwrap()
        .join()
        .unwrap();
}

fn nesting_limit_round_trip() {
    use formats::sampleprof::{binary, gcov, gcov_v4, MAX_NESTING};
    let deeper = nested(MAX_NESTING + 1);
    let err = text::read(&deeper).unwrap_err().located("deep.txt");
    let line = MAX_NESTING + 2;
    assert_eq!(
        err,
        format!("deep.txt:{line}: inlining nested deeper than {MAX_NESTING} (profmill's limit): 1: f{}:10", MAX_NESTING + 1)
    );
    let profile = text::read(&nested(MAX_NESTING)).unwrap();
    type Writer = Box<dyn Fn(&Profile) -> Vec<u8>>;
    let writer = |write: fn(&Profile, &mut Vec<u8>)| -> Writer {
        Box::new(move |p| {
            let mut out = Vec::new();
            write(p, &mut out);
            out
        })
    };
    let writers: Vec<(&str, Writer)> = vec![
        ("text", writer(|p, o| text::write(p, o).unwrap())),
        ("binary", writer(|p, o| binary::write_raw(p, o).unwrap())),
        (
            "extbinary",
            writer(|p, o| binary::write_ext(p, &Default::default(), o).unwrap()),
        ),
        (
            "gcov",
            writer(|p, o| gcov::write(p, gcov::Version::V2, o).unwrap()),
        ),
        (
            "gcov v4",
            writer(|p, o| gcov_v4::write(p, gcov_v4::Encoding::Binary, o).unwrap()),
        ),
        (
            "gcov v4 compact",
            writer(|p, o| gcov_v4::write(p, gcov_v4::Encoding::Compact, o).unwrap()),
        ),
        (
            "gcov v4 text",
            writer(|p, o| gcov_v4::write(p, gcov_v4::Encoding::Text, o).unwrap()),
        ),
    ];
    for (name, write) in &writers {
        let bytes = write(&profile);
        let back = formats::sampleprof::read(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(depth(&back), MAX_NESTING, "{name}");
        assert!(
            write(&back) == bytes,
            "{name}: not the same bytes when written again"
        );
    }
}

/// How deep the inlining of a profile goes.
fn depth(p: &Profile) -> usize {
    fn of(fs: &formats::sampleprof::FunctionSamples) -> usize {
        let callees = fs.callsites.values().flat_map(|m| m.values());
        callees.map(|c| 1 + of(c)).max().unwrap_or(0)
    }
    p.functions.values().map(of).max().unwrap_or(0)
}
