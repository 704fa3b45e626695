//! The file header (file mode and pipe mode), the attr section and the feature sections.

use super::attr::EventAttr;
use super::error::{Error, ErrorKind, Result};
use super::record::{misc, RecordHeader};
use crate::bytes::{Bytes, Endian};

/// "PERFILE2" read as a little-endian u64.
pub const MAGIC: u64 = 0x3245_4c49_4652_4550;
/// `sizeof(struct perf_file_header)`: the `perf_file_header.size` of a current file-mode capture.
pub(crate) const FILE_HEADER_SIZE: u64 = 104;
/// `offsetof(perf_file_header, adds_features)`: the legacy header size, read with an empty feature bitmap.
pub(crate) const LEGACY_HEADER_SIZE: u64 = 72;
/// `sizeof(struct perf_pipe_file_header)` (`{u64 magic, u64 size}`): `size` in pipe mode.
pub(crate) const PIPE_HEADER_SIZE: u64 = 16;

/// Feature bits (`HEADER_*` in perf's header.h).
pub mod feature {
    /// `HEADER_BUILD_ID`: `perf_record_header_build_id` entries (see [`parse_build_ids`](super::parse_build_ids)).
    pub const BUILD_ID: u32 = 2;
    /// `HEADER_HOSTNAME`: one perf string.
    pub const HOSTNAME: u32 = 3;
    /// `HEADER_OSRELEASE`: one perf string (`uname -r`).
    pub const OSRELEASE: u32 = 4;
    /// `HEADER_VERSION`: one perf string, the perf tool version.
    pub const VERSION: u32 = 5;
    /// `HEADER_ARCH`: one perf string (`uname -m`).
    pub const ARCH: u32 = 6;
    /// `HEADER_CMDLINE`: `u32 nr` perf strings, the recording command line.
    pub const CMDLINE: u32 = 11;
    /// `HEADER_EVENT_DESC`: event names per attr.
    pub const EVENT_DESC: u32 = 12;
    /// `HEADER_COMPRESSED`: the compression parameters of `perf record -z`.
    pub const COMPRESSED: u32 = 27;
}

/// How a capture was written: `perf_file_header.size` tells them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `perf record -o file`: a 104-byte (or legacy 72-byte) header, attrs and data sections, feature sections.
    File,
    /// `perf record -o -`: a 16-byte header; attrs, features and build-ids arrive as records in the stream.
    Pipe,
}

/// Detects the byte order and mode from the first 16 bytes.
pub fn detect(data: &[u8]) -> Result<(Endian, Mode)> {
    let b = Bytes::new(data, Endian::Little);
    let magic = b
        .u64(0)
        .ok_or_else(|| Error::truncated(0, "file header", 16, data.len()))?;
    let endian = if magic == MAGIC {
        Endian::Little
    } else if magic.swap_bytes() == MAGIC {
        Endian::Big
    } else {
        return Err(Error::at(0, ErrorKind::BadMagic));
    };
    let b = Bytes::new(data, endian);
    let size = b
        .u64(8)
        .ok_or_else(|| Error::truncated(8, "file header", 16, data.len()))?;
    match size {
        PIPE_HEADER_SIZE => Ok((endian, Mode::Pipe)),
        FILE_HEADER_SIZE | LEGACY_HEADER_SIZE => Ok((endian, Mode::File)),
        other => Err(Error::at(8, ErrorKind::BadHeaderSize(other))),
    }
}

/// One event: its attr, its sample ids, and its name if the file says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttrEntry {
    /// The event's `perf_event_attr`.
    pub attr: EventAttr,
    /// The sample ids of this event (the attr's `ids` section, or the ids of a HEADER_ATTR record), in file order.
    pub ids: Vec<u64>,
    /// The event name from HEADER_EVENT_DESC (or an EVENT_UPDATE name), if the file has one.
    pub name: Option<String>,
}

/// One entry of the BUILD_ID feature (or a pipe-mode HEADER_BUILD_ID record).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildIdEntry {
    /// `pid` of the build-id entry (-1 for the kernel and for entries not tied to a process).
    pub pid: i32,
    /// `header.misc & PERF_RECORD_MISC_CPUMODE_MASK`: the cpumode the binary was mapped in.
    pub cpumode: u16,
    /// The build id bytes: the record's `size` byte wide with `PERF_RECORD_MISC_BUILD_ID_SIZE`, else the 20 bytes with trailing zeros stripped.
    pub build_id: Vec<u8>,
    /// The binary's path as recorded, without its NUL padding.
    pub filename: Vec<u8>,
}

/// The feature sections this project reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// HEADER_BUILD_ID entries, in file order.
    pub build_ids: Vec<BuildIdEntry>,
    /// HEADER_CMDLINE: the recording command line, one string per argument.
    pub cmdline: Vec<String>,
    /// HEADER_HOSTNAME.
    pub hostname: Option<String>,
    /// HEADER_OSRELEASE: the kernel release of the recording machine.
    pub os_release: Option<String>,
    /// HEADER_VERSION: the perf version that wrote the file.
    pub perf_version: Option<String>,
    /// HEADER_ARCH: the machine architecture (`uname -m`).
    pub arch: Option<String>,
}

/// A file-mode header with its attrs and features; the data section is `data_offset..+data_size`.
#[derive(Clone, Debug)]
pub struct FileHeader {
    /// Byte order of the file (from the magic); all sections are read in it.
    pub endian: Endian,
    /// The events of the attrs section, in file order.
    pub attrs: Vec<AttrEntry>,
    /// `perf_file_header.data.offset`: absolute file offset of the first record.
    pub data_offset: u64,
    /// `perf_file_header.data.size` in bytes; the feature-section table follows at `data_offset + data_size`.
    pub data_size: u64,
    /// The feature sections named by the header's `adds_features` bitmap (empty for a 72-byte header).
    pub features: Features,
    /// `perf_file_header.attrs.offset`: where the attr entries start (`attrs[i]` is at
    /// `attrs_offset + i * attr_size`), for errors about one attr.
    pub attrs_offset: u64,
    /// `perf_file_header.attr_size`: the size of one attr entry (attr and ids section).
    pub attr_size: u64,
}

impl FileHeader {
    /// Parses the header, attrs and feature sections of a whole file-mode capture.
    pub fn parse(data: &[u8]) -> Result<FileHeader> {
        let (endian, mode) = detect(data)?;
        if mode != Mode::File {
            return Err(Error::at(8, ErrorKind::BadHeaderSize(PIPE_HEADER_SIZE)));
        }
        let b = Bytes::new(data, endian);
        let header_size = b.u64(8).unwrap_or(0);
        let need = |off: usize| {
            b.u64(off)
                .ok_or_else(|| Error::truncated(0, "file header", header_size as usize, data.len()))
        };
        let attr_size = need(16)?;
        let (attrs_off, attrs_size) = (need(24)?, need(32)?);
        let (data_off, data_size) = (need(40)?, need(48)?);
        let feature_bits = if header_size == FILE_HEADER_SIZE {
            [need(72)?, need(80)?, need(88)?, need(96)?]
        } else {
            [0; 4]
        };
        let file_size = data.len() as u64;
        check_section(24, "attrs", attrs_off, attrs_size, file_size)?;
        check_section(40, "data", data_off, data_size, file_size)?;
        let mut attrs = parse_attrs(b, attrs_off, attrs_size, attr_size)?;
        let features = parse_feature_table(b, data_off + data_size, &feature_bits, &mut attrs)?;
        if attrs.is_empty() {
            return Err(Error::at(24, ErrorKind::NoAttrs));
        }
        Ok(FileHeader {
            endian,
            attrs,
            data_offset: data_off,
            data_size,
            features,
            attrs_offset: attrs_off,
            attr_size,
        })
    }
}

/// Checks that a section lies inside the file; `at` is the offset of the field that
/// describes it (a `perf_file_section` in the header, an attr or the feature table), which the
/// error reports.
fn check_section(
    at: u64,
    what: &'static str,
    offset: u64,
    size: u64,
    file_size: u64,
) -> Result<()> {
    match offset.checked_add(size) {
        Some(end) if end <= file_size => Ok(()),
        _ => Err(Error::at(
            at,
            ErrorKind::SectionOutOfBounds {
                what,
                offset,
                size,
                file_size,
            },
        )),
    }
}

fn parse_attrs(b: Bytes<'_>, off: u64, size: u64, attr_size: u64) -> Result<Vec<AttrEntry>> {
    if size == 0 {
        return Ok(Vec::new());
    }
    if attr_size < 64 + 16 {
        return Err(Error::at(16, ErrorKind::BadAttrSize(attr_size)));
    }
    let mut attrs = Vec::new();
    for i in 0..size / attr_size {
        let entry_off = off + i * attr_size;
        let entry = b
            .sub(entry_off as usize, attr_size as usize)
            .ok_or_else(|| {
                let available = b.len().saturating_sub(entry_off as usize);
                Error::truncated(entry_off, "attr entry", attr_size as usize, available)
            })?;
        let attr = EventAttr::parse(entry, entry_off)?;
        // The ids section follows the attr as this file wrote it (attr_size − 16 bytes).
        let ids_pos = attr_size as usize - 16;
        let ids_off = entry.u64(ids_pos).unwrap_or(0);
        let ids_size = entry.u64(ids_pos + 8).unwrap_or(0);
        let ids = read_u64s(b, entry_off + ids_pos as u64, ids_off, ids_size, "attr ids")?;
        attrs.push(AttrEntry {
            attr,
            ids,
            name: None,
        });
    }
    Ok(attrs)
}

fn read_u64s(b: Bytes<'_>, at: u64, off: u64, size: u64, what: &'static str) -> Result<Vec<u64>> {
    check_section(at, what, off, size, b.len() as u64)?;
    Ok((0..size / 8)
        .filter_map(|i| b.u64((off + 8 * i) as usize))
        .collect())
}

/// The feature table sits right after the data section: one `{offset, size}` per set bit.
fn parse_feature_table(
    b: Bytes<'_>,
    table_off: u64,
    bits: &[u64; 4],
    attrs: &mut [AttrEntry],
) -> Result<Features> {
    let mut features = Features::default();
    let mut slot = 0u64;
    for bit in 0..256u32 {
        if bits[(bit / 64) as usize] & (1 << (bit % 64)) == 0 {
            continue;
        }
        let entry = table_off + 16 * slot;
        slot += 1;
        let (Some(off), Some(size)) = (b.u64(entry as usize), b.u64(entry as usize + 8)) else {
            // perf itself tolerates a missing table (a killed recording); so do we.
            break;
        };
        check_section(entry, "feature", off, size, b.len() as u64)?;
        let section = b.sub(off as usize, size as usize).unwrap_or(b);
        apply_feature(&mut features, attrs, bit, section, off)?;
    }
    Ok(features)
}

/// Decodes one feature payload into `features` (shared by file and pipe mode).
pub fn apply_feature(
    features: &mut Features,
    attrs: &mut [AttrEntry],
    bit: u32,
    section: Bytes<'_>,
    offset: u64,
) -> Result<()> {
    match bit {
        feature::BUILD_ID => features.build_ids = parse_build_ids(section, offset)?,
        feature::HOSTNAME => features.hostname = perf_string(section, 0).map(|(s, _)| s),
        feature::OSRELEASE => features.os_release = perf_string(section, 0).map(|(s, _)| s),
        feature::VERSION => features.perf_version = perf_string(section, 0).map(|(s, _)| s),
        feature::ARCH => features.arch = perf_string(section, 0).map(|(s, _)| s),
        feature::CMDLINE => features.cmdline = perf_string_list(section),
        feature::EVENT_DESC => apply_event_desc(section, attrs),
        _ => {}
    }
    Ok(())
}

/// `u32 len; char str[len]` (NUL-padded). Returns the string and the offset after it.
fn perf_string(b: Bytes<'_>, off: usize) -> Option<(String, usize)> {
    let len = b.u32(off)? as usize;
    let raw = b.sub(off + 4, len)?.c_str(0)?;
    Some((String::from_utf8_lossy(raw).into_owned(), off + 4 + len))
}

fn perf_string_list(b: Bytes<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let nr = b.u32(0).unwrap_or(0);
    let mut off = 4;
    for _ in 0..nr {
        let Some((s, next)) = perf_string(b, off) else {
            break;
        };
        out.push(s);
        off = next;
    }
    out
}

/// EVENT_DESC: `u32 nr, attr_size; { attr; u32 nr_ids; string name; u64 ids[nr_ids] }[nr]`.
/// Names are matched to attrs by position (perf writes them in attr order).
fn apply_event_desc(b: Bytes<'_>, attrs: &mut [AttrEntry]) {
    let (Some(nr), Some(attr_size)) = (b.u32(0), b.u32(4)) else {
        return;
    };
    let mut off = 8usize;
    for i in 0..nr as usize {
        let Some(nr_ids) = b.u32(off + attr_size as usize) else {
            return;
        };
        let Some((name, next)) = perf_string(b, off + attr_size as usize + 4) else {
            return;
        };
        if let Some(entry) = attrs.get_mut(i) {
            entry.name = Some(name);
        }
        off = next + 8 * nr_ids as usize;
    }
}

/// A sequence of `perf_record_header_build_id`, each `{header; s32 pid; u8 build_id[24];
/// char filename[]}`, iterated by `header.size`.
pub fn parse_build_ids(b: Bytes<'_>, offset: u64) -> Result<Vec<BuildIdEntry>> {
    let mut out = Vec::new();
    let mut off = 0usize;
    while off + 8 <= b.len() {
        let header = RecordHeader::parse(b, off).expect("checked length");
        let size = header.size as usize;
        if size < 36 {
            return Err(Error::at(
                offset + off as u64,
                ErrorKind::RecordBodyTooShort {
                    record_type: header.kind,
                    size,
                },
            ));
        }
        if off + size > b.len() {
            return Err(Error::at(
                offset + off as u64,
                ErrorKind::Truncated {
                    what: "build-id entry",
                    needed: size as u64,
                    available: (b.len() - off) as u64,
                },
            ));
        }
        let rec = b.sub(off, size).expect("checked length");
        out.push(build_id_entry(rec, header.misc));
        off += size;
    }
    Ok(out)
}

/// Decodes one build-id record (header included). Without MISC_BUILD_ID_SIZE the id is 20 bytes
/// zero-padded; trailing zeros are stripped as perf does (8-byte lld ids stay 8 bytes).
pub fn build_id_entry(rec: Bytes<'_>, misc_bits: u16) -> BuildIdEntry {
    let raw = rec.slice(12, 20).unwrap_or(&[]);
    let build_id = if misc_bits & misc::BUILD_ID_SIZE != 0 {
        let size = rec.slice(32, 1).map_or(20, |s| s[0] as usize).min(20);
        raw[..size.min(raw.len())].to_vec()
    } else {
        let len = raw.iter().rposition(|&x| x != 0).map_or(0, |p| p + 1);
        raw[..len].to_vec()
    };
    BuildIdEntry {
        pid: rec.u32(8).unwrap_or(0) as i32,
        cpumode: misc_bits & misc::CPUMODE_MASK,
        build_id,
        filename: rec.c_str(36).unwrap_or(&[]).to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::error::Offset;

    /// A 104-byte file header with the given attrs, data and feature bits, little-endian.
    fn header(attrs: (u64, u64), data: (u64, u64), feature_bits: u64) -> Vec<u8> {
        let mut h = b"PERFILE2".to_vec();
        for v in [
            FILE_HEADER_SIZE,
            136,
            attrs.0,
            attrs.1,
            data.0,
            data.1,
            0,
            0,
        ] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        for v in [feature_bits, 0, 0, 0] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        h
    }

    /// Header-level errors point at the field that describes the bad section, not at 0.
    #[test]
    fn section_errors_give_the_describing_field() {
        let err = FileHeader::parse(&header((104, 1000), (104, 0), 0)).unwrap_err();
        assert_eq!(err.offset, Offset::File(24), "{err}");
        assert!(err.to_string().starts_with("byte offset 24: attrs section"));
        let err = FileHeader::parse(&header((104, 0), (104, 1000), 0)).unwrap_err();
        assert_eq!(err.offset, Offset::File(40), "{err}");
        // One feature (bit 2, BUILD_ID): its table entry right after the (empty) data
        // section, at 104, points past the end of the file.
        let mut file = header((104, 0), (104, 0), 1 << feature::BUILD_ID);
        file.extend_from_slice(&4096u64.to_le_bytes());
        file.extend_from_slice(&16u64.to_le_bytes());
        let err = FileHeader::parse(&file).unwrap_err();
        assert_eq!(err.offset, Offset::File(104), "{err}");
        assert!(
            err.to_string().contains("feature section [4096, +16)"),
            "{err}"
        );
    }
}
