//! Feeds arbitrary bytes to the perf.data reader: header, attrs, features, record walk,
//! sample decode and the zstd stream. Any panic is a bug.
#![no_main]

use formats::bytes::Bytes;
use formats::perf::stream::compressed_payload;
use formats::perf::{kind, EventSet, FileHeader, Records, ZstdStream};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(header) = FileHeader::parse(data) else { return };
    let Ok(events) = EventSet::new(header.attrs) else { return };
    let start = header.data_offset as usize;
    let section = &data[start..start + header.data_size as usize];
    let mut zstd = ZstdStream::new().ok();
    let mut inflated = Vec::new();
    for record in Records::new(Bytes::new(section, header.endian), start as u64) {
        let Ok(r) = record else { return };
        match r.header.kind {
            kind::SAMPLE => {
                if let Ok(event) = events.sample_event(r.body) {
                    let _ = events.layouts[event].parse(r.body).map(|s| s.branch_stack.map(|b| b.iter().count()));
                }
            }
            kind::COMPRESSED | kind::COMPRESSED2 => {
                if let (Ok(payload), Some(z)) = (compressed_payload(&r), zstd.as_mut()) {
                    if inflated.len() < (64 << 20) {
                        let _ = z.decompress(payload, &mut inflated, r.offset);
                    }
                }
            }
            _ => {}
        }
    }
    for record in Records::new(Bytes::new(&inflated, header.endian), 0) {
        if record.is_err() {
            break;
        }
    }
});
