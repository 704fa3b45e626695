//! The per-function `__llvm_profile_data` record (`INSTR_PROF_DATA`), whose field offsets depend
//! on the raw version and the pointer size, and the vtable record (`INSTR_PROF_VTABLE_DATA`).

use crate::bytes::Bytes;

/// Byte offsets of one record layout. `None` marks a field the version lacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataLayout {
    pub counter_ptr: usize,
    pub bitmap_ptr: Option<usize>,
    pub function_pointer: usize,
    pub num_counters: usize,
    pub num_value_sites: usize,
    /// How many u16 value-site counts (IPVK_Last + 1).
    pub num_value_kinds: usize,
    pub num_bitmap_bytes: Option<usize>,
    pub size: usize,
    pub ptr64: bool,
}

impl DataLayout {
    /// The layout for a raw version (5, 7, 8, 9 or 10) and pointer size.
    pub fn new(version: u64, ptr64: bool) -> DataLayout {
        let p: usize = if ptr64 { 8 } else { 4 };
        let has_bitmap = version >= 9;
        let num_value_kinds = if version >= 10 { 3 } else { 2 };
        // NameRef, FuncHash, CounterPtr, [BitmapPtr], FunctionPointer, Values.
        let counter_ptr = 16;
        let bitmap_ptr = has_bitmap.then_some(counter_ptr + p);
        let function_pointer = counter_ptr + p * if has_bitmap { 2 } else { 1 };
        let values = function_pointer + p;
        let num_counters = values + p;
        let num_value_sites = num_counters + 4;
        let sites_end = num_value_sites + 2 * num_value_kinds;
        let num_bitmap_bytes = has_bitmap.then_some(sites_end.next_multiple_of(4));
        let end = num_bitmap_bytes.map_or(sites_end, |o| o + 4);
        DataLayout {
            counter_ptr,
            bitmap_ptr,
            function_pointer,
            num_counters,
            num_value_sites,
            num_value_kinds,
            num_bitmap_bytes,
            size: end.next_multiple_of(8),
            ptr64,
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
            bitmap_ptr: self.bitmap_ptr.map_or(0, |o| self.ptr(bytes, off + o)),
            function_pointer: self.ptr(bytes, off + self.function_pointer),
            num_counters: bytes.u32(off + self.num_counters).unwrap_or(0),
            num_value_sites,
            num_bitmap_bytes: self
                .num_bitmap_bytes
                .map_or(0, |o| bytes.u32(off + o).unwrap_or(0)),
        }
    }
}

/// One decoded `__llvm_profile_data` record (pointers zero-extended to 64 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProfileData {
    pub name_ref: u64,
    pub func_hash: u64,
    pub counter_ptr: u64,
    pub bitmap_ptr: u64,
    pub function_pointer: u64,
    pub num_counters: u32,
    pub num_value_sites: [u16; 3],
    pub num_bitmap_bytes: u32,
}

/// `{u64 VTableNameHash; IntPtrT VTablePointer; u32 VTableSize}`, 8-aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VTableData {
    pub name_hash: u64,
    pub pointer: u64,
    pub size: u32,
}

pub fn vtable_record_size(ptr64: bool) -> usize {
    if ptr64 {
        24
    } else {
        16
    }
}

pub fn read_vtable(bytes: &Bytes<'_>, off: usize, ptr64: bool) -> VTableData {
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
