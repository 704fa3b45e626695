//! `perf_event_attr` of any ABI version (64 bytes and up), and the per-event sample layout that
//! follows from it.

use super::error::{Error, ErrorKind, Result};
use crate::bytes::Bytes;

/// `sample_type` bits (`enum perf_event_sample_format`).
pub mod sample_type {
    pub const IP: u64 = 1 << 0;
    pub const TID: u64 = 1 << 1;
    pub const TIME: u64 = 1 << 2;
    pub const ADDR: u64 = 1 << 3;
    pub const READ: u64 = 1 << 4;
    pub const CALLCHAIN: u64 = 1 << 5;
    pub const ID: u64 = 1 << 6;
    pub const CPU: u64 = 1 << 7;
    pub const PERIOD: u64 = 1 << 8;
    pub const STREAM_ID: u64 = 1 << 9;
    pub const RAW: u64 = 1 << 10;
    pub const BRANCH_STACK: u64 = 1 << 11;
    pub const REGS_USER: u64 = 1 << 12;
    pub const STACK_USER: u64 = 1 << 13;
    pub const WEIGHT: u64 = 1 << 14;
    pub const DATA_SRC: u64 = 1 << 15;
    pub const IDENTIFIER: u64 = 1 << 16;
    pub const TRANSACTION: u64 = 1 << 17;
    pub const REGS_INTR: u64 = 1 << 18;
    pub const PHYS_ADDR: u64 = 1 << 19;
    pub const AUX: u64 = 1 << 20;
    pub const CGROUP: u64 = 1 << 21;
    pub const DATA_PAGE_SIZE: u64 = 1 << 22;
    pub const CODE_PAGE_SIZE: u64 = 1 << 23;
    pub const WEIGHT_STRUCT: u64 = 1 << 24;
}

/// `read_format` bits.
pub mod read_format {
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    pub const ID: u64 = 1 << 2;
    pub const GROUP: u64 = 1 << 3;
    pub const LOST: u64 = 1 << 4;
}

/// `branch_sample_type` bits that change the sample layout.
pub mod branch_sample {
    pub const HW_INDEX: u64 = 1 << 17;
    pub const COUNTERS: u64 = 1 << 19;
}

/// Attribute flag bits (the bitfield word at offset 40).
pub mod flag {
    pub const SAMPLE_ID_ALL: u64 = 1 << 18;
    pub const MMAP2: u64 = 1 << 23;
}

/// The fields of `perf_event_attr` this project uses; fields past `size` read as zero, fields
/// past what we know are ignored (so newer ABIs than perf 6.1 supports still load).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventAttr {
    pub type_: u32,
    pub size: u32,
    pub config: u64,
    pub sample_period: u64,
    pub sample_type: u64,
    pub read_format: u64,
    pub flags: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_regs_intr: u64,
}

/// `PERF_ATTR_SIZE_VER0`: the smallest `perf_event_attr` ever written.
pub const ATTR_SIZE_VER0: u32 = 64;

impl EventAttr {
    /// Parses an attr at the start of `b`. `offset` is only used for error messages.
    pub fn parse(b: Bytes<'_>, offset: u64) -> Result<EventAttr> {
        let size = match b.u32(4) {
            Some(0) => ATTR_SIZE_VER0,
            Some(s) if s < ATTR_SIZE_VER0 => {
                return Err(Error::at(offset + 4, ErrorKind::BadAttrStructSize(s)))
            }
            Some(s) => s,
            None => return Err(Error::truncated(offset, "perf_event_attr", 8, b.len())),
        };
        if b.len() < size as usize {
            return Err(Error::truncated(
                offset,
                "perf_event_attr",
                size as usize,
                b.len(),
            ));
        }
        let field = |off: usize| {
            if off + 8 <= size as usize {
                b.u64(off).unwrap_or(0)
            } else {
                0
            }
        };
        Ok(EventAttr {
            type_: b.u32(0).unwrap_or(0),
            size,
            config: field(8),
            sample_period: field(16),
            sample_type: field(24),
            read_format: field(32),
            flags: flags_word(b, size),
            branch_sample_type: field(72),
            sample_regs_user: field(80),
            sample_regs_intr: field(96),
        })
    }

    pub fn sample_id_all(&self) -> bool {
        self.flags & flag::SAMPLE_ID_ALL != 0
    }

    pub fn has(&self, bit: u64) -> bool {
        self.sample_type & bit != 0
    }
}

/// perf writes the flag bitfield as the compiler lays it out; in a foreign-endian file each
/// byte's bits are mirrored rather than the word swapped (header.c `perf_event__attr_swap`).
fn flags_word(b: Bytes<'_>, size: u32) -> u64 {
    if size < 48 {
        return 0;
    }
    match b.endian {
        crate::bytes::Endian::Little => b.u64(40).unwrap_or(0),
        crate::bytes::Endian::Big => {
            let raw = b.array::<8>(40).unwrap_or([0; 8]);
            u64::from_le_bytes(raw.map(u8::reverse_bits))
        }
    }
}
