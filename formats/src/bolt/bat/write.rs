//! Encoding of `.note.bolt_bat`, as `llvm-bolt --enable-bat` (LLVM ≥ 19) writes it.

use crate::bytes::{write_sleb128, write_uleb128};

use super::{Bat, Entry, NOTE_NAME, NT_BOLT_BAT};

/// The whole section: note header, `BOLT` name, descriptor, padded to 4 bytes as ELF notes are.
pub fn write_note(bat: &Bat) -> Vec<u8> {
    let desc = write_tables(bat);
    let mut out = Vec::with_capacity(desc.len() + 24);
    out.extend_from_slice(&(NOTE_NAME.len() as u32).to_le_bytes());
    out.extend_from_slice(&(desc.len() as u32).to_le_bytes());
    out.extend_from_slice(&NT_BOLT_BAT.to_le_bytes());
    out.extend_from_slice(NOTE_NAME);
    out.resize(out.len().next_multiple_of(4), 0);
    out.extend_from_slice(&desc);
    out.resize(out.len().next_multiple_of(4), 0);
    out
}

/// The descriptor: the hot table, then the cold one.
pub fn write_tables(bat: &Bat) -> Vec<u8> {
    let mut out = Vec::new();
    let mut prev_address = 0u64;
    write_uleb128(&mut out, bat.hot.len() as u64);
    for f in &bat.hot {
        write_uleb128(&mut out, f.address.wrapping_sub(prev_address));
        prev_address = f.address;
        out.extend_from_slice(&f.hash.to_le_bytes());
        write_uleb128(&mut out, f.blocks);
        write_uleb128(&mut out, f.secondary_entry_points.len() as u64);
        write_entries(&mut out, &mut prev_address, f.address, 0, &f.entries);
        let mut prev = 0u32;
        for &offset in &f.secondary_entry_points {
            write_uleb128(&mut out, u64::from(offset.wrapping_sub(prev)));
            prev = offset;
        }
    }
    write_uleb128(&mut out, bat.cold.len() as u64);
    let mut prev_index = 0u64;
    for f in &bat.cold {
        write_uleb128(&mut out, f.address.wrapping_sub(prev_address));
        prev_address = f.address;
        write_uleb128(&mut out, f.hot_index.wrapping_sub(prev_index));
        prev_index = f.hot_index;
        write_uleb128(&mut out, f.input_skew);
        write_entries(
            &mut out,
            &mut prev_address,
            f.address,
            f.input_skew,
            &f.entries,
        );
    }
    out
}

/// Leading entries whose input offset is the output offset plus `skew` (LLVM's 32-bit
/// comparison): their input offsets are not written, only their branch bits.
fn equal_offsets(entries: &[Entry], skew: u64) -> usize {
    entries
        .iter()
        .take_while(|e| e.output_offset == e.input_offset().wrapping_sub(skew as u32))
        .count()
}

fn write_entries(
    out: &mut Vec<u8>,
    prev_address: &mut u64,
    address: u64,
    skew: u64,
    entries: &[Entry],
) {
    write_uleb128(out, entries.len() as u64);
    let equal = equal_offsets(entries, skew);
    write_uleb128(out, equal as u64);
    let mut mask = vec![0u8; equal.div_ceil(8)];
    for (j, e) in entries[..equal].iter().enumerate() {
        mask[j / 8] |= u8::from(e.is_branch()) << (j % 8);
    }
    out.extend_from_slice(&mask);
    let mut input = 0u64;
    let mut block_index = 0u64;
    for (j, e) in entries.iter().enumerate() {
        let output = u64::from(e.output_offset).wrapping_add(address);
        write_uleb128(out, output.wrapping_sub(*prev_address));
        *prev_address = output;
        if j >= equal {
            write_sleb128(out, u64::from(e.input).wrapping_sub(input) as i64);
        }
        input = u64::from(e.input);
        if !e.is_branch() {
            let block = e.block.unwrap_or_default();
            out.extend_from_slice(&block.hash.to_le_bytes());
            write_uleb128(out, block.index.wrapping_sub(block_index));
            block_index = block.index;
        }
    }
}
