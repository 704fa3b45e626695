//! `profmill bat dump|translate`: a BOLTed binary's address translation tables.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use engine::bolt::bat::Translation;
use formats::bolt::bat::Entry;

type BoxError = Box<dyn std::error::Error>;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Print every fragment's translation table (LLVM's `BoltAddressTranslation::dump`
    /// layout), or everything decoded as JSON.
    Dump {
        /// A binary written by `llvm-bolt --enable-bat`.
        elf: PathBuf,
        /// JSON: section size, maps, and per fragment its kind, hashes, blocks, entries and
        /// secondary entry points.
        #[arg(long)]
        json: bool,
    },
    /// Translate addresses of the BOLTed binary to offsets in the input binary's functions.
    Translate {
        /// A binary written by `llvm-bolt --enable-bat`.
        elf: PathBuf,
        /// Addresses in the BOLTed binary (hex, with or without `0x`).
        #[arg(required = true)]
        addresses: Vec<String>,
    },
}

pub fn run(args: Args) -> Result<(), BoxError> {
    match args.command {
        Command::Dump { elf, json } => dump(&elf, json),
        Command::Translate { elf, addresses } => translate(&elf, &addresses),
    }
}

/// The binary's tables, or an error saying it has none.
fn load(elf: &Path) -> Result<(Translation, Vec<u8>), BoxError> {
    let data = engine::io::input::read(elf).map_err(|e| format!("{}: {e}", elf.display()))?;
    let translation = Translation::from_elf(elf, &data)?.ok_or_else(|| {
        format!(
            "{}: no {} section (was it written by llvm-bolt --enable-bat?)",
            elf.display(),
            formats::bolt::bat::SECTION_NAME
        )
    })?;
    Ok((translation, data))
}

fn dump(elf: &Path, json: bool) -> Result<(), BoxError> {
    let (t, _) = load(elf)?;
    let text = if json { dump_json(&t) } else { dump_text(&t) };
    let mut out = crate::stdout();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// LLVM's `BoltAddressTranslation::dump` layout: every fragment by address, then the cold
/// fragments' parents.
fn dump_text(t: &Translation) -> String {
    let mut s = String::new();
    let by_address = fragments_by_address(t);
    let _ = writeln!(s, "BAT tables for {} functions:", by_address.len());
    for (&address, kind) in &by_address {
        let f = t.fragment(address).expect("indexed");
        let _ = write!(s, "Function Address: 0x{address:x}");
        if let Kind::Hot(i) = kind {
            let _ = write!(s, ", hash: {:x}", t.tables.hot[*i].hash);
        }
        s.push('\n');
        s.push_str("BB mappings:\n");
        for e in f.entries {
            let _ = write!(s, "0x{:x} -> 0x{:x}", e.output_offset, e.input_offset());
            match e.block {
                None => s.push_str(" (branch)"),
                Some(b) => {
                    let _ = write!(s, " hash: {:x}", b.hash);
                }
            }
            s.push('\n');
        }
        if let Kind::Hot(i) = kind {
            let h = &t.tables.hot[*i];
            let _ = writeln!(s, "NumBlocks: {}", h.blocks);
            if !h.secondary_entry_points.is_empty() {
                let _ = writeln!(
                    s,
                    "{} secondary entry points:",
                    h.secondary_entry_points.len()
                );
                for o in &h.secondary_entry_points {
                    let _ = writeln!(s, "{o:x}");
                }
            }
        }
        s.push('\n');
    }
    if !t.tables.cold.is_empty() {
        let _ = writeln!(s, "{} cold mappings:", t.tables.cold.len());
        for (&address, kind) in &by_address {
            if let Kind::Cold(_) = kind {
                let parent = t.fragment(address).expect("indexed").parent;
                let _ = writeln!(s, "0x{address:x} -> {parent:x}");
            }
        }
        s.push('\n');
    }
    s
}

enum Kind {
    Hot(usize),
    Cold(usize),
}

fn fragments_by_address(t: &Translation) -> BTreeMap<u64, Kind> {
    let hot = t.tables.hot.iter().enumerate();
    let cold = t.tables.cold.iter().enumerate();
    hot.map(|(i, f)| (f.address, Kind::Hot(i)))
        .chain(cold.map(|(i, f)| (f.address, Kind::Cold(i))))
        .collect()
}

fn dump_json(t: &Translation) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "{{\"section_size\":{},\"maps\":{},\"hot\":{},\"cold\":{},\"fragments\":[",
        t.section_size,
        t.maps(),
        t.tables.hot.len(),
        t.tables.cold.len()
    );
    for (n, (&address, kind)) in fragments_by_address(t).iter().enumerate() {
        if n > 0 {
            s.push(',');
        }
        let f = t.fragment(address).expect("indexed");
        let _ = write!(s, "{{\"address\":{address},");
        match kind {
            Kind::Hot(i) => {
                let h = &t.tables.hot[*i];
                let _ = write!(
                    s,
                    "\"kind\":\"hot\",\"hash\":\"{:016x}\",\"blocks\":{},\"secondary_entry_points\":{:?},",
                    h.hash, h.blocks, h.secondary_entry_points
                );
            }
            Kind::Cold(i) => {
                let c = &t.tables.cold[*i];
                let _ = write!(
                    s,
                    "\"kind\":\"cold\",\"parent\":{},\"input_skew\":{},",
                    f.parent, c.input_skew
                );
            }
        }
        s.push_str("\"entries\":[");
        for (k, e) in f.entries.iter().enumerate() {
            if k > 0 {
                s.push(',');
            }
            entry_json(&mut s, e);
        }
        s.push_str("]}");
    }
    s.push_str("]}\n");
    s
}

fn entry_json(s: &mut String, e: &Entry) {
    let _ = write!(
        s,
        "{{\"output\":{},\"input\":{},\"branch\":{}",
        e.output_offset,
        e.input_offset(),
        e.is_branch()
    );
    if let Some(b) = e.block {
        let _ = write!(
            s,
            ",\"block_hash\":\"{:016x}\",\"block_index\":{}",
            b.hash, b.index
        );
    }
    s.push('}');
}

fn translate(elf: &Path, addresses: &[String]) -> Result<(), BoxError> {
    let (t, data) = load(elf)?;
    let functions = engine::bolt::Functions::from_elf(elf, &data)?;
    let name_at = |a: u64| {
        functions
            .index_containing(a)
            .map(|i| functions.get(i))
            .filter(|f| f.address == a)
            .map_or_else(|| format!("0x{a:x}"), |f| f.name.clone())
    };
    let mut out = String::new();
    for text in addresses {
        let digits = text.trim_start_matches("0x").trim_start_matches("0X");
        let address = u64::from_str_radix(digits, 16)
            .map_err(|_| format!("{text}: not a hexadecimal address"))?;
        let Some(function) = functions
            .index_containing(address)
            .map(|i| functions.get(i))
        else {
            let _ = writeln!(out, "0x{address:x}: not in a function");
            continue;
        };
        let offset = address - function.address;
        let Some(f) = t.fragment(function.address) else {
            let _ = writeln!(
                out,
                "0x{address:x}: {}+0x{offset:x} (no translation table: unchanged)",
                function.name
            );
            continue;
        };
        let input = t.translate(f.address, offset, false);
        let source = t.translate(f.address, offset, true);
        let parent = name_at(f.parent);
        let part = if f.parent == f.address {
            String::new()
        } else {
            format!(" (from cold fragment {}+0x{offset:x})", function.name)
        };
        let _ = writeln!(
            out,
            "0x{address:x}: {parent}+0x{input:x}{part}; as a branch source: {parent}+0x{source:x}"
        );
    }
    crate::stdout().write_all(out.as_bytes())?;
    Ok(())
}
