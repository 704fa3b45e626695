//! Landing pads from the exception tables: `.eh_frame` FDEs point at each function's LSDA in
//! `.gcc_except_table`, whose call-site table names the landing pads. BOLT starts a basic block
//! at every landing pad and never treats one as a call's continuation.

use std::collections::HashMap;

use gimli::{BaseAddresses, CieOrFde, EhFrame, LittleEndian, Pointer, UnwindSection};
use object::{Object, ObjectSection};

/// Landing-pad addresses keyed by the start address of the function (FDE) they belong to.
/// Malformed tables yield fewer entries, never an error: BOLT would only warn.
pub fn landing_pads(file: &object::File) -> HashMap<u64, Vec<u64>> {
    let mut pads: HashMap<u64, Vec<u64>> = HashMap::new();
    let Some(eh_frame) = file.section_by_name(".eh_frame") else {
        return pads;
    };
    let Ok(eh_data) = eh_frame.data() else {
        return pads;
    };
    let except = file
        .section_by_name(".gcc_except_table")
        .and_then(|s| Some((s.address(), s.data().ok()?)));
    let Some((except_addr, except_data)) = except else {
        return pads;
    };
    let section = EhFrame::new(eh_data, LittleEndian);
    let mut bases = BaseAddresses::default().set_eh_frame(eh_frame.address());
    if let Some(text) = file.section_by_name(".text") {
        bases = bases.set_text(text.address());
    }
    let mut entries = section.entries(&bases);
    while let Ok(Some(entry)) = entries.next() {
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let Ok(fde) = partial.parse(|s, b, o| s.cie_from_offset(b, o)) else {
            continue;
        };
        let Some(Pointer::Direct(lsda)) = fde.lsda() else {
            continue;
        };
        let start = fde.initial_address();
        let Some(table) = lsda
            .checked_sub(except_addr)
            .and_then(|off| except_data.get(usize::try_from(off).ok()?..))
        else {
            continue;
        };
        let found = call_site_pads(table, start).unwrap_or_default();
        if !found.is_empty() {
            pads.entry(start).or_default().extend(found);
        }
    }
    pads
}

/// The landing pads of one LSDA (header, then the call-site table).
fn call_site_pads(lsda: &[u8], function_start: u64) -> Option<Vec<u64>> {
    let mut r = Reader { data: lsda, pos: 0 };
    let lp_start_encoding = r.u8()?;
    let lp_start = if lp_start_encoding == DW_EH_PE_OMIT {
        function_start
    } else {
        r.encoded(lp_start_encoding)?
    };
    if r.u8()? != DW_EH_PE_OMIT {
        r.uleb()?; // type table offset
    }
    let encoding = r.u8()?;
    let length = usize::try_from(r.uleb()?).ok()?;
    let end = r.pos.checked_add(length)?;
    let mut pads = Vec::new();
    while r.pos < end {
        let _start = r.encoded(encoding)?;
        let _length = r.encoded(encoding)?;
        let pad = r.encoded(encoding)?;
        r.uleb()?; // action
        if pad != 0 {
            pads.push(lp_start.wrapping_add(pad));
        }
    }
    Some(pads)
}

const DW_EH_PE_OMIT: u8 = 0xff;

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn u8(&mut self) -> Option<u8> {
        let b = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    fn bytes<const N: usize>(&mut self) -> Option<[u8; N]> {
        let b = self.data.get(self.pos..self.pos + N)?.try_into().ok()?;
        self.pos += N;
        Some(b)
    }

    fn uleb(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    fn sleb(&mut self) -> Option<u64> {
        let mut value = 0i64;
        let mut shift = 0;
        loop {
            let b = self.u8()?;
            value |= i64::from(b & 0x7f).checked_shl(shift)?;
            shift += 7;
            if b & 0x80 == 0 {
                if shift < 64 && b & 0x40 != 0 {
                    value |= -1i64 << shift;
                }
                return Some(value as u64);
            }
        }
    }

    /// A value in one of the `DW_EH_PE_*` formats used by call-site tables (absolute values:
    /// the offsets in call-site tables are relative to LPStart by definition).
    fn encoded(&mut self, encoding: u8) -> Option<u64> {
        match encoding & 0x0f {
            0x00 => self.bytes::<8>().map(u64::from_le_bytes),
            0x01 => self.uleb(),
            0x02 => self.bytes::<2>().map(|b| u64::from(u16::from_le_bytes(b))),
            0x03 => self.bytes::<4>().map(|b| u64::from(u32::from_le_bytes(b))),
            0x04 => self.bytes::<8>().map(u64::from_le_bytes),
            0x09 => self.sleb(),
            0x0a => self
                .bytes::<2>()
                .map(|b| i16::from_le_bytes(b) as i64 as u64),
            0x0b => self
                .bytes::<4>()
                .map(|b| i32::from_le_bytes(b) as i64 as u64),
            0x0c => self.bytes::<8>().map(u64::from_le_bytes),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_uleb_call_site_table() {
        // LPStart omitted, no type table, uleb128 call sites: two sites, one with a pad.
        let lsda = [
            0xff, 0xff, 0x01, 8, 0x04, 0x05, 0x20, 0x01, 0x10, 0x03, 0x00, 0x00,
        ];
        assert_eq!(call_site_pads(&lsda, 0x1000), Some(vec![0x1020]));
    }

    #[test]
    fn truncated_table_is_rejected() {
        assert_eq!(call_site_pads(&[0xff, 0xff, 0x01, 8, 0x04], 0), None);
    }
}
