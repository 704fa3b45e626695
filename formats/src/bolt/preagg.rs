//! BOLT pre-aggregated profile text (`perf2bolt --pa` input), both dialects.
//!
//! * Current (LLVM ≥ 21): `E <event>`, `S <loc> <count>`, `T <branch> <ft_start> <ft_end> <count>`,
//!   `B <from> <to> <count> <mispreds>`. `T` carries no misprediction count, so mispredictions go
//!   into `B <from> <to> 0 <mispreds>` records, which add nothing to the taken counts.
//! * Legacy (LLVM ≤ 20): `B <from> <to> <count> <mispreds>`, `F`/`f <start> <end> <count>`
//!   (`f`: the fall-through was entered from outside the function).
//!
//! Locations are bare lowercase hex without `0x` (LLVM's parser rejects the prefix and, up to
//! LLVM 22, negative numbers), so the branch-only sentinel is written `ffffffffffffffff`.

use std::io::{self, Write};

/// The trace end that means "no fall-through is known" (BOLT's `Trace::BR_ONLY`).
pub const BR_ONLY: u64 = u64::MAX;

/// Writes records into any `io::Write`, formatting numbers without allocating.
pub struct PreaggWriter<W: Write> {
    out: W,
}

impl<W: Write> PreaggWriter<W> {
    pub fn new(out: W) -> Self {
        PreaggWriter { out }
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    pub fn event(&mut self, name: &str) -> io::Result<()> {
        writeln!(self.out, "E {name}")
    }

    pub fn sample(&mut self, addr: u64, count: u64) -> io::Result<()> {
        self.out.write_all(b"S ")?;
        self.hex(addr)?;
        self.out.write_all(b" ")?;
        self.dec_line(count)
    }

    pub fn trace(&mut self, branch: u64, ft_start: u64, ft_end: u64, count: u64) -> io::Result<()> {
        self.out.write_all(b"T ")?;
        self.locations(&[branch, ft_start, ft_end])?;
        self.dec_line(count)
    }

    pub fn branch(&mut self, from: u64, to: u64, count: u64, mispreds: u64) -> io::Result<()> {
        self.out.write_all(b"B ")?;
        self.locations(&[from, to])?;
        let mut buf = itoa::Buffer::new();
        self.out.write_all(buf.format(count).as_bytes())?;
        self.out.write_all(b" ")?;
        self.dec_line(mispreds)
    }

    /// `F` (local origin) or `f` (external origin) fall-through range.
    pub fn fall_through(
        &mut self,
        external_origin: bool,
        start: u64,
        end: u64,
        count: u64,
    ) -> io::Result<()> {
        self.out
            .write_all(if external_origin { b"f " } else { b"F " })?;
        self.locations(&[start, end])?;
        self.dec_line(count)
    }

    fn locations(&mut self, addrs: &[u64]) -> io::Result<()> {
        for &a in addrs {
            self.hex(a)?;
            self.out.write_all(b" ")?;
        }
        Ok(())
    }

    fn hex(&mut self, v: u64) -> io::Result<()> {
        let mut buf = [0u8; 16];
        self.out.write_all(format_hex(v, &mut buf))
    }

    fn dec_line(&mut self, v: u64) -> io::Result<()> {
        let mut buf = itoa::Buffer::new();
        self.out.write_all(buf.format(v).as_bytes())?;
        self.out.write_all(b"\n")
    }
}

/// Lowercase hex without prefix or leading zeros (`0` for zero), as LLVM's `utohexstr`.
pub fn format_hex(mut v: u64, buf: &mut [u8; 16]) -> &[u8] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = DIGITS[(v & 15) as usize];
        v >>= 4;
        if v == 0 {
            return &buf[i..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_matches_std_formatting() {
        for v in [0u64, 1, 0xf, 0x10, 0xdead_beef, u64::MAX, 1 << 63] {
            let mut buf = [0u8; 16];
            assert_eq!(format_hex(v, &mut buf), format!("{v:x}").as_bytes());
        }
    }

    #[test]
    fn records_have_llvm_shape() {
        let mut w = PreaggWriter::new(Vec::new());
        w.event("cycles:u:").unwrap();
        w.sample(0x401000, 7).unwrap();
        w.trace(0x401a, 0x4020, BR_ONLY, 3).unwrap();
        w.branch(0x401a, 0x4020, 0, 2).unwrap();
        w.fall_through(true, 0x10, 0x20, 5).unwrap();
        let text = String::from_utf8(w.into_inner()).unwrap();
        assert_eq!(
            text,
            "E cycles:u:\nS 401000 7\nT 401a 4020 ffffffffffffffff 3\nB 401a 4020 0 2\nf 10 20 5\n"
        );
    }
}
