//! Landing pads from the exception tables: `.eh_frame` FDEs point at each function's LSDA in
//! `.gcc_except_table`, whose call-site table names the landing pads. BOLT starts a basic block
//! at every landing pad and never treats one as a call's continuation.

use hashbrown::HashMap;

use formats::bytes::{Endian, Reader};
use gimli::{
    BaseAddresses, CieOrFde, EhFrame, EndianSlice, FrameDescriptionEntry, LittleEndian, Pointer,
    UnwindSection,
};
use object::{Object, ObjectSection};

/// Landing-pad addresses keyed by the start address of the function (FDE) they belong to.
/// Malformed tables yield fewer entries, never an error: BOLT would only warn.
pub fn landing_pads(file: &object::File) -> HashMap<u64, Vec<u64>> {
    call_sites(file)
        .into_iter()
        .map(|(start, sites)| (start, sites.into_iter().map(|s| s.pad).collect()))
        .collect()
}

/// A call-site table entry with a landing pad: calls in `start..end` unwind to `pad`
/// (absolute addresses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallSite {
    /// First address of the range.
    pub start: u64,
    /// End of the range (exclusive).
    pub end: u64,
    /// The landing pad.
    pub pad: u64,
}

/// The call sites with a landing pad of every function with an LSDA, keyed by the start
/// address of its FDE, in table order.
pub fn call_sites(file: &object::File) -> HashMap<u64, Vec<CallSite>> {
    let mut pads: HashMap<u64, Vec<CallSite>> = HashMap::new();
    // An LSDA is read wherever it lies, as BOLT does: a BOLTed binary's unchanged functions keep
    // theirs in `.bolt.org.gcc_except_table`, the original table renamed.
    let tables: Vec<(u64, &[u8])> = file
        .sections()
        .filter(|s| s.address() != 0)
        .filter_map(|s| Some((s.address(), s.data().ok()?)))
        .collect();
    let lsda_bytes = |lsda: u64| {
        tables.iter().find_map(|&(address, data)| {
            let offset = usize::try_from(lsda.checked_sub(address)?).ok()?;
            data.get(offset..).filter(|rest| !rest.is_empty())
        })
    };
    for_each_fde(file, |fde| {
        let Some(Pointer::Direct(lsda)) = fde.lsda() else {
            return;
        };
        let start = fde.initial_address();
        let Some(table) = lsda_bytes(lsda) else {
            return;
        };
        let found = call_site_pads(table, start).unwrap_or_default();
        if !found.is_empty() {
            pads.entry(start).or_default().extend(found);
        }
    });
    pads
}

/// Calls `f` with every FDE of `.eh_frame` that parses, in section order: entries that do not
/// parse are skipped, and the walk ends at the first that cannot be framed.
fn for_each_fde<'data>(
    file: &object::File<'data>,
    mut f: impl FnMut(&FrameDescriptionEntry<EndianSlice<'data, LittleEndian>>),
) {
    let Some(eh_frame) = file.section_by_name(".eh_frame") else {
        return;
    };
    let Ok(eh_data) = eh_frame.data() else {
        return;
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
        if let Ok(fde) = partial.parse(|s, b, o| s.cie_from_offset(b, o)) {
            f(&fde);
        }
    }
}

/// The call sites with landing pads of one LSDA (header, then the call-site table).
fn call_site_pads(lsda: &[u8], function_start: u64) -> Option<Vec<CallSite>> {
    let mut r = Reader::new(lsda, Endian::Little);
    let lp_start_encoding = r.u8().ok()?;
    let lp_start = if lp_start_encoding == DW_EH_PE_OMIT {
        function_start
    } else {
        encoded(&mut r, lp_start_encoding)?
    };
    if r.u8().ok()? != DW_EH_PE_OMIT {
        r.uleb128().ok()?; // type table offset
    }
    let encoding = r.u8().ok()?;
    let length = r.uleb128().ok()?;
    let end = r.offset().checked_add(length)?;
    let mut pads = Vec::new();
    while r.offset() < end {
        let start = encoded(&mut r, encoding)?;
        let length = encoded(&mut r, encoding)?;
        let pad = encoded(&mut r, encoding)?;
        r.uleb128().ok()?; // action
        if pad != 0 {
            let start = function_start.wrapping_add(start);
            pads.push(CallSite {
                start,
                end: start.wrapping_add(length),
                pad: lp_start.wrapping_add(pad),
            });
        }
    }
    Some(pads)
}

const DW_EH_PE_OMIT: u8 = 0xff;

/// A value in one of the `DW_EH_PE_*` formats used by call-site tables (absolute values: the
/// offsets in call-site tables are relative to LPStart by definition).
fn encoded(r: &mut Reader<'_>, encoding: u8) -> Option<u64> {
    match encoding & 0x0f {
        0x00 | 0x04 | 0x0c => r.u64().ok(),
        0x01 => r.uleb128().ok(),
        0x02 => r.u16().ok().map(u64::from),
        0x03 => r.u32().ok().map(u64::from),
        0x09 => r.sleb128().ok().map(|v| v as u64),
        0x0a => r.u16().ok().map(|v| v as i16 as i64 as u64),
        0x0b => r.u32().ok().map(|v| v as i32 as i64 as u64),
        _ => None,
    }
}

/// `(start, length)` of every FDE in `.eh_frame`, in section order; malformed entries are
/// skipped.
pub fn fde_ranges(file: &object::File) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for_each_fde(file, |fde| out.push((fde.initial_address(), fde.len())));
    out
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
        let site = CallSite {
            start: 0x1004,
            end: 0x1009,
            pad: 0x1020,
        };
        assert_eq!(call_site_pads(&lsda, 0x1000), Some(vec![site]));
    }

    #[test]
    fn truncated_table_is_rejected() {
        assert_eq!(call_site_pads(&[0xff, 0xff, 0x01, 8, 0x04], 0), None);
    }
}
