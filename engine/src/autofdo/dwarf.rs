//! What the AutoFDO converters need of a binary's DWARF: the line table (address → line and
//! discriminator) and the tree of subprograms and inlined subroutines (address → inline stack
//! with each frame's function name and declaration line). Decoded once per binary with gimli.

use std::borrow::Cow;
use std::collections::HashMap;

use gimli::{AttributeValue, EndianSlice, RunTimeEndian, UnitOffset};
use object::{Object, ObjectSection};

type R<'a> = EndianSlice<'a, RunTimeEndian>;

/// One frame of an inline stack, innermost first (autofdo's `SourceInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The frame's function: its linkage name when DWARF has one, else its name.
    pub name: std::sync::Arc<str>,
    /// The function's `DW_AT_decl_line` (0 when unknown).
    pub start_line: u32,
    /// The line executing in this frame (the leaf's from the line table, the callers' from
    /// the inlined subroutine's `DW_AT_call_line`).
    pub line: u32,
    /// The discriminator of that line (`DW_AT_GNU_discriminator` for callers).
    pub discriminator: u32,
}

#[derive(Debug)]
struct Node {
    ranges: Vec<(u64, u64)>,
    children: Vec<usize>,
    parent: Option<usize>,
    inlined: bool,
    name: std::sync::Arc<str>,
    decl_line: u32,
    call_line: u32,
    call_disc: u32,
}

impl Node {
    fn contains(&self, a: u64) -> bool {
        self.ranges.iter().any(|&(b, e)| b <= a && a < e)
    }
}

/// A binary's line table and inline tree.
#[derive(Debug, Default)]
pub struct DebugInfo {
    /// (address, line, discriminator) sorted by address; line [`NO_LINE`]: no line
    /// information from that address on (the end of a sequence). Line-0 rows (code the
    /// compiler attributes to no line) are kept: create_llvm_prof counts them at line 0.
    rows: Vec<(u64, u32, u32)>,
    nodes: Vec<Node>,
    /// (begin, end, node) of every subprogram range, sorted.
    roots: Vec<(u64, u64, usize)>,
}

impl DebugInfo {
    /// Decodes the DWARF of the ELF file `data` (compressed sections included). `Err` says
    /// why it cannot be used: not ELF, no `.debug_info`/`.debug_line`, or malformed.
    pub fn parse(data: &[u8]) -> Result<DebugInfo, String> {
        let file = object::File::parse(data).map_err(|e| format!("not an ELF file: {e}"))?;
        if file.section_by_name(".debug_info").is_none() {
            return Err("no debug information (.debug_info): build with -g".into());
        }
        let endian = if file.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let load = |id: gimli::SectionId| -> Result<Cow<'_, [u8]>, String> {
            match file.section_by_name(id.name()) {
                Some(s) => s
                    .uncompressed_data()
                    .map_err(|e| format!("section {}: {e}", id.name())),
                None => Ok(Cow::Borrowed(&[][..])),
            }
        };
        let owned = gimli::DwarfSections::load(load)?;
        let dwarf = owned.borrow(|s| EndianSlice::new(s, endian));
        let mut info = DebugInfo::default();
        decode(&dwarf, &mut info).map_err(|e| format!("malformed DWARF: {e}"))?;
        if info.rows.is_empty() {
            return Err("no line table (.debug_line): build with -g".into());
        }
        Ok(info)
    }

    /// The inline stack at `address`, innermost frame first; empty when the line table has
    /// no line there (autofdo's `GetInlineStack`).
    pub fn inline_stack(&self, address: u64) -> Vec<Frame> {
        let mut stack = Vec::new();
        let i = self.rows.partition_point(|r| r.0 <= address);
        if i == 0 {
            return stack;
        }
        let (_, line, disc) = self.rows[i - 1];
        if line == NO_LINE {
            return stack;
        }
        let leaf = self.innermost(address);
        let Some(leaf) = leaf else {
            stack.push(Frame {
                name: "".into(),
                start_line: 0,
                line,
                discriminator: disc,
            });
            return stack;
        };
        let n = &self.nodes[leaf];
        stack.push(Frame {
            name: n.name.clone(),
            start_line: n.decl_line,
            line,
            discriminator: disc,
        });
        let mut s = leaf;
        while self.nodes[s].inlined {
            let Some(p) = self.nodes[s].parent else { break };
            let parent = &self.nodes[p];
            stack.push(Frame {
                name: parent.name.clone(),
                start_line: parent.decl_line,
                line: self.nodes[s].call_line,
                discriminator: self.nodes[s].call_disc,
            });
            s = p;
        }
        stack
    }

    /// Every subprogram with code (not inlined instances): its name and address ranges, the
    /// first as DWARF lists them first (the entry).
    pub fn subprograms(&self) -> impl Iterator<Item = (&std::sync::Arc<str>, &[(u64, u64)])> {
        self.nodes
            .iter()
            .filter(|n| !n.inlined)
            .map(|n| (&n.name, n.ranges.as_slice()))
    }

    fn innermost(&self, address: u64) -> Option<usize> {
        let i = self.roots.partition_point(|r| r.0 <= address);
        // The last subprogram range starting at or before the address that contains it.
        let mut node = self.roots[..i]
            .iter()
            .rev()
            .take(64)
            .find(|r| address < r.1)
            .map(|r| r.2)?;
        'descend: loop {
            for &c in &self.nodes[node].children {
                if self.nodes[c].contains(address) {
                    node = c;
                    continue 'descend;
                }
            }
            return Some(node);
        }
    }
}

/// The line of a row that ends a sequence: no line information from its address on.
const NO_LINE: u32 = u32::MAX;

/// Which row describes an address that several rows of the line table start at.
const LAST_ROW_WINS: bool = true;

fn decode(dwarf: &gimli::Dwarf<R<'_>>, info: &mut DebugInfo) -> gimli::Result<()> {
    let mut units = Vec::new();
    let mut headers = dwarf.units();
    while let Some(header) = headers.next()? {
        units.push(dwarf.unit(header)?);
    }
    let mut names = Names::default();
    let mut rows_all: Vec<(u64, u32, u32)> = Vec::new();
    for (ui, unit) in units.iter().enumerate() {
        if let Some(program) = unit.line_program.clone() {
            let mut rows = program.rows();
            let mut sequence = Vec::new();
            while let Some((_, row)) = rows.next_row()? {
                if row.end_sequence() {
                    sequence.push((row.address(), NO_LINE, 0));
                    // Sequences at address 0 are discarded functions (--gc-sections).
                    if sequence.first().is_some_and(|r| r.0 != 0) {
                        rows_all.extend_from_slice(&sequence);
                    }
                    sequence.clear();
                    continue;
                }
                let line = row.line().map_or(0, |l| l.get()) as u32;
                sequence.push((row.address(), line, row.discriminator() as u32));
            }
        }
        let mut tree = unit.entries_tree(None)?;
        let root = tree.root()?;
        walk(dwarf, &units, ui, root, None, info, &mut names)?;
    }
    // Rows at one address: one wins (LAST_ROW_WINS), except that a sequence's end does not
    // hide a row with a line.
    rows_all.sort_by_key(|r| r.0);
    let mut rows: Vec<(u64, u32, u32)> = Vec::with_capacity(rows_all.len());
    for r in rows_all {
        match rows.last_mut() {
            Some(last) if last.0 == r.0 => {
                if last.1 == NO_LINE || (r.1 != NO_LINE && LAST_ROW_WINS) {
                    *last = r;
                }
            }
            _ => rows.push(r),
        }
    }
    info.rows = rows;
    info.roots.sort_unstable();
    Ok(())
}

/// Names and declaration lines of DIEs, by (unit, offset), resolved once.
#[derive(Default)]
struct Names {
    cache: HashMap<(usize, usize), (std::sync::Arc<str>, u32)>,
}

/// The unit holding a `.debug_info` offset, and the offset within it.
fn unit_of(
    units: &[gimli::Unit<R<'_>>],
    at: gimli::DebugInfoOffset,
) -> Option<(usize, UnitOffset)> {
    units.iter().enumerate().find_map(|(i, u)| {
        let off = at.to_unit_offset(&u.header)?;
        Some((i, off))
    })
}

/// The (linkage name, else name) and declaration line of the DIE at `offset` in unit `ui`,
/// following `DW_AT_abstract_origin` and `DW_AT_specification`.
fn resolve(
    dwarf: &gimli::Dwarf<R<'_>>,
    units: &[gimli::Unit<R<'_>>],
    ui: usize,
    offset: UnitOffset,
    names: &mut Names,
) -> gimli::Result<(std::sync::Arc<str>, u32)> {
    let key = (ui, offset.0);
    if let Some(v) = names.cache.get(&key) {
        return Ok(v.clone());
    }
    let (mut ui_at, mut off_at) = (ui, offset);
    let mut linkage: Option<String> = None;
    let mut plain: Option<String> = None;
    let mut decl_line = 0u32;
    for _ in 0..16 {
        let unit = &units[ui_at];
        let entry = unit.entry(off_at)?;
        let text = |v: AttributeValue<R<'_>>| -> Option<String> {
            dwarf
                .attr_string(unit, v)
                .ok()
                .map(|s| String::from_utf8_lossy(s.slice()).into_owned())
        };
        if linkage.is_none() {
            for at in [gimli::DW_AT_linkage_name, gimli::DW_AT_MIPS_linkage_name] {
                if let Some(v) = entry.attr_value(at)? {
                    linkage = text(v);
                    if linkage.is_some() {
                        break;
                    }
                }
            }
        }
        if plain.is_none() {
            if let Some(v) = entry.attr_value(gimli::DW_AT_name)? {
                plain = text(v);
            }
        }
        if decl_line == 0 {
            if let Some(v) = entry.attr_value(gimli::DW_AT_decl_line)? {
                decl_line = v.udata_value().unwrap_or(0) as u32;
            }
        }
        let next = match entry.attr_value(gimli::DW_AT_abstract_origin)? {
            Some(v) => Some(v),
            None => entry.attr_value(gimli::DW_AT_specification)?,
        };
        match next {
            Some(AttributeValue::UnitRef(o)) => off_at = o,
            Some(AttributeValue::DebugInfoRef(o)) => match unit_of(units, o) {
                Some((u, o)) => (ui_at, off_at) = (u, o),
                None => break,
            },
            _ => break,
        }
    }
    let name: std::sync::Arc<str> = linkage.or(plain).unwrap_or_default().into();
    names.cache.insert(key, (name.clone(), decl_line));
    Ok((name, decl_line))
}

fn walk(
    dwarf: &gimli::Dwarf<R<'_>>,
    units: &[gimli::Unit<R<'_>>],
    ui: usize,
    node: gimli::EntriesTreeNode<'_, '_, '_, R<'_>>,
    parent: Option<usize>,
    info: &mut DebugInfo,
    names: &mut Names,
) -> gimli::Result<()> {
    let unit = &units[ui];
    let entry = node.entry();
    let tag = entry.tag();
    let mut here = parent;
    if tag == gimli::DW_TAG_subprogram || tag == gimli::DW_TAG_inlined_subroutine {
        let mut ranges = Vec::new();
        let mut iter = dwarf.die_ranges(unit, entry)?;
        while let Some(r) = iter.next()? {
            if r.begin < r.end && r.begin != 0 {
                ranges.push((r.begin, r.end));
            }
        }
        if !ranges.is_empty() {
            let inlined = tag == gimli::DW_TAG_inlined_subroutine;
            let (name, decl_line) = resolve(dwarf, units, ui, entry.offset(), names)?;
            let udata = |at| -> gimli::Result<u32> {
                Ok(entry
                    .attr_value(at)?
                    .and_then(|v| v.udata_value())
                    .unwrap_or(0) as u32)
            };
            let id = info.nodes.len();
            // A subprogram nested in another (a local function) is a root of its own.
            let parent_node = if inlined { parent } else { None };
            if !inlined {
                for &(b, e) in &ranges {
                    info.roots.push((b, e, id));
                }
            }
            info.nodes.push(Node {
                ranges,
                children: Vec::new(),
                parent: parent_node,
                inlined,
                name,
                decl_line,
                call_line: udata(gimli::DW_AT_call_line)?,
                call_disc: udata(gimli::DW_AT_GNU_discriminator)?,
            });
            if let Some(p) = parent_node {
                info.nodes[p].children.push(id);
            }
            here = Some(id);
        }
    }
    let mut children = node.children();
    while let Some(child) = children.next()? {
        walk(dwarf, units, ui, child, here, info, names)?;
    }
    Ok(())
}
