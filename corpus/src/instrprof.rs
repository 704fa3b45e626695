//! Synthetic raw LLVM instrumentation profiles (`.profraw`, version 10, 64-bit little-endian),
//! shaped like clang-19 `-fprofile-instr-generate` output: one binary's functions (the same
//! names, hashes and counter layout for every seed, as runs of one program are) with per-run
//! counter values, names zlib-compressed per translation unit, a build id.

use std::io::{self, Write};

use crate::rng::{mix64, Rng};

/// What to generate. The same spec always gives the same bytes.
#[derive(Clone, Debug)]
pub struct RawProfileSpec {
    /// Functions in the "binary" (clang's test profile of 20,000 functions is ~2 MB).
    pub functions: usize,
    /// Varies the counter values (one run of the program).
    pub seed: u64,
    /// Functions per names chunk (one chunk per translation unit).
    pub functions_per_unit: usize,
}

const MAGIC_64: u64 = 0xff6c_7072_6f66_7281;
const RECORD_SIZE: u64 = 64;
const BUILD_ID: [u8; 20] = *b"profmill-corpus-bid!";

/// The PGO name of function `i`: file-local functions carry their file, like clang's `t.c:f`.
pub fn function_name(i: usize, per_unit: usize) -> String {
    let unit = i / per_unit.max(1);
    if i.is_multiple_of(3) {
        format!("src/unit_{unit}.c:static_fn_{i}")
    } else {
        format!("function_{i}_in_unit_{unit}")
    }
}

/// Counters of function `i`: fixed by the binary, not by the run.
fn num_counters(i: usize) -> usize {
    1 + (mix64(i as u64 ^ 0xc0ffee) % 6) as usize
}

fn md5_low(name: &[u8]) -> u64 {
    use md5::{Digest, Md5};
    u64::from_le_bytes(Md5::digest(name)[..8].try_into().expect("16-byte digest"))
}

fn uleb(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn names_section(names: &[String], per_unit: usize) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    for unit in names.chunks(per_unit.max(1)) {
        let joined = unit.join("\x01");
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(joined.as_bytes())?;
        let compressed = z.finish()?;
        uleb(&mut out, joined.len() as u64);
        uleb(&mut out, compressed.len() as u64);
        out.extend_from_slice(&compressed);
    }
    Ok(out)
}

fn pad8(out: &mut Vec<u8>) {
    out.resize(out.len().next_multiple_of(8), 0);
}

/// Writes one raw profile.
pub fn write_raw_profile(spec: &RawProfileSpec, out: &mut dyn Write) -> io::Result<()> {
    let n = spec.functions;
    let names: Vec<String> = (0..n)
        .map(|i| function_name(i, spec.functions_per_unit))
        .collect();
    let counters: Vec<usize> = (0..n).map(num_counters).collect();
    let total_counters: usize = counters.iter().sum();
    let names_bytes = names_section(&names, spec.functions_per_unit)?;
    let data_size = n as u64 * RECORD_SIZE;
    let mut buf =
        Vec::with_capacity(256 + data_size as usize + total_counters * 8 + names_bytes.len());
    let put = |buf: &mut Vec<u8>, v: u64| buf.extend_from_slice(&v.to_le_bytes());
    // Header: clang places counters before the data, so CountersDelta is negative.
    let counters_delta = (total_counters as u64 * 8).wrapping_neg();
    let binary_ids_size = 8 + BUILD_ID.len().next_multiple_of(8) as u64;
    for v in [
        MAGIC_64,
        10,
        binary_ids_size,
        n as u64,
        0,
        total_counters as u64,
        0,
        0,
        0,
        names_bytes.len() as u64,
        counters_delta,
        counters_delta,
        0x40_0000,
        0,
        0,
        2,
    ] {
        put(&mut buf, v);
    }
    put(&mut buf, BUILD_ID.len() as u64);
    buf.extend_from_slice(&BUILD_ID);
    pad8(&mut buf);
    let mut offset = 0u64;
    for (i, name) in names.iter().enumerate() {
        let relative = counters_delta
            .wrapping_sub(i as u64 * RECORD_SIZE)
            .wrapping_add(offset);
        put(&mut buf, md5_low(name.as_bytes()));
        put(&mut buf, mix64(i as u64) & !(1 << 60)); // no context-sensitive flag
        put(&mut buf, relative);
        put(&mut buf, 0); // BitmapPtr
        put(&mut buf, 0); // FunctionPointer (front-end profiles without value profiling)
        put(&mut buf, 0); // Values
        buf.extend_from_slice(&(counters[i] as u32).to_le_bytes());
        buf.extend_from_slice(&[0; 6]); // NumValueSites[3]
        buf.extend_from_slice(&[0; 2]); // padding
        buf.extend_from_slice(&0u32.to_le_bytes()); // NumBitmapBytes
        offset += counters[i] as u64 * 8;
    }
    let mut rng = Rng::fork(spec.seed, 0x1257);
    for (i, &c) in counters.iter().enumerate() {
        // A skewed profile: most functions cold, some hot, many zero blocks.
        let hot = mix64(i as u64).is_multiple_of(16);
        for _ in 0..c {
            let v = if rng.percent(40) {
                0
            } else if hot {
                rng.below(1_000_000)
            } else {
                rng.below(100)
            };
            put(&mut buf, v);
        }
    }
    buf.extend_from_slice(&names_bytes);
    pad8(&mut buf);
    out.write_all(&buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_about_two_megabytes_for_20000_functions() {
        let spec = RawProfileSpec {
            functions: 20_000,
            seed: 3,
            functions_per_unit: 100,
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        write_raw_profile(&spec, &mut a).unwrap();
        write_raw_profile(&spec, &mut b).unwrap();
        assert_eq!(a, b);
        assert!(
            (1_500_000..2_500_000).contains(&a.len()),
            "{} bytes",
            a.len()
        );
    }
}
