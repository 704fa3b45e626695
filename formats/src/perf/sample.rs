//! SAMPLE records, decoded zero-copy in the exact field order of perf's
//! `evsel__parse_sample` (which differs from the uapi comment: AUX comes last).

use super::attr::{branch_sample, read_format as rf, sample_type as st, EventAttr};
use crate::bytes::{Bytes, Endian, Reader};

/// What a SAMPLE of one event looks like, precomputed once per attr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleLayout {
    /// The attr's `sample_type`: which [`sample_type`](super::attr::sample_type) fields a SAMPLE carries.
    pub sample_type: u64,
    /// The attr's `read_format`: the layout of the `PERF_SAMPLE_READ` block.
    pub read_format: u64,
    /// `branch_sample_type` has `PERF_SAMPLE_BRANCH_HW_INDEX`: a u64 `hw_idx` precedes the branch entries.
    pub branch_hw_index: bool,
    /// Branch counters follow the entries (decided by the group leader; we use the event's own
    /// flag, which is the same for the single-event groups perf record writes).
    pub branch_counters: bool,
    /// Number of registers in a `PERF_SAMPLE_REGS_USER` block (popcount of `sample_regs_user`).
    pub regs_user: u32,
    /// Number of registers in a `PERF_SAMPLE_REGS_INTR` block (popcount of `sample_regs_intr`).
    pub regs_intr: u32,
    /// Offset of the event id inside a SAMPLE body, if it can be told from the layout.
    pub sample_id_offset: Option<usize>,
    /// Offset of the event id from the END of a non-sample record, if `sample_id_all`.
    pub trailer_id_from_end: Option<usize>,
    /// Size of the `sample_id_all` trailer of non-sample records.
    pub trailer_size: usize,
    /// The attr's `sample_id_all` flag: non-sample records end with a `sample_id` trailer.
    pub sample_id_all: bool,
}

impl SampleLayout {
    /// Precomputes the layout of `attr`'s SAMPLE records and `sample_id` trailers.
    pub fn new(attr: &EventAttr) -> SampleLayout {
        let t = attr.sample_type;
        let sample_id_offset = if t & st::IDENTIFIER != 0 {
            Some(0)
        } else if t & st::ID != 0 {
            let before = [st::IP, st::TID, st::TIME, st::ADDR];
            Some(8 * before.iter().filter(|&&b| t & b != 0).count())
        } else {
            None
        };
        let trailer_bits = [
            st::TID,
            st::TIME,
            st::ID,
            st::STREAM_ID,
            st::CPU,
            st::IDENTIFIER,
        ];
        let trailer_size = 8 * trailer_bits.iter().filter(|&&b| t & b != 0).count();
        let trailer_id_from_end = if !attr.sample_id_all() {
            None
        } else if t & st::IDENTIFIER != 0 {
            Some(8)
        } else if t & st::ID != 0 {
            let after = [st::STREAM_ID, st::CPU, st::IDENTIFIER];
            Some(8 + 8 * after.iter().filter(|&&b| t & b != 0).count())
        } else {
            None
        };
        SampleLayout {
            sample_type: t,
            read_format: attr.read_format,
            branch_hw_index: attr.branch_sample_type & branch_sample::HW_INDEX != 0,
            branch_counters: attr.branch_sample_type & branch_sample::COUNTERS != 0,
            regs_user: attr.sample_regs_user.count_ones(),
            regs_intr: attr.sample_regs_intr.count_ones(),
            sample_id_offset,
            trailer_id_from_end,
            trailer_size: if attr.sample_id_all() {
                trailer_size
            } else {
                0
            },
            sample_id_all: attr.sample_id_all(),
        }
    }

    #[inline(always)]
    fn has(&self, bit: u64) -> bool {
        self.sample_type & bit != 0
    }

    /// Decodes a SAMPLE body (the record without its 8-byte header).
    #[inline]
    pub fn parse<'a>(&self, body: Bytes<'a>) -> Result<Sample<'a>, &'static str> {
        let mut s = Sample::default();
        let mut c = Reader::from(body);
        if self.has(st::IDENTIFIER) {
            s.id = Some(c.u64().map_err(|_| "IDENTIFIER")?);
        }
        if self.has(st::IP) {
            s.ip = c.u64().map_err(|_| "IP")?;
        }
        if self.has(st::TID) {
            s.pid = c.u32().map_err(|_| "TID")?;
            s.tid = c.u32().map_err(|_| "TID")?;
        }
        if self.has(st::TIME) {
            s.time = Some(c.u64().map_err(|_| "TIME")?);
        }
        if self.has(st::ADDR) {
            s.addr = c.u64().map_err(|_| "ADDR")?;
        }
        if self.has(st::ID) {
            s.id = Some(c.u64().map_err(|_| "ID")?);
        }
        if self.has(st::STREAM_ID) {
            s.stream_id = c.u64().map_err(|_| "STREAM_ID")?;
        }
        if self.has(st::CPU) {
            s.cpu = c.u32().map_err(|_| "CPU")?;
            c.u32().map_err(|_| "CPU")?;
        }
        if self.has(st::PERIOD) {
            s.period = c.u64().map_err(|_| "PERIOD")?;
        }
        if self.has(st::READ) {
            self.skip_read(&mut c).ok_or("READ")?;
        }
        if self.has(st::CALLCHAIN) {
            let nr = c.u64().map_err(|_| "CALLCHAIN")?;
            s.callchain = Some(take_u64s(&mut c, nr).ok_or("CALLCHAIN")?);
        }
        if self.has(st::RAW) {
            let size = c.u32().map_err(|_| "RAW")?;
            s.raw = Some(c.take(size as usize).map_err(|_| "RAW")?);
        }
        if self.has(st::BRANCH_STACK) {
            s.branch_stack = Some(self.branch_stack(&mut c).ok_or("BRANCH_STACK")?);
        }
        if self.has(st::REGS_USER) {
            skip_regs(&mut c, self.regs_user).ok_or("REGS_USER")?;
        }
        if self.has(st::STACK_USER) {
            let size = c.u64().map_err(|_| "STACK_USER")?;
            if size != 0 {
                c.skip(usize::try_from(size).ok().ok_or("STACK_USER")?)
                    .map_err(|_| "STACK_USER")?;
                c.u64().map_err(|_| "STACK_USER")?;
            }
        }
        if self.has(st::WEIGHT) || self.has(st::WEIGHT_STRUCT) {
            s.weight = c.u64().map_err(|_| "WEIGHT")?;
        }
        if self.has(st::DATA_SRC) {
            s.data_src = c.u64().map_err(|_| "DATA_SRC")?;
        }
        if self.has(st::TRANSACTION) {
            c.u64().map_err(|_| "TRANSACTION")?;
        }
        if self.has(st::REGS_INTR) {
            skip_regs(&mut c, self.regs_intr).ok_or("REGS_INTR")?;
        }
        if self.has(st::PHYS_ADDR) {
            s.phys_addr = c.u64().map_err(|_| "PHYS_ADDR")?;
        }
        if self.has(st::CGROUP) {
            s.cgroup = c.u64().map_err(|_| "CGROUP")?;
        }
        if self.has(st::DATA_PAGE_SIZE) {
            c.u64().map_err(|_| "DATA_PAGE_SIZE")?;
        }
        if self.has(st::CODE_PAGE_SIZE) {
            c.u64().map_err(|_| "CODE_PAGE_SIZE")?;
        }
        if self.has(st::AUX) {
            let size = c.u64().map_err(|_| "AUX")?;
            c.skip(usize::try_from(size).ok().ok_or("AUX")?)
                .map_err(|_| "AUX")?;
        }
        Ok(s)
    }

    fn skip_read(&self, c: &mut Reader<'_>) -> Option<()> {
        let f = self.read_format;
        let times =
            (f & rf::TOTAL_TIME_ENABLED != 0) as usize + (f & rf::TOTAL_TIME_RUNNING != 0) as usize;
        let per_value = 1 + (f & rf::ID != 0) as usize + (f & rf::LOST != 0) as usize;
        if f & rf::GROUP != 0 {
            let nr = c.u64().ok()?;
            c.skip(8 * times).ok()?;
            let values = usize::try_from(nr).ok()?.checked_mul(8 * per_value)?;
            c.skip(values).ok()
        } else {
            c.skip(8 * (per_value + times)).ok()
        }
    }

    fn branch_stack<'a>(&self, c: &mut Reader<'a>) -> Option<BranchStack<'a>> {
        let nr = usize::try_from(c.u64().ok()?).ok()?;
        let hw_index = if self.branch_hw_index {
            Some(c.u64().ok()?)
        } else {
            None
        };
        let entries = c.take(nr.checked_mul(BranchEntry::SIZE)?).ok()?;
        if self.branch_counters {
            c.skip(nr * 8).ok()?;
        }
        Some(BranchStack {
            entries: Bytes::new(entries, c.endian()),
            hw_index,
        })
    }
}

fn take_u64s<'a>(c: &mut Reader<'a>, nr: u64) -> Option<Bytes<'a>> {
    let len = usize::try_from(nr).ok()?.checked_mul(8)?;
    Some(Bytes::new(c.take(len).ok()?, c.endian()))
}

/// `u64 abi; u64 regs[popcount(mask)]` — no registers follow when `abi` is 0.
fn skip_regs(c: &mut Reader<'_>, count: u32) -> Option<()> {
    let abi = c.u64().ok()?;
    if abi != 0 {
        c.skip(8 * count as usize).ok()?;
    }
    Some(())
}

/// One decoded SAMPLE. Absent scalar fields read as 0; absent variable-length fields as `None`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sample<'a> {
    /// `PERF_SAMPLE_IDENTIFIER` or `PERF_SAMPLE_ID`: the event id, to find the sample's attr.
    pub id: Option<u64>,
    /// `PERF_SAMPLE_IP`: the sampled instruction address.
    pub ip: u64,
    /// `PERF_SAMPLE_TID`: process id.
    pub pid: u32,
    /// `PERF_SAMPLE_TID`: thread id.
    pub tid: u32,
    /// `PERF_SAMPLE_TIME`: the timestamp, in perf's clock (nanoseconds).
    pub time: Option<u64>,
    /// `PERF_SAMPLE_ADDR`: the data address.
    pub addr: u64,
    /// `PERF_SAMPLE_STREAM_ID`.
    pub stream_id: u64,
    /// `PERF_SAMPLE_CPU`: the cpu number (the `res` half is skipped).
    pub cpu: u32,
    /// `PERF_SAMPLE_PERIOD`: events counted since the previous sample.
    pub period: u64,
    /// `PERF_SAMPLE_CALLCHAIN`: the `ips[nr]` u64 words, in the file's byte order, innermost first.
    pub callchain: Option<Bytes<'a>>,
    /// `PERF_SAMPLE_RAW`: the raw tracepoint/PMU payload (`size` bytes).
    pub raw: Option<&'a [u8]>,
    /// `PERF_SAMPLE_BRANCH_STACK`: the LBR entries.
    pub branch_stack: Option<BranchStack<'a>>,
    /// `PERF_SAMPLE_WEIGHT` or `PERF_SAMPLE_WEIGHT_STRUCT`: the weight word as written.
    pub weight: u64,
    /// `PERF_SAMPLE_DATA_SRC`: `perf_mem_data_src` as a u64.
    pub data_src: u64,
    /// `PERF_SAMPLE_PHYS_ADDR`: the physical data address.
    pub phys_addr: u64,
    /// `PERF_SAMPLE_CGROUP`: the cgroup id.
    pub cgroup: u64,
}

/// The LBR entries of a sample, newest first, still in their on-disk bytes.
#[derive(Clone, Copy, Debug)]
pub struct BranchStack<'a> {
    /// The `perf_branch_entry[nr]` array, `nr * BranchEntry::SIZE` bytes in the file's byte order.
    pub entries: Bytes<'a>,
    /// `hw_idx` when the attr has `PERF_SAMPLE_BRANCH_HW_INDEX` (the LBR hardware index of the newest entry).
    pub hw_index: Option<u64>,
}

impl<'a> BranchStack<'a> {
    /// Number of entries (`nr`).
    pub fn len(&self) -> usize {
        self.entries.len() / BranchEntry::SIZE
    }

    /// Whether the stack has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entry `i` (0 = newest). Returns `None` past the end.
    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<BranchEntry> {
        let off = i.checked_mul(BranchEntry::SIZE)?;
        let bytes = self.entries.slice(off, BranchEntry::SIZE)?;
        Some(BranchEntry::parse(bytes, self.entries.endian))
    }

    /// The entries, newest first.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = BranchEntry> + 'a {
        let endian = self.entries.endian;
        let entries = self.entries.data.chunks_exact(BranchEntry::SIZE);
        entries.map(move |e| BranchEntry::parse(e, endian))
    }

    /// The entries, newest first, if the capture is little-endian: decoded without a byte-order
    /// choice per word (a swap and a conditional move each in [`Self::iter`]), for the decode
    /// loop.
    #[inline(always)]
    pub fn iter_little_endian(&self) -> Option<impl Iterator<Item = BranchEntry> + 'a> {
        let entries = self.entries.data.chunks_exact(BranchEntry::SIZE);
        let little = self.entries.endian == Endian::Little;
        little.then(|| entries.map(|e| BranchEntry::parse(e, Endian::Little)))
    }
}

/// `struct perf_branch_entry`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchEntry {
    /// `perf_branch_entry.from`: the branch source address.
    pub from: u64,
    /// `perf_branch_entry.to`: the branch target address.
    pub to: u64,
    /// The bitfield word (`mispred`, `predicted`, ..., `cycles`, `type`, `spec`).
    pub flags: BranchFlags,
}

impl BranchEntry {
    /// `sizeof(struct perf_branch_entry)` in bytes: from, to and the flag word.
    pub const SIZE: usize = 24;

    /// An entry from its `SIZE` bytes (the caller has checked the length).
    #[inline(always)]
    fn parse(e: &[u8], endian: Endian) -> BranchEntry {
        let word = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&e[at..at + 8]);
            endian.u64(b)
        };
        BranchEntry {
            from: word(0),
            to: word(8),
            flags: BranchFlags::from_raw(word(16), endian),
        }
    }
}

/// The flag word of a branch entry, normalised to little-endian bit positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BranchFlags(pub u64);

impl BranchFlags {
    /// Big-endian writers lay the bitfield out mirrored: mispred at bit 63, predicted at 62, …
    /// (perf's `evsel__bitfield_swap_branch_flags`).
    #[inline(always)]
    pub fn from_raw(raw: u64, endian: Endian) -> BranchFlags {
        match endian {
            Endian::Little => BranchFlags(raw),
            Endian::Big => BranchFlags(mirror_branch_flags(raw)),
        }
    }
    /// `perf_branch_entry.mispred` (bit 0): the branch was mispredicted.
    pub fn mispred(self) -> bool {
        self.0 & 1 != 0
    }
    /// `perf_branch_entry.predicted` (bit 1): the branch was predicted correctly.
    pub fn predicted(self) -> bool {
        self.0 & 2 != 0
    }
    /// `perf_branch_entry.in_tx` (bit 2): the branch was inside a hardware transaction.
    pub fn in_tx(self) -> bool {
        self.0 & 4 != 0
    }
    /// `perf_branch_entry.abort` (bit 3): the branch aborted a transaction.
    pub fn abort(self) -> bool {
        self.0 & 8 != 0
    }
    /// `perf_branch_entry.cycles` (bits 4..20): cycles since the previous branch, 0 if unknown.
    pub fn cycles(self) -> u16 {
        (self.0 >> 4) as u16
    }
    /// `perf_branch_entry.type` (bits 20..24): `PERF_BR_*` branch type.
    pub fn branch_type(self) -> u8 {
        ((self.0 >> 20) & 0xf) as u8
    }
    /// `perf_branch_entry.spec` (bits 24..26): `PERF_BR_SPEC_*` speculation outcome.
    pub fn spec(self) -> u8 {
        ((self.0 >> 24) & 0x3) as u8
    }
}

fn mirror_branch_flags(v: u64) -> u64 {
    // (little-endian position, width) of each field, and its big-endian position.
    const FIELDS: [(u32, u32, u32); 9] = [
        (0, 1, 63),
        (1, 1, 62),
        (2, 1, 61),
        (3, 1, 60),
        (4, 16, 44),
        (20, 4, 40),
        (24, 2, 38),
        (26, 4, 34),
        (30, 3, 31),
    ];
    FIELDS.iter().fold(0, |acc, &(le, width, be)| {
        let mask = (1u64 << width) - 1;
        acc | (((v >> be) & mask) << le)
    })
}
