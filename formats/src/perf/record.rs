//! The record stream: `perf_event_header`s, record types, and the side-band records
//! (MMAP, MMAP2, COMM, FORK, EXIT) that place samples in processes and binaries.

use crate::bytes::Bytes;

/// Record types (`enum perf_event_type` and perf's user record types).
pub mod kind {
    /// `PERF_RECORD_MMAP`: an executable mapping ([`Mmap`](crate::perf::Mmap)).
    pub const MMAP: u32 = 1;
    /// `PERF_RECORD_LOST`: `{u64 id, u64 lost}` samples the kernel dropped.
    pub const LOST: u32 = 2;
    /// `PERF_RECORD_COMM`: a thread's name ([`Comm`](crate::perf::Comm)).
    pub const COMM: u32 = 3;
    /// `PERF_RECORD_EXIT`: a thread exited ([`Task`](crate::perf::Task)).
    pub const EXIT: u32 = 4;
    /// `PERF_RECORD_THROTTLE`: sampling was throttled.
    pub const THROTTLE: u32 = 5;
    /// `PERF_RECORD_UNTHROTTLE`: sampling resumed.
    pub const UNTHROTTLE: u32 = 6;
    /// `PERF_RECORD_FORK`: a thread was created ([`Task`](crate::perf::Task)).
    pub const FORK: u32 = 7;
    /// `PERF_RECORD_SAMPLE`: one sample ([`Sample`](crate::perf::Sample)).
    pub const SAMPLE: u32 = 9;
    /// `PERF_RECORD_MMAP2`: a mapping with inode or build-id ([`Mmap`](crate::perf::Mmap)).
    pub const MMAP2: u32 = 10;
    /// `PERF_RECORD_HEADER_ATTR` (pipe mode): an attr and its ids.
    pub const HEADER_ATTR: u32 = 64;
    /// `PERF_RECORD_HEADER_TRACING_DATA` (pipe mode): followed by `u32 size` bytes not counted in `header.size`.
    pub const HEADER_TRACING_DATA: u32 = 66;
    /// `PERF_RECORD_HEADER_BUILD_ID` (pipe mode): one build-id entry.
    pub const HEADER_BUILD_ID: u32 = 67;
    /// `PERF_RECORD_FINISHED_ROUND`: records before it are time-ordered against those two rounds later.
    pub const FINISHED_ROUND: u32 = 68;
    /// `PERF_RECORD_ID_INDEX`: sample id to cpu/tid mapping.
    pub const ID_INDEX: u32 = 69;
    /// `PERF_RECORD_AUXTRACE`: followed by `u64 size` bytes of trace not counted in `header.size`.
    pub const AUXTRACE: u32 = 71;
    /// `PERF_RECORD_EVENT_UPDATE`: a late event name, unit or scale.
    pub const EVENT_UPDATE: u32 = 78;
    /// `PERF_RECORD_HEADER_FEATURE` (pipe mode): one feature section as a record.
    pub const HEADER_FEATURE: u32 = 80;
    /// `PERF_RECORD_COMPRESSED`: a chunk of the zstd stream of records.
    pub const COMPRESSED: u32 = 81;
    /// `PERF_RECORD_COMPRESSED2`: like COMPRESSED, with a u64 `data_size` and 8-byte padding.
    pub const COMPRESSED2: u32 = 83;
}

/// `misc` bits used here.
pub mod misc {
    /// `PERF_RECORD_MISC_CPUMODE_MASK`: the cpumode bits of `misc`.
    pub const CPUMODE_MASK: u16 = 7;
    /// `PERF_RECORD_MISC_KERNEL`: the event happened in kernel mode.
    pub const KERNEL: u16 = 1;
    /// `PERF_RECORD_MISC_USER`: the event happened in user mode.
    pub const USER: u16 = 2;
    /// On COMM: the process exec'd.
    pub const COMM_EXEC: u16 = 1 << 13;
    /// On MMAP (the same bit as [`COMM_EXEC`]): a data mapping (`PROT_EXEC` clear).
    pub const MMAP_DATA: u16 = 1 << 13;
    /// On MMAP2: a build-id replaces maj/min/ino/ino_generation.
    pub const MMAP_BUILD_ID: u16 = 1 << 14;
    /// On BUILD_ID records: the size byte is valid.
    pub const BUILD_ID_SIZE: u16 = 1 << 15;
}

/// `sizeof(struct perf_event_header)` in bytes.
pub const HEADER_SIZE: usize = 8;

/// `struct perf_event_header`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    /// `perf_event_header.type`: a [`kind`] value.
    pub kind: u32,
    /// `perf_event_header.misc`: [`misc`] bits (cpumode and per-type flags).
    pub misc: u16,
    /// `perf_event_header.size`: bytes in the record, header included (not the AUXTRACE or
    /// TRACING_DATA payload that follows).
    pub size: u16,
}

impl RecordHeader {
    /// Reads a header at `off` in the file's byte order; `None` if fewer than 8 bytes remain.
    #[inline(always)]
    pub fn parse(b: Bytes<'_>, off: usize) -> Option<RecordHeader> {
        Some(RecordHeader {
            kind: b.u32(off)?,
            misc: b.u16(off + 4)?,
            size: b.u16(off + 6)?,
        })
    }
}

/// How many bytes a record occupies in the stream: its `size`, plus the payload that AUXTRACE
/// and pipe-mode TRACING_DATA carry outside `size`. `body` is the record without its header.
#[inline]
pub fn hidden_payload(header: RecordHeader, body: Bytes<'_>) -> u64 {
    match header.kind {
        kind::AUXTRACE => body.u64(0).unwrap_or(0),
        kind::HEADER_TRACING_DATA => body.u32(0).unwrap_or(0) as u64,
        _ => 0,
    }
}

/// PERF_RECORD_MMAP or MMAP2 (the fields perf2bolt and `perf script` use).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mmap<'a> {
    /// `pid` of the mapping process (-1 for kernel mappings).
    pub pid: u32,
    /// `tid` of the mapping thread.
    pub tid: u32,
    /// Start address of the mapping (`addr`).
    pub addr: u64,
    /// Length of the mapping in bytes (`len`).
    pub len: u64,
    /// File offset the mapping starts at (`pgoff`, bytes).
    pub pgoff: u64,
    /// MMAP2 only: device and inode, or a build-id.
    pub mmap2: Option<Mmap2Extra<'a>>,
    /// The mapped file's path, without its NUL padding (`filename[]`).
    pub filename: &'a [u8],
    /// `header.misc & PERF_RECORD_MISC_CPUMODE_MASK`: kernel or user mapping.
    pub cpumode: u16,
}

/// The MMAP2-only fields of `struct perf_record_mmap2`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mmap2Extra<'a> {
    /// Without `PERF_RECORD_MISC_MMAP_BUILD_ID`: the file's device and inode.
    Inode {
        /// Device major number.
        maj: u32,
        /// Device minor number.
        min: u32,
        /// Inode number.
        ino: u64,
        /// Inode generation.
        ino_generation: u64,
        /// `PROT_*` bits of the mapping.
        prot: u32,
        /// `MAP_*` bits of the mapping.
        flags: u32,
    },
    /// With `PERF_RECORD_MISC_MMAP_BUILD_ID`: the file's build id (`build_id_size` bytes, at most 20).
    BuildId {
        /// The build id bytes.
        build_id: &'a [u8],
        /// `PROT_*` bits of the mapping.
        prot: u32,
        /// `MAP_*` bits of the mapping.
        flags: u32,
    },
}

impl<'a> Mmap<'a> {
    /// Parses the body of an MMAP record (`body` excludes the header, includes any trailer).
    pub fn parse_mmap(body: Bytes<'a>, misc: u16, trailer: usize) -> Option<Mmap<'a>> {
        Self::parse_common(body, misc, trailer, 32, None)
    }

    /// Parses the body of an MMAP2 record.
    pub fn parse_mmap2(body: Bytes<'a>, misc: u16, trailer: usize) -> Option<Mmap<'a>> {
        let prot = body.u32(56)?;
        let flags = body.u32(60)?;
        let extra = if misc & misc::MMAP_BUILD_ID != 0 {
            let size = (*body.slice(32, 1)?.first()?).min(20) as usize;
            Mmap2Extra::BuildId {
                build_id: body.slice(36, size)?,
                prot,
                flags,
            }
        } else {
            Mmap2Extra::Inode {
                maj: body.u32(32)?,
                min: body.u32(36)?,
                ino: body.u64(40)?,
                ino_generation: body.u64(48)?,
                prot,
                flags,
            }
        };
        Self::parse_common(body, misc, trailer, 64, Some(extra))
    }

    /// The fields both records share, with the file name at `name_at` up to the trailer.
    fn parse_common(
        body: Bytes<'a>,
        misc: u16,
        trailer: usize,
        name_at: usize,
        mmap2: Option<Mmap2Extra<'a>>,
    ) -> Option<Mmap<'a>> {
        let name = body.sub(name_at, body.len().checked_sub(name_at + trailer)?)?;
        Some(Mmap {
            pid: body.u32(0)?,
            tid: body.u32(4)?,
            addr: body.u64(8)?,
            len: body.u64(16)?,
            pgoff: body.u64(24)?,
            mmap2,
            filename: name.c_str(0)?,
            cpumode: misc & misc::CPUMODE_MASK,
        })
    }
}

/// PERF_RECORD_COMM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comm<'a> {
    /// `pid` of the process.
    pub pid: u32,
    /// `tid` of the renamed thread.
    pub tid: u32,
    /// The new name (`comm[]`, without NUL padding).
    pub comm: &'a [u8],
    /// `PERF_RECORD_MISC_COMM_EXEC`: the name changed because the process exec'd.
    pub exec: bool,
}

impl<'a> Comm<'a> {
    /// Parses a COMM body (`body` excludes the header, includes a `sample_id` trailer of `trailer` bytes).
    pub fn parse(body: Bytes<'a>, misc: u16, trailer: usize) -> Option<Comm<'a>> {
        let name = body.sub(8, body.len().checked_sub(8 + trailer)?)?;
        Some(Comm {
            pid: body.u32(0)?,
            tid: body.u32(4)?,
            comm: name.c_str(0)?,
            exec: misc & misc::COMM_EXEC != 0,
        })
    }
}

/// PERF_RECORD_FORK and PERF_RECORD_EXIT share one layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    /// `pid` of the new (FORK) or exiting (EXIT) process.
    pub pid: u32,
    /// `ppid`: the parent process.
    pub ppid: u32,
    /// `tid` of the new or exiting thread.
    pub tid: u32,
    /// `ptid`: the parent thread.
    pub ptid: u32,
    /// `time` of the event, in perf's clock (nanoseconds).
    pub time: u64,
}

impl Task {
    /// Parses a FORK or EXIT body (`body` excludes the header).
    pub fn parse(body: Bytes<'_>) -> Option<Task> {
        Some(Task {
            pid: body.u32(0)?,
            ppid: body.u32(4)?,
            tid: body.u32(8)?,
            ptid: body.u32(12)?,
            time: body.u64(16)?,
        })
    }
}

/// The `sample_id_all` trailer fields of a non-sample record that we use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleId {
    /// `sample_id.pid` (with `PERF_SAMPLE_TID`).
    pub pid: Option<u32>,
    /// `sample_id.tid` (with `PERF_SAMPLE_TID`).
    pub tid: Option<u32>,
    /// `sample_id.time` (with `PERF_SAMPLE_TIME`), in perf's clock (nanoseconds).
    pub time: Option<u64>,
}

/// Reads the trailer from the record's end: `{pid,tid}? {time}? {id}? {stream_id}? {cpu}? {id}?`.
pub fn parse_sample_id(body: Bytes<'_>, sample_type: u64, trailer_size: usize) -> SampleId {
    use super::attr::sample_type as st;
    let Some(start) = body.len().checked_sub(trailer_size) else {
        return SampleId::default();
    };
    let mut id = SampleId::default();
    let mut off = start;
    if sample_type & st::TID != 0 {
        id.pid = body.u32(off);
        id.tid = body.u32(off + 4);
        off += 8;
    }
    if sample_type & st::TIME != 0 {
        id.time = body.u64(off);
    }
    id
}
