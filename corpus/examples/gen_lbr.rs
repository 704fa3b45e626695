//! Writes a synthetic LBR capture and reports throughput.
//!
//! OUT may be `-null` to measure generation without file I/O.
//!
//! usage: gen_lbr OUT.perf.data TARGET_MB [--compress] [--depth N] [--stacks N]
//!        [--processes N] [--kernel PCT] [--seed N] [--attr-size N]
//!        [--mem-loads INTERVAL] [--mem-no-addr] [--ip-only] BINARY[@0xBASE]...
//!
//! `--ip-only` writes the same samples without branch stacks (`cpu-clock` IP samples).

use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::time::Instant;

use corpus::{LbrBinary, LbrCaptureSpec};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: gen_lbr OUT TARGET_MB [--compress] [--depth N] [--stacks N] [--processes N] [--kernel PCT] [--seed N] [--attr-size N] BINARY[@0xBASE]...";
    let out = PathBuf::from(args.next().expect(usage));
    // Fractions allowed (fuzz seeds are a few KiB: `0.02`).
    let target_mb: f64 = args.next().expect(usage).parse().expect("TARGET_MB");
    let mut ip_only = false;
    let mut spec = LbrCaptureSpec {
        binaries: Vec::new(),
        processes: 2,
        target_bytes: (target_mb * (1u64 << 20) as f64) as u64,
        lbr_depth: 32,
        distinct_stacks: 10_000,
        kernel_fraction_percent: 5,
        compress: false,
        attr_size: corpus::ATTR_SIZE,
        seed: 1,
        mem_loads: None,
    };
    while let Some(a) = args.next() {
        let mut num = |name: &str| -> u64 { args.next().and_then(|v| v.parse().ok()).expect(name) };
        match a.as_str() {
            "--compress" => spec.compress = true,
            "--ip-only" => ip_only = true,
            "--depth" => spec.lbr_depth = num("--depth") as u32,
            "--stacks" => spec.distinct_stacks = num("--stacks") as u32,
            "--processes" => spec.processes = num("--processes") as u32,
            "--kernel" => spec.kernel_fraction_percent = num("--kernel") as u32,
            "--seed" => spec.seed = num("--seed"),
            "--attr-size" => spec.attr_size = num("--attr-size"),
            "--mem-loads" => {
                let interval = num("--mem-loads") as u32;
                spec.mem_loads.get_or_insert_with(Default::default).interval = interval;
            }
            "--mem-no-addr" => {
                spec.mem_loads
                    .get_or_insert_with(Default::default)
                    .with_addr = false;
            }
            bin => {
                let (path, base) = match bin.split_once('@') {
                    Some((p, b)) => (
                        p,
                        Some(u64::from_str_radix(b.trim_start_matches("0x"), 16).expect("base")),
                    ),
                    None => (bin, None),
                };
                spec.binaries.push(LbrBinary {
                    path: path.into(),
                    load_base: base,
                });
            }
        }
    }
    let t0 = Instant::now();
    let prepared = corpus::prepare_capture(&spec)?;
    let t1 = Instant::now();
    let write = |mut out: &mut dyn WriteSeek| match ip_only {
        true => prepared.write_ip_samples(&mut out),
        false => prepared.write(&mut out),
    };
    let stats = if out.as_os_str() == "-null" {
        write(&mut NullFile::default())?
    } else {
        // Large writes leave the capture in the page cache in large folios, which readers map
        // far more cheaply: the 629 MB benchmark capture's index pass took 44-50 ms after 8 KiB
        // writes and 10-14 ms after these (PERF.md, on folio sizes).
        let mut file = BufWriter::with_capacity(4 << 20, std::fs::File::create(&out)?);
        let stats = write(&mut file)?;
        file.flush()?;
        stats
    };
    let t2 = Instant::now();
    let write_s = (t2 - t1).as_secs_f64();
    eprintln!(
        "pool: {} stacks in {:.2}s; wrote {} bytes, {} samples, {} entries in {:.2}s ({:.0} MB/s)",
        prepared.stacks().len(),
        (t1 - t0).as_secs_f64(),
        stats.bytes,
        stats.samples,
        stats.branch_entries,
        write_s,
        stats.bytes as f64 / write_s / 1e6
    );
    Ok(())
}

trait WriteSeek: Write + Seek {}
impl<T: Write + Seek> WriteSeek for T {}

/// Discards data but tracks the position, so the writer can seek back.
#[derive(Default)]
struct NullFile {
    pos: u64,
    len: u64,
}

impl Write for NullFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pos += buf.len() as u64;
        self.len = self.len.max(self.pos);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for NullFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.pos = match to {
            SeekFrom::Start(p) => p,
            SeekFrom::End(d) => self.len.checked_add_signed(d).expect("seek"),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d).expect("seek"),
        };
        Ok(self.pos)
    }
}
