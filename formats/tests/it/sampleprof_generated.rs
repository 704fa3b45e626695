//! A generated profile of a few MB (`corpus::sampleprof`): our text → ExtBinary → text must
//! equal llvm-profdata-19's at every step, byte for byte.

use crate::sampleprof_common::*;
use corpus::sampleprof::{write_sample_profile_text, SampleProfileSpec};
use formats::sampleprof::binary::{self, ExtBinaryOptions};
use formats::sampleprof::text;
use testsupport::{first_difference, have_tool, LLVM_PROFDATA_19 as LLVM_PROFDATA};

#[test]
fn generated_text_to_extbinary_and_back_matches_llvm_profdata() {
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spec = SampleProfileSpec::of_size(2024, 4 << 20);
    let input = d.join("gen.txt");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&input).unwrap());
    let size = write_sample_profile_text(&spec, &mut f).unwrap();
    drop(f);
    assert!(size > 3 << 20, "{size} bytes");

    let profile = text::read(&std::fs::read(&input).unwrap()).unwrap();
    let mut ours = Vec::new();
    text::write(&profile, &mut ours).unwrap();
    let theirs = llvm_merge(&input, &["--text"], &d.join("ref0.txt")).unwrap();
    assert!(ours == theirs, "text: {}", first_difference(&ours, &theirs));
    for (options, args) in [
        (ExtBinaryOptions::default(), &["--extbinary"][..]),
        (
            ExtBinaryOptions {
                use_md5: true,
                compress_all: false,
                partial: false,
                split_layout: false,
            },
            &["--extbinary", "--use-md5"][..],
        ),
    ] {
        let mut ours = Vec::new();
        binary::write_ext(&profile, &options, &mut ours).unwrap();
        let theirs = llvm_merge(&input, args, &d.join("ref.extbin")).unwrap();
        assert!(
            ours == theirs,
            "{args:?}: ExtBinary differs from llvm-profdata's"
        );

        // Back to text, from the same ExtBinary.
        let mut ours_text = Vec::new();
        text::write(&binary::read_ext(&theirs).unwrap(), &mut ours_text).unwrap();
        let theirs_text =
            llvm_merge(&d.join("ref.extbin"), &["--text"], &d.join("ref.txt")).unwrap();
        assert!(
            ours_text == theirs_text,
            "{args:?}: {}",
            first_difference(&ours_text, &theirs_text)
        );
    }
    // The generator exercises what it promises.
    let t = String::from_utf8(std::fs::read(&input).unwrap()).unwrap();
    assert!(t.contains("\n    "), "no inlining three levels deep");
    assert!(t
        .lines()
        .any(|l| l.split_whitespace().count() > 2 && !l.ends_with(':')));
    assert!(t
        .lines()
        .any(|l| l.trim_start().split(':').next().unwrap().contains('.')));
}
