//! Binary correlation (`llvm-profdata merge --binary-file`, LLVM 19's
//! `BinaryInstrProfCorrelator`): raw profiles written by a program built with
//! `-mllvm -profile-correlate=binary` hold only counters; the data records and names live in the
//! binary's `__llvm_covdata` and `__llvm_covnames` sections. The records' `CounterPtr` are
//! absolute addresses there, turned into offsets from the start of `__llvm_prf_cnts`.

use hashbrown::HashSet;

use super::data::{DataLayout, ProfileData};
use crate::bytes::{Bytes, Endian};

/// The profile data and names a binary provides for its raw profiles.
#[derive(Clone, Debug, Default)]
pub struct Correlation {
    /// Records with `counter_ptr` holding the offset into the counters section.
    pub records: Vec<ProfileData>,
    /// The names section, as in a raw profile.
    pub names: Vec<u8>,
}

/// What the binary's sections say.
pub struct BinarySections<'a> {
    /// The `__llvm_covdata` section (profile data records written into the binary).
    pub covdata: &'a [u8],
    /// The `__llvm_covnames` section (the names, as in a raw profile's names section).
    pub covnames: &'a [u8],
    /// Start address of the `__llvm_prf_cnts` section.
    pub counters_start: u64,
    /// End address of the `__llvm_prf_cnts` section.
    pub counters_end: u64,
    /// The binary's byte order.
    pub endian: Endian,
    /// Whether the binary has 64-bit pointers.
    pub ptr64: bool,
}

impl Correlation {
    /// `correlateProfileData`: the records of `__llvm_covdata` (raw version `version` layout),
    /// deduplicated by counter offset. `warn` gets LLVM's "CounterPtr out of range" warnings.
    pub fn from_sections(
        s: &BinarySections<'_>,
        version: u64,
        warn: &mut dyn FnMut(String),
    ) -> Result<Correlation, String> {
        let layout = DataLayout::new(version, s.ptr64);
        let bytes = Bytes::new(s.covdata, s.endian);
        let mut seen = HashSet::new();
        let mut records = Vec::new();
        let mut at = 0;
        // `<`: the last record may have no padding.
        while at < s.covdata.len() {
            let mut d = layout.read(&bytes, at);
            if d.counter_ptr < s.counters_start || d.counter_ptr >= s.counters_end {
                warn(format!(
                    "CounterPtr out of range for function: Actual=0x{:x} Expected=[0x{:x}, 0x{:x}) at data offset=0x{at:x}",
                    d.counter_ptr, s.counters_start, s.counters_end
                ));
            }
            let mut offset = d.counter_ptr.wrapping_sub(s.counters_start);
            if !s.ptr64 {
                offset &= u64::from(u32::MAX);
            }
            at += layout.size;
            if !seen.insert(offset) {
                continue;
            }
            // Value profiles and MC/DC bitmaps are not correlated (LLVM 19's TODOs).
            d.counter_ptr = offset;
            d.bitmap_ptr = 0;
            d.num_value_sites = [0; 3];
            d.num_bitmap_bytes = 0;
            records.push(d);
        }
        if records.is_empty() {
            return Err(
                "unable to correlate profile: could not find any profile data metadata in correlated file"
                    .into(),
            );
        }
        if s.covnames.is_empty() {
            return Err(
                "unable to correlate profile: could not find any profile data metadata in object file"
                    .into(),
            );
        }
        Ok(Correlation {
            records,
            names: s.covnames.to_vec(),
        })
    }
}
