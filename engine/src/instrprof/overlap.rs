//! `llvm-profdata overlap` for instrumentation profiles, as LLVM 19 computes it
//! (`overlapInstrProfile` in llvm-profdata.cpp; `OverlapStats`, `InstrProfRecord::overlap` and
//! `InstrProfWriter::overlapRecord` in InstrProf.cpp / InstrProfWriter.cpp).
//!
//! The program-level sums come from iterating each file's reader (only the non-CS or only the
//! CS records of IR profiles, per `--cs`). The base profile is then loaded into a writer (so
//! repeated (name, hash) records are merged) and every record of the test profile, in reader
//! order, is scored against it: `min(base/base_sum, test/test_sum)` per counter. The arithmetic
//! is done in `f64` in LLVM's order so that the printed percentages round identically.

use std::io::{self, Write};

use formats::instrprof::record::NUM_VALUE_KINDS;
use formats::instrprof::{ProfileKind, Record, ValueSite};

use super::show::Listing;
use super::ProfileWriter;

/// `OverlapFuncFilters` plus `--cs`.
#[derive(Clone, Debug)]
pub struct OverlapOptions {
    /// Functions whose test max count is at least this get a "Function level" block
    /// (`--value-cutoff`, default `u64::MAX`).
    pub value_cutoff: u64,
    /// Functions whose name contains this get a "Function level" block (`--function`).
    pub function: String,
    /// Sum the CS records of IR profiles instead of the others (`--cs`).
    pub cs: bool,
    /// The base / test profile can only be read once (standard input): LLVM's second reading
    /// (to load the base, to iterate the test records) finds it empty.
    pub base_read_once: bool,
    /// The test profile can only be read once; see `base_read_once`.
    pub test_read_once: bool,
}

impl Default for OverlapOptions {
    fn default() -> Self {
        OverlapOptions {
            value_cutoff: u64::MAX,
            function: String::new(),
            cs: false,
            base_read_once: false,
            test_read_once: false,
        }
    }
}

/// `CountSumOrPercent`.
#[derive(Clone, Copy, Debug, Default)]
struct Sums {
    entries: u64,
    count_sum: f64,
    value_counts: [f64; NUM_VALUE_KINDS],
}

impl Sums {
    /// `InstrProfRecord::accumulateCounts`: integer sums per record (wrapping, as u64 does in
    /// C++), added to the running doubles.
    fn accumulate(&mut self, r: &Record) {
        self.entries += r.counts.len() as u64;
        let func_sum = r.counts.iter().fold(0u64, |a, &c| a.wrapping_add(c));
        self.count_sum += func_sum as f64;
        for (kind, sites) in r.values.iter().enumerate() {
            let kind_sum = sites
                .iter()
                .flatten()
                .fold(0u64, |a, v| a.wrapping_add(v.count));
            self.value_counts[kind] += kind_sum as f64;
        }
    }
}

/// `OverlapStats`: program level (with the file names) or one function.
#[derive(Clone, Debug, Default)]
struct Stats {
    base: Sums,
    test: Sums,
    overlap: Sums,
    mismatch: Sums,
    unique: Sums,
    valid: bool,
}

/// `OverlapStats::score`.
fn score(v1: u64, v2: u64, sum1: f64, sum2: f64) -> f64 {
    if sum1 < 1.0 || sum2 < 1.0 {
        return 0.0;
    }
    (v1 as f64 / sum1).min(v2 as f64 / sum2)
}

impl Stats {
    fn add_one_mismatch(&mut self, func: &Sums) {
        self.mismatch.entries += 1;
        self.mismatch.count_sum += func.count_sum / self.test.count_sum;
        for k in 0..NUM_VALUE_KINDS {
            if self.test.value_counts[k] >= 1.0 {
                self.mismatch.value_counts[k] += func.value_counts[k] / self.test.value_counts[k];
            }
        }
    }

    fn add_one_unique(&mut self, func: &Sums) {
        self.unique.entries += 1;
        self.unique.count_sum += func.count_sum / self.test.count_sum;
        for k in 0..NUM_VALUE_KINDS {
            if self.test.value_counts[k] >= 1.0 {
                self.unique.value_counts[k] += func.value_counts[k] / self.test.value_counts[k];
            }
        }
    }
}

/// `InstrProfValueSiteRecord::overlap`: both sites walked in value order.
fn overlap_site(
    base: &ValueSite,
    test: &ValueSite,
    kind: usize,
    program: &mut Stats,
    func: &mut Stats,
) {
    let mut base = base.clone();
    let mut test = test.clone();
    base.sort_unstable_by_key(|v| v.value);
    test.sort_unstable_by_key(|v| v.value);
    let (mut score_sum, mut func_score) = (0.0f64, 0.0f64);
    let (mut i, mut j) = (0, 0);
    while i < base.len() && j < test.len() {
        let (b, t) = (base[i], test[j]);
        if b.value == t.value {
            score_sum += score(
                b.count,
                t.count,
                program.base.value_counts[kind],
                program.test.value_counts[kind],
            );
            func_score += score(
                b.count,
                t.count,
                func.base.value_counts[kind],
                func.test.value_counts[kind],
            );
            i += 1;
        } else if b.value < t.value {
            i += 1;
            continue;
        }
        j += 1;
    }
    program.overlap.value_counts[kind] += score_sum;
    func.overlap.value_counts[kind] += func_score;
}

/// `InstrProfRecord::overlap` (`func.test` already holds the test record's sums, ≥ 1).
fn overlap_record(
    base: &Record,
    test: &Record,
    program: &mut Stats,
    func: &mut Stats,
    value_cutoff: u64,
) {
    func.base.accumulate(base);
    let mismatch = base.counts.len() != test.counts.len()
        || (0..NUM_VALUE_KINDS).any(|k| base.values[k].len() != test.values[k].len());
    if mismatch {
        program.add_one_mismatch(&func.test);
        return;
    }
    for kind in 0..NUM_VALUE_KINDS {
        for (b, t) in base.values[kind].iter().zip(&test.values[kind]) {
            overlap_site(b, t, kind, program, func);
        }
    }
    let mut score_sum = 0.0f64;
    let mut max_count = 0u64;
    for (&b, &t) in base.counts.iter().zip(&test.counts) {
        score_sum += score(b, t, program.base.count_sum, program.test.count_sum);
        max_count = max_count.max(t);
    }
    program.overlap.count_sum += score_sum;
    program.overlap.entries += 1;
    if max_count >= value_cutoff {
        let mut func_score = 0.0f64;
        for (&b, &t) in base.counts.iter().zip(&test.counts) {
            func_score += score(b, t, func.base.count_sum, func.test.count_sum);
        }
        func.overlap.count_sum = func_score;
        func.overlap.entries = test.counts.len() as u64;
        func.valid = true;
    }
}

/// `InstrProfReader::accumulateCounts`: IR profiles count either their CS or their other
/// records; other profiles count every record.
fn profile_sums(listing: &Listing, cs: bool) -> Sums {
    let mut sums = Sums::default();
    let ir = listing.kind.has(ProfileKind::IR);
    let mut functions = 0;
    for (_, r) in &listing.records {
        if ir && r.is_context_sensitive() != cs {
            continue;
        }
        sums.accumulate(r);
        functions += 1;
    }
    sums.entries = functions;
    sums
}

const KIND_NAMES: [&str; NUM_VALUE_KINDS] = ["IndirectCall", "MemOP", "VTable"];

/// What the overlap prints about one level (`OverlapStats::dump`).
enum Level<'a> {
    Program { base: &'a str, test: &'a str },
    Function { name: &'a [u8], hash: u64 },
}

fn dump(out: &mut dyn Write, s: &Stats, level: Level<'_>) -> io::Result<()> {
    if !s.valid {
        return Ok(());
    }
    let entry_name = match level {
        Level::Program { base, test } => {
            writeln!(
                out,
                "Profile overlap infomation for base_profile: {base} and test_profile: {test}\nProgram level:"
            )?;
            "functions"
        }
        Level::Function { name, hash } => {
            out.write_all(b"Function level:\n  Function: ")?;
            out.write_all(name)?;
            writeln!(out, " (Hash={hash})")?;
            "edge counters"
        }
    };
    writeln!(out, "  # of {entry_name} overlap: {}", s.overlap.entries)?;
    if s.mismatch.entries != 0 {
        writeln!(out, "  # of {entry_name} mismatch: {}", s.mismatch.entries)?;
    }
    if s.unique.entries != 0 {
        writeln!(
            out,
            "  # of {entry_name} only in test_profile: {}",
            s.unique.entries
        )?;
    }
    writeln!(
        out,
        "  Edge profile overlap: {:.3}%",
        s.overlap.count_sum * 100.0
    )?;
    if s.mismatch.entries != 0 {
        writeln!(
            out,
            "  Mismatched count percentage (Edge): {:.3}%",
            s.mismatch.count_sum * 100.0
        )?;
    }
    if s.unique.entries != 0 {
        writeln!(
            out,
            "  Percentage of Edge profile only in test_profile: {:.3}%",
            s.unique.count_sum * 100.0
        )?;
    }
    writeln!(
        out,
        "  Edge profile base count sum: {:.0}",
        s.base.count_sum
    )?;
    writeln!(
        out,
        "  Edge profile test count sum: {:.0}",
        s.test.count_sum
    )?;
    for (k, kind) in KIND_NAMES.iter().enumerate() {
        if s.base.value_counts[k] < 1.0 && s.test.value_counts[k] < 1.0 {
            continue;
        }
        writeln!(
            out,
            "  {kind} profile overlap: {:.3}%",
            s.overlap.value_counts[k] * 100.0
        )?;
        if s.mismatch.entries != 0 {
            writeln!(
                out,
                "  Mismatched count percentage ({kind}): {:.3}%",
                s.mismatch.value_counts[k] * 100.0
            )?;
        }
        if s.unique.entries != 0 {
            writeln!(
                out,
                "  Percentage of {kind} profile only in test_profile: {:.3}%",
                s.unique.value_counts[k] * 100.0
            )?;
        }
        writeln!(
            out,
            "  {kind} profile base count sum: {:.0}",
            s.base.value_counts[k]
        )?;
        writeln!(
            out,
            "  {kind} profile test count sum: {:.0}",
            s.test.value_counts[k]
        )?;
    }
    Ok(())
}

/// Writes what `llvm-profdata overlap BASE TEST` prints. `base_name` and `test_name` are the
/// file names as given on the command line. Returns `false` when a profile's edge counts sum to
/// zero, after writing only the note llvm-profdata prints before it exits.
pub fn overlap(
    base: &Listing,
    test: &Listing,
    base_name: &str,
    test_name: &str,
    options: &OverlapOptions,
    out: &mut dyn Write,
) -> io::Result<bool> {
    let mut program = Stats {
        base: profile_sums(base, options.cs),
        test: profile_sums(test, options.cs),
        valid: true,
        ..Stats::default()
    };
    for (sums, name) in [(&program.base, base_name), (&program.test, test_name)] {
        if sums.count_sum < 1.0 {
            writeln!(out, "Sum of edge counts for profile {name} is 0.")?;
            return Ok(false);
        }
    }
    // `loadInput` of the base: records with the same (name, hash) are merged, as in `merge`.
    let mut writer = ProfileWriter::default();
    let base_records = if options.base_read_once {
        &[][..]
    } else {
        &base.records[..]
    };
    for (name, record) in base_records {
        writer.add_record(name, record.clone(), 1, &mut |_| {});
    }
    let test_records = if options.test_read_once {
        &[][..]
    } else {
        &test.records[..]
    };
    for (name, record) in test_records {
        let mut func = Stats::default();
        func.test.accumulate(record);
        overlap_one(&writer, name, record, &mut program, &mut func, options);
        dump(
            out,
            &func,
            Level::Function {
                name,
                hash: record.hash,
            },
        )?;
    }
    dump(
        out,
        &program,
        Level::Program {
            base: base_name,
            test: test_name,
        },
    )?;
    Ok(true)
}

/// `InstrProfWriter::overlapRecord`.
fn overlap_one(
    writer: &ProfileWriter,
    name: &[u8],
    record: &Record,
    program: &mut Stats,
    func: &mut Stats,
    options: &OverlapOptions,
) {
    let Some(records) = writer.records_of(name) else {
        program.add_one_unique(&func.test);
        return;
    };
    if func.test.count_sum < 1.0 {
        program.overlap.entries += 1;
        return;
    }
    // LLVM inserts an empty record for an unknown hash; a later test record with that hash
    // then mismatches it in the same way, so nothing needs to be inserted here.
    let Some(base) = records.iter().find(|r| r.hash == record.hash) else {
        program.add_one_mismatch(&func.test);
        return;
    };
    let name_matches = !options.function.is_empty()
        && memchr::memmem::find(name, options.function.as_bytes()).is_some();
    let cutoff = if name_matches {
        0
    } else {
        options.value_cutoff
    };
    overlap_record(base, record, program, func, cutoff);
}
