//! The `.proftext` form: reader (`TextInstrProfReader`) and writer (`InstrProfWriter::writeText`).

use std::io::{self, Write};

use super::error::{Error, ErrorKind, Result};
use super::kind::ProfileKind;
use super::md5_guid;
use super::names::Symtab;
use super::record::{
    Record, ValueData, IPVK_INDIRECT_CALL_TARGET, IPVK_VTABLE_TARGET, NUM_VALUE_KINDS,
};
use super::{TemporalTrace, TemporalTraces};

const EXTERNAL_SYMBOL: &[u8] = b"** External Symbol **";

/// Text is recognised when its first (up to) 8 bytes are printable ASCII or whitespace.
pub(crate) fn has_format(data: &[u8]) -> bool {
    data.iter()
        .take(8)
        .all(|&c| (0x20..=0x7e).contains(&c) || matches!(c, b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
}

/// LLVM's `line_iterator` with blank lines skipped and `#` comments: a NUL ends the buffer and
/// `\r\n` ends a line like `\n`.
struct Lines<'a> {
    data: &'a [u8],
    pos: usize,
    line_no: usize,
    current: Option<(&'a [u8], usize)>,
}

impl<'a> Lines<'a> {
    fn new(data: &'a [u8]) -> Lines<'a> {
        let end = memchr::memchr(0, data).unwrap_or(data.len());
        let mut lines = Lines {
            data: &data[..end],
            pos: 0,
            line_no: 0,
            current: None,
        };
        lines.advance();
        lines
    }

    fn advance(&mut self) {
        let d = self.data;
        loop {
            if self.pos >= d.len() {
                self.current = None;
                return;
            }
            let rest = &d[self.pos..];
            let nl = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
            let mut line = &rest[..nl];
            if nl < rest.len() && line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            self.line_no += 1;
            let line_no = self.line_no;
            self.pos += (nl + 1).min(rest.len());
            if line.is_empty() || line[0] == b'#' {
                continue;
            }
            self.current = Some((line, line_no));
            return;
        }
    }

    fn peek(&self) -> Option<&'a [u8]> {
        self.current.map(|c| c.0)
    }

    fn line_no(&self) -> usize {
        self.current.map_or(self.line_no + 1, |c| c.1)
    }

    fn next_line(&mut self) -> Result<&'a [u8]> {
        let line = self.peek().ok_or_else(|| {
            Error::at_line(
                self.line_no(),
                ErrorKind::Truncated("the text profile ends inside a record"),
            )
        })?;
        self.advance();
        Ok(line)
    }
}

/// `StringRef::getAsUnsignedInteger`: radix 0 senses 0x/0b/0o/0 prefixes; the whole string must
/// be digits; overflow is detected the way LLVM does it.
pub fn parse_unsigned(s: &[u8], radix: u32) -> Option<u64> {
    let (mut s, radix) = if radix == 0 {
        sense_radix(s)
    } else {
        (s, radix)
    };
    if s.is_empty() {
        return None;
    }
    let mut result: u64 = 0;
    while let Some(&c) = s.first() {
        let v = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'z' => c - b'a' + 10,
            b'A'..=b'Z' => c - b'A' + 10,
            _ => return None,
        } as u64;
        if v >= u64::from(radix) {
            return None;
        }
        let prev = result;
        result = result.wrapping_mul(u64::from(radix)).wrapping_add(v);
        if result / u64::from(radix) < prev {
            return None;
        }
        s = &s[1..];
    }
    Some(result)
}

fn sense_radix(s: &[u8]) -> (&[u8], u32) {
    let lower = |i: usize| s.get(i).map(u8::to_ascii_lowercase);
    if s.len() >= 2 && s[0] == b'0' && lower(1) == Some(b'x') {
        (&s[2..], 16)
    } else if s.len() >= 2 && s[0] == b'0' && lower(1) == Some(b'b') {
        (&s[2..], 2)
    } else if s.starts_with(b"0o") {
        (&s[2..], 8)
    } else if s.len() > 1 && s[0] == b'0' && s[1].is_ascii_digit() {
        (&s[1..], 8)
    } else {
        (s, 10)
    }
}

fn parse_u32(s: &[u8]) -> Option<u32> {
    parse_unsigned(s, 10).and_then(|v| u32::try_from(v).ok())
}

fn trim(s: &[u8]) -> &[u8] {
    let is_space = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    let start = s.iter().position(|c| !is_space(c)).unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|c| !is_space(c))
        .map_or(start, |e| e + 1);
    &s[start..end]
}

/// A text profile: the header is read by [`TextReader::new`], records by
/// [`TextReader::read_records`].
pub struct TextReader<'a> {
    lines: Lines<'a>,
    kind: ProfileKind,
    /// The `:temporal_prof_traces` section, if the header announced one.
    pub temporal: TemporalTraces,
    /// Indirect-call and vtable target names met in value profiles (they join LLVM's symtab).
    pub value_names: Vec<Vec<u8>>,
    /// The vtable names among them (LLVM's `getVTableNames`).
    pub vtable_names: Vec<Vec<u8>>,
}

impl<'a> TextReader<'a> {
    /// Reads the header lines (`:ir`, `:fe`, `:csir`, ...) and any temporal traces.
    pub fn new(data: &'a [u8]) -> Result<TextReader<'a>> {
        let mut reader = TextReader {
            lines: Lines::new(data),
            kind: ProfileKind::UNKNOWN,
            temporal: TemporalTraces::default(),
            value_names: Vec::new(),
            vtable_names: Vec::new(),
        };
        reader.read_header()?;
        Ok(reader)
    }

    /// The kind the header lines declare.
    pub fn kind(&self) -> ProfileKind {
        self.kind
    }

    fn read_header(&mut self) -> Result<()> {
        while let Some(line) = self.lines.peek().filter(|l| l.starts_with(b":")) {
            let directive = trim(&line[1..]).to_ascii_lowercase();
            match directive.as_slice() {
                b"ir" => self.kind.insert(ProfileKind::IR),
                b"fe" => self.kind.insert(ProfileKind::FRONTEND),
                b"csir" => {
                    self.kind.insert(ProfileKind::IR);
                    self.kind.insert(ProfileKind::CONTEXT_SENSITIVE);
                }
                b"entry_first" => self.kind.insert(ProfileKind::ENTRY_FIRST),
                b"not_entry_first" => self.kind.remove(ProfileKind::ENTRY_FIRST),
                b"single_byte_coverage" => self.kind.insert(ProfileKind::SINGLE_BYTE_COVERAGE),
                b"temporal_prof_traces" => {
                    self.kind.insert(ProfileKind::TEMPORAL);
                    self.read_temporal()?;
                }
                _ => {
                    return Err(Error::at_line(
                        self.lines.line_no(),
                        ErrorKind::BadHeader(format!(
                            "unknown header directive '{}'",
                            crate::error::excerpt(line)
                        )),
                    ))
                }
            }
            self.lines.advance();
        }
        Ok(())
    }

    fn read_temporal(&mut self) -> Result<()> {
        let number = |lines: &mut Lines<'_>| -> Result<u64> {
            lines.advance();
            let line_no = lines.line_no();
            let line = lines.peek().ok_or_else(|| {
                Error::at_line(line_no, ErrorKind::Truncated("temporal profile traces"))
            })?;
            parse_unsigned(line, 0).ok_or_else(|| {
                Error::at_line(
                    line_no,
                    ErrorKind::Malformed("temporal profile trace number".into()),
                )
            })
        };
        let num = number(&mut self.lines)?;
        let num = u32::try_from(num).map_err(|_| {
            Error::at_line(
                self.lines.line_no(),
                ErrorKind::Malformed("number of traces".into()),
            )
        })?;
        self.temporal.stream_size = number(&mut self.lines)?;
        for _ in 0..num {
            let weight = number(&mut self.lines)?;
            self.lines.advance();
            let line = self.lines.peek().ok_or_else(|| {
                Error::at_line(
                    self.lines.line_no(),
                    ErrorKind::Truncated("temporal profile traces"),
                )
            })?;
            let names = line
                .split(|&c| c == b',')
                .filter(|n| !n.is_empty())
                .map(|n| md5_guid(trim(n)))
                .collect();
            self.temporal.traces.push(TemporalTrace { weight, names });
        }
        Ok(())
    }

    /// Reads every record. On error, the records already handed out stay handed out.
    pub fn read_records(&mut self, sink: &mut dyn FnMut(&[u8], Record)) -> Result<()> {
        self.read_records_noting_bitmaps(&mut |name, record, _| sink(name, record))
    }

    /// Like [`TextReader::read_records`], also telling whether the record had a `$` bitmap
    /// line. LLVM's text reader reuses one record and never clears its bitmap, so a record
    /// without that line inherits whatever bitmap the reused record still holds (see
    /// `engine::instrprof`).
    pub fn read_records_noting_bitmaps(
        &mut self,
        sink: &mut dyn FnMut(&[u8], Record, bool),
    ) -> Result<()> {
        while let Some(name) = self.lines.peek() {
            self.lines.advance();
            let (record, has_bitmap_line) = self.read_record()?;
            sink(name, record, has_bitmap_line);
        }
        Ok(())
    }

    fn malformed(&self, line_no: usize, why: &str) -> Error {
        Error::at_line(line_no, ErrorKind::Malformed(why.into()))
    }

    fn read_record(&mut self) -> Result<(Record, bool)> {
        let mut record = Record::default();
        let at = self.lines.line_no();
        record.hash = parse_unsigned(self.lines.next_line()?, 0)
            .ok_or_else(|| self.malformed(at, "function hash is not a valid integer"))?;
        let at = self.lines.line_no();
        let num_counters = parse_unsigned(self.lines.next_line()?, 10)
            .ok_or_else(|| self.malformed(at, "number of counters is not a valid integer"))?;
        if num_counters == 0 {
            return Err(self.malformed(at, "number of counters is zero"));
        }
        for _ in 0..num_counters {
            let at = self.lines.line_no();
            let count = parse_unsigned(self.lines.next_line()?, 10)
                .ok_or_else(|| self.malformed(at, "count is invalid"))?;
            record.counts.push(count);
        }
        let bitmap_line = self.lines.peek().filter(|l| l.starts_with(b"$"));
        if let Some(line) = bitmap_line {
            let at = self.lines.line_no();
            let n = parse_unsigned(trim(&line[1..]), 0).ok_or_else(|| {
                self.malformed(at, "number of bitmap bytes is not a valid integer")
            })?;
            self.lines.advance();
            // LLVM counts bitmap bytes with a u8 loop index: more than 255 never terminates
            // before the input runs out.
            if n > 255 {
                return Err(Error::at_line(
                    at,
                    ErrorKind::Truncated("more than 255 bitmap bytes"),
                ));
            }
            for _ in 0..n {
                let at = self.lines.line_no();
                let byte = parse_unsigned(self.lines.next_line()?, 0)
                    .and_then(|b| u8::try_from(b).ok())
                    .ok_or_else(|| self.malformed(at, "bitmap byte is not a valid integer"))?;
                record.bitmap.push(byte);
            }
        }
        self.read_value_profile(&mut record)?;
        Ok((record, bitmap_line.is_some()))
    }

    fn read_vp_number(&mut self) -> Result<u32> {
        let at = self.lines.line_no();
        parse_u32(self.lines.next_line()?)
            .ok_or_else(|| self.malformed(at, "value profile number is invalid"))
    }

    fn read_value_profile(&mut self, record: &mut Record) -> Result<()> {
        let Some(num_kinds) = self.lines.peek().and_then(parse_u32) else {
            return Ok(());
        };
        let at = self.lines.line_no();
        if num_kinds == 0 || num_kinds as usize > NUM_VALUE_KINDS {
            return Err(self.malformed(at, "number of value kinds is invalid"));
        }
        self.lines.advance();
        for _ in 0..num_kinds {
            let at = self.lines.line_no();
            let kind = self.read_vp_number()? as usize;
            if kind >= NUM_VALUE_KINDS {
                return Err(self.malformed(at, "value kind is invalid"));
            }
            let num_sites = self.read_vp_number()?;
            for _ in 0..num_sites {
                let num_values = self.read_vp_number()?;
                let mut site = Vec::new();
                for _ in 0..num_values {
                    let at = self.lines.line_no();
                    let line = self.lines.next_line()?;
                    let split = memchr::memrchr(b':', line);
                    let (value, count) = match split {
                        Some(i) => (&line[..i], &line[i + 1..]),
                        None => (line, &b""[..]),
                    };
                    let value = if kind == IPVK_INDIRECT_CALL_TARGET || kind == IPVK_VTABLE_TARGET {
                        if value == EXTERNAL_SYMBOL {
                            0
                        } else {
                            self.value_names.push(value.to_vec());
                            if kind == IPVK_VTABLE_TARGET {
                                self.vtable_names.push(value.to_vec());
                            }
                            md5_guid(value)
                        }
                    } else {
                        parse_unsigned(value, 10)
                            .ok_or_else(|| self.malformed(at, "value is invalid"))?
                    };
                    let count = parse_unsigned(count, 10)
                        .ok_or_else(|| self.malformed(at, "count is invalid"))?;
                    site.push(ValueData { value, count });
                }
                record.values[kind].push(site);
            }
        }
        Ok(())
    }
}

/// Writes a profile as text. `records` must be sorted by (name, hash); `symtab` resolves
/// indirect-call and vtable targets (unknown ones print as `** External Symbol **`).
pub fn write_text(
    out: &mut dyn Write,
    kind: ProfileKind,
    records: &[(&[u8], &Record)],
    symtab: &Symtab,
    temporal: &TemporalTraces,
) -> io::Result<()> {
    if kind.has(ProfileKind::CONTEXT_SENSITIVE) {
        out.write_all(b"# CSIR level Instrumentation Flag\n:csir\n")?;
    } else if kind.has(ProfileKind::IR) {
        out.write_all(b"# IR level Instrumentation Flag\n:ir\n")?;
    }
    if kind.has(ProfileKind::ENTRY_FIRST) {
        out.write_all(b"# Always instrument the function entry block\n:entry_first\n")?;
    }
    if kind.has(ProfileKind::SINGLE_BYTE_COVERAGE) {
        out.write_all(b"# Instrument block coverage\n:single_byte_coverage\n")?;
    }
    if kind.has(ProfileKind::TEMPORAL) {
        write_temporal(out, temporal, symtab)?;
    }
    for (name, record) in records {
        write_record(out, name, record, symtab)?;
    }
    Ok(())
}

fn write_temporal(out: &mut dyn Write, t: &TemporalTraces, symtab: &Symtab) -> io::Result<()> {
    out.write_all(b":temporal_prof_traces\n")?;
    writeln!(out, "# Num Temporal Profile Traces:\n{}", t.traces.len())?;
    writeln!(
        out,
        "# Temporal Profile Trace Stream Size:\n{}",
        t.stream_size
    )?;
    for trace in &t.traces {
        writeln!(out, "# Weight:\n{}", trace.weight)?;
        for &n in &trace.names {
            out.write_all(symtab.name(n).unwrap_or_default())?;
            out.write_all(b",")?;
        }
        out.write_all(b"\n")?;
    }
    out.write_all(b"\n")
}

const KIND_NAMES: [&str; NUM_VALUE_KINDS] = [
    "IPVK_IndirectCallTarget",
    "IPVK_MemOPSize",
    "IPVK_VTableTarget",
];

/// One record in text form (`InstrProfWriter::writeRecordInText`).
pub fn write_record(
    out: &mut dyn Write,
    name: &[u8],
    r: &Record,
    symtab: &Symtab,
) -> io::Result<()> {
    out.write_all(name)?;
    writeln!(
        out,
        "\n# Func Hash:\n{}\n# Num Counters:\n{}\n# Counter Values:",
        r.hash,
        r.counts.len()
    )?;
    for c in &r.counts {
        writeln!(out, "{c}")?;
    }
    if !r.bitmap.is_empty() {
        writeln!(
            out,
            "# Num Bitmap Bytes:\n${}\n# Bitmap Byte Values:",
            r.bitmap.len()
        )?;
        for b in &r.bitmap {
            writeln!(out, "0x{b:x}")?;
        }
        out.write_all(b"\n")?;
    }
    let num_kinds = r.num_value_kinds();
    if num_kinds == 0 {
        return out.write_all(b"\n");
    }
    writeln!(out, "# Num Value Kinds:\n{num_kinds}")?;
    for (kind, sites) in r.values.iter().enumerate() {
        if sites.is_empty() {
            continue;
        }
        writeln!(
            out,
            "# ValueKind = {}:\n{kind}\n# NumValueSites:\n{}",
            KIND_NAMES[kind],
            sites.len()
        )?;
        for site in sites {
            writeln!(out, "{}", site.len())?;
            for v in site {
                if kind == IPVK_INDIRECT_CALL_TARGET || kind == IPVK_VTABLE_TARGET {
                    out.write_all(symtab.name(v.value).unwrap_or(EXTERNAL_SYMBOL))?;
                    writeln!(out, ":{}", v.count)?;
                } else {
                    writeln!(out, "{}:{}", v.value, v.count)?;
                }
            }
        }
    }
    out.write_all(b"\n")
}
