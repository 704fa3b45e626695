//! The profile store reader must accept or refuse any bytes with an error, never panic, and
//! whatever it accepts must write back to the same bytes.
#![no_main]

use formats::store::{
    BranchRow, IpRow, MemRow, ReturnRow, Row, Store, StoreError, StoreWriter, TraceRow,
};
use libfuzzer_sys::fuzz_target;

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

fuzz_target!(|data: &[u8]| {
    let Ok(store) = Store::parse(data) else {
        return;
    };
    if let Ok(bytes) = rewrite(&store) {
        // Whatever was accepted reads back the same from our own writing.
        let again = Store::parse(&bytes).expect("our own store parses");
        assert_eq!(rewrite(&again).expect("our own store reads"), bytes);
    }
});
