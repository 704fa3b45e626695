//! `llvm-profdata overlap --sample` of LLVM 19 (`SampleOverlapAggregator` in
//! llvm-profdata.cpp): program- and function-level similarity of two sample profiles, with
//! LLVM's arithmetic (doubles, accumulated in LLVM's iteration order) and formatting.
//!
//! Orders: LLVM walks the test profile and then the unmatched base functions in the
//! iteration order of `SampleProfileMap` (a libstdc++ `unordered_map` keyed by the MD5 of
//! the function name), which also breaks ties between equal base weights in the function
//! table. [`load_order`] reproduces it for context-less profiles: text profiles insert in
//! header order, binary ones in their function-record order. Context-sensitive contexts are
//! keyed here by their leaf's MD5 (LLVM hashes the whole frame list), so their ties may
//! come out in another order.

use std::io::{self, Write};

use formats::sampleprof::summary;
use formats::sampleprof::{Context, FunctionId, FunctionSamples, Profile};

use super::show::{func_sample_stats, ColumnLine, FuncSampleStats};
use crate::hash_order::UnorderedMapOrder;

/// One loaded profile and the order LLVM iterates its functions in.
pub struct OverlapInput<'a> {
    /// The file name, as the report prints it.
    pub name: &'a str,
    /// The profile.
    pub profile: &'a Profile,
    /// Its functions in LLVM's iteration order ([`load_order`] of [`insertion_order`]).
    pub order: Vec<&'a Context>,
}

/// `--value-cutoff`, `--function`, `--similarity-cutoff`.
#[derive(Clone, Debug)]
pub struct OverlapOptions {
    /// Functions whose maximum sample count in the test profile is at least this are listed
    /// in the function-level report (default `u64::MAX`: none by this rule).
    pub value_cutoff: u64,
    /// Matched functions whose name contains this are listed too (empty: none by this rule).
    pub function: String,
    /// Matched functions whose similarity is below this, in millionths, are listed too
    /// (default 0: none by this rule).
    pub similarity_cutoff: u64,
}

impl Default for OverlapOptions {
    fn default() -> Self {
        OverlapOptions {
            value_cutoff: u64::MAX,
            function: String::new(),
            similarity_cutoff: 0,
        }
    }
}

/// The key LLVM's map files a context under (for contexts: the leaf's; see the module docs).
pub fn context_hash(ctx: &Context) -> u64 {
    match ctx.function() {
        FunctionId::Hash(h) => *h,
        f => f.guid(),
    }
}

/// The iteration order of LLVM's `SampleProfileMap` after inserting the functions of
/// `profile` in `insertion` order.
pub fn load_order<'a>(profile: &'a Profile, insertion: &[Context]) -> Vec<&'a Context> {
    let mut order = UnorderedMapOrder::new();
    let mut by_hash: hashbrown::HashMap<u64, &'a Context> = Default::default();
    for ctx in insertion {
        if let Some((key, _)) = profile.functions.get_key_value(ctx) {
            let h = context_hash(key);
            by_hash.entry(h).or_insert(key);
            order.insert(h);
        }
    }
    // Functions the insertion list missed (should not happen) go last, in context order.
    let mut out: Vec<&Context> = order.order().iter().map(|h| by_hash[h]).collect();
    if out.len() < profile.functions.len() {
        let listed: hashbrown::HashSet<&Context> = out.iter().copied().collect();
        out.extend(profile.functions.keys().filter(|c| !listed.contains(c)));
    }
    out
}

#[derive(Clone, Debug, Default)]
struct Stats {
    base_name: String,
    test_name: String,
    overlap_count: u64,
    overlap_sample: u64,
    base_unique_count: u64,
    base_unique_sample: u64,
    test_unique_count: u64,
    test_unique_sample: u64,
    base_count: u64,
    base_sample: u64,
    test_count: u64,
    test_sample: u64,
    union_count: u64,
    union_sample: u64,
    similarity: f64,
    base_weight: f64,
    test_weight: f64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Match {
    First,
    Second,
    Both,
}

/// A sort-merge join of two ordered maps (LLVM's `MatchStep`).
fn match_steps<'a, K: Ord + 'a, V: 'a>(
    a: impl IntoIterator<Item = (&'a K, &'a V)>,
    b: impl IntoIterator<Item = (&'a K, &'a V)>,
    mut f: impl FnMut(Match, Option<&'a V>, Option<&'a V>),
) {
    let mut a = a.into_iter().peekable();
    let mut b = b.into_iter().peekable();
    loop {
        let step = match (a.peek(), b.peek()) {
            (None, None) => return,
            (Some(_), None) => Match::First,
            (None, Some(_)) => Match::Second,
            (Some(x), Some(y)) if x.0 < y.0 => Match::First,
            (Some(x), Some(y)) if y.0 < x.0 => Match::Second,
            _ => Match::Both,
        };
        match step {
            Match::First => f(step, a.next().map(|e| e.1), None),
            Match::Second => f(step, None, b.next().map(|e| e.1)),
            Match::Both => f(step, a.next().map(|e| e.1), b.next().map(|e| e.1)),
        }
    }
}

struct Aggregator {
    prof: Stats,
    hot_func: Stats,
    hot_block: Stats,
    base_hot: u64,
    test_hot: u64,
    epsilon: f64,
    low_similarity: f64,
}

impl Aggregator {
    fn block_similarity(&self, base: u64, test: u64, f: &Stats) -> f64 {
        let bf = if f.base_sample > 0 {
            base as f64 / f.base_sample as f64
        } else {
            0.0
        };
        let tf = if f.test_sample > 0 {
            test as f64 / f.test_sample as f64
        } else {
            0.0
        };
        1.0 - (bf - tf).abs()
    }

    fn update_hot_block(&mut self, base: u64, test: u64, hot_blocks: u64) {
        let (bh, th) = (base >= self.base_hot, test >= self.test_hot);
        if !bh && !th {
            return;
        }
        self.hot_block.union_count += hot_blocks;
        if bh {
            self.hot_block.base_count += hot_blocks;
        }
        if th {
            self.hot_block.test_count += hot_blocks;
        }
        if bh && th {
            self.hot_block.overlap_count += hot_blocks;
        }
    }

    fn update_for_function(
        &mut self,
        mut base: u64,
        mut test: u64,
        hot_blocks: u64,
        f: &mut Stats,
        diff: &mut f64,
        status: Match,
    ) {
        match status {
            Match::First => {
                test = 0;
                f.base_unique_sample = f.base_unique_sample.wrapping_add(base);
            }
            Match::Second => {
                base = 0;
                f.test_unique_sample = f.test_unique_sample.wrapping_add(test);
            }
            Match::Both => f.overlap_count += 1,
        }
        f.union_sample = f.union_sample.wrapping_add(base.max(test));
        f.overlap_sample = f.overlap_sample.wrapping_add(base.min(test));
        *diff += 1.0 - self.block_similarity(base, test, f);
        self.update_hot_block(base, test, hot_blocks);
    }

    fn unmatched_callee(&mut self, fs: &FunctionSamples, f: &mut Stats, diff: &mut f64, s: Match) {
        let mut st = FuncSampleStats::default();
        if s == Match::First {
            func_sample_stats(fs, self.base_hot, &mut st);
            self.update_for_function(st.sample_sum, 0, st.hot_block_count, f, diff, s);
        } else {
            func_sample_stats(fs, self.test_hot, &mut st);
            self.update_for_function(0, st.sample_sum, st.hot_block_count, f, diff, s);
        }
    }

    fn internal_overlap(
        &mut self,
        base: &FunctionSamples,
        test: &FunctionSamples,
        f: &mut Stats,
    ) -> f64 {
        let mut diff = 0.0;
        let mut body_steps = Vec::new();
        match_steps(&base.body, &test.body, |s, b, t| {
            body_steps.push((s, b.map_or(0, |r| r.count), t.map_or(0, |r| r.count)))
        });
        for (s, b, t) in body_steps {
            self.update_for_function(b, t, 1, f, &mut diff, s);
        }
        let mut site_steps = Vec::new();
        match_steps(&base.callsites, &test.callsites, |s, b, t| {
            site_steps.push((s, b, t))
        });
        for (s, b, t) in site_steps {
            match (s, b, t) {
                (Match::Both, Some(b), Some(t)) => {
                    let mut callee_steps = Vec::new();
                    match_steps(b, t, |s, x, y| callee_steps.push((s, x, y)));
                    for (cs, x, y) in callee_steps {
                        match (cs, x, y) {
                            (Match::Both, Some(x), Some(y)) => {
                                diff += 2.0 - 2.0 * self.internal_overlap(x, y, f);
                            }
                            (_, Some(x), None) => self.unmatched_callee(x, f, &mut diff, cs),
                            (_, None, Some(y)) => self.unmatched_callee(y, f, &mut diff, cs),
                            _ => {}
                        }
                    }
                }
                (_, Some(callees), None) | (_, None, Some(callees)) => {
                    for callee in callees.values() {
                        self.unmatched_callee(callee, f, &mut diff, s);
                    }
                }
                _ => {}
            }
        }
        (2.0 - diff) / 2.0
    }

    fn weight_for_similarity(&self, sim: f64, base: u64, test: u64) -> f64 {
        let bf = base as f64 / self.prof.base_sample as f64;
        let tf = test as f64 / self.prof.test_sample as f64;
        sim * (1.0 - (bf - tf).abs())
    }

    fn weight_by_importance(&self, sim: f64, base: u64, test: u64) -> f64 {
        let bf = base as f64 / self.prof.base_sample as f64 / 2.0;
        let tf = test as f64 / self.prof.test_sample as f64 / 2.0;
        sim * (bf + tf)
    }

    fn function_overlap(
        &mut self,
        funcs: Option<(&FunctionSamples, &FunctionSamples, &mut Stats)>,
        base: u64,
        test: u64,
    ) -> f64 {
        let internal = match funcs {
            None => 0.0,
            Some((b, t, f)) => {
                let s = self.internal_overlap(b, t, f);
                if s.abs() < self.epsilon {
                    0.0
                } else {
                    s
                }
            }
        };
        self.weight_for_similarity(internal, base, test)
    }
}

fn stats_of(p: &OverlapInput, hot: u64) -> hashbrown::HashMap<Context, FuncSampleStats> {
    p.order
        .iter()
        .map(|&ctx| {
            let mut st = FuncSampleStats::default();
            func_sample_stats(&p.profile.functions[ctx], hot, &mut st);
            (ctx.clone(), st)
        })
        .collect()
}

fn hot_threshold(p: &Profile) -> u64 {
    let s = summary::compute(p);
    // `getEntryForPercentile(DS, 990000)`: the first entry whose cutoff reaches 99%.
    s.entries
        .iter()
        .find(|e| e.cutoff >= 990000)
        .map_or(0, |e| e.min_count)
}

fn pct3(v: f64) -> String {
    format!("{:.3}%", v * 100.0)
}

/// `overlapSampleProfile`: writes llvm-profdata-19's report, or the "sum is 0" lines.
pub fn overlap(
    base: &OverlapInput,
    test: &OverlapInput,
    opts: &OverlapOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut agg = Aggregator {
        prof: Stats::default(),
        hot_func: Stats::default(),
        hot_block: Stats::default(),
        base_hot: hot_threshold(base.profile),
        test_hot: hot_threshold(test.profile),
        epsilon: 0.000005,
        low_similarity: opts.similarity_cutoff as f64 / 1_000_000.0,
    };
    let base_stats = stats_of(base, agg.base_hot);
    let test_stats = stats_of(test, agg.test_hot);
    for ctx in &base.order {
        agg.prof.base_count += 1;
        agg.prof.base_sample = agg
            .prof
            .base_sample
            .wrapping_add(base_stats[*ctx].sample_sum);
    }
    for ctx in &test.order {
        agg.prof.test_count += 1;
        agg.prof.test_sample = agg
            .prof
            .test_sample
            .wrapping_add(test_stats[*ctx].sample_sum);
    }
    let mut zero = false;
    if agg.prof.base_sample == 0 {
        writeln!(out, "Sum of sample counts for profile {} is 0.", base.name)?;
        zero = true;
    }
    if agg.prof.test_sample == 0 {
        writeln!(out, "Sum of sample counts for profile {} is 0.", test.name)?;
        zero = true;
    }
    if zero {
        return Ok(());
    }

    // Base functions still unmatched, in the order of LLVM's second map (same keys and
    // insertion order as the base profile's map).
    let mut unmatched_base: Vec<Option<&Context>> = base.order.iter().map(|c| Some(*c)).collect();
    let base_index: hashbrown::HashMap<&Context, usize> = base
        .order
        .iter()
        .enumerate()
        .map(|(i, c)| (*c, i))
        .collect();
    agg.prof.union_count = base.order.len() as u64;
    let mut dump: Vec<Stats> = Vec::new();
    for &ctx in &test.order {
        let mut f = Stats {
            test_name: ctx.to_string(),
            test_sample: test_stats[ctx].sample_sum,
            ..Stats::default()
        };
        let matched = base_index.get(ctx).copied();
        match matched {
            None => {
                let st = test_stats[ctx];
                agg.prof.test_unique_count += 1;
                agg.prof.test_unique_sample =
                    agg.prof.test_unique_sample.wrapping_add(st.sample_sum);
                f.test_unique_sample = st.sample_sum;
                agg.update_hot_block(0, st.sample_sum, st.hot_block_count);
                let sim = agg.function_overlap(None, 0, st.sample_sum);
                agg.prof.similarity += agg.weight_by_importance(sim, 0, st.sample_sum);
                agg.prof.union_count += 1;
                agg.prof.union_sample = agg.prof.union_sample.wrapping_add(st.sample_sum);
            }
            Some(i) => {
                agg.prof.overlap_count += 1;
                f.base_name = ctx.to_string();
                f.base_sample = base_stats[ctx].sample_sum;
                let (bs, ts) = (f.base_sample, f.test_sample);
                let bfs = &base.profile.functions[ctx];
                let tfs = &test.profile.functions[ctx];
                let mut scratch = f.clone();
                let sim = agg.function_overlap(Some((bfs, tfs, &mut scratch)), bs, ts);
                f = scratch;
                f.similarity = sim;
                agg.prof.similarity += agg.weight_by_importance(sim, bs, ts);
                agg.prof.overlap_sample = agg.prof.overlap_sample.wrapping_add(f.overlap_sample);
                agg.prof.union_sample = agg.prof.union_sample.wrapping_add(f.union_sample);
                agg.prof.base_unique_sample = agg
                    .prof
                    .base_unique_sample
                    .wrapping_add(f.base_unique_sample);
                agg.prof.test_unique_sample = agg
                    .prof
                    .test_unique_sample
                    .wrapping_add(f.test_unique_sample);
                unmatched_base[i] = None;
            }
        }
        let is_matched = matched.is_some();
        if test_stats[ctx].max_sample >= opts.value_cutoff
            || (is_matched && f.similarity < agg.low_similarity)
            || (is_matched && !opts.function.is_empty() && f.base_name.contains(&opts.function))
        {
            f.base_weight = f.base_sample as f64 / agg.prof.base_sample as f64;
            f.test_weight = f.test_sample as f64 / agg.prof.test_sample as f64;
            dump.push(f);
        }
    }
    for ctx in unmatched_base.into_iter().flatten() {
        let st = base_stats[ctx];
        agg.prof.base_unique_count += 1;
        agg.prof.base_unique_sample = agg.prof.base_unique_sample.wrapping_add(st.sample_sum);
        agg.update_hot_block(st.sample_sum, 0, st.hot_block_count);
        let sim = agg.function_overlap(None, st.sample_sum, 0);
        agg.prof.similarity += agg.weight_by_importance(sim, st.sample_sum, 0);
        agg.prof.union_sample = agg.prof.union_sample.wrapping_add(st.sample_sum);
    }
    if (agg.prof.similarity - 1.0).abs() < agg.epsilon {
        agg.prof.similarity = 1.0;
    }
    hot_function_overlap(&mut agg, base, test, &base_stats, &test_stats);

    program_summary(out, &agg, base.name, test.name)?;
    hot_overlap(out, &agg)?;
    // `std::multimap<double, …, greater>`: by base weight descending, ties in insertion order.
    dump.sort_by(|a, b| b.base_weight.total_cmp(&a.base_weight));
    function_table(out, &dump)
}

fn hot_function_overlap(
    agg: &mut Aggregator,
    base: &OverlapInput,
    test: &OverlapInput,
    base_stats: &hashbrown::HashMap<Context, FuncSampleStats>,
    test_stats: &hashbrown::HashMap<Context, FuncSampleStats>,
) {
    let base_hot: Vec<&Context> = base
        .order
        .iter()
        .copied()
        .filter(|c| base_stats[*c].max_sample >= agg.base_hot)
        .collect();
    let test_hot: hashbrown::HashSet<&Context> = test
        .order
        .iter()
        .copied()
        .filter(|c| test_stats[*c].max_sample >= agg.test_hot)
        .collect();
    agg.hot_func.base_count = base_hot.len() as u64;
    agg.hot_func.test_count = test_hot.len() as u64;
    agg.hot_func.union_count = agg.hot_func.test_count;
    for c in base_hot {
        if test_hot.contains(c) {
            agg.hot_func.overlap_count += 1;
        } else {
            agg.hot_func.union_count += 1;
        }
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    a as f64 / b as f64
}

fn program_summary(
    out: &mut dyn Write,
    agg: &Aggregator,
    base: &str,
    test: &str,
) -> io::Result<()> {
    let p = &agg.prof;
    writeln!(
        out,
        "Profile overlap infomation for base_profile: {base} and test_profile: {test}\nProgram level:"
    )?;
    writeln!(
        out,
        "  Whole program profile similarity: {}",
        pct3(p.similarity)
    )?;
    writeln!(
        out,
        "  Whole program sample overlap: {}",
        pct3(ratio(p.overlap_sample, p.union_sample))
    )?;
    writeln!(
        out,
        "    percentage of samples unique in base profile: {}",
        pct3(ratio(p.base_unique_sample, p.base_sample))
    )?;
    writeln!(
        out,
        "    percentage of samples unique in test profile: {}",
        pct3(ratio(p.test_unique_sample, p.test_sample))
    )?;
    writeln!(out, "    total samples in base profile: {}", p.base_sample)?;
    writeln!(out, "    total samples in test profile: {}", p.test_sample)?;
    writeln!(
        out,
        "  Function overlap: {}",
        pct3(ratio(p.overlap_count, p.union_count))
    )?;
    writeln!(out, "    overlap functions: {}", p.overlap_count)?;
    writeln!(
        out,
        "    functions unique in base profile: {}",
        p.base_unique_count
    )?;
    writeln!(
        out,
        "    functions unique in test profile: {}",
        p.test_unique_count
    )
}

fn hot_overlap(out: &mut dyn Write, agg: &Aggregator) -> io::Result<()> {
    for (what, s) in [("function", &agg.hot_func), ("block", &agg.hot_block)] {
        writeln!(
            out,
            "  Hot-{what} overlap: {}",
            pct3(ratio(s.overlap_count, s.union_count))
        )?;
        writeln!(out, "    overlap hot {what}s: {}", s.overlap_count)?;
        writeln!(
            out,
            "    hot {what}s unique in base profile: {}",
            s.base_count.wrapping_sub(s.overlap_count)
        )?;
        writeln!(
            out,
            "    hot {what}s unique in test profile: {}",
            s.test_count.wrapping_sub(s.overlap_count)
        )?;
    }
    Ok(())
}

fn function_table(out: &mut dyn Write, dump: &[Stats]) -> io::Result<()> {
    if dump.is_empty() {
        return Ok(());
    }
    const COLS: [usize; 8] = [15, 30, 43, 53, 67, 81, 96, 111];
    writeln!(out, "Function-level details:")?;
    let titles = [
        "Test weight",
        "Similarity",
        "Overlap",
        "Base unique",
        "Test unique",
        "Base samples",
        "Test samples",
        "Function name",
    ];
    let mut line = ColumnLine {
        text: "Base weight".into(),
    };
    for (c, t) in COLS.iter().zip(titles) {
        line.pad_to(*c);
        line.text.push_str(t);
    }
    writeln!(out, "{}", line.text)?;
    let frac = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    for f in dump {
        let cells = [
            format!("{:.2}%", f.test_weight * 100.0),
            format!("{:.2}%", f.similarity * 100.0),
            format!("{:.2}%", frac(f.overlap_sample, f.union_sample) * 100.0),
            format!("{:.2}%", frac(f.base_unique_sample, f.base_sample) * 100.0),
            format!("{:.2}%", frac(f.test_unique_sample, f.test_sample) * 100.0),
            f.base_sample.to_string(),
            f.test_sample.to_string(),
            f.test_name.clone(),
        ];
        let mut line = ColumnLine {
            text: format!("{:.2}%", f.base_weight * 100.0),
        };
        for (c, cell) in COLS.iter().zip(cells) {
            line.pad_to(*c);
            line.text.push_str(&cell);
        }
        writeln!(out, "{}", line.text)?;
    }
    Ok(())
}

/// The order LLVM's reader inserts the functions of a profile into its map: header order for
/// text profiles (a repeated header merges into the first), record order (hottest first, as
/// LLVM writes them) for the other encodings.
pub fn insertion_order(data: &[u8], profile: &Profile) -> Vec<Context> {
    if formats::sampleprof::detect(data) != Some(formats::sampleprof::Format::Text) {
        return profile
            .sorted_functions()
            .into_iter()
            .map(|(c, _)| c.clone())
            .collect();
    }
    let by_text: hashbrown::HashMap<String, &Context> = profile
        .functions
        .keys()
        .map(|c| (c.to_string(), c))
        .collect();
    let mut out = Vec::with_capacity(profile.functions.len());
    for line in data.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || line[0] == b' ' || line[0] == b'#' {
            continue;
        }
        // NAME:TOTAL:HEAD, the name itself possibly containing ':'.
        let Some(second) = memchr::memrchr(b':', line) else {
            continue;
        };
        let Some(first) = memchr::memrchr(b':', &line[..second]) else {
            continue;
        };
        let name = &line[..first];
        let name = name
            .strip_prefix(b"[")
            .and_then(|n| n.strip_suffix(b"]"))
            .unwrap_or(name);
        if let Some(ctx) = by_text.get(String::from_utf8_lossy(name).as_ref()) {
            out.push((*ctx).clone());
        }
    }
    out
}
