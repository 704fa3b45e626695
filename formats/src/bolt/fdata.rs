//! BOLT's symbolized text profile, "fdata" (`perf2bolt -o x.fdata`, `llvm-bolt --data`).
//!
//! Lines, all space separated and `\n` terminated:
//! * branch: `<loc> <loc> <mispreds> <count>`, locations `1 <name> <hexoff>` (symbol) or
//!   `0 [unknown] <hexoff>`;
//! * basic sample (after a `no_lbr[ <event>…]` header): `<loc> <hits>`;
//! * memory access: `<loc> <loc> <count>` with location tags `4` (symbol) / `3` (unknown);
//! * an optional first line `boltedcollection` (profile of a BOLTed binary, via BAT).
//!
//! Names are escaped as LLVM's `getEscapedName` does: a backslash before every space and
//! backslash. Offsets are lowercase hex without prefix or leading zeros.

use std::io::{self, Write};

use super::preagg::format_hex;

mod error;
mod reader;

pub use error::{FdataError, FdataErrorKind};
pub use reader::{unescape, Entry, Events, FdataReader, Header, RawLocation, Record};

/// One end of a branch or sample: a function and an offset in it, or an unknown address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location<'a> {
    /// The name is a function (or data object) symbol; `false` prints `[unknown]`-style tags.
    pub is_symbol: bool,
    /// Unescaped name; empty is printed as `[unknown]`.
    pub name: &'a str,
    /// Offset from the symbol's start (or the address, for `[unknown]`), written in hex.
    pub offset: u64,
}

impl<'a> Location<'a> {
    /// A location `offset` bytes into symbol `name` (tag 1, or 4 in memory lines).
    pub fn symbol(name: &'a str, offset: u64) -> Self {
        Location {
            is_symbol: true,
            name,
            offset,
        }
    }

    /// An address outside any known symbol (tag 0, or 3 in memory lines), printed as `[unknown]`.
    pub fn unknown(offset: u64) -> Self {
        Location {
            is_symbol: false,
            name: "",
            offset,
        }
    }
}

/// Streams fdata lines into any `io::Write`, formatting numbers without allocating.
pub struct FdataWriter<W: Write> {
    out: W,
}

impl<W: Write> FdataWriter<W> {
    /// A writer that writes lines to `out` as they come (wrap a file in a `BufWriter`).
    pub fn new(out: W) -> Self {
        FdataWriter { out }
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// The `boltedcollection` header; must come first.
    pub fn bolted_collection(&mut self) -> io::Result<()> {
        self.out.write_all(b"boltedcollection\n")
    }

    /// The `no_lbr` header of a basic-sample profile, with its event names.
    pub fn no_lbr<S: AsRef<str>>(&mut self, events: &[S]) -> io::Result<()> {
        self.out.write_all(b"no_lbr")?;
        for event in events {
            self.out.write_all(b" ")?;
            self.out.write_all(event.as_ref().as_bytes())?;
        }
        self.out.write_all(b"\n")
    }

    /// A branch line `<from> <to> <mispreds> <count>` (LBR profiles).
    pub fn branch(
        &mut self,
        from: &Location,
        to: &Location,
        mispreds: i64,
        count: i64,
    ) -> io::Result<()> {
        self.location(from, b"1 ", b"0 ")?;
        self.location(to, b"1 ", b"0 ")?;
        self.branch_counts(mispreds, count)
    }

    /// The end of a branch line: `<mispreds> <count>\n`.
    fn branch_counts(&mut self, mispreds: i64, count: i64) -> io::Result<()> {
        self.decimal(mispreds)?;
        self.out.write_all(b" ")?;
        self.decimal(count)?;
        self.out.write_all(b"\n")
    }

    /// A sample line `<at> <hits>` (after a `no_lbr` header).
    pub fn sample(&mut self, at: &Location, hits: i64) -> io::Result<()> {
        self.location(at, b"1 ", b"0 ")?;
        self.decimal(hits)?;
        self.out.write_all(b"\n")
    }

    /// A memory line `<pc> <addr> <count>`: a load at `pc` touched `addr`.
    pub fn memory(&mut self, pc: &Location, addr: &Location, count: i64) -> io::Result<()> {
        self.location(pc, b"4 ", b"3 ")?;
        self.location(addr, b"4 ", b"3 ")?;
        self.decimal(count)?;
        self.out.write_all(b"\n")
    }

    /// A branch line from precomputed location prefixes ([`location_prefix`]): the fast path
    /// for writers that print the same names many times.
    pub fn branch_with_prefixes(
        &mut self,
        (from_prefix, from_offset): (&[u8], u64),
        (to_prefix, to_offset): (&[u8], u64),
        mispreds: i64,
        count: i64,
    ) -> io::Result<()> {
        let mut buf = [0u8; 16];
        self.out.write_all(from_prefix)?;
        self.out.write_all(format_hex(from_offset, &mut buf))?;
        self.out.write_all(b" ")?;
        self.out.write_all(to_prefix)?;
        self.out.write_all(format_hex(to_offset, &mut buf))?;
        self.out.write_all(b" ")?;
        self.branch_counts(mispreds, count)
    }

    fn location(
        &mut self,
        loc: &Location,
        symbol_tag: &[u8],
        unknown_tag: &[u8],
    ) -> io::Result<()> {
        self.out.write_all(if loc.is_symbol {
            symbol_tag
        } else {
            unknown_tag
        })?;
        if loc.name.is_empty() {
            self.out.write_all(b"[unknown]")?;
        } else {
            write_escaped(&mut self.out, loc.name)?;
        }
        self.out.write_all(b" ")?;
        let mut buf = [0u8; 16];
        self.out.write_all(format_hex(loc.offset, &mut buf))?;
        self.out.write_all(b" ")
    }

    fn decimal(&mut self, v: i64) -> io::Result<()> {
        let mut buf = itoa::Buffer::new();
        self.out.write_all(buf.format(v).as_bytes())
    }
}

/// The text of a branch or sample location up to its offset (`1 <escaped name> ` or
/// `0 [unknown] `), appended to `out`: see [`FdataWriter::branch_with_prefixes`].
pub fn location_prefix(out: &mut Vec<u8>, is_symbol: bool, name: &str) {
    out.extend_from_slice(if is_symbol { b"1 " } else { b"0 " });
    if name.is_empty() {
        out.extend_from_slice(b"[unknown]");
    } else {
        // Writing into a Vec cannot fail.
        let _ = write_escaped(out, name);
    }
    out.push(b' ');
}

/// LLVM's `getEscapedName`: a backslash before each space and backslash.
fn write_escaped(out: &mut impl Write, name: &str) -> io::Result<()> {
    let bytes = name.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b' ' || b == b'\\' {
            out.write_all(&bytes[start..i])?;
            out.write_all(b"\\")?;
            start = i;
        }
    }
    out.write_all(&bytes[start..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn prefixed_branches_equal_plain_ones() {
        let cases = [
            (Location::symbol("a b\\c", 0x10), Location::unknown(0)),
            (Location::unknown(0x7f00), Location::symbol("main", 0)),
            (
                Location::symbol("f/1", u64::MAX),
                Location::symbol("g", 0xabc),
            ),
        ];
        for (from, to) in cases {
            let mut plain = FdataWriter::new(Vec::new());
            plain.branch(&from, &to, 3, -7).unwrap();
            let (mut p, mut q) = (Vec::new(), Vec::new());
            location_prefix(&mut p, from.is_symbol, from.name);
            location_prefix(&mut q, to.is_symbol, to.name);
            let mut fast = FdataWriter::new(Vec::new());
            fast.branch_with_prefixes((&p, from.offset), (&q, to.offset), 3, -7)
                .unwrap();
            assert_eq!(fast.into_inner(), plain.into_inner());
        }
    }

    #[test]
    fn lines_have_bolt_shape() {
        let mut w = FdataWriter::new(Vec::new());
        w.branch(
            &Location::symbol("main", 0x167),
            &Location::symbol("work", 0),
            3,
            100,
        )
        .unwrap();
        w.branch(
            &Location::unknown(0),
            &Location::symbol("rarely/1", 0x1e),
            0,
            2,
        )
        .unwrap();
        w.sample(&Location::symbol("a b\\c", 0x10), 7).unwrap();
        w.memory(&Location::symbol("f", 4), &Location::unknown(0x7f00), 1)
            .unwrap();
        let text = String::from_utf8(w.into_inner()).unwrap();
        assert_eq!(
            text,
            "1 main 167 1 work 0 3 100\n\
             0 [unknown] 0 1 rarely/1 1e 0 2\n\
             1 a\\ b\\\\c 10 7\n\
             4 f 4 3 [unknown] 7f00 1\n"
        );
    }

    #[test]
    fn no_lbr_header_lists_events() {
        let mut w = FdataWriter::new(Vec::new());
        w.no_lbr::<&str>(&[]).unwrap();
        w.no_lbr(&["cycles:u:", "instructions:"]).unwrap();
        assert_eq!(
            String::from_utf8(w.into_inner()).unwrap(),
            "no_lbr\nno_lbr cycles:u: instructions:\n"
        );
    }

    /// What a generated profile holds, owned so proptest can shrink it.
    #[derive(Clone, Debug)]
    enum Line {
        Branch(Loc, Loc, i64, i64),
        Sample(Loc, i64),
        Memory(Loc, Loc, i64),
    }

    type Loc = (bool, String, u64);

    fn location() -> impl Strategy<Value = Loc> {
        // Names with spaces, backslashes, `/`, `@`, non-ASCII; empty prints `[unknown]`.
        let name = prop_oneof![
            Just(String::new()),
            "[^\n]{1,12}",
            "[a-z \\\\]{1,6}",
            "[a-z_]{1,8}/[0-9]",
        ];
        (any::<bool>(), name, any::<u64>())
    }

    fn profile() -> impl Strategy<Value = (bool, Option<Vec<String>>, Vec<Line>)> {
        let events = proptest::option::of(proptest::collection::vec("[a-z:]{1,8}", 0..3));
        (any::<bool>(), events).prop_flat_map(|(bolted, events)| {
            let no_lbr = events.is_some();
            let line = prop_oneof![
                (location(), location(), any::<i64>(), any::<i64>()).prop_map(
                    move |(a, b, m, c)| {
                        if no_lbr {
                            Line::Sample(a, c)
                        } else {
                            Line::Branch(a, b, m, c)
                        }
                    }
                ),
                (location(), location(), any::<i64>()).prop_map(|(a, b, c)| Line::Memory(a, b, c)),
            ];
            (
                Just(bolted),
                Just(events),
                proptest::collection::vec(line, 0..20),
            )
        })
    }

    fn as_location(l: &Loc) -> Location<'_> {
        Location {
            is_symbol: l.0,
            name: &l.1,
            offset: l.2,
        }
    }

    /// Checks a read location against the written one; `base` is 0 (branch) or 3 (memory).
    fn assert_same(read: &RawLocation, written: &Loc, base: u8) {
        let name = if written.1.is_empty() {
            "[unknown]"
        } else {
            &written.1
        };
        assert_eq!(read.tag, base + u8::from(written.0));
        assert_eq!(&*read.name(), name.as_bytes());
        assert_eq!(read.offset, written.2);
    }

    proptest! {
        #[test]
        fn written_profiles_read_back((bolted, events, lines) in profile()) {
            let mut w = FdataWriter::new(Vec::new());
            if bolted {
                w.bolted_collection().unwrap();
            }
            if let Some(events) = &events {
                w.no_lbr(events).unwrap();
            }
            for line in &lines {
                match line {
                    Line::Branch(a, b, m, c) => w.branch(&as_location(a), &as_location(b), *m, *c),
                    Line::Sample(a, c) => w.sample(&as_location(a), *c),
                    Line::Memory(a, b, c) => w.memory(&as_location(a), &as_location(b), *c),
                }
                .unwrap();
            }
            let text = w.into_inner();
            let reader = FdataReader::new(&text).unwrap();
            prop_assert_eq!(reader.header().bolted_collection, bolted);
            let read_events = reader
                .header()
                .no_lbr
                .map(|e| e.iter().map(|n| String::from_utf8(n.to_vec()).unwrap()).collect::<Vec<_>>());
            prop_assert_eq!(&read_events, &events);
            let entries: Vec<_> = reader.collect::<Result<_, _>>().unwrap();
            prop_assert_eq!(entries.len(), lines.len());
            for (entry, line) in entries.iter().zip(&lines) {
                match (entry.record, line) {
                    (Record::Branch { from, to, mispreds, count }, Line::Branch(a, b, m, c)) => {
                        assert_same(&from, a, 0);
                        assert_same(&to, b, 0);
                        prop_assert_eq!((mispreds, count), (*m, *c));
                    }
                    (Record::Sample { at, count }, Line::Sample(a, c)) => {
                        assert_same(&at, a, 0);
                        prop_assert_eq!(count, *c);
                    }
                    (Record::Memory { pc, addr, count }, Line::Memory(a, b, c)) => {
                        assert_same(&pc, a, 3);
                        assert_same(&addr, b, 3);
                        prop_assert_eq!(count, *c);
                    }
                    (read, written) => prop_assert!(false, "{read:?} read for {written:?}"),
                }
            }
        }

        #[test]
        fn any_bytes_read_without_panic(bytes in proptest::collection::vec(
            prop_oneof![Just(b' '), Just(b'\n'), Just(b'\\'), b'0'..b'6', b'a'..b'g', any::<u8>()],
            0..200,
        )) {
            if let Ok(reader) = FdataReader::new(&bytes) {
                for e in reader.flatten() {
                    prop_assert!(!e.key.is_empty());
                }
            }
        }
    }
}
