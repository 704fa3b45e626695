//! Store → Parquet → store gives the same bytes, for every kind of row and value; bad Parquet
//! files are refused with the file, a byte offset and what was expected, and nothing written.

use std::path::{Path, PathBuf};

use formats::store::{
    BinaryMeta, BranchRow, IpRow, MemRow, ReturnRow, Row, Store, StoreMeta, StoreWriter, TraceRow,
    ROWS_PER_BLOCK,
};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

use super::*;

/// A store with every table, blocks past the first, markers and extreme counts, a binary
/// without a build-id, several events and hosts.
fn rich_store() -> Vec<u8> {
    let mut w = StoreWriter::new(Vec::new()).unwrap();
    w.meta(&StoreMeta {
        captures: 7,
        hosts: vec!["host-a".into(), "host-b".into()],
    })
    .unwrap();
    let with_id = BinaryMeta {
        build_id: vec![0x0a, 0xbc, 0xff],
        name: b"libx.so".to_vec(),
        events: vec!["cycles".into(), "instructions".into()],
        samples: 123,
        processes: 4,
    };
    let b = w.binary(&with_id).unwrap();
    let traces: Vec<TraceRow> = (0..ROWS_PER_BLOCK as u64 + 10)
        .map(|i| TraceRow {
            branch: 0x1000 + i * 3,
            from: 0x2000 + i,
            to: if i % 7 == 0 { u64::MAX } else { 0x2010 + i },
            count: if i == 5 { u64::MAX } else { i + 1 },
            mispreds: i % 3,
        })
        .collect();
    table(&mut w, b, &traces);
    table(
        &mut w,
        b,
        &[
            BranchRow {
                from: 0,
                to: 0x40,
                count: 2,
                mispreds: 1,
            },
            BranchRow {
                from: 0x50,
                to: 0,
                count: 0,
                mispreds: 0,
            },
        ],
    );
    table(&mut w, b, &[IpRow { ip: 0x99, count: 5 }]);
    table(
        &mut w,
        b,
        &[
            MemRow {
                pc: 1,
                addr: u64::MAX,
                in_binary: false,
                count: 2,
            },
            MemRow {
                pc: 1,
                addr: u64::MAX,
                in_binary: true,
                count: 3,
            },
        ],
    );
    table(
        &mut w,
        b,
        &[ReturnRow { addr: 0x77 }, ReturnRow { addr: 1 << 63 }],
    );
    let no_id = BinaryMeta {
        name: b"app".to_vec(),
        events: vec!["cycles:u".into()],
        samples: 9,
        processes: 1,
        ..Default::default()
    };
    let b = w.binary(&no_id).unwrap();
    table(&mut w, b, &[IpRow { ip: 0x10, count: 9 }]);
    w.finish().unwrap()
}

fn table<R: Row>(w: &mut StoreWriter<Vec<u8>>, b: u32, rows: &[R]) {
    let mut t = w.table::<R>(b).unwrap();
    rows.iter().for_each(|r| t.push(r).unwrap());
    t.finish().unwrap();
}

fn parquet_of(store: &[u8]) -> Vec<u8> {
    let store = Store::parse(store).unwrap();
    store_to_parquet(&store).unwrap_or_else(|_| panic!("the store converts"))
}

fn import(files: &[PathBuf], out: &Path) -> Result<Vec<u8>> {
    import_parquet(files, out)?;
    Ok(std::fs::read(out).unwrap())
}

#[test]
fn store_to_parquet_to_store_is_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let store = rich_store();
    let file = dir.path().join("rows.parquet");
    std::fs::write(&file, parquet_of(&store)).unwrap();
    let out = dir.path().join("back.pms");
    assert!(import(std::slice::from_ref(&file), &out).unwrap() == store);
    // Parquet output is a function of the store too.
    assert!(parquet_of(&store) == std::fs::read(&file).unwrap());
}

#[test]
fn importing_twice_sums_like_a_merge() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let store = rich_store();
    std::fs::write(d.join("a.pms"), &store).unwrap();
    let file = d.join("rows.parquet");
    std::fs::write(&file, parquet_of(&store)).unwrap();
    let imported = import(&[file.clone(), file], &d.join("twice.pms")).unwrap();
    let input = crate::io::inputs::WeightedInput {
        path: d.join("a.pms"),
        weight: 2,
    };
    crate::perf::store::merge_stores(&[input], &d.join("merged.pms"), &crate::io::NoProgress)
        .unwrap();
    assert!(imported == std::fs::read(d.join("merged.pms")).unwrap());
}

/// A file of `rows` in `schema` with `properties`, written by this module's column writer.
fn custom_file(
    schema: &str,
    properties: WriterProperties,
    rows: &[(Kind, Values<'_>)],
    path: &Path,
) {
    let mut w = rows_writer(schema, properties).unwrap();
    let mut cols = Columns::default();
    let id = (ByteArray::from("0abc"), ByteArray::from("app"));
    for (kind, values) in rows {
        cols.push(&id, *kind, *values);
    }
    cols.write_group(&mut w).unwrap();
    std::fs::write(path, w.into_inner().unwrap()).unwrap();
}

fn trace(count: Option<u64>) -> (Kind, Values<'static>) {
    let v = Values {
        from: Some(1),
        to: Some(2),
        ft_end: Some(3),
        count,
        mispreds: Some(0),
        ..Default::default()
    };
    (Kind::Trace, v)
}

/// Imports `file` over an existing output: the error's text, and the output untouched.
fn refused(file: &Path) -> String {
    let out = file.with_extension("pms");
    std::fs::write(&out, "previous").unwrap();
    let e = import_parquet(&[file.to_path_buf()], &out)
        .expect_err("the file is refused")
        .to_string();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous");
    assert!(
        e.contains(&file.display().to_string()) && e.contains("byte offset"),
        "{e}"
    );
    e
}

#[test]
fn bad_files_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Another schema, by name.
    let other = WriterProperties::builder()
        .set_key_value_metadata(Some(vec![KeyValue::new(
            SCHEMA_KEY.into(),
            "someone-elses".to_owned(),
        )]))
        .build();
    custom_file(SCHEMA, other, &[trace(Some(1))], &d.join("other.parquet"));
    let e = refused(&d.join("other.parquet"));
    assert!(
        e.contains("someone-elses") && e.contains(SCHEMA_NAME),
        "{e}"
    );
    // A newer version.
    let newer = WriterProperties::builder()
        .set_key_value_metadata(Some(vec![KeyValue::new(
            VERSION_KEY.into(),
            "9".to_owned(),
        )]))
        .build();
    custom_file(SCHEMA, newer, &[trace(Some(1))], &d.join("newer.parquet"));
    assert!(refused(&d.join("newer.parquet")).contains("version 9"));
    // A missing count.
    let plain = || WriterProperties::builder().build();
    custom_file(
        SCHEMA,
        plain(),
        &[trace(Some(1)), trace(None)],
        &d.join("null.parquet"),
    );
    let e = refused(&d.join("null.parquet"));
    assert!(
        e.contains("row 1") && e.contains("`count`") && e.contains("null"),
        "{e}"
    );
    // A negative count, in a signed column (as an engine without unsigned types writes it).
    let signed = SCHEMA.replace(
        "optional int64 count (INTEGER(64, false));",
        "optional int64 count;",
    );
    let minus_three = Some(-3i64 as u64);
    custom_file(
        &signed,
        plain(),
        &[trace(minus_three)],
        &d.join("negative.parquet"),
    );
    let e = refused(&d.join("negative.parquet"));
    assert!(e.contains("-3 is negative") && e.contains("`count`"), "{e}");
    // The same column with a positive count is fine.
    custom_file(
        &signed,
        plain(),
        &[trace(Some(4))],
        &d.join("signed.parquet"),
    );
    import(&[d.join("signed.parquet")], &d.join("signed.pms")).unwrap();
    // Wrong type.
    let text = SCHEMA.replace(
        "optional int64 count (INTEGER(64, false));",
        "optional binary count (STRING);",
    );
    let schema = parse_message_type(&text).unwrap();
    let mut w = SerializedFileWriter::new(Vec::new(), Arc::new(schema), Arc::new(plain())).unwrap();
    let mut group = w.next_row_group().unwrap();
    while let Some(column) = group.next_column().unwrap() {
        column.close().unwrap();
    }
    group.close().unwrap();
    std::fs::write(d.join("typed.parquet"), w.into_inner().unwrap()).unwrap();
    let e = refused(&d.join("typed.parquet"));
    assert!(e.contains("column `count` is BYTE_ARRAY"), "{e}");
    // Truncated.
    let good = parquet_of(&rich_store());
    std::fs::write(d.join("cut.parquet"), &good[..good.len() / 2]).unwrap();
    let e = refused(&d.join("cut.parquet"));
    assert!(e.contains("footer"), "{e}");
}

#[test]
fn a_hive_partition_supplies_the_build_id() {
    let p = Path::new("/x/out/build_id=0abc/part-0.parquet");
    assert_eq!(build_id_from_path(p), Some(vec![b'0', b'a', b'b', b'c']));
    let p = Path::new("/x/out/build_id=__HIVE_DEFAULT_PARTITION__/part-0.parquet");
    assert_eq!(build_id_from_path(p), Some(Vec::new()));
    assert_eq!(build_id_from_path(Path::new("/x/part-0.parquet")), None);
    assert_eq!(unhex(b"0aBC"), Some(vec![0x0a, 0xbc]));
    assert_eq!(unhex(b"0ab"), None);
}

/// A footer whose `created_by` (field 6, a string) is declared as a set: the `parquet` crate
/// reads known fields by their IDL type, so it would take the set's header byte as the
/// string's length and read on out of step, into a list count nobody checked (fuzzing found
/// the crate allocating 50 GB that way: `fuzz/seeds/parquet/crash-typed-footer-oom`). The
/// check walks with the crate's schema and refuses the field where its header is.
#[test]
fn a_footer_field_of_another_type_than_the_schema_says_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("confused.parquet");
    // FileMetaData { 1: version = 1, 6: created_by declared as set<set> of 10 }.
    let footer = [0x15, 2, 0x5a, 0xaa, 0];
    let mut bytes = b"PAR1".to_vec();
    bytes.extend_from_slice(&footer);
    bytes.extend_from_slice(&(footer.len() as u32).to_le_bytes());
    bytes.extend_from_slice(b"PAR1");
    std::fs::write(&file, &bytes).unwrap();
    let e = refused(&file);
    assert!(
        e.contains("byte offset 6: corrupt footer (file metadata): field 6 is a set where a binary belongs"),
        "{e}"
    );
}

/// Pages handed out in order, for [`CheckedPages`].
struct Pages(std::vec::IntoIter<Page>);

impl PageReader for Pages {
    fn get_next_page(&mut self) -> parquet::errors::Result<Option<Page>> {
        Ok(self.0.next())
    }
    fn peek_next_page(&mut self) -> parquet::errors::Result<Option<PageMetadata>> {
        Ok(None)
    }
    fn skip_next_page(&mut self) -> parquet::errors::Result<()> {
        Ok(())
    }
}

impl Iterator for Pages {
    type Item = parquet::errors::Result<Page>;
    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

/// A dictionary page whose header claims 667,942,911 values in 24 bytes: the `parquet` crate
/// would size the dictionary (16 GB) before decoding it; the page is refused first (fuzzing
/// found it: `fuzz/seeds/parquet/crash-dictionary-count-oom`, which the page header check
/// now refuses even earlier).
#[test]
fn a_dictionary_page_claiming_more_values_than_bytes_is_refused() {
    let dictionary = |num_values| Page::DictionaryPage {
        buf: bytes::Bytes::from(vec![0u8; 24]),
        num_values,
        encoding: parquet::basic::Encoding::PLAIN,
        is_sorted: false,
    };
    let pages = vec![dictionary(3), dictionary(667_942_911)];
    let mut checked = CheckedPages(Box::new(Pages(pages.into_iter())));
    assert!(checked.get_next_page().unwrap().is_some());
    let e = checked.get_next_page().unwrap_err().to_string();
    assert!(
        e.contains("a dictionary page of 667942911 values in 24 bytes"),
        "{e}"
    );
}

/// A page header holding a list of 5.6 × 10^15 elements in 14 bytes: the `parquet` crate
/// reads page headers from the file and skips what it does not know without bounds, so the
/// import ran for minutes; the headers are checked first (fuzzing found it:
/// `fuzz/seeds/parquet/timeout-page-header-skip`).
#[test]
fn a_page_header_that_cannot_fit_its_chunk_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("header.parquet");
    let seed = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fuzz/seeds/parquet/timeout-page-header-skip"
    );
    std::fs::copy(seed, &file).unwrap();
    let started = std::time::Instant::now();
    let e = refused(&file);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(
        e.contains("byte offset 59: row group 0, column `build_id`: corrupt page header: a collection of 5580809350003574 elements in 14 bytes"),
        "{e}"
    );
}

/// A footer that claims 2^32 schema elements in a few bytes: refused at the list's offset
/// before the `parquet` crate sizes a vector from it (fuzzing found the crate allocating 50 GB
/// and aborting on such a footer; `fuzz/seeds/parquet/crash-metadata-oom` is the input found).
#[test]
fn a_footer_with_an_impossible_count_is_refused_before_decoding() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("huge.parquet");
    // FileMetaData { 1: version = 1, 2: schema = list<struct> of 2^32 elements }.
    let footer = [0x15, 2, 0x19, 0xfc, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0];
    let mut bytes = b"PAR1".to_vec();
    bytes.extend_from_slice(&footer);
    bytes.extend_from_slice(&(footer.len() as u32).to_le_bytes());
    bytes.extend_from_slice(b"PAR1");
    std::fs::write(&file, &bytes).unwrap();
    let e = refused(&file);
    assert!(
        e.contains("byte offset 7:")
            && e.contains("corrupt footer")
            && e.contains("4294967296 elements"),
        "{e}"
    );
}
