//! What the AutoFDO converters need of a binary's DWARF: the line table (address → line and
//! discriminator) and the tree of subprograms and inlined subroutines (address → inline stack
//! with each frame's function name and declaration line). Decoded once per binary with gimli.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use gimli::{AttributeValue, EndianSlice, RunTimeEndian, UnitOffset};
use hashbrown::HashMap;
use object::{Object, ObjectSection};
use rayon::prelude::*;

type R<'a> = EndianSlice<'a, RunTimeEndian>;

/// One frame of an inline stack, innermost first (autofdo's `SourceInfo`), its name
/// borrowed from the [`DebugInfo`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameRef<'a> {
    /// The frame's function: its linkage name when DWARF has one, else its name.
    pub name: &'a str,
    /// The function's `DW_AT_decl_line` (0 when unknown).
    pub start_line: u32,
    /// The line executing in this frame (the leaf's from the line table, the callers' from
    /// the inlined subroutine's `DW_AT_call_line`).
    pub line: u32,
    /// The discriminator of that line (`DW_AT_GNU_discriminator` for callers).
    pub discriminator: u32,
    /// The DIE's index among [`DebugInfo::names`] ([`NO_NODE`] for a frame without one).
    pub node: u32,
    /// The name's index among the distinct names ([`NO_NODE`] for a frame without a DIE):
    /// equal indices, equal names.
    pub name_id: u32,
}

impl FrameRef<'_> {
    /// Whether two frames are equal, without comparing the names' bytes: a frame's DIE
    /// gives its name and declaration line, so the DIE, line and discriminator decide.
    pub fn same(&self, other: &FrameRef<'_>) -> bool {
        (self.node, self.line, self.discriminator) == (other.node, other.line, other.discriminator)
    }
}

/// [`FrameRef::node`] of a frame outside every subprogram.
pub const NO_NODE: u32 = u32::MAX;

/// No node (parent, child or sibling).
const NONE: u32 = u32::MAX;

/// A subprogram or inlined subroutine with code. Indices, not owned lists: a binary has
/// hundreds of thousands of these, and a `Vec` apiece (ranges, children) and a name pointer
/// each cost more than the node.
#[derive(Clone, Copy, Debug)]
struct Node {
    /// Its address ranges: `count` of the ranges from `first`.
    first_range: u32,
    range_count: u32,
    /// Its first child and its next sibling, in DWARF order ([`NONE`] for none).
    first_child: u32,
    next_sibling: u32,
    parent: u32,
    inlined: bool,
    /// Index of its name (linkage name, else name).
    name: u32,
    decl_line: u32,
    call_line: u32,
    call_disc: u32,
}

impl Node {
    fn ranges<'r>(&self, all: &'r [(u64, u64)]) -> &'r [(u64, u64)] {
        let first = self.first_range as usize;
        &all[first..first + self.range_count as usize]
    }
}

/// `i` moved by `base`, [`NONE`] kept.
fn shifted(i: u32, base: u32) -> u32 {
    match i {
        NONE => NONE,
        i => i + base,
    }
}

/// The DWARF sections of a binary, decompressed where compressed; [`Dwarf`] reads them.
pub struct DwarfSections<'d> {
    sections: gimli::DwarfSections<Cow<'d, [u8]>>,
    endian: RunTimeEndian,
    /// The split-DWARF package `BINARY.dwp`, when there is one (its sections owned).
    package: Option<(PathBuf, gimli::DwarfPackageSections<Cow<'static, [u8]>>)>,
}

impl<'d> DwarfSections<'d> {
    /// The DWARF sections of the ELF file `file`, read from `path`; with split DWARF, the
    /// package `PATH.dwp` where it exists (llvm-symbolizer's and llvm-profgen's default
    /// place). `Err` says why they cannot be used: no `.debug_info`, or a section that does
    /// not decompress.
    pub fn load(file: &object::File<'d>, path: &Path) -> Result<DwarfSections<'d>, String> {
        if file.section_by_name(".debug_info").is_none() {
            return Err("no debug information (.debug_info): build with -g".into());
        }
        if file.section_by_name(".debug_line").is_none() {
            return Err("no line table (.debug_line): build with -g".into());
        }
        let sections = gimli::DwarfSections::load(|id| section_data(file, id.name()))?;
        let mut dwp = path.as_os_str().to_owned();
        dwp.push(".dwp");
        let dwp = PathBuf::from(dwp);
        let package = if dwp.is_file() {
            Some((dwp.clone(), load_package(&dwp)?))
        } else {
            None
        };
        Ok(DwarfSections {
            sections,
            endian: endian_of(file),
            package,
        })
    }
}

fn endian_of(file: &object::File<'_>) -> RunTimeEndian {
    if file.is_little_endian() {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    }
}

/// The bytes of section `name` of `file` (empty when absent), decompressed when the section
/// is compressed (`SHF_COMPRESSED`, zlib or zstd: `-gz`, `-gz=zstd`).
fn section_data<'d>(file: &object::File<'d>, name: &str) -> Result<Cow<'d, [u8]>, String> {
    let Some(section) = file.section_by_name(name) else {
        return Ok(Cow::Borrowed(&[][..]));
    };
    let bad = |e: &dyn std::fmt::Display| format!("section {name}: {e}");
    let compressed = section.compressed_data().map_err(|e| bad(&e))?;
    let size = usize::try_from(compressed.uncompressed_size).map_err(|e| bad(&e))?;
    match compressed.format {
        object::CompressionFormat::None => Ok(Cow::Borrowed(compressed.data)),
        object::CompressionFormat::Zlib => {
            let mut out = Vec::with_capacity(size);
            std::io::Read::read_to_end(
                &mut flate2::read::ZlibDecoder::new(compressed.data),
                &mut out,
            )
            .map_err(|e| bad(&format!("zlib: {e}")))?;
            Ok(Cow::Owned(out))
        }
        object::CompressionFormat::Zstandard => zstd::bulk::decompress(compressed.data, size)
            .map(Cow::Owned)
            .map_err(|e| bad(&format!("zstd: {e}"))),
        other => Err(bad(&format!("unsupported compression {other:?}"))),
    }
}

/// An ELF file read whole (a `.dwo` or a `.dwp`), `Err` naming it.
fn read_elf(path: &Path) -> Result<Vec<u8>, String> {
    crate::io::input::read(path).map_err(|e| format!("split DWARF {}: {e}", path.display()))
}

fn parse_elf<'b>(path: &Path, bytes: &'b [u8]) -> Result<object::File<'b>, String> {
    object::File::parse(bytes).map_err(|e| format!("split DWARF {}: {e}", path.display()))
}

/// The sections of the package `path`, owned.
fn load_package(path: &Path) -> Result<gimli::DwarfPackageSections<Cow<'static, [u8]>>, String> {
    let bytes = read_elf(path)?;
    let file = parse_elf(path, &bytes)?;
    gimli::DwarfPackageSections::load(|id| {
        let data = match id.dwo_name() {
            Some(name) => section_data(&file, name),
            None => Ok(Cow::Borrowed(&[][..])),
        };
        data.map(|d| Cow::Owned(d.into_owned())).map_err(LoadError)
    })
    .map_err(|LoadError(e)| format!("split DWARF {}: {e}", path.display()))
}

/// A section loader's error, as gimli's package loader wants it (`From<gimli::Error>`).
struct LoadError(String);

impl From<gimli::Error> for LoadError {
    fn from(e: gimli::Error) -> LoadError {
        LoadError(e.to_string())
    }
}

/// A binary's compilation units, each with the addresses it covers; [`DebugInfo::load`]
/// decodes the line tables and inline trees of the units that cover given addresses.
pub struct Dwarf<'a> {
    dwarf: gimli::Dwarf<R<'a>>,
    units: Vec<gimli::Unit<R<'a>>>,
    /// [`DwarfSections::package`], indexed.
    package: Option<(&'a Path, gimli::DwarfPackage<R<'a>>)>,
    /// (begin, end, unit) of every unit's address ranges, sorted.
    unit_ranges: Vec<(u64, u64, usize)>,
}

impl<'a> Dwarf<'a> {
    /// The unit headers and address ranges of `sections` (no DIE beyond each unit's root is
    /// read).
    pub fn new(sections: &'a DwarfSections<'_>) -> Result<Dwarf<'a>, String> {
        let endian = sections.endian;
        let dwarf = sections
            .sections
            .borrow(|s| EndianSlice::new(s.as_ref(), endian));
        let malformed = |e: gimli::Error| format!("malformed DWARF: {e}");
        let mut units = Vec::new();
        let mut unit_ranges = Vec::new();
        let mut headers = dwarf.units();
        while let Some(header) = headers.next().map_err(malformed)? {
            let unit = dwarf.unit(header).map_err(malformed)?;
            let mut ranges = dwarf.unit_ranges(&unit).map_err(malformed)?;
            while let Some(r) = ranges.next().map_err(malformed)? {
                if r.begin < r.end && r.begin != 0 {
                    unit_ranges.push((r.begin, r.end, units.len()));
                }
            }
            units.push(unit);
        }
        if units.iter().all(|u| u.line_program.is_none()) {
            return Err("no line table (.debug_line): build with -g".into());
        }
        unit_ranges.sort_unstable();
        let package = match &sections.package {
            Some((path, package)) => {
                let package = package
                    .borrow(
                        |s| EndianSlice::new(s.as_ref(), endian),
                        EndianSlice::new(&[], endian),
                    )
                    .map_err(|e| format!("split DWARF {}: {e}", path.display()))?;
                Some((path.as_path(), package))
            }
            None => None,
        };
        Ok(Dwarf {
            dwarf,
            units,
            package,
            unit_ranges,
        })
    }

    /// The units whose address ranges meet any of `intervals` (`[begin, end]`, inclusive).
    pub fn units_meeting(&self, intervals: impl IntoIterator<Item = (u64, u64)>) -> Vec<usize> {
        let mut spans: Vec<(u64, u64)> = intervals.into_iter().collect();
        spans.sort_unstable();
        // The disjoint union, so that the first span ending at or after a unit range's begin
        // is the only one to check.
        let mut union: Vec<(u64, u64)> = Vec::with_capacity(spans.len());
        for (b, e) in spans {
            match union.last_mut() {
                Some(last) if b <= last.1.saturating_add(1) => last.1 = last.1.max(e),
                _ => union.push((b, e)),
            }
        }
        let mut found: Vec<usize> = self
            .unit_ranges
            .iter()
            .filter(|&&(b, e, _)| {
                let i = union.partition_point(|s| s.1 < b);
                union.get(i).is_some_and(|s| s.0 < e)
            })
            .map(|r| r.2)
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }

    /// The unit with the last address range starting at or before `a` (it covers `a`, or
    /// its line table has the last row before `a`).
    pub fn unit_before(&self, a: u64) -> Option<usize> {
        let i = self.unit_ranges.partition_point(|r| r.0 <= a);
        i.checked_sub(1).map(|i| self.unit_ranges[i].2)
    }
}

/// A binary's line table and inline tree, for the units loaded so far.
#[derive(Debug, Default)]
pub struct DebugInfo {
    /// (address, line, discriminator) sorted by address; line [`NO_LINE`]: no line
    /// information from that address on (the end of a sequence). Line-0 rows (code the
    /// compiler attributes to no line) are kept: create_llvm_prof counts them at line 0.
    /// Made by [`DebugInfo::seal`] from `unit_rows`.
    rows: Vec<(u64, u32, u32)>,
    /// Each loaded unit's rows as its line table has them, by unit: which of several rows at
    /// one address wins depends on the units' order.
    unit_rows: std::collections::BTreeMap<usize, Vec<(u64, u32, u32)>>,
    sealed: bool,
    nodes: Vec<Node>,
    /// The nodes' address ranges.
    ranges: Vec<(u64, u64)>,
    /// The nodes' names, each string once.
    names: Vec<std::sync::Arc<str>>,
    /// Name → index in `names`, while units are loaded.
    name_ids: HashMap<std::sync::Arc<str>, u32>,
    /// (begin, end, node) of every subprogram range, sorted.
    roots: Vec<(u64, u64, usize)>,
    loaded: std::collections::BTreeSet<usize>,
}

/// One unit's share of [`DebugInfo`], node, range and name indices local to it.
#[derive(Default)]
struct UnitInfo {
    rows: Vec<(u64, u32, u32)>,
    nodes: Vec<Node>,
    ranges: Vec<(u64, u64)>,
    names: Vec<std::sync::Arc<str>>,
    /// By node: its last child so far, while the unit is walked.
    last_child: Vec<u32>,
    roots: Vec<(u64, u64, usize)>,
}

impl DebugInfo {
    /// Decodes the units `units` of `dwarf` not loaded yet (in parallel) and adds them.
    pub fn load(&mut self, dwarf: &Dwarf<'_>, units: &[usize]) -> Result<(), String> {
        assert!(!self.sealed, "DebugInfo::load after seal");
        let new: Vec<usize> = units
            .iter()
            .copied()
            .filter(|u| !self.loaded.contains(u))
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        let parts: Vec<(usize, UnitInfo)> = new
            .par_iter()
            .map(|&u| decode_unit(dwarf, u).map(|info| (u, info)))
            .collect::<Result<_, SplitError>>()
            .map_err(|e| e.to_string())?;
        for (u, part) in parts {
            let base = self.nodes.len() as u32;
            let range_base = self.ranges.len() as u32;
            let names: Vec<u32> = part.names.into_iter().map(|n| self.name_id(n)).collect();
            self.nodes.extend(part.nodes.into_iter().map(|n| Node {
                first_range: n.first_range + range_base,
                first_child: shifted(n.first_child, base),
                next_sibling: shifted(n.next_sibling, base),
                parent: shifted(n.parent, base),
                name: names[n.name as usize],
                ..n
            }));
            self.ranges.extend(part.ranges);
            self.roots.extend(
                part.roots
                    .into_iter()
                    .map(|(b, e, n)| (b, e, n + base as usize)),
            );
            self.unit_rows.insert(u, part.rows);
            self.loaded.insert(u);
        }
        self.roots.par_sort_unstable();
        Ok(())
    }

    /// autofdo's line map, which keeps only the rows (sequence ends included) at addresses
    /// of the sampled functions, `functions` (`[start, end)`, sorted): an address of a
    /// sampled function with no row of its own takes the last kept row before it. So
    /// `_start`, which has no line information, takes the last row of GCC's `main` (in
    /// `.text.startup`, before it) when `main`'s sequence ends in the padding between them,
    /// and has no line when it ends at `_start`'s first byte. Call after the last load.
    pub fn keep_rows_within(&mut self, functions: &[(u64, u64)]) {
        self.seal();
        self.rows.retain(|r| {
            let i = functions.partition_point(|f| f.0 <= r.0);
            i > 0 && r.0 < functions[i - 1].1
        });
    }

    /// The index of `name` in `names`, added if new.
    fn name_id(&mut self, name: std::sync::Arc<str>) -> u32 {
        let names = &mut self.names;
        *self.name_ids.entry(name).or_insert_with_key(|name| {
            names.push(name.clone());
            (names.len() - 1) as u32
        })
    }

    /// Makes the line table of the loaded units, after which no unit may be loaded.
    pub fn seal(&mut self) {
        if self.sealed {
            return;
        }
        self.sealed = true;
        self.name_ids = HashMap::new();
        // In unit order, then by address, keeping the order within a unit (a stable sort):
        // rows at one address then come in (unit, index) order.
        let mut all = Vec::with_capacity(self.unit_rows.values().map(Vec::len).sum());
        for rows in std::mem::take(&mut self.unit_rows).into_values() {
            all.extend(rows);
        }
        all.sort_by_key(|r| r.0);
        // Rows at one address: one wins (LAST_ROW_WINS), except that a sequence's end does
        // not hide a row with a line.
        all.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same && (kept.1 == NO_LINE || (later.1 != NO_LINE && LAST_ROW_WINS)) {
                *kept = *later;
            }
            same
        });
        all.shrink_to_fit();
        self.rows = all;
    }

    /// Loads the units meeting `intervals` (inclusive).
    pub fn load_meeting(
        &mut self,
        dwarf: &Dwarf<'_>,
        intervals: impl IntoIterator<Item = (u64, u64)>,
    ) -> Result<(), String> {
        let units = dwarf.units_meeting(intervals);
        self.load(dwarf, &units)
    }

    /// The inline stack at `address` into `stack` (cleared first), innermost frame first;
    /// empty when the line table has no line there (autofdo's `GetInlineStack`).
    pub fn frames_at<'a>(&'a self, address: u64, stack: &mut Vec<FrameRef<'a>>) {
        stack.clear();
        let i = self.rows.partition_point(|r| r.0 <= address);
        if i == 0 {
            return;
        }
        let (_, line, disc) = self.rows[i - 1];
        if line == NO_LINE {
            return;
        }
        let Some(leaf) = self.innermost(address) else {
            stack.push(FrameRef {
                name: "",
                start_line: 0,
                line,
                discriminator: disc,
                node: NO_NODE,
                name_id: NO_NODE,
            });
            return;
        };
        let n = &self.nodes[leaf];
        stack.push(FrameRef {
            name: &self.names[n.name as usize],
            start_line: n.decl_line,
            line,
            discriminator: disc,
            node: leaf as u32,
            name_id: n.name,
        });
        let mut s = leaf;
        while self.nodes[s].inlined {
            let p = self.nodes[s].parent;
            if p == NONE {
                break;
            }
            let p = p as usize;
            let parent = &self.nodes[p];
            stack.push(FrameRef {
                name: &self.names[parent.name as usize],
                start_line: parent.decl_line,
                line: self.nodes[s].call_line,
                discriminator: self.nodes[s].call_disc,
                node: p as u32,
                name_id: parent.name,
            });
            s = p;
        }
    }

    /// The addresses of `[start, end)` at which [`DebugInfo::frames_at`] may change, sorted
    /// and distinct, `start` first, into `out`: every byte from one to the next has the
    /// stack of the first. They are the starts of line-table rows and the ends of the
    /// address ranges of the subprograms and inlined subroutines that meet the interval, so
    /// that a function's stacks are found once per piece, not once per byte.
    pub fn frame_breaks(&self, start: u64, end: u64, out: &mut Vec<u64>) {
        out.clear();
        out.push(start);
        let inside = |a: u64| start < a && a < end;
        let first_row = self.rows.partition_point(|r| r.0 <= start);
        out.extend(
            self.rows[first_row..]
                .iter()
                .map(|r| r.0)
                .take_while(|&a| a < end),
        );
        // The roots `innermost` may pick for an address of the interval: those meeting it
        // among the 64 before each address.
        let first_root = self.roots.partition_point(|r| r.0 <= start);
        let last_root = self.roots.partition_point(|r| r.0 < end);
        let mut todo: Vec<usize> = Vec::new();
        for &(b, e, node) in &self.roots[first_root.saturating_sub(64)..last_root] {
            if b < end && start < e {
                out.extend([b, e].into_iter().filter(|&a| inside(a)));
                todo.push(node);
            }
        }
        todo.sort_unstable();
        todo.dedup();
        // Their descendants that meet it (`innermost` descends only into a child holding the
        // address).
        while let Some(node) = todo.pop() {
            let mut c = self.nodes[node].first_child;
            while c != NONE {
                let child = &self.nodes[c as usize];
                let mut meets = false;
                for &(b, e) in child.ranges(&self.ranges) {
                    if b < end && start < e {
                        meets = true;
                        out.extend([b, e].into_iter().filter(|&a| inside(a)));
                    }
                }
                if meets {
                    todo.push(c as usize);
                }
                c = child.next_sibling;
            }
        }
        out.sort_unstable();
        out.dedup();
    }

    /// Calls `f(from, to, discriminator)` for each piece `[from, to)` of `[start, end)` that
    /// one row describes, in order: the row's discriminator, or `None` where
    /// [`DebugInfo::frames_at`] finds no line.
    pub fn rows_within(&self, start: u64, end: u64, mut f: impl FnMut(u64, u64, Option<u32>)) {
        let first = self.rows.partition_point(|r| r.0 <= start);
        let mut from = start;
        let mut row = first.checked_sub(1).map(|i| self.rows[i]);
        for &next in self.rows[first..].iter().take_while(|r| r.0 < end) {
            f(from, next.0, row.filter(|r| r.1 != NO_LINE).map(|r| r.2));
            (from, row) = (next.0, Some(next));
        }
        f(from, end, row.filter(|r| r.1 != NO_LINE).map(|r| r.2));
    }

    /// Every loaded subprogram with code (not inlined instances): its node, name and address
    /// ranges, the first as DWARF lists them first (the entry).
    pub fn subprograms(&self) -> impl Iterator<Item = (u32, &str, &[(u64, u64)])> {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| !n.inlined)
            .map(|(i, n)| {
                let name = &*self.names[n.name as usize];
                (i as u32, name, n.ranges(&self.ranges))
            })
    }

    /// The names of the loaded nodes (subprograms and inlined subroutines), by
    /// [`FrameRef::node`].
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.nodes.iter().map(|n| &*self.names[n.name as usize])
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
            let mut c = self.nodes[node].first_child;
            while c != NONE {
                let child = &self.nodes[c as usize];
                if child
                    .ranges(&self.ranges)
                    .iter()
                    .any(|&(b, e)| b <= address && address < e)
                {
                    node = c as usize;
                    continue 'descend;
                }
                c = child.next_sibling;
            }
            return Some(node);
        }
    }
}

/// The line of a row that ends a sequence: no line information from its address on.
const NO_LINE: u32 = u32::MAX;

/// Which row describes an address that several rows of the line table start at.
const LAST_ROW_WINS: bool = true;

/// The line table rows and inline tree of unit `ui`.
fn decode_unit(dw: &Dwarf<'_>, ui: usize) -> Result<UnitInfo, SplitError> {
    let (dwarf, units) = (&dw.dwarf, &dw.units[..]);
    let unit = &units[ui];
    let mut info = UnitInfo::default();
    if let Some(program) = unit.line_program.clone() {
        let mut rows = program.rows();
        let mut sequence = Vec::new();
        while let Some((_, row)) = rows.next_row()? {
            if row.end_sequence() {
                sequence.push((row.address(), NO_LINE, 0));
                // Sequences at address 0 are discarded functions (--gc-sections).
                if sequence.first().is_some_and(|r| r.0 != 0) {
                    info.rows.extend_from_slice(&sequence);
                }
                sequence.clear();
                continue;
            }
            let line = row.line().map_or(0, |l| l.get()) as u32;
            sequence.push((row.address(), line, row.discriminator() as u32));
        }
    }
    let mut names = Names::default();
    match unit.dwo_id {
        // A skeleton unit: its DIEs are in a `.dwo` file or the package.
        Some(id) => walk_split_unit(dw, unit, id, &mut info, &mut names)?,
        None => {
            let mut tree = unit.entries_tree(None)?;
            let root = tree.root()?;
            walk(dwarf, units, ui, root, None, &mut info, &mut names)?;
        }
    }
    info.names = names.list;
    info.last_child = Vec::new();
    Ok(info)
}

/// Walks the split unit of the skeleton unit `skeleton` (DWO id `id`): from the package when
/// it holds the id, else from the `.dwo` file the skeleton names (`DW_AT_dwo_name`, relative
/// to `DW_AT_comp_dir`), as LLVM's `DWARFUnit::parseDWO` looks for it.
fn walk_split_unit(
    dw: &Dwarf<'_>,
    skeleton: &gimli::Unit<R<'_>>,
    id: gimli::DwoId,
    info: &mut UnitInfo,
    names: &mut Names,
) -> Result<(), SplitError> {
    if let Some((path, package)) = &dw.package {
        let found = package
            .find_cu(id, &dw.dwarf)
            .map_err(|e| SplitError::in_file(path, e))?;
        if let Some(dwo) = found {
            return walk_dwo(&dwo, skeleton, info, names).map_err(|e| SplitError::in_file(path, e));
        }
    }
    let path = dwo_path(&dw.dwarf, skeleton)?;
    let bytes = read_elf(&path).map_err(SplitError::Message)?;
    let file = parse_elf(&path, &bytes).map_err(SplitError::Message)?;
    let sections = gimli::DwarfSections::load(|id| match id.dwo_name() {
        Some(name) => section_data(&file, name),
        None => Ok(Cow::Borrowed(&[][..])),
    })
    .map_err(|e| SplitError::Message(format!("split DWARF {}: {e}", path.display())))?;
    let endian = endian_of(&file);
    let mut dwo = sections.borrow(|s| EndianSlice::new(s.as_ref(), endian));
    dwo.make_dwo(&dw.dwarf);
    walk_dwo(&dwo, skeleton, info, names).map_err(|e| SplitError::in_file(&path, e))
}

/// The `.dwo` file of the skeleton unit `skeleton`.
fn dwo_path(
    dwarf: &gimli::Dwarf<R<'_>>,
    skeleton: &gimli::Unit<R<'_>>,
) -> Result<PathBuf, SplitError> {
    let text = |r: R<'_>| PathBuf::from(String::from_utf8_lossy(r.slice()).into_owned());
    let name = match skeleton.dwo_name()? {
        Some(v) => text(dwarf.attr_string(skeleton, v)?),
        None => {
            return Err(SplitError::Message(
                "split DWARF: a skeleton unit names no .dwo file (DW_AT_dwo_name)".into(),
            ))
        }
    };
    Ok(match skeleton.comp_dir {
        Some(dir) if name.is_relative() => text(dir).join(name),
        _ => name,
    })
}

/// Walks the one compilation unit of the split DWARF `dwo`, whose skeleton is `skeleton`.
fn walk_dwo(
    dwo: &gimli::Dwarf<R<'_>>,
    skeleton: &gimli::Unit<R<'_>>,
    info: &mut UnitInfo,
    names: &mut Names,
) -> gimli::Result<()> {
    let Some(header) = dwo.units().next()? else {
        return Ok(());
    };
    let mut unit = dwo.unit(header)?;
    unit.copy_relocated_attributes(skeleton);
    let units = std::slice::from_ref(&unit);
    let mut tree = unit.entries_tree(None)?;
    let root = tree.root()?;
    walk(dwo, units, 0, root, None, info, names)
}

/// Why a unit's DWARF cannot be decoded.
#[derive(Debug)]
enum SplitError {
    Gimli(gimli::Error),
    Message(String),
}

impl SplitError {
    fn in_file(path: &Path, e: gimli::Error) -> SplitError {
        SplitError::Message(format!(
            "split DWARF {}: malformed DWARF: {e}",
            path.display()
        ))
    }
}

impl From<gimli::Error> for SplitError {
    fn from(e: gimli::Error) -> SplitError {
        SplitError::Gimli(e)
    }
}

impl std::fmt::Display for SplitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SplitError::Gimli(e) => write!(f, "malformed DWARF: {e}"),
            SplitError::Message(m) => f.write_str(m),
        }
    }
}

/// Names and declaration lines of DIEs, by (unit, offset), resolved once; the names by
/// index in `list`.
#[derive(Default)]
struct Names {
    cache: HashMap<(usize, usize), (u32, u32)>,
    list: Vec<std::sync::Arc<str>>,
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
) -> gimli::Result<(u32, u32)> {
    let key = (ui, offset.0);
    if let Some(&v) = names.cache.get(&key) {
        return Ok(v);
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
    names
        .list
        .push(linkage.or(plain).unwrap_or_default().into());
    let found = ((names.list.len() - 1) as u32, decl_line);
    names.cache.insert(key, found);
    Ok(found)
}

fn walk(
    dwarf: &gimli::Dwarf<R<'_>>,
    units: &[gimli::Unit<R<'_>>],
    ui: usize,
    node: gimli::EntriesTreeNode<'_, '_, '_, R<'_>>,
    parent: Option<usize>,
    info: &mut UnitInfo,
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
                first_range: info.ranges.len() as u32,
                range_count: ranges.len() as u32,
                first_child: NONE,
                next_sibling: NONE,
                parent: parent_node.map_or(NONE, |p| p as u32),
                inlined,
                name,
                decl_line,
                call_line: udata(gimli::DW_AT_call_line)?,
                call_disc: udata(gimli::DW_AT_GNU_discriminator)?,
            });
            info.ranges.extend_from_slice(&ranges);
            info.last_child.push(NONE);
            if let Some(p) = parent_node {
                match info.last_child[p] {
                    NONE => info.nodes[p].first_child = id as u32,
                    last => info.nodes[last as usize].next_sibling = id as u32,
                }
                info.last_child[p] = id as u32;
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
