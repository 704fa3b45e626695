//! `profmill demo`: the main job on a built-in input. Generates a synthetic LBR capture of
//! profmill's own executable (real control flow, see `corpus`), then aggregates it.

use std::io::{self, Seek, Write};
use std::path::PathBuf;

use corpus::{LbrBinary, LbrCaptureSpec};
use engine::io::progress::Progress;

use crate::progress::Bar;

#[derive(clap::Args)]
pub struct Args {
    /// Where to put the capture and the profile.
    #[arg(long, default_value = "target/profmill-demo")]
    dir: PathBuf,
    /// Capture size in MiB.
    #[arg(long, default_value_t = 64)]
    size_mib: u64,
}

pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(&args.dir)?;
    let binary = args.dir.join("profmill-demo-binary");
    std::fs::copy(std::env::current_exe()?, &binary)?;
    let capture = args.dir.join("demo.perf.data");
    let spec = LbrCaptureSpec {
        binaries: vec![LbrBinary {
            path: binary.clone(),
            load_base: None,
        }],
        processes: 2,
        target_bytes: args.size_mib << 20,
        lbr_depth: 32,
        distinct_stacks: 20_000,
        kernel_fraction_percent: 5,
        compress: false,
        attr_size: corpus::ATTR_SIZE,
        seed: 1,
        mem_loads: None,
    };
    let bar = Bar::bytes(Some(spec.target_bytes), "generating the capture");
    let mut out = io::BufWriter::new(Counted {
        inner: std::fs::File::create(&capture)?,
        bar: &bar,
    });
    let stats = corpus::write_lbr_capture(&spec, &mut out)?;
    out.flush()?;
    drop(out);
    bar.finish();
    eprintln!(
        "profmill demo: generated {} ({} samples, {} MB)",
        capture.display(),
        stats.samples,
        stats.bytes / 1_000_000
    );
    let output = args.dir.join("demo.preagg");
    crate::aggregate::run_paths(&capture, &[binary], &output)?;
    let text = std::fs::read_to_string(&output)?;
    println!("first records of {}:", output.display());
    for line in text.lines().take(5) {
        println!("  {line}");
    }
    Ok(())
}

/// A writer that moves the progress bar by the bytes it writes.
struct Counted<'a, W> {
    inner: W,
    bar: &'a Bar,
}

impl<W: Write> Write for Counted<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bar.advance(n as u64);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The generator seeks back to patch the header; those bytes are counted twice, which only
/// moves the bar a few bytes early.
impl<W: Seek> Seek for Counted<'_, W> {
    fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
        self.inner.seek(pos)
    }
}
