//! The per-function `__llvm_profile_data` record (`INSTR_PROF_DATA`), whose field offsets depend
//! on the raw version and the pointer size, and the vtable record (`INSTR_PROF_VTABLE_DATA`).

use crate::bytes::Bytes;

/// Byte offsets of one record layout. `None` marks a field the version lacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataLayout {
    pub counter_ptr: usize,
    pub uniform_counter_ptr: Option<usize>,
    pub bitmap_ptr: Option<usize>,
    pub function_pointer: usize,
    pub num_counters: usize,
    pub num_value_sites: usize,
    /// How many u16 value-site counts (IPVK_Last + 1).
    pub num_value_kinds: usize,
    pub offload_device_wave_size: Option<usize>,
    pub num_bitmap_bytes: Option<usize>,
    pub size: usize,
    pub ptr64: bool,
    /// LLVM 19's layout (v10, 64-bit), which [`DataLayout::read`] decodes at constant offsets.
    pub v10_64: bool,
}

impl DataLayout {
    /// The layout for a raw version (5, 7, 8, 9, 10 or 11) and pointer size, with C's natural
    /// alignment and the size rounded to 8 (`alignas(8)`).
    pub fn new(version: u64, ptr64: bool) -> DataLayout {
        let p: usize = if ptr64 { 8 } else { 4 };
        let has_bitmap = version >= 9;
        let has_uniform = version >= 11;
        let num_value_kinds = if version >= 10 { 3 } else { 2 };
        // NameRef, FuncHash, CounterPtr, [UniformCounterPtr], [BitmapPtr], FunctionPointer,
        // Values.
        let counter_ptr = 16;
        let mut next = counter_ptr + p;
        let mut field = |present: bool| {
            present.then(|| {
                next += p;
                next - p
            })
        };
        let uniform_counter_ptr = field(has_uniform);
        let bitmap_ptr = field(has_bitmap);
        let function_pointer = next;
        let values = function_pointer + p;
        let num_counters = values + p;
        let num_value_sites = num_counters + 4;
        let sites_end = num_value_sites + 2 * num_value_kinds;
        // v11: a u16 right after the u16 value-site counts, so no padding before the u32.
        let offload_device_wave_size = has_uniform.then_some(sites_end);
        let sites_end = sites_end + if has_uniform { 2 } else { 0 };
        let num_bitmap_bytes = has_bitmap.then_some(sites_end.next_multiple_of(4));
        let end = num_bitmap_bytes.map_or(sites_end, |o| o + 4);
        DataLayout {
            counter_ptr,
            uniform_counter_ptr,
            bitmap_ptr,
            function_pointer,
            num_counters,
            num_value_sites,
            num_value_kinds,
            offload_device_wave_size,
            num_bitmap_bytes,
            size: end.next_multiple_of(8),
            ptr64,
            v10_64: version == 10 && ptr64,
        }
    }

    fn ptr(&self, bytes: &Bytes<'_>, off: usize) -> u64 {
        if self.ptr64 {
            bytes.u64(off).unwrap_or(0)
        } else {
            u64::from(bytes.u32(off).unwrap_or(0))
        }
    }

    /// Decodes the record at `off`; the caller has checked it lies inside `bytes`.
    pub fn read(&self, bytes: &Bytes<'_>, off: usize) -> ProfileData {
        if self.v10_64 && bytes.endian == crate::bytes::Endian::Little {
            if let Some(record) = bytes.array::<64>(off) {
                return read_v10_64_le(&record);
            }
        }
        self.read_fields(bytes, off)
    }

    fn read_fields(&self, bytes: &Bytes<'_>, off: usize) -> ProfileData {
        let mut num_value_sites = [0u16; 3];
        for (k, slot) in num_value_sites
            .iter_mut()
            .take(self.num_value_kinds)
            .enumerate()
        {
            *slot = bytes.u16(off + self.num_value_sites + 2 * k).unwrap_or(0);
        }
        ProfileData {
            name_ref: bytes.u64(off).unwrap_or(0),
            func_hash: bytes.u64(off + 8).unwrap_or(0),
            counter_ptr: self.ptr(bytes, off + self.counter_ptr),
            uniform_counter_ptr: self
                .uniform_counter_ptr
                .map_or(0, |o| self.ptr(bytes, off + o)),
            bitmap_ptr: self.bitmap_ptr.map_or(0, |o| self.ptr(bytes, off + o)),
            function_pointer: self.ptr(bytes, off + self.function_pointer),
            num_counters: bytes.u32(off + self.num_counters).unwrap_or(0),
            num_value_sites,
            offload_device_wave_size: self
                .offload_device_wave_size
                .map_or(0, |o| bytes.u16(off + o).unwrap_or(0)),
            num_bitmap_bytes: self
                .num_bitmap_bytes
                .map_or(0, |o| bytes.u32(off + o).unwrap_or(0)),
        }
    }
}

/// The common layout (LLVM 19's raw v10, 64-bit, little-endian) at constant offsets, which
/// compiles to plain loads; equal to [`DataLayout::read_fields`] (tested).
fn read_v10_64_le(r: &[u8; 64]) -> ProfileData {
    let u64_at = |o: usize| u64::from_le_bytes(r[o..o + 8].try_into().unwrap_or_default());
    let u32_at = |o: usize| u32::from_le_bytes(r[o..o + 4].try_into().unwrap_or_default());
    let u16_at = |o: usize| u16::from_le_bytes(r[o..o + 2].try_into().unwrap_or_default());
    ProfileData {
        name_ref: u64_at(0),
        func_hash: u64_at(8),
        counter_ptr: u64_at(16),
        uniform_counter_ptr: 0,
        bitmap_ptr: u64_at(24),
        function_pointer: u64_at(32),
        num_counters: u32_at(48),
        num_value_sites: [u16_at(52), u16_at(54), u16_at(56)],
        offload_device_wave_size: 0,
        num_bitmap_bytes: u32_at(60),
    }
}

/// One decoded `__llvm_profile_data` record (pointers zero-extended to 64 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProfileData {
    pub name_ref: u64,
    pub func_hash: u64,
    pub counter_ptr: u64,
    /// v11: where the record's `num_counters` uniform counters are (relative, like
    /// `counter_ptr`).
    pub uniform_counter_ptr: u64,
    pub bitmap_ptr: u64,
    pub function_pointer: u64,
    pub num_counters: u32,
    pub num_value_sites: [u16; 3],
    /// v11: the offload device's wave size (0 for host code).
    pub offload_device_wave_size: u16,
    pub num_bitmap_bytes: u32,
}

/// `{u64 VTableNameHash; IntPtrT VTablePointer; u32 VTableSize}`, 8-aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VTableData {
    pub name_hash: u64,
    pub pointer: u64,
    pub size: u32,
}

pub(crate) fn vtable_record_size(ptr64: bool) -> usize {
    if ptr64 {
        24
    } else {
        16
    }
}

pub(crate) fn read_vtable(bytes: &Bytes<'_>, off: usize, ptr64: bool) -> VTableData {
    let (pointer, size_off) = if ptr64 {
        (bytes.u64(off + 8).unwrap_or(0), 16)
    } else {
        (u64::from(bytes.u32(off + 8).unwrap_or(0)), 12)
    };
    VTableData {
        name_hash: bytes.u64(off).unwrap_or(0),
        pointer,
        size: bytes.u32(off + size_off).unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The constant-offset decoder of the common layout equals the general one.
        #[test]
        fn v10_fast_path_equals_field_reads(record in prop::collection::vec(any::<u8>(), 64..80), off in 0usize..16) {
            let layout = DataLayout::new(10, true);
            let bytes = Bytes::new(&record, crate::bytes::Endian::Little);
            prop_assert_eq!(layout.read(&bytes, off), layout.read_fields(&bytes, off));
        }
    }

    #[test]
    fn v11_layouts_match_the_llvm23_struct() {
        // INSTR_PROF_DATA at raw version 11: UniformCounterPtr after CounterPtr,
        // OffloadDeviceWaveSize after NumValueSites[3]; 72 bytes on 64-bit, 56 on 32-bit.
        let v11 = DataLayout::new(11, true);
        assert_eq!(
            (
                v11.uniform_counter_ptr,
                v11.bitmap_ptr,
                v11.function_pointer,
                v11.num_counters,
                v11.num_value_sites,
                v11.offload_device_wave_size,
                v11.num_bitmap_bytes,
                v11.size
            ),
            (Some(24), Some(32), 40, 56, 60, Some(66), Some(68), 72)
        );
        let v11_32 = DataLayout::new(11, false);
        assert_eq!(
            (
                v11_32.uniform_counter_ptr,
                v11_32.bitmap_ptr,
                v11_32.function_pointer,
                v11_32.num_counters,
                v11_32.num_value_sites,
                v11_32.offload_device_wave_size,
                v11_32.num_bitmap_bytes,
                v11_32.size
            ),
            (Some(20), Some(24), 28, 36, 40, Some(46), Some(48), 56)
        );
        assert_eq!(DataLayout::new(10, true).uniform_counter_ptr, None);
    }

    #[test]
    fn layouts_match_the_documented_offsets() {
        let v10 = DataLayout::new(10, true);
        assert_eq!(
            (
                v10.function_pointer,
                v10.num_counters,
                v10.num_bitmap_bytes,
                v10.size
            ),
            (32, 48, Some(60), 64)
        );
        let v10_32 = DataLayout::new(10, false);
        assert_eq!(
            (
                v10_32.function_pointer,
                v10_32.num_counters,
                v10_32.num_bitmap_bytes,
                v10_32.size
            ),
            (24, 32, Some(44), 48)
        );
        let v9 = DataLayout::new(9, true);
        assert_eq!((v9.num_bitmap_bytes, v9.size), (Some(56), 64));
        let v9_32 = DataLayout::new(9, false);
        assert_eq!((v9_32.num_bitmap_bytes, v9_32.size), (Some(40), 48));
        let v8 = DataLayout::new(8, true);
        assert_eq!(
            (
                v8.function_pointer,
                v8.num_counters,
                v8.num_value_sites,
                v8.size
            ),
            (24, 40, 44, 48)
        );
        let v8_32 = DataLayout::new(8, false);
        assert_eq!(
            (v8_32.function_pointer, v8_32.num_counters, v8_32.size),
            (20, 28, 40)
        );
    }
}
