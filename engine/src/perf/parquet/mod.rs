//! Parquet views of the profile store: one row per stored record, for Spark, DuckDB, Trino,
//! pandas and any other engine that reads Parquet (schema: `docs/store.md`, "Parquet rows").
//!
//! The rows are the store's rows, nothing more or less: besides the tables' records (`trace`,
//! `branch`, `ip`, `mem`, `return`), the store's summaries are rows too (`binary`, `event`,
//! `capture`, `host`), so that an engine's `GROUP BY` over every column but the counts merges
//! them as `profmill merge` does, and store → Parquet → store gives back the same bytes.
//!
//! Only the `parquet` crate's column API is used (no Arrow): it writes each row group's columns
//! from plain vectors and reads them back the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::{Compression, LogicalType, Type as PhysicalType, ZstdLevel};
use parquet::column::page::{Page, PageMetadata, PageReader};
use parquet::column::reader::ColumnReaderImpl;
use parquet::column::writer::ColumnWriter;
use parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, DataType, FixedLenByteArrayType, Int32Type, Int64Type,
};
use parquet::file::metadata::{KeyValue, SortingColumn};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, RowGroupReader};
use parquet::file::serialized_reader::SerializedFileReader;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::ColumnDescriptor;

use formats::store::{
    BinaryMeta, BranchRow, IpRow, MemRow, ReturnRow, Row, Store, StoreMeta, StoreWriter, TraceRow,
};

use crate::error::{io_error, Error, Result};
use crate::io::output::write_atomically;
use crate::perf::binary::hex;
use crate::perf::store::{sorted_summed_saturating, store_bytes, StoreFile, StoredProfile};

/// The key-value metadata key that names the schema, and the name this module writes.
pub const SCHEMA_KEY: &str = "profmill.schema";
/// The schema's name.
pub const SCHEMA_NAME: &str = "profmill-rows";
/// The key-value metadata key of the schema's version, and the version written and read.
pub const VERSION_KEY: &str = "profmill.schema.version";
/// The schema version.
pub const SCHEMA_VERSION: &str = "1";

/// The schema, in Parquet's message syntax. Offsets and counts are unsigned 64-bit integers;
/// a column a row's kind does not use is null.
const SCHEMA: &str = "
message profmill_rows {
  required binary build_id (STRING);
  required binary binary (STRING);
  required binary kind (STRING);
  optional binary event (STRING);
  optional int64 from (INTEGER(64, false));
  optional int64 to (INTEGER(64, false));
  optional int64 ft_end (INTEGER(64, false));
  optional int64 count (INTEGER(64, false));
  optional int64 mispreds (INTEGER(64, false));
  optional boolean in_binary;
}";

/// Rows per row group at most; a binary's rows start a new row group, so that the groups'
/// build-id statistics let an engine skip the binaries it does not want.
const ROWS_PER_GROUP: usize = 1 << 20;

/// What a row is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// The file's number of captures (`count`).
    Capture,
    /// A capturing host's name (`event`).
    Host,
    /// A binary's summary: `count` samples, `mispreds` processes.
    Binary,
    /// One of a binary's event names (`event`).
    Event,
    /// A [`TraceRow`]: `from` (branch source), `to` (its target), `ft_end`.
    Trace,
    /// A [`BranchRow`]: `from`, `to`.
    Branch,
    /// An [`IpRow`]: `from` (the address).
    Ip,
    /// A [`MemRow`]: `from` (PC), `to` (data address), `in_binary`.
    Mem,
    /// A [`ReturnRow`]: `from` (the return's address), no count.
    Return,
}

impl Kind {
    const ALL: [Kind; 9] = [
        Kind::Capture,
        Kind::Host,
        Kind::Binary,
        Kind::Event,
        Kind::Trace,
        Kind::Branch,
        Kind::Ip,
        Kind::Mem,
        Kind::Return,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Capture => "capture",
            Kind::Host => "host",
            Kind::Binary => "binary",
            Kind::Event => "event",
            Kind::Trace => "trace",
            Kind::Branch => "branch",
            Kind::Ip => "ip",
            Kind::Mem => "mem",
            Kind::Return => "return",
        }
    }

    fn from_name(name: &[u8]) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name().as_bytes() == name)
    }
}

/// One row's values, before they go into columns.
#[derive(Clone, Copy, Debug, Default)]
struct Values<'a> {
    event: Option<&'a str>,
    from: Option<u64>,
    to: Option<u64>,
    ft_end: Option<u64>,
    count: Option<u64>,
    mispreds: Option<u64>,
    in_binary: Option<bool>,
}

/// An optional column's values and definition levels.
struct Optional<T> {
    values: Vec<T>,
    defs: Vec<i16>,
}

impl<T> Default for Optional<T> {
    fn default() -> Self {
        Optional {
            values: Vec::new(),
            defs: Vec::new(),
        }
    }
}

impl<T> Optional<T> {
    fn push(&mut self, v: Option<T>) {
        self.defs.push(i16::from(v.is_some()));
        self.values.extend(v);
    }
}

/// A row group's columns, filled a row at a time.
#[derive(Default)]
struct Columns {
    build_id: Vec<ByteArray>,
    binary: Vec<ByteArray>,
    kind: Vec<ByteArray>,
    event: Optional<ByteArray>,
    from: Optional<i64>,
    to: Optional<i64>,
    ft_end: Optional<i64>,
    count: Optional<i64>,
    mispreds: Optional<i64>,
    in_binary: Optional<bool>,
}

/// The unsigned value's bits, as Parquet's INT64 holds an unsigned integer.
fn bits(v: Option<u64>) -> Option<i64> {
    v.map(|v| v as i64)
}

impl Columns {
    fn len(&self) -> usize {
        self.kind.len()
    }

    fn push(&mut self, (build_id, binary): &(ByteArray, ByteArray), kind: Kind, v: Values<'_>) {
        self.build_id.push(build_id.clone());
        self.binary.push(binary.clone());
        self.kind.push(ByteArray::from(kind.name()));
        self.event.push(v.event.map(ByteArray::from));
        self.from.push(bits(v.from));
        self.to.push(bits(v.to));
        self.ft_end.push(bits(v.ft_end));
        self.count.push(bits(v.count));
        self.mispreds.push(bits(v.mispreds));
        self.in_binary.push(v.in_binary);
    }

    /// Writes the columns as one row group, in the schema's order, and empties them.
    fn write_group<W: std::io::Write + Send>(
        &mut self,
        w: &mut SerializedFileWriter<W>,
    ) -> parquet::errors::Result<()> {
        if self.len() == 0 {
            return Ok(());
        }
        let cols = std::mem::take(self);
        let mut group = w.next_row_group()?;
        let mut index = 0;
        while let Some(mut column) = group.next_column()? {
            match (index, column.untyped()) {
                (0..=3, ColumnWriter::ByteArrayColumnWriter(c)) => {
                    let (values, defs) = match index {
                        0 => (&cols.build_id, None),
                        1 => (&cols.binary, None),
                        2 => (&cols.kind, None),
                        _ => (&cols.event.values, Some(&cols.event.defs[..])),
                    };
                    c.write_batch(values, defs, None)?;
                }
                (4..=8, ColumnWriter::Int64ColumnWriter(c)) => {
                    let col = [
                        &cols.from,
                        &cols.to,
                        &cols.ft_end,
                        &cols.count,
                        &cols.mispreds,
                    ][index - 4];
                    c.write_batch(&col.values, Some(&col.defs), None)?;
                }
                (9, ColumnWriter::BoolColumnWriter(c)) => {
                    c.write_batch(&cols.in_binary.values, Some(&cols.in_binary.defs), None)?;
                }
                _ => unreachable!("the writer follows SCHEMA"),
            }
            column.close()?;
            index += 1;
        }
        group.close()?;
        Ok(())
    }
}

/// Rows on their way to a file: a row group's columns, written out when full.
struct Sink {
    cols: Columns,
    w: SerializedFileWriter<Vec<u8>>,
}

impl Sink {
    fn push(
        &mut self,
        id: &(ByteArray, ByteArray),
        kind: Kind,
        v: Values<'_>,
    ) -> parquet::errors::Result<()> {
        self.cols.push(id, kind, v);
        if self.cols.len() == ROWS_PER_GROUP {
            self.cols.write_group(&mut self.w)?;
        }
        Ok(())
    }

    /// Ends the row group (a binary's rows start a new one).
    fn end_group(&mut self) -> parquet::errors::Result<()> {
        self.cols.write_group(&mut self.w)
    }
}

/// The writer's settings: zstd, the schema's name and version, sorted by build-id.
fn writer_properties() -> parquet::errors::Result<WriterProperties> {
    Ok(WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3)?))
        .set_created_by(format!("profmill {}", env!("CARGO_PKG_VERSION")))
        .set_key_value_metadata(Some(vec![
            KeyValue::new(SCHEMA_KEY.to_owned(), SCHEMA_NAME.to_owned()),
            KeyValue::new(VERSION_KEY.to_owned(), SCHEMA_VERSION.to_owned()),
        ]))
        .set_sorting_columns(Some(vec![SortingColumn {
            column_idx: 0,
            descending: false,
            nulls_first: false,
        }]))
        .build())
}

/// Why a store could not become Parquet.
enum ToParquetError {
    Store(formats::store::StoreError),
    Parquet(parquet::errors::ParquetError),
    /// A binary's name is not UTF-8 (Parquet's `binary` column is a string).
    Name(u64),
}

impl From<formats::store::StoreError> for ToParquetError {
    fn from(e: formats::store::StoreError) -> Self {
        ToParquetError::Store(e)
    }
}

impl From<parquet::errors::ParquetError> for ToParquetError {
    fn from(e: parquet::errors::ParquetError) -> Self {
        ToParquetError::Parquet(e)
    }
}

/// A writer of Parquet rows in `schema` (this module's, but for the tests' bad files).
fn rows_writer(
    schema: &str,
    properties: WriterProperties,
) -> parquet::errors::Result<SerializedFileWriter<Vec<u8>>> {
    let schema = Arc::new(parse_message_type(schema)?);
    SerializedFileWriter::new(Vec::new(), schema, Arc::new(properties))
}

/// The Parquet file of `store`'s rows.
fn store_to_parquet(store: &Store<'_>) -> std::result::Result<Vec<u8>, ToParquetError> {
    let w = rows_writer(SCHEMA, writer_properties()?)?;
    let mut sink = Sink {
        cols: Columns::default(),
        w,
    };
    let meta = store.meta();
    let file_level = (ByteArray::from(""), ByteArray::from(""));
    let captures = Values {
        count: Some(meta.captures),
        ..Default::default()
    };
    sink.push(&file_level, Kind::Capture, captures)?;
    for host in &meta.hosts {
        let v = Values {
            event: Some(host),
            ..Default::default()
        };
        sink.push(&file_level, Kind::Host, v)?;
    }
    // Sorted by the build-id column (binaries without one, whose column is empty, first), so
    // that the file is sorted by it and every row group's statistics say which ids it holds.
    let mut order: Vec<usize> = (0..store.binaries().len()).collect();
    order.sort_by_key(|&b| {
        let m = &store.binaries()[b].0;
        (!m.build_id.is_empty(), m.build_id.clone(), m.name.clone())
    });
    for b in order {
        let (m, layout) = &store.binaries()[b];
        let name =
            std::str::from_utf8(&m.name).map_err(|_| ToParquetError::Name(layout.meta.offset))?;
        let id = (
            ByteArray::from(hex(&m.build_id).as_str()),
            ByteArray::from(name),
        );
        push_binary(&mut sink, &id, store, b, m)?;
        sink.end_group()?;
    }
    sink.end_group()?;
    Ok(sink.w.into_inner()?)
}

/// Pushes binary `b`'s summary and rows into `sink`.
fn push_binary(
    sink: &mut Sink,
    id: &(ByteArray, ByteArray),
    store: &Store<'_>,
    b: usize,
    m: &BinaryMeta,
) -> std::result::Result<(), ToParquetError> {
    let summary = Values {
        count: Some(m.samples),
        mispreds: Some(m.processes),
        ..Default::default()
    };
    sink.push(id, Kind::Binary, summary)?;
    for e in &m.events {
        let v = Values {
            event: Some(e),
            ..Default::default()
        };
        sink.push(id, Kind::Event, v)?;
    }
    for r in store.rows::<TraceRow>(b) {
        let r = r?;
        let v = Values {
            from: Some(r.branch),
            to: Some(r.from),
            ft_end: Some(r.to),
            count: Some(r.count),
            mispreds: Some(r.mispreds),
            ..Default::default()
        };
        sink.push(id, Kind::Trace, v)?;
    }
    for r in store.rows::<BranchRow>(b) {
        let r = r?;
        let v = Values {
            from: Some(r.from),
            to: Some(r.to),
            count: Some(r.count),
            mispreds: Some(r.mispreds),
            ..Default::default()
        };
        sink.push(id, Kind::Branch, v)?;
    }
    for r in store.rows::<IpRow>(b) {
        let r = r?;
        let v = Values {
            from: Some(r.ip),
            count: Some(r.count),
            ..Default::default()
        };
        sink.push(id, Kind::Ip, v)?;
    }
    for r in store.rows::<MemRow>(b) {
        let r = r?;
        let v = Values {
            from: Some(r.pc),
            to: Some(r.addr),
            in_binary: Some(r.in_binary),
            count: Some(r.count),
            ..Default::default()
        };
        sink.push(id, Kind::Mem, v)?;
    }
    for r in store.rows::<ReturnRow>(b) {
        let v = Values {
            from: Some(r?.addr),
            ..Default::default()
        };
        sink.push(id, Kind::Return, v)?;
    }
    Ok(())
}

/// The fuzz target's check (and the seed replay test's): importing any bytes as a Parquet file
/// fails with an error or yields a store, never panics; a store it yields exports to Parquet
/// that imports to the same store bytes. Files go to a fresh directory under `scratch`, removed
/// after.
/// Public only for them.
#[doc(hidden)]
pub fn check_fuzz_input(data: &[u8], scratch: &Path) {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = scratch.join(format!("profmill-fuzz-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let input = dir.join("in.parquet");
    std::fs::write(&input, data).expect("scratch space");
    let store = dir.join("a.pms");
    if import_parquet(&[input], &store).is_ok() {
        let again = dir.join("again.parquet");
        export_parquet(&store, &again).expect("an imported store exports");
        let store_again = dir.join("b.pms");
        import_parquet(&[again], &store_again).expect("our own Parquet imports");
        assert_eq!(
            std::fs::read(&store).expect("store"),
            std::fs::read(&store_again).expect("store"),
            "store → Parquet → store changed the bytes"
        );
    } else {
        assert!(!store.exists(), "a failed import left an output");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes the store at `store` as Parquet at `output` (atomically).
pub fn export_parquet(store: &Path, output: &Path) -> Result<()> {
    let file = StoreFile::open(store)?;
    let parsed = file.store()?;
    let bytes = store_to_parquet(&parsed).map_err(|e| to_parquet_error(e, store, output))?;
    write_atomically(output, |out| out.write_all(&bytes))
}

/// The engine's error for a failed conversion of `store` to `output`.
fn to_parquet_error(e: ToParquetError, store: &Path, output: &Path) -> Error {
    match e {
        ToParquetError::Store(source) => Error::Store {
            path: store.to_path_buf(),
            source,
        },
        ToParquetError::Parquet(e) => Error::Parquet {
            path: output.to_path_buf(),
            offset: 0,
            message: format!("cannot write Parquet: {e}"),
        },
        ToParquetError::Name(offset) => Error::Parquet {
            path: store.to_path_buf(),
            offset,
            message: "a binary's file name is not UTF-8, which Parquet's `binary` column must be"
                .into(),
        },
    }
}

/// `profiles` (those of one binary summed) and `meta` as Parquet at `output`, the rows of the
/// store they make (`aggregate --format parquet`).
pub fn write_parquet(output: &Path, meta: &StoreMeta, profiles: Vec<StoredProfile>) -> Result<()> {
    let bytes = store_bytes(meta, profiles).map_err(io_error(output))?;
    let store = Store::parse(&bytes).map_err(|source| Error::Store {
        path: output.to_path_buf(),
        source,
    })?;
    let parquet = store_to_parquet(&store).map_err(|e| to_parquet_error(e, output, output))?;
    write_atomically(output, |out| out.write_all(&parquet))
}

/// What an import read.
#[derive(Clone, Debug, Default)]
pub struct ImportReport {
    /// Parquet files read.
    pub files: usize,
    /// Rows read.
    pub rows: u64,
    /// Binaries in the store.
    pub binaries: usize,
    /// Whether some summed count passed 2^64 − 1 and was saturated.
    pub saturated: bool,
}

/// One binary's rows, gathered from any number of files.
#[derive(Default)]
struct Gathered {
    build_id: Vec<u8>,
    /// The smallest name seen (as `merge` keeps it).
    name: Option<Vec<u8>>,
    events: BTreeSet<String>,
    samples: u64,
    processes: u64,
    traces: Vec<TraceRow>,
    branches: Vec<BranchRow>,
    ips: Vec<IpRow>,
    mem: Vec<MemRow>,
    returns: Vec<ReturnRow>,
}

/// Everything the files hold, binaries by identity: (no build-id, build-id or name), which
/// orders them as [`BinaryMeta::identity_cmp`] does.
#[derive(Default)]
struct Gather {
    captures: u64,
    hosts: BTreeSet<String>,
    binaries: BTreeMap<(bool, Vec<u8>), Gathered>,
    saturated: bool,
    rows: u64,
}

/// Reads the Parquet files `inputs` (directories: every `*.parquet` file under them, as Spark
/// writes them) and writes their rows, summed, as the store `output`. Nothing is written if any
/// file cannot be read.
pub fn import_parquet(inputs: &[PathBuf], output: &Path) -> Result<ImportReport> {
    let files = parquet_files(inputs)?;
    if files.is_empty() {
        return Err(Error::Mismatch(format!(
            "no Parquet files in {}",
            inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut gather = Gather::default();
    for f in &files {
        without_panics(|| read_file(f, &mut gather)).map_err(|why| Error::Parquet {
            path: f.clone(),
            offset: 0,
            message: format!("corrupt Parquet file ({why})"),
        })??;
    }
    let mut report = ImportReport {
        files: files.len(),
        rows: gather.rows,
        binaries: gather.binaries.len(),
        saturated: gather.saturated,
    };
    let meta = StoreMeta {
        captures: gather.captures,
        hosts: gather.hosts.into_iter().collect(),
    };
    write_atomically(output, |out| {
        let mut w = StoreWriter::new(out)?;
        w.meta(&meta)?;
        for g in gather.binaries.into_values() {
            report.saturated |= write_binary(&mut w, g)?;
        }
        w.finish().map(drop)
    })?;
    Ok(report)
}

/// Writes one gathered binary; returns whether a count saturated.
fn write_binary<W: std::io::Write>(w: &mut StoreWriter<W>, g: Gathered) -> std::io::Result<bool> {
    let meta = BinaryMeta {
        build_id: g.build_id,
        name: g.name.unwrap_or_default(),
        events: g.events.into_iter().collect(),
        samples: g.samples,
        processes: g.processes,
    };
    let b = w.binary(&meta)?;
    let mut saturated = false;
    saturated |= table(w, b, g.traces)?;
    saturated |= table(w, b, g.branches)?;
    saturated |= table(w, b, g.ips)?;
    saturated |= table(w, b, g.mem)?;
    saturated |= table(w, b, g.returns)?;
    Ok(saturated)
}

/// Sums and writes one table; returns whether a count saturated.
fn table<W: std::io::Write, R: Row>(
    w: &mut StoreWriter<W>,
    binary: u32,
    rows: Vec<R>,
) -> std::io::Result<bool> {
    if rows.is_empty() {
        return Ok(false);
    }
    let (rows, saturated) = sorted_summed_saturating(rows);
    let mut t = w.table::<R>(binary)?;
    rows.iter().try_for_each(|r| t.push(r))?;
    t.finish()?;
    Ok(saturated)
}

/// The Parquet files of `inputs`: files as given, directories walked (sorted, skipping the
/// `_SUCCESS`, `.crc` and other hidden files engines leave beside their output).
fn parquet_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        if input.is_dir() {
            walk(input, &mut files)?;
        } else {
            files.push(input.clone());
        }
    }
    Ok(files)
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io_error(dir))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .map_err(io_error(dir))?;
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name.starts_with('_') || name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            walk(&path, files)?;
        } else if name.ends_with(".parquet") {
            files.push(path);
        }
    }
    Ok(())
}

/// Where the numeric columns' values come from: their physical type and how to read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Number {
    /// INT64 annotated unsigned: the bits are the value.
    Unsigned64,
    /// INT64 or INT32, signed: negative values are refused.
    Signed64,
    /// INT32 annotated unsigned.
    Unsigned32,
    /// INT32, signed: negative values are refused.
    Signed32,
    /// A DECIMAL with scale 0 in a fixed-length byte array (as Spark writes DECIMAL(20, 0),
    /// the type it reads unsigned 64-bit integers as): big-endian two's complement.
    Decimal,
}

/// The columns a file must have, located: each [`COLUMNS`] entry's index in the file (the
/// build-id's may be missing, for a file of a Hive partition), and the numbers' types.
struct Located {
    file: [Option<usize>; 10],
    numbers: [Number; 5],
}

impl Located {
    /// The file column of [`COLUMNS`] entry `c` (`build_id`'s stands in for a partition's
    /// files by `binary`'s).
    fn column(&self, c: usize) -> usize {
        self.file[c].or(self.file[1]).unwrap_or_default()
    }
}

/// Reads one Parquet file's rows into `gather`.
fn read_file(path: &Path, gather: &mut Gather) -> Result<()> {
    let file = File::open(path).map_err(io_error(path))?;
    let len = file.metadata().map_err(io_error(path))?.len();
    // The footer (schema, key-value metadata, row groups) ends 8 bytes before the file does.
    let footer = len.saturating_sub(8);
    let bad = |offset: u64, message: String| Error::Parquet {
        path: path.to_path_buf(),
        offset,
        message,
    };
    check_footer(&file, len).map_err(|(offset, message)| bad(offset, message))?;
    let reader = SerializedFileReader::new(file).map_err(|e| {
        bad(
            footer,
            format!("expected a Parquet file's footer (length and `PAR1`): {e}"),
        )
    })?;
    let metadata = reader.metadata();
    check_schema_name(metadata.file_metadata().key_value_metadata()).map_err(|m| bad(footer, m))?;
    let located =
        locate(metadata.file_metadata().schema_descr().columns()).map_err(|m| bad(footer, m))?;
    let partition_id = match located.file[0] {
        Some(_) => None,
        None => Some(build_id_from_path(path).ok_or_else(|| {
            let why = "no `build_id` column, and no `build_id=…` directory (Hive partitioning) above the file";
            bad(footer, why.into())
        })?),
    };
    for g in 0..reader.num_row_groups() {
        let group = reader
            .get_row_group(g)
            .map_err(|e| bad(footer, format!("row group {g}: {e}")))?;
        let rows = usize::try_from(group.metadata().num_rows()).unwrap_or(0);
        let at = |c: usize, why: String| {
            let offset = group.metadata().column(located.column(c)).byte_range().0;
            bad(
                offset,
                format!("row group {g}, column `{}`: {why}", COLUMNS[c]),
            )
        };
        let mut cursors = GroupCursors::open(&*group, &located, partition_id.as_deref())
            .map_err(|(c, e)| at(c, e.to_string()))?;
        // A batch of rows at a time: an engine may write millions of rows in one row group.
        let mut done = 0;
        while done < rows {
            let want = BATCH.min(rows - done);
            let batch = without_panics(|| cursors.read(want))
                .map_err(|why| {
                    let start = (0..group.metadata().num_columns())
                        .map(|c| group.metadata().column(c).byte_range().0)
                        .min()
                        .unwrap_or(footer);
                    bad(
                        start,
                        format!("row group {g}, rows from {done}: corrupt column data ({why})"),
                    )
                })?
                .map_err(|(c, e)| at(c, e.to_string()))?;
            batch
                .gather(gather)
                .map_err(|(row, c, why)| at(c, format!("row {}: {why}", done + row)))?;
            done += batch.kind.len();
        }
        gather.rows += rows as u64;
    }
    Ok(())
}

/// Checks the footer's shape before the `parquet` crate decodes it: the crate sizes its vectors
/// from the footer's element counts, so a corrupt count would make it allocate tens of
/// gigabytes and abort (fuzzing found it). It also reads each known field as the type the
/// IDL gives it, whatever the data declares, so the check walks with the same schema (a
/// string field that the data calls a set made the crate read a string's bytes as a list
/// count; fuzzing found that too). The error is the offset and message to report.
fn check_footer(file: &File, len: u64) -> std::result::Result<(), (u64, String)> {
    use std::os::unix::fs::FileExt;
    let mut tail = [0u8; 8];
    if len < 12 || file.read_exact_at(&mut tail, len - 8).is_err() {
        // Too short for a footer: the crate's own message says so.
        return Ok(());
    }
    let footer_len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if &tail[4..] != b"PAR1" || footer_len > len - 8 {
        return Ok(());
    }
    let start = len - 8 - footer_len;
    let mut footer = vec![0u8; footer_len as usize];
    file.read_exact_at(&mut footer, start)
        .map_err(|e| (start, format!("cannot read the footer: {e}")))?;
    let corrupt = |e: formats::thrift::ThriftError| {
        (
            e.offset,
            format!("corrupt footer (file metadata): {}", e.kind),
        )
    };
    use formats::thrift::parquet::{FILE_META_DATA, MAX_FOOTER_STRUCTS};
    formats::thrift::check_struct_as(&footer, start, FILE_META_DATA, MAX_FOOTER_STRUCTS)
        .map_err(corrupt)?;
    Ok(())
}

/// Runs `f`, turning a panic into an error message. The `parquet` crate panics on some corrupt
/// pages (fuzzing found a dictionary index past the dictionary, `encodings/rle.rs`); a corrupt
/// input must be an error, never a crash. The panic hook is silenced meanwhile, so the user
/// sees our one-line error and not the crate's panic message.
fn without_panics<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    result.map_err(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".into());
        format!("the Parquet decoder failed: {what}")
    })
}

/// Refuses a file whose key-value metadata names another schema or version. A file without
/// the key (an engine's output: Spark keeps no key-value metadata of its inputs) is checked
/// by its columns alone.
fn check_schema_name(kv: Option<&Vec<KeyValue>>) -> std::result::Result<(), String> {
    let value = |key: &str| {
        kv.into_iter()
            .flatten()
            .find(|e| e.key == key)
            .and_then(|e| e.value.clone())
    };
    if let Some(name) = value(SCHEMA_KEY) {
        if name != SCHEMA_NAME {
            return Err(format!(
                "the file's schema is `{name}` (key-value metadata `{SCHEMA_KEY}`); expected `{SCHEMA_NAME}`"
            ));
        }
    }
    if let Some(version) = value(VERSION_KEY) {
        if version != SCHEMA_VERSION {
            return Err(format!(
                "the file's `{SCHEMA_NAME}` schema is version {version}; this profmill reads version {SCHEMA_VERSION}"
            ));
        }
    }
    Ok(())
}

/// Finds the schema's columns by name and checks their types.
fn locate(columns: &[Arc<ColumnDescriptor>]) -> std::result::Result<Located, String> {
    let mut located = Located {
        file: [None; 10],
        numbers: [Number::Unsigned64; 5],
    };
    for (c, name) in COLUMNS.iter().enumerate() {
        let Some(i) = columns.iter().position(|d| d.path().parts() == [*name]) else {
            if c == 0 {
                continue;
            }
            return Err(format!(
                "no column `{name}`; expected the `{SCHEMA_NAME}` schema ({})",
                COLUMNS.join(", ")
            ));
        };
        let d = &columns[i];
        if d.max_rep_level() > 0 {
            return Err(format!(
                "column `{name}` is repeated; expected a flat column"
            ));
        }
        let expected = match c {
            0..=3 => PhysicalType::BYTE_ARRAY,
            9 => PhysicalType::BOOLEAN,
            _ => {
                located.numbers[c - 4] = number_type(name, d)?;
                d.physical_type()
            }
        };
        if d.physical_type() != expected {
            return Err(format!(
                "column `{name}` is {}; expected {expected}",
                d.physical_type()
            ));
        }
        located.file[c] = Some(i);
    }
    Ok(located)
}

/// How numeric column `name` holds its values.
fn number_type(name: &str, c: &ColumnDescriptor) -> std::result::Result<Number, String> {
    let logical = c.logical_type_ref();
    let decimal_scale = match logical {
        Some(LogicalType::Decimal { scale, .. }) => Some(*scale),
        _ => None,
    };
    match (c.physical_type(), logical) {
        (_, Some(LogicalType::Decimal { .. })) if decimal_scale != Some(0) => Err(format!(
            "column `{name}` is a decimal with a fraction; expected whole numbers"
        )),
        (PhysicalType::INT64, Some(LogicalType::Integer { is_signed: false, .. })) => {
            Ok(Number::Unsigned64)
        }
        (PhysicalType::INT64, _) => Ok(Number::Signed64),
        (PhysicalType::INT32, Some(LogicalType::Integer { is_signed: false, .. })) => {
            Ok(Number::Unsigned32)
        }
        (PhysicalType::INT32, _) => Ok(Number::Signed32),
        (PhysicalType::FIXED_LEN_BYTE_ARRAY, Some(LogicalType::Decimal { .. })) => {
            Ok(Number::Decimal)
        }
        (t, _) => Err(format!(
            "column `{name}` is {t}; expected an unsigned 64-bit integer (INT64, or DECIMAL(20, 0) as Spark writes it)"
        )),
    }
}

/// A column chunk's pages, each checked before the `parquet` crate's decoders size anything
/// from it: the crate makes a dictionary of as many values as the page header claims
/// (`DictDecoder::set_dict`), before decoding them, so a corrupt count allocated tens of
/// gigabytes (fuzzing found it). A dictionary value takes at least a byte of the page.
struct CheckedPages(Box<dyn PageReader>);

impl PageReader for CheckedPages {
    fn get_next_page(&mut self) -> parquet::errors::Result<Option<Page>> {
        let page = self.0.get_next_page()?;
        if let Some(Page::DictionaryPage {
            buf, num_values, ..
        }) = &page
        {
            if *num_values as usize > buf.len() {
                return Err(parquet::errors::ParquetError::General(format!(
                    "a dictionary page of {num_values} values in {} bytes",
                    buf.len()
                )));
            }
        }
        Ok(page)
    }

    fn peek_next_page(&mut self) -> parquet::errors::Result<Option<PageMetadata>> {
        self.0.peek_next_page()
    }

    fn skip_next_page(&mut self) -> parquet::errors::Result<()> {
        self.0.skip_next_page()
    }

    fn at_record_boundary(&mut self) -> parquet::errors::Result<bool> {
        self.0.at_record_boundary()
    }
}

impl Iterator for CheckedPages {
    type Item = parquet::errors::Result<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

/// Rows decoded at a time by `import` (fewer in the tests, so that their files span batches).
const BATCH: usize = if cfg!(test) { 1000 } else { 1 << 16 };

/// One column of a row group, read a batch at a time.
struct Cursor<T: DataType> {
    reader: ColumnReaderImpl<T>,
    max_def: i16,
}

impl<T: DataType> Cursor<T> {
    fn open(group: &dyn RowGroupReader, c: usize) -> parquet::errors::Result<Cursor<T>> {
        let descr = group.metadata().column(c).column_descr_ptr();
        let pages = CheckedPages(group.get_column_page_reader(c)?);
        Ok(Cursor {
            max_def: descr.max_def_level(),
            reader: ColumnReaderImpl::new(descr, Box::new(pages)),
        })
    }

    /// The next `rows` values, `None` for nulls.
    fn read(&mut self, rows: usize) -> parquet::errors::Result<Vec<Option<T::T>>> {
        let mut defs = Vec::with_capacity(rows);
        let mut values = Vec::with_capacity(rows);
        let mut read = 0;
        while read < rows {
            let defs_buf = (self.max_def > 0).then_some(&mut defs);
            let (records, _, _) =
                self.reader
                    .read_records(rows - read, defs_buf, None, &mut values)?;
            if records == 0 {
                return Err(parquet::errors::ParquetError::General(
                    "the column chunk ends before the row group's rows do".into(),
                ));
            }
            read += records;
        }
        if self.max_def == 0 {
            return Ok(values.into_iter().map(Some).collect());
        }
        let mut values = values.into_iter();
        Ok(defs
            .iter()
            .map(|&d| {
                if d == self.max_def {
                    values.next()
                } else {
                    None
                }
            })
            .collect())
    }
}

/// A numeric column's cursor, by how the column holds its numbers.
enum NumberCursor {
    Bits(Cursor<Int64Type>, bool),
    Small(Cursor<Int32Type>, bool),
    Decimal(Cursor<FixedLenByteArrayType>),
}

impl NumberCursor {
    fn open(
        group: &dyn RowGroupReader,
        c: usize,
        number: Number,
    ) -> parquet::errors::Result<NumberCursor> {
        Ok(match number {
            Number::Unsigned64 | Number::Signed64 => {
                NumberCursor::Bits(Cursor::open(group, c)?, number == Number::Unsigned64)
            }
            Number::Signed32 | Number::Unsigned32 => {
                NumberCursor::Small(Cursor::open(group, c)?, number == Number::Unsigned32)
            }
            Number::Decimal => NumberCursor::Decimal(Cursor::open(group, c)?),
        })
    }

    fn read(&mut self, rows: usize) -> parquet::errors::Result<Raw> {
        Ok(match self {
            NumberCursor::Bits(c, unsigned) => Raw::Bits(c.read(rows)?, *unsigned),
            NumberCursor::Small(c, unsigned) => Raw::Small(c.read(rows)?, *unsigned),
            NumberCursor::Decimal(c) => Raw::Decimal(c.read(rows)?),
        })
    }
}

/// Where a row group's build-ids come from.
enum BuildIds {
    Column(Box<Cursor<ByteArrayType>>),
    /// The build-id of a Hive partition's directory, the same for every row.
    Partition(Vec<u8>),
}

/// A row group's columns, read a batch at a time. Errors name the [`COLUMNS`] index.
struct GroupCursors {
    build_id: BuildIds,
    strings: [Cursor<ByteArrayType>; 3],
    numbers: Vec<NumberCursor>,
    in_binary: Cursor<BoolType>,
}

type CursorError = (usize, parquet::errors::ParquetError);

impl GroupCursors {
    fn open(
        group: &dyn RowGroupReader,
        l: &Located,
        partition_id: Option<&[u8]>,
    ) -> std::result::Result<GroupCursors, CursorError> {
        let string = |c: usize| Cursor::open(group, l.column(c)).map_err(|e| (c, e));
        let build_id = match partition_id {
            Some(id) => BuildIds::Partition(id.to_vec()),
            None => BuildIds::Column(Box::new(string(0)?)),
        };
        let numbers = (0..5)
            .map(|n| {
                NumberCursor::open(group, l.column(4 + n), l.numbers[n]).map_err(|e| (4 + n, e))
            })
            .collect::<std::result::Result<_, _>>()?;
        Ok(GroupCursors {
            build_id,
            strings: [string(1)?, string(2)?, string(3)?],
            numbers,
            in_binary: Cursor::open(group, l.column(9)).map_err(|e| (9, e))?,
        })
    }

    /// The next `rows` rows.
    fn read(&mut self, rows: usize) -> std::result::Result<GroupRows, CursorError> {
        let [binary, kind, event] = &mut self.strings;
        let build_id = match &mut self.build_id {
            BuildIds::Column(c) => c.read(rows).map_err(|e| (0, e))?,
            BuildIds::Partition(id) => vec![Some(ByteArray::from(id.clone())); rows],
        };
        let mut numbers = Vec::with_capacity(5);
        for (n, c) in self.numbers.iter_mut().enumerate() {
            numbers.push(c.read(rows).map_err(|e| (4 + n, e))?);
        }
        let numbers: [Raw; 5] = numbers
            .try_into()
            .unwrap_or_else(|_| unreachable!("five number columns"));
        Ok(GroupRows {
            build_id,
            binary: binary.read(rows).map_err(|e| (1, e))?,
            kind: kind.read(rows).map_err(|e| (2, e))?,
            event: event.read(rows).map_err(|e| (3, e))?,
            numbers,
            in_binary: self.in_binary.read(rows).map_err(|e| (9, e))?,
        })
    }
}

/// A numeric column's raw values, before the sign and range checks of [`to_u64`].
enum Raw {
    Bits(Vec<Option<i64>>, bool),
    Small(Vec<Option<i32>>, bool),
    Decimal(Vec<Option<parquet::data_type::FixedLenByteArray>>),
}

impl Raw {
    /// Row `i`'s value: `None` if null; an error for a negative or too large one.
    fn get(&self, i: usize) -> std::result::Result<Option<u64>, String> {
        let negative = |v: i128| format!("{v} is negative; expected an unsigned 64-bit integer");
        match self {
            Raw::Bits(v, true) => Ok(v[i].map(|v| v as u64)),
            Raw::Bits(v, false) => v[i]
                .map(|v| u64::try_from(v).map_err(|_| negative(v.into())))
                .transpose(),
            Raw::Small(v, true) => Ok(v[i].map(|v| u64::from(v as u32))),
            Raw::Small(v, false) => v[i]
                .map(|v| u64::try_from(v).map_err(|_| negative(v.into())))
                .transpose(),
            Raw::Decimal(v) => v[i]
                .as_ref()
                .map(|d| {
                    let bytes = d.data();
                    if bytes.is_empty() || bytes.len() > 16 {
                        return Err(format!(
                            "a {}-byte decimal; expected at most 16 bytes",
                            bytes.len()
                        ));
                    }
                    // Big-endian two's complement, sign-extended to 128 bits.
                    let fill = if bytes[0] & 0x80 != 0 { 0xff } else { 0 };
                    let mut wide = [fill; 16];
                    wide[16 - bytes.len()..].copy_from_slice(bytes);
                    let value = i128::from_be_bytes(wide);
                    if value < 0 {
                        return Err(negative(value));
                    }
                    u64::try_from(value)
                        .map_err(|_| format!("{value} does not fit in an unsigned 64-bit integer"))
                })
                .transpose(),
        }
    }
}

/// One row group's columns.
struct GroupRows {
    build_id: Vec<Option<ByteArray>>,
    binary: Vec<Option<ByteArray>>,
    kind: Vec<Option<ByteArray>>,
    event: Vec<Option<ByteArray>>,
    numbers: [Raw; 5],
    in_binary: Vec<Option<bool>>,
}

/// A row that cannot be read: its index, the column (a [`COLUMNS`] index) and why.
type RowError = (usize, usize, String);

/// The schema's columns, in its order (the column indices of [`RowError`]).
const COLUMNS: [&str; 10] = [
    "build_id",
    "binary",
    "kind",
    "event",
    "from",
    "to",
    "ft_end",
    "count",
    "mispreds",
    "in_binary",
];

/// `a + b`, saturating at 2^64 − 1 (and saying so in `saturated`), as `merge` sums.
fn add(a: u64, b: u64, saturated: &mut bool) -> u64 {
    a.checked_add(b).unwrap_or_else(|| {
        *saturated = true;
        u64::MAX
    })
}

/// The bytes of a hex string (either case), if it is one.
fn unhex(text: &[u8]) -> Option<Vec<u8>> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    if text.len() & 1 == 1 {
        return None;
    }
    text.chunks(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

impl GroupRows {
    /// Adds every row to `gather`.
    fn gather(&self, gather: &mut Gather) -> std::result::Result<(), RowError> {
        (0..self.kind.len()).try_for_each(|i| self.gather_row(i, gather))
    }

    fn text(&self, i: usize, column: usize) -> std::result::Result<&[u8], RowError> {
        let cell = match column {
            0 => &self.build_id[i],
            1 => &self.binary[i],
            2 => &self.kind[i],
            _ => &self.event[i],
        };
        cell.as_ref()
            .map(|b| b.data())
            .ok_or_else(|| (i, column, "null; expected a string".into()))
    }

    fn utf8(&self, i: usize, column: usize) -> std::result::Result<String, RowError> {
        String::from_utf8(self.text(i, column)?.to_vec())
            .map_err(|_| (i, column, "not UTF-8".into()))
    }

    fn gather_row(&self, i: usize, gather: &mut Gather) -> std::result::Result<(), RowError> {
        let kind_text = self.text(i, 2)?;
        let kind = Kind::from_name(kind_text).ok_or_else(|| {
            let known: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
            let text = String::from_utf8_lossy(kind_text);
            (
                i,
                2,
                format!(
                    "`{text}` is not a row kind; expected one of {}",
                    known.join(", ")
                ),
            )
        })?;
        // Column `n` of the numbers (0 from … 4 mispreds), which this kind of row needs.
        let need = |n: usize| -> std::result::Result<u64, RowError> {
            let value = self.numbers[n].get(i).map_err(|why| (i, 4 + n, why))?;
            value.ok_or_else(|| {
                let why = format!("null in a `{}` row, which needs a value", kind.name());
                (i, 4 + n, why)
            })
        };
        let saturated = &mut gather.saturated;
        match kind {
            Kind::Capture => gather.captures = add(gather.captures, need(3)?, saturated),
            Kind::Host => drop(gather.hosts.insert(self.utf8(i, 3)?)),
            _ => {
                let id_text = self.text(i, 0)?;
                let build_id = unhex(id_text).ok_or_else(|| {
                    let text = String::from_utf8_lossy(id_text);
                    (
                        i,
                        0,
                        format!("`{text}` is not a build-id; expected hex digits"),
                    )
                })?;
                // The column is a string: a name that is not UTF-8 is a corrupt file (and could
                // not be exported back).
                let name = self.text(i, 1)?;
                std::str::from_utf8(name).map_err(|_| (i, 1, "not UTF-8".to_string()))?;
                let key = match build_id.is_empty() {
                    true => (true, name.to_vec()),
                    false => (false, build_id.clone()),
                };
                let b = gather.binaries.entry(key).or_default();
                b.build_id = build_id;
                if b.name.as_deref().is_none_or(|n| name < n) {
                    b.name = Some(name.to_vec());
                }
                self.gather_binary_row(i, kind, b, &need, saturated)?;
            }
        }
        Ok(())
    }

    /// Adds row `i`, of a binary, to `b`.
    fn gather_binary_row(
        &self,
        i: usize,
        kind: Kind,
        b: &mut Gathered,
        need: &dyn Fn(usize) -> std::result::Result<u64, RowError>,
        saturated: &mut bool,
    ) -> std::result::Result<(), RowError> {
        match kind {
            Kind::Binary => {
                b.samples = add(b.samples, need(3)?, saturated);
                b.processes = add(b.processes, need(4)?, saturated);
            }
            Kind::Event => drop(b.events.insert(self.utf8(i, 3)?)),
            Kind::Trace => b.traces.push(TraceRow {
                branch: need(0)?,
                from: need(1)?,
                to: need(2)?,
                count: need(3)?,
                mispreds: need(4)?,
            }),
            Kind::Branch => b.branches.push(BranchRow {
                from: need(0)?,
                to: need(1)?,
                count: need(3)?,
                mispreds: need(4)?,
            }),
            Kind::Ip => b.ips.push(IpRow {
                ip: need(0)?,
                count: need(3)?,
            }),
            Kind::Mem => b.mem.push(MemRow {
                pc: need(0)?,
                addr: need(1)?,
                in_binary: self.in_binary[i]
                    .ok_or_else(|| (i, 9, "null in a `mem` row, which needs a value".into()))?,
                count: need(3)?,
            }),
            Kind::Return => b.returns.push(ReturnRow { addr: need(0)? }),
            Kind::Capture | Kind::Host => unreachable!("file-level rows are gathered above"),
        }
        Ok(())
    }
}

/// The build-id of a file under a Hive-style `build_id=…` directory (as Spark's
/// `partitionBy("build_id")` writes it, leaving the column out of the files); Hive's
/// placeholder for a null or empty value is the empty build-id.
fn build_id_from_path(path: &Path) -> Option<Vec<u8>> {
    let parent = path.parent()?;
    let value = parent
        .components()
        .rev()
        .find_map(|c| c.as_os_str().to_str()?.strip_prefix("build_id="))?;
    Some(match value {
        "__HIVE_DEFAULT_PARTITION__" => Vec::new(),
        v => v.as_bytes().to_vec(),
    })
}

#[cfg(test)]
mod tests;
