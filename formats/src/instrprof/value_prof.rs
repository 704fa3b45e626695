//! `ValueProfData`: the value-profile block shared by raw (file byte order) and indexed
//! (little-endian) profiles.
//!
//! ```text
//! u32 TotalSize; u32 NumValueKinds;
//! per kind: u32 Kind; u32 NumValueSites; u8 SiteCount[NumValueSites]; pad to 8;
//!           {u64 Value; u64 Count}[sum of SiteCount]
//! ```

use crate::bytes::Bytes;

use super::error::{Error, ErrorKind, Result};
use super::record::{Record, ValueData, ValueSite, NUM_VALUE_KINDS};

/// A parsed block: the sites of each kind that appears, in file order, and its size.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValueProfBlock {
    /// `ValueProfData::TotalSize`: bytes of the block, header included (a multiple of 8).
    pub total_size: u32,
    /// (kind, sites) in the order the block lists them.
    pub kinds: Vec<(usize, Vec<ValueSite>)>,
}

fn record_header_size(num_sites: usize) -> usize {
    (8 + num_sites).next_multiple_of(8)
}

/// Parses the block at `off` (`ValueProfData::getValueProfData` + `checkIntegrity`). `max_kind`
/// is the last value kind the file's version knows (IPVK_Last).
pub(crate) fn parse_block(bytes: Bytes<'_>, off: usize, max_kind: usize) -> Result<ValueProfBlock> {
    if off.checked_add(8).is_none_or(|end| end > bytes.len()) {
        return Err(Error::at_byte(
            off,
            ErrorKind::Truncated("value profile data header"),
        ));
    }
    let total_size = bytes.u32(off).unwrap_or(0);
    let num_kinds = bytes.u32(off + 4).unwrap_or(0) as usize;
    if off + total_size as usize > bytes.len() {
        return Err(Error::at_byte(off, ErrorKind::TooLarge));
    }
    if num_kinds > max_kind + 1 {
        return Err(Error::malformed(
            off,
            "number of value profile kinds is invalid",
        ));
    }
    if !total_size.is_multiple_of(8) {
        return Err(Error::malformed(
            off,
            "total size is not multiples of quardword",
        ));
    }
    let block = Bytes::new(&bytes.data[off..off + total_size as usize], bytes.endian);
    let mut kinds = Vec::with_capacity(num_kinds);
    let mut pos = 8usize;
    for _ in 0..num_kinds {
        let too_big = || {
            Error::malformed(
                off + pos,
                "value profile address is greater than total size",
            )
        };
        let kind = block.u32(pos).ok_or_else(too_big)? as usize;
        if kind > max_kind {
            return Err(Error::malformed(off + pos, "value kind is invalid"));
        }
        let num_sites = block.u32(pos + 4).ok_or_else(too_big)? as usize;
        let counts = block.slice(pos + 8, num_sites).ok_or_else(too_big)?;
        let num_values: usize = counts.iter().map(|&c| c as usize).sum();
        let size = record_header_size(num_sites) + 16 * num_values;
        if pos + size > block.len() {
            return Err(too_big());
        }
        let mut value_off = pos + record_header_size(num_sites);
        let mut sites = Vec::with_capacity(num_sites);
        for &n in counts {
            let mut site = Vec::with_capacity(n as usize);
            for _ in 0..n {
                site.push(ValueData {
                    value: block.u64(value_off).ok_or_else(too_big)?,
                    count: block.u64(value_off + 8).ok_or_else(too_big)?,
                });
                value_off += 16;
            }
            sites.push(site);
        }
        kinds.push((kind, sites));
        pos += size;
    }
    Ok(ValueProfBlock { total_size, kinds })
}

/// Bytes `serialize` writes for a record: 8, plus each kind with sites.
pub(crate) fn serialized_size(record: &Record) -> usize {
    8 + record
        .values
        .iter()
        .filter(|sites| !sites.is_empty())
        .map(|sites| {
            record_header_size(sites.len()) + 16 * sites.iter().map(Vec::len).sum::<usize>()
        })
        .sum::<usize>()
}

/// Writes a record's block little-endian, as `ValueProfData::serializeFrom` does (kinds in
/// increasing order, every kind with sites even when all are empty; padding zeroed).
pub(crate) fn serialize_le(record: &Record, out: &mut Vec<u8>) {
    let total = serialized_size(record);
    out.extend_from_slice(&(total as u32).to_le_bytes());
    out.extend_from_slice(&(record.num_value_kinds() as u32).to_le_bytes());
    for kind in 0..NUM_VALUE_KINDS {
        let sites = &record.values[kind];
        if sites.is_empty() {
            continue;
        }
        out.extend_from_slice(&(kind as u32).to_le_bytes());
        out.extend_from_slice(&(sites.len() as u32).to_le_bytes());
        let header_end = out.len() - 8 + record_header_size(sites.len());
        out.extend(sites.iter().map(|s| s.len() as u8));
        out.resize(header_end, 0);
        for v in sites.iter().flatten() {
            out.extend_from_slice(&v.value.to_le_bytes());
            out.extend_from_slice(&v.count.to_le_bytes());
        }
    }
}
