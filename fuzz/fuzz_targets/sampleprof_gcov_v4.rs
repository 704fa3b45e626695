//! The GCOV v4 readers (binary, compact, text) must never panic; whatever they read must
//! round-trip exactly through the three encodings (documents compare equal).
#![no_main]

use formats::sampleprof::gcov_v4::{self as v4, Encoding};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = v4::read_document(data) else {
        return;
    };
    for e in [Encoding::Binary, Encoding::Compact] {
        let mut out = Vec::new();
        v4::write_document(&doc, e, &mut out).expect("a document that was read can be written");
        assert_eq!(v4::read_binary(&out).expect("our output reads"), doc);
    }
    let mut txt = Vec::new();
    if v4::write_text(&doc, &mut txt).is_ok() {
        let back = v4::read_text(&txt).expect("our text reads");
        let mut without_unknown = doc.clone();
        without_unknown.unknown_sections.clear();
        for s in without_unknown.symbols.values_mut() {
            if let Some(info) = &mut s.info {
                strip_unknown(&mut info.body);
            }
        }
        assert_eq!(back, without_unknown);
    }
    let _ = v4::to_profile(&doc);
});

fn strip_unknown(body: &mut v4::Body) {
    body.unknown.clear();
    for inl in &mut body.inlined {
        strip_unknown(&mut inl.body);
    }
}
