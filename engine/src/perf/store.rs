//! Aggregated profiles in the profile store (`formats::store`): a binary's profile converted to
//! its file-offset space and back, stores written and merged, a binary's profile picked out of
//! a store for export.
//!
//! File offsets need no ELF at the host that writes them and are the same for every process
//! and load address; export turns them into the binary's addresses through its `PT_LOAD`
//! segments, the inverse of the conversion here, so a profile goes through a store unchanged.

use std::cmp::Ordering;
use std::fs::File;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use formats::bolt::preagg::BR_ONLY;
use formats::store::{
    BinaryMeta, BlockCursor, BranchRow, IpRow, MemRow, ReturnRow, Row, Section, SectionKind, Store,
    StoreError, StoreErrorKind, StoreIndex, StoreMeta, StoreWriter, TraceRow,
};

use crate::error::{io_error, Error, Result};
use crate::io::inputs::WeightedInput;
use crate::io::output::write_atomically;
use crate::io::progress::Progress;
use crate::io::InputBytes;
use crate::perf::aggregate::{BinaryProfile, MemSample};
use crate::perf::binary::{hex, BinaryInfo, Segment};
use crate::perf::table::{Counts, TraceOrder};

/// One binary's profile in the store's terms.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredProfile {
    /// Identity and summary.
    pub meta: BinaryMeta,
    /// LBR traces, sorted by key.
    pub traces: Vec<TraceRow>,
    /// IP samples, sorted.
    pub ips: Vec<IpRow>,
    /// Memory samples, sorted.
    pub mem: Vec<MemRow>,
    /// Known returns, sorted.
    pub returns: Vec<ReturnRow>,
}

/// The conversion between a binary's addresses and its file offsets, through its loaded
/// segments. The markers of a profile — 0 (outside the binary) and all-ones (no address) —
/// are kept as they are: file offset 0 is the ELF header, never code.
pub struct FileOffsets {
    segments: Vec<Segment>,
}

impl FileOffsets {
    /// The conversion for `binary`.
    pub fn of(binary: &BinaryInfo) -> FileOffsets {
        FileOffsets {
            segments: binary.segments.clone(),
        }
    }

    /// The file offset of address `a` (0 if no segment holds it).
    pub fn offset(&self, a: u64) -> u64 {
        if a == 0 || a == BR_ONLY {
            return a;
        }
        self.segments
            .iter()
            .find(|s| a >= s.address && a - s.address < s.size)
            .map_or(0, |s| a - s.address + s.file_offset)
    }

    /// The address of file offset `o` (0 if no segment holds it).
    pub fn address(&self, o: u64) -> u64 {
        if o == 0 || o == BR_ONLY {
            return o;
        }
        self.segments
            .iter()
            .find(|s| o >= s.file_offset && o - s.file_offset < s.size)
            .map_or(0, |s| o - s.file_offset + s.address)
    }
}

/// What perf2bolt's load bias adds to a file offset of the binary's code: its first executable
/// segment's address minus its file offset (0 for a binary known only from a capture).
fn code_delta(binary: &BinaryInfo) -> u64 {
    binary
        .segments
        .iter()
        .find(|s| s.executable)
        .map_or(0, |s| s.address.wrapping_sub(s.file_offset))
}

/// The stored memory samples as perf2bolt reads them for `binary`, sorted.
fn stored_mem(stored: &StoredProfile, binary: &BinaryInfo) -> Vec<MemSample> {
    let delta = code_delta(binary);
    let mut mem: Vec<MemSample> = stored
        .mem
        .iter()
        .map(|r| MemSample {
            pc: r.pc,
            addr: if r.in_binary {
                r.addr.wrapping_add(delta)
            } else {
                r.addr
            },
            in_binary: r.in_binary,
            count: r.count,
        })
        .collect();
    mem.sort_unstable();
    mem
}

/// The store's identity of a binary: its build-id and file name.
fn identity(binary: &BinaryInfo) -> BinaryMeta {
    BinaryMeta {
        build_id: binary.build_id.clone().unwrap_or_default(),
        name: binary.file_name.clone(),
        ..Default::default()
    }
}

/// Sorts rows by key and sums the rows of equal keys.
fn sorted_summed<R: Row>(rows: Vec<R>) -> Vec<R> {
    sorted_summed_saturating(rows).0
}

/// Sorts rows by key and sums the rows of equal keys (saturating); also says whether a sum
/// saturated.
pub(crate) fn sorted_summed_saturating<R: Row>(mut rows: Vec<R>) -> (Vec<R>, bool) {
    rows.sort_unstable_by(|a, b| a.key_cmp(b));
    // In place: a second array takes fresh pages, which cost more here than the summing (an
    // aggregation of a 1 MB capture: 1,119 → 1,056 page faults of 4 KiB; PERF.md).
    let mut saturated = false;
    rows.dedup_by(|later, kept| {
        let same = kept.key_cmp(later) == Ordering::Equal;
        if same {
            saturated |= !kept.add_counts(later);
        }
        same
    });
    (rows, saturated)
}

/// `profile` (in `binary`'s addresses) in the store's terms.
pub fn stored_profile(binary: &BinaryInfo, profile: &BinaryProfile) -> StoredProfile {
    let at = FileOffsets::of(binary);
    let mut events = profile.events.clone();
    events.sort();
    events.dedup();
    let traces = profile
        .traces
        .iter()
        .map(|&((branch, from, to), c)| TraceRow {
            branch: at.offset(branch),
            from: at.offset(from),
            to: at.offset(to),
            count: c.taken,
            mispreds: c.mispred,
        })
        .collect();
    let ips = profile
        .ips
        .iter()
        .map(|&(ip, count)| IpRow {
            ip: at.offset(ip),
            count,
        })
        .collect();
    // The PC stays as recorded (perf2bolt does not adjust it); a data address in the binary
    // becomes a file offset, by the executable segment whose load bias perf2bolt subtracted.
    let delta = code_delta(binary);
    let mem = profile
        .mem
        .iter()
        .map(|m| MemRow {
            pc: m.pc,
            addr: if m.in_binary {
                m.addr.wrapping_sub(delta)
            } else {
                m.addr
            },
            in_binary: m.in_binary,
            count: m.count,
        })
        .collect();
    let returns = profile
        .returns
        .iter()
        .map(|&a| ReturnRow { addr: at.offset(a) })
        .collect();
    StoredProfile {
        meta: BinaryMeta {
            events,
            samples: profile.samples,
            processes: profile.pids as u64,
            ..identity(binary)
        },
        traces: sorted_summed(traces),
        ips: sorted_summed(ips),
        mem: sorted_summed(mem),
        returns: sorted_summed(returns),
    }
}

/// `profiles` in identity order, those of the same binary summed: what a store of them holds.
pub fn summed_profiles(mut profiles: Vec<StoredProfile>) -> Vec<StoredProfile> {
    profiles.sort_by(|a, b| a.meta.identity_cmp(&b.meta));
    let mut merged: Vec<StoredProfile> = Vec::with_capacity(profiles.len());
    for p in profiles {
        match merged.last_mut() {
            Some(last) if last.meta.identity_cmp(&p.meta) == Ordering::Equal => sum_into(last, p),
            _ => merged.push(p),
        }
    }
    merged
}

/// Writes `profiles` as a store at `path` (atomically). Profiles of the same binary are summed.
pub fn write_store(path: &Path, meta: &StoreMeta, profiles: Vec<StoredProfile>) -> Result<()> {
    let merged = summed_profiles(profiles);
    write_atomically(path, |out| write_profiles(out, meta, &merged))
}

/// The bytes of the store of `profiles` (those of one binary summed).
pub fn store_bytes(meta: &StoreMeta, profiles: Vec<StoredProfile>) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    write_profiles(&mut bytes, meta, &summed_profiles(profiles))?;
    Ok(bytes)
}

/// Writes a store of `merged` (in identity order, one profile per binary) to `out`.
fn write_profiles(
    out: &mut dyn std::io::Write,
    meta: &StoreMeta,
    merged: &[StoredProfile],
) -> std::io::Result<()> {
    let mut w = StoreWriter::new(out)?;
    w.meta(meta)?;
    for p in merged {
        let b = w.binary(&p.meta)?;
        write_table(&mut w, b, &p.traces)?;
        write_table(&mut w, b, &p.ips)?;
        write_table(&mut w, b, &p.mem)?;
        write_table(&mut w, b, &p.returns)?;
    }
    w.finish().map(drop)
}

fn write_table<W: std::io::Write, R: Row>(
    w: &mut StoreWriter<W>,
    binary: u32,
    rows: &[R],
) -> std::io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut t = w.table::<R>(binary)?;
    rows.iter().try_for_each(|r| t.push(r))?;
    t.finish()
}

/// Adds `p` (the same binary) into `into`.
fn sum_into(into: &mut StoredProfile, p: StoredProfile) {
    into.meta = merged_meta(&into.meta, &p.meta);
    use std::mem::take;
    into.traces = sorted_summed([take(&mut into.traces), p.traces].concat());
    into.ips = sorted_summed([take(&mut into.ips), p.ips].concat());
    into.mem = sorted_summed([take(&mut into.mem), p.mem].concat());
    into.returns = sorted_summed([take(&mut into.returns), p.returns].concat());
}

/// The summary of one binary's two partial profiles: counts summed, events united, the
/// smaller of two names kept (so the result does not depend on the order).
fn merged_meta(a: &BinaryMeta, b: &BinaryMeta) -> BinaryMeta {
    let mut events = [a.events.clone(), b.events.clone()].concat();
    events.sort();
    events.dedup();
    BinaryMeta {
        build_id: a.build_id.clone(),
        name: a.name.clone().min(b.name.clone()),
        events,
        samples: a.samples.saturating_add(b.samples),
        processes: a.processes.saturating_add(b.processes),
    }
}

/// A store file, read.
pub struct StoreFile {
    path: PathBuf,
    bytes: InputBytes,
}

impl StoreFile {
    /// Opens the store at `path`.
    pub fn open(path: &Path) -> Result<StoreFile> {
        let bytes = InputBytes::open(path).map_err(io_error(path))?;
        let file = StoreFile {
            path: path.to_path_buf(),
            bytes,
        };
        file.store()?;
        Ok(file)
    }

    /// The parsed store.
    pub fn store(&self) -> Result<Store<'_>> {
        Store::parse(&self.bytes).map_err(|e| self.error(e))
    }

    fn error(&self, e: StoreError) -> Error {
        Error::Store {
            path: self.path.clone(),
            source: e,
        }
    }

    /// Index of the stored binary that `binary` is: by build-id, else (when neither has one,
    /// or with `ignore_build_id`) by file name.
    pub fn find(&self, binary: &BinaryInfo, ignore_build_id: bool) -> Result<usize> {
        let store = self.store()?;
        let binaries = store.binaries();
        let id = binary.build_id.as_deref().unwrap_or_default();
        let by_id = binaries
            .iter()
            .position(|(m, _)| !id.is_empty() && m.build_id.starts_with(id));
        let by_name = || {
            binaries.iter().position(|(m, _)| {
                m.name == binary.file_name
                    && (ignore_build_id || id.is_empty() || m.build_id.is_empty())
            })
        };
        by_id.or_else(by_name).ok_or_else(|| {
            let present: Vec<String> = binaries
                .iter()
                .map(|(m, _)| {
                    format!("{} {}", if m.build_id.is_empty() { "(no build-id)".into() } else { hex(&m.build_id) }, String::from_utf8_lossy(&m.name))
                })
                .collect();
            Error::Mismatch(format!(
                "{}: no binary with build-id {} in {} (it holds: {}); --ignore-build-id matches by file name",
                binary.path.display(),
                if id.is_empty() { "(none)".into() } else { hex(id) },
                self.path.display(),
                if present.is_empty() { "nothing".into() } else { present.join(", ") }
            ))
        })
    }

    /// Stored binary `index` as a profile in `binary`'s addresses, traces in `order`.
    pub fn profile(
        &self,
        index: usize,
        binary: &BinaryInfo,
        order: TraceOrder,
    ) -> Result<BinaryProfile> {
        Ok(binary_profile(self.stored(index)?, binary, order))
    }

    /// Stored binary `index`, read whole.
    pub fn stored(&self, index: usize) -> Result<StoredProfile> {
        let store = self.store()?;
        Ok(StoredProfile {
            meta: store.binaries()[index].0.clone(),
            traces: self.rows_of(&store, index)?,
            ips: self.rows_of(&store, index)?,
            mem: self.rows_of(&store, index)?,
            returns: self.rows_of(&store, index)?,
        })
    }

    /// Every row of binary `index`'s `R` table: its blocks decoded in parallel (each decodes
    /// alone) into one array, the order then checked where they meet.
    fn rows_of<R: Row + Send + Sync>(&self, store: &Store<'_>, index: usize) -> Result<Vec<R>> {
        let blocks = store.binaries()[index].1.blocks(R::KIND);
        let Some(mut rows) = formats::store::zeroed_rows::<R>(blocks) else {
            let e = std::io::Error::new(std::io::ErrorKind::OutOfMemory, "its rows do not fit");
            return Err(io_error(&self.path)(e));
        };
        let decoded: Vec<_> = blocks
            .par_iter()
            .zip(formats::store::block_parts(blocks, &mut rows))
            .map_init(Vec::new, |scratch, (s, part)| {
                store.block_rows_into(s, scratch, part)
            })
            .collect();
        store
            .check_joined(blocks, decoded, &rows)
            .map_err(|e| self.error(e))?;
        Ok(rows)
    }
}

/// `stored` in `binary`'s addresses (the inverse of [`stored_profile`]), traces in `order`.
pub fn binary_profile(
    stored: StoredProfile,
    binary: &BinaryInfo,
    order: TraceOrder,
) -> BinaryProfile {
    let at = FileOffsets::of(binary);
    let mem = stored_mem(&stored, binary);
    // In place: a row and its trace take the same room, so the rows' memory is reused rather
    // than a second array's fresh pages touched.
    let mut traces: Vec<_> = stored
        .traces
        .into_iter()
        .map(|r| {
            let key = (at.address(r.branch), at.address(r.from), at.address(r.to));
            let counts = Counts {
                taken: r.count,
                mispred: r.mispreds,
            };
            (key, counts)
        })
        .collect();
    sort_traces(&mut traces, order);
    traces.dedup_by(|b, a| {
        let same = a.0 == b.0;
        if same {
            a.1.add(b.1);
        }
        same
    });
    let mut ips: Vec<(u64, u64)> = stored
        .ips
        .iter()
        .map(|r| (at.address(r.ip), r.count))
        .filter(|&(a, _)| a != 0)
        .collect();
    ips.sort_unstable();
    BinaryProfile {
        traces,
        events: stored.meta.events,
        ips,
        returns: stored.returns.iter().map(|r| at.address(r.addr)).collect(),
        mem,
        samples: stored.meta.samples,
        pids: stored.meta.processes as usize,
    }
}

/// A profile's traces, keyed by (branch, from, to).
type Traces = Vec<((u64, u64, u64), Counts)>;

/// Sorts `traces` in `order`. A store's rows come sorted by branch, and the file offsets map
/// to addresses in the same order (segments lie in the file as in memory): that order is
/// kept, and the order by start derived from it by a stable sort on the start alone.
fn sort_traces(traces: &mut Traces, order: TraceOrder) {
    let by_branch = traces.par_windows(2).all(|w| w[0].0 < w[1].0);
    match order {
        TraceOrder::ByBranch if by_branch => {}
        TraceOrder::ByStart if by_branch => match by_start_of_sorted(traces) {
            Some(sorted) => *traces = sorted,
            None => traces.par_sort_unstable_by_key(|&((b, f, t), _)| (f, b, t)),
        },
        TraceOrder::ByBranch => traces.par_sort_unstable_by_key(|t| t.0),
        TraceOrder::ByStart => traces.par_sort_unstable_by_key(|&((b, f, t), _)| (f, b, t)),
    }
}

/// `traces`, strictly increasing by (branch, from, to), in order by (from, branch, to): for
/// one start, the order they come in is by (branch, to) already, so sorting each start with
/// its index, packed in one integer, orders them. 4.35 M traces: 0.27 s, the keys and the
/// gathering included, against 0.32 s for the 40-byte traces compared by three columns
/// (PERF.md). `None` where a start or an index passes 32 bits.
fn by_start_of_sorted(traces: &Traces) -> Option<Traces> {
    u32::try_from(traces.len()).ok()?;
    let keys = traces
        .par_iter()
        .enumerate()
        .map(|(i, &((_, from, _), _))| {
            let from = u32::try_from(from).ok()?;
            Some(u64::from(from) << 32 | i as u64)
        });
    let mut keys: Vec<u64> = keys.collect::<Option<_>>()?;
    keys.par_sort_unstable();
    Some(
        keys.par_iter()
            .map(|&k| traces[(k & u64::from(u32::MAX)) as usize])
            .collect(),
    )
}

/// What a merge found worth saying.
#[derive(Clone, Debug, Default)]
pub struct MergeReport {
    /// Binaries in the result.
    pub binaries: usize,
    /// Counts that passed 2^64 and were saturated.
    pub saturated: bool,
}

/// One input of a merge: its file, kept open (or, past the open-file limit, reopened for each
/// read), and its index — metadata and where every block is, without the blocks.
struct MergeInput {
    path: PathBuf,
    file: Option<File>,
    index: StoreIndex,
    weight: u64,
}

impl MergeInput {
    /// Opens `input`, keeping the file open if `keep`; reads its index.
    fn open(input: &WeightedInput, keep: bool) -> Result<(MergeInput, bool)> {
        let path = &input.path;
        let file = File::open(path).map_err(io_error(path))?;
        let len = file.metadata().map_err(io_error(path))?.len();
        let read_file = |offset: u64, len: usize| -> std::io::Result<Vec<u8>> {
            let mut buf = vec![0; len];
            read_exact_at(&file, &mut buf, offset)?;
            Ok(buf)
        };
        // The index is the header and metadata at the start and the table of contents and
        // trailer at the end: read each end once, not each part (a merge opens thousands).
        let mut ends = Vec::with_capacity(2);
        for at in [0, len.saturating_sub(INDEX_EDGE)] {
            let n = (len - at).min(INDEX_EDGE) as usize;
            ends.push((at, read_file(at, n).map_err(io_error(path))?));
        }
        let read = |offset: u64, n: usize| -> std::result::Result<Vec<u8>, IndexError> {
            let inside = |(at, bytes): &(u64, Vec<u8>)| {
                let from = usize::try_from(offset.checked_sub(*at)?).ok()?;
                bytes.get(from..from.checked_add(n)?).map(<[u8]>::to_vec)
            };
            match ends.iter().find_map(inside) {
                Some(bytes) => Ok(bytes),
                None => Ok(read_file(offset, n)?),
            }
        };
        let index = StoreIndex::read(len, read).map_err(|e| match e {
            IndexError::Io(e) => io_error(path)(e),
            IndexError::Store(e) => Error::Store {
                path: path.clone(),
                source: e,
            },
        })?;
        let input = MergeInput {
            path: path.clone(),
            file: keep.then_some(file),
            index,
            weight: input.weight.max(1),
        };
        Ok((input, keep))
    }

    /// Reads `section`'s bytes into `buf`.
    fn read(&self, section: &Section, buf: &mut Vec<u8>) -> std::io::Result<()> {
        // Only bytes past the buffer's current length are zeroed first (the read overwrites
        // them all): zeroing every block before reading it was 0.9 % of a merge's samples.
        buf.resize(section.length as usize, 0);
        match &self.file {
            Some(f) => read_exact_at(f, buf, section.offset),
            None => read_exact_at(&File::open(&self.path)?, buf, section.offset),
        }
    }
}

/// Bytes read at each end of an input for its index.
const INDEX_EDGE: u64 = 4096;

/// Opens every input: files stay open while the process may open more (leaving a margin for
/// the output and whatever else the process needs); past that, inputs are reopened for each
/// block they read, so any number of inputs merges under any `ulimit -n`. (On one thread: on
/// two, opening a thousand inputs took 35-77 ms instead of 9-15 ms while each thread grew the
/// descriptor table, and 9-15 against 9-16 ms once [`reserve_descriptors`] had grown it.)
fn open_inputs(inputs: &[WeightedInput], keep_at_most: usize) -> Result<Vec<MergeInput>> {
    let mut opened = Vec::with_capacity(inputs.len());
    let mut keep = true;
    for input in inputs {
        let first = MergeInput::open(input, keep && opened.len() < keep_at_most);
        let (m, kept) = match first {
            Err(Error::Io { source, .. }) if keep && is_out_of_files(&source) => {
                // Out of file descriptors: close a margin's worth and keep no more.
                keep = false;
                let from = opened.len().saturating_sub(OPEN_FILES_MARGIN);
                for m in &mut opened[from..] {
                    let m: &mut MergeInput = m;
                    m.file = None;
                }
                MergeInput::open(input, false)?
            }
            other => other?,
        };
        keep &= kept;
        opened.push(m);
    }
    Ok(opened)
}

/// Descriptors that the merge leaves for its output and whatever else the process needs.
const OPEN_FILES_MARGIN: usize = 32;

/// Makes the process's table of file descriptors hold `count` descriptors (or as many as its
/// limit allows), so that opening the inputs does not grow it.
///
/// Linux grows the table by doubling it, and while a second thread shares the table, each
/// growth waits for an RCU grace period (`expand_fdtable`): opening 1,000 inputs next to the
/// read-ahead thread grew it four times and took 21–42 ms instead of 9–18 ms once it had been
/// grown here, on one thread, beforehand (PERF.md, seventeenth session). Growing it is all
/// this does: the descriptor made for it is closed at once, and no open one is touched.
#[cfg(target_os = "linux")]
fn reserve_descriptors(count: usize) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `getrlimit` writes the limit into `limit`, which lives through the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return;
    }
    let highest = (count as u64).min(limit.rlim_cur.saturating_sub(1));
    let Ok(highest) = libc::c_int::try_from(highest) else {
        return;
    };
    // Any open descriptor will do as the one duplicated: the standard streams, if one is open.
    for fd in 0..3 {
        // SAFETY: `F_DUPFD` makes a new descriptor, the lowest free one from `highest` on,
        // and changes no existing one (`dup2` would close one open at `highest`); a closed
        // `fd` fails with `EBADF` and makes nothing. The new descriptor is ours to close.
        let duplicate = unsafe { libc::fcntl(fd, libc::F_DUPFD, highest) };
        if duplicate >= 0 {
            // SAFETY: `duplicate` was made above and nothing else knows of it.
            unsafe { libc::close(duplicate) };
            return;
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn reserve_descriptors(_: usize) {}

/// Bytes at the start of each input that [`read_ahead`] asks for at most: its header and first
/// blocks (all of a partial of a few thousand rows). Later blocks are read as the merge goes,
/// where the system's own read-ahead sees each input read in order.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
const READ_AHEAD: u64 = 256 << 10;

/// Bytes that [`read_ahead`] asks for of all inputs together at most, so that the cache holds
/// them until the merge reads them, however many inputs there are.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
const READ_AHEAD_TOTAL: u64 = 256 << 20;

/// Asks the system to read the start and the end (the index) of each input into its cache,
/// without waiting for the disk. Errors are left to the opening of the inputs.
///
/// Inputs not in the cache (stores just received, or pushed out by other work) were read one
/// at a time otherwise, as the merge opened them and read their indexes: 1,000 partials merged
/// in 0.87–1.02 s from a cold cache, against 0.73–0.78 s with this thread (PERF.md, sixteenth
/// session). Cached, the difference was within the noise (0.58 against 0.60 s).
#[cfg(target_os = "linux")]
fn read_ahead(inputs: &[WeightedInput]) {
    use std::os::fd::AsRawFd;
    let each = read_ahead_each(inputs.len());
    for input in inputs {
        let Ok(file) = File::open(&input.path) else {
            continue;
        };
        let Ok(len) = file.metadata().map(|m| m.len()) else {
            continue;
        };
        for range in read_ahead_ranges(len, each) {
            let at = libc::off_t::try_from(range.start);
            let n = libc::off_t::try_from(range.end - range.start);
            if let (Ok(at), Ok(n @ 1..)) = (at, n) {
                // SAFETY: `posix_fadvise` only reads its arguments, and the descriptor stays
                // open (owned by `file`) during the call. Advice changes no data.
                unsafe { libc::posix_fadvise(file.as_raw_fd(), at, n, libc::POSIX_FADV_WILLNEED) };
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn read_ahead(_: &[WeightedInput]) {}

/// The bytes that [`read_ahead`] asks for of each of `inputs` inputs at most.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn read_ahead_each(inputs: usize) -> u64 {
    (READ_AHEAD_TOTAL / inputs.max(1) as u64).clamp(INDEX_EDGE, READ_AHEAD)
}

/// The ranges of an input of `len` bytes that [`read_ahead`] asks for, `each` bytes from its
/// start and its index's edge at its end; either may be empty, and they do not overlap.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn read_ahead_ranges(len: u64, each: u64) -> [std::ops::Range<u64>; 2] {
    let head = each.min(len);
    let tail = len.saturating_sub(INDEX_EDGE).max(head);
    [0..head, tail..len]
}

/// Whether `e` says that the process or the system may open no more files.
fn is_out_of_files(e: &std::io::Error) -> bool {
    // EMFILE and ENFILE (Linux, the BSDs and macOS agree on both).
    matches!(e.raw_os_error(), Some(23 | 24))
}

/// Reads exactly `buf.len()` bytes of `file` at `offset`, leaving its position alone.
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = file;
        f.seek(SeekFrom::Start(offset))?;
        f.read_exact(buf)
    }
}

/// A store index read from a file: the file's error or the store's.
enum IndexError {
    Io(std::io::Error),
    Store(StoreError),
}

impl From<std::io::Error> for IndexError {
    fn from(e: std::io::Error) -> Self {
        IndexError::Io(e)
    }
}

impl From<StoreError> for IndexError {
    fn from(e: StoreError) -> Self {
        IndexError::Store(e)
    }
}

/// Merges stores: every binary of every input, counts multiplied by the input's weight and
/// summed (saturating at 2^64 − 1). Each input's tables are read a block at a time (one block
/// of each input in memory) and cut into key ranges that hold every copy of their keys; the
/// ranges are summed and sorted on every core and written in key order (`merge_table`), so
/// memory is bounded by the number of inputs times the block size, never by the data. The
/// output depends only on the sum: any order or grouping of the same inputs gives the same
/// bytes. `progress` hears of the opening, then of every block read; then it is finished.
pub fn merge_stores(
    inputs: &[WeightedInput],
    output: &Path,
    progress: &dyn Progress,
) -> Result<MergeReport> {
    let merged = merge_stores_with(inputs, output, MergeTuning::default(), progress);
    progress.finish();
    merged
}

/// Knobs of the merge that change its speed and memory, never its output (the tests turn them
/// to their extremes).
#[derive(Clone, Copy, Debug)]
struct MergeTuning {
    /// Rows of all inputs together that a key range holds, about (see [`range_ends`]).
    range_rows: u64,
    /// Inputs whose files stay open; the others are reopened for every block.
    open_files: usize,
    /// Threads summing key ranges.
    workers: usize,
}

impl Default for MergeTuning {
    fn default() -> Self {
        MergeTuning {
            range_rows: 3 << 13,
            open_files: usize::MAX,
            workers: std::thread::available_parallelism().map_or(1, |n| n.get().min(8)),
        }
    }
}

fn merge_stores_with(
    inputs: &[WeightedInput],
    output: &Path,
    tuning: MergeTuning,
    progress: &dyn Progress,
) -> Result<MergeReport> {
    progress.phase("opening");
    // Before any thread starts: see `reserve_descriptors`.
    reserve_descriptors(inputs.len().saturating_add(OPEN_FILES_MARGIN));
    // The inputs are opened one at a time, and each one's index read: inputs that are not in
    // the page cache would be read from the disk one at a time. A second thread asks for them
    // all meanwhile, so that the disk reads them together.
    let files = std::thread::scope(|scope| {
        scope.spawn(|| read_ahead(inputs));
        open_inputs(inputs, tuning.open_files)
    })?;
    progress.set_total(table_bytes(&files));
    progress.phase("merging");
    let sources = Sources {
        files: &files,
        progress,
    };
    let mut meta = StoreMeta::default();
    for f in &files {
        let m = f.index.meta();
        meta.captures = meta
            .captures
            .saturating_add(m.captures.saturating_mul(f.weight));
        meta.hosts.extend(m.hosts.iter().cloned());
    }
    meta.hosts.sort();
    meta.hosts.dedup();
    // Every binary of every input, in identity order: (meta, [(input, index in that input)]).
    let mut binaries: Vec<(BinaryMeta, Vec<(usize, usize)>)> = Vec::new();
    let mut all: Vec<(BinaryMeta, usize, usize)> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        for (b, (m, _)) in f.index.binaries().iter().enumerate() {
            let mut m = m.clone();
            // A weight stands for that many copies of the input: its summary counts scale too.
            m.samples = m.samples.saturating_mul(f.weight);
            m.processes = m.processes.saturating_mul(f.weight);
            all.push((m, i, b));
        }
    }
    all.sort_by(|a, b| a.0.identity_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (m, i, b) in all {
        match binaries.last_mut() {
            Some((meta, parts)) if meta.identity_cmp(&m) == Ordering::Equal => {
                *meta = merged_meta(meta, &m);
                parts.push((i, b));
            }
            _ => binaries.push((m, vec![(i, b)])),
        }
    }
    let mut report = MergeReport {
        binaries: binaries.len(),
        saturated: false,
    };
    let mut failure: Option<Error> = None;
    write_atomically(output, |out| {
        let mut w = StoreWriter::new(out)?;
        w.meta(&meta)?;
        for (m, parts) in &binaries {
            let b = w.binary(m)?;
            let t = tuning;
            let f = &sources;
            let r = merge_table::<_, TraceRow>(&mut w, b, f, parts, t)
                .and_then(|s| Ok(s | merge_table::<_, BranchRow>(&mut w, b, f, parts, t)?))
                .and_then(|s| Ok(s | merge_table::<_, IpRow>(&mut w, b, f, parts, t)?))
                .and_then(|s| Ok(s | merge_table::<_, MemRow>(&mut w, b, f, parts, t)?))
                .and_then(|s| Ok(s | merge_table::<_, ReturnRow>(&mut w, b, f, parts, t)?));
            match r {
                Ok(saturated) => report.saturated |= saturated,
                Err(TableError::Io(e)) => return Err(e),
                Err(TableError::Input(i, e)) => {
                    failure = Some(io_error(&files[i].path)(e));
                    return Err(std::io::Error::other("a store input cannot be read"));
                }
                Err(TableError::Store(i, e)) => {
                    failure = Some(Error::Store {
                        path: files[i].path.clone(),
                        source: e,
                    });
                    return Err(std::io::Error::other("a store input is corrupt"));
                }
            }
        }
        w.finish().map(drop)
    })
    .map_err(|e| failure.take().unwrap_or(e))?;
    Ok(report)
}

/// The bytes of every table block of every input: what the merge reads after the indices.
fn table_bytes(files: &[MergeInput]) -> u64 {
    let layouts = files
        .iter()
        .flat_map(|f| f.index.binaries().iter().map(|(_, l)| l));
    layouts
        .flat_map(|l| SectionKind::TABLES.map(|k| l.bytes(k)))
        .fold(0, u64::saturating_add)
}

/// The merge's opened inputs, and where the groups report the blocks they read.
struct Sources<'a> {
    files: &'a [MergeInput],
    progress: &'a dyn Progress,
}

enum TableError {
    /// Writing the output.
    Io(std::io::Error),
    /// Reading input `.0`.
    Input(usize, std::io::Error),
    /// Input `.0` is corrupt.
    Store(usize, StoreError),
}

impl From<std::io::Error> for TableError {
    fn from(e: std::io::Error) -> Self {
        TableError::Io(e)
    }
}

/// One input's rows of one table, read a block at a time and decoded straight into the sums
/// of the key range at hand.
struct Cursor<'a, R: Row> {
    input: &'a MergeInput,
    /// Told the length of each block read.
    progress: &'a dyn Progress,
    /// Index of the input, for errors.
    at: usize,
    blocks: std::slice::Iter<'a, Section>,
    /// The current block's bytes and where its decoding stands.
    bytes: Vec<u8>,
    block: Option<BlockCursor<R>>,
    /// A row decoded (counts scaled) that belongs to a later range.
    held: Option<R>,
    /// The last row of the previous block, to check the order across blocks.
    last: Option<[u64; 3]>,
    /// Whether every row of the table is taken.
    done: bool,
}

impl<'a, R: Row> Cursor<'a, R> {
    fn new(sources: &Sources<'a>, at: usize, binary: usize) -> Self {
        let input = &sources.files[at];
        let blocks = input.index.binaries()[binary].1.blocks(R::KIND);
        Cursor {
            input,
            progress: sources.progress,
            at,
            blocks: blocks.iter(),
            bytes: Vec::new(),
            block: None,
            held: None,
            last: None,
            done: false,
        }
    }

    /// Asks the CPU for the bytes that the next range's decoding starts with.
    #[inline]
    fn prefetch_next(&self) {
        if let Some(block) = &self.block {
            let from = block.position().min(self.bytes.len());
            prefetch(&self.bytes[from..(from + 128).min(self.bytes.len())]);
        }
    }

    /// Adds every row of the input up to the key `last` (none for `None`) to `sums`, counts
    /// scaled by the input's weight; records a saturation of the scaling in `saturated` (and
    /// `sums` one of its sums).
    fn take_up_to(
        &mut self,
        last: Option<[u64; 3]>,
        sums: &mut Sums<R>,
        saturated: &mut bool,
    ) -> std::result::Result<(), TableError> {
        let Some(last) = last else {
            return Ok(());
        };
        let below = |row: &R| row.packed_key() <= last;
        let weight = self.input.weight;
        loop {
            if let Some(row) = self.held {
                if !below(&row) {
                    return Ok(());
                }
                sums.add(row);
                self.held = None;
            }
            let Some(block) = &mut self.block else {
                if self.done {
                    return Ok(());
                }
                self.next_block(saturated)?;
                continue;
            };
            let mut sat = false;
            // Inputs of weight 1 (most) get a loop without the weight's test.
            let stop = match weight {
                1 => block.rows_while(&self.bytes, below, |row| sums.add(row)),
                _ => block.rows_while(&self.bytes, below, |mut row| {
                    sat |= !row.scale_counts(weight);
                    sums.add(row);
                }),
            };
            let stop = stop.map_err(|e| TableError::Store(self.at, e))?;
            *saturated |= sat;
            match stop {
                Some(mut row) => {
                    if weight != 1 {
                        *saturated |= !row.scale_counts(weight);
                    }
                    self.held = Some(row);
                    return Ok(());
                }
                None => {
                    if let Some(last) = block.last_row() {
                        self.last = Some(last.packed_key());
                    }
                    self.block = None;
                }
            }
        }
    }

    /// Reads the next block (checking its checksum) and takes its first row into `held`
    /// (checking that it follows the previous block's last; counts scaled, a saturation
    /// recorded in `saturated`), or notes the table's end.
    fn next_block(&mut self, saturated: &mut bool) -> std::result::Result<(), TableError> {
        let Some(section) = self.blocks.next() else {
            self.done = true;
            // The table's blocks are done: give their memory back.
            self.bytes = Vec::new();
            return Ok(());
        };
        if self.bytes.capacity() == 0 {
            // Room for the largest block at once: growing block by block would move the bytes
            // and take fresh pages again and again.
            let largest = self.blocks.as_slice().iter().map(|s| s.length);
            let largest = largest.fold(section.length, u64::max);
            self.bytes
                .reserve_exact(usize::try_from(largest).unwrap_or(0));
        }
        self.input
            .read(section, &mut self.bytes)
            .map_err(|e| TableError::Input(self.at, e))?;
        self.progress.advance(section.length);
        let store_error = |e| TableError::Store(self.at, e);
        let mut block = BlockCursor::<R>::new(&self.bytes, section).map_err(store_error)?;
        let first = block.next_row(&self.bytes).map_err(store_error)?;
        if let Some(mut row) = first {
            // Rows increase within a block (checked there) and across blocks (here).
            if self.last.is_some_and(|last| last >= row.packed_key()) {
                let e = StoreError {
                    offset: section.offset,
                    section: Some((R::KIND, section.binary, section.block)),
                    kind: StoreErrorKind::Unsorted,
                };
                return Err(store_error(e));
            }
            if self.input.weight != 1 {
                *saturated |= !row.scale_counts(self.input.weight);
            }
            self.held = Some(row);
        }
        self.block = Some(block);
        Ok(())
    }
}

/// The key just before `key` in key order, if any.
fn key_before([a, b, c]: [u64; 3]) -> Option<[u64; 3]> {
    match (a.checked_sub(1), b.checked_sub(1), c.checked_sub(1)) {
        (_, _, Some(c)) => Some([a, b, c]),
        (_, Some(b), None) => Some([a, b, u64::MAX]),
        (Some(a), None, None) => Some([a, u64::MAX, u64::MAX]),
        (None, None, None) => None,
    }
}

/// Rows summed by key, in an open-addressing hash table of indices into the rows: a probe
/// reads a slot, and the row only where the slot's tag matches. (`hashbrown`'s table, with
/// three dependent loads per row (a control group, a slot, the row), took 4 % more CPU for
/// the merge of 1,000 partials than this one did with the look-ahead below.) Each row is
/// inserted as it comes: asking the CPU for its slot one row ahead, holding the row taken
/// before, measured the same wall time on idle runs and 6 % more instructions (PERF.md,
/// eighteenth session).
struct Sums<R: Row> {
    /// Per slot: the key hash's top [`TAG_BITS`] bits, the range's [`Sums::generation`] and
    /// the row's index plus one. A slot of another generation (or 0) is empty. Linear probing;
    /// at most half full.
    slots: Vec<u64>,
    rows: Vec<R>,
    /// Which range's rows the slots hold (1 to [`GENERATIONS`]): clearing the table for the
    /// next range is a new generation, not a pass over the slots, which took 2 % of the merge
    /// of 1,000 partials.
    generation: u64,
    /// Whether a sum saturated, ever (not cleared with the rows): set where it happens, rather
    /// than a flag returned for every row and gathered by the caller.
    saturated: bool,
}

/// The hash of a row's key: each column multiplied by its own odd constant, the products
/// XORed, the top half folded into the bottom one. The three multiplications run side by
/// side: by the instructions' latencies the slot's address is known about seven cycles after
/// the key, where two chained 128-bit multiplications took about twelve, and the probe's load
/// waits on that address (PERF.md, nineteenth session). A product's bit `i` depends only on its column's bits up to
/// `i`, and its middle bits alone left sequential keys in clumps
/// (`keys_spread_over_the_home_slots`).
#[inline(always)]
fn key_hash([a, b, c]: [u64; 3]) -> u64 {
    const K: [u64; 3] = [
        0x9e37_79b9_7f4a_7c15,
        0xc2b2_ae3d_27d4_eb4f,
        0x1656_67b1_9e37_79f9,
    ];
    let h = a.wrapping_mul(K[0]) ^ b.wrapping_mul(K[1]) ^ c.wrapping_mul(K[2]);
    // The top bits, which every bit of the key reaches, mixed into the home slot's.
    h ^ h >> 32
}

/// The hash's bit where the home slot's bits start: a table of up to 2^24 slots then takes
/// them apart from the tag's top 16 bits, so that keys sharing a home slot still differ in
/// their tags (in a larger table they share tag bits too and more rows are read to compare).
const HOME_SHIFT: u32 = 24;

/// The slot where a key of `hash` is looked for first, in a table of `mask + 1` slots.
#[inline(always)]
fn home_slot(hash: u64, mask: usize) -> usize {
    (hash >> HOME_SHIFT) as usize & mask
}

/// A slot: the hash's top [`TAG_BITS`] bits, to tell keys apart without reading their rows;
/// [`GENERATION_BITS`] of generation; and the row's index plus one in the other 40 bits (a
/// range holds far fewer rows than 2^40).
const TAG_BITS: u32 = 16;
const GENERATION_BITS: u32 = 8;
const GENERATIONS: u64 = (1 << GENERATION_BITS) - 1;
const INDEX_BITS: u32 = u64::BITS - TAG_BITS - GENERATION_BITS;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;

/// A slot's tag and generation, as a new slot of `hash` in `generation` holds them.
#[inline(always)]
fn slot_head(hash: u64, generation: u64) -> u64 {
    (hash >> INDEX_BITS) & !GENERATIONS | generation
}

/// Whether two keys are equal, compared in general registers. The compiler's vector compare of
/// the arrays read the new key back from the stack as 16 bytes just written by two 8-byte
/// stores, which the CPU cannot forward (PERF.md, eleventh session: 1–2 %, within the noise).
#[inline(always)]
fn same_key([a, b, c]: [u64; 3], [x, y, z]: [u64; 3]) -> bool {
    ((a ^ x) | (b ^ y) | (c ^ z)) == 0
}

/// Whether `slot` holds a row of `generation`.
#[inline(always)]
fn occupied(slot: u64, generation: u64) -> bool {
    (slot >> INDEX_BITS) & GENERATIONS == generation
}

/// The index of the row that an occupied slot holds.
#[inline(always)]
fn slot_row(slot: u64) -> usize {
    ((slot & INDEX_MASK) - 1) as usize
}

impl<R: Row> Sums<R> {
    /// Slots of a new table.
    const FIRST_SLOTS: usize = 1024;

    /// Room for `rows` rows; the table itself starts at [`Self::FIRST_SLOTS`] and grows.
    fn with_capacity(rows: usize) -> Self {
        Sums {
            slots: vec![0; Self::FIRST_SLOTS],
            rows: Vec::with_capacity(rows),
            generation: 1,
            saturated: false,
        }
    }

    /// Forgets every row, keeping the memory.
    fn clear(&mut self) {
        if self.generation == GENERATIONS {
            self.slots.fill(0);
            self.generation = 0;
        }
        self.generation += 1;
        self.rows.clear();
    }

    /// Adds `row` to the sums.
    #[inline(always)]
    fn add(&mut self, row: R) {
        let key = row.packed_key();
        let hash = key_hash(key);
        let head = slot_head(hash, self.generation);
        let mask = self.slots.len() - 1;
        let mut at = home_slot(hash, mask);
        loop {
            let slot = self.slots[at];
            if !occupied(slot, self.generation) {
                break;
            }
            if slot >> INDEX_BITS == head {
                let i = slot_row(slot);
                if same_key(self.rows[i].packed_key(), key) {
                    if !self.rows[i].add_counts(&row) {
                        self.saturated = true;
                    }
                    return;
                }
            }
            at = (at + 1) & mask;
        }
        self.slots[at] = head << INDEX_BITS | (self.rows.len() as u64 + 1);
        self.rows.push(row);
        if self.rows.len() * 2 > self.slots.len() {
            self.grow();
        }
    }

    /// Doubles the table.
    #[cold]
    fn grow(&mut self) {
        let slots = vec![0; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, slots);
        let (mask, generation) = (self.slots.len() - 1, self.generation);
        for slot in old.into_iter().filter(|&s| occupied(s, generation)) {
            let hash = key_hash(self.rows[slot_row(slot)].packed_key());
            let mut at = home_slot(hash, mask);
            while self.slots[at] != 0 {
                at = (at + 1) & mask;
            }
            self.slots[at] = slot;
        }
    }
}

/// Merges one table of one binary from its `parts`; returns whether a count saturated.
///
/// The key space is cut into ranges from the inputs' tables of contents ([`range_ends`]).
/// The inputs are split into `tuning.workers` groups, one thread each: a group reads its
/// inputs a block at a time and, range after range, sums each input's rows of the range in a
/// hash table and sorts the sums into a run. The groups' runs of a range meet in a
/// [`Meeting`], where the group that is ahead merges and writes the ranges complete before
/// its own, in range order. Saturating sums are associative and commutative, so the grouping
/// changes nothing in the output. Each group has a few run buffers and waits for a written one
/// when it is that far ahead, so memory stays bounded by the inputs' blocks, whatever the data.
fn merge_table<W: std::io::Write + Send, R: Row + Send>(
    w: &mut StoreWriter<W>,
    binary: u32,
    sources: &Sources<'_>,
    parts: &[(usize, usize)],
    tuning: MergeTuning,
) -> std::result::Result<bool, TableError> {
    let files = sources.files;
    let has_rows = parts
        .iter()
        .any(|&(i, b)| !files[i].index.binaries()[b].1.blocks(R::KIND).is_empty());
    if !has_rows {
        return Ok(false);
    }
    let ends = range_ends::<R>(files, parts, tuning.range_rows);
    let groups = tuning.workers.clamp(1, parts.len());
    let groups: Vec<&[(usize, usize)]> = parts.chunks(parts.len().div_ceil(groups)).collect();
    let (meeting, spares) = Meeting::new(w.table::<R>(binary)?, groups.len());
    let results: Vec<_> = std::thread::scope(|scope| {
        let threads: Vec<_> = groups
            .iter()
            .zip(spares)
            .enumerate()
            .map(|(g, (group, spares))| {
                let (meeting, ends) = (&meeting, &ends);
                // About the rows of a range that this group's parts hold (sums hold at most
                // that).
                let expected = tuning.range_rows as usize * group.len() / parts.len();
                scope.spawn(move || {
                    // A failed or panicking group stops the others, which may wait for its
                    // runs.
                    let stop = StopUnlessDone(meeting);
                    let result = merge_group(sources, group, ends, expected, g, meeting, spares);
                    if result.is_ok() {
                        std::mem::forget(stop);
                    }
                    result
                })
            })
            .collect();
        let joined = threads.into_iter().map(|t| t.join());
        joined
            .map(|r| r.unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let (table, written) = meeting.finish();
    let mut saturated = false;
    // An input's error explains a failed write (a group stopped early), not the reverse.
    for result in results {
        saturated |= result?;
    }
    saturated |= written?;
    table.finish()?;
    Ok(saturated)
}

/// Run buffers of each group: it waits for a written one when all are in flight, rather than
/// allocate another, so that each buffer takes fresh pages once.
const RUNS_IN_FLIGHT: usize = 4;

/// Where the groups' sorted runs of each key range meet, to be summed and written in range
/// order.
///
/// A group deposits its run of range `r` and then writes the ranges before `r` that every
/// group has deposited, if no other group is writing: the group that is ahead writes, so the
/// writing goes to whichever has time for it. A separate writing thread, a third thread on
/// two cores, had made one group share its core and lag: the other waited for it, 1.75 of
/// the 2 cores busy (PERF.md).
struct Meeting<'t, W: std::io::Write, R: Row> {
    writing: std::sync::Mutex<Writing<'t, W, R>>,
    pending: std::sync::Mutex<Pending<R>>,
    /// Set when a group failed or the writing did: the groups stop.
    stopped: std::sync::atomic::AtomicBool,
}

/// The table being written, with what writing it found.
struct Writing<'t, W: std::io::Write, R: Row> {
    table: formats::store::TableWriter<'t, W, R>,
    saturated: bool,
    error: Option<std::io::Error>,
}

/// The deposited runs of the ranges not written yet.
struct Pending<R> {
    /// The first range not written.
    next: usize,
    /// Per range from `next` on: each group's run, once deposited.
    ranges: std::collections::VecDeque<Vec<Option<Vec<R>>>>,
    /// Where each group's written run buffers go back to it (emptied on a stop, which wakes
    /// a group waiting for one).
    returns: Vec<crossbeam_channel::Sender<Vec<R>>>,
    groups: usize,
}

impl<'t, W: std::io::Write, R: Row> Meeting<'t, W, R> {
    /// A meeting of `groups` groups writing `table`, with each group's spare run buffers.
    fn new(
        table: formats::store::TableWriter<'t, W, R>,
        groups: usize,
    ) -> (Self, Vec<crossbeam_channel::Receiver<Vec<R>>>) {
        let (returns, spares): (Vec<_>, Vec<_>) = (0..groups)
            .map(|_| {
                let (send, receive) = crossbeam_channel::bounded(RUNS_IN_FLIGHT + 1);
                for _ in 0..RUNS_IN_FLIGHT + 1 {
                    let _ = send.send(Vec::new());
                }
                (send, receive)
            })
            .unzip();
        let meeting = Meeting {
            writing: std::sync::Mutex::new(Writing {
                table,
                saturated: false,
                error: None,
            }),
            pending: std::sync::Mutex::new(Pending {
                next: 0,
                ranges: std::collections::VecDeque::new(),
                returns,
                groups,
            }),
            stopped: std::sync::atomic::AtomicBool::new(false),
        };
        (meeting, spares)
    }

    fn stopped(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Stops every group, waking those waiting for a run buffer.
    fn stop(&self) {
        self.stopped
            .store(true, std::sync::atomic::Ordering::Relaxed);
        lock(&self.pending).returns.clear();
    }

    /// Takes group `group`'s run of range `range`.
    fn deposit(&self, group: usize, range: usize, run: Vec<R>) {
        let mut pending = lock(&self.pending);
        let at = range - pending.next;
        while pending.ranges.len() <= at {
            let groups = pending.groups;
            pending.ranges.push_back(vec![None; groups]);
        }
        pending.ranges[at][group] = Some(run);
    }

    /// Writes the complete ranges before `range`, unless another group is writing.
    fn write_before(&self, range: usize) {
        if let Ok(mut writing) = self.writing.try_lock() {
            self.write_complete(&mut writing, range);
        }
    }

    /// Writes every complete range, waiting for a group that is writing.
    fn write_all(&self) {
        let mut writing = lock(&self.writing);
        self.write_complete(&mut writing, usize::MAX);
    }

    /// Writes the complete ranges before `limit`, in order, and gives the runs back.
    fn write_complete(&self, writing: &mut Writing<'t, W, R>, limit: usize) {
        loop {
            let runs = {
                let mut pending = lock(&self.pending);
                let complete = pending
                    .ranges
                    .front()
                    .is_some_and(|r| r.iter().all(Option::is_some));
                if !complete || pending.next >= limit {
                    return;
                }
                pending.next += 1;
                pending.ranges.pop_front().unwrap_or_default()
            };
            let mut runs: Vec<Vec<R>> = runs.into_iter().flatten().collect();
            if writing.error.is_none() {
                match write_range(&mut writing.table, &runs) {
                    Ok(saturated) => writing.saturated |= saturated,
                    Err(e) => {
                        writing.error = Some(e);
                        self.stop();
                    }
                }
            }
            let pending = lock(&self.pending);
            for (run, returns) in runs.iter_mut().zip(&pending.returns) {
                if run.capacity() > 0 {
                    run.clear();
                    let _ = returns.try_send(std::mem::take(run));
                }
            }
        }
    }

    /// The table, and whether a sum saturated or the error that stopped the writing.
    fn finish(self) -> (formats::store::TableWriter<'t, W, R>, std::io::Result<bool>) {
        let writing = self.writing.into_inner().unwrap_or_else(|e| e.into_inner());
        let result = match writing.error {
            Some(e) => Err(e),
            None => Ok(writing.saturated),
        };
        (writing.table, result)
    }
}

/// Stops the meeting when dropped: when its group fails or panics (a group that ends well
/// forgets it).
struct StopUnlessDone<'m, 't, W: std::io::Write, R: Row>(&'m Meeting<'t, W, R>);

impl<W: std::io::Write, R: Row> Drop for StopUnlessDone<'_, '_, W, R> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// Locks `m`; a panicked holder's data is still whole here (the panic is raised again when
/// its thread is joined).
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Writes one range from the groups' sorted runs of it, summing equal keys; returns whether
/// a sum saturated.
fn write_range<W: std::io::Write, R: Row>(
    table: &mut formats::store::TableWriter<'_, W, R>,
    runs: &[Vec<R>],
) -> std::io::Result<bool> {
    let mut heads: Vec<&[R]> = runs
        .iter()
        .map(Vec::as_slice)
        .filter(|r| !r.is_empty())
        .collect();
    match heads.as_mut_slice() {
        [] => Ok(false),
        [one] => {
            one.iter().try_for_each(|r| table.push(r))?;
            Ok(false)
        }
        [a, b] => merge_two(table, a, b),
        _ => merge_many(table, &mut heads),
    }
}

/// Merges two sorted runs into `table`, summing equal keys; returns whether a sum saturated.
fn merge_two<W: std::io::Write, R: Row>(
    table: &mut formats::store::TableWriter<'_, W, R>,
    left: &[R],
    right: &[R],
) -> std::io::Result<bool> {
    let mut saturated = false;
    let (mut i, mut j) = (0, 0);
    while let (Some(x), Some(y)) = (left.get(i), right.get(j)) {
        match x.packed_key().cmp(&y.packed_key()) {
            Ordering::Less => {
                table.push(x)?;
                i += 1;
            }
            Ordering::Greater => {
                table.push(y)?;
                j += 1;
            }
            Ordering::Equal => {
                let mut sum = *x;
                saturated |= !sum.add_counts(y);
                table.push(&sum)?;
                (i, j) = (i + 1, j + 1);
            }
        }
    }
    let mut rest = left[i..].iter().chain(&right[j..]);
    rest.try_for_each(|r| table.push(r))?;
    Ok(saturated)
}

/// Merges any number of sorted runs into `table`, summing equal keys; returns whether a sum
/// saturated.
fn merge_many<W: std::io::Write, R: Row>(
    table: &mut formats::store::TableWriter<'_, W, R>,
    heads: &mut [&[R]],
) -> std::io::Result<bool> {
    let mut saturated = false;
    let least = |heads: &[&[R]]| {
        heads
            .iter()
            .filter_map(|h| h.first())
            .map(Row::packed_key)
            .min()
    };
    while let Some(least) = least(heads) {
        let mut sum: Option<R> = None;
        for head in heads.iter_mut() {
            let Some((row, rest)) = head.split_first() else {
                continue;
            };
            if row.packed_key() == least {
                match &mut sum {
                    None => sum = Some(*row),
                    Some(acc) => saturated |= !acc.add_counts(row),
                }
                *head = rest;
            }
        }
        if let Some(row) = sum {
            table.push(&row)?;
        }
    }
    Ok(saturated)
}

/// Merges one group of inputs: sums every part's rows one key range at a time (the ranges end
/// at `ends`, the last one has no end), visiting each input once per range and decoding its
/// rows straight into the range's hash table; deposits each range's sums sorted, in a buffer
/// from `spares`, at `meeting` as group `group`'s, and writes what is complete. Returns
/// whether a count saturated (scaled by a weight or summed).
fn merge_group<W: std::io::Write, R: Row>(
    sources: &Sources<'_>,
    parts: &[(usize, usize)],
    ends: &[[u64; 3]],
    expected: usize,
    group: usize,
    meeting: &Meeting<'_, W, R>,
    spares: crossbeam_channel::Receiver<Vec<R>>,
) -> std::result::Result<bool, TableError> {
    let mut cursors: Vec<Cursor<'_, R>> = parts
        .iter()
        .map(|&(i, b)| Cursor::new(sources, i, b))
        .collect();
    let mut saturated = false;
    // Buffers sized once, for the rows a range is expected to hold and a margin: a buffer
    // that grows moves to fresh pages, which this host clears slowly (PERF.md), and reserving
    // touches no page. The hash table starts small and grows: `hashbrown`'s, sized alike, was
    // slower (a larger table to clear and probe).
    let mut most = expected;
    let mut sums = Sums::with_capacity(most + most / 4);
    let mut scratch = SortScratch::with_capacity(most + most / 4);
    for (range, end) in ends.iter().copied().map(Some).chain([None]).enumerate() {
        if meeting.stopped() {
            break;
        }
        // The range's greatest key, so that a row's test is one comparison with no `Option` to
        // look at (`None`: no key is below the range's end, the least key).
        let last = end.map_or(Some([u64::MAX; 3]), key_before);
        for i in 0..cursors.len() {
            // Many inputs' blocks do not fit the cache: ask for the next ones early, and for
            // the cursors that say where those are earlier still.
            if let Some(later) = cursors.get(i + 8) {
                prefetch(std::slice::from_ref(later));
            }
            if let Some(next) = cursors.get(i + 4) {
                next.prefetch_next();
            }
            cursors[i].take_up_to(last, &mut sums, &mut saturated)?;
        }
        cursors.retain(|c| !(c.done && c.held.is_none()));
        let mut run = Vec::new();
        if !sums.rows.is_empty() {
            let mut spare = match spares.try_recv() {
                Ok(spare) => spare,
                Err(_) => {
                    // Every buffer is in flight: write what is complete, then wait.
                    meeting.write_all();
                    match spares.recv() {
                        Ok(spare) => spare,
                        // Stopped.
                        Err(_) => break,
                    }
                }
            };
            // Room for the largest range so far and a margin: the next range's sums rarely
            // grow it. (Growing a buffer this large takes fresh pages, which the system
            // clears, each time: 4 % of the merge's time when each buffer was sized for the
            // last range only.)
            most = most.max(sums.rows.len());
            spare.reserve(most + most / 4);
            run = std::mem::replace(&mut sums.rows, spare);
            sums.clear();
            sort_by_key(&mut run, &mut scratch);
        }
        meeting.deposit(group, range, run);
        meeting.write_before(range);
    }
    meeting.write_all();
    Ok(saturated | sums.saturated)
}

/// Memory that [`sort_by_key`] reuses from run to run.
#[derive(Default)]
struct SortScratch<R> {
    /// Each row's key and index packed into one integer, when 64 bits hold them.
    order_64: Vec<u64>,
    /// Each row's key and index packed into one integer.
    order: Vec<u128>,
    /// The rows in key order, swapped with the run's.
    sorted: Vec<R>,
}

impl<R> SortScratch<R> {
    fn with_capacity(rows: usize) -> Self {
        SortScratch {
            order_64: Vec::with_capacity(rows),
            order: Vec::with_capacity(rows),
            sorted: Vec::with_capacity(rows),
        }
    }
}

/// How the keys of a run and their rows' indices pack into 64 bits in key order: each column
/// as its offset from the column's least value, `u64::MAX` (a marker, and the largest value)
/// as one past the column's largest other value. The last column may be taken relative to the
/// one before (a trace's fall-through end to its start, a few bytes apart where the start
/// spans the binary), which orders rows alike: the columns before it are equal where it
/// decides.
struct Packing64 {
    /// Per column: the least value (of the last column, relative or not) that is not a marker,
    /// and the offset of the marker.
    least: [u64; 3],
    marker: [u64; 3],
    /// Whether the last column is relative to the one before.
    relative: bool,
    /// Per column: where its offset starts in the packed integer (the index takes the bits
    /// below the last column's).
    shift: [u32; 3],
    index_bits: u32,
}

/// Values of the last two columns below this can be subtracted exactly in an `i64`.
const RELATIVE_LIMIT: u64 = 1 << 62;

impl Packing64 {
    /// The packing of `rows`' keys, if 64 bits hold them.
    fn of<R: Row>(rows: &[R]) -> Option<Self> {
        let (mut least, mut most) = ([u64::MAX; 4], [0u64; 4]);
        let mut wide = 0;
        for row in rows {
            let [a, b, c] = row.packed_key();
            // The fourth column: the last relative to the one before, offset by 2^63 so that
            // it orders as a signed difference.
            let relative = (c.wrapping_sub(b)) ^ (1 << 63);
            for (j, v) in [a, b, c, relative].into_iter().enumerate() {
                let v = if c == u64::MAX && j == 3 { u64::MAX } else { v };
                least[j] = least[j].min(v);
                most[j] = most[j].max(if v == u64::MAX { 0 } else { v });
            }
            wide |= if c == u64::MAX { b } else { b | c };
        }
        let bits = |n: u64| u64::BITS - n.leading_zeros();
        let least: [u64; 4] = std::array::from_fn(|j| least[j].min(most[j]));
        let marker: [u64; 4] = std::array::from_fn(|j| most[j] - least[j] + 1);
        let relative = wide < RELATIVE_LIMIT && marker[3] < marker[2];
        let last = if relative { 3 } else { 2 };
        let index_bits = bits(rows.len().saturating_sub(1) as u64);
        let [a, b, c] = [marker[0], marker[1], marker[last]].map(bits);
        (a + b + c + index_bits <= 64).then_some(Packing64 {
            least: [least[0], least[1], least[last]],
            marker: [marker[0], marker[1], marker[last]],
            relative,
            shift: [index_bits + c + b, index_bits + c, index_bits],
            index_bits,
        })
    }

    #[inline(always)]
    fn pack<R: Row>(&self, row: &R, index: usize) -> u64 {
        let [a, b, c] = row.packed_key();
        let last = match self.relative {
            true if c != u64::MAX => c.wrapping_sub(b) ^ (1 << 63),
            _ => c,
        };
        let offset = |j: usize, v: u64| match v {
            u64::MAX => self.marker[j],
            v => v - self.least[j],
        };
        let columns = [offset(0, a), offset(1, b), offset(2, last)];
        (0..3).fold(index as u64, |packed, j| {
            packed | columns[j] << self.shift[j]
        })
    }

    #[inline(always)]
    fn index(&self, packed: u64) -> usize {
        (packed & ((1u64 << self.index_bits) - 1)) as usize
    }
}

/// A key whose three columns fit 32 bits (`u64::MAX`, the marker of a trace without a
/// fall-through, counting as `2^32 - 1`, which no other column then holds), as 96 bits in key
/// order; `None` for any other key.
#[inline(always)]
fn key_96<R: Row>(row: &R) -> Option<u128> {
    let [a, b, c] = row.packed_key();
    let c = match c {
        u64::MAX => u64::from(u32::MAX),
        c if c < u64::from(u32::MAX) => c,
        _ => return None,
    };
    ((a | b) >> 32 == 0).then(|| u128::from(a) << 64 | u128::from(b) << 32 | u128::from(c))
}

/// Sorts `rows` by key, as `sort_unstable_by_key(Row::packed_key)` (keys are distinct).
///
/// Each key is packed with its row's index into one integer, those sort as plain integers, and
/// the rows are gathered in their order. A run of a key range spans few bits per column, so
/// 64 bits hold most runs ([`Packing64`]); otherwise keys of file offsets in a binary under
/// 4 GiB fit 96 bits, and a `u128` holds them. Sorting the 40-byte rows themselves by a
/// three-column key took a fifth of the merge; sorting `u64`s instead of `u128`s took the
/// merge of 1,000 partials from 0.81 to 0.75 s of CPU (PERF.md, fourteenth session).
fn sort_by_key<R: Row>(rows: &mut Vec<R>, scratch: &mut SortScratch<R>) {
    if let Some(packing) = Packing64::of(rows) {
        let order = &mut scratch.order_64;
        order.clear();
        order.extend(rows.iter().enumerate().map(|(i, r)| packing.pack(r, i)));
        return sort_by_order(rows, order, &mut scratch.sorted, |k| packing.index(k));
    }
    let order = &mut scratch.order;
    order.clear();
    for (i, row) in rows.iter().enumerate() {
        match (key_96(row), u32::try_from(i)) {
            (Some(key), Ok(i)) => order.push(key << 32 | u128::from(i)),
            _ => {
                rows.sort_unstable_by_key(|r| r.packed_key());
                return;
            }
        }
    }
    sort_by_order(rows, order, &mut scratch.sorted, |k| k as u32 as usize);
}

/// Sorts `order`, each row's key packed over its index (which `index` takes back out), and
/// puts `rows` in that order; `sorted` is the spare array swapped in.
#[inline(always)]
fn sort_by_order<R: Copy, K: Ord + Copy>(
    rows: &mut Vec<R>,
    order: &mut [K],
    sorted: &mut Vec<R>,
    index: impl Fn(K) -> usize,
) {
    order.sort_unstable();
    sorted.clear();
    sorted.extend(order.iter().map(|&k| rows[index(k)]));
    std::mem::swap(rows, sorted);
}

/// Where the key ranges that a merge sums one at a time end: each holds about `rows` rows of
/// all the parts together. The keys of a few parts stand for all ([`sampled_keys`]). The
/// parts' block starts end ranges too, so that whatever the data, a range holds at most a
/// block of each part plus about `rows` rows of blocks that start in it. The ends only change
/// how the work is cut, never the sums (a corrupt first key included).
fn range_ends<R: Row>(files: &[MergeInput], parts: &[(usize, usize)], rows: u64) -> Vec<[u64; 3]> {
    let blocks = |&(i, b): &(usize, usize)| files[i].index.binaries()[b].1.blocks(R::KIND);
    let mut starts: Vec<([u64; 2], u64)> = parts
        .iter()
        .flat_map(blocks)
        .map(|s| (s.first_key, s.rows))
        .collect();
    let total: u64 = starts.iter().map(|s| s.1).sum();
    starts.sort_unstable();
    let mut ends: Vec<[u64; 3]> = Vec::new();
    let mut held = 0u64;
    for ([a, b], block_rows) in starts {
        if held >= rows {
            ends.push([a, b, 0]);
            held = 0;
        }
        held = held.saturating_add(block_rows);
    }
    // A few parts spread over the list stand for all: every `stride`-th of their keys is
    // sampled, and every `step`-th of the sample, in key order, ends a range of about `rows`
    // rows of all the parts.
    const SAMPLED_PARTS: usize = 8;
    let n = parts.len().min(SAMPLED_PARTS);
    let sampled: Vec<&(usize, usize)> = (0..n).map(|k| &parts[k * parts.len() / n]).collect();
    let sampled_rows: u64 = sampled.iter().flat_map(|p| blocks(p)).map(|s| s.rows).sum();
    let per_range = u128::from(sampled_rows) * u128::from(rows.max(1)) / u128::from(total.max(1));
    let stride = (per_range / n.max(1) as u128).max(1) as u64;
    let step = (per_range / u128::from(stride)).max(1) as usize;
    let mut sample = Vec::new();
    for &&(i, b) in &sampled {
        sampled_keys::<R>(&files[i], blocks(&(i, b)), stride, &mut sample);
    }
    sample.sort_unstable();
    ends.extend(sample.into_iter().skip(step - 1).step_by(step));
    ends.sort_unstable();
    ends.dedup();
    ends
}

/// Appends every `step`-th key of the table whose blocks are `blocks` in `input`. A block that
/// cannot be read ends the sample early: the merge reports the error where it reads the rows.
fn sampled_keys<R: Row>(
    input: &MergeInput,
    blocks: &[Section],
    step: u64,
    keys: &mut Vec<[u64; 3]>,
) {
    let mut bytes = Vec::new();
    let mut n = 0u64;
    for s in blocks {
        let Ok(mut block) = input
            .read(s, &mut bytes)
            .map_err(drop)
            .and_then(|()| BlockCursor::<R>::new(&bytes, s).map_err(drop))
        else {
            return;
        };
        // The fast decoder (the merge's), not `next_row`'s checked one: this runs before the
        // merge's threads start.
        let sampled = block.rows_while(
            &bytes,
            |_| true,
            |row| {
                n += 1;
                if n.is_multiple_of(step) {
                    keys.push(row.packed_key());
                }
            },
        );
        if sampled.is_err() {
            return;
        }
    }
}

/// Asks the CPU to bring `items` into its cache (a hint: no effect on the results).
#[inline(always)]
fn prefetch<T>(items: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        let start = items.as_ptr().cast::<i8>();
        for offset in (0..std::mem::size_of_val(items)).step_by(64) {
            // SAFETY: a prefetch reads nothing architecturally and cannot fault, whatever the
            // address; SSE, which it needs, is part of the x86-64 baseline. The pointer stays
            // inside `items` anyway.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    start.wrapping_add(offset),
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = items;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::NoProgress;

    #[test]
    fn offsets_and_addresses_are_inverse_inside_segments() {
        let binary = BinaryInfo::from_segments(
            Path::new("app"),
            false,
            vec![
                Segment {
                    address: 0x0,
                    size: 0x6f8,
                    file_offset: 0,
                    align: 0x1000,
                    executable: false,
                },
                Segment {
                    address: 0x1000,
                    size: 0x1d5,
                    file_offset: 0x1000,
                    align: 0x1000,
                    executable: true,
                },
                Segment {
                    address: 0x3de8,
                    size: 0x248,
                    file_offset: 0x2de8,
                    align: 0x1000,
                    executable: false,
                },
            ],
        );
        let at = FileOffsets::of(&binary);
        for a in [0x1000, 0x1100, 0x11d4, 0x3de8, 0x3f00] {
            assert_eq!(at.address(at.offset(a)), a, "{a:#x}");
        }
        assert_eq!(at.offset(0x3f00), 0x2f00);
        assert_eq!(at.offset(0), 0);
        assert_eq!(at.offset(BR_ONLY), BR_ONLY);
        assert_eq!(at.offset(0x9999_0000), 0);
    }

    use proptest::prelude::*;

    fn profile(name: &str, rows: &[(u64, u64, u64, u64)]) -> StoredProfile {
        let traces = rows
            .iter()
            .map(|&(branch, from, to, count)| TraceRow {
                branch,
                from,
                to,
                count,
                mispreds: count / 3,
            })
            .collect();
        StoredProfile {
            meta: BinaryMeta {
                name: name.as_bytes().to_vec(),
                samples: 1,
                processes: 1,
                ..Default::default()
            },
            traces: sorted_summed(traces),
            ips: sorted_summed(
                rows.iter()
                    .map(|&(ip, _, _, count)| IpRow { ip, count })
                    .collect(),
            ),
            ..Default::default()
        }
    }

    /// Writes each partial as a store file; returns the paths.
    fn write_partials(dir: &Path, partials: &[Vec<StoredProfile>]) -> Vec<PathBuf> {
        partials
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let path = dir.join(format!("p{i}.pms"));
                let meta = StoreMeta {
                    captures: 1,
                    hosts: vec![format!("host{}", i % 3)],
                };
                write_store(&path, &meta, p.clone()).unwrap();
                path
            })
            .collect()
    }

    /// The merge's inputs: each path with its weight.
    fn weighted(inputs: &[(PathBuf, u64)]) -> Vec<WeightedInput> {
        inputs
            .iter()
            .map(|(path, weight)| WeightedInput {
                path: path.clone(),
                weight: *weight,
            })
            .collect()
    }

    fn merged(inputs: &[(PathBuf, u64)], out: &Path) -> Vec<u8> {
        let inputs = weighted(inputs);
        merge_stores(&inputs, out, &NoProgress).unwrap();
        std::fs::read(out).unwrap()
    }

    /// Merges `inputs` as a random binary tree of two-input merges; returns the root's path.
    fn merge_tree(d: &Path, inputs: &[(PathBuf, u64)], state: &mut u64, n: &mut u32) -> PathBuf {
        if let [(only, _)] = inputs {
            return only.clone();
        }
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        let split = 1 + (*state % (inputs.len() as u64 - 1)) as usize;
        let left = merge_tree(d, &inputs[..split], state, n);
        let right = merge_tree(d, &inputs[split..], state, n);
        *n += 1;
        let out = d.join(format!("tree{n}.pms"));
        merged(&[(right, 1), (left, 1)], &out);
        out
    }

    fn partial() -> impl Strategy<Value = Vec<StoredProfile>> {
        let rows = proptest::collection::vec((0u64..40, 0u64..40, 0u64..40, 1u64..100), 0..60);
        proptest::collection::vec(("[ab]", rows), 1..3).prop_map(|binaries| {
            binaries
                .into_iter()
                .map(|(name, rows)| profile(&name, &rows))
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Any order and any grouping of the same partials merge to the same bytes, and a
        /// weight equals repeating the input.
        #[test]
        fn merging_is_associative_commutative_and_weights_repeat(
            partials in proptest::collection::vec(partial(), 2..6),
            seed in any::<u64>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path();
            let paths = write_partials(d, &partials);
            let flat: Vec<(PathBuf, u64)> = paths.iter().map(|p| (p.clone(), 1)).collect();
            let reference = merged(&flat, &d.join("flat.pms"));
            // A shuffled order, merged as a random binary tree.
            let mut order = flat.clone();
            let mut state = seed | 1;
            for i in (1..order.len()).rev() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                order.swap(i, (state % (i as u64 + 1)) as usize);
            }
            let mut counter = 0;
            let tree = merge_tree(d, &order, &mut state, &mut counter);
            prop_assert_eq!(std::fs::read(&tree).unwrap(), reference);
            // Weight 3 equals the input three times.
            let thrice = vec![(paths[0].clone(), 1); 3];
            prop_assert_eq!(
                merged(&[(paths[0].clone(), 3)], &d.join("w.pms")),
                merged(&thrice, &d.join("x3.pms"))
            );
        }
    }

    /// The simplest merge, the reference for the fast one: every input read whole, its rows
    /// scaled, then all of them sorted and summed (`write_store`).
    fn reference_merge(inputs: &[(PathBuf, u64)], out: &Path) -> Vec<u8> {
        fn rows<R: Row>(store: &Store<'_>, binary: usize, weight: u64) -> Vec<R> {
            store
                .rows::<R>(binary)
                .map(|r| {
                    let mut r = r.unwrap();
                    r.scale_counts(weight);
                    r
                })
                .collect()
        }
        let mut meta = StoreMeta::default();
        let mut profiles = Vec::new();
        for (path, weight) in inputs {
            let file = StoreFile::open(path).unwrap();
            let store = file.store().unwrap();
            meta.captures += store.meta().captures * weight;
            meta.hosts.extend(store.meta().hosts.iter().cloned());
            for (b, (m, _)) in store.binaries().iter().enumerate() {
                profiles.push(StoredProfile {
                    meta: BinaryMeta {
                        samples: m.samples * weight,
                        processes: m.processes * weight,
                        ..m.clone()
                    },
                    traces: rows(&store, b, *weight),
                    ips: rows(&store, b, *weight),
                    mem: rows(&store, b, *weight),
                    returns: rows(&store, b, *weight),
                });
            }
        }
        meta.hosts.sort();
        meta.hosts.dedup();
        write_store(out, &meta, profiles).unwrap();
        std::fs::read(out).unwrap()
    }

    /// Merges with `tuning`; returns the output's bytes.
    fn merged_with(inputs: &[(PathBuf, u64)], out: &Path, tuning: MergeTuning) -> Vec<u8> {
        let inputs = weighted(inputs);
        merge_stores_with(&inputs, out, tuning, &NoProgress).unwrap();
        std::fs::read(out).unwrap()
    }

    /// A binary's profile with every table: keys from `rows`, clustered or spread.
    fn full_profile(name: &str, rows: &[(u64, u64, u64, u64)]) -> StoredProfile {
        let mut p = profile(name, rows);
        p.mem = sorted_summed(
            rows.iter()
                .map(|&(pc, addr, to, count)| MemRow {
                    pc,
                    addr,
                    // Both kinds, and sometimes both at one address.
                    in_binary: to % 2 == 1,
                    count,
                })
                .collect(),
        );
        p.returns = sorted_summed(
            rows.iter()
                .map(|&(_, _, addr, _)| ReturnRow { addr })
                .collect(),
        );
        p
    }

    /// Tunings at the extremes: three groups (a many-way merge of their runs) with a range at
    /// every block start and every input reopened for each block, two groups (a two-way
    /// merge), one group, and the default.
    fn tunings() -> [MergeTuning; 4] {
        [
            MergeTuning {
                range_rows: 0,
                open_files: 0,
                workers: 3,
            },
            // Two groups: a two-way merge of their runs.
            MergeTuning {
                range_rows: 1,
                open_files: usize::MAX,
                workers: 2,
            },
            MergeTuning {
                range_rows: 3,
                open_files: 1,
                workers: 1,
            },
            MergeTuning::default(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// The merge (key ranges, hash sums, two threads, blocks read one at a time) equals
        /// the reference merge byte for byte, whatever its tuning.
        #[test]
        fn the_merge_equals_the_reference_merge(
            partials in proptest::collection::vec(
                proptest::collection::vec(
                    (
                        "[abc]",
                        proptest::collection::vec(
                            (0u64..30, 0u64..30, 0u64..6, 1u64..u64::MAX / 4),
                            0..200,
                        ),
                    ),
                    1..3,
                ),
                1..7,
            ),
            weights in proptest::collection::vec(1u64..4, 7),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path();
            let partials: Vec<Vec<StoredProfile>> = partials
                .iter()
                .map(|p| p.iter().map(|(name, rows)| full_profile(name, rows)).collect())
                .collect();
            let paths = write_partials(d, &partials);
            let inputs: Vec<(PathBuf, u64)> =
                paths.iter().cloned().zip(weights.iter().copied()).collect();
            let reference = reference_merge(&inputs, &d.join("reference.pms"));
            for (n, tuning) in tunings().into_iter().enumerate() {
                let out = d.join(format!("t{n}.pms"));
                prop_assert_eq!(&merged_with(&inputs, &out, tuning), &reference, "{:?}", tuning);
            }
        }
    }

    /// What a merge reported to its progress.
    #[derive(Default)]
    struct Recorder(std::sync::Mutex<Vec<(&'static str, String, u64)>>);

    impl Progress for Recorder {
        fn phase(&self, name: &str) {
            self.0.lock().unwrap().push(("phase", name.to_string(), 0));
        }
        fn set_total(&self, bytes: u64) {
            self.0.lock().unwrap().push(("total", String::new(), bytes));
        }
        fn advance(&self, bytes: u64) {
            self.0
                .lock()
                .unwrap()
                .push(("advance", String::new(), bytes));
        }
        fn finish(&self) {
            self.0.lock().unwrap().push(("finish", String::new(), 0));
        }
    }

    /// The merge's progress: opening, then merging over the inputs' table blocks, each block
    /// reported once as it is read, whichever the tuning (several groups, inputs reopened for
    /// every block); then done.
    #[test]
    fn the_merge_reports_every_block_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut next = below(7);
        let partials: Vec<Vec<StoredProfile>> = (0..3)
            .map(|_| {
                ["a", "b"]
                    .iter()
                    .map(|name| full_profile(name, &random_rows(&mut next, 9_000, 5_000, 64, 9)))
                    .collect()
            })
            .collect();
        let paths = write_partials(d, &partials);
        let mut blocks = Vec::new();
        for path in &paths {
            let file = StoreFile::open(path).unwrap();
            let store = file.store().unwrap();
            for (_, layout) in store.binaries() {
                for kind in SectionKind::TABLES {
                    blocks.extend(layout.blocks(kind).iter().map(|b| b.length));
                }
            }
        }
        assert!(
            blocks.len() > 2 * paths.len() * 4,
            "{} blocks",
            blocks.len()
        );
        blocks.sort_unstable();
        let inputs = weighted(&paths.iter().map(|p| (p.clone(), 1)).collect::<Vec<_>>());
        for tuning in tunings() {
            let recorder = Recorder::default();
            let out = d.join("out.pms");
            merge_stores_with(&inputs, &out, tuning, &recorder).unwrap();
            let events = recorder.0.into_inner().unwrap();
            let phases: Vec<&str> = events
                .iter()
                .filter(|e| e.0 == "phase")
                .map(|e| e.1.as_str())
                .collect();
            assert_eq!(phases, ["opening", "merging"], "{tuning:?}");
            let total: Vec<u64> = events
                .iter()
                .filter(|e| e.0 == "total")
                .map(|e| e.2)
                .collect();
            assert_eq!(total, [blocks.iter().sum::<u64>()], "{tuning:?}");
            let mut read: Vec<u64> = events
                .iter()
                .filter(|e| e.0 == "advance")
                .map(|e| e.2)
                .collect();
            read.sort_unstable();
            assert_eq!(read, blocks, "{tuning:?}");
        }
        let recorder = Recorder::default();
        merge_stores(&inputs, &d.join("out.pms"), &recorder).unwrap();
        let events = recorder.0.into_inner().unwrap();
        assert_eq!(events.last().map(|e| e.0), Some("finish"));
        assert_eq!(events.iter().filter(|e| e.0 == "finish").count(), 1);
    }

    /// `n` rows of random keys for [`profile`]: the first two columns below `spread`, the third
    /// below `to_spread`, counts from 1 to `most`.
    fn random_rows(
        next: &mut impl FnMut(u64) -> u64,
        n: usize,
        spread: u64,
        to_spread: u64,
        most: u64,
    ) -> Vec<(u64, u64, u64, u64)> {
        (0..n)
            .map(|_| (next(spread), next(spread), next(to_spread), 1 + next(most)))
            .collect()
    }

    /// A deterministic xorshift stream from `seed`: each call gives a value below its argument.
    fn below(mut state: u64) -> impl FnMut(u64) -> u64 {
        move |m| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        }
    }

    /// Reading ahead asks for each input's start and index, within the file, once each, and
    /// for no more than its total however many inputs there are; files it cannot open or
    /// read are left to the merge.
    #[test]
    fn reading_ahead_asks_for_each_inputs_start_and_index() {
        for inputs in [0, 1, 1_000, 5_000, 1 << 20] {
            let each = read_ahead_each(inputs);
            assert!((INDEX_EDGE..=READ_AHEAD).contains(&each), "{inputs} inputs");
            let total = each * inputs as u64;
            assert!(total <= READ_AHEAD_TOTAL.max(INDEX_EDGE * inputs as u64));
        }
        let lens = [
            0,
            10,
            INDEX_EDGE - 1,
            INDEX_EDGE,
            INDEX_EDGE + 1,
            100_000,
            1 << 30,
        ];
        for len in lens {
            for each in [INDEX_EDGE, 64 << 10, READ_AHEAD] {
                let [head, tail] = read_ahead_ranges(len, each);
                assert_eq!(head.start, 0, "{len} {each}");
                assert!(head.end <= tail.start && tail.end == len, "{len} {each}");
                assert_eq!(head.end, each.min(len), "{len} {each}");
                // Every byte of the index's edge is asked for, by one range or the other.
                let edge = len.saturating_sub(INDEX_EDGE);
                assert!(tail.start <= edge.max(head.end), "{len} {each}");
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pms");
        let empty = dir.path().join("empty.pms");
        std::fs::write(&empty, b"").unwrap();
        let inputs = [missing, empty, dir.path().to_path_buf()]
            .map(|path| WeightedInput { path, weight: 1 });
        read_ahead(&inputs);
    }

    /// Reserving descriptors grows the process's table to hold them (as `/proc` reports its
    /// size) and leaves the descriptor made for it closed.
    #[cfg(target_os = "linux")]
    #[test]
    fn reserved_descriptors_fit_the_table() {
        let table_size = || {
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            let line = status.lines().find(|l| l.starts_with("FDSize:")).unwrap();
            line["FDSize:".len()..].trim().parse::<usize>().unwrap()
        };
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `getrlimit` writes into `limit`, which lives through the call.
        assert_eq!(
            unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) },
            0
        );
        let wanted = 3_000.min(limit.rlim_cur as usize - 1);
        reserve_descriptors(wanted);
        assert!(table_size() > wanted, "{} slots for {wanted}", table_size());
        // The descriptor made to grow the table is closed again: the next one made is below it.
        // SAFETY: duplicating standard error makes a descriptor that is closed right after.
        let next = unsafe { libc::fcntl(2, libc::F_DUPFD, wanted as libc::c_int) };
        assert_eq!(next, wanted as libc::c_int);
        // SAFETY: `next` was made above and nothing else knows of it.
        unsafe { libc::close(next) };
        // Asking past the limit, or past what a descriptor number holds, returns quietly.
        reserve_descriptors(usize::MAX);
    }

    /// Tables of many blocks, some inputs clustered on a few keys and others spread, merge as
    /// the reference does.
    #[test]
    fn multi_block_tables_merge_as_the_reference() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut next = below(0x2545_f491_4f6c_dd1du64);
        let partials: Vec<Vec<StoredProfile>> = (0..4)
            .map(|i| {
                let spread = if i % 2 == 0 { 100_000 } else { 300 };
                vec![full_profile(
                    "a",
                    &random_rows(&mut next, 12_000, spread, 4, 1000),
                )]
            })
            .collect();
        let paths = write_partials(d, &partials);
        let inputs: Vec<(PathBuf, u64)> = paths.iter().map(|p| (p.clone(), 2)).collect();
        let reference = reference_merge(&inputs, &d.join("reference.pms"));
        let file = StoreFile::open(&paths[0]).unwrap();
        assert!(
            file.store().unwrap().binaries()[0]
                .1
                .blocks(TraceRow::KIND)
                .len()
                > 1
        );
        for (n, tuning) in tunings().into_iter().enumerate() {
            let out = d.join(format!("t{n}.pms"));
            assert_eq!(merged_with(&inputs, &out, tuning), reference, "{tuning:?}");
        }
    }

    /// A failing output or a corrupt input stops every group, whatever the tuning: the merge
    /// returns the error and writes nothing. (A hang here would be a group waiting for runs
    /// or run buffers that never come.)
    #[test]
    fn failures_stop_every_group() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut next = below(0x1234_5678_9abc_def1);
        let partials: Vec<Vec<StoredProfile>> = (0..6)
            .map(|_| {
                vec![profile(
                    "a",
                    &random_rows(&mut next, 12_000, 100_000, 4, 1000),
                )]
            })
            .collect();
        let paths = write_partials(d, &partials);
        // A flipped bit in the middle block of the last input.
        let corrupt = d.join("corrupt.pms");
        let mut bytes = std::fs::read(&paths[5]).unwrap();
        let file = StoreFile::open(&paths[5]).unwrap();
        let blocks = file.store().unwrap().binaries()[0]
            .1
            .blocks(TraceRow::KIND)
            .to_vec();
        assert!(blocks.len() > 2);
        let s = blocks[blocks.len() / 2];
        bytes[(s.offset + s.length / 2) as usize] ^= 0x40;
        std::fs::write(&corrupt, bytes).unwrap();
        let good: Vec<(PathBuf, u64)> = paths.iter().map(|p| (p.clone(), 1)).collect();
        let mut bad = good.clone();
        bad[5].0 = corrupt.clone();
        for tuning in tunings() {
            let out = d.join("out.pms");
            let e = merge_stores_with(&weighted(&bad), &out, tuning, &NoProgress).unwrap_err();
            assert!(
                matches!(&e, Error::Store { path, .. } if path == &corrupt),
                "{tuning:?}: {e}"
            );
            assert!(!out.exists(), "{tuning:?}");
            // Every write to /dev/full fails; the output (885 KB) fails while groups run, past
            // the first 64 KB buffered.
            #[cfg(target_os = "linux")]
            {
                let full = Path::new("/dev/full");
                let e = merge_stores_with(&weighted(&good), full, tuning, &NoProgress).unwrap_err();
                assert!(matches!(e, Error::Io { .. }), "{tuning:?}: {e}");
            }
        }
    }

    /// The merge's key ranges hold about the rows asked for where the sampled inputs' keys
    /// stand for the others, and no more than the documented bound anywhere (two inputs have
    /// keys far from the rest).
    #[test]
    fn key_ranges_hold_about_the_rows_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let mut next = below(0x9e37_79b9_7f4a_7c15u64);
        const FAR: u64 = 1 << 40;
        let partials: Vec<Vec<StoredProfile>> = (0..10)
            .map(|i| {
                let base = if i < 8 { 0 } else { FAR };
                let rows: Vec<_> = (0..10_000)
                    .map(|_| (base + next(1 << 20), next(1 << 20), next(4), 1))
                    .collect();
                vec![profile("a", &rows)]
            })
            .collect();
        let paths = write_partials(dir.path(), &partials);
        let inputs = weighted(&paths.iter().map(|p| (p.clone(), 1)).collect::<Vec<_>>());
        let files = open_inputs(&inputs, usize::MAX).unwrap();
        let parts: Vec<(usize, usize)> = (0..files.len()).map(|i| (i, 0)).collect();
        const ROWS: u64 = 5_000;
        let ends = range_ends::<TraceRow>(&files, &parts, ROWS);
        assert!(ends.windows(2).all(|w| w[0] < w[1]), "ends not increasing");
        let mut held = vec![0u64; ends.len() + 1];
        for p in &partials {
            for row in &p[0].traces {
                held[ends.partition_point(|e| *e <= row.packed_key())] += 1;
            }
        }
        let total: u64 = held.iter().sum();
        let bound = parts.len() as u64 * formats::store::ROWS_PER_BLOCK as u64
            + ROWS
            + formats::store::ROWS_PER_BLOCK as u64;
        assert!(held.iter().all(|&h| h <= bound), "{held:?}");
        // The inputs alike: ranges of about ROWS rows.
        let near = ends.partition_point(|e| e[0] < FAR);
        let alike = &held[..near];
        let largest = alike.iter().max().unwrap();
        assert!(*largest <= 2 * ROWS, "{alike:?}");
        assert!(alike.len() as u64 >= 80_000 / (2 * ROWS), "{alike:?}");
        assert_eq!(
            total,
            partials.iter().map(|p| p[0].traces.len() as u64).sum()
        );
    }

    /// Memory rows that differ only in the in-binary flag are different keys: a merge keeps
    /// both, and sums each with its own kind.
    #[test]
    fn memory_rows_keep_their_in_binary_flag_through_a_merge() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let with_mem = |flags: &[bool]| {
            let mut p = profile("a", &[(1, 2, 3, 1)]);
            p.mem = flags
                .iter()
                .map(|&in_binary| MemRow {
                    pc: 0x40,
                    addr: 0x1000,
                    in_binary,
                    count: 1 + u64::from(in_binary),
                })
                .collect();
            p
        };
        let paths = write_partials(
            d,
            &[vec![with_mem(&[false, true])], vec![with_mem(&[true])]],
        );
        let inputs: Vec<(PathBuf, u64)> = paths.iter().map(|p| (p.clone(), 1)).collect();
        merged(&inputs, &d.join("sum.pms"));
        let file = StoreFile::open(&d.join("sum.pms")).unwrap();
        let rows: Vec<MemRow> = file
            .store()
            .unwrap()
            .rows(0)
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        let flags_and_counts: Vec<(bool, u64)> =
            rows.iter().map(|r| (r.in_binary, r.count)).collect();
        assert_eq!(flags_and_counts, [(false, 1), (true, 4)]);
    }

    #[test]
    fn counts_past_two_to_the_64_saturate_and_say_so() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let big = profile("a", &[(1, 2, 3, u64::MAX - 1)]);
        let small = profile("a", &[(1, 2, 3, 5)]);
        let paths = write_partials(d, &[vec![big], vec![small]]);
        let out = d.join("sum.pms");
        let inputs = weighted(&paths.iter().map(|p| (p.clone(), 1)).collect::<Vec<_>>());
        // Summed where the groups' runs meet (two groups) and in a group's table (one).
        for workers in [2, 1] {
            let tuning = MergeTuning {
                workers,
                ..MergeTuning::default()
            };
            let report = merge_stores_with(&inputs, &out, tuning, &NoProgress).unwrap();
            assert!(report.saturated, "{workers} workers");
            let file = StoreFile::open(&out).unwrap();
            let store = file.store().unwrap();
            let rows: Vec<TraceRow> = store
                .rows(0)
                .collect::<std::result::Result<_, _>>()
                .unwrap();
            assert_eq!(rows[0].count, u64::MAX, "{workers} workers");
        }
    }

    /// The key before a key is the greatest one below it: over every pair of keys with
    /// columns at the edges of their range, `x < k` exactly when `x <= key_before(k)`.
    #[test]
    fn the_key_before_is_the_greatest_below() {
        let values = [0, 1, 2, u64::MAX - 1, u64::MAX];
        let keys: Vec<[u64; 3]> = values
            .iter()
            .flat_map(|&a| values.iter().flat_map(move |&b| values.map(|c| [a, b, c])))
            .collect();
        for &k in &keys {
            let before = key_before(k);
            for &x in &keys {
                assert_eq!(x < k, before.is_some_and(|b| x <= b), "{x:?} {k:?}");
            }
        }
        assert_eq!(key_before([0, 0, 0]), None);
        assert_eq!(key_before([7, 0, 0]), Some([6, u64::MAX, u64::MAX]));
    }

    /// The packing of a run's keys into 64 bits: plain columns where they are narrow, the last
    /// relative to the one before where that is narrower, none where neither fits.
    #[test]
    fn keys_pack_in_64_bits_where_their_spans_fit() {
        let trace = |branch, from, to| TraceRow {
            branch,
            from,
            to,
            count: 1,
            mispreds: 0,
        };
        // Starts spread over 2^40 bytes, ends 2 bytes on: 64 bits hold them only relative.
        let spread = [
            trace(1, 0, 2),
            trace(1, 1 << 40, (1 << 40) + 2),
            trace(2, 5, u64::MAX),
        ];
        let packing = Packing64::of(&spread).unwrap();
        assert!(packing.relative);
        // Ends far from their starts but close together: plain.
        let plain = [trace(1, 0, 1 << 30), trace(1, 1 << 20, (1 << 30) + 1)];
        assert!(!Packing64::of(&plain).unwrap().relative);
        // Columns of 40 bits each: neither way.
        let wide = [trace(0, 0, 0), trace(1 << 40, 1 << 40, 1)];
        assert!(Packing64::of(&wide).is_none());
        // Past the relative limit, a far end is taken as it is, and then does not fit.
        let far = [
            trace(1, 0, 2),
            trace(1, RELATIVE_LIMIT << 1, (RELATIVE_LIMIT << 1) + 2),
        ];
        assert!(Packing64::of(&far).is_none());
    }

    /// Keys that differ in one column only, by steps of 1 to 4,096 (as instruction offsets
    /// do), spread over the home slots about as random ones would (8,192 slots for 4,096 keys:
    /// about 3,220 distinct home slots expected; 3,040–3,401 here). Home slots from the
    /// products' low bits give 512 for steps of 16 and 2 for steps of 4,096; from their middle
    /// bits without the fold, 1,779 for the second column in steps of 1.
    #[test]
    fn keys_spread_over_the_home_slots() {
        let mask = (1 << 13) - 1;
        for column in 0..3 {
            for step in [1, 16, 64, 4096] {
                let homes: std::collections::HashSet<usize> = (0..1 << 12)
                    .map(|k: u64| {
                        let mut key = [0x40_1000, 0x40_2000, 0x40_2040];
                        key[column] += k * step;
                        home_slot(key_hash(key), mask)
                    })
                    .collect();
                assert!(
                    homes.len() > 2_900,
                    "column {column}, step {step}: {}",
                    homes.len()
                );
            }
        }
    }

    /// Clearing the sums for the next range forgets the rows before, through the table's
    /// growth and the generations' wrap (where the slots are cleared for real): a range of
    /// the same generation number as one before sums the same keys, whose old slots the
    /// ranges between (one key each) mostly leave in place, to be mistaken for its own.
    #[test]
    fn cleared_sums_forget_the_ranges_before() {
        let mut sums = Sums::<TraceRow>::with_capacity(0);
        for range in 0..3 * GENERATIONS {
            let keys = match range {
                1 => 1000..1700,
                r if r % GENERATIONS == 10 => 0..10,
                r => 10 + r..11 + r,
            };
            let row = |k: u64| TraceRow {
                branch: k % 5,
                from: k,
                to: 1,
                count: range + 1,
                mispreds: 0,
            };
            for k in keys.clone().chain(keys.clone()) {
                sums.add(row(k));
            }
            assert!(!sums.saturated);
            assert_eq!(
                sums.rows.len() as u64,
                keys.end - keys.start,
                "range {range}"
            );
            assert!(
                sums.rows.iter().all(|r| r.count == 2 * (range + 1)),
                "range {range}"
            );
            sums.clear();
        }
    }

    proptest! {
        /// The merge's hash sums equal a map's, through the table's growth and a clear; so does
        /// the saturation they report.
        #[test]
        fn the_sums_equal_a_maps_sums(
            batches in proptest::collection::vec(
                proptest::collection::vec(
                    (
                        0u64..5,
                        0u64..300,
                        prop_oneof![0u64..3, Just(u64::MAX)],
                        prop_oneof![0u64..9, Just(u64::MAX - 3)],
                    ),
                    0..2500,
                ),
                1..3,
            ),
        ) {
            let mut sums = Sums::<TraceRow>::with_capacity(0);
            for batch in batches {
                let mut expected = std::collections::BTreeMap::new();
                let mut expected_saturated = false;
                for &(branch, from, to, count) in &batch {
                    let row = TraceRow { branch, from, to, count, mispreds: count / 2 };
                    sums.add(row);
                    match expected.entry(row.packed_key()) {
                        std::collections::btree_map::Entry::Vacant(e) => {
                            e.insert(row);
                        }
                        std::collections::btree_map::Entry::Occupied(mut e) => {
                            expected_saturated |= !e.get_mut().add_counts(&row);
                        }
                    }
                }
                let saturated = std::mem::take(&mut sums.saturated);
                let mut got = sums.rows.clone();
                got.sort_unstable_by_key(|r| r.packed_key());
                prop_assert_eq!(got, expected.into_values().collect::<Vec<_>>());
                prop_assert_eq!(saturated, expected_saturated);
                sums.clear();
            }
        }

        /// The merge's run sort orders as the comparison sort by key, whether the leading
        /// columns fit 32 bits (one `u128` comparison) or not.
        #[test]
        fn the_run_sort_orders_as_the_comparison_sort(
            keys in proptest::collection::vec(
                // Leading columns from a few values, so that rows share them and the later
                // columns decide.
                (
                    prop_oneof![0u64..4, Just(u32::MAX.into()), Just(1 << 40 | 3)],
                    prop_oneof![0u64..4, Just(u32::MAX.into()), Just(u64::MAX)],
                    prop_oneof![
                        any::<u64>(),
                        0u64..4,
                        Just(u64::MAX),
                        Just(u32::MAX.into()),
                        Just(u64::from(u32::MAX) - 1),
                    ],
                ),
                0..200,
            ),
            narrow in 0..3u8,
        ) {
            // 0: keys as drawn (wide ones among them); 1: leading columns of 32 bits; 2: every
            // column of 32 bits or the marker `u64::MAX` (the packed sort, unless a `2^32 - 1`
            // is drawn, which the marker stands for).
            let narrowed = |(branch, from, to): (u64, u64, u64)| match narrow {
                0 => (branch, from, to),
                1 => (branch & 0xffff_ffff, from & 0xffff_ffff, to),
                _ => {
                    let kept = to == u64::MAX || to == u64::from(u32::MAX);
                    let to = if kept { to } else { to % u64::from(u32::MAX) };
                    (branch & 0xffff_ffff, from & 0xffff_ffff, to)
                }
            };
            let mut rows: Vec<TraceRow> = keys
                .iter()
                .map(|&key| {
                    let (branch, from, to) = narrowed(key);
                    TraceRow { branch, from, to, count: branch ^ to, mispreds: from }
                })
                .collect();
            rows.sort_unstable_by_key(|r| r.packed_key());
            rows.dedup_by_key(|r| r.packed_key());
            let expected = rows.clone();
            rows.reverse();
            let third = rows.len() / 3;
            rows.rotate_left(third);
            sort_by_key(&mut rows, &mut SortScratch::default());
            prop_assert_eq!(rows, expected);
        }

        /// Keys packed into 64 bits, where they fit, order as the keys do and give their
        /// rows' indices back: near and far fall-through ends (the relative last column and
        /// the plain one), markers, and values at the limit of the relative column.
        #[test]
        fn keys_packed_in_64_bits_order_as_the_keys(
            keys in proptest::collection::vec(
                (
                    prop_oneof![8 => 0u64..8, 1 => Just(u64::MAX)],
                    prop_oneof![
                        8 => 0u64..1 << 20,
                        1 => Just(u64::MAX),
                        1 => (RELATIVE_LIMIT - 3)..(RELATIVE_LIMIT + 3),
                    ],
                    prop_oneof![8 => -4i64..4, 1 => Just(i64::MAX), 1 => -(1i64 << 30)..1 << 30],
                ),
                1..300,
            ),
            base in prop_oneof![Just(0u64), any::<u64>()],
            // Most cases without the values that make a column wide, so that they pack.
            narrow in any::<bool>(),
        ) {
            let keys = keys.into_iter().map(|(branch, from, end)| match narrow {
                true => (branch, from % (1 << 20), if end == i64::MAX { end } else { end % 4 }),
                false => (branch, from, end),
            });
            let mut rows: Vec<TraceRow> = keys
                .map(|(branch, from, end)| {
                    let to = match end {
                        i64::MAX => u64::MAX,
                        d => from.wrapping_add_signed(d),
                    };
                    let branch = if branch == u64::MAX { branch } else { base.wrapping_add(branch) };
                    TraceRow { branch, from, to, count: 1, mispreds: 0 }
                })
                .collect();
            rows.sort_unstable_by_key(|r| r.packed_key());
            rows.dedup_by_key(|r| r.packed_key());
            rows.reverse();
            if let Some(packing) = Packing64::of(&rows) {
                let packed: Vec<u64> =
                    rows.iter().enumerate().map(|(i, r)| packing.pack(r, i)).collect();
                for (i, &p) in packed.iter().enumerate() {
                    prop_assert_eq!(packing.index(p), i);
                }
                let mut by_packed: Vec<usize> = (0..rows.len()).collect();
                by_packed.sort_by_key(|&i| packed[i]);
                let mut by_key: Vec<usize> = (0..rows.len()).collect();
                by_key.sort_by_key(|&i| rows[i].packed_key());
                prop_assert_eq!(by_packed, by_key);
            }
        }

        /// A stored profile's traces sorted by start or by branch as a comparison sort orders
        /// them: from the store's order (sorted by branch: the stable sort on the start alone,
        /// unless a start passes 32 bits), and from any other.
        #[test]
        fn traces_sort_as_the_comparison_sort(
            keys in proptest::collection::vec(
                (
                    0u64..6,
                    prop_oneof![0u64..6, Just(u32::MAX.into()), Just(1 << 40 | 3)],
                    prop_oneof![0u64..4, Just(u64::MAX)],
                ),
                0..200,
            ),
            in_store_order in any::<bool>(),
            by_start in any::<bool>(),
        ) {
            let mut traces: Traces = keys
                .into_iter()
                .map(|k| (k, Counts { taken: k.0 ^ k.2, mispred: k.1 }))
                .collect();
            traces.sort_unstable_by_key(|t| t.0);
            traces.dedup_by_key(|t| t.0);
            let mut expected = traces.clone();
            let order = match by_start {
                true => {
                    expected.sort_by_key(|&((b, f, t), _)| (f, b, t));
                    TraceOrder::ByStart
                }
                false => TraceOrder::ByBranch,
            };
            if !in_store_order {
                traces.reverse();
            }
            sort_traces(&mut traces, order);
            prop_assert_eq!(traces, expected);
        }
    }
}
