//! Deterministic generators of synthetic profiling inputs.
//!
//! The main entry point, [`write_lbr_capture`], writes a file-mode perf.data
//! with LBR (branch-stack) samples whose branches follow the real control flow
//! of the given x86-64 ELF binaries. The same [`LbrCaptureSpec`] always gives
//! the same bytes. The files are accepted by perf 6.1 (`perf script`) and
//! by `perf2bolt`, so they serve as differential-test inputs and benchmark
//! data of any size.

#![warn(missing_docs)]

mod cfg;
pub mod fdata;
pub mod instrprof;
mod ip_capture;
mod mem;
mod perf_writer;
pub mod raw_v11;
mod rng;
pub mod sampleprof;
mod walk;

use std::io::{self, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

pub use cfg::build_id_of;
pub use ip_capture::write_ip_capture;
pub use mem::{
    perf_script_mem_line, MemDraw, MemLoadSpec, MEM_LOADS_CONFIG, MEM_LOADS_EVENT, UNMAPPED_PID,
};
pub use perf_writer::{ATTR_SIZE, MAX_LBR_DEPTH, SAMPLE_PERIOD};
pub use walk::KERNEL_TEXT_START;

use cfg::BinaryCode;
use perf_writer::{DataSink, FileHeader, Mmap};
use rng::{mix64, Rng};

/// First pid used for the generated processes; process `i` gets `FIRST_PID + i`.
pub const FIRST_PID: u32 = 1000;
/// Timestamp of the first side-band record (ns, `perf_clock`-like).
const TIME_START: u64 = 1_000_000_000_000;
/// Spacing of side-band timestamps.
const SIDE_BAND_STEP: u64 = 100;
const PAGE: u64 = 4096;
/// Where relocatable binaries go by default: `DEFAULT_BASE + k * DEFAULT_BASE_STRIDE`
/// for the k-th binary of the spec.
const DEFAULT_BASE: u64 = 0x5555_5555_0000;
const DEFAULT_BASE_STRIDE: u64 = 0x1000_0000;

/// An ELF file to take control flow from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LbrBinary {
    /// The ELF file.
    pub path: PathBuf,
    /// Load bias for an ET_DYN (PIE or shared object): the process address
    /// of ELF virtual address 0; must be page-aligned. `None` picks
    /// `0x5555_5555_0000 + k * 0x1000_0000` for the k-th binary. ET_EXEC
    /// binaries are always mapped at their own addresses and ignore this.
    pub load_base: Option<u64>,
}

/// What [`write_lbr_capture`] writes: binaries, processes, size and the shape of the stacks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LbrCaptureSpec {
    /// Every process maps all of these.
    pub binaries: Vec<LbrBinary>,
    /// Number of distinct pids (`FIRST_PID`, `FIRST_PID + 1`, ...); samples
    /// rotate among them.
    pub processes: u32,
    /// Samples are emitted until the data section is at least this large
    /// (compressed bytes when `compress` is set).
    pub target_bytes: u64,
    /// Entries per branch stack, e.g. 32, 16 or 8.
    pub lbr_depth: u32,
    /// Size of the pool of distinct stacks that samples are drawn from, with
    /// a skewed (hot/cold) choice.
    pub distinct_stacks: u32,
    /// Percentage of samples whose stack includes 1–2 kernel entries
    /// (interrupts; addresses >= [`KERNEL_TEXT_START`]).
    pub kernel_fraction_percent: u32,
    /// Wrap the samples in PERF_RECORD_COMPRESSED records holding one
    /// continuous, never-ended zstd stream, like `perf record -z`.
    pub compress: bool,
    /// `perf_event_attr` size in the file: [`ATTR_SIZE`] (128,
    /// what perf 6.1 reads) or e.g. 136 (VER8, which perf 6.1 refuses).
    pub attr_size: u64,
    /// Seed of every random choice: the same spec gives the same bytes.
    pub seed: u64,
    /// Adds a second event, `mem-loads`, whose samples are interleaved with
    /// the LBR ones; both events then carry IDENTIFIER and EVENT_DESC names.
    pub mem_loads: Option<MemLoadSpec>,
}

/// What a written capture holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CaptureStats {
    /// SAMPLE records written.
    pub samples: u64,
    /// Total bytes written (the whole file).
    pub bytes: u64,
    /// Branch-stack entries over all samples.
    pub branch_entries: u64,
    /// mem-loads samples (included in `samples`).
    pub mem_samples: u64,
}

/// One LBR entry, as stored in a SAMPLE record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BranchEntry {
    /// The branch's source.
    pub from: u64,
    /// The branch's target.
    pub to: u64,
    /// `perf_branch_entry` flag word: bit 0 mispredicted, bit 1 predicted,
    /// bits 4–19 cycles.
    pub flags: u64,
}

impl BranchEntry {
    /// Flag bit 0.
    pub fn mispredicted(&self) -> bool {
        self.flags & 1 != 0
    }
    /// Flag bit 1.
    pub fn predicted(&self) -> bool {
        self.flags & 2 != 0
    }
    /// Flag bits 4–19.
    pub fn cycles(&self) -> u16 {
        ((self.flags >> 4) & 0xffff) as u16
    }
}

/// One sample of the emission schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleDraw {
    /// Index into [`PreparedCapture::stacks`].
    pub stack: usize,
    /// Process (and thread) id.
    pub pid: u32,
    /// The sample's timestamp.
    pub time: u64,
}

/// The endless, deterministic sequence of samples a capture emits, in order.
#[derive(Clone, Debug)]
pub struct SampleSchedule {
    rng: Rng,
    user_stacks: usize,
    kernel_stacks: usize,
    kernel_percent: u32,
    processes: u32,
    next_process: u32,
    time: u64,
}

impl Iterator for SampleSchedule {
    type Item = SampleDraw;

    fn next(&mut self) -> Option<SampleDraw> {
        let kernel = match (self.user_stacks, self.kernel_stacks) {
            (0, _) => true,
            (_, 0) => false,
            _ => self.rng.percent(self.kernel_percent),
        };
        // u^3 skew: a few stacks are hot, most are rare, as in real profiles.
        let stack = if kernel {
            self.user_stacks + self.rng.skewed(self.kernel_stacks, 3)
        } else {
            self.rng.skewed(self.user_stacks, 3)
        };
        let pid = FIRST_PID + self.next_process;
        self.next_process = (self.next_process + 1) % self.processes;
        self.time += 2_000 + self.rng.below(4_000);
        Some(SampleDraw {
            stack,
            pid,
            time: self.time,
        })
    }
}

/// Where a binary sits in every generated process.
struct Placement {
    /// Process address minus ELF virtual address.
    bias: u64,
    /// Absolute path, as it appears in MMAP2 and HEADER_BUILD_ID.
    filename: String,
    mmaps: Vec<Mmap>,
}

/// The loaded binaries and the generated stack pool of a spec: everything
/// needed to write the capture, and to predict its contents in tests.
pub struct PreparedCapture {
    spec: LbrCaptureSpec,
    codes: Vec<BinaryCode>,
    placements: Vec<Placement>,
    /// Newest entry first. User-only stacks first, then the kernel ones.
    stacks: Vec<Vec<BranchEntry>>,
    /// Per process, per binary: what that process's mapping adds to the placement's addresses
    /// (empty: every process maps every binary at its placement).
    process_shifts: Vec<Vec<u64>>,
    user_stacks: usize,
    /// With `mem_loads`: the pool memory samples are drawn from.
    mem_pool: Vec<MemDraw>,
}

/// Event ids of a two-event capture (the LBR event leads and tracks side-band records).
const LBR_EVENT_ID: u64 = 0x4d01;
const MEM_EVENT_ID: u64 = 0x4d02;
/// PERF_RECORD_MISC_EXACT_IP: precise (PEBS) samples carry it.
const MISC_EXACT_IP: u16 = 1 << 14;

/// Loads the binaries and generates the stack pool.
pub fn prepare_capture(spec: &LbrCaptureSpec) -> io::Result<PreparedCapture> {
    validate(spec)?;
    let codes = spec
        .binaries
        .iter()
        .enumerate()
        .map(|(k, b)| BinaryCode::load(&b.path, &mut Rng::fork(spec.seed, 1 + k as u64)))
        .collect::<io::Result<Vec<_>>>()?;
    let placements = spec
        .binaries
        .iter()
        .zip(&codes)
        .enumerate()
        .map(|(k, (b, code))| place(b, code, k))
        .collect::<io::Result<Vec<_>>>()?;
    check_no_overlap(&placements)?;
    let biases: Vec<u64> = placements.iter().map(|p| p.bias).collect();
    let user_stacks = user_stack_count(spec.distinct_stacks as usize, spec.kernel_fraction_percent);
    let stacks = generate_pool(spec, &codes, &biases, user_stacks)?;
    let mem_pool = match &spec.mem_loads {
        Some(m) => {
            let layouts = spec
                .binaries
                .iter()
                .map(|b| mem::DataLayout::load(&b.path))
                .collect::<io::Result<Vec<_>>>()?;
            let mut rng = Rng::fork(spec.seed, 0x3E3_10AD);
            mem::draw_pool(m, &codes, &layouts, &biases, &mut rng)?
        }
        None => Vec::new(),
    };
    Ok(PreparedCapture {
        spec: spec.clone(),
        codes,
        placements,
        stacks,
        process_shifts: Vec::new(),
        user_stacks,
        mem_pool,
    })
}

/// Writes the capture described by `spec` to `out`, which must be positioned
/// at the start of the file-to-be (header offsets are relative to that point).
/// The header is written last, by seeking back, because it records the data
/// size; the data itself is streamed, so multi-GB captures need no buffer.
pub fn write_lbr_capture<W: Write + Seek>(
    spec: &LbrCaptureSpec,
    out: &mut W,
) -> io::Result<CaptureStats> {
    prepare_capture(spec)?.write(out)
}

impl PreparedCapture {
    /// The stack pool, newest entry first within each stack.
    pub fn stacks(&self) -> &[Vec<BranchEntry>] {
        &self.stacks
    }

    /// Indices of the pool stacks that contain kernel entries.
    pub fn kernel_stacks(&self) -> Range<usize> {
        self.user_stacks..self.stacks.len()
    }

    /// Maps relocatable binary `binary` (index in the spec) at a different base in each
    /// process: process `p` (pid `FIRST_PID + p`) at `bases[p % bases.len()]` (page-aligned),
    /// instead of its placement's base. Samples keep their stacks: each address of the binary
    /// moves with its process's mapping. Not for captures with `mem_loads`.
    pub fn relocate_per_process(&mut self, binary: usize, bases: &[u64]) -> io::Result<()> {
        let bad = |m: &str| Err(io::Error::new(io::ErrorKind::InvalidInput, m.to_string()));
        if self.spec.mem_loads.is_some() {
            return bad("relocate_per_process: captures with mem_loads are not supported");
        }
        match self.codes.get(binary) {
            None => return bad("relocate_per_process: no such binary"),
            Some(code) if !code.relocatable => {
                return bad("relocate_per_process: the binary is not relocatable")
            }
            Some(_) => {}
        }
        if bases.is_empty() || bases.iter().any(|b| b % PAGE != 0) {
            return bad("relocate_per_process: bases must be page-aligned, at least one");
        }
        let processes = self.spec.processes as usize;
        if self.process_shifts.is_empty() {
            self.process_shifts = vec![vec![0; self.placements.len()]; processes];
        }
        let bias = self.placements[binary].bias;
        for (p, shifts) in self.process_shifts.iter_mut().enumerate() {
            shifts[binary] = bases[p % bases.len()].wrapping_sub(bias);
        }
        for p in 0..processes {
            check_no_overlap(&self.placements_of(p))?;
        }
        Ok(())
    }

    /// The placements as process `p` maps them.
    fn placements_of(&self, p: usize) -> Vec<Placement> {
        self.placements
            .iter()
            .enumerate()
            .map(|(k, pl)| {
                let shift = self.shift(p, k);
                Placement {
                    bias: pl.bias.wrapping_add(shift),
                    filename: pl.filename.clone(),
                    mmaps: pl
                        .mmaps
                        .iter()
                        .map(|m| Mmap {
                            addr: m.addr.wrapping_add(shift),
                            ..m.clone()
                        })
                        .collect(),
                }
            })
            .collect()
    }

    fn shift(&self, p: usize, k: usize) -> u64 {
        self.process_shifts.get(p).map_or(0, |s| s[k])
    }

    /// `stacks` as process `p` sees them: each address in a binary moved by its shift.
    fn stacks_of(&self, p: usize) -> Vec<Vec<BranchEntry>> {
        let moved = |a: u64| {
            for (k, pl) in self.placements.iter().enumerate() {
                if pl.mmaps.iter().any(|m| a >= m.addr && a - m.addr < m.len) {
                    return a.wrapping_add(self.shift(p, k));
                }
            }
            a
        };
        self.stacks
            .iter()
            .map(|s| {
                s.iter()
                    .map(|e| BranchEntry {
                        from: moved(e.from),
                        to: moved(e.to),
                        ..*e
                    })
                    .collect()
            })
            .collect()
    }

    /// Load bias (process address minus ELF address) of each binary, in spec order.
    pub fn load_biases(&self) -> Vec<u64> {
        self.placements.iter().map(|p| p.bias).collect()
    }

    /// Decoded instruction count of each binary, in spec order.
    pub fn instruction_counts(&self) -> Vec<usize> {
        self.codes
            .iter()
            .map(BinaryCode::instruction_count)
            .collect()
    }

    /// The memory samples a capture with `mem_loads` emits after its first
    /// `lbr_samples` LBR samples, in file order, as (pid, pc, data address).
    pub fn mem_samples(&self, lbr_samples: u64) -> Vec<(u32, u64, u64)> {
        let mut schedule = self.schedule();
        let mut draws = self.mem_schedule();
        (0..lbr_samples)
            .filter_map(|_| {
                let lbr = schedule.next()?;
                let m = draws.as_mut()?.next(lbr.pid)?;
                Some((m.0, m.1.pc, m.1.addr))
            })
            .collect()
    }

    fn mem_schedule(&self) -> Option<MemSchedule<'_>> {
        let spec = self.spec.mem_loads.as_ref()?;
        Some(MemSchedule {
            pool: &self.mem_pool,
            interval: spec.interval.max(1),
            since: 0,
            rng: Rng::fork(self.spec.seed, 0x3E3_5C4E),
        })
    }

    /// The samples the capture will contain, in file order (the writer stops
    /// drawing once the target size is reached).
    pub fn schedule(&self) -> SampleSchedule {
        let side_band_records =
            self.side_band_records_per_process() * u64::from(self.spec.processes);
        SampleSchedule {
            rng: Rng::fork(self.spec.seed, 0x5C4E_D01E),
            user_stacks: self.user_stacks,
            kernel_stacks: self.stacks.len() - self.user_stacks,
            kernel_percent: self.spec.kernel_fraction_percent,
            processes: self.spec.processes,
            next_process: 0,
            time: TIME_START + side_band_records * SIDE_BAND_STEP + 1_000_000,
        }
    }

    fn side_band_records_per_process(&self) -> u64 {
        1 + self
            .placements
            .iter()
            .map(|p| p.mmaps.len() as u64)
            .sum::<u64>()
    }

    /// Writes the capture; see [`write_lbr_capture`].
    pub fn write<W: Write + Seek>(&self, out: &mut W) -> io::Result<CaptureStats> {
        let start = out.stream_position()?;
        let attr_size = self.spec.attr_size;
        let events = self.events();
        let mut header = FileHeader {
            attr_size,
            data_size: 0,
            features: Vec::new(),
            events: events.len().max(1) as u64,
        };
        // Placeholder: rewritten once the data size is known.
        out.write_all(&header.encode())?;
        if events.is_empty() {
            out.write_all(&perf_writer::attr_entry(attr_size))?;
        } else {
            out.write_all(&perf_writer::event_attr_entries(attr_size, &events))?;
        }
        let data_offset = if events.is_empty() {
            perf_writer::data_offset(attr_size)
        } else {
            perf_writer::multi_data_offset(attr_size, events.len() as u64)
        };

        let mut sink = DataSink::new(out, self.spec.compress)?;
        self.write_side_band(&mut sink)?;
        let (samples, mem_samples) = if events.is_empty() {
            (self.write_samples(&mut sink)?, 0)
        } else {
            self.write_samples_with_mem(&mut sink)?
        };
        let (data_size, ratio) = sink.finish()?;

        header.data_size = data_size;
        let features = self.feature_sections(ratio, &events);
        header.features = features.iter().map(|(bit, _)| *bit).collect();
        let features_len = write_features(out, start + data_offset + data_size, &features)?;
        let end = out.stream_position()?;
        out.seek(SeekFrom::Start(start))?;
        out.write_all(&header.encode())?;
        out.seek(SeekFrom::Start(end))?;
        debug_assert_eq!(end - start, data_offset + data_size + features_len);
        Ok(CaptureStats {
            samples: samples + mem_samples,
            bytes: end - start,
            branch_entries: samples * u64::from(self.spec.lbr_depth),
            mem_samples,
        })
    }

    /// The events of a two-event capture (empty for the classic single LBR event).
    fn events(&self) -> Vec<perf_writer::EventSpec> {
        use perf_writer::*;
        let Some(mem) = &self.spec.mem_loads else {
            return Vec::new();
        };
        // `perf record -j any` gives every event a branch stack, and `-d` gives
        // every event ADDR: a real two-event capture has both on both events.
        let addr = if mem.with_addr { SAMPLE_ADDR } else { 0 };
        let common = SAMPLE_IDENTIFIER
            | SAMPLE_IP
            | SAMPLE_TID
            | SAMPLE_TIME
            | addr
            | SAMPLE_PERIOD_BIT
            | SAMPLE_BRANCH_STACK;
        vec![
            EventSpec {
                type_: 0, // PERF_TYPE_HARDWARE, cycles
                config: 0,
                config1: 0,
                sample_type: common,
                branch_sample_type: 1 << 3, // any
                precise_ip: 0,
                tracking: true,
                id: LBR_EVENT_ID,
                name: "cycles".into(),
            },
            EventSpec {
                type_: 4, // the core PMU (PERF_TYPE_RAW)
                config: MEM_LOADS_CONFIG,
                config1: 30, // ldlat
                sample_type: common | SAMPLE_WEIGHT | SAMPLE_DATA_SRC,
                branch_sample_type: 1 << 3,
                precise_ip: 3,
                tracking: false,
                id: MEM_EVENT_ID,
                name: mem.event_name.clone(),
            },
        ]
    }

    /// LBR samples led by their IDENTIFIER, with memory samples interleaved.
    fn write_samples_with_mem<W: Write>(
        &self,
        sink: &mut DataSink<'_, W>,
    ) -> io::Result<(u64, u64)> {
        let stride = 8 + 24 * self.spec.lbr_depth as usize;
        let tails = serialize_stacks(&self.stacks, stride);
        let with_addr = self.spec.mem_loads.as_ref().is_some_and(|m| m.with_addr);
        let mut schedule = self.schedule();
        let mut mem = self.mem_schedule().expect("mem_loads is set");
        let (mut samples, mut mem_samples) = (0, 0);
        while sink.data_len() < self.spec.target_bytes {
            let draw = schedule.next().expect("schedule is endless");
            let (misc, ip) = sample_ip(&self.stacks[draw.stack]);
            let tail = &tails[draw.stack * stride..][..stride];
            let mut fields = vec![LBR_EVENT_ID, ip, perf_writer::tid_word(draw.pid), draw.time];
            if with_addr {
                fields.push(0); // the kernel's ADDR of a non-memory event
            }
            fields.push(SAMPLE_PERIOD);
            let record = perf_writer::sample_record(misc, &fields, &[]);
            let size = (record.len() + tail.len()) as u16;
            let mut head = record;
            head[6..8].copy_from_slice(&size.to_le_bytes());
            sink.sample(&head, tail)?;
            samples += 1;
            if let Some((pid, m)) = mem.next(draw.pid) {
                let mut fields = vec![MEM_EVENT_ID, m.pc, perf_writer::tid_word(pid)];
                fields.push(draw.time + 1);
                if with_addr {
                    fields.push(m.addr);
                }
                fields.push(SAMPLE_PERIOD);
                // The load's LBR snapshot (the same stack), then weight (load
                // latency) and data_src (unknown).
                let mut after = tail.to_vec();
                after.extend_from_slice(&(30 + (m.addr & 0x3f)).to_le_bytes());
                after.extend_from_slice(&0u64.to_le_bytes());
                let misc = perf_writer::MISC_USER | MISC_EXACT_IP;
                sink.sample(&perf_writer::sample_record(misc, &fields, &after), &[])?;
                mem_samples += 1;
            }
        }
        Ok((samples, mem_samples))
    }

    /// COMM (exec) then one MMAP2 per executable segment of every binary,
    /// for each process, before any sample.
    fn write_side_band<W: Write>(&self, sink: &mut DataSink<'_, W>) -> io::Result<()> {
        let comm = comm_name(&self.spec.binaries[0].path);
        let id = self.spec.mem_loads.as_ref().map(|_| LBR_EVENT_ID);
        let mut time = TIME_START;
        for p in 0..self.spec.processes {
            let pid = FIRST_PID + p;
            sink.side_band(&perf_writer::comm_record(pid, &comm, time, id))?;
            time += SIDE_BAND_STEP;
            let placements = self.placements_of(p as usize);
            for m in placements.iter().flat_map(|pl| &pl.mmaps) {
                sink.side_band(&perf_writer::mmap2_record(pid, m, time, id))?;
                time += SIDE_BAND_STEP;
            }
        }
        Ok(())
    }

    /// Emits samples until the data section reaches the target size. Each
    /// pool stack is serialized once; a sample is then a 40-byte head plus
    /// one memcpy, which keeps emission far faster than any consumer.
    fn write_samples<W: Write>(&self, sink: &mut DataSink<'_, W>) -> io::Result<u64> {
        let stride = 8 + 24 * self.spec.lbr_depth as usize;
        // One pool per process when processes map binaries at different bases.
        let relocated: Vec<Vec<Vec<BranchEntry>>> = (0..self.process_shifts.len())
            .map(|p| self.stacks_of(p))
            .collect();
        let pools: Vec<&[Vec<BranchEntry>]> = match relocated.is_empty() {
            true => vec![&self.stacks],
            false => relocated.iter().map(Vec::as_slice).collect(),
        };
        let tails: Vec<Vec<u8>> = pools.iter().map(|s| serialize_stacks(s, stride)).collect();
        let heads: Vec<Vec<(u16, u64)>> = pools
            .iter()
            .map(|pool| pool.iter().map(|s| sample_ip(s)).collect())
            .collect();
        let mut samples = 0;
        let mut schedule = self.schedule();
        while sink.data_len() < self.spec.target_bytes {
            let draw = schedule.next().expect("schedule is endless");
            let p = (draw.pid - FIRST_PID) as usize % pools.len();
            let (misc, ip) = heads[p][draw.stack];
            let head = perf_writer::sample_head(misc, ip, draw.pid, draw.time, stride);
            sink.sample(&head, &tails[p][draw.stack * stride..][..stride])?;
            samples += 1;
        }
        Ok(samples)
    }

    /// HEADER_BUILD_ID (always present, as perf writes it), the
    /// HEADER_BRANCH_STACK flag (makes `perf report` default to branch mode)
    /// and, for compressed captures, HEADER_COMPRESSED, which perf needs to
    /// size its decompression buffers. perf 6.1 needs nothing else.
    fn feature_sections(
        &self,
        ratio: u32,
        events: &[perf_writer::EventSpec],
    ) -> Vec<(u32, Vec<u8>)> {
        let ids: Vec<(&[u8], &str)> = self
            .codes
            .iter()
            .zip(&self.placements)
            .filter_map(|(c, p)| c.build_id.as_deref().map(|id| (id, p.filename.as_str())))
            .collect();
        let mut features = vec![
            (
                perf_writer::FEAT_BUILD_ID,
                perf_writer::build_id_feature(&ids),
            ),
            (perf_writer::FEAT_BRANCH_STACK, Vec::new()),
        ];
        if !events.is_empty() {
            let desc = perf_writer::event_desc_feature(self.spec.attr_size, events);
            features.insert(1, (perf_writer::FEAT_EVENT_DESC, desc));
        }
        if self.spec.compress {
            features.push((
                perf_writer::FEAT_COMPRESSED,
                perf_writer::compressed_feature(ratio),
            ));
        }
        features
    }
}

/// Which memory sample follows which LBR sample: one after every `interval`.
struct MemSchedule<'p> {
    pool: &'p [MemDraw],
    interval: u32,
    since: u32,
    rng: Rng,
}

impl MemSchedule<'_> {
    /// Called once per LBR sample (of process `pid`); returns the memory
    /// sample to emit after it, with its pid.
    fn next(&mut self, pid: u32) -> Option<(u32, MemDraw)> {
        self.since += 1;
        if self.since < self.interval {
            return None;
        }
        self.since = 0;
        let m = self.pool[self.rng.skewed(self.pool.len(), 2)];
        Some((if m.unmapped_pid { UNMAPPED_PID } else { pid }, m))
    }
}

/// Writes the feature table (one `{offset, size}` per feature, ascending
/// bit order) at `table_at`, followed by the payloads; returns bytes written.
fn write_features<W: Write>(
    out: &mut W,
    table_at: u64,
    features: &[(u32, Vec<u8>)],
) -> io::Result<u64> {
    let mut table = perf_writer::Rec::default();
    let mut offset = table_at + 16 * features.len() as u64;
    for (_, payload) in features {
        table.u64(offset).u64(payload.len() as u64);
        offset += payload.len() as u64;
    }
    out.write_all(&table.0)?;
    for (_, payload) in features {
        out.write_all(payload)?;
    }
    Ok(offset - table_at)
}

/// `u64 nr` + entries of every stack, back to back with a fixed stride.
fn serialize_stacks(stacks: &[Vec<BranchEntry>], stride: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(stacks.len() * stride);
    for s in stacks {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        for e in s {
            out.extend_from_slice(&e.from.to_le_bytes());
            out.extend_from_slice(&e.to.to_le_bytes());
            out.extend_from_slice(&e.flags.to_le_bytes());
        }
    }
    debug_assert_eq!(out.len(), stacks.len() * stride);
    out
}

/// The sample fired at the newest branch's target; its cpumode follows the
/// address.
fn sample_ip(stack: &[BranchEntry]) -> (u16, u64) {
    let ip = stack[0].to;
    let misc = if ip >= KERNEL_TEXT_START {
        perf_writer::MISC_KERNEL
    } else {
        perf_writer::MISC_USER
    };
    (misc, ip)
}

/// Stacks in the pool that carry kernel entries: `percent` of the pool,
/// but at least one of each kind when both kinds are asked for.
fn user_stack_count(distinct: usize, percent: u32) -> usize {
    let mut kernel = (distinct * percent as usize + 50) / 100;
    if percent > 0 {
        kernel = kernel.max(1);
    }
    if percent < 100 {
        kernel = kernel.min(distinct - 1);
    }
    distinct - kernel.min(distinct)
}

fn generate_pool(
    spec: &LbrCaptureSpec,
    codes: &[BinaryCode],
    biases: &[u64],
    user_stacks: usize,
) -> io::Result<Vec<Vec<BranchEntry>>> {
    let mut walker = walk::Walker::new(codes, biases, Rng::fork(spec.seed, 0x57AC_4500));
    (0..spec.distinct_stacks as usize)
        .map(|i| {
            walker
                .stack(spec.lbr_depth as usize, i >= user_stacks)
                .ok_or_else(|| {
                    io::Error::new(
                    io::ErrorKind::InvalidData,
                    "could not generate a branch stack: too little followable code in the binaries",
                )
                })
        })
        .collect()
}

/// Places the k-th binary: relocatable ones at their load base, others at
/// their link addresses; one mapping per executable segment.
fn place(bin: &LbrBinary, code: &BinaryCode, k: usize) -> io::Result<Placement> {
    let bias = if code.relocatable {
        bin.load_base
            .unwrap_or(DEFAULT_BASE + k as u64 * DEFAULT_BASE_STRIDE)
    } else {
        0
    };
    let filename = std::path::absolute(&bin.path)?
        .to_string_lossy()
        .into_owned();
    // A stable fake inode, so distinct binaries look like distinct files.
    let ino =
        0x10_0000 + mix64(filename.bytes().fold(0, |h, b| mix64(h ^ u64::from(b)))) % 0x7fff_ffff;
    let mmaps = code
        .segments
        .iter()
        .map(|s| {
            let addr = s.vaddr.wrapping_add(bias);
            let start = addr & !(PAGE - 1);
            Mmap {
                addr: start,
                len: (addr + s.memsz).next_multiple_of(PAGE) - start,
                pgoff: s.offset.saturating_sub(addr - start),
                maj: 8,
                min: 1,
                ino,
                filename: filename.clone(),
            }
        })
        .collect();
    Ok(Placement {
        bias,
        filename,
        mmaps,
    })
}

fn check_no_overlap(placements: &[Placement]) -> io::Result<()> {
    let mut ranges: Vec<(u64, u64, &str)> = placements
        .iter()
        .flat_map(|p| {
            p.mmaps
                .iter()
                .map(|m| (m.addr, m.addr + m.len, m.filename.as_str()))
        })
        .collect();
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        if w[1].0 < w[0].1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "mappings of {} and {} overlap; set load_base",
                    w[0].2, w[1].2
                ),
            ));
        }
    }
    Ok(())
}

/// Task name as the kernel records it: the executable's basename, at most
/// 15 bytes.
fn comm_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

/// Renders a branch stack exactly as perf 6.1 `perf script -F brstack`
/// prints it for captures without branch-type information: newest first,
/// each entry as ` 0xFROM/0xTO/P|M|-/-/-/CYCLES/ ` (leading and trailing
/// space included). With `-F pid,ip,brstack` a whole line is
/// `format!("{pid:>5}  {ip:>16x}{brstack}")`.
pub fn perf_script_brstack(entries: &[BranchEntry]) -> String {
    let mut text = String::with_capacity(entries.len() * 48);
    for e in entries {
        // perf prints 'P' whenever the predicted bit is set.
        let prediction = match (e.predicted(), e.mispredicted()) {
            (true, _) => 'P',
            (false, true) => 'M',
            (false, false) => '-',
        };
        let cycles = e.cycles();
        text.push_str(&format!(
            " 0x{:x}/0x{:x}/{prediction}/-/-/{cycles}/ ",
            e.from, e.to
        ));
    }
    text
}

fn validate(spec: &LbrCaptureSpec) -> io::Result<()> {
    let invalid = |msg: &str| Err(io::Error::new(io::ErrorKind::InvalidInput, msg.to_string()));
    if spec.binaries.is_empty() {
        return invalid("an LBR capture needs at least one binary");
    }
    if spec.processes == 0 || spec.distinct_stacks == 0 {
        return invalid("processes and distinct_stacks must be at least 1");
    }
    if spec.lbr_depth == 0 || spec.lbr_depth > MAX_LBR_DEPTH {
        return invalid("lbr_depth must be between 1 and MAX_LBR_DEPTH");
    }
    if spec.kernel_fraction_percent > 100 {
        return invalid("kernel_fraction_percent must be at most 100");
    }
    if spec
        .binaries
        .iter()
        .any(|b| b.load_base.is_some_and(|a| a % PAGE != 0))
    {
        return invalid("load_base must be page-aligned");
    }
    // VER2 (80 bytes) is the first size with `branch_sample_type`.
    if spec.attr_size < 80 || spec.attr_size & 7 != 0 || spec.attr_size > 4096 {
        return invalid("attr_size must be a multiple of 8 between 80 and 4096");
    }
    Ok(())
}
