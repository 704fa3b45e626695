//! The merged profile: `InstrProfWriter`'s state and its record-merging rules
//! (`InstrProfWriter::addRecord`, `InstrProfRecord::merge` / `scale`, InstrProf.cpp).

use hashbrown::HashMap;

use formats::instrprof::indexed::writer::{write_indexed, IndexedProfile, NameEntry};
use formats::instrprof::names::Symtab;
use formats::instrprof::record::{MAX_VALUES_PER_SITE, NUM_VALUE_KINDS};
use formats::instrprof::text::write_text;
use formats::instrprof::{ProfileKind, Record, TemporalTraces, ValueSite};

use super::hash_order::HashOrder;
use super::temporal::TraceReservoir;

/// The largest count LLVM stores: −1 and −2 are pseudo counts (hot / warm).
pub const MAX_COUNT: u64 = u64::MAX - 2;
const PSEUDO_HOT: u64 = u64::MAX;
const PSEUDO_WARM: u64 = u64::MAX - 1;

/// `instrprof_error`s that merging can warn about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MergeWarning {
    /// The records' counter counts differ (the same function from different binaries).
    CountMismatch,
    /// A weighted sum exceeded [`MAX_COUNT`] and was saturated.
    CounterOverflow,
    /// The records' MC/DC bitmap sizes differ.
    BitmapMismatch,
    /// The records' value-site counts differ.
    ValueSiteCountMismatch,
}

impl MergeWarning {
    /// The message llvm-profdata prints for this warning.
    pub fn message(self) -> &'static str {
        match self {
            MergeWarning::CountMismatch => {
                "function basic block count change detected (counter mismatch)"
            }
            MergeWarning::CounterOverflow => "counter overflow",
            MergeWarning::BitmapMismatch => {
                "function bitmap size change detected (bitmap size mismatch)"
            }
            MergeWarning::ValueSiteCountMismatch => {
                "function value site count change detected (counter mismatch)"
            }
        }
    }

    /// The hint llvm-profdata prints after some of them.
    pub fn hint(self) -> Option<&'static str> {
        matches!(
            self,
            MergeWarning::CountMismatch | MergeWarning::ValueSiteCountMismatch
        )
        .then_some(
            "Make sure that all profile data to be merged is generated from the same binary.",
        )
    }
}

/// The kinds cannot be merged (LLVM's `mergeProfileKind` error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KindConflict(pub(crate) &'static str);

/// An instrumentation profile being merged: LLVM's `InstrProfWriter`, with its hash-map
/// orders simulated so that the output is byte-identical to llvm-profdata's. Obtained from
/// [`merge`](crate::instrprof::merge); written as indexed or text profile.
#[derive(Clone, Debug, Default)]
pub struct ProfileWriter {
    pub(crate) kind: ProfileKind,
    /// Name → index into `entries`.
    index: HashMap<Box<[u8]>, u32>,
    /// Each function name with its records (LLVM's `StringMap<SmallDenseMap<hash, record>>`).
    entries: Vec<(Box<[u8]>, HashOrder)>,
    pub(crate) binary_ids: Vec<Vec<u8>>,
    pub(crate) temporal: TraceReservoir,
    /// `--keep-vtable-symbols`: distinct vtable names in insertion order (LLVM's `StringSet`,
    /// whose order is simulated when written).
    vtable_names: Vec<Box<[u8]>>,
    vtable_name_set: hashbrown::HashSet<Box<[u8]>>,
}

fn saturating_mul_add(x: u64, w: u64, acc: u64, overflow: &mut bool) -> u64 {
    match x.checked_mul(w).and_then(|p| p.checked_add(acc)) {
        Some(v) => v,
        None => {
            *overflow = true;
            u64::MAX
        }
    }
}

fn clamp(v: u64, overflow: &mut bool) -> u64 {
    if v > MAX_COUNT {
        *overflow = true;
        MAX_COUNT
    } else {
        v
    }
}

impl ProfileWriter {
    /// `InstrProfWriter::mergeProfileKind`.
    pub(crate) fn merge_kind(&mut self, other: ProfileKind) -> Result<(), KindConflict> {
        if self.kind == ProfileKind::UNKNOWN {
            self.kind = other;
            return Ok(());
        }
        if self.kind.has(ProfileKind::FRONTEND) != other.has(ProfileKind::FRONTEND) {
            return Err(KindConflict(
                "Merge IR generated profile with Clang generated profile.",
            ));
        }
        let entry_only = ProfileKind::FUNCTION_ENTRY_ONLY;
        let entry_first = ProfileKind::ENTRY_FIRST;
        if (self.kind.has(entry_only) && other.has(entry_first))
            || (self.kind.has(entry_first) && other.has(entry_only))
        {
            return Err(KindConflict(
                "cannot merge FunctionEntryOnly profiles and BB profiles together",
            ));
        }
        self.kind.insert(other);
        Ok(())
    }

    /// The slot of `name`, created on first use.
    pub(crate) fn slot(&mut self, name: &[u8]) -> u32 {
        if let Some(&slot) = self.index.get(name) {
            return slot;
        }
        let slot = self.entries.len() as u32;
        self.index.insert(Box::from(name), slot);
        self.entries.push((Box::from(name), HashOrder::default()));
        slot
    }

    /// Keeps only the names `keep` accepts (`filterFunctions`); returns how many names there
    /// were before.
    pub fn retain_names(&mut self, mut keep: impl FnMut(&[u8]) -> bool) -> usize {
        let before = self.entries.len();
        self.entries.retain(|(name, _)| keep(name));
        self.index = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, (name, _))| (name.clone(), i as u32))
            .collect();
        before
    }

    /// The name in `slot`.
    pub(crate) fn name_of(&self, slot: u32) -> &[u8] {
        &self.entries[slot as usize].0
    }

    /// Names held (`FunctionData.size()`).
    pub fn num_names(&self) -> usize {
        self.entries.len()
    }

    /// The records kept under `name`.
    pub fn records_of(&self, name: &[u8]) -> Option<&HashOrder> {
        self.index.get(name).map(|&i| &self.entries[i as usize].1)
    }

    /// `InstrProfWriter::addRecord`: a new (name, hash) is taken (scaled by `weight`), a known one
    /// is merged into. `warn` gets each warning; LLVM reports only the first per record.
    /// Returns whether the record was new.
    pub(crate) fn add_record(
        &mut self,
        name: &[u8],
        mut record: Record,
        weight: u64,
        warn: &mut dyn FnMut(MergeWarning),
    ) -> bool {
        let slot = self.slot(name);
        self.add_record_at(slot, &mut record, weight, warn)
    }

    /// [`ProfileWriter::add_record`] for the name in `slot`, borrowing the record (a reused
    /// scratch record: only its value data is taken).
    pub(crate) fn add_record_at(
        &mut self,
        slot: u32,
        record: &mut Record,
        weight: u64,
        warn: &mut dyn FnMut(MergeWarning),
    ) -> bool {
        let values = record
            .values
            .iter()
            .any(|s| !s.is_empty())
            .then_some(&mut record.values);
        let parts = RecordParts {
            hash: record.hash,
            counts: &record.counts,
            bitmap: &record.bitmap,
            values,
        };
        self.add_parts(slot, parts, weight, warn)
    }

    /// [`ProfileWriter::add_record`] from borrowed parts: nothing is allocated when the record
    /// merges into an existing one.
    pub(crate) fn add_parts(
        &mut self,
        slot: u32,
        parts: RecordParts<'_>,
        weight: u64,
        warn: &mut dyn FnMut(MergeWarning),
    ) -> bool {
        let map = &mut self.entries[slot as usize].1;
        let Some((i, new)) = map.entry(parts.hash) else {
            // LLVM merges a record hashed 2^64-1 into the empty bucket's non-record and drops
            // it: a counter mismatch unless it has no counters.
            if !parts.counts.is_empty() {
                warn(MergeWarning::CountMismatch);
            }
            return false;
        };
        let dest = map.get_mut(i);
        if new {
            dest.counts.extend_from_slice(parts.counts);
            dest.bitmap.extend_from_slice(parts.bitmap);
            if let Some(values) = parts.values {
                dest.values = std::mem::take(values);
            }
            if weight > 1 {
                scale(dest, weight, warn);
            }
        } else {
            merge_record(dest, parts, weight, warn);
        }
        if dest.values.iter().any(|sites| !sites.is_empty()) {
            sort_value_data(dest);
        }
        new
    }

    /// `addVTableName`.
    pub(crate) fn add_vtable_name(&mut self, name: &[u8]) {
        if self.vtable_name_set.insert(Box::from(name)) {
            self.vtable_names.push(Box::from(name));
        }
    }

    pub(crate) fn add_binary_ids(&mut self, ids: Vec<Vec<u8>>) {
        self.binary_ids.extend(ids);
    }

    /// `addTemporalProfileTraces`.
    pub(crate) fn add_temporal_traces(&mut self, src: TemporalTraces) {
        self.temporal.add(src);
    }

    /// `mergeRecordsFromWriter` (weight 1), used to reduce LLVM's per-thread writer contexts.
    pub(crate) fn merge_from(
        &mut self,
        other: ProfileWriter,
        warn: &mut dyn FnMut(&[u8], MergeWarning),
    ) {
        for (name, records) in other.entries {
            for record in records.into_ordered() {
                let mut reported = false;
                self.add_record(&name, record, 1, &mut |w| {
                    if !reported {
                        reported = true;
                        warn(&name, w);
                    }
                });
            }
        }
        self.binary_ids.extend(other.binary_ids);
        self.add_temporal_traces(other.temporal.traces);
        // LLVM 19's mergeRecordsFromWriter leaves the other writer's vtable names behind: only
        // the first context's reach the output (observed with -j 2).
    }

    /// Names kept in the output (`--sparse` drops names whose records are all zero), sorted.
    fn output_names(&self, sparse: bool) -> Vec<(&[u8], &HashOrder)> {
        let mut names: Vec<(&[u8], &HashOrder)> = self
            .entries
            .iter()
            .filter(|(_, records)| !sparse || records.iter().any(has_nonzero_data))
            .map(|(n, r)| (&**n, r))
            .collect();
        names.sort_unstable_by(|a, b| a.0.cmp(b.0));
        names
    }

    /// The indexed encoding (version 12, or 11 for `--write-prev-version`).
    pub fn to_indexed(&self, sparse: bool, version: u64) -> Vec<u8> {
        let entries = self
            .output_names(sparse)
            .into_iter()
            .map(|(name, records)| NameEntry {
                name,
                records: records.iter().collect(),
            })
            .collect();
        let mut binary_ids = self.binary_ids.clone();
        binary_ids.sort();
        binary_ids.dedup();
        let profile = IndexedProfile {
            kind: self.kind,
            entries,
            binary_ids,
            temporal: self.temporal.traces.clone(),
            vtable_names: self.vtable_names.iter().map(|n| &**n).collect(),
        };
        write_indexed(&profile, version)
    }

    /// The text encoding, records sorted by (name, hash).
    pub fn write_text(&self, out: &mut dyn std::io::Write, sparse: bool) -> std::io::Result<()> {
        let names = self.output_names(sparse);
        let symtab = Symtab::from_names(names.iter().map(|(n, _)| *n));
        let mut records: Vec<(&[u8], &Record)> = names
            .iter()
            .flat_map(|&(name, rs)| rs.iter().map(move |r| (name, r)))
            .collect();
        records.sort_by(|a, b| a.0.cmp(b.0).then(a.1.hash.cmp(&b.1.hash)));
        write_text(out, self.kind, &records, &symtab, &self.temporal.traces)
    }
}

fn has_nonzero_data(r: &Record) -> bool {
    r.counts.iter().any(|&c| c > 0) || r.bitmap.iter().any(|&b| b > 0)
}

/// `InstrProfRecord::scale(W, 1)`.
fn scale(r: &mut Record, weight: u64, warn: &mut dyn FnMut(MergeWarning)) {
    for c in &mut r.counts {
        let mut overflow = false;
        let v = saturating_mul_add(*c, weight, 0, &mut overflow);
        *c = clamp(v, &mut overflow);
        if overflow {
            warn(MergeWarning::CounterOverflow);
        }
    }
    for v in r.values.iter_mut().flatten().flatten() {
        let mut overflow = false;
        v.count = saturating_mul_add(v.count, weight, 0, &mut overflow);
        if overflow {
            warn(MergeWarning::CounterOverflow);
        }
    }
}

fn pseudo_kind(counts: &[u64]) -> u8 {
    match counts.first() {
        Some(&PSEUDO_HOT) => 1,
        Some(&PSEUDO_WARM) => 2,
        _ => 0,
    }
}

/// A record to add, borrowed.
pub(crate) struct RecordParts<'a> {
    pub(crate) hash: u64,
    pub(crate) counts: &'a [u64],
    pub(crate) bitmap: &'a [u8],
    /// Value sites (taken when the record is new), or `None` for a record without values.
    pub(crate) values: Option<&'a mut [Vec<ValueSite>; NUM_VALUE_KINDS]>,
}

/// `dest += src × weight` per counter, saturating at [`MAX_COUNT`]; true on overflow.
fn add_counts(dest: &mut [u64], src: &[u64], weight: u64) -> bool {
    let mut overflow = false;
    if weight == 1 {
        // Branch-free so that it vectorises: the common, unweighted merge.
        for (d, &s) in dest.iter_mut().zip(src) {
            let (sum, carry) = d.overflowing_add(s);
            let clamped = if carry || sum > MAX_COUNT {
                MAX_COUNT
            } else {
                sum
            };
            overflow |= carry | (sum > MAX_COUNT);
            *d = clamped;
        }
        return overflow;
    }
    for (d, &s) in dest.iter_mut().zip(src) {
        let v = saturating_mul_add(s, weight, *d, &mut overflow);
        *d = clamp(v, &mut overflow);
    }
    overflow
}

/// `InstrProfRecord::merge` (the source's value sites are taken).
fn merge_record(
    dest: &mut Record,
    src: RecordParts<'_>,
    weight: u64,
    warn: &mut dyn FnMut(MergeWarning),
) {
    if dest.counts.len() != src.counts.len() {
        warn(MergeWarning::CountMismatch);
        return;
    }
    let (this_kind, other_kind) = (pseudo_kind(&dest.counts), pseudo_kind(src.counts));
    if this_kind != 0 || other_kind != 0 {
        if this_kind == 0 || other_kind == 0 {
            warn(MergeWarning::CountMismatch);
            return;
        }
        dest.counts[0] = if this_kind == 1 || other_kind == 1 {
            PSEUDO_HOT
        } else {
            PSEUDO_WARM
        };
        return;
    }
    if add_counts(&mut dest.counts, src.counts, weight) {
        // LLVM warns once per overflowing counter; the caller reports only the first.
        warn(MergeWarning::CounterOverflow);
    }
    if dest.bitmap.len() != src.bitmap.len() {
        warn(MergeWarning::BitmapMismatch);
        return;
    }
    for (d, s) in dest.bitmap.iter_mut().zip(src.bitmap) {
        *d |= s;
    }
    let mut no_values: [Vec<ValueSite>; NUM_VALUE_KINDS] = Default::default();
    let src_values = src.values.unwrap_or(&mut no_values);
    for (dest_sites, src_sites) in dest.values.iter_mut().zip(src_values.iter_mut()) {
        if dest_sites.len() != src_sites.len() {
            warn(MergeWarning::ValueSiteCountMismatch);
            continue;
        }
        for (d, s) in dest_sites.iter_mut().zip(src_sites) {
            merge_site(d, std::mem::take(s), weight, warn);
        }
    }
}

/// `InstrProfValueSiteRecord::merge`: both sides sorted by value; matched values add the
/// weighted count, values new to `dest` are inserted *unweighted* (LLVM's behaviour).
fn merge_site(
    dest: &mut ValueSite,
    mut src: ValueSite,
    weight: u64,
    warn: &mut dyn FnMut(MergeWarning),
) {
    dest.sort_by_key(|v| v.value);
    src.sort_by_key(|v| v.value);
    let mut merged = Vec::with_capacity(dest.len().max(src.len()));
    let mut i = 0;
    for j in src {
        while i < dest.len() && dest[i].value < j.value {
            merged.push(dest[i]);
            i += 1;
        }
        if i < dest.len() && dest[i].value == j.value {
            let mut overflow = false;
            let mut v = dest[i];
            v.count = saturating_mul_add(j.count, weight, v.count, &mut overflow);
            if overflow {
                warn(MergeWarning::CounterOverflow);
            }
            merged.push(v);
            i += 1;
            continue;
        }
        merged.push(j);
    }
    merged.extend_from_slice(&dest[i..]);
    *dest = merged;
}

/// `sortValueData`: stable sort by count, descending, then at most 255 values per site.
fn sort_value_data(r: &mut Record) {
    for site in r.values.iter_mut().flatten() {
        if site.len() > 1 {
            site.sort_by_key(|v| std::cmp::Reverse(v.count));
        }
        site.truncate(MAX_VALUES_PER_SITE);
    }
}
