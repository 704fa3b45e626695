//! The in-memory sample profile: the union of what LLVM's `SampleProfileMap` and AutoFDO's
//! symbol map carry. Orderings follow LLVM (`FunctionId::compare`, `SampleContext::operator<`,
//! `LineLocation::operator<`) so that writers can reproduce llvm-profdata's byte order by
//! walking the maps.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

/// A function name, or only its MD5 GUID when the profile came from an MD5 name table.
///
/// The derived order is LLVM's `FunctionId::compare`: every hash sorts before every name,
/// hashes numerically, names by bytes (a prefix first).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FunctionId {
    /// Only the GUID is known (MD5 name tables): [`md5_guid`] of the name.
    Hash(u64),
    /// The function name's bytes (usually the mangled name).
    Name(Arc<[u8]>),
}

impl FunctionId {
    /// A `Name` id holding a copy of `bytes`.
    pub fn name(bytes: &[u8]) -> Self {
        FunctionId::Name(Arc::from(bytes))
    }

    /// The GUID LLVM uses for this function: the low 8 bytes (little-endian) of MD5(name).
    pub fn guid(&self) -> u64 {
        match self {
            FunctionId::Hash(h) => *h,
            FunctionId::Name(n) => md5_guid(n),
        }
    }

    /// The name, or `None` for a hash-only id.
    pub fn as_name(&self) -> Option<&[u8]> {
        match self {
            FunctionId::Name(n) => Some(n),
            FunctionId::Hash(_) => None,
        }
    }

    /// Writes the name, or the GUID in decimal (as LLVM prints a hash-only id).
    pub fn write_to(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        match self {
            FunctionId::Name(n) => out.write_all(n),
            FunctionId::Hash(h) => out.write_all(itoa::Buffer::new().format(*h).as_bytes()),
        }
    }

    /// [`Self::write_to`] into a new buffer: the name, or the GUID in decimal.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        let _ = self.write_to(&mut v);
        v
    }
}

impl fmt::Display for FunctionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FunctionId::Name(n) => f.write_str(&String::from_utf8_lossy(n)),
            FunctionId::Hash(h) => write!(f, "{h}"),
        }
    }
}

pub use crate::md5_guid;

/// A source location relative to the function start: line offset and discriminator
/// (for pseudo-probe profiles: probe id and probe discriminator). Ordered by (line, disc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineLocation {
    /// Line offset from the function's start line (LLVM `LineLocation::LineOffset`), or the probe id.
    pub line: u32,
    /// Discriminator (LLVM `LineLocation::Discriminator`), 0 if none; printed as `line.disc`.
    pub disc: u32,
}

impl LineLocation {
    /// The location `line`.`disc`.
    pub const fn new(line: u32, disc: u32) -> Self {
        LineLocation { line, disc }
    }
}

impl fmt::Display for LineLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.line)?;
        if self.disc != 0 {
            write!(f, ".{}", self.disc)?;
        }
        Ok(())
    }
}

/// One frame of a context-sensitive (CSSPGO) calling context: the function and the location
/// of the call it makes to the next frame (0.0 for the leaf).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ContextFrame {
    /// The function of this frame.
    pub func: FunctionId,
    /// Where this frame calls the next one (the leaf's is 0.0 and is not printed).
    pub loc: LineLocation,
}

/// The key of a top-level profile. The derived order is LLVM's `SampleContext::operator<`:
/// context-less profiles (state "unknown") before context profiles, then by name, or frame by
/// frame (name, then location, then the shorter context first).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Context {
    /// A context-less profile of one function (all non-CS formats).
    Plain(FunctionId),
    /// A CSSPGO calling context, outermost frame first, the profiled function last (never empty).
    Cs(Arc<[ContextFrame]>),
}

impl Context {
    /// The function the samples belong to (the leaf of a calling context).
    pub fn function(&self) -> &FunctionId {
        match self {
            Context::Plain(f) => f,
            Context::Cs(frames) => &frames[frames.len() - 1].func,
        }
    }

    /// Whether this is a CSSPGO context ([`Context::Cs`]).
    pub fn is_cs(&self) -> bool {
        matches!(self, Context::Cs(_))
    }

    /// LLVM's `SampleContext::toString`: `a:1 @ b:2.3 @ leaf` (the leaf's location omitted).
    pub fn write_to(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        match self {
            Context::Plain(f) => f.write_to(out),
            Context::Cs(frames) => {
                for (i, frame) in frames.iter().enumerate() {
                    if i > 0 {
                        out.write_all(b" @ ")?;
                    }
                    frame.func.write_to(out)?;
                    if i + 1 < frames.len() {
                        write!(out, ":{}", frame.loc.line)?;
                        if frame.loc.disc != 0 {
                            write!(out, ".{}", frame.loc.disc)?;
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut v = Vec::new();
        let _ = self.write_to(&mut v);
        f.write_str(&String::from_utf8_lossy(&v))
    }
}

/// `!Attributes` bits (LLVM `ContextAttributeMask`).
pub mod attr {
    /// `ContextWasInlined`: the context was inlined into its caller in the profiled binary.
    pub const WAS_INLINED: u32 = 1;
    /// `ContextShouldBeInlined`: the profile generator suggests inlining this context.
    pub const SHOULD_BE_INLINED: u32 = 2;
    /// `ContextDuplicatedIntoBase`: the context's samples were also merged into its base profile.
    pub const DUPLICATED_INTO_BASE: u32 = 4;
}

/// Samples of one source location, with the call targets seen there.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SampleRecord {
    /// Samples at this location (`SampleRecord::NumSamples`).
    pub count: u64,
    /// Indirect/direct call targets seen at this location and their call counts.
    pub targets: BTreeMap<FunctionId, u64>,
}

impl SampleRecord {
    /// Call targets by count descending, then name (LLVM's `SortedCallTargetSet`).
    pub fn sorted_targets(&self) -> Vec<(&FunctionId, u64)> {
        let mut v: Vec<_> = self.targets.iter().map(|(f, &c)| (f, c)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        v
    }

    /// Adds `count × weight` samples, saturating; returns whether it overflowed.
    pub fn add_count(&mut self, count: u64, weight: u64) -> bool {
        saturating_mul_add(&mut self.count, count, weight)
    }

    /// Adds `count × weight` calls to `target`, saturating; returns whether it overflowed.
    pub fn add_target(&mut self, target: FunctionId, count: u64, weight: u64) -> bool {
        saturating_mul_add(self.targets.entry(target).or_insert(0), count, weight)
    }

    /// LLVM `SampleRecord::merge`.
    pub fn merge(&mut self, other: &SampleRecord, weight: u64) -> bool {
        let mut overflow = self.add_count(other.count, weight);
        for (t, &c) in &other.targets {
            overflow |= self.add_target(t.clone(), c, weight);
        }
        overflow
    }
}

/// `*acc += value * weight` with LLVM's `SaturatingMultiplyAdd`; returns whether it saturated.
pub fn saturating_mul_add(acc: &mut u64, value: u64, weight: u64) -> bool {
    match value.checked_mul(weight).and_then(|p| p.checked_add(*acc)) {
        Some(v) => {
            *acc = v;
            false
        }
        None => {
            *acc = u64::MAX;
            true
        }
    }
}

/// Callee profiles inlined at one call site, keyed by callee name.
pub type CalleeMap = BTreeMap<FunctionId, FunctionSamples>;

/// The samples of one function (top-level, or inlined at a call site of its caller).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionSamples {
    /// Total samples in the function and its inlinees (`FunctionSamples::TotalSamples`).
    pub total: u64,
    /// Samples at the function entry; only meaningful for top-level profiles.
    pub head: u64,
    /// Samples per source location (`FunctionSamples::BodySamples`).
    pub body: BTreeMap<LineLocation, SampleRecord>,
    /// Inlined callee profiles per call-site location (`FunctionSamples::CallsiteSamples`).
    pub callsites: BTreeMap<LineLocation, CalleeMap>,
    /// CFG checksum of pseudo-probe profiles (0 = none).
    pub checksum: u64,
    /// [`attr`] bits.
    pub attributes: u32,
}

impl FunctionSamples {
    /// Adds `n × weight` to [`Self::total`], saturating; returns whether it overflowed.
    pub fn add_total(&mut self, n: u64, weight: u64) -> bool {
        saturating_mul_add(&mut self.total, n, weight)
    }

    /// Adds `n × weight` to [`Self::head`], saturating; returns whether it overflowed.
    pub fn add_head(&mut self, n: u64, weight: u64) -> bool {
        saturating_mul_add(&mut self.head, n, weight)
    }

    /// The profile of `callee` inlined at `loc`, created empty if absent.
    pub fn callee_mut(&mut self, loc: LineLocation, callee: FunctionId) -> &mut FunctionSamples {
        self.callsites
            .entry(loc)
            .or_default()
            .entry(callee)
            .or_default()
    }

    /// Number of inlined callee profiles directly under this one.
    pub fn callsite_count(&self) -> usize {
        self.callsites.values().map(|m| m.len()).sum()
    }

    /// LLVM `FunctionSamples::merge`: adds `other × weight` into `self`, and reports the first
    /// problem in LLVM's order (totals, body lines, then inlinees, depth first), as LLVM's
    /// `MergeResult` keeps the first error. A checksum mismatch here drops `other`; one in an
    /// inlinee drops that inlinee only; a saturated count merges the rest.
    pub fn merge(&mut self, other: &FunctionSamples, weight: u64) -> Result<(), MergeError> {
        if self.checksum == 0 {
            self.checksum = other.checksum;
        } else if self.checksum != other.checksum {
            return Err(MergeError::ChecksumMismatch);
        }
        let mut first = None;
        let overflowed = |overflow: bool, first: &mut Option<MergeError>| {
            if overflow {
                first.get_or_insert(MergeError::CounterOverflow);
            }
        };
        overflowed(self.add_total(other.total, weight), &mut first);
        overflowed(self.add_head(other.head, weight), &mut first);
        for (loc, rec) in &other.body {
            let overflow = self.body.entry(*loc).or_default().merge(rec, weight);
            overflowed(overflow, &mut first);
        }
        for (loc, callees) in &other.callsites {
            let mine = self.callsites.entry(*loc).or_default();
            for (name, callee) in callees {
                let target = mine.entry(name.clone()).or_insert_with(|| FunctionSamples {
                    attributes: callee.attributes,
                    ..FunctionSamples::default()
                });
                if let Err(e) = target.merge(callee, weight) {
                    first.get_or_insert(e);
                }
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Every call-target and inlined-callee name below this profile (not its own name).
    pub(crate) fn visit_names<'a>(&'a self, f: &mut impl FnMut(&'a FunctionId)) {
        for rec in self.body.values() {
            for t in rec.targets.keys() {
                f(t);
            }
        }
        for callees in self.callsites.values() {
            for (name, callee) in callees {
                f(name);
                callee.visit_names(f);
            }
        }
    }
}

/// The first problem [`FunctionSamples::merge`] met.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeError {
    /// Two pseudo-probe profiles of one function carry different CFG checksums.
    ChecksumMismatch,
    /// A count saturated at 2^64 − 1.
    CounterOverflow,
}

impl fmt::Display for MergeError {
    /// LLVM's `sampleprof_error` messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MergeError::ChecksumMismatch => "Function hash mismatch",
            MergeError::CounterOverflow => "Counter overflow",
        })
    }
}

/// What kind of profile this is; these select sections and flags in the binary writers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProfileKind {
    /// Context-sensitive (CSSPGO) top-level contexts.
    pub cs: bool,
    /// Pseudo-probe based (every function has a CFG checksum).
    pub probe: bool,
    /// Some context carries ShouldBeInlined (`ProfileIsPreInlined`).
    pub preinlined: bool,
    /// Flow-sensitive discriminators (ExtBinary summary flag).
    pub fs: bool,
}

/// A whole sample profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// Top-level profiles by context, in LLVM's context order.
    pub functions: BTreeMap<Context, FunctionSamples>,
    /// CS / probe / pre-inlined / FS flags of the whole profile.
    pub kind: ProfileKind,
    /// ExtBinary profile symbol list (names of all functions in the binary), if present.
    pub symbol_list: BTreeSet<Arc<[u8]>>,
    /// ExtBinary "partial profile" summary flag.
    pub partial: bool,
    /// GCOV v3: the source file each function name comes from.
    pub source_files: BTreeMap<FunctionId, Arc<[u8]>>,
    /// GCOV v3: first-execution timestamp of top-level functions (time-profile reordering).
    pub timestamps: BTreeMap<FunctionId, u64>,
}

impl Profile {
    /// Top-level profiles in LLVM's `sortFuncProfiles` order: total samples descending, ties by
    /// context.
    pub fn sorted_functions(&self) -> Vec<(&Context, &FunctionSamples)> {
        let mut v: Vec<_> = self.functions.iter().collect();
        // The map iterates in context order, so a stable sort on totals keeps context ties.
        v.sort_by_key(|e| std::cmp::Reverse(e.1.total));
        v
    }

    /// Recomputes the flags LLVM derives while reading: probe-based when any top-level
    /// profile has a checksum, pre-inlined when any context should be inlined.
    pub fn derive_kind(&mut self) {
        self.kind.cs = self.functions.keys().any(Context::is_cs);
        self.kind.probe = self.functions.values().any(|f| f.checksum != 0);
        self.kind.preinlined = self
            .functions
            .values()
            .any(|f| f.attributes & attr::SHOULD_BE_INLINED != 0);
    }
}
