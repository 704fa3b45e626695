//! Functions as BOLT discovers them in an ELF file (`RewriteInstance::discoverFileObjects` and
//! the PLT analysis), for attributing addresses to `name + offset` exactly as perf2bolt does:
//!
//! * every `STT_FUNC`/`STT_GNU_IFUNC` symbol of the symbol table defines a function (aliases at
//!   one address share it; the first symbol in address order names it);
//! * a local symbol is named `name/N`, `N` counting the local symbols of that name in address
//!   order (BOLT's `NameResolver::uniquify`), so two `static` helpers become `helper/1` and
//!   `helper/2`;
//! * each PLT entry that jumps through a GOT slot with a dynamic relocation is a pseudo function
//!   `sym@PLT`, and the lazy-binding `.plt` header is `__BOLT_PSEUDO_.plt`;
//! * a function contains addresses up to its "max size": the next function's start or the end of
//!   its section, so padding after a function belongs to it.
//!
//! * an `.eh_frame` FDE that starts outside every function so far is a function
//!   `__BOLT_FDE_FUNCat<hex>` (all the functions of a stripped binary, with `--allow-stripped`).
//!
//! * a symbol inside a function's body (hand-written assembly's labels) marks a secondary entry
//!   point there (see [`Function::entries`]; `cfg` adds those that other functions' references
//!   create).

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use hashbrown::{HashMap, HashSet};
use iced_x86::{Code, Decoder, DecoderOptions, FlowControl, OpKind};
use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget, SectionKind, SymbolKind};

use super::start_index::StartIndex;
use crate::error::{Error, Result};
use crate::io::InputBytes;

/// A function as BOLT discovers it from the ELF symbol table, in the binary's own addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    /// The symbol's address (link-time).
    pub address: u64,
    /// The symbol's size (what BOLT disassembles); never 0 (a 0-size symbol gets its max size).
    pub size: u64,
    /// End of the address range attributed to the function.
    pub max_end: u64,
    /// BOLT's `getOneName()`.
    pub name: String,
    /// For a local function symbol after a `STT_FILE` symbol: BOLT's alternative name
    /// `name/file/N`, which perf2bolt prints instead of `name/N` for a BOLTed binary.
    pub file_name: Option<String>,
    /// A PLT stub: BOLT accepts traces through it but builds no CFG.
    pub is_plt: bool,
    /// Offsets of the exception landing pads inside the function.
    pub landing_pads: Vec<u64>,
    /// A compiler-split function: a `.cold` fragment, or the parent of one.
    pub split: bool,
    /// Offsets of the secondary entry points that symbols inside the function mark (BOLT's
    /// `adjustFunctionBoundaries`), ascending.
    pub entries: Vec<u64>,
    /// Made from an FDE that no symbol marks (`__BOLT_FDE_FUNCat…`): BOLT creates these after
    /// the PLT's, so they are numbered last.
    pub from_fde: bool,
}

impl Function {
    /// BOLT's `BinaryFunction::containsAddress` without max size.
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.address && addr - self.address < self.size
    }
}

/// A section's bytes: a copy, or a range of the loaded file itself (a large binary's
/// sections are tens of megabytes, which a copy takes as fresh pages).
enum SectionBytes {
    Copied(Vec<u8>),
    InFile(Arc<InputBytes>, Range<usize>),
}

impl std::ops::Deref for SectionBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            SectionBytes::Copied(bytes) => bytes,
            SectionBytes::InFile(file, range) => &file[range.clone()],
        }
    }
}

/// An executable section: address, size, name and bytes.
type CodeSection<'a> = (u64, u64, String, &'a [u8]);

/// Sorted, non-overlapping functions of one binary and the bytes of its executable sections.
pub struct Functions {
    functions: Vec<Function>,
    /// (address, max_end) of each function, apart from the functions so that address lookups
    /// stay in cache.
    ranges: Vec<(u64, u64)>,
    /// Where in `ranges` each block of the address space starts.
    range_index: StartIndex,
    /// (address, bytes) of each allocated section with file data: code to disassemble and
    /// read-only data holding jump tables.
    sections: Vec<Section>,
    /// BOLT's number of each function (`getFunctionNumber`, its order of creation).
    numbers: Vec<u32>,
}

struct Section {
    address: u64,
    bytes: SectionBytes,
    executable: bool,
    /// `SHF_WRITE`: BOLT does not follow a fixed branch through a writable pointer.
    writable: bool,
}

impl Functions {
    /// The functions BOLT finds in the ELF file `data` (read from `path`, named in errors):
    /// function symbols, PLT entries, functions of FDEs without a symbol, and the exception
    /// landing pads, sorted by address. Fails with [`Error::Binary`] if `data` is not an x86-64
    /// ELF file with a symbol table.
    pub fn from_elf(path: &Path, data: &[u8]) -> Result<Functions> {
        Self::from_elf_with(path, data, false)
    }

    /// [`Functions::from_elf`], also accepting a binary without a symbol table when
    /// `allow_stripped` (perf2bolt's `--allow-stripped`): its functions are then the PLT
    /// entries and the FDEs of `.eh_frame`.
    pub fn from_elf_with(path: &Path, data: &[u8], allow_stripped: bool) -> Result<Functions> {
        Self::from_elf_keeping(path, data, allow_stripped, |bytes| {
            SectionBytes::Copied(bytes.to_vec())
        })
    }

    /// [`Functions::from_elf_with`] of a loaded `file`, whose sections' bytes it keeps a
    /// share of instead of copying them.
    pub(crate) fn from_shared_elf(
        path: &Path,
        file: &Arc<InputBytes>,
        allow_stripped: bool,
    ) -> Result<Functions> {
        let whole: &[u8] = file;
        Self::from_elf_keeping(path, whole, allow_stripped, |bytes| {
            // `data()` is a slice of the file itself: its range is where the slice starts.
            let start = (bytes.as_ptr() as usize).wrapping_sub(whole.as_ptr() as usize);
            match start.checked_add(bytes.len()) {
                Some(end) if end <= whole.len() => SectionBytes::InFile(file.clone(), start..end),
                _ => SectionBytes::Copied(bytes.to_vec()),
            }
        })
    }

    fn from_elf_keeping(
        path: &Path,
        data: &[u8],
        allow_stripped: bool,
        keep: impl Fn(&[u8]) -> SectionBytes,
    ) -> Result<Functions> {
        let bad = |message: String| Error::Binary {
            path: path.to_path_buf(),
            message,
        };
        let file = object::File::parse(data).map_err(|e| bad(format!("not an ELF file: {e}")))?;
        if file.architecture() != object::Architecture::X86_64 {
            return Err(bad(format!(
                "expected an x86-64 ELF file, found {:?}",
                file.architecture()
            )));
        }
        if file.symbol_table().is_none() && !allow_stripped {
            return Err(bad(
                "no symbol table (stripped binary?): BOLT needs function symbols \
                 (perf2bolt's --allow-stripped takes functions from .eh_frame)"
                    .into(),
            ));
        }
        let code: Vec<CodeSection> = file
            .sections()
            .filter(|s| s.kind() == SectionKind::Text)
            .map(|s| {
                let bytes = s.data().unwrap_or(&[]);
                (
                    s.address(),
                    s.size(),
                    s.name().unwrap_or("").to_owned(),
                    bytes,
                )
            })
            .collect();
        let mut functions = symbol_functions(&file, &code);
        let plt = plt_functions(&file, &code, &functions);
        let plt_order: Vec<u64> = plt.iter().map(|f| f.address).collect();
        functions.extend(plt);
        functions.sort_by_key(|f| f.address);
        functions.dedup_by_key(|f| f.address);
        let fde_ranges = super::eh::fde_ranges(&file);
        // A symbol at an FDE's start takes the larger of the two sizes (`discoverFileObjects`;
        // a section symbol has size 0).
        for &(start, len) in &fde_ranges {
            if let Ok(i) = functions.binary_search_by_key(&start, |f| f.address) {
                functions[i].size = functions[i].size.max(len);
            }
        }
        let mut marked: Vec<u64> = file
            .symbols()
            .filter(|s| !s.is_undefined() && s.kind() != SymbolKind::File)
            .map(|s| s.address())
            .collect();
        marked.sort_unstable();
        let fdes = fde_functions(&fde_ranges, &functions, &code, &marked);
        functions.extend(fdes);
        functions.sort_by_key(|f| f.address);
        add_symbol_entries(&file, &mut functions, &code);
        assign_max_ends(&mut functions, &code);
        let pads = super::eh::landing_pads(&file);
        for f in functions.iter_mut() {
            if let Some(addrs) = pads.get(&f.address) {
                f.landing_pads = addrs
                    .iter()
                    .filter(|&&a| f.contains(a))
                    .map(|&a| a - f.address)
                    .collect();
                f.landing_pads.sort_unstable();
                f.landing_pads.dedup();
            }
        }
        if functions.is_empty() {
            return Err(bad("no function symbols in executable sections".into()));
        }
        let sections = file
            .sections()
            .filter(|s| s.address() != 0 && s.kind() != SectionKind::UninitializedData)
            .filter_map(|s| {
                Some(Section {
                    address: s.address(),
                    bytes: keep(s.data().ok()?),
                    executable: s.kind() == SectionKind::Text,
                    writable: matches!(s.flags(), object::SectionFlags::Elf { sh_flags }
                        if sh_flags & u64::from(object::elf::SHF_WRITE) != 0),
                })
            })
            .collect();
        let ranges: Vec<(u64, u64)> = functions.iter().map(|f| (f.address, f.max_end)).collect();
        let range_index = StartIndex::new(ranges.iter().map(|r| r.0));
        let numbers = creation_numbers(&functions, &plt_order, &untyped_code_symbols(&file, &code));
        Ok(Functions {
            functions,
            ranges,
            range_index,
            sections,
            numbers,
        })
    }

    /// BOLT's number of the function at `index` (`BinaryFunction::getFunctionNumber`, which YAML
    /// profiles call `fid`).
    pub fn number(&self, index: usize) -> u32 {
        self.numbers[index]
    }

    /// The functions in address order.
    pub fn iter(&self) -> impl Iterator<Item = &Function> {
        self.functions.iter()
    }

    /// The number of functions.
    pub fn len(&self) -> usize {
        self.functions.len()
    }

    /// Whether the binary has no function.
    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }

    /// Index of the function whose max-size range contains `addr` (BOLT's
    /// `getBinaryFunctionContainingAddress(addr, CheckPastEnd=false, UseMaxSize=true)`).
    pub fn index_containing(&self, addr: u64) -> Option<usize> {
        let i = (self.range_index)
            .partition_point(|i| self.ranges[i].0, addr)
            .checked_sub(1)?;
        (addr < self.ranges[i].1).then_some(i)
    }

    /// The function at `index` (as [`Functions::index_containing`] returns); panics if out of
    /// range.
    pub fn get(&self, index: usize) -> &Function {
        &self.functions[index]
    }

    /// The bytes from `addr` to the end of its section.
    pub(crate) fn data_at(&self, addr: u64) -> Option<&[u8]> {
        self.section_at(addr).and_then(|s| {
            let off = usize::try_from(addr - s.address).ok()?;
            s.bytes.get(off..)
        })
    }

    /// The bytes from `addr` to the end of its section, and whether the section is writable.
    pub(crate) fn data_and_writable(&self, addr: u64) -> Option<(&[u8], bool)> {
        let s = self.section_at(addr)?;
        let off = usize::try_from(addr - s.address).ok()?;
        Some((s.bytes.get(off..)?, s.writable))
    }

    /// Whether `addr` lies in a non-executable section with file contents (where BOLT looks
    /// for jump tables).
    pub(crate) fn is_data(&self, addr: u64) -> bool {
        self.section_at(addr).is_some_and(|s| !s.executable)
    }

    /// Whether `addr` lies in an executable section with file contents.
    pub(crate) fn is_code(&self, addr: u64) -> bool {
        self.sections
            .iter()
            .any(|s| s.executable && addr >= s.address && addr - s.address < s.bytes.len() as u64)
    }

    fn section_at(&self, addr: u64) -> Option<&Section> {
        self.sections
            .iter()
            .find(|s| addr >= s.address && addr - s.address < s.bytes.len() as u64)
    }

    /// The bytes of a function's symbol range (empty if the section has no file data).
    pub fn function_code(&self, f: &Function) -> &[u8] {
        let bytes = self.data_at(f.address).unwrap_or(&[]);
        &bytes[..bytes.len().min(f.size as usize)]
    }
}

/// Addresses of the global untyped (`STT_NOTYPE`) symbols in executable sections, such as the entry
/// points of assembly files without `.type`: BOLT makes functions of them too (cargo's blake3
/// assembly has eleven), which take function numbers; they are not modelled as functions here
/// otherwise (no profile seen so far lands in one).
fn untyped_code_symbols(file: &object::File, code: &[CodeSection]) -> Vec<u64> {
    let in_code = |addr: u64| code.iter().any(|(s, n, _, _)| addr >= *s && addr < s + n);
    let mut out: Vec<u64> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Unknown && !s.is_undefined() && s.is_global())
        .filter(|s| s.address() != 0 && in_code(s.address()))
        .filter(|s| s.name().is_ok_and(|n| !n.is_empty() && !n.starts_with('$')))
        .map(|s| s.address())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// BOLT numbers functions as it creates them, from 1: those of symbols in address order,
/// untyped code symbols among them (`untyped`, see [`untyped_code_symbols`]), then the PLT
/// entries, each PLT section's entries before its header's pseudo function (`plt_order`, as
/// [`plt_functions`] lists them), then the functions of FDEs without a symbol, in address order
/// (`discoverFileObjects` looks for those after `disassemblePLT`).
fn creation_numbers(functions: &[Function], plt_order: &[u64], untyped: &[u64]) -> Vec<u32> {
    let mut numbers = vec![0u32; functions.len()];
    let mut next = 1u32;
    let mut extra = untyped
        .iter()
        .filter(|&&a| functions.binary_search_by_key(&a, |f| f.address).is_err())
        .peekable();
    for (i, f) in functions.iter().enumerate() {
        if !f.is_plt && !f.from_fde {
            while extra.next_if(|&&a| a < f.address).is_some() {
                next += 1;
            }
            numbers[i] = next;
            next += 1;
        }
    }
    next += extra.count() as u32;
    for &address in plt_order {
        if let Ok(i) = functions.binary_search_by_key(&address, |f| f.address) {
            if functions[i].is_plt && numbers[i] == 0 {
                numbers[i] = next;
                next += 1;
            }
        }
    }
    for (i, f) in functions.iter().enumerate() {
        if f.from_fde {
            numbers[i] = next;
            next += 1;
        }
    }
    numbers
}

/// `name/n`, BOLT's unique name for the `n`th local symbol called `name` (without the
/// formatting machinery: a large binary has a few hundred thousand local symbols).
pub(crate) fn numbered(mut name: String, n: u32) -> String {
    name.push('/');
    name.push_str(itoa::Buffer::new().format(n));
    name
}

/// Functions from the symbol table, named as BOLT names them.
fn symbol_functions(file: &object::File, code: &[CodeSection]) -> Vec<Function> {
    let in_code = |addr: u64| code.iter().any(|(s, n, _, _)| addr >= *s && addr < s + n);
    // BOLT walks the defined, named symbols in address order (stable for ties), uniquifying
    // every local name on the way.
    // The file each local symbol follows in the table (BOLT's `SymbolToFileName`; it ignores
    // LTO's artificial `ld-temp.o`, and the file stays current across global symbols).
    let mut file_of: HashMap<object::SymbolIndex, &str> = HashMap::new();
    let mut current_file: Option<&str> = None;
    for s in file.symbols() {
        let name = s.name().unwrap_or_default();
        if s.kind() == SymbolKind::File {
            if name != "ld-temp.o" {
                current_file = Some(name);
            }
        } else if let (Some(f), false) = (current_file, s.is_global()) {
            file_of.insert(s.index(), f);
        }
    }
    // BOLT also walks section symbols, named after their sections, and makes a function of
    // one in code that no function symbol marks (a BOLTed binary's `.bolt.org.text/1`, the
    // old code's start): the PLT's excepted, which `disassemblePLT` handles.
    let section_name = |s: &object::Symbol| {
        let index = s.section_index()?;
        let name = file.section_by_index(index).ok()?.name().ok()?.to_owned();
        let plt = PLT_SECTIONS.iter().any(|(p, _)| *p == name);
        (!plt && !name.is_empty()).then_some(name)
    };
    let mut symbols: Vec<(object::Symbol, Option<String>)> = file
        .symbols()
        .filter(|s| !s.is_undefined() && s.kind() != SymbolKind::File)
        .filter_map(|s| {
            if s.kind() == SymbolKind::Section {
                let name = section_name(&s)?;
                return Some((s, Some(name)));
            }
            s.name().is_ok_and(|n| !n.is_empty()).then_some((s, None))
        })
        .collect();
    // At one address, section symbols come last (BOLT's `CompareSymbols`).
    symbols.sort_by_key(|(s, section)| (s.address(), section.is_some()));
    let parents = fragment_parents(file);
    // BOLT's `NameResolver`: one counter per name, alternative names included.
    let mut counts: HashMap<String, u32> = HashMap::new();
    let mut uniquify = |name: String| {
        let n = counts.entry_ref(name.as_str()).or_insert(0);
        *n += 1;
        numbered(name, *n)
    };
    let mut functions: Vec<Function> = Vec::new();
    for (sym, section) in symbols {
        if let Some(section) = section {
            let unique = uniquify(section);
            let covered = functions
                .last()
                .is_some_and(|f| f.address == sym.address() || f.contains(sym.address()));
            if in_code(sym.address()) && !covered {
                functions.push(Function {
                    address: sym.address(),
                    size: sym.size(),
                    max_end: 0,
                    name: unique,
                    file_name: None,
                    is_plt: false,
                    landing_pads: Vec::new(),
                    split: false,
                    entries: Vec::new(),
                    from_fde: false,
                });
            }
            continue;
        }
        let name = sym.name().unwrap_or_default();
        let (unique, file_name) = if sym.is_global() || sym.is_weak() {
            (name.to_owned(), None)
        } else {
            let alternative = file_of
                .get(&sym.index())
                .filter(|_| sym.kind() == SymbolKind::Text)
                .map(|f| format!("{name}/{f}"));
            (uniquify(name.to_owned()), alternative.map(&mut uniquify))
        };
        if sym.kind() != SymbolKind::Text || !in_code(sym.address()) {
            continue;
        }
        let split = fragment_parent(name).is_some() || parents.contains(&sym.address());
        match functions.last_mut() {
            Some(f) if f.address == sym.address() => {
                f.size = f.size.max(sym.size());
                f.split |= split;
            }
            _ => functions.push(Function {
                address: sym.address(),
                size: sym.size(),
                max_end: 0,
                name: unique,
                file_name,
                is_plt: false,
                landing_pads: Vec::new(),
                split,
                entries: Vec::new(),
                from_fde: false,
            }),
        }
    }
    functions
}

/// The parent's name if `name` is a split-off fragment (`foo.cold`, `foo.cold.1`, `foo.warm`):
/// BOLT's `FunctionFragmentTemplate`.
fn fragment_parent(name: &str) -> Option<&str> {
    [".cold", ".warm"].into_iter().find_map(|mark| {
        let (parent, suffix) = name.rsplit_once(mark)?;
        let numbered = suffix
            .strip_prefix('.')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        (suffix.is_empty() || numbered).then_some(parent)
    })
}

/// The addresses of the functions that have fragments, each fragment's parent found as BOLT's
/// `registerFragments` finds it: the one global, or the one local, of the parent's name; when
/// that is ambiguous (locals of the same name in several files), the local of the fragment's
/// own file — the symbol right after the fragment's (where BOLT puts the fragments it
/// splits off), else any of that file's locals — and failing that the global. Other functions
/// of the parent's name are not split: BOLT builds their CFGs.
fn fragment_parents(file: &object::File) -> HashSet<u64> {
    struct Sym<'a> {
        name: &'a str,
        global: bool,
        file: bool,
        address: u64,
    }
    let table: Vec<Sym> = file
        .symbols()
        .map(|s| Sym {
            name: s.name().unwrap_or_default(),
            global: s.is_global() || s.is_weak(),
            file: s.kind() == SymbolKind::File,
            address: s.address(),
        })
        .collect();
    let mut globals: HashMap<&str, u64> = HashMap::new();
    let mut locals: HashMap<&str, (u32, u64)> = HashMap::new();
    for s in table.iter().filter(|s| !s.file && !s.name.is_empty()) {
        if s.global {
            globals.entry(s.name).or_insert(s.address);
        } else {
            let e = locals.entry(s.name).or_insert((0, s.address));
            e.0 += 1;
        }
    }
    let mut parents = HashSet::new();
    for (i, s) in table.iter().enumerate() {
        let Some(parent) = fragment_parent(s.name).filter(|_| !s.file) else {
            continue;
        };
        let global = globals.get(parent).copied();
        let (local_count, only_local) = locals.get(parent).copied().unwrap_or((0, 0));
        let address = match global {
            None if local_count == 1 => Some(only_local),
            Some(g) if local_count == 0 || s.global => Some(g),
            _ => local_parent_in_file(&table, i, parent, |t| (t.name, t.file, t.global, t.address))
                .or(global),
        };
        parents.extend(address);
    }
    parents
}

/// BOLT's search for an ambiguous fragment's local parent in the fragment's own file (the
/// symbols between its `STT_FILE` and the next one, or the end of the locals).
fn local_parent_in_file<T>(
    table: &[T],
    fragment: usize,
    parent: &str,
    fields: impl Fn(&T) -> (&str, bool, bool, u64),
) -> Option<u64> {
    let file_start = table[..fragment].iter().rposition(|t| fields(t).1)?;
    if fields(&table[file_start]).0 == "bolt-pseudo.o" {
        // BOLT's own file symbol for local fragments of global parents.
        return None;
    }
    let stop = table[fragment..]
        .iter()
        .position(|t| {
            let (_, is_file, global, _) = fields(t);
            is_file || global
        })
        .map_or(table.len(), |p| fragment + p);
    for t in &table[fragment..stop] {
        let (name, _, _, address) = fields(t);
        if name == parent {
            return Some(address);
        }
        if !name.starts_with(parent) {
            break;
        }
    }
    table[file_start + 1..stop]
        .iter()
        .map(&fields)
        .find(|&(name, ..)| name == parent)
        .map(|(.., address)| address)
}

/// BOLT's "functions marked by FDE" (after the symbols and the PLT): an FDE starting neither
/// at nor inside (by symbol size) a known function becomes `__BOLT_FDE_FUNCat<hex start>`,
/// as long as its FDE says; in a stripped binary these are all the functions there are.
/// Where an untyped symbol marks the FDE's start (`__bn_postx4x_internal` in OpenSSL's
/// assembly), BOLT made the function from that symbol, in address order with the others; only
/// those of no symbol are numbered after the PLT ([`Function::from_fde`]). `marked`: the
/// symbols' addresses, ascending.
fn fde_functions(
    fdes: &[(u64, u64)],
    known: &[Function],
    code: &[CodeSection],
    marked: &[u64],
) -> Vec<Function> {
    let in_code = |addr: u64| code.iter().any(|(s, n, _, _)| addr >= *s && addr < s + n);
    // `known` is sorted by address; FDE functions are kept sorted in a map as they come.
    let mut made: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    let mut out: Vec<Function> = Vec::new();
    for &(start, len) in fdes {
        let covers = |address: u64, size: u64| start >= address && start < address + size.max(1);
        let before = known.partition_point(|f| f.address <= start);
        let in_known = before > 0 && covers(known[before - 1].address, known[before - 1].size);
        let in_made = made
            .range(..=start)
            .next_back()
            .is_some_and(|(&a, &n)| covers(a, n));
        if !in_code(start) || in_known || in_made {
            continue;
        }
        made.insert(start, len);
        out.push(Function {
            address: start,
            size: len,
            max_end: 0,
            name: format!("__BOLT_FDE_FUNCat{start:x}"),
            file_name: None,
            is_plt: false,
            landing_pads: Vec::new(),
            split: false,
            entries: Vec::new(),
            from_fde: marked.binary_search(&start).is_err(),
        });
    }
    out
}

/// BOLT's x86-64 PLT sections and their nominal entry sizes (`X86_64_PLTSections`). GNU ld's
/// `.plt.sec` and `-z ibt` `.plt.got` entries are 16 bytes: an entry at offset 0 holding
/// `endbr64` doubles an 8-byte size, as BOLT does.
const PLT_SECTIONS: [(&str, u64); 4] = [
    (".plt", 16),
    (".plt.got", 8),
    (".plt.sec", 8),
    (".iplt", 16),
];

/// BOLT's `disassemblePLT`: each entry of a PLT section (fixed-size slots from the section
/// start) whose first indirect jump reads a GOT slot with a symbol's dynamic relocation is a
/// pseudo function `sym@PLT`, named by that relocation rather than by position because GNU ld
/// orders `.plt.got` and `.plt` independently; an `R_X86_64_IRELATIVE` slot takes the name of
/// the resolver function at its addend. A section with no function at its start (the lazy
/// `.plt` header, `push GOT+8; jmp *GOT+16`) gets `__BOLT_PSEUDO_<section>`, one nominal entry
/// long. `symbols` are the symbol-table functions, which keep their own name at a stub address.
fn plt_functions(file: &object::File, code: &[CodeSection], symbols: &[Function]) -> Vec<Function> {
    let mut got_names: HashMap<u64, String> = HashMap::new();
    let dynsyms: Vec<String> = file
        .dynamic_symbols()
        .map(|s| s.name().unwrap_or_default().to_owned())
        .collect();
    let symbol_at = |addr: u64| {
        symbols
            .binary_search_by_key(&addr, |f| f.address)
            .ok()
            .map(|i| symbols[i].name.clone())
    };
    if let Some(relocs) = file.dynamic_relocations() {
        for (slot, reloc) in relocs {
            let name = match reloc.target() {
                // Dynamic symbol indices count the null symbol at 0.
                RelocationTarget::Symbol(idx) => {
                    idx.0.checked_sub(1).and_then(|i| dynsyms.get(i)).cloned()
                }
                _ if reloc.flags()
                    == (object::RelocationFlags::Elf {
                        r_type: object::elf::R_X86_64_IRELATIVE,
                    })
                    && reloc.addend() != 0 =>
                {
                    u64::try_from(reloc.addend()).ok().and_then(symbol_at)
                }
                _ => None,
            };
            if let Some(name) = name.filter(|n| !n.is_empty()) {
                got_names.insert(slot, name);
            }
        }
    }
    let mut out = Vec::new();
    for (start, size, name, bytes) in code {
        let Some(&(_, nominal)) = PLT_SECTIONS.iter().find(|(n, _)| n == name) else {
            continue;
        };
        let mut entry = nominal;
        let mut off = 0;
        while off + entry <= *size {
            let addr = start + off;
            let (slot, size) = stub_slot(
                &bytes[(off as usize).min(bytes.len())..],
                addr,
                entry,
                off == 0,
            );
            entry = size;
            let name = slot.and_then(|slot| got_names.get(&slot));
            if let (Some(target), None) = (name, symbol_at(addr)) {
                out.push(Function {
                    address: addr,
                    size: entry,
                    max_end: 0,
                    name: format!("{target}@PLT"),
                    file_name: None,
                    is_plt: true,
                    landing_pads: Vec::new(),
                    split: false,
                    entries: Vec::new(),
                    from_fde: false,
                });
            }
            off += entry;
        }
        let covered = out.iter().any(|f| f.address == *start) || symbol_at(*start).is_some();
        if !covered && *size > 0 {
            out.push(Function {
                address: *start,
                size: nominal,
                max_end: 0,
                name: format!("__BOLT_PSEUDO_{name}"),
                file_name: None,
                is_plt: true,
                landing_pads: Vec::new(),
                split: false,
                entries: Vec::new(),
                from_fde: false,
            });
        }
    }
    out
}

/// The GOT slot read by the first indirect jump of the PLT entry at `addr` (`bytes` run from
/// the entry to the end of its section), when that jump is RIP-relative and ends inside the
/// entry (else BOLT skips the entry); and the entry size, which BOLT doubles from 8 to 16 when
/// the section's `first` entry holds an `endbr64` (GNU ld's `.plt.sec`, `-z ibt` `.plt.got`).
fn stub_slot(bytes: &[u8], addr: u64, mut entry: u64, first: bool) -> (Option<u64>, u64) {
    let mut decoder = Decoder::with_ip(64, bytes, addr, DecoderOptions::NONE);
    while decoder.can_decode() && decoder.ip() < addr + entry {
        let ins = decoder.decode();
        if ins.is_invalid() {
            return (None, entry);
        }
        if first && entry == 8 && matches!(ins.code(), Code::Endbr64 | Code::Endbr32) {
            entry = 16;
        }
        if ins.flow_control() == FlowControl::IndirectBranch {
            let fits = ins.next_ip() <= addr + entry;
            let slot = (fits && ins.op0_kind() == OpKind::Memory && ins.is_ip_rel_memory_operand())
                .then(|| ins.ip_rel_memory_address());
            return (slot, entry);
        }
    }
    (None, entry)
}

/// BOLT's `adjustFunctionBoundaries`: each symbol inside a function's size after its start is
/// an entry point, up to the first symbol BOLT does not tolerate inside a body
/// (`isSymbolValidInScope`): tolerated are symbols of size 0 and local symbols without a type
/// (`STT_NOTYPE`).
fn add_symbol_entries(file: &object::File, functions: &mut [Function], code: &[CodeSection]) {
    // The symbols BOLT keeps (`FileSymRefs`) that may lie in code: defined, in an allocated
    // section, not files or sections, not at address 0.
    // (address, tolerated anywhere, tolerated inside the function's size)
    let mut symbols: Vec<(u64, bool, bool)> = file
        .symbols()
        .filter(|s| {
            !s.is_undefined()
                && s.address() != 0
                && !matches!(s.kind(), SymbolKind::File | SymbolKind::Section)
                && !matches!(s.name(), Ok("__hot_start" | "__hot_end"))
        })
        .filter(|s| match s.section() {
            object::SymbolSection::Section(i) => file
                .section_by_index(i)
                .is_ok_and(|sec| sec.kind() == SectionKind::Text),
            _ => false,
        })
        .map(|s| {
            let anywhere = s.kind() == SymbolKind::Unknown && s.is_local();
            (s.address(), anywhere, s.size() == 0)
        })
        .collect();
    symbols.sort_unstable();
    let starts: Vec<u64> = functions.iter().map(|f| f.address).collect();
    for (i, f) in functions.iter_mut().enumerate() {
        let section_end = section_end(code, f);
        let next = starts.get(i + 1).copied().unwrap_or(u64::MAX);
        let first = symbols.partition_point(|&(a, ..)| a <= f.address);
        for &(addr, anywhere, inside_only) in &symbols[first..] {
            if addr >= next || addr >= section_end {
                break;
            }
            // perf2bolt 22 makes no entry of a label past the function's size (in its
            // padding), though `isSymbolValidInScope` would tolerate a local one.
            if addr >= f.address + f.size || !(anywhere || inside_only) {
                break;
            }
            f.entries.push(addr - f.address);
        }
        f.entries.dedup();
    }
}

/// The end of the code section holding `f`'s start (its own end when none holds it).
fn section_end(code: &[CodeSection], f: &Function) -> u64 {
    code.iter()
        .find(|(s, n, _, _)| f.address >= *s && f.address < s + n)
        .map_or(f.address + f.size, |(s, n, _, _)| s + n)
}

/// Max size: up to the next function or the end of the section; a 0-size symbol takes it all.
fn assign_max_ends(functions: &mut [Function], code: &[CodeSection]) {
    let starts: Vec<u64> = functions.iter().map(|f| f.address).collect();
    for (i, f) in functions.iter_mut().enumerate() {
        let section_end = section_end(code, f);
        let next = starts.get(i + 1).copied().unwrap_or(u64::MAX);
        f.max_end = next.min(section_end).max(f.address + 1);
        if f.size == 0 || f.address + f.size > f.max_end {
            f.size = f.max_end - f.address;
        }
    }
}
