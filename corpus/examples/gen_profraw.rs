//! Writes COUNT synthetic raw profiles of one program (see `corpus::instrprof`).
//!
//! usage: gen_profraw OUT_DIR COUNT [FUNCTIONS]

use std::path::PathBuf;

use corpus::instrprof::{write_raw_profile, RawProfileSpec};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: gen_profraw OUT_DIR COUNT [FUNCTIONS]";
    let dir = PathBuf::from(args.next().expect(usage));
    let count: u64 = args.next().expect(usage).parse().expect("COUNT");
    let functions: usize = args
        .next()
        .map_or(20_000, |f| f.parse().expect("FUNCTIONS"));
    std::fs::create_dir_all(&dir)?;
    for seed in 0..count {
        let spec = RawProfileSpec {
            functions,
            seed,
            functions_per_unit: 100,
        };
        let mut file = std::io::BufWriter::new(std::fs::File::create(
            dir.join(format!("run-{seed:05}.profraw")),
        )?);
        write_raw_profile(&spec, &mut file)?;
    }
    Ok(())
}
