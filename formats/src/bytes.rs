//! A bounds-checked view over little- or big-endian bytes that never panics.

/// Byte order of a file, decided once from its magic number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    Little,
    Big,
}

impl Endian {
    #[inline(always)]
    pub fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        }
    }
    #[inline(always)]
    pub fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }
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
    pub data: &'a [u8],
    pub endian: Endian,
}

impl<'a> Bytes<'a> {
    pub fn new(data: &'a [u8], endian: Endian) -> Self {
        Bytes { data, endian }
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    #[inline(always)]
    pub fn array<const N: usize>(&self, off: usize) -> Option<[u8; N]> {
        let end = off.checked_add(N)?;
        self.data.get(off..end)?.try_into().ok()
    }

    #[inline(always)]
    pub fn u16(&self, off: usize) -> Option<u16> {
        self.array(off).map(|b| self.endian.u16(b))
    }

    #[inline(always)]
    pub fn u32(&self, off: usize) -> Option<u32> {
        self.array(off).map(|b| self.endian.u32(b))
    }

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

/// A forward-only cursor over [`Bytes`], for variable-length layouts read field by field.
#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a> {
    pub bytes: Bytes<'a>,
    pub pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: Bytes<'a>) -> Self {
        Cursor { bytes, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    #[inline(always)]
    pub fn u32(&mut self) -> Option<u32> {
        let v = self.bytes.u32(self.pos)?;
        self.pos += 4;
        Some(v)
    }

    #[inline(always)]
    pub fn u64(&mut self) -> Option<u64> {
        let v = self.bytes.u64(self.pos)?;
        self.pos += 8;
        Some(v)
    }

    /// Skips `n` bytes; fails (without moving) if fewer remain.
    #[inline(always)]
    pub fn skip(&mut self, n: usize) -> Option<()> {
        let end = self.pos.checked_add(n)?;
        (end <= self.bytes.len()).then(|| self.pos = end)
    }

    /// Takes `n` bytes.
    #[inline(always)]
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.bytes.slice(self.pos, n)?;
        self.pos += n;
        Some(s)
    }
}
