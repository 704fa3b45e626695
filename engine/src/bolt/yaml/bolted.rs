//! The YAML profile of a BOLTed binary, as perf2bolt 22 writes it (`DataAggregator::writeBATYAML`):
//! the profile is the input binary's, so a function that BOLT translated (one with a BAT table)
//! gets its record from the tables, not from a CFG of the optimized code.
//!
//! * Functions without a table that have a profile come first, in address order, converted as
//!   for any binary ([`super::cfg_records`]), but a call into a translated function names the
//!   input function (`setCSIDestination` → `translateSymbol`).
//! * Then each translated function with branch data (perf2bolt's `NamesToBranches`, a
//!   `std::map` keyed by `getOneName()`: name order, byte-wise), with its table's function
//!   hash and block count. Its blocks are the table's block entries of the hot fragment and
//!   then of its cold fragments, keyed by input offset (the first entry for an offset wins),
//!   in offset order: the k-th of them gives the k-th block its index and hash. A branch line
//!   lands on the block containing its source: a successor (the target's block) when it stays
//!   inside the function at a non-zero offset, a call site (offset from the block's start)
//!   otherwise; lines are taken sorted by (source, target), targets by (known, name, offset),
//!   names as perf2bolt prints them.
//!   Entries at a block's input offset add to that block's `exec`, but not a translated
//!   fall-through that ends at offset 0 (an inner branch to perf2bolt, which the line above
//!   still turns into a call site). Blocks without a count are dropped; `insns` is 0 (the
//!   tables do not record it).
//! * Secondary entry points (call discriminators into functions without a table) come from
//!   disassembling every profiled function, translated or not, as perf2bolt does.
//! * A basic (no-LBR) profile has no functions at all (perf2bolt 22 converts none).
//!
//! The header says `dfs-order: false` whatever `--profile-use-dfs` says, and always names the
//! profile kind (`lbr` or `sample`).

use std::collections::BTreeMap;

use formats::bolt::yaml;

use super::{cfg_records, file_lines, with_intra, Bodies, Lines, Options};
use crate::bolt::cfg::Body;
use crate::bolt::functions::Functions;
use crate::bolt::{printed_name, BatIndex, Fdata};

/// Why perf2bolt would refuse (or misread) a BOLTed binary's tables while writing YAML.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableError {
    /// The translated function.
    pub function: String,
    /// Its hot fragment's address.
    pub address: u64,
    /// What is wrong.
    pub what: String,
}

impl std::fmt::Display for TableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "BAT table of {} (at {:#x}): {}",
            self.function, self.address, self.what
        )
    }
}

impl std::error::Error for TableError {}

/// The YAML profile of `fdata`, symbolized through `bat` (see [`crate::bolt::symbolize_bolted`]),
/// as perf2bolt 22 writes it for a BOLTed binary; the inner branches of functions without a
/// table from `intra` when given (see [`super::profile_with_intra`]).
pub fn bat_profile(
    fdata: &Fdata,
    intra: Option<&Fdata>,
    data: &[u8],
    bat: &BatIndex,
    options: &Options,
) -> Result<yaml::Profile, TableError> {
    let basic = fdata.basic_events.is_some();
    let header = yaml::Header {
        binary_name: options.binary_name.clone(),
        build_id: Some(
            options
                .build_id
                .clone()
                .unwrap_or_else(|| "<unknown>".into()),
        ),
        flags: vec![if basic { "sample" } else { "lbr" }],
        origin: "perf data aggregator".into(),
        events: fdata
            .basic_events
            .as_ref()
            .map_or_else(String::new, |e| e.join(",")),
        dfs_order: false,
        xxh3: true,
    };
    let mut profile = yaml::Profile {
        header,
        functions: Vec::new(),
    };
    if basic {
        return Ok(profile);
    }
    let functions = fdata.functions;
    let lines = file_lines(fdata);
    let translated = |i: u32| bat.translation.fragment(functions.get(i as usize).address);
    let mut others: Vec<u32> = lines
        .keys()
        .copied()
        .filter(|&i| translated(i).is_none())
        .collect();
    others.sort_unstable();
    // perf2bolt records zero-count pre-aggregated lines' inner branches apart on CFGs (see
    // `profile_with_intra`); a table's record takes its lines as they are.
    let cfg_lines = with_intra(
        others.iter().map(|&i| (i, lines[&i].clone())).collect(),
        intra,
    );
    others.retain(|i| cfg_lines.contains_key(i));
    // perf2bolt disassembles every profiled function, translated or not: a translated one's
    // jump into another's middle makes a secondary entry there.
    let mut profiled: Vec<u32> = lines.keys().copied().collect();
    profiled.sort_unstable();
    let find = || super::bodies(functions, &profiled, false);
    let (records, found) = cfg_records(fdata, data, &others, find, &cfg_lines, false, Some(bat));
    profile.functions = records;
    // Only hot fragments carry lines: a cold fragment's count for its parent.
    let mut tabled: Vec<u32> = lines
        .keys()
        .copied()
        .filter(|&i| {
            let address = functions.get(i as usize).address;
            bat.translation.hot_fragment(address).is_some()
        })
        .collect();
    tabled.sort_unstable_by(|&a, &b| {
        let name = |i: u32| functions.get(i as usize).name.as_bytes();
        name(a).cmp(name(b))
    });
    let numbers: Vec<u32> = (0..functions.len()).map(|i| functions.number(i)).collect();
    let context = Context {
        functions,
        bat,
        numbers: &numbers,
        found: &found,
    };
    for i in tabled {
        profile.functions.push(context.record(i, &lines[&i])?);
    }
    Ok(profile)
}

/// What every translated function's record needs.
struct Context<'a> {
    functions: &'a Functions,
    bat: &'a BatIndex<'a>,
    numbers: &'a [u32],
    /// The CFGs of the functions without a table (for calls to their secondary entries).
    found: &'a Bodies,
}

/// A table's blocks of one function by input offset: (index, hash).
type BlockMap = BTreeMap<u32, (u32, u64)>;

/// Where a line's target goes, for ordering: (known, name, offset), as BOLT's `Location`
/// compares.
type TargetKey<'n> = (bool, &'n str, u64);

impl Context<'_> {
    /// The record of translated function `i` from its lines.
    fn record(&self, i: u32, l: &Lines) -> Result<yaml::Function, TableError> {
        let f = self.functions.get(i as usize);
        let fail = |what: String| TableError {
            function: f.name.clone(),
            address: f.address,
            what,
        };
        let hot = self
            .bat
            .translation
            .hot_fragment(f.address)
            .expect("a translated function");
        let map = self.block_map(f.address);
        let positional: Vec<(u32, u64)> = map.values().copied().collect();
        let nblocks = hot.blocks as u32;
        let block = |offset: u64| -> Result<(u32, u32), TableError> {
            let offset = offset as u32;
            let (&start, &(index, _)) = map.range(..=offset).next_back().ok_or_else(|| {
                fail(format!("no block at or before input offset {offset:#x} (perf2bolt: \"invalid BAT section\")"))
            })?;
            Ok((start, index))
        };
        let mut blocks: BTreeMap<u32, yaml::Block> = BTreeMap::new();
        let check = |index: u32| {
            if index < nblocks {
                Ok(index)
            } else {
                Err(fail(format!(
                    "block index {index} of a function with {nblocks} blocks"
                )))
            }
        };
        // perf2bolt names a function's own lines `getLocationName` too (`AggrData->Name`).
        let own = printed_name(f, true);
        let mut data: Vec<(u64, TargetKey, Target)> = l
            .intra
            .iter()
            .map(|&(from, to, b)| (from, (true, own, to), Target::Inside(to, b)))
            .chain(l.out.iter().map(|&(from, to, b)| {
                let key = match to.func {
                    Some(g) => (true, self.printed(g), to.offset),
                    None => (false, "", 0),
                };
                (from, key, Target::Outside(to, b))
            }))
            .collect();
        data.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        for (from, _, target) in data {
            let (start, index) = block(from)?;
            match target {
                Target::Inside(to, b) => {
                    let (_, successor) = block(to)?;
                    let at = check(index)?;
                    block_at(&mut blocks, &positional, at)
                        .succ
                        .push(yaml::Succ {
                            bid: successor,
                            count: b.count,
                            mispreds: b.mispreds,
                        });
                }
                Target::Outside(to, b) => {
                    let (fid, disc) = match to.func {
                        Some(g) => self.destination(g as usize, to.offset as u32),
                        None => (0, 0),
                    };
                    let at = check(index)?;
                    block_at(&mut blocks, &positional, at)
                        .calls
                        .push(yaml::Call {
                            offset: (from as u32).wrapping_sub(start),
                            fid,
                            disc,
                            count: b.count,
                            mispreds: b.mispreds,
                        });
                }
            }
        }
        let mut exec = 0u64;
        for &(to, b) in &l.entries {
            if to == 0 {
                exec = exec.wrapping_add(b.count);
            }
            // `isInputBlock` takes the offset as 32 bits, as every BAT offset is.
            if let Some(&(index, _)) = map.get(&(to as u32)) {
                let block = block_at(&mut blocks, &positional, check(index)?);
                block.exec = block.exec.wrapping_add(b.count);
            }
        }
        let counted = blocks
            .into_values()
            .filter(|b| {
                b.exec != 0
                    || b.succ.iter().any(|s| s.count != 0)
                    || b.calls.iter().any(|c| c.count != 0)
            })
            .collect();
        Ok(yaml::Function {
            name: printed_name(f, true).to_string(),
            fid: self.numbers[i as usize],
            hash: hot.hash,
            exec,
            nblocks,
            blocks: counted,
        })
    }

    /// `getBBHashMap`: the block entries of the hot fragment at `address`, then of its cold
    /// fragments, by input offset; the first entry for an offset wins (`std::map::emplace`).
    fn block_map(&self, address: u64) -> BlockMap {
        let t = self.bat.translation;
        let hot = t.hot_fragment(address).map_or(&[][..], |h| &h.entries[..]);
        let mut map = BlockMap::new();
        let cold = t.cold_fragments_of(address).flat_map(|c| c.entries.iter());
        for e in hot.iter().chain(cold) {
            if let Some(id) = e.block {
                map.entry(e.input_offset())
                    .or_insert((id.index as u32, id.hash));
            }
        }
        map
    }

    /// perf2bolt's name for function `g` in a line (`getLocationName`).
    fn printed(&self, g: u32) -> &str {
        printed_name(self.functions.get(g as usize), true)
    }

    /// `setCSIDestination(…, BAT, offset)` for a call to `offset` in function `g` (a parent,
    /// as lines name them): the callee's number and entry discriminator.
    fn destination(&self, g: usize, offset: u32) -> (u32, u32) {
        if let Some(found) = bat_destination(self.functions, self.bat, self.numbers, g, 0, offset) {
            return found;
        }
        // `getBasicBlockContainingOffset`, then the block's secondary entry symbol, if any.
        let disc = match self.found.bodies.get(&(g as u32)) {
            Some(Body::Cfg(cfg)) => cfg
                .block_containing(u64::from(offset))
                .map(|b| cfg.blocks[b].offset)
                .and_then(|start| {
                    let entries = self.found.entries.get(&(g as u32))?;
                    let rank = entries
                        .iter()
                        .filter(|&&o| o != 0)
                        .position(|&o| o == start)?;
                    Some(rank as u32 + 1)
                })
                .unwrap_or(0),
            _ => 0,
        };
        (self.numbers[g], disc)
    }
}

/// The block at position `index` of a translated function's record (made on first use, with
/// the `index`-th table block's index and hash: LLVM zips the block map with the blocks).
fn block_at<'b>(
    blocks: &'b mut BTreeMap<u32, yaml::Block>,
    positional: &[(u32, u64)],
    index: u32,
) -> &'b mut yaml::Block {
    blocks.entry(index).or_insert_with(|| {
        let (bid, hash) = positional.get(index as usize).copied().unwrap_or_default();
        yaml::Block {
            bid,
            hash,
            ..yaml::Block::default()
        }
    })
}

/// A line from a translated function: inside it (target offset) or out of it.
#[derive(Clone, Copy)]
enum Target {
    Inside(u64, crate::bolt::Branch),
    Outside(crate::bolt::Loc, crate::bolt::Branch),
}

/// `setCSIDestination` when the callee `g` has a BAT table (hot or cold fragment):
/// `translateSymbol` of the callee's symbol at `output_offset` in it, plus `offset`: the
/// input function's number, and the secondary entry point the input offset is (0 for none).
/// `None` when `g` has no table.
pub(super) fn bat_destination(
    functions: &Functions,
    bat: &BatIndex,
    numbers: &[u32],
    g: usize,
    output_offset: u32,
    offset: u32,
) -> Option<(u32, u32)> {
    let address = functions.get(g).address;
    let fragment = bat.translation.fragment(address)?;
    let parent = bat.parent(g as u32) as usize;
    let input = (bat
        .translation
        .translate(address, u64::from(output_offset), false) as u32)
        .wrapping_add(offset);
    let disc = if input == 0 {
        0
    } else {
        bat.translation.secondary_entry_id(fragment.parent, input)
    };
    Some((numbers[parent], disc))
}
