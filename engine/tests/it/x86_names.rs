//! The checked-in opcode-name table (`engine/src/bolt/x86_names.rs`) re-derived for a sample
//! of its forms from `llvm-mc --disassemble --show-inst` of LLVM 19 and 22.

use std::io::Write;
use std::process::{Command, Stdio};

use engine::bolt::x86;
use testsupport::*;

const MC_19: &str = "/usr/lib/llvm-19/bin/llvm-mc";
const MC_22: &str = "/usr/lib/llvm-22/bin/llvm-mc";

/// The opcode names llvm-mc gives each byte string, one per input (a `nop` after each keeps
/// the groups apart).
fn opcode_names(mc: &str, inputs: &[&[u8]]) -> Vec<Vec<String>> {
    let mut text = String::new();
    for bytes in inputs {
        text.push('[');
        for b in *bytes {
            text.push_str(&format!("0x{b:02x} "));
        }
        text.push_str("]\n[0x0f 0x0b]\n");
    }
    let mut child = Command::new(mc)
        .args([
            "--disassemble",
            "--show-inst",
            "-triple=x86_64-unknown-linux-gnu",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let mut groups = vec![Vec::new()];
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(at) = line.find("<MCInst #") else {
            continue;
        };
        let name = line[at..]
            .split_whitespace()
            .nth(2)
            .unwrap()
            .trim_end_matches('>');
        if name == "TRAP" {
            groups.push(Vec::new());
        } else {
            groups.last_mut().unwrap().push(name.to_string());
        }
    }
    groups
}

#[test]
fn sample_of_the_table_rederives_from_llvm_mc() {
    let forms: Vec<_> = x86::forms()
        .enumerate()
        .filter(|(i, f)| {
            // EVEX variants (masking, broadcast, rounding) are named apart: a share of them too.
            let variant = f.3.ends_with('k') || f.3.ends_with("kz") || f.3.contains("rmb");
            i % 23 == 0
                || (variant && i % 5 == 0)
                || f.2.starts_with("JCC")
                || f.2.starts_with("MOV64")
        })
        .map(|(_, f)| f)
        .filter(|f| f.3 != "TRAP")
        .collect();
    assert!(x86::table_len() > 7000);
    let inputs: Vec<&[u8]> = forms.iter().map(|f| f.4).collect();
    for (mc, v19) in [(MC_19, true), (MC_22, false)] {
        if !have_tool(mc) {
            continue;
        }
        let got = opcode_names(mc, &inputs);
        assert_eq!(got.len(), forms.len() + 1, "{mc} lost sync");
        for (f, names) in forms.iter().zip(&got) {
            let want = if v19 { f.2 } else { f.3 };
            assert_eq!(
                names,
                &[want.to_string()],
                "{mc}: {:?} (memory form: {})",
                f.0,
                f.1
            );
        }
    }
}
