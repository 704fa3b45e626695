//! What another block layout would give the profile store, measured on real stores before
//! changing the format (`docs/store.md`, PERF.md "issue 17"): the trace tables' bytes per row
//! and single-thread decode speed of
//!
//! * the store's own blocks (LEB128 deltas, decoded by `BlockCursor::next_rows`, checksum and
//!   order checks included, as `merge` decodes them), against
//! * the same column values (the deltas the store encodes) packed per block and column as
//!   frame of reference with exceptions ("PFOR": one bit width per column, the values wider
//!   than it patched from a list of positions and high bits), decoded by a prototype here.
//!
//! * the same values row by row with byte lengths ("byte-length rows": a 2-byte control word of
//!   one 3-bit length code per value, 0–6 bytes or 8, then each value's little-endian bytes),
//!   decoded by a prototype here with the same order check as the store's decoder.
//!
//! Also the sizes of plain bit-packing per mini-block (a width per 32, 128 or all rows). The
//! prototypes are measurements, not formats: the PFOR one skips every check a reader must
//! make, and neither bounds-checks a row against the block's end (their buffers have slack).
//!
//! usage: store_block_encodings STORE|DIR...

use std::path::PathBuf;
use std::time::Instant;

use formats::bytes::{Endian, Reader};
use formats::store::{BlockCursor, BlockRows, Row, Section, SectionKind, Store, TraceRow, Uleb};

/// Values per trace row.
const COLUMNS: usize = 5;

fn bit_length(v: u64) -> u64 {
    u64::from(64 - v.leading_zeros())
}

/// The column values of a block's `rows` rows: the block's own LEB128 values, `COLUMNS` per
/// row (`docs/store.md`, "Rows"), taken apart by column.
fn block_columns(bytes: &[u8], rows: usize) -> Vec<Vec<u64>> {
    let mut reader = Reader::new(bytes, Endian::Little);
    let mut columns = vec![Vec::new(); COLUMNS];
    for i in 0..rows * COLUMNS {
        columns[i % COLUMNS].push(reader.uleb128().expect("a checked block"));
    }
    assert!(reader.is_empty(), "{rows} rows fill the block");
    columns
}

/// One row's values, decoded by a prototype, handed one by one to [`Row::decode_from`]: the
/// values and the index of the next.
struct RowValues([u64; COLUMNS], usize);

impl Uleb for RowValues {
    #[inline(always)]
    fn uleb(&mut self) -> Option<u64> {
        let v = *self.0.get(self.1)?;
        self.1 += 1;
        Some(v)
    }
}

/// One column of one block as frame of reference with exceptions.
struct PackedColumn {
    width: u32,
    /// The low `width` bits of every value, LSB first, with 8 bytes of slack at the end.
    lows: Vec<u8>,
    /// Rows whose value is wider than `width`, and the bits above it.
    exceptions: Vec<(u16, u64)>,
}

impl PackedColumn {
    /// The width that minimises rows × width + exceptions × (12-bit position + high bits).
    fn new(values: &[u64]) -> PackedColumn {
        let mut lengths = [0u64; 65];
        values
            .iter()
            .for_each(|&v| lengths[bit_length(v) as usize] += 1);
        let widest = (0..65).rev().find(|&w| lengths[w] > 0).unwrap_or(0) as u64;
        let (mut best, mut wider) = ((u64::MAX, 0), 0);
        for w in (0..=widest).rev() {
            let cost = values.len() as u64 * w + wider * (12 + widest - w);
            if cost <= best.0 {
                best = (cost, w);
            }
            wider += lengths[w as usize];
        }
        let width = best.1 as u32;
        let mut lows = vec![0u8; (values.len() * width as usize).div_ceil(8) + 16];
        let mut exceptions = Vec::new();
        let mask = low_mask(width);
        for (i, &v) in values.iter().enumerate() {
            let bit = i * width as usize;
            let at = bit / 8;
            let word = u128::from_le_bytes(lows[at..at + 16].try_into().expect("16 bytes"));
            let word = word | u128::from(v & mask) << (bit % 8);
            lows[at..at + 16].copy_from_slice(&word.to_le_bytes());
            if width < 64 && v >> width != 0 {
                exceptions.push((i as u16, v >> width));
            }
        }
        PackedColumn {
            width,
            lows,
            exceptions,
        }
    }

    /// Bytes on disk: a width byte, the low bits, two bytes per position, the high bits.
    fn bytes(&self, rows: usize) -> usize {
        let widest = self.exceptions.iter().map(|e| bit_length(e.1)).max();
        let highs = widest.map_or(0, |w| (self.exceptions.len() * w as usize).div_ceil(8));
        1 + (rows * self.width as usize).div_ceil(8) + 2 * self.exceptions.len() + highs
    }

    fn unpack(&self, out: &mut [u64]) {
        let (width, mask) = (self.width as usize, low_mask(self.width));
        for (i, o) in out.iter_mut().enumerate() {
            let bit = i * width;
            let at = bit / 8;
            let word = u128::from_le_bytes(self.lows[at..at + 16].try_into().expect("16 bytes"));
            *o = (word >> (bit % 8)) as u64 & mask;
        }
        for &(row, high) in &self.exceptions {
            out[row as usize] |= high << width;
        }
    }
}

fn low_mask(width: u32) -> u64 {
    match width {
        64 => u64::MAX,
        w => (1 << w) - 1,
    }
}

/// Bytes of `values` bit-packed with one width per `group` values (a width byte each).
fn grouped_bytes(values: &[u64], group: usize) -> usize {
    (values.chunks(group))
        .map(|c| {
            1 + (c.len() * c.iter().map(|&v| bit_length(v)).max().unwrap_or(0) as usize).div_ceil(8)
        })
        .sum()
}

struct Block {
    bytes: Vec<u8>,
    section: Section,
    packed: Vec<PackedColumn>,
    /// The rows as byte-length rows, and [`ROW_SLACK`] zero bytes.
    byte_rows: Vec<u8>,
    rows: usize,
}

/// Bytes from a byte-length row's start that its encoding and decoding touch: the longest row
/// (2 + 5 × 8 bytes) and 8 more, since every value is stored and loaded as 8 bytes.
const ROW_SLACK: usize = 2 + 5 * 8 + 8;

/// A value's 3-bit length code and its byte length: 0 to 6 bytes as themselves, 7 for 8 bytes.
fn length_code(v: u64) -> (u64, usize) {
    match (64 - v.leading_zeros() as usize).div_ceil(8) {
        n @ 0..=6 => (n as u64, n),
        _ => (7, 8),
    }
}

/// Appends `values`, `COLUMNS` per row, as byte-length rows.
fn encode_byte_rows(values: &[u64], out: &mut Vec<u8>) {
    for row in values.chunks(COLUMNS) {
        let mut bytes = [0u8; ROW_SLACK];
        let (mut control, mut end) = (0u64, 2);
        for (j, &v) in row.iter().enumerate() {
            let (code, length) = length_code(v);
            control |= code << (3 * j);
            bytes[end..end + 8].copy_from_slice(&v.to_le_bytes());
            end += length;
        }
        bytes[..2].copy_from_slice(&(control as u16).to_le_bytes());
        out.extend_from_slice(&bytes[..end]);
    }
}

/// Decodes `rows` byte-length rows of `bytes` into `out`, checking their order; `None` if a
/// row does not follow the one before.
#[inline(always)]
fn decode_byte_rows(bytes: &[u8], rows: usize, out: &mut Vec<TraceRow>) -> Option<()> {
    let (mut at, mut prev) = (0, TraceRow::default());
    for i in 0..rows {
        let window = bytes.get(at..at + ROW_SLACK)?;
        let control = u64::from(u16::from_le_bytes([window[0], window[1]]));
        let (mut values, mut end) = ([0u64; COLUMNS], 2);
        for (j, value) in values.iter_mut().enumerate() {
            let code = (control >> (3 * j)) & 7;
            let length = (code + (code >> 2 & code >> 1 & code & 1)) as usize;
            let word = u64::from_le_bytes(window[end..end + 8].try_into().ok()?);
            *value = word & ((1u128 << (8 * length)) - 1) as u64;
            end += length;
        }
        at += end;
        let row = TraceRow::decode_from(&prev, &mut RowValues(values, 0))?;
        if i > 0 && !prev.key_cmp(&row).is_lt() {
            return None;
        }
        out.push(row);
        prev = row;
    }
    Some(())
}

/// Seconds to decode every block from its byte-length rows (checksum included), and a digest
/// of the rows.
fn time_byte_rows_decode(blocks: &[Block]) -> (f64, u64) {
    let start = Instant::now();
    let (mut digest, mut out) = (0u64, Vec::with_capacity(4096));
    for b in blocks {
        out.clear();
        std::hint::black_box(formats::store::checksum(&b.byte_rows));
        decode_byte_rows(&b.byte_rows, b.rows, &mut out).expect("rows in order");
        digest = out
            .iter()
            .fold(digest, |d, r| d.wrapping_add(r.to ^ r.count));
    }
    (start.elapsed().as_secs_f64(), digest)
}

fn stores(args: impl Iterator<Item = String>) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for arg in args.map(PathBuf::from) {
        match std::fs::read_dir(&arg) {
            Ok(dir) => paths.extend(dir.filter_map(|e| Some(e.ok()?.path()))),
            Err(_) => paths.push(arg),
        }
    }
    paths.sort();
    paths
}

fn main() {
    let paths = stores(std::env::args().skip(1));
    if paths.is_empty() {
        eprintln!("usage: store_block_encodings STORE|DIR...");
        std::process::exit(2);
    }
    let mut blocks = Vec::new();
    let (mut rows, mut store_bytes, mut pfor_bytes, mut byte_rows_bytes) = (0, 0, 0, 0);
    let mut grouped = [0usize; 3];
    for path in &paths {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let store = Store::parse(&data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for (_, layout) in store.binaries() {
            for s in layout.blocks(SectionKind::Traces) {
                let bytes = data[s.offset as usize..(s.offset + s.length) as usize].to_vec();
                let decoded: Vec<TraceRow> = BlockRows::new(&bytes, s)
                    .and_then(|r| r.collect())
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let columns = block_columns(&bytes, decoded.len());
                let packed: Vec<PackedColumn> =
                    columns.iter().map(|c| PackedColumn::new(c)).collect();
                pfor_bytes += packed.iter().map(|c| c.bytes(decoded.len())).sum::<usize>();
                for (g, size) in [32, 128, usize::MAX].into_iter().enumerate() {
                    grouped[g] += columns
                        .iter()
                        .map(|c| grouped_bytes(c, size))
                        .sum::<usize>();
                }
                let row_major: Vec<u64> = (0..decoded.len())
                    .flat_map(|r| columns.iter().map(move |c| c[r]))
                    .collect();
                let mut byte_rows = Vec::new();
                encode_byte_rows(&row_major, &mut byte_rows);
                byte_rows_bytes += byte_rows.len();
                byte_rows.extend_from_slice(&[0; ROW_SLACK]);
                rows += decoded.len();
                store_bytes += bytes.len();
                blocks.push(Block {
                    bytes,
                    section: *s,
                    packed,
                    byte_rows,
                    rows: decoded.len(),
                });
            }
        }
    }
    let per_row = |b: usize| b as f64 / rows.max(1) as f64;
    println!(
        "{} stores, {} trace blocks, {rows} rows",
        paths.len(),
        blocks.len()
    );
    println!(
        "bytes per row: store (LEB128) {:.2}, PFOR per block column {:.2}, byte-length rows \
         {:.2}, bit-packed per 32 rows {:.2}, per 128 rows {:.2}, per block {:.2}",
        per_row(store_bytes),
        per_row(pfor_bytes),
        per_row(byte_rows_bytes),
        per_row(grouped[0]),
        per_row(grouped[1]),
        per_row(grouped[2]),
    );
    // The same number of blocks, but only the first few, again and again: their bytes and
    // rows stay in the L2 cache, so this is the decoder's own cost, without memory waits.
    let cached = blocks.len().min(CACHED_BLOCKS);
    let cached_rows: usize = blocks[..cached].iter().map(|b| b.rows).sum();
    let cached_rows = cached_rows * (blocks.len() / cached.max(1));
    let cached = || {
        blocks[..cached]
            .iter()
            .cycle()
            .take(blocks.len() / cached.max(1) * cached)
    };
    for round in 1..=3 {
        let (leb, leb_sum) = time_store_decode(&blocks);
        let (pfor, pfor_sum) = time_pfor_decode(&blocks);
        let (byte_rows, byte_rows_sum) = time_byte_rows_decode(&blocks);
        assert_eq!(leb_sum, pfor_sum, "the decoders give the same rows");
        assert_eq!(leb_sum, byte_rows_sum, "the decoders give the same rows");
        let (hot, _) = time_store_decode(cached());
        println!(
            "round {round}: decode ns per row: store {:.1} ({:.1} with {CACHED_BLOCKS} blocks \
             in cache), PFOR prototype {:.1}, byte-length rows prototype {:.1}",
            leb * 1e9 / rows as f64,
            hot * 1e9 / cached_rows.max(1) as f64,
            pfor * 1e9 / rows as f64,
            byte_rows * 1e9 / rows as f64
        );
    }
}

/// Blocks decoded again and again for the decoder's speed in cache (8 blocks of at most 4,096
/// trace rows: about 200 KB of bytes, 160 KB of rows decoded).
const CACHED_BLOCKS: usize = 8;

/// Seconds to decode every block as `merge` does, and a digest of the rows.
fn time_store_decode<'b>(blocks: impl IntoIterator<Item = &'b Block>) -> (f64, u64) {
    let start = Instant::now();
    let (mut digest, mut out) = (0u64, Vec::with_capacity(4096));
    for b in blocks {
        out.clear();
        let mut cursor = BlockCursor::<TraceRow>::new(&b.bytes, &b.section).expect("checked");
        while cursor.next_rows(&b.bytes, &mut out, 64).expect("checked") {}
        digest = out
            .iter()
            .fold(digest, |d, r| d.wrapping_add(r.to ^ r.count));
    }
    (start.elapsed().as_secs_f64(), digest)
}

/// Seconds to decode every block from its PFOR columns, and a digest of the rows.
fn time_pfor_decode(blocks: &[Block]) -> (f64, u64) {
    let start = Instant::now();
    let mut columns = [[0u64; 4096]; COLUMNS];
    let (mut digest, mut out) = (0u64, Vec::with_capacity(4096));
    for b in blocks {
        for (c, packed) in b.packed.iter().enumerate() {
            packed.unpack(&mut columns[c][..b.rows]);
        }
        out.clear();
        let mut prev = TraceRow::default();
        let row_values = |row: usize| RowValues(std::array::from_fn(|c| columns[c][row]), 0);
        for row in 0..b.rows {
            prev = TraceRow::decode_from(&prev, &mut row_values(row)).expect("a row's values");
            out.push(prev);
        }
        digest = out
            .iter()
            .fold(digest, |d, r| d.wrapping_add(r.to ^ r.count));
    }
    (start.elapsed().as_secs_f64(), digest)
}
