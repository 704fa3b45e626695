//! Raw profile version 11 (LLVM 23) made from a version 10 one, since no compiler here writes
//! it: every profile of the file keeps its records, counters, bitmaps, names and value data,
//! in the v11 header (19 fields) and record (`UniformCounterPtr`, `OffloadDeviceWaveSize`)
//! layout. Either pointer size and byte order; concatenated profiles are converted one by one.
//!
//! Counter and bitmap pointers are relative to their own record (v8+), so records growing by 8
//! bytes moves them: each is rewritten so that it still designates the same counter. A section
//! that lies after the data section in memory (delta at least the v10 data size) moves with the
//! data section's growth; one before it (clang-19 on Linux puts the counters first) stays.
//! Optional uniform counters (u64, `NumCounters` per record) can be added to exercise the
//! reader's handling of them.

/// v10 header fields (u64 each) and the v11 fields inserted after `PaddingBytesAfterBitmapBytes`.
const V10_HEADER_FIELDS: usize = 16;
const UNIFORM_FIELDS_AT: usize = 9;
const COUNTERS_DELTA: usize = 10;
const BITMAP_DELTA: usize = 11;
const NUM_DATA: usize = 3;
const NUM_COUNTERS: usize = 5;
const NUM_BITMAP_BYTES: usize = 7;
const PADDING_AFTER_BITMAP: usize = 8;
const BINARY_IDS_SIZE: usize = 2;
const BYTE_COVERAGE: u64 = 1 << 60;

#[derive(Clone, Copy)]
struct Order {
    ptr64: bool,
    big: bool,
}

impl Order {
    fn detect(data: &[u8]) -> Option<Order> {
        let word = u64::from_le_bytes(data.get(..8)?.try_into().ok()?);
        [
            (0xff6c_7072_6f66_7281u64, true),
            (0xff6c_7072_6f66_5281, false),
        ]
        .into_iter()
        .find_map(|(magic, ptr64)| {
            if word == magic {
                Some(Order { ptr64, big: false })
            } else if word == magic.swap_bytes() {
                Some(Order { ptr64, big: true })
            } else {
                None
            }
        })
    }

    fn get(&self, data: &[u8], at: usize, len: usize) -> Option<u64> {
        let b = data.get(at..at + len)?;
        let fold = |v: u64, &byte: &u8| v << 8 | u64::from(byte);
        Some(if self.big {
            b.iter().fold(0, fold)
        } else {
            b.iter().rev().fold(0, fold)
        })
    }

    fn put(&self, out: &mut Vec<u8>, v: u64, len: usize) {
        let le = v.to_le_bytes();
        if self.big {
            out.extend(le[..len].iter().rev());
        } else {
            out.extend_from_slice(&le[..len]);
        }
    }

    fn ptr(&self) -> usize {
        if self.ptr64 {
            8
        } else {
            4
        }
    }
}

/// Uniform counters to add to every record: `values(record index, counter index)`.
pub type UniformCounters<'f> = &'f dyn Fn(usize, usize) -> u64;

/// Converts a raw v10 file to v11; `None` if it is not a well-formed raw v10 file.
pub fn raw_v10_to_v11(v10: &[u8]) -> Option<Vec<u8>> {
    convert(v10, None)
}

/// As [`raw_v10_to_v11`], each record also getting `NumCounters` uniform counters.
pub fn raw_v10_to_v11_with_uniform(v10: &[u8], values: UniformCounters<'_>) -> Option<Vec<u8>> {
    convert(v10, Some(values))
}

fn convert(v10: &[u8], uniform: Option<UniformCounters<'_>>) -> Option<Vec<u8>> {
    let order = Order::detect(v10)?;
    let mut out = Vec::with_capacity(v10.len() + v10.len() / 8);
    let mut pos = 0;
    while pos < v10.len() {
        pos = convert_profile(v10, pos, order, uniform, &mut out)?;
        // Zero padding between concatenated profiles is kept as it is.
        while v10.get(pos) == Some(&0) {
            out.push(0);
            pos += 1;
        }
    }
    Some(out)
}

/// Converts the profile at `start`; returns where it ends in `v10`.
fn convert_profile(
    v10: &[u8],
    start: usize,
    o: Order,
    uniform: Option<UniformCounters<'_>>,
    out: &mut Vec<u8>,
) -> Option<usize> {
    let header: Vec<u64> = (0..V10_HEADER_FIELDS)
        .map(|i| o.get(v10, start + 8 * i, 8))
        .collect::<Option<_>>()?;
    if header[1] & 0xffff_ffff != 10 {
        return None;
    }
    let p = o.ptr();
    let old_size = if o.ptr64 { 64 } else { 48 };
    let new_size = old_size + 8;
    let num_data = usize::try_from(header[NUM_DATA]).ok()?;
    let data = start + 8 * V10_HEADER_FIELDS + usize::try_from(header[BINARY_IDS_SIZE]).ok()?;
    let counters_from = data + num_data.checked_mul(old_size)?;
    let counter_size = if header[1] & BYTE_COVERAGE != 0 { 1 } else { 8 };
    // Where the v11 uniform-counter section goes: after the bitmap and its padding.
    let bitmap_end = counters_from
        + usize::try_from(header[4]).ok()?
        + usize::try_from(header[NUM_COUNTERS] * counter_size).ok()?
        + usize::try_from(header[6]).ok()?
        + usize::try_from(header[NUM_BITMAP_BYTES]).ok()?
        + usize::try_from(header[PADDING_AFTER_BITMAP]).ok()?;
    let records: Vec<Record> = (0..num_data)
        .map(|i| Record::read(v10, data + i * old_size, o))
        .collect::<Option<_>>()?;
    let num_uniform: u64 = if uniform.is_some() {
        records.iter().map(|r| u64::from(r.num_counters)).sum()
    } else {
        0
    };
    // In memory the uniform counters follow the bitmap section; the deltas are taken from the
    // first record, as the runtime's are.
    let uniform_delta = if uniform.is_some() {
        (bitmap_end - data + (new_size - old_size) * num_data) as u64
    } else {
        0
    };

    // Header: v10 fields, the version number bumped, three fields inserted.
    let mut h = header.clone();
    h[1] = (h[1] & !0xffff_ffff) | 11;
    let old_data_size = (num_data * old_size) as u64;
    for field in [COUNTERS_DELTA, BITMAP_DELTA] {
        if h[field] as i64 >= old_data_size as i64 {
            h[field] += (num_data * (new_size - old_size)) as u64;
        }
    }
    let inserted = [num_uniform, 0, uniform_delta];
    h.splice(UNIFORM_FIELDS_AT..UNIFORM_FIELDS_AT, inserted);
    for v in &h {
        o.put(out, *v, 8);
    }
    out.extend_from_slice(&v10[start + 8 * V10_HEADER_FIELDS..data]);

    let mut uniform_at = 0u64;
    for (i, r) in records.iter().enumerate() {
        let moved = |ptr: u64, field: usize| {
            // The same target in its section, from a record that now sits i * 8 bytes further.
            let offset = ptr.wrapping_sub(header[field].wrapping_sub((i * old_size) as u64));
            offset.wrapping_add(h[field + 3].wrapping_sub((i * new_size) as u64))
        };
        let counter_ptr = moved(r.counter_ptr, COUNTERS_DELTA);
        let bitmap_ptr = moved(r.bitmap_ptr, BITMAP_DELTA);
        let uniform_ptr = if uniform.is_some() {
            let ptr = uniform_at.wrapping_add(uniform_delta.wrapping_sub((i * new_size) as u64));
            uniform_at += 8 * u64::from(r.num_counters);
            ptr
        } else {
            0
        };
        o.put(out, r.name_ref, 8);
        o.put(out, r.func_hash, 8);
        for v in [
            counter_ptr,
            uniform_ptr,
            bitmap_ptr,
            r.function_pointer,
            r.values,
        ] {
            o.put(out, v, p);
        }
        o.put(out, u64::from(r.num_counters), 4);
        for s in r.num_value_sites {
            o.put(out, u64::from(s), 2);
        }
        o.put(out, 0, 2); // OffloadDeviceWaveSize: host code.
        o.put(out, u64::from(r.num_bitmap_bytes), 4);
        out.resize(out.len().next_multiple_of(8), 0);
    }
    out.extend_from_slice(v10.get(counters_from..bitmap_end)?);
    if let Some(values) = uniform {
        for (i, r) in records.iter().enumerate() {
            for c in 0..r.num_counters as usize {
                o.put(out, values(i, c), 8);
            }
        }
    }
    let end = profile_end(v10, bitmap_end, &header, &records, o)?;
    out.extend_from_slice(&v10[bitmap_end..end]);
    Some(end)
}

/// The end of a v10 profile whose names section starts at `names`: after the vtables, vtable
/// names and one value-profile block per record with value sites.
fn profile_end(
    v10: &[u8],
    names: usize,
    header: &[u64],
    records: &[Record],
    o: Order,
) -> Option<usize> {
    let pad = |n: usize| n.next_multiple_of(8);
    let names_size = usize::try_from(header[9]).ok()?;
    let vtable_size = if o.ptr64 { 24 } else { 16 };
    let vtables = usize::try_from(header[13]).ok()?.checked_mul(vtable_size)?;
    let vnames_size = usize::try_from(header[14]).ok()?;
    let mut end = names + pad(names_size) + pad(vtables) + pad(vnames_size);
    let with_values = records
        .iter()
        .filter(|r| r.num_value_sites.iter().any(|&n| n != 0));
    for _ in with_values {
        let total = usize::try_from(o.get(v10, end, 4)?).ok()?;
        if total == 0 {
            return None;
        }
        end += total;
    }
    (end <= v10.len()).then_some(end)
}

struct Record {
    name_ref: u64,
    func_hash: u64,
    counter_ptr: u64,
    bitmap_ptr: u64,
    function_pointer: u64,
    values: u64,
    num_counters: u32,
    num_value_sites: [u16; 3],
    num_bitmap_bytes: u32,
}

impl Record {
    /// The v10 record at `at` (`INSTR_PROF_DATA` of LLVM 19).
    fn read(d: &[u8], at: usize, o: Order) -> Option<Record> {
        let p = o.ptr();
        let ptr = |i: usize| o.get(d, at + 16 + i * p, p);
        let counts_at = at + 16 + 4 * p;
        Some(Record {
            name_ref: o.get(d, at, 8)?,
            func_hash: o.get(d, at + 8, 8)?,
            counter_ptr: ptr(0)?,
            bitmap_ptr: ptr(1)?,
            function_pointer: ptr(2)?,
            values: ptr(3)?,
            num_counters: o.get(d, counts_at, 4)? as u32,
            num_value_sites: [
                o.get(d, counts_at + 4, 2)? as u16,
                o.get(d, counts_at + 6, 2)? as u16,
                o.get(d, counts_at + 8, 2)? as u16,
            ],
            num_bitmap_bytes: o.get(d, (counts_at + 10).next_multiple_of(4), 4)? as u32,
        })
    }
}
