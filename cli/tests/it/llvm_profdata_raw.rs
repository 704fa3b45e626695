//! Raw profiles in every pointer size and byte order, built here byte by byte (clang-19 can only
//! make 64-bit little-endian ones on this machine), merged by llvm-profdata-19 and by us: the
//! outputs must be identical. Covers concatenated profiles, binary ids, plain and zlib names,
//! indirect-call and memop values (with address remapping), MC/DC bitmaps and byte coverage.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use md5::{Digest, Md5};

use testsupport::{have_tool, LLVM_PROFDATA_19 as LLVM_PROFDATA};

fn md5_low(name: &str) -> u64 {
    u64::from_le_bytes(Md5::digest(name.as_bytes())[..8].try_into().unwrap())
}

/// Value sites: per site, (value, count) pairs.
type Sites = Vec<Vec<(u64, u64)>>;

struct Func {
    name: &'static str,
    hash: u64,
    address: u64,
    counts: Vec<u64>,
    bitmap: Vec<u8>,
    /// Indirect-call sites: (callee address, count).
    icall: Sites,
    /// Memop sites: (size, count).
    memop: Sites,
}

struct Layout {
    ptr64: bool,
    byte_coverage: bool,
    zlib_names: bool,
    binary_id: Option<&'static [u8]>,
}

struct Out {
    bytes: Vec<u8>,
    big: bool,
}

impl Out {
    fn u64(&mut self, v: u64) {
        self.bytes.extend(if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }
    fn u32(&mut self, v: u32) {
        self.bytes.extend(if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }
    fn u16(&mut self, v: u16) {
        self.bytes.extend(if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }
    fn ptr(&mut self, ptr64: bool, v: u64) {
        if ptr64 {
            self.u64(v)
        } else {
            self.u32(v as u32)
        }
    }
    fn pad8(&mut self) {
        while !self.bytes.len().is_multiple_of(8) {
            self.bytes.push(0);
        }
    }
}

fn uleb(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn names_section(funcs: &[Func], zlib: bool) -> Vec<u8> {
    let joined = funcs
        .iter()
        .map(|f| f.name)
        .collect::<Vec<_>>()
        .join("\x01");
    let mut out = Vec::new();
    uleb(&mut out, joined.len() as u64);
    if zlib {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(joined.as_bytes()).unwrap();
        let compressed = z.finish().unwrap();
        uleb(&mut out, compressed.len() as u64);
        out.extend(compressed);
    } else {
        uleb(&mut out, 0);
        out.extend(joined.as_bytes());
    }
    out
}

fn value_block(out: &mut Out, f: &Func) {
    let kinds: Vec<(u32, &Sites)> = [(0, &f.icall), (1, &f.memop)]
        .into_iter()
        .filter(|(_, s)| !s.is_empty())
        .collect();
    if kinds.is_empty() {
        return;
    }
    let size_of = |sites: &Sites| {
        (8 + sites.len()).next_multiple_of(8) + 16 * sites.iter().map(Vec::len).sum::<usize>()
    };
    let total = 8 + kinds.iter().map(|(_, s)| size_of(s)).sum::<usize>();
    out.u32(total as u32);
    out.u32(kinds.len() as u32);
    for (kind, sites) in kinds {
        out.u32(kind);
        out.u32(sites.len() as u32);
        out.bytes.extend(sites.iter().map(|s| s.len() as u8));
        out.pad8();
        for &(v, c) in sites.iter().flatten() {
            out.u64(v);
            out.u64(c);
        }
    }
}

/// One raw v10 profile (as compiler-rt lays it out, but with counters after the data).
fn raw_profile(l: &Layout, funcs: &[Func], out: &mut Out) {
    let start = out.bytes.len();
    let record_size: u64 = if l.ptr64 { 64 } else { 48 };
    let counter_size: u64 = if l.byte_coverage { 1 } else { 8 };
    let num_counters: u64 = funcs.iter().map(|f| f.counts.len() as u64).sum();
    let counters_bytes = num_counters * counter_size;
    let pad_counters = (8 - counters_bytes % 8) % 8;
    let bitmap_bytes: u64 = funcs.iter().map(|f| f.bitmap.len() as u64).sum();
    let pad_bitmap = (8 - bitmap_bytes % 8) % 8;
    let names = names_section(funcs, l.zlib_names);
    let binary_ids_size = l.binary_id.map_or(0, |id| 8 + id.len().next_multiple_of(8)) as u64;
    let data_size = funcs.len() as u64 * record_size;
    let counters_delta = data_size; // counters start right after the data records
    let bitmap_delta = data_size + counters_bytes + pad_counters;
    let mut flags = 1u64 << 56; // IR
    if l.byte_coverage {
        flags |= 1 << 60;
    }
    let magic = if l.ptr64 {
        0xff6c_7072_6f66_7281u64
    } else {
        0xff6c_7072_6f66_5281
    };
    for v in [
        magic,
        10 | flags,
        binary_ids_size,
        funcs.len() as u64,
        0,
        num_counters,
        pad_counters,
        bitmap_bytes,
        pad_bitmap,
        names.len() as u64,
        counters_delta,
        bitmap_delta,
        0x1000,
        0,
        0,
        2,
    ] {
        out.u64(v);
    }
    if let Some(id) = l.binary_id {
        out.u64(id.len() as u64);
        out.bytes.extend(id);
        out.pad8();
    }
    let (mut counter_off, mut bitmap_off) = (0u64, 0u64);
    for (i, f) in funcs.iter().enumerate() {
        let shift = i as u64 * record_size;
        out.u64(md5_low(f.name));
        out.u64(f.hash);
        out.ptr(l.ptr64, counters_delta - shift + counter_off);
        out.ptr(l.ptr64, bitmap_delta - shift + bitmap_off);
        out.ptr(l.ptr64, f.address);
        out.ptr(l.ptr64, 0);
        out.u32(f.counts.len() as u32);
        out.u16(f.icall.len() as u16);
        out.u16(f.memop.len() as u16);
        out.u16(0);
        out.u16(0);
        out.u32(f.bitmap.len() as u32);
        counter_off += f.counts.len() as u64 * counter_size;
        bitmap_off += f.bitmap.len() as u64;
    }
    assert_eq!(
        (out.bytes.len() - start) as u64,
        128 + binary_ids_size + data_size
    );
    for f in funcs {
        for &c in &f.counts {
            if l.byte_coverage {
                out.bytes.push(if c > 0 { 0 } else { 0xff });
            } else {
                out.u64(c);
            }
        }
    }
    out.pad8();
    for f in funcs {
        out.bytes.extend(&f.bitmap);
    }
    out.pad8();
    out.bytes.extend(&names);
    out.pad8();
    for f in funcs {
        value_block(out, f);
    }
}

fn functions(seed: u64) -> Vec<Func> {
    vec![
        Func {
            name: "main",
            hash: 0x0a4d_0ad3_efff_ffff ^ seed,
            address: 0x40_1000,
            counts: vec![1, 10 + seed, 0],
            bitmap: vec![0x3, 0x80 >> seed],
            icall: vec![
                vec![(0x40_2000, 5 + seed), (0x40_3000, 2), (0xdead_0000, 1)],
                vec![],
            ],
            memop: vec![vec![(8, 3), (0, 1), (33, 7 + seed)]],
        },
        Func {
            name: "t.c;sq",
            hash: 12345,
            address: 0x40_2000,
            counts: vec![7 + seed],
            bitmap: vec![],
            icall: vec![],
            memop: vec![],
        },
        Func {
            name: "t.c;inc",
            hash: 0x1000_0000_0000_0000 | 77,
            address: 0x40_3000,
            counts: vec![2, 0, 4 * seed],
            bitmap: vec![1],
            icall: vec![],
            memop: vec![vec![]],
        },
    ]
}

fn library_functions() -> Vec<Func> {
    vec![Func {
        name: "libf",
        hash: 99,
        address: 0x7f00_1000,
        counts: vec![3, 1],
        bitmap: vec![],
        icall: vec![vec![(0x40_2000, 1), (0x7f00_1000, 4)]],
        memop: vec![],
    }]
}

fn merge(program: &str, prefix: &[&str], inputs: &[&Path], out: &Path) -> Vec<u8> {
    let o = Command::new(program)
        .args(prefix)
        .arg("merge")
        .args(inputs)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{program}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read(out).unwrap()
}

#[test]
fn raw_profiles_in_every_pointer_size_and_byte_order() {
    if !have_tool(LLVM_PROFDATA) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut all = Vec::new();
    for ptr64 in [true, false] {
        for big in [false, true] {
            for byte_coverage in [false, true] {
                let layout = Layout {
                    ptr64,
                    byte_coverage,
                    zlib_names: !big,
                    binary_id: ptr64.then_some(&b"\x01\x23\x45\x67\x89\xab\xcd\xef\x01\x23\x45\x67\x89\xab\xcd\xef\x01\x23\x45\x67"[..]),
                };
                let mut out = Out {
                    bytes: Vec::new(),
                    big,
                };
                raw_profile(
                    &layout,
                    &functions(u64::from(ptr64) + 2 * u64::from(big)),
                    &mut out,
                );
                // A second profile in the same file, as an instrumented shared library adds.
                out.bytes.extend([0; 8]);
                raw_profile(&layout, &library_functions(), &mut out);
                let what = format!("ptr64={ptr64} big={big} byte_coverage={byte_coverage}");
                let path = tmp
                    .path()
                    .join(format!("{ptr64}-{big}-{byte_coverage}.profraw"));
                std::fs::write(&path, &out.bytes).unwrap();
                let theirs = merge(LLVM_PROFDATA, &[], &[&path], &tmp.path().join("theirs"));
                let ours = merge(
                    env!("CARGO_BIN_EXE_profmill"),
                    &["llvm-profdata"],
                    &[&path],
                    &tmp.path().join("ours"),
                );
                assert!(
                    theirs == ours,
                    "{what}: output differs from llvm-profdata-19's"
                );
                // Both profiles of the file made it in (the test is not vacuous).
                for name in [&b"t.c;inc"[..], b"libf", b"main"] {
                    assert!(
                        theirs.windows(name.len()).any(|w| w == name),
                        "{what}: no {name:?}"
                    );
                }
                if !byte_coverage {
                    all.push(path);
                }
            }
        }
    }
    // All word sizes and byte orders merged together.
    let inputs: Vec<&Path> = all.iter().map(|p| p.as_path()).collect();
    let theirs = merge(LLVM_PROFDATA, &[], &inputs, &tmp.path().join("theirs"));
    let ours = merge(
        env!("CARGO_BIN_EXE_profmill"),
        &["llvm-profdata"],
        &inputs,
        &tmp.path().join("ours"),
    );
    assert!(
        theirs == ours,
        "merged: output differs from llvm-profdata-19's"
    );
}
