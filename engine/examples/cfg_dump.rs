//! Prints BOLT-style basic blocks of the functions whose name contains a pattern:
//! `cargo run --example cfg_dump -- BINARY PATTERN`.

use engine::bolt::cfg::{analyse, Body};
use engine::bolt::functions::Functions;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, binary, pattern] = args.as_slice() else {
        return Err("usage: cfg_dump BINARY PATTERN".into());
    };
    let path = std::path::Path::new(binary);
    let functions = Functions::from_elf(path, &std::fs::read(path)?)?;
    for f in functions
        .iter()
        .filter(|f| f.name.contains(pattern.as_str()))
    {
        println!(
            "{} @ {:#x} size {:#x} max {:#x}",
            f.name,
            f.address,
            f.size,
            f.max_end - f.address
        );
        let code = functions.function_code(f);
        let mut decoder = iced_x86::Decoder::with_ip(64, code, f.address, 0);
        let decoded: Vec<iced_x86::Instruction> = decoder.iter().collect();
        for (i, ins) in decoded.iter().enumerate() {
            if ins.flow_control() == iced_x86::FlowControl::IndirectBranch {
                let c = engine::bolt::indirect::classify(&functions, f, &decoded[..i], ins);
                println!("  indirect jump at {:#x}: {c:?}", ins.ip() - f.address);
            }
        }
        match analyse(&functions, f) {
            Body::Pseudo => println!("  pseudo"),
            Body::NoCfg(why) => println!("  no CFG: {why}"),
            Body::Cfg(cfg) => {
                for (i, b) in cfg.blocks.iter().enumerate() {
                    println!(
                        "  #{i} {:#x} last {:x?} call {} succ {:?}",
                        b.offset, b.last, b.ends_in_call, b.successors
                    );
                }
            }
        }
    }
    Ok(())
}
