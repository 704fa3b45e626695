//! The rows of the store's tables and their block encoding: rows sorted by key, each column
//! written as a LEB128 delta against the previous row of the block (a block starts from an
//! all-zero row, so every block decodes alone). All arithmetic wraps, so every `u64` value
//! round-trips, markers such as `u64::MAX` included.

use zerocopy::FromZeros;

use crate::bytes::{ReadError, ReadErrorKind, Reader};

use super::SectionKind;

/// A table row: a key (the columns before the counts) and counts that add up.
pub trait Row: Copy + Default + std::fmt::Debug + PartialEq + Eq + FromZeros {
    /// The section kind of this table's blocks.
    const KIND: SectionKind;
    /// The key's ordering; rows of a table are strictly increasing by it.
    fn key_cmp(&self, other: &Self) -> std::cmp::Ordering;
    /// The two leading key columns (the table of contents keeps a block's first, for seeking).
    fn leading_key(&self) -> [u64; 2];
    /// The whole key as three columns (unused ones 0), ordered as [`Row::key_cmp`] orders
    /// rows: for comparing, hashing and sorting keys without the counts.
    fn packed_key(&self) -> [u64; 3];
    /// Writes this row's encoding after `prev` at the start of `window`; returns its length
    /// (at most [`ROW_ROOM`]). The bytes after it are left as they were.
    fn encode(&self, prev: &Self, window: &mut [u8; ROW_WINDOW]) -> usize;
    /// Reads the row that follows `prev` from `u`; `None` where `u` fails.
    fn decode_from<U: Uleb>(prev: &Self, u: &mut U) -> Option<Self>;
    /// Reads the row that follows `prev`.
    fn decode(prev: &Self, r: &mut Reader<'_>) -> Result<Self, ReadError> {
        let mut u = ReaderUleb {
            r: &mut *r,
            error: None,
        };
        let row = Self::decode_from(prev, &mut u);
        let error = u.error;
        row.ok_or_else(|| error.unwrap_or_else(|| r.error(ReadErrorKind::UnexpectedEof)))
    }
    /// The row's counts (unused ones are 0).
    fn counts(&self) -> [u64; 2];
    /// Replaces the row's counts.
    fn set_counts(&mut self, counts: [u64; 2]);

    /// Adds `other`'s counts (same key) to this row's, saturating; returns false if a count
    /// saturated.
    fn add_counts(&mut self, other: &Self) -> bool {
        let (a, b) = (self.counts(), other.counts());
        let sums = [a[0].checked_add(b[0]), a[1].checked_add(b[1])];
        self.set_counts(sums.map(|s| s.unwrap_or(u64::MAX)));
        sums.iter().all(Option::is_some)
    }

    /// Multiplies the counts by `weight`, saturating; returns false if a count saturated.
    fn scale_counts(&mut self, weight: u64) -> bool {
        let products = self.counts().map(|c| c.checked_mul(weight));
        self.set_counts(products.map(|p| p.unwrap_or(u64::MAX)));
        products.iter().all(Option::is_some)
    }
}

/// A source of unsigned LEB128 values for the row decoders.
pub trait Uleb {
    /// The next value, or `None` (end of data, or a value past 64 bits).
    fn uleb(&mut self) -> Option<u64>;

    /// The next `N` values (a row's), or `None` where [`Uleb::uleb`] would fail.
    #[inline(always)]
    fn ulebs<const N: usize>(&mut self) -> Option<[u64; N]> {
        one_by_one(self)
    }
}

/// `N` values of `u`, read one at a time.
#[inline(always)]
fn one_by_one<U: Uleb + ?Sized, const N: usize>(u: &mut U) -> Option<[u64; N]> {
    let mut values = [0; N];
    for v in &mut values {
        *v = u.uleb()?;
    }
    Some(values)
}

/// A [`Reader`] as a [`Uleb`] source, keeping its error.
struct ReaderUleb<'r, 'a> {
    r: &'r mut Reader<'a>,
    error: Option<ReadError>,
}

impl Uleb for ReaderUleb<'_, '_> {
    #[inline(always)]
    fn uleb(&mut self) -> Option<u64> {
        self.r.uleb128().map_err(|e| self.error = Some(e)).ok()
    }
}

/// The fast source for decoding a block's rows in bulk: a position in the block's bytes and
/// no error details (a caller that gets `None` decodes again with a [`Reader`] for them).
/// Values are read exactly as [`Reader::uleb128`] reads them (longer ones by it).
pub struct BlockUleb<'a> {
    bytes: &'a [u8],
    /// The next byte's index.
    pub pos: usize,
}

impl<'a> BlockUleb<'a> {
    /// Reads `bytes` from index `pos`.
    pub fn new(bytes: &'a [u8], pos: usize) -> Self {
        BlockUleb { bytes, pos }
    }
}

// The slow paths are functions of the bytes and a position, returning the position after the
// value, rather than methods of `&mut BlockUleb`: a decoder whose address reaches a call that
// is not inlined lives in memory, and then every value's position went through a store and a
// load (store-to-load forwarding on the chain from one value to the next). With the position
// in a register, decoding the trace rows of 50 generated partials took 25.5 ns a row instead of
// 31.1 (medians of 15 alternated runs; PERF.md).

/// A value of three to nine bytes at `pos`, with nine bytes at hand (else [`long_uleb`]), and
/// the position after it.
#[inline]
fn medium_uleb(bytes: &[u8], pos: usize) -> Option<(u64, usize)> {
    let Some(window) = bytes.get(pos..pos + 9) else {
        return long_uleb(bytes, pos);
    };
    let mut value = 0;
    for (i, &byte) in window.iter().enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Some((value, pos + i + 1));
        }
    }
    long_uleb(bytes, pos)
}

/// Any value at `pos`, read by [`Reader::uleb128`], and the position after it.
#[cold]
fn long_uleb(bytes: &[u8], pos: usize) -> Option<(u64, usize)> {
    let rest = bytes.get(pos..)?;
    let mut r = Reader::new(rest, crate::bytes::Endian::Little);
    let v = r.uleb128().ok()?;
    Some((v, pos + rest.len() - r.len()))
}

/// Bytes a row's values are read from, or written into, at once: more than its longest
/// encoding (five values of ten bytes), rounded up to a power of two so that an index masked
/// to it needs no check.
pub const ROW_WINDOW: usize = 64;

impl BlockUleb<'_> {
    /// A row's `N` values (at most six) from the [`ROW_WINDOW`] bytes at the position, or
    /// `None` (nothing consumed) where fewer bytes are left or a value is not one that
    /// [`Reader::uleb128`] reads in ten bytes or fewer.
    ///
    /// One bounds check a row instead of one (and an `Option`) a value, with the same branches
    /// on each value's length: the criterion decode benchmark 13.7 % faster, and the merge of
    /// 1,000 partials 0.57 → 0.53 s (PERF.md, fifteenth session).
    #[inline(always)]
    fn window_values<const N: usize>(&mut self) -> Option<[u64; N]> {
        // N values of at most ten bytes end inside the window: the masking below never wraps.
        const { assert!(N * 10 <= ROW_WINDOW) };
        let window = self.bytes.get(self.pos..)?.first_chunk::<ROW_WINDOW>()?;
        // Masking is a no-op (the values end within N × 10 bytes) that proves the index in
        // bounds to the compiler.
        let byte = |at: usize| u64::from(window[at & (ROW_WINDOW - 1)]);
        let mut at = 0;
        let mut values = [0; N];
        for v in &mut values {
            let b0 = byte(at);
            if b0 < 0x80 {
                *v = b0;
                at += 1;
                continue;
            }
            let b1 = byte(at + 1);
            if b1 < 0x80 {
                *v = (b0 & 0x7f) | b1 << 7;
                at += 2;
                continue;
            }
            // Three to ten bytes, read here rather than by `medium_uleb`, whose longer values
            // (padded ones included) would carry `at` past what the masking allows.
            let mut value = (b0 & 0x7f) | (b1 & 0x7f) << 7;
            let mut len = 2;
            loop {
                let b = byte(at + len);
                if len == 9 && b > 1 {
                    // A tenth byte holds bit 63 only, and ends the value (else the long way).
                    return None;
                }
                value |= (b & 0x7f) << (7 * len);
                len += 1;
                if b < 0x80 {
                    break;
                }
            }
            *v = value;
            at += len;
        }
        self.pos += at;
        Some(values)
    }
}

impl Uleb for BlockUleb<'_> {
    #[inline(always)]
    fn ulebs<const N: usize>(&mut self) -> Option<[u64; N]> {
        match self.window_values() {
            Some(values) => Some(values),
            // The block's last rows, and values read the long way.
            None => one_by_one(self),
        }
    }

    #[inline(always)]
    fn uleb(&mut self) -> Option<u64> {
        // Most values of delta-encoded rows fit one or two bytes.
        match self.bytes.get(self.pos..self.pos + 2) {
            Some(&[b0, _]) if b0 < 0x80 => {
                self.pos += 1;
                Some(u64::from(b0))
            }
            Some(&[b0, b1]) if b1 < 0x80 => {
                self.pos += 2;
                Some(u64::from(b0 & 0x7f) | u64::from(b1) << 7)
            }
            _ => {
                let (value, next) = medium_uleb(self.bytes, self.pos)?;
                self.pos = next;
                Some(value)
            }
        }
    }
}

/// One row's encoding, written into a [`ROW_WINDOW`]-byte window at the end of its block (the
/// block's writer keeps room for one past its last row). Each byte's index is masked to the
/// window, a no-op (a row takes at most [`ROW_ROOM`] bytes) that proves it in bounds: no check
/// per byte, and nothing to zero or cut off per row. Nothing is read back either: a row built
/// on the stack and then copied to the block in 16-byte loads waited on its byte stores,
/// which the CPU cannot forward to a wider load (40 % of the encoder's samples in a merge of
/// 1,000 partials).
struct RowBytes<'b> {
    bytes: &'b mut [u8; ROW_WINDOW],
    len: usize,
}

/// Bytes of the longest row: five values of at most ten bytes.
pub const ROW_ROOM: usize = 5 * 10;

impl<'b> RowBytes<'b> {
    #[inline(always)]
    fn new(bytes: &'b mut [u8; ROW_WINDOW]) -> Self {
        const { assert!(ROW_ROOM <= ROW_WINDOW) };
        RowBytes { bytes, len: 0 }
    }

    /// Appends the minimal unsigned LEB128 encoding of `v` (at most ten bytes; a row has at
    /// most five values).
    #[inline(always)]
    fn uleb(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.bytes[self.len & (ROW_WINDOW - 1)] = v as u8 | 0x80;
            self.len += 1;
            v >>= 7;
        }
        self.bytes[self.len & (ROW_WINDOW - 1)] = v as u8;
        self.len += 1;
    }
}

#[inline(always)]
fn zigzag(v: u64) -> u64 {
    let v = v as i64;
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline(always)]
fn unzigzag(v: u64) -> u64 {
    ((v >> 1) as i64 ^ -((v & 1) as i64)) as u64
}

/// Two leading key columns of a sorted table: the first as a delta from the previous row's;
/// the second as a delta too when the first repeats, else relative to the first (zigzag),
/// since a branch's target is usually near its source.
#[inline(always)]
fn encode_pair(out: &mut RowBytes, (a, b): (u64, u64), (prev_a, prev_b): (u64, u64)) {
    out.uleb(a.wrapping_sub(prev_a));
    if a == prev_a {
        out.uleb(b.wrapping_sub(prev_b));
    } else {
        out.uleb(zigzag(b.wrapping_sub(a)));
    }
}

/// The pair that [`encode_pair`] wrote as the values `[da, db]`.
#[inline(always)]
fn decode_pair([da, db]: [u64; 2], (prev_a, prev_b): (u64, u64)) -> (u64, u64) {
    let a = prev_a.wrapping_add(da);
    let b = if a == prev_a {
        prev_b.wrapping_add(db)
    } else {
        a.wrapping_add(unzigzag(db))
    };
    (a, b)
}

/// The taken and mispredicted counts.
#[inline(always)]
fn encode_counts(out: &mut RowBytes, [count, mispreds]: [u64; 2]) {
    out.uleb(count);
    out.uleb(mispreds);
}

/// An LBR trace: the branch `branch → from`, then the fall-through `from → to`, in the
/// binary's file-offset space (`0`: outside the binary; `to == u64::MAX`: no fall-through).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, FromZeros)]
pub struct TraceRow {
    /// The branch's source.
    pub branch: u64,
    /// The branch's target, where the fall-through starts.
    pub from: u64,
    /// Where the fall-through ends (the next branch's source).
    pub to: u64,
    /// Times taken.
    pub count: u64,
    /// Times mispredicted.
    pub mispreds: u64,
}

impl Row for TraceRow {
    const KIND: SectionKind = SectionKind::Traces;
    #[inline]
    fn key_cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.branch, self.from, self.to).cmp(&(o.branch, o.from, o.to))
    }
    #[inline]
    fn leading_key(&self) -> [u64; 2] {
        [self.branch, self.from]
    }
    #[inline(always)]
    fn packed_key(&self) -> [u64; 3] {
        [self.branch, self.from, self.to]
    }
    #[inline(always)]
    fn encode(&self, prev: &Self, window: &mut [u8; ROW_WINDOW]) -> usize {
        let mut out = RowBytes::new(window);
        encode_pair(&mut out, (self.branch, self.from), (prev.branch, prev.from));
        out.uleb(zigzag(self.to.wrapping_sub(self.from)));
        encode_counts(&mut out, self.counts());
        out.len
    }
    #[inline(always)]
    fn decode_from<U: Uleb>(prev: &Self, r: &mut U) -> Option<Self> {
        let [da, db, dto, count, mispreds] = r.ulebs()?;
        let (branch, from) = decode_pair([da, db], (prev.branch, prev.from));
        let to = from.wrapping_add(unzigzag(dto));
        Some(TraceRow {
            branch,
            from,
            to,
            count,
            mispreds,
        })
    }
    #[inline]
    fn counts(&self) -> [u64; 2] {
        [self.count, self.mispreds]
    }
    #[inline]
    fn set_counts(&mut self, [count, mispreds]: [u64; 2]) {
        (self.count, self.mispreds) = (count, mispreds);
    }
}

/// A branch known without its fall-through (pre-aggregated `B` records), in file offsets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, FromZeros)]
pub struct BranchRow {
    /// The branch's source (`0`: outside the binary).
    pub from: u64,
    /// The branch's target (`0`: outside the binary).
    pub to: u64,
    /// Times taken.
    pub count: u64,
    /// Times mispredicted.
    pub mispreds: u64,
}

impl Row for BranchRow {
    const KIND: SectionKind = SectionKind::Branches;
    #[inline]
    fn key_cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.from, self.to).cmp(&(o.from, o.to))
    }
    #[inline]
    fn leading_key(&self) -> [u64; 2] {
        [self.from, self.to]
    }
    #[inline(always)]
    fn packed_key(&self) -> [u64; 3] {
        [self.from, self.to, 0]
    }
    #[inline(always)]
    fn encode(&self, prev: &Self, window: &mut [u8; ROW_WINDOW]) -> usize {
        let mut out = RowBytes::new(window);
        encode_pair(&mut out, (self.from, self.to), (prev.from, prev.to));
        encode_counts(&mut out, self.counts());
        out.len
    }
    #[inline(always)]
    fn decode_from<U: Uleb>(prev: &Self, r: &mut U) -> Option<Self> {
        let [da, db, count, mispreds] = r.ulebs()?;
        let (from, to) = decode_pair([da, db], (prev.from, prev.to));
        Some(BranchRow {
            from,
            to,
            count,
            mispreds,
        })
    }
    #[inline]
    fn counts(&self) -> [u64; 2] {
        [self.count, self.mispreds]
    }
    #[inline]
    fn set_counts(&mut self, [count, mispreds]: [u64; 2]) {
        (self.count, self.mispreds) = (count, mispreds);
    }
}

/// IP samples at one file offset (basic, non-LBR profiles), of the events the binary's
/// metadata lists, summed as perf2bolt sums them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, FromZeros)]
pub struct IpRow {
    /// The sampled instruction's file offset.
    pub ip: u64,
    /// Samples.
    pub count: u64,
}

impl Row for IpRow {
    const KIND: SectionKind = SectionKind::Ips;
    #[inline]
    fn key_cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.ip.cmp(&o.ip)
    }
    #[inline]
    fn leading_key(&self) -> [u64; 2] {
        [self.ip, 0]
    }
    #[inline(always)]
    fn packed_key(&self) -> [u64; 3] {
        [self.ip, 0, 0]
    }
    #[inline(always)]
    fn encode(&self, prev: &Self, window: &mut [u8; ROW_WINDOW]) -> usize {
        let mut out = RowBytes::new(window);
        out.uleb(self.ip.wrapping_sub(prev.ip));
        out.uleb(self.count);
        out.len
    }
    #[inline(always)]
    fn decode_from<U: Uleb>(prev: &Self, r: &mut U) -> Option<Self> {
        let [dip, count] = r.ulebs()?;
        Some(IpRow {
            ip: prev.ip.wrapping_add(dip),
            count,
        })
    }
    #[inline]
    fn counts(&self) -> [u64; 2] {
        [self.count, 0]
    }
    #[inline]
    fn set_counts(&mut self, [count, _]: [u64; 2]) {
        self.count = count;
    }
}

/// Memory samples: an instruction and the data address it touched, as perf2bolt reads them
/// (see `docs/store.md` for which address space each is in).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, FromZeros)]
pub struct MemRow {
    /// The sampled instruction.
    pub pc: u64,
    /// The data address: a file offset of the binary when `in_binary`, else as recorded.
    pub addr: u64,
    /// Whether the data address lay in the process's mapping of the binary (and `addr` is
    /// therefore a file offset).
    pub in_binary: bool,
    /// Samples.
    pub count: u64,
}

impl Row for MemRow {
    const KIND: SectionKind = SectionKind::Mem;
    #[inline]
    fn key_cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.pc, self.addr, self.in_binary).cmp(&(o.pc, o.addr, o.in_binary))
    }
    #[inline]
    fn leading_key(&self) -> [u64; 2] {
        [self.pc, self.addr]
    }
    #[inline(always)]
    fn packed_key(&self) -> [u64; 3] {
        [self.pc, self.addr, u64::from(self.in_binary)]
    }
    #[inline(always)]
    fn encode(&self, prev: &Self, window: &mut [u8; ROW_WINDOW]) -> usize {
        let mut out = RowBytes::new(window);
        out.uleb(self.pc.wrapping_sub(prev.pc));
        let base = if self.pc == prev.pc { prev.addr } else { 0 };
        out.uleb(self.addr.wrapping_sub(base));
        out.uleb(u64::from(self.in_binary));
        out.uleb(self.count);
        out.len
    }
    #[inline(always)]
    fn decode_from<U: Uleb>(prev: &Self, r: &mut U) -> Option<Self> {
        let [dpc, daddr, in_binary, count] = r.ulebs()?;
        let pc = prev.pc.wrapping_add(dpc);
        let base = if pc == prev.pc { prev.addr } else { 0 };
        Some(MemRow {
            pc,
            addr: base.wrapping_add(daddr),
            in_binary: in_binary != 0,
            count,
        })
    }
    #[inline]
    fn counts(&self) -> [u64; 2] {
        [self.count, 0]
    }
    #[inline]
    fn set_counts(&mut self, [count, _]: [u64; 2]) {
        self.count = count;
    }
}

/// A branch source known to be a return (pre-aggregated `R` records); a set, no count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, FromZeros)]
pub struct ReturnRow {
    /// The return instruction's file offset.
    pub addr: u64,
}

impl Row for ReturnRow {
    const KIND: SectionKind = SectionKind::Returns;
    #[inline]
    fn key_cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.addr.cmp(&o.addr)
    }
    #[inline]
    fn leading_key(&self) -> [u64; 2] {
        [self.addr, 0]
    }
    #[inline(always)]
    fn packed_key(&self) -> [u64; 3] {
        [self.addr, 0, 0]
    }
    #[inline(always)]
    fn encode(&self, prev: &Self, window: &mut [u8; ROW_WINDOW]) -> usize {
        let mut out = RowBytes::new(window);
        out.uleb(self.addr.wrapping_sub(prev.addr));
        out.len
    }
    #[inline(always)]
    fn decode_from<U: Uleb>(prev: &Self, r: &mut U) -> Option<Self> {
        let [daddr] = r.ulebs()?;
        Some(ReturnRow {
            addr: prev.addr.wrapping_add(daddr),
        })
    }
    #[inline]
    fn counts(&self) -> [u64; 2] {
        [0, 0]
    }
    #[inline]
    fn set_counts(&mut self, _: [u64; 2]) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bytes::{write_uleb128, Endian};

    fn round_trip<R: Row>(rows: &[R]) {
        let mut out = Vec::new();
        let mut prev = R::default();
        // A window that holds other bytes: only those a row's encoding says it took count.
        let mut window = [0xa5; ROW_WINDOW];
        for r in rows {
            let n = r.encode(&prev, &mut window);
            assert!(n <= ROW_ROOM);
            out.extend_from_slice(&window[..n]);
            prev = *r;
        }
        let mut reader = Reader::new(&out, Endian::Little);
        let mut prev = R::default();
        for r in rows {
            let got = R::decode(&prev, &mut reader).unwrap();
            assert_eq!(&got, r);
            prev = got;
        }
        assert!(reader.is_empty());
    }

    #[test]
    fn extreme_values_round_trip() {
        let m = u64::MAX;
        let mut traces = vec![
            TraceRow {
                branch: 0,
                from: 0,
                to: m,
                count: 1,
                mispreds: 0,
            },
            TraceRow {
                branch: 0,
                from: 5,
                to: 0,
                count: m,
                mispreds: m,
            },
            TraceRow {
                branch: 7,
                from: 1 << 63,
                to: 0,
                count: 3,
                mispreds: 1,
            },
            TraceRow {
                branch: m,
                from: m,
                to: m,
                count: 0,
                mispreds: 0,
            },
        ];
        traces.sort_by(|a, b| a.key_cmp(b));
        round_trip(&traces);
        round_trip(&[IpRow { ip: 0, count: m }, IpRow { ip: m, count: 1 }]);
        round_trip(&[
            MemRow {
                pc: 1,
                addr: m,
                in_binary: false,
                count: 2,
            },
            MemRow {
                pc: 1,
                addr: m,
                in_binary: true,
                count: 2,
            },
        ]);
        round_trip(&[BranchRow {
            from: 0,
            to: m,
            count: 1,
            mispreds: 1,
        }]);
        round_trip(&[ReturnRow { addr: 4 }, ReturnRow { addr: m }]);
    }

    use proptest::prelude::*;

    /// Bytes that are mostly LEB128 values of every length, with stray bytes between them.
    fn leb_soup() -> impl Strategy<Value = Vec<u8>> {
        let value = prop_oneof![
            any::<u64>().prop_map(|v| v >> (v % 64)),
            any::<u64>(),
            Just(u64::MAX),
        ];
        proptest::collection::vec((value, any::<u8>(), 0u8..4), 0..40).prop_map(|parts| {
            let mut out = Vec::new();
            for (v, stray, kind) in parts {
                match kind {
                    0 => out.push(stray),
                    _ => write_uleb128(&mut out, v),
                }
            }
            out
        })
    }

    /// `N` values read by the checked [`Reader`], or `None` where one fails.
    fn checked_values<const N: usize>(r: &mut Reader<'_>) -> Option<[u64; N]> {
        let mut values = [0; N];
        for v in &mut values {
            *v = r.uleb128().ok()?;
        }
        Some(values)
    }

    /// Reads `bytes` as rows of `N` values with [`BlockUleb::ulebs`] and with the checked
    /// reader, asserting that they agree (values and positions) up to the first failure.
    fn window_reads_agree<const N: usize>(bytes: &[u8]) -> Result<(), TestCaseError> {
        let mut fast = BlockUleb::new(bytes, 0);
        let mut checked = Reader::new(bytes, Endian::Little);
        loop {
            let expected = checked_values::<N>(&mut checked);
            prop_assert_eq!(fast.ulebs::<N>(), expected);
            let Some(_) = expected else { return Ok(()) };
            prop_assert_eq!(fast.pos, bytes.len() - checked.len());
        }
    }

    #[test]
    fn window_reads_handle_the_longest_and_padded_values() {
        let mut bytes = Vec::new();
        // u64::MAX in ten bytes; a padded zero (11 bytes, read by `Reader` too); a value past
        // 64 bits (an error for both); each followed by enough bytes for the window.
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        let padded = [
            0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00,
        ];
        let too_big = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        for value in [&max[..], &padded, &too_big] {
            bytes.clear();
            bytes.extend_from_slice(&[5, 0x81, 0x01]);
            bytes.extend_from_slice(value);
            bytes.extend_from_slice(&[7; 80]);
            window_reads_agree::<5>(&bytes).unwrap();
            window_reads_agree::<1>(&bytes).unwrap();
        }
        let mut fast = BlockUleb::new(&bytes, 0);
        assert_eq!(fast.ulebs::<3>(), None, "a value past 64 bits fails");
    }

    /// Longer [`leb_soup`]: many rows read through the window, the last ones without it.
    fn long_leb_soup() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(leb_soup(), 1..8).prop_map(|parts| parts.concat())
    }

    proptest! {
        /// A row's values read at once through the window equal the checked reader's, for
        /// every row width, including where a value or the window fails.
        #[test]
        fn window_reads_equal_the_checked_reader(bytes in long_leb_soup()) {
            window_reads_agree::<1>(&bytes)?;
            window_reads_agree::<2>(&bytes)?;
            window_reads_agree::<4>(&bytes)?;
            window_reads_agree::<5>(&bytes)?;
        }

        /// The bulk decoder's LEB128 reader reads what the checked [`Reader`] reads, value
        /// for value and byte for byte, and fails where it fails.
        #[test]
        fn the_fast_uleb_reader_equals_the_checked_one(bytes in leb_soup()) {
            let mut fast = BlockUleb::new(&bytes, 0);
            let mut checked = Reader::new(&bytes, Endian::Little);
            loop {
                let expected = checked.uleb128().ok();
                prop_assert_eq!(fast.uleb(), expected);
                let Some(_) = expected else { break };
                prop_assert_eq!(fast.pos, bytes.len() - checked.len());
            }
        }

        /// Rows decoded by the fast reader equal rows decoded by the checked one, for every
        /// table's rows.
        #[test]
        fn fast_and_checked_row_decoding_agree(bytes in long_leb_soup()) {
            rows_agree::<TraceRow>(&bytes)?;
            rows_agree::<BranchRow>(&bytes)?;
            rows_agree::<IpRow>(&bytes)?;
            rows_agree::<MemRow>(&bytes)?;
            rows_agree::<ReturnRow>(&bytes)?;
        }
    }

    /// Decodes `bytes` as `R` rows with the fast and the checked reader, asserting that they
    /// agree up to the first failure.
    fn rows_agree<R: Row>(bytes: &[u8]) -> Result<(), TestCaseError> {
        let mut fast = BlockUleb::new(bytes, 0);
        let mut checked = Reader::new(bytes, Endian::Little);
        let mut prev = R::default();
        loop {
            let expected = R::decode(&prev, &mut checked).ok();
            prop_assert_eq!(R::decode_from(&prev, &mut fast), expected);
            let Some(row) = expected else { return Ok(()) };
            prop_assert_eq!(fast.pos, bytes.len() - checked.len());
            prev = row;
        }
    }

    #[test]
    fn zigzag_is_a_bijection_at_the_edges() {
        for v in [0u64, 1, 2, u64::MAX, u64::MAX - 1, 1 << 63, (1 << 63) - 1] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }
}
