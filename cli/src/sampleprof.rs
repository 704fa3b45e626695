//! `profmill convert`, `profmill merge --sample`, `profmill show --sample`: sample profiles
//! in LLVM text / binary / ExtBinary and GCC AutoFDO gcov, thin wrappers over
//! `engine::sampleprof`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use engine::io::inputs::{collect_weighted_inputs, SpecialFiles, Stdin};
use engine::sampleprof::{self, Input, MergeOptions, OutputFormat};
use formats::sampleprof::binary::ExtBinaryOptions;
use formats::sampleprof::gcov::Version;
use formats::sampleprof::gcov_v4 as v4;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SampleFormat {
    Text,
    Binary,
    Extbinary,
    /// GCC AutoFDO gcov, the `407*` flavour LLVM reads (what create_gcov writes by default).
    Gcov,
    /// GCC AutoFDO gcov version 1 (GCC 5-11).
    GcovV1,
    /// GCC AutoFDO gcov version 2 (GCC 12-15).
    GcovV2,
    /// GCC AutoFDO gcov version 3 (GCC 16).
    GcovV3,
    /// AutoFDO GCOV v4 (the proposal), binary (normal mode).
    GcovV4,
    /// AutoFDO GCOV v4, binary in compact (varint) mode.
    GcovV4Compact,
    /// AutoFDO GCOV v4, text.
    GcovV4Text,
}

impl SampleFormat {
    /// The encoding to write; `extbinary` says how, for ExtBinary.
    pub(crate) fn output(self, extbinary: ExtBinaryOptions) -> OutputFormat {
        match self {
            SampleFormat::Text => OutputFormat::Text,
            SampleFormat::Binary => OutputFormat::Binary,
            SampleFormat::Extbinary => OutputFormat::ExtBinary(extbinary),
            SampleFormat::Gcov => OutputFormat::Gcov(Version::V407),
            SampleFormat::GcovV1 => OutputFormat::Gcov(Version::V1),
            SampleFormat::GcovV2 => OutputFormat::Gcov(Version::V2),
            SampleFormat::GcovV3 => OutputFormat::Gcov(Version::V3),
            SampleFormat::GcovV4 => OutputFormat::GcovV4(v4::Encoding::Binary),
            SampleFormat::GcovV4Compact => OutputFormat::GcovV4(v4::Encoding::Compact),
            SampleFormat::GcovV4Text => OutputFormat::GcovV4(v4::Encoding::Text),
        }
    }

    /// A format for GCC (`-fauto-profile`) rather than LLVM.
    pub(crate) fn is_gcc(self) -> bool {
        !matches!(
            self,
            SampleFormat::Text | SampleFormat::Binary | SampleFormat::Extbinary
        )
    }
}

#[derive(Args)]
pub struct Encoding {
    /// Output encoding.
    #[arg(long = "to", value_enum, default_value = "extbinary")]
    to: SampleFormat,
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
        self.to.output(ExtBinaryOptions {
            use_md5: self.use_md5,
            compress_all: self.compress_all_sections,
            partial: self.gen_partial_profile,
            split_layout: self.split_layout,
        })
    }
}

#[derive(Args)]
pub struct ConvertArgs {
    /// Input profile (text, binary, ExtBinary, gcov or GCOV v4; detected from the content).
    input: PathBuf,
    /// The converted profile (`-` for standard output).
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
    /// Merge sample profiles; without it, profile stores are merged.
    #[arg(long)]
    sample: bool,
    /// Input profiles (weight 1), or directories of them.
    inputs: Vec<String>,
    /// `W,FILE`: an input whose counts are multiplied by W.
    #[arg(short = 'w', long = "weighted-input", value_name = "W,FILE")]
    weighted: Vec<String>,
    /// A file listing inputs, one per line (`W,FILE` or `FILE`; `#` starts a comment).
    #[arg(short = 'f', long = "input-files", value_name = "LIST")]
    input_files: Option<String>,
    /// The merged profile (`-` for standard output, with `--sample`).
    #[arg(short, long)]
    output: PathBuf,
    #[command(flatten)]
    encoding: Encoding,
}

/// `profmill merge`: sample profiles with `--sample`, else profile stores.
pub fn merge(args: MergeArgs) -> Result<(), Box<dyn std::error::Error>> {
    if !args.sample {
        if args.output.as_os_str() == "-" {
            return Err("-o - writes a sample profile (--sample) to standard output; merged profile stores need a path".into());
        }
        return crate::store::merge(crate::store::MergeRequest {
            inputs: &args.inputs,
            weighted: &args.weighted,
            list: args.input_files.as_deref(),
            output: &args.output,
        });
    }
    let inputs: Vec<Input> = collect_weighted_inputs(
        &args.inputs,
        &args.weighted,
        args.input_files.as_deref(),
        (
            Stdin::Refused("reading a profile from standard input is not supported"),
            SpecialFiles::Keep,
        ),
        "profmill merge --help",
    )?
    .into_iter()
    .map(|i| Input {
        path: i.path,
        weight: i.weight,
    })
    .collect();
    let merged = sampleprof::merge(&inputs, &MergeOptions::default())?;
    for w in &merged.warnings {
        eprintln!("profmill: warning: {w}");
    }
    sampleprof::write(&merged.profile, args.encoding.format(), &args.output)?;
    Ok(())
}

#[derive(Args)]
pub struct ShowArgs {
    /// Show a sample profile (the default for anything that is not a profile store).
    #[arg(long)]
    sample: bool,
    /// A profile store: print as JSON.
    #[arg(long)]
    json: bool,
    /// A profile store: also list this binary's hottest functions (by taken branches out of
    /// them, or by IP samples in them).
    #[arg(short = 'b', long = "binary")]
    binary: Option<PathBuf>,
    /// The profile to show.
    input: PathBuf,
}

/// Prints a profile store's summary, or a sample profile in LLVM's text form.
pub fn show(args: ShowArgs) -> Result<(), Box<dyn std::error::Error>> {
    if !args.sample && crate::store::is_store(&args.input) {
        crate::store::show(&args.input, args.json)?;
        if let Some(binary) = &args.binary {
            crate::store::show_hottest(&args.input, binary, 20)?;
        }
        return Ok(());
    }
    let profile = sampleprof::read(&args.input).map_err(|e| -> Box<dyn std::error::Error> {
        match e {
            // Without `--sample` the input may have been meant as either kind: name both.
            sampleprof::Error::Format {
                source: formats::sampleprof::Error::UnrecognizedFormat,
                ..
            } if !args.sample => match std::fs::metadata(&args.input).is_ok_and(|m| m.is_file()) {
                true => format!(
                    "{}: neither a profile store (`PMSTORE` magic) nor a sample profile in an encoding this tool reads",
                    args.input.display()
                ),
                // A store is looked for in regular files only (`is_store`).
                false => format!(
                    "{}: not a sample profile in an encoding this tool reads (a profile store is read only from a regular file, and this is not one)",
                    args.input.display()
                ),
            }
            .into(),
            e => e.into(),
        }
    })?;
    let mut out = std::io::BufWriter::new(crate::stdout());
    sampleprof::write_to(&profile, OutputFormat::Text, &mut out)?;
    std::io::Write::flush(&mut out)?;
    Ok(())
}
