//! `profmill script`: our decoder's view of a capture in `perf script`'s text format.

use std::io::Write;
use std::path::PathBuf;

use engine::perf::capture::{read_capture, Input, ReadOptions, Sink};
use formats::perf::script::{write_sample, Fields};
use formats::perf::Sample;

#[derive(clap::Args)]
pub struct Args {
    /// The capture (`-` for a pipe-mode capture on stdin).
    capture: PathBuf,
    /// Fields to print, as perf script's -F (pid is always printed; ip and brstack optional).
    #[arg(short = 'F', long = "fields", default_value = "pid,ip,brstack")]
    fields: String,
    /// Also print MMAP/MMAP2 events (after the samples).
    #[arg(long)]
    show_mmap_events: bool,
}

/// The fields of `-F` that we print.
const SUPPORTED_FIELDS: &[&str] = &["pid", "ip", "brstack"];

struct Lines {
    out: Vec<u8>,
    fields: Fields,
}

impl Sink for Lines {
    fn sample(&mut self, _event: usize, s: &Sample<'_>) {
        let _ = write_sample(&mut self.out, s, self.fields);
    }
}

pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let names: Vec<&str> = args.fields.split(',').collect();
    if let Some(bad) = names.iter().find(|n| !SUPPORTED_FIELDS.contains(n)) {
        return Err(format!(
            "-F: field {bad:?} is not printed here; the fields supported are {} (pid is always printed)",
            SUPPORTED_FIELDS.join(",")
        )
        .into());
    }
    let fields = Fields {
        ip: names.contains(&"ip"),
        brstack: names.contains(&"brstack"),
    };
    let input = if args.capture.as_os_str() == "-" {
        Input::stream("<stdin>", std::io::stdin())
    } else {
        Input::File(args.capture)
    };
    let options = ReadOptions {
        threads: 1,
        render_mmap_events: args.show_mmap_events,
        ..Default::default()
    };
    let bar = engine::io::progress::NoProgress;
    let (side, sinks) = read_capture(
        &input,
        options,
        |_| Lines {
            out: Vec::new(),
            fields,
        },
        &bar,
    )?;
    let mut stdout = crate::stdout();
    for sink in sinks {
        stdout.write_all(&sink.out)?;
    }
    stdout.write_all(&side.mmap_lines)?;
    Ok(())
}
