//! Name sections: chunks of `ULEB128 uncompressed length, ULEB128 compressed length (0 = plain),
//! bytes`, each holding names joined by `\x01`, with zero padding between chunks
//! (`collectGlobalObjectNameStrings` / `readAndDecodeStrings`).

use std::io::Read;

use super::error::{Error, ErrorKind, Result};
use super::md5_guid;
use crate::bytes::{write_uleb128, Endian, Reader};

/// The separator between names inside a chunk.
pub(crate) const NAME_SEPARATOR: u8 = 0x01;

/// Decoded names: one buffer and the span of each name, in section order.
#[derive(Clone, Debug, Default)]
pub struct NameList {
    buffer: Vec<u8>,
    spans: Vec<(usize, usize)>,
}

impl NameList {
    /// The names, in the order they were decoded.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.spans.iter().map(|&(s, e)| &self.buffer[s..e])
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Name `i` (0-based, decode order), or `None` past the end.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        self.spans.get(i).map(|&(s, e)| &self.buffer[s..e])
    }

    /// Adds another list's names after this one's.
    pub fn append(&mut self, other: NameList) {
        let base = self.buffer.len();
        self.buffer.extend_from_slice(&other.buffer);
        self.spans
            .extend(other.spans.iter().map(|&(s, e)| (s + base, e + base)));
    }

    /// Whether the list holds no names.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

/// Decodes a whole names section that starts at file offset `base`. An empty name is an error,
/// as in LLVM ("symbol name is empty").
pub(crate) fn decode_names(section: &[u8], base: usize) -> Result<NameList> {
    let mut list = NameList::default();
    let mut r = Reader::at(section, Endian::Little, base as u64);
    let length = |r: &mut Reader<'_>| {
        r.uleb128().map_err(|e| {
            Error::malformed(e.offset as usize, "bad ULEB128 length in the names section")
        })
    };
    while !r.is_empty() {
        let uncompressed_len = length(&mut r)?;
        let compressed_len = length(&mut r)?;
        let chunk_start = list.buffer.len();
        let at = r.offset() as usize;
        if compressed_len != 0 {
            let input = take(&mut r, compressed_len)?;
            inflate_into(input, uncompressed_len, &mut list.buffer)
                .map_err(|kind| Error::at_byte(at, kind))?;
        } else {
            let input = take(&mut r, uncompressed_len)?;
            list.buffer.extend_from_slice(input);
        }
        split_names(&mut list, chunk_start, r.offset() as usize)?;
        let padding = r.rest().iter().take_while(|&&b| b == 0).count();
        r.skip(padding).unwrap_or_default();
    }
    Ok(list)
}

fn take<'a>(r: &mut Reader<'a>, len: u64) -> Result<&'a [u8]> {
    let at = r.offset() as usize;
    usize::try_from(len)
        .ok()
        .and_then(|len| r.take(len).ok())
        .ok_or_else(|| {
            Error::malformed(
                at,
                format!("names chunk of {len} bytes runs past the end of the names section"),
            )
        })
}

/// Inflates one zlib chunk; LLVM fails when the stream is longer than announced and keeps a
/// shorter one.
fn inflate_into(
    input: &[u8],
    uncompressed_len: u64,
    out: &mut Vec<u8>,
) -> std::result::Result<(), ErrorKind> {
    let limit = uncompressed_len.saturating_add(1);
    let mut decoder = flate2::read::ZlibDecoder::new(input).take(limit);
    let before = out.len();
    decoder
        .read_to_end(out)
        .map_err(|e| ErrorKind::UncompressFailed(Some(e.into())))?;
    if (out.len() - before) as u64 > uncompressed_len {
        return Err(ErrorKind::UncompressFailed(None));
    }
    Ok(())
}

fn split_names(list: &mut NameList, chunk_start: usize, offset: usize) -> Result<()> {
    let chunk = &list.buffer[chunk_start..];
    let mut start = chunk_start;
    for piece in chunk.split(|&b| b == NAME_SEPARATOR) {
        if piece.is_empty() {
            return Err(Error::malformed(offset, "symbol name is empty"));
        }
        list.spans.push((start, start + piece.len()));
        start += piece.len() + 1;
    }
    Ok(())
}

/// Encodes names as one zlib-compressed chunk, level 9 (what LLVM writes when zlib is
/// available; the system zlib gives the same bytes).
pub(crate) fn encode_names_zlib(names: &[&[u8]], out: &mut Vec<u8>) {
    use std::io::Write;
    let joined = names.join(&NAME_SEPARATOR);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing to a Vec cannot fail.
    let compressed = z
        .write_all(&joined)
        .and_then(|()| z.finish())
        .unwrap_or_default();
    write_uleb128(out, joined.len() as u64);
    write_uleb128(out, compressed.len() as u64);
    out.extend_from_slice(&compressed);
}

/// MD5 → name lookups over the names of one profile (`InstrProfSymtab`).
#[derive(Clone, Debug, Default)]
pub struct Symtab {
    /// Sorted by hash; the first name seen wins for a hash.
    entries: Vec<(u64, Box<[u8]>)>,
}

impl Symtab {
    /// The table of `names`, keyed by their [`md5_guid`].
    pub fn from_names<'a>(names: impl IntoIterator<Item = &'a [u8]>) -> Symtab {
        let mut entries: Vec<(u64, Box<[u8]>)> = names
            .into_iter()
            .map(|n| (md5_guid(n), Box::from(n)))
            .collect();
        entries.sort_by_key(|e| e.0);
        entries.dedup_by_key(|e| e.0);
        Symtab { entries }
    }

    /// The name whose MD5 GUID is `hash`, if the table has one.
    pub fn name(&self, hash: u64) -> Option<&[u8]> {
        let i = self.entries.binary_search_by_key(&hash, |e| e.0).ok()?;
        Some(&self.entries[i].1)
    }
}
