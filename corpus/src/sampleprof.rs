//! Deterministic LLVM text sample profiles of any size: C++-like mangled names that share
//! prefixes, body lines with discriminators and zero counts, indirect-call targets, nested
//! inlined callsites, a few counts above 2^32. The same spec always gives the same bytes.
//!
//! Totals are consistent the way gcov readers recompute them (a function's line counts plus
//! its inlinees' totals), so gcov and GCOV v4 conversions keep them. Every location fits the
//! gcov formats (line offset and discriminator below 2^16).

use std::io::{self, Write};

use crate::rng::{mix64, Rng};

/// What to generate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleProfileSpec {
    /// Seed of every random choice.
    pub seed: u64,
    /// Number of top-level functions (also the size of the name pool callees come from).
    pub functions: usize,
    /// Mean number of body lines per function instance.
    pub mean_lines: u32,
    /// Deepest inlining (0 = no inlined callsites).
    pub max_inline_depth: u32,
}

impl SampleProfileSpec {
    /// A spec with the default shape (lines per function, inlining depth).
    pub fn new(seed: u64, functions: usize) -> Self {
        SampleProfileSpec {
            seed,
            functions,
            mean_lines: 12,
            max_inline_depth: 3,
        }
    }

    /// A spec whose text is about `bytes` long (within a few percent for sizes above
    /// ~100 KB): the function count is scaled from a measured sample.
    pub fn of_size(seed: u64, bytes: u64) -> Self {
        let probe = SampleProfileSpec::new(seed, 400);
        let mut counter = CountingSink(0);
        write_sample_profile_text(&probe, &mut counter).expect("counting cannot fail");
        let per_function = (counter.0 / 400).max(1);
        SampleProfileSpec::new(seed, (bytes / per_function).max(1) as usize)
    }
}

struct CountingSink(u64);

impl Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

const NAMESPACES: [&str; 8] = [
    "storage", "net", "render", "compiler", "runtime", "util", "protocol", "query",
];
const CLASSES: [&str; 10] = [
    "BlockCache",
    "Connection",
    "Scheduler",
    "HashTable",
    "Parser",
    "Allocator",
    "Session",
    "Optimizer",
    "Encoder",
    "Planner",
];
const METHODS: [&str; 10] = [
    "lookup", "insert", "flush", "run", "visit", "resize", "encode", "decode", "emit", "merge",
];

/// The name of function `i` of the pool: mostly Itanium-mangled methods in a few
/// namespaces and classes (long shared prefixes), some plain C names.
pub fn function_name(seed: u64, i: usize) -> String {
    let h = mix64(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    if h % 100 < 10 {
        return format!("helper_{i}");
    }
    let ns = NAMESPACES[(h >> 8) as usize % NAMESPACES.len()];
    let class = CLASSES[(h >> 16) as usize % CLASSES.len()];
    let method = format!("{}_{i}", METHODS[(h >> 24) as usize % METHODS.len()]);
    format!(
        "_ZN{}{ns}{}{class}{}{method}Ev",
        ns.len(),
        class.len(),
        method.len()
    )
}

struct Gen<'a> {
    spec: &'a SampleProfileSpec,
    rng: Rng,
}

impl Gen<'_> {
    fn pool_name(&mut self) -> String {
        let i = self.rng.skewed(self.spec.functions, 2);
        function_name(self.spec.seed, i)
    }

    /// A heavy-tailed sample count; zero 10 % of the time, above 2^32 rarely.
    fn count(&mut self) -> u64 {
        if self.rng.percent(10) {
            return 0;
        }
        if self.rng.below(2000) == 0 {
            return (1 << 32) + self.rng.below(1 << 34);
        }
        let base = 1u64 << self.rng.below(20);
        base + self.rng.below(base)
    }

    /// The lines of one function instance at `depth` (indent `depth + 1`); returns its total.
    fn body(&mut self, depth: u32, out: &mut Vec<u8>) -> u64 {
        let indent = " ".repeat(depth as usize + 1);
        let lines = 1 + self.rng.below(2 * u64::from(self.spec.mean_lines)) as u32;
        let mut total = 0u64;
        let mut line = 0u32;
        for _ in 0..lines {
            line += self.rng.below(3) as u32;
            let disc = if self.rng.percent(20) {
                if self.rng.percent(5) {
                    1 + self.rng.below(0xFFFF) as u32
                } else {
                    1 + self.rng.below(15) as u32
                }
            } else {
                0
            };
            let count = self.count();
            total += count;
            write_location(out, &indent, line, disc);
            out.extend_from_slice(count.to_string().as_bytes());
            if self.rng.percent(10) {
                let mut targets: Vec<String> = (0..1 + self.rng.below(3))
                    .map(|_| self.pool_name())
                    .collect();
                targets.sort();
                targets.dedup();
                for t in targets {
                    let c = 1 + self.rng.below(count.max(1));
                    out.extend_from_slice(format!(" {t}:{c}").as_bytes());
                }
            }
            out.push(b'\n');
            line += 1;
        }
        if depth < self.spec.max_inline_depth {
            let callsites = self.rng.below(match depth {
                0 => 4,
                1 => 3,
                _ => 2,
            });
            let mut at = 0u32;
            for _ in 0..callsites {
                at += self.rng.below(u64::from(line.max(1))) as u32 / 2 + 1;
                let disc = if self.rng.percent(10) {
                    1 + self.rng.below(7) as u32
                } else {
                    0
                };
                let callee = self.pool_name();
                let mut nested = Vec::new();
                let callee_total = self.body(depth + 1, &mut nested);
                total += callee_total;
                write_location(out, &indent, at, disc);
                out.extend_from_slice(format!("{callee}:{callee_total}\n").as_bytes());
                out.extend_from_slice(&nested);
            }
        }
        total
    }
}

fn write_location(out: &mut Vec<u8>, indent: &str, line: u32, disc: u32) {
    out.extend_from_slice(indent.as_bytes());
    out.extend_from_slice(line.to_string().as_bytes());
    if disc != 0 {
        out.push(b'.');
        out.extend_from_slice(disc.to_string().as_bytes());
    }
    out.extend_from_slice(b": ");
}

/// Writes the profile of `spec` in LLVM's sample text format; returns the bytes written.
pub fn write_sample_profile_text(
    spec: &SampleProfileSpec,
    out: &mut impl Write,
) -> io::Result<u64> {
    let mut g = Gen {
        spec,
        rng: Rng::fork(spec.seed, 0x5350_524F_4654),
    };
    let mut written = 0u64;
    let mut body = Vec::new();
    for i in 0..spec.functions {
        body.clear();
        let total = g.body(0, &mut body);
        let head = if g.rng.percent(30) {
            0
        } else {
            g.rng.below(1 + total / 4)
        };
        let header = format!("{}:{total}:{head}\n", function_name(spec.seed, i));
        out.write_all(header.as_bytes())?;
        out.write_all(&body)?;
        written += (header.len() + body.len()) as u64;
    }
    Ok(written)
}

/// The profile of `spec` as bytes.
pub fn sample_profile_text(spec: &SampleProfileSpec) -> Vec<u8> {
    let mut out = Vec::new();
    write_sample_profile_text(spec, &mut out).expect("writing to memory cannot fail");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_sized() {
        let a = sample_profile_text(&SampleProfileSpec::new(1, 50));
        assert_eq!(a, sample_profile_text(&SampleProfileSpec::new(1, 50)));
        assert_ne!(a, sample_profile_text(&SampleProfileSpec::new(2, 50)));
        let text = String::from_utf8(a).unwrap();
        assert_eq!(text.lines().filter(|l| !l.starts_with(' ')).count(), 50);
        assert!(text.contains("\n   "), "no nested inlines");
        let spec = SampleProfileSpec::of_size(3, 1 << 20);
        let n = sample_profile_text(&spec).len() as f64;
        assert!((n / f64::from(1 << 20) - 1.0).abs() < 0.1, "{n} bytes");
    }
}
