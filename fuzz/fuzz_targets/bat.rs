//! The BAT section decoder (`.note.bolt_bat`) must accept or refuse any bytes with an error,
//! never panic; whatever it accepts writes back to bytes that decode the same, and perf2bolt's
//! queries over it (translation, fall-throughs) answer for any address. Seeds: `fuzz/seeds/bat`
//! (also replayed by the normal tests, `formats/tests/it/fuzz_seeds.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    formats::bolt::bat::check_fuzz_input(data);
    let Ok(tables) = formats::bolt::bat::parse_note(data, 0) else {
        return;
    };
    let t = engine::bolt::bat::Translation::new(tables, data.len() as u64);
    // Queries at every fragment, at offsets from the input's own bytes.
    let fragments: Vec<u64> = t.tables.hot.iter().map(|f| f.address).collect();
    for (i, &address) in fragments.iter().enumerate() {
        let offset = u64::from(data[i % data.len()]);
        for branch in [false, true] {
            let _ = t.translate(address, offset, branch);
        }
        let _ = t.fallthroughs(address, address.wrapping_add(offset), address.wrapping_add(offset * 3));
        let _ = t.fragment_before(address.wrapping_add(offset));
    }
});
