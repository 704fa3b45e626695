//! LEB128 as LLVM encodes and decodes it (`encodeULEB128` / `decodeULEB128`).

use crate::bytes::Cursor;

/// Reads an unsigned LEB128 value. `None` when the input ends first or the value does not
/// fit 64 bits (LLVM's "uleb128 too big for uint64").
pub fn read_uleb(c: &mut Cursor<'_>) -> Option<u64> {
    let data = c.bytes.data;
    let mut value = 0u64;
    let mut shift = 0u32;
    let mut pos = c.pos;
    loop {
        let byte = *data.get(pos)?;
        pos += 1;
        let slice = u64::from(byte & 0x7f);
        if (shift >= 64 && slice != 0)
            || (shift < 64 && shift > 0 && (slice << shift) >> shift != slice)
        {
            return None;
        }
        if shift < 64 {
            value |= slice << shift;
        }
        shift += 7;
        if byte & 0x80 == 0 {
            break;
        }
    }
    c.pos = pos;
    Some(value)
}

/// Appends the minimal unsigned LEB128 encoding of `v`.
pub fn write_uleb(out: &mut Vec<u8>, mut v: u64) {
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
