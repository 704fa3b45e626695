//! Writing a store: a stream of sections over any `io::Write`, then the table of contents.

use std::io::{self, Write};

use zerocopy::little_endian::{U32, U64};
use zerocopy::IntoBytes;

use crate::bytes::write_uleb128;

use super::raw::{FileHeader, TocEntry, Trailer};
use super::rows::{ROW_ROOM, ROW_WINDOW};
use super::{
    checksum, BinaryMeta, Row, SectionKind, StoreMeta, END_MAGIC, MAGIC, NO_BINARY, ROWS_PER_BLOCK,
    VERSION,
};

/// Writes a store section by section. Binaries must be added in
/// [`BinaryMeta::identity_cmp`] order, each binary's tables in [`SectionKind::TABLES`] order and
/// their rows in strictly increasing key order; the writer refuses anything else, so that what it
/// writes is always a valid store.
pub struct StoreWriter<W: Write> {
    out: W,
    offset: u64,
    toc: Vec<TocEntry>,
    binaries: Vec<BinaryMeta>,
    /// The last table written: binary and table index, to check the order.
    last_table: Option<(u32, usize)>,
    scratch: Vec<u8>,
    /// A table's block buffer, handed from each finished table to the next (a fresh one is
    /// zeroed).
    spare_block: Vec<u8>,
}

fn invalid(message: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

fn write_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    write_uleb128(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// The bytes of a [`StoreMeta`] section.
fn encode_meta(meta: &StoreMeta, out: &mut Vec<u8>) {
    write_uleb128(out, meta.captures);
    write_uleb128(out, meta.hosts.len() as u64);
    for h in &meta.hosts {
        write_bytes(out, h.as_bytes());
    }
}

/// The bytes of a [`BinaryMeta`] section.
fn encode_binary(meta: &BinaryMeta, out: &mut Vec<u8>) {
    write_bytes(out, &meta.build_id);
    write_bytes(out, &meta.name);
    write_uleb128(out, meta.samples);
    write_uleb128(out, meta.processes);
    write_uleb128(out, meta.events.len() as u64);
    for e in &meta.events {
        write_bytes(out, e.as_bytes());
    }
}

fn strictly_sorted<T: Ord>(items: &[T]) -> bool {
    items.windows(2).all(|w| w[0] < w[1])
}

impl<W: Write> StoreWriter<W> {
    /// Starts a store: writes its header.
    pub fn new(mut out: W) -> io::Result<StoreWriter<W>> {
        let header = FileHeader {
            magic: MAGIC,
            version: U32::new(VERSION),
            header_size: U32::new(std::mem::size_of::<FileHeader>() as u32),
            reserved: [0; 16],
        };
        out.write_all(header.as_bytes())?;
        Ok(StoreWriter {
            out,
            offset: std::mem::size_of::<FileHeader>() as u64,
            toc: Vec::new(),
            binaries: Vec::new(),
            last_table: None,
            scratch: Vec::new(),
            spare_block: Vec::new(),
        })
    }

    fn section(
        &mut self,
        kind: SectionKind,
        binary: u32,
        bytes: &[u8],
        rows: u64,
        first_key: [u64; 2],
    ) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.toc.push(TocEntry {
            kind: U32::new(kind.code()),
            binary: U32::new(binary),
            offset: U64::new(self.offset),
            length: U64::new(bytes.len() as u64),
            rows: U64::new(rows),
            checksum: U64::new(checksum(bytes)),
            first_key: first_key.map(U64::new),
        });
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Writes the file-level summary (hosts sorted and unique).
    pub fn meta(&mut self, meta: &StoreMeta) -> io::Result<()> {
        if !strictly_sorted(&meta.hosts) {
            return Err(invalid("store hosts must be sorted and unique"));
        }
        let mut bytes = std::mem::take(&mut self.scratch);
        bytes.clear();
        encode_meta(meta, &mut bytes);
        let result = self.section(SectionKind::Meta, NO_BINARY, &bytes, 0, [0; 2]);
        self.scratch = bytes;
        result
    }

    /// Adds a binary; returns its index for [`StoreWriter::table`].
    pub fn binary(&mut self, meta: &BinaryMeta) -> io::Result<u32> {
        if let Some(last) = self.binaries.last() {
            if last.identity_cmp(meta) != std::cmp::Ordering::Less {
                return Err(invalid("store binaries must be added in identity order"));
            }
        }
        if !strictly_sorted(&meta.events) {
            return Err(invalid("a binary's events must be sorted and unique"));
        }
        let index = self.binaries.len() as u32;
        let mut bytes = std::mem::take(&mut self.scratch);
        bytes.clear();
        encode_binary(meta, &mut bytes);
        let result = self.section(SectionKind::Binary, index, &bytes, 0, [0; 2]);
        self.scratch = bytes;
        result?;
        self.binaries.push(meta.clone());
        Ok(index)
    }

    /// Starts binary `binary`'s table of `R` rows.
    pub fn table<R: Row>(&mut self, binary: u32) -> io::Result<TableWriter<'_, W, R>> {
        if binary as usize >= self.binaries.len() {
            return Err(invalid("a table's binary must be added first"));
        }
        let table = R::KIND.table_index().unwrap_or(usize::MAX);
        if self.last_table.is_some_and(|last| last >= (binary, table)) {
            return Err(invalid(
                "store tables must come in binary order, each kind once",
            ));
        }
        self.last_table = Some((binary, table));
        let block = std::mem::take(&mut self.spare_block);
        Ok(TableWriter {
            store: self,
            binary,
            prev: R::default(),
            any: false,
            block,
            used: 0,
            rows: 0,
            first: R::default(),
        })
    }

    /// Writes the table of contents and the trailer; returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        let toc_offset = self.offset;
        let toc = self.toc.as_bytes();
        self.out.write_all(toc)?;
        let trailer = Trailer {
            toc_offset: U64::new(toc_offset),
            toc_entries: U64::new(self.toc.len() as u64),
            toc_checksum: U64::new(checksum(toc)),
            magic: END_MAGIC,
        };
        self.out.write_all(trailer.as_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Bytes of a block being written: [`ROWS_PER_BLOCK`] rows of at most [`ROW_ROOM`] bytes,
/// and the window of one more row that the last row's encoding is written into.
const BLOCK_ROOM: usize = (ROWS_PER_BLOCK - 1) * ROW_ROOM + ROW_WINDOW;

/// Writes one table's rows, a block at a time.
pub struct TableWriter<'s, W: Write, R: Row> {
    store: &'s mut StoreWriter<W>,
    binary: u32,
    /// The last row written, if `any` was.
    prev: R,
    any: bool,
    /// The block being written: its rows' bytes at the start, `used` of them, then room for
    /// the rest of [`ROWS_PER_BLOCK`] rows and a row's window ([`BLOCK_ROOM`] bytes in all, from
    /// the first row on).
    block: Vec<u8>,
    used: usize,
    rows: u64,
    first: R,
}

impl<W: Write, R: Row> TableWriter<'_, W, R> {
    /// Appends a row; its key must be greater than the previous row's.
    pub fn push(&mut self, row: &R) -> io::Result<()> {
        if self.any && self.prev.key_cmp(row).is_ge() {
            return Err(invalid(
                "table rows must be in strictly increasing key order",
            ));
        }
        if self.block.is_empty() {
            self.block = vec![0; BLOCK_ROOM];
        }
        // Blocks decode alone: the first row of each is encoded against the zero row.
        let prev = match self.rows {
            0 => {
                self.first = *row;
                R::default()
            }
            _ => self.prev,
        };
        // Fewer than ROWS_PER_BLOCK rows of at most ROW_ROOM bytes each are in the block.
        let Some(window) = (self.block.get_mut(self.used..)).and_then(|b| b.first_chunk_mut())
        else {
            unreachable!("a block keeps room for a row's window past its last row")
        };
        self.used += row.encode(&prev, window);
        self.prev = *row;
        self.any = true;
        self.rows += 1;
        if self.rows as usize == ROWS_PER_BLOCK {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let key = self.first.leading_key();
        self.store.section(
            R::KIND,
            self.binary,
            &self.block[..self.used],
            self.rows,
            key,
        )?;
        self.used = 0;
        self.rows = 0;
        Ok(())
    }

    /// Writes the last, partial block.
    pub fn finish(mut self) -> io::Result<()> {
        self.flush()?;
        self.store.spare_block = std::mem::take(&mut self.block);
        Ok(())
    }
}
