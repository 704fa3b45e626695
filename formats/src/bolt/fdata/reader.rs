//! Zero-copy fdata reader: headers, then one [`Entry`] per data line, borrowing from the input.
//!
//! What it accepts follows LLVM's `DataReader` (bolt/lib/Profile/DataReader.cpp):
//! * location tags 0 (no symbol), 1 (symbol) and 2 (local symbol) on branch and sample lines,
//!   3, 4 and 5 (the same plus 3) on memory lines; 2 and 5 mean the same as 1 and 4;
//! * a name is everything up to the next unescaped space; `\` escapes the next byte; the name
//!   is kept as written (`[unknown]` is an ordinary name);
//! * offsets are hexadecimal (either case, leading zeros allowed), counts signed decimal
//!   (`-5` is accepted, as `StringRef::getAsInteger` into an `int64_t` does);
//! * fields are separated by one or more spaces, trailing spaces are allowed.
//!
//! Where `DataReader` is looser or stricter, this reader documents its choice:
//! * `boltedcollection` and `no_lbr` may come in either order (DataReader wants `no_lbr`
//!   first, but perf2bolt and merge-fdata write `boltedcollection` first);
//! * branch (or sample) and memory lines may be interleaved (DataReader silently stops at the
//!   first branch line after a memory line);
//! * blank lines are skipped (DataReader silently stops there; newer merge-fdata skips them);
//! * the last line may lack its `\n`;
//! * a name cannot contain a newline, and `no_lbr` must be followed by a space or the end of
//!   the line (DataReader would read `no_lbrX` as the event `X`).

use std::borrow::Cow;

use memchr::{memchr, memchr2};

use super::error::{quoted, FdataError, FdataErrorKind};

/// One location as written in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RawLocation<'a> {
    /// The tag, 0 to 5 (see the module documentation).
    pub tag: u8,
    /// The name exactly as written: still escaped.
    pub escaped_name: &'a [u8],
    /// Offset from the symbol's start (or the address), parsed from hex.
    pub offset: u64,
}

impl<'a> RawLocation<'a> {
    /// Whether the name is a symbol (tags 1, 2, 4, 5) rather than a DSO name or `[unknown]`.
    pub fn is_symbol(&self) -> bool {
        matches!(self.tag, 1 | 2 | 4 | 5)
    }

    /// The name with its escapes removed; borrowed unless it had a backslash.
    pub fn name(&self) -> Cow<'a, [u8]> {
        unescape(self.escaped_name)
    }
}

/// The data of one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record<'a> {
    /// `<from> <to> <mispreds> <count>` (LBR profiles).
    Branch {
        /// The branch source.
        from: RawLocation<'a>,
        /// The branch target.
        to: RawLocation<'a>,
        /// Times the branch was mispredicted.
        mispreds: i64,
        /// Times the branch was taken.
        count: i64,
    },
    /// `<at> <count>` (after a `no_lbr` header).
    Sample {
        /// The sampled location.
        at: RawLocation<'a>,
        /// Samples taken there.
        count: i64,
    },
    /// `<pc> <addr> <count>`, locations tagged 3, 4 or 5.
    Memory {
        /// The instruction that accessed memory.
        pc: RawLocation<'a>,
        /// The data address (symbol and offset) it accessed.
        addr: RawLocation<'a>,
        /// Times the access was sampled.
        count: i64,
    },
}

/// One data line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line's start.
    pub offset: u64,
    /// The text of the line's locations, from the line start to the end of the last offset:
    /// what merge-fdata keys its sums on.
    pub key: &'a [u8],
    /// The line's fields.
    pub record: Record<'a>,
}

/// The header lines of a profile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header<'a> {
    /// `boltedcollection`: the profile was collected on a BOLTed binary (translate through BAT).
    pub bolted_collection: bool,
    /// `no_lbr [events…]`: a basic-sample profile, with its event names.
    pub no_lbr: Option<Events<'a>>,
}

/// The event names of a `no_lbr` header, as written (escapes kept).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Events<'a> {
    raw: &'a [u8],
}

impl<'a> Events<'a> {
    /// The event names, split at unescaped spaces.
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let raw = self.raw;
        let mut start = 0;
        std::iter::from_fn(move || {
            if start >= raw.len() {
                return None;
            }
            let end = start + unescaped_space(&raw[start..]).unwrap_or(raw.len() - start);
            let name = &raw[start..end];
            start = end + 1;
            Some(name)
        })
    }
}

/// Reads the headers on creation, then yields one entry per data line. After an error it
/// yields nothing more.
#[derive(Clone, Debug)]
pub struct FdataReader<'a> {
    data: &'a [u8],
    pos: usize,
    line: u64,
    header: Header<'a>,
}

impl<'a> FdataReader<'a> {
    /// A reader over a whole fdata file; reads the header lines now (their errors come from here).
    pub fn new(data: &'a [u8]) -> Result<Self, FdataError> {
        let mut reader = FdataReader {
            data,
            pos: 0,
            line: 1,
            header: Header::default(),
        };
        reader.read_headers()?;
        Ok(reader)
    }

    /// The header lines read by [`Self::new`].
    pub fn header(&self) -> Header<'a> {
        self.header
    }

    fn read_headers(&mut self) -> Result<(), FdataError> {
        while self.pos < self.data.len() {
            let (text, next) = self.line_at(self.pos);
            let at = LineParser::new(text, self.line, self.pos as u64);
            if let Some(rest) = text.strip_prefix(b"boltedcollection") {
                if self.header.bolted_collection {
                    return Err(at.error(0, FdataErrorKind::MisplacedHeader("boltedcollection")));
                }
                if !rest.is_empty() {
                    return Err(at.error(
                        16,
                        FdataErrorKind::BadHeader {
                            header: "boltedcollection",
                            problem: "expected the end of the line after the word",
                        },
                    ));
                }
                self.header.bolted_collection = true;
            } else if let Some(rest) = text.strip_prefix(b"no_lbr") {
                if self.header.no_lbr.is_some() {
                    return Err(at.error(0, FdataErrorKind::MisplacedHeader("no_lbr")));
                }
                self.header.no_lbr = Some(parse_events(rest, &at)?);
            } else {
                break;
            }
            self.pos = next;
            self.line += 1;
        }
        Ok(())
    }

    /// The line starting at `start` (without its `\n`) and where the next one starts.
    fn line_at(&self, start: usize) -> (&'a [u8], usize) {
        let rest = &self.data[start..];
        match memchr(b'\n', rest) {
            Some(i) => (&rest[..i], start + i + 1),
            None => (rest, self.data.len()),
        }
    }
}

impl<'a> Iterator for FdataReader<'a> {
    type Item = Result<Entry<'a>, FdataError>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.pos < self.data.len() {
            let start = self.pos;
            let (text, next) = self.line_at(start);
            let line = self.line;
            self.pos = next;
            self.line += 1;
            if text.iter().all(|&b| b == b' ') {
                continue;
            }
            let parser = LineParser::new(text, line, start as u64);
            let result = parser.entry(self.header.no_lbr.is_some());
            if result.is_err() {
                self.pos = self.data.len();
            }
            return Some(result);
        }
        None
    }
}

/// Checks the text after `no_lbr`: nothing, or a space and single-space separated names.
fn parse_events<'a>(rest: &'a [u8], at: &LineParser) -> Result<Events<'a>, FdataError> {
    let bad = |column: usize, problem| {
        at.error(
            column,
            FdataErrorKind::BadHeader {
                header: "no_lbr",
                problem,
            },
        )
    };
    let raw = match rest.split_first() {
        None => return Ok(Events { raw: rest }),
        Some((b' ', raw)) => raw,
        Some(_) => {
            return Err(bad(
                6,
                "expected a space or the end of the line after no_lbr",
            ))
        }
    };
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'\\' if i + 1 == raw.len() => {
                return Err(at.error(7 + i, FdataErrorKind::DanglingEscape))
            }
            b'\\' => i += 2,
            b' ' if i == 0 || raw[i - 1] == b' ' => {
                return Err(bad(7 + i, "expected one space between event names"))
            }
            _ => i += 1,
        }
    }
    Ok(Events { raw })
}

/// Which location tags a line's locations take.
#[derive(Clone, Copy)]
enum Family {
    Branch,
    Memory,
}

/// Parses one line; positions are indices into `text`.
struct LineParser<'a> {
    text: &'a [u8],
    pos: usize,
    line: u64,
    line_offset: u64,
}

impl<'a> LineParser<'a> {
    fn new(text: &'a [u8], line: u64, line_offset: u64) -> Self {
        LineParser {
            text,
            pos: 0,
            line,
            line_offset,
        }
    }

    fn error(&self, pos: usize, kind: FdataErrorKind) -> FdataError {
        FdataError::new(self.line, pos + 1, self.line_offset + pos as u64, kind)
    }

    fn entry(mut self, no_lbr: bool) -> Result<Entry<'a>, FdataError> {
        let (record, key_end) = match self.text[0] {
            b'0'..=b'2' if no_lbr => self.sample()?,
            b'0'..=b'2' => self.branch()?,
            b'3'..=b'5' => self.memory()?,
            _ => return Err(self.unexpected_line_start(no_lbr)),
        };
        Ok(Entry {
            line: self.line,
            offset: self.line_offset,
            key: &self.text[..key_end],
            record,
        })
    }

    fn branch(&mut self) -> Result<(Record<'a>, usize), FdataError> {
        let from = self.location(Family::Branch)?;
        self.separator("the target location")?;
        let to = self.location(Family::Branch)?;
        let key_end = self.pos;
        self.separator("the misprediction count")?;
        let mispreds = self.decimal("misprediction count")?;
        self.separator("the branch count")?;
        let count = self.decimal("branch count")?;
        self.end("a branch line is `<from> <to> <mispreds> <count>`")?;
        let record = Record::Branch {
            from,
            to,
            mispreds,
            count,
        };
        Ok((record, key_end))
    }

    fn sample(&mut self) -> Result<(Record<'a>, usize), FdataError> {
        let at = self.location(Family::Branch)?;
        let key_end = self.pos;
        self.separator("the sample count")?;
        let count = self.decimal("sample count")?;
        self.end("a no_lbr profile's line is `<location> <count>`")?;
        Ok((Record::Sample { at, count }, key_end))
    }

    fn memory(&mut self) -> Result<(Record<'a>, usize), FdataError> {
        let pc = self.location(Family::Memory)?;
        self.separator("the memory address location")?;
        let addr = self.location(Family::Memory)?;
        let key_end = self.pos;
        self.separator("the access count")?;
        let count = self.decimal("access count")?;
        self.end("a memory line is `<pc> <address> <count>`")?;
        Ok((Record::Memory { pc, addr, count }, key_end))
    }

    /// `<tag> <name> <hex offset>`.
    fn location(&mut self, family: Family) -> Result<RawLocation<'a>, FdataError> {
        let tag = self.tag(family)?;
        self.separator("a name")?;
        let escaped_name = self.name()?;
        self.separator("a hexadecimal offset")?;
        let offset = self.hex("offset")?;
        Ok(RawLocation {
            tag,
            escaped_name,
            offset,
        })
    }

    fn tag(&mut self, family: Family) -> Result<u8, FdataError> {
        let (first, expected) = match family {
            Family::Branch => (b'0', "a location tag 0, 1 or 2"),
            Family::Memory => (b'3', "a memory location tag 3, 4 or 5"),
        };
        let pos = self.pos;
        if let [t, b' ', ..] = self.text[pos..] {
            if (first..first + 3).contains(&t) {
                self.pos += 1;
                return Ok(t - b'0');
            }
        }
        let field = self.field();
        match field {
            [t] if (first..first + 3).contains(t) => {}
            [t, ..] if (first..first + 3).contains(t) => {
                return Err(self.error(
                    pos + 1,
                    FdataErrorKind::ExpectedSpaceAfterTag {
                        found: quoted(&field[1..2]),
                    },
                ))
            }
            _ => {
                let found = if field.is_empty() {
                    "the end of the line".to_owned()
                } else {
                    quoted(field)
                };
                return Err(self.error(pos, FdataErrorKind::ExpectedTag { expected, found }));
            }
        }
        self.pos += 1;
        Ok(field[0] - b'0')
    }

    /// A name: up to the next unescaped space; `\` escapes the byte after it.
    fn name(&mut self) -> Result<&'a [u8], FdataError> {
        let start = self.pos;
        let mut i = start;
        while let Some(&b) = self.text.get(i) {
            match b {
                b' ' => break,
                b'\\' if i + 1 == self.text.len() => {
                    return Err(self.error(i, FdataErrorKind::DanglingEscape))
                }
                b'\\' => i += 2,
                _ => i += 1,
            }
        }
        self.pos = i;
        Ok(&self.text[start..i])
    }

    fn hex(&mut self, what: &'static str) -> Result<u64, FdataError> {
        let pos = self.pos;
        let field = self.field();
        let value = parse_hex(field).ok_or_else(|| {
            self.error(
                pos,
                FdataErrorKind::BadHex {
                    field: what,
                    found: quoted(field),
                },
            )
        })?;
        self.pos += field.len();
        Ok(value)
    }

    fn decimal(&mut self, what: &'static str) -> Result<i64, FdataError> {
        let pos = self.pos;
        let field = self.field();
        let value = parse_decimal(field).ok_or_else(|| {
            self.error(
                pos,
                FdataErrorKind::BadDecimal {
                    field: what,
                    found: quoted(field),
                },
            )
        })?;
        self.pos += field.len();
        Ok(value)
    }

    /// One or more spaces, then something: `next` names what must follow.
    fn separator(&mut self, next: &'static str) -> Result<(), FdataError> {
        // Fields end at a space or at the end of the line, so only the end can be missing.
        self.skip_spaces();
        if self.pos == self.text.len() {
            return Err(self.error(self.pos, FdataErrorKind::MissingField(next)));
        }
        Ok(())
    }

    fn end(&mut self, form: &'static str) -> Result<(), FdataError> {
        self.skip_spaces();
        if self.pos == self.text.len() {
            return Ok(());
        }
        let found = quoted(self.field());
        Err(self.error(self.pos, FdataErrorKind::TrailingField { form, found }))
    }

    fn skip_spaces(&mut self) {
        while self.text.get(self.pos) == Some(&b' ') {
            self.pos += 1;
        }
    }

    /// The bytes from here to the next space or the end of the line.
    fn field(&self) -> &'a [u8] {
        // Fields are a few bytes long: a plain scan beats memchr's set-up.
        let rest = &self.text[self.pos..];
        let len = rest.iter().position(|&b| b == b' ').unwrap_or(rest.len());
        &rest[..len]
    }

    fn unexpected_line_start(&self, no_lbr: bool) -> FdataError {
        for header in ["boltedcollection", "no_lbr"] {
            if self.text.starts_with(header.as_bytes()) {
                return self.error(0, FdataErrorKind::MisplacedHeader(header));
            }
        }
        let expected = if no_lbr {
            "a sample line (tag 0, 1 or 2) or a memory line (tag 3, 4 or 5)"
        } else {
            "a branch line (tag 0, 1 or 2) or a memory line (tag 3, 4 or 5)"
        };
        let found = if self.text[0] == b' ' {
            "a leading space".to_owned()
        } else {
            quoted(self.field())
        };
        self.error(0, FdataErrorKind::ExpectedTag { expected, found })
    }
}

/// Hexadecimal digits of either case, no prefix, value within 64 bits.
fn parse_hex(field: &[u8]) -> Option<u64> {
    if field.is_empty() {
        return None;
    }
    field.iter().try_fold(0u64, |acc, &b| {
        let digit = (b as char).to_digit(16)?;
        acc.checked_mul(16)?.checked_add(u64::from(digit))
    })
}

/// An optional `-` and decimal digits, within `i64`.
fn parse_decimal(field: &[u8]) -> Option<i64> {
    let (negative, digits) = match field.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, field),
    };
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0i64, |acc, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        let digit = i64::from(b - b'0');
        let scaled = acc.checked_mul(10)?;
        if negative {
            scaled.checked_sub(digit)
        } else {
            scaled.checked_add(digit)
        }
    })
}

/// The index of the first space not escaped by a backslash.
fn unescaped_space(text: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(k) = memchr2(b' ', b'\\', &text[i..]) {
        if text[i + k] == b' ' {
            return Some(i + k);
        }
        i += k + 2;
        if i >= text.len() {
            return None;
        }
    }
    None
}

/// Removes LLVM's escapes: `\x` stands for `x`.
pub fn unescape(escaped: &[u8]) -> Cow<'_, [u8]> {
    if memchr(b'\\', escaped).is_none() {
        return Cow::Borrowed(escaped);
    }
    let mut out = Vec::with_capacity(escaped.len());
    let mut bytes = escaped.iter();
    while let Some(&b) = bytes.next() {
        out.push(if b == b'\\' {
            bytes.next().copied().unwrap_or(b'\\')
        } else {
            b
        });
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> Vec<Entry<'_>> {
        FdataReader::new(text.as_bytes())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn loc(tag: u8, name: &str, offset: u64) -> RawLocation<'_> {
        RawLocation {
            tag,
            escaped_name: name.as_bytes(),
            offset,
        }
    }

    fn error(text: &str) -> FdataError {
        match FdataReader::new(text.as_bytes()) {
            Err(e) => e,
            Ok(reader) => reader
                .filter_map(Result::err)
                .next()
                .unwrap_or_else(|| panic!("{text:?} was accepted")),
        }
    }

    #[test]
    fn reads_every_lbr_form() {
        let text = "boltedcollection\n\
                    1 main 151 1 qsort@PLT 0 0 9\n\
                    0 [unknown] 7f0000002000 2 rarely/1 1E -2 11\n\
                    \n\
                    4 f 4 3 [unknown] 7f00 1\n\
                    1   a\\ b\\\\c  10 1 x 0 3 -5   \n\
                    5 g 0 5 obj 8 2";
        let reader = FdataReader::new(text.as_bytes()).unwrap();
        assert!(reader.header().bolted_collection);
        assert!(reader.header().no_lbr.is_none());
        let got: Vec<_> = reader.map(Result::unwrap).collect();
        assert_eq!(got.len(), 5);
        assert_eq!(
            got[0].record,
            Record::Branch {
                from: loc(1, "main", 0x151),
                to: loc(1, "qsort@PLT", 0),
                mispreds: 0,
                count: 9
            }
        );
        assert_eq!((got[0].line, got[0].offset), (2, 17));
        assert_eq!(got[0].key, b"1 main 151 1 qsort@PLT 0");
        assert_eq!(
            got[1].record,
            Record::Branch {
                from: loc(0, "[unknown]", 0x7f00_0000_2000),
                to: loc(2, "rarely/1", 0x1e),
                mispreds: -2,
                count: 11
            }
        );
        assert_eq!(
            got[2].record,
            Record::Memory {
                pc: loc(4, "f", 4),
                addr: loc(3, "[unknown]", 0x7f00),
                count: 1
            }
        );
        assert_eq!(got[2].line, 5, "the blank line is skipped but counted");
        let Record::Branch { from, count, .. } = got[3].record else {
            panic!("{:?}", got[3])
        };
        assert_eq!(from.escaped_name, b"a\\ b\\\\c");
        assert_eq!(&*from.name(), b"a b\\c");
        assert_eq!(count, -5);
        assert_eq!(got[3].key, b"1   a\\ b\\\\c  10 1 x 0");
        assert_eq!(
            got[4].record,
            Record::Memory {
                pc: loc(5, "g", 0),
                addr: loc(5, "obj", 8),
                count: 2
            },
            "the last line may lack its newline"
        );
        assert!(loc(5, "g", 0).is_symbol() && loc(2, "g", 0).is_symbol());
        assert!(!loc(0, "g", 0).is_symbol() && !loc(3, "g", 0).is_symbol());
    }

    #[test]
    fn reads_no_lbr_profiles_and_their_events() {
        let text = "no_lbr cycles:u: instr\\ uctions\nboltedcollection\n1 main 10 5\n0 [unknown] 7f 1\n4 main 3 4 buf 0 2\n";
        let reader = FdataReader::new(text.as_bytes()).unwrap();
        let header = reader.header();
        assert!(header.bolted_collection);
        let events: Vec<_> = header.no_lbr.unwrap().iter().collect();
        assert_eq!(events, [&b"cycles:u:"[..], b"instr\\ uctions"]);
        let got: Vec<_> = reader.map(Result::unwrap).collect();
        assert_eq!(
            got[0].record,
            Record::Sample {
                at: loc(1, "main", 0x10),
                count: 5
            }
        );
        assert_eq!(got[0].key, b"1 main 10");
        assert!(matches!(got[2].record, Record::Memory { count: 2, .. }));
        for bare in ["no_lbr\n1 f 0 1\n", "no_lbr \n1 f 0 1\n", "no_lbr"] {
            let reader = FdataReader::new(bare.as_bytes()).unwrap();
            assert_eq!(
                reader.header().no_lbr.unwrap().iter().count(),
                0,
                "{bare:?}"
            );
        }
    }

    #[test]
    fn empty_input_has_no_entries() {
        assert!(entries("").is_empty());
        assert!(entries("\n\n").is_empty());
    }

    #[test]
    fn errors_name_line_column_and_expectation() {
        // (input, line, column, part of the message)
        let cases = [
            (
                "1 main 10 1 foo 0 2 x5\n",
                1,
                21,
                "expected a decimal branch count",
            ),
            (
                "1 main 10 1 foo 0 2\n",
                1,
                20,
                "expected the branch count, found the end",
            ),
            ("1 main 10 1 foo 0 2 5 7\n", 1, 23, "another field \"7\""),
            (
                "1 main 1g 1 foo 0 2 5\n",
                1,
                8,
                "expected a hexadecimal offset",
            ),
            (
                "1 main 10000000000000000 1 f 0 2 5\n",
                1,
                8,
                "hexadecimal offset",
            ),
            ("1 main 0x10 1 foo 0 2 5\n", 1, 8, "found \"0x10\""),
            (
                "1 f 0 1 g 0 0 9223372036854775808\n",
                1,
                15,
                "signed 64-bit",
            ),
            ("1 f 0 1 g 0 0 +5\n", 1, 15, "decimal branch count"),
            ("1 f 0 1 g 0 0 5\r\n", 1, 15, "found \"5\\r\""),
            (
                "1 f 0 3 g 0 0 5\n",
                1,
                7,
                "expected a location tag 0, 1 or 2, found \"3\"",
            ),
            ("4 f 0 1 g 0 5\n", 1, 7, "memory location tag 3, 4 or 5"),
            (
                "10 main 0 1 g 0 0 5\n",
                1,
                2,
                "space after the location tag, found \"0\"",
            ),
            ("x main 0\n", 1, 1, "expected a branch line (tag 0, 1 or 2)"),
            (
                "1 main\n",
                1,
                7,
                "expected a hexadecimal offset, found the end",
            ),
            ("1 main\\", 1, 7, "character after the backslash"),
            ("1 f 0 1 g 0 0 5\n\n1 f 0\n", 3, 6, "target location"),
            (
                "no_lbr e\n1 f 0 1 g 0 0 5\n",
                2,
                9,
                "a no_lbr profile's line",
            ),
            ("no_lbr  e\n", 1, 8, "one space between event names"),
            ("no_lbrx\n", 1, 7, "after no_lbr"),
            ("boltedcollection \n", 1, 17, "malformed boltedcollection"),
            ("no_lbr\nno_lbr\n", 2, 1, "only once"),
            (
                "1 f 0 1 g 0 0 5\nboltedcollection\n",
                2,
                1,
                "before every data line",
            ),
            (" 1 f 0 1 g 0 0 5\n", 1, 1, "found a leading space"),
        ];
        for (text, line, column, message) in cases {
            let e = error(text);
            let shown = e.to_string();
            assert_eq!((e.line, e.column), (line, column), "{text:?}: {shown}");
            assert!(shown.contains(message), "{text:?}: {shown}");
            assert!(shown.starts_with(&format!("line {line}, column {column} (byte offset ")));
        }
    }

    #[test]
    fn byte_offset_counts_from_the_input_start() {
        let e = error("1 f 0 1 g 0 0 5\n1 f 0 1 g 0 0 z\n");
        assert_eq!((e.line, e.column, e.offset), (2, 15, 16 + 14));
    }

    #[test]
    fn stops_after_an_error() {
        let reader = FdataReader::new(b"1 f\n1 f 0 1 g 0 0 5\n").unwrap();
        let results: Vec<_> = reader.collect();
        assert_eq!(results.len(), 1);
        assert!(results[0].is_err());
    }

    #[test]
    fn numbers_take_llvm_ranges() {
        assert_eq!(parse_hex(b"FFFFffffFFFFffff"), Some(u64::MAX));
        assert_eq!(parse_hex(b"0000000000000000001"), Some(1));
        assert_eq!(parse_hex(b""), None);
        assert_eq!(parse_decimal(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_decimal(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_decimal(b"-"), None);
        assert_eq!(parse_decimal(b"-0"), Some(0));
    }

    #[test]
    fn unescape_drops_one_backslash_per_escape() {
        assert_eq!(&*unescape(b"plain"), b"plain");
        assert!(matches!(unescape(b"plain"), Cow::Borrowed(_)));
        assert_eq!(&*unescape(b"a\\ b\\\\c\\d"), b"a b\\cd");
    }
}
