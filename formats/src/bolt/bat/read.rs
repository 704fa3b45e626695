//! Decoding of `.note.bolt_bat`.

use crate::bytes::{Endian, ReadError, Reader};

use super::{
    Bat, BatError, BatErrorKind, BlockId, ColdFragment, Entry, HotFragment, BRANCH_ENTRY,
    NT_BOLT_BAT,
};

/// Reads a whole `.note.bolt_bat` section (note header, name, descriptor). `base` is the
/// section's file offset, so that errors give file offsets. The descriptor must decode to
/// exactly its size.
pub fn parse_note(section: &[u8], base: u64) -> Result<Bat, BatError> {
    let header = |why| BatError {
        offset: base,
        kind: BatErrorKind::NoteHeader(why),
    };
    let mut r = Reader::at(section, Endian::Little, base);
    let (Ok(name_size), Ok(desc_size), Ok(note_type)) = (r.u32(), r.u32(), r.u32()) else {
        return Err(header("shorter than a note header (12 bytes)"));
    };
    if note_type != NT_BOLT_BAT {
        return Err(header("the note type is not NT_BOLT_BAT (1)"));
    }
    let padded_name = (name_size as usize).next_multiple_of(4);
    let name = r
        .take(padded_name)
        .map_err(|_| header("the note name runs past the section"))?;
    if !name.starts_with(b"BOLT") {
        return Err(header("the note name is not BOLT"));
    }
    let desc_offset = r.offset();
    let desc = r
        .take(desc_size as usize)
        .map_err(|_| header("the descriptor runs past the section"))?;
    parse_tables(desc, desc_offset)
}

/// Reads a BAT descriptor (the tables without the note header); `base` is its file offset.
pub fn parse_tables(desc: &[u8], base: u64) -> Result<Bat, BatError> {
    let mut r = Reader::at(desc, Endian::Little, base);
    let mut prev_address = 0u64;
    let mut bat = Bat::default();
    let hot = read_count(&mut r, "number of hot functions")?;
    for _ in 0..hot {
        bat.hot.push(read_hot(&mut r, &mut prev_address)?);
    }
    let cold = read_count(&mut r, "number of cold functions")?;
    let mut hot_index = 0u64;
    for _ in 0..cold {
        let start = r.offset();
        let fragment = read_cold(&mut r, &mut prev_address, &mut hot_index)?;
        if fragment.hot_index >= bat.hot.len() as u64 {
            return Err(BatError {
                offset: start,
                kind: BatErrorKind::HotIndex {
                    index: fragment.hot_index,
                    hot: bat.hot.len(),
                },
            });
        }
        bat.cold.push(fragment);
    }
    if !r.is_empty() {
        return Err(BatError {
            offset: r.offset(),
            kind: BatErrorKind::Trailing {
                consumed: r.offset() - base,
                size: desc.len() as u64,
            },
        });
    }
    Ok(bat)
}

fn field(name: &'static str) -> impl Fn(ReadError) -> BatError {
    move |e| BatError {
        offset: e.offset,
        kind: BatErrorKind::Field {
            field: name,
            error: e.kind,
        },
    }
}

/// A count of things that follow, each at least one byte long: larger than the bytes left
/// means the table is not what we think it is (and must not size an allocation).
fn read_count(r: &mut Reader<'_>, name: &'static str) -> Result<u64, BatError> {
    let at = r.offset();
    let n = r.uleb128().map_err(field(name))?;
    if n > r.len() as u64 {
        return Err(BatError {
            offset: at,
            kind: BatErrorKind::Field {
                field: name,
                error: crate::bytes::ReadErrorKind::UnexpectedEof,
            },
        });
    }
    Ok(n)
}

fn read_hot(r: &mut Reader<'_>, prev_address: &mut u64) -> Result<HotFragment, BatError> {
    let address = prev_address.wrapping_add(r.uleb128().map_err(field("function address"))?);
    *prev_address = address;
    let hash = r.u64().map_err(field("function hash"))?;
    let blocks = r.uleb128().map_err(field("number of basic blocks"))?;
    let secondary = read_count(r, "number of secondary entry points")?;
    let entries = read_entries(r, prev_address, address, 0)?;
    let mut secondary_entry_points = Vec::with_capacity(secondary as usize);
    let mut offset = 0u32;
    for _ in 0..secondary {
        let delta = r.uleb128().map_err(field("secondary entry point"))?;
        // LLVM accumulates in 32 bits.
        offset = offset.wrapping_add(delta as u32);
        secondary_entry_points.push(offset);
    }
    Ok(HotFragment {
        address,
        hash,
        blocks,
        entries,
        secondary_entry_points,
    })
}

fn read_cold(
    r: &mut Reader<'_>,
    prev_address: &mut u64,
    hot_index: &mut u64,
) -> Result<ColdFragment, BatError> {
    let address = prev_address.wrapping_add(r.uleb128().map_err(field("function address"))?);
    *prev_address = address;
    *hot_index = hot_index.wrapping_add(r.uleb128().map_err(field("hot fragment index"))?);
    let input_skew = r.uleb128().map_err(field("cold input skew"))?;
    let entries = read_entries(r, prev_address, address, input_skew)?;
    Ok(ColdFragment {
        address,
        hot_index: *hot_index,
        input_skew,
        entries,
    })
}

/// A fragment's map: the entry count, the equal-offset count and its branch bitmask, then the
/// entries.
fn read_entries(
    r: &mut Reader<'_>,
    prev_address: &mut u64,
    address: u64,
    skew: u64,
) -> Result<Vec<Entry>, BatError> {
    let count = read_count(r, "number of entries")?;
    let equal = r.uleb128().map_err(field("number of equal offsets"))?;
    let mask_bytes = equal.div_ceil(8);
    if mask_bytes > r.len() as u64 {
        return Err(field("branch entry bitmask")(
            r.error(crate::bytes::ReadErrorKind::UnexpectedEof),
        ));
    }
    let mask = r
        .take(mask_bytes as usize)
        .map_err(field("branch entry bitmask"))?;
    let mut entries = Vec::with_capacity(count as usize);
    let mut input = 0u64;
    let mut block_index = 0u64;
    for j in 0..count {
        let output = prev_address.wrapping_add(r.uleb128().map_err(field("entry address"))?);
        *prev_address = output;
        let output_offset = output.wrapping_sub(address);
        if j < equal {
            let bit = mask[(j / 8) as usize] >> (j % 8) & 1;
            input = (output_offset.wrapping_add(skew) << 1) | u64::from(bit);
        } else {
            let delta = r.sleb128().map_err(field("entry input offset"))?;
            input = input.wrapping_add(delta as u64);
        }
        // LLVM's map holds 32-bit offsets.
        let input32 = input as u32;
        let block = if input32 & BRANCH_ENTRY == 0 {
            let hash = r.u64().map_err(field("block hash"))?;
            block_index = block_index.wrapping_add(r.uleb128().map_err(field("block index"))?);
            Some(BlockId {
                hash,
                index: block_index,
            })
        } else {
            None
        };
        entries.push(Entry {
            output_offset: output_offset as u32,
            input: input32,
            block,
        });
    }
    Ok(entries)
}
