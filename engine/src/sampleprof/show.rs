//! `llvm-profdata show --sample` output of LLVM 19: the function dump
//! (`FunctionSamples::print`), the profile summary, the hot-function list and the
//! profile symbol list, byte for byte.

use std::io::{self, Write};

use formats::sampleprof::summary::{self, Summary};
use formats::sampleprof::{Context, FunctionId, FunctionSamples, Profile};

/// `FunctionSamples::getHeadSamplesEstimate` (LLVM 19): the head samples of a CS profile when
/// known, else the samples of the first line (or of the first call site's callees), at least 1
/// when the function has samples at all.
pub fn head_samples_estimate(fs: &FunctionSamples, profile_is_cs: bool) -> u64 {
    if profile_is_cs && fs.head != 0 {
        return fs.head;
    }
    let first_body = fs.body.iter().next();
    let first_callsite = fs.callsites.iter().next();
    let count = match (first_body, first_callsite) {
        (Some((loc, rec)), Some((cloc, _))) if loc < cloc => rec.count,
        (Some((_, rec)), None) => rec.count,
        (_, Some((_, callees))) => callees
            .values()
            .map(|c| head_samples_estimate(c, profile_is_cs))
            .fold(0u64, u64::wrapping_add),
        (None, None) => 0,
    };
    if count != 0 {
        count
    } else {
        u64::from(fs.total > 0)
    }
}

fn indent(out: &mut dyn Write, n: usize) -> io::Result<()> {
    write!(out, "{:n$}", "")
}

/// `FunctionSamples::print(OS, Indent)`.
pub fn print_samples(out: &mut dyn Write, fs: &FunctionSamples, ind: usize) -> io::Result<()> {
    if fs.checksum != 0 {
        writeln!(out, "CFG checksum {}", fs.checksum)?;
    }
    writeln!(
        out,
        "{}, {}, {} sampled lines",
        fs.total,
        fs.head,
        fs.body.len()
    )?;
    indent(out, ind)?;
    if fs.body.is_empty() {
        writeln!(out, "No samples collected in the function's body")?;
    } else {
        writeln!(out, "Samples collected in the function's body {{")?;
        for (loc, rec) in &fs.body {
            indent(out, ind + 2)?;
            write!(out, "{loc}: {}", rec.count)?;
            if !rec.targets.is_empty() {
                write!(out, ", calls:")?;
                for (t, c) in rec.sorted_targets() {
                    write!(out, " {t}:{c}")?;
                }
            }
            writeln!(out)?;
        }
        indent(out, ind)?;
        writeln!(out, "}}")?;
    }
    indent(out, ind)?;
    if fs.callsites.is_empty() {
        writeln!(out, "No inlined callsites in this function")?;
    } else {
        writeln!(out, "Samples collected in inlined callsites {{")?;
        for (loc, callees) in &fs.callsites {
            for (name, callee) in callees {
                indent(out, ind + 2)?;
                write!(out, "{loc}: inlined callee: {name}: ")?;
                print_samples(out, callee, ind + 4)?;
            }
        }
        indent(out, ind)?;
        writeln!(out, "}}")?;
    }
    Ok(())
}

/// `SampleProfileReader::dumpFunctionProfile`.
pub fn dump_function(out: &mut dyn Write, ctx: &Context, fs: &FunctionSamples) -> io::Result<()> {
    write!(out, "Function: {ctx}: ")?;
    print_samples(out, fs, 0)
}

/// `SampleProfileReader::dump`: every function, hottest first.
pub fn dump(out: &mut dyn Write, profile: &Profile) -> io::Result<()> {
    for (ctx, fs) in profile.sorted_functions() {
        dump_function(out, ctx, fs)?;
    }
    Ok(())
}

pub use crate::io::report::format_g;

/// `ProfileSummary::printSummary` for a sample profile.
pub fn print_summary(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    writeln!(out, "Total functions: {}", s.num_functions)?;
    writeln!(out, "Maximum function count: {}", s.max_function_count)?;
    writeln!(out, "Maximum block count: {}", s.max_count)?;
    writeln!(out, "Total number of blocks: {}", s.num_counts)?;
    writeln!(out, "Total count: {}", s.total_count)
}

/// `ProfileSummary::printDetailedSummary` of a sample profile's summary.
pub fn print_detailed_summary(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    let entries = s.entries.iter();
    crate::io::report::print_detailed_summary(
        out,
        entries.map(|e| (u64::from(e.cutoff), e.min_count, e.num_counts)),
    )
}

/// Per-function statistics of `getFuncSampleStats` (llvm-profdata.cpp): the sum and maximum
/// of line samples including inlinees, and how many lines reach `hot_threshold`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FuncSampleStats {
    pub(crate) sample_sum: u64,
    pub(crate) max_sample: u64,
    pub(crate) hot_block_count: u64,
}

/// Adds `fs`'s (and its inlinees') line samples to `stats`.
pub(crate) fn func_sample_stats(
    fs: &FunctionSamples,
    hot_threshold: u64,
    stats: &mut FuncSampleStats,
) {
    for rec in fs.body.values() {
        stats.sample_sum = stats.sample_sum.wrapping_add(rec.count);
        stats.max_sample = stats.max_sample.max(rec.count);
        if rec.count >= hot_threshold {
            stats.hot_block_count += 1;
        }
    }
    for callees in fs.callsites.values() {
        for callee in callees.values() {
            func_sample_stats(callee, hot_threshold, stats);
        }
    }
}

/// A fixed-column line as LLVM's `formatted_raw_ostream::PadToColumn` builds it: padding
/// always inserts at least one space, even at or past the column.
#[derive(Default)]
pub(crate) struct ColumnLine {
    pub(crate) text: String,
}

impl ColumnLine {
    /// Pads the line with spaces up to `column` (at least one space).
    pub(crate) fn pad_to(&mut self, column: usize) {
        let width = self.text.chars().count();
        let spaces = column.saturating_sub(width).max(1);
        self.text.extend(std::iter::repeat_n(' ', spaces));
    }
}

/// `showHotFunctionList`: functions whose hottest line reaches the 99% cutoff's count,
/// by total samples descending, ties in `order` (LLVM's map iteration order, see
/// [`super::overlap::load_order`]).
pub fn hot_function_list(
    out: &mut dyn Write,
    profile: &Profile,
    order: &[&Context],
    top_n: u32,
) -> io::Result<()> {
    let s = summary::compute(profile);
    let threshold = s
        .entries
        .iter()
        .find(|e| e.cutoff == 990000)
        .map_or(0, |e| e.min_count);
    let mut total = 0u64;
    let mut hot_total = 0u64;
    let mut hot: Vec<(&Context, &FunctionSamples, u64)> = Vec::new();
    for &ctx in order {
        let fs = &profile.functions[ctx];
        total = total.wrapping_add(fs.total);
        let mut stats = FuncSampleStats::default();
        func_sample_stats(fs, threshold, &mut stats);
        if stats.max_sample >= threshold {
            hot.push((ctx, fs, stats.max_sample));
            hot_total = hot_total.wrapping_add(fs.total);
        }
    }
    hot.sort_by_key(|h| std::cmp::Reverse(h.1.total));
    let n_funcs = profile.functions.len();
    let pct = |a: u64, b: u64| {
        if b > 0 {
            a as f64 / b as f64 * 100.0
        } else {
            0.0
        }
    };
    writeln!(
        out,
        "{} out of {} functions with profile ({:.2}%) are considered hot functions (max sample >= {threshold}).",
        hot.len(),
        n_funcs,
        pct(hot.len() as u64, n_funcs as u64),
    )?;
    writeln!(
        out,
        "{hot_total} out of {total} profile counts ({:.2}%) are from hot functions.",
        pct(hot_total, total)
    )?;
    let columns = [0usize, 24, 42, 58];
    let titles = [
        "Total sample (%)",
        "Max sample",
        "Entry sample",
        "Function name",
    ];
    let mut line = ColumnLine::default();
    for (c, t) in columns.iter().zip(titles) {
        line.pad_to(*c);
        line.text.push_str(t);
    }
    writeln!(out, "{}", line.text)?;
    for (i, (ctx, fs, max)) in hot.iter().enumerate() {
        if top_n != 0 && i == top_n as usize {
            break;
        }
        let percent = if total > 0 {
            fs.total as f64 * 100.0 / total as f64
        } else {
            0.0
        };
        let mut line = ColumnLine::default();
        line.pad_to(columns[0]);
        line.text.push_str(&format!("{} ({percent:.2}%)", fs.total));
        line.pad_to(columns[1]);
        line.text.push_str(&max.to_string());
        line.pad_to(columns[2]);
        line.text
            .push_str(&head_samples_estimate(fs, profile.kind.cs).to_string());
        line.pad_to(columns[3]);
        line.text.push_str(&ctx.to_string());
        writeln!(out, "{}", line.text)?;
    }
    Ok(())
}

/// `ProfileSymbolList::dump`.
pub fn dump_symbol_list(out: &mut dyn Write, profile: &Profile) -> io::Result<()> {
    writeln!(out, "======== Dump profile symbol list ========")?;
    for s in &profile.symbol_list {
        out.write_all(s)?;
        writeln!(out)?;
    }
    Ok(())
}
/// `SampleProfileReaderExtBinaryBase::dumpSectionInfo`.
pub fn section_info(out: &mut Vec<u8>, data: &[u8]) -> Result<(), formats::sampleprof::Error> {
    use formats::sampleprof::binary::{flag, read_section_table, sec};
    let table = read_section_table(data)?;
    let mut total = 0u64;
    for e in &table {
        let name = match e.kind {
            sec::SUMMARY => "ProfileSummarySection",
            sec::NAME_TABLE => "NameTableSection",
            sec::SYMBOL_LIST => "ProfileSymbolListSection",
            sec::FUNC_OFFSET => "FuncOffsetTableSection",
            sec::FUNC_METADATA => "FunctionMetadata",
            sec::CS_NAME_TABLE => "CSNameTableSection",
            sec::LBR_PROFILE => "LBRProfileSection",
            _ => "UnknownSection",
        };
        let has = |f: u64| e.flags & f == f;
        let mut flags: Vec<&str> = Vec::new();
        if has(flag::COMPRESS) {
            flags.push("compressed");
        }
        if has(flag::FLAT) {
            flags.push("flat");
        }
        match e.kind {
            sec::NAME_TABLE => {
                if has(flag::FIXED_LENGTH_MD5) {
                    flags.push("fixlenmd5");
                } else if has(flag::MD5_NAME) {
                    flags.push("md5");
                }
                if has(flag::UNIQ_SUFFIX) {
                    flags.push("uniq");
                }
            }
            sec::SUMMARY => {
                for (f, n) in [
                    (flag::PARTIAL, "partial"),
                    (flag::FULL_CONTEXT, "context"),
                    (flag::PRE_INLINED, "preInlined"),
                    (flag::FS_DISCRIMINATOR, "fs-discriminator"),
                ] {
                    if has(f) {
                        flags.push(n);
                    }
                }
            }
            sec::FUNC_OFFSET if has(flag::ORDERED) => flags.push("ordered"),
            sec::FUNC_METADATA => {
                if has(flag::PROBE_BASED) {
                    flags.push("probe");
                }
                if has(flag::HAS_ATTRIBUTE) {
                    flags.push("attr");
                }
            }
            _ => {}
        }
        writeln!(
            out,
            "{name} - Offset: {}, Size: {}, Flags: {{{}}}",
            e.offset,
            e.size,
            flags.join(",")
        )?;
        total = total.wrapping_add(e.size);
    }
    let header = table.first().map_or(0, |e| e.offset);
    writeln!(out, "Header Size: {header}")?;
    writeln!(out, "Total Sections Size: {total}")?;
    writeln!(out, "File Size: {}", data.len())?;
    Ok(())
}

/// `SampleProfileReader::getSamplesFor(name)`: the plain context of that name (or of its
/// MD5 when the profile has hashed names).
pub fn samples_for<'p>(
    profile: &'p Profile,
    name: &str,
) -> Option<(&'p Context, &'p formats::sampleprof::FunctionSamples)> {
    let by_name = Context::Plain(FunctionId::name(name.as_bytes()));
    let by_hash = Context::Plain(FunctionId::Hash(formats::sampleprof::model::md5_guid(
        name.as_bytes(),
    )));
    profile
        .functions
        .get_key_value(&by_name)
        .or_else(|| profile.functions.get_key_value(&by_hash))
}
