//! Aggregated profiles in the profile store (`formats::store`): a binary's profile converted to
//! its file-offset space and back, stores written and merged, a binary's profile picked out of
//! a store for export.
//!
//! File offsets need no ELF at the host that writes them and are the same for every process
//! and load address; export turns them into the binary's addresses through its `PT_LOAD`
//! segments, the inverse of the conversion here, so a profile goes through a store unchanged.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};

use formats::bolt::preagg::BR_ONLY;
use formats::store::{
    BinaryMeta, IpRow, MemRow, ReturnRow, Row, Store, StoreError, StoreMeta, StoreWriter, TraceRow,
};

use crate::error::{io_error, Error, Result};
use crate::io::inputs::WeightedInput;
use crate::io::output::write_atomically;
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
fn sorted_summed<R: Row>(mut rows: Vec<R>) -> Vec<R> {
    rows.sort_unstable_by(|a, b| a.key_cmp(b));
    let mut out: Vec<R> = Vec::with_capacity(rows.len());
    for r in rows {
        match out.last_mut() {
            Some(last) if last.key_cmp(&r) == Ordering::Equal => {
                last.add_counts(&r);
            }
            _ => out.push(r),
        }
    }
    out
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
    write_atomically(path, |out| {
        let mut w = StoreWriter::new(out)?;
        w.meta(meta)?;
        for p in &merged {
            let b = w.binary(&p.meta)?;
            write_table(&mut w, b, &p.traces)?;
            write_table(&mut w, b, &p.ips)?;
            write_table(&mut w, b, &p.mem)?;
            write_table(&mut w, b, &p.returns)?;
        }
        w.finish().map(drop)
    })
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
        Ok(binary_profile(&self.stored(index)?, binary, order))
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

    fn rows_of<R: Row>(&self, store: &Store<'_>, index: usize) -> Result<Vec<R>> {
        store
            .rows::<R>(index)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| self.error(e))
    }
}

/// `stored` in `binary`'s addresses (the inverse of [`stored_profile`]), traces in `order`.
pub fn binary_profile(
    stored: &StoredProfile,
    binary: &BinaryInfo,
    order: TraceOrder,
) -> BinaryProfile {
    let at = FileOffsets::of(binary);
    let mut traces: Vec<_> = stored
        .traces
        .iter()
        .map(|r| {
            let key = (at.address(r.branch), at.address(r.from), at.address(r.to));
            let counts = Counts {
                taken: r.count,
                mispred: r.mispreds,
            };
            (key, counts)
        })
        .collect();
    let sort_key = |k: &(u64, u64, u64)| match order {
        TraceOrder::ByBranch => (k.0, k.1, k.2),
        TraceOrder::ByStart => (k.1, k.0, k.2),
    };
    traces.sort_unstable_by_key(|t| sort_key(&t.0));
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
        events: stored.meta.events.clone(),
        ips,
        returns: stored.returns.iter().map(|r| at.address(r.addr)).collect(),
        mem: stored_mem(stored, binary),
        samples: stored.meta.samples,
        pids: stored.meta.processes as usize,
    }
}

/// What a merge found worth saying.
#[derive(Clone, Debug, Default)]
pub struct MergeReport {
    /// Binaries in the result.
    pub binaries: usize,
    /// Counts that passed 2^64 and were saturated.
    pub saturated: bool,
}

/// One input's rows of one table, scaled by the input's weight.
struct Cursor<'a, R: Row> {
    rows: formats::store::TableRows<'a, R>,
    weight: u64,
    input: usize,
}

impl<R: Row> Cursor<'_, R> {
    /// The next row, its counts scaled; records a saturation in `saturated`.
    #[inline]
    fn next(&mut self, saturated: &mut bool) -> std::result::Result<Option<R>, TableError> {
        match self.rows.next_row() {
            Ok(None) => Ok(None),
            Err(e) => Err(TableError::Store(self.input, e)),
            Ok(Some(mut row)) => {
                if self.weight != 1 {
                    *saturated |= !row.scale_counts(self.weight);
                }
                Ok(Some(row))
            }
        }
    }
}

/// A cursor's current row, ordered for a min-heap by key, then input.
struct Head<R: Row> {
    row: R,
    input: usize,
}

impl<R: Row> PartialEq for Head<R> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl<R: Row> Eq for Head<R> {}
impl<R: Row> PartialOrd for Head<R> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<R: Row> Ord for Head<R> {
    fn cmp(&self, o: &Self) -> Ordering {
        o.row.key_cmp(&self.row).then(o.input.cmp(&self.input))
    }
}

/// Merges stores: every binary of every input, counts multiplied by the input's weight and
/// summed (saturating at 2^64 − 1). A k-way merge that decodes one row per input at a time and
/// never builds the merged tables in memory; the inputs themselves are read whole (small files)
/// or mapped, so resident memory still includes their bytes (132 MB peak for 1,000 partials of
/// 98 MB). The output depends only on the sum: any order or grouping of the same inputs gives
/// the same bytes.
pub fn merge_stores(inputs: &[WeightedInput], output: &Path) -> Result<MergeReport> {
    let files = inputs
        .iter()
        .map(|i| StoreFile::open(&i.path))
        .collect::<Result<Vec<_>>>()?;
    let stores = files
        .iter()
        .map(StoreFile::store)
        .collect::<Result<Vec<_>>>()?;
    let mut meta = StoreMeta::default();
    for (s, input) in stores.iter().zip(inputs) {
        meta.captures = meta
            .captures
            .saturating_add(s.meta().captures.saturating_mul(input.weight.max(1)));
        meta.hosts.extend(s.meta().hosts.iter().cloned());
    }
    meta.hosts.sort();
    meta.hosts.dedup();
    // Every binary of every input, in identity order: (meta, [(input, index in that input)]).
    let mut binaries: Vec<(BinaryMeta, Vec<(usize, usize)>)> = Vec::new();
    let mut all: Vec<(BinaryMeta, usize, usize)> = Vec::new();
    for (i, s) in stores.iter().enumerate() {
        for (b, (m, _)) in s.binaries().iter().enumerate() {
            let mut m = m.clone();
            // A weight stands for that many copies of the input: its summary counts scale too.
            let weight = inputs[i].weight.max(1);
            m.samples = m.samples.saturating_mul(weight);
            m.processes = m.processes.saturating_mul(weight);
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
    let error = |i: usize| {
        let path = inputs[i].path.clone();
        move |e| Error::Store { path, source: e }
    };
    let mut failure: Option<Error> = None;
    write_atomically(output, |out| {
        let mut w = StoreWriter::new(out)?;
        w.meta(&meta)?;
        for (m, parts) in &binaries {
            let b = w.binary(m)?;
            let r = merge_table::<_, TraceRow>(&mut w, b, &stores, inputs, parts)
                .and_then(|s| Ok(s | merge_table::<_, IpRow>(&mut w, b, &stores, inputs, parts)?))
                .and_then(|s| Ok(s | merge_table::<_, MemRow>(&mut w, b, &stores, inputs, parts)?))
                .and_then(|s| {
                    Ok(s | merge_table::<_, ReturnRow>(&mut w, b, &stores, inputs, parts)?)
                });
            match r {
                Ok(saturated) => report.saturated |= saturated,
                Err(TableError::Io(e)) => return Err(e),
                Err(TableError::Store(i, e)) => {
                    failure = Some(error(i)(e));
                    return Err(std::io::Error::other("a store input is corrupt"));
                }
            }
        }
        w.finish().map(drop)
    })
    .map_err(|e| failure.take().unwrap_or(e))?;
    Ok(report)
}

enum TableError {
    Io(std::io::Error),
    Store(usize, StoreError),
}

impl From<std::io::Error> for TableError {
    fn from(e: std::io::Error) -> Self {
        TableError::Io(e)
    }
}

/// Merges one table of one binary from its `parts`; returns whether a count saturated.
fn merge_table<W: std::io::Write, R: Row + 'static>(
    w: &mut StoreWriter<W>,
    binary: u32,
    stores: &[Store<'_>],
    inputs: &[WeightedInput],
    parts: &[(usize, usize)],
) -> std::result::Result<bool, TableError> {
    let mut cursors: Vec<Cursor<'_, R>> = parts
        .iter()
        .map(|&(i, b)| Cursor {
            rows: stores[i].rows::<R>(b),
            weight: inputs[i].weight.max(1),
            input: i,
        })
        .collect();
    let mut saturated = false;
    let mut heap = BinaryHeap::with_capacity(cursors.len());
    for (k, c) in cursors.iter_mut().enumerate() {
        if let Some(row) = c.next(&mut saturated)? {
            heap.push(Head { row, input: k });
        }
    }
    if heap.is_empty() {
        return Ok(saturated);
    }
    let mut table = w.table::<R>(binary)?;
    let mut pending: Option<R> = None;
    // The smallest row is taken from the top and replaced there by its input's next row: one
    // sift instead of a pop and a push.
    while let Some(mut top) = heap.peek_mut() {
        let row = top.row;
        match &mut pending {
            Some(p) if p.key_cmp(&row) == Ordering::Equal => saturated |= !p.add_counts(&row),
            _ => {
                if let Some(p) = pending.replace(row) {
                    table.push(&p)?;
                }
            }
        }
        match cursors[top.input].next(&mut saturated)? {
            Some(next) => top.row = next,
            None => {
                std::collections::binary_heap::PeekMut::pop(top);
            }
        }
    }
    if let Some(p) = pending {
        table.push(&p)?;
    }
    table.finish()?;
    Ok(saturated)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn merged(inputs: &[(PathBuf, u64)], out: &Path) -> Vec<u8> {
        let inputs: Vec<WeightedInput> = inputs
            .iter()
            .map(|(path, weight)| WeightedInput {
                path: path.clone(),
                weight: *weight,
            })
            .collect();
        merge_stores(&inputs, out).unwrap();
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

    #[test]
    fn counts_past_two_to_the_64_saturate_and_say_so() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let big = profile("a", &[(1, 2, 3, u64::MAX - 1)]);
        let small = profile("a", &[(1, 2, 3, 5)]);
        let paths = write_partials(d, &[vec![big], vec![small]]);
        let out = d.join("sum.pms");
        let inputs: Vec<WeightedInput> = paths
            .iter()
            .map(|p| WeightedInput {
                path: p.clone(),
                weight: 1,
            })
            .collect();
        let report = merge_stores(&inputs, &out).unwrap();
        assert!(report.saturated);
        let file = StoreFile::open(&out).unwrap();
        let store = file.store().unwrap();
        let rows: Vec<TraceRow> = store
            .rows(0)
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        assert_eq!(rows[0].count, u64::MAX);
    }
}
