//! `merge-fdata` of YAML profiles, as LLVM 22's `merge-fdata` merges them: the first input
//! decides the mode (a YAML profile starts with `---`), and every input must then be YAML.
//!
//! * headers: the first input's, with later origins appended (`; `), differing event lists
//!   appended (`,`), and an error for LBR mixed with sample profiles or different hash
//!   functions;
//! * functions by name: the first profile of a name is kept as read, later ones must agree on
//!   `nblocks`, `fid` and `hash` (else an error) and add their `exec`;
//! * blocks by `bid` (they must agree on `insns` and `hash`): counts add up; call sites add up
//!   where offset, `fid` and `disc` agree, the others are appended in the order of libstdc++'s
//!   `unordered_map` keyed by offset (one per offset); successors add up by `bid`, new ones
//!   appended in `bid` order; blocks new to a function are appended in `bid` order;
//! * the merged functions are written sorted by `fid` (ties in first-seen order: LLVM's
//!   `StringMap` order is its hash order, which this does not model).

use std::fmt;
use std::path::PathBuf;

use hashbrown::HashMap;

use formats::bolt::yaml::{self, Block, Function, Header, Profile};

use crate::bolt::fdata_merge::Sources;
use crate::hash_order::UnorderedMapOrder;

/// Why YAML profiles could not be merged.
#[derive(Debug)]
pub enum YamlMergeError {
    /// An input could not be read.
    Io {
        /// The input.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// An input is not a YAML profile, or a malformed one.
    Parse {
        /// The input.
        path: PathBuf,
        /// Whether it is the first input (which chose YAML: it starts like a YAML profile).
        first: bool,
        /// Where and what.
        source: yaml::ReadError,
    },
    /// Two profiles cannot be merged (what `merge-fdata` reports as an error).
    Conflict {
        /// The input that conflicts with the ones before it.
        path: PathBuf,
        /// What conflicts.
        message: String,
    },
}

impl fmt::Display for YamlMergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            YamlMergeError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            YamlMergeError::Parse {
                path,
                first: true,
                source,
            } => write!(f, "{}: malformed YAML profile: {source}", path.display()),
            YamlMergeError::Parse { path, source, .. } => write!(
                f,
                "{}: not a YAML profile (the first input is one): {source}",
                path.display()
            ),
            YamlMergeError::Conflict { path, message } => {
                write!(f, "{}: {message}", path.display())
            }
        }
    }
}

impl std::error::Error for YamlMergeError {}

/// The merged profile and the warnings `merge-fdata` prints.
#[derive(Debug, Default)]
pub struct YamlMerged {
    /// The merged profile.
    pub profile: Profile,
    /// Warnings (different binaries, build ids or events).
    pub warnings: Vec<String>,
}

/// Whether `bytes` is a YAML profile as `merge-fdata` decides it.
pub fn is_yaml(bytes: &[u8]) -> bool {
    bytes.starts_with(b"---\n")
}

/// Merges the YAML profiles `sources` (in order).
pub fn merge(sources: &Sources) -> Result<YamlMerged, YamlMergeError> {
    let mut out = YamlMerged::default();
    let mut functions: Vec<Function> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    for n in 0..sources.len() {
        let path = &sources.path(n).to_path_buf();
        let bytes = sources.read(n).map_err(|source| YamlMergeError::Io {
            path: path.clone(),
            source,
        })?;
        let profile = yaml::read(&bytes).map_err(|source| YamlMergeError::Parse {
            path: path.clone(),
            first: n == 0,
            source,
        })?;
        let conflict = |message: String| YamlMergeError::Conflict {
            path: path.clone(),
            message,
        };
        if n == 0 {
            out.profile.header = profile.header;
        } else {
            merge_headers(&mut out.profile.header, &profile.header, &mut out.warnings)
                .map_err(conflict)?;
        }
        for f in profile.functions {
            match by_name.get(&f.name) {
                None => {
                    by_name.insert(f.name.clone(), functions.len());
                    functions.push(f);
                }
                Some(&i) => merge_function(&mut functions[i], f).map_err(conflict)?,
            }
        }
    }
    functions.sort_by_key(|f| f.fid);
    out.profile.functions = functions;
    Ok(out)
}

fn flag_bits(h: &Header) -> u8 {
    h.flags.iter().fold(0, |bits, f| {
        bits | match *f {
            "lbr" => 1,
            "sample" => 2,
            _ => 4,
        }
    })
}

fn bits_flags(bits: u8) -> Vec<&'static str> {
    [(1, "lbr"), (2, "sample"), (4, "memevent")]
        .into_iter()
        .filter(|(b, _)| bits & b != 0)
        .map(|(_, f)| f)
        .collect()
}

/// `mergeProfileHeaders`.
fn merge_headers(
    merged: &mut Header,
    h: &Header,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    if merged.binary_name.is_empty() {
        merged.binary_name = h.binary_name.clone();
    }
    if merged.binary_name != h.binary_name {
        warnings.push(format!(
            "merging profile from a binary for {} into a profile for binary {}",
            h.binary_name, merged.binary_name
        ));
    }
    let id = |x: &Header| x.build_id.clone().unwrap_or_default();
    if id(merged).is_empty() {
        merged.build_id = h.build_id.clone();
    }
    if !id(merged).is_empty() && id(merged) != id(h) {
        warnings.push("build-ids in merged profiles do not match".into());
    }
    let (mut ours, theirs) = (flag_bits(merged), flag_bits(h));
    if ours == 0 {
        ours = theirs;
    }
    if ours & 3 != theirs & 3 {
        return Err("cannot merge LBR profile with non-LBR profile".into());
    }
    merged.flags = bits_flags(ours | theirs);
    if !h.origin.is_empty() {
        if merged.origin.is_empty() {
            merged.origin = h.origin.clone();
        } else if merged.origin != h.origin {
            merged.origin = format!("{}; {}", merged.origin, h.origin);
        }
    }
    if merged.events.is_empty() {
        merged.events = h.events.clone();
    }
    if merged.events != h.events {
        warnings.push("merging profiles with different sampling events".into());
        merged.events = format!("{},{}", merged.events, h.events);
    }
    if merged.xxh3 != h.xxh3 {
        return Err("cannot merge profiles with different hash functions".into());
    }
    Ok(())
}

/// `mergeFunctionProfile`.
fn merge_function(merged: &mut Function, f: Function) -> Result<(), String> {
    if f.nblocks != merged.nblocks {
        return Err(format!("{}: number of basic blocks mismatch", f.name));
    }
    if f.fid != merged.fid {
        return Err(format!("{}: ID mismatch", f.name));
    }
    if f.hash != merged.hash {
        return Err(format!("{}: hash mismatch", f.name));
    }
    merged.exec = merged.exec.wrapping_add(f.exec);
    let n = f.nblocks as usize;
    let mut by_index: Vec<Option<Block>> = (0..n).map(|_| None).collect();
    let name = f.name;
    for b in f.blocks {
        let slot = by_index
            .get_mut(b.bid as usize)
            .ok_or_else(|| format!("{name} : BB #{}: bad basic block index", b.bid))?;
        *slot = Some(b);
    }
    for mb in merged.blocks.iter_mut() {
        if let Some(b) = by_index.get_mut(mb.bid as usize).and_then(Option::take) {
            merge_block(mb, b, &name, n)?;
        }
    }
    merged.blocks.extend(by_index.into_iter().flatten());
    Ok(())
}

/// `mergeBasicBlockProfile`.
fn merge_block(merged: &mut Block, b: Block, name: &str, nblocks: usize) -> Result<(), String> {
    if b.insns != merged.insns {
        return Err(format!(
            "{name} : BB #{}: number of instructions in block mismatch",
            b.bid
        ));
    }
    if b.hash != merged.hash {
        return Err(format!("{name} : BB #{}: basic block hash mismatch", b.bid));
    }
    merged.exec = merged.exec.wrapping_add(b.exec);
    merged.events = merged.events.wrapping_add(b.events);
    // One call site per offset, the first (`unordered_map::emplace`).
    let mut order = UnorderedMapOrder::new();
    let mut by_offset: HashMap<u32, yaml::Call> = HashMap::new();
    for c in b.calls {
        if !by_offset.contains_key(&c.offset) {
            order.insert(u64::from(c.offset));
            by_offset.insert(c.offset, c);
        }
    }
    for mc in merged.calls.iter_mut() {
        let same = by_offset
            .get(&mc.offset)
            .is_some_and(|c| c.fid == mc.fid && c.disc == mc.disc);
        if same {
            let c = by_offset.remove(&mc.offset).expect("present");
            mc.count = mc.count.wrapping_add(c.count);
            mc.mispreds = mc.mispreds.wrapping_add(c.mispreds);
        }
    }
    for offset in order.order() {
        if let Some(c) = by_offset.remove(&(offset as u32)) {
            merged.calls.push(c);
        }
    }
    let mut by_index: Vec<Option<yaml::Succ>> = vec![None; nblocks];
    for s in b.succ {
        let slot = by_index
            .get_mut(s.bid as usize)
            .ok_or_else(|| format!("{name}: bad successor index"))?;
        *slot = Some(s);
    }
    for ms in merged.succ.iter_mut() {
        if let Some(s) = by_index.get_mut(ms.bid as usize).and_then(Option::take) {
            ms.count = ms.count.wrapping_add(s.count);
            ms.mispreds = ms.mispreds.wrapping_add(s.mispreds);
        }
    }
    merged.succ.extend(by_index.into_iter().flatten());
    Ok(())
}
