//! perf2bolt's memory-event lines (`4 F <pcoff> 4 <object> <off> <count>`), LLVM 22
//! `DataAggregator::processMemEvents`:
//!
//! * the sample's PC is used as `perf script` printed it (perf2bolt adjusts the data address of
//!   a relocatable binary but not the PC) and must lie in a function;
//! * the data address must lie in one of BOLT's "binary data" objects, else the sample is
//!   dropped (`--filter-mem-profile`, on by default);
//! * lines are written after all branch lines, and only for branch (LBR) profiles.
//!
//! BOLT's data objects (`BinaryContext::BinaryDataMap`) are every symbol of an allocated
//! section (functions included; locals named `name/N`, `.L` labels `PG.L…/N`, section symbols
//! of relocation-mode links `.<section>/N`; the first symbol at an address names the object),
//! nested by containment, plus the gaps between top-level objects of each
//! allocated section, which `fixBinaryDataHoles` either gives to a 0-sized symbol at the gap's
//! start or turns into `HOLEat…` objects. Internal names are then replaced by content hashes
//! (`generateSymbolHashes`): `HOLEat_<llvm hash>`.
//!
//! Then come the objects BOLT adds while analysing code: `sym@GOT` (8 bytes) for the GOT slot
//! of each PLT entry, and `JUMP_TABLE/<function>.<n>` for each jump table (the n-th table the
//! function dispatches through, sized by its entries).
//!
//! In relocation mode, targets of absolute relocations against section symbols that no object
//! contains become 0-sized `SYMBOLat0x…` objects. Before the holes are filled, every address that code references RIP-relatively and that no
//! object contains gets a 0-sized `DATAat0x…` object (BOLT's disassembler does this in
//! `handleAddressRef`); one at the start of a gap takes the gap (and is then hashed as
//! `DATAat_<hash>`), one inside a gap only names its own address.

use std::collections::BTreeMap;
use std::io::{self, Write};

use hashbrown::HashMap;
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

use formats::bolt::fdata::{FdataWriter, Location};

use super::functions::Functions;

/// What the data objects take from a function already disassembled instead of disassembling
/// it again.
#[derive(Clone, Debug, Default)]
pub(crate) struct KnownFunction {
    /// Its jump-table patterns, each with the entries its instructions allow (as
    /// [`super::cfg::Disassembled::sized_table_patterns`] gives them; none if BOLT could not
    /// disassemble it).
    pub(crate) patterns: Vec<(super::indirect::Pattern, usize)>,
    /// If it decoded: how many bytes of code, and the address each RIP-relative operand
    /// refers to, in instruction order (what decoding those bytes again would find).
    pub(crate) rip_targets: Option<(usize, Vec<u64>)>,
}

impl KnownFunction {
    /// What `f`'s disassembly `d` gives (nothing if BOLT could not disassemble it); its
    /// RIP-relative targets are moved out of `d`.
    pub(crate) fn taken_from<E>(
        functions: &Functions,
        f: &super::functions::Function,
        d: &mut Result<super::cfg::Disassembled, E>,
    ) -> KnownFunction {
        let Ok(d) = d else {
            return KnownFunction::default();
        };
        KnownFunction {
            patterns: d.sized_table_patterns(functions, f),
            rip_targets: Some((
                functions.function_code(f).len(),
                std::mem::take(&mut d.rip_targets),
            )),
        }
    }
}

/// Functions already disassembled, by index.
pub(crate) type Known = HashMap<u32, KnownFunction>;

/// One of BOLT's data objects.
#[derive(Clone, Debug, PartialEq, Eq)]
struct DataObject {
    size: u64,
    name: String,
    /// Start of the smallest enclosing sized object, if any.
    parent: Option<u64>,
}

/// BOLT's `BinaryDataMap` of one ELF file.
#[derive(Debug, Default)]
pub struct DataObjects {
    /// The objects while they are registered.
    objects: BTreeMap<u64, DataObject>,
    /// Once all are registered, their addresses ascending, and the objects in that order:
    /// the hashes look up every data reference, and a search of one array stays in cache
    /// better than a tree's.
    addresses: Vec<u64>,
    frozen: Vec<DataObject>,
}

/// An allocated section, as BOLT sees it.
struct Section<'d> {
    name: String,
    executable: bool,
    address: u64,
    size: u64,
    /// File contents (empty for NOBITS).
    contents: &'d [u8],
}

const HOLE_PREFIX: &str = "HOLEat";
const DATA_PREFIX: &str = "DATAat";
const SYMBOL_PREFIX: &str = "SYMBOLat";

impl DataObjects {
    pub fn from_elf(data: &[u8], functions: &Functions) -> DataObjects {
        Self::from_elf_knowing(data, functions, &HashMap::new())
    }

    /// [`DataObjects::from_elf`], taking what it needs of the functions in `known` from there
    /// instead of disassembling those functions again.
    pub(crate) fn from_elf_knowing(
        data: &[u8],
        functions: &Functions,
        known: &Known,
    ) -> DataObjects {
        let Ok(file) = object::File::parse(data) else {
            return DataObjects::default();
        };
        let sections: Vec<Section> = file
            .sections()
            .filter(|s| is_alloc(s) && !is_tls(s))
            .map(|s| Section {
                name: s.name().unwrap_or("").to_owned(),
                executable: s.kind() == object::SectionKind::Text,
                address: s.address(),
                size: s.size(),
                contents: s.data().unwrap_or(&[]),
            })
            .collect();
        let mut objects = DataObjects::default();
        objects.register_symbols(&file, &sections);
        objects.register_plt_slots(functions);
        objects.register_jump_tables(functions, known);
        objects.register_relocation_targets(&file, &sections);
        objects.register_code_references(&file, &sections, functions, known);
        objects.fill_holes(&sections);
        objects.name_holes(&sections);
        objects.freeze();
        objects
    }

    /// Moves the registered objects into the sorted arrays that lookups search.
    fn freeze(&mut self) {
        let objects = std::mem::take(&mut self.objects);
        (self.addresses, self.frozen) = objects.into_iter().unzip();
    }

    /// Symbols in address order (functions first at an address, otherwise symbol-table
    /// order), locals uniquified as `name/N` with one counter per name over all symbols.
    fn register_symbols(&mut self, file: &object::File, sections: &[Section]) {
        let in_alloc = |a: u64| {
            sections
                .iter()
                .any(|s| a >= s.address && a < s.address + s.size)
        };
        // Section symbols (only relocation-mode links keep them) name their section.
        let name_of = |s: &object::Symbol| -> Option<String> {
            if s.kind() == SymbolKind::Section {
                let section = file.section_by_index(s.section_index()?).ok()?;
                return section.name().ok().map(str::to_owned);
            }
            s.name().ok().map(str::to_owned)
        };
        let mut symbols: Vec<(object::Symbol, String)> = file
            .symbols()
            .filter(|s| !s.is_undefined() && s.kind() != SymbolKind::File)
            .filter_map(|s| {
                let name = name_of(&s).filter(|n| !n.is_empty())?;
                Some((s, name))
            })
            .collect();
        // Address order; at one address functions first and section symbols last.
        symbols.sort_by_key(|(s, _)| {
            (
                s.address(),
                s.kind() != SymbolKind::Text,
                s.kind() == SymbolKind::Section,
            )
        });
        let mut local_counts: HashMap<String, u32> = HashMap::new();
        for (sym, name) in symbols {
            let unique = if sym.is_global() || sym.is_weak() {
                name
            } else {
                // Assembler-local labels kept by the link are "globalized" with a PG prefix.
                let name = if name.starts_with(".L") {
                    format!("PG{name}")
                } else {
                    name
                };
                let n = local_counts.entry_ref(name.as_str()).or_insert(0);
                *n += 1;
                super::functions::numbered(name, *n)
            };
            if !in_alloc(sym.address()) {
                continue;
            }
            self.register(sym.address(), sym.size(), unique);
        }
    }

    /// `createPLTBinaryFunction`: the GOT slot a PLT stub jumps through is `sym@GOT`.
    fn register_plt_slots(&mut self, functions: &Functions) {
        use iced_x86::{Decoder, DecoderOptions, FlowControl};
        for f in functions.iter().filter(|f| f.is_plt) {
            let Some(code) = functions.data_at(f.address) else {
                continue;
            };
            let code = &code[..code.len().min(f.size as usize)];
            let mut decoder = Decoder::with_ip(64, code, f.address, DecoderOptions::NONE);
            let slot = std::iter::from_fn(|| decoder.can_decode().then(|| decoder.decode()))
                .take_while(|i| !i.is_invalid())
                .find(|i| {
                    i.flow_control() == FlowControl::IndirectBranch && i.is_ip_rel_memory_operand()
                })
                .map(|i| i.ip_rel_memory_address());
            if let (Some(slot), Some(sym)) = (slot, f.name.strip_suffix("@PLT")) {
                self.register(slot, 8, format!("{sym}@GOT"));
            }
        }
    }

    /// `getOrCreateJumpTable`: `JUMP_TABLE/<function>.<n>`, sized by its entries as
    /// `populateJumpTables` finds them: each bounded by the next table known in the binary,
    /// and ending where an entry lands off its function's instructions.
    fn register_jump_tables(&mut self, functions: &Functions, known: &Known) {
        use rayon::prelude::*;
        // Every function is disassembled (but the known ones): in parallel, the results kept
        // in address order.
        let candidates: Vec<(u32, &super::functions::Function)> = (functions.iter())
            .enumerate()
            .filter(|(_, f)| !f.is_plt)
            .map(|(i, f)| (i as u32, f))
            .collect();
        type Sized = Vec<(super::indirect::Pattern, usize)>;
        let per_function: Vec<(&super::functions::Function, Sized)> = candidates
            .par_iter()
            .filter_map(|&(i, f)| {
                let patterns: Sized = match known.get(&i) {
                    Some(k) => k.patterns.clone(),
                    None => super::cfg::disassemble(functions, f)
                        .ok()?
                        .sized_table_patterns(functions, f),
                };
                (!patterns.is_empty()).then_some((f, patterns))
            })
            .collect();
        let known = super::cfg::TableStarts::from_addresses(
            (per_function.iter()).flat_map(|(_, p)| p.iter().map(|(t, _)| t.address)),
        );
        for (f, patterns) in per_function {
            let mut ids: Vec<u64> = Vec::new();
            for (p, on_instructions) in patterns {
                if ids.contains(&p.address) {
                    continue;
                }
                let limit = known.next_after(p.address).unwrap_or(u64::MAX);
                let bounded = super::indirect::entries(functions, f, p, limit, None).len();
                let entries = bounded.min(on_instructions) as u64;
                let size = entries * if p.pic { 4 } else { 8 };
                let name = format!("JUMP_TABLE/{}.{}", f.name, ids.len());
                ids.push(p.address);
                match self.objects.get_mut(&p.address) {
                    Some(o) if o.size == 0 => {
                        o.size = size;
                        o.name = name;
                        self.update_nesting(p.address);
                    }
                    Some(_) => {}
                    None => self.register(p.address, size, name),
                }
            }
        }
    }

    /// Relocation mode (`-Wl,-q`): an absolute 64-bit relocation against a section symbol
    /// points at `section + addend`; BOLT names such targets that no object contains
    /// `SYMBOLat0x…` (0-sized).
    fn register_relocation_targets(&mut self, file: &object::File, sections: &[Section]) {
        let mut targets = Vec::new();
        for section in file.sections() {
            for (_, reloc) in section.relocations() {
                let object::RelocationFlags::Elf { r_type } = reloc.flags() else {
                    continue;
                };
                let object::RelocationTarget::Symbol(idx) = reloc.target() else {
                    continue;
                };
                let Ok(sym) = file.symbol_by_index(idx) else {
                    continue;
                };
                if r_type != object::elf::R_X86_64_64 || sym.kind() != SymbolKind::Section {
                    continue;
                }
                targets.push(sym.address().wrapping_add(reloc.addend() as u64));
            }
        }
        self.register_unnamed(targets, sections, SYMBOL_PREFIX);
    }

    /// `handleAddressRef`: RIP-relative data references of every function that no object
    /// contains become 0-sized `DATAat0x…` objects. A symbol's code that a function in
    /// `known` decoded (same start, same bytes) is not decoded again.
    fn register_code_references(
        &mut self,
        file: &object::File,
        sections: &[Section],
        functions: &Functions,
        known: &Known,
    ) {
        use iced_x86::{Decoder, DecoderOptions, Instruction};
        use rayon::prelude::*;
        let code: Vec<(u64, &[u8])> = file
            .symbols()
            .filter(|sym| sym.kind() == SymbolKind::Text && sym.size() != 0 && !sym.is_undefined())
            .filter_map(|sym| {
                let section = sections.iter().find(|s| {
                    s.executable && sym.address() >= s.address && sym.address() < s.address + s.size
                })?;
                let start = (sym.address() - section.address) as usize;
                let code = section.contents.get(start..)?;
                Some((sym.address(), &code[..code.len().min(sym.size() as usize)]))
            })
            .collect();
        let decoded = |address: u64, code: &[u8]| -> Option<&[u64]> {
            let i = functions.index_containing(address)?;
            if functions.get(i).address != address {
                return None;
            }
            let (length, targets) = known.get(&(i as u32))?.rip_targets.as_ref()?;
            (*length == code.len()).then_some(targets)
        };
        // The order does not matter: the targets are sorted.
        let targets: Vec<u64> = code
            .par_iter()
            .flat_map_iter(|&(address, code)| {
                if let Some(targets) = decoded(address, code) {
                    return targets.to_vec();
                }
                let mut decoder = Decoder::with_ip(64, code, address, DecoderOptions::NONE);
                let mut ins = Instruction::default();
                let mut targets = Vec::new();
                while decoder.can_decode() {
                    decoder.decode_out(&mut ins);
                    if ins.is_invalid() {
                        break;
                    }
                    if ins.is_ip_rel_memory_operand() {
                        targets.push(ins.ip_rel_memory_address());
                    }
                }
                targets
            })
            .collect();
        self.register_unnamed(targets, sections, DATA_PREFIX);
    }

    /// Registers the data addresses among `targets` that no object contains as 0-sized
    /// objects named `<prefix>0x<address>`.
    fn register_unnamed(&mut self, mut targets: Vec<u64>, sections: &[Section], prefix: &str) {
        let in_data = |a: u64| {
            sections
                .iter()
                .any(|s| a >= s.address && a - s.address < s.size && !s.executable)
        };
        targets.sort_unstable();
        targets.dedup();
        for t in targets {
            if in_data(t) && !self.registered_contains(t) {
                self.register(t, 0, format!("{prefix}0x{t:x}"));
            }
        }
    }

    /// `registerNameAtAddress`: a new object, or one more name (not the shown one) of an
    /// existing one.
    fn register(&mut self, address: u64, size: u64, name: String) {
        if self.objects.contains_key(&address) {
            return;
        }
        self.objects.insert(
            address,
            DataObject {
                size,
                name,
                parent: None,
            },
        );
        self.update_nesting(address);
    }

    /// `updateObjectNesting`: the new object nests in an enclosing one, and encloses the
    /// objects that follow it within its range.
    fn update_nesting(&mut self, address: u64) {
        let size = self.objects[&address].size;
        let enclosing = self
            .objects
            .range(..address)
            .next_back()
            .and_then(|(&a, o)| {
                let top = o.parent.unwrap_or(a);
                let t = &self.objects[&top];
                (address >= top && address + size <= top + t.size && t.size != 0).then_some(top)
            });
        if let Some(top) = enclosing {
            self.objects.get_mut(&address).expect("inserted").parent = Some(top);
        }
        if size != 0 {
            let top = enclosing.unwrap_or(address);
            let top_end = top + self.objects[&top].size;
            let inner: Vec<u64> = self
                .objects
                .range(address + 1..)
                .take_while(|(&a, o)| a + o.size <= top_end)
                .map(|(&a, _)| a)
                .collect();
            for a in inner {
                self.objects.get_mut(&a).expect("listed").parent = Some(top);
            }
        }
    }

    /// `fixBinaryDataHoles`: gaps between the top-level objects of each section (and before
    /// its first and after its last) become objects.
    fn fill_holes(&mut self, sections: &[Section]) {
        for s in sections {
            let end = s.address + s.size;
            let mut holes = Vec::new();
            let mut covered = s.address;
            for (&a, o) in self.objects.range(s.address..end) {
                let internal_mark = o.size == 0
                    && (o.name.starts_with(DATA_PREFIX) || o.name.starts_with(SYMBOL_PREFIX));
                if o.parent.is_some() || internal_mark {
                    continue;
                }
                if a > covered {
                    holes.push((covered, a - covered));
                }
                covered = a + o.size;
            }
            if covered < end {
                holes.push((covered, end - covered));
            }
            for (start, size) in holes {
                match self.objects.get_mut(&start) {
                    Some(o) if o.size == 0 => {
                        o.size = size;
                        self.update_nesting(start);
                    }
                    Some(_) => {}
                    None => self.register(start, size, format!("{HOLE_PREFIX}0x{start:x}")),
                }
            }
        }
    }

    /// `generateSymbolHashes`: each hole is renamed `HOLEat_<hash>` after its size, section
    /// name and contents, unless an earlier object already took that name.
    fn name_holes(&mut self, sections: &[Section]) {
        let mut taken: hashbrown::HashSet<String> = hashbrown::HashSet::new();
        for (&a, o) in self.objects.iter_mut() {
            let internal = [HOLE_PREFIX, DATA_PREFIX, SYMBOL_PREFIX]
                .iter()
                .any(|p| o.name.starts_with(p));
            if !internal || o.size == 0 {
                continue;
            }
            let Some(s) = sections
                .iter()
                .find(|s| a >= s.address && a < s.address + s.size)
            else {
                continue;
            };
            let off = (a - s.address) as usize;
            let bytes = s
                .contents
                .get(off..)
                .map(|c| &c[..c.len().min(o.size as usize)])
                .unwrap_or(&[]);
            let hash = llvm_hash::combine(
                llvm_hash::combine(
                    llvm_hash::integer(o.size),
                    llvm_hash::bytes(s.name.as_bytes()),
                ),
                llvm_hash::bytes(bytes),
            );
            let prefix = &o.name[..o.name.find("0x").unwrap_or(o.name.len())];
            let new_name = format!("{prefix}_{hash:x}");
            if taken.insert(new_name.clone()) {
                o.name = new_name;
            }
        }
    }

    /// Whether an object registered so far contains `addr` (as [`DataObjects::containing`]
    /// finds it once frozen).
    fn registered_contains(&self, addr: u64) -> bool {
        let nearest = self.objects.range(..=addr).next_back();
        let found = nearest
            .and_then(|(&a, o)| nearest_containing((a, o), addr, |top| self.objects.get(&top)));
        found.is_some()
    }

    /// `getBinaryDataContainingAddress`: the object at or before `addr` if it contains it,
    /// else its nearest enclosing object that does.
    pub fn containing(&self, addr: u64) -> Option<(&str, u64)> {
        debug_assert!(
            self.objects.is_empty(),
            "looked up before the objects were frozen"
        );
        let i = self
            .addresses
            .partition_point(|&a| a <= addr)
            .checked_sub(1)?;
        let frozen_at = |top: u64| {
            let j = self.addresses.binary_search(&top).ok()?;
            Some(&self.frozen[j])
        };
        let (start, o) = nearest_containing((self.addresses[i], &self.frozen[i]), addr, frozen_at)?;
        Some((&o.name, addr - start))
    }
}

/// `nearest` (the object at or before `addr`) if it contains `addr`, else its enclosing object
/// (found by `object_at`) if that does: the object and its start.
fn nearest_containing<'o>(
    (start, o): (u64, &'o DataObject),
    addr: u64,
    object_at: impl Fn(u64) -> Option<&'o DataObject>,
) -> Option<(u64, &'o DataObject)> {
    if contains(start, o, addr) {
        return Some((start, o));
    }
    let top = o.parent?;
    let p = object_at(top)?;
    contains(top, p, addr).then_some((top, p))
}

fn contains(start: u64, o: &DataObject, addr: u64) -> bool {
    (addr >= start && addr - start < o.size) || (o.size == 0 && addr == start)
}

fn is_alloc(s: &object::Section) -> bool {
    matches!(s.flags(), object::SectionFlags::Elf { sh_flags } if sh_flags & u64::from(object::elf::SHF_ALLOC) != 0)
        && s.address() != 0
}

fn is_tls(s: &object::Section) -> bool {
    matches!(s.flags(), object::SectionFlags::Elf { sh_flags } if sh_flags & u64::from(object::elf::SHF_TLS) != 0)
}

/// A symbolized memory access: the function and PC offset, the object and offset.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MemLine {
    pub function: String,
    pub pc_offset: u64,
    pub object: String,
    pub offset: u64,
}

/// The memory lines of a profile's `(pc, data address, count)` samples.
pub fn symbolize(
    samples: &[crate::perf::aggregate::MemSample],
    functions: &Functions,
    objects: &DataObjects,
) -> Vec<(MemLine, u64)> {
    let mut lines: HashMap<MemLine, u64> = HashMap::new();
    for &crate::perf::aggregate::MemSample {
        pc, addr, count, ..
    } in samples
    {
        let Some(f) = functions.index_containing(pc) else {
            continue;
        };
        let Some((object, offset)) = objects.containing(addr) else {
            continue;
        };
        let func = functions.get(f);
        let line = MemLine {
            function: func.name.clone(),
            pc_offset: pc - func.address,
            object: object.to_owned(),
            offset,
        };
        *lines.entry(line).or_default() += count;
    }
    let mut lines: Vec<_> = lines.into_iter().collect();
    lines.sort_unstable();
    lines
}

/// Writes memory lines in perf2bolt's order (function name, then PC offset, then object).
pub fn write(lines: &[(MemLine, u64)], out: &mut dyn Write) -> io::Result<()> {
    let mut w = FdataWriter::new(out);
    for (l, count) in lines {
        w.memory(
            &Location::symbol(&l.function, l.pc_offset),
            &Location::symbol(&l.object, l.offset),
            *count as i64,
        )?;
    }
    Ok(())
}

/// LLVM's `hash_value`/`hash_combine` (llvm/ADT/Hashing.h) with the fixed seed of release
/// builds, which is how BOLT names its anonymous data objects.
mod llvm_hash {
    const SEED: u64 = 0xff51_afd7_ed55_8ccd;
    const K0: u64 = 0xc3a5_c85c_97cb_3127;
    const K1: u64 = 0xb492_b66f_be98_f273;
    const K2: u64 = 0x9ae1_6a3b_2f90_404f;
    const K3: u64 = 0xc949_d7c7_509e_6557;

    fn fetch64(s: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"))
    }

    fn fetch32(s: &[u8], at: usize) -> u64 {
        u64::from(u32::from_le_bytes(
            s[at..at + 4].try_into().expect("4 bytes"),
        ))
    }

    fn rotate(v: u64, shift: u32) -> u64 {
        if shift == 0 {
            v
        } else {
            v.rotate_right(shift)
        }
    }

    fn shift_mix(v: u64) -> u64 {
        v ^ (v >> 47)
    }

    fn hash_16_bytes(low: u64, high: u64) -> u64 {
        const MUL: u64 = 0x9ddf_ea08_eb38_2d69;
        let mut a = (low ^ high).wrapping_mul(MUL);
        a ^= a >> 47;
        let mut b = (high ^ a).wrapping_mul(MUL);
        b ^= b >> 47;
        b.wrapping_mul(MUL)
    }

    fn short(s: &[u8], seed: u64) -> u64 {
        let len = s.len();
        let l = len as u64;
        match len {
            0 => K2 ^ seed,
            1..=3 => {
                let (a, b, c) = (
                    u64::from(s[0]),
                    u64::from(s[len >> 1]),
                    u64::from(s[len - 1]),
                );
                let y = a.wrapping_add(b << 8);
                let z = l.wrapping_add(c << 2);
                shift_mix(y.wrapping_mul(K2) ^ z.wrapping_mul(K3) ^ seed).wrapping_mul(K2)
            }
            4..=8 => {
                let a = fetch32(s, 0);
                hash_16_bytes(l.wrapping_add(a << 3), seed ^ fetch32(s, len - 4))
            }
            9..=16 => {
                let a = fetch64(s, 0);
                let b = fetch64(s, len - 8);
                hash_16_bytes(seed ^ a, rotate(b.wrapping_add(l), len as u32)) ^ b
            }
            17..=32 => {
                let a = fetch64(s, 0).wrapping_mul(K1);
                let b = fetch64(s, 8);
                let c = fetch64(s, len - 8).wrapping_mul(K2);
                let d = fetch64(s, len - 16).wrapping_mul(K0);
                hash_16_bytes(
                    rotate(a.wrapping_sub(b), 43)
                        .wrapping_add(rotate(c ^ seed, 30))
                        .wrapping_add(d),
                    a.wrapping_add(rotate(b ^ K3, 20))
                        .wrapping_sub(c)
                        .wrapping_add(l)
                        .wrapping_add(seed),
                )
            }
            _ => {
                let mut z = fetch64(s, 24);
                let mut a = fetch64(s, 0)
                    .wrapping_add(l.wrapping_add(fetch64(s, len - 16)).wrapping_mul(K0));
                let mut b = rotate(a.wrapping_add(z), 52);
                let mut c = rotate(a, 37);
                a = a.wrapping_add(fetch64(s, 8));
                c = c.wrapping_add(rotate(a, 7));
                a = a.wrapping_add(fetch64(s, 16));
                let vf = a.wrapping_add(z);
                let vs = b.wrapping_add(rotate(a, 31)).wrapping_add(c);
                a = fetch64(s, 16).wrapping_add(fetch64(s, len - 32));
                z = fetch64(s, len - 8);
                b = rotate(a.wrapping_add(z), 52);
                c = rotate(a, 37);
                a = a.wrapping_add(fetch64(s, len - 24));
                c = c.wrapping_add(rotate(a, 7));
                a = a.wrapping_add(fetch64(s, len - 16));
                let wf = a.wrapping_add(z);
                let ws = b.wrapping_add(rotate(a, 31)).wrapping_add(c);
                let r = shift_mix(
                    vf.wrapping_add(ws)
                        .wrapping_mul(K2)
                        .wrapping_add(wf.wrapping_add(vs).wrapping_mul(K0)),
                );
                shift_mix((seed ^ r.wrapping_mul(K0)).wrapping_add(vs)).wrapping_mul(K2)
            }
        }
    }

    /// The 64-byte block state of long inputs.
    struct State([u64; 7]);

    impl State {
        fn create(s: &[u8], seed: u64) -> State {
            let mut h = [
                0,
                seed,
                hash_16_bytes(seed, K1),
                rotate(seed ^ K1, 49),
                seed.wrapping_mul(K1),
                shift_mix(seed),
                0,
            ];
            h[6] = hash_16_bytes(h[4], h[5]);
            let mut st = State(h);
            st.mix(s);
            st
        }

        fn mix_32(s: &[u8], at: usize, a: &mut u64, b: &mut u64) {
            *a = a.wrapping_add(fetch64(s, at));
            let c = fetch64(s, at + 24);
            *b = rotate(b.wrapping_add(*a).wrapping_add(c), 21);
            let d = *a;
            *a = a.wrapping_add(fetch64(s, at + 8).wrapping_add(fetch64(s, at + 16)));
            *b = b.wrapping_add(rotate(*a, 44).wrapping_add(d));
            *a = a.wrapping_add(c);
        }

        fn mix(&mut self, s: &[u8]) {
            let h = &mut self.0;
            h[0] = rotate(
                h[0].wrapping_add(h[1])
                    .wrapping_add(h[3])
                    .wrapping_add(fetch64(s, 8)),
                37,
            )
            .wrapping_mul(K1);
            h[1] =
                rotate(h[1].wrapping_add(h[4]).wrapping_add(fetch64(s, 48)), 42).wrapping_mul(K1);
            h[0] ^= h[6];
            h[1] = h[1].wrapping_add(h[3]).wrapping_add(fetch64(s, 40));
            h[2] = rotate(h[2].wrapping_add(h[5]), 33).wrapping_mul(K1);
            h[3] = h[4].wrapping_mul(K1);
            h[4] = h[0].wrapping_add(h[5]);
            let (mut a, mut b) = (h[3], h[4]);
            Self::mix_32(s, 0, &mut a, &mut b);
            (h[3], h[4]) = (a, b);
            h[5] = h[2].wrapping_add(h[6]);
            h[6] = h[1].wrapping_add(fetch64(s, 16));
            let (mut a, mut b) = (h[5], h[6]);
            Self::mix_32(s, 32, &mut a, &mut b);
            (h[5], h[6]) = (a, b);
            h.swap(2, 0);
        }

        fn finalize(&self, len: u64) -> u64 {
            let h = &self.0;
            hash_16_bytes(
                hash_16_bytes(h[3], h[5])
                    .wrapping_add(shift_mix(h[1]).wrapping_mul(K1))
                    .wrapping_add(h[2]),
                hash_16_bytes(h[4], h[6])
                    .wrapping_add(shift_mix(len).wrapping_mul(K1))
                    .wrapping_add(h[0]),
            )
        }
    }

    /// `hash_value(StringRef)`: `hash_combine_range` over the bytes.
    pub fn bytes(s: &[u8]) -> u64 {
        if s.len() <= 64 {
            return short(s, SEED);
        }
        let aligned_end = s.len() & !63;
        let mut state = State::create(&s[..64], SEED);
        let mut at = 64;
        while at != aligned_end {
            state.mix(&s[at..at + 64]);
            at += 64;
        }
        if s.len() & 63 != 0 {
            state.mix(&s[s.len() - 64..]);
        }
        state.finalize(s.len() as u64)
    }

    /// `hash_value` of an integer.
    pub fn integer(v: u64) -> u64 {
        let b = v.to_le_bytes();
        hash_16_bytes(SEED.wrapping_add(fetch32(&b, 0) << 3), fetch32(&b, 4))
    }

    /// `hash_combine(a, b)` of two hash codes.
    pub fn combine(a: u64, b: u64) -> u64 {
        let mut buf = [0u8; 16];
        buf[..8].copy_from_slice(&a.to_le_bytes());
        buf[8..].copy_from_slice(&b.to_le_bytes());
        short(&buf, SEED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bolt::cfg;

    /// What every function's disassembly gives the data objects, as the YAML path keeps it.
    fn known_of(functions: &Functions) -> Known {
        (0..functions.len())
            .map(|i| {
                let f = functions.get(i);
                let mut d = cfg::disassemble(functions, f);
                (i as u32, KnownFunction::taken_from(functions, f, &mut d))
            })
            .collect()
    }

    /// The data objects built from the functions' disassembly equal those built by decoding
    /// the binary's code again, on binaries built elsewhere (a PIE with jump tables, a
    /// non-PIE executable, a shared library).
    #[test]
    fn known_functions_give_the_objects_a_fresh_decode_gives() {
        for name in [
            "autofdo-jump_table_test.binary",
            "autofdo-propeller_sample_1.bin",
            "autofdo-libro_sample.so",
        ] {
            let path = testsupport::shared_perf(name);
            let data = std::fs::read(&path).unwrap();
            let functions = Functions::from_elf(&path, &data).unwrap();
            let known = known_of(&functions);
            let referring = (known.values())
                .filter(|k| k.rip_targets.as_ref().is_some_and(|(_, t)| !t.is_empty()))
                .count();
            assert!(
                referring > 0,
                "{name}: no function with a RIP-relative operand"
            );
            let fresh = DataObjects::from_elf(&data, &functions);
            let knowing = DataObjects::from_elf_knowing(&data, &functions, &known);
            assert!(!fresh.addresses.is_empty(), "{name}: no data object");
            assert_eq!(fresh.addresses, knowing.addresses, "{name}");
            assert_eq!(fresh.frozen, knowing.frozen, "{name}");
        }
    }
}
