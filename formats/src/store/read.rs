//! Reading a store: the trailer, the table of contents, the metadata and table blocks, each
//! from a byte slice, so a caller can map the whole file or read only the parts it needs.

use std::cmp::Ordering;

use zerocopy::FromBytes;

use crate::bytes::{Endian, ReadError, Reader};

use super::raw::{FileHeader, TocEntry, Trailer};
use super::rows::BlockUleb;
use super::{
    checksum, BinaryMeta, Row, SectionKind, StoreError, StoreErrorKind, StoreMeta, END_MAGIC,
    MAGIC, NO_BINARY, VERSION,
};

/// Size of the header and of the trailer.
const HEADER_SIZE: u64 = std::mem::size_of::<FileHeader>() as u64;
const TRAILER_SIZE: u64 = std::mem::size_of::<Trailer>() as u64;

/// One section, as the table of contents describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section {
    /// What it holds.
    pub kind: SectionKind,
    /// Its binary's index (`NO_BINARY` for file-level sections).
    pub binary: u32,
    /// Its number among its binary's blocks of the same kind.
    pub block: u32,
    /// File offset.
    pub offset: u64,
    /// Length in bytes.
    pub length: u64,
    /// Rows (table blocks).
    pub rows: u64,
    /// xxh3-64 of its bytes.
    pub checksum: u64,
    /// The first row's two leading key columns (table blocks).
    pub first_key: [u64; 2],
}

impl Section {
    /// Rows the block can hold: its row count, but never more than its bytes (a row takes at
    /// least one), so that a corrupt count cannot ask for more memory than the file's size.
    pub fn row_room(&self) -> usize {
        usize::try_from(self.rows.min(self.length)).unwrap_or(usize::MAX)
    }

    fn error(&self, offset: u64, kind: StoreErrorKind) -> StoreError {
        StoreError {
            offset,
            section: Some((self.kind, self.binary, self.block)),
            kind,
        }
    }

    /// Checks `bytes` (this section's) against the checksum.
    fn verify(&self, bytes: &[u8]) -> Result<(), StoreError> {
        if bytes.len() as u64 != self.length {
            return Err(self.error(self.offset, StoreErrorKind::Toc("section length")));
        }
        if checksum(bytes) != self.checksum {
            return Err(self.error(self.offset, StoreErrorKind::Checksum));
        }
        Ok(())
    }

    /// A reader of this section's `bytes` that reports file offsets.
    fn reader<'a>(&self, bytes: &'a [u8]) -> Reader<'a> {
        Reader::at(bytes, Endian::Little, self.offset)
    }

    fn read_error(&self, e: ReadError) -> StoreError {
        self.error(e.offset, StoreErrorKind::Read(e.kind))
    }
}

/// Where everything is, from the table of contents.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    /// The file-level metadata section.
    pub meta: Option<Section>,
    /// The binaries, in store order.
    pub binaries: Vec<BinaryLayout>,
}

/// One binary's sections.
#[derive(Clone, Debug)]
pub struct BinaryLayout {
    /// Its [`BinaryMeta`] section.
    pub meta: Section,
    /// Its table blocks, per [`SectionKind::TABLES`] entry, in key order.
    pub tables: [Vec<Section>; 5],
}

impl BinaryLayout {
    /// The blocks of table `kind`.
    pub fn blocks(&self, kind: SectionKind) -> &[Section] {
        kind.table_index().map_or(&[], |i| &self.tables[i])
    }

    /// Rows of table `kind`.
    pub fn rows(&self, kind: SectionKind) -> u64 {
        self.blocks(kind).iter().map(|b| b.rows).sum()
    }

    /// Bytes of table `kind`.
    pub fn bytes(&self, kind: SectionKind) -> u64 {
        self.blocks(kind).iter().map(|b| b.length).sum()
    }
}

fn file_error(offset: u64, kind: StoreErrorKind) -> StoreError {
    StoreError {
        offset,
        section: None,
        kind,
    }
}

/// Checks the first 32 bytes; returns the version.
pub fn parse_header(bytes: &[u8]) -> Result<u32, StoreError> {
    let (header, _) = FileHeader::read_from_prefix(bytes)
        .map_err(|_| file_error(0, StoreErrorKind::NotAStore))?;
    if header.magic != MAGIC {
        return Err(file_error(0, StoreErrorKind::NotAStore));
    }
    let version = header.version.get();
    if version > VERSION {
        return Err(file_error(8, StoreErrorKind::NewerVersion(version)));
    }
    if version == 1 {
        return Err(file_error(8, StoreErrorKind::PreReleaseVersion(version)));
    }
    if version == 0
        || u64::from(header.header_size.get()) != HEADER_SIZE
        || header.reserved != [0; 16]
    {
        return Err(file_error(12, StoreErrorKind::Toc("header size")));
    }
    Ok(version)
}

/// Checks the last 32 bytes of a `file_len`-byte store whose header [`parse_header`] accepted;
/// returns where its table of contents is: (offset, length in bytes, checksum).
pub fn parse_trailer(bytes: &[u8], file_len: u64) -> Result<(u64, u64, u64), StoreError> {
    let at = file_len.saturating_sub(TRAILER_SIZE);
    // The header is a store's, so a missing end is a cut or unfinished file: said where the
    // file ends.
    if file_len < HEADER_SIZE + TRAILER_SIZE {
        return Err(file_error(file_len, StoreErrorKind::NoTrailer));
    }
    let trailer =
        Trailer::read_from_bytes(bytes).map_err(|_| file_error(at, StoreErrorKind::NoTrailer))?;
    if trailer.magic != END_MAGIC {
        return Err(file_error(at + 24, StoreErrorKind::NoTrailer));
    }
    let entry = std::mem::size_of::<TocEntry>() as u64;
    let offset = trailer.toc_offset.get();
    let length = trailer.toc_entries.get().checked_mul(entry);
    match length {
        Some(length) if offset >= HEADER_SIZE && offset.checked_add(length) == Some(at) => {
            Ok((offset, length, trailer.toc_checksum.get()))
        }
        _ => Err(file_error(
            at,
            StoreErrorKind::Toc("trailer points outside the file"),
        )),
    }
}

/// Reads the table of contents (`bytes`, at `offset`, with `expected` checksum) into a layout,
/// checking that sections lie between the header and the table, in order, and that every
/// table block belongs to a binary. Sections of unknown kinds are skipped.
pub fn parse_toc(bytes: &[u8], offset: u64, expected: u64) -> Result<Layout, StoreError> {
    if checksum(bytes) != expected {
        return Err(file_error(offset, StoreErrorKind::Checksum));
    }
    let entries = <[TocEntry]>::ref_from_bytes(bytes)
        .map_err(|_| file_error(offset, StoreErrorKind::Toc("size")))?;
    let mut layout = Layout::default();
    let mut next_free = HEADER_SIZE;
    for (i, e) in entries.iter().enumerate() {
        let at = offset + (i * std::mem::size_of::<TocEntry>()) as u64;
        let bad = |why| file_error(at, StoreErrorKind::Toc(why));
        let (start, length) = (e.offset.get(), e.length.get());
        let end = start
            .checked_add(length)
            .ok_or_else(|| bad("section end"))?;
        if start < next_free || end > offset {
            return Err(bad("sections overlap or lie outside the data"));
        }
        next_free = end;
        let Some(kind) = SectionKind::from_code(e.kind.get()) else {
            continue;
        };
        let mut section = Section {
            kind,
            binary: e.binary.get(),
            block: 0,
            offset: start,
            length,
            rows: e.rows.get(),
            checksum: e.checksum.get(),
            first_key: e.first_key.map(|k| k.get()),
        };
        match kind {
            SectionKind::Meta if section.binary == NO_BINARY && layout.meta.is_none() => {
                layout.meta = Some(section)
            }
            SectionKind::Meta => return Err(bad("a second or misplaced meta section")),
            SectionKind::Binary if section.binary as usize == layout.binaries.len() => {
                layout.binaries.push(BinaryLayout {
                    meta: section,
                    tables: Default::default(),
                })
            }
            SectionKind::Binary => return Err(bad("binary sections out of order")),
            _ => {
                let table = kind.table_index().ok_or_else(|| bad("kind"))?;
                let binary = layout
                    .binaries
                    .get_mut(section.binary as usize)
                    .ok_or_else(|| bad("a table block before its binary"))?;
                if section.rows == 0 {
                    return Err(bad("an empty table block"));
                }
                let blocks = &mut binary.tables[table];
                section.block = blocks.len() as u32;
                if blocks
                    .last()
                    .is_some_and(|b| b.first_key > section.first_key)
                {
                    return Err(bad("table blocks out of key order"));
                }
                blocks.push(section);
            }
        }
    }
    Ok(layout)
}

fn read_bytes<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], ReadError> {
    let len = r.uleb128()?;
    r.take(usize::try_from(len).unwrap_or(usize::MAX))
}

fn read_string(r: &mut Reader<'_>, s: &Section) -> Result<String, StoreError> {
    let at = r.offset();
    let bytes = read_bytes(r).map_err(|e| s.read_error(e))?;
    String::from_utf8(bytes.to_vec()).map_err(|_| s.error(at, StoreErrorKind::Utf8))
}

fn read_count(r: &mut Reader<'_>, s: &Section) -> Result<u64, StoreError> {
    r.uleb128().map_err(|e| s.read_error(e))
}

/// A list length, bounded by the bytes left (each element takes at least one).
fn read_len(r: &mut Reader<'_>, s: &Section) -> Result<usize, StoreError> {
    let at = r.offset();
    let n = read_count(r, s)?;
    if n > r.len() as u64 {
        return Err(s.error(at, StoreErrorKind::Toc("a list longer than its section")));
    }
    Ok(n as usize)
}

fn expect_end(r: &Reader<'_>, s: &Section) -> Result<(), StoreError> {
    match r.is_empty() {
        true => Ok(()),
        false => Err(s.error(
            r.offset(),
            StoreErrorKind::Toc("bytes after the section's end"),
        )),
    }
}

/// Decodes the file-level metadata from its section's `bytes`.
pub fn parse_meta(bytes: &[u8], s: &Section) -> Result<StoreMeta, StoreError> {
    s.verify(bytes)?;
    let mut r = s.reader(bytes);
    let captures = read_count(&mut r, s)?;
    let hosts = (0..read_len(&mut r, s)?)
        .map(|_| read_string(&mut r, s))
        .collect::<Result<Vec<_>, _>>()?;
    expect_end(&r, s)?;
    if !hosts.windows(2).all(|w| w[0] < w[1]) {
        return Err(s.error(s.offset, StoreErrorKind::Unsorted));
    }
    Ok(StoreMeta { captures, hosts })
}

/// Decodes a binary's metadata from its section's `bytes`.
pub fn parse_binary_meta(bytes: &[u8], s: &Section) -> Result<BinaryMeta, StoreError> {
    s.verify(bytes)?;
    let mut r = s.reader(bytes);
    let build_id = read_bytes(&mut r).map_err(|e| s.read_error(e))?.to_vec();
    let name = read_bytes(&mut r).map_err(|e| s.read_error(e))?.to_vec();
    let samples = read_count(&mut r, s)?;
    let processes = read_count(&mut r, s)?;
    let events = (0..read_len(&mut r, s)?)
        .map(|_| read_string(&mut r, s))
        .collect::<Result<Vec<_>, _>>()?;
    expect_end(&r, s)?;
    if !events.windows(2).all(|w| w[0] < w[1]) {
        return Err(s.error(s.offset, StoreErrorKind::Unsorted));
    }
    Ok(BinaryMeta {
        build_id,
        name,
        events,
        samples,
        processes,
    })
}

/// Where decoding of one table block stands, apart from the block's bytes (which the caller
/// keeps and passes to every call): a reader that holds one block of each of many inputs at a
/// time — the store merge — owns the bytes itself. The checksum is verified when it starts.
#[derive(Clone, Debug)]
pub struct BlockCursor<R: Row> {
    section: Section,
    /// Bytes decoded so far.
    pos: usize,
    prev: Option<R>,
    left: u64,
}

impl<R: Row> BlockCursor<R> {
    /// The start of block `s`, whose bytes are `bytes` (checked against its length and
    /// checksum).
    pub fn new(bytes: &[u8], s: &Section) -> Result<BlockCursor<R>, StoreError> {
        if s.kind != R::KIND {
            return Err(s.error(s.offset, StoreErrorKind::Toc("section kind")));
        }
        s.verify(bytes)?;
        Ok(BlockCursor {
            section: *s,
            pos: 0,
            prev: None,
            left: s.rows,
        })
    }

    /// The start of block `s`, its checksum not checked (tests decode damaged blocks).
    #[cfg(test)]
    pub(crate) fn new_unchecked(s: &Section) -> BlockCursor<R> {
        BlockCursor {
            section: *s,
            pos: 0,
            prev: None,
            left: s.rows,
        }
    }

    /// The block.
    pub fn section(&self) -> &Section {
        &self.section
    }

    /// The index in the block's bytes of the next row.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The file offset of the next row.
    pub fn offset(&self) -> u64 {
        self.section.offset + self.pos as u64
    }

    /// The next row of the block whose bytes are `bytes` (the same on every call), or `None`
    /// after the last one (having checked that the block ends there).
    #[inline]
    pub fn next_row(&mut self, bytes: &[u8]) -> Result<Option<R>, StoreError> {
        let rest = bytes.get(self.pos..).unwrap_or_default();
        if self.left == 0 {
            return match rest.is_empty() {
                true => Ok(None),
                false => Err(self.section.error(self.offset(), StoreErrorKind::RowCount)),
            };
        }
        let at = self.offset();
        let mut reader = Reader::at(rest, Endian::Little, at);
        let prev = self.prev.unwrap_or_default();
        let row = R::decode(&prev, &mut reader).map_err(|e| match e.kind {
            crate::bytes::ReadErrorKind::UnexpectedEof => {
                self.section.error(e.offset, StoreErrorKind::RowCount)
            }
            _ => self.section.read_error(e),
        })?;
        if self
            .prev
            .is_some_and(|p| p.key_cmp(&row) != std::cmp::Ordering::Less)
        {
            return Err(self.section.error(at, StoreErrorKind::Unsorted));
        }
        self.pos += (reader.offset() - at) as usize;
        self.prev = Some(row);
        self.left -= 1;
        Ok(Some(row))
    }

    /// Decodes the next rows of the block whose bytes are `bytes` (the same on every call),
    /// handing each to `take` while `below` holds for it; returns the first row for which it
    /// does not (decoded and consumed: the caller keeps it), or `None` when the block is done
    /// (having checked that it ends there).
    #[inline]
    pub fn rows_while(
        &mut self,
        bytes: &[u8],
        below: impl Fn(&R) -> bool,
        mut take: impl FnMut(R),
    ) -> Result<Option<R>, StoreError> {
        let mut u = BlockUleb::new(bytes, self.pos);
        let mut left = self.left;
        // The block's first row follows nothing; every later one follows `prev`. The loop
        // carries the previous row itself, not an `Option` of it, in locals (not in `self`),
        // and takes rows at one place only, so that `take` is inlined.
        let (mut prev, mut first) = match self.prev {
            Some(prev) => (prev, None),
            None if left == 0 => {
                // An empty block.
                return match self.pos == bytes.len() {
                    true => Ok(None),
                    false => Err(self.section.error(self.offset(), StoreErrorKind::RowCount)),
                };
            }
            None => {
                let row = self.decode_after(bytes, &mut u, None)?;
                left -= 1;
                (row, Some(row))
            }
        };
        let mut stop = None;
        loop {
            let row = match first.take() {
                Some(row) => row,
                None if left == 0 => break,
                None => {
                    let at = u.pos;
                    let row = match R::decode_from(&prev, &mut u) {
                        Some(row) if prev.key_cmp(&row).is_lt() => row,
                        _ => return Err(self.bad_row(bytes, at, prev)),
                    };
                    prev = row;
                    left -= 1;
                    row
                }
            };
            if !below(&row) {
                stop = Some(row);
                break;
            }
            take(row);
        }
        self.left = left;
        self.pos = u.pos;
        self.prev = Some(prev);
        if left == 0 && self.pos != bytes.len() {
            return Err(self.section.error(self.offset(), StoreErrorKind::RowCount));
        }
        Ok(stop)
    }

    /// The error of the row at byte `at`, which follows `prev` but could not be read or does
    /// not follow it.
    #[cold]
    fn bad_row(&self, bytes: &[u8], at: usize, prev: R) -> StoreError {
        let mut u = BlockUleb::new(bytes, at);
        match self.decode_after(bytes, &mut u, Some(prev)) {
            Err(e) => e,
            // Not reached: the fast loop found this row unreadable or out of order.
            Ok(_) => self
                .section
                .error(self.section.offset + at as u64, StoreErrorKind::Unsorted),
        }
    }

    /// The row after `prev` at `u`'s position, checked to follow it.
    #[inline(always)]
    fn decode_after(
        &self,
        bytes: &[u8],
        u: &mut BlockUleb<'_>,
        prev: Option<R>,
    ) -> Result<R, StoreError> {
        let at = u.pos;
        let Some(row) = R::decode_from(&prev.unwrap_or_default(), u) else {
            return Err(self.row_error(bytes, at, prev));
        };
        if prev.is_some_and(|p| !p.key_cmp(&row).is_lt()) {
            let offset = self.section.offset + at as u64;
            return Err(self.section.error(offset, StoreErrorKind::Unsorted));
        }
        Ok(row)
    }

    /// The last row decoded, if any.
    pub fn last_row(&self) -> Option<&R> {
        self.prev.as_ref()
    }

    /// The error of the row at byte `at` of the block, which the fast decoder could not read:
    /// decoded again by a [`Reader`], which says why.
    #[cold]
    fn row_error(&self, bytes: &[u8], at: usize, prev: Option<R>) -> StoreError {
        let offset = self.section.offset + at as u64;
        let rest = bytes.get(at..).unwrap_or_default();
        let mut reader = Reader::at(rest, Endian::Little, offset);
        match R::decode(&prev.unwrap_or_default(), &mut reader) {
            Err(e) if e.kind == crate::bytes::ReadErrorKind::UnexpectedEof => {
                self.section.error(e.offset, StoreErrorKind::RowCount)
            }
            Err(e) => self.section.read_error(e),
            Ok(_) => self.section.error(offset, StoreErrorKind::RowCount),
        }
    }

    /// Appends up to `max` of the next rows of the block whose bytes are `bytes` (the same on
    /// every call) to `out`; returns whether rows are left (having checked, when none are,
    /// that the block ends there).
    #[inline]
    pub fn next_rows(
        &mut self,
        bytes: &[u8],
        out: &mut Vec<R>,
        max: usize,
    ) -> Result<bool, StoreError> {
        let n = self.left.min(max as u64) as usize;
        out.reserve(n);
        let mut u = BlockUleb::new(bytes, self.pos);
        let mut prev = self.prev;
        for _ in 0..n {
            let row = self.decode_after(bytes, &mut u, prev)?;
            prev = Some(row);
            out.push(row);
        }
        self.pos = u.pos;
        self.prev = prev;
        self.left -= n as u64;
        if self.left == 0 && self.pos != bytes.len() {
            return Err(self.section.error(self.offset(), StoreErrorKind::RowCount));
        }
        Ok(self.left > 0)
    }
}

/// The rows of one table block, decoded as they are iterated; the checksum is verified
/// before the first.
pub struct BlockRows<'a, R: Row> {
    bytes: &'a [u8],
    cursor: BlockCursor<R>,
}

impl<'a, R: Row> BlockRows<'a, R> {
    /// The rows of block `s`, whose bytes are `bytes`.
    pub fn new(bytes: &'a [u8], s: &Section) -> Result<BlockRows<'a, R>, StoreError> {
        Ok(BlockRows {
            bytes,
            cursor: BlockCursor::new(bytes, s)?,
        })
    }

    /// The next row, or `None` after the last one (having checked that the block ends there).
    #[inline]
    pub fn next_row(&mut self) -> Result<Option<R>, StoreError> {
        self.cursor.next_row(self.bytes)
    }
}

impl<R: Row> Iterator for BlockRows<'_, R> {
    type Item = Result<R, StoreError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_row().transpose()
    }
}

/// A store's metadata and layout — everything but its table blocks — read a part at a time,
/// so that a caller can keep a file closed or unmapped and read its blocks one by one.
#[derive(Clone, Debug)]
pub struct StoreIndex {
    meta: StoreMeta,
    binaries: Vec<(BinaryMeta, BinaryLayout)>,
}

impl StoreIndex {
    /// Reads and checks the header, trailer, table of contents and metadata of a store of `len`
    /// bytes through `read_at(offset, length)`, which returns those bytes of the file (the
    /// offsets asked for always lie inside `len`).
    pub fn read<B, E>(
        len: u64,
        mut read_at: impl FnMut(u64, usize) -> Result<B, E>,
    ) -> Result<StoreIndex, E>
    where
        B: AsRef<[u8]>,
        E: From<StoreError>,
    {
        let edge = len.min(HEADER_SIZE) as usize;
        parse_header(read_at(0, edge)?.as_ref())?;
        let tail_at = len.saturating_sub(TRAILER_SIZE);
        let tail = read_at(tail_at, len.min(TRAILER_SIZE) as usize)?;
        let (toc_offset, toc_len, toc_sum) = parse_trailer(tail.as_ref(), len)?;
        let layout = {
            let toc = read_at(toc_offset, toc_len as usize)?;
            parse_toc(toc.as_ref(), toc_offset, toc_sum)?
        };
        let mut section = |s: &Section| read_at(s.offset, s.length as usize);
        let meta = match &layout.meta {
            Some(s) => parse_meta(section(s)?.as_ref(), s)?,
            None => StoreMeta::default(),
        };
        let mut binaries: Vec<(BinaryMeta, BinaryLayout)> = Vec::new();
        for b in layout.binaries {
            let meta = parse_binary_meta(section(&b.meta)?.as_ref(), &b.meta)?;
            if binaries
                .last()
                .is_some_and(|(m, _)| m.identity_cmp(&meta) != std::cmp::Ordering::Less)
            {
                return Err(b.meta.error(b.meta.offset, StoreErrorKind::Unsorted).into());
            }
            binaries.push((meta, b));
        }
        Ok(StoreIndex { meta, binaries })
    }

    /// The file-level metadata.
    pub fn meta(&self) -> &StoreMeta {
        &self.meta
    }

    /// The binaries, in store order, with where their tables are.
    pub fn binaries(&self) -> &[(BinaryMeta, BinaryLayout)] {
        &self.binaries
    }
}

/// A whole store in memory (mapped or read).
pub struct Store<'a> {
    data: &'a [u8],
    meta: StoreMeta,
    binaries: Vec<(BinaryMeta, BinaryLayout)>,
}

impl<'a> Store<'a> {
    /// Parses and checks the header, trailer, table of contents and metadata; table blocks are
    /// checked as they are read.
    pub fn parse(data: &'a [u8]) -> Result<Store<'a>, StoreError> {
        let index = StoreIndex::read(data.len() as u64, |offset, len| {
            // The index asks only for bytes inside the file.
            Ok::<_, StoreError>(
                data.get(offset as usize..)
                    .and_then(|d| d.get(..len))
                    .unwrap_or_default(),
            )
        })?;
        Ok(Store {
            data,
            meta: index.meta,
            binaries: index.binaries,
        })
    }

    /// The file-level metadata.
    pub fn meta(&self) -> &StoreMeta {
        &self.meta
    }

    /// The binaries, in store order, with where their tables are.
    pub fn binaries(&self) -> &[(BinaryMeta, BinaryLayout)] {
        &self.binaries
    }

    /// Every row of binary `binary`'s `R` table, in key order (checked across blocks too).
    pub fn rows<R: Row>(&self, binary: usize) -> TableRows<'_, R> {
        let blocks = self
            .binaries
            .get(binary)
            .map_or(&[][..], |(_, l)| l.blocks(R::KIND));
        TableRows {
            data: self.data,
            blocks: blocks.iter(),
            current: None,
            prev: None,
            failed: false,
        }
    }

    /// Decodes every row of table block `s` (one of [`BinaryLayout::blocks`]) into `out`, its
    /// checksum and order checked, by the bulk decoder, with `scratch` as room for them: blocks
    /// decode alone, so a reader can decode a table's blocks in parallel into one array (see
    /// [`zeroed_rows`]); [`Store::check_joined`] then checks where they join, and the two give
    /// what [`Store::rows`] gives, errors included. `out` must hold the block's rows exactly
    /// (its table of contents' row count); `RowCount` where it does not.
    pub fn block_rows_into<R: Row>(
        &self,
        s: &Section,
        scratch: &mut Vec<R>,
        out: &mut [R],
    ) -> Result<(), StoreError> {
        let bytes = section_bytes(self.data, s);
        let mut cursor = BlockCursor::<R>::new(bytes, s)?;
        scratch.clear();
        // Never more than `out` holds (nor than a corrupt row count asks for); rows past it
        // are then left over, a row count error.
        while scratch.len() < out.len()
            && cursor.next_rows(bytes, scratch, out.len() - scratch.len())?
        {}
        let whole = cursor.left == 0 && cursor.pos == bytes.len();
        match out.len() == scratch.len() && whole {
            true => {
                out.copy_from_slice(scratch);
                Ok(())
            }
            false => Err(s.error(cursor.offset(), StoreErrorKind::RowCount)),
        }
    }

    /// Checks that the first row of table block `s` follows `last`, the last row of the
    /// table's block before it; the error is the one [`Store::rows`] gives where it does not.
    /// A first row that cannot be read passes: the block's own error says why.
    fn check_follows<R: Row>(&self, s: &Section, last: &R) -> Result<(), StoreError> {
        let bytes = section_bytes(self.data, s);
        let mut cursor = BlockCursor::<R>::new(bytes, s)?;
        match cursor.next_row(bytes) {
            // [`Store::rows`] names the offset after the row.
            Ok(Some(first)) if last.key_cmp(&first) != Ordering::Less => {
                Err(s.error(cursor.offset(), StoreErrorKind::Unsorted))
            }
            _ => Ok(()),
        }
    }

    /// Where a table's `blocks` were decoded apart by [`Store::block_rows_into`] into one
    /// array `rows` (block after block, each [`Section::row_room`] rows long), `results`
    /// being theirs in block order: the first error of the table, as [`Store::rows`] finds it
    /// reading row by row, where a block meets the rows before it (unless it follows them),
    /// then inside it.
    pub fn check_joined<R: Row>(
        &self,
        blocks: &[Section],
        results: impl IntoIterator<Item = Result<(), StoreError>>,
        rows: &[R],
    ) -> Result<(), StoreError> {
        let mut end: usize = 0;
        for (s, result) in blocks.iter().zip(results) {
            let n = s.row_room();
            if let Some(last) = end.checked_sub(1).and_then(|i| rows.get(i)) {
                let follows = n == 0 || rows.get(end).is_some_and(|f| last.key_cmp(f).is_lt());
                if result.is_err() || !follows {
                    self.check_follows(s, last)?;
                }
            }
            result?;
            end += n;
        }
        Ok(())
    }

    /// The store's content written again by this crate's writer: a store this crate wrote
    /// comes back byte for byte; any other valid store comes back in the canonical layout
    /// (blocks of [`super::ROWS_PER_BLOCK`] rows, unknown sections dropped).
    pub fn rewrite(&self) -> Result<Vec<u8>, StoreError> {
        let refused = |_: std::io::Error| StoreError {
            offset: 0,
            section: None,
            kind: StoreErrorKind::Unsorted,
        };
        let mut w = super::StoreWriter::new(Vec::new()).map_err(refused)?;
        w.meta(&self.meta).map_err(refused)?;
        for (i, (meta, _)) in self.binaries.iter().enumerate() {
            let b = w.binary(meta).map_err(refused)?;
            self.copy_table::<super::TraceRow>(&mut w, i, b)?;
            self.copy_table::<super::BranchRow>(&mut w, i, b)?;
            self.copy_table::<super::IpRow>(&mut w, i, b)?;
            self.copy_table::<super::MemRow>(&mut w, i, b)?;
            self.copy_table::<super::ReturnRow>(&mut w, i, b)?;
        }
        w.finish().map_err(refused)
    }

    fn copy_table<R: Row>(
        &self,
        w: &mut super::StoreWriter<Vec<u8>>,
        from: usize,
        to: u32,
    ) -> Result<(), StoreError> {
        let mut rows = self.rows::<R>(from).peekable();
        if rows.peek().is_none() {
            return Ok(());
        }
        let refused = |_: std::io::Error| StoreError {
            offset: 0,
            section: Some((R::KIND, to, 0)),
            kind: StoreErrorKind::Unsorted,
        };
        let mut t = w.table::<R>(to).map_err(refused)?;
        for row in rows {
            t.push(&row?).map_err(refused)?;
        }
        t.finish().map_err(refused)
    }
}

/// The rows of one table, block after block, decoded as they are read.
pub struct TableRows<'a, R: Row> {
    data: &'a [u8],
    blocks: std::slice::Iter<'a, Section>,
    current: Option<BlockRows<'a, R>>,
    prev: Option<R>,
    failed: bool,
}

impl<R: Row> TableRows<'_, R> {
    /// The next row; `None` after the last (or after an error).
    #[inline]
    pub fn next_row(&mut self) -> Result<Option<R>, StoreError> {
        loop {
            if self.failed {
                return Ok(None);
            }
            let Some(block) = &mut self.current else {
                let Some(&s) = self.blocks.next() else {
                    return Ok(None);
                };
                match BlockRows::new(section_bytes(self.data, &s), &s) {
                    Ok(rows) => self.current = Some(rows),
                    Err(e) => return self.fail(e),
                }
                continue;
            };
            match block.next_row() {
                Ok(Some(row)) => {
                    if self.prev.is_some_and(|p| p.key_cmp(&row) != Ordering::Less) {
                        let e = block
                            .cursor
                            .section
                            .error(block.cursor.offset(), StoreErrorKind::Unsorted);
                        return self.fail(e);
                    }
                    self.prev = Some(row);
                    return Ok(Some(row));
                }
                Ok(None) => self.current = None,
                Err(e) => return self.fail(e),
            }
        }
    }

    fn fail(&mut self, e: StoreError) -> Result<Option<R>, StoreError> {
        self.failed = true;
        Err(e)
    }
}

impl<R: Row> Iterator for TableRows<'_, R> {
    type Item = Result<R, StoreError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_row().transpose()
    }
}

/// Room for every row of a table whose blocks are `blocks`, allocated zeroed: memory that the
/// system gives zeroed is then first touched by whoever writes the rows (threads decoding
/// blocks into it in parallel), not by a serial fill. `None` where the allocation fails.
pub fn zeroed_rows<R: Row>(blocks: &[Section]) -> Option<Vec<R>> {
    R::new_vec_zeroed(blocks.iter().map(Section::row_room).sum()).ok()
}

/// `rows` (from [`zeroed_rows`]) cut into each block's part, in block order, for
/// [`Store::block_rows_into`].
pub fn block_parts<'r, R>(blocks: &[Section], mut rows: &'r mut [R]) -> Vec<&'r mut [R]> {
    let mut parts = Vec::with_capacity(blocks.len());
    for s in blocks {
        let (part, rest) = rows.split_at_mut(s.row_room().min(rows.len()));
        parts.push(part);
        rows = rest;
    }
    parts
}

/// The bytes of section `s` (the table of contents has checked that they lie in `data`).
fn section_bytes<'a>(data: &'a [u8], s: &Section) -> &'a [u8] {
    data.get(s.offset as usize..(s.offset + s.length) as usize)
        .unwrap_or(&[])
}
