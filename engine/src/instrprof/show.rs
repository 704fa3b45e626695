//! `llvm-profdata show` for instrumentation profiles (`showInstrProfile` of LLVM 19): records in
//! reader order, the summary recomputed from them, value-site statistics, top-N functions.

use std::io::{self, Write};

use formats::instrprof::indexed::IndexedReader;
use formats::instrprof::names::Symtab;
use formats::instrprof::raw::{RawOptions, RawReader, LLVM19_VERSION};
use formats::instrprof::record::{IPVK_INDIRECT_CALL_TARGET, IPVK_MEMOP_SIZE};
use formats::instrprof::summary::SummaryBuilder;
use formats::instrprof::text::TextReader;
use formats::instrprof::{detect_format, Error as FormatError, Format, ProfileKind, Record};

/// What `llvm-profdata show` prints: its options of the same names.
#[derive(Clone, Debug, Default)]
pub struct ShowOptions {
    /// `--all-functions`: every function's record, not only the summary.
    pub all_functions: bool,
    /// `--function=NAME`: the records of functions whose name contains this.
    pub function: Option<String>,
    /// `--counts`: the counters of the functions shown.
    pub counts: bool,
    /// `--text`: the records in the text profile format instead.
    pub text: bool,
    /// `--ic-targets`: indirect-call target values.
    pub ic_targets: bool,
    /// `--memop-sizes`: memory-intrinsic size values.
    pub memop_sizes: bool,
    /// `--topn=N`: the N functions with the largest maximum count (0 = none).
    pub topn: u32,
    /// `--detailed-summary`: the profile summary's cut-off table.
    pub detailed_summary: bool,
    /// `--binary-ids`: the binary IDs the profile records.
    pub binary_ids: bool,
    /// `--profile-version`: the format version.
    pub profile_version: bool,
    /// `--showcs`: context-sensitive records instead of the others.
    pub showcs: bool,
}

/// A profile as a reader hands it out, in reader order.
pub struct Listing {
    /// The profile's kind (IR or front-end, CS, entry-first …), from its header.
    pub kind: ProfileKind,
    /// (function name, record), in reader order.
    pub records: Vec<(Vec<u8>, Record)>,
    /// The binary IDs the profile records (raw and indexed only).
    pub binary_ids: Vec<Vec<u8>>,
    /// What `Profile version:` prints: the raw version word, the indexed format version, or 0
    /// for text.
    pub version: u64,
    /// Whether the input was an indexed profile.
    pub indexed: bool,
    /// Names the reader's symtab holds besides the records' (text value-profile targets).
    pub extra_names: Vec<Vec<u8>>,
}

/// Why a profile could not be listed; the messages are llvm-profdata's.
#[derive(Debug)]
#[non_exhaustive]
pub enum ListingError {
    /// An empty input.
    Empty,
    /// No reader recognizes the input.
    Unrecognized,
    /// The reader's error.
    Format(FormatError),
}

impl std::fmt::Display for ListingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListingError::Empty => f.write_str("empty raw profile file"),
            ListingError::Unrecognized => {
                f.write_str("unrecognized instrumentation profile encoding format")
            }
            ListingError::Format(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ListingError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ListingError::Format(e) => Some(e),
            _ => None,
        }
    }
}

/// Reads a whole profile for `show` (llvm-profdata-19 accepts raw version 10 only).
pub fn read_listing(data: &[u8]) -> Result<Listing, ListingError> {
    match read_listing_partial(data)? {
        (listing, None) => Ok(listing),
        (_, Some(error)) => Err(error),
    }
}

/// Reads a profile as far as its reader gets: `Err` when the reader cannot be created (what
/// LLVM 19's reader creation checks: a bad header, a raw profile's sections past the end of the
/// file, malformed binary ids), otherwise the records read before the first record error,
/// with that error. LLVM's reader iteration stops there silently, which `overlap` relies on.
pub fn read_listing_partial(data: &[u8]) -> Result<(Listing, Option<ListingError>), ListingError> {
    if data.is_empty() {
        return Err(ListingError::Empty);
    }
    let mut records = Vec::new();
    let mut extra_names = Vec::new();
    let mut sink = |name: &[u8], r: Record| records.push((name.to_vec(), r));
    let (kind, read, binary_ids, version) = match detect_format(data) {
        Some(Format::Raw) => {
            let mut reader = RawReader::new(
                data,
                RawOptions {
                    only_version: Some(LLVM19_VERSION),
                },
            )
            .map_err(ListingError::Format)?;
            reader.check_first_header().map_err(ListingError::Format)?;
            let read = reader.read_records(&mut sink);
            let version = reader.header().version_word;
            let ids = Ok(std::mem::take(&mut reader.binary_ids));
            (reader.kind(), read, ids, version)
        }
        Some(Format::Indexed) => {
            let reader = IndexedReader::new(data).map_err(ListingError::Format)?;
            // `IndexedInstrProfReader::readHeader` reads the binary ids.
            let ids = reader.binary_ids().map_err(ListingError::Format)?;
            let read = reader.read_records(&mut sink);
            let ids = Ok(ids);
            (reader.kind(), read, ids, reader.header.version())
        }
        Some(Format::Text) => {
            let mut reader = TextReader::new(data).map_err(ListingError::Format)?;
            let read = reader.read_records(&mut sink);
            extra_names = std::mem::take(&mut reader.value_names);
            (reader.kind(), read, Ok(Vec::new()), 0)
        }
        None => return Err(ListingError::Unrecognized),
    };
    let (binary_ids, ids_error) = match binary_ids {
        Ok(ids) => (ids, None),
        Err(e) => (Vec::new(), Some(ListingError::Format(e))),
    };
    let error = read.err().map(ListingError::Format).or(ids_error);
    let listing = Listing {
        kind,
        records,
        binary_ids,
        version,
        indexed: detect_format(data) == Some(Format::Indexed),
        extra_names,
    };
    Ok((listing, error))
}

#[derive(Default)]
struct SiteStats {
    sites: u64,
    sites_with_values: u64,
    values: u64,
    histogram: Vec<u64>,
}

/// libstdc++'s `std::priority_queue<pair<string, u64>>` with `a.second > b.second`, so that
/// ties in `--topn` come out in the same order as llvm-profdata's.
struct TopN {
    heap: Vec<(Vec<u8>, u64)>,
}

impl TopN {
    fn less(a: &(Vec<u8>, u64), b: &(Vec<u8>, u64)) -> bool {
        a.1 > b.1
    }

    fn sift_up(&mut self, mut hole: usize, top: usize, value: (Vec<u8>, u64)) {
        while hole > top {
            let parent = (hole - 1) / 2;
            if !Self::less(&self.heap[parent], &value) {
                break;
            }
            self.heap[hole] = self.heap[parent].clone();
            hole = parent;
        }
        self.heap[hole] = value;
    }

    fn push(&mut self, value: (Vec<u8>, u64)) {
        self.heap.push(value.clone());
        let last = self.heap.len() - 1;
        self.sift_up(last, 0, value);
    }

    fn pop(&mut self) -> Option<(Vec<u8>, u64)> {
        let len = self.heap.len();
        if len == 0 {
            return None;
        }
        if len > 1 {
            let value = self.heap[len - 1].clone();
            self.heap[len - 1] = self.heap[0].clone();
            self.adjust(0, len - 1, value);
        }
        self.heap.pop()
    }

    /// `std::__adjust_heap` over the first `len` elements.
    fn adjust(&mut self, mut hole: usize, len: usize, value: (Vec<u8>, u64)) {
        let top = hole;
        let mut child = hole;
        while child < len.saturating_sub(1) / 2 {
            child = 2 * (child + 1);
            if Self::less(&self.heap[child], &self.heap[child - 1]) {
                child -= 1;
            }
            self.heap[hole] = self.heap[child].clone();
            hole = child;
        }
        if len & 1 == 0 && len >= 2 && child == (len - 2) / 2 {
            child = 2 * (child + 1);
            self.heap[hole] = self.heap[child - 1].clone();
            hole = child - 1;
        }
        self.sift_up(hole, top, value);
    }
}

fn value_sites(
    out: &mut dyn Write,
    r: &Record,
    kind: usize,
    stats: &mut SiteStats,
    symtab: Option<&Symtab>,
) -> io::Result<()> {
    let sites = &r.values[kind];
    stats.sites += sites.len() as u64;
    for (i, site) in sites.iter().enumerate() {
        let n = site.len();
        stats.values += n as u64;
        if n > 0 {
            stats.sites_with_values += 1;
            if n > stats.histogram.len() {
                stats.histogram.resize(n, 0);
            }
            stats.histogram[n - 1] += 1;
        }
        let sum: u64 = site.iter().map(|v| v.count).fold(0, u64::wrapping_add);
        let sum = if sum == 0 { 1 } else { sum };
        for v in site {
            write!(out, "\t[ {i:2}, ")?;
            match symtab {
                Some(t) => out.write_all(t.name(v.value).unwrap_or_default())?,
                None => write!(out, "{:4}", v.value)?,
            }
            writeln!(
                out,
                ", {:10} ] ({:.2}%)",
                v.count as i64,
                v.count as f64 * 100.0 / sum as f64
            )?;
        }
    }
    Ok(())
}

fn site_stats(out: &mut dyn Write, s: &SiteStats) -> io::Result<()> {
    writeln!(out, "  Total number of sites: {}", s.sites)?;
    writeln!(
        out,
        "  Total number of sites with values: {}",
        s.sites_with_values
    )?;
    writeln!(out, "  Total number of profiled values: {}", s.values)?;
    writeln!(out, "  Value sites histogram:\n\tNumTargets, SiteCount")?;
    for (i, &n) in s.histogram.iter().enumerate() {
        if n > 0 {
            writeln!(out, "\t{}, {n}", i + 1)?;
        }
    }
    Ok(())
}

/// Writes what `llvm-profdata show` prints for `listing`.
pub fn show(listing: &Listing, o: &ShowOptions, out: &mut dyn Write) -> io::Result<()> {
    let is_ir = listing.kind.has(ProfileKind::IR);
    let names = listing.records.iter().map(|(n, _)| n.as_slice());
    let symtab = Symtab::from_names(names.chain(listing.extra_names.iter().map(Vec::as_slice)));
    let mut builder = SummaryBuilder::default();
    let mut top = TopN { heap: Vec::new() };
    let (mut shown, mut ic_stats, mut memop_stats) =
        (0usize, SiteStats::default(), SiteStats::default());
    if o.text && is_ir {
        out.write_all(b":ir\n")?;
    }
    for (name, r) in &listing.records {
        if is_ir && r.is_context_sensitive() != o.showcs {
            continue;
        }
        let matches = o
            .function
            .as_deref()
            .is_some_and(|f| !f.is_empty() && memchr::memmem::find(name, f.as_bytes()).is_some());
        let show = o.all_functions || matches;
        if show && o.text {
            formats::instrprof::text::write_record(out, name, r, &symtab)?;
            continue;
        }
        builder.add_record(&r.counts);
        let func_max = r
            .counts
            .iter()
            .filter(|&&c| c != u64::MAX)
            .copied()
            .max()
            .unwrap_or(0);
        if o.topn > 0 {
            if top.heap.len() == o.topn as usize {
                if top.heap[0].1 < func_max {
                    top.pop();
                    top.push((name.clone(), func_max));
                }
            } else {
                top.push((name.clone(), func_max));
            }
        }
        if !show {
            continue;
        }
        if shown == 0 {
            writeln!(out, "Counters:")?;
        }
        shown += 1;
        out.write_all(b"  ")?;
        out.write_all(name)?;
        writeln!(
            out,
            ":\n    Hash: 0x{:016x}\n    Counters: {}",
            r.hash,
            r.counts.len()
        )?;
        if !is_ir {
            writeln!(
                out,
                "    Function count: {}",
                r.counts.first().copied().unwrap_or(0)
            )?;
        }
        if o.ic_targets {
            writeln!(
                out,
                "    Indirect Call Site Count: {}",
                r.values[IPVK_INDIRECT_CALL_TARGET].len()
            )?;
        }
        let memops = r.values[IPVK_MEMOP_SIZE].len();
        if o.memop_sizes && memops > 0 {
            writeln!(out, "    Number of Memory Intrinsics Calls: {memops}")?;
        }
        if o.counts {
            let start = if is_ir { 0 } else { 1 };
            let counts: Vec<String> = r.counts.iter().skip(start).map(u64::to_string).collect();
            writeln!(out, "    Block counts: [{}]", counts.join(", "))?;
        }
        if o.ic_targets {
            writeln!(out, "    Indirect Target Results:")?;
            value_sites(
                out,
                r,
                IPVK_INDIRECT_CALL_TARGET,
                &mut ic_stats,
                Some(&symtab),
            )?;
        }
        if o.memop_sizes && memops > 0 {
            writeln!(out, "    Memory Intrinsic Size Results:")?;
            value_sites(out, r, IPVK_MEMOP_SIZE, &mut memop_stats, None)?;
        }
    }
    if o.text {
        return Ok(());
    }
    let summary = builder.finish();
    write!(
        out,
        "Instrumentation level: {}",
        if is_ir { "IR" } else { "Front-end" }
    )?;
    if is_ir {
        write!(
            out,
            "  entry_first = {}",
            u8::from(listing.kind.has(ProfileKind::ENTRY_FIRST))
        )?;
    }
    writeln!(out)?;
    if o.all_functions || o.function.as_deref().is_some_and(|f| !f.is_empty()) {
        writeln!(out, "Functions shown: {shown}")?;
    }
    writeln!(out, "Total functions: {}", summary.total_num_functions)?;
    writeln!(
        out,
        "Maximum function count: {}",
        summary.max_function_count
    )?;
    writeln!(
        out,
        "Maximum internal block count: {}",
        summary.max_internal_block_count
    )?;
    if o.topn > 0 {
        let mut sorted = Vec::new();
        while let Some(e) = top.pop() {
            sorted.push(e);
        }
        writeln!(
            out,
            "Top {} functions with the largest internal block counts: ",
            o.topn
        )?;
        for (name, max) in sorted.iter().rev() {
            out.write_all(b"  ")?;
            out.write_all(name)?;
            writeln!(out, ", max count = {max}")?;
        }
    }
    if shown > 0 && o.ic_targets {
        writeln!(out, "Statistics for indirect call sites profile:")?;
        site_stats(out, &ic_stats)?;
    }
    if shown > 0 && o.memop_sizes {
        writeln!(out, "Statistics for memory intrinsic calls sizes profile:")?;
        site_stats(out, &memop_stats)?;
    }
    if o.detailed_summary {
        writeln!(out, "Total number of blocks: {}", summary.total_num_blocks)?;
        writeln!(out, "Total count: {}", summary.total_block_count)?;
        let entries = summary.entries.iter();
        crate::io::report::print_detailed_summary(
            out,
            entries.map(|e| (e.cutoff, e.min_count, e.num_counts)),
        )?;
    }
    // The indexed reader prints the heading even with no ids; the raw one only with some.
    if o.binary_ids && (listing.indexed || !listing.binary_ids.is_empty()) {
        writeln!(out, "Binary IDs: ")?;
        for id in &listing.binary_ids {
            for b in id {
                write!(out, "{b:02x}")?;
            }
            writeln!(out)?;
        }
    }
    if o.profile_version {
        writeln!(out, "Profile version: {}", listing.version)?;
    }
    Ok(())
}
