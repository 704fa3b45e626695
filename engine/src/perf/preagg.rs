//! Writing a binary's aggregated profile as BOLT pre-aggregated text (LLVM ≥ 21's `T`/`B`/`E`/`S`
//! records).

use std::io::Write;

use formats::bolt::preagg::PreaggWriter;

use crate::io::output::write_formatted;
use crate::perf::aggregate::BinaryProfile;

/// Writes one binary's profile as BOLT pre-aggregated text.
pub fn write_preagg(out: &mut dyn Write, p: &BinaryProfile) -> std::io::Result<()> {
    let mut w = PreaggWriter::new(&mut *out);
    for e in &p.events {
        w.event(e)?;
    }
    write_formatted(out, &p.ips, |ips, text| {
        let mut w = PreaggWriter::new(text);
        ips.iter()
            .try_for_each(|&(addr, count)| w.sample(addr, count))
    })?;
    write_formatted(out, &p.traces, |traces, text| {
        let mut w = PreaggWriter::new(text);
        traces
            .iter()
            .try_for_each(|&((branch, from, to), c)| w.trace(branch, from, to, c.taken))
    })?;
    // `T` has no misprediction field: carry them in zero-count `B` records of the same branch.
    let mut mispreds: Vec<((u64, u64), u64)> = Vec::new();
    for &((branch, from, _), c) in &p.traces {
        if c.mispred == 0 {
            continue;
        }
        match mispreds.last_mut() {
            Some((k, m)) if *k == (branch, from) => *m += c.mispred,
            _ => mispreds.push(((branch, from), c.mispred)),
        }
    }
    write_formatted(out, &mispreds, |mispreds, text| {
        let mut w = PreaggWriter::new(text);
        mispreds
            .iter()
            .try_for_each(|&((branch, from), m)| w.branch(branch, from, 0, m))
    })
}
