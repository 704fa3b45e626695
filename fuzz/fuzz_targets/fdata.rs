//! Feeds arbitrary bytes to the fdata reader: headers, every line form, escapes, numbers.
//! Any panic is a bug; so is an accepted line whose parts do not lie within it.
#![no_main]

use formats::bolt::fdata::{FdataReader, Record};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(reader) = FdataReader::new(data) else { return };
    let header = reader.header();
    if let Some(events) = header.no_lbr {
        for event in events.iter() {
            assert!(!event.is_empty());
        }
    }
    for entry in reader {
        let Ok(entry) = entry else { break };
        assert!(!entry.key.is_empty());
        let locations = match entry.record {
            Record::Branch { from, to, .. } => [from, to],
            Record::Memory { pc, addr, .. } => [pc, addr],
            Record::Sample { at, .. } => [at, at],
        };
        for loc in locations {
            assert!(loc.tag <= 5);
            assert!(!loc.escaped_name.is_empty());
            assert!(loc.name().len() <= loc.escaped_name.len());
        }
    }
});
