//! Byte-level encoding of a file-mode perf.data: header, the single attr,
//! side-band records, sample framing, optional zstd wrapping, and the
//! feature sections. Layout facts follow the perf.data reference notes
//! (header §1.1, attr §1.2, features §1.3, records §1.4–1.6, compression §1.10).

use std::io::{self, Write};

pub const HEADER_SIZE: u64 = 104;
/// Default `perf_event_attr` size written (PERF_ATTR_SIZE_VER7): the newest
/// size perf 6.1 accepts; it refuses VER8 (136) files as "more recent ABI".
pub const ATTR_SIZE: u64 = 128;

/// Each attrs entry is the attr followed by a `perf_file_section` for its ids.
pub fn attr_entry_size(attr_size: u64) -> u64 {
    attr_size + 16
}

/// The data section follows the header and the one attrs entry.
pub fn data_offset(attr_size: u64) -> u64 {
    HEADER_SIZE + attr_entry_size(attr_size)
}

/// With several events: the header, their ids (one u64 each), the attrs entries, then data.
pub fn multi_data_offset(attr_size: u64, events: u64) -> u64 {
    HEADER_SIZE + 8 * events + events * attr_entry_size(attr_size)
}

const RECORD_COMM: u32 = 3;
const RECORD_SAMPLE: u32 = 9;
const RECORD_MMAP2: u32 = 10;
const RECORD_FINISHED_ROUND: u32 = 68;
const RECORD_COMPRESSED: u32 = 81;

pub const MISC_KERNEL: u16 = 1;
pub const MISC_USER: u16 = 2;
const MISC_COMM_EXEC: u16 = 1 << 13;
const MISC_BUILD_ID_SIZE: u16 = 1 << 15;

pub const FEAT_BUILD_ID: u32 = 2;
pub const FEAT_BRANCH_STACK: u32 = 15;
pub const FEAT_COMPRESSED: u32 = 27;

/// IP | TID | TIME | PERIOD | BRANCH_STACK: the layout `perf record -b` gives
/// for a single event, and the fast path most readers specialise on.
pub const SAMPLE_TYPE: u64 = 1 | (1 << 1) | (1 << 2) | (1 << 8) | (1 << 11);
/// Fixed part of a SAMPLE record: header, ip, pid/tid, time, period.
pub const SAMPLE_HEAD_SIZE: usize = 8 + 8 + 8 + 8 + 8;
const BRANCH_SAMPLE_ANY: u64 = 1 << 3;
/// The period every sample records.
pub const SAMPLE_PERIOD: u64 = 100_003;

/// perf's limit for one COMPRESSED record's payload
/// (`PERF_SAMPLE_MAX_SIZE - sizeof(perf_record_compressed) - 1`).
const MAX_COMPRESSED_PAYLOAD: usize = 65_535 - 8 - 1;
/// Uncompressed bytes per zstd push. Each push is flushed, so every
/// COMPRESSED record decodes to at most this much; small pushes also keep a
/// push's output within one record, which perf 6.1 needs because it rejects a
/// COMPRESSED record that decodes to nothing.
const PUSH_BYTES: usize = 64 * 1024;
/// Advertised decompression buffer size (HEADER_COMPRESSED mmap_len): perf
/// 6.1 decodes each COMPRESSED record into a buffer of this size.
const COMPRESSED_MMAP_LEN: u32 = 2 * PUSH_BYTES as u32;
const ZSTD_LEVEL: i32 = 1;
/// A FINISHED_ROUND after this many samples (uncompressed) or pushes
/// (compressed, ~320 samples of 32 entries), like a busy `perf record`.
const ROUND_SAMPLES: u64 = 300;
const ROUND_PUSHES: u32 = 4;
/// Raw output is handed to the caller's writer in blocks of this size.
const OUT_BLOCK: usize = 1 << 20;

/// Little-endian record builder.
#[derive(Default)]
pub struct Rec(pub Vec<u8>);

impl Rec {
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.0.extend_from_slice(v);
        self
    }
    /// NUL-terminated string zero-padded to a multiple of `align` bytes.
    pub fn padded_str(&mut self, s: &str, align: usize) -> &mut Self {
        let len = (s.len() + 1).next_multiple_of(align);
        self.0.extend_from_slice(s.as_bytes());
        self.0.resize(self.0.len() + len - s.len(), 0);
        self
    }
    fn header(kind: u32, misc: u16) -> Self {
        let mut r = Rec::default();
        r.u32(kind).u16(misc).u16(0);
        r
    }
    /// Patches the u16 size field of the record header and returns the bytes.
    fn finish(mut self) -> Vec<u8> {
        let size = u16::try_from(self.0.len()).expect("perf record larger than 64 KiB");
        self.0[6..8].copy_from_slice(&size.to_le_bytes());
        self.0
    }
}

pub struct FileHeader {
    pub attr_size: u64,
    pub data_size: u64,
    /// Feature bits present, ascending.
    pub features: Vec<u32>,
    /// Number of attrs; with more than one, an ids block precedes them (see
    /// [`multi_data_offset`]).
    pub events: u64,
}

impl FileHeader {
    pub fn encode(&self) -> Vec<u8> {
        let mut bitmap = [0u64; 4];
        for &f in &self.features {
            bitmap[(f / 64) as usize] |= 1 << (f % 64);
        }
        let mut r = Rec::default();
        let entry_size = attr_entry_size(self.attr_size);
        let (attrs_at, data_at) = if self.events > 1 {
            (
                HEADER_SIZE + 8 * self.events,
                multi_data_offset(self.attr_size, self.events),
            )
        } else {
            (HEADER_SIZE, data_offset(self.attr_size))
        };
        r.bytes(b"PERFILE2").u64(HEADER_SIZE).u64(entry_size);
        r.u64(attrs_at).u64(entry_size * self.events.max(1)); // attrs
        r.u64(data_at).u64(self.data_size); // data
        r.u64(0).u64(0); // event_types (legacy)
        for word in bitmap {
            r.u64(word);
        }
        debug_assert_eq!(r.0.len() as u64, HEADER_SIZE);
        r.0
    }
}

/// The one `perf_event_attr` (plus its empty ids section): hardware cycles
/// with a fixed period and branch-stack sampling, flags as `perf record -b
/// -c 100003` sets them. `attr_size` is at least 104 (VER3, which has
/// `branch_sample_type`); fields past VER7 (e.g. VER8's `config3`) are zero.
pub fn attr_entry(attr_size: u64) -> Vec<u8> {
    attr_entry_of(attr_size, 0, SAMPLE_TYPE, BRANCH_SAMPLE_ANY)
}

/// IP | TID | TIME | PERIOD: the layout of `perf record -e cpu-clock` (no branch stack).
pub const IP_SAMPLE_TYPE: u64 = SAMPLE_TYPE & !(1 << 11);

/// The one `perf_event_attr` of an IP-only capture: the software `cpu-clock` event with a
/// fixed period, no branch stack, flags as `perf record -e cpu-clock -c 100003` sets them.
pub fn ip_attr_entry(attr_size: u64) -> Vec<u8> {
    const PERF_TYPE_SOFTWARE: u32 = 1;
    attr_entry_of(attr_size, PERF_TYPE_SOFTWARE, IP_SAMPLE_TYPE, 0)
}

/// An attrs entry of event `type_` (config 0: cycles for hardware, cpu-clock for software).
fn attr_entry_of(attr_size: u64, type_: u32, sample_type: u64, branch_sample_type: u64) -> Vec<u8> {
    const FLAG_BITS: [u32; 10] = [
        0,  // disabled
        1,  // inherit
        8,  // mmap
        9,  // comm
        12, // enable_on_exec
        13, // task
        18, // sample_id_all
        20, // exclude_guest
        23, // mmap2
        24, // comm_exec
    ];
    let flags = FLAG_BITS.iter().fold(0u64, |acc, b| acc | (1 << b));
    let mut r = Rec::default();
    r.u32(type_).u32(attr_size as u32);
    r.u64(0); // config
    r.u64(SAMPLE_PERIOD);
    r.u64(sample_type);
    r.u64(0); // read_format
    r.u64(flags);
    r.u32(0).u32(0); // wakeup_events, bp_type
    r.u64(0).u64(0); // config1, config2
    r.u64(branch_sample_type);
    debug_assert!(r.0.len() as u64 <= attr_size);
    r.0.resize(attr_size as usize, 0); // regs, stack, clockid, aux, sig_data, config3
    r.u64(0).u64(0); // ids section: none (one event, no IDENTIFIER needed)
    debug_assert_eq!(r.0.len() as u64, attr_entry_size(attr_size));
    r.0
}

/// The `sample_id_all` trailer: tid, time and, in multi-event captures, the
/// IDENTIFIER of the event the record belongs to.
fn sample_id(r: &mut Rec, pid: u32, time: u64, id: Option<u64>) {
    r.u32(pid).u32(pid).u64(time);
    if let Some(id) = id {
        r.u64(id);
    }
}

/// COMM with the exec flag, as the kernel emits after `execve`.
pub fn comm_record(pid: u32, comm: &str, time: u64, id: Option<u64>) -> Vec<u8> {
    let mut r = Rec::header(RECORD_COMM, MISC_USER | MISC_COMM_EXEC);
    r.u32(pid).u32(pid).padded_str(comm, 8);
    sample_id(&mut r, pid, time, id);
    r.finish()
}

/// One event of a multi-event capture (every one carries IDENTIFIER).
#[derive(Clone, Debug)]
pub struct EventSpec {
    pub type_: u32,
    pub config: u64,
    pub config1: u64,
    pub sample_type: u64,
    pub branch_sample_type: u64,
    /// `precise_ip` (the `P` modifier asks for the maximum, 3).
    pub precise_ip: u64,
    /// The leader also tracks mmap/comm/task side-band records.
    pub tracking: bool,
    pub id: u64,
    /// The name `perf record` stores in EVENT_DESC.
    pub name: String,
}

pub const SAMPLE_IDENTIFIER: u64 = 1 << 16;
pub const SAMPLE_IP: u64 = 1;
pub const SAMPLE_TID: u64 = 1 << 1;
pub const SAMPLE_TIME: u64 = 1 << 2;
pub const SAMPLE_ADDR: u64 = 1 << 3;
pub const SAMPLE_PERIOD_BIT: u64 = 1 << 8;
pub const SAMPLE_BRANCH_STACK: u64 = 1 << 11;
pub const SAMPLE_WEIGHT: u64 = 1 << 14;
pub const SAMPLE_DATA_SRC: u64 = 1 << 15;
pub const FEAT_EVENT_DESC: u32 = 12;

/// A `perf_event_attr` of `attr_size` bytes for one event of a multi-event capture.
pub fn event_attr(attr_size: u64, e: &EventSpec) -> Vec<u8> {
    let mut bits: Vec<u32> = vec![0, 1, 12, 18, 20]; // disabled inherit enable_on_exec sample_id_all exclude_guest
    if e.tracking {
        bits.extend([8, 9, 13, 23, 24]); // mmap comm task mmap2 comm_exec
    }
    let flags = bits.iter().fold(0u64, |acc, b| acc | (1 << b)) | (e.precise_ip << 15);
    let mut r = Rec::default();
    r.u32(e.type_).u32(attr_size as u32);
    r.u64(e.config).u64(SAMPLE_PERIOD).u64(e.sample_type);
    r.u64(0).u64(flags); // read_format
    r.u32(0).u32(0); // wakeup_events, bp_type
    r.u64(e.config1).u64(0); // config1 (ldlat for mem-loads), config2
    r.u64(e.branch_sample_type);
    r.0.resize(attr_size as usize, 0);
    r.0
}

/// The attrs entries of a multi-event capture, whose ids block sits right
/// after the file header (id `i` at `HEADER_SIZE + 8 * i`).
pub fn event_attr_entries(attr_size: u64, events: &[EventSpec]) -> Vec<u8> {
    let mut out = Rec::default();
    for e in events {
        out.u64(e.id);
    }
    for (i, e) in events.iter().enumerate() {
        out.bytes(&event_attr(attr_size, e));
        out.u64(HEADER_SIZE + 8 * i as u64).u64(8);
    }
    out.0
}

/// HEADER_EVENT_DESC: `u32 nr, attr_size; { attr; u32 nr_ids; string name; u64 ids[] }`.
pub fn event_desc_feature(attr_size: u64, events: &[EventSpec]) -> Vec<u8> {
    let mut r = Rec::default();
    r.u32(events.len() as u32).u32(attr_size as u32);
    for e in events {
        r.bytes(&event_attr(attr_size, e)).u32(1);
        let len = (e.name.len() + 1).next_multiple_of(64);
        r.u32(len as u32).padded_str(&e.name, 64);
        r.u64(e.id);
    }
    r.0
}

/// A SAMPLE record of an IDENTIFIER-led layout: `fields` are the u64 words
/// after the header, in sample_type order.
pub fn sample_record(misc: u16, fields: &[u64], tail: &[u8]) -> Vec<u8> {
    let mut r = Rec::header(RECORD_SAMPLE, misc);
    for &f in fields {
        r.u64(f);
    }
    r.bytes(tail);
    r.finish()
}

/// `pid` and `tid` packed into the TID word of a sample.
pub fn tid_word(pid: u32) -> u64 {
    u64::from(pid) | (u64::from(pid) << 32)
}

/// One file-backed executable mapping, in process addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mmap {
    pub addr: u64,
    pub len: u64,
    pub pgoff: u64,
    pub maj: u32,
    pub min: u32,
    pub ino: u64,
    pub filename: String,
}

pub fn mmap2_record(pid: u32, m: &Mmap, time: u64, id: Option<u64>) -> Vec<u8> {
    const PROT_READ_EXEC: u32 = 1 | 4;
    const MAP_PRIVATE: u32 = 2;
    let mut r = Rec::header(RECORD_MMAP2, MISC_USER);
    r.u32(pid).u32(pid).u64(m.addr).u64(m.len).u64(m.pgoff);
    r.u32(m.maj).u32(m.min).u64(m.ino).u64(0); // ino_generation
    r.u32(PROT_READ_EXEC).u32(MAP_PRIVATE);
    r.padded_str(&m.filename, 8);
    sample_id(&mut r, pid, time, id);
    r.finish()
}

pub fn finished_round() -> [u8; 8] {
    let mut r = [0u8; 8];
    r[..4].copy_from_slice(&RECORD_FINISHED_ROUND.to_le_bytes());
    r[6..8].copy_from_slice(&8u16.to_le_bytes());
    r
}

/// Everything of a SAMPLE record except its branch stack (`u64 nr` and the
/// entries), which the caller appends pre-serialized.
pub fn sample_head(
    misc: u16,
    ip: u64,
    pid: u32,
    time: u64,
    tail_len: usize,
) -> [u8; SAMPLE_HEAD_SIZE] {
    let size = (SAMPLE_HEAD_SIZE + tail_len) as u16;
    let mut h = [0u8; SAMPLE_HEAD_SIZE];
    h[0..4].copy_from_slice(&RECORD_SAMPLE.to_le_bytes());
    h[4..6].copy_from_slice(&misc.to_le_bytes());
    h[6..8].copy_from_slice(&size.to_le_bytes());
    h[8..16].copy_from_slice(&ip.to_le_bytes());
    h[16..20].copy_from_slice(&pid.to_le_bytes());
    h[20..24].copy_from_slice(&pid.to_le_bytes());
    h[24..32].copy_from_slice(&time.to_le_bytes());
    h[32..40].copy_from_slice(&SAMPLE_PERIOD.to_le_bytes());
    h
}

/// Largest branch stack whose SAMPLE record still fits the u16 size field.
pub const MAX_LBR_DEPTH: u32 = ((u16::MAX as usize - SAMPLE_HEAD_SIZE - 8) / 24) as u32;

/// HEADER_BUILD_ID payload: one `perf_record_header_build_id` per binary, in
/// the MISC_BUILD_ID_SIZE form (explicit length, so short 8-byte ids survive).
pub fn build_id_feature(ids: &[(&[u8], &str)]) -> Vec<u8> {
    const NAME_ALIGN: usize = 64;
    let mut out = Vec::new();
    for (id, filename) in ids {
        let mut r = Rec::header(0, MISC_USER | MISC_BUILD_ID_SIZE);
        r.u32(u32::MAX); // pid -1: the host machine
        let mut id20 = [0u8; 20];
        let n = id.len().min(20);
        id20[..n].copy_from_slice(&id[..n]);
        r.bytes(&id20).bytes(&[n as u8, 0, 0, 0]);
        r.padded_str(filename, NAME_ALIGN);
        out.extend_from_slice(&r.finish());
    }
    out
}

/// HEADER_COMPRESSED payload: version, type (1 = zstd), level, ratio, mmap_len.
pub fn compressed_feature(ratio: u32) -> Vec<u8> {
    let mut r = Rec::default();
    r.u32(0)
        .u32(1)
        .u32(ZSTD_LEVEL as u32)
        .u32(ratio)
        .u32(COMPRESSED_MMAP_LEN);
    r.0
}

/// Receives the data-section records, applies rounds and optional zstd
/// wrapping, and streams the result to the output in large blocks.
pub struct DataSink<'w, W: Write> {
    out: &'w mut W,
    buf: Vec<u8>,
    /// Data-section bytes produced so far (including `buf`, excluding an
    /// unflushed compression push).
    data_len: u64,
    /// Uncompressed samples since the last FINISHED_ROUND.
    samples_in_round: u64,
    zstd: Option<Compressor>,
}

struct Compressor {
    encoder: zstd::stream::write::Encoder<'static, Vec<u8>>,
    push: Vec<u8>,
    pushes_in_round: u32,
    raw_bytes: u64,
    packed_bytes: u64,
}

impl<'w, W: Write> DataSink<'w, W> {
    pub fn new(out: &'w mut W, compress: bool) -> io::Result<Self> {
        let zstd = if compress {
            Some(Compressor {
                encoder: zstd::stream::write::Encoder::new(Vec::new(), ZSTD_LEVEL)?,
                push: Vec::with_capacity(PUSH_BYTES),
                pushes_in_round: 0,
                raw_bytes: 0,
                packed_bytes: 0,
            })
        } else {
            None
        };
        Ok(Self {
            out,
            buf: Vec::with_capacity(OUT_BLOCK + PUSH_BYTES),
            data_len: 0,
            samples_in_round: 0,
            zstd,
        })
    }

    pub fn data_len(&self) -> u64 {
        self.data_len
    }

    /// A side-band record; these stay uncompressed, as perf writes its
    /// synthesized start-up records.
    pub fn side_band(&mut self, record: &[u8]) -> io::Result<()> {
        self.raw(record)
    }

    /// A SAMPLE record given as its head and pre-serialized branch stack.
    pub fn sample(&mut self, head: &[u8], tail: &[u8]) -> io::Result<()> {
        match &mut self.zstd {
            None => {
                self.buf.extend_from_slice(head);
                self.buf.extend_from_slice(tail);
                self.data_len += (head.len() + tail.len()) as u64;
                self.samples_in_round += 1;
                if self.samples_in_round == ROUND_SAMPLES {
                    self.samples_in_round = 0;
                    self.raw(&finished_round())?;
                }
                self.flush_if_full()
            }
            Some(z) => {
                if z.push.len() + head.len() + tail.len() > PUSH_BYTES {
                    self.push()?;
                }
                let z = self.zstd.as_mut().expect("compressor present");
                z.push.extend_from_slice(head);
                z.push.extend_from_slice(tail);
                Ok(())
            }
        }
    }

    /// Flushes everything; returns the data-section size and the zstd
    /// compression ratio (1 if uncompressed).
    pub fn finish(mut self) -> io::Result<(u64, u32)> {
        let mut ratio = 1;
        if self.zstd.is_some() {
            self.push()?;
            let z = self.zstd.as_ref().expect("compressor present");
            if z.pushes_in_round > 0 {
                self.raw(&finished_round())?;
            }
            let z = self.zstd.as_ref().expect("compressor present");
            ratio = (z.raw_bytes / z.packed_bytes.max(1)).clamp(1, u64::from(u32::MAX)) as u32;
        } else if self.samples_in_round > 0 {
            self.raw(&finished_round())?;
        }
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        Ok((self.data_len, ratio))
    }

    fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.buf.extend_from_slice(bytes);
        self.data_len += bytes.len() as u64;
        self.flush_if_full()
    }

    fn flush_if_full(&mut self) -> io::Result<()> {
        if self.buf.len() >= OUT_BLOCK {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Compresses the pending push into the never-ending zstd stream and
    /// wraps the flushed output in COMPRESSED records.
    fn push(&mut self) -> io::Result<()> {
        let Some(z) = self.zstd.as_mut() else {
            return Ok(());
        };
        if z.push.is_empty() {
            return Ok(());
        }
        z.encoder.write_all(&z.push)?;
        z.encoder.flush()?;
        z.raw_bytes += z.push.len() as u64;
        z.push.clear();
        // Taken out (and put back below) so records can be written while the
        // encoder's output buffer is borrowed; keeps its allocation.
        let mut packed = std::mem::take(z.encoder.get_mut());
        z.packed_bytes += packed.len() as u64;
        z.pushes_in_round += 1;
        let end_round = z.pushes_in_round == ROUND_PUSHES;
        if end_round {
            z.pushes_in_round = 0;
        }
        for chunk in packed.chunks(MAX_COMPRESSED_PAYLOAD) {
            let mut header = Rec::header(RECORD_COMPRESSED, 0);
            header.0[6..8].copy_from_slice(&((8 + chunk.len()) as u16).to_le_bytes());
            self.raw(&header.0)?;
            self.raw(chunk)?;
        }
        if end_round {
            self.raw(&finished_round())?;
        }
        packed.clear();
        *self
            .zstd
            .as_mut()
            .expect("compressor present")
            .encoder
            .get_mut() = packed;
        Ok(())
    }
}
