//! BOLT's YAML profile (`perf2bolt --profile-format=yaml`, `llvm-bolt -w`): the records and a
//! writer that emits what LLVM's `yaml::Output` emits for BOLT's schema
//! (`ProfileYAMLMapping.h`): keys padded to 16 columns, hex as uppercase unpadded `0x…`,
//! optional fields left out at their default (0), `calls` and `succ` as flow sequences of
//! flow mappings on one line, strings quoted by `yaml::needsQuotes`, and `---` / `...`.
//!
//! Checked against perf2bolt 22's output in the unit tests below (a fragment of a real file).
//! Not yet written: `pseudo_probes`, `guid`, `events` (sample profiles) and `disc`.

use std::fmt::Write as _;

/// The document header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// `binary-name`.
    pub binary_name: String,
    /// `binary-build-id`, if known.
    pub build_id: Option<String>,
    /// `profile-flags`: `lbr`, `sample`, `memevent`, in that order when set.
    pub flags: Vec<&'static str>,
    /// `profile-origin`.
    pub origin: String,
    /// `profile-events`.
    pub events: String,
    /// `dfs-order`.
    pub dfs_order: bool,
    /// `hash-func: xxh3` (else left out: `std-hash` is the default).
    pub xxh3: bool,
}

/// A call site of a block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Call {
    /// Offset of the call from the block's start.
    pub offset: u32,
    /// The callee's `fid`, 0 if unknown.
    pub fid: u32,
    /// Calls.
    pub count: u64,
    /// Mispredictions.
    pub mispreds: u64,
}

/// A successor edge.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Succ {
    /// The successor's `bid`.
    pub bid: u32,
    /// Branches taken along the edge.
    pub count: u64,
    /// Mispredictions.
    pub mispreds: u64,
}

/// A profiled block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Block {
    /// Its index in layout (or DFS) order.
    pub bid: u32,
    /// Non-pseudo instructions.
    pub insns: u32,
    /// The blended block hash.
    pub hash: u64,
    /// Execution count.
    pub exec: u64,
    /// Call sites.
    pub calls: Vec<Call>,
    /// Successors.
    pub succ: Vec<Succ>,
}

/// A profiled function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Function {
    /// Its name (`getLocationName`).
    pub name: String,
    /// BOLT's function number.
    pub fid: u32,
    /// The function hash.
    pub hash: u64,
    /// Execution count.
    pub exec: u64,
    /// Number of blocks.
    pub nblocks: u32,
    /// Profiled blocks.
    pub blocks: Vec<Block>,
}

/// A whole profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// The header.
    pub header: Header,
    /// The functions, in the order to write them.
    pub functions: Vec<Function>,
}

/// `llvm::yaml::needsQuotes` for the strings this schema holds: `None` for plain, `Some('\'')`
/// or `Some('"')`.
fn quoting(s: &str) -> Option<char> {
    if s.is_empty() || s.starts_with(' ') || s.ends_with(' ') {
        return Some('\'');
    }
    let special = matches!(
        s,
        "~" | "null" | "Null" | "NULL" | "true" | "True" | "TRUE" | "false" | "False" | "FALSE"
    ) || s.parse::<f64>().is_ok()
        || s.starts_with("0x")
        || s.starts_with("0o");
    let mut needed = special.then_some('\'');
    for &c in s.as_bytes() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => {}
            b'_' | b'-' | b'^' | b'.' | b',' | b' ' | b'\t' => {}
            0x7f => return Some('"'),
            c if c <= 0x1f && c != b'\n' && c != b'\r' => return Some('"'),
            c if c & 0x80 != 0 => return Some('"'),
            _ => needed = Some('\''),
        }
    }
    needed
}

fn scalar(out: &mut String, s: &str) {
    match quoting(s) {
        None => out.push_str(s),
        Some('\'') => {
            out.push('\'');
            out.push_str(&s.replace('\'', "''"));
            out.push('\'');
        }
        Some(_) => {
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                        write!(out, "\\x{:02X}", c as u32).unwrap()
                    }
                    c => out.push(c),
                }
            }
            out.push('"');
        }
    }
}

/// `yaml::Output::paddedKey`: `key:` and `16 - len(key)` spaces (at least one).
fn key(out: &mut String, indent: usize, first_in_item: bool, k: &str) {
    if first_in_item {
        out.push_str(&" ".repeat(indent - 2));
        out.push_str("- ");
    } else {
        out.push_str(&" ".repeat(indent));
    }
    out.push_str(k);
    out.push(':');
    out.push_str(&" ".repeat(16usize.saturating_sub(k.len()).max(1)));
}

/// The profile as LLVM's YAML writer prints it.
pub fn write(p: &Profile) -> String {
    let mut o = String::new();
    let h = &p.header;
    o.push_str("---\nheader:\n  profile-version: 1\n");
    key(&mut o, 2, false, "binary-name");
    scalar(&mut o, &h.binary_name);
    o.push('\n');
    if let Some(id) = &h.build_id {
        key(&mut o, 2, false, "binary-build-id");
        scalar(&mut o, id);
        o.push('\n');
    }
    key(&mut o, 2, false, "profile-flags");
    o.push_str(&format!("[ {} ]\n", h.flags.join(", ")));
    key(&mut o, 2, false, "profile-origin");
    scalar(&mut o, &h.origin);
    o.push('\n');
    key(&mut o, 2, false, "profile-events");
    scalar(&mut o, &h.events);
    o.push('\n');
    key(&mut o, 2, false, "dfs-order");
    o.push_str(if h.dfs_order { "true\n" } else { "false\n" });
    if h.xxh3 {
        key(&mut o, 2, false, "hash-func");
        o.push_str("xxh3\n");
    }
    o.push_str("functions:\n");
    for f in &p.functions {
        key(&mut o, 4, true, "name");
        scalar(&mut o, &f.name);
        o.push('\n');
        key(&mut o, 4, false, "fid");
        writeln!(o, "{}", f.fid).unwrap();
        key(&mut o, 4, false, "hash");
        writeln!(o, "0x{:X}", f.hash).unwrap();
        key(&mut o, 4, false, "exec");
        writeln!(o, "{}", f.exec).unwrap();
        key(&mut o, 4, false, "nblocks");
        writeln!(o, "{}", f.nblocks).unwrap();
        if f.blocks.is_empty() {
            continue;
        }
        key(&mut o, 4, false, "blocks");
        o.truncate(o.trim_end_matches(' ').len());
        o.push('\n');
        for b in &f.blocks {
            key(&mut o, 8, true, "bid");
            writeln!(o, "{}", b.bid).unwrap();
            if b.insns != 0 {
                key(&mut o, 8, false, "insns");
                writeln!(o, "{}", b.insns).unwrap();
            }
            if b.hash != 0 {
                key(&mut o, 8, false, "hash");
                writeln!(o, "0x{:X}", b.hash).unwrap();
            }
            if b.exec != 0 {
                key(&mut o, 8, false, "exec");
                writeln!(o, "{}", b.exec).unwrap();
            }
            if !b.calls.is_empty() {
                key(&mut o, 8, false, "calls");
                let items: Vec<String> = b
                    .calls
                    .iter()
                    .map(|c| {
                        let mut s =
                            format!("{{ off: 0x{:X}, fid: {}, cnt: {}", c.offset, c.fid, c.count);
                        if c.mispreds != 0 {
                            write!(s, ", mis: {}", c.mispreds).unwrap();
                        }
                        s + " }"
                    })
                    .collect();
                writeln!(o, "[ {} ]", items.join(", ")).unwrap();
            }
            if !b.succ.is_empty() {
                key(&mut o, 8, false, "succ");
                let items: Vec<String> = b
                    .succ
                    .iter()
                    .map(|s| {
                        let mut t = format!("{{ bid: {}, cnt: {}", s.bid, s.count);
                        if s.mispreds != 0 {
                            write!(t, ", mis: {}", s.mispreds).unwrap();
                        }
                        t + " }"
                    })
                    .collect();
                writeln!(o, "[ {} ]", items.join(", ")).unwrap();
            }
        }
    }
    o.push_str("...\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fragment of perf2bolt 22's `--profile-format=yaml` output (clang-19 C++ program).
    const PERF2BOLT_22: &str = "---
header:
  profile-version: 1
  binary-name:     '/tmp/.tmpVrATAE/cxx_clang'
  binary-build-id: d9d07b709aa1d02fb4a452121f9f735000aef0e2
  profile-flags:   [ lbr ]
  profile-origin:  perf data aggregator
  profile-events:  ''
  dfs-order:       false
  hash-func:       xxh3
functions:
  - name:            'printf@PLT'
    fid:             11
    hash:            0x0
    exec:            929
    nblocks:         0
  - name:            _Z5checki
    fid:             7
    hash:            0xDE6BB024C3D1A63E
    exec:            2982
    nblocks:         4
    blocks:
      - bid:             0
        insns:           5
        hash:            0x2F00E8FA96550000
        exec:            2982
        succ:            [ { bid: 2, cnt: 2497, mis: 145 }, { bid: 1, cnt: 495 } ]
      - bid:             3
        insns:           5
        hash:            0x6D424DF2CA004B
        calls:           [ { off: 0x6, fid: 16, cnt: 56 }, { off: 0xE, fid: 22, cnt: 76 } ]
      - bid:             6
        hash:            0xDD8F55F2CA00F0
...
";

    #[test]
    fn writes_what_perf2bolt_22_writes() {
        let p = Profile {
            header: Header {
                binary_name: "/tmp/.tmpVrATAE/cxx_clang".into(),
                build_id: Some("d9d07b709aa1d02fb4a452121f9f735000aef0e2".into()),
                flags: vec!["lbr"],
                origin: "perf data aggregator".into(),
                events: String::new(),
                dfs_order: false,
                xxh3: true,
            },
            functions: vec![
                Function {
                    name: "printf@PLT".into(),
                    fid: 11,
                    hash: 0,
                    exec: 929,
                    nblocks: 0,
                    blocks: vec![],
                },
                Function {
                    name: "_Z5checki".into(),
                    fid: 7,
                    hash: 0xDE6BB024C3D1A63E,
                    exec: 2982,
                    nblocks: 4,
                    blocks: vec![
                        Block {
                            bid: 0,
                            insns: 5,
                            hash: 0x2F00E8FA96550000,
                            exec: 2982,
                            calls: vec![],
                            succ: vec![
                                Succ {
                                    bid: 2,
                                    count: 2497,
                                    mispreds: 145,
                                },
                                Succ {
                                    bid: 1,
                                    count: 495,
                                    mispreds: 0,
                                },
                            ],
                        },
                        Block {
                            bid: 3,
                            insns: 5,
                            hash: 0x6D424DF2CA004B,
                            exec: 0,
                            calls: vec![
                                Call {
                                    offset: 6,
                                    fid: 16,
                                    count: 56,
                                    mispreds: 0,
                                },
                                Call {
                                    offset: 0xE,
                                    fid: 22,
                                    count: 76,
                                    mispreds: 0,
                                },
                            ],
                            succ: vec![],
                        },
                        Block {
                            bid: 6,
                            hash: 0xDD8F55F2CA00F0,
                            ..Block::default()
                        },
                    ],
                },
            ],
        };
        assert_eq!(write(&p), PERF2BOLT_22);
    }

    #[test]
    fn quoting_follows_llvm() {
        for (s, q) in [
            ("_start", None),
            ("main.cold", None),
            ("printf@PLT", Some('\'')),
            ("a/b", Some('\'')),
            ("", Some('\'')),
            ("123", Some('\'')),
            ("true", Some('\'')),
            ("perf data aggregator", None),
        ] {
            assert_eq!(quoting(s), q, "{s:?}");
        }
    }
}
