//! BOLT Address Translation of a BOLTed binary: its `.note.bolt_bat` tables
//! ([`formats::bolt::bat`]) and the queries perf2bolt makes of them
//! (`BoltAddressTranslation::translate`, `getFallthroughsInTrace`, `fetchParentAddress`).

use std::path::{Path, PathBuf};

use object::{Object, ObjectSection};

use formats::bolt::bat::{self, Bat, BatError, ColdFragment, Entry, HotFragment};

use crate::error::{Error, Result};

/// A BOLTed binary's translation tables, indexed by fragment address.
#[derive(Clone, Debug)]
pub struct Translation {
    /// The tables as decoded.
    pub tables: Bat,
    /// The section's size in bytes (what `llvm-bolt` reports as "BAT section size").
    pub section_size: u64,
    /// Every fragment, hot and cold, by address: (address, index in `hot` or `cold`, is cold).
    fragments: Vec<(u64, usize, bool)>,
}

/// One fragment's map, as a query sees it.
#[derive(Clone, Copy, Debug)]
pub struct Fragment<'a> {
    /// The fragment's address in the BOLTed binary.
    pub address: u64,
    /// Its function's hot fragment address (its own for a hot fragment).
    pub parent: u64,
    /// Its map, by output offset.
    pub entries: &'a [Entry],
}

impl Translation {
    /// The tables of the ELF file `data` (read from `path`), or `None` when it has no
    /// `.note.bolt_bat` section. A section that does not decode is an error naming the file.
    pub fn from_elf(path: &Path, data: &[u8]) -> Result<Option<Translation>> {
        let bad = |message: String| Error::Binary {
            path: path.to_path_buf(),
            message,
        };
        let file = object::File::parse(data)
            .map_err(|e| bad(format!("not an ELF file this tool can read: {e}")))?;
        let Some(section) = file.section_by_name(bat::SECTION_NAME) else {
            return Ok(None);
        };
        let bytes = section
            .data()
            .map_err(|e| bad(format!("cannot read {}: {e}", bat::SECTION_NAME)))?;
        let base = section.file_range().map_or(0, |(offset, _)| offset);
        let tables = bat::parse_note(bytes, base).map_err(|e: BatError| bad(e.to_string()))?;
        Ok(Some(Translation::new(tables, bytes.len() as u64)))
    }

    /// [`Translation::from_elf`] of the file at `path`.
    pub fn load(path: &Path) -> Result<Option<Translation>> {
        let data = crate::io::input::read(path).map_err(crate::error::io_error(path))?;
        Translation::from_elf(path, &data)
    }

    /// Indexes decoded tables.
    pub fn new(tables: Bat, section_size: u64) -> Translation {
        let mut fragments: Vec<(u64, usize, bool)> = tables
            .hot
            .iter()
            .enumerate()
            .map(|(i, f)| (f.address, i, false))
            .chain(
                tables
                    .cold
                    .iter()
                    .enumerate()
                    .map(|(i, f)| (f.address, i, true)),
            )
            .collect();
        fragments.sort_unstable();
        Translation {
            tables,
            section_size,
            fragments,
        }
    }

    /// Hot and cold fragments: the number of maps `llvm-bolt` reports writing.
    pub fn maps(&self) -> usize {
        self.fragments.len()
    }

    /// The fragment that starts at `address`.
    pub fn fragment(&self, address: u64) -> Option<Fragment<'_>> {
        let i = self
            .fragments
            .binary_search_by_key(&address, |f| f.0)
            .ok()?;
        Some(self.fragment_at(i))
    }

    /// The hot fragment (a function's table) that starts at `address`.
    pub fn hot_fragment(&self, address: u64) -> Option<&HotFragment> {
        let i = self
            .fragments
            .binary_search_by_key(&address, |f| f.0)
            .ok()?;
        let (_, index, cold) = self.fragments[i];
        (!cold).then(|| &self.tables.hot[index])
    }

    /// The cold fragments of the hot fragment at `address`, in table (address) order.
    pub fn cold_fragments_of(&self, address: u64) -> impl Iterator<Item = &ColdFragment> {
        let hot = self.tables.hot.iter().position(|h| h.address == address);
        self.tables
            .cold
            .iter()
            .filter(move |c| hot.is_some_and(|h| c.hot_index == h as u64))
    }

    /// `getSecondaryEntryPointId`: the rank (from 1) of `input_offset` among the secondary
    /// entry points of the function whose hot fragment is at `hot`, or 0.
    pub fn secondary_entry_id(&self, hot: u64, input_offset: u32) -> u32 {
        self.hot_fragment(hot)
            .and_then(|h| {
                h.secondary_entry_points
                    .iter()
                    .position(|&o| o == input_offset)
            })
            .map_or(0, |rank| rank as u32 + 1)
    }

    /// The fragment with the greatest address not above `address` (which may still lie past
    /// that fragment's end: the tables do not record sizes).
    pub fn fragment_before(&self, address: u64) -> Option<Fragment<'_>> {
        let i = self.fragments.partition_point(|f| f.0 <= address);
        (i > 0).then(|| self.fragment_at(i - 1))
    }

    fn fragment_at(&self, i: usize) -> Fragment<'_> {
        let (address, index, cold) = self.fragments[i];
        if cold {
            let f = &self.tables.cold[index];
            Fragment {
                address,
                parent: self.tables.hot[f.hot_index as usize].address,
                entries: &f.entries,
            }
        } else {
            Fragment {
                address,
                parent: address,
                entries: &self.tables.hot[index].entries,
            }
        }
    }

    /// perf2bolt's `translate`: `offset` in the fragment at `fragment` as an offset in the input
    /// function. A branch source maps to the input offset of the entry that holds it (the
    /// first instruction of its block, or the branch itself); any other address keeps its
    /// distance from that entry. Fragments without a map, and offsets before the first entry,
    /// are unchanged.
    pub fn translate(&self, fragment: u64, offset: u64, is_branch_source: bool) -> u64 {
        let Some(f) = self.fragment(fragment) else {
            return offset;
        };
        // `upper_bound(offset)`, then one back.
        let i = f
            .entries
            .partition_point(|e| u64::from(e.output_offset) <= offset);
        let Some(e) = i.checked_sub(1).map(|i| &f.entries[i]) else {
            return offset;
        };
        let input = u64::from(e.input_offset());
        if is_branch_source {
            input
        } else {
            (offset.wrapping_sub(u64::from(e.output_offset))).wrapping_add(input)
        }
    }

    /// perf2bolt's `getFallthroughsInTrace` for addresses `from` and `to` of the fragment at
    /// `fragment`: the block-to-block steps between the block holding `from` and the one
    /// holding `to`, each as the two block entries' input offsets (each entry's own: entries
    /// can share an output offset, a deleted block's and its successor's). `None` when the
    /// fragment has no map.
    pub fn fallthroughs(&self, fragment: u64, from: u64, to: u64) -> Option<Vec<(u64, u64)>> {
        let mut steps = Vec::new();
        if from >= to {
            return Some(steps);
        }
        let f = self.fragment(fragment)?;
        let (from, to) = (from.wrapping_sub(fragment), to.wrapping_sub(fragment));
        let entries = f.entries;
        let upper_bound = |x: u64| entries.partition_point(|e| u64::from(e.output_offset) <= x);
        // The block entry at or before `from`, skipping branch entries.
        let mut start = upper_bound(from);
        loop {
            if start == 0 {
                return Some(steps);
            }
            start -= 1;
            if !entries[start].is_branch() {
                break;
            }
        }
        let end = upper_bound(to);
        if end == 0 {
            return Some(steps);
        }
        let end = end - 1;
        if entries[start].output_offset >= entries[end].output_offset {
            return Some(steps);
        }
        let mut i = start;
        while i != end {
            let source = u64::from(entries[i].input_offset());
            if entries[i].is_branch() {
                i += 1;
                continue;
            }
            i += 1;
            while entries[i].is_branch() && i != end {
                i += 1;
            }
            if entries[i].is_branch() {
                break;
            }
            steps.push((source, u64::from(entries[i].input_offset())));
        }
        Some(steps)
    }
}

/// Where a BOLTed binary came from, for messages.
pub fn describe(path: &Path, t: &Translation) -> String {
    format!(
        "{}: {} BAT maps ({} hot, {} cold), section of {} bytes",
        PathBuf::from(path).display(),
        t.maps(),
        t.tables.hot.len(),
        t.tables.cold.len(),
        t.section_size
    )
}

#[cfg(test)]
mod tests {
    use formats::bolt::bat::{BlockId, ColdFragment, HotFragment};

    use super::*;

    fn e(output_offset: u32, input_offset: u32, branch: bool) -> Entry {
        Entry {
            output_offset,
            input: input_offset << 1 | u32::from(branch),
            block: (!branch).then_some(BlockId::default()),
        }
    }

    fn translation() -> Translation {
        let tables = Bat {
            hot: vec![HotFragment {
                address: 0x1000,
                entries: vec![
                    e(0, 0, false),
                    e(6, 0x10, true),
                    e(8, 0x20, false),
                    e(0x10, 0x8, false),
                ],
                ..Default::default()
            }],
            cold: vec![ColdFragment {
                address: 0x9000,
                hot_index: 0,
                input_skew: 0x30,
                entries: vec![e(0, 0x30, false), e(4, 0x38, false)],
            }],
        };
        Translation::new(tables, 0)
    }

    #[test]
    fn translate_follows_perf2bolt() {
        let t = translation();
        assert_eq!(t.translate(0x1000, 7, true), 0x10);
        assert_eq!(t.translate(0x1000, 7, false), 0x11);
        assert_eq!(t.translate(0x1000, 0x12, false), 0xa);
        assert_eq!(t.translate(0x1000, 0x12, true), 0x8);
        assert_eq!(t.translate(0x9000, 5, false), 0x39);
        // No map: unchanged.
        assert_eq!(t.translate(0x2000, 5, false), 5);
        assert_eq!(t.fragment(0x9000).unwrap().parent, 0x1000);
        assert_eq!(t.fragment_before(0x9003).unwrap().address, 0x9000);
        assert!(t.fragment_before(0x10).is_none());
    }

    #[test]
    fn fallthroughs_step_over_branch_entries() {
        let t = translation();
        assert_eq!(
            t.fallthroughs(0x1000, 0x1001, 0x1011),
            Some(vec![(0, 0x20), (0x20, 0x8)])
        );
        assert_eq!(t.fallthroughs(0x1000, 0x1009, 0x1008), Some(vec![]));
        assert_eq!(t.fallthroughs(0x5000, 0x5000, 0x5008), None);
    }
}
