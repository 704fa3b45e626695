//! The record stream: `perf_event_header`s, record types, and the side-band records
//! (MMAP, MMAP2, COMM, FORK, EXIT) that place samples in processes and binaries.

use crate::bytes::Bytes;

/// Record types (`enum perf_event_type` and perf's user record types).
pub mod kind {
    pub const MMAP: u32 = 1;
    pub const LOST: u32 = 2;
    pub const COMM: u32 = 3;
    pub const EXIT: u32 = 4;
    pub const THROTTLE: u32 = 5;
    pub const UNTHROTTLE: u32 = 6;
    pub const FORK: u32 = 7;
    pub const SAMPLE: u32 = 9;
    pub const MMAP2: u32 = 10;
    pub const HEADER_ATTR: u32 = 64;
    pub const HEADER_TRACING_DATA: u32 = 66;
    pub const HEADER_BUILD_ID: u32 = 67;
    pub const FINISHED_ROUND: u32 = 68;
    pub const ID_INDEX: u32 = 69;
    pub const AUXTRACE: u32 = 71;
    pub const EVENT_UPDATE: u32 = 78;
    pub const HEADER_FEATURE: u32 = 80;
    pub const COMPRESSED: u32 = 81;
    pub const COMPRESSED2: u32 = 83;
}

/// `misc` bits used here.
pub mod misc {
    pub const CPUMODE_MASK: u16 = 7;
    pub const KERNEL: u16 = 1;
    pub const USER: u16 = 2;
    /// On COMM: the process exec'd.
    pub const COMM_EXEC: u16 = 1 << 13;
    /// On MMAP2: a build-id replaces maj/min/ino/ino_generation.
    pub const MMAP_BUILD_ID: u16 = 1 << 14;
    /// On BUILD_ID records: the size byte is valid.
    pub const BUILD_ID_SIZE: u16 = 1 << 15;
}

pub const HEADER_SIZE: usize = 8;

/// `struct perf_event_header`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub kind: u32,
    pub misc: u16,
    pub size: u16,
}

impl RecordHeader {
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
    pub pid: u32,
    pub tid: u32,
    pub addr: u64,
    pub len: u64,
    pub pgoff: u64,
    /// MMAP2 only: device and inode, or a build-id.
    pub mmap2: Option<Mmap2Extra<'a>>,
    pub filename: &'a [u8],
    pub cpumode: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mmap2Extra<'a> {
    Inode {
        maj: u32,
        min: u32,
        ino: u64,
        ino_generation: u64,
        prot: u32,
        flags: u32,
    },
    BuildId {
        build_id: &'a [u8],
        prot: u32,
        flags: u32,
    },
}

impl<'a> Mmap<'a> {
    /// Parses the body of an MMAP record (`body` excludes the header, includes any trailer).
    pub fn parse_mmap(body: Bytes<'a>, misc: u16, trailer: usize) -> Option<Mmap<'a>> {
        let name = body.sub(32, body.len().checked_sub(32 + trailer)?)?;
        Some(Mmap {
            pid: body.u32(0)?,
            tid: body.u32(4)?,
            addr: body.u64(8)?,
            len: body.u64(16)?,
            pgoff: body.u64(24)?,
            mmap2: None,
            filename: name.c_str(0)?,
            cpumode: misc & misc::CPUMODE_MASK,
        })
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
        let name = body.sub(64, body.len().checked_sub(64 + trailer)?)?;
        Some(Mmap {
            pid: body.u32(0)?,
            tid: body.u32(4)?,
            addr: body.u64(8)?,
            len: body.u64(16)?,
            pgoff: body.u64(24)?,
            mmap2: Some(extra),
            filename: name.c_str(0)?,
            cpumode: misc & misc::CPUMODE_MASK,
        })
    }
}

/// PERF_RECORD_COMM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comm<'a> {
    pub pid: u32,
    pub tid: u32,
    pub comm: &'a [u8],
    pub exec: bool,
}

impl<'a> Comm<'a> {
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
    pub pid: u32,
    pub ppid: u32,
    pub tid: u32,
    pub ptid: u32,
    pub time: u64,
}

impl Task {
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
    pub pid: Option<u32>,
    pub tid: Option<u32>,
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
