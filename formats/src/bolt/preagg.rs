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
    /// A writer that writes records to `out` as they come (wrap a file in a `BufWriter`).
    pub fn new(out: W) -> Self {
        PreaggWriter { out }
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// `E <name>`: the event the samples were taken with.
    pub fn event(&mut self, name: &str) -> io::Result<()> {
        writeln!(self.out, "E {name}")
    }

    /// `S <addr> <count>`: `count` samples at `addr` (basic sampling, no LBR).
    pub fn sample(&mut self, addr: u64, count: u64) -> io::Result<()> {
        let mut line = Line::new(b"S ");
        line.hex(addr).dec(count);
        self.out.write_all(line.end())
    }

    /// `T <branch> <ft_start> <ft_end> <count>` (LLVM ≥ 21): a taken branch and the fall-through
    /// that followed; `ft_end` is [`BR_ONLY`] when none is known.
    pub fn trace(&mut self, branch: u64, ft_start: u64, ft_end: u64, count: u64) -> io::Result<()> {
        let mut line = Line::new(b"T ");
        line.hex(branch).hex(ft_start).hex(ft_end).dec(count);
        self.out.write_all(line.end())
    }

    /// `B <from> <to> <count> <mispreds>`: a taken branch.
    pub fn branch(&mut self, from: u64, to: u64, count: u64, mispreds: u64) -> io::Result<()> {
        let mut line = Line::new(b"B ");
        line.hex(from).hex(to).dec(count).dec(mispreds);
        self.out.write_all(line.end())
    }

    /// `F` (local origin) or `f` (external origin) fall-through range.
    pub fn fall_through(
        &mut self,
        external_origin: bool,
        start: u64,
        end: u64,
        count: u64,
    ) -> io::Result<()> {
        let mut line = Line::new(if external_origin { b"f " } else { b"F " });
        line.hex(start).hex(end).dec(count);
        self.out.write_all(line.end())
    }
}

/// One record's text, built on the stack and written in one call: with a `write_all` per field
/// (eight for a trace), the calls cost more than the formatting.
struct Line {
    text: [u8; Line::CAPACITY],
    len: usize,
}

impl Line {
    /// A tag, four fields of at most 20 characters and their separators.
    const CAPACITY: usize = 2 + 4 * 21;

    fn new(tag: &[u8; 2]) -> Line {
        let mut text = [0; Line::CAPACITY];
        text[..2].copy_from_slice(tag);
        Line { text, len: 2 }
    }

    /// Appends `v` in [`format_hex`]'s form and a space.
    fn hex(&mut self, v: u64) -> &mut Line {
        let mut buf = [0u8; 16];
        self.push(format_hex(v, &mut buf))
    }

    /// Appends `v` in decimal and a space.
    fn dec(&mut self, v: u64) -> &mut Line {
        self.push(itoa::Buffer::new().format(v).as_bytes())
    }

    fn push(&mut self, field: &[u8]) -> &mut Line {
        let end = self.len + field.len();
        self.text[self.len..end].copy_from_slice(field);
        self.text[end] = b' ';
        self.len = end + 1;
        self
    }

    /// The text, its last separator turned into the line's end.
    fn end(&mut self) -> &[u8] {
        self.text[self.len - 1] = b'\n';
        &self.text[..self.len]
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

/// One pre-aggregated record (LLVM 22 grammar). Counts are signed, as LLVM parses them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record<'a> {
    /// `E <event>`.
    Event(&'a str),
    /// `S <addr> <count>`.
    Sample {
        /// The sampled address.
        addr: u64,
        /// Samples taken there.
        count: i64,
    },
    /// `T <branch> <ft_start> <ft_end> <count>`.
    Trace {
        /// Address of the branch instruction (for `R`, the return).
        branch: u64,
        /// `ft_start`: where the fall-through starts (the branch target).
        from: u64,
        /// `ft_end`: the last fall-through address, or [`BR_ONLY`] if unknown.
        to: u64,
        /// Times this trace was taken.
        count: i64,
    },
    /// `R <return> <ft_start> <ft_end> <count>`: a trace whose branch is a return.
    Return {
        /// Address of the branch instruction (for `R`, the return).
        branch: u64,
        /// `ft_start`: where the fall-through starts (the branch target).
        from: u64,
        /// `ft_end`: the last fall-through address, or [`BR_ONLY`] if unknown.
        to: u64,
        /// Times this trace was taken.
        count: i64,
    },
    /// `B <from> <to> <count> <mispreds>`.
    Branch {
        /// Branch source address.
        from: u64,
        /// Branch target address.
        to: u64,
        /// Times taken.
        count: i64,
        /// Times mispredicted.
        mispreds: i64,
    },
    /// `F` (`origin` 'F'), `f` (external origin) or `r` (after an external return).
    FallThrough {
        /// The record letter: `b'F'`, `b'f'` or `b'r'`.
        origin: u8,
        /// Start address of the fall-through range.
        from: u64,
        /// End address of the fall-through range.
        to: u64,
        /// Times the range was executed.
        count: i64,
    },
}

/// A syntax error: where, and what was expected there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line and column.
    pub line: usize,
    /// 1-based byte column in that line.
    pub column: usize,
    /// Byte offset in the input.
    pub offset: usize,
    /// What the grammar expected there (e.g. `"a hex address"`).
    pub expected: &'static str,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}, column {} (byte offset {}): expected {}",
            self.line, self.column, self.offset, self.expected
        )
    }
}

impl std::error::Error for ParseError {}

/// Parses every line; fields are separated by runs of spaces (tabs are not separators, as in
/// LLVM), locations are `[<build-id>:]<hex>` without `0x` (the build-id is not interpreted,
/// as in LLVM 22), counts are decimal.
pub fn parse(data: &[u8]) -> impl Iterator<Item = Result<Record<'_>, ParseError>> + '_ {
    let mut offset = 0usize;
    let mut line_no = 0usize;
    std::iter::from_fn(move || {
        if offset >= data.len() {
            return None;
        }
        let end = memchr::memchr(b'\n', &data[offset..]).map_or(data.len(), |i| offset + i);
        let line = &data[offset..end];
        let start = offset;
        offset = end + 1;
        line_no += 1;
        Some(parse_line(line, start, line_no))
    })
}

fn parse_line(line: &[u8], start: usize, line_no: usize) -> Result<Record<'_>, ParseError> {
    let mut fields = Fields {
        line,
        pos: 0,
        start,
        line_no,
    };
    let kind = fields.token("a record type (T, R, S, E, B, F, f or r)")?;
    let record = match kind {
        b"E" => Record::Event(
            std::str::from_utf8(fields.token("an event name")?)
                .map_err(|_| fields.error("a UTF-8 event name"))?,
        ),
        b"S" => Record::Sample {
            addr: fields.location()?,
            count: fields.count()?,
        },
        b"T" | b"R" => {
            let (branch, from, to) = (fields.location()?, fields.location()?, fields.location()?);
            let count = fields.count()?;
            if kind == b"T" {
                Record::Trace {
                    branch,
                    from,
                    to,
                    count,
                }
            } else {
                Record::Return {
                    branch,
                    from,
                    to,
                    count,
                }
            }
        }
        b"B" => Record::Branch {
            from: fields.location()?,
            to: fields.location()?,
            count: fields.count()?,
            mispreds: fields.count()?,
        },
        b"F" | b"f" | b"r" => Record::FallThrough {
            origin: kind[0],
            from: fields.location()?,
            to: fields.location()?,
            count: fields.count()?,
        },
        _ => return Err(fields.error_at(0, "a record type (T, R, S, E, B, F, f or r)")),
    };
    fields.end()?;
    Ok(record)
}

struct Fields<'a> {
    line: &'a [u8],
    pos: usize,
    start: usize,
    line_no: usize,
}

impl<'a> Fields<'a> {
    fn skip_spaces(&mut self) {
        while self.line.get(self.pos) == Some(&b' ') {
            self.pos += 1;
        }
    }

    fn token(&mut self, what: &'static str) -> Result<&'a [u8], ParseError> {
        self.skip_spaces();
        let begin = self.pos;
        while self.pos < self.line.len() && self.line[self.pos] != b' ' {
            self.pos += 1;
        }
        if begin == self.pos {
            return Err(self.error(what));
        }
        Ok(&self.line[begin..self.pos])
    }

    fn location(&mut self) -> Result<u64, ParseError> {
        self.skip_spaces();
        let at = self.pos;
        let token = self.token("a hexadecimal location")?;
        let hex = match memchr::memrchr(b':', token) {
            Some(i) => &token[i + 1..],
            None => token,
        };
        std::str::from_utf8(hex)
            .ok()
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .filter(|_| !hex.starts_with(b"+") && !hex.starts_with(b"-"))
            .ok_or_else(|| self.error_at(at, "a hexadecimal location ([<id>:]<hex>, no 0x)"))
    }

    fn count(&mut self) -> Result<i64, ParseError> {
        self.skip_spaces();
        let at = self.pos;
        let token = self.token("a decimal count")?;
        std::str::from_utf8(token)
            .ok()
            .filter(|t| !t.starts_with('+'))
            .and_then(|t| t.parse::<i64>().ok())
            .ok_or_else(|| self.error_at(at, "a decimal count"))
    }

    fn end(&mut self) -> Result<(), ParseError> {
        self.skip_spaces();
        if self.pos == self.line.len() {
            Ok(())
        } else {
            Err(self.error("the end of the line"))
        }
    }

    fn error(&self, expected: &'static str) -> ParseError {
        self.error_at(self.pos, expected)
    }

    fn error_at(&self, pos: usize, expected: &'static str) -> ParseError {
        ParseError {
            line: self.line_no,
            column: pos + 1,
            offset: self.start + pos,
            expected,
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

    /// One record of each kind the writer makes.
    fn sample_records() -> Vec<u8> {
        let mut w = PreaggWriter::new(Vec::new());
        w.event("cycles:u:").unwrap();
        w.sample(0x401000, 7).unwrap();
        w.trace(0x401a, 0x4020, BR_ONLY, 3).unwrap();
        w.branch(0x401a, 0x4020, 0, 2).unwrap();
        w.fall_through(true, 0x10, 0x20, 5).unwrap();
        w.into_inner()
    }

    #[test]
    fn written_records_parse_back() {
        let text = sample_records();
        let records: Vec<Record> = parse(&text).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            records,
            vec![
                Record::Event("cycles:u:"),
                Record::Sample {
                    addr: 0x401000,
                    count: 7
                },
                Record::Trace {
                    branch: 0x401a,
                    from: 0x4020,
                    to: BR_ONLY,
                    count: 3
                },
                Record::Branch {
                    from: 0x401a,
                    to: 0x4020,
                    count: 0,
                    mispreds: 2
                },
                Record::FallThrough {
                    origin: b'f',
                    from: 0x10,
                    to: 0x20,
                    count: 5
                },
            ]
        );
    }

    #[test]
    fn errors_name_line_and_column() {
        let text = b"B 10 20 1 0\nB 10 0x20 1 0\n";
        let err = parse(text).nth(1).unwrap().unwrap_err();
        assert_eq!((err.line, err.column, err.offset), (2, 6, 17));
        let err = parse(b"X 1 2\n").next().unwrap().unwrap_err();
        assert_eq!(err.column, 1);
        let err = parse(b"F 1 2 3 4\n").next().unwrap().unwrap_err();
        assert_eq!(err.expected, "the end of the line");
        assert!(parse(b"S deadbeef:10 4\n").next().unwrap().is_ok());
    }

    #[test]
    fn records_have_llvm_shape() {
        let text = String::from_utf8(sample_records()).unwrap();
        assert_eq!(
            text,
            "E cycles:u:\nS 401000 7\nT 401a 4020 ffffffffffffffff 3\nB 401a 4020 0 2\nf 10 20 5\n"
        );
    }
}
