//! Bounds-checked access to little- or big-endian bytes that never panics: [`Bytes`] for
//! random access at offsets, [`Reader`] for reading field by field (fixed-width integers,
//! LEB128, C strings) with errors that name the file offset.

use std::fmt;

/// Byte order of a file, decided once from its magic number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    /// Least significant byte first (x86-64, AArch64 and LLVM's raw/indexed profiles).
    Little,
    /// Most significant byte first (perf.data from big-endian hosts, GCOV).
    Big,
}

impl Endian {
    /// Decodes 2 bytes in this byte order.
    #[inline(always)]
    pub fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        }
    }
    /// Decodes 4 bytes in this byte order.
    #[inline(always)]
    pub fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }
    /// Decodes 8 bytes in this byte order.
    #[inline(always)]
    pub fn u64(self, b: [u8; 8]) -> u64 {
        match self {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        }
    }
}

/// A slice plus its byte order. Every read is checked and returns `None` past the end, so a
/// malformed file can never make a reader panic.
#[derive(Clone, Copy, Debug)]
pub struct Bytes<'a> {
    /// The bytes; offsets passed to the accessors index this slice.
    pub data: &'a [u8],
    /// The byte order multi-byte integers are read in.
    pub endian: Endian,
}

impl<'a> Bytes<'a> {
    /// Wraps `data`, to be read in `endian` order.
    pub fn new(data: &'a [u8], endian: Endian) -> Self {
        Bytes { data, endian }
    }

    /// Number of bytes.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The `N` bytes at `off`, or `None` if they run past the end (or `off + N` overflows).
    #[inline(always)]
    pub fn array<const N: usize>(&self, off: usize) -> Option<[u8; N]> {
        let end = off.checked_add(N)?;
        self.data.get(off..end)?.try_into().ok()
    }

    /// The u16 at `off` in [`Self::endian`] order, or `None` past the end.
    #[inline(always)]
    pub fn u16(&self, off: usize) -> Option<u16> {
        self.array(off).map(|b| self.endian.u16(b))
    }

    /// The u32 at `off` in [`Self::endian`] order, or `None` past the end.
    #[inline(always)]
    pub fn u32(&self, off: usize) -> Option<u32> {
        self.array(off).map(|b| self.endian.u32(b))
    }

    /// The u64 at `off` in [`Self::endian`] order, or `None` past the end.
    #[inline(always)]
    pub fn u64(&self, off: usize) -> Option<u64> {
        self.array(off).map(|b| self.endian.u64(b))
    }

    /// `len` bytes at `off`.
    pub fn slice(&self, off: usize, len: usize) -> Option<&'a [u8]> {
        self.data.get(off..off.checked_add(len)?)
    }

    /// Everything from `off` on.
    pub fn tail(&self, off: usize) -> Option<Bytes<'a>> {
        Some(Bytes::new(self.data.get(off..)?, self.endian))
    }

    /// A sub-view of `len` bytes at `off`.
    pub fn sub(&self, off: usize, len: usize) -> Option<Bytes<'a>> {
        Some(Bytes::new(self.slice(off, len)?, self.endian))
    }

    /// A NUL-terminated string starting at `off` (the terminator is not included); the whole
    /// remainder when there is no NUL.
    pub fn c_str(&self, off: usize) -> Option<&'a [u8]> {
        let rest = self.data.get(off..)?;
        let end = memchr::memchr(0, rest).unwrap_or(rest.len());
        Some(&rest[..end])
    }
}

/// Why a [`Reader`] could not read a value.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadErrorKind {
    /// The data ends before the value does.
    UnexpectedEof,
    /// A ULEB128 value with more than 64 bits of payload (LLVM: "uleb128 too big for uint64").
    UlebTooBig,
    /// An SLEB128 value that does not fit `i64` (LLVM: "sleb128 too big for int64").
    SlebTooBig,
    /// A NUL-terminated string without its NUL.
    MissingNul,
}

impl fmt::Display for ReadErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReadErrorKind::UnexpectedEof => "unexpected end of data",
            ReadErrorKind::UlebTooBig => "uleb128 too big for uint64",
            ReadErrorKind::SlebTooBig => "sleb128 too big for int64",
            ReadErrorKind::MissingNul => "string without a NUL terminator",
        })
    }
}

/// A failed [`Reader`] read: what went wrong and the absolute file offset of the value that
/// could not be read. Each format wraps it into its own error with the name of the field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadError {
    /// File offset where the unreadable value starts.
    pub offset: u64,
    /// What was wrong with it.
    pub kind: ReadErrorKind,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte offset {}: {}", self.offset, self.kind)
    }
}

impl std::error::Error for ReadError {}

/// A forward-only reader over the unread part of a buffer, for variable-length layouts read
/// field by field. It knows the absolute file offset of its next byte (so errors can name it),
/// reads fixed-width integers in its [`Endian`], and decodes LEB128 with LLVM's rules. A read
/// that fails returns a [`ReadError`] and leaves the reader where it was; nothing panics.
#[derive(Clone, Copy, Debug)]
pub struct Reader<'a> {
    data: &'a [u8],
    offset: u64,
    endian: Endian,
}

impl<'a> Reader<'a> {
    /// A reader over `data`, whose first byte is at file offset 0.
    pub fn new(data: &'a [u8], endian: Endian) -> Self {
        Reader::at(data, endian, 0)
    }

    /// A reader over `data`, whose first byte is at file offset `offset` (a section, or a
    /// decompressed buffer reported against the file offset it came from).
    pub fn at(data: &'a [u8], endian: Endian, offset: u64) -> Self {
        Reader {
            data,
            offset,
            endian,
        }
    }

    /// File offset of the next byte.
    #[inline(always)]
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Byte order of the fixed-width reads.
    #[inline(always)]
    pub fn endian(&self) -> Endian {
        self.endian
    }

    /// Bytes left.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether every byte has been read.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The unread bytes, without consuming them.
    #[inline(always)]
    pub fn rest(&self) -> &'a [u8] {
        self.data
    }

    /// An error of `kind` at the next byte.
    #[cold]
    pub fn error(&self, kind: ReadErrorKind) -> ReadError {
        ReadError {
            offset: self.offset,
            kind,
        }
    }

    #[inline(always)]
    fn advance(&mut self, n: usize) {
        self.data = &self.data[n..];
        self.offset += n as u64;
    }

    /// Takes `n` bytes.
    #[inline(always)]
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], ReadError> {
        let s = self
            .data
            .get(..n)
            .ok_or_else(|| self.error(ReadErrorKind::UnexpectedEof))?;
        self.advance(n);
        Ok(s)
    }

    /// Takes `n` bytes as a reader of their own (same byte order, offsets continuing).
    pub fn split(&mut self, n: usize) -> Result<Reader<'a>, ReadError> {
        let at = self.offset;
        Ok(Reader::at(self.take(n)?, self.endian, at))
    }

    /// Skips `n` bytes.
    #[inline(always)]
    pub fn skip(&mut self, n: usize) -> Result<(), ReadError> {
        self.take(n).map(|_| ())
    }

    /// The next `N` bytes as an array.
    #[inline(always)]
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], ReadError> {
        let b: [u8; N] = self
            .data
            .get(..N)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| self.error(ReadErrorKind::UnexpectedEof))?;
        self.advance(N);
        Ok(b)
    }

    /// One byte.
    #[inline(always)]
    pub fn u8(&mut self) -> Result<u8, ReadError> {
        self.array::<1>().map(|b| b[0])
    }

    /// A 16-bit integer in the reader's byte order.
    #[inline(always)]
    pub fn u16(&mut self) -> Result<u16, ReadError> {
        self.array().map(|b| self.endian.u16(b))
    }

    /// A 32-bit integer in the reader's byte order.
    #[inline(always)]
    pub fn u32(&mut self) -> Result<u32, ReadError> {
        self.array().map(|b| self.endian.u32(b))
    }

    /// A 64-bit integer in the reader's byte order.
    #[inline(always)]
    pub fn u64(&mut self) -> Result<u64, ReadError> {
        self.array().map(|b| self.endian.u64(b))
    }

    /// An unsigned integer of `width` bytes (1 to 8) in the reader's byte order.
    pub fn uint(&mut self, width: usize) -> Result<u64, ReadError> {
        let mut buf = [0u8; 8];
        let b = self.data.get(..width.min(8)).filter(|_| width <= 8);
        let b = b.ok_or_else(|| self.error(ReadErrorKind::UnexpectedEof))?;
        let v = match self.endian {
            Endian::Little => {
                buf[..width].copy_from_slice(b);
                u64::from_le_bytes(buf)
            }
            Endian::Big => {
                buf[8 - width..].copy_from_slice(b);
                u64::from_be_bytes(buf)
            }
        };
        self.advance(width);
        Ok(v)
    }

    /// Bytes up to the next NUL, which is consumed but not returned.
    pub fn c_str(&mut self) -> Result<&'a [u8], ReadError> {
        let n =
            memchr::memchr(0, self.data).ok_or_else(|| self.error(ReadErrorKind::MissingNul))?;
        let s = &self.data[..n];
        self.advance(n + 1);
        Ok(s)
    }

    /// An unsigned LEB128 value, decoded as LLVM's `decodeULEB128` does: bytes past the 64th
    /// bit must carry zero payload, and more than 64 bits of payload is an error.
    #[inline]
    pub fn uleb128(&mut self) -> Result<u64, ReadError> {
        // Most values of delta-encoded tables fit a byte.
        match *self.data {
            [byte, ..] if byte < 0x80 => {
                self.advance(1);
                return Ok(u64::from(byte));
            }
            // Deltas of sorted addresses mostly fit two bytes.
            [low, high, ..] if high < 0x80 => {
                self.advance(2);
                return Ok(u64::from(low & 0x7f) | u64::from(high) << 7);
            }
            _ => {}
        }
        let mut value = 0u64;
        let mut shift = 0u32;
        for (i, &byte) in self.data.iter().enumerate() {
            let slice = u64::from(byte & 0x7f);
            if shift >= 63 && ((shift == 63 && slice > 1) || (shift > 63 && slice != 0)) {
                return Err(self.error(ReadErrorKind::UlebTooBig));
            }
            if shift < 64 {
                value |= slice << shift;
            }
            shift = shift.saturating_add(7);
            if byte & 0x80 == 0 {
                self.advance(i + 1);
                return Ok(value);
            }
        }
        Err(self.error(ReadErrorKind::UnexpectedEof))
    }

    /// A signed LEB128 value, decoded as LLVM's `decodeSLEB128` does: bytes past the 64th bit
    /// must repeat the sign, and a value that does not fit `i64` is an error.
    pub fn sleb128(&mut self) -> Result<i64, ReadError> {
        let mut value = 0i64;
        let mut shift = 0u32;
        for (i, &byte) in self.data.iter().enumerate() {
            let slice = byte & 0x7f;
            let sign_fill = if value < 0 { 0x7f } else { 0 };
            if (shift == 63 && slice != 0 && slice != 0x7f) || (shift > 63 && slice != sign_fill) {
                return Err(self.error(ReadErrorKind::SlebTooBig));
            }
            if shift < 64 {
                value |= i64::from(slice) << shift;
            }
            shift = shift.saturating_add(7);
            if byte & 0x80 == 0 {
                if shift < 64 && byte & 0x40 != 0 {
                    value |= -1i64 << shift;
                }
                self.advance(i + 1);
                return Ok(value);
            }
        }
        Err(self.error(ReadErrorKind::UnexpectedEof))
    }
}

impl<'a> From<Bytes<'a>> for Reader<'a> {
    fn from(b: Bytes<'a>) -> Self {
        Reader::new(b.data, b.endian)
    }
}

/// Appends the minimal unsigned LEB128 encoding of `v` (LLVM's `encodeULEB128` without
/// padding).
pub fn write_uleb128(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Appends the minimal signed LEB128 encoding of `v` (LLVM's `encodeSLEB128` without padding).
pub fn write_sleb128(out: &mut Vec<u8>, mut v: i64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        let done = (v == 0 && byte & 0x40 == 0) || (v == -1 && byte & 0x40 != 0);
        if done {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleb128_round_trips_at_the_edges() {
        for v in [
            0i64,
            1,
            -1,
            63,
            64,
            -64,
            -65,
            i64::MAX,
            i64::MIN,
            1 << 40,
            -(1 << 40),
        ] {
            let mut out = Vec::new();
            write_sleb128(&mut out, v);
            assert_eq!(sleb(&out), Ok(v), "{v}");
        }
        let mut out = Vec::new();
        write_sleb128(&mut out, -2);
        assert_eq!(out, [0x7e]);
    }

    fn uleb(b: &[u8]) -> Result<u64, ReadError> {
        Reader::new(b, Endian::Little).uleb128()
    }

    fn sleb(b: &[u8]) -> Result<i64, ReadError> {
        Reader::new(b, Endian::Little).sleb128()
    }

    #[test]
    fn uleb128_follows_llvm() {
        assert_eq!(uleb(&[0x00]), Ok(0));
        assert_eq!(uleb(&[0xe5, 0x8e, 0x26]), Ok(624_485));
        // Zero padding is accepted, also past 64 bits.
        assert_eq!(uleb(&[0x80, 0x80, 0x00]), Ok(0));
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(uleb(&max), Ok(u64::MAX));
        let padded = [
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x81, 0x00,
        ];
        assert_eq!(uleb(&padded), Ok(u64::MAX));
        let big = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert_eq!(uleb(&big).unwrap_err().kind, ReadErrorKind::UlebTooBig);
        let bigger = [
            0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
        ];
        assert_eq!(uleb(&bigger).unwrap_err().kind, ReadErrorKind::UlebTooBig);
        assert_eq!(
            uleb(&[0x80]).unwrap_err().kind,
            ReadErrorKind::UnexpectedEof
        );
    }

    #[test]
    fn sleb128_follows_llvm() {
        assert_eq!(sleb(&[0x02]), Ok(2));
        assert_eq!(sleb(&[0x7e]), Ok(-2));
        assert_eq!(sleb(&[0xc0, 0xbb, 0x78]), Ok(-123_456));
        let min = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f];
        assert_eq!(sleb(&min), Ok(i64::MIN));
        let padded = [
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
        ];
        assert_eq!(sleb(&padded), Ok(-1));
        let big = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01];
        assert_eq!(sleb(&big).unwrap_err().kind, ReadErrorKind::SlebTooBig);
    }

    #[test]
    fn leb128_round_trips() {
        for v in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            write_uleb128(&mut out, v);
            let mut r = Reader::new(&out, Endian::Little);
            assert_eq!(r.uleb128(), Ok(v));
            assert!(r.is_empty());
        }
    }

    #[test]
    fn failed_reads_do_not_move_and_name_the_offset() {
        let mut r = Reader::at(&[1, 2, 3], Endian::Big, 100);
        assert_eq!(r.u16(), Ok(0x0102));
        let e = r.u32().unwrap_err();
        assert_eq!(e.offset, 102);
        assert_eq!(e.to_string(), "byte offset 102: unexpected end of data");
        assert_eq!(r.uint(1), Ok(3));
        assert!(r.is_empty());
        assert_eq!(
            Reader::new(b"ab", Endian::Little).c_str().unwrap_err().kind,
            ReadErrorKind::MissingNul
        );
    }
}
