//! Profiles from IP samples (captures without branch stacks, e.g. `perf record -e
//! cpu-clock`), as each tool makes them:
//!
//! * llvm-profgen 19 with `--leading-ip-only`: each sample's IP, when an instruction starts
//!   there, is a one-instruction range `[ip, ip]` with the sample count, and no branch; the
//!   ranges then go through the usual symbolization (the ranges of the functions they start
//!   in join with count 0, totals add count × instruction size, a line is the maximum). It
//!   detects the input type from the first sample line, so `--perfdata` of a capture without
//!   branch stacks fails ("Invalid perf script input!") before that option is looked at: only
//!   perf script input with a branch record after each IP reaches it.
//! * create_llvm_prof with `--use_lbr=false`: each sample's IP counts once at its address
//!   (not per byte of a range); a function is processed when the sum of its IP samples
//!   passes the threshold (from the sum of all samples); no heads, no call targets. This part
//!   is in [`super::profile`] (`FunctionMaps::ips`). On a capture with branch stacks it still
//!   reads them for heads, call targets and the threshold ([`super::ip_line_profile`]).

use super::code::Code;
use super::profgen::Counted;
use rayon::prelude::*;

/// llvm-profgen's ranges of IP samples `ips` (address, samples): `[ip, ip]` for each IP
/// where an instruction starts, sorted.
pub(super) fn profgen_ranges(code: &Code, ips: &[(u64, u64)]) -> Vec<Counted> {
    code.decode_at(ips.par_iter().map(|&(a, _)| a));
    let mut ranges: Vec<Counted> = ips
        .iter()
        .filter(|&&(a, n)| n != 0 && code.starts_instruction(a))
        .map(|&(a, n)| ((a, a), n))
        .collect();
    ranges.sort_unstable_by_key(|r| r.0);
    ranges
}
