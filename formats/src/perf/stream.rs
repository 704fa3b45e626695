//! Walking a buffer of records, and the zstd stream behind COMPRESSED records.

use super::error::{Error, ErrorKind, Offset};
use super::record::{hidden_payload, kind, RecordHeader, HEADER_SIZE};
use crate::bytes::Bytes;
use crate::error::Cause;

/// One record inside a buffer: its header, body (without header), and where it started.
#[derive(Clone, Copy, Debug)]
pub struct RecordRef<'a> {
    /// Stream offset of the record's header (absolute file offset, or decompressed-stream offset).
    pub offset: u64,
    /// The record's `perf_event_header`.
    pub header: RecordHeader,
    /// The record without its 8-byte header, `header.size - 8` bytes (hidden payloads not included).
    pub body: Bytes<'a>,
}

/// Outcome of looking for the next record at a position.
#[derive(Debug)]
pub enum Next<'a> {
    /// A whole record, and the position after it (including any hidden payload).
    Record(RecordRef<'a>, usize),
    /// The buffer ends inside a record that needs `need` bytes from `pos`.
    Incomplete {
        /// Bytes the record needs from `pos` (8 while the header itself is cut).
        need: u64,
    },
    /// Nothing left.
    End,
}

/// Finds the record at `pos` of `buf` (`base` is the stream offset of `buf[0]`).
#[inline]
pub fn next_record<'a>(buf: Bytes<'a>, pos: usize, base: u64) -> Result<Next<'a>, Error> {
    let left = buf.len().saturating_sub(pos);
    if left == 0 {
        return Ok(Next::End);
    }
    let Some(header) = RecordHeader::parse(buf, pos) else {
        return Ok(Next::Incomplete {
            need: HEADER_SIZE as u64,
        });
    };
    let size = header.size as usize;
    if size < HEADER_SIZE {
        return Err(Error::at(
            base + pos as u64,
            ErrorKind::RecordTooSmall { size: header.size },
        ));
    }
    if size > left {
        return Ok(Next::Incomplete { need: size as u64 });
    }
    let body = buf
        .sub(pos + HEADER_SIZE, size - HEADER_SIZE)
        .expect("checked length");
    let total = (size as u64).saturating_add(hidden_payload(header, body));
    if total > left as u64 {
        return Ok(Next::Incomplete { need: total });
    }
    let record = RecordRef {
        offset: base + pos as u64,
        header,
        body,
    };
    Ok(Next::Record(record, pos + total as usize))
}

/// Iterates the whole records of a buffer; a trailing partial record is an error (use
/// [`next_record`] directly to carry it over instead).
pub struct Records<'a> {
    buf: Bytes<'a>,
    pos: usize,
    base: u64,
    failed: bool,
}

impl<'a> Records<'a> {
    /// Iterates `buf`, whose first byte is at stream offset `base` (used in errors and [`RecordRef::offset`]).
    pub fn new(buf: Bytes<'a>, base: u64) -> Self {
        Records {
            buf,
            pos: 0,
            base,
            failed: false,
        }
    }

    /// Position (within the buffer) of the next record.
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<RecordRef<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match next_record(self.buf, self.pos, self.base) {
            Ok(Next::Record(r, next)) => {
                self.pos = next;
                Some(Ok(r))
            }
            Ok(Next::End) => None,
            Ok(Next::Incomplete { need }) => {
                self.failed = true;
                let have = (self.buf.len() - self.pos) as u64;
                Some(Err(Error::at(
                    self.base + self.pos as u64,
                    ErrorKind::PartialRecord { have, need },
                )))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// The payload of a COMPRESSED or COMPRESSED2 record.
pub fn compressed_payload<'a>(r: &RecordRef<'a>) -> Result<&'a [u8], Error> {
    if r.header.kind == kind::COMPRESSED {
        return Ok(r.body.data);
    }
    let data_size = r.body.u64(0).unwrap_or(u64::MAX);
    r.body
        .slice(8, usize::try_from(data_size).unwrap_or(usize::MAX))
        .ok_or_else(|| {
            Error::at(
                r.offset,
                ErrorKind::BadCompressed2 {
                    data_size,
                    record_size: r.header.size,
                },
            )
        })
}

/// One writer's zstd stream. perf never ends the frame and records straddle COMPRESSED chunks,
/// so the decoder persists across records and the caller carries partial records over.
pub struct ZstdStream {
    decoder: zstd::stream::raw::Decoder<'static>,
}

impl ZstdStream {
    /// A fresh zstd decoder for one writer's stream.
    pub fn new() -> Result<Self, Error> {
        let decoder = zstd::stream::raw::Decoder::new()
            .map_err(|e| Error::at(0, ErrorKind::Zstd(Cause::new(e))))?;
        Ok(ZstdStream { decoder })
    }

    /// Appends the decompression of `payload` to `out`. `record` locates errors.
    pub fn decompress(
        &mut self,
        payload: &[u8],
        out: &mut Vec<u8>,
        record: u64,
    ) -> Result<(), Error> {
        use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
        let mut input = InBuffer::around(payload);
        loop {
            if out.capacity() - out.len() < 128 * 1024 {
                out.reserve(1 << 20);
            }
            let spare_end = out.capacity();
            // zstd writes straight into the Vec's spare capacity and updates its length.
            let (result, written) = {
                let mut output = OutBuffer::around_pos(out, out.len());
                let result = self.decoder.run(&mut input, &mut output);
                (result, output.pos())
            };
            result.map_err(|e| Error {
                offset: Offset::Compressed {
                    record,
                    decompressed: written as u64,
                },
                kind: ErrorKind::Zstd(Cause::new(e)),
            })?;
            // Done once all input is consumed and the output was not filled to the brim
            // (a full buffer may hide more pending output).
            if input.pos() == payload.len() && written < spare_end {
                return Ok(());
            }
        }
    }
}
