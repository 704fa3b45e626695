//! Writing a binary's aggregated profile in LLVM 19's pre-aggregated dialect, whose fall-throughs
//! are classified by the ELF's functions.

use std::io::Write;

use formats::bolt::preagg::{PreaggWriter, BR_ONLY};

use crate::bolt::functions::Functions;
use crate::perf::aggregate::BinaryProfile;
use crate::perf::table::Counts;

/// Writes one binary's profile in the LLVM ≤ 20 dialect (`B`, `F`, `f`), deriving what LLVM 19's
/// perf mode derives from each trace: the branch (endpoints outside every function become 0),
/// and the fall-through when both its ends lie in one function — `F` if the branch came from
/// that function too, `f` if it came from outside.
pub fn write_preagg_legacy(
    out: &mut dyn Write,
    p: &BinaryProfile,
    functions: &Functions,
) -> std::io::Result<()> {
    use std::collections::BTreeMap;
    let mut branches: BTreeMap<(u64, u64), Counts> = BTreeMap::new();
    let mut fall_throughs: BTreeMap<(u64, u64, bool), u64> = BTreeMap::new();
    let in_function = |a: u64| {
        if a != BR_ONLY && functions.index_containing(a).is_some() {
            a
        } else {
            0
        }
    };
    for &((branch, from, to), c) in &p.traces {
        let key = (in_function(branch), in_function(from));
        if key != (0, 0) {
            branches.entry(key).or_default().add(c);
        }
        if to == BR_ONLY || from == BR_ONLY {
            continue;
        }
        let Some(f) = functions.index_containing(from) else {
            continue;
        };
        if functions.index_containing(to) == Some(f) {
            let external = functions.index_containing(branch) != Some(f);
            let n = fall_throughs.entry((from, to, external)).or_default();
            *n = n.wrapping_add(c.taken);
        }
    }
    let mut w = PreaggWriter::new(out);
    for ((from, to), c) in branches {
        w.branch(from, to, c.taken, c.mispred)?;
    }
    for ((start, end, external), count) in fall_throughs {
        w.fall_through(external, start, end, count)?;
    }
    Ok(())
}
