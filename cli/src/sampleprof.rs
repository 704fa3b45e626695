//! `profmill convert`, `profmill merge --sample`, `profmill show --sample`: sample profiles
//! in LLVM text / binary / ExtBinary and GCC AutoFDO gcov, thin wrappers over
//! `engine::sampleprof`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use engine::sampleprof::{self, Input, MergeOptions, OutputFormat};
use formats::sampleprof::binary::ExtBinaryOptions;
use formats::sampleprof::gcov::Version;
use formats::sampleprof::gcov_v4 as v4;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum To {
    Text,
    Binary,
    Extbinary,
    /// GCC AutoFDO gcov, the `407*` flavour LLVM reads.
    Gcov,
    GcovV1,
    GcovV2,
    GcovV3,
    /// AutoFDO GCOV v4, binary (normal mode).
    GcovV4,
    /// AutoFDO GCOV v4, binary in compact (varint) mode.
    GcovV4Compact,
    /// AutoFDO GCOV v4, textual format.
    GcovV4Text,
}

#[derive(Args)]
pub struct Encoding {
    /// Output encoding.
    #[arg(long = "to", value_enum, default_value = "extbinary")]
    to: To,
    /// ExtBinary: a fixed-length MD5 name table instead of names.
    #[arg(long)]
    use_md5: bool,
    /// ExtBinary: zlib-compress every section.
    #[arg(long)]
    compress_all_sections: bool,
    /// ExtBinary: mark the profile partial.
    #[arg(long)]
    gen_partial_profile: bool,
    /// ExtBinary: functions with and without inlined callees in two sections (LLVM 20+).
    #[arg(long)]
    split_layout: bool,
}

impl Encoding {
    fn format(&self) -> OutputFormat {
        match self.to {
            To::Text => OutputFormat::Text,
            To::Binary => OutputFormat::Binary,
            To::Extbinary => OutputFormat::ExtBinary(ExtBinaryOptions {
                use_md5: self.use_md5,
                compress_all: self.compress_all_sections,
                partial: self.gen_partial_profile,
                split_layout: self.split_layout,
            }),
            To::Gcov => OutputFormat::Gcov(Version::V407),
            To::GcovV1 => OutputFormat::Gcov(Version::V1),
            To::GcovV2 => OutputFormat::Gcov(Version::V2),
            To::GcovV3 => OutputFormat::Gcov(Version::V3),
            To::GcovV4 => OutputFormat::GcovV4(v4::Encoding::Binary),
            To::GcovV4Compact => OutputFormat::GcovV4(v4::Encoding::Compact),
            To::GcovV4Text => OutputFormat::GcovV4(v4::Encoding::Text),
        }
    }
}

#[derive(Args)]
pub struct ConvertArgs {
    /// Input profile (text, binary, ExtBinary, gcov or GCOV v4; detected from the content).
    input: PathBuf,
    #[arg(short, long)]
    output: PathBuf,
    #[command(flatten)]
    encoding: Encoding,
}

pub fn convert(args: ConvertArgs) -> Result<(), Box<dyn std::error::Error>> {
    sampleprof::convert(&args.input, args.encoding.format(), &args.output)?;
    Ok(())
}

#[derive(Args)]
pub struct MergeArgs {
    /// Merge sample profiles (the only kind `profmill merge` handles so far).
    #[arg(long, required = true)]
    sample: bool,
    /// Input profiles, weight 1.
    inputs: Vec<PathBuf>,
    /// `W,FILE`: an input whose counts are multiplied by W.
    #[arg(long = "weighted-input", value_name = "W,FILE")]
    weighted: Vec<String>,
    #[arg(short, long)]
    output: PathBuf,
    #[command(flatten)]
    encoding: Encoding,
}

fn weighted_input(spec: &str) -> Result<Input, String> {
    let (w, path) = spec
        .split_once(',')
        .ok_or_else(|| format!("--weighted-input={spec}: expected W,FILE"))?;
    let weight: u64 =
        w.parse().ok().filter(|&w| w >= 1).ok_or_else(|| {
            format!("--weighted-input={spec}: the weight must be a positive integer")
        })?;
    Ok(Input {
        path: path.into(),
        weight,
    })
}

pub fn merge(args: MergeArgs) -> Result<(), Box<dyn std::error::Error>> {
    let mut inputs: Vec<Input> = args
        .inputs
        .iter()
        .map(|p| Input {
            path: p.clone(),
            weight: 1,
        })
        .collect();
    for w in &args.weighted {
        inputs.push(weighted_input(w)?);
    }
    if inputs.is_empty() {
        return Err("no input profiles".into());
    }
    let merged = sampleprof::merge(&inputs, &MergeOptions::default())?;
    for w in &merged.warnings {
        eprintln!("profmill: warning: {w}");
    }
    sampleprof::write(&merged.profile, args.encoding.format(), &args.output)?;
    Ok(())
}

#[derive(Args)]
pub struct ShowArgs {
    /// Show a sample profile (the only kind `profmill show` handles so far).
    #[arg(long, required = true)]
    sample: bool,
    input: PathBuf,
}

/// Prints the profile in LLVM's text form.
pub fn show(args: ShowArgs) -> Result<(), Box<dyn std::error::Error>> {
    let profile = sampleprof::read(&args.input)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    sampleprof::write_to(&profile, OutputFormat::Text, &mut out)?;
    std::io::Write::flush(&mut out)?;
    Ok(())
}
