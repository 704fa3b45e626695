//! The profile store reader must accept or refuse any bytes with an error, never panic, and
//! whatever it accepts must write back to bytes it reads the same again.
//!
//! Random bytes rarely pass the checksums, so each input is tried twice: as it is, and with
//! every checksum the table of contents can reach recomputed, which lets mutations reach the
//! section and row decoders. Seeds: `fuzz/seeds.sh` writes real stores into `corpus/store`.
#![no_main]

use formats::store::{
    checksum, BranchRow, IpRow, MemRow, ReturnRow, Row, Store, StoreError, StoreWriter,
    TocEntry, TraceRow,
};
use libfuzzer_sys::fuzz_target;

const TOC_ENTRY: usize = std::mem::size_of::<TocEntry>();

fn rows<R: Row + 'static>(store: &Store<'_>, binary: usize) -> Result<Vec<R>, StoreError> {
    store.rows::<R>(binary).collect()
}

fn rewrite(store: &Store<'_>) -> Result<Vec<u8>, StoreError> {
    let mut w = StoreWriter::new(Vec::new()).expect("writing to memory");
    w.meta(store.meta()).expect("a read meta section writes back");
    for (i, (meta, _)) in store.binaries().iter().enumerate() {
        let b = w.binary(meta).expect("binaries read in order write back");
        macro_rules! table {
            ($row:ty) => {
                let all = rows::<$row>(store, i)?;
                if !all.is_empty() {
                    let mut t = w.table::<$row>(b).expect("table order");
                    for r in &all {
                        t.push(r).expect("rows read in order write back");
                    }
                    t.finish().expect("writing to memory");
                }
            };
        }
        table!(TraceRow);
        table!(BranchRow);
        table!(IpRow);
        table!(MemRow);
        table!(ReturnRow);
    }
    Ok(w.finish().expect("writing to memory"))
}

fn u64_at(data: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?))
}

/// Recomputes every section checksum and the table of contents' checksum, where the trailer
/// and the entries point inside the data.
fn with_fixed_checksums(data: &[u8]) -> Option<Vec<u8>> {
    let mut out = data.to_vec();
    let trailer = out.len().checked_sub(32)?;
    let toc = usize::try_from(u64_at(&out, trailer)?).ok()?;
    let entries = usize::try_from(u64_at(&out, trailer + 8)?).ok()?;
    let toc_end = toc.checked_add(entries.checked_mul(TOC_ENTRY)?)?;
    if toc_end > trailer {
        return None;
    }
    for e in 0..entries {
        let at = toc + e * TOC_ENTRY;
        let offset = usize::try_from(u64_at(&out, at + 8)?).ok()?;
        let length = usize::try_from(u64_at(&out, at + 16)?).ok()?;
        let Some(section) = out.get(offset..offset.checked_add(length)?) else {
            continue;
        };
        let sum = checksum(section);
        out[at + 32..at + 40].copy_from_slice(&sum.to_le_bytes());
    }
    let sum = checksum(&out[toc..toc_end]);
    out[trailer + 16..trailer + 24].copy_from_slice(&sum.to_le_bytes());
    Some(out)
}

fn check(data: &[u8]) {
    let Ok(store) = Store::parse(data) else {
        return;
    };
    if let Ok(bytes) = rewrite(&store) {
        let again = Store::parse(&bytes).expect("our own store parses");
        assert_eq!(rewrite(&again).expect("our own store reads"), bytes);
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    if let Some(fixed) = with_fixed_checksums(data) {
        check(&fixed);
    }
});
