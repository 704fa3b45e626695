//! `perf_event_attr` of any ABI version (64 bytes and up), and the per-event sample layout that
//! follows from it.

use super::error::{Error, ErrorKind, Result};
use crate::bytes::Bytes;

/// `sample_type` bits (`enum perf_event_sample_format`).
pub mod sample_type {
    /// `PERF_SAMPLE_IP`: the sampled instruction pointer (u64).
    pub const IP: u64 = 1 << 0;
    /// `PERF_SAMPLE_TID`: `{u32 pid, u32 tid}`.
    pub const TID: u64 = 1 << 1;
    /// `PERF_SAMPLE_TIME`: u64 timestamp, in the clock perf recorded with (nanoseconds).
    pub const TIME: u64 = 1 << 2;
    /// `PERF_SAMPLE_ADDR`: u64 data address.
    pub const ADDR: u64 = 1 << 3;
    /// `PERF_SAMPLE_READ`: counter values, laid out as `read_format` says.
    pub const READ: u64 = 1 << 4;
    /// `PERF_SAMPLE_CALLCHAIN`: `{u64 nr, u64 ips[nr]}`.
    pub const CALLCHAIN: u64 = 1 << 5;
    /// `PERF_SAMPLE_ID`: u64 event id (matches an id in the attr's ids section).
    pub const ID: u64 = 1 << 6;
    /// `PERF_SAMPLE_CPU`: `{u32 cpu, u32 res}`.
    pub const CPU: u64 = 1 << 7;
    /// `PERF_SAMPLE_PERIOD`: u64 sample period.
    pub const PERIOD: u64 = 1 << 8;
    /// `PERF_SAMPLE_STREAM_ID`: u64 id of the event's group leader stream.
    pub const STREAM_ID: u64 = 1 << 9;
    /// `PERF_SAMPLE_RAW`: `{u32 size, u8 data[size]}`, padded to 8 bytes.
    pub const RAW: u64 = 1 << 10;
    /// `PERF_SAMPLE_BRANCH_STACK`: `{u64 nr, [u64 hw_idx], perf_branch_entry[nr], [u64 cntr[nr]]}`.
    pub const BRANCH_STACK: u64 = 1 << 11;
    /// `PERF_SAMPLE_REGS_USER`: `{u64 abi, u64 regs[popcount(sample_regs_user)]}` (no regs if abi is 0).
    pub const REGS_USER: u64 = 1 << 12;
    /// `PERF_SAMPLE_STACK_USER`: `{u64 size, u8 data[size], u64 dyn_size}` (no dyn_size if size is 0).
    pub const STACK_USER: u64 = 1 << 13;
    /// `PERF_SAMPLE_WEIGHT`: u64 weight; shares its slot with [`WEIGHT_STRUCT`].
    pub const WEIGHT: u64 = 1 << 14;
    /// `PERF_SAMPLE_DATA_SRC`: u64 `perf_mem_data_src`.
    pub const DATA_SRC: u64 = 1 << 15;
    /// `PERF_SAMPLE_IDENTIFIER`: u64 event id at a fixed place (first in samples, last in `sample_id_all` trailers).
    pub const IDENTIFIER: u64 = 1 << 16;
    /// `PERF_SAMPLE_TRANSACTION`: u64 transaction flags.
    pub const TRANSACTION: u64 = 1 << 17;
    /// `PERF_SAMPLE_REGS_INTR`: `{u64 abi, u64 regs[popcount(sample_regs_intr)]}` (no regs if abi is 0).
    pub const REGS_INTR: u64 = 1 << 18;
    /// `PERF_SAMPLE_PHYS_ADDR`: u64 physical data address.
    pub const PHYS_ADDR: u64 = 1 << 19;
    /// `PERF_SAMPLE_AUX`: `{u64 size, u8 data[size]}`; in the record it comes after the page sizes, not where the uapi comment lists it.
    pub const AUX: u64 = 1 << 20;
    /// `PERF_SAMPLE_CGROUP`: u64 cgroup id (between PHYS_ADDR and DATA_PAGE_SIZE in the record).
    pub const CGROUP: u64 = 1 << 21;
    /// `PERF_SAMPLE_DATA_PAGE_SIZE`: u64 page size of the data address.
    pub const DATA_PAGE_SIZE: u64 = 1 << 22;
    /// `PERF_SAMPLE_CODE_PAGE_SIZE`: u64 page size of the instruction pointer.
    pub const CODE_PAGE_SIZE: u64 = 1 << 23;
    /// `PERF_SAMPLE_WEIGHT_STRUCT`: `union perf_sample_weight`, one u64 (the same slot as [`WEIGHT`]).
    pub const WEIGHT_STRUCT: u64 = 1 << 24;
}

/// `read_format` bits.
pub mod read_format {
    /// `PERF_FORMAT_TOTAL_TIME_ENABLED`: a u64 `time_enabled` follows the value(s).
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    /// `PERF_FORMAT_TOTAL_TIME_RUNNING`: a u64 `time_running` follows.
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    /// `PERF_FORMAT_ID`: each value is followed by its u64 event id.
    pub const ID: u64 = 1 << 2;
    /// `PERF_FORMAT_GROUP`: the read is `{u64 nr, ..., values[nr]}` for the whole group.
    pub const GROUP: u64 = 1 << 3;
    /// `PERF_FORMAT_LOST`: each value is followed by a u64 lost-sample count.
    pub const LOST: u64 = 1 << 4;
}

/// `branch_sample_type` bits that change the sample layout.
pub mod branch_sample {
    /// `PERF_SAMPLE_BRANCH_HW_INDEX` (`1 << PERF_SAMPLE_BRANCH_HW_INDEX_SHIFT`): a u64 `hw_idx` precedes the branch entries.
    pub const HW_INDEX: u64 = 1 << 17;
    /// `PERF_SAMPLE_BRANCH_COUNTERS` (`1 << PERF_SAMPLE_BRANCH_COUNTERS_SHIFT`): `u64 cntr[nr]` follows the branch entries (decided by the group leader).
    pub const COUNTERS: u64 = 1 << 19;
}

/// Attribute flag bits (the bitfield word at offset 40).
pub mod flag {
    /// `sample_id_all` bit: non-sample records carry a `sample_id` trailer.
    pub const SAMPLE_ID_ALL: u64 = 1 << 18;
    /// `mmap2` bit: the kernel emits PERF_RECORD_MMAP2 instead of MMAP.
    pub const MMAP2: u64 = 1 << 23;
}

/// The fields of `perf_event_attr` this project uses; fields past `size` read as zero, fields
/// past what we know are ignored (so newer ABIs than perf 6.1 supports still load).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventAttr {
    /// `perf_event_attr.type` (`PERF_TYPE_HARDWARE`, `PERF_TYPE_RAW`, ...); `type` is a Rust keyword.
    pub type_: u32,
    /// `perf_event_attr.size` in bytes as written (64 = `PERF_ATTR_SIZE_VER0`; a stored 0 reads as 64).
    pub size: u32,
    /// `perf_event_attr.config`: the event selector, meaning depends on `type_`.
    pub config: u64,
    /// `perf_event_attr.sample_period` (or `sample_freq` when the `freq` flag is set): offset 16.
    pub sample_period: u64,
    /// `perf_event_attr.sample_type`: [`sample_type`] bits; they decide the SAMPLE record layout.
    pub sample_type: u64,
    /// `perf_event_attr.read_format`: [`read_format`] bits; they decide the layout of `PERF_SAMPLE_READ`.
    pub read_format: u64,
    /// The bitfield word at offset 40 (`disabled`, `inherit`, ..., [`flag`] bits), in host bit order.
    pub flags: u64,
    /// `perf_event_attr.branch_sample_type` (offset 72): [`branch_sample`] bits; 0 if the attr is shorter.
    pub branch_sample_type: u64,
    /// `perf_event_attr.sample_regs_user` (offset 80): the mask of user registers each sample carries.
    pub sample_regs_user: u64,
    /// `perf_event_attr.sample_regs_intr` (offset 96): the mask of interrupt registers each sample carries.
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

    /// Whether non-sample records carry a `sample_id` trailer (`attr.sample_id_all`).
    pub fn sample_id_all(&self) -> bool {
        self.flags & flag::SAMPLE_ID_ALL != 0
    }

    /// Whether `sample_type` has `bit` (one of the [`sample_type`] constants).
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
