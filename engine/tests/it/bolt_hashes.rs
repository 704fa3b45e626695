//! BOLT's function and block hashes against LLVM's own: `perf2bolt --profile-format=yaml`
//! (LLVM 22) writes `hash:` for every profiled function and block; our hashes of the same
//! binary's CFGs must be equal. Programs are built here with clang-19 and gcc (PIE and
//! non-PIE, a switch jump table, C++ exceptions, PLT calls).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use engine::bolt::functions::Functions;
use engine::bolt::hash;
use engine::bolt::x86::Llvm;
use testsupport::*;

const PROGRAM_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int table[64];
__attribute__((noinline)) int classify(int x) {
  switch (x & 15) {
  case 0: return x * 3;
  case 1: return x ^ 0x55;
  case 2: return table[x & 63] + 1;
  case 3: return x >> 2;
  case 4: return -x;
  case 5: return x + 100;
  case 7: return x * x;
  case 9: return (int)strlen("abc") + x;
  default: return 0;
  }
}
__attribute__((noinline)) long work(int n) {
  long s = 0;
  for (int i = 0; i < n; i++) {
    table[i & 63] += i;
    if (i % 7 == 3) s += classify(i);
    else if (i & 1) s -= i;
    else s ^= (long)i << 3;
  }
  return s;
}
int main(int argc, char **argv) {
  char *p = malloc(32);
  snprintf(p, 32, "%d", argc);
  long r = work(argc * 200000 + atoi(p));
  printf("%ld\n", r);
  free(p);
  return 0;
}
"#;

fn build(
    dir: &Path,
    compiler: &str,
    source: &str,
    cxx: bool,
    flags: &[&str],
    name: &str,
) -> PathBuf {
    let src = dir.join(if cxx {
        format!("{name}.cpp")
    } else {
        format!("{name}.c")
    });
    std::fs::write(&src, source).unwrap();
    let out = dir.join(name);
    run_ok(
        Command::new(compiler)
            .arg("-O2")
            .args(flags)
            .arg(&src)
            .arg("-o")
            .arg(&out),
    );
    out
}

/// perf2bolt 22's YAML hashes: function name → (function hash, block hashes by `bid`).
fn yaml_hashes(yaml: &str) -> HashMap<String, (u64, HashMap<u64, u64>)> {
    let mut out: HashMap<String, (u64, HashMap<u64, u64>)> = HashMap::new();
    let mut name = String::new();
    let mut bid = None;
    let hex = |s: &str| u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).unwrap();
    for line in yaml.lines() {
        let t = line.trim_start();
        if let Some(n) = t.strip_prefix("- name:") {
            name = n.trim().trim_matches('\'').to_string();
            bid = None;
        } else if let Some(b) = t.strip_prefix("- bid:") {
            bid = Some(b.trim().parse::<u64>().unwrap());
        } else if let Some(h) = t.strip_prefix("hash:") {
            let e = out.entry(name.clone()).or_default();
            match bid {
                None => e.0 = hex(h),
                Some(b) => {
                    e.1.insert(b, hex(h));
                }
            }
        }
    }
    out
}

/// Rates of agreement of our hashes with perf2bolt 22's YAML on `binary`:
/// (functions equal, functions, blocks equal, blocks); prints every difference.
fn compare(dir: &Path, binary: &Path) -> (usize, usize, usize, usize) {
    let capture = dir.join(format!(
        "{}.data",
        binary.file_name().unwrap().to_string_lossy()
    ));
    let spec = corpus::LbrCaptureSpec {
        binaries: vec![corpus::LbrBinary {
            path: binary.to_path_buf(),
            load_base: None,
        }],
        processes: 1,
        target_bytes: 2 << 20,
        lbr_depth: 32,
        distinct_stacks: 64,
        kernel_fraction_percent: 0,
        compress: false,
        attr_size: corpus::ATTR_SIZE,
        seed: 3,
        mem_loads: None,
    };
    corpus::write_lbr_capture(&spec, &mut std::fs::File::create(&capture).unwrap()).unwrap();
    let yaml_path = dir.join("out.yaml");
    run_ok(
        Command::new(PERF2BOLT_22)
            .arg(binary)
            .arg("-p")
            .arg(&capture)
            .arg("-o")
            .arg(&yaml_path)
            .arg("--profile-format=yaml"),
    );
    let yaml = yaml_hashes(&std::fs::read_to_string(&yaml_path).unwrap());
    let data = std::fs::read(binary).unwrap();
    let functions = Functions::from_elf(binary, &data).unwrap();
    let ours = hash::binary(&data, &functions, Llvm::V22);
    let (mut fe, mut fn_, mut be, mut bn) = (0, 0, 0, 0);
    for f in &ours {
        let Some((fh, blocks)) = yaml.get(&f.name) else {
            continue;
        };
        let Ok(h) = &f.hashes else {
            // gcc's `foo`/`foo.cold` pairs: the engine builds no CFG for split functions
            // (BOLT does, in relocation mode); counted apart.
            eprintln!("{}: no hashes: {:?}", f.name, f.hashes);
            continue;
        };
        fn_ += 1;
        if h.function == *fh {
            fe += 1;
        } else {
            eprintln!("{}: function hash {:#x}, LLVM {fh:#x}", f.name, h.function);
        }
        for (&bid, &lh) in blocks {
            bn += 1;
            match h.blocks.get(bid as usize) {
                Some(&b) if b == lh => be += 1,
                other => eprintln!(
                    "{} block {bid}: ours {:x?}, LLVM {lh:#x} (xor {:x?})",
                    f.name,
                    other,
                    other.map(|o| o ^ lh)
                ),
            }
        }
    }
    eprintln!(
        "{}: functions {fe}/{fn_}, blocks {be}/{bn}",
        binary.display()
    );
    (fe, fn_, be, bn)
}

#[test]
fn hashes_equal_perf2bolt_22_yaml() {
    if !have_tool(PERF2BOLT_22) || !have_tool(CLANG_19) || !have_tool(GCC) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let binaries = [
        build(
            d,
            CLANG_19,
            PROGRAM_C,
            false,
            &["-fno-pie", "-no-pie"],
            "c_clang_nopie",
        ),
        build(
            d,
            CLANG_19,
            PROGRAM_C,
            false,
            &["-fpie", "-pie"],
            "c_clang_pie",
        ),
        build(
            d,
            GCC,
            PROGRAM_C,
            false,
            &["-fno-pie", "-no-pie"],
            "c_gcc_nopie",
        ),
        build(d, GCC, PROGRAM_C, false, &["-fpie", "-pie"], "c_gcc_pie"),
        build(d, CLANGXX_19, EH_PROGRAM_CXX, true, &[], "cxx_clang"),
        build(d, GXX, EH_PROGRAM_CXX, true, &[], "cxx_gcc"),
    ];
    let mut total = (0, 0, 0, 0);
    for b in &binaries {
        let r = compare(d, b);
        total = (total.0 + r.0, total.1 + r.1, total.2 + r.2, total.3 + r.3);
    }
    eprintln!(
        "total: functions {}/{}, blocks {}/{}",
        total.0, total.1, total.2, total.3
    );
    assert!(total.1 > 0 && total.3 > 0, "perf2bolt wrote no hashes");
    assert_eq!(total.0, total.1, "function hashes differ");
    assert_eq!(total.2, total.3, "block hashes differ");
}

/// Agreement of our hashes (for LLVM `v`) of `binary` with the BAT section that `bolt` wrote
/// for it: (functions equal, functions, blocks equal, blocks). BAT holds llvm-bolt's function
/// hash and every block's hash of each function it rewrote, profiled or not.
fn compare_bat(dir: &Path, bolt: &str, v: Llvm, binary: &Path) -> (usize, usize, usize, usize) {
    let capture = dir.join("bat.data");
    let spec = corpus::LbrCaptureSpec {
        binaries: vec![corpus::LbrBinary {
            path: binary.to_path_buf(),
            load_base: None,
        }],
        processes: 1,
        target_bytes: 1 << 20,
        lbr_depth: 32,
        distinct_stacks: 16,
        kernel_fraction_percent: 0,
        compress: false,
        attr_size: corpus::ATTR_SIZE,
        seed: 5,
        mem_loads: None,
    };
    corpus::write_lbr_capture(&spec, &mut std::fs::File::create(&capture).unwrap()).unwrap();
    let fdata = dir.join("bat.fdata");
    run_ok(
        Command::new(PERF2BOLT_22)
            .arg(binary)
            .arg("-p")
            .arg(&capture)
            .arg("-o")
            .arg(&fdata),
    );
    let bolted = dir.join("bolted");
    run_ok(
        Command::new(bolt)
            .arg(binary)
            .arg("-o")
            .arg(&bolted)
            .arg("--data")
            .arg(&fdata)
            .args(["--enable-bat", "--reorder-blocks=ext-tsp"]),
    );
    let bolted_data = std::fs::read(&bolted).unwrap();
    let bat = engine::bolt::bat::Translation::from_elf(&bolted, &bolted_data)
        .unwrap()
        .expect("llvm-bolt wrote no BAT section");
    let data = std::fs::read(binary).unwrap();
    let functions = Functions::from_elf(binary, &data).unwrap();
    let ours = hash::binary(&data, &functions, v);
    let by_hash: HashMap<u64, &hash::Hashes> = ours
        .iter()
        .filter_map(|f| f.hashes.as_ref().ok())
        .map(|h| (h.function, h))
        .collect();
    let (mut fe, mut fn_, mut be, mut bn) = (0, 0, 0, 0);
    let what = format!("{bolt} on {}", binary.display());
    let mut blocks_of = |hot: usize, entries: &[formats::bolt::bat::Entry]| {
        let Some(h) = by_hash.get(&bat.tables.hot[hot].hash) else {
            return;
        };
        for id in entries.iter().filter_map(|e| e.block.as_ref()) {
            bn += 1;
            match h.blocks.get(id.index as usize) {
                Some(&b) if b == id.hash => be += 1,
                other => eprintln!(
                    "{what}: function {:#x} block {}: ours {other:x?}, LLVM {:#x}",
                    h.function, id.index, id.hash
                ),
            }
        }
    };
    for (i, hot) in bat.tables.hot.iter().enumerate() {
        fn_ += 1;
        if by_hash.contains_key(&hot.hash) {
            fe += 1;
        } else {
            eprintln!(
                "{what}: no function of ours hashes to {:#x} (at {:#x} after BOLT)",
                hot.hash, hot.address
            );
        }
        blocks_of(i, &hot.entries);
    }
    for cold in &bat.tables.cold {
        blocks_of(cold.hot_index as usize, &cold.entries);
    }
    eprintln!("{what}: functions {fe}/{fn_}, blocks {be}/{bn}");
    (fe, fn_, be, bn)
}

/// The second ground truth: the hashes llvm-bolt 19 and 22 store in BAT for the programs
/// above (built with `--emit-relocs`, which llvm-bolt needs to rewrite them). LLVM 19's table
/// column and register numbers are checked here, since perf2bolt 19 writes no block hashes
/// that 22 would not.
#[test]
fn hashes_equal_bat_of_llvm_19_and_22() {
    if !have_tool(PERF2BOLT_22) || !have_tool(CLANG_19) || !have_tool(GCC) {
        return;
    }
    let bolts: Vec<(&str, Llvm)> = [(LLVM_BOLT_19, Llvm::V19), (LLVM_BOLT_22, Llvm::V22)]
        .into_iter()
        .filter(|(b, _)| have_tool(b))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let q = "-Wl,--emit-relocs";
    let binaries = [
        build(
            d,
            CLANG_19,
            PROGRAM_C,
            false,
            &["-no-pie", q],
            "bc_clang_nopie",
        ),
        build(
            d,
            CLANG_19,
            PROGRAM_C,
            false,
            &["-pie", "-fpie", q],
            "bc_clang_pie",
        ),
        build(d, GCC, PROGRAM_C, false, &["-no-pie", q], "bc_gcc_nopie"),
        build(d, CLANGXX_19, EH_PROGRAM_CXX, true, &[q], "bcxx_clang"),
    ];
    for (bolt, v) in bolts {
        let mut total = (0, 0, 0, 0);
        for b in &binaries {
            let r = compare_bat(d, bolt, v, b);
            total = (total.0 + r.0, total.1 + r.1, total.2 + r.2, total.3 + r.3);
        }
        eprintln!(
            "{bolt}: functions {}/{}, blocks {}/{}",
            total.0, total.1, total.2, total.3
        );
        assert!(total.1 > 0 && total.3 > 0, "{bolt} wrote no hashes");
        assert_eq!(total.0, total.1, "{bolt}: function hashes differ");
        assert_eq!(total.2, total.3, "{bolt}: block hashes differ");
    }
}
